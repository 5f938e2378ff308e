"""`trainbot sampler` data, pure: the role each process of a job plays, and the sampler's
JSON lines as series."""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

ROLES = ("trainer", "worker", "other")
SCHEMA_VERSION = 1

_PYTHON_RE = re.compile(r"^python[0-9.]*$|^pypy[0-9.]*$")
# Programs (argv[0] or the script/module run by Python) that launch or serve the trainers.
_LAUNCHER_PROGRAMS = frozenset({
    "torchrun", "accelerate", "deepspeed", "mpirun", "mpiexec", "srun", "trainbot",
    "torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch",
    "deepspeed.launcher.runner", "deepspeed.launcher.launch",
})
# Text inside the first arguments of multiprocessing / torch helper processes.
_HELPER_WORDS = (
    "multiprocessing.resource_tracker",
    "multiprocessing.semaphore_tracker",
    "multiprocessing.forkserver",
    "compile_worker",  # torch._inductor.compile_worker subprocess pool
)
_LAUNCHER_NAMES = frozenset({"pt_elastic", "torchrun", "srun", "mpirun", "deepspeed",
                             "accelerate", "trainbot"})


@dataclass(frozen=True)
class ProcFacts:
    """What the classifier needs about one process (the sampler reads it with psutil)."""

    pid: int
    ppid: int
    name: str
    cmdline: tuple[str, ...] = ()


def is_python(p: ProcFacts) -> bool:
    """A Python interpreter (or a torch-named Python thread such as `pt_data_worker`)."""
    if _PYTHON_RE.match(p.name) or p.name.startswith("pt_"):
        return True
    if p.cmdline:
        return bool(_PYTHON_RE.match(os.path.basename(p.cmdline[0])))
    return False


def _program(cmdline: tuple[str, ...]) -> tuple[str, str]:
    """(program, what it runs): argv[0]'s base name, and for an interpreter the `-m` module,
    the `-c` code or the script path — never the training script's own arguments."""
    if not cmdline:
        return "", ""
    prog = os.path.basename(cmdline[0])
    if not _PYTHON_RE.match(prog):
        return prog, ""
    args = iter(cmdline[1:])
    for arg in args:
        if arg in ("-m", "-c"):
            return prog, next(args, "")
        if arg.startswith("-m") or arg.startswith("-c"):
            return prog, arg[2:]
        if arg.startswith("-"):
            if arg in ("-W", "-X", "-Q"):
                next(args, None)  # an option that takes a value
            continue
        return prog, arg
    return prog, ""


def _is_launcher(p: ProcFacts) -> bool:
    """torchrun & co. or a multiprocessing / torch helper, from the program it runs."""
    if p.name in _LAUNCHER_NAMES:
        return True
    prog, runs = _program(p.cmdline)
    if prog in _LAUNCHER_PROGRAMS or os.path.basename(runs) in _LAUNCHER_PROGRAMS:
        return True
    return any(w in runs or w in prog for w in _HELPER_WORDS)


def _is_spawned(p: ProcFacts) -> bool:
    text = " ".join(p.cmdline)
    return "spawn_main" in text or "--multiprocessing-fork" in text


def classify_roles(procs: Iterable[ProcFacts], *, self_pid: int | None = None) -> dict[int, str]:
    """pid -> `trainer` | `worker` | `other` for the processes of one job tree (the rules, in
    order: docs/architecture.md)."""
    by_pid = {p.pid: p for p in procs}
    roles: dict[int, str] = {}
    for p in by_pid.values():
        if p.pid == self_pid:
            roles[p.pid] = "other"
        elif p.name.startswith("pt_data_worker"):
            roles[p.pid] = "worker"
        elif not is_python(p) or _is_launcher(p):
            roles[p.pid] = "other"
    # Parents of named workers are trainers whatever else they look like (rule 4).
    for p in by_pid.values():
        if roles.get(p.pid) == "worker" and p.ppid in by_pid and p.ppid not in roles:
            roles[p.ppid] = "trainer"
    launchers: set[int] = set()
    for p in by_pid.values():
        if p.pid in roles:
            continue
        parent = by_pid.get(p.ppid)
        if _is_spawned(p):
            roles[p.pid] = "trainer"
            if parent is not None and parent.pid not in roles:
                launchers.add(parent.pid)
        elif (parent is not None and is_python(parent) and parent.cmdline == p.cmdline
              and roles.get(parent.pid, "trainer") == "trainer"):
            roles[p.pid] = "worker"
    for pid in launchers:
        roles[pid] = "other"
    for p in by_pid.values():
        roles.setdefault(p.pid, "trainer")
    return roles


