"""A completion marker inside a pass of an outer loop (k-fold's folds) short of its last
(`Training complete for fold 2` with no total, or short of its total) is that pass's end: more
passes may follow, and a log alone stays open (`none`; bot.core.diagnose.finish_said
`ends_open_pass`). At the loop's last counted pass it ends the run.

The logs are synthetic: the lines such programs print, not taken from the held-out sets.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read


def _folds(folds: range, header: str, end: str) -> str:
    return "".join(header.format(f=f) + "\n" + epochs(5) + end.format(f=f) + "\n" for f in folds)


@pytest.mark.parametrize("header", ["Fold {f}", "Fold {f}/5", "===== fold {f} ====="])
def test_a_marker_naming_a_pass_short_of_the_loops_end_is_no_end(header):
    assert read(_folds(range(1, 3), header, "Training complete for fold {f}")).class_id == "none"


def test_a_marker_naming_the_last_counted_pass_ends_the_run():
    assert read(_folds(range(1, 6), "Fold {f}/5", "Training complete for fold {f}")
                ).class_id == "completed"

