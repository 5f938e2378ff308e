"""An early stop's words alone with its setting or its reason in parentheses (`Early stopping
(patience=3)`, `Epoch 14: early stopping (patience=3, monitor=val_loss)`, `Early stopping (no
improvement in 3 epochs)`) end a loop short of its count as an early stop
(bot.core.diagnose.finish_said `stopped_early`); a callback's repr, its use announced or a
setting with more said after it do not.

The logs are synthetic: the lines such training scripts print.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.diagnose.finish_said import stopped_early


def _epochs(epochs: int, total: int = 50) -> str:
    return "".join(f"Epoch {e}/{total} - loss: 0.{60 - e} - val_loss: 0.{70 + e}\n"
                   for e in range(1, epochs + 1))


@pytest.mark.parametrize("line", [
    "Early stopping (patience=3)",
    "Epoch 4: early stopping (patience=3, monitor=val_loss)",
    "2026-12-07 12:00:00,123 - __main__ - INFO - Early stopping (patience=3)",
    "Early stopping (no improvement in 3 epochs)",
])
def test_an_early_stop_with_its_setting_ends_the_run(line):
    assert read(_epochs(4) + line + "\n").class_id == "completed"


@pytest.mark.parametrize("line", [
    "EarlyStopping(patience=3)",
    "Using early stopping (patience=3)",
    "Early stopping (patience=3) enabled",
    "early stopping (patience=5): counter 2/5",
])
def test_a_setting_of_an_early_stop_is_no_stop(line):
    assert not stopped_early(line)


@pytest.mark.parametrize("line", [
    "Early stopping (wait=1, patience=3)",
    "Early stopping (patience=3, counter=1)",
])
def test_an_early_stops_counter_short_of_its_patience_is_no_stop(line):
    assert not stopped_early(line)
    assert read(_epochs(5) + line + "\n").class_id == "none"


def test_an_early_stops_counter_at_its_patience_is_the_stop():
    assert stopped_early("Early stopping (wait=3, patience=3)")
