"""The process's one deadlines thread (bot.net.deadlines) keeps every tracked deadline
(bot.cluster.in_flight): a large log read tracks two operations per 32 KiB SFTP request, and
a thread each would be hundreds per tick; a clock thread per runner was one more per cluster.
The clock's bookkeeping is checked on a test clock (`fire_due`), without real time."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack

from bot.cluster.in_flight import END_GRACE_S, CommandsInFlight
from bot.net import deadlines

OPERATIONS = 500


class _TestClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _deadlines_thread() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "deadlines"}


def test_many_tracked_operations_start_no_thread_of_their_own() -> None:
    """Operations tracked at once and one after another on several runners' connections
    start no thread: the process's deadlines thread (running already, as a Slack request
    starts it) keeps their deadlines. Before, each runner started a clock thread of its own."""
    deadlines.at(time.monotonic(), lambda: None)  # the thread runs, as in a bot: none added
    runners = [CommandsInFlight(lambda connection: None) for _ in range(3)]
    before = set(threading.enumerate())
    deadline = time.monotonic() + 60
    with ExitStack() as stack:
        for i in range(OPERATIONS):
            stack.enter_context(runners[i % 3].command(f"connection-{i % 4}", deadline + i))
        during = set(threading.enumerate()) - before
    for i in range(OPERATIONS):  # one after another, as a log read's requests
        with runners[i % 3].command("connection-0", time.monotonic() + 15):
            pass
    started = set(threading.enumerate()) - before
    assert during == started == set()
    for in_flight in runners:
        in_flight.stop_clock()  # the runner has closed
    assert set(threading.enumerate()) - before <= _deadlines_thread()


def test_an_operation_past_its_deadline_and_grace_is_reported_on_the_deadlines_thread(
        ) -> None:
    """In real time: a command still in flight END_GRACE_S after its deadline is said to
    `overstayed` by the deadlines thread, once; one that ended in time is not."""
    said: list[tuple[object, str]] = []
    reported = threading.Event()

    def overstayed(connection: object) -> None:
        said.append((connection, threading.current_thread().name))
        reported.set()

    in_flight = CommandsInFlight(overstayed)
    with in_flight.command("ended", time.monotonic() - END_GRACE_S + 0.1):
        pass
    with in_flight.command("stuck", time.monotonic() - END_GRACE_S + 0.2):
        assert reported.wait(5)
        time.sleep(0.2)
    in_flight.stop_clock()
    assert said == [("stuck", "deadlines")]


def test_stopping_the_clock_waits_for_what_it_is_doing() -> None:
    """The runner's close stops the clock while the deadlines thread is saying an operation
    overstayed (which may take the runner's lock): the stop returns once that has ended, and
    nothing of the runner's is done after it."""
    entered, leave = threading.Event(), threading.Event()
    done: list[str] = []

    def overstayed(connection: object) -> None:
        entered.set()
        leave.wait(5)
        done.append("overstayed")

    in_flight = CommandsInFlight(overstayed)
    with in_flight.command("stuck", time.monotonic() - END_GRACE_S):
        assert entered.wait(5)
        threading.Timer(0.3, leave.set).start()
        started = time.monotonic()
        in_flight.stop_clock()
        assert done == ["overstayed"] and time.monotonic() - started >= 0.25


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
