"""After an end a log alone reads (the last epoch's report, the program's closing words, a
framework's marker), a next phase's start announced in words keeps the run open (`none`)
when it names a kind of training (`Starting DPO training`, `Beginning reward model
training`) or a phase that produces its own output, a generation's, a prediction's or an
inference's, with no result after it yet (`Starting the generation phase`): the job went on
to its next phase (bot.core.diagnose.after_target.starts_next_phase). Such a phase with its
result after it, or training named ended, is no next phase.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

from bot.core.diagnose.after_target import starts_next_phase

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))
HF = ("".join(f"{{'loss': 0.{50 - i}, 'learning_rate': 1e-05, 'epoch': {i / 10}}}\n"
              for i in range(1, 11))
      + "{'train_runtime': 120.5, 'train_samples_per_second': 10.1, "
        "'train_steps_per_second': 1.2, 'train_loss': 0.45, 'epoch': 1.0}\n")


@pytest.mark.parametrize("end", [EPOCHS, EPOCHS + "SFT training complete.\n", HF],
                         ids=["last epoch", "closing words", "trainer marker"])
@pytest.mark.parametrize("phase", ["Starting DPO training", "Starting the generation phase",
                                   "Beginning reward model training..."])
def test_a_new_phase_started_after_the_end_keeps_the_run_open(end, phase):
    assert read(end + phase + "\n").class_id == "none"


@pytest.mark.parametrize("after", [
    ["Starting the generation phase", "Generated 500 samples, score: 0.81"],
    ["DPO training finished"],
    ["Starting export phase", "Exported ONNX to out/model.onnx"],
])
def test_a_phase_with_its_result_or_a_step_after_training_is_no_next_phase(after):
    assert not starts_next_phase(["Epoch 3/3 - loss: 0.5"], after)
    assert read(EPOCHS + "\n".join(after) + "\n").class_id == "completed"
