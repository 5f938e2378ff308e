"""maskrcnn-benchmark's end of training, read from its source (facebookresearch/maskrcnn-benchmark
maskrcnn_benchmark/engine/trainer.py 0ce8f6f6, do_train; the same since its first release): after
its loop over the iteration-based sampler, and only there, it logs `Total training time:
6:38:41.123456 (0.2657 s / it)` (datetime.timedelta's str of float seconds: a fraction unless it
is whole). do_train has no try, except or finally, so an exception leaves before it.
tools/train_net.py then tests the model (`Start evaluation on ...`, inference's tqdm bar, COCO's
table), which is no training progress. FCOS and the other forks print the same line."""

from __future__ import annotations

import pytest
from support.end_marker import (
    assert_ends_the_run,
    assert_still_running,
    assert_the_error_decides,
    each_end,
    read,
)


def _iteration(it: int) -> str:
    eta = (90000 - it) // 4
    return (f"2019-03-02 11:09:{it % 60:02d},123 maskrcnn_benchmark.trainer INFO: eta: "
            f"0:00:{eta:02d}  iter: {it}  loss: 0.4120 (0.4321)  loss_classifier: 0.1008 "
            "(0.1100)  loss_box_reg: 0.2010 (0.2100)  time: 0.2650 (0.2657)  data: 0.0040 "
            "(0.0050)  lr: 0.000200  max mem: 3312\n")


LOOP = ("".join(_iteration(it) for it in range(89900, 90001, 20))
        + "2019-03-02 11:09:31,000 maskrcnn_benchmark.utils.checkpoint INFO: Saving checkpoint "
        "to ./output/model_final.pth\n")
REPORT = ("2019-03-02 11:09:33,000 maskrcnn_benchmark.trainer INFO: Total training time: {} "
          "({} s / it)\n")
ENDS = {
    "hours": REPORT.format("6:38:41.123456", "0.2657"),
    "a day": REPORT.format("1 day, 2:03:04.004521", "1.0367"),
    "whole seconds": REPORT.format("2 days, 0:00:07", "1.9201"),
}
TEST = ("2019-03-02 11:09:40,000 maskrcnn_benchmark.inference INFO: Start evaluation on "
        "coco_2014_minival dataset(5000 images).\n"
        "100%|##########| 625/625 [05:00<00:00,  2.08it/s]\n"
        "2019-03-02 11:14:40,000 maskrcnn_benchmark.inference INFO: Total run time: "
        "0:05:00.123456 (0.48 s / img per device, on 8 devices)\n"
        "2019-03-02 11:14:45,000 maskrcnn_benchmark.inference INFO: Evaluating predictions\n"
        " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.378\n")


@each_end(ENDS)
def test_total_training_time_ends_a_finished_run(end):
    assert_ends_the_run(LOOP + end, "Total training time")


def test_the_test_after_it_is_no_progress():
    assert_ends_the_run(LOOP + ENDS["hours"] + TEST, "Total training time")


def test_the_inference_report_is_no_end():
    """The inference's own report (tools/test_net.py's run, or the test after training): `Total
    run time: ... (0.48 s / img per device, ...)` is no training time, no end."""
    report = "".join(line + "\n" for line in TEST.splitlines() if "%|" not in line)
    d = read(report)
    assert (d.class_id, d.decided_by) == ("none", "progress")


@pytest.mark.parametrize("after", ["progress", "a second stage"])
def test_more_training_after_it_is_still_running(after):
    """A fork that logs it per stage (or a job script that trains again): progress follows."""
    more = ("".join(_iteration(it) for it in range(90020, 90101, 20)) if after == "progress"
            else "".join(f"epoch 1, iter {i}, loss {0.5 - i / 10000:.4f}\n"
                         for i in range(100, 501, 100)))
    assert_still_running(LOOP + ENDS["hours"] + more)


def test_an_error_after_it_decides():
    assert_the_error_decides(LOOP + ENDS["hours"])

