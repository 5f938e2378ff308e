"""Benchmark: a full `trainbot diagnose` (catalogue + metrics + detectors) of a 1 GiB
training log against GNU `grep -E -c` with the same catalogue patterns, in the same run.

    .venv/bin/python bench/diagnose_vs_grep.py [--size-mib 1024] [--dir DIR] [--repeat 1]

The log (mostly timestamped progress lines with iter/loss/s/iter/RSS/GPU fields, a
checkpoint save every 1000 iterations, a few warning and signature lines, then a hang: no
progress until the NCCL watchdog aborts, its timeout after the last progress line) is written
once to DIR (default: $TMPDIR/trainbot-bench) and reused while `LOG_VERSION` is unchanged.
Both tools read it from the page cache; each is run `--repeat` times and the best time is
kept. Prints the throughput of each, the ratio diagnose/grep, and diagnose's peak RSS; fails
when the diagnosis is not the one the log holds at every size (`nccl_timeout` with an upstream
`hang`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402

SIGNATURE_LINES = [  # hints only, so that the NCCL abort at the end decides the class
    "[rank2]:/opt/conda/lib/python3.11/site-packages/torch/utils/data/dataloader.py:557: "
    "UserWarning: This DataLoader will create 40 worker processes in total.",
    "[rank0]: Traceback (most recent call last):",
    "[rank1]: [W520 10:00:00 ProcessGroupNCCL.cpp:1168] PYTORCH_CUDA_ALLOC_CONF is set",
    "[rank0]: srun: error: gpu-a07: task 0: Exited with exit code 0",
]
#: The generator's version, in the written log's name: a log an older one wrote is not reused.
LOG_VERSION = 2
#: How long the ranks hang after the last progress line before the watchdog aborts (its
#: timeout, as the abort line says).
HANG = timedelta(milliseconds=1_800_021)


def tail_lines(last_progress: datetime) -> list[str]:
    """The log's end: the NCCL watchdog's abort, stamped (glog's month, day and time) one
    `HANG` after the last progress line, whatever the log's size, and the launcher's exit."""
    abort = last_progress + HANG
    return [
        f"[rank3]:[E{abort:%m%d %H:%M:%S.%f} ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=99, OpType=ALLGATHER, NumelIn=1, "
        f"NumelOut=4, Timeout(ms)=1800000) ran for {HANG // timedelta(milliseconds=1)} "
        "milliseconds before timing out.",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "  traceback : Signal 6 (SIGABRT) received by PID 2248",
    ]


def write_log(path: Path, size: int) -> None:
    """A realistic log of about `size` bytes (deterministic)."""
    rnd = random.Random(1)
    t = datetime(2025, 5, 20, 0, 0, 0)
    step = timedelta(seconds=4.5)
    written, it = 0, 0
    tmp = path.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8", buffering=1 << 22) as out:
        batch: list[str] = []
        while written < size:
            it += 1
            t += step
            stamp = t.strftime("%Y-%m-%d %H:%M:%S")
            line = (
                f"{stamp},{it % 1000:03d} INFO [train.py:412] [rank0] iter={it}/9000000 "
                f"loss={0.6 + rnd.random() * 0.3:.4f} s/iter=4.50 host_rss="
                f"{150 + rnd.random() * 8:.1f}GiB gpu_mem=71.3GiB gpu_util={89 + it % 11}% "
                f"lr=1.0e-04 grad_norm={0.5 + rnd.random():.3f}\n"
            )
            batch.append(line)
            written += len(line)
            if it % 1000 == 0:
                batch.append(f"{stamp},500 INFO [checkpoint.py:61] Saving checkpoint at "
                             f"iteration {it} to /scratch/run/checkpoints/iter_{it:09d}\n")
                batch.append(f"{stamp},900 INFO [checkpoint.py:88] checkpoint saved in 4.1s\n")
            if it % 1_500_000 == 0:
                batch.append(SIGNATURE_LINES[(it // 1_500_000) % len(SIGNATURE_LINES)] + "\n")
            if len(batch) >= 20000:
                out.write("".join(batch))
                batch.clear()
        batch += [line + "\n" for line in tail_lines(t)]
        out.write("".join(batch))
    tmp.rename(path)


def run_with_rusage(argv: list[str]) -> tuple[float, int, str]:
    """Run argv, returning (wall seconds, peak RSS bytes of that process, stdout)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode not in (0, 1) or err.strip():
            raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {err[-2000:]}")
        out.seek(0)
        return elapsed, usage.ru_maxrss * 1024, out.read().decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "trainbot-bench"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    grep = shutil.which("grep")
    if grep is None:
        raise SystemExit("GNU grep not found")
    workdir = Path(args.dir)
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"train-{args.size_mib}mib-v{LOG_VERSION}.log"
    size = args.size_mib << 20
    if not log.exists() or log.stat().st_size < size:
        print(f"writing {log} ({args.size_mib} MiB) ...", flush=True)
        write_log(log, size)
    real_size = log.stat().st_size
    patterns = workdir / "catalogue.ere"
    patterns.write_text("\n".join(Catalogue.load().grep_patterns()) + "\n", encoding="utf-8")
    with open(log, "rb") as f:  # into the page cache for both tools
        while f.read(64 << 20):
            pass

    grep_argv = [grep, "-E", "-c", "-f", str(patterns), str(log)]
    diag_argv = [sys.executable, "-m", "bot", "diagnose", str(log), "--json",
                 "--state", "FAILED", "--exit-code", "1:0", "--mem-limit", "300G"]
    best_grep = best_diag = float("inf")
    peak = 0
    grep_count = diag_out = ""
    for _ in range(args.repeat):
        t, _rss, grep_count = run_with_rusage(grep_argv)
        best_grep = min(best_grep, t)
        t, rss, diag_out = run_with_rusage(diag_argv)
        best_diag = min(best_diag, t)
        peak = max(peak, rss)
    result = json.loads(diag_out)
    upstream = result["upstream"]["class_id"] if result["upstream"] else None
    mib = real_size / 2**20
    grep_tp, diag_tp = mib / best_grep, mib / best_diag
    print(f"log: {log} ({mib:.0f} MiB), {len(Catalogue.load().grep_patterns())} patterns")
    print(f"grep -E -c:        {best_grep:7.2f} s  {grep_tp:7.1f} MiB/s  "
          f"({grep_count.strip()} matching lines)")
    print(f"trainbot diagnose: {best_diag:7.2f} s  {diag_tp:7.1f} MiB/s  "
          f"(class {result['class']}, last_iter {result['metrics']['last_iter']}, "
          f"upstream {upstream}, stalled {result['metrics']['stall_seconds']} s)")
    print(f"ratio diagnose/grep throughput: {diag_tp / grep_tp:.2f} (goal >= 0.33)")
    print(f"diagnose peak RSS: {peak / 2**20:.0f} MiB")
    if (result["class"], upstream) != ("nccl_timeout", "hang"):
        print("wrong diagnosis: the log ends in a hang and the watchdog's abort "
              "(nccl_timeout, upstream hang)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
