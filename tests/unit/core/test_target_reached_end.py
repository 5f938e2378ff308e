"""A run whose training reached its own target (its last epoch's report) and whose log then ends
with only reports, saves or nothing reads `completed` from the log alone, by hint (no line says
the program ended): bot.core.diagnose.last_epoch.ends_after_target. Its detail
(`target_reached`) and its confidence line say it was inferred from the target reached.

What undoes it (bot.core.diagnose.after_target), each case a log a review of the first version
of this rule built: a loop around the training whose last pass the log cannot show ended (k-fold,
Keras Tuner's and Optuna's trials, a sweep's runs, federated rounds); any line still training
after the target, whatever its words (a next stage's `loss:` lines, `Epoch 1: loss 0.5`); more
training or a next pass announced; a signal's or glibc's abort notice; an evaluation announced
with no result after it; an exit code given without a state (accounting, not a log alone); and
Slurm's RUNNING.

Chosen after held-out sets 20-22's report of a kind of miss (a finished run read `none`:
bench/README.md); the fixtures are built from the frameworks' format strings, not from those
logs:
- Keras fit() (keras/src/callbacks/progbar_logger.py, ProgbarLogger.on_epoch_begin: `Epoch
  {epoch + 1}/{self.epochs}`; keras/src/utils/progbar.py, Progbar.update: `{current}/{target}
  [====] - {time} - loss: {value:.4f} - ...`), model.evaluate()'s own bar, ModelCheckpoint's
  `Epoch 00003: saving model to ...` (keras 2.x callbacks.py, verbose 1);
- PyTorch's transfer-learning tutorial's loop (`print(f'Epoch {epoch}/{num_epochs - 1}')`,
  `print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')`, after the loop `Best val
  Acc: {best_acc:4f}`) and its CIFAR-10 tutorial's `[{epoch + 1}, {i + 1:5d}] loss: ...`;
- Keras Tuner's `Search: Running Trial #1` and `Trial 1 Complete [...]` (keras_tuner
  engine/oracle.py, tuner_utils.py), Optuna's `Trial 0 finished with value: ...` (optuna
  study/_optimize.py), W&B's agent `wandb: Agent Starting Run: ...` (wandb/wandb_agent.py) and
  run end `wandb: Waiting for W&B process to finish... (success).`;
- abseil's failure signal handler `*** SIGTERM received at time=... on cpu 3 ***`, torchrun's
  `Received Signals.SIGTERM death signal, shutting down workers`, glibc's `double free or
  corruption (out)`, `malloc(): corrupted top size`, `free(): invalid pointer`.
"""

from __future__ import annotations

import pytest
from support.diagnosis import read_log
from support.end_marker import LATE_ERROR, _catalogue, read

from bot.core.diagnose.after_target import goes_on_after
from bot.core.models import Accounting, Diagnosis
from bot.core.outer_loop import outer_loop_open
from bot.slack.render import explain, explain_decided


def _keras(epochs: int, last: int) -> str:
    return "".join(f"Epoch {e}/{epochs}\n469/469 [==============================] - 3s 6ms/step"
                   f" - loss: 0.{30 - e:02d} - accuracy: 0.9{e} - val_loss: 0.1{e} - "
                   f"val_accuracy: 0.9{e}\n" for e in range(1, last + 1))


KERAS_EVALUATE = ("313/313 [==============================] - 0s 1ms/step - loss: 0.0712 - "
                  "accuracy: 0.9781\n\nTest accuracy: 0.9781\n")


def _tutorial(epochs: int, last: int) -> str:
    return "".join(f"Epoch {e}/{epochs - 1}\n----------\ntrain Loss: 0.{50 - e:02d} Acc: "
                   f"0.8{e % 10}\nval Loss: 0.{40 - e:02d} Acc: 0.8{e % 10}\n\n"
                   for e in range(last + 1))


def _loop(epochs: int, last: int) -> str:
    return "".join(f"Epoch [{e}/{epochs}], Loss: 0.{90 - e:02d}\n" for e in range(1, last + 1))


def _reports(epochs: int) -> str:
    return "".join(f"Epoch {e}/{epochs} - train loss: 0.{70 - e:02d} - val loss: 0.{68 - e:02d} - "
                   f"val acc: 0.{55 + e:02d}\n" for e in range(1, epochs + 1))


