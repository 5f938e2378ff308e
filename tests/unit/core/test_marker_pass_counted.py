"""A completion marker is a pass's end, not the run's, only where the pass it names is one an
outer loop in the log counts (bot.core.outer_loop `names_pass`: a `Fold 1/5` counter or earlier
headers with the same word); a run's identifier, a setting, a path, a best pass or a stage
setting on the marker's line (`W&B run 3f2a9c1d`, `run=5`, `runs/detect/run2`, `Best round:
312`, `ZeRO stage 2`) leaves the marker the run's end.

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read


@pytest.mark.parametrize("marker", [
    "Training complete. W&B run 3f2a9c1d",
    "Training complete, run=5",
    "Training complete for run 20231207",
    "Training completed. Best round: 312, best score: 0.912",
    "Training complete. Results saved to runs/detect/run2",
    "Training done. Checkpoints in ./outputs/phase1",
    "Training finished (stage: 2)",
    "Training complete (ZeRO stage 2, 8 GPUs).",
])
def test_a_number_no_outer_loop_counts_leaves_the_marker_the_runs_end(marker):
    assert read(epochs(10) + marker + "\n").class_id == "completed"


def test_a_marker_naming_a_pass_the_log_heads_is_that_pass_end():
    log = "Fold 1\n" + epochs(5) + "Training complete for fold 1\n"
    assert read(log + "Fold 2\n" + epochs(5) + "Training complete for fold 2\n").class_id == "none"
