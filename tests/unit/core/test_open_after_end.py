"""A log alone whose end is a part's, not the run's, stays open (`none`): a stage named before
the program's closing words, a next phase starting after an end (the program's own words or a
framework's completion marker), Keras's early stop inside a fold short of the last, and the
last-epoch and target readings with a pass's header far back.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

STEPS = "".join(f"step {s} loss 0.{99 - s // 100:02d}\n" for s in range(100, 1100, 100))


@pytest.mark.parametrize("log", [
    pytest.param(STEPS + "[Stage: SFT] training done\n", id="a bracketed stage"),
    pytest.param(STEPS + "Phase: warmup, done training\n", id="a phase named before"),
])
def test_a_stage_named_before_the_finish_words_is_that_stages_end(log):
    assert read(log).class_id == "none"


def test_the_finish_words_with_no_stage_before_them_still_end_the_run():
    d = read(STEPS + "INFO: training done\n")
    assert (d.class_id, d.decided_by) == ("completed", "hint")
