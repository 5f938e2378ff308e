"""MosaicML composer's Trainer's progress, built from its source's format strings (mosaicml/
composer 6405188805a0): ProgressBarLogger's bars (composer/loggers/progress_bar_logger.py,
_build_pbar: `bar_format=desc + ' {l_bar}{bar:25}{r_bar}'`, desc the dataloader's label padded
to 15, then `Epoch {n:3}: ` with max_duration in epochs, an evaluation's `{Unit:6} {value:5}: `
in another unit, the training's padded by 14; its unit `ba`; drawn at position 1, so a file
gets each draw after a newline and a carriage return, then tqdm's cursor-up), and ConsoleLogger's
lines (composer/loggers/console_logger.py: `[batch=120/4800]:`, `[epoch=2][batch=120/782]:`,
`[Eval batch=3/10] Eval on eval data`, with `:` and its metrics at eval_end)."""

from __future__ import annotations

import pytest
from support.end_marker import read
from support.line_sample import last_sample

EPOCH_BATCHES, EVAL_BATCHES, MAX_BATCHES = 782, 20, 4800


def bar(label: str, point: str, done: int, total: int, loss: float | None = 0.4123,
        rate: str = "18.93ba/s") -> str:
    """A bar's draw: `label` padded to 15, `point` (`Epoch   0: `, an evaluation's `Batch
    4800: `, or the training's 14 blanks), tqdm's l_bar, 25 columns of bar and r_bar."""
    filled = "\u2588" * (25 * done // total)
    postfix = f", loss/train/total={loss:.4f}" if loss is not None else ""
    return (f"{label:15}{point} {100 * done / total:3.0f}%|{filled:<25}| {done}/{total} "
            f"[00:18<00:22, {rate}{postfix}]")


def epoch_bar(epoch: int, done: int, **kwargs) -> str:
    return bar("train", f"Epoch {epoch:3}: ", done, EPOCH_BATCHES, **kwargs)


def eval_bar(point: str, done: int) -> str:
    return bar("eval", point, done, EVAL_BATCHES, loss=None, rate="100.96ba/s")


def run_bar(done: int) -> str:
    return bar("train", " " * 14, done, MAX_BATCHES)


def drawn(*draws: str) -> str:
    """The draws as a file gets them from a bar at position 1."""
    return "".join(f"\n\r{draw}\x1b[A" for draw in draws) + "\n"


def test_an_epochs_bar_gives_the_batches_done_no_target_its_loss_and_pace():
    s = last_sample(epoch_bar(2, 352, loss=0.5123))
    assert (s.iteration, s.target_iter) == (2 * EPOCH_BATCHES + 352, None)
    assert s.loss == pytest.approx(0.5123)
    assert s.sec_per_iter == pytest.approx(1 / 18.93)


def test_the_bar_of_a_run_in_batches_counts_to_max_duration():
    s = last_sample(run_bar(1200))
    assert (s.iteration, s.target_iter) == (1200, MAX_BATCHES)
    assert s.loss == pytest.approx(0.4123)


@pytest.mark.parametrize("point", ["Epoch   0: ", "Batch  4800: "], ids=["epochs", "batches"])
def test_an_evaluators_bar_is_an_evaluations(point):
    s = last_sample(eval_bar(point, 10))
    assert s.evaluation_batches == (10, EVAL_BATCHES)
    assert (s.iteration, s.target_iter, s.loss) == (None, None, None)


@pytest.mark.parametrize(("line", "iteration", "target"), [
    ("[batch=120/4800]:", 120, 4800), ("[token=1048576/2097152]:", 1048576, 2097152),
    ("[epoch=2][batch=120/782]:", 902, None)], ids=["batches", "tokens", "epochs"])
def test_a_console_line_gives_its_count(line, iteration, target):
    s = last_sample(line)
    assert (s.iteration, s.target_iter) == (iteration, target)


@pytest.mark.parametrize(("line", "batches", "done"), [
    ("[Eval batch=3/10] Eval on eval data", (3, 10), False),
    ("[Eval batch=10/10] Eval on eval data:", (10, 10), True)], ids=["batch", "end"])
def test_a_console_evaluation_line_is_an_evaluations(line, batches, done):
    s = last_sample(line)
    assert (s.evaluation_batches, s.evaluation_done) == (batches, done)
    assert s.iteration is None


def test_the_end_of_the_first_epoch_and_its_evaluation_is_no_end_of_the_run():
    d = read(drawn(epoch_bar(0, 700), epoch_bar(0, EPOCH_BATCHES), eval_bar("Epoch   0: ", 0),
                   eval_bar("Epoch   0: ", EVAL_BATCHES)))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_a_run_in_batches_at_max_duration_is_finished_and_one_short_of_it_running():
    evaluation = (eval_bar("Batch  4800: ", 0), eval_bar("Batch  4800: ", EVAL_BATCHES))
    finished = read(drawn(run_bar(3600), run_bar(MAX_BATCHES), *evaluation))
    assert (finished.class_id, finished.decided_by) == ("completed", "progress")
    cut = read(drawn(run_bar(2400), run_bar(3600)))
    assert (cut.class_id, cut.decided_by) == ("none", "progress")


# The hyperparameters' dump before the loop (console_logger.py and progress_bar_logger.py,
# _log_hparams_to_console: `Config:` then `yaml.dump(self.hparams)`, keys sorted), here the
# Trainer's own with auto_log_hparams=True: max_duration as passed, `3ep`.
CONFIG = ("******************************\nConfig:\nauto_log_hparams: true\n"
          "device_train_microbatch_size: auto\nmax_duration: 3ep\nprecision: amp_bf16\n"
          "run_name: resnet50-3ep\nseed: 17\n\n******************************\n")


def test_the_epochs_max_duration_dumped_are_the_target_of_an_epochs_bar_and_console_line():
    s = last_sample(*CONFIG.splitlines(), epoch_bar(1, 352))
    assert (s.iteration, s.target_iter) == (EPOCH_BATCHES + 352, 3 * EPOCH_BATCHES)
    s = last_sample(*CONFIG.splitlines(), "[epoch=2][batch=120/782]:")
    assert (s.iteration, s.target_iter) == (EPOCH_BATCHES + 120, 3 * EPOCH_BATCHES)


def _epochs(last: int) -> str:
    """The bars of the epochs up to `last` (from 0), each drawn to its end."""
    return "".join(drawn(epoch_bar(epoch, 400), epoch_bar(epoch, EPOCH_BATCHES))
                   for epoch in range(last + 1))


def test_a_run_in_epochs_ends_at_its_last_epochs_end_and_not_before():
    finished = read(CONFIG + _epochs(2))
    assert (finished.class_id, finished.decided_by) == ("completed", "progress")
    cut = read(CONFIG + _epochs(1))
    assert (cut.class_id, cut.decided_by) == ("none", "progress")
    assert (cut.metrics.last_iter, cut.metrics.target_iter) == (
        2 * EPOCH_BATCHES, 3 * EPOCH_BATCHES)
