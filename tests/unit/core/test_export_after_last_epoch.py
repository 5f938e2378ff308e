"""An export after the last epoch: a run whose log ends in the export's success after its
training finished is finished (`ONNX: export success`, as ultralytics prints it), and one cut
short of its epochs is not; but a log whose last line starts another step with no result
after it yet (`TensorRT: starting export with TensorRT 8.6.1...`) is still at work, and a log
alone stays open (`none`; bot.core.diagnose.last_epoch `ends_at_last_epoch`).

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read

ONNX = "ONNX: export success 2.1s, saved as best.onnx (12.1 MB)\n"


def test_an_export_success_after_the_last_epoch_ends_the_run():
    assert read(epochs(10, 10) + ONNX).class_id == "completed"


def test_an_export_success_short_of_the_last_epoch_does_not():
    assert read(epochs(3, 10) + ONNX).class_id == "none"


@pytest.mark.parametrize("started", [
    "TensorRT: starting export with TensorRT 8.6.1...",
    "Starting export to CoreML",
    "Beginning conversion to TFLite",
])
def test_a_step_started_with_no_result_after_it_leaves_the_run_open(started):
    assert read(epochs(10, 10) + ONNX + started + "\n").class_id == "none"


def test_a_step_started_then_its_result_ends_the_run():
    log = (epochs(10, 10) + ONNX + "TensorRT: starting export with TensorRT 8.6.1...\n"
           + "TensorRT: export success 120.3s, saved as best.engine (40.2 MB)\n")
    assert read(log).class_id == "completed"
