"""A reconnect (bot.cluster.ssh SSHRunner._ensure_transport) says once why it reconnects and
lets go of the old connection once: its failure said once (bot.net.dns.connection_failed),
so a lookup of the name begun before is not taken, and counted once. Before, every reconnect
also said "dropped" a second time (or, after a retired connection, said "dropped" when it was
not) and said the failure twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from bot.cluster import ssh
from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings

LOGIN = "login.cluster.example"


class _Transport:
    def __init__(self) -> None:
        self.active = True

    def is_active(self) -> bool:
        return self.active

    def set_keepalive(self, interval: int) -> None:
        pass


class _Client:
    def __init__(self) -> None:
        self.transport = _Transport()
        self.closes = 0

    def get_transport(self) -> _Transport:
        return self.transport

    def close(self) -> None:
        self.closes += 1


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A runner whose connections are `_Client`s (each new one appended to `opened`), its
    failures said appended to `failed`."""
    made = SSHRunner(SSHSettings(host=LOGIN, user="u", known_hosts="/nonexistent"))
    opened: list[_Client] = []
    failed: list[tuple[str, int]] = []

    def open_client() -> tuple[_Client, None]:
        made._dialled = (LOGIN, 22)
        opened.append(_Client())
        return opened[-1], None

    monkeypatch.setattr(made, "_open_client", open_client)
    monkeypatch.setattr(ssh, "connection_failed", lambda host, port: failed.append((host, port)))
    try:
        yield SimpleNamespace(connect=made.connect, in_flight=made._in_flight,
                              is_connected=lambda: made.is_connected,
                              opened=opened, failed=failed)
    finally:
        made.close()


def _reconnect_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "reconnecting" in r.getMessage()]


def test_a_dropped_connection_is_said_once_and_its_failure_said_once(
        runner: SimpleNamespace, caplog: pytest.LogCaptureFixture) -> None:
    runner.connect()
    dead = runner.opened[0]
    dead.transport.active = False  # the connection drops
    with caplog.at_level(logging.INFO, logger=ssh.log.name):
        runner.connect()
    assert _reconnect_lines(caplog) == [
        f"ssh transport to {LOGIN} was dropped; reconnecting"]
    assert runner.failed == [(LOGIN, 22)]
    assert dead.closes == 1 and len(runner.opened) == 2 and runner.is_connected()


def test_a_retired_connection_is_said_retired_only_and_is_not_closed_by_the_reconnect(
        runner: SimpleNamespace, caplog: pytest.LogCaptureFixture) -> None:
    """Retired without the lock, its commands may still be in flight: the reconnect lets it
    go (the in-flight tracker closes it at its due time), says it retired, not dropped."""
    runner.connect()
    retired = runner.opened[0]
    with runner.in_flight.command(retired.transport, time.monotonic() + 60):
        runner.in_flight.retire(retired.transport, lambda: None)  # `_retire` without the lock
        with caplog.at_level(logging.INFO, logger=ssh.log.name):
            runner.connect()
        assert _reconnect_lines(caplog) == [
            f"ssh transport to {LOGIN} was retired; reconnecting"]
        assert runner.failed == [(LOGIN, 22)]
        assert retired.closes == 0 and len(runner.opened) == 2 and runner.is_connected()
    assert retired.closes == 1  # by the tracker, its command ended
