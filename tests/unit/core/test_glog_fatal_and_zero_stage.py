"""glog's and absl's FATAL severity line (`F1207 12:00:00.123456  1234 device.cc:12] ...`,
TensorFlow's `…: F tensorflow/…/conv_ops.cc:1153] ...`) is a fatal error, stack trace or not:
LOG(FATAL) aborts the process after it. DeepSpeed's `ZeRO stage 2` is a setting, not a pass of
an outer loop: a run that names it and reaches its last epoch ended.

The logs are synthetic: the lines glog's LogMessage prefix, TensorFlow's C++ logging and
training scripts that echo their DeepSpeed setting print.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))


@pytest.mark.parametrize("fatal", [
    "F1207 12:00:00.123456  1234 device.cc:12] Unexpected event status: 1",
    "F1207 12:00:00.123456  1234 gpu_timer.cc:90] Non-OK-status: GpuLaunchKernel(DelayKernel) "
    "status: INTERNAL: too many resources requested for launch",
    "2026-12-07 12:00:00.123456: F tensorflow/core/kernels/conv_ops.cc:1153] Check failed: "
    "stream->parent()->GetConvolveAlgorithms(&algorithms)",
])
@pytest.mark.parametrize("before", ["Epoch 1/3 - loss: 0.9\n", EPOCHS])
def test_a_fatal_glog_line_ends_the_run_in_a_failure(before, fatal):
    assert read(before + fatal + "\n").class_id == "unknown_failure"


@pytest.mark.parametrize("setting", [
    "Using DeepSpeed ZeRO stage 2",
    "[deepspeed] zero stage 3, bf16 True",
    "Running with ZeRO-stage 2",
])
def test_a_zero_stage_is_no_pass_of_an_outer_loop(setting):
    assert read(setting + "\n" + EPOCHS + "Test accuracy: 0.91\n").class_id == "completed"


def test_a_stage_header_still_opens_a_pass():
    assert read("Stage 1\n" + EPOCHS + "Test accuracy: 0.91\n").class_id == "none"
