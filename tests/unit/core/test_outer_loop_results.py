"""A k-fold run whose every fold ends in its result by number alone (`Fold 3 best acc: 0.93`)
and whose last fold reaches its last epoch reads `completed`, counted from 0 (`Fold 0/5` ...
`Fold 4/5`) or from 1 (`Fold 1/5` ... `Fold 5/5`): a pass's result read before the next pass's
header is no pass left open (bot.core.outer_loop.outer_loop_open weighs a pass named by number
alone against the loop's last counter). A fold short of the last still holds the run open.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.outer_loop import outer_loop_open


def _folds(first: int, last: int, epochs: int = 30) -> str:
    out = []
    for fold in range(first, last + 1):
        out.append(f"========== Fold {fold}/5 ==========\n")
        out += [f"Epoch [{e}/{epochs}], Loss: 0.{99 - e}, Acc: 0.{50 + e}\n"
                for e in range(1, epochs + 1)]
        out.append(f"Fold {fold} best acc: 0.9{fold}\n")
    return "".join(out)


@pytest.mark.parametrize("log", [
    pytest.param(_folds(0, 4) + "CV mean acc: 0.92 +- 0.01\n", id="counted from 0"),
    pytest.param(_folds(0, 4, epochs=60), id="counted from 0, the last fold's result last"),
    pytest.param(_folds(1, 5) + "CV mean acc: 0.92 +- 0.01\n", id="counted from 1"),
])
def test_the_last_folds_last_epoch_ends_a_k_fold_run(log):
    assert read(log).class_id == "completed"


@pytest.mark.parametrize("log", [
    pytest.param(_folds(0, 3), id="counted from 0, a fold left"),
    pytest.param(_folds(1, 4), id="counted from 1, a fold left"),
])
def test_a_fold_short_of_the_last_keeps_the_run_open(log):
    assert read(log).class_id == "none"


def test_a_pass_named_alone_is_read_against_the_loops_last_counter():
    assert not outer_loop_open(["Fold 0/5", "Fold 3/5", "Fold 3 best acc: 0.93", "Fold 4/5",
                                "Fold 4 best acc: 0.94"])
    assert outer_loop_open(["Fold 1/5", "Fold 1 best acc: 0.9"])
    assert outer_loop_open(["Score for fold 2"])
