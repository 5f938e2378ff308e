"""No improvement with a stop ends a log only where the stop is of the training and happens now
(bot.core.diagnose.finish_said `stopped_early`): a stop still to come (`stopping after 3
more`, `stopping at 5`, `stopping soon if this continues`) or one of something else than the
training (`stopping warmup`, `stop decaying lr`, `Stopped lr scheduler.`, `stopping data
augmentation`) leaves a loop short of its count open (`none`), as a running job's log is.

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import SUMMARY, epochs, read


@pytest.mark.parametrize("line", [
    "No improvement for 2 epochs, stopping after 3 more",
    "val_loss did not improve (patience 2/5); stopping at 5",
    "val_loss did not improve for 2 epochs - stopping soon if this continues",
    "No improvement for 2 epochs, stopping warmup",
    "val_loss did not improve; stop decaying lr",
    "Metric did not improve. Stopped lr scheduler.",
    "no improvement -> stopping data augmentation",
    "has not improved in 2 evals: stopping gradient accumulation increase",
    "Loss has not improved for 2 epochs - stopping LR warmup",
])
def test_a_stop_to_come_or_of_something_else_leaves_the_run_open(line):
    assert read(epochs(5, 20) + line + "\n").class_id == "none"
    assert read(epochs(5, 20) + line + "\n" + SUMMARY).class_id == "none"


@pytest.mark.parametrize("line", [
    "No improvement for 5 epochs, stopping.",
    "val_loss did not improve for 10 epochs. Stopping training",
    "No improvement in 3 epochs, training stopped",
])
def test_no_improvement_with_the_training_stopped_now_ends_the_run(line):
    assert read(epochs(5, 20) + line + "\n" + SUMMARY).class_id == "completed"
