"""Benchmark: the cost of bounding a Slack request by its deadline (bot.net.deadlines, kept by
one thread for all requests) against the timer thread per request it replaced
(`threading.Timer`, started and cancelled as bot.net.whole_request did).

Measures, in one run, for N requests whose deadline is 30 s ahead (a request's timeout,
bot.core.slack_bounds.CALL_TIMEOUT_S):
1. one after another: arm the deadline, then take it back (a request that ended in time);
2. all at once: N armed before any is taken back (N requests in flight), and the threads
   alive then;
and the ratio timer / deadlines for each.

    .venv/bin/python bench/request_deadlines.py [--requests 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.net import deadlines  # noqa: E402

TIMEOUT_S = 30.0


def _nothing() -> None:
    pass


class _Timer:
    """What a request did before: a timer thread of its own."""

    def __init__(self, when: float, action: Callable[[], None]) -> None:
        self._timer = threading.Timer(when - time.monotonic(), action)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()


ARMS: dict[str, Callable[[float, Callable[[], None]], object]] = {
    "timer": _Timer, "deadlines": deadlines.at}


def _one_after_another(arm: Callable[[float, Callable[[], None]], object], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        due = arm(time.monotonic() + TIMEOUT_S, _nothing)
        due.cancel()  # type: ignore[attr-defined]
    return time.perf_counter() - started


def _all_at_once(arm: Callable[[float, Callable[[], None]], object], n: int
                 ) -> tuple[float, int]:
    before = threading.active_count()
    started = time.perf_counter()
    armed = [arm(time.monotonic() + TIMEOUT_S, _nothing) for _ in range(n)]
    threads = threading.active_count() - before
    for due in armed:
        due.cancel()  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - started
    return elapsed, threads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    result: dict[str, dict[str, float]] = {}
    for name, arm in ARMS.items():
        serial = [_one_after_another(arm, args.requests) for _ in range(args.repeats)]
        parallel = [_all_at_once(arm, args.requests) for _ in range(args.repeats)]
        time.sleep(0.5)  # cancelled timers' threads end
        result[name] = {
            "one_after_another_us": statistics.median(serial) / args.requests * 1e6,
            "all_at_once_us": statistics.median(p[0] for p in parallel) / args.requests * 1e6,
            "threads_in_flight": max(p[1] for p in parallel),
        }
    result["ratio_timer_over_deadlines"] = {
        key: result["timer"][key] / max(result["deadlines"][key], 1e-9)
        for key in ("one_after_another_us", "all_at_once_us")}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
