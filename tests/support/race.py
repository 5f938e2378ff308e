"""Run callables on threads released at the same instant: the races of replicas on one store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


def winners_of_race(attempts: Sequence[Callable[[], bool]]) -> list[int]:
    """The indices of the `attempts` that returned True, all started together behind a
    barrier; an exception in any attempt fails the caller's test."""
    barrier = threading.Barrier(len(attempts))
    won: dict[int, bool] = {}
    errors: list[Exception] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            won[i] = attempts[i]()
        except Exception as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(attempts))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(won) == len(attempts)
    return sorted(i for i, ok in won.items() if ok)
