"""Slurm job states and pending reasons, as squeue and sacct print them (cut columns too)."""

from __future__ import annotations

import re

PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING_STATES = frozenset(
    {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT",
     "RESIZING", "POWER_UP_NODE", "UPDATE_DB"}
)
FINISHED_STATES = frozenset(
    {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
     "PREEMPTED", "TIMEOUT", "REVOKED", "SPECIAL_EXIT"}
)
KNOWN_STATES = PENDING_STATES | RUNNING_STATES | FINISHED_STATES
# Alive, but its processes do not run: sent SIGSTOP (`scancel --signal=STOP`; squeue says
# STOPPED where sacct still says RUNNING), or suspended (`scontrol suspend`). It makes no
# progress until SIGCONT / `scontrol resume`, and that is no hang.
PAUSED_STATES = frozenset({"STOPPED", "SUSPENDED"})
# The end states a job may reach while it still waits in the queue (scancel, its --deadline, a
# federation sibling revoked, a node that never booted or failed in its prolog); COMPLETED,
# TIMEOUT, OUT_OF_MEMORY, PREEMPTED and SPECIAL_EXIT only a job that ran reaches.
QUEUED_END_STATES = frozenset(
    {"CANCELLED", "DEADLINE", "FAILED", "REVOKED", "BOOT_FAIL", "NODE_FAIL"})


def ended_unstarted(result: str | None, started_at: float | None,
                    last_iter: int | None) -> bool:
    """Whether an attempt row (the store's attempts: its final state `result`, the start
    `started_at` the watcher saw or its end recorded, the last iteration it logged) tells of a
    job that ended while it waited in the queue and ran nothing: it ended in a queued end state,
    with no start and no iteration. The watcher writes a job's start when it sees it run and at
    its end (sacct's Start), except for a job that never started (JobRecord.never_started,
    whose Start is only its end)."""
    return result in QUEUED_END_STATES and started_at is None and last_iter is None
HELD_REASONS = frozenset({"JobHeldAdmin", "JobHeldUser"})
HELD_STATES = frozenset({"REQUEUE_HOLD", "RESV_DEL_HOLD"})
# Reasons worth recognising when a narrow column cut them (`JobHeldA+`).
KNOWN_REASONS = HELD_REASONS | frozenset(
    {"Resources", "Priority", "BeginTime", "Dependency", "DependencyNeverSatisfied", "None",
     "NonZeroExitCode", "TimeLimit", "ReqNodeNotAvail", "PartitionTimeLimit",
     "QOSMaxJobsPerUserLimit", "AssocGrpCpuLimit", "InvalidAccount", "InvalidQOS",
     "launch failed requeued held", "Prolog", "JobLaunchFailure", "OutOfMemory",
     "SystemFailure", "Reservation"}
)


def normalize_state(text: str | None) -> str | None:
    """First word of a Slurm state, upper-cased, with a cut column (`OUT_OF_ME+`) completed.

    `CANCELLED by 1000` -> `CANCELLED`; `["PENDING", "REQUEUED"]` is handled by callers.
    """
    if text is None:
        return None
    word = text.strip().split(" ", 1)[0].upper() if text.strip() else ""
    if not word:
        return None
    return _uncut(word, KNOWN_STATES)


def cancelled_by(text: str | None) -> int | None:
    """The uid in `CANCELLED by 1000` (None when absent or cut)."""
    if not text:
        return None
    match = re.match(r"\s*CANCELLED\s+by\s+(\d+)\s*$", text, re.IGNORECASE)
    return int(match[1]) if match else None


def normalize_reason(text: str | None) -> str | None:
    """Pending reason as Slurm names it; a cut `JobHeldA+` is completed, `(null)`/empty -> None.

    Keeps `None` (the string) because Slurm uses it for "no reason" on running jobs.
    """
    if text is None:
        return None
    value = text.strip()
    if value.startswith("(") and value.endswith(")") and value != "(null)":
        value = value[1:-1]  # squeue's default format wraps the reason in parentheses
    if not value or value in {"(null)", "n/a"}:
        return None
    return _uncut(value, KNOWN_REASONS)


def _uncut(value: str, known: frozenset[str]) -> str:
    """`value` as Slurm printed it in a column too narrow for it, completed: a value cut to
    its column ends in `+` (`OUT_OF_ME+`), and stands for the one `known` value that starts
    with the rest; with none or several, the rest alone. A value not cut is itself."""
    if not value.endswith("+"):
        return value
    stem = value.rstrip("+")
    matches = [k for k in known if k.startswith(stem)]
    return matches[0] if len(matches) == 1 else stem
