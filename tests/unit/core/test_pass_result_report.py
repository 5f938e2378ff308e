"""A pass's result after the last epoch (`Fold 4 finished, acc: 0.94`) is a report, no
training: a figure on a line that says what it reports finished (bot.core.diagnose.after_target
`goes_on_after`). As the last pass of a loop counted from 0 (`Fold 0/5` ... `Fold 4/5`) it ends
a log alone (`completed`); short of it, the run stays open.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read

from bot.core.diagnose.after_target import goes_on_after


def _folds(folds: range, end: str) -> str:
    return "".join(f"Fold {f}/5\n" + epochs(5) + end.format(f=f) + "\n" for f in folds)


@pytest.mark.parametrize("end", ["Fold {f} finished, acc: 0.9{f}", "Fold {f} done. acc=0.9{f}"])
def test_the_last_zero_based_pass_result_ends_the_run(end):
    assert read(_folds(range(5), end)).class_id == "completed"


@pytest.mark.parametrize("end", ["Fold {f} finished, acc: 0.9{f}", "Fold {f} done. acc=0.9{f}"])
def test_a_pass_result_short_of_the_last_pass_leaves_the_run_open(end):
    assert read(_folds(range(4), end)).class_id == "none"


@pytest.mark.parametrize("line, goes_on", [
    ("Fold 4 finished, acc: 0.94", False),
    ("Training done for fold 4, loss: 0.31", False),
    ("acc: 0.94", True),
    ("step 120 loss: 0.31", True),
])
def test_a_figure_on_a_line_saying_it_finished_is_a_report(line, goes_on):
    assert goes_on_after([line], 5) is goes_on
