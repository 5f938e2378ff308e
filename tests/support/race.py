"""Run callables on threads released at the same instant: the races of replicas on one store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def race(attempts: Sequence[Callable[[], T]]) -> list[T]:
    """What each of the `attempts` returned (in their order), all started together behind a
    barrier; an exception in any attempt fails the caller's test."""
    barrier = threading.Barrier(len(attempts))
    results: dict[int, T] = {}
    errors: list[Exception] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = attempts[i]()
        except Exception as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(attempts))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(results) == len(attempts)
    return [results[i] for i in range(len(attempts))]


def winners_of_race(attempts: Sequence[Callable[[], bool]]) -> list[int]:
    """The indices of the `attempts` that returned True, all started together (`race`)."""
    return [i for i, won in enumerate(race(attempts)) if won]
