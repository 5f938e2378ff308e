"""An early stop said with its reason ends a loop short of its count as an early stop
(bot.core.diagnose.finish_said `stopped_early`, the one definition the closing words and the
closing summary read): skorch's `Stopping since valid_loss has not improved in the last 5
epochs.`, `Early stopping: patience 3 reached`, `Stopped: no improvement in 3 epochs`, an early
stop's counter at its total; an early stop's counter short of it, one denied or one to come
still leaves the loop open.

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import SUMMARY, epochs, read


@pytest.mark.parametrize("line", [
    "Stopping since valid_loss has not improved in the last 5 epochs.",
    "Early stopping: val_loss did not improve for 3 epochs",
    "Early stopping: patience 3 reached",
    "Patience reached. Stopping training.",
    "Reached patience of 3 epochs without improvement; stopping training",
    "EarlyStopping: patience reached, stopping",
    "Stopped: no improvement in 3 epochs",
    "Validation loss hasn't improved in 3 epochs, stopping",
    "INFO - early stopping counter 3 of 3 -> stop",
])
def test_an_early_stop_said_with_its_reason_ends_the_run(line):
    assert read(epochs(5, 20, val_acc=True) + line + "\n" + SUMMARY).class_id == "completed"


@pytest.mark.parametrize("line", [
    "EarlyStopping counter: 3 out of 10",
    "Early stopping: val_loss did not improve (3/10)",
    "Patience reached: False",
    "Will stop since val_loss has not improved",
    "lr warmup stopped: no improvement",
])
def test_a_counter_a_setting_or_a_stop_of_something_else_leaves_it_open(line):
    assert read(epochs(5, 20, val_acc=True) + line + "\n" + SUMMARY).class_id == "none"
