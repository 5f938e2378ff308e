"""After the last epoch's report, a figure on a line saying its part finished is that part's
result only where the part is a pass of an outer loop by its number (`Fold 4 finished, acc:
0.94`: bot.core.diagnose.after_target); a step, an update or an episode done with its figure
(`Discriminator update done, D loss: 0.41`, `step done | loss 0.31`, `episode ended, reward:
12.0, loss: 0.3`, `Teacher pass completed, loss: 0.2`) is training going on (`none`).

The logs are synthetic: the lines such programs print.
"""

from __future__ import annotations

import pytest
from support.end_marker import epochs, read

EPOCHS = epochs(10)


@pytest.mark.parametrize("lines", [
    "Discriminator update done, D loss: 0.41\nGenerator update done, G loss: 1.21",
    "step done | loss 0.31 | lr 1e-4\nstep done | loss 0.30 | lr 1e-4",
    "episode ended, reward: 12.0, loss: 0.3",
    "Teacher pass completed, loss: 0.2",
])
def test_a_step_done_with_its_figure_trains_on(lines):
    assert read(EPOCHS + lines + "\n").class_id == "none"
