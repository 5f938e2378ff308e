"""A step after training announced as a phase after an end (`Starting cleanup phase`,
`Entering export phase`, `Starting benchmarking stage`, `Starting the scoring phase`) is no
next phase of training: a log alone that ends there reads `completed`, as when an evaluation's
phase follows (bot.core.diagnose.after_target.starts_next_phase). A W&B footer after it
(`wandb: Waiting for W&B process to finish... (success).`) changes nothing.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.diagnose.after_target import starts_next_phase

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))
FOOTER = ("wandb: Waiting for W&B process to finish... (success).\nwandb: \n"
          "wandb: Run summary:\nwandb:   train/loss 0.61\n")


@pytest.mark.parametrize("step", [
    "Starting cleanup phase\nRemoved /scratch/tmp_sft",
    "Entering export phase\nExported ONNX to out/model.onnx",
    "Starting benchmarking stage\nMMLU: 0.52",
    "Starting the scoring phase\nscore: 0.83",
    "Starting cleanup phase\nRemoved /scratch/tmp_sft\n" + FOOTER,
])
def test_a_step_after_training_named_a_phase_leaves_the_run_completed(step):
    assert read(EPOCHS + "training done\n" + step + "\n").class_id == "completed"


@pytest.mark.parametrize("after, starts", [
    ("Starting the upload phase", False),
    ("Entering LoRA merge stage", False),
    ("Starting the conversational SFT stage", True),
    ("Starting the reward-model stage", True),
])
def test_which_phases_are_steps_after_training(after, starts):
    assert starts_next_phase(["Epoch 3/3 - loss: 0.5"], [after]) is starts
