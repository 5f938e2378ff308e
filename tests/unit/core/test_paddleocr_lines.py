"""PaddleOCR's training lines, built from its source's format strings (PaddlePaddle/PaddleOCR
tools/program.py, train): `epoch: [{epoch}/{epoch_num}], global_step: {global_step}, {stats},
avg_reader_cost: {:.5f} s, avg_batch_cost: {:.5f} s, avg_samples: …, ips: {:.5f} samples/s, eta:
…` (stats `lr: …, loss: …, …` by TrainingStats.log) when the global step (from 0, before its
increment) is a multiple of print_batch_step and at each epoch's last step, epochs from 1 to
epoch_num, through its logger (`[%(asctime)s] %(name)s %(levelname)s: %(message)s`, datefmt
`%Y/%m/%d %H:%M:%S`); a periodic evaluation's `cur metric, …` and `best metric, …`, a save's
`save model in …`. The global step is the iteration, the batch cost the seconds per step, and
the epoch counter at its total, every report of that epoch printed, ends a finished run
(bot.core.diagnose.last_epoch.ends_at_last_epoch)."""

from __future__ import annotations

import pytest
from support.end_marker import LATE_ERROR, read

from bot.core.training_lines import LineParser

_LOGGER = "[2024/10/18 17:{m:02d}:{s:02d}] ppocr INFO: "
_STEPS = 100  # an epoch's steps
_EPOCHS = 5


