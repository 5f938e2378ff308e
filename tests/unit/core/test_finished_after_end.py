"""A finished run whose log goes on after its end with what follows a run's end, not a next
phase's start, stays finished (`completed`): Lightning's test, validate or predict from the best
checkpoint (its path names an earlier epoch), a data bar before a prediction, a load naming the
best epoch, each stage's result after the end, and Keras's early stop in the last pass of a
k-fold loop counted from 0.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

BAR = "\u2588" * 10
PL_FIT = "GPU available: True (cuda), used: True\n" + "".join(
    f"Epoch {e}: 100%|{BAR}| 250/250 [00:30<00:00,  8.2it/s, v_num=0, train_loss=0.{90 - e}, "
    f"val_loss=0.{50 - e}]\nEpoch {e}, global step {250 * (e + 1)}: 'val_loss' reached "
    f"0.{50 - e} (best 0.{50 - e}), saving model to '/ckpt/epoch={e}-step={250 * (e + 1)}.ckpt' "
    "as top 1\n" for e in range(10)) + "`Trainer.fit` stopped: `max_epochs=10` reached.\n"
RESTORE = ("Restoring states from the checkpoint path at /ckpt/epoch=7-step=2000.ckpt\n"
           "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\n"
           "Loaded model weights from the checkpoint at /ckpt/epoch=7-step=2000.ckpt\n")

HF_TRAIN = ("***** Running training *****\n  Num examples = 10000\n  Num Epochs = 3\n" + "".join(
    f"{{'loss': {1.4 - i / 10:.4f}, 'learning_rate': 1e-05, 'epoch': {i / 3 + 1 / 3:.2f}}}\n"
    for i in range(9)) + "{'train_runtime': 120.0, 'train_loss': 1.02, 'epoch': 3.0}\n"
    "***** train metrics *****\n  epoch                    =        3.0\n"
    "  train_loss               =     1.02\n")

CUSTOM_ES = "".join(f"Epoch {e}/100 | train loss 0.{90 - e} | val loss 0.{80 - e}\n"
                    for e in range(1, 18)) + "Early stopping at epoch 17\nTraining complete.\n"

STAGES = ("***** Stage 1/2: SFT *****\n" + "".join(f"Epoch {e}/3 - loss: 0.{90 - e}\n"
                                                  for e in range(1, 4))
          + "***** Stage 2/2: DPO *****\n" + "".join(f"Epoch {e}/2 - loss: 0.{60 - e} - acc: 0.8\n"
                                                    for e in range(1, 3))
          + "Training complete.\n")


def _keras_folds(header: str) -> str:
    fold = "".join(f"Epoch {e}/100\n100/100 [==============================] - 1s 8ms/step - "
                   f"loss: 0.{90 - e} - val_loss: 0.{81 - e // 2}\n" for e in range(1, 31))
    return "".join(header.format(k) + "\n" + fold + "Epoch 30: early stopping\n"
                   for k in range(5))


@pytest.mark.parametrize("log", [
    pytest.param(PL_FIT + RESTORE + f"Predicting DataLoader 0: 100%|{BAR}| 79/79 [00:02<00:00, "
                 "35.1it/s]\nSaved predictions to preds.csv\n", id="predict from the best"),
    pytest.param(PL_FIT + RESTORE + f"Validation DataLoader 0: 100%|{BAR}| 79/79 [00:02<00:00, "
                 "35.1it/s]\n     Validate metric           DataLoader 0\n"
                 "        val_loss              0.43\n", id="validate from the best"),
    pytest.param(PL_FIT + RESTORE + f"Testing DataLoader 0: 100%|{BAR}| 79/79 [00:02<00:00, "
                 "35.1it/s]\n[{'test_loss': 0.44, 'test_acc': 0.9}]\n", id="test from the best"),
    pytest.param(HF_TRAIN + "***** Running Evaluation *****\n  Num examples = 1000\n"
                 f"100%|{BAR}| 125/125 [00:20<00:00,  6.1it/s]\n***** eval metrics *****\n"
                 "  epoch                   =        3.0\n  eval_loss               =     0.91\n"
                 f"Map: 100%|{BAR}| 1000/1000 [00:00<00:00, 5000.00 examples/s]\n"
                 "***** Running Prediction *****\n  Num examples = 1000\n"
                 f"100%|{BAR}| 125/125 [00:20<00:00,  6.1it/s]\n"
                 "Predictions saved to out/predictions.jsonl\n", id="a data bar before predicting"),
    pytest.param(CUSTOM_ES + "Loading weights from epoch 7 for inference\nTest acc: 0.91\n",
                 id="the best epoch's weights loaded"),
    pytest.param(STAGES + "Stage 1 val acc: 0.88\nStage 2 val acc: 0.91\n",
                 id="each stage's result"),
    pytest.param(STAGES + "Results:\n  stage 1: acc=0.88\n  stage 2: acc=0.91\n",
                 id="each stage's result under a heading"),
    pytest.param(_keras_folds("---- Fold {}/5 ----"), id="the last fold counted from 0"),
    pytest.param(_keras_folds("Training fold {}/5"), id="the last fold counted from 0, announced"),
])
def test_what_follows_a_runs_end_keeps_it_finished(log):
    assert read(log).class_id == "completed"


@pytest.mark.parametrize("log", [
    pytest.param(_keras_folds("---- Fold {}/5 ----").rsplit("---- Fold 4/5", 1)[0],
                 id="a fold before the last counted from 0"),
    pytest.param(CUSTOM_ES + "Epoch 3/100 | train loss 0.7\n",
                 id="a lower epoch trained"),
    pytest.param(HF_TRAIN + f"Map: 100%|{BAR}| 1000/1000 [00:00<00:00, 5000.00 examples/s]\n",
                 id="a data bar the log stops after"),
    pytest.param(HF_TRAIN + f"Map: 100%|{BAR}| 1000/1000 [00:00<00:00, 5000.00 examples/s]\n"
                 "***** Running training *****\n", id="a data bar before training"),
    pytest.param(STAGES + "Starting stage 3\n", id="a stage started"),
])
def test_a_next_phase_or_pass_after_the_end_keeps_the_run_open(log):
    assert read(log).class_id == "none"
