"""A closing summary printed while the log's own count says its loop has more to go is read
only after an early stop (bot.core.diagnose.closing_summary), and an early stop there is the
one finish_said reads (`stopped_early`: one definition): an early stop's counter, one denied
or one still to come (`EarlyStopping counter: 3 out of 10`, `No early stopping this epoch`,
`Early stopping would trigger in 3 more epochs`) is none, and the log stays open (`none`).

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import read

SUMMARY = "Final test accuracy: 0.9312\n"


def _epochs(epochs: int, total: int = 20) -> str:
    """Ten progress lines an epoch of a loop of `total` epochs, then the epoch's report."""
    out = []
    for e in range(1, epochs + 1):
        out += [f"2024-01-01 10:{e:02d}:{i:02d} Epoch {e}/{total} iter={e * 100 + i * 10} "
                f"loss={1 / (e * 10 + i):.4f}\n" for i in range(1, 11)]
        out.append(f"val acc: 0.{50 + e}\n")
    return "".join(out)


@pytest.mark.parametrize("line", [
    "No early stopping this epoch (best val acc 0.55)",
    "Early stopping would trigger in 3 more epochs without improvement",
    "EarlyStopping counter: 3 out of 10",
])
def test_an_early_stop_denied_counted_or_to_come_leaves_the_loop_open(line):
    assert read(_epochs(5) + line + "\n" + SUMMARY).class_id == "none"


@pytest.mark.parametrize("line", ["Patience exhausted, stopping training.",
                                  "Early stopping triggered at epoch 5",
                                  "val_loss did not improve for 10 epochs. Stopping training"])
def test_an_early_stop_before_the_summary_ends_the_run(line):
    assert read(_epochs(5) + line + "\n" + SUMMARY).class_id == "completed"
