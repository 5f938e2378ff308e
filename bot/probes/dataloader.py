"""Find a DataLoader worker memory leak in minutes, on the login node, before a run needs hours.

Also the node script of the "Run DataLoader probe" button (bot.probes.dataloader_srun): this
file's source runs as `python -c` in the recipe's env on a node, so it imports nothing of
trainbot and needs only torch and numpy there (psutil when present, else /proc).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from torch.utils.data import Dataset

try:
    import psutil
except ImportError:  # a recipe's env without psutil: /proc is read instead (Linux)
    psutil = None

MB = 1024**2
#: The line the node script prints its result on (after the env setup's own output).
MARKER = "TRAINBOT_DATALOADER_PROBE_JSON "
DEFAULT_THRESHOLD_MB = 1.0  # per sample per worker; the reports' leak was ~20


class ProbeUsageError(ValueError):
    """The factory spec or the factory itself is unusable; the message says how to fix it."""


# ---------------------------------------------------------------------------- loading


def load_factory(spec: str, search_path: Sequence[str] = ()) -> Callable[[], Any]:
    """The callable named by `MODULE:FACTORY` (the module importable from sys.path or cwd)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ProbeUsageError(
            f"{spec!r} is not MODULE:FACTORY (e.g. mydata.datasets:build_train_dataset)"
        )
    for p in [*search_path, os.getcwd()]:
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProbeUsageError(
            f"cannot import {module_name!r} ({exc}); run from the directory that holds it or "
            "put it on PYTHONPATH"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ProbeUsageError(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ProbeUsageError(f"{spec} is not callable; name a function that returns a Dataset")
    return obj


# ---------------------------------------------------------------------------- analysis (pure)


@dataclass(frozen=True)
class WorkerSeries:
    """Memory samples of one worker: x = samples it had produced, uss/rss in bytes."""

    pid: int
    samples: tuple[int, ...]
    uss: tuple[int, ...]
    rss: tuple[int, ...]


def theil_sen_slope(x: Sequence[float], y: Sequence[float], max_points: int = 200) -> float:
    """Median of pairwise slopes: robust to the GC/allocator jumps a mean fit chases."""
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if len(xs) > max_points:
        idx = np.linspace(0, len(xs) - 1, max_points).astype(int)
        xs, ys = xs[idx], ys[idx]
    dx = xs[None, :] - xs[:, None]
    dy = ys[None, :] - ys[:, None]
    mask = dx > 0
    if not mask.any():
        return 0.0
    return float(np.median(dy[mask] / dx[mask]))


@dataclass(frozen=True)
class LeakVerdict:
    leaking: bool
    conclusive: bool
    slope_mb_per_sample: float  # median over workers, USS
    worker_slopes_mb: dict[int, float]
    samples_per_worker: int
    uss_start_mb: float
    uss_end_mb: float
    rss_start_mb: float
    rss_end_mb: float
    projected_worker_rss_mb: float | None  # per worker at the end of the run
    projected_total_mb: float | None  # all run workers' private memory at the end of the run
    message: str


def analyze(
    series: Sequence[WorkerSeries],
    *,
    threshold_mb: float = DEFAULT_THRESHOLD_MB,
    run_workers: int | None = None,
    run_samples: int | None = None,
    warmup_fraction: float = 0.15,
    min_points: int = 8,
) -> LeakVerdict:
    """Slope per worker after a warm-up, the verdict, and the projection over the run.

    `run_samples` is what the whole run loads across all `run_workers` workers; each worker
    loads an equal share.
    """
    slopes: dict[int, float] = {}
    kept: list[WorkerSeries] = []
    for s in series:
        if not s.samples:
            continue
        cut = max(1, int(max(s.samples) * warmup_fraction))
        pts = [(x, u, r) for x, u, r in zip(s.samples, s.uss, s.rss, strict=True) if x >= cut]
        if len({p[0] for p in pts}) < min_points:
            continue
        kept.append(s)
        slopes[s.pid] = theil_sen_slope([p[0] for p in pts], [p[1] for p in pts]) / MB
    per_worker = max((max(s.samples) for s in series if s.samples), default=0)
    if not slopes:
        return LeakVerdict(
            False, False, 0.0, {}, per_worker, 0, 0, 0, 0, None, None,
            "too few memory samples per worker to fit a slope; raise --samples "
            "(or the dataset is so fast the sampler missed it)",
        )
    slope = float(np.median(list(slopes.values())))
    uss_start = float(np.median([s.uss[0] for s in kept])) / MB
    uss_end = float(np.median([s.uss[-1] for s in kept])) / MB
    rss_start = float(np.median([s.rss[0] for s in kept])) / MB
    rss_end = float(np.median([s.rss[-1] for s in kept])) / MB
    leaking = slope > threshold_mb
    proj_worker = proj_total = None
    projection = ""
    if run_workers and run_samples:
        share = run_samples / run_workers
        growth = max(slope, 0.0) * max(share - per_worker, 0)
        proj_worker = rss_end + growth
        proj_total = (uss_end + growth) * run_workers
        projection = (
            f"; over the run ({run_samples} samples on {run_workers} workers, {share:.0f} each) "
            f"each worker would reach ≈ {proj_worker / 1024:.1f} GiB RSS, "
            f"≈ {proj_total / 1024:.1f} GiB private memory for all {run_workers}"
        )
    verdict = "LEAK" if leaking else "no leak"
    message = (
        f"{verdict}: worker memory grows {slope:.2f} MB per sample per worker (USS, median of "
        f"{len(slopes)} workers; threshold {threshold_mb:g}); over {per_worker} samples/worker "
        f"USS {uss_start:.0f} → {uss_end:.0f} MB, RSS {rss_start:.0f} → {rss_end:.0f} MB"
        f"{projection}"
    )
    return LeakVerdict(
        leaking, True, slope, slopes, per_worker, uss_start, uss_end, rss_start, rss_end,
        proj_worker, proj_total, message,
    )


# ---------------------------------------------------------------------------- the real run


class _Counted:
    """Wraps the user's Dataset: runs `__getitem__` in the worker, returns only (pid, count).

    The payload stays in the worker (it is what we measure); shipping it back would add the
    parent's copy and shared-memory tensors to the numbers.
    """

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset
        self.count = 0

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[int, int]:
        item = self.dataset[index]
        del item
        self.count += 1
        return os.getpid(), self.count


def _first(batch: list[tuple[int, int]]) -> tuple[int, int]:
    return batch[0]


def proc_memory(pid: int) -> tuple[int, int] | None:
    """(USS, RSS) bytes of `pid` from /proc/PID/smaps_rollup (USS: its private pages, as
    psutil counts them); None when the process is gone or unreadable."""
    fields: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if len(parts) == 2 and parts[1] == "kB":
                    fields[name] = int(parts[0]) * 1024
    except (OSError, ValueError):
        return None
    if "Rss" not in fields:
        return None
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0) + \
        fields.get("Private_Hugetlb", 0)
    return uss, fields["Rss"]


class _MemoryRecorder:
    """Measures a worker's memory each time one of its samples arrives.

    Measuring on arrival, in the consuming loop, gives exactly one point per sample whatever
    else the machine is doing (a background sampling thread misses points under load).
    """

    def __init__(self) -> None:
        self.procs: dict[int, Any] = {}
        self.points: dict[int, list[tuple[int, int, int]]] = {}

    def record(self, pid: int, count: int) -> None:
        if psutil is None:
            mem = proc_memory(pid)
            if mem is not None:
                self.points.setdefault(pid, []).append((count, *mem))
            return
        proc = self.procs.get(pid)
        if proc is None:
            proc = self.procs[pid] = psutil.Process(pid)
        try:
            full = proc.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return
        self.points.setdefault(pid, []).append((count, full.uss, full.rss))


def probe_dataloader(
    factory: Callable[[], Any],
    *,
    workers: int = 2,
    samples: int = 160,
    threshold_mb: float = DEFAULT_THRESHOLD_MB,
    run_workers: int | None = None,
    run_samples: int | None = None,
    on_sample: Callable[[], None] | None = None,
) -> LeakVerdict:
    """Iterate `samples` items through a real DataLoader and judge the workers' memory slope;
    `on_sample()` is told each sample loaded (a progress bar)."""
    series = load_series(factory, workers=workers, samples=samples, on_sample=on_sample)
    return analyze(series, threshold_mb=threshold_mb, run_workers=run_workers,
                   run_samples=run_samples)


def load_series(
    factory: Callable[[], Any],
    *,
    workers: int = 2,
    samples: int = 160,
    on_sample: Callable[[], None] | None = None,
) -> list[WorkerSeries]:
    """Each worker's memory after each sample it produced, over `samples` items loaded
    through a real DataLoader with persistent workers."""
    from torch.utils.data import DataLoader

    if workers < 1:
        raise ProbeUsageError("--workers must be at least 1 (the leak lives in worker processes)")
    try:
        dataset = factory()
    except Exception as exc:
        raise ProbeUsageError(f"the factory raised {type(exc).__name__}: {exc}") from exc
    try:
        length = len(dataset)
    except TypeError as exc:
        raise ProbeUsageError("the factory must return a map-style Dataset (with __len__)") from exc
    if length == 0:
        raise ProbeUsageError("the factory returned an empty Dataset")
    # a map-style dataset is anything with __len__ and __getitem__ (torch's Dataset is a type)
    counted = cast("Dataset[tuple[int, int]]", _Counted(dataset))
    loader: DataLoader[tuple[int, int]] = DataLoader(
        counted, batch_size=1, num_workers=workers, persistent_workers=True, shuffle=False,
        collate_fn=_first)
    recorder = _MemoryRecorder()
    consumed = 0
    iterator = None
    try:
        while consumed < samples:
            iterator = iter(loader)  # persistent workers survive across epochs
            for pid, count in iterator:
                recorder.record(pid, count)
                consumed += 1
                if on_sample is not None:
                    on_sample()
                if consumed >= samples:
                    break
    finally:
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
    return [
        WorkerSeries(pid, tuple(p[0] for p in pts), tuple(p[1] for p in pts),
                     tuple(p[2] for p in pts))
        for pid, pts in sorted(recorder.points.items())
    ]


# ---------------------------------------------------------------------------- on a node


def node_main(argv: Sequence[str]) -> int:
    """`python -c <this file> FACTORY WORKERS SAMPLES [PATH…]` on a node: one MARKER line with
    the verdict and each worker's RSS (start, end) or the error; exit 0 whatever it found."""
    factory_spec, workers, samples, *paths = argv
    out: dict[str, Any] = {"host": os.uname().nodename, "factory": factory_spec,
                           "workers": int(workers), "samples": int(samples), "error": None}
    try:
        series = load_series(load_factory(factory_spec, paths), workers=int(workers),
                             samples=int(samples))
        verdict = analyze(series)
        out["verdict"] = {**asdict(verdict), "worker_slopes_mb": {
            str(k): v for k, v in verdict.worker_slopes_mb.items()}}
        out["per_worker"] = [
            {"pid": s.pid, "samples": max(s.samples), "rss_start_mb": s.rss[0] / MB,
             "rss_end_mb": s.rss[-1] / MB, "uss_start_mb": s.uss[0] / MB,
             "uss_end_mb": s.uss[-1] / MB,
             "slope_mb": verdict.worker_slopes_mb.get(s.pid)}
            for s in series if s.samples]
    except ProbeUsageError as exc:
        out["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - reported in the thread, never a traceback
        out["error"] = f"{type(exc).__name__}: {exc}"
    print(MARKER + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(node_main(sys.argv[1:]))
