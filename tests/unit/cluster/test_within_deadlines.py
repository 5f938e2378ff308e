"""bot.cluster.channels.within bounds a request paramiko waits on without a timeout (an exec,
a subsystem, a jumped connect's tunnel opening) on the process's one deadlines thread
(bot.net.deadlines): a request answered in time starts no thread; one that overstays is
closed by a thread started at its deadline, so a close that waits (a channel's close behind
a send that cannot leave) holds no other deadline."""

from __future__ import annotations

import threading
import time

import pytest

from bot.cluster.channels import within
from bot.net import deadlines


def test_requests_answered_in_time_start_no_thread() -> None:
    """Requests answered within their timeout start no thread: the deadlines thread (running
    already in a bot) keeps their deadlines. Before, each started a threading.Timer."""
    deadlines.at(time.monotonic(), lambda: None)  # the thread runs, as in a bot: none added
    before = set(threading.enumerate())
    started: set[threading.Thread] = set()

    def request() -> int:
        started.update(set(threading.enumerate()) - before)
        return 7

    assert [within(30.0, lambda: None, request) for _ in range(20)] == [7] * 20
    assert started == set()


def test_a_close_that_waits_holds_no_other_deadline() -> None:
    """A request overstays and its close waits (a channel's close stuck behind a send): the
    request still ends by its timeout, TimeoutError, and a deadline due meanwhile on the
    deadlines thread runs on time, not after that close."""
    release = threading.Event()
    closing = threading.Event()
    unblock = threading.Event()

    def close() -> None:  # the channel's close: a send that waits
        closing.set()
        unblock.set()  # paramiko's wait ends as the channel is marked closed
        release.wait(10)

    fired: list[float] = []
    started = time.monotonic()
    try:
        deadlines.at(started + 0.6, lambda: fired.append(time.monotonic()))
        with pytest.raises(TimeoutError):
            within(0.3, close, lambda: unblock.wait(10) and None)
        assert closing.is_set()
        assert time.monotonic() - started < 2.0
        waited = time.monotonic() + 2.0
        while not fired and time.monotonic() < waited:
            time.sleep(0.01)
        assert fired and fired[0] - started < 1.5, "a close at a deadline held the thread"
    finally:
        release.set()
