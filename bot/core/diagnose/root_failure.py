"""Which failure a failed job's log shows first, when several show (pure; no file or clock
access), for the decision (bot.core.diagnose.decide): a rank SIGKILLed before its peers'
collectives timed out (`rank_killed_first`: its host OOM, not the NCCL timeout, is the cause),
a run stopped on a non-finite loss before the scheduler ended it (`stopped_on_non_finite`), and
an NCCL remote error whose cause the log names, of which the reporting rank's abort is a symptom
(`remote_error_symptom`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bot.core.detectors import no_progress_after
from bot.core.diagnose.ending import remote_error_cause
from bot.core.metrics import MetricSeries

# torchrun's summary of the failure it observed first (its ChildFailedError's `Root Cause
# (first observed failure):` entry, time, host, rank, exitcode, error_file and traceback lines
# after it), which names the rank that died first whatever order the ranks' lines came in.
_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\)")
_ROOT_CAUSE_LINES = 8


def rank_killed_first(matches: Sequence[Any], primary: Sequence[Any],
                      series: MetricSeries) -> Any | None:
    """The report of a rank SIGKILLed (a host_oom hint after the last progress line: srun's
    `task 0: Killed`, torchrun's `exitcode: -9` / `Signal 9 (SIGKILL)`, mpirun's `exited on
    signal 9 (Killed)`) before the first NCCL watchdog line, or in the entry of torchrun's
    `Root Cause (first observed failure)` (its first `_ROOT_CAUSE_LINES` lines), whatever the
    order of the ranks' lines: that rank died first and its peers' collectives timed out
    waiting for it. None when there is no such report."""
    first_abort = min(m.line_no for m in primary if m.class_id == "nccl_timeout")
    roots = [m.line_no for m in matches if _ROOT_CAUSE.search(m.text)]
    after = series.last_iteration_line or 0
    return next((m for m in matches if not m.primary and m.class_id == "host_oom"
                 and m.line_no > after and (m.line_no < first_abort or any(
                     r < m.line_no <= r + _ROOT_CAUSE_LINES for r in roots))), None)


def stopped_on_non_finite(primary: Sequence[Any], series: MetricSeries, scheduled: str) -> bool:
    """Did training stop at its last non-finite signature (a `nan_loss` primary match) before
    the scheduler ended the job in the class `scheduled`: no training progress after it
    (`no_progress_after`: a bar Lightning draws again at its count is none), or it is the last
    progress line itself (`iter 500 loss: nan`, then nothing), and no line of that class before
    it (slurmstepd's `DUE TO PREEMPTION` then a NaN is a run the preemption stopped)?"""
    last = max((m.line_no for m in primary if m.class_id == "nan_loss"), default=None)
    return last is not None and (last == series.last_iteration_line
                                 or no_progress_after(last, series)) and not any(
        m.class_id == scheduled and m.line_no < last for m in primary)


def remote_error_symptom(
    chosen: str, matches: Sequence[Any], tail: Sequence[tuple[int, str]], series: MetricSeries
) -> bool:
    """The log's NCCL remote error (`ncclRemoteError`) names the cause that was chosen (the
    fabric's fault, another rank's error): the reporting rank's abort (sacct's SIGABRT, exit
    134), which accounting reads as an NCCL timeout, is that cause's symptom, not a second
    class."""
    cause = remote_error_cause(matches, tail, series)
    return cause is not None and cause.class_id == chosen
