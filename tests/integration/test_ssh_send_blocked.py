"""A channel's opening whose request cannot leave ends at connect_timeout, with a sentence a
person can act on, over a real sshd: the login node's session (bot.cluster.ssh.SSHRunner.
_open_session) and the jump host's tunnel (SSHRunner._open_client). A command running when its
connection stops taking data ends at its own timeout, and the grace after it
(bot.cluster.in_flight.END_GRACE_S), whether another command's opening comes or not. A
runner whose jump host's connection stops taking data (its login node's connection, carried
in it, cannot send either) still closes at once, the jump host's connection first.

Between trainbot and sshd runs a TCP relay (the project's LatencyRelay, no delay) that stops
reading what trainbot sends on one connection once it has carried a given number of bytes:
the relay's buffers, then the kernel's, fill, the TCP window is zero and paramiko's send
waits for room. paramiko sends one message at a time per connection, so the opening's request
waits behind that send whatever its own size. (The kernel here has no netem, so a relay
it is, as for tests/support/latency_relay.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
from support.latency_relay import LatencyRelay, relayed_known_hosts
from support.sshd import bastion_sshd

from bot.cluster.errors import ClusterUnavailable, CommandTimedOut, SFTPTimedOut
from bot.cluster.in_flight import END_GRACE_S
from bot.cluster.ssh import SSHRunner
from bot.core.text import render_text
from bot.slack.render import translator

pytestmark = pytest.mark.integration

CONNECT_S = 1.0
RUNNING_S = 3.0  # the timeout of the command running when the connection stops taking data
SLACK_S = 1.0
FILL = 8 << 20  # more than the relay's and the kernel's buffers and sshd's channel window
IGNORED = 128 << 10  # one SSH_MSG_IGNORE's bytes: within sshd's packet limit (256 KiB), as a
# packet of it the relay forwarded in part before it stopped must be


class StallingRelay(LatencyRelay):
    """A relay whose connection number `stall_connection` (1: the first accepted) stops
    reading from trainbot's side once it has carried `stall_after` bytes that way (None: it
    never does); its other direction, and every other connection, flow on."""

    stall_connection = 1
    stall_after: int | None = None

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__(target, 0.0)
        self.accepted = 0
        self.carried = 0  # bytes carried from trainbot on the connection that stalls
        self.stalled = threading.Event()

    async def _serve(self, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        reader: Any = client_r
        if self.accepted == self.stall_connection:
            reader = _StallingReader(client_r, self)
            # a receive buffer of its own size, not autotuned: what trainbot can send before
            # its window is zero stays well below sshd's channel window (2 MiB)
            client_w.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                                         64 << 10)
        await super()._serve(reader, client_w)


class _StallingReader:
    def __init__(self, reader: asyncio.StreamReader, relay: StallingRelay) -> None:
        self.reader, self.relay = reader, relay

    async def read(self, n: int) -> bytes:
        relay = self.relay
        if relay.stall_after is not None and relay.carried >= relay.stall_after:
            relay.stalled.set()
            await asyncio.Event().wait()  # reads nothing more, until the relay stops
        limit = n if relay.stall_after is None else max(relay.stall_after - relay.carried, 1)
        data = await self.reader.read(min(n, limit))
        relay.carried += len(data)
        return data


def a_send_waits_for_room(within_s: float) -> bool:
    """True once a thread has waited in paramiko's Packetizer.write_all, which retries a send
    until the TCP window has room, for 0.5 s (two looks at its stack)."""
    def sending() -> set[int]:
        found = set()
        for ident, frame in sys._current_frames().items():  # noqa: SLF001
            f: Any = frame
            while f is not None:
                code = f.f_code
                if code.co_name == "write_all" and "paramiko" in code.co_filename:
                    found.add(ident)
                f = f.f_back
        return found

    ends = time.monotonic() + within_s
    seen = sending()
    while time.monotonic() < ends:
        time.sleep(0.5)
        now = sending()
        if seen & now:
            return True
        seen = now
    return False


def said_in_korean(err: ClusterUnavailable) -> str:
    return render_text(err.text, translator("ko").gettext)


@dataclasses.dataclass
class StdinRunning:
    """A command sending its stdin (RUNNING_S its timeout) on `runner`'s connection, which
    `relay` stopped carrying 1 MiB into it: its send waits for room."""

    runner: SSHRunner
    relay: StallingRelay
    thread: threading.Thread
    started: float
    ended: dict[str, Any]

    def ends_timed_out(self) -> None:
        """It ended by its timeout and the grace after it (its connection closed then, as
        its send waits), saying it timed out."""
        self.thread.join(RUNNING_S + END_GRACE_S + SLACK_S)
        assert not self.thread.is_alive(), "the running command outlived its timeout"
        assert self.ended["at"] - self.started < RUNNING_S + END_GRACE_S + SLACK_S
        error = self.ended["error"]
        assert isinstance(error, CommandTimedOut), self.ended
        assert str(error) == f"`sh -c 'cat >/dev/null'` did not finish within {RUNNING_S:g} s"
        assert render_text(error.text, translator("ko").gettext) == \
            f"`sh -c 'cat >/dev/null'`이(가) {RUNNING_S:g}초 안에 끝나지 않았습니다"

    def next_command_connects_afresh(self) -> None:
        assert self.runner.run(["echo", "fresh"]).stdout == "fresh\n"
        assert self.relay.accepted == 2  # the stalled connection, then a new one


@contextlib.contextmanager
def stdin_running_when_the_relay_stalls(dev_cluster: Any, tmp_path: Path
                                        ) -> Iterator[StdinRunning]:
    settings = dev_cluster.ssh_settings()
    with StallingRelay((settings.host, settings.port)) as relay:
        known = relayed_known_hosts(settings.known_hosts, settings.host, settings.port,
                                    relay.port, directory=str(tmp_path))
        s = dataclasses.replace(settings, port=relay.port, known_hosts=known,
                                connect_timeout=CONNECT_S)
        with SSHRunner(s) as runner:
            assert runner.run(["echo", "up"]).stdout == "up\n"
            # the bot host's send buffer, not autotuned (up to 4 MiB here): with the relay's
            # it holds less than sshd's channel window (2 MiB), so the stdin's send, not its
            # wait for that window, is what blocks
            sock = runner.transport.sock
            assert isinstance(sock, socket.socket)  # connected directly, no jump host
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
            relay.stall_after = relay.carried + (1 << 20)  # 1 MiB into the stdin below
            ended: dict[str, Any] = {}

            def send_stdin() -> None:
                try:
                    runner.run(["sh", "-c", "cat >/dev/null"], stdin=b"x" * FILL,
                               timeout=RUNNING_S)
                except Exception as exc:  # noqa: BLE001 - checked by ends_timed_out
                    ended["error"] = exc
                ended["at"] = time.monotonic()

            thread = threading.Thread(target=send_stdin, daemon=True)
            running = StdinRunning(runner, relay, thread, time.monotonic(), ended)
            thread.start()
            assert relay.stalled.wait(RUNNING_S), ("the relay never stopped reading", ended)
            assert a_send_waits_for_room(1.5), "the stdin's send found room: nothing blocked"
            yield running


def test_a_session_behind_a_send_that_cannot_leave_fails_at_connect_timeout(
        dev_cluster: Any, tmp_path: Path) -> None:
    """A command is sending its stdin when the login node's connection stops taking data: the
    next command's session cannot open. It fails within connect_timeout saying what happened
    and what to check; the running command ends timed out, by its own timeout and the grace
    after it; the command after them runs on a new connection."""
    with stdin_running_when_the_relay_stalls(dev_cluster, tmp_path) as running:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as err:
            running.runner.run(["echo", "blocked"])
        assert time.monotonic() - started < CONNECT_S + SLACK_S
        host = dev_cluster.ssh_settings().host
        assert str(err.value) == (
            f"cannot open an ssh session on {host}: the connection did not open one "
            f"within {CONNECT_S:g} s (the login node or its sshd is hung, or the network "
            "stopped carrying its data). That connection takes no new commands: the next "
            "command opens a new one, and the commands running on it end by their own "
            f"deadlines. If this repeats, check from the bot's host that {host} is up and "
            f"that `ssh {host} true` answers.")
        ko = said_in_korean(err.value)
        assert ko.startswith(f"{host}에서 ssh 세션을 열 수 없습니다"), ko
        assert f"`ssh {host} true`" in ko, ko

        running.ends_timed_out()
        running.next_command_connects_afresh()


def test_a_command_behind_a_send_that_cannot_leave_ends_at_its_timeout_with_none_after(
        dev_cluster: Any, tmp_path: Path) -> None:
    """A command is sending its stdin when the login node's connection stops taking data, and
    no command comes after it to find the connection stuck: its signal and its channel's
    close cannot leave either. It ends timed out, by its own timeout and the grace after it,
    its connection retired and closed; the next command runs on a new connection."""
    with stdin_running_when_the_relay_stalls(dev_cluster, tmp_path) as running:
        running.ends_timed_out()
        running.next_command_connects_afresh()


def test_an_sftp_upload_behind_a_send_that_cannot_leave_ends_at_sftp_timeout(
        dev_cluster: Any, tmp_path: Path) -> None:
    """An SFTP upload (pipelined writes) is under way when the login node's connection stops
    taking data: its send is cut at sftp_timeout and the grace after it, saying what to check
    (en, ko); the connection is closed and the next SFTP request runs on a new one."""
    settings = dev_cluster.ssh_settings()
    local = tmp_path / "upload"
    local.write_bytes(b"x" * FILL)
    remote = f".trainbot-sftp-send-blocked-{tmp_path.name}"
    with StallingRelay((settings.host, settings.port)) as relay:
        known = relayed_known_hosts(settings.known_hosts, settings.host, settings.port,
                                    relay.port, directory=str(tmp_path))
        s = dataclasses.replace(settings, port=relay.port, known_hosts=known,
                                connect_timeout=CONNECT_S, sftp_timeout=RUNNING_S)
        with SSHRunner(s) as runner:
            pool = runner.sftp()
            pool.stat(".")
            sock = runner.transport.sock
            assert isinstance(sock, socket.socket)  # connected directly, no jump host
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)  # see above
            relay.stall_after = relay.carried + (1 << 20)
            ended: dict[str, Any] = {}

            def upload() -> None:
                try:
                    pool.put(str(local), remote)
                except Exception as exc:  # noqa: BLE001 - checked below
                    ended["error"] = exc
                ended["at"] = time.monotonic()

            thread = threading.Thread(target=upload, daemon=True)
            thread.start()
            assert relay.stalled.wait(RUNNING_S), ("the relay never stopped reading", ended)
            stalled = time.monotonic()
            assert a_send_waits_for_room(1.5), "the upload's send found room: nothing blocked"
            thread.join(RUNNING_S + END_GRACE_S + SLACK_S)
            assert not thread.is_alive(), "the SFTP upload outlived its deadline"
            assert ended["at"] - stalled < RUNNING_S + END_GRACE_S + SLACK_S
            host = settings.host
            error = ended["error"]
            assert isinstance(error, SFTPTimedOut), ended
            assert str(error) == (
                f"SFTP put of {remote} on {host}: the connection could not send within "
                f"{RUNNING_S:g} s (the login node or its sshd is hung, or the network stopped "
                "carrying its data). That connection was closed: the next request opens a new "
                f"one. If this repeats, check from the bot's host that {host} is up and that "
                f"`ssh {host} true` answers.")
            ko = said_in_korean(error)
            assert ko.startswith(f"{host}에서 {remote}의 SFTP put: 연결이"), ko
            assert pool.stat(".").st_mode is not None  # on a new connection
            assert relay.accepted == 2
            pool.remove(remote)


def test_a_tunnel_behind_a_send_that_cannot_leave_fails_at_connect_timeout(
        dev_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The jump host's connection stops taking data as the tunnel is asked for, large
    messages (SSH_MSG_IGNORE, which sshd discards) being sent ahead of the request: the
    connection fails within the jump host's connection plus the tunnel's connect_timeout,
    naming the login node and the jump host."""
    settings = dev_cluster.ssh_settings()
    with bastion_sshd(dev_cluster, tmp_path) as (port, known, _log), \
            StallingRelay(("127.0.0.1", port)) as relay:
        known = relayed_known_hosts(known, "127.0.0.1", port, relay.port,
                                    directory=str(tmp_path))
        jump = f"{settings.user}@127.0.0.1:{relay.port}"
        s = dataclasses.replace(settings, proxy_jump=jump, known_hosts=known,
                                connect_timeout=CONNECT_S)
        open_channel = paramiko.Transport.open_channel

        def behind_a_blocked_send(t: paramiko.Transport, kind: str, *args: Any,
                                  **kwargs: Any) -> paramiko.Channel:
            if kind == "direct-tcpip":
                relay.stall_after = relay.carried
                for _ in range(FILL // IGNORED):
                    t.send_ignore(IGNORED)
            return open_channel(t, kind, *args, **kwargs)

        monkeypatch.setattr(paramiko.Transport, "open_channel", behind_a_blocked_send)
        with SSHRunner(s) as runner:
            started = time.monotonic()
            with pytest.raises(ClusterUnavailable) as err:
                runner.connect()
            took = time.monotonic() - started
            assert not runner.is_connected
    assert relay.stalled.is_set()
    assert took < 2 * CONNECT_S + SLACK_S  # the jump host's connection, then the tunnel's
    login = f"{settings.user}@{settings.host}:{settings.port}"
    assert str(err.value) == (f"ssh to {login} via {jump} timed out after {CONNECT_S:g} s; "
                              "is the host up and reachable?")
    ko = said_in_korean(err.value)
    assert ko.startswith(f"{login} ({jump} 경유)(으)로의 ssh가 {CONNECT_S:g}초 뒤 시간 초과"), ko


def test_a_jumped_runner_whose_login_node_connection_cannot_send_still_closes(
        dev_cluster: Any, tmp_path: Path) -> None:
    """The runner reaches the login node through a jump host (a second sshd on 127.0.0.1,
    forwarding to the dev cluster's) whose connection stops taking data while a command sends
    its stdin: the login node's connection, carried in a channel of the jump host's, cannot
    send. The runner's close (the bot stopping) still returns at once: it closes the jump
    host's connection first, which cuts the sends waiting on it, then the login node's, which
    then sends nothing there; the command ends as cut with its connection, not at its
    timeout. Closed the other way round, the login node's close (its channel's close, a send
    on the jump host's connection) would wait without end."""
    settings = dev_cluster.ssh_settings()
    closed: list[str] = []
    ended: dict[str, Any] = {}
    returned = False
    with bastion_sshd(dev_cluster, tmp_path) as (port, known, _log), \
            StallingRelay(("127.0.0.1", port)) as relay:
        known = relayed_known_hosts(known, "127.0.0.1", port, relay.port,
                                    directory=str(tmp_path))
        s = dataclasses.replace(settings, proxy_jump=f"{settings.user}@127.0.0.1:{relay.port}",
                                known_hosts=known, connect_timeout=CONNECT_S)
        runner = SSHRunner(s)
        try:
            assert runner.run(["echo", "up"]).stdout == "up\n"
            login, jump = runner._client, runner._jump  # noqa: SLF001 - the two connections
            assert login is not None and jump is not None
            login_t, jump_t = login.get_transport(), jump.get_transport()
            assert login_t is not None and jump_t is not None
            assert isinstance(jump_t.sock, socket.socket)  # the jump host's: the relay's TCP
            jump_t.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
            for name, client in (("jump host", jump), ("login node", login)):
                def noted(close: Any = client.close, name: str = name) -> None:
                    closed.append(name)
                    close()
                client.close = noted  # type: ignore[method-assign]
            relay.stall_after = relay.carried + (1 << 20)  # 1 MiB into the stdin below

            def send_stdin() -> None:
                try:
                    runner.run(["sh", "-c", "cat >/dev/null"], stdin=b"x" * FILL, timeout=60)
                except Exception as exc:  # noqa: BLE001 - checked below
                    ended["error"] = exc

            thread = threading.Thread(target=send_stdin, daemon=True)
            thread.start()
            assert relay.stalled.wait(RUNNING_S), ("the relay never stopped reading", ended)
            assert a_send_waits_for_room(1.5), "the stdin's send found room: nothing blocked"
            closing = threading.Thread(target=runner.close, daemon=True)
            closing.start()
            closing.join(5.0)  # closed the other way round, it waits until the relay stops
            returned = not closing.is_alive()
            thread.join(SLACK_S)
        finally:  # the relay's stop below ends a close that waits on it
            if returned:
                runner.close()
    closing.join(SLACK_S)
    assert returned, f"the close did not return within 5 s: {closed}"
    assert closed[:2] == ["jump host", "login node"]
    assert not jump_t.is_active() and not login_t.is_active()
    assert not thread.is_alive(), "the command's send was not cut"
    error = ended.get("error")
    assert isinstance(error, ClusterUnavailable) and "lost" in str(error), ended