@dataclass
class TrainerGenerations:
    """Counts the times a job tree's trainers were all replaced: an elastic launcher
    (torchrun's `--max-restarts`, DeepSpeed's elastic agent) kills every trainer after a
    failure and starts new ones under the same batch script, whose memory starts again.

    `see` takes the trainers of one sample as (pid, start time) pairs (a pid reused by a
    new process is another trainer). A sample with trainers none of which were among the
    last trainers seen starts the next generation; a sample with none (between a restart's
    kill and its new trainers) changes nothing, and a partial change (one trainer of eight
    replaced, the rest still there) is the same generation."""

    generation: int = 0
    _last: frozenset[tuple[int, float]] = frozenset()

    def see(self, trainers: Iterable[tuple[int, float]]) -> int:
        now = frozenset(trainers)
        if now:
            if self._last and not now & self._last:
                self.generation += 1
            self._last = now
        return self.generation


# --------------------------------------------------------------------------- lines


def sample_record(
    t: float,
    procs: Iterable[tuple[ProcFacts, int, float | None]],
    roles: Mapping[int, str],
    *,
    top: int = 12,
    sampler_cpu_s: float | None = None,
    errors: int = 0,
    root: tuple[int, float] | None = None,
    generation: int | None = None,
) -> dict[str, object]:
    """The JSON object of one sample from (facts, rss bytes, cpu %) per process.

    `per_process` keeps the `top` processes by RSS (bounded line size on 40-worker jobs).
    `root`: the sampled tree's root process (pid, start time in epoch seconds): the batch
    script's run, which a requeued job's next run starts again (`SamplerSeries.run_start`).
    `generation`: how many times the tree's trainers were all replaced (`TrainerGenerations`:
    an elastic launcher's restart inside one batch script run).
    """
    rss = dict.fromkeys(ROLES, 0)
    cpu = dict.fromkeys(ROLES, 0.0)
    n = dict.fromkeys(ROLES, 0)
    rows = []
    for facts, r, c in procs:
        role = roles.get(facts.pid, "other")
        rss[role] += int(r)
        cpu[role] += float(c or 0.0)
        n[role] += 1
        rows.append((int(r), facts, role, c))
    rows.sort(key=lambda x: -x[0])
    record: dict[str, object] = {
        "v": SCHEMA_VERSION,
        "t": round(t, 3),
        "rss": rss,
        "cpu": {k: round(v, 1) for k, v in cpu.items()},
        "n": n,
        "per_process": [
            {"pid": f.pid, "ppid": f.ppid, "name": f.name, "role": role, "rss": r,
             "cpu": None if c is None else round(c, 1)}
            for r, f, role, c in rows[:top]
        ],
    }
    if root is not None:
        record["root"] = {"pid": root[0], "started": round(root[1], 2)}
    if generation is not None:
        record["gen"] = generation
    if sampler_cpu_s is not None:
        record["sampler_cpu_s"] = round(sampler_cpu_s, 4)
    if errors:
        record["errors"] = errors
    return record


@dataclass(frozen=True)
class SamplerPoint:
    """One sample: epoch time and per-role RSS bytes, CPU % (of one core) and counts."""

    t: float
    rss: Mapping[str, int]
    cpu: Mapping[str, float]
    n: Mapping[str, int]
    trainer_pids: tuple[int, ...] = ()  # of the processes the line lists (the top by RSS)
    root: tuple[int, float] | None = None  # the tree's root (pid, start time); None: not written
    gen: int | None = None  # the trainers' generation in that root's run; None: not written

    @property
    def rss_total(self) -> int:
        return sum(self.rss.values())

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu.values())


