"""The class decisive evidence names, as the decision (bot.core.diagnose.decide) weighs it:
the classes Slurm's accounting decides (`deciding_accounting`: a State always, an exit code or
signal only with a log hint of the same class), whether a FAILED job's exit status names no
cause (`exit_names_no_cause`: then the log's ending is read, by hint), the one class chosen
among the decisive ones (`choose_class`: the scheduler's verdicts first, then the catalogue's
`class_priority`), and a job that ended while it waited in the queue, judged from its
accounting alone (`never_started`). Pure: no file or clock access.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from typing import Any

from bot.core.diagnose.cause import EndedWaiting, case_detail
from bot.core.models import (
    ACCOUNTING,
    Accounting,
    Action,
    Diagnosis,
    DiagnosisMetrics,
    NeverStarted,
)

#: The scheduler's verdicts, which explain a job's end even when its log shows collateral
#: errors: chosen first.
ACCOUNTING_FIRST = ("node_failure", "preempted", "time_limit")
_WRAPPER = re.compile(
    r"ChildFailedError|exitcode\s*:\s*-6|Signal 6 \(SIGABRT\)|Fatal Python error: Aborted"
)


def never_started(catalogue: Any, acct: Accounting, never: NeverStarted,
                  target_iter: int | None) -> Diagnosis:
    """A job that ended while it waited in the queue (`never`, its accounting's): it ran nothing, so
    no log line is its own (a file at its path is an earlier job's) and nothing was lost. The
    class is the one its State gives (unknown_failure for CANCELLED or FAILED, time_limit for
    DEADLINE, node_failure for BOOT_FAIL), decided by accounting, with the never_started detail
    (the State, who cancelled it, why it was pending); a person decides whether to submit it
    again: never resubmitted by itself (action ask, not retryable), charging no retry (nothing
    ran). No hint: every class's speaks of a run and its log."""
    chosen = choose_class(catalogue, set(), deciding_accounting(catalogue, acct, []), acct) \
        or "unknown_failure"
    cls = catalogue.classes.get(chosen)
    return Diagnosis(
        class_id=chosen,
        action=Action.ASK,
        retryable=False,
        charges_budget=False,
        hint="",
        title=cls.title if cls is not None else "",
        detail=case_detail(EndedWaiting(acct.state, never)),
        translations=dict(getattr(cls, "translations", None) or {}),
        site_title=bool(getattr(cls, "site_title", False)),
        metrics=DiagnosisMetrics(target_iter=target_iter),
        decided_by=ACCOUNTING,
    )


def deciding_accounting(catalogue: Any, acct: Accounting, matches: Sequence[Any]) -> list[str]:
    """Classes sacct decides: a State (OUT_OF_MEMORY, TIMEOUT, ...) always; an exit code or
    signal (137, 9, 6) only when the log has a hint of the same class that is not a mere
    wrapper line (`ChildFailedError`, `exitcode: -6`, `Signal 6 (SIGABRT)`)."""
    if not acct.says_how_it_ended:
        return []
    logged = {m.class_id for m in matches if not _WRAPPER.search(m.text)}
    out = []
    for am in catalogue.accounting_matches(acct.state, acct.exit_code, acct.signal,
                                           exit_code_mod_128=acct.exit_code_mod_128):
        if am.class_id in catalogue.classes and (am.primary or am.class_id in logged):
            out.append(am.class_id)
    return list(dict.fromkeys(out))


def exit_names_no_cause(catalogue: Any, acct: Accounting) -> bool:
    """A FAILED job whose exit status says it failed, not why: an exit code no class claims
    (1, 2, 255; not 137 or 135, which name a kill and a bus error; a `sacct -P` code that may
    stand for one of them, 9 for 137, names none for sure) and no signal, or an
    abort (SIGABRT, exit 134). An abort is how any native fatal error ends (a failed CHECK or
    assert, an uncaught C++ exception, CUDA's out of memory in C code); it reads as an NCCL
    timeout only with the watchdog's evidence, which a primary signature decides first."""
    if acct.state != "FAILED":
        return False
    if acct.signal == signal.SIGABRT or (
            acct.signal in (0, None) and 134 in acct.exit_code_candidates):
        return True
    # sacct's `-P` 7 may be 7 or 135: it names a cause only when each status it may be does
    return acct.signal in (0, None) and not all(
        any(not am.primary for am in catalogue.accounting_matches(None, status, None))
        for status in acct.exit_code_candidates or (None,))


def class_priority(catalogue: Any, class_id: str) -> int:
    cls = catalogue.classes.get(class_id)
    return int(getattr(cls, "priority", 0)) if cls is not None else 0


def choose_class(
    catalogue: Any, failed: set[str], state_classes: list[str], acct: Accounting
) -> str | None:
    """The class from decisive evidence, or None when only detectors can tell."""
    decisive = set(failed)
    for cid in state_classes:
        if cid not in ("completed", "unknown_failure"):
            decisive.add(cid)
    # Scheduler verdicts explain the end even when the log shows collateral errors.
    for cid in ACCOUNTING_FIRST:
        if cid in state_classes:
            return cid
    if not decisive:
        return None
    return max(decisive, key=lambda c: class_priority(catalogue, c))
