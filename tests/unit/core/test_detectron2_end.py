"""detectron2's end of training, read from its source (facebookresearch/detectron2 02b5c4e295e9):
TrainerBase.train (detectron2/engine/train_loop.py) runs its loop in `try`, logs an exception
that ends it (`logger.exception("Exception during training:")`) and re-raises it, and calls the
after_train hooks in `finally`, where IterationTimer (detectron2/engine/hooks.py) prints
`Overall training speed` (past its warm-up) and `Total training time`. So `Total training time`
ends a finished run, in a log with no accounting, unless the trainer's exception line came first."""

from __future__ import annotations

import pytest
from support.end_marker import assert_ends_the_run, read

METRICS = ("[03/02 11:09:{s} d2.utils.events]:  eta: 0:00:{eta}  iter: {it}  total_loss: 0.4120  "
           "loss_cls: 0.1008  loss_box_reg: 0.2010  time: 0.2650  data_time: 0.0040  "
           "lr: 0.0002  max_mem: 3312M\n")
LOOP = (METRICS.format(s="20", eta="05", it=89979)
        + "[03/02 11:09:25 fvcore.common.checkpoint]: Saving checkpoint to "
        "./output/model_final.pth\n"
        + METRICS.format(s="25", eta="00", it=89999))
REPORT = ("[03/02 11:09:25 d2.engine.hooks]: Overall training speed: 89998 iterations in 6:38:41 "
          "(0.2657 s / it)\n"
          "[03/02 11:09:25 d2.engine.hooks]: Total training time: {total} (0:02:31 on hooks)\n")
EXCEPTION = (
    "ERROR [03/02 11:09:24 d2.engine.train_loop]: Exception during training:\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/detectron2/detectron2/engine/train_loop.py", line 155, in train\n'
    "    self.run_step()\n"
    '  File "/opt/detectron2/detectron2/engine/train_loop.py", line 274, in run_step\n'
    "    loss_dict = self.model(data)\n"
    "ValueError: bad annotation in image 4242\n")


@pytest.mark.parametrize("total", ["6:41:12", "1 day, 6:41:12", "3 days, 0:00:07"])
def test_total_training_time_ends_a_finished_run(total):
    assert_ends_the_run(LOOP + REPORT.format(total=total), "Total training time")


def test_the_report_after_the_loops_exception_is_no_completion():
    """The log cut right after the finally block's report: the exception decides."""
    d = read(LOOP + EXCEPTION + REPORT.format(total="6:41:12"))
    assert d.class_id == "unknown_failure"


def test_the_report_before_the_re_raised_exception_is_no_completion():
    """The whole log: the exception re-raised after the report, as Python prints it."""
    again = EXCEPTION.split("\n", 1)[1]
    d = read(LOOP + EXCEPTION + REPORT.format(total="6:41:12") + again)
    assert d.class_id == "unknown_failure"
