"""Every SFTP request's send is bounded by sftp_timeout, as a command's is by its timeout
(bot.cluster.sftp.DeadlineSFTPClient, bot.cluster.in_flight): paramiko sends one message at a
time per connection and retries a send that finds the TCP window full until the connection is
closed, so a login node that reads nothing more held an SFTP write (and every later request on
the connection) without end, whatever the reply deadline. Now a send stuck past sftp_timeout
retires its connection, whose close cuts it: the caller gets a sentence naming the request,
the path, the host and what to check, in English and Korean, and the next request runs on a
new connection. A retired connection's idle SFTP channels are not used again.

The login node is the in-process SSH peer (tests/support/sftp_peer.py): Peer.stall_after
makes its connection read nothing more, Peer.session_hangs leaves a session's opening
unanswered (a hung sshd).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from support.sftp_peer import Peer, serve_peer

from bot.cluster import ssh
from bot.cluster.errors import ClusterUnavailable, CommandTimedOut, SFTPTimedOut
from bot.cluster.in_flight import END_GRACE_S
from bot.core.text import render_text
from bot.slack.render import translator

SFTP_S = 1.0
CONNECT_S = 0.5
SLACK_S = 1.5


def says_its_connection_was_closed(error: Exception, what: str, what_ko: str) -> None:
    """`error` says `what` (in Korean `what_ko`), why, that its connection was closed and what
    to check, in English and Korean."""
    assert str(error) == (
        f"{what} (the login node or its sshd is hung, or the network stopped carrying its "
        "data). That connection was closed: the next request opens a new one. If this repeats, "
        "check from the bot's host that 127.0.0.1 is up and that `ssh 127.0.0.1 true` answers.")
    assert isinstance(error, ClusterUnavailable)
    ko = render_text(error.text, translator("ko").gettext)
    assert ko.startswith(f"{what_ko} ("), ko
    assert "그 연결은 닫았습니다" in ko and "`ssh 127.0.0.1 true`" in ko, ko


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=SFTP_S) as p:
        yield p


def test_an_sftp_write_stuck_in_its_send_ends_by_its_deadline(peer: Peer, tmp_path: Path) -> None:
    """An upload (pipelined writes) is under way when the login node stops reading: its sends
    fill the TCP buffers and wait. It fails within sftp_timeout and END_GRACE_S, saying the
    connection could not send and what to check (en, ko); that connection is closed and the
    next request is answered on a new one."""
    local = tmp_path / "big"
    local.write_bytes(b"x" * (4 << 20))
    ended: dict[str, object] = {}
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        pool = runner.sftp()
        pool.stat(".")
        stuck = runner.transport
        sock = stuck.sock
        assert isinstance(sock, socket.socket)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)  # not autotuned
        peer.stall_after = peer.received + (256 << 10)
        started = time.monotonic()

        def upload() -> None:
            try:
                pool.put(str(local), "files-up")
            except Exception as exc:  # noqa: BLE001 - checked below
                ended["error"] = exc
            ended["at"] = time.monotonic()

        thread = threading.Thread(target=upload, daemon=True)
        thread.start()
        thread.join(SFTP_S + END_GRACE_S + SLACK_S)
        assert not thread.is_alive(), "the SFTP write outlived its deadline and grace"
        assert peer.received >= peer.stall_after  # it stopped reading: the sends were stuck
        error = ended["error"]
        assert isinstance(error, SFTPTimedOut), ended
        assert float(ended["at"]) - started >= SFTP_S  # type: ignore[arg-type]
        says_its_connection_was_closed(
            error, "SFTP put of files-up on 127.0.0.1: the connection could not send within 1 s",
            "127.0.0.1에서 files-up의 SFTP put: 연결이 1초 안에 요청을 보내지 못했습니다")
        assert not stuck.is_active()
        peer.stall_after = None
        assert pool.stat(".").st_mode is not None  # answered, on a new connection
        assert runner.transport is not stuck
        assert all(c.get_transport() is runner.transport for c in pool.channels)


def _retire_by_a_hung_opening(runner, peer: Peer) -> None:  # noqa: ANN001
    """The login node's sshd stops answering a session's opening: the runner retires the
    connection (bot.cluster.ssh.SSHRunner._open_session)."""
    peer.session_hangs = True
    with pytest.raises(ClusterUnavailable, match="cannot open an ssh session"):
        runner.run(["true"])
    peer.session_hangs = False  # the next connection answers


def test_an_idle_retired_connections_sftp_channels_are_reopened_on_the_new_one(
        peer: Peer) -> None:
    """The pool's idle channel was on a connection retired with nothing running: it is
    closed at once, and the next SFTP request opens a channel on the new connection."""
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        pool = runner.sftp()
        pool.stat(".")
        old = runner.transport
        _retire_by_a_hung_opening(runner, peer)
        assert not old.is_active()
        sessions = peer.sessions
        started = time.monotonic()
        assert pool.stat(".").st_mode is not None
        assert time.monotonic() - started < SFTP_S
        assert runner.transport is not old and peer.sessions > sessions
        assert [c.get_transport() for c in pool.channels] == [runner.transport]


def test_a_busy_retired_connections_idle_sftp_channel_is_not_used(peer: Peer) -> None:
    """A command runs on the connection when it is retired, so it stays open until the
    command's deadline; the pool's idle channel on it is not handed out (its sshd answers
    nothing more): the request is answered at once on a new connection."""
    peer.exec_runs = True  # the command runs, silent, until its channel is closed
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        pool = runner.sftp()
        pool.stat(".")
        old = runner.transport
        ended: list[BaseException] = []

        def command() -> None:
            try:
                runner.run(["sleep"], timeout=3.0)
            except Exception as exc:  # noqa: BLE001 - checked below
                ended.append(exc)

        running = threading.Thread(target=command, daemon=True)
        running.start()
        time.sleep(0.3)  # the command is running
        _retire_by_a_hung_opening(runner, peer)
        assert old.is_active()  # the command still runs on it
        started = time.monotonic()
        assert pool.stat(".").st_mode is not None
        assert time.monotonic() - started < SFTP_S
        assert runner.transport is not old
        assert [c.get_transport() for c in pool.channels] == [runner.transport]
        running.join(3.0 + END_GRACE_S + SLACK_S)
        assert [type(e) for e in ended] == [CommandTimedOut]  # ended by its own deadline
        assert not old.is_active()


def _threads() -> set[threading.Thread]:
    """The threads alive now, other than the process's one deadlines thread (bot.net.deadlines,
    which keeps every runner's deadlines and outlives them all) and paramiko's own per
    connection (each side's transport, the login node's SFTP server), checked apart."""
    return {t for t in threading.enumerate()
            if t.name != "deadlines"
            and not isinstance(t, (paramiko.Transport, paramiko.SubsystemHandler))}


def _keeps_nothing(runner) -> bool:  # noqa: ANN001
    """Whether nothing of the runner's commands in flight is left on the deadlines thread
    (bot.cluster.in_flight): no look at its heap armed there, nothing in the heap. A clock
    armed for good would hold the runner (and its connections) for the process's life."""
    in_flight = runner._in_flight  # noqa: SLF001 - what the deadlines thread holds of it
    with in_flight._due:  # noqa: SLF001
        return in_flight._wake is None and not in_flight._heap  # noqa: SLF001


