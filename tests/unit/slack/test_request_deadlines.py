"""Every Slack request in flight is bounded by its deadline (bot.net.whole_request), all of
them kept by one thread (bot.net.deadlines): a bot with many requests under way (several
replicas' posts, uploads, Home tabs) does not run one more thread per request."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from urllib.error import URLError
from urllib.request import Request

import pytest
from slack_standin import SlackStandIn

from bot.net import deadlines
from bot.net.whole_request import open_whole

IN_FLIGHT = 24
TIMEOUT_S = 2.0


@pytest.fixture
def silent_slack() -> Iterator[str]:
    """A Web API URL whose host takes every connection and never answers (a hung Slack):
    the kernel accepts them into the listener's queue, nothing reads them."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(IN_FLIGHT + 8)
    host, port = listener.getsockname()
    yield f"http://{host}:{port}/api/"
    listener.close()


def test_many_requests_in_flight_add_no_thread_each_and_each_is_cut_at_its_deadline(
        silent_slack: str) -> None:
    """24 requests to a Slack that never answers and one whose answer trickles in (one byte
    every 0.05 s, each well within a socket timeout) all under way at once: the process
    runs a handful of threads beyond the 25 making them (before: one timer thread more per
    request, 50 in all), and each request still ends when its 2 s are up."""
    ended: list[tuple[str, float]] = []
    lock = threading.Lock()

    def request(url: str) -> None:
        started = time.monotonic()
        try:
            open_whole(Request(url, data=b"x"), timeout_s=TIMEOUT_S, context=None, proxy=None)
            outcome = "answered"
        except (TimeoutError, URLError):
            outcome = "cut"
        with lock:
            ended.append((outcome, time.monotonic() - started))

    with SlackStandIn() as slack:
        slack.trickle_next("auth.test", every_s=0.05)
        before = threading.active_count()
        workers = [threading.Thread(target=request, args=(silent_slack + "chat.update",))
                   for _ in range(IN_FLIGHT)]
        workers.append(threading.Thread(target=request, args=(slack.api_url + "auth.test",)))
        for worker in workers:
            worker.start()
        time.sleep(TIMEOUT_S / 2)
        during = threading.active_count() - before
        for worker in workers:
            worker.join(TIMEOUT_S + 5)
    # the 25 requests' own threads, the stand-in's for the trickle, the deadlines' thread and
    # at most two lookups of 127.0.0.1 (bot.net.dns.LOOKUPS_PER_NAME)
    assert during <= len(workers) + 4
    assert [outcome for outcome, _ in ended] == ["cut"] * len(workers)
    assert max(took for _, took in ended) < TIMEOUT_S + 1.0


def test_a_deadline_further_than_a_wait_can_take_stops_no_deadline_thread(monkeypatch) -> None:
    """A deadline further off than threading.TIMEOUT_MAX (a huge timeout) no longer kills the
    deadlines' thread (Condition.wait raised OverflowError on it: a traceback in the log, and
    the deadlines in its heap unkept until the next request started the thread again); one
    due soon after it is still kept."""
    raised: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    far = deadlines.at(time.monotonic() + 1e12, lambda: None)
    try:
        time.sleep(0.2)
        due = threading.Event()
        deadlines.at(time.monotonic() + 0.05, due.set)
        assert due.wait(2)
        time.sleep(0.2)
    finally:
        far.cancel()
    assert raised == []
