"""One remote command ends within the worst case bot.core.takeover counts for it
(RemoteDeadlines.command_at_most_s), over a real sshd, when its connection is retried and
slow: a second sshd on loopback whose authentication stalls on demand (its
AuthorizedKeysCommand sleeps while a flag file exists), reached through the project's TCP
latency relay, which cuts the connection on demand (the runner's session open then fails on
a dead connection and reconnects once)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from support.latency_relay import LatencyRelay
from support.sshd import keygen, loopback_sshd

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings
from bot.core.takeover import RemoteDeadlines

pytestmark = pytest.mark.integration

CONNECT_S = 1.5
COMMAND_S = 1.0
KEYS = 5  # identity files tried one after another, each up to paramiko's auth_timeout


class CuttingRelay(LatencyRelay):
    """A LatencyRelay that, once `cut_next` is set, drops the next connection that speaks
    (client to server) instead of forwarding it: that connection is closed both ways."""

    cut_next = False
    cuts = 0
    accepted = 0

    async def _serve(self, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        await super()._serve(_CutReader(client_r, self), client_w)  # type: ignore[arg-type]


class _CutReader:
    def __init__(self, reader: asyncio.StreamReader, relay: CuttingRelay) -> None:
        self.reader, self.relay = reader, relay

    async def read(self, n: int) -> bytes:
        data = await self.reader.read(n)
        if data and self.relay.cut_next:
            self.relay.cut_next = False
            self.relay.cuts += 1
            return b""  # the pump ends: the relay closes both sides
        return data


@pytest.fixture
def slow_auth_sshd(dev_cluster: Any, tmp_path: Path):
    """An sshd on a free loopback port letting the dev cluster's user in with its key; while
    the returned flag file exists, each key it is offered takes 20 s to look up. Stopped by
    its pid at the end."""
    flag = tmp_path / "stall"
    keys = Path(dev_cluster.key_file).parent / "authorized_keys"
    with loopback_sshd(tmp_path, "slow", (
        "AuthorizedKeysFile none\n"
        f'AuthorizedKeysCommand /bin/sh -c "test -e {flag} && sleep 20; cat {keys}"\n'
        "AuthorizedKeysCommandUser root\nMaxAuthTries 10\n"
        f"AllowUsers {dev_cluster.user}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nUseDNS no\n"
    )) as (port, pub, _log):
        yield port, pub, flag


def test_a_retried_connection_whose_authentication_stalls_ends_within_the_commands_bound(
    dev_cluster: Any, slow_auth_sshd: tuple[int, str, Path], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The runner is connected through the relay; the relay then cuts the connection as the
    command's session is asked for (the session open fails on a dead connection: the runner
    reconnects once), and the login node's authentication now stalls on each of the five
    keys it is offered. The command fails, saying the connection timed out, within its worst
    case as bot.core.takeover counts it: here 6 × 1.5 s + 1 s. Before, a connection ended
    only when each key's authentication had timed out (paramiko's auth_timeout is per key:
    5 × 1.5 s), past the 4 s (2 × connect + command) the takeovers counted for a command."""
    port, pub, flag = slow_auth_sshd
    keys = [dev_cluster.key_file]
    for i in range(KEYS - 1):
        extra = tmp_path / f"extra_{i}"
        keygen(extra)
        keys.append(str(extra))
    with CuttingRelay(("127.0.0.1", port), 0.02) as relay:
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{relay.port} ssh-ed25519 {pub}\n")
        config = tmp_path / "ssh_config"
        config.write_text(
            "Host slow\n  HostName 127.0.0.1\n"
            f"  Port {relay.port}\n  User {dev_cluster.user}\n"
            + "".join(f"  IdentityFile {k}\n" for k in keys)
            + f"  UserKnownHostsFile {known}\n")
        settings = SSHSettings(host="slow", ssh_config=str(config),
                               connect_timeout=CONNECT_S, command_timeout=COMMAND_S)
        bound = RemoteDeadlines(connect_s=CONNECT_S, command_s=COMMAND_S).command_at_most_s
        with SSHRunner(settings) as runner:
            assert runner.run(["echo", "up"]).stdout == "up\n"  # the first key, at once
            assert relay.accepted == 1
            flag.touch()
            time.sleep(0.3)  # the first command's channel close has passed the relay
            relay.cut_next = True
            caplog.set_level(logging.INFO, logger="bot.cluster.ssh")
            started = time.monotonic()
            with pytest.raises(ClusterUnavailable) as err:
                runner.run(["echo", "again"])
            took = time.monotonic() - started
    assert took <= bound, (took, bound, str(err.value))
    assert relay.cuts == 1 and relay.accepted == 2  # cut, then reconnected once
    assert "reconnecting once" in caplog.text
    assert f"timed out after {CONNECT_S:g} s" in str(err.value)
