"""A phase that produces output of its own (generation, inference, prediction) started after
training's end keeps the run open only while the log stops inside it
(bot.core.diagnose.after_target `starts_next_phase`): its end or its output kept after it
(`Saved 500 generations to …`, `Inference finished in 42.1s`, `Prediction done.`, `Done.`,
`Predictions written to preds.csv`) ends the run as a result after it does.

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read

EPOCHS = epochs(10)


@pytest.mark.parametrize(("start", "end"), [
    ("Starting generation phase", "Saved 500 generations to out/generations.jsonl"),
    ("Starting the inference phase", "Inference finished in 42.1s"),
    ("Starting prediction phase...", "Prediction done."),
    ("Starting prediction phase...", "Done."),
    ("Starting prediction phase", "Predictions written to preds.csv"),
])
def test_an_output_phase_that_ended_ends_the_run(start, end):
    assert read(EPOCHS + start + "\n" + end + "\n").class_id == "completed"


def test_an_output_phase_with_nothing_after_it_stays_open():
    assert read(EPOCHS + "Starting generation phase\n").class_id == "none"
