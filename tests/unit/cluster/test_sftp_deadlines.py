"""Bounded waits: an SFTP peer that never answers one path must not stall the others.

The peer (tests/support/sftp_peer.py) is a real SSH server in this process whose SFTP
subsystem serves a temporary directory and blocks, without answering, on any path containing
"hung" until the test lets it go: a hung NFS/Lustre mount as the bot sees it. The client is
trainbot's own SSHRunner, unchanged.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
from support.sftp_peer import Peer, serve_peer

from bot.cluster.errors import (
    ChannelClosed,
    ClusterUnavailable,
    CommandFailed,
    CommandTimedOut,
    LeaseAbandoned,
    OutcomeUnknown,
    ReadCutOff,
    SFTPTimedOut,
)
from bot.cluster.ssh import SSHRunner
from bot.cluster.tail import ShellTailReader
from bot.core.tail import ReadRequest

TIMEOUT = 1.0


def read_lines(sftp: Any, path: str) -> list[str]:
    """A whole small file over SFTP as lines: stat, open, read, close (four requests)."""
    size = sftp.stat(path).st_size
    with sftp.open(path, "rb") as f:
        return f.read(size).decode().splitlines()


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=TIMEOUT) as p:
        yield p


def _write_logs(peer: Peer, n: int) -> list[str]:
    names = []
    for i in range(n):
        (peer.root / f"job{i}.log").write_text(f"iter {i}\n" * 3)
        names.append(f"job{i}.log")
    return names


def test_a_hung_stat_times_out_naming_the_path_while_other_reads_go_on(peer: Peer) -> None:
    logs = _write_logs(peer, 5)
    with peer.runner() as runner:
        sftp = runner.sftp()
        failure: list[BaseException] = []

        def stat_hung() -> None:
            try:
                sftp.stat("/lustre/hung/job9.log")
            except BaseException as exc:  # noqa: BLE001 - checked below
                failure.append(exc)

        started = time.monotonic()
        stuck = threading.Thread(target=stat_hung)
        stuck.start()
        assert peer.entered.acquire(timeout=5)  # the server is now blocked on that path
        # Meanwhile every other job's log is read in full, without waiting for the hung stat.
        for name in logs:
            assert read_lines(sftp, name) == [f"iter {name[3:-4]}"] * 3
        assert time.monotonic() - started < TIMEOUT * 0.8
        stuck.join(timeout=5)
        elapsed = time.monotonic() - started
    (exc,) = failure
    assert isinstance(exc, SFTPTimedOut)
    assert "/lustre/hung/job9.log" in str(exc) and "stat" in str(exc)
    assert f"within {TIMEOUT:g} s" in str(exc)
    assert TIMEOUT <= elapsed < TIMEOUT + 1.5


def test_the_hung_path_then_fails_at_once_and_comes_back_when_the_filesystem_answers(
    peer: Peer,
) -> None:
    (peer.root / "lustre-hung.log").write_text("late line\n")
    with peer.runner() as runner:
        sftp = runner.sftp()
        with pytest.raises(SFTPTimedOut):
            sftp.stat("lustre-hung.log")
        start = time.monotonic()
        with pytest.raises(SFTPTimedOut, match="an earlier stat of that path has waited"):
            sftp.stat("lustre-hung.log")  # not sent again: the first one still waits
        assert time.monotonic() - start < TIMEOUT  # sending it again would wait the whole timeout
        assert len(sftp.channels) == 1  # the waiting channel is kept aside, not leaked
        peer.release.set()  # the filesystem comes back: the late reply arrives
        deadline = time.monotonic() + 5
        while True:
            try:
                assert sftp.stat("lustre-hung.log").st_size == len("late line\n")
                break
            except SFTPTimedOut:
                assert time.monotonic() < deadline, "the channel never came back"
                time.sleep(0.05)
        assert len(sftp.channels) == 1  # the same channel serves again


def test_when_every_channel_waits_on_a_hung_path_calls_fail_at_once(peer: Peer) -> None:
    _write_logs(peer, 1)
    with peer.runner(sftp_channels=2) as runner:
        sftp = runner.sftp()
        for path in ("a/hung-1.log", "b/hung-2.log"):
            with pytest.raises(SFTPTimedOut, match=path):
                sftp.stat(path)
        start = time.monotonic()
        with pytest.raises(SFTPTimedOut, match="all 2 SFTP channels wait") as info:
            sftp.stat("job0.log")
        assert time.monotonic() - start < TIMEOUT  # waiting for a channel would take the timeout
        assert "a/hung-1.log" in str(info.value) and "b/hung-2.log" in str(info.value)


def test_a_read_that_hangs_inside_an_open_file_times_out_naming_it(peer: Peer) -> None:
    logs = _write_logs(peer, 2)
    (peer.root / "hung-read.log").write_text("x\n")
    with peer.runner() as runner:
        sftp = runner.sftp()
        with sftp.open("hung-read.log", "rb") as f:
            start = time.monotonic()
            with pytest.raises(SFTPTimedOut, match="read of hung-read.log"):
                f.read(10)
            assert time.monotonic() - start < TIMEOUT + 1
        assert read_lines(sftp, logs[1]) == ["iter 1"] * 3


def test_many_reads_with_one_hung_path_cost_one_timeout_then_none(peer: Peer) -> None:
    """Rounds of reads over many files by SFTP (checkpoint probes, preflight): a hung path
    delays the first round by one timeout, not once per file or per round, and never stops
    the other files being read."""
    logs = _write_logs(peer, 20)
    paths = [*logs[:10], "scratch/hung/job.log", *logs[10:]]
    with peer.runner() as runner:
        sftp = runner.sftp()
        for tick in (1, 2, 3):
            start, read, failed = time.monotonic(), 0, []
            for p in paths:
                try:
                    read += len(read_lines(sftp, p))
                except SFTPTimedOut as exc:
                    failed.append(exc.path)
            elapsed = time.monotonic() - start
            assert failed == ["scratch/hung/job.log"]
            assert read == 60
            assert elapsed < (TIMEOUT + 1.0 if tick == 1 else 0.5), (tick, elapsed)


def test_starting_a_command_the_server_never_answers_times_out(peer: Peer) -> None:
    with peer.runner() as runner:
        start = time.monotonic()
        with pytest.raises(CommandTimedOut, match="did not finish within 1 s"):
            runner.run(["true"], timeout=1)
        assert time.monotonic() - start < 3
        assert peer.exec_requests == 1


class _ClosedBeforeItsWait(paramiko.Channel):
    """A command's channel that another thread closes at the worst moment: once the runner
    has looked at it (open, no output) and is about to wait, i.e. at its first look at
    `eof_received` after the command started."""

    armed = False

    @property  # type: ignore[override]
    def eof_received(self) -> bool:
        if self.armed and threading.current_thread() is not self.transport:
            self.armed = False
            closer = threading.Thread(target=self.close)
            closer.start()
            closer.join()
        return self.__dict__["eof_received"]

    @eof_received.setter
    def eof_received(self, value: bool) -> None:
        self.__dict__["eof_received"] = value


def test_a_command_wait_ends_when_its_channel_is_closed_from_another_thread(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command whose channel another thread closes, even just before the runner waits on
    it, ends at once: not at its timeout, and not with an error from waiting on the file
    descriptor the close freed (the wait is on the channel's buffers, which the close wakes)."""
    peer.exec_runs = True
    with peer.runner() as runner:
        started_at = _closing_at_its_wait(runner, monkeypatch, paramiko.Channel.close)
        with pytest.raises(ChannelClosed) as info:
            runner.run(["sleep", "60"], timeout=30, check=False)
        assert time.monotonic() - started_at[0] < 10  # not its 30 s timeout
        assert not info.value.connection_lost and info.value.argv == ["sleep", "60"]