def _key_values(epochs: int) -> str:
    return "".join(f"Epoch {e}/{epochs} train_loss=0.{60 - 10 * e} val_loss=0.{65 - 10 * e} "
                   f"val_acc=0.{76 + 4 * e}\n" for e in range(1, epochs + 1))


TEST_REPORT = "Test loss: 0.2512, accuracy: 0.9104\n"
SAVE = "Saved the final model to model.ckpt (loss 0.31)\n"
# a pretraining stage's epochs, then its save: a second stage may follow
PRETRAINED = ("Epoch 1/2 - loss: 1.900 - acc: 0.31\nEpoch 2/2 - loss: 1.700 - acc: 0.38\n"
              "Saved pretrained weights to pretrain.pt\n")
WANDB_END = ("wandb: Waiting for W&B process to finish... (success).\nwandb: Run summary:\n"
             "wandb:      acc 0.84\nwandb:     loss 0.42\n"
             "wandb: Synced ruby-sweep-1: https://wandb.ai/u/p/runs/a1b2c3\n")

FINISHED = {
    "keras then evaluate": _keras(10, 10) + KERAS_EVALUATE,
    "keras checkpoint's save": _keras(3, 3) + "\nEpoch 00003: saving model to ckpt/weights.03.h5\n",
    "tutorial then best": _tutorial(25, 24) + "Best val Acc: 0.934641\n",
    "loop then test": _loop(5, 5) + TEST_REPORT,
    "loop then save": _loop(5, 5) + SAVE,
    "loop then test then prompt": _loop(5, 5) + TEST_REPORT + "user@host:~/proj$ \n",
    "W&B's run end": _reports(3) + "Test accuracy: 0.6500\n" + WANDB_END,
    "k-fold's last fold": ("Fold 5/5\n" + _keras(3, 3)
                           + "25/25 [==============================] - 1s 20ms/step - loss: 0.6000"
                             " - accuracy: 0.6700\nFold 5 val accuracy: 0.6700\n"),
}


def _is_target_reached(d: Diagnosis) -> bool:
    return d.detail is not None and d.detail["kind"] == "target_reached"


@pytest.mark.parametrize("log", FINISHED.values(), ids=FINISHED.keys())
def test_reports_after_the_target_end_a_finished_run_by_hint(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "hint")
    assert _is_target_reached(d) and d.detail is not None
    assert d.detail["done"] == d.detail["total"]


SHORT = {
    "keras short of its epochs": _keras(10, 9) + KERAS_EVALUATE,
    "loop short of its epochs": _loop(5, 4) + TEST_REPORT,
}


@pytest.mark.parametrize("log", SHORT.values(), ids=SHORT.keys())
def test_progress_short_of_the_target_is_still_running(log):
    assert (read(log).class_id, read(log).decided_by) == ("none", "progress")


OUTER_LOOP_GOES_ON = {
    "k-fold's first fold": ("Fold 1/5\n" + _keras(3, 3)
                            + "25/25 [==============================] - 1s 20ms/step - loss: 0.6000"
                              " - accuracy: 0.6700\nFold 1 val accuracy: 0.6700\n"),
    "k-fold's next fold announced": (_keras(3, 3) + "Score for fold 1: loss of 0.6000; accuracy "
                                     "of 67.00%\n" + "-" * 72 + "\nTraining for fold 2 ...\n"),
    "Keras Tuner's next trial": (
        "Search: Running Trial #1\n\nValue             |Best Value So Far |Hyperparameter\n"
        "0.01              |?                 |learning_rate\n\n" + _keras(3, 3)
        + "\nTrial 1 Complete [00h 00m 13s]\nval_accuracy: 0.8700\n\nBest val_accuracy So Far: "
          "0.8700\nTotal elapsed time: 00h 00m 13s\n\nSearch: Running Trial #2\n"),
    "Optuna's first trial": (
        "[I 2024-05-01 10:00:00,000] A new study created in memory with name: no-name-1\n"
        + _key_values(3) + "[I 2024-05-01 10:05:00,000] Trial 0 finished with value: 0.86 and "
        "parameters: {'lr': 0.001}. Best is trial 0 with value: 0.86.\n"),
    "a sweep's first of 20 trials": ("Trial 1/20: lr=0.001 batch_size=64\n" + _reports(3)
                                     + "Trial 1 finished: val acc 0.75\n"),
    "W&B agent's next run": ("wandb: Agent Starting Run: a1b2c3 with config:\nwandb: \tlr: 0.001\n"
                             + _reports(2) + WANDB_END
                             + "wandb: Agent Starting Run: d4e5f6 with config:\n"),
    "a federated round of 50": ("Round 1/50\n" + _reports(2) + "Aggregating 2 client updates\n"
                                "Global model test accuracy: 0.6700\n"),
    "a next fold after a report": PRETRAINED.replace("Saved pretrained weights to pretrain.pt\n",
                                                     "Fold 1 accuracy: 0.38\nFold 2/5\n"),
}


