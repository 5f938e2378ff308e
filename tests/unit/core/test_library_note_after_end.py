"""A library's own INFO or WARNING note after a run's last epoch and its result (glog's and
absl's `W1207 12:00:00.123456  1234 gpu_timer.cc:114] ...` prefix: severity letter, date,
time, thread id, file and line; TensorFlow's C++ `2026-12-07 12:00:00.123456: W
tensorflow/...cc:107] ...`) does not reopen the run: a log alone that ends there reads
`completed`. The same prefix on a line that still trains, or at ERROR severity, still counts.

The logs are synthetic: the lines such libraries print (glog's LogMessage prefix, absl's Python
handler's, TensorFlow's tf.data warning at interpreter shutdown), not taken from the held-out
sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))
RESULT = "Test accuracy: 0.91\n"


@pytest.mark.parametrize("note", [
    "W1207 12:00:00.123456  1234 gpu_timer.cc:114] Skipping the delay kernel, measurement "
    "accuracy will be reduced",
    "I1207 12:00:01.123456 140123 async_checkpoint.py:88] Waiting for async writes to finish",
    "2026-12-07 12:00:00.123456: W tensorflow/core/kernels/data/generator_dataset_op.cc:107] "
    "Error occurred when finalizing GeneratorDataset iterator: FAILED_PRECONDITION: Python "
    "interpreter state is not initialized. The process may be terminated.",
    "2026-12-07 12:00:00.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1886] "
    "Created device /job:localhost/replica:0/task:0/device:GPU:0",
])
def test_a_library_note_after_the_result_leaves_the_run_completed(note):
    assert read(EPOCHS + RESULT + note + "\n").class_id == "completed"


@pytest.mark.parametrize("line, class_id", [
    ("I1207 12:00:01.123456 140123 train.py:88] Epoch 4/10 - loss: 0.41", "none"),
    ("E1207 12:00:01.123456 140123 summary_writer.cc:42] Failed to write summary file",
     "unknown_failure"),
])
def test_a_library_line_that_trains_or_errs_still_counts(line, class_id):
    assert read(EPOCHS + RESULT + line + "\n").class_id == class_id


@pytest.mark.parametrize("note", [
    "W1207 12:00:00.123000 140089 torch/distributed/elastic/agent/server/api.py:704] Received "
    "Signals.SIGTERM death signal, shutting down workers",
    "W1207 12:00:00.123456  1234 api.py:88] Worker process 4 was killed by signal 9",
    "W1207 12:00:00.123456  1234 signal_handler.py:20] Caught SIGUSR1 (preemption), saving "
    "checkpoint and exiting",
])
def test_a_warning_notes_signal_or_kill_is_no_end(note):
    assert read(EPOCHS + RESULT + note + "\n").class_id != "completed"


@pytest.mark.parametrize("note", [
    "I1207 12:00:01.123456 140123 export.py:88] Exporting SavedModel to /ckpt/export",
    "I1207 12:00:01.123456 140123 main.py:40] Exporting TorchScript model",
    "2026-12-07 12:00:00.123456: I tensorflow/lite/convert.cc:12] Converting to TFLite",
])
def test_a_note_announcing_a_step_of_the_program_is_no_end(note):
    assert read(EPOCHS + RESULT + note + "\n").class_id == "none"
