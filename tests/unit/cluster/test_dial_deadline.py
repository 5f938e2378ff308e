"""An SSH connect is ended at its deadline by the process's one deadlines thread
(bot.net.deadlines), whatever paramiko waits for: here the banner of a login node that takes
the TCP connection and never says anything. Several connects at once add no thread each beyond
paramiko's own transport thread (before: a timer thread per connect)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import paramiko
import pytest

from bot.cluster.dial import connect_within
from bot.net import deadlines

CONNECTS = 8
BUDGET_S = 1.0
PARAMIKO_S = 30.0  # paramiko's own bounds, far past the deadline: only the deadline ends it


@pytest.fixture
def silent_login_node() -> Iterator[int]:
    """A port whose host takes every connection into its listen queue and never sends the
    SSH banner."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(CONNECTS + 4)
    yield listener.getsockname()[1]
    listener.close()


def test_connects_to_a_silent_login_node_end_at_their_deadline_adding_no_thread_each(
        silent_login_node: int) -> None:
    deadlines.at(time.monotonic(), lambda: None)  # the thread runs, as in a bot
    ended: list[tuple[str, float]] = []
    lock = threading.Lock()

    def connect() -> None:
        client = paramiko.SSHClient()
        started = time.monotonic()
        try:
            connect_within(client, BUDGET_S, hostname="127.0.0.1", port=silent_login_node,
                           username="u", look_for_keys=False, allow_agent=False,
                           timeout=PARAMIKO_S, banner_timeout=PARAMIKO_S,
                           auth_timeout=PARAMIKO_S, channel_timeout=PARAMIKO_S)
            outcome = "connected"
        except TimeoutError:
            outcome = "cut"
        except Exception as exc:  # noqa: BLE001 - the test says what it was
            outcome = repr(exc)
        finally:
            client.close()
        with lock:
            ended.append((outcome, time.monotonic() - started))

    before = set(threading.enumerate())
    workers = [threading.Thread(target=connect) for _ in range(CONNECTS)]
    for worker in workers:
        worker.start()
    time.sleep(BUDGET_S / 2)  # every connect waits for its banner
    added = set(threading.enumerate()) - before - set(workers)
    for worker in workers:
        worker.join(BUDGET_S + 5)
    # paramiko's transport thread per connect, at most two lookups of 127.0.0.1
    # (bot.net.dns.LOOKUPS_PER_NAME); before, a timer thread per connect too
    others = [t for t in added if not isinstance(t, paramiko.Transport)]
    assert len(others) <= 2, others
    assert [outcome for outcome, _ in ended] == ["cut"] * CONNECTS
    assert max(took for _, took in ended) < BUDGET_S + 0.5