@pytest.mark.parametrize("log", OUTER_LOOP_GOES_ON.values(), ids=OUTER_LOOP_GOES_ON.keys())
def test_a_loop_around_the_training_short_of_its_last_pass_is_still_running(log):
    assert read(log).class_id == "none"


TRAINING_AFTER = {
    "a loop's next stage, its epochs without a total": PRETRAINED + "Epoch 1: loss 0.5\n",
    "a next stage's epoch finished": PRETRAINED + "Epoch 1 finished. Average loss: 0.52\n",
    "fine-tuning then its epoch": PRETRAINED + "Finetuning...\nEpoch 1 loss 0.52 acc 0.81\n",
    "the CIFAR tutorial's loss lines": PRETRAINED + "[1,  2000] loss: 2.173\n[1,  4000] loss: "
                                                    "1.832\n",
    "plain loss lines": PRETRAINED + "loss: 0.532\nloss: 0.512\n",
    "batch lines": PRETRAINED + "batch 100 loss 0.532\nbatch 200 loss 0.512\n",
    "a GAN's losses": PRETRAINED + "G loss: 1.2 D loss: 0.5\n",
    "fairseq's epoch summary": PRETRAINED + "| epoch 001 | loss 5.231 | ppl 37.5 | wps 12000\n",
    "a step short of its total": _loop(5, 5) + TEST_REPORT + "Step [50/100], train loss: 0.4\n",
    "a next fit's header": _keras(10, 10) + KERAS_EVALUATE + "Epoch 1/10\n",
}


@pytest.mark.parametrize("log", TRAINING_AFTER.values(), ids=TRAINING_AFTER.keys())
def test_training_after_the_target_goes_on(log):
    assert read(log).class_id == "none"


@pytest.mark.parametrize("line", [
    "Stage: finetuning on labelled data", "Fine-tuning classifier", "==> Stage 2/2: fine-tuning",
    "Phase 2: training the full network", "Now training the classifier head",
    "Starting training of the student model (distillation)",
    "Loading best checkpoint for fine-tuning",
])
def test_more_training_announced_after_the_target_goes_on(line):
    assert goes_on_after(["Test accuracy: 0.65", line], epoch=3)


@pytest.mark.parametrize("line", [
    "Pretraining finished. Saved encoder to out/encoder.pt", "Training complete in 3m 2s",
    "Saving checkpoint to /scratch/run1/model_final.pt ...", "Final train loss: 0.31",
    "Epoch 00003: saving model to ckpt/weights.03.h5",
])
def test_a_report_or_a_save_after_the_target_is_no_training(line):
    assert not goes_on_after([line], epoch=3)


@pytest.mark.parametrize("lines", [
    ["Fold 5/5", "Best val acc for fold 5: 0.66"], ["==> Stage 2/2: fine-tuning"], [],
])
def test_an_outer_loop_at_its_last_pass_is_over(lines):
    assert not outer_loop_open(lines)


ALARM_AFTER = {
    "abseil's SIGTERM notice": "*** SIGTERM received at time=1700000000 on cpu 3 ***\n",
    "torchrun's SIGTERM": ("[2024-01-01 00:00:00,000] torch.distributed.elastic.agent.server.api: "
                           "[WARNING] Received Signals.SIGTERM death signal, shutting down "
                           "workers\n"),
    "an exception's exit": "Exiting due to an exception\n",
    "glibc's double free": "double free or corruption (out)\n",
    "glibc's malloc": "malloc(): corrupted top size\n",
    "glibc's free": "free(): invalid pointer\n",
}


