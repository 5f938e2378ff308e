"""A next phase's start announced in words after an end (`Starting the reward-model stage`,
`Fine-tuning begins`) keeps a log alone open whatever a logging library or the program put
before it (bot.core.logprefix `LOG_LEAD`): a level and a logger's name (`- INFO - `,
`INFO:__main__:`, `[INFO] `, hydra's `[__main__][INFO] - `, absl's `I1207 ... train.py:88] `,
the Hugging Face examples' `12/07/2026 11:00:05 - INFO - __main__ - `) or a tag (`[Pipeline] `,
`rlhf | `). The closing words' own lead (`INFO: training done`) reads the same lead.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.diagnose.after_target import starts_next_phase

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))

LEADS = {
    "python logging": "2026-12-07 11:00:05,123 - INFO - ",
    "hf examples": "12/07/2026 11:00:05 - INFO - __main__ - ",
    "basicConfig": "INFO:__main__:",
    "a named logger": "INFO:trl.trainer:",
    "bracketed level": "[INFO] ",
    "hydra": "[2026-12-07 11:00:05,123][__main__][INFO] - ",
    "absl": "I1207 11:00:05.123 train.py:88] ",
    "a tag": "[Pipeline] ",
    "a bar tag": "rlhf | ",
    "a symbol": "==> ",
}


@pytest.mark.parametrize("lead", list(LEADS.values()), ids=list(LEADS))
@pytest.mark.parametrize("start", ["Starting the reward-model stage", "Fine-tuning begins"])
def test_a_phase_started_after_a_log_lead_keeps_the_run_open(lead, start):
    log = EPOCHS + "training done\n" + lead + start + "\n"
    assert read(log).class_id == "none"


@pytest.mark.parametrize("lead", list(LEADS.values()), ids=list(LEADS))
def test_an_evaluation_phase_after_a_log_lead_is_no_next_phase(lead):
    assert not starts_next_phase(["Epoch 3/3 - loss: 0.5"], [lead + "Starting test phase"])


@pytest.mark.parametrize("lead", ["INFO:root:", "- WARNING - ", "I1207 11:00:05.123 train.py:88] "])
def test_the_closing_words_after_a_log_lead_end_the_run(lead):
    assert read(EPOCHS + lead + "Training complete\n").class_id == "completed"
