"""`trainbot sampler`: a psutil sidecar that records a job's process-tree RSS and CPU by role."""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import psutil

from bot.core.sampler_series import ProcFacts, TrainerGenerations, classify_roles, sample_record

DEFAULT_INTERVAL_S = 10.0
TOP_PROCESSES = 12
_HAVE_PROC = os.path.exists("/proc/self/stat")


def _proc_table() -> dict[int, tuple[int, int]] | None:
    """pid -> (ppid, start time in clock ticks) for every process, from /proc/PID/stat.

    One small read per process on the node (psutil's children() does the same scan plus a
    Process object, and two more reads, per descendant). None if /proc cannot be listed.
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    table: dict[int, tuple[int, int]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue  # exited meanwhile
        # comm may hold spaces and parentheses: the fields start after the LAST ')'.
        fields = data[data.rfind(b")") + 2 :].split()
        try:
            table[int(name)] = (int(fields[1]), int(fields[19]))
        except (IndexError, ValueError):
            continue
    return table


@dataclass
class _Tracked:
    proc: psutil.Process
    name: str
    cmdline: tuple[str, ...]
    ppid: int


class TreeSampler:
    """Samples one process tree; keeps psutil.Process objects between samples."""

    def __init__(self, root_pid: int, *, self_pid: int | None = None, top: int = TOP_PROCESSES):
        self.root = psutil.Process(root_pid)
        # the run this tree is (a requeued job's batch script runs again: another root)
        self.root_id = (root_pid, self.root.create_time())
        self.self_pid = os.getpid() if self_pid is None else self_pid
        self.top = top
        self._tracked: dict[int, _Tracked] = {}
        self._start: dict[int, int] = {}  # pid -> start time (clock ticks) from /proc/PID/stat
        self._me = psutil.Process(self.self_pid) if self.self_pid == os.getpid() else None
        self.errors = 0
        self.generations = TrainerGenerations()  # an elastic launcher's restarts of trainers

    def alive(self) -> bool:
        """Is the root still the same running process (not a zombie, pid not reused)?"""
        try:
            return self.root.is_running() and self.root.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def _processes(self) -> list[psutil.Process]:
        """The root and its descendants now; known processes keep their Process object."""
        table = _proc_table() if _HAVE_PROC else None
        if table is None:
            return self._processes_psutil()
        kids: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            kids.setdefault(ppid, []).append(pid)
        out = [self.root]
        stack = list(kids.get(self.root.pid, ()))
        while stack:
            pid = stack.pop()
            stack.extend(kids.get(pid, ()))
            known = self._tracked.get(pid)
            if known is not None and self._start.get(pid) == table[pid][1]:
                out.append(known.proc)  # same pid, same start time: the same process
                continue
            try:
                proc = psutil.Process(pid)
            except psutil.Error:
                continue
            self._start[pid] = table[pid][1]
            out.append(proc)
        return out

    def _processes_psutil(self) -> list[psutil.Process]:
        """Portable path (no /proc): psutil's recursive children, objects reused."""
        try:
            children = self.root.children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        out = [self.root]
        for child in children:
            known = self._tracked.get(child.pid)
            # psutil.Process equality is (pid, create time): a reused pid is a new process.
            out.append(known.proc if known is not None and known.proc == child else child)
        return out

    def sample(self, now: float | None = None) -> dict[str, Any]:
        """One JSON-able record of the tree now."""
        t = time.time() if now is None else now
        rows: list[tuple[ProcFacts, int, float | None]] = []
        started: dict[int, float] = {}  # pid -> create time: a reused pid is another process
        seen: dict[int, _Tracked] = {}
        for proc in self._processes():
            try:
                with proc.oneshot():
                    name = proc.name()
                    ppid = proc.ppid()
                    cpu = proc.cpu_percent(None)
                    rss = proc.memory_info().rss
                    started[proc.pid] = proc.create_time()  # psutil's, kept since Process()
                known = self._tracked.get(proc.pid)
                fresh = known is None or known.proc is not proc
                if known is not None and not fresh and known.name == name:
                    cmdline = known.cmdline
                else:
                    cmdline = tuple(proc.cmdline())  # new, exec'd or renamed: read it again
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue  # exited between listing and reading
            except psutil.AccessDenied:
                continue
            # cpu_percent's first call for a process has nothing to compare with.
            cpu_value = None if fresh else cpu
            seen[proc.pid] = _Tracked(proc, name, cmdline, ppid)
            rows.append((ProcFacts(proc.pid, ppid, name, cmdline), rss, cpu_value))
        self._tracked = seen
        self._start = {pid: t for pid, t in self._start.items() if pid in seen}
        roles = classify_roles((f for f, _, _ in rows), self_pid=self.self_pid)
        generation = self.generations.see(
            (pid, started[pid]) for pid, role in roles.items() if role == "trainer")
        sampler_cpu = None
        if self._me is not None:
            ct = self._me.cpu_times()
            sampler_cpu = ct.user + ct.system
        errors, self.errors = self.errors, 0
        return sample_record(t, rows, roles, top=self.top, sampler_cpu_s=sampler_cpu,
                             errors=errors, root=self.root_id, generation=generation)


