"""What a training framework announces when the scheduler's signal reaches it, read against the
framework's own source: submitit's time-out verdict that was a preemption, and a framework that
caught SIGTERM and exited 0 (Megatron, Lightning).

Megatron's --exit-signal-handler (megatron/training/training.py, checkpoint_and_decide_exit)
saves a checkpoint on SIGTERM, prints `exiting program after receiving SIGTERM.` and exits 0.
Lightning's signal connector (lightning/pytorch/trainer/connectors/signal_connector.py,
`_sigterm_notifier_fn`, 2.0 on) prints `[rank: 0] Received SIGTERM: 15`; its loops then raise
`SIGTERMException`, a SystemExit with no code (lightning/pytorch/utilities/exceptions.py), so
the process exits 0 (143 only from the fix of Lightning issue 21623). Slurm's own time limit and
a preemption end the job TIMEOUT or PREEMPTED whatever it exits with; a COMPLETED 0:0 after such
a stop was a SIGTERM that came before the limit (Slurm's --signal=TERM@<s> warning, or scancel
--signal=TERM).

submitit (facebookincubator/submitit, submitit/core/job_environment.py, `SignalHandler`) calls
every signal it catches a time-out once the run has used `guaranteed_walltime =
min(0.8 * limit, limit - 10 min)`: `Job has timed out. Ran N minutes out of requested M
minutes.`, then `Caught signal SIGUSR2 on <host>: this job is timed-out.`. So a preemption in the
last 20 % (the last 10 minutes of a job under 50 minutes) reads as a time-out too. Slurm's
time-limit warning is the `--signal=USR2@90` submitit asks for (submitit/slurm/slurm.py,
`signal_delay_s`: 90 s; Hydra's launcher 120 s; Slurm may send it up to 60 s early), and nothing
comes before it; a preemption (and scancel) sends SIGCONT and SIGTERM first, which submitit's
handler only logs (`Bypassing signal SIGTERM`; `SlurmJob._interrupt`: "in case of preemption,
SIGTERM is sent first"; until its PR 1603, 2021, submitit decided preemption by exactly that
order). Pure.

A job submitit requeued logs its runs one after the other in the same file, each from its own
`Starting with JobEnvironment(...)` (bot.core.training_lines.RUN_START): the diagnosis reads the
last run only (bot.core.diagnose.decide, from the line the metric series found it to start at),
so an earlier run's verdict neither decides nor colours the lines of the next.

What submitit prints after its verdict is the same for both: `Requeued job N (k remaining
timeouts)` (SlurmJobEnvironment._requeue), `Exiting gracefully after preemption/timeout.`
(SignalHandler._exit) and `Bypassing signal SIGTERM` / `SIGCONT` (SignalHandler.bypass of the
signals that stop the job after a time-out as after a preemption: `scontrol requeue`'s, Slurm's
at the limit) follow a time-out as they follow a preemption, so they take the class of the
verdict that comes before them (`as_submitit_decided`), not preemption's; before any verdict they
name no cause (scancel sends SIGTERM too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.core.catalogue.model import Match
from bot.core.metrics import MetricSeries

# Megatron's --exit-signal-handler stop, after its save.
_MEGATRON_SIGTERM_STOP = re.compile(r"exiting program after receiving SIGTERM")
# Lightning's SIGTERM notice (`rank_prefixed_message`: `[rank: 0] `), before SIGTERMException.
_LIGHTNING_SIGTERM = re.compile(r"\[rank: [0-9]+\] Received SIGTERM: 15\b")
# SignalHandler.has_timed_out (2021 on): the verdict with the run's and the request's minutes.
_TIMED_OUT = re.compile(r"Job has timed out\. Ran ([0-9]+) minutes out of requested ([0-9]+) "
                        r"minutes")
# SignalHandler.checkpoint_and_try_requeue: the verdict (`SIGUSR2`; before 2021 the number, `10`).
_VERDICT = re.compile(r"Caught signal \S+ on \S+: this job is (?:timed-out|preempted)")
# ... and, when it gives up, its reason (`timed-out and not checkpointable`, `timed-out too many
# times`).
_GAVE_UP = re.compile(r"Job not requeued because: timed-out")
# SignalHandler.checkpoint_and_try_requeue's reason not to requeue (any: `checkpoint function
# returned None`, `timed-out and not checkpointable`, `timed-out too many times`), after which it
# raises UncompletedJobError and the job ends.
_NOT_REQUEUED = re.compile(r"Job not requeued because: ")
# SignalHandler.bypass: a SIGTERM or SIGCONT it only logs (by name, or by number before 2021).
_BYPASSED = re.compile(r"Bypassing signal (?:Signals\.)?(?:SIGTERM|SIGCONT|15|18)\b")
# SignalHandler.has_timed_out's and checkpoint_and_try_requeue's verdict, either way: `Job has
# (not) timed out. Ran ...` then `Caught signal SIGUSR2 on <host>: this job is <case>.`
_EITHER_VERDICT = re.compile(r"Job has (not )?timed out\. Ran [0-9]+ minutes"
                             r"|Caught signal \S+ on \S+: this job is (timed-out|preempted)")
# What submitit prints after either verdict: SlurmJobEnvironment._requeue (submitit/slurm/
# slurm.py), SignalHandler._exit, and SignalHandler.bypass of the SIGTERM and SIGCONT that
# `scontrol requeue` or Slurm's end of the job sends next (a rank other than 0 stays alive to
# get them: checkpoint_and_try_requeue returns there without exiting).
_AFTER_VERDICT = re.compile(r"Requeued job [0-9]+ \(-?[0-9]+ remaining timeouts\)"
                            r"|Exiting gracefully after preemption/timeout"
                            r"|Bypassing signal (?:Signals\.)?(?:SIG[A-Z0-9]+|[0-9]+)\b")
# Lightning's auto-requeue that Slurm took (lightning/pytorch/trainer/connectors/
# signal_connector.py, _slurm_sigusr_handler_fn: `scontrol requeue <job>` returned 0, then
# `Requeued SLURM job: {job_id}`; 1.6 to 1.9, pytorch_lightning's: `requeued exp {job_id}`).
# Not its `Requeuing SLURM job {job_id} failed with error code {result}`, nor the handler's
# first line alone (`Handling auto-requeue signal: 10`).
_LIGHTNING_REQUEUED = re.compile(r"Requeued SLURM job: [0-9_-]+|requeued exp [0-9_-]+")
# submitit's requeue that Slurm took (SlurmJobEnvironment._requeue: `scontrol requeue <job>`
# returned 0, then `Requeued job {jid} ({countdown} remaining timeouts)`). Not its `Job not
# requeued because: ...`, which SignalHandler.checkpoint_and_try_requeue logs instead (a countdown
# below 0, a job not checkpointable, a checkpoint that returned None).
_SUBMITIT_REQUEUED = re.compile(r"Requeued job [0-9_]+ \((-?[0-9]+) remaining timeouts\)")
#: The class of the lines after a verdict that none comes before (an excerpt without it): an
#: ending that names no cause.
NO_VERDICT_CLASS = "unknown_failure"
#: submitit's own bound (`limit - 10 min`): the time-limit warning comes within the last
#: minutes, so a time-out verdict with more than this left was another signal.
VERDICT_WINDOW_MIN = 10


@dataclass(frozen=True)
class SubmititPreemption:
    """submitit's time-out verdict for what was a preemption: the lines that show it, the
    minutes it had left (when more than submitit's 10-minute window decided it) and the line
    of the SIGTERM or SIGCONT it bypassed before the verdict (when that order decided it)."""

    lines: tuple[tuple[int, str], ...]
    minutes_left: int | None
    limit_min: int | None
    bypassed_line: int | None


def submitit_verdicts_only(time_limit_lines: Sequence[Any]) -> bool:
    """The log's time-limit signatures (catalogue matches) are all submitit's verdict lines,
    which its clock decides, not the scheduler (there is at least one)."""
    return bool(time_limit_lines) and all(
        _TIMED_OUT.search(m.text) or _VERDICT.search(m.text) or _GAVE_UP.search(m.text)
        for m in time_limit_lines)


def submitit_preemption(time_limit_lines: Sequence[Any], matches: Sequence[Any]
                        ) -> SubmititPreemption | None:
    """The preemption that submitit's time-out verdict misreads, when the log's time-limit
    signatures (`time_limit_lines`, catalogue matches) are all submitit's verdict lines and
    either its figures leave more than `VERDICT_WINDOW_MIN` minutes before the limit or it
    bypassed a SIGTERM or SIGCONT after its previous verdict and before this one (the
    scheduler was stopping the job, not warning of the limit); None otherwise."""
    if not submitit_verdicts_only(time_limit_lines):
        return None
    anchors = [m for m in time_limit_lines
               if _TIMED_OUT.search(m.text) or _VERDICT.search(m.text)]
    if not anchors:
        return None
    # the last verdict, from its `Job has timed out. Ran ...` line just before `Caught signal`
    start = anchors[-1]
    if len(anchors) > 1 and _VERDICT.search(start.text) and _TIMED_OUT.search(anchors[-2].text):
        start = anchors[-2]
    earlier = [m.line_no for m in matches if _VERDICT.search(m.text) and m.line_no < start.line_no]
    since = earlier[-1] if earlier else 0
    bypassed = next((m for m in matches
                     if since < m.line_no < start.line_no and _BYPASSED.search(m.text)), None)
    figures = _TIMED_OUT.search(start.text)
    left = int(figures.group(2)) - int(figures.group(1)) if figures else None
    window = left is not None and left > VERDICT_WINDOW_MIN
    if bypassed is None and not window:
        return None
    shown = [(bypassed.line_no, bypassed.text)] if bypassed is not None else []
    shown += [(m.line_no, m.text) for m in anchors if m.line_no >= start.line_no]
    return SubmititPreemption(
        lines=tuple(shown),
        minutes_left=left if window else None,
        limit_min=int(figures.group(2)) if window and figures else None,
        bypassed_line=bypassed.line_no if bypassed is not None else None)


def stopped_on_sigterm(matches: Sequence[Any], series: MetricSeries) -> str | None:
    """The framework (`megatron`, `lightning`) whose stop on a SIGTERM comes after the log's last
    progress line (catalogue matches: both lines are time-limit hints); None when none does."""
    last = series.samples[-1].line_no if series.samples else 0
    for m in matches:
        if m.line_no >= last and _MEGATRON_SIGTERM_STOP.search(m.text):
            return "megatron"
        if m.line_no >= last and _LIGHTNING_SIGTERM.search(m.text):
            return "lightning"
    return None


def as_submitit_decided(matches: Sequence[Match]) -> list[Match]:
    """The matches (in line order) with submitit's lines after its verdict (`Requeued job N (k
    remaining timeouts)`, `Exiting gracefully after preemption/timeout.`, `Bypassing signal
    SIGTERM`) in the class of the verdict before them: `time_limit` after `Job has timed out` /
    `this job is timed-out`, `preempted` after `Job has not timed out` / `this job is
    preempted`, and `NO_VERDICT_CLASS` when no verdict comes before them."""
    out: list[Match] = []
    decided = NO_VERDICT_CLASS
    for m in matches:
        if verdict := _EITHER_VERDICT.search(m.text):
            preempted = verdict.group(1) is not None or verdict.group(2) == "preempted"
            decided = "preempted" if preempted else "time_limit"
        elif _AFTER_VERDICT.search(m.text) and m.class_id != decided:
            m = replace(m, class_id=decided)
        out.append(m)
    return out


def requeued_by_lightning(matches: Sequence[Match], series: MetricSeries) -> Match | None:
    """Lightning's line saying it requeued the job (`Requeued SLURM job: 42`, `requeued exp
    42`) after the run's last progress line: on Slurm's --signal=SIGUSR1 warning before the time
    limit it saved a checkpoint and ran `scontrol requeue`, so Slurm starts the job again by
    itself; None when there is none."""
    after = series.last_iteration_line or 0
    return next((m for m in reversed(matches)
                 if m.line_no > after and _LIGHTNING_REQUEUED.search(m.text)), None)


@dataclass(frozen=True)
class SubmititRequeue:
    """submitit's line saying it requeued the job (`line`, its text) and the time-outs it will
    still requeue it after (`remaining`)."""

    line: int
    text: str
    remaining: int


def requeued_by_submitit(matches: Sequence[Match], series: MetricSeries) -> SubmititRequeue | None:
    """submitit's line saying it requeued the job (`Requeued job 42 (3 remaining timeouts)`)
    after the run's last progress line: on the scheduler's signal (a preemption, the time-limit
    warning) it ran `scontrol requeue` and that returned 0, so Slurm starts the job again by
    itself (submitit/slurm/slurm.py, SlurmJobEnvironment._requeue; it prints the line only then,
    with 0 remaining too: the next time-out is the one it does not requeue); None when there is
    none."""
    after = series.last_iteration_line or 0
    for m in reversed(matches):
        if m.line_no > after and (found := _SUBMITIT_REQUEUED.search(m.text)):
            return SubmititRequeue(m.line_no, m.text, int(found.group(1)))
    return None


@dataclass(frozen=True)
class SubmititVerdict:
    """submitit's last verdict on the scheduler's signal (`line`, its `Caught signal ... this
    job is <case>` line, `text`) and, when it printed one after it, the line saying it would not
    requeue the job (`not_requeued`: `Job not requeued because: ...`)."""

    line: int
    text: str
    not_requeued: tuple[int, str] | None

    @property
    def timed_out(self) -> bool:
        """submitit called the job timed out (`this job is timed-out`), not preempted."""
        return "this job is timed-out" in self.text


def submitit_verdict(matches: Sequence[Match], tail: Sequence[tuple[int, str]]
                     ) -> SubmititVerdict | None:
    """submitit's last verdict (`Caught signal SIGUSR2 on <host>: this job is timed-out.` or
    `... is preempted.`, submitit/core/job_environment.py,
    SignalHandler.checkpoint_and_try_requeue) among the catalogue `matches`, with the `Job not
    requeued because: ...` line after it among the log's last lines (`tail`) when there is one;
    None when no verdict is there. What comes after the verdict: the checkpoint method
    (`Calling checkpoint method.`), then `scontrol requeue` and `Requeued job N (k remaining
    timeouts)` (bot.core.diagnose.requeue reads that one), or the reason not to requeue and
    UncompletedJobError, which ends the job; a rank other than 0 returns at once (`Not
    checkpointing nor requeuing since I am a slave`) and runs on until rank 0's requeue or end
    stops it."""
    verdict = next((m for m in reversed(matches) if _VERDICT.search(m.text)), None)
    if verdict is None:
        return None
    gave_up = next(((n, text) for n, text in [*((m.line_no, m.text) for m in matches), *tail]
                    if n > verdict.line_no and _NOT_REQUEUED.search(text)), None)
    return SubmititVerdict(verdict.line_no, verdict.text, gave_up)
