"""A log with no accounting whose last progress line is the last epoch's report ends a finished
run: the common hand-written loops print one line per epoch with its counter and total and the
loss (`print(f"Epoch [{epoch+1}/{num_epochs}], Loss: {loss:.4f}")`, the PyTorch tutorials'
form; `Epoch 10/10 - loss: ... - acc: ...`), and the loop's last iteration is the run's last
epoch. A step of that epoch short of its total, a bare header, an earlier epoch, a bar still open
or an error after it is not that end."""

from __future__ import annotations

import pytest

from bot.core.catalogue import Catalogue
from tests.support.diagnosis import read_log

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