def _no_thread_left(before: set[threading.Thread], wait: float) -> set[threading.Thread]:
    """The threads started since `before` still alive after at most `wait` seconds."""
    deadline = time.monotonic() + wait
    while (left := {t for t in _threads() - before if t.is_alive()}) and (
            time.monotonic() < deadline):
        time.sleep(0.05)
    return left


def _stuck_sending(runner, peer: Peer) -> threading.Thread:  # noqa: ANN001
    """The runner's connection stops being read by the login node while a send is under way
    (a large message, as a command's stdin): that send waits for room in a TCP window that
    stays zero, and every later send on the connection waits behind it. The sending thread,
    which ends when the connection is closed."""
    transport = runner.transport
    sock = transport.sock
    assert isinstance(sock, socket.socket)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)  # not autotuned
    peer.stall_after = peer.received + (64 << 10)

    def flood() -> None:
        try:
            while True:
                transport.send_ignore(128 << 10)
        except (EOFError, OSError, paramiko.SSHException):  # the connection closed under it
            return

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while peer.received < peer.stall_after:
        assert time.monotonic() < deadline, "the login node never stopped reading"
        time.sleep(0.01)
    time.sleep(0.3)  # the buffers fill: the send waits for room
    assert thread.is_alive()
    return thread


def _first_sftp_request(runner) -> tuple[threading.Thread, dict[str, object]]:  # noqa: ANN001
    """A stat on the runner's SFTP, on a thread of its own (started), and what it ended with:
    its error, and when (monotonic), filled in as it ends."""
    ended: dict[str, object] = {}

    def first_request() -> None:
        try:
            runner.sftp().stat(".")
        except Exception as exc:  # noqa: BLE001 - the caller checks it
            ended["error"] = exc
        ended["at"] = time.monotonic()

    thread = threading.Thread(target=first_request, daemon=True)
    thread.start()
    return thread, ended


