"""torchtune's recipes' progress bars, built from their source's format strings (pytorch/
torchtune recipes/full_finetune_single_device.py and the other recipes' train(), bd2a0fc7c314):
a tqdm bar per epoch counting that epoch's optimizer steps, described after each step as
`f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_value:.4f}"` (tqdm's default format after
it: `{desc}: {percentage:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}]`), the
full_finetune recipes' first draw of an epoch described `f"{self.epochs_run}|{self.global_step}"`;
the epochs come before the loop in config.log_config's dump (`epochs: 3`, OmegaConf.to_yaml with
sorted keys). After the loop only the checkpointer's final save speaks (`Saving final epoch
checkpoint.`, the catalogue's marker: tests/unit/core/test_completion_markers.py)."""

from __future__ import annotations

import pytest
from support.end_marker import read
from support.line_sample import last_sample

from bot.core.metrics import MetricSeries

EPOCHS, STEPS = 3, 1000
CONFIG = ("INFO:torchtune.utils._logging:Running FullFinetuneRecipeSingleDevice with resolved "
          "config:\n\nbatch_size: 2\ncheckpointer:\n  _component_: torchtune.training.FullModelHF"
          f"Checkpointer\ndevice: cuda\nepochs: {EPOCHS}\ngradient_accumulation_steps: 8\n"
          "max_steps_per_epoch: null\n\n")


def bar(epoch: int, inner: int, loss: float | None = 0.8123, s_per_it: float = 2.47) -> str:
    """The bar's draw after `inner` steps of epoch `epoch` (from 1): its description after a
    step (`loss`), or the epoch's first draw (`loss` None: `{epochs_run}|{global_step}`)."""
    step = (epoch - 1) * STEPS + inner
    desc = f"{epoch}|{step}|Loss: {loss:.4f}" if loss is not None else f"{epoch - 1}|{step}"
    filled = "\u2588" * (10 * inner // STEPS)
    return (f"{desc}: {100 * inner / STEPS:3.0f}%|{filled:<10}| {inner}/{STEPS} "
            f"[{inner * s_per_it // 60:02.0f}:{inner * s_per_it % 60:02.0f}<41:12, "
            f"{s_per_it:.2f}s/it]")


def epoch_bars(epoch: int, upto: int = STEPS) -> str:
    """An epoch's bar as a file gets it: its draws after carriage returns, then the newline of
    its close."""
    draws = [bar(epoch, 0, None)] + [bar(epoch, n) for n in range(1, upto + 1, 250)]
    return "\r".join([*draws, bar(epoch, upto)]) + "\n"


def test_a_bar_gives_the_runs_step_of_every_announced_epochs_its_loss_and_pace():
    s = last_sample(*CONFIG.splitlines(), bar(2, 640, loss=0.5123, s_per_it=2.5))
    assert (s.iteration, s.target_iter) == (STEPS + 640, EPOCHS * STEPS)
    assert s.loss == pytest.approx(0.5123)
    assert s.sec_per_iter == pytest.approx(2.5)


def test_an_epochs_first_draw_gives_the_steps_done():
    assert last_sample(*CONFIG.splitlines(), bar(2, 0, None)).iteration == STEPS


def test_with_no_config_dump_a_bar_has_no_target():
    # its total is one epoch's steps, not the run's
    s = last_sample(bar(1, STEPS))
    assert (s.iteration, s.target_iter) == (STEPS, None)


def test_the_first_epochs_end_is_no_end_of_the_run():
    d = read(CONFIG + epoch_bars(1))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_the_last_epochs_bar_at_its_total_ends_a_finished_run_by_progress():
    # cut after the loop, before the final save's lines
    d = read(CONFIG + epoch_bars(1) + epoch_bars(2) + epoch_bars(3))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_a_run_cut_mid_epoch_is_still_running():
    d = read(CONFIG + epoch_bars(1) + epoch_bars(2, upto=500))
    assert (d.class_id, d.decided_by) == ("none", "progress")


@pytest.mark.parametrize(("before", "target"), [
    # another program's YAML (a copied recipe's own print of its config)
    ("epochs: 3\n", None),
    # a line after the dump ended (its own `epochs: 2` stands)
    (CONFIG.replace(f"epochs: {EPOCHS}", "epochs: 2") + "Setting manual seed to local seed "
     "1234. Local seed is seed + rank = 1234 + 0\nepochs: 3\n", 2 * STEPS),
], ids=["no banner", "after the dump"])
def test_a_yaml_epochs_line_outside_torchtunes_dump_gives_no_target(before, target):
    s = last_sample(*before.splitlines(), bar(1, STEPS))
    assert (s.iteration, s.target_iter) == (STEPS, target)


def test_a_rerun_appended_to_the_log_starts_a_run_of_its_own_epochs():
    rerun = CONFIG.replace(f"epochs: {EPOCHS}", "epochs: 2")
    series = MetricSeries()
    series.feed_block(CONFIG + epoch_bars(1) + epoch_bars(2, upto=500) + rerun + epoch_bars(1))
    assert series.runs == 2
    assert series.last_progress is not None
    assert (series.last_progress.iteration, series.last_progress.target_iter) == (STEPS, 2 * STEPS)


@pytest.mark.parametrize("line", [
    "Validation loss: 0.7012", "INFO:torchtune.utils._logging:Validation loss: 0.7012",
    "Validation loss: inf"], ids=["alone", "after its logger's prefix", "no tokens"])
def test_the_distributed_recipes_validation_loss_is_an_evaluations_summary(line):
    # validate()'s `f"Validation loss: {avg_val_loss:.4f}"`: no training loss
    s = last_sample(*CONFIG.splitlines(), bar(1, 500), line)
    assert s.evaluation_done
    assert s.loss is None


def test_a_validation_after_a_bars_draw_leaves_the_bars_figures():
    # validate() runs after pbar.refresh(): its line may follow the bar's last draw
    s = last_sample(*CONFIG.splitlines(), bar(1, 500) + "Validation loss: 0.7012")
    assert (s.iteration, s.target_iter) == (500, EPOCHS * STEPS)
    assert s.loss == pytest.approx(0.8123)


def test_the_runs_losses_leave_the_validations_out():
    series = MetricSeries()
    series.feed_block(f"{CONFIG}{bar(1, 500)}\nValidation loss: 0.7012\n{bar(1, 750)}\n")
    assert 0.7012 not in [s.loss for s in series.samples]
    assert series.samples[-1].loss == pytest.approx(0.8123)
