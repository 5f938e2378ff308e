"""Opening the tunnel through a jump host ends at connect_timeout (bot.cluster.ssh.SSHRunner):
a jump host that takes the connection but never answers the tunnel's request fails the
connection with the usual timed-out error, naming the login node and the jump host, within
its deadline. The same deadline, closing the jump host's connection, also ends a request that
cannot leave (a key exchange in progress, a zero TCP window), which paramiko's own
open_channel timeout does not bound; tests/integration/test_ssh_send_blocked.py reproduces
that wait against real sshd.

The jump host is the in-process SSH peer (tests/support/sftp_peer.py), whose answer to a
"direct-tcpip" request waits until the test ends, as an sshd that cannot reach the login
node does (it answers once its own TCP connect ends), or refuses it with the RFC 4254
open-failure code the test sets: the error then says the reason and the fix, never
paramiko's repr of the refusal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from support.sftp_peer import Peer, serve_peer

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.ssh import SSHRunner
from bot.core.ssh_settings import SSHSettings
from bot.core.text import render_text
from bot.slack.render import translator

LOGIN = "login.cluster.example"  # looked up by the jump host, never by trainbot


@pytest.fixture
def jump(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=5) as p:
        yield p


def connect_through(jump: Peer, connect_timeout: float) -> tuple[ClusterUnavailable, float]:
    """The error of connecting to LOGIN through `jump`, and how long it took to come; the
    runner is left unconnected."""
    via = f"tester@127.0.0.1:{jump.port}"
    with jump.runner(host=LOGIN, port=22, proxy_jump=via,
                     connect_timeout=connect_timeout) as runner:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as err:
            runner.connect()
        took = time.monotonic() - started
        assert not runner.is_connected
    return err.value, took


def test_a_jump_host_that_never_answers_the_tunnel_request_fails_at_connect_timeout(
        jump: Peer) -> None:
    jump.tunnel_hangs = True
    err, took = connect_through(jump, 0.5)
    assert str(err) == (f"ssh to tester@{LOGIN}:22 via tester@127.0.0.1:{jump.port} timed out "
                        "after 0.5 s; is the host up and reachable?")
    # the jump host's connection (within its own 0.5 s, or the error would name it), then
    # the tunnel's 0.5 s: not waited for without end, nor past the two timeouts and slack
    assert 0.5 <= took < 2 * 0.5 + 1.0
    assert isinstance(err.__cause__, TimeoutError)


def refused(jump: Peer, code: int) -> ClusterUnavailable:
    """The error of connecting through `jump` when it refuses the tunnel with `code`."""
    jump.tunnel_refusal = code
    err, took = connect_through(jump, 5)
    assert took < 2.0
    assert isinstance(err.__cause__, paramiko.ChannelException)
    return err


@pytest.mark.parametrize(("code", "said", "ko_words"), [
    (paramiko.common.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED,
     "administratively prohibited (its sshd does not allow this forwarding). Allow it in the "
     "jump host's sshd_config: AllowTcpForwarding yes and a PermitOpen that lets {login} "
     "through, in any Match block that applies to this user too.",
     ("관리상 금지", "sshd_config", "AllowTcpForwarding yes", "PermitOpen", "Match 블록")),
    (paramiko.common.OPEN_FAILED_CONNECT_FAILED,
     "connect failed (the jump host could not reach it). Check the login node's address and "
     "port as seen from the jump host: the name is looked up there, not here.",
     ("연결 실패", "점프 호스트에서 본 로그인 노드의 주소와 포트")),
], ids=["administratively-prohibited", "connect-failed"])
def test_a_jump_host_that_refuses_the_tunnel_says_why_and_what_to_fix(
        jump: Peer, code: int, said: str, ko_words: tuple[str, ...]) -> None:
    """The jump host, the login node and the fix that fits the refusal's code, in English
    and Korean; never paramiko's repr of the refusal."""
    err = refused(jump, code)
    login = f"{LOGIN}:22"
    assert str(err) == (f"jump host 127.0.0.1:{jump.port} could not open a tunnel to {login}: "
                        + said.format(login=login))
    ko = render_text(err.text, translator("ko").gettext)
    assert ko.startswith(f"점프 호스트 127.0.0.1:{jump.port}이(가) {login}(으)로 터널을"), ko
    assert all(word in ko for word in ko_words), ko
    assert "ChannelException(" not in ko


class _JumpConnectionThatCannotSend:
    """A jump host's client whose connection cannot send (its TCP window zero): closing it
    sends nothing (it closes its socket), and cuts every send waiting on it."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


class _LoginOverTheJump:
    """A login node's client over a channel of `jump`: paramiko's close closes its socket,
    that channel, whose close sends on the jump host's connection and so waits until that
    connection is closed (without end in paramiko; 10 s here, for the test's sake)."""

    def __init__(self, jump: _JumpConnectionThatCannotSend) -> None:
        self.jump = jump
        self.closed_after_jump: bool | None = None  # not closed yet

    def close(self) -> None:
        self.closed_after_jump = self.jump.closed.is_set()
        self.jump.closed.wait(10)


def test_closing_a_runner_whose_jump_connection_cannot_send_returns_at_once() -> None:
    """The runner closes (the bot stops) while its jump host's connection cannot send: the
    close returns at once. Before, it closed the login node's client first, whose tunnel
    channel's close waited on the jump host's connection without end, the runner's lock
    held (or the in-flight clock's thread stuck, for a retired connection)."""
    runner = SSHRunner(SSHSettings(host=LOGIN, port=22, user="u", known_hosts="/nonexistent",
                                   proxy_jump="tester@127.0.0.1:1", connect_timeout=0.5))
    jump = _JumpConnectionThatCannotSend()
    login = _LoginOverTheJump(jump)
    runner._client = login  # type: ignore[assignment]  # noqa: SLF001
    runner._jump = jump  # type: ignore[assignment]  # noqa: SLF001
    closing = threading.Thread(target=runner.close, daemon=True)
    closing.start()
    closing.join(5)  # half the 10 s the login node's close waits without its jump closed
    assert not closing.is_alive(), "the runner's close never returned"
    assert login.closed_after_jump is True  # the jump host's first: nothing waited on it
    assert jump.closed.is_set() and not runner.is_connected
