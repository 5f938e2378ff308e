"""Benchmark: CPU cost of `trainbot sampler` on a job-like tree of ~40 processes.

The tree: a bash "batch script" -> a Python launcher (named pt_elastic, like torchrun's agent)
-> 4 Python "ranks" (fork) -> 9 "DataLoader workers" each (fork, renamed pt_data_worker as
torch does): 42 processes.

Measures
1. in-process: CPU seconds per sample of `TreeSampler.sample()` (mean, p95 over N samples);
2. the real command (`trainbot sampler --interval I`) for D seconds: its CPU time over its
   wall time after start-up (from the `sampler_cpu_s` it records), and its start-up CPU;
3. the projected share of one core at the default 10 s interval: cpu per sample / 10.

    .venv/bin/python bench/sampler_overhead.py [--samples 200] [--seconds 20] [--interval 1]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.probes.sampler import DEFAULT_INTERVAL_S, TreeSampler  # noqa: E402

RANKS, WORKERS = 4, 9


def _rename(name: str) -> None:
    """Set our comm like torch's _set_thread_name does (prctl PR_SET_NAME)."""
    libc = ctypes.CDLL(None)
    libc.prctl(15, name.encode()[:15], 0, 0, 0)


def _idle(megabytes: int) -> None:
    ballast = bytearray(b"x" * (megabytes << 20))  # noqa: F841 - resident memory
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        time.sleep(3600)


def trainer_main() -> None:
    """Runs as the launcher (named pt_elastic, as torchrun's agent is): forks 4 ranks, each
    of which forks 9 workers; then idles."""
    _rename("pt_elastic")
    pids = []
    for _ in range(RANKS):
        pid = os.fork()
        if pid == 0:
            _rename("python3")
            for _ in range(WORKERS):
                if os.fork() == 0:
                    _rename("pt_data_worker")
                    _idle(8)
            _idle(32)
        pids.append(pid)
    print("ready", flush=True)
    _idle(64)


def start_tree() -> subprocess.Popen:
    script = f"{sys.executable} {Path(__file__).resolve()} --trainer & wait"
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    return proc


def bench_in_process(root: int, n: int) -> dict[str, float]:
    sampler = TreeSampler(root, self_pid=-1)
    rec = sampler.sample()  # first sample: creates the Process objects
    costs = []
    for _ in range(n):
        c0 = time.process_time()
        rec = sampler.sample()
        costs.append(time.process_time() - c0)
        time.sleep(0.01)
    costs.sort()
    return {
        "processes": sum(rec["n"].values()),
        "roles": rec["n"],
        "cpu_ms_per_sample_mean": 1000 * statistics.mean(costs),
        "cpu_ms_per_sample_p95": 1000 * costs[int(0.95 * (len(costs) - 1))],
    }


def bench_command(root: int, seconds: float, interval: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rss.jsonl"
        argv = [sys.executable, "-c",
                "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))",
                "sampler", "--out", str(out), "--interval", str(interval), "--pid", str(root)]
        proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        time.sleep(seconds)
        proc.terminate()
        proc.wait(timeout=30)
        lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    first, last = lines[0], lines[-1]
    wall = last["t"] - first["t"]
    cpu = last["sampler_cpu_s"] - first["sampler_cpu_s"]
    return {
        "samples": len(lines),
        "startup_cpu_s": first["sampler_cpu_s"],
        "steady_cpu_s": cpu,
        "steady_wall_s": wall,
        "steady_core_share_pct": 100 * cpu / wall if wall else float("nan"),
        "cpu_ms_per_sample": 1000 * cpu / max(1, len(lines) - 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--trainer", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trainer:
        trainer_main()
        return 0
    tree = start_tree()
    try:
        inproc = bench_in_process(tree.pid, args.samples)
        cmd = bench_command(tree.pid, args.seconds, args.interval)
    finally:
        os.killpg(tree.pid, signal.SIGTERM)
        tree.wait()
    at_default = inproc["cpu_ms_per_sample_mean"] / 1000 / DEFAULT_INTERVAL_S * 100
    print(f"tree: {inproc['processes']} processes {inproc['roles']}")
    print(f"in-process sample(): {inproc['cpu_ms_per_sample_mean']:.2f} ms CPU mean, "
          f"{inproc['cpu_ms_per_sample_p95']:.2f} ms p95 ({args.samples} samples)")
    print(f"command at --interval {args.interval:g}: {cmd['samples']} samples, "
          f"{cmd['cpu_ms_per_sample']:.2f} ms CPU/sample, "
          f"{cmd['steady_core_share_pct']:.3f} % of a core steady state, "
          f"start-up {cmd['startup_cpu_s']:.2f} s CPU once")
    print(f"projected at the default {DEFAULT_INTERVAL_S:g} s interval: "
          f"{at_default:.4f} % of a core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
