"""An early stop denied or still to come before the program's closing words (`No early
stopping this epoch`, `Early stopping would trigger in 3 more epochs`) is no early stop: the
epoch count short of its total before `Saving final model` leaves a log alone open (`none`)
(bot.core.diagnose.finish_said.ends_in_finish_said). A patience run out (`Patience exhausted,
stopping training.`) is one, as `Initiating early stopping` is.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read

EPOCHS = epochs(14, 50)
SAVED = "Saving final model to out/model.pt\n"


@pytest.mark.parametrize("line", [
    "No early stopping this epoch (best val_loss 0.56)",
    "Early stopping would trigger in 3 more epochs without improvement",
    "Early stopping will trigger after 3 more epochs",
    "not early stopping yet",
])
def test_an_early_stop_denied_or_to_come_does_not_excuse_the_count(line):
    assert read(EPOCHS + line + "\n" + SAVED).class_id == "none"


@pytest.mark.parametrize("line", ["Patience exhausted, stopping training.",
                                  "Initiating early stopping", "Stopping early at epoch 14"])
def test_an_early_stop_before_the_final_model_saved_still_ends_the_run(line):
    assert read(EPOCHS + line + "\n" + SAVED).class_id == "completed"
