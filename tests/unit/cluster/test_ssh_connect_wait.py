"""A command waits for a connection another thread is making at most the time one connection
may take (bot.core.takeover.RemoteDeadlines.connect_at_most_s), as the takeovers count it."""

from __future__ import annotations

import threading
import time

import pytest

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.ssh import SSHRunner, SSHSettings


def test_a_connection_another_thread_makes_is_waited_for_one_connections_time() -> None:
    settings = SSHSettings(host="127.0.0.1", port=1, user="u", known_hosts="/nonexistent",
                           connect_timeout=0.3)
    runner = SSHRunner(settings)
    connecting, release = threading.Event(), threading.Event()

    def another_thread_connecting() -> None:  # holds the runner's connection lock
        with runner._lock:  # noqa: SLF001 - what _ensure_transport holds while it connects
            connecting.set()
            release.wait(5)

    holder = threading.Thread(target=another_thread_connecting, daemon=True)
    holder.start()
    assert connecting.wait(5)
    started = time.monotonic()
    try:
        with pytest.raises(ClusterUnavailable) as err:
            runner.run(["true"])
        took = time.monotonic() - started
    finally:
        release.set()
        holder.join(5)
    assert str(err.value) == ("the connection to 127.0.0.1 was still being made by another "
                              "task after 0.3 s")
    assert took < 2.0  # before, it waited for the other thread, however long it took
    assert runner.deadlines().connect_at_most_s == 0.3
