"""A log alone whose program announces an early stop and then says its closing words (`Initiating
early stopping`, then `Saving final model to out/`) reads `completed` by hint: the early stop
stopped the epoch count short of its total, as when the stop is the closing words' own line
(bot.core.diagnose.finish_said.ends_in_finish_said). Without the stop, a count short of its
total before the words is still no end.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

EPOCHS = "".join(f"Epoch {e}/100 | train loss 0.{90 - e} | val loss 0.{80 - e}\n"
                 for e in range(1, 18))


@pytest.mark.parametrize("stop", ["Initiating early stopping", "Stopping training early",
                                  "Early stopping triggered"])
def test_an_early_stop_before_the_final_model_saved_ends_the_run(stop):
    d = read(EPOCHS + f"{stop}\nSaving final model to out/model.pt\n")
    assert (d.class_id, d.decided_by) == ("completed", "hint")
    assert d.detail is not None and d.detail["kind"] == "finish_said"


def test_the_final_model_saved_short_of_the_count_with_no_early_stop_leaves_the_run_open():
    assert read(EPOCHS + "Saving final model to out/model.pt\n").class_id == "none"


def test_an_early_stop_before_the_last_progress_does_not_excuse_the_count():
    log = ("Early stopping triggered\n" + EPOCHS + "Saving final model to out/model.pt\n")
    assert read(log).class_id == "none"
