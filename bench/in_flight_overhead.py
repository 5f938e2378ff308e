"""Benchmark: the cost of tracking an SSH/SFTP operation's deadline (bot.cluster.in_flight).

A large log read tracks about two operations per 32 KiB SFTP request (its send, its reply's
read), each with the request's deadline. Measures, in one run:
1. the baseline: N empty `with` blocks (an untracked operation: `contextlib.nullcontext`);
2. N operations tracked one after another on one connection, as a read's requests are;
3. N operations tracked at once (nested), as the requests a pipelined read keeps in flight;
and the threads alive during each (no clock thread of its own: the process's deadlines
thread, bot.net.deadlines).

    .venv/bin/python bench/in_flight_overhead.py [--operations 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from contextlib import ExitStack, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.cluster.in_flight import CommandsInFlight  # noqa: E402

SFTP_TIMEOUT_S = 15.0  # the default sftp_timeout: every deadline is this far ahead


def _untracked(n: int) -> tuple[float, int]:
    started = time.perf_counter()
    for _ in range(n):
        with nullcontext():
            pass
    return time.perf_counter() - started, threading.active_count()


def _one_after_another(n: int) -> tuple[float, int]:
    in_flight = CommandsInFlight(lambda connection: None)
    peak = threading.active_count()
    started = time.perf_counter()
    for _ in range(n):
        with in_flight.command("connection", time.monotonic() + SFTP_TIMEOUT_S):
            pass
    elapsed = time.perf_counter() - started
    peak = max(peak, threading.active_count())
    in_flight.stop_clock()
    return elapsed, peak


def _all_at_once(n: int) -> tuple[float, int]:
    in_flight = CommandsInFlight(lambda connection: None)
    started = time.perf_counter()
    with ExitStack() as stack:
        for _ in range(n):
            stack.enter_context(in_flight.command("connection",
                                                  time.monotonic() + SFTP_TIMEOUT_S))
        peak = threading.active_count()
    elapsed = time.perf_counter() - started
    in_flight.stop_clock()
    return elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n = args.operations
    threads_before = threading.active_count()
    result: dict[str, object] = {"operations": n, "repeats": args.repeats,
                                 "threads_before": threads_before}
    for name, run in (("untracked", _untracked), ("tracked_one_after_another",
                                                  _one_after_another),
                      ("tracked_all_at_once", _all_at_once)):
        times, peaks = [], []
        for _ in range(args.repeats):
            elapsed, peak = run(n)
            times.append(elapsed)
            peaks.append(peak)
        best = min(times)
        result[name] = {"ops_per_s_median": round(n / statistics.median(times)),
                        "ops_per_s_best": round(n / best),
                        "us_per_op_median": round(statistics.median(times) / n * 1e6, 2),
                        "threads_peak": max(peaks)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
