"""fastai's early stop, read from its source (fastai/fastai fastai/callback/tracker.py 00e45696):
EarlyStoppingCallback.after_epoch, which runs after the Recorder has printed the epoch's row,
prints `No improvement since epoch 3: early stopping` and raises CancelFitException, which
Learner.fit catches to run after_cancel_fit and after_fit and return: training ended normally.
Learner.fine_tune's frozen fit stopped so goes on to its second fit, whose table then follows."""

from __future__ import annotations

import pytest
from support.end_marker import assert_ends_the_run, assert_still_running, read

TABLE = ("epoch     train_loss  valid_loss  accuracy  time    \n"
         + "".join(f"{e:<10}{0.9 - e / 50:.6f}    {0.5 + e % 3 / 100:.6f}    "
                   f"{0.8 + e / 100:.6f}  01:{10 + e:02d}     \n" for e in range(7)))
STOP = "No improvement since epoch 3: early stopping\n"


@pytest.mark.parametrize("after", ["", "\n", "Model saved to models/model.pth\n"],
                         ids=["last line", "blank line after", "the script's save after"])
def test_the_early_stop_after_the_last_row_ends_a_finished_run(after):
    assert_ends_the_run(TABLE + STOP + after, "early stopping")


HEADER = TABLE.splitlines(keepends=True)[0]


@pytest.mark.parametrize("after", [
    TABLE, HEADER, "[rank0]: " + HEADER,
    "epoch     train_loss\n",  # no validation set, no time column: no blank after the name
], ids=["its table", "its header alone", "its header, prefixed", "its header of one name"])
def test_a_stopped_fit_then_another_fits_table_is_no_end(after):
    """fine_tune's frozen fit, or one fold of a loop of fits, stopped early; the next fit's
    table follows (ProgressCallback.before_fit prints its header as the fit starts: fastai/
    fastai fastai/callback/progress.py), cut anywhere from its header on."""
    assert_still_running(TABLE + STOP + after)


def test_the_next_fit_stopped_early_too_ends_a_finished_run():
    d = read(TABLE + STOP + TABLE + "No improvement since epoch 5: early stopping\n")
    assert (d.class_id, d.decided_by) == ("completed", "signature")
    assert d.evidence[-1].text.strip() == "No improvement since epoch 5: early stopping"


def test_a_validation_after_the_stop_is_no_next_fit():
    """learn.validate() and get_preds() print no table (their no_logging leaves
    ProgressCallback no logger): only the script's own line follows."""
    d = read(TABLE + STOP + "valid loss 0.5012, accuracy 0.8612\n")
    assert (d.class_id, d.decided_by) == ("completed", "signature")


def test_a_traceback_after_the_early_stop_decides():
    d = read(TABLE + STOP + "Traceback (most recent call last):\n"
             '  File "train.py", line 40, in <module>\n'
             "    learn.export('model.pkl')\n"
             "OSError: [Errno 28] No space left on device\n")
    assert d.class_id == "disk_full"
