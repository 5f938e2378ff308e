"""YOLOX's end of training, read from its source (Megvii-BaseDetection/YOLOX 6ddff48):
Trainer.train (yolox/core/trainer.py) runs its epoch loop in `try`, logs an exception that ends
it (`logger.error("Exception in training: ", e)`, since 58c2dd0) and re-raises it, and calls
after_train in `finally`, which logs `Training of experiment is done and the best AP is 47.31`;
tools/train.py's `@logger.catch` then logs the traceback. So that line ends a finished run, in a
log with no accounting, unless the trainer's exception line came first (the rule detectron2's
`Total training time` has, bot.core.diagnose.set_aside) or a traceback follows it."""

from __future__ import annotations

import pytest
from support.end_marker import assert_ends_the_run, read

STEP = ("2024-08-01 10:01:{s} | INFO     | yolox.core.trainer:270 - epoch: 300/300, iter: {it}/20, "
        "gpu mem: 9123Mb, mem: 12.1Gb, iter_time: 0.412s, data_time: 0.002s, total_loss: 2.4, "
        "iou_loss: 1.2, l1_loss: 0.4, conf_loss: 0.6, cls_loss: 0.2, lr: 1.563e-04, size: 640, "
        "ETA: 0:00:0{eta}\n")
LOOP = (STEP.format(s="50", it=10, eta=4) + STEP.format(s="54", it=20, eta=0)
        + "2024-08-01 10:02:09 | INFO     | yolox.core.trainer:402 - Save weights to "
          "./YOLOX_outputs/yolox_s\n")
REPORT = ("2024-08-01 10:02:10 | INFO     | yolox.core.trainer:201 - Training of experiment is "
          "done and the best AP is {ap}\n")
EXCEPTION = "2024-08-01 10:02:10 | ERROR    | {where} - Exception in training: \n"
# what tools/train.py's @logger.catch logs after the finally block, in loguru's own form
CAUGHT = (
    "2024-08-01 10:02:10 | ERROR    | yolox.core.launch:98 - An error has been caught in "
    "function 'launch', process 'MainProcess' (4242), thread 'MainThread' (139871):\n"
    "Traceback (most recent call last):\n"
    '  File "tools/train.py", line 138, in <module>\n'
    "    launch(\n"
    '> File "/opt/YOLOX/yolox/core/trainer.py", line 76, in train\n'
    "    self.train_in_epoch()\n"
    "ValueError: bad annotation in image 4242\n")


@pytest.mark.parametrize("ap", ["47.31", "0.00", "100.00"])
def test_the_report_ends_a_finished_run(ap):
    assert_ends_the_run(LOOP + REPORT.format(ap=ap), "Training of experiment is done")


@pytest.mark.parametrize("where", ["yolox.core.trainer:79", "yolox.core.trainer:train:79"],
                         ids=["stderr", "train_log.txt"])
def test_the_report_after_the_loops_exception_is_no_completion(where):
    """The log cut right after the finally block's report: the trainer's exception decides."""
    d = read(LOOP + EXCEPTION.format(where=where) + REPORT.format(ap="47.31"))
    assert d.class_id == "unknown_failure"


@pytest.mark.parametrize("logged", [True, False], ids=["since 58c2dd0", "before 58c2dd0"])
def test_the_report_before_the_caught_traceback_is_no_completion(logged):
    """The whole log: @logger.catch's traceback after the report, with the trainer's own
    exception line before it or (older YOLOX) without."""
    before = EXCEPTION.format(where="yolox.core.trainer:79") if logged else ""
    d = read(LOOP + before + REPORT.format(ap="47.31") + CAUGHT)
    assert d.class_id == "unknown_failure"


def test_another_programs_exception_line_does_not_set_it_aside():
    """Only YOLOX's trainer's own line sets its report aside: a caught and logged exception of
    another module earlier in the run (here an evaluation's, which the run survived) does not."""
    earlier = ("2024-08-01 09:00:00 | ERROR    | myproj.hooks:12 - Exception in training: "
               "ignored\n")
    d = read(earlier + LOOP + REPORT.format(ap="47.31"))
    assert d.class_id == "completed"
