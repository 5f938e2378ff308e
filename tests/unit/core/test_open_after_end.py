"""A log alone whose end is a part's, not the run's, stays open (`none`): a stage named before
the program's closing words, a next phase starting after an end (the program's own words or a
framework's completion marker), Keras's early stop inside a fold short of the last, and the
last-epoch and target readings with a pass's header far back.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

STEPS = "".join(f"step {s} loss 0.{99 - s // 100:02d}\n" for s in range(100, 1100, 100))


@pytest.mark.parametrize("log", [
    pytest.param(STEPS + "[Stage: SFT] training done\n", id="a bracketed stage"),
    pytest.param(STEPS + "Phase: warmup, done training\n", id="a phase named before"),
])
def test_a_stage_named_before_the_finish_words_is_that_stages_end(log):
    assert read(log).class_id == "none"


def test_the_finish_words_with_no_stage_before_them_still_end_the_run():
    d = read(STEPS + "INFO: training done\n")
    assert (d.class_id, d.decided_by) == ("completed", "hint")


# Hugging Face Trainer's logged dicts: three epochs, its `train_runtime` (a `completed` marker)
HF_STEPS = "".join(f"{{'loss': 0.{9 - i}, 'epoch': {i}.0, 'step': {i * 100}}}\n"
                   for i in range(1, 4))
HF_DONE = "{'train_runtime': 39.7, 'train_loss': 0.5, 'epoch': 3.0}\n"
HF_EVAL = "{'eval_loss': 0.42, 'eval_runtime': 4.0, 'epoch': 3.0, 'step': 300}\n"
HF_NO_STEP = "".join(f"{{'loss': 0.{90 - i}, 'learning_rate': 1e-05, 'epoch': {i / 10:.2f}}}\n"
                     for i in range(1, 20))


@pytest.mark.parametrize("log", [
    pytest.param(HF_NO_STEP + "Training complete!\nLoading checkpoint shards: 100%|##########| "
                 "4/4 [00:10<00:00,  2.5s/it]\n", id="the next phase's checkpoint loaded"),
    pytest.param(HF_STEPS + HF_DONE + "***** Phase 2: full fine-tune *****\n",
                 id="the next phase's header"),
    pytest.param(HF_STEPS + HF_DONE + HF_EVAL + "Unfreezing backbone for stage 2\n",
                 id="the next stage announced"),
    pytest.param(HF_NO_STEP + "Training complete!\nwandb: Tracking run with wandb version "
                 "0.16.0\n", id="the next phase's tracker run"),
    pytest.param(HF_STEPS + HF_DONE + HF_EVAL + "{'loss': 0.9, 'learning_rate': 1e-05, "
                 "'epoch': 0.1}\n", id="a new first epoch"),
])
def test_a_next_phase_after_a_completion_marker_keeps_the_run_open(log):
    assert read(log).class_id == "none"


@pytest.mark.parametrize("log", [
    pytest.param(HF_STEPS + HF_DONE + HF_EVAL, id="the final evaluation at the same epoch"),
    pytest.param(HF_NO_STEP + "Training complete!\nTest accuracy: 0.91\n", id="a test's result"),
    pytest.param(HF_NO_STEP + "Training complete!\nRestoring model weights from the end of the "
                 "best epoch: 1.\n", id="the best epoch named"),
])
def test_a_completion_marker_with_no_next_phase_after_it_ends_the_run(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


def keras_epochs(n: int, total: int = 100) -> str:
    """Keras fit()'s output for `n` epochs of `total` (tf.keras 2's bar at its total)."""
    return "".join(f"Epoch {e}/{total}\n250/250 [==============================] - 3s 12ms/step"
                   f" - loss: 0.{90 - e:02d} - val_loss: 0.5\n" for e in range(1, n + 1))


@pytest.mark.parametrize("log", [
    pytest.param("Fold 1/5\n" + keras_epochs(12) + "Epoch 12: early stopping\n",
                 id="the fold's header in the tail"),
    pytest.param("Fold 1/5\n" + keras_epochs(25) + "Epoch 25: early stopping\n",
                 id="the fold's header beyond the tail"),
    pytest.param("------ Fold 2 of 5 ------\n" + keras_epochs(25) + "Restoring model weights "
                 "from the end of the best epoch: 20.\nEpoch 25: early stopping\n",
                 id="the best weights restored"),
])
def test_kerass_early_stop_inside_a_fold_short_of_the_last_is_that_folds_end(log):
    assert read(log).class_id == "none"


def test_kerass_early_stop_in_the_last_fold_or_a_single_run_ends_it():
    for log in (keras_epochs(25) + "Epoch 25: early stopping\n",
                "Fold 5/5\n" + keras_epochs(25) + "Epoch 25: early stopping\n"):
        d = read(log)
        assert (d.class_id, d.decided_by) == ("completed", "signature")


# 50 epochs to their total: a pass's header before them is beyond a log's 40-line tail
EPOCHS_TO_TOTAL = "".join(f"Epoch {e}/50 - loss: 0.5 - val_loss: 0.80\n" for e in range(1, 51))


@pytest.mark.parametrize("log", [
    pytest.param("Fold 1/5\n" + EPOCHS_TO_TOTAL, id="the last epoch's report"),
    pytest.param("Fold 1/5\n" + EPOCHS_TO_TOTAL + "Saving final model to out/fold1/\n",
                 id="the last epoch then the fold's final model"),
    pytest.param("Running seed 1 of 3\n" + EPOCHS_TO_TOTAL + "Test loss: 0.31\n",
                 id="the target reached then a test's result"),
])
def test_the_last_epoch_of_a_pass_short_of_the_last_however_far_back_its_header(log):
    assert read(log).class_id == "none"


def test_the_last_epoch_of_the_last_pass_far_back_ends_the_run():
    assert read("Fold 5/5\n" + EPOCHS_TO_TOTAL).class_id == "completed"
    assert read("Running seed 3 of 3\n" + EPOCHS_TO_TOTAL + "Test loss: 0.31\n"
                ).class_id == "completed"


EPOCHS_20 = "".join(f"Epoch {e}/20 - loss: 0.{90 - e:02d} - val_loss: 0.80\n" for e in range(1, 21))
SHARDS = "Loading checkpoint shards: 100%|##########| 2/2 [00:05<00:00,  2.51s/it]\n"


@pytest.mark.parametrize("log", [
    pytest.param(EPOCHS_20 + SHARDS, id="the next phase's checkpoint loaded"),
    pytest.param(EPOCHS_20 + "Stage 2/2: DPO\n", id="the next stage's header"),
    pytest.param(EPOCHS_20 + "wandb: Tracking run with wandb version 0.16.0\n",
                 id="the next phase's tracker run"),
    pytest.param(keras_epochs(5, 5) + SHARDS, id="Keras's last epoch then a checkpoint loaded"),
])
def test_a_next_phase_after_the_last_epoch_keeps_the_run_open(log):
    assert read(log).class_id == "none"


@pytest.mark.parametrize("after", ["", "Test accuracy: 0.91\n", "Model saved to out/model.pt\n"])
def test_the_last_epoch_with_no_next_phase_after_it_ends_the_run(after):
    assert read(EPOCHS_20 + after).class_id == "completed"