def _closing_at_its_wait(runner: SSHRunner, monkeypatch: pytest.MonkeyPatch,
                         close: Callable[[paramiko.Channel], None]) -> list[float]:
    """The runner's next command channels call `close(channel)` from another thread just
    before the runner first waits on them (see _ClosedBeforeItsWait). Returns the list the
    commands' start times (time.monotonic) are appended to."""
    import bot.cluster.ssh as ssh

    exec_request = ssh.request_exec
    started_at: list[float] = []

    def start(chan: paramiko.Channel, command: str) -> None:
        exec_request(chan, command)
        chan.__class__ = _ClosedBeforeItsWait
        chan.armed = True  # type: ignore[attr-defined]
        chan.close = lambda: close(chan)  # type: ignore[method-assign]
        started_at.append(time.monotonic())

    monkeypatch.setattr(ssh, "request_exec", start)
    return started_at


def test_a_command_whose_channel_is_closed_under_it_is_a_connection_error_not_its_failure(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A running command whose channel another thread closes (the transport lives on) ends
    with no exit status: ChannelClosed, a ClusterUnavailable saying it may or may not have
    run, never CommandFailed(-1) as if the command had failed on the cluster."""
    peer.exec_runs = True
    with peer.runner() as runner:
        _closing_at_its_wait(runner, monkeypatch, paramiko.Channel.close)
        with pytest.raises(ClusterUnavailable) as info:
            runner.run(["sbatch", "--parsable", "job.sh"], timeout=30)
        assert isinstance(info.value, ChannelClosed) and not isinstance(info.value, CommandFailed)
        assert str(info.value) == (
            "`sbatch --parsable job.sh` on 127.0.0.1 ended without an exit status: its channel "
            "was closed first (trainbot closing it, on shutdown or a reconnect) or sshd sent "
            "none (a command killed by a signal); it may or may not have run")
        assert runner.is_connected


def test_a_command_whose_connection_drops_while_another_thread_reconnects_is_a_lost_connection(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's connection drops under a running command and another thread reconnects
    at once: the command's channel died with its own transport, so it is a lost connection
    (ChannelClosed, `connection_lost`), not CommandFailed(-1) because the runner is
    connected again by the time the command looks."""
    peer.exec_runs = True
    with peer.runner() as runner:

        def drop_and_reconnect(chan: paramiko.Channel) -> None:
            chan.get_transport().close()
            runner.connect()  # another thread's command reconnects

        _closing_at_its_wait(runner, monkeypatch, drop_and_reconnect)
        old = runner.transport
        with pytest.raises(ChannelClosed, match="connection to 127.0.0.1 lost while "
                           "`sleep 60` was running; it may have run") as info:
            runner.run(["sleep", "60"], timeout=30)
        assert info.value.connection_lost
        assert runner.is_connected and runner.transport is not old


def test_a_read_whose_channel_is_closed_under_it_is_a_connection_error_not_a_failed_read(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batched log read (exchange) whose channel another thread closes ends as a
    ReadCutOff, a ClusterUnavailable the watcher retries next tick, never a read script that
    "stopped (exit -1)" as if it had failed on the cluster; and, being a read, it says that
    nothing changed, not that it "may or may not have run" as a submit's closed channel does."""
    peer.exec_runs = True
    with peer.runner() as runner:
        _closing_at_its_wait(runner, monkeypatch, paramiko.Channel.close)
        with pytest.raises(ReadCutOff) as info:
            runner.exchange(["cat"], stdin=b"", timeout=30)
        assert not info.value.connection_lost and info.value.argv == ["cat"]
        assert not isinstance(info.value, OutcomeUnknown)

        reader = ShellTailReader(runner, where="peer", timeout=30)
        with pytest.raises(ClusterUnavailable) as read:
            reader.read([ReadRequest("/logs/train.out", 0)])
        assert isinstance(read.value, ReadCutOff)
        assert "exit -1" not in str(read.value) and "may or may not" not in str(read.value)
        assert str(read.value).endswith(
            "was cut off (its channel on 127.0.0.1 closed before its exit status came): it only "
            "reads, so nothing changed and it is safe to ask again")
        assert runner.is_connected


def test_a_connection_lost_after_the_exec_request_left_is_channel_closed_it_may_have_run(
        peer: Peer) -> None:
    """The connection drops after sshd received the command's request, before it answered:
    the command may have started, so it is a ChannelClosed (an OutcomeUnknown) saying it
    may or may not have run, never a plain ClusterUnavailable (as if it had not run)."""
    peer.exec_drops = True
    with peer.runner() as runner:
        with pytest.raises(ChannelClosed) as info:
            runner.run(["sbatch", "--parsable", "job.sh"], timeout=30)
        assert peer.exec_requests == 1
        assert info.value.connection_lost and info.value.argv == ["sbatch", "--parsable", "job.sh"]
        assert isinstance(info.value, OutcomeUnknown)
        assert str(info.value) == (
            "connection to 127.0.0.1 lost while starting `sbatch --parsable job.sh`, after its "
            "request left; it may or may not have run")
        peer.exec_drops, peer.exec_runs = False, True
        assert not runner.is_connected  # the dead connection is dropped: the next reconnects


def test_a_connection_lost_before_the_exec_request_left_is_unavailable_it_did_not_run(
        peer: Peer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection drops after the command's channel opened, before its request was
    sent: sshd got no request, so the command did not run: a plain ClusterUnavailable
    saying so, not a ChannelClosed (which would send a submit to be looked up for nothing)."""
    with peer.runner() as runner:
        open_session = runner._open_session  # noqa: SLF001

        def opened_then_cut() -> paramiko.Channel:
            chan = open_session()
            chan.get_transport().sock.shutdown(socket.SHUT_WR)  # nothing more leaves
            return chan

        monkeypatch.setattr(runner, "_open_session", opened_then_cut)
        with pytest.raises(ClusterUnavailable) as info:
            runner.run(["sbatch", "--parsable", "job.sh"], timeout=30)
        assert not isinstance(info.value, OutcomeUnknown)
        assert str(info.value).startswith(
            "could not start `sbatch --parsable job.sh` on 127.0.0.1: ")
        assert str(info.value).endswith("its request never reached sshd, so it did not run")
        assert peer.exec_requests == 0


class _PeerClusters:
    """The bot's cluster sessions with the peer's SFTP (what the checkpoint lookup uses)."""

    def __init__(self, runner: SSHRunner) -> None:
        self.runner = runner

    def sftp(self, cluster: str) -> Any:
        return self.runner.sftp()


def test_a_checkpoint_lookup_given_up_leaves_the_clusters_sftp_free(
        peer: Peer, tmp_path: Path) -> None:
    """The checkpoint dir hangs (a stuck filesystem): the watcher gives the production lookup
    up at its deadline, and the lookup's own channel goes with it. With one SFTP channel for
    all the rest (sftp_channels=1), the next reads answer at once and right, while the server
    still hangs on the lookup's request; the tick never shared a channel with it."""
    from fakes import make_context

    from bot.services.runs import AutoResubmitter
    from bot.services.watch.recipes import RecipeSettings
    from bot.store import Store

    logs = _write_logs(peer, 3)
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with peer.runner(sftp_channels=1, sftp_timeout=5.0) as runner:
            ctx = make_context(store, clusters=_PeerClusters(runner),  # type: ignore[arg-type]  # SFTP only
                               checkpoint={"dir": "/lustre/hung/ck/mix"})
            lookups = RecipeSettings("dev", config=ctx.config, policy=None,
                                     checkpoint=AutoResubmitter(ctx, "dev").checkpoint)
            started = time.monotonic()
            found = lookups.checkpoint_within("mix", deadline_s=0.3)
            assert found.failed and found.checkpoint is None  # told as unknown
            assert peer.entered.acquire(timeout=5)  # the server hangs on the lookup's listdir
            sftp = runner.sftp()
            for name in logs:
                assert read_lines(sftp, name) == [f"iter {name[3:-4]}"] * 3
            assert time.monotonic() - started < 2.0  # no wait for the 5 s SFTP timeout
            assert not peer.release.is_set()  # ... which the lookup's request still waits on
            assert len(sftp.channels) == 1  # the pool's one channel, none set aside
    finally:
        store.close()


def _lookups(peer: Peer, runner: SSHRunner, store: Any, checkpoint_dir: str) -> Any:
    """The watcher's checkpoint lookups of recipe "mix" (checkpoints in `checkpoint_dir` on
    the peer), as production makes them (AutoResubmitter.checkpoint on the runner's SFTP)."""
    from fakes import make_context

    from bot.services.runs import AutoResubmitter
    from bot.services.watch.recipes import RecipeSettings

    ctx = make_context(store, clusters=_PeerClusters(runner),  # type: ignore[arg-type]  # SFTP only
                       checkpoint={"dir": checkpoint_dir, "complete_rule": "marker:DONE"})
    return RecipeSettings("dev", config=ctx.config, policy=None,
                          checkpoint=AutoResubmitter(ctx, "dev").checkpoint)


def _iter_dir(peer: Peer, iteration: int) -> str:
    """A checkpoint dir on the peer whose latest complete checkpoint is `iteration`."""
    done = peer.root / "ck" / "mix" / f"iter_{iteration:07d}" / "DONE"
    done.parent.mkdir(parents=True, exist_ok=True)
    done.write_text("")
    return "/ck/mix"


def test_lookups_one_after_another_open_one_sftp_channel(peer: Peer, tmp_path: Path) -> None:
    """A 1,000-task array finishing at once is 1,000 lookups in a row: they share the
    cluster's lookup channel (one session on the login node, one sftp-server), not one each."""
    from bot.store import Store

    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with peer.runner(sftp_timeout=5.0) as runner:
            lookups = _lookups(peer, runner, store, _iter_dir(peer, 1000))
            before = peer.sessions
            found = [lookups.checkpoint_within("mix", deadline_s=5.0) for _ in range(20)]
            assert peer.sessions - before == 1
            assert {(f.failed, f.checkpoint.iteration if f.checkpoint else None)
                    for f in found} == {(False, 1000)}
            assert runner.sftp().channels == []  # none of the pool's own channels used
    finally:
        store.close()


def test_an_abandoned_lookup_s_channel_is_closed_and_the_next_lookup_opens_a_fresh_one(
        peer: Peer, tmp_path: Path) -> None:
    """A lookup given up on a hung checkpoint dir takes the lookup channel with it: the next
    lookup answers at once and right on a fresh channel, which the ones after it share.
    The abandoned lookup's thread ends when its channel closes, not a timeout later."""
    from bot.store import Store

    good = _iter_dir(peer, 2000)
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with peer.runner(sftp_timeout=5.0) as runner:
            lookups = _lookups(peer, runner, store, good)
            assert lookups.checkpoint_within("mix", deadline_s=5.0).checkpoint is not None
            opened = peer.sessions
            lookups.config.recipes["mix"].checkpoint.dir = "/lustre/hung/ck/mix"
            started = time.monotonic()
            assert lookups.checkpoint_within("mix", deadline_s=0.3).failed
            assert peer.entered.acquire(timeout=5)  # the server hangs on the lookup's request
            lingering = [t for t in threading.enumerate() if t.name == "checkpoint-lookup-mix"]
            for t in lingering:
                t.join(timeout=5)
            assert not any(t.is_alive() for t in lingering)
            assert time.monotonic() - started < 2.0  # not the 5 s SFTP timeout
            lookups.config.recipes["mix"].checkpoint.dir = good
            for _ in range(3):
                found = lookups.checkpoint_within("mix", deadline_s=5.0)
                assert not found.failed and found.checkpoint.iteration == 2000
            assert time.monotonic() - started < 2.0
            assert peer.sessions - opened == 1  # the fresh one, shared by the three
            assert not peer.release.is_set()  # the abandoned request still hangs
    finally:
        store.close()


def test_a_request_in_flight_ends_when_its_lease_is_abandoned(peer: Peer) -> None:
    """Abandoning a lease from another thread wakes the request waiting on its channel at
    once (paramiko closes the channel's buffers), far from the 5 s reply timeout."""
    with peer.runner(sftp_timeout=5.0) as runner:
        failure: list[BaseException] = []
        with runner.sftp().lookup_channel() as lease:

            def stat_hung() -> None:
                try:
                    lease.sftp.stat("/lustre/hung/ck")
                except BaseException as exc:  # noqa: BLE001 - checked below
                    failure.append(exc)

            waiting = threading.Thread(target=stat_hung)
            waiting.start()
            assert peer.entered.acquire(timeout=5)
            started = time.monotonic()
            lease.abandon()
            waiting.join(timeout=5)
            assert time.monotonic() - started < 1.0
        assert failure and isinstance(failure[0], LeaseAbandoned)
        assert str(failure[0]).startswith("SFTP stat of /lustre/hung/ck on 127.0.0.1 got no "
                                          "answer: its lookup was abandoned")
        assert lease.sftp.channel.closed


def test_requests_on_an_abandoned_lease_say_it_was_abandoned(peer: Peer) -> None:
    """After `abandon()` every request of the lease, and an open file's read, raises
    LeaseAbandoned (a ClusterUnavailable) naming the request: never paramiko's error for a
    closed channel, which reads as the connection failing."""
    with peer.runner(sftp_timeout=5.0) as runner:
        (peer.root / "ck").mkdir()
        (peer.root / "ck" / "done").write_bytes(b"x")
        with runner.sftp().lookup_channel() as lease:
            f = lease.sftp.open("/ck/done", "rb")
            lease.abandon()
            calls = [("stat", lambda: lease.sftp.stat("/ck")),
                     ("listdir", lambda: lease.sftp.listdir_attr("/ck")),
                     ("normalize", lambda: lease.sftp.normalize(".")),
                     ("read", lambda: f.read(1))]
            for op, call in calls:
                with pytest.raises(ClusterUnavailable) as info:
                    call()
                assert isinstance(info.value, LeaseAbandoned) and info.value.op == op
                assert "its lookup was abandoned" in str(info.value)
            f.close()  # its channel was given up with the read: nothing to close
        assert runner.sftp().normalize(".") == "/"  # the pool's own channels are not touched


def test_leases_at_once_get_channels_of_their_own_and_one_is_kept(peer: Peer) -> None:
    """Two lookups at once never share a channel (nor wait for each other); afterwards one
    channel is kept for the next lease, and abandoning a lease that has ended does nothing
    (its channel may be the next lease's)."""
    with peer.runner(sftp_timeout=5.0) as runner:
        sftp = runner.sftp()
        before = peer.sessions
        with sftp.lookup_channel() as first, sftp.lookup_channel() as second:
            assert first.sftp is not second.sftp
            assert first.sftp.normalize(".") == second.sftp.normalize(".") == "/"
        assert peer.sessions - before == 2
        first.abandon()
        second.abandon()
        with sftp.lookup_channel() as third:
            assert third.sftp.channel in (first.sftp.channel, second.sftp.channel)
            assert third.sftp.normalize(".") == "/"
        assert peer.sessions - before == 2
        assert [c.closed for c in (first.sftp.channel, second.sftp.channel)].count(True) == 1
        sftp.close()
        assert third.sftp.channel.closed


def test_a_lookup_channel_left_waiting_for_a_reply_is_not_kept(peer: Peer) -> None:
    """A request that got no reply within the timeout leaves its channel out of step (the
    reply may still come): the lease's end closes it, and the next lease opens another."""
    with peer.runner() as runner:
        sftp = runner.sftp()
        with sftp.lookup_channel() as lease, pytest.raises(SFTPTimedOut):
            lease.sftp.stat("/lustre/hung/ck")
        assert lease.sftp.channel.closed
        before = peer.sessions
        with sftp.lookup_channel() as fresh:
            assert fresh.sftp.normalize(".") == "/"
        assert peer.sessions - before == 1


def test_a_lease_s_request_with_no_reply_raises_sftp_timed_out_naming_its_path(
        peer: Peer) -> None:
    """A lookup lease's requests fail as the pool's do: SFTPTimedOut (a ClusterUnavailable)
    naming the operation, the path, the host and the timeout, for a stat and for a read of
    an open file alike; never the SFTP client's private no-reply error."""
    from bot.cluster.errors import ClusterUnavailable

    (peer.root / "ck").mkdir()
    (peer.root / "ck" / "hung-read.pointer").write_text("iter_1\n")
    with peer.runner() as runner, runner.sftp().lookup_channel() as lease:
        start = time.monotonic()
        with pytest.raises(SFTPTimedOut) as stat_info:
            lease.sftp.stat("/lustre/hung/ck")
        assert time.monotonic() - start < TIMEOUT + 1
    assert isinstance(stat_info.value, ClusterUnavailable)
    assert (stat_info.value.op, stat_info.value.path) == ("stat", "/lustre/hung/ck")
    assert str(stat_info.value) == (
        "SFTP stat of /lustre/hung/ck on 127.0.0.1 got no answer within 1 s (a hung "
        "filesystem?); gave up on it, other requests go on")
    with peer.runner() as runner, runner.sftp().lookup_channel() as lease:
        with lease.sftp.open("/ck/hung-read.pointer", "rb") as f, \
                pytest.raises(SFTPTimedOut, match="SFTP read of /ck/hung-read.pointer on "
                              "127.0.0.1 got no answer within 1 s"):
            f.read(100)
        assert lease.sftp.channel.closed is False  # closed at the lease's end (out of step)
    assert lease.sftp.channel.closed


def test_a_lookup_whose_request_gets_no_reply_is_told_failed_naming_the_path(
        peer: Peer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The watcher's checkpoint lookup on a hung dir, its SFTP timeout (1 s) shorter than
    its deadline: the lookup raises SFTPTimedOut naming the dir, and is told as failed
    (unknown, never "no checkpoint"), the log saying which path did not answer."""
    from bot.store import Store

    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    try:
        with peer.runner() as runner:
            lookups = _lookups(peer, runner, store, "/lustre/hung/ck/mix")
            with pytest.raises(SFTPTimedOut, match="listdir of /lustre/hung/ck/mix"):
                lookups._checkpoint("mix")  # noqa: SLF001 - the production lookup itself
            with caplog.at_level("WARNING"):
                found = lookups.checkpoint_within("mix", deadline_s=5.0)
            assert found.failed and found.checkpoint is None
            assert "SFTP listdir of /lustre/hung/ck/mix on 127.0.0.1 got no answer" in caplog.text
    finally:
        store.close()


def test_a_channel_in_use_when_the_pool_closes_is_closed_when_returned(peer: Peer) -> None:
    """close() closes the channels in use (an open file's, a lookup lease's) as they come
    back, instead of keeping them; the pool then serves on a fresh channel."""
    logs = _write_logs(peer, 1)
    with peer.runner() as runner:
        sftp = runner.sftp()
        f = sftp.open(logs[0], "rb")
        file_channel = f._client.channel  # type: ignore[union-attr]  # noqa: SLF001
        with sftp.lookup_channel() as lease:
            sftp.close()
            assert not file_channel.closed and not lease.sftp.channel.closed  # still in use
            assert lease.sftp.normalize(".") == "/"
            assert f.read(6) == b"iter 0"
        f.close()
        assert file_channel.closed and lease.sftp.channel.closed
        assert sftp.channels == []
        before = peer.sessions
        assert read_lines(sftp, logs[0]) == ["iter 0"] * 3
        assert peer.sessions - before == 1 and len(sftp.channels) == 1


def test_an_sftp_server_that_never_answers_its_start_fails_the_request_by_the_deadline(
        peer: Peer) -> None:
    """The login node starts sftp-server but it never answers the version request (stuck,
    as on a hung home directory): the request fails within the SFTP deadline saying the
    SFTP server did not start, a cluster error the callers handle; its channel is closed and
    the next request, the server answering again, goes on the same connection. Before, the
    SFTP client's private no-reply error came out of the pool, which no caller handles."""
    peer.sftp_start_hangs = True
    with peer.runner() as runner:
        connection = runner.transport
        started = time.monotonic()
        with pytest.raises(ClusterUnavailable) as err:
            runner.sftp().stat(".")
        assert time.monotonic() - started < TIMEOUT + 1.0
        assert str(err.value) == "the SFTP server on 127.0.0.1 did not start within 1 s"
        assert runner.sftp().channels == []
        peer.sftp_start_hangs = False
        assert runner.sftp().stat(".").st_mode is not None
        assert runner.transport is connection
