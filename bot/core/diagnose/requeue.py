"""A job that starts again by itself after the run its log shows ended: requeued by Slurm (sacct's
REQUEUED or PENDING after a preemption, its node's failure or `scontrol requeue`) or by the
training framework itself on the scheduler's signal (Lightning's auto-requeue, submitit's
requeue after its time-out or preemption verdict; their lines are read in
bot.core.diagnose.announced). That run's end is history, not a failure to act on: a resubmit
would run the job twice. The decision (bot.core.diagnose.decide) asks here which requeue it was
and tells it as the `Requeued` detail, with the framework's line as evidence. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.core.diagnose.announced import requeued_by_lightning, requeued_by_submitit
from bot.core.diagnose.cause import Cause, Requeued
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting, Evidence

#: Slurm states of a job not started yet, or waiting to start again: judged like a running job.
NOT_STARTED = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "RESIZING"})
#: The verdicts submitit requeues a job after (its time-out, its preemption).
SUBMITIT_VERDICTS = ("time_limit", "preempted")
#: The class a run Lightning requeued ended in, beside whatever failure the log shows after it.
LIGHTNING_REQUEUE_SECONDARY = ("time_limit",)


@dataclass(frozen=True)
class RequeueReading:
    """A requeue as the diagnosis tells it: the `Requeued` detail, the framework's requeue
    line as evidence (none for Slurm's own requeue) and the classes the requeue itself shows
    the run's end to have been, which the diagnosis keeps as secondary ones (Lightning's:
    `time_limit`)."""

    cause: Requeued
    evidence: tuple[Evidence, ...] = ()
    secondary: tuple[str, ...] = ()


def lightning_requeue(state: str | None, matches: Sequence[Any],
                      series: MetricSeries) -> RequeueReading | None:
    """Lightning's requeue (`Requeued SLURM job: 42` after the run's last progress line), with
    sacct's `state` (None without accounting); None when the log has no such line. Its run
    ended in a time limit (a secondary class), whatever else the log shows: Lightning requeues
    only on the signal its SLURMEnvironment's auto-requeue asks Slurm for before the limit
    (`--signal=SIGUSR1@90`; lightning/pytorch/trainer/connectors/signal_connector.py,
    _slurm_sigusr_handler_fn)."""
    line = requeued_by_lightning(matches, series)
    if line is None:
        return None
    return RequeueReading(Requeued(state, "lightning", line.line_no),
                          (Evidence(line.line_no, line.text),), LIGHTNING_REQUEUE_SECONDARY)


def submitit_requeue(state: str | None, matches: Sequence[Any], series: MetricSeries,
                     cause: Cause | None) -> RequeueReading | None:
    """submitit's requeue after its verdict (`Requeued job 42 (k remaining timeouts)` after the
    run's last progress line), with sacct's `state` (None without accounting), the time-outs it
    will still requeue after and the verdict's own `cause` (its time-out read as a preemption,
    SubmititPreempted), which the explanation states first; None when the log has no such
    line."""
    own = requeued_by_submitit(matches, series)
    if own is None:
        return None
    return RequeueReading(Requeued(state, "submitit", own.line, own.remaining, cause=cause),
                          (Evidence(own.line, own.text),))


def requeue_after(chosen: str, acct: Accounting, matches: Sequence[Any], series: MetricSeries,
                  cause: Cause | None) -> RequeueReading | None:
    """The requeue after the run the log shows ended in the class `chosen` (its own `cause`,
    when one decided it: submitit's time-out verdict read as a preemption), with sacct's state:
    the framework's own when its line is there (submitit's after its verdict, a time-out or
    preemption class, with that cause; else Lightning's, whatever class its run's end read
    as), else, waiting to start again (REQUEUED, PENDING), Slurm's, with that cause. Running
    again (RUNNING) with nothing of its next run in the log yet (the log's last run is the one
    that ended), the framework's only, as running alone says nothing of a requeue. None when
    neither: a running job whose log shows no requeue, or a job that ended."""
    waiting = acct.state in NOT_STARTED
    if not waiting and not acct.is_running:
        return None
    own = submitit_requeue(acct.state, matches, series, cause) if (
        chosen in SUBMITIT_VERDICTS) else None
    if (own := own or lightning_requeue(acct.state, matches, series)) is not None:
        return own
    return RequeueReading(Requeued(acct.state, cause=cause)) if waiting else None
