"""The runner's lock, held while a connection is made, is waited for at most the time one
connection may take (bot.core.takeover.RemoteDeadlines.connect_at_most_s), as the takeovers
count it: by a command, by the cluster's SFTP, by the check after a channel closed."""

from __future__ import annotations

import time
from collections.abc import Callable

from support.runner_lock import another_task_holding_the_lock

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.ssh import SSHRunner, SSHSettings
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
