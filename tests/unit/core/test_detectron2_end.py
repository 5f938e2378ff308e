"""detectron2's end of training, read from its source (facebookresearch/detectron2 02b5c4e295e9):
TrainerBase.train (detectron2/engine/train_loop.py) runs its loop in `try`, logs an exception
that ends it (`logger.exception("Exception during training:")`) and re-raises it, and calls the
after_train hooks in `finally`, where IterationTimer (detectron2/engine/hooks.py) prints
`Overall training speed` (past its warm-up) and `Total training time`. So `Total training time`
ends a finished run, in a log with no accounting, unless the trainer's exception line came first."""

from __future__ import annotations

import pytest
from support.end_marker import assert_ends_the_run, read

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import Accounting

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


def _inference(start_s: int, done: int, total: int = 5000) -> str:
    """inference_on_dataset's lines (detectron2/evaluation/evaluator.py 02b5c4e295e9): `Start
    inference on N batches`, then `Inference done i/N. …` every 5 s past its warm-up (0.12 s a
    batch: about 42 of them 5 s apart), from `start_s` seconds after 11:09:25, up to `done`."""
    def at(s: int) -> str:
        return f"[03/02 {11 + (9 * 60 + 25 + s) // 3600:02d}:" \
            f"{(9 * 60 + 25 + s) // 60 % 60:02d}:{(25 + s) % 60:02d} d2.evaluation.evaluator]: "
    lines = [at(start_s) + f"Start inference on {total} batches\n"]
    for i in range(1, done // 42 + 1):
        n = i * 42
        lines.append(at(start_s + 5 * i) + f"Inference done {n}/{total}. Dataloading: 0.0012 "
                     "s/iter. Inference: 0.1100 s/iter. Eval: 0.0080 s/iter. Total: 0.1195 "
                     f"s/iter. ETA=0:{(total - n) * 12 // 6000:02d}:00\n")
    return "".join(lines)


def _analysis(text: str) -> LogAnalysis:
    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text(text)
    analysis.finish()
    return analysis


def test_an_evaluation_after_total_training_time_is_activity():
    """EvalHook's final evaluation runs after IterationTimer's `Total training time` (its
    after_train comes later in the hooks' order, since 1dac147): a running job whose
    inference has logged its batches for 10 minutes (a stall threshold of 5) is evaluating
    after training completed, no hang; one whose inference stopped logging 10 minutes ago
    hangs, from its last inference line. The inference's s/iter is no pace of training."""
    log = LOOP + REPORT.format(total="6:41:12") + _inference(1, 5000)
    analysis = _analysis(log)
    last = analysis.series.last_time
    assert last is not None
    assert analysis.series.sec_per_iter() == 0.265
    d = analysis.diagnose(Accounting(state="RUNNING"), now=last + 60)
    assert (d.class_id, d.detail) == ("none", {"kind": "evaluating", "line": 5})
    stopped = _analysis(LOOP + REPORT.format(total="6:41:12") + _inference(1, 1000))
    stopped_at = stopped.series.last_time
    assert stopped_at is not None
    d = stopped.diagnose(Accounting(state="RUNNING"), now=stopped_at + 600)
    assert d.class_id == "hang"
    assert "Inference done 966/5000" in d.evidence[0].text


def test_the_log_of_an_evaluation_after_total_training_time_ends_a_finished_run():
    """Read with no accounting, the log cut in that evaluation is a completed run, by its
    marker."""
    assert_ends_the_run(LOOP + REPORT.format(total="6:41:12") + _inference(1, 2000),
                        "Total training time")
