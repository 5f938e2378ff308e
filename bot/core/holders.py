"""Lease holder ids, and whether a holder is provably dead (pure: the caller reads /proc).

A replica's holder id is `<host>:<pid>:<random>:<boot id>:<pid namespace>:<start>`: its
hostname, its pid, 8 random hex digits (a new id per process), the kernel's boot id
(/proc/sys/kernel/random/boot_id), its pid namespace (the inode of /proc/self/ns/pid) and the
time it started, in clock ticks since boot (/proc/<pid>/stat field 22); a fact that could not
be read is `-`. Ids made before these facts were recorded are `<host>:<pid>:<random>`.

A process on the same host, boot and pid namespace can prove such a holder dead: no process
has its pid any more, the pid is a process started at another time (the pid was reused), or
it is the holder and it has exited (a zombie not yet reaped). Anything else (another host, an
earlier boot, another pid namespace, an old or malformed id, a pid that cannot be looked at,
the holder alive) proves nothing: its lease lapses after its TTL, as any lease does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

UNKNOWN = "-"  # a fact of a holder id that could not be read


@dataclass(frozen=True)
class Machine:
    """Where a process runs, as far as pids go: a pid names one process on one host, in one
    boot, within one pid namespace."""

    host: str
    boot_id: str
    pid_ns: str


@dataclass(frozen=True)
class Holder:
    """A holder id's facts (`parse_holder`)."""

    machine: Machine
    pid: int
    token: str
    start: int  # clock ticks since boot


@dataclass(frozen=True)
class ProcStat:
    """What /proc/<pid>/stat says of a process: its state letter (field 3: R, S, D, Z, …) and
    when it started, in clock ticks since boot (field 22)."""

    state: str
    start: int


# What the machine shows of a pid now: its process, no process at all, or nothing sure (it
# could not be read: permissions, hidepid, no /proc).
PidNow = ProcStat | Literal["gone", "unknown"]

_EXITED = {"Z", "X"}  # zombie (exited, not yet reaped), dead


class Death(Enum):
    """Why a holder is provably dead."""

    GONE = "no process has its pid any more"
    REUSED = "its pid now belongs to a process started at another time"
    EXITED = "its process has exited (not yet reaped)"


def format_holder(host: str, pid: int, token: str, machine: Machine | None,
                  start: int | None) -> str:
    """The holder id of process `pid` on `host` (see module doc); `machine` and `start` None
    when they could not be read (such an id is never judged dead)."""
    boot, ns = (machine.boot_id, machine.pid_ns) if machine is not None else (UNKNOWN, UNKNOWN)
    return ":".join([host, str(pid), token, boot, ns, UNKNOWN if start is None else str(start)])


def holder_label(text: str) -> str:
    """Holder id `text` as people and dashboards read it (log lines, the
    `trainbot_lease_holder` metric's label): `<host>:<pid>:<random>`, which names one process
    of one host; the facts after it, which only the takeover judgement reads, are left out
    (the store keeps the whole id). An id of another form, as it is."""
    parts = text.split(":")
    return ":".join(parts[:3]) if len(parts) == 6 else text


def parse_holder(text: str) -> Holder | None:
    """The facts of holder id `text`; None for an id that cannot be judged: of the old form
    (`host:pid:random`), malformed, or with a fact that could not be read (`-`)."""
    parts = text.split(":")
    if len(parts) != 6:
        return None
    host, pid, token, boot, ns, start = parts
    if not host or not token or UNKNOWN in (boot, ns, start) or not boot or not ns:
        return None
    if not (pid.isdigit() and start.isdigit()) or int(pid) < 1:
        return None
    return Holder(Machine(host, boot, ns), int(pid), token, int(start))


def parse_proc_stat(text: str) -> ProcStat | None:
    """/proc/<pid>/stat's state and start time; None if it is not of that shape. The command
    name (field 2, in parentheses) may hold spaces and parentheses: the fields after it are
    counted from its last `)`."""
    _, paren, rest = text.rpartition(")")
    fields = rest.split()
    if not paren or len(fields) < 20 or not fields[19].isdigit():
        return None
    return ProcStat(state=fields[0], start=int(fields[19]))  # fields 3 and 22


def holder_death(holder: str, here: Machine | None, pid_now: PidNow | None) -> Death | None:
    """Why lease holder `holder` is provably dead, as judged by a process on machine `here`
    (None: its facts could not be read) that found `pid_now` at the holder's pid (None: it did
    not look); None when that is not proven (see module doc), and the lease must lapse."""
    recorded = parse_holder(holder)
    if recorded is None or here is None or recorded.machine != here or pid_now is None:
        return None
    if pid_now == "gone":
        return Death.GONE
    if pid_now == "unknown":
        return None
    if pid_now.start != recorded.start:
        return Death.REUSED
    if pid_now.state in _EXITED:
        return Death.EXITED
    return None


def pid_to_look_at(holder: str, here: Machine | None) -> int | None:
    """The pid whose process decides whether `holder` is dead, when a process on `here` can
    judge it at all (`holder_death`); None when it cannot, and nothing need be read."""
    recorded = parse_holder(holder)
    if recorded is None or here is None or recorded.machine != here:
        return None
    return recorded.pid
