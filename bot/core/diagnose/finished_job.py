"""A finished job with no failure signature, as the decision (bot.core.diagnose.decide) settles
it (pure; no file or clock access): completed, silent_exit or unknown_failure by accounting and
progress (`settle_finished`), whether the framework's completion marker decides a completed run
(`marker_decides`), and whether the training progress reached the run's target
(`target_reached`), which a log alone reads too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.core.detectors import CompletionEnding, SilentExitFinding, detect_silent_exit
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting


def settle_finished(
    catalogue: Any,
    acct: Accounting,
    series: MetricSeries,
    matches: Sequence[Any],
    target: int | None,
    min_elapsed_s: float,
    completion: CompletionEnding,
) -> tuple[str, SilentExitFinding | None]:
    """A finished job with no primary failure signature: completed, silent_exit (with its
    finding) or unknown_failure; `completion` is how the log ends around its completion
    marker."""
    if acct.state == "COMPLETED" and acct.exit_code in (0, None) and acct.signal in (0, None):
        finding = detect_silent_exit(
            acct, series, matches, target_iter=target, min_elapsed_s=min_elapsed_s,
            completion=completion,
        )
        if finding is not None:
            return "silent_exit", finding
        return "completed", None
    return "unknown_failure", None


def marker_decides(completion: CompletionEnding) -> bool:
    """Does the framework's completion marker that ends the log decide a COMPLETED 0:0 run's
    `completed` (one `detect_silent_exit` found no failure in)? Whenever it ends the log: when
    accounting and progress alone would have doubted it (`progress_doubts`: no iteration,
    short of the target, a short run) it decides as in the log alone, and when they agree it
    is still the log's own line saying why the run ended, shown as the evidence (was: sacct
    decided then, and the card told the user "the log does not say why: look closer"). A run
    with no marker that ends the log is decided by its progress when that is at the run's
    target (PROGRESS), else by sacct alone."""
    return completion.ends_in_marker


def target_reached(series: MetricSeries, target: int | None) -> bool:
    """The training progress reached `target`, and its last progress line is not a count
    toward that same target started again, at half of it or less (`step 1000/1000`, then a
    next run's `step 100/1000` with no banner between: that run has not; a rank printing its
    `step 990/1000` after another rank's last step is no new run)."""
    if target is None or series.last_iteration is None or series.last_iteration < target:
        return False
    last = next((s for s in reversed(series.samples)
                 if s.line_no == series.last_iteration_line), None)
    return last is None or last.iteration is None or last.iteration > target // 2 or (
        last.target_iter != target)