def test_closing_a_runner_whose_connection_cannot_send_ends_at_once_with_no_clock_left(
        peer: Peer) -> None:
    """The runner closes (the bot stops) while its connection to a hung login node cannot
    send, an SFTP channel idle in its pool: the close returns at once, without waiting on
    that channel's close (a send behind the stuck one), and leaves nothing behind: no thread,
    nothing of its clock on the process's deadlines thread. Before, it waited for the clock to
    retire the connection, which waited for the close: the bot never stopped."""
    before = _threads()
    runner = peer.runner(connect_timeout=CONNECT_S)
    try:
        pool = runner.sftp()
        pool.stat(".")
        stuck = runner.transport
        sending = _stuck_sending(runner, peer)
        closing = threading.Thread(target=runner.close, daemon=True)
        started = time.monotonic()
        closing.start()
        closing.join(SFTP_S + END_GRACE_S + SLACK_S)
        assert not closing.is_alive(), "the runner's close never returned"
        assert time.monotonic() - started < SLACK_S  # not at a deadline: at once
        assert not stuck.is_active()
        sending.join(SLACK_S)
        assert not sending.is_alive()  # the stuck send was cut
        assert _keeps_nothing(runner), "the runner's clock outlived its close"
        assert not _no_thread_left(before, SLACK_S), "a thread outlived the runner's close"
        assert pool.channels == []
    finally:
        peer.release.set()  # the login node reads again: a close still waiting ends
        runner.close()


def test_closing_a_runner_after_sftp_leaves_no_clock_thread(peer: Peer) -> None:
    """Each runner closed after an SFTP request left its clock running (the pool's channels'
    closes started it again): a bot that makes a runner per check leaked one each. Now each
    closed runner has nothing armed on the deadlines thread, and no thread is left."""
    before = _threads()
    runners = []
    for _ in range(3):
        with peer.runner(connect_timeout=CONNECT_S) as runner:
            runner.sftp().stat(".")
        runners.append(runner)
    assert all(_keeps_nothing(r) for r in runners), "a closed runner's clock is still armed"
    assert not _no_thread_left(before, SLACK_S), "a thread outlived its runner"


