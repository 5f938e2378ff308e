"""NVIDIA's Caffe's end of training, read from its source (NVIDIA/caffe 87a25543,
tools/caffe.cpp train()): once Solve() returned it logs `Optimization Done in ` +
Caffe::time_from_init() (`42.51s`, `3m 4.5s`, `1h 2m 3s`); its solver.cpp logs no end of its
own. BVLC's Caffe (BVLC/caffe 9b891540) logs `Optimization Done.` from solver.cpp and caffe.cpp
alike (tests/unit/core/test_diagnose.py). Lines in glog's format (`I0728 00:22:59.593730 24418
solver.cpp:218] `)."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log
from support.end_marker import (
    assert_ends_the_run,
    assert_the_error_decides,
    each_end,
    read,
)

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting


def _glog(clock: str, where: str, message: str) -> str:
    return f"I0728 {clock}.593730 24418 {where}] {message}\n"


def _iteration(i: int) -> str:
    """Solver::Step's display (solver.cpp: `Iteration N (x iter/s, ys/100 iters), loss = ...`,
    then the net's outputs) and the learning rate sgd_solver.cpp logs with it."""
    return (_glog("00:20:11", "solver.cpp:312", f"Iteration {i} (6.1 iter/s, 16.4s/100 iters), "
                  f"loss = 0.{i % 97:04d}")
            + _glog("00:20:11", "solver.cpp:331", f"    Train net output #0: loss = 0.{i % 97:04d}"
                    f" (* 1 = 0.{i % 97:04d} loss)")
            + _glog("00:20:11", "sgd_solver.cpp:138", f"Iteration {i}, lr = 0.0001"))


LOOP = "".join(_iteration(i) for i in range(9500, 10000, 100))
# Solve() after Step(): the snapshot after training, the last display and test
SOLVED = (_glog("00:22:58", "solver.cpp:683", "Snapshotting to binary proto file "
                "snapshots/lenet_iter_10000.caffemodel")
          + _glog("00:22:59", "solver.cpp:459", "Iteration 10000, loss = 0.0012")
          + _glog("00:22:59", "solver.cpp:482", "Iteration 10000, Testing net (#0)")
          + _glog("00:22:59", "solver.cpp:541", "    Test net output #0: accuracy = 0.9912"))
# the job script's next step, `caffe test` of the trained weights (tools/caffe.cpp test(): the
# device, `Running for N iterations.`, each batch's outputs, the loss, the mean outputs)
TEST = (_glog("00:23:02", "caffe.cpp:290", "Use GPU with device ID 0")
        + _glog("00:23:02", "caffe.cpp:303", "Running for 100 iterations.")
        + "".join(_glog("00:23:03", "caffe.cpp:326", f"Batch {b}, accuracy = 0.99")
                  for b in range(3))
        + _glog("00:23:04", "caffe.cpp:331", "Loss: 0.0301")
        + _glog("00:23:04", "caffe.cpp:343", "accuracy = 0.9912"))
ENDS = {
    "seconds": SOLVED + _glog("00:22:59", "caffe.cpp:262", "Optimization Done in 42.51s"),
    "minutes": SOLVED + _glog("00:22:59", "caffe.cpp:262", "Optimization Done in 3m 4.5s"),
    "hours": SOLVED + _glog("00:22:59", "caffe.cpp:262", "Optimization Done in 1h 2m 3s"),
}


@each_end(ENDS)
@pytest.mark.parametrize("after", ["", TEST], ids=["last line", "caffe test after it"])
def test_the_train_commands_end_ends_a_finished_run(end, after):
    assert_ends_the_run(LOOP + end + after, "Optimization Done in")


def test_a_short_resumed_run_that_ends_in_it_completed():
    """Slurm's COMPLETED 0:0 after 40 s (a resume with little left): the framework's end says
    the work was done, where its progress alone, with no target, doubted it (silent_exit)."""
    short = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=40)
    d = read_log(Catalogue.load(), LOOP + ENDS["seconds"], short)
    assert (d.class_id, d.decided_by) == ("completed", "signature")


def test_its_test_commands_lines_are_no_end():
    """`caffe test` alone (no training before it) ends in no marker."""
    assert read(TEST).decided_by != "signature"


@each_end(ENDS)
def test_an_error_after_it_decides(end):
    assert_the_error_decides(LOOP + end)
