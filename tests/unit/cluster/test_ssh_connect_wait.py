"""The runner's lock, held while a connection is made, is waited for at most the time one
connection may take (bot.core.takeover.RemoteDeadlines.connect_at_most_s), as the takeovers
count it: by a command, by the cluster's SFTP, by the check after a channel closed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import paramiko
import pytest
from support.runner_lock import another_task_holding_the_lock
from support.sftp_peer import serve_peer

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings
from bot.core.text import render_text
from bot.slack.render import translator

SETTINGS = SSHSettings(host="127.0.0.1", port=1, user="u", known_hosts="/nonexistent",
                       connect_timeout=0.3)
STILL_CONNECTING = ("another task was still connecting to 127.0.0.1 or closing its connection "
                    "after 0.3 s")
STILL_CONNECTING_KO = ("0.3초가 지나도록 다른 작업이 127.0.0.1에 연결하거나 그 연결을 닫는 "
                       "중이었습니다")


def while_another_thread_connects(runner: SSHRunner,
                                  call: Callable[[], object]) -> tuple[object, float]:
    """`call()`'s answer (or what it raised) while another thread holds the runner's lock, as
    _ensure_transport does while it connects, and how long it took."""
    with another_task_holding_the_lock(runner):
        started = time.monotonic()
        try:
            outcome = call()
        except ClusterUnavailable as exc:
            outcome = exc
        return outcome, time.monotonic() - started


def test_a_connection_another_thread_makes_is_waited_for_one_connections_time() -> None:
    runner = SSHRunner(SETTINGS)
    outcome, took = while_another_thread_connects(runner, lambda: runner.run(["true"]))
    assert isinstance(outcome, ClusterUnavailable) and str(outcome) == STILL_CONNECTING
    # said of any holder (a close, a retirement too), not only of a connection being made
    assert render_text(outcome.text, translator("ko").gettext) == STILL_CONNECTING_KO
    assert took < 2.0  # before, it waited for the other thread, however long it took
    assert runner.deadlines().connect_at_most_s == 0.3


def test_sftp_waits_for_another_threads_connection_one_connections_time() -> None:
    """The cluster's SFTP asked for while another thread holds the runner's lock fails after
    one connection's time, saying so. Before, it waited for the other thread, however long."""
    runner = SSHRunner(SETTINGS)
    outcome, took = while_another_thread_connects(runner, runner.sftp)
    assert isinstance(outcome, ClusterUnavailable) and str(outcome) == STILL_CONNECTING
    assert took < 2.0


class _DeadChannel:
    """A channel whose connection is gone (paramiko gives None for a closed transport)."""

    def get_transport(self) -> None:
        return None


def test_a_channel_closed_under_its_command_is_said_so_while_another_thread_connects() -> None:
    """A channel found closed under its command while another thread holds the runner's lock
    (connecting): the command is said cut by its lost connection after one connection's time
    at most (the runner's connection, if dead, left to the next command to drop). Before, it
    waited for the other thread, however long."""
    runner = SSHRunner(SETTINGS)
    dead = _DeadChannel()
    outcome, took = while_another_thread_connects(
        runner, lambda: runner._lost_under(dead))  # type: ignore[arg-type]  # noqa: SLF001
    assert outcome is True  # ChannelClosed(connection_lost=True): it may have run
    assert 0.25 < took < 2.0


def test_close_while_another_task_holds_the_lock_returns_within_one_connections_time(
        tmp_path: Path) -> None:
    """The runner is closed (the bot stopping) while another task holds its lock past its
    bound (stuck closing a connection): the close returns after one connection's time
    (RemoteDeadlines.lock_wait_s), having closed the runner's connection and its SFTP
    channels without the lock. Before, it waited for the holder, however long it held it."""
    with serve_peer(tmp_path, sftp_timeout=5) as peer:
        runner = peer.runner(connect_timeout=0.3)
        connection = runner.transport
        runner.sftp().stat(".")  # an SFTP channel open on it
        with another_task_holding_the_lock(runner) as holder:
            started = time.monotonic()
            runner.close()
            took = time.monotonic() - started
            assert holder.is_alive()  # still holding it: not waited for
        assert runner.deadlines().lock_wait_s == 0.3
        assert 0.25 < took < 0.3 + 1.0, took
        assert not connection.is_active()
        assert runner.sftp().channels == []
        runner.close()  # safe twice


RUNNER_CLOSED = "not connecting to 127.0.0.1: the runner was closed (trainbot is stopping)"
RUNNER_CLOSED_KO = "127.0.0.1에 연결하지 않습니다: 러너가 닫혔습니다 (trainbot이 멈추는 중입니다)"


def test_a_connection_the_holder_makes_past_the_runners_close_is_closed_at_once(
        tmp_path: Path) -> None:
    """A task is connecting, holding the runner's lock, when the bot stops, and its
    connection is made only after the runner's close gave up on the lock (one connection's
    time) and returned. That connection is closed at once and the task fails,
    saying the runner was closed (en, ko); a command after the close connects no more.
    Before, the connection stayed open after the bot's last close, nothing left to close it."""
    with serve_peer(tmp_path, sftp_timeout=5) as peer:
        runner = peer.runner(connect_timeout=0.3)
        connecting, closed = threading.Event(), threading.Event()
        opened: list[paramiko.Transport] = []
        open_client = runner._open_client  # noqa: SLF001

        def slow_to_connect() -> tuple[paramiko.SSHClient, paramiko.SSHClient | None]:
            connecting.set()
            assert closed.wait(5)  # made once the runner's close has returned
            client, jump = open_client()
            opened.append(client.get_transport())  # type: ignore[arg-type]
            return client, jump

        runner._open_client = slow_to_connect  # type: ignore[method-assign]  # noqa: SLF001
        ended: dict[str, object] = {}

        def connect() -> None:
            try:
                runner.connect()
            except ClusterUnavailable as exc:
                ended["error"] = exc

        task = threading.Thread(target=connect, daemon=True)
        task.start()
        assert connecting.wait(5)
        runner.close()  # gives up on the lock after 0.3 s
        closed.set()
        task.join(5)
        assert not task.is_alive()
        [connection] = opened  # it did connect ...
        assert not connection.is_active()  # ... and that connection is closed
        error = ended.get("error")
        assert isinstance(error, ClusterUnavailable) and str(error) == RUNNER_CLOSED, ended
        assert render_text(error.text, translator("ko").gettext) == RUNNER_CLOSED_KO
        with pytest.raises(ClusterUnavailable, match="the runner was closed"):
            runner.run(["true"])
        assert opened == [connection]  # refused before connecting