def test_an_sftp_channel_whose_subsystem_request_cannot_leave_fails_by_its_deadline(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new SFTP channel asks for the "sftp" subsystem while its connection cannot send
    (the login node stopped reading during another send): the request waits behind that
    send. It fails within sftp_timeout and END_GRACE_S, saying the SFTP server did not start,
    that the connection was closed and what to check (en, ko); the connection is retired
    (closed: nothing else ran on it) and the next request opens a new one. Before, it waited
    until something else closed the connection."""
    invoke_subsystem = paramiko.Channel.invoke_subsystem
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = runner.transport
        sending: list[threading.Thread] = []

        def behind_a_stuck_send(chan: paramiko.Channel, name: str) -> None:
            monkeypatch.setattr(paramiko.Channel, "invoke_subsystem", invoke_subsystem)  # once
            sending.append(_stuck_sending(runner, peer))
            invoke_subsystem(chan, name)

        monkeypatch.setattr(paramiko.Channel, "invoke_subsystem", behind_a_stuck_send)
        started = time.monotonic()
        thread, ended = _first_sftp_request(runner)
        thread.join(SFTP_S + END_GRACE_S + SLACK_S)
        try:
            assert not thread.is_alive(), "the SFTP channel's opening outlived its deadline"
            assert float(ended["at"]) - started >= SFTP_S  # type: ignore[arg-type]
            error = ended["error"]
            assert isinstance(error, ClusterUnavailable), ended
            says_its_connection_was_closed(
                error, "the SFTP server on 127.0.0.1 did not start within 1 s",
                "127.0.0.1의 SFTP 서버가 1초 안에 시작되지 않았습니다")
            assert not stuck.is_active()
            sending[0].join(SLACK_S)
            assert not sending[0].is_alive()  # the send it waited behind was cut
            peer.stall_after = None
            assert runner.sftp().stat(".").st_mode is not None  # on a new connection
            assert runner.transport is not stuck
        finally:
            peer.release.set()  # the login node reads again: a request still waiting ends


def test_a_channel_handed_back_after_the_runner_closed_leaves_no_clock_thread(
        peer: Peer) -> None:
    """A lookup lease ends after its runner closed (the watcher's checkpoint lookup, say): its
    channel's close is tracked, which arms the clock again on the deadlines thread. It is
    disarmed once nothing is left to keep, by the close's deadline and END_GRACE_S, and no
    thread is left. Before, it slept without end: a thread leaked per runner."""
    before = _threads()
    runner = peer.runner(connect_timeout=CONNECT_S)
    with runner.sftp().lookup_channel() as lease:
        lease.sftp.stat(".")
        runner.close()  # the last close: the lease ends after it
    deadline = time.monotonic() + SFTP_S + END_GRACE_S + SLACK_S
    while not _keeps_nothing(runner) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _keeps_nothing(runner), "the runner's clock outlived it on the deadlines thread"
    assert not _no_thread_left(before, SLACK_S), "a thread outlived its runner"


def test_an_sftp_channel_whose_version_exchange_failed_is_closed_by_its_deadline(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new SFTP channel's version exchange fails (no reply in time) just as its connection
    stops sending: the channel's close waits behind the stuck send. The request still fails
    within sftp_timeout and END_GRACE_S, saying the SFTP server did not start, and its
    connection is closed. Before, that close was not in flight: it waited until something
    else closed the connection, holding the caller."""
    sending: list[threading.Thread] = []

    def exchange_failed(*args: object, **kwargs: object) -> None:
        sending.append(_stuck_sending(runner, peer))
        raise TimeoutError("no SFTP version in time")

    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = runner.transport
        monkeypatch.setattr(ssh, "DeadlineSFTPClient", exchange_failed)
        thread, ended = _first_sftp_request(runner)
        thread.join(SFTP_S + END_GRACE_S + SLACK_S)
        try:
            assert not thread.is_alive(), "the failed SFTP channel's close outlived its deadline"
            assert str(ended["error"]).startswith(
                "the SFTP server on 127.0.0.1 did not start within 1 s"), ended
            assert not stuck.is_active()
        finally:
            peer.release.set()  # the login node reads again: a close still waiting ends