def _report(epoch: int, step: int) -> str:
    return (_LOGGER.format(m=step // 60 % 60, s=step % 60)
            + f"epoch: [{epoch}/{_EPOCHS}], global_step: {step}, lr: 0.001000, "
            f"loss: {2.5 - step / 1000:.6f}, loss_shrink_maps: 1.200000, "
            "loss_threshold_maps: 0.600000, loss_binary_maps: 0.240000, "
            "avg_reader_cost: 0.01234 s, avg_batch_cost: 0.45678 s, avg_samples: 8.0, "
            "ips: 17.51406 samples/s, eta: 0:03:02\n")


def _evaluation(step: int, *, bar: bool) -> str:
    """An evaluation's lines; its tqdm bar (on stderr) too when `bar` (a log of both streams)."""
    at = _LOGGER.format(m=step // 60 % 60, s=step % 60)
    return (("eval model:: 100%|██████████| 50/50 [00:05<00:00,  9.52it/s]\n" if bar else "")
            + at + "cur metric, precision: 0.8123, recall: 0.7456, hmean: 0.7775, fps: 20.5\n"
            + at + "save model in ./output/ch_db_mv3/best_accuracy\n"
            + at + "best metric, hmean: 0.7775, precision: 0.8123, recall: 0.7456, fps: 20.5, "
            "best_epoch: 3\n")


def _epoch(epoch: int, *, last_step: int | None = None, bar: bool = False) -> str:
    """An epoch's reports (print_batch_step 10), an evaluation at global step 200 (eval_batch_step
    [0, 200]), then the epoch's save; up to `last_step` (an epoch cut short) without it."""
    lines: list[str] = []
    for step in range((epoch - 1) * _STEPS, epoch * _STEPS):
        if last_step is not None and step > last_step:
            return "".join(lines)
        if (step > 0 and step % 10 == 0) or step == epoch * _STEPS - 1:
            lines.append(_report(epoch, step))
        if step == 200:
            lines.append(_evaluation(step, bar=bar))
    end = _LOGGER.format(m=epoch, s=59)
    return "".join(lines) + end + "save model in ./output/ch_db_mv3/latest\n"


_RUN = "".join(_epoch(e) for e in range(1, _EPOCHS + 1))
_BOTH_STREAMS = "".join(_epoch(e, bar=True) for e in range(1, _EPOCHS + 1))
_CLOSING = (_LOGGER.format(m=9, s=59) + "best metric, hmean: 0.7775, precision: 0.8123, "
            "recall: 0.7456, fps: 20.5, best_epoch: 3\n")


def test_its_line_gives_the_global_step_and_the_batch_cost():
    sample, _ = LineParser().parse(_report(3, 250), 1)
    assert sample is not None
    assert (sample.iteration, sample.target_iter, sample.loss, sample.sec_per_iter) == (
        250, None, 2.25, 0.45678)


@pytest.mark.parametrize("log", [_RUN, _RUN + _CLOSING, _BOTH_STREAMS],
                         ids=["saved", "best metric after", "evaluation bar"])
def test_the_last_epochs_reports_end_a_finished_run(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "progress")


@pytest.mark.parametrize("bar", [False, True], ids=["stdout", "both streams"])
@pytest.mark.parametrize("last_step", [None, (_EPOCHS - 1) * _STEPS + 50],
                         ids=["an earlier epoch", "the last, cut"])
def test_short_of_the_last_epoch_is_still_running(last_step, bar):
    """Its evaluation's bar (`eval model:: 100%|…| 50/50`) counts the evaluation's batches, no
    target of the training that global steps past 50 would reach."""
    log = "".join(_epoch(e, bar=bar) for e in range(1, _EPOCHS))
    if last_step is not None:
        log += _epoch(_EPOCHS, last_step=last_step, bar=bar)
    assert read(log).class_id == "none"


def test_an_error_after_it_decides():
    assert read(_RUN + LATE_ERROR).class_id not in ("completed", "none")


# A recognition model's metrics name its accuracy: `best metric, acc: …`, a loss-or-accuracy
# figure on a line of its own, with no epoch counter, after each evaluation and after the loop
_DET_BEST = ("best metric, hmean: 0.7775, precision: 0.8123, recall: 0.7456, fps: 20.5, "
             "best_epoch: 3")
_REC_BEST = "best metric, acc: 0.912300, norm_edit_dis: 0.970100, fps: 500.1, best_epoch: 3"


def _rec(log: str) -> str:
    return log.replace(_DET_BEST, _REC_BEST)


def test_a_recognition_models_closing_best_metric_leaves_the_last_epochs_end():
    d = read(_rec(_RUN + _CLOSING))
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    # ... an earlier epoch's, after its save, is still that epoch's
    earlier = "".join(_epoch(e) for e in range(1, _EPOCHS - 1)) + _CLOSING
    assert read(_rec(earlier)).class_id == "none"


def _uneven_run(epochs: int, *, first: int, last_step: int | None = None) -> str:
    """A run of `epochs` epochs of 23 steps, reported every 10 global steps (print_batch_step
    10) and at each epoch's last: the reports an epoch prints vary (3, 3, 3, 4, 3), the last
    epoch's fewer than the fourth's. `first` is the global step of the run's first step: 0 when
    the line is logged before its increment (older releases), 1 after it (later ones); the
    last epoch stops after `last_step` when given (a run cut short)."""
    lines: list[str] = []
    step = first
    for epoch in range(1, epochs + 1):
        for idx in range(23):
            if epoch == epochs and last_step is not None and step > last_step:
                return "".join(lines)
            if (step > 0 and step % 10 == 0) or idx == 22:
                lines.append(_report(epoch, step).replace(f"[{epoch}/{_EPOCHS}]",
                                                          f"[{epoch}/{epochs}]"))
            step += 1
        lines.append(_LOGGER.format(m=step // 60, s=step % 60)
                     + "save model in ./output/ch_db_mv3/latest\n")
    return "".join(lines) + _LOGGER.format(m=step // 60, s=step % 60) + _CLOSING[len(_LOGGER):]


@pytest.mark.parametrize("first", [0, 1], ids=["step before increment", "after increment"])
def test_a_last_epoch_with_fewer_reports_than_an_earlier_one_ends_a_finished_run(first):
    """The last epoch printed 3 reports, the fourth 4 (print_batch_step does not divide an
    epoch's steps): its last report's global step, one epoch's steps after the epoch before's
    last, says it is over."""
    d = read(_uneven_run(5, first=first))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


@pytest.mark.parametrize("first", [0, 1], ids=["step before increment", "after increment"])
def test_a_last_epoch_short_of_its_steps_is_still_running(first):
    """Its reports stop at global step 100, 9 steps after the fourth epoch's last: mid-epoch,
    whatever the count of its reports."""
    assert read(_uneven_run(5, first=first, last_step=100)).class_id == "none"
