"""A PBS or Torque job's end as its epilogue or accounting record states it: the exit status
and the memory used against the memory requested.

PBS Pro, OpenPBS and Torque print no `OOM` line when a job dies of its memory limit; the
facts are in the summary the site's epilogue appends to the job's output (Torque hands the
epilogue the requested limits, the resources used and the exit code as its arguments 6, 7
and 10: `Limits: ...,mem=4gb,...`, `Resources: cput=...,mem=4823312kb,...`, `Exit Value: 137`;
PBS Pro sites print `Memory Requested: 4.0GB  Memory Used: 4.8GB` and `Exit Status: 271`), or
in the accounting record `tracejob` and `qstat -f` show (`Exit_status=137`,
`Resource_List.mem=4gb`, `resources_used.mem=4823312kb`). A job killed by a signal (exit
status 128 + N, or PBS Pro's 256 + N: 137, 143, 265, 271) whose memory used is over its
request died of that request; the exit status alone names no cause (a SIGKILL is only a hint,
the catalogue's). Pure: no file or clock access.

The epilogue ends the job's output, but an MPI launcher's or the batch script's own lines may
follow it; the scan (bot.core.diagnose.scan) keeps the lines that look like one
(`EPILOGUE_LINE`) among the log's last `EPILOGUE_REACH` lines, and the facts are read from one
block: within `_BLOCK_LINES` lines of the exit status.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.units import parse_size

#: Exit statuses of a job killed by SIGKILL or SIGTERM: the shell's 128 + N, PBS Pro's 256 + N.
KILLED_STATUSES = frozenset({137, 143, 265, 271})

_SIZE = r"([0-9]+(?:\.[0-9]+)?) ?([KkMmGgTt]i?[Bb]|[Bb])"
_EXIT_STATUS = re.compile(
    r"(?:\bExit_status\s*=\s*|\b(?:Job )?Exit (?:[Ss]tatus|[Cc]ode|[Vv]alue)\s*:\s*)(-?[0-9]+)\b")
# PBS Pro sites' epilogue table (`Memory Requested: 4.0GB   Memory Used: 4.8GB`, either order,
# on one line or two)
_REQUESTED = re.compile(r"\bMemory [Rr]equested\s*:\s*" + _SIZE)
_USED = re.compile(r"\bMemory [Uu]sed\s*:\s*" + _SIZE)
# the accounting record's attributes (tracejob, qstat -f, the server's accounting log)
_LIST_MEM = re.compile(r"\bResource_List\.mem\s*=\s*" + _SIZE)
_USED_MEM = re.compile(r"\bresources_used\.mem\s*=\s*" + _SIZE)
# Torque's epilogue arguments as a site's epilogue prints them: the limits' and the resources'
# lists (`mem=`, not `vmem=` or `pmem=`)
_LIMITS = re.compile(r"^\s*(?:Resource )?Limits\s*:\s*(.*)$")
_RESOURCES = re.compile(r"^\s*Resources(?: Used)?\s*:\s*(.*)$")
_LIST_ENTRY_MEM = re.compile(r"(?:^|[,\s])mem=" + _SIZE)
#: How far back from the log's end an epilogue or accounting record is looked for.
EPILOGUE_REACH = 200
#: A line that may state one of the facts (a cheap filter: the patterns above decide).
EPILOGUE_LINE = re.compile(r"Exit_status|Exit (?:[Ss]tatus|[Cc]ode|[Vv]alue)|Memory [RrUu]"
                           r"|Resource_List\.mem|resources_used\.mem|Limits\s*:|Resources")
# The exit status and the memory figures of one epilogue or record are this close together.
_BLOCK_LINES = 40


@dataclass(frozen=True)
class EpilogueMemoryKill:
    """A PBS or Torque job killed by a signal with more memory used than it requested, as the
    epilogue or accounting record in its log states (`lines`: those lines, numbered)."""

    exit_status: int
    used_bytes: int
    requested_bytes: int
    lines: tuple[tuple[int, str], ...]


def epilogue_memory_kill(tail: Sequence[tuple[int, str]]) -> EpilogueMemoryKill | None:
    """The epilogue or accounting record in the log's last lines (`tail`, numbered, in order:
    the last exit status and the memory figures within `_BLOCK_LINES` lines of it, whatever
    follows) of a job killed by a signal (an exit status of `KILLED_STATUSES`) whose memory used
    is over its memory requested; None when the lines lack one of the three facts or the memory
    used is within the request."""
    last_status = next((n for n, text in reversed(tail) if _EXIT_STATUS.search(text)), None)
    if last_status is None:
        return None
    status = used = requested = None
    lines: dict[int, str] = {}
    for n, text in tail:
        if abs(n - last_status) > _BLOCK_LINES:
            continue
        if (m := _EXIT_STATUS.search(text)) is not None:
            status = (int(m.group(1)), n, text)
        for pattern, kind in ((_REQUESTED, "requested"), (_LIST_MEM, "requested"),
                              (_USED, "used"), (_USED_MEM, "used")):
            if (m := pattern.search(text)) is not None:
                size = (_bytes(m.group(1), m.group(2)), n, text)
                if kind == "used":
                    used = size
                else:
                    requested = size
        for pattern, kind in ((_LIMITS, "requested"), (_RESOURCES, "used")):
            if (listed := pattern.match(text)) and (
                    m := _LIST_ENTRY_MEM.search(listed.group(1))) is not None:
                size = (_bytes(m.group(1), m.group(2)), n, text)
                if kind == "used":
                    used = size
                else:
                    requested = size
    if status is None or used is None or requested is None:
        return None
    if status[0] not in KILLED_STATUSES or used[0] <= requested[0]:
        return None
    for _, n, text in (status, used, requested):
        lines[n] = text
    return EpilogueMemoryKill(exit_status=status[0], used_bytes=used[0],
                              requested_bytes=requested[0], lines=tuple(sorted(lines.items())))


def _bytes(number: str, unit: str) -> int:
    """Bytes in a PBS size (`4823312kb`, `4.8GB`, `4gb`, `512b`)."""
    if unit in ("b", "B"):
        return int(float(number))
    return parse_size(number + unit)
