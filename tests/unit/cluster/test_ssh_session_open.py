"""A session channel on the login node opens within connect_timeout (bot.cluster.ssh.SSHRunner
._open_session), whatever it waits for: a login node whose sshd never answers the opening
fails the command with a sentence naming the host and what to check, in English and Korean.
That connection is retired, not closed under the commands running on it: they end by their
own deadlines, it is closed after them, and the next command connects afresh
(bot.cluster.in_flight). A command that cannot end by its deadline (its signal and its
channel's close wait behind a send that cannot leave) retires its connection the same way,
with no other command coming.

The login node is the in-process SSH peer (tests/support/sftp_peer.py), whose answer to a
session's opening waits until the test ends (Peer.session_hangs): its connection then reads
nothing more, as a hung sshd's does. tests/integration/test_ssh_send_blocked.py blocks the
request's send itself (a TCP relay that stops reading), against a real sshd.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from support.runner_lock import another_task_holding_the_lock
from support.sftp_peer import Peer, serve_peer

from bot.cluster.errors import ClusterUnavailable, CommandTimedOut
from bot.cluster.in_flight import END_GRACE_S, CommandsInFlight
from bot.core.text import render_text
from bot.slack.render import translator

CONNECT_S = 0.5
SLACK_S = 1.0


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=5) as p:
        yield p


def opening_fails(runner, host: str) -> ClusterUnavailable:  # noqa: ANN001
    """The error of a command whose session's opening is never answered, checked to come
    within connect_timeout and to say so, in English and Korean."""
    started = time.monotonic()
    with pytest.raises(ClusterUnavailable) as err:
        runner.run(["true"])
    assert time.monotonic() - started < CONNECT_S + SLACK_S
    assert str(err.value) == (
        f"cannot open an ssh session on {host}: the connection did not open one within "
        f"{CONNECT_S:g} s (the login node or its sshd is hung, or the network stopped carrying "
        "its data). That connection takes no new commands: the next command opens a new one, "
        "and the commands running on it end by their own deadlines. If this repeats, check "
        f"from the bot's host that {host} is up and that `ssh {host} true` answers.")
    ko = render_text(err.value.text, translator("ko").gettext)
    assert ko.startswith(f"{host}에서 ssh 세션을 열 수 없습니다: 연결이 {CONNECT_S:g}초 안에"), ko
    assert f"`ssh {host} true`" in ko and "새 연결" in ko, ko
    return err.value


def reading_stops(runner, peer: Peer) -> paramiko.Transport:  # noqa: ANN001
    """The runner's connection, whose login node reads 256 KiB more, then nothing: a command's
    4 MiB stdin fills the TCP buffers (the bot's not autotuned, up to 4 MiB here) and its
    sends wait, with every later send on the connection."""
    stuck = runner.transport
    sock = stuck.sock
    assert isinstance(sock, socket.socket)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)
    peer.stall_after = peer.received + (256 << 10)
    return stuck


def test_a_session_never_opened_fails_at_connect_timeout_and_the_next_command_reconnects(
        peer: Peer) -> None:
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = runner.transport
        peer.session_hangs = True
        opening_fails(runner, "127.0.0.1")
        assert not stuck.is_active()  # nothing was running on it: closed at once
        peer.session_hangs = False
        fresh = runner.transport
        assert fresh is not stuck and fresh.is_active()
        assert peer.sessions == 0
        runner.sftp().stat(".")  # a session on the new connection
        assert peer.sessions == 1


def test_a_command_running_on_the_retired_connection_ends_at_its_own_deadline(
        peer: Peer) -> None:
    """The command running when another's session cannot open is not cut by that failure: it
    ends when its own timeout (2 s) says, and its connection is closed then."""
    peer.exec_runs = True  # the command runs, silent, until its channel is closed
    ended: dict[str, object] = {}

    def running() -> None:
        try:
            runner.run(["sleep", "60"], timeout=2.0)
        except Exception as exc:  # noqa: BLE001 - checked below
            ended["error"] = exc
        ended["at"] = time.monotonic()

    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = runner.transport
        started = time.monotonic()
        thread = threading.Thread(target=running, daemon=True)
        thread.start()
        while peer.exec_requests == 0:
            assert time.monotonic() - started < 5, "the command did not start"
            time.sleep(0.01)
        peer.session_hangs = True
        opening_fails(runner, "127.0.0.1")
        assert thread.is_alive() and stuck.is_active()  # running on, not cut
        thread.join(2.0 + SLACK_S + 1)
        assert not thread.is_alive()
        assert isinstance(ended["error"], CommandTimedOut), ended
        assert 2.0 <= float(ended["at"]) - started  # type: ignore[arg-type]
        deadline = time.monotonic() + SLACK_S
        while stuck.is_active() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not stuck.is_active()  # closed once its last command ended


def test_a_retired_connection_is_closed_at_the_last_deadline_of_its_commands() -> None:
    """A command that cannot end (its send waits on the connection) does not hold its retired
    connection open past the last deadline of the commands running on it."""
    closed: list[float] = []
    overstayed: list[object] = []
    in_flight = CommandsInFlight(overstayed.append)
    now = time.monotonic()
    left = threading.Event()
    entered = threading.Event()

    def command(deadline: float) -> None:
        with in_flight.command("connection", deadline):
            entered.set()
            left.wait(10)

    for offset in (0.2, 0.6):
        entered.clear()
        threading.Thread(target=command, args=(now + offset,), daemon=True).start()
        assert entered.wait(5)
    in_flight.retire("connection", lambda: closed.append(time.monotonic()))
    in_flight.retire("connection", lambda: closed.append(-1.0))  # retired already: left
    time.sleep(0.6 + END_GRACE_S + SLACK_S)
    left.set()
    assert len(closed) == 1 and now + 0.6 <= closed[0] < now + 0.6 + END_GRACE_S + SLACK_S
    assert overstayed == ["connection", "connection"]  # each, once its grace was over
    in_flight.retire("idle", lambda: closed.append(0.0))  # nothing running: closed at once
    assert closed[1:] == [0.0]


def test_a_command_that_cannot_end_by_its_deadline_retires_its_connection(peer: Peer) -> None:
    """A command is sending its stdin when the login node stops reading (its TCP window
    zero), and no command comes after it: its signal and its channel's close cannot leave
    either. It ends within its timeout and END_GRACE_S, timed out, saying so in English and
    Korean; its connection is closed and the next command runs on a new one."""
    peer.exec_runs = True  # the command runs, reading nothing, until its channel is closed
    ended: dict[str, object] = {}
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = reading_stops(runner, peer)
        started = time.monotonic()

        def running() -> None:
            try:
                runner.run(["cat"], stdin=b"x" * (4 << 20), timeout=2.0)
            except Exception as exc:  # noqa: BLE001 - checked below
                ended["error"] = exc
            ended["at"] = time.monotonic()

        thread = threading.Thread(target=running, daemon=True)
        thread.start()
        thread.join(2.0 + END_GRACE_S + SLACK_S)
        assert not thread.is_alive(), "the command outlived its timeout and grace"
        # it stopped reading: the sends were stuck
        assert peer.stall_after is not None and peer.received >= peer.stall_after
        error = ended["error"]
        assert isinstance(error, CommandTimedOut), ended
        assert 2.0 <= float(ended["at"]) - started  # type: ignore[arg-type]
        assert str(error) == "`cat` did not finish within 2 s"
        assert render_text(error.text, translator("ko").gettext) == \
            "`cat`이(가) 2초 안에 끝나지 않았습니다"
        assert not stuck.is_active()
        peer.stall_after = None
        peer.exec_runs = False
        fresh = runner.transport
        assert fresh is not stuck and fresh.is_active()
        runner.sftp().stat(".")  # a session on the new connection


def test_a_connection_overstaying_while_the_runner_is_held_is_still_closed(peer: Peer) -> None:
    """A command overstays its deadline (its sends do not leave) while another task holds the
    runner past any bound: the clock does not wait for it. The connection is closed within
    connect_timeout, which cuts the sends waiting; before, the clock (every deadline of the
    runner) waited as long as the holder."""
    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = runner.transport
        with another_task_holding_the_lock(runner):
            started = time.monotonic()
            runner._overstayed(stuck)  # noqa: SLF001 - what the clock calls
            assert time.monotonic() - started < CONNECT_S + SLACK_S
            assert not stuck.is_active()


def test_a_command_overstaying_while_another_task_connects_is_cut_at_its_due_time(
        peer: Peer) -> None:
    """A command's sends stop leaving (the login node reads nothing) while another task holds
    the runner's lock, as connecting to a hung node does for up to connect_at_most_s (3 s
    here): its connection is closed at its due time (its timeout and END_GRACE_S), not when
    the lock is released. Before, the in-flight clock waited for the lock, and every deadline
    of the runner slipped with it."""
    connect_s = 3.0
    peer.exec_runs = True  # the command runs, reading nothing, until its channel is closed
    began: list[float] = []

    def running() -> None:
        began.append(time.monotonic())
        with pytest.raises(CommandTimedOut):
            runner.run(["cat"], stdin=b"x" * (4 << 20), timeout=1.0)

    with peer.runner(connect_timeout=connect_s) as runner:
        stuck = reading_stops(runner, peer)
        started = time.monotonic()
        threading.Thread(target=running, daemon=True).start()
        while peer.exec_requests == 0:
            assert time.monotonic() - started < 5, "the command did not start"
            time.sleep(0.01)
        with another_task_holding_the_lock(runner) as holder:
            due = began[0] + 1.0 + END_GRACE_S  # at the latest: its deadline is from run()'s
            while stuck.is_active() and time.monotonic() < due + connect_s:
                time.sleep(0.01)
            closed_at = time.monotonic()
            assert not stuck.is_active()
            assert holder.is_alive()  # the lock still held: not waited for
            # before, the clock waited up to connect_at_most_s (>= connect_s) for the lock
            assert closed_at < due + connect_s / 2, \
                f"closed {closed_at - due:.1f} s after its due time"


def test_a_connection_retired_without_the_lock_takes_no_new_command(peer: Peer) -> None:
    """A command's sends stop leaving and its connection is retired while another task holds
    the runner's lock (the in-flight clock does not wait for it): the runner still points at
    it. The next command goes to a new connection and succeeds, not cut with the stuck one
    at its due time; the stuck one is closed at that due time, its command timed out."""
    timeout = 3.0
    peer.exec_runs = True  # the command runs, reading nothing, until its channel is closed
    ended: dict[str, object] = {}

    def running() -> None:
        try:
            runner.run(["cat"], stdin=b"x" * (4 << 20), timeout=timeout)
        except CommandTimedOut as exc:
            ended["error"] = exc
        ended["at"] = time.monotonic()

    with peer.runner(connect_timeout=CONNECT_S) as runner:
        stuck = reading_stops(runner, peer)
        started = time.monotonic()
        command = threading.Thread(target=running, daemon=True)
        command.start()
        stall = peer.stall_after
        while stall is not None and peer.received < stall:
            assert command.is_alive(), ended
            time.sleep(0.01)
        with another_task_holding_the_lock(runner):
            runner._overstayed(stuck)  # noqa: SLF001 - what the clock calls, the lock not had
        assert stuck.is_active()  # retired, not closed under its command
        peer.stall_after = None  # the new connection's login node reads
        fresh = runner.transport
        assert fresh is not stuck and fresh.is_active()
        runner.sftp().stat(".")  # a session on the new connection
        command.join(timeout + END_GRACE_S + timeout)
        assert not command.is_alive(), "the stuck command outlived its timeout and grace"
        assert isinstance(ended.get("error"), CommandTimedOut), ended
        assert float(ended["at"]) - started >= timeout  # type: ignore[arg-type]
        assert not stuck.is_active()  # closed at its due time, cutting its command
        assert fresh.is_active() and runner.transport is fresh


def test_a_command_cut_at_its_deadline_while_another_task_connects_ends_within_its_bound(
        peer: Peer) -> None:
    """A command's sends stop leaving (the login node reads nothing); its connection is cut
    END_GRACE_S past its deadline, while another task holds the runner's lock (connecting to
    a hung node): the command then checks its lost connection under that lock, waiting one
    connection's time (connect_at_most_s) before it ends timed out. Its run, from its session
    opened at once, ends within what its bound counts after the session (command_s,
    END_GRACE_S and that wait: RemoteDeadlines.command_at_most_s). Before, the bound left
    the wait out: the command ended one connection's time after what the takeovers counted."""
    timeout = 1.0
    peer.exec_runs = True  # the command runs, reading nothing, until its channel is closed
    ended: dict[str, object] = {}

    def running() -> None:
        ended["began"] = time.monotonic()
        try:
            runner.run(["cat"], stdin=b"x" * (4 << 20))  # its settings' command_timeout
        except CommandTimedOut as exc:
            ended["error"] = exc
        ended["at"] = time.monotonic()

    with peer.runner(connect_timeout=CONNECT_S, command_timeout=timeout) as runner:
        reading_stops(runner, peer)
        d = runner.deadlines()
        assert d.command_s == timeout
        run_bound = d.command_at_most_s - d.session_at_most_s
        command = threading.Thread(target=running, daemon=True)
        command.start()
        while peer.exec_requests == 0:
            assert command.is_alive(), ended
            time.sleep(0.01)
        with another_task_holding_the_lock(runner):
            command.join(run_bound + SLACK_S)
        assert not command.is_alive()
    assert isinstance(ended.get("error"), CommandTimedOut), ended
    took = float(ended["at"]) - float(ended["began"])  # type: ignore[arg-type]
    assert timeout + END_GRACE_S + d.lock_wait_s <= took + 0.05  # it did wait for the lock
    assert took <= run_bound + 0.2, (took, run_bound)
