"""A run whose training progress reached its own target and whose log then ends with no more
training and no error reads `completed` from the log alone, by hint (no line says the program
ended): bot.core.diagnose.quiet_ending.ends_after_target. Its detail (`target_reached`) and its
confidence line say it was inferred from the target reached. Short of the target, a next run
after it, an error after it, or Slurm's RUNNING is no such end.

Chosen after held-out sets 20-21's report of a kind of miss (a finished run read `none`:
bench/README.md); the fixtures are built from the frameworks' format strings, not from those
logs:
- Keras fit() (keras/src/callbacks/progbar_logger.py, ProgbarLogger.on_epoch_begin: `Epoch
  {epoch + 1}/{self.epochs}`; keras/src/utils/progbar.py, Progbar.update at verbose 2:
  `{current}/{target} - {time} - loss: {value:.4f} - ...`), then model.evaluate()'s own bar and
  the script's `print("Test accuracy:", acc)`;
- PyTorch's transfer-learning tutorial's loop (`print(f'Epoch {epoch}/{num_epochs - 1}')`,
  `print('-' * 10)`, `print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')` for `train`
  then `val`, and after the loop `print(f'Best val Acc: {best_acc:4f}')`);
- a loop's `print(f'Epoch [{epoch + 1}/{num_epochs}], Loss: {loss.item():.4f}')` (the PyTorch
  tutorials' form), then a test report with its figures or a save line. (A report with no loss
  or accuracy figure after it was already read: the last epoch's report is then the last
  figure, bot.core.diagnose.quiet_ending.ends_at_last_epoch, by progress.)
"""

from __future__ import annotations

import pytest
from support.end_marker import LATE_ERROR, read

from bot.core.models import Accounting
from bot.slack.render import explain, explain_decided


def _keras(epochs: int, last: int) -> str:
    return "".join(f"Epoch {e}/{epochs}\n1875/1875 - 3s - loss: 0.{30 - e:02d} - accuracy: 0.9"
                   f"{e} - 3s/epoch - 2ms/step\n" for e in range(1, last + 1))


KERAS_EVALUATE = ("313/313 - 0s - loss: 0.0712 - accuracy: 0.9781 - 452ms/epoch - 1ms/step\n"
                  "\nTest accuracy: 0.9781\n")


def _tutorial(epochs: int, last: int, *, val: bool = True) -> str:
    out = ""
    for e in range(last + 1):
        out += f"Epoch {e}/{epochs - 1}\n----------\ntrain Loss: 0.{50 - e:02d} Acc: 0.8{e % 10}\n"
        if val or e < last:
            out += f"val Loss: 0.{40 - e:02d} Acc: 0.8{e % 10}\n"
        out += "\n"
    return out


def _loop(epochs: int, last: int) -> str:
    return "".join(f"Epoch [{e}/{epochs}], Loss: 0.{90 - e:02d}\n" for e in range(1, last + 1))


TEST_REPORT = "Test loss: 0.2512, accuracy: 0.9104\n"
SAVE = "Saved the final model to model.ckpt (loss 0.31)\n"

FINISHED = {
    "keras then evaluate": _keras(10, 10) + KERAS_EVALUATE,
    "tutorial then best": _tutorial(25, 24) + "Best val Acc: 0.934641\n",
    "loop then test": _loop(5, 5) + TEST_REPORT,
    "loop then save": _loop(5, 5) + SAVE,
    "loop then test then prompt": _loop(5, 5) + TEST_REPORT + "user@host:~/proj$ \n",
}


@pytest.mark.parametrize("log", FINISHED.values(), ids=FINISHED.keys())
def test_reports_after_the_target_end_a_finished_run_by_hint(log):
    d = read(log)
    assert (d.class_id, d.decided_by) == ("completed", "hint")
    assert d.detail is not None and d.detail["kind"] == "target_reached"
    assert d.detail["unit"] == "epoch" and d.detail["done"] == d.detail["total"]


SHORT = {
    "keras short of its epochs": _keras(10, 9) + KERAS_EVALUATE,
    "tutorial mid last epoch": _tutorial(25, 24, val=False),
    "loop short of its epochs": _loop(5, 4) + TEST_REPORT,
}


@pytest.mark.parametrize("log", SHORT.values(), ids=SHORT.keys())
def test_progress_short_of_the_target_is_still_running(log):
    assert (read(log).class_id, read(log).decided_by) == ("none", "progress")


@pytest.mark.parametrize("log", [
    pytest.param(_loop(5, 5) + TEST_REPORT + _loop(5, 1), id="a next run's first epoch"),
    pytest.param(_keras(10, 10) + KERAS_EVALUATE + "Epoch 1/10\n", id="a next fit's header"),
    pytest.param(_loop(5, 5) + TEST_REPORT + "Step [50/100], train loss: 0.4\n",
                 id="a step short of its total"),
])
def test_training_after_the_target_goes_on(log):
    assert read(log).class_id == "none"


def test_an_error_after_the_target_decides():
    assert read(_loop(5, 5) + TEST_REPORT + LATE_ERROR).class_id == "disk_full"


@pytest.mark.parametrize("log", FINISHED.values(), ids=FINISHED.keys())
def test_slurm_running_is_never_completed(log):
    assert read_running(log).class_id == "none"


def read_running(log: str):
    from support.diagnosis import read_log
    from support.end_marker import _catalogue
    return read_log(_catalogue(), log, Accounting(state="RUNNING"))


def test_the_confidence_line_says_it_was_inferred_from_the_target():
    d = read(FINISHED["loop then test"])
    assert explain(d).startswith(
        "Training reached its last epoch (5 of 5, line 5) and the log ends after it with no "
        "more training and no error")
    assert explain_decided(d) == (
        "Inferred from the training reaching its own target, not from a line saying the run "
        "ended: look closer if the job may still be running.")
    assert "목표에 도달한 것에서 추론했습니다" in explain_decided(d, "ko")
    assert "마지막 epoch에 도달했고(5 중 5, 5번째 줄)" in explain(d, "ko")
