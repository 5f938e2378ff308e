"""A log alone whose end is followed by a next phase's start announced in words, with no
stage number (`Starting the reward-model stage`, `Fine-tuning begins`), stays open (`none`):
the end was a stage's (bot.core.diagnose.after_target.starts_next_phase). An evaluation's or a
test's phase started, or a phase named ended, after the end is no next phase.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.diagnose.after_target import starts_next_phase

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))


@pytest.mark.parametrize("log", [
    pytest.param(EPOCHS + "training done\nStarting the reward-model stage\n",
                 id="a marker then a stage started"),
    pytest.param(EPOCHS + "Pretraining finished.\nFine-tuning begins\n",
                 id="the last epoch then fine-tuning begins"),
    pytest.param(EPOCHS + "Now entering the SFT phase\n", id="a phase entered"),
])
def test_a_phase_started_in_words_after_the_end_keeps_the_run_open(log):
    assert read(log).class_id == "none"


@pytest.mark.parametrize("after, starts", [
    ("Starting the reward-model stage", True),
    ("Fine-tuning begins", True),
    ("Moving on to stage two", True),
    ("Starting test phase", False),
    ("Beginning evaluation stage", False),
    ("Fine-tuning stage finished", False),
    ("Training time: 2h", False),
    ("Saved model to out/", False),
])
def test_which_words_start_a_next_phase(after, starts):
    assert starts_next_phase(["Epoch 3/3 - loss: 0.5"], [after]) is starts

