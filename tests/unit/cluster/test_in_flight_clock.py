"""One clock thread keeps every tracked deadline (bot.cluster.in_flight): a large log read
tracks two operations per 32 KiB SFTP request, and a thread each would be hundreds per tick.
The clock's bookkeeping is checked on a test clock (`fire_due`), without real time."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack

from bot.cluster.in_flight import END_GRACE_S, CommandsInFlight

OPERATIONS = 500


class _TestClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_many_tracked_operations_start_one_thread_at_most() -> None:
    in_flight = CommandsInFlight(lambda connection: None)
    before = set(threading.enumerate())
    deadline = time.monotonic() + 60
    with ExitStack() as stack:
        for i in range(OPERATIONS):
            stack.enter_context(in_flight.command(f"connection-{i % 4}", deadline + i))
        during = set(threading.enumerate()) - before
    for _ in range(OPERATIONS):  # one after another, as a log read's requests
        with in_flight.command("connection-0", time.monotonic() + 15):
            pass
    started = set(threading.enumerate()) - before
    assert len(during) == 1 and started == during  # the clock, one thread for all
    in_flight.stop_clock()  # the runner has closed: the clock stops, its thread ended
    assert not any(thread.is_alive() for thread in started)


def test_only_operations_still_in_flight_are_reported_once() -> None:
    clock = _TestClock()
    overstayed: list[object] = []
    in_flight = CommandsInFlight(overstayed.append, clock=clock)
    with in_flight.command("ended", clock.now + 5):
        pass
    with in_flight.command("stuck", clock.now + 5):
        clock.now += 5 + END_GRACE_S - 0.01
        in_flight.fire_due()
        assert overstayed == []  # its grace is not over
        clock.now += 0.02
        in_flight.fire_due()
        in_flight.fire_due()
        assert overstayed == ["stuck"]
    in_flight.stop_clock()


def test_a_retired_connection_is_closed_once_at_its_last_deadline_and_grace() -> None:
    clock = _TestClock()
    closed: list[str] = []
    in_flight = CommandsInFlight(lambda connection: None, clock=clock)
    with ExitStack() as stack:
        stack.enter_context(in_flight.command("connection", clock.now + 2))
        stack.enter_context(in_flight.command("connection", clock.now + 4))
        in_flight.retire("connection", lambda: closed.append("connection"))
        clock.now += 2 + END_GRACE_S
        in_flight.fire_due()
        assert closed == [] and in_flight.retired("connection")  # one command may still end
        clock.now += 2
        in_flight.fire_due()
        assert closed == ["connection"] and not in_flight.retired("connection")
    in_flight.fire_due()  # its commands leave after: not closed again
    assert closed == ["connection"]
    in_flight.stop_clock()


def test_a_retired_connection_let_go_is_closed_at_its_due_time_with_what_it_is_handed() -> None:
    """The runner lets go of a connection retired without its lock (bot.cluster.ssh
    SSHRunner._ensure_transport): at its due time it is closed with the close the runner hands
    (its jump host's connection too), once, and not before."""
    clock = _TestClock()
    closed: list[str] = []
    in_flight = CommandsInFlight(lambda connection: None, clock=clock)
    assert not in_flight.close_instead("live", lambda: closed.append("live"))  # not retired
    with in_flight.command("stuck", clock.now + 5):
        in_flight.retire("stuck", lambda: closed.append("transport alone"))
        assert in_flight.close_instead("stuck", lambda: closed.append("jump, then login node"))
        clock.now += 5 + END_GRACE_S - 0.01
        in_flight.fire_due()
        assert closed == []  # its command still has its time
        clock.now += 0.02
        in_flight.fire_due()
        assert closed == ["jump, then login node"]
        assert not in_flight.close_instead("stuck", lambda: closed.append("again"))
    in_flight.stop_clock()
    assert closed == ["jump, then login node"]
