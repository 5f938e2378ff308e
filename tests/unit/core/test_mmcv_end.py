"""mmcv 1.x's finished by-epoch run (mmdet 2.x, mmseg 0.x, mmpose and their kin), built from its
source's format strings (open-mmlab/mmcv 1.x): EpochBasedRunner.run logs `Start running, host:
{user}@{host}, work_dir: {work_dir}` then `workflow: [('train', 1)], max: 12 epochs`
(runner/epoch_based_runner.py); TextLoggerHook logs `Epoch [E][i/n]\\tlr: …, eta: …, time: …`
every 50 steps from 1 (hooks/logger/text.py), the epoch's last steps past the last interval
unlogged (ignore_last, its default); CheckpointHook logs `Saving checkpoint at {E} epochs` once
an epoch is over (hooks/checkpoint.py), then EvalHook's validation, whose results are logged once
it is over (`Epoch(val) [E][500]\\tbbox_mAP: …`). The epochs' total is on no `Epoch` line: the
runner's announcement (or the config's `total_epochs = 12`, mmdet's before runner configs) is
what tells a run at its last epoch's last step from one that has epochs to go."""

from __future__ import annotations

import pytest
from support.end_marker import assert_the_error_decides, read

from bot.core.training_lines import LineParser

AT = "2021-03-01 19:28:00,123 - mmdet - INFO - "
START = (f"{AT}Start running, host: alice@gpu-a07, work_dir: /work/faster_rcnn_r50_fpn_1x\n"
         f"{AT}Hooks will be executed in the following order:\n"
         "before_run:\n(VERY_HIGH   ) StepLrUpdaterHook\n(NORMAL      ) CheckpointHook\n"
         " -------------------- \n"
         f"{AT}workflow: [('train', 1)], max: 12 epochs\n")
# mmdet 2.x's configs before `runner = dict(...)`: the total epochs a top-level variable that
# tools/train.py passed to run(), printed by the config dump (pretty_text) alone on its line
CONFIG_TOTAL_EPOCHS = (f"{AT}Config:\nlr_config = dict(policy='step', step=[8, 11])\n"
                       "total_epochs = 12\n")


def _line(epoch: int, step: int, steps: int) -> str:
    return (f"{AT}Epoch [{epoch}][{step}/{steps}]\tlr: 2.000e-04, eta: 0:00:15, time: 0.512, "
            "data_time: 0.010, memory: 3512, loss_rpn_cls: 0.0100, loss_cls: 0.1500, "
            "loss: 0.4123\n")


def _epoch(epoch: int, steps: int) -> str:
    """An epoch's lines every 50 steps, then CheckpointHook's save and EvalHook's results."""
    return ("".join(_line(epoch, i, steps) for i in range(50, steps + 1, 50))
            + f"{AT}Saving checkpoint at {epoch} epochs\n"
            + f"{AT}Epoch(val) [{epoch}][500]\tbbox_mAP: 0.3740, bbox_mAP_50: 0.5810\n")


def _cut(log: str) -> str:
    """`log` up to its last epoch's save (a run cut at its last logged step)."""
    return log[:log.rindex(f"{AT}Saving checkpoint at")]


@pytest.mark.parametrize("announced", [START, CONFIG_TOTAL_EPOCHS],
                         ids=["runner-max-epochs", "config-total-epochs"])
def test_its_training_line_takes_every_announced_epoch_as_its_target(announced):
    parser = LineParser()
    for n, line in enumerate(announced.splitlines(), 1):
        parser.parse(line, n)
    sample, _ = parser.parse(_line(3, 7300, 7330).rstrip("\n"), 20)
    assert sample is not None
    assert (sample.iteration, sample.target_iter) == (2 * 7330 + 7300, 12 * 7330)


@pytest.mark.parametrize("announced", [START, CONFIG_TOTAL_EPOCHS],
                         ids=["runner-max-epochs", "config-total-epochs"])
def test_a_run_at_its_last_epochs_last_step_reads_completed(announced):
    # 7300 steps an epoch, logged every 50: the last epoch's last line is its last step's
    d = read(announced + _epoch(11, 7300) + _cut(_epoch(12, 7300)))
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (12 * 7300, 12 * 7300)


def test_the_save_after_the_last_epoch_ends_a_run_whose_last_steps_were_not_logged():
    # 7330 steps an epoch: its last 30 unlogged; the save once the epoch is over says they ran
    log = START + _epoch(11, 7330) + _epoch(12, 7330)
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (11 * 7330 + 7300, 12 * 7330)
    assert read(_cut(log)).class_id == "none"


def _evaluation_drawn(drawn: int, total: int = 500) -> str:
    """EvalHook's pass after the save: mmcv's ProgressBar (mmcv/utils/progressbar.py) over
    `total` images up to `drawn`, each draw after a carriage return, no newline."""
    draws = [f"[{' ' * 50}] 0/{total}, elapsed: 0s, ETA:"]
    draws += [f"[{'>' * (50 * n // total)}{' ' * (50 - 50 * n // total)}] {n}/{total}, "
              f"{'inf' if n == 1 else '0.4'} task/s, elapsed: {0 if n == 1 else round(2.4 * n)}s, "
              f"ETA: {round(2.4 * (total - n)):5d}s" for n in range(1, drawn + 1)]
    return "\r".join(draws)


@pytest.mark.parametrize("drawn", [1, 120, 499, 500])
def test_a_log_cut_in_the_evaluation_after_the_last_save_is_not_proven_finished(drawn):
    # the save at the target ends the run only once EvalHook's `Epoch(val)` line sums its
    # pass up: the last epoch's validation comes after the save, and its bar at 500/500 (the
    # count epoch 11's summary showed) is no end: the dataset's evaluate runs after it
    log = (START + _epoch(11, 7330) + _cut(_epoch(12, 7330))
           + f"{AT}Saving checkpoint at 12 epochs\n")
    assert read(log + _evaluation_drawn(drawn)).class_id == "none"
    summed = log + _evaluation_drawn(500) + f"\n{AT}Epoch(val) [12][500]\tbbox_mAP: 0.3740\n"
    assert read(summed).class_id == "completed"


@pytest.mark.parametrize("log", [
    START + _epoch(10, 7300) + _cut(_epoch(11, 7300)),  # an earlier epoch's last step
    START + _epoch(10, 7330) + _epoch(11, 7330),  # an earlier epoch's save
    _epoch(11, 7300) + _cut(_epoch(12, 7300)),  # nothing announced: the total is unknown
    # the run announced 24 epochs: 12 of them is half way
    START.replace("max: 12 epochs", "max: 24 epochs") + _epoch(11, 7300) + _epoch(12, 7300),
], ids=["an-earlier-epochs-last-step", "an-earlier-epochs-save", "nothing-announced",
        "half-of-24-epochs"])
def test_a_run_short_of_its_last_epoch_is_still_running(log):
    assert read(log).class_id == "none"


def test_an_error_after_the_last_step_decides():
    assert_the_error_decides(START + _epoch(11, 7300) + _cut(_epoch(12, 7300)))
