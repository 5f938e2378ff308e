"""tensorpack's end of training, read from its source (tensorpack/tensorpack 1547a54e,
tensorpack/train/base.py Trainer.main_loop): after its epoch loop ran to max_epoch it logs
`Training has finished!`; a stop by StopTraining or an exhausted input logs `Training was stopped
by exception ...` instead, Ctrl-C `Detected Ctrl-C and exiting main loop.` and any other exception
`Training failed at global_step=N`. Its logger (tensorpack/utils/logger.py _MyFormatter) writes
`[%(asctime)s @%(filename)s:%(lineno)d]` in green, datefmt `%m%d %H:%M:%S`, then the message; each
epoch starts with `Start Epoch {} ...` (base.py, since 582cd482 2017-01) and draws a tqdm bar of its
steps_per_epoch (callbacks/steps.py ProgressBar; max_epoch is logged nowhere; utils.py
get_tqdm_kwargs: `{l_bar}{bar}|{n_fmt}/{total_fmt}[{elapsed}<{remaining},{rate_noinv_fmt}]`),
logs `Epoch N (global_step M) finished, time:...`, ModelSaver's `Model saved to ...` and
ScalarPrinter's `{name}: {value:.5g}` lines (callbacks/monitor.py)."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log
from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
    read,
)

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting

# its logger's date and place, green: `[0806 12:34:56 @base.py:287]`
_PLACE = "\x1b[32m[0806 {} @{}]\x1b[0m "


def _log(clock: str, where: str, message: str) -> str:
    return _PLACE.format(clock, where) + message + "\n"


def _epoch(e: int) -> str:
    return _log("12:28:03", "base.py:273", f"Start Epoch {e} ...") + _epoch_end(e)


def _epoch_end(e: int) -> str:
    """The epoch's bar to its total, then the lines after it up to the next epoch's start."""
    bar = "".join(f"{p:3d}%|{'#' * (p // 10):<10}|{n}/5000[0{p // 50}:00<00:00,12.1it/s]\r"
                  for p, n in ((10, 500), (60, 3000)))
    return (bar + "100%|##########|5000/5000[06:53<00:00,12.1it/s]\n"
            + _log("12:34:56", "base.py:282",
                   f"Epoch {e} (global_step {e * 5000}) finished, time:6 minutes 53 seconds.")
            + _log("12:34:57", "saver.py:82",
                   f"Model saved to train_log/mnist/model-{e * 5000}.")
            + _log("12:34:57", "monitor.py:476", f"cross_entropy_loss: 0.0{e}12")
            + _log("12:34:57", "monitor.py:476", f"validation_error: 0.00{e}1"))


LOOP = _epoch(9) + _epoch(10)
FINISHED = _log("12:34:57", "base.py:287", "Training has finished!")
ENDS = {
    "last line": FINISHED,
    # the script's own evaluation after launch_train_with_config returned
    "an evaluation after it": FINISHED + "Evaluating on 10000 test images\nTest accuracy: 0.9912\n",
}


@each_end(ENDS)
def test_the_main_loops_end_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "Training has finished!")


# main_loop's stop by an exception it catches, str(e) after it: a callback's StopTraining
# (callbacks/prof.py GPUUtilizationTracker), TF's OutOfRangeError of the input queue that
# input_source.py's EnqueueThread closed when its dataflow raised (it logs that exception first,
# `[EnqueueThread] Exception in thread {name}:` and its traceback, through logger.exception)
STOPPED_BY_CALLBACK = _log("12:34:57", "base.py:289", "Training was stopped by exception "
                           "GPUUtilizationTracker.worker has failed..")
QUEUE_CLOSED = (
    _log("12:31:02", "base.py:289", "Training was stopped by exception FIFOQueue "
         "'_0_QueueInput/input_queue' is closed and has insufficient elements (requested 1, "
         "current size 0)")
    + "\t [[Node: QueueInput/input_deque = QueueDequeueV2[component_types=[DT_FLOAT, DT_INT32], "
      "timeout_ms=-1, _device=\"/job:localhost/replica:0/task:0/device:CPU:0\"]"
      "(QueueInput/input_queue)]].\n")
EPOCH_CUT = (_log("12:28:03", "base.py:273", "Start Epoch 11 ...")
             + " 12%|#2        |600/5000[00:50<06:03,12.1it/s]\n")
ENQUEUE_FAILED = (
    _log("12:31:01", "input_source.py:171", "\x1b[4m\x1b[5m\x1b[31mERR\x1b[0m [EnqueueThread] "
         "Exception in thread EnqueueThread: enqueue dataflow to TF queue "
         '"QueueInput/input_queue":')
    + "Traceback (most recent call last):\n"
    '  File "/opt/tensorpack/tensorpack/input_source/input_source.py", line 160, in run\n'
    "    dp = next(self._itr)\n"
    "OSError: [Errno 28] No space left on device\n")
COMPLETED = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=3600)


@pytest.mark.parametrize("stop", [
    LOOP + STOPPED_BY_CALLBACK, LOOP + EPOCH_CUT + QUEUE_CLOSED,
    LOOP + _log("12:34:57", "base.py:289", "Training was stopped by exception ."),
], ids=["StopTraining", "OutOfRangeError", "no message"])
def test_a_stop_by_exception_is_a_failure(stop):
    """No `Training has finished!`: the loop stopped on the exception before max_epoch (it read
    `completed` by the last epoch's bar at its total)."""
    d = read(stop)
    assert (d.class_id, d.decided_by) == ("unknown_failure", "hint")
    assert any("Training was stopped by exception" in e.text for e in d.evidence)


def test_a_stop_by_exception_with_exit_0_is_no_completed_run():
    """main_loop returns after the stop: the script exits 0, Slurm's COMPLETED 0:0."""
    d = read_log(Catalogue.load(), LOOP + STOPPED_BY_CALLBACK, COMPLETED)
    assert d.class_id == "silent_exit"


def test_the_exception_that_closed_the_input_queue_is_the_cause():
    """The EnqueueThread's exception (a full disk) closed the queue the loop then stopped on."""
    d = read(LOOP + EPOCH_CUT + ENQUEUE_FAILED + QUEUE_CLOSED)
    assert d.class_id == "disk_full"


@pytest.mark.parametrize("scalar", ["val-error-top1: 0.52", "train-error-top5: 0.2131",
                                    "error: 0.31", "val-error-top1: nan"])
def test_a_log_cut_after_an_epochs_monitored_scalars_is_still_running(scalar):
    """ScalarPrinter's `{name}: {value:.5g}` after an epoch names a metric, no error: the next
    epoch is still to start (it read `unknown_failure`)."""
    assert_still_running(LOOP + _log("12:34:57", "monitor.py:476", scalar))


def test_an_epoch_at_its_total_with_no_end_after_it_is_still_running():
    """The bar counts one epoch's steps: at its total, the next `Start Epoch` or the end marker
    is still to come."""
    assert_still_running(LOOP)


def test_a_next_main_loops_epochs_after_it_are_still_running():
    """A script that trains again after the end: the next loop's epochs, each bar at its
    total, the last one's lines printed and the next epoch not started yet."""
    assert_still_running(LOOP + FINISHED + _epoch(1) + _epoch(2))


def test_a_next_main_loops_first_epoch_start_is_still_running():
    assert_still_running(LOOP + FINISHED + _log("12:35:02", "base.py:273", "Start Epoch 1 ..."))


def test_a_next_training_after_it_is_still_running():
    """A script that trains again (another config) after it: that training's progress follows."""
    assert_still_running(LOOP + FINISHED + "".join(
        f"{p:3d}%|{'#' * (p // 10):<10}|{p * 50}/5000[0{p // 50}:00<05:00,12.1it/s]\n"
        for p in (10, 20, 30)))


@each_end(ENDS)
def test_an_error_after_it_decides(end):
    assert_the_error_decides(LOOP + end)


def test_the_scripts_own_evaluation_steps_after_the_end_leave_no_epoch_open():
    """A script's own evaluation loop after the main loop ended (`eval step 200/200`): the end
    marker, not the last `Start Epoch`, is tensorpack's last word on its epochs, so no epoch is
    left and the finished run is not read as still running."""
    d = read(LOOP + FINISHED + "eval step 100/200 acc=0.89\neval step 200/200 acc=0.90\n")
    assert d.class_id == "completed"
