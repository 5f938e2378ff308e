"""Benchmark: diagnosing a log whose one line is a long run of digits (a printed tensor, a hex
dump) against a log of ordinary training lines of the same size, in the same run.

    .venv/bin/python bench/long_line_diagnose.py [--size-kib 200] [--repeat 3]

Each shape's line (`num_epochs completed:` + digits + `.x`, `max_train_steps elapsed:` +
digits, caffe's `Optimization Done in 1h 2m ` + digits, a run of spaces, an error line naming
the error vocabulary's subjects, one repeating them, a tqdm count's long digit run, a Rich
bar's label before a long run of blanks, a long run of Rich's bar, a compiler's report after a
long `1.1.1…` run) is `--size-kib` long (a few bytes more); the ordinary log is as many bytes
of progress lines. Prints each shape's best time and its ratio to the ordinary log's; fails
when a ratio passes `MAX_RATIO` (a pattern that retries a run from each of its characters
makes it grow with the square of the line's length: 60 s and more at 200 KiB where the
ordinary log takes a fraction of a second).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.diagnose import LogAnalysis  # noqa: E402

#: How many times an ordinary log's time one long line may take.
MAX_RATIO = 20.0
SHAPES = {
    "parlai epochs + digits + .x": lambda n: (
        "10:06:00 INFO | num_epochs completed:" + "1" * n + ".x"),
    "max_train_steps + digits": lambda n: "max_train_steps elapsed:" + "9" * n,
    "caffe duration + digits": lambda n: (
        "I1206 10:00:00.1 123 solver.cpp:464] Optimization Done in 1h 2m " + "1" * n),
    "spaces": lambda n: " " * n,
    # an error line the error vocabulary reads (bot.core.diagnose.ending), its subjects named
    "error words (vocabulary)": lambda n: (
        "RuntimeError: NCCL cuda host data loader job loss gcc " + "x " * (n // 2)),
    # an error line repeating the subjects that come before what happened to them
    "error words (subjects repeated)": lambda n: (
        "RuntimeError: " + "node gpu xid wallclock limit " * (n // 29)),
    # a tqdm bar's count read from a long digit run (bot.core.progress_bars, TQDM_BAR)
    "tqdm bar: digits + /<": lambda n: "10:00:00 eval 50%|" + "1" * n + "/<",
    # a Rich bar's label before a long run of blanks, or a long run of its bar (RICH_BAR)
    "rich bar: blanks + x━━━": lambda n: "a" + " " * n + "x━━━ 1/2",
    "rich bar: ━ run": lambda n: "━" * n + "x",
    # a compiler_missing line whose compiler's name follows a long `1.1.1…` run
    # (bot.core.diagnose.line_cause, the missing tool)
    "compiler report after 1.1.1…": lambda n: (
        "1." * (n // 2) + " error: command 'gcc' failed: No such file or directory"),
}


def ordinary_log(size: int) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        line = f"10:{i // 60 % 60:02d}:{i % 60:02d} INFO | iter {i} loss={1 / (i + 1):.4f} 2.1it/s"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def best_time(catalogue: Catalogue, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        analysis = LogAnalysis(catalogue)
        analysis.feed_text(text)
        analysis.finish()
        analysis.diagnose(None)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-kib", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    size = args.size_kib * 1024
    catalogue = Catalogue.load()
    baseline = best_time(catalogue, ordinary_log(size), args.repeat)
    print(f"{'ordinary log':32s} {baseline:8.3f} s")
    worst = 0.0
    for name, line in SHAPES.items():
        took = best_time(catalogue, line(size) + "\n", args.repeat)
        worst = max(worst, took / baseline)
        print(f"{name:32s} {took:8.3f} s  ratio {took / baseline:6.2f}")
    if worst > MAX_RATIO:
        print(f"FAIL: a long line took {worst:.1f}x an ordinary log (bound {MAX_RATIO})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
