"""A log with no accounting whose last progress line is the last epoch's report ends a finished
run: the common hand-written loops print one line per epoch with its counter and total and the
loss (`print(f"Epoch [{epoch+1}/{num_epochs}], Loss: {loss:.4f}")`, the PyTorch tutorials'
form; `Epoch 10/10 - loss: ... - acc: ...`), and the loop's last iteration is the run's last
epoch. A step of that epoch short of its total, a bare header, an earlier epoch, a bar still open
or an error after it is not that end."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue

TUTORIAL = "".join(f"Epoch [{e}/10], Loss: {0.9 / e:.4f}\n" for e in range(1, 11))
DASHES = "".join(f"Epoch {e}/10 - loss: {0.9 / e:.4f} - acc: {0.5 + e / 25:.4f}\n"
                 for e in range(1, 11))


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.mark.parametrize("log", [
    TUTORIAL,
    DASHES,
    # the test after training, and the save, after the last epoch's report
    TUTORIAL + "Test Accuracy of the model on the 10000 test images: 97.8 %\n",
    DASHES + "Saved model to /scratch/out/model.pt\n",
    # the last epoch's last step: every count on the line at its total
    "".join(f"Epoch [{e}/5], Step [600/600], Loss: {0.5 / e:.4f}\n" for e in range(1, 6)),
], ids=["tutorial", "dashes", "test after", "save after", "last step"])
def test_the_last_epochs_report_ends_a_finished_run(catalogue, log):
    assert read_log(catalogue, log).class_id == "completed"


@pytest.mark.parametrize("log", [
    # an earlier epoch
    "".join(f"Epoch [{e}/10], Loss: 0.5\n" for e in range(1, 8)),
    # a step of the last epoch short of its total
    "".join(f"Epoch [{e}/5], Step [600/600], Loss: 0.3\n" for e in range(1, 5))
    + "Epoch [5/5], Step [300/600], Loss: 0.2\n",
    # Keras's header of the last epoch, its bar not yet drawn
    DASHES[:DASHES.index("Epoch 10/10")] + "Epoch 10/10\n",
    # a bar still open after it
    TUTORIAL + "Evaluating:  34%|###4      | 34/100 [00:03<00:06, 10.1it/s]\n",
    # another loss after it (the next stage's training)
    TUTORIAL + "fine-tune step 10 loss: 0.51\n",
], ids=["earlier epoch", "step short", "bare header", "open bar", "loss after"])
def test_no_last_epochs_report_no_end(catalogue, log):
    assert read_log(catalogue, log).class_id == "none"


def test_an_error_after_it_is_the_failure(catalogue):
    d = read_log(catalogue, TUTORIAL + "Traceback (most recent call last):\n"
                 '  File "train.py", line 88, in <module>\n'
                 "    torch.save(model.state_dict(), path)\n"
                 "OSError: [Errno 28] No space left on device\n")
    assert d.class_id not in ("completed", "none")


def _per_step(epochs: int, steps: int, last_steps: int) -> str:
    """A loop that prints its epoch counter and the loss at every step, with no step count:
    `steps` lines in each epoch but the last, `last_steps` in the last (10 epochs)."""
    return "".join(f"Epoch {e}/10 loss: {0.9 / (e * steps + s):.4f}\n"
                   for e in range(1, epochs + 1)
                   for s in range(last_steps if e == epochs else steps))


@pytest.mark.parametrize("log", [
    # steps of the last epoch still going: fewer lines in it than in the epoch before
    _per_step(10, 3, 2),
    # its first step: one line, where each earlier epoch printed three
    _per_step(10, 3, 1),
    # a long log (more lines than the tail the decision reads): the first epoch in the tail
    # may have begun before it, the next ones printed 8 lines, the last 5 so far
    _per_step(10, 8, 5),
    # only the last epoch's steps are in the tail, more than one: no epoch to compare
    "".join(f"Epoch 10/10 loss: {0.5 - s / 100:.4f}\n" for s in range(45)),
], ids=["steps going", "first step", "long log", "only last epoch"])
def test_a_per_step_counter_mid_last_epoch_is_no_end(catalogue, log):
    assert read_log(catalogue, log).class_id == "none"


@pytest.mark.parametrize("log", [
    # a per-step loop whose last epoch printed as many lines as the epochs before it
    _per_step(10, 3, 3),
    _per_step(10, 8, 8),
    # two ranks printing each epoch's report
    "".join(f"[rank{r}] Epoch [{e}/10], Loss: {0.9 / e + r / 100:.4f}\n"
            for e in range(1, 11) for r in (0, 1)),
    # a training and a validation report each epoch
    "".join(f"Epoch {e}/10 train loss: {0.9 / e:.4f}\nEpoch {e}/10 val loss: {1.0 / e:.4f} "
            f"acc: {0.5 + e / 25:.4f}\n" for e in range(1, 11)),
    # one report an epoch over more epochs than the tail holds
    "".join(f"Epoch [{e}/60], Loss: {0.9 / e:.4f}\n" for e in range(1, 61)),
], ids=["per-step 3", "per-step 8 long", "two ranks", "train and val", "60 epochs"])
def test_the_last_epochs_reports_all_printed_end_a_finished_run(catalogue, log):
    assert read_log(catalogue, log).class_id == "completed"


def test_the_training_line_without_its_validation_line_is_no_end(catalogue):
    """Each epoch printed a training and a validation report; the last only its training one."""
    log = "".join(f"Epoch {e}/10 train loss: {0.9 / e:.4f}\nEpoch {e}/10 val loss: "
                  f"{1.0 / e:.4f}\n" for e in range(1, 10)) + "Epoch 10/10 train loss: 0.0900\n"
    assert read_log(catalogue, log).class_id == "none"
