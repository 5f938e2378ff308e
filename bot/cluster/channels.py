"""paramiko channels, the one way trainbot handles them: waiting on one (a command's output, an
SFTP reply), opening a session within a deadline, a request paramiko waits on without one, an
"exec" request split where it leaves, a "signal", closing one on a lost connection, reading a
command's output off one up to a bound (`BoundedOutput`), and a channel's failure as a person
reads it. bot.cluster.ssh's SSHRunner uses them."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST

from bot.cluster.errors import OutputTooLarge
from bot.core.text import N_, Text
from bot.net import deadlines

log = logging.getLogger(__name__)
T = TypeVar("T")


def wait_channel(chan: paramiko.Channel, event: threading.Event, timeout: float) -> bool:
    """True once `chan` has stdout or stderr bytes, EOF, or is closed (by either side, from
    any thread: the wait ends then, not at its timeout); False after `timeout` seconds (a
    timeout of 0 only looks). `event` is the caller's own, reused from wait to wait.
    """
    deadline = time.monotonic() + timeout
    while True:
        # The channel's buffers set the event when data comes and when they are closed: on
        # EOF, on the server's close, on a dead transport, and on `chan.close()` from any
        # thread (BufferedPipe.set_event). Set here at each wait, before looking: whatever
        # comes after the look sets it, and a `fileno()` since (its OS pipe replaces the
        # event) cannot leave a wait deaf. No select() on `chan.fileno()`: Channel.close()
        # closes that fd while another thread may be about to wait on its number.
        chan.in_buffer.set_event(event)
        chan.in_stderr_buffer.set_event(event)
        if (chan.recv_ready() or chan.recv_stderr_ready() or chan.eof_received
                or chan.closed):
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        event.wait(remaining)


# RFC 4254 5.1's reason codes for a refused channel open (paramiko's ChannelException.code),
# as a person reads them; paramiko's own `str()` of the exception is its repr.
_OPEN_FAILURES = {
    1: N_("administratively prohibited"),
    2: N_("connect failed"),
    3: N_("unknown channel type"),
    4: N_("resource shortage"),
}


def describe_error(exc: BaseException) -> str | Text:
    """`exc`'s message, or its type's name when it has none (paramiko raises a bare
    EOFError on a lost connection: its text is empty, and an exception is never falsy); a
    refused channel (paramiko's ChannelException) as its RFC 4254 reason and code."""
    if isinstance(exc, paramiko.ChannelException):
        reason = _OPEN_FAILURES.get(exc.code)
        if reason is None:
            return N_("the server refused the channel (open-failure code %(code)s)",
                      code=exc.code)
        return N_("the server refused the channel: %(reason)s (open-failure code %(code)s)",
                  reason=reason, code=exc.code)
    return str(exc) or type(exc).__name__


def close_channel(chan: paramiko.Channel) -> None:
    """Close `chan`, also when its connection is gone: paramiko then fails sending the close
    (EOFError, a broken pipe), which must not hide the error that brought the caller here."""
    try:
        chan.close()
    except (paramiko.SSHException, EOFError, OSError):  # the transport is gone already
        log.debug("closing a channel on a lost connection failed", exc_info=True)


def open_session_within(transport: paramiko.Transport, timeout: float) -> paramiko.Channel:
    """A session channel on `transport` opened within `timeout` seconds, else TimeoutError,
    the transport left open. paramiko's own open_session timeout bounds only the wait for the
    answer once the request has left; the send before it waits, without end, for the send in
    progress on the connection (one at a time, under one lock) and for room in the TCP
    window. Only closing the connection ends that wait, which would cut every command running
    on it; so the opening runs on a thread of its own, given up at the deadline. A channel it
    opens after that is closed there; the thread ends when its request leaves or the
    connection is closed (bot.cluster.ssh.SSHRunner retires it: bot.cluster.in_flight)."""
    lock = threading.Lock()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def open_it() -> None:
        try:
            chan = transport.open_session(timeout=math.inf)
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            with lock:
                outcome["error"] = exc
                done.set()
            return
        with lock:
            late = "given up" in outcome
            outcome["channel"] = chan
            done.set()
        if late:
            close_channel(chan)

    threading.Thread(target=open_it, name="ssh session open", daemon=True).start()
    done.wait(timeout)
    with lock:
        if not done.is_set():
            outcome["given up"] = True
            raise TimeoutError(f"no session opened within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    channel: paramiko.Channel = outcome["channel"]
    return channel


def within(timeout: float, close: Callable[[], object], request: Callable[[], T]) -> T:
    """`request()`'s answer, for a request that paramiko waits on without a timeout (exec,
    subsystem), or only in part (a channel's opening); after `timeout` seconds `close()`
    what it waits on (its channel, its connection), which ends paramiko's wait, and raise
    TimeoutError.

    The deadline is kept by the process's one deadlines thread (bot.net.deadlines), not a
    timer thread per request. `close()` may wait (a channel's close is a send, stuck behind a
    send that cannot leave; a connection's close joins its thread), and nothing there may: so
    at the deadline that thread only starts a thread that closes, one only for a request
    that overstays."""
    state = {"done": False, "fired": False}
    lock = threading.Lock()

    def expire() -> None:  # on the deadlines thread: quick, waits for nothing
        with lock:
            if state["done"]:
                return
            state["fired"] = True
        threading.Thread(target=close, name="close at deadline", daemon=True).start()

    due = deadlines.at(time.monotonic() + timeout, expire)
    try:
        answer = request()
    except (paramiko.SSHException, EOFError, OSError):
        if not state["fired"]:
            raise
    finally:
        due.cancel()
        with lock:
            state["done"] = True
    if state["fired"]:
        raise TimeoutError(f"no answer within {timeout:g} s")
    return answer


class NotSent(Exception):
    """A command's "exec" request did not leave: sshd got no whole request, nothing ran."""


def request_exec(chan: paramiko.Channel, command: str) -> None:
    """paramiko's `Channel.exec_command` (the same request, the same wait for sshd's answer),
    split where the request leaves: NotSent when it did not (the channel not open, its
    connection gone, the send failing: a packet cut short is never decoded, so sshd runs
    nothing), paramiko's own errors after it did (the answer never came: the command may or
    may not have run). paramiko's call raises the same errors for both."""
    if chan.closed or chan.eof_sent or not chan.active:  # paramiko's @open_only
        raise NotSent(N_("its channel was not open"))
    transport = chan.get_transport()
    if transport is None or not transport.is_active():  # paramiko would drop it silently
        raise NotSent(N_("the connection was gone"))
    m = _channel_request(chan, "exec", command, want_reply=True)
    # paramiko's own steps, as exec_command takes them (private: not in its type stubs)
    chan._event_pending()  # type: ignore[attr-defined]  # noqa: SLF001
    try:
        transport._send_user_message(m)  # type: ignore[attr-defined]  # noqa: SLF001
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise NotSent(N_("the connection failed sending it (%(error)s)",
                          error=describe_error(exc))) from exc
    chan._wait_for_event()  # type: ignore[attr-defined]  # noqa: SLF001


def _channel_request(chan: paramiko.Channel, kind: str, arg: str, *,
                     want_reply: bool) -> paramiko.Message:
    """The SSH "channel request" message `kind` (RFC 4254 6.5 "exec", 6.9 "signal") with its
    one string argument, as paramiko builds it."""
    m = paramiko.Message()
    m.add_byte(cMSG_CHANNEL_REQUEST)
    m.add_int(chan.remote_chanid)
    m.add_string(kind)
    m.add_boolean(want_reply)
    m.add_string(arg)
    return m


def send_signal(chan: paramiko.Channel, name: str) -> None:
    """Ask sshd to signal the channel's process (OpenSSH >= 7.9 honours it); best effort.

    paramiko has no public call for this channel request, so it is built here.
    """
    m = _channel_request(chan, "signal", name, want_reply=False)
    try:
        chan.transport._send_user_message(m)  # type: ignore[union-attr]  # noqa: SLF001
    except Exception:  # noqa: BLE001 - the command is abandoned either way
        log.debug("could not send SIG%s to the remote command", name, exc_info=True)


_READ_CHUNK = 65536


class BoundedOutput:
    """What one command (`args`) sent back on `chan` so far, stdout and stderr, at most
    `limit` bytes together: the chunk past it sends the remote process SIGTERM, closes the
    channel and raises OutputTooLarge (its output dropped), so a flood cannot grow the bot's
    memory."""

    def __init__(self, chan: paramiko.Channel, args: tuple[str, ...], limit: int) -> None:
        self.chan, self.args, self.limit = chan, args, limit
        self.total = 0
        self._out: list[bytes] = []
        self._err: list[bytes] = []

    @property
    def stdout(self) -> bytes:
        return b"".join(self._out)

    @property
    def stderr(self) -> bytes:
        return b"".join(self._err)

    def read_until_exit(self, stdin: bytes | str | None, deadline: float) -> bool:
        """Send `stdin` (then EOF), read stdout and stderr until the exit status came (True)
        or until `deadline` (time.monotonic()) passed (False: the remote process is then sent
        SIGTERM). TimeoutError when the send of `stdin` blocked past the deadline; paramiko's
        own errors (a send cut by the connection's close) as they come."""
        chan = self.chan
        if stdin is not None:
            data = stdin.encode() if isinstance(stdin, str) else stdin
            chan.settimeout(max(deadline - time.monotonic(), 0.001))
            chan.sendall(data)
        chan.shutdown_write()  # EOF on stdin, so `cat`-like commands finish
        chan.settimeout(None)
        readable = threading.Event()  # see wait_channel
        while True:
            self._drain()
            if chan.exit_status_ready() and (chan.eof_received or chan.closed):
                self._drain()  # what arrived together with the exit status
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                send_signal(chan, "TERM")
                return False
            if chan.eof_received:
                # Output is done but the exit status has not arrived yet; wait_channel
                # returns at once after EOF, so wait on the status event instead.
                chan.status_event.wait(min(remaining, 0.5))
            else:
                wait_channel(chan, readable, remaining)

    def _drain(self) -> None:
        while self.chan.recv_ready():
            self._out.append(self._bounded(self.chan.recv(_READ_CHUNK)))
        while self.chan.recv_stderr_ready():
            self._err.append(self._bounded(self.chan.recv_stderr(_READ_CHUNK)))

    def _bounded(self, chunk: bytes) -> bytes:
        self.total += len(chunk)
        if self.total > self.limit:
            send_signal(self.chan, "TERM")
            close_channel(self.chan)
            raise OutputTooLarge(self.args, self.limit)
        return chunk


__all__ = ["BoundedOutput", "NotSent", "close_channel", "describe_error", "open_session_within",
           "request_exec", "send_signal", "wait_channel", "within"]
