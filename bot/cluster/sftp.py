"""SFTP with a deadline on every request, on a few channels so a stuck one blocks nobody else."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import paramiko
from paramiko.sftp import CMD_CLOSE, CMD_NAMES, CMD_OPEN, CMD_OPENDIR, CMD_READDIR

from bot.cluster.channels import wait_channel
from bot.cluster.errors import LeaseAbandoned, SFTPTimedOut
from bot.cluster.in_flight import CommandsInFlight

log = logging.getLogger(__name__)

T = TypeVar("T")

@dataclass(frozen=True)
class _RequestHook:
    before: Callable[[str], None]
    failed: Callable[[str], None] | None


_request_hook: ContextVar[_RequestHook | None] = ContextVar("sftp_request_hook", default=None)


@contextmanager
def each_request(before: Callable[[str], None],
                 failed: Callable[[str], None] | None = None) -> Iterator[None]:
    """Every SFTP request this thread sends within the block, on any channel (a pool's, a
    lookup lease's, an open file's), is first given to `before(kind)`, paramiko's name of it
    ("realpath", "stat", "opendir", "readdir", "open", "read", "close", ...), which may refuse
    it by raising: then it is not sent. A listing refused a readdir half-way closes its
    directory (that close given to `before` too) before the refusal reaches the caller: what
    a listing or a read really sends, one request each, not one per call. An open or opendir
    the server answered with an error (no such file, permission denied) is given to
    `failed(kind)` as well: no handle came of it, so no close will follow.

    The pool's own work done on the way is not the block's: the close of a file whose channel
    was set aside on a stuck request, sent when its late reply has come (SFTPPool._recover),
    is neither given to `before` nor refused. SFTP clients of other kinds (the tests' fakes)
    give their requests to `sent_request` and `open_failed`, as this one does."""
    token = _request_hook.set(_RequestHook(before, failed))
    try:
        yield
    finally:
        _request_hook.reset(token)


def sent_request(kind: str) -> None:
    """Give a request of `kind` about to be sent to the `before` of this thread's
    each_request block, if any (it may refuse it by raising)."""
    hook = _request_hook.get()
    if hook is not None:
        hook.before(kind)


def open_failed(kind: str) -> None:
    """Tell this thread's each_request block, if any, that an `open` or `opendir` was
    answered with an error (no handle to close)."""
    hook = _request_hook.get()
    if hook is not None and hook.failed is not None:
        hook.failed(kind)


@contextmanager
def _uncounted() -> Iterator[None]:
    """Requests sent within the block are no each_request block's (the pool's own work)."""
    token = _request_hook.set(None)
    try:
        yield
    finally:
        _request_hook.reset(token)


class _NoReply(Exception):
    """No reply within the deadline; nothing of it was read, so the channel is still in sync.
    Private: the pool and a lookup lease raise SFTPTimedOut (naming the request) instead."""


class ConnectionStuck(Exception):  # noqa: N818 - a state, as _NoReply
    """A send (or a reply's read, which sends its window adjust) on an SFTP channel did not
    end by its deadline and was cut by its connection's close: the connection was stuck and
    retired (bot.cluster.in_flight). The pool and a lookup lease raise SFTPTimedOut naming
    the request instead; the runner, opening a channel, ClusterUnavailable."""


class DeadlineSFTPClient(paramiko.SFTPClient):
    """An SFTPClient (one thread at a time) whose every reply must come within `timeout`.

    The wait happens before a reply's first byte is read; a reply that starts but stalls
    half-way trips the channel's own timeout (socket.timeout) and the channel is discarded.
    `close()` from another thread ends a wait at once (the request then raises). Made, it
    exchanges versions with the server: TimeoutError when its reply does not come in time.

    A send does not stop at the timeout by itself: paramiko sends one message at a time per
    connection and retries a send that finds the TCP window full until the connection is
    closed. With `in_flight` (the runner's), each send, each reply's read once it has come (it
    may send a window adjust) and the channel's close is a command in flight on the channel's
    connection, due in `timeout`: one still stuck END_GRACE_S past it retires the connection,
    whose close cuts it, and the request raises ConnectionStuck. A channel on a retired
    connection is not `usable`: the pool opens a new one (on the runner's new connection).
    """

    if TYPE_CHECKING:  # paramiko's private members used here (not in its type stubs)
        _expecting: dict[int, object]

        def _read_response(self, waitfor: int | None = None) -> tuple[int, object]: ...

    def __init__(self, chan: paramiko.Channel, timeout: float, *,
                 in_flight: CommandsInFlight | None = None):
        self.timeout = timeout
        self._in_flight = in_flight
        self._connection = chan.get_transport()
        self.cut = False  # a send or read on it was cut past its deadline: ConnectionStuck
        chan.settimeout(timeout)
        self._readable = threading.Event()  # see wait_readable
        self._status_error = False  # the last synchronous reply was an error status
        # The pool's count of close() calls when it handed this channel out (SFTPPool): a
        # channel out at a close() is closed when it comes back.
        self.pool_closings = 0
        try:
            super().__init__(chan)  # the SFTP version exchange
        except _NoReply as exc:  # the server never said it started: no request to name
            raise TimeoutError(str(exc)) from exc

    def _async_request(self, fileobj: object, t: int, *args: object) -> int:
        """Every request paramiko sends passes here (each_request's `before` sees it first)."""
        try:
            sent_request(CMD_NAMES.get(t, str(t)))
        except BaseException:
            if t == CMD_READDIR:  # a listing refused half-way: its directory is closed
                self._request(CMD_CLOSE, args[0])
            raise
        num: int = super()._async_request(fileobj, t, *args)  # type: ignore[misc]  # private
        return num

    def _request(self, t: int, *args: object) -> tuple[int, paramiko.Message]:
        """paramiko's synchronous request; an open or opendir answered with an error status
        is given to each_request's `failed` (no handle came of it)."""
        if t not in (CMD_OPEN, CMD_OPENDIR):
            return super()._request(t, *args)  # type: ignore[misc]  # private
        self._status_error = False
        try:
            reply: tuple[int, paramiko.Message] = super()._request(  # type: ignore[misc]
                t, *args)
        except BaseException:
            if self._status_error:
                open_failed(CMD_NAMES[t])
            raise
        return reply

    def _convert_status(self, msg: paramiko.Message) -> None:
        """paramiko's: raise for an error status; notes that one came (`_request`)."""
        try:
            super()._convert_status(msg)  # type: ignore[misc]  # private
        except BaseException:
            self._status_error = True
            raise

    def _send_packet(self, t: int, packet: object) -> None:
        """paramiko's: every request (and the version exchange) is sent here."""
        with self._bounded():
            super()._send_packet(t, packet)  # type: ignore[misc]  # private, not in the stubs

    def _read_packet(self) -> tuple[int, bytes]:
        if not self.wait_readable(self.timeout):
            raise _NoReply(f"no SFTP reply within {self.timeout:g} s")
        with self._bounded():  # reading the reply come may send a window adjust
            packet: tuple[int, bytes] = super()._read_packet()  # type: ignore[misc]  # private
            return packet

    def close(self) -> None:
        with self._bounded():  # the channel's close is a send too
            super().close()

    @contextmanager
    def _bounded(self) -> Iterator[None]:
        """The block in flight on the channel's connection, due in `timeout` seconds (see the
        class); a send or read in it failing past that, the connection closed, raises
        ConnectionStuck."""
        if self._in_flight is None:
            yield
            return
        deadline = time.monotonic() + self.timeout
        try:
            with self._in_flight.command(self._connection, deadline):
                yield
        except (paramiko.SSHException, OSError, EOFError) as exc:
            # past its deadline, or on a channel cut so before (a file's close after its
            # write was cut): what paramiko raises then is the cut, not a lost connection
            self.cut = self.cut or (time.monotonic() >= deadline
                                    and not self._connection.is_active())
            if self.cut:
                raise ConnectionStuck(f"no SFTP send within {self.timeout:g} s") from exc
            raise

    @property
    def usable(self) -> bool:
        """Open, on a live connection that is not retired (it takes no new request)."""
        return (not self.sock.closed and self._connection.is_active()
                and not (self._in_flight is not None
                         and self._in_flight.retired(self._connection)))

    def wait_readable(self, timeout: float) -> bool:
        """True once the channel has reply bytes, EOF or is closed (by either side, from any
        thread: a wait ends then, not at its timeout); False after `timeout` seconds.

        Stderr data (sftp-server's log lines, if any) is read and dropped on the way.
        """
        chan = self.sock
        deadline = time.monotonic() + timeout
        while wait_channel(chan, self._readable, deadline - time.monotonic()):
            if chan.recv_ready() or chan.eof_received or chan.closed:
                return True
            chan.recv_stderr(65536)  # stderr alone: dropped
        return False

    @property
    def channel(self) -> paramiko.Channel:
        """The channel this client was opened on (`get_channel()` without its None)."""
        return self.sock

    def outstanding(self) -> int:
        """How many requests still wait for their reply."""
        return len(self._expecting)

    def read_late_replies(self) -> bool:
        """Read (and drop) the replies that have arrived to abandoned requests, without
        waiting; True when none is outstanding any more."""
        while self._expecting and self.wait_readable(0):
            self._read_response()
        return not self._expecting


@dataclass
class _Stuck:
    client: DeadlineSFTPClient
    op: str
    path: str
    since: float
    file: paramiko.SFTPFile | None = None  # closed once the channel is usable again


class _Requests:
    """The SFTP calls trainbot makes, paramiko.SFTPClient's names and results, each on a
    channel `_checkout` gives and with its failures turned by `_after_error` into what the
    caller gets: a request with no reply in time raises SFTPTimedOut naming it, never the
    client's private no-reply error."""

    # ---- what callers use (paramiko.SFTPClient's names and results) -----------------------

    def stat(self, path: str) -> paramiko.SFTPAttributes:
        return self._call("stat", path, lambda c: c.stat(path))

    def lstat(self, path: str) -> paramiko.SFTPAttributes:
        return self._call("lstat", path, lambda c: c.lstat(path))

    def listdir(self, path: str = ".") -> list[str]:
        return self._call("listdir", path, lambda c: c.listdir(path))

    def listdir_attr(self, path: str = ".") -> list[paramiko.SFTPAttributes]:
        return self._call("listdir", path, lambda c: c.listdir_attr(path))

    def normalize(self, path: str) -> str:
        return self._call("normalize", path, lambda c: c.normalize(path))

    def chmod(self, path: str, mode: int) -> None:
        self._call("chmod", path, lambda c: c.chmod(path, mode))

    def mkdir(self, path: str, mode: int = 0o777) -> None:
        self._call("mkdir", path, lambda c: c.mkdir(path, mode))

    def remove(self, path: str) -> None:
        self._call("remove", path, lambda c: c.remove(path))

    def put(self, localpath: str, remotepath: str) -> paramiko.SFTPAttributes:
        return self._call("put", remotepath, lambda c: c.put(localpath, remotepath))

    def open(self, path: str, mode: str = "r", bufsize: int = -1) -> RemoteFile:
        """A file that keeps one channel until it is closed (use it in a `with` block)."""
        client, f = self._call("open", path, lambda c: (c, c.open(path, mode, bufsize)),
                               keep=True)
        return RemoteFile(self, client, f, path)

    # ---- how (the pool's, a lease's) ------------------------------------------------------

    def _call(self, op: str, path: str, fn: Callable[[DeadlineSFTPClient], T], *,
              keep: bool = False) -> T:
        """fn(a channel of its own); with `keep` the caller keeps the channel on success."""
        client = self._checkout(op, path)
        try:
            result = fn(client)
        except BaseException as exc:
            error, _lost = self._after_error(client, op, path, exc)
            if error is exc:
                raise
            raise error from None
        if not keep:
            self._checkin(client)
        return result

    def _checkout(self, op: str, path: str) -> DeadlineSFTPClient:
        raise NotImplementedError

    def _checkin(self, client: DeadlineSFTPClient) -> None:
        raise NotImplementedError

    def _after_error(
        self, client: DeadlineSFTPClient, op: str, path: str, exc: BaseException, *,
        file: paramiko.SFTPFile | None = None, held: bool = False,
    ) -> tuple[BaseException, bool]:
        """What to raise after `exc` on `client`, and whether the caller lost the channel."""
        raise NotImplementedError


class SFTPPool(_Requests):
    """The SFTP of one cluster: the methods trainbot uses, each with a deadline per reply.

    `open_client(timeout)` opens a new SFTP channel (the runner's job: a session on its live
    transport, the "sftp" subsystem, the version exchange, all within `timeout`). Safe for
    any number of threads.
    """

    def __init__(
        self,
        open_client: Callable[[float], DeadlineSFTPClient],
        *,
        where: str,
        timeout: float = 15.0,
        max_channels: int = 4,
    ):
        if max_channels < 1:
            raise ValueError("max_channels must be at least 1")
        self._open_client = open_client
        self.where = where
        self.timeout = timeout
        self.max_channels = max_channels
        self._cond = threading.Condition()
        self._idle: list[DeadlineSFTPClient] = []
        self._busy = 0
        self._stuck: list[_Stuck] = []
        self._lookup: DeadlineSFTPClient | None = None  # kept between leases (lookup_channel)
        self._closings = 0  # close() calls so far (DeadlineSFTPClient.pool_closings)

    @contextmanager
    def lookup_channel(self) -> Iterator[LookupLease]:
        """The pool's lookup channel, leased for one piece of work that may be abandoned
        half-way (the watcher's checkpoint lookup past its deadline). It is outside the pool
        (never shared while leased, not counted in `max_channels`) and kept for the next lease:
        lookups one after another use one channel, opened once. `lease.abandon()`, from any
        thread, closes it (the request in flight ends at once, and later ones are refused:
        LeaseAbandoned) and the next lease opens a fresh one; so a hung lookup never holds a pool
        channel nor the next lookup. A lease taken while another is out gets a channel of its
        own, closed at its end if one is kept already. Each reply waits at most `timeout`
        (a request with no reply raises SFTPTimedOut naming its path, and its channel is not
        kept: `LeaseSFTP`); opening it too."""
        with self._cond:
            client, self._lookup = self._lookup, None
            closings = self._closings
        if client is not None and not client.usable:  # its transport died since
            _close_quietly(client)
            client = None
        if client is None:
            client = self._open_client(self.timeout)
        client.pool_closings = closings
        lease = LookupLease(self, client)
        try:
            yield lease
        finally:
            lease._end()  # noqa: SLF001 - the pool's own lease

    def _keep_lookup(self, client: DeadlineSFTPClient) -> None:
        """A lease's channel back as the lookup channel, if it is in sync, none is kept and
        the pool was not closed while it was out."""
        with self._cond:
            kept = (self._lookup is None and client.pool_closings == self._closings
                    and client.usable and not client.outstanding())
            if kept:
                self._lookup = client
        if not kept:
            _close_quietly(client)

    def close(self) -> None:
        """Close every channel (idle, stuck, the kept lookup channel); a channel in use (an
        open file's, a lookup lease's) is closed when returned. The pool stays usable: later
        calls open fresh channels (the runner reconnects after its close())."""
        with self._cond:
            self._closings += 1
            clients = self._idle + [s.client for s in self._stuck]
            if self._lookup is not None:
                clients.append(self._lookup)
            self._idle, self._stuck, self._lookup = [], [], None
        for c in clients:
            _close_quietly(c)

    @property
    def channels(self) -> list[paramiko.Channel]:
        """The channels open now, idle or waiting on a stuck request (for tests, doctor)."""
        with self._cond:
            return [c.channel for c in self._idle] + [
                s.client.channel for s in self._stuck
            ]

    # ---- the pool --------------------------------------------------------------------------

    def _after_error(
        self, client: DeadlineSFTPClient, op: str, path: str, exc: BaseException, *,
        file: paramiko.SFTPFile | None = None, held: bool = False,
    ) -> tuple[BaseException, bool]:
        """What to raise after `exc` on `client`, and whether the caller lost the channel.

        No reply: the channel is set aside until the late reply comes (SFTPTimedOut). A reply
        that stalled half-way or a dead channel: dropped. An answer (no such file, permission
        denied): the channel is fine; it is given back unless the caller `held` it (a file).
        """
        if isinstance(exc, _NoReply):
            with self._cond:
                self._busy -= 1
                self._stuck.append(_Stuck(client, op, path, time.monotonic(), file))
                self._cond.notify_all()
            log.warning("%s: SFTP %s %s got no answer within %g s; its channel is set aside",
                        self.where, op, path, self.timeout)
            return SFTPTimedOut(op, path, self.timeout, self.where), True
        if isinstance(exc, (TimeoutError, ConnectionStuck)):
            self._discard(client)
            return SFTPTimedOut(op, path, self.timeout, self.where,
                                stuck_send=isinstance(exc, ConnectionStuck)), True
        if not client.usable:
            self._discard(client)
            return exc, True
        if not held:
            self._checkin(client)
        return exc, not held

    def _checkout(self, op: str, path: str) -> DeadlineSFTPClient:
        deadline = time.monotonic() + self.timeout
        while True:
            self._recover()
            with self._cond:
                for s in self._stuck:
                    if s.path == path:
                        raise SFTPTimedOut(op, path, self.timeout, self.where,
                                           waiting=(s.op, time.monotonic() - s.since))
                while self._idle:
                    client = self._idle.pop()
                    if client.usable:
                        self._busy += 1
                        client.pool_closings = self._closings
                        return client
                    _close_quietly(client)
                if self._busy + len(self._stuck) < self.max_channels:
                    self._busy += 1
                    closings = self._closings
                    break
                if self._busy == 0:  # every channel waits on a hung path: fail at once
                    raise SFTPTimedOut(op, path, self.timeout, self.where,
                                       stuck=[(s.op, s.path) for s in self._stuck])
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SFTPTimedOut(op, path, self.timeout, self.where,
                                       busy=self.max_channels)
                self._cond.wait(min(remaining, 0.5))  # wake up to look at stuck channels
        try:
            client = self._open_client(self.timeout)
        except BaseException:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()
            raise
        client.pool_closings = closings
        return client

    def _checkin(self, client: DeadlineSFTPClient) -> None:
        """A channel back from its caller: idle again, or closed when it is out of sync or
        the pool was closed while it was out."""
        if client.outstanding():  # a swallowed half-read reply: out of sync, not reusable
            self._discard(client)
            return
        with self._cond:
            self._busy -= 1
            kept = client.pool_closings == self._closings
            if kept:
                self._idle.append(client)
            self._cond.notify_all()
        if not kept:
            _close_quietly(client)

    def _discard(self, client: DeadlineSFTPClient) -> None:
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()
        _close_quietly(client)

    def _recover(self) -> None:
        """Give back the stuck channels whose late replies have all arrived; drop dead ones.
        A stuck file's close, sent here, is the pool's: no each_request block of the caller
        counts it or may refuse it."""
        with _uncounted():
            self._recover_stuck()

    def _recover_stuck(self) -> None:
        with self._cond:
            ready = [s for s in self._stuck if s.client.wait_readable(0)]
            for s in ready:
                self._stuck.remove(s)
            self._busy += len(ready)
        for s in ready:
            try:
                done = s.client.usable and s.client.read_late_replies()
                if done and s.file is not None:
                    s.file.close()
            except Exception:  # noqa: BLE001 - a channel that fails here is simply dropped
                log.debug("dropping the SFTP channel stuck on %s", s.path, exc_info=True)
                self._discard(s.client)
                continue
            if done:
                log.info("%s: SFTP %s %s answered after %.0f s; its channel is back in use",
                         self.where, s.op, s.path, time.monotonic() - s.since)
                self._checkin(s.client)
            elif s.client.usable:
                with self._cond:  # more replies still outstanding
                    self._busy -= 1
                    self._stuck.append(s)
            else:
                self._discard(s.client)


class LookupLease:
    """A lookup's hold on a channel (`SFTPPool.lookup_channel`): `sftp` while it lasts;
    `abandon()` (any thread, any number of times) closes the channel unless the lease has
    ended already (it may be the next lease's by then)."""

    def __init__(self, pool: SFTPPool, client: DeadlineSFTPClient) -> None:
        self._pool = pool
        self._client = client
        self._lock = threading.Lock()
        self._state = "held"  # then "abandoned" or "ended", never back
        self._sftp = LeaseSFTP(client, where=pool.where, lease=self)

    @property
    def sftp(self) -> LeaseSFTP:
        return self._sftp

    @property
    def abandoned(self) -> bool:
        """Whether `abandon()` came while the lease was held (its channel is closed)."""
        with self._lock:
            return self._state == "abandoned"

    def abandon(self) -> None:
        with self._lock:
            if self._state != "held":
                return
            self._state = "abandoned"  # before the close: what it wakes sees why
        _close_quietly(self._client)  # wakes a request in flight at once

    def _end(self) -> None:
        with self._lock:
            if self._state != "held":
                return
            self._state = "ended"
        self._pool._keep_lookup(self._client)  # noqa: SLF001 - the pool's own lease


class LeaseSFTP(_Requests):
    """A lookup lease's SFTP (`LookupLease.sftp`): the pool's calls, on the lease's one
    channel. A request with no reply within the timeout, or whose reply stalls half-way,
    raises SFTPTimedOut naming its operation and path (an open file's read too); its channel
    is then out of step, and not kept after the lease. A request after the lease's
    `abandon()`, or in flight when it came, raises LeaseAbandoned naming it (the abandon
    closed the channel; nobody waits for the answer)."""

    def __init__(self, client: DeadlineSFTPClient, *, where: str, lease: LookupLease) -> None:
        self._client = client
        self.where = where
        self._lease = lease

    @property
    def channel(self) -> paramiko.Channel:
        """The lease's channel (for tests)."""
        return self._client.channel

    def _checkout(self, op: str, path: str) -> DeadlineSFTPClient:
        if self._lease.abandoned:
            raise LeaseAbandoned(op, path, self.where)
        return self._client

    def _checkin(self, client: DeadlineSFTPClient) -> None:
        """Nothing to give back: the channel stays the lease's until it ends."""

    def _after_error(
        self, client: DeadlineSFTPClient, op: str, path: str, exc: BaseException, *,
        file: paramiko.SFTPFile | None = None, held: bool = False,
    ) -> tuple[BaseException, bool]:
        if self._lease.abandoned and isinstance(exc, Exception):  # paramiko's, of the close
            return LeaseAbandoned(op, path, self.where), True
        if isinstance(exc, (_NoReply, TimeoutError, ConnectionStuck)):  # no reply; a reply
            # stalled half-way; a send stuck
            return SFTPTimedOut(op, path, client.timeout, self.where,
                                stuck_send=isinstance(exc, ConnectionStuck)), True
        return exc, False


class RemoteFile:
    """An open remote file on a channel of its own (a pool's, or a lookup lease's); each
    reply waits at most the timeout (else SFTPTimedOut naming the read and the file). Close
    it (or use `with`) to give the channel back."""

    def __init__(self, pool: _Requests, client: DeadlineSFTPClient, f: paramiko.SFTPFile,
                 path: str):
        self._pool = pool
        self._client: DeadlineSFTPClient | None = client
        self._f = f
        self.path = path

    def read(self, size: int | None = None) -> bytes:
        return self._do("read", lambda: self._f.read(size))

    def write(self, data: bytes | str) -> None:
        self._do("write", lambda: self._f.write(data))

    def set_pipelined(self, pipelined: bool = True) -> None:
        """Writes without waiting for each one's reply (paramiko's SFTPFile.set_pipelined):
        a 32 KiB write request is a round trip otherwise. The replies are read later (by the
        next flush and at close), each within the timeout, but paramiko DROPS a refused
        write's status (SSH_FX_FAILURE: a full disk, a quota): a short file raises nothing,
        here or at close (only sometimes a later flush's own error surfaces). A caller checks
        what arrived: the file's size after close (bot.cluster.pyspy.place_pyspy)."""
        self._f.set_pipelined(pipelined)

    def seek(self, offset: int, whence: int = 0) -> None:
        self._f.seek(offset, whence)  # local: paramiko sends the offset with the next read

    def tell(self) -> int:
        return self._f.tell()

    def stat(self) -> paramiko.SFTPAttributes:
        return self._do("stat", self._f.stat)

    def close(self) -> None:
        """Close the file and give its channel back; a second call does nothing."""
        client, self._client = self._client, None
        if client is None:
            return
        try:
            self._f.close()
        except BaseException as exc:
            error, _lost = self._pool._after_error(client, "close", self.path, exc)  # noqa: SLF001
            if error is exc:
                raise
            raise error from None
        self._pool._checkin(client)  # noqa: SLF001

    def _do(self, op: str, fn: Callable[[], T]) -> T:
        client = self._client
        if client is None:
            raise ValueError(f"{self.path}: the file is closed, or its channel was given up")
        try:
            return fn()
        except BaseException as exc:
            error, lost = self._pool._after_error(  # noqa: SLF001
                client, op, self.path, exc, file=self._f, held=True)
            if lost:
                self._client = None
            if error is exc:
                raise
            raise error from None

    def __enter__(self) -> RemoteFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_quietly(client: DeadlineSFTPClient) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - closing a dead channel may raise anything
        log.debug("ignored error while closing an SFTP channel", exc_info=True)


__all__ = ["ConnectionStuck", "DeadlineSFTPClient", "LeaseSFTP", "LookupLease", "RemoteFile",
           "SFTPPool", "each_request", "open_failed", "sent_request"]
