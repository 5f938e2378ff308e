"""Opening the tunnel through a jump host ends at connect_timeout (bot.cluster.ssh.SSHRunner):
a jump host that takes the connection but never answers the tunnel's request fails the
connection with the usual timed-out error, naming the login node and the jump host, within
its deadline. The same deadline, closing the jump host's connection, also ends a request that
cannot leave (a key exchange in progress, a zero TCP window), which paramiko's own
open_channel timeout does not bound; that wait is not reproduced here.

The jump host is the in-process SSH peer (tests/support/sftp_peer.py), whose answer to a
"direct-tcpip" request waits until the test ends, as an sshd that cannot reach the login
node does (it answers once its own TCP connect ends).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sftp_peer import Peer, serve_peer

from bot.cluster.errors import ClusterUnavailable

LOGIN = "login.cluster.example"  # looked up by the jump host, never by trainbot


@pytest.fixture
def jump(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=5) as p:
        yield p


def test_a_jump_host_that_never_answers_the_tunnel_request_fails_at_connect_timeout(
        jump: Peer) -> None:
    jump.tunnel_hangs = True
    via = f"tester@127.0.0.1:{jump.port}"
    with jump.runner(host=LOGIN, port=22, proxy_jump=via, connect_timeout=0.5) as runner:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as err:
            runner.connect()
        took = time.monotonic() - started
        assert not runner.is_connected
    assert str(err.value) == (f"ssh to tester@{LOGIN}:22 via {via} timed out after 0.5 s; is "
                              "the host up and reachable?")
    # the jump host's connection (well within its 0.5 s here), then the tunnel's 0.5 s
    assert 0.5 <= took < 1.5
    assert isinstance(err.value.__cause__, TimeoutError)


def test_a_jump_host_that_refuses_the_tunnel_still_says_so(jump: Peer) -> None:
    via = f"tester@127.0.0.1:{jump.port}"
    with jump.runner(host=LOGIN, port=22, proxy_jump=via, connect_timeout=5) as runner:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as err:
            runner.connect()
        assert time.monotonic() - started < 2.0
    assert str(err.value) == (
        f"jump host 127.0.0.1:{jump.port} could not open a tunnel to {LOGIN}:22: "
        "ChannelException(1, 'Administratively prohibited') (is AllowTcpForwarding enabled "
        "there?)")
