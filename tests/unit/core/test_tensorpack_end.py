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
ScalarPrinter's `name: value` lines (callbacks/monitor.py)."""

from __future__ import annotations

from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
    read,
)

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


def test_a_stop_by_exception_is_no_marker():
    """StopTraining or an exhausted input: no `Training has finished!`, so no signature decides
    (the last epoch's bar at its total still reads as the end, by progress)."""
    d = read(LOOP + _log("12:34:57", "base.py:289", "Training was stopped by exception ."))
    assert (d.class_id, d.decided_by) == ("completed", "progress")


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
