"""A generation's or a benchmark's phase after training ends with its outcome: its output
counted (`Generated 1000 sentences`) or its throughput measured (`Throughput: 123.4
samples/s`), as an evaluation ends with its result; a log alone that ends there reads
`completed`. The phase announced with no outcome yet, or a count short of its total, keeps the
run open.

The logs are synthetic: the lines generation and benchmark scripts print.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

EPOCHS = "".join(f"Epoch {e}/3 - loss: 0.{9 - e} - acc: 0.8\n" for e in range(1, 4))
RESULT = "Test accuracy: 0.91\n"


@pytest.mark.parametrize("phase", [
    "Running generation\nGenerated 1000 sentences",
    "Generating translations...\nTranslated 3003 sentences in 41.2s",
    "Running inference benchmark\nThroughput: 123.4 samples/s",
    "Computing throughput...\nThroughput: 812 tokens/s",
])
def test_a_phase_ending_in_its_outcome_leaves_the_run_completed(phase):
    assert read(EPOCHS + RESULT + phase + "\n").class_id == "completed"


@pytest.mark.parametrize("phase", [
    "Running inference benchmark",
    "Running generation\nGenerated 10/1000 sentences",
])
def test_a_phase_with_no_outcome_yet_keeps_the_run_open(phase):
    assert read(EPOCHS + RESULT + phase + "\n").class_id == "none"


@pytest.mark.parametrize("phase", [
    "Running inference on the test set\nProcessed 1000 of 5000 samples",
    "Processed 1000 of 5000 samples",
    "Generating samples for evaluation\nGenerated 10 of 1000 sentences",
    "***** Running Prediction *****\n  Num examples = 5000\nGenerated 64 samples",
    "***** Running Prediction *****\n  Num examples = 5000\n  Batch size = 8\n"
    "Predicted 64 examples, throughput: 30.1 samples/s",
    "Running generation on test set\nbatch 12: 812 tokens/s",
    "Running benchmark\nWarmup throughput: 120.3 samples/s",
])
def test_a_part_of_a_phase_is_no_outcome(phase):
    assert read(EPOCHS + RESULT + phase + "\n").class_id == "none"


def test_an_output_at_the_announced_total_is_the_outcome():
    assert read(EPOCHS + RESULT + "***** Running Prediction *****\n  Num examples = 64\n"
                "Generated 64 samples\n").class_id == "completed"