def run_sampler(
    out: IO[str],
    *,
    root_pid: int,
    interval_s: float = DEFAULT_INTERVAL_S,
    max_samples: int | None = None,
    stop: threading.Event | None = None,
    log: Callable[[str], None] | None = None,
) -> int:
    """Sample until the root exits, `stop` is set or `max_samples` were written; returns 0.

    Each line is written and flushed; an exception in one sample is counted, never raised.
    """
    stop = stop or threading.Event()
    log = log or (lambda msg: None)
    try:
        sampler = TreeSampler(root_pid)
    except psutil.Error as exc:
        log(f"trainbot sampler: process {root_pid} is not running ({exc}); nothing to sample")
        return 0
    written = 0
    warned: set[str] = set()
    next_at = time.monotonic()
    while not stop.is_set():
        if not sampler.alive():
            break
        try:
            record = sampler.sample()
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            out.flush()
            written += 1
        except Exception as exc:  # noqa: BLE001 - the sidecar must never take the job down
            sampler.errors += 1
            kind = type(exc).__name__
            if kind not in warned:  # one stderr line per kind of error, not one per sample
                warned.add(kind)
                log(f"trainbot sampler: sample failed ({kind}: {exc}); continuing")
        if max_samples is not None and written >= max_samples:
            break
        next_at += interval_s
        delay = next_at - time.monotonic()
        if delay < 0:  # fell behind (suspended, overloaded node): skip, don't burst
            next_at = time.monotonic()
            delay = 0.0
        stop.wait(delay)
    return 0


def install_stop_handlers(stop: threading.Event) -> None:
    """SIGTERM / SIGINT / SIGHUP end the sampler cleanly (Slurm sends SIGTERM at job end)."""

    def handler(signum: int, frame: object) -> None:  # noqa: ARG001
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread / not supported
            pass


def be_nice(increment: int = 10) -> None:
    """Lower our CPU priority; ignore failures (some sites forbid it)."""
    try:
        os.nice(increment)
    except OSError:
        pass


MIN_INTERVAL_S = 0.1
HELP = ("Record a job's process-tree RSS and CPU by role (trainer / DataLoader worker / other) "
        "as JSON lines; run it in the background from the batch script.")


def _parsed(text: str, kind: type[float] | type[int], what: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: not {what}") from None


def _interval(text: str) -> float:
    value = _parsed(text, float, "a number of seconds")
    if not (MIN_INTERVAL_S <= value < math.inf):  # refuses nan and inf too
        raise argparse.ArgumentTypeError(f"{text}: use at least {MIN_INTERVAL_S} seconds")
    return float(value)


def _count(text: str) -> int:
    value = _parsed(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: use a positive number of samples")
    return int(value)


def _pid(text: str) -> int:
    value = _parsed(text, int, "a process id")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: not a process id")
    return int(value)


def _out(text: str) -> str:
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"{text}: directory {parent} does not exist")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The sampler's options, for `trainbot sampler` and `python -m bot.probes.sampler` alike."""
    parser.add_argument("--out", required=True, type=_out, metavar="FILE",
                        help="JSON-lines file to append to (created if missing)")
    parser.add_argument("--interval", type=_interval, default=DEFAULT_INTERVAL_S, metavar="S",
                        help=f"seconds between samples (default {DEFAULT_INTERVAL_S:g}; "
                             f"at least {MIN_INTERVAL_S})")
    parser.add_argument("--pid", type=_pid, default=None, metavar="PID",
                        help="root of the tree to sample (default: the sampler's parent)")
    parser.add_argument("--count", type=_count, default=None, metavar="N",
                        help="stop after N samples (default: until the root exits)")


def run_command(args: argparse.Namespace, prog: str) -> int:
    """Sample as the parsed options say; 2 if the output cannot be opened."""
    try:
        return main_loop(args.out, interval_s=args.interval, root_pid=args.pid,
                         max_samples=args.count)
    except OSError as exc:
        print(f"{prog}: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    """`python -m bot.probes.sampler`: the same options as `trainbot sampler`, for a job whose
    PATH lacks the `trainbot` script; it imports only this module and core's sampler_series."""
    parser = argparse.ArgumentParser(prog="python -m bot.probes.sampler", description=HELP)
    add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    return run_command(parser.parse_args(argv), parser.prog)


def main_loop(out_path: str, *, interval_s: float, root_pid: int | None,
              max_samples: int | None = None) -> int:
    """The command's body: open the output (append), nice, handle signals, sample."""
    stop = threading.Event()
    install_stop_handlers(stop)
    be_nice()
    root = root_pid if root_pid is not None else os.getppid()
    with open(out_path, "a", encoding="utf-8", buffering=1) as out:
        return run_sampler(
            out,
            root_pid=root,
            interval_s=interval_s,
            max_samples=max_samples,
            stop=stop,
            log=lambda msg: print(msg, file=sys.stderr, flush=True),
        )


if __name__ == "__main__":
    sys.exit(main())