def parse_line(line: str | bytes) -> SamplerPoint | None:
    """One JSON line -> SamplerPoint; None for a blank, partial or foreign line."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
        t = float(obj["t"])
        rss = {r: int(obj["rss"].get(r, 0)) for r in ROLES}
        cpu = {r: float(obj.get("cpu", {}).get(r, 0.0)) for r in ROLES}
        n = {r: int(obj.get("n", {}).get(r, 0)) for r in ROLES}
        trainers = tuple(int(p["pid"]) for p in obj.get("per_process") or ()
                         if isinstance(p, dict) and p.get("role") == "trainer")
        written = obj.get("root")
        root = (int(written["pid"]), float(written["started"])) if written else None
        gen = int(obj["gen"]) if obj.get("gen") is not None else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return SamplerPoint(t, rss, cpu, n, trainers, root, gen)


@dataclass
class SamplerSeries:
    """The sampler's points of one job, fed incrementally (the watcher tails the file).

    Bounded: past `max_points` every other point is dropped and the stride doubles, so a
    week-long job keeps an even picture of its whole run.

    A requeued job's batch script runs again and starts a sampler that appends to the same
    file: a point whose root process (`SamplerPoint.root`: pid and start time) is not the
    point's before starts the last run (`run_start`). So does a point whose trainers'
    generation (`SamplerPoint.gen`) is not the point's before: an elastic launcher (torchrun)
    restarted every trainer inside the same batch script, and the new trainers' memory
    starts again. Lines that name no root (an older sampler's) are one run: their pids
    cannot tell runs apart. Each line lists only the top
    processes by RSS, so consecutive lines of one run may list none in common (a tree of
    DataLoader workers that outgrow their trainers and are forked again each epoch), and a
    run in its own PID namespace gets the same pids again; the start times that tell a
    reused pid apart are the sampler's own (`TreeSampler`), not written per process.
    """

    max_points: int = 2048
    points: list[SamplerPoint] = field(default_factory=list)
    bad_lines: int = 0
    stride: int = 1
    # the time of the last run's first point when the file holds more than one run (None:
    # one run, or lines that name no root)
    run_start: float | None = None
    _seen: int = 0
    # the (root, generation) of the last point that named a root
    _run: tuple[tuple[int, float], int | None] | None = None

    def feed_lines(self, lines: Iterable[str | bytes]) -> None:
        for line in lines:
            point = parse_line(line)
            if point is None:
                if (line.strip() if isinstance(line, str) else line.strip()):
                    self.bad_lines += 1
                continue
            if self.points and point.t <= self.points[-1].t:
                continue  # duplicate or out of order (a re-read): keep time increasing
            if point.root is not None:
                run = (point.root, point.gen)
                if self._run is not None and run != self._run:
                    # a new batch script's tree (the job requeued), or new trainers in it
                    self.run_start = point.t
                self._run = run
            self._seen += 1
            if (self._seen - 1) % self.stride:
                continue
            self.points.append(point)
            if len(self.points) > self.max_points:
                self.points = self.points[::2]
                self.stride *= 2

    @property
    def trainer_pids(self) -> tuple[int, ...]:
        """The trainer PIDs of the latest sample (none without a sample)."""
        return self.points[-1].trainer_pids if self.points else ()

    @property
    def latest(self) -> SamplerPoint | None:
        return self.points[-1] if self.points else None

    def times(self) -> list[float]:
        return [p.t for p in self.points]

    def rss(self, role: str) -> list[int]:
        """RSS bytes of one role (`trainer`, `worker`, `other`) or `total`, per point."""
        if role == "total":
            return [p.rss_total for p in self.points]
        return [p.rss[role] for p in self.points]

    def cpu(self, role: str) -> list[float]:
        if role == "total":
            return [p.cpu_total for p in self.points]
        return [p.cpu[role] for p in self.points]

    def between(self, start: float, end: float) -> list[SamplerPoint]:
        return [p for p in self.points if start <= p.t <= end]

    def last_run(self) -> list[SamplerPoint]:
        """The points of the last run (`run_start`): all of them when the file holds one."""
        if self.run_start is None:
            return self.points
        return [p for p in self.points if p.t >= self.run_start]


def cpu_around(
    series: SamplerSeries,
    t: float,
    *,
    now: float | None = None,
    window_s: float = 300.0,
    min_points: int = 2,
) -> tuple[float, float] | None:
    """(median total CPU % in the `window_s` before `t`, median since `t` up to `now`).

    For a stall that began at `t` (the last progress line): 92 % -> 8 % corroborates a hang.
    None when either side has fewer than `min_points` samples.
    """
    before = [p.cpu_total for p in series.between(t - window_s, t)]
    after = [p.cpu_total for p in series.between(t, now if now is not None else float("inf"))
             if p.t > t]
    if len(before) < min_points or len(after) < min_points:
        return None
    return median(before), median(after)


def rss_by_iteration(
    series: SamplerSeries, progress: Sequence[tuple[float, int]], role: str = "total"
) -> list[tuple[int, int]]:
    """Sampler RSS against the training iteration: each sampler point of the last run
    (`SamplerSeries.last_run`) inside the time range of `progress` ((wall time, iteration)
    pairs from the log, sorted) gets the iteration linearly interpolated between the two
    progress points around it. An earlier run's points are left out even where the log's
    progress spans both (an elastic restart writes no run start line): its memory is not
    the one that grows now."""
    prog = sorted((t, it) for t, it in progress)
    if len(prog) < 2:
        return []
    times = [t for t, _ in prog]
    out = []
    for p in series.last_run():
        if p.t < times[0] or p.t > times[-1]:
            continue
        k = bisect.bisect_left(times, p.t)
        t1, i1 = prog[k]
        t0, i0 = prog[max(0, k - 1)]
        it = i1 if t1 == t0 else i0 + (i1 - i0) * (p.t - t0) / (t1 - t0)
        rss = p.rss_total if role == "total" else p.rss[role]
        out.append((int(round(it)), rss))
    return out


def sampler_leak(
    series: SamplerSeries,
    progress: Sequence[tuple[float, int]],
    mem_limit_bytes: int | None,
    *,
    target_iter: int | None = None,
    **thresholds: Any,
) -> Any:
    """The leak detector (bot.core.detectors.detect_leak, given the policy's `thresholds`:
    min_samples, warn_margin) run on the sampler's total RSS mapped to iterations — for logs
    that print no RSS. A LeakFinding or None. (Imported here only when called: the job runs
    this module with no other module of the project.)"""
    from bot.core.detectors import detect_leak

    fake = rss_metric_series(series, progress)
    if len(fake.samples) < 3:
        return None
    return detect_leak(fake, mem_limit_bytes, target_iter=target_iter, **thresholds)


def rss_metric_series(series: SamplerSeries, progress: Sequence[tuple[float, int]]) -> Any:
    """The sampler's total RSS mapped to iterations (`rss_by_iteration`) as a MetricSeries of
    memory-only samples: what the leak fit and the RSS chart read for logs that print no
    RSS."""
    from bot.core.metrics import MetricSeries
    from bot.core.training_lines import Sample

    points = rss_by_iteration(series, progress)
    fake = MetricSeries(max_samples=max(16, len(points) + 1))
    fake.samples = [Sample(line_no=i + 1, iteration=it, host_rss_bytes=rss)
                    for i, (it, rss) in enumerate(points)]
    return fake


def role_growth(series: SamplerSeries, role: str, *, n: int = 3) -> tuple[int, int] | None:
    """(RSS of `role` at the start, now): medians of the first and last `n` points of the last
    run (`SamplerSeries.last_run`: a requeued job's earlier run had processes of its own);
    None with fewer than `2 * n` points there."""
    points = series.last_run()
    if len(points) < 2 * n:
        return None
    values = [p.rss_total if role == "total" else p.rss[role] for p in points]
    return int(median(values[:n])), int(median(values[-n:]))


__all__ = [
    "ROLES",
    "ProcFacts",
    "SamplerPoint",
    "SamplerSeries",
    "TrainerGenerations",
    "classify_roles",
    "cpu_around",
    "is_python",
    "parse_line",
    "role_growth",
    "rss_by_iteration",
    "rss_metric_series",
    "sample_record",
    "sampler_leak",
]
