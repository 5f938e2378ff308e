"""A next phase's start said in words after an end keeps a log alone open when it names the
phase `final` or `best` (`Starting the final PPO stage`: a report's words only on a figure's
line) and when it says more of the phase after its name (`Starting the reward-model stage with
8 GPUs`) (bot.core.diagnose.after_target.starts_next_phase); an evaluation's or a report's
phase is still none (`Starting val phase`, `Entering eval stage`).

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.diagnose.after_target import starts_next_phase

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))


@pytest.mark.parametrize("start", [
    "Starting the final PPO stage",
    "Starting the best-of-n distillation phase",
    "Starting the reward-model stage with 8 GPUs",
    "Entering the DPO phase on 4 nodes (bf16)",
    "Fine-tuning begins with lr 1e-5",
])
def test_a_phase_start_saying_more_keeps_the_run_open(start):
    assert read(EPOCHS + "training done\n" + start + "\n").class_id == "none"


@pytest.mark.parametrize("after", ["Starting val phase", "Entering eval stage",
                                   "Starting the final test phase", "Stage summary begins",
                                   "Starting the reward-model stage took 2h"])
def test_an_evaluation_or_report_phase_is_no_next_phase(after):
    assert not starts_next_phase(["Epoch 3/3 - loss: 0.5"], [after])
