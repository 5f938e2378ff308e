"""MONAI's StatsHandler lines, built from its source's format strings (Project-MONAI/MONAI
monai/handlers/stats_handler.py d388d1c6fec8, _default_iteration_print): `Epoch: {epoch}/
{max_epochs}, Iter: {i}/{epoch_length} --` and the output's `{name}: {value:.4f} ` (its tag,
`Loss`, when the output is a scalar), i counting the epoch's iterations from 1, every iteration;
monai.apps.get_logger's `%(asctime)s - %(levelname)s - %(message)s` before it."""

from __future__ import annotations

import pytest
from support.end_marker import read

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
