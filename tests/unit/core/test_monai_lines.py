"""MONAI's StatsHandler lines, built from its source's format strings (Project-MONAI/MONAI
monai/handlers/stats_handler.py d388d1c6fec8, _default_iteration_print): `Epoch: {epoch}/
{max_epochs}, Iter: {i}/{epoch_length} --` and the output's `{name}: {value:.4f} ` (its tag,
`Loss`, when the output is a scalar), i counting the epoch's iterations from 1, every iteration;
monai.apps.get_logger's `%(asctime)s - %(levelname)s - %(message)s` before it."""

from __future__ import annotations

import calendar

import pytest
from support.diagnosis import read_log
from support.end_marker import read

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import Accounting
from bot.core.training_lines import LineParser, Sample

EPOCHS, ITERS = 100, 20


def _line(epoch: int, it: int, loss: float = 0.4123, *, epochs: int = EPOCHS,
          tag: str = "Loss") -> str:
    """StatsHandler's iteration line for `epoch` and `it` (both from 1)."""
    return (f"2024-05-01 19:28:{it:02d},123 - INFO - Epoch: {epoch}/{epochs}, Iter: {it}/{ITERS} "
            f"-- {tag}: {loss:.4f} ")


def _epoch_end(epoch: int) -> str:
    """An evaluator's StatsHandler at its epoch's end (_default_epoch_print)."""
    return (f"2024-05-01 19:28:30,123 - INFO - Epoch[{epoch}] Metrics -- val_mean_dice: 0.8123 \n"
            f"2024-05-01 19:28:30,124 - INFO - Key metric: val_mean_dice best value: 0.8123 at "
            f"epoch: {epoch}\n")


def _log(*epochs_iters: tuple[int, int]) -> str:
    """The iteration lines from each (epoch, its last iteration logged), each epoch's lines
    and its evaluator's summary once it reached its last iteration."""
    out = []
    for epoch, last in epochs_iters:
        out += [_line(epoch, it) + "\n" for it in range(max(last - 2, 1), last + 1)]
        if last == ITERS:
            out.append(_epoch_end(epoch))
    return "".join(out)


def _sample(line: str) -> Sample:
    sample, _ = LineParser().parse(line, 1)
    assert sample is not None
    return sample


@pytest.mark.parametrize("tag", ["Loss", "loss"], ids=["scalar output", "dict output"])
def test_a_monai_line_gives_its_iterations_done_of_every_epochs_and_its_loss(tag):
    s = _sample(_line(3, 5, loss=0.5123, tag=tag))
    # two epochs' iterations and this one's 5, of all the epochs' iterations
    assert (s.iteration, s.target_iter) == (2 * ITERS + 5, EPOCHS * ITERS)
    assert s.loss == pytest.approx(0.5123)


def test_an_epochs_last_iteration_is_no_end_of_the_training():
    # the epoch's own count reached its total: the run goes on (it read `completed` before)
    d = read(_log((98, ITERS), (99, ITERS)))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_the_last_epochs_last_iteration_ends_a_finished_run_by_progress():
    d = read(_log((99, ITERS), (EPOCHS, ITERS)))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


def test_a_run_cut_in_its_last_epoch_is_still_running():
    d = read(_log((99, ITERS), (EPOCHS, 12)))
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_an_evaluators_end_is_no_end_of_the_training():
    # ignite's evaluator ends its run after each validation; the trainer goes on
    evaluator = ("INFO:ignite.engine.engine.SupervisedEvaluator:Engine run finished. Time taken: "
                 "00:00:03.012\n")
    d = read(_log((98, ITERS)) + evaluator)
    assert (d.class_id, d.decided_by) == ("none", "progress")


# --- a rerun into the same log -------------------------------------------------------------
# ignite's Engine.run (pytorch/ignite ignite/engine/engine.py de08e799cfb5) logs the run's start:
# `Engine run starting with max_epochs={max_epochs}.` for a new state, else `Engine run resuming
# from iteration {i}, epoch {e} until {max_epochs} epochs`, which a MONAI trainer prints (its
# Workflow sets the state's max_epochs before the run: monai/engines/workflow.py), by a logger
# named after the engine's class; here in MONAI Label's format.

def _timed(day: int, minute: int, second: int, logger: str, message: str) -> str:
    return (f"[2024-05-{day:02d} 10:{minute:02d}:{second:02d},123] [4242] [MainThread] [INFO] "
            f"({logger}:696) - {message}\n")


def _engine_start(day: int, *, engine: str = "SupervisedTrainer", epoch: int = 0,
                  epochs: int = 5, new_state: bool = False) -> str:
    message = (f"Engine run starting with max_epochs={epochs}." if new_state else
               f"Engine run resuming from iteration 0, epoch {epoch} until {epochs} epochs")
    return _timed(day, 0, 0, f"ignite.engine.engine.{engine}", message)


