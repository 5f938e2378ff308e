"""A script's next training after the framework's completion marker (a loop over folds or
seeds, a hyperparameter search's next trial), read from the frameworks' source: Keras's
EarlyStopping prints `Epoch 8: early stopping` from on_train_end, as fit() returns
(keras-team/keras keras/src/callbacks/early_stopping.py), and the next fit's
ProgbarLogger.on_epoch_begin prints `Epoch 1/10` (keras/src/callbacks/progbar_logger.py);
Hugging Face's Trainer logs `Training completed. ...` as train() ends and `***** Running
training *****` as the next train() starts (huggingface/transformers
src/transformers/trainer.py, _inner_training_loop)."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue

KERAS_FIT = "".join(
    f"Epoch {n}/50\n250/250 [==============================] - 12s 48ms/step - loss: "
    f"{0.3 - n / 100:.4f} - val_loss: {0.29 + abs(n - 6) / 100:.4f}\n" for n in range(1, 9))
KERAS_STOPPED = KERAS_FIT + "Epoch 8: early stopping\n"
HF_TRAINED = (
    "***** Running training *****\n  Num examples = 4,000\n  Num Epochs = 3\n"
    "{'loss': 1.9, 'grad_norm': 0.5, 'learning_rate': 5e-05, 'epoch': 0.01}\n"
    "  0%|          | 10/1500 [00:10<20:00,  1.2it/s]\n"
    "\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)\n\n\n"
    "{'train_runtime': 36.1, 'train_samples_per_second': 3.3, 'train_steps_per_second': 0.8, "
    "'train_loss': 1.75, 'epoch': 0.01}\n")
HF_NEXT = ("[INFO|trainer.py:2314] 2025-01-08 10:00:00,000 >> ***** Running training *****\n"
           "[INFO|trainer.py:2315] 2025-01-08 10:00:00,000 >>   Num examples = 4,000\n")


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.mark.parametrize("text", [KERAS_STOPPED, HF_TRAINED], ids=["keras", "hugging face"])
def test_the_marker_alone_ends_a_finished_run(catalogue, text):
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


@pytest.mark.parametrize("text", [
    KERAS_STOPPED + "Epoch 1/50\n",
    KERAS_STOPPED + "Epoch 1/50\n 12/250 [>.............................] - ETA: 10s - loss: "
    "0.6931\n",
    KERAS_STOPPED + "Restoring model weights from the end of the best epoch: 5.\nEpoch 1/50\n",
    HF_TRAINED + "***** Running training *****\n  Num examples = 4,000\n",
    HF_TRAINED + HF_NEXT,
], ids=["keras, the next fit's first epoch", "keras, and its bar", "keras, weights restored",
        "hugging face", "hugging face, its logging format"])
def test_the_next_training_started_after_the_marker_is_no_end(catalogue, text):
    d = read_log(catalogue, text)
    assert (d.class_id, d.decided_by) == ("none", "progress")


def test_the_next_training_ending_too_ends_the_run(catalogue):
    d = read_log(catalogue, KERAS_STOPPED + KERAS_STOPPED.replace("Epoch 8:", "Epoch 7:"))
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    d = read_log(catalogue, HF_TRAINED + HF_TRAINED)
    assert (d.class_id, d.decided_by) == ("completed", "signature")