@pytest.mark.parametrize("notice", ALARM_AFTER.values(), ids=ALARM_AFTER.keys())
def test_a_signal_or_an_abort_during_the_final_evaluation_is_no_finish(notice):
    d = read(_reports(3) + "Test accuracy: 0.6500\n" + notice)
    assert d.class_id != "completed"


@pytest.mark.parametrize("end", [
    "Running final evaluation on the test set...\n",
    "Testing DataLoader 0: 100%|██████████| 79/79 [00:03<00:00, 25.1it/s]\n",
])
def test_an_evaluation_announced_with_no_result_is_still_running(end):
    assert read(_key_values(3) + end).class_id == "none"


def test_an_error_after_the_target_decides():
    assert read(_loop(5, 5) + TEST_REPORT + LATE_ERROR).class_id == "disk_full"


@pytest.mark.parametrize("acct", [
    pytest.param(Accounting(state="RUNNING"), id="Slurm's RUNNING"),
    pytest.param(Accounting(exit_code=1), id="an exit code without a state"),
])
@pytest.mark.parametrize("log", FINISHED.values(), ids=FINISHED.keys())
def test_accounting_leaves_the_log_alone_reading_out(log, acct):
    d = read_log(_catalogue(), log, acct)
    assert not _is_target_reached(d) and d.class_id != "completed"


def test_the_confidence_line_says_it_was_inferred_from_the_target():
    d = read(FINISHED["loop then test"])
    assert explain(d).startswith(
        "Training reached its last epoch (5 of 5, line 5) and the log ends after it with no "
        "more training and no error")
    assert explain_decided(d) == (
        "Inferred from the training reaching its own target, not from a line saying the run "
        "ended: look closer if the job may still be running.")
    assert "목표에 도달한 것에서 추론했습니다" in explain_decided(d, "ko")
    assert "마지막 `epoch`에 도달했고(5 중 5, 5번째 줄)" in explain(d, "ko")


# After a run's last epoch, a line that is none of what a program prints once its loop is over
# (a figure, a save, a summary, a time, a finish) is unknown, and unknown is no end: a repeat
# over seeds, a next phase, an export with no result after it
_TWO_EPOCHS = ("Epoch 1/2 - loss: 0.9 - acc: 0.5\nEpoch 2/2 - loss: 0.7 - acc: 0.6\n"
               "Test accuracy: 0.61\n")
UNKNOWN_AFTER = {
    "a next seed": "seed=0\n" + _TWO_EPOCHS + "seed=1\n",
    "a first seed announced": "Running with seed 0\n" + _TWO_EPOCHS,
    "a next phase": _TWO_EPOCHS + "Unfreezing backbone\n",
    "an export with no result": _TWO_EPOCHS + "Exporting TorchScript model\n",
}


@pytest.mark.parametrize("log", UNKNOWN_AFTER.values(), ids=UNKNOWN_AFTER.keys())
def test_a_line_after_the_target_that_is_no_report_leaves_the_run_running(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("none", "progress")


@pytest.mark.parametrize("line", ["Unfreezing backbone", "Exporting TorchScript model",
                                  "Converting to ONNX", "Uploading to the hub"])
def test_an_unknown_line_after_the_target_goes_on(line):
    assert goes_on_after(["Test accuracy: 0.61", line], epoch=2)


@pytest.mark.parametrize("lines", [["seed=0"], ["Running with seed 0"], ["Level 2"],
                                   ["Task 3/5"], ["Repeat 2"]])
def test_a_repeat_over_seeds_levels_or_tasks_is_an_open_outer_loop(lines):
    assert outer_loop_open(lines)


def test_the_last_epoch_of_a_first_fold_of_five_is_still_running():
    """ends_at_last_epoch (decided by progress) reads the loop around the training too."""
    log = ("===== Fold 1/5 =====\n"
           "Epoch 1/3 - train loss: 0.6931 - val loss: 0.6800 - val acc: 0.5500\n"
           "Epoch 2/3 - train loss: 0.6400 - val loss: 0.6300 - val acc: 0.6100\n"
           "Epoch 3/3 - train loss: 0.6000 - val loss: 0.6000 - val acc: 0.6600\n"
           "Best val acc for fold 1: 0.6600\nSaved model to checkpoints/fold1.pt\n")
    assert read(log).class_id == "none"
