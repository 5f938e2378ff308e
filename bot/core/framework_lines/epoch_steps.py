"""The steps of a run whose progress is counted one epoch at a time (pure; no I/O), shared by
bot.core.framework_lines' families: a tqdm bar counting one epoch's steps whose line names the
run's step elsewhere (torchtune's description, OpenPCDet's postfix), and the target of every
epoch a log announced before its loop (bot.core.announced_targets), as such bars and composer's
lines take it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.core.announced_targets import AnnouncedTargets

if TYPE_CHECKING:
    from bot.core.training_lines import Sample


def run_step_of_epoch_bar(body: str, bar: re.Match[str], step: int, s: Sample,
                          targets: AnnouncedTargets) -> str:
    """A bar counting one epoch's steps (`bar`: its `TQDM_BAR` match in `body`) that names the
    run's `step` elsewhere (torchtune's description, OpenPCDet's postfix): that step as the
    iteration, every announced epoch's steps (as many as this bar counts) as the target, the
    bar's rate as the pace. The body left for the rest of the grammar: without the bar's count,
    one epoch's steps, not the run's."""
    s.iteration = step
    target_of_announced_epochs(s, int(bar.group(2)), targets)
    if bar.group(3) is not None and (rate := float(bar.group(3))) > 0:
        s.sec_per_iter = rate if bar.group(4) == "s/it" else 1 / rate
    return body[:bar.start()] + body[bar.end():]


def target_of_announced_epochs(s: Sample, steps: int, targets: AnnouncedTargets) -> None:
    """Every announced epoch's steps (`steps` each, as many as the line's epoch counts) as the
    target of `s`, its iteration set: when the epochs were announced and their steps reach
    that iteration (else no target: the announcement was another run's)."""
    if targets.epochs is not None and s.iteration is not None and (
            targets.epochs * steps >= s.iteration):
        s.target_iter = targets.epochs * steps