def _epochs(day: int, last_epoch: int, last_iter: int = ITERS) -> str:
    """StatsHandler's lines from epoch 1 to `last_epoch` (of 5), a second apart, a minute an
    epoch."""
    return "".join(
        _timed(day, epoch, it, "monai.handlers.StatsHandler",
               f"Epoch: {epoch}/5, Iter: {it}/{ITERS} -- train_loss: 0.4123 ")
        for epoch in range(1, last_epoch + 1)
        for it in range(1, (ITERS if epoch < last_epoch else last_iter) + 1))


@pytest.mark.parametrize("new_state", [False, True], ids=["resuming", "starting"])
def test_a_rerun_a_day_later_is_read_from_its_trainers_start(new_state):
    """The rerun's trainer, a second after its last line: its own progress and pace, no hang
    dated from the first run's highest iteration the day before (it read `hang`)."""
    first = _engine_start(1) + _epochs(1, 3)
    rerun = _engine_start(2, new_state=new_state) + _epochs(2, 1, 10)
    now = calendar.timegm((2024, 5, 2, 10, 1, 10)) + 1.123
    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text(first + rerun)
    analysis.finish()
    d = analysis.diagnose(Accounting(state="RUNNING"), now=now)
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (10, 5 * ITERS)


def test_an_evaluators_start_is_no_new_run():
    """ignite's evaluator starts a run at each validation (`..., epoch 2 until 3 epochs`): the
    trainer's run goes on, its progress the same."""
    text = _epochs(1, 2) + _engine_start(1, engine="SupervisedEvaluator", epoch=2, epochs=3)
    d = read(text)
    assert (d.metrics.last_iter, d.metrics.target_iter) == (2 * ITERS, 5 * ITERS)


# --- a run by iterations ---------------------------------------------------------------------
# ignite's `run(data, max_iters=N)` (pytorch/ignite ignite/engine/engine.py de08e799cfb5, since
# 307ac11a8) stops when the iteration reaches max_iters, inside its last epoch when epoch_length
# does not divide it. Since 3745b937e its state keeps no max_epochs in that mode (StatsHandler
# prints `Epoch: 3/None`) and the run's start names the total: `Engine run starting with
# max_iters={max_iters}.`, on a resumed state `Engine run resuming from iteration {i}, epoch {e}
# until {max_iters} iterations`.
MAX_ITERS = 2 * ITERS + 7


def _by_iterations(last: int, *, start: str | None = None, epochs: str = "None") -> str:
    """A trainer run with max_iters=MAX_ITERS: its start, then StatsHandler's line for each
    iteration up to `last` (counted over the run), the epoch's own count `(i - 1) % ITERS + 1`."""
    start = start or f"Engine run starting with max_iters={MAX_ITERS}."
    lines = [f"2024-05-01 19:27:00,123 - INFO - {start}\n"]
    for i in range(1, last + 1):
        epoch, it = (i - 1) // ITERS + 1, (i - 1) % ITERS + 1
        lines.append(f"2024-05-01 19:{28 + i // 60:02d}:{i % 60:02d},123 - INFO - Epoch: "
                     f"{epoch}/{epochs}, Iter: {it}/{ITERS} -- Loss: 0.4123 \n")
    return "".join(lines)


def test_a_line_of_a_run_by_iterations_counts_towards_its_max_iters():
    parser = LineParser()
    parser.parse(f"Engine run starting with max_iters={MAX_ITERS}.", 1)
    sample, _ = parser.parse("Epoch: 3/None, Iter: 5/20 -- Loss: 0.5123 ", 2)
    assert sample is not None
    assert (sample.iteration, sample.target_iter) == (2 * ITERS + 5, MAX_ITERS)


@pytest.mark.parametrize("start", [
    f"Engine run starting with max_iters={MAX_ITERS}.",
    f"Engine run resuming from iteration {ITERS}, epoch 1 until {MAX_ITERS} iterations",
], ids=["starting", "resuming"])
@pytest.mark.parametrize("acct", [None, Accounting(state="COMPLETED", exit_code=0, signal=0,
                                                   elapsed_s=3600)], ids=["log alone", "sacct"])
def test_a_run_that_reached_its_max_iters_inside_its_last_epoch_completed(start, acct):
    """The last epoch's count stops short of epoch_length at max_iters: the run's end, by its
    progress (it read as cut short: no target, or every epoch's)."""
    d = read_log(Catalogue.load(), _by_iterations(MAX_ITERS, start=start), acct)
    assert (d.class_id, d.decided_by) == ("completed", "progress")
    assert (d.metrics.last_iter, d.metrics.target_iter) == (MAX_ITERS, MAX_ITERS)


def test_a_run_by_iterations_cut_short_of_its_max_iters_is_still_running():
    d = read(_by_iterations(MAX_ITERS - 3))
    assert (d.class_id, d.decided_by) == ("none", "progress")
    assert d.metrics.target_iter == MAX_ITERS


def test_a_run_by_iterations_whose_epochs_ignite_counted_still_ends_at_its_max_iters():
    """A state whose epoch_length was not known at the start sets max_epochs to
    ceil(max_iters / epoch_length) after the first epoch (`Epoch: 3/3`): the max_iters it
    announced is still the end."""
    d = read(_by_iterations(MAX_ITERS, epochs="3"))
    assert (d.class_id, d.decided_by) == ("completed", "progress")
