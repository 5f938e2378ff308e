"""This machine's processes as /proc shows them, for judging lease holders
(bot.core.holders): this process's machine and start time, and what has a given pid now.
Every read that fails says so (None, "unknown"): nothing is then judged dead."""

from __future__ import annotations

import os
import socket

from bot.core.holders import Machine, PidNow, ProcStat, parse_proc_stat

PROC = "/proc"


class ProcFS:
    """The reads of /proc (`root`: another directory of its shape, in tests)."""

    def __init__(self, root: str = PROC) -> None:
        self.root = root

    def _read(self, *path: str) -> str:
        with open(os.path.join(self.root, *path), encoding="ascii", errors="replace") as f:
            return f.read()

    def machine(self) -> Machine | None:
        """This process's host, boot id and pid namespace; None if /proc cannot tell them,
        or is not of this process's pid namespace (its `self` is not our pid)."""
        try:
            if os.readlink(os.path.join(self.root, "self")) != str(os.getpid()):
                return None
            boot = self._read("sys", "kernel", "random", "boot_id").strip()
            ns = os.readlink(os.path.join(self.root, "self", "ns", "pid"))
        except (OSError, ValueError):
            return None
        ns = ns.removeprefix("pid:[").removesuffix("]")
        return Machine(socket.gethostname(), boot, ns) if boot and ns else None

    def own_start(self) -> int | None:
        """When this process started (clock ticks since boot); None if it cannot be read."""
        found = self.pid_now(os.getpid())
        return found.start if isinstance(found, ProcStat) else None

    def pid_now(self, pid: int) -> PidNow:
        """What has pid `pid` now: its process's state and start time, "gone" when no process
        has it (checked with signal 0, so a process /proc hides, hidepid, is not taken for
        gone), "unknown" when that cannot be told."""
        if pid < 1:
            return "unknown"
        try:
            stat = parse_proc_stat(self._read(str(pid), "stat"))
        except FileNotFoundError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return "gone"
            except OSError:
                return "unknown"  # EPERM: another user's process
            return "unknown"  # it exists, /proc does not show it
        except (OSError, ValueError):
            return "unknown"
        return stat if stat is not None else "unknown"
