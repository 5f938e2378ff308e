"""A completion marker naming the last fold of a k-fold loop that no line counts with a total
(`Training complete for fold 5` after `Fold 1` ... `Fold 5` headers, no `Fold 1/5`), at a fold
count k-fold cross-validation usually runs (5, scikit-learn's KFold default, or 10), ends the
loop: the last fold's end said with no next fold started is the run's end
(bot.core.outer_loop.closes_uncounted_loop). A fold short of such a count, a loop counted with
its total, or a next fold after the marker keeps the pass open.

The logs are synthetic: the lines a k-fold training script prints.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.outer_loop import closes_uncounted_loop


def _folds(last: int, header: str = "== Fold {k} ==", first: int = 1) -> str:
    return "".join(header.format(k=k) + "\nEpoch 1/2 - loss: 0.9\nEpoch 2/2 - loss: 0.5\n"
                   f"Training complete for fold {k}\n" for k in range(first, last + 1))


@pytest.mark.parametrize("log", [
    _folds(5), _folds(10), _folds(4, first=0), _folds(5) + "Mean CV accuracy: 0.91\n",
])
def test_the_last_fold_of_an_uncounted_k_fold_loop_ends_the_run(log):
    assert read(log).class_id == "completed"


@pytest.mark.parametrize("log", [_folds(3, "Fold {k}/5"), _folds(1), _folds(3)])
def test_a_fold_short_of_the_loops_end_stays_open(log):
    assert read(log).class_id == "none"


def test_a_next_fold_after_the_marker_stays_open():
    assert not closes_uncounted_loop("Training complete for fold 5",
                                     [f"Fold {k}" for k in range(1, 7)])


@pytest.mark.parametrize("outer", ["=== seed 1/3 ===", "Repeat 1/3", "Seed 0 (1/3)"])
def test_the_last_fold_inside_a_pass_of_another_open_loop_stays_open(outer):
    assert read(outer + "\n" + _folds(5)).class_id == "none"
    assert not closes_uncounted_loop("Training complete for fold 5",
                                     [outer, *(f"== Fold {k} ==" for k in range(1, 6))])


def test_the_last_fold_of_the_last_pass_of_another_loop_ends_the_run():
    assert read("=== seed 3/3 ===\n" + _folds(5)).class_id == "completed"


# a long preamble between the fold count stated and the folds: the statement is far before the
# log's last lines
PREAMBLE = "".join(f"Tokenizing shard {i}\n" for i in range(400))


@pytest.mark.parametrize("stated", [
    "Running 10-fold cross-validation",
    "KFold(n_splits=10, random_state=42, shuffle=True)",
    "config: n_folds=10 lr=0.001",
])
def test_a_stated_fold_count_wins_over_the_usual_counts(stated):
    assert read(stated + "\n" + _folds(5)).class_id == "none"
    assert read(stated + "\n" + PREAMBLE + _folds(5)).class_id == "none"
    assert read(stated + "\n" + _folds(10)).class_id == "completed"


def test_the_last_fold_at_a_stated_count_ends_the_run():
    assert read("Running 5-fold cross-validation\n" + _folds(5)).class_id == "completed"
    assert read("Running 3-fold cross-validation\n" + _folds(3)).class_id == "completed"
