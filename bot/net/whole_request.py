"""One HTTP request (to Slack, to a webhook) bounded as a whole, by the wall clock.

A socket timeout bounds each socket operation only: a response whose bytes trickle in (one
every few seconds, each within the timeout) could outlast it without end, and a post's worst
case ("its deadline, then one request": bot.core.slack_bounds.post_at_most_s) would not
hold. Here the whole request (looking its host up, connecting, sending, the status line,
the headers and the body) ends within `timeout_s`: the host's name is looked up within what
is left of it (bot.net.dns.resolve_within), each of its addresses is connected to with
what is left as its timeout, and when it is due its sockets (each registered before it
connects) are shut down, so the connect or read blocked on them returns: by the one thread
that keeps every request's deadline (bot.net.deadlines), not a timer thread per request.

Its failure says whether Slack may have seen the request, as slack_sdk's own request path
does (its retry handlers and bot.slack.poster.call_fate read it). Before the request was
sent (its connection, a proxy's tunnel and the TLS handshake not all made), the failure is
a URLError, as urlopen's, and one whose time ran out a URLError of NotConnectedInTime: the
connection errors slack_sdk re-sends, Slack never having seen them. Once it was sent, its
time running out is a TimeoutError, as a socket timeout's (Slack may have performed it:
bot.slack.poster reconciles it by its key). An answer read whole is returned, even when the
timer fired as its last byte came: one whose length was declared, read to its end, or one
without (its body ends at the connection's close) whose end came before the request was due.
An answer whose headers were cut (the connection ended before their blank line: http.client
takes what came for all of them, `Content-Length: 0` and no body an empty answer) is a lost
one, RemoteDisconnected as a connection dropped before the status line (slack_sdk re-sends
idempotent calls; the poster looks a post up), TimeoutError when its time had run out.

Behind a proxy too: the request goes through the proxy slack_sdk would use (the client's
`proxy`, which slack_sdk takes from HTTPS_PROXY, https_proxy, HTTP_PROXY or http_proxy when
none is given; NO_PROXY's hosts are reached directly, as urllib's ProxyHandler does for
slack_sdk), an https URL through its CONNECT tunnel. The connection to the proxy is the
request's connection (the tunnel carries the TLS connection inside it), so shutting it down
cuts the request as a direct one. Only http(s) handlers open anything here: a proxy URL that
would turn the request into another kind (ftp://) fails at once ("unknown url type"), never
unbounded.

Used by the bot's WebClient (bot.slack.retry.make_client: every Web API call), by a file
upload's bytes (bot.slack.poster.SlackPoster._upload_bytes) and by the event webhook's POSTs
(bot.ops.webhook.JsonWebhook), which read the failures as urlopen's.
"""

from __future__ import annotations

import errno
import functools
import io
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from email.message import Message
from http.client import HTTPResponse, RemoteDisconnected
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.request import (
    HTTPDefaultErrorHandler,
    HTTPErrorProcessor,
    HTTPHandler,
    HTTPRedirectHandler,
    HTTPSHandler,
    OpenerDirector,
    ProxyHandler,
    Request,
    UnknownHandler,
)

from bot.net import deadlines
from bot.net.dns import resolve_within

log = logging.getLogger(__name__)


class NotConnectedInTime(TimeoutError):
    """A request whose time ran out before it was sent: while its host was looked up, its
    connection, a proxy's tunnel or the TLS handshake was being made. Slack never saw it
    (bot.slack.retry.request_not_sent)."""


class _Sockets:
    """The connections one request opens (its connection, a proxy's tunnel), shut down at
    once once it is due (`expire`, at the monotonic time `ends`), and every one opened after
    that as it opens; `sent`: a connection was made whole (TCP, tunnel, TLS), so the request
    may have been sent; `answered`: its answer was read whole before it was due, so the
    timer's firing no longer cuts it.

    Each is held by a duplicate of its descriptor: over HTTPS, ssl wraps the socket
    http.client connected into an SSLSocket that takes its descriptor away (`detach`), and the
    connected socket then has none to shut down. A shutdown acts on the connection, whichever
    descriptor names it: the duplicate's ends a connect under way, the TLS socket's read, and
    the handshake's, as a plain socket's. `close` closes the duplicates once the request is
    over."""

    def __init__(self, timeout_s: float) -> None:
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.ends = time.monotonic() + timeout_s
        self.expired = False
        self.answered = False
        self.sent = False

    def opened(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            held = sock.dup()
            self._open.append(held)
            if self.expired:
                _shut(held)
        return sock

    def expire(self) -> None:
        with self._lock:
            if self.answered:
                return
            self.expired = True
            for held in self._open:
                _shut(held)

    def answer_read(self) -> bool:
        """Say the answer was read; whether it was read before the request was due (else the
        timer may have cut it)."""
        with self._lock:
            self.answered = not self.expired
            return self.answered

    def ended_in_time(self) -> bool:
        """Whether a stream's end (a read that found none left) came before the request was
        due: then it is the peer's, not the shutdown's (which marks the request due first)."""
        with self._lock:
            return not self.expired

    def left_s(self) -> float:
        return self.ends - time.monotonic()

    def connect(self, address: tuple[str, int], timeout: float | None,
                source_address: tuple[str, int] | None = None) -> socket.socket:
        """socket.create_connection within the request's time: the name looked up within
        what is left of it, each address (in the resolver's order, the next one tried when
        one fails) connected to with what is left as its timeout (or `timeout`, if less),
        each socket known here before it connects, so the timer ends its connect."""
        host, port = address
        infos = resolve_within(host, port, self.ends)
        error: OSError | None = None
        for family, kind, proto, _, addr in infos:
            sock = self.opened(socket.socket(family, kind, proto))
            try:
                left = self.left_s()
                if left <= 0:
                    raise NotConnectedInTime(f"{host} was not connected to in time")
                sock.settimeout(left if timeout is None else min(timeout, left))
                if source_address is not None:
                    sock.bind(source_address)
                sock.connect(addr)
                return sock
            except OSError as exc:
                sock.close()
                error = exc
                if isinstance(exc, NotConnectedInTime):
                    break
        raise error or OSError(f"getaddrinfo returned no address for {host}")

    def close(self) -> None:
        with self._lock:
            for held in self._open:
                held.close()
            self._open.clear()


def _shut(sock: socket.socket) -> None:
    """Shut `sock`'s connection down both ways: a read blocked on it (another thread's)
    returns. A connection no longer connected (the peer reset it) has no read to end; any
    other failure leaves a read blocked past the request's bound, and is logged."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError as exc:
        if exc.errno != errno.ENOTCONN:
            log.error("could not cut a Slack request at its timeout: shutting its connection "
                      "down failed (%s); its read may go on past the bound", exc)


def _watched(connection: Callable[..., Any], sockets: _Sockets) -> Callable[..., Any]:
    """`connection` (an http.client connection class) connecting through `sockets`
    (`_Sockets.connect`), which is told once it is connected (TCP, tunnel, TLS): from then
    on the request may have been sent; its answers read through `_Response`."""

    def make(*args: Any, **kwargs: Any) -> Any:
        conn = connection(*args, **kwargs)
        conn._create_connection = sockets.connect
        conn.response_class = functools.partial(_Response, sockets=sockets)
        connect = conn.connect

        def connect_then_send() -> None:
            connect()
            sockets.sent = True

        conn.connect = connect_then_send
        return conn

    return make


class _Stream(io.RawIOBase):
    """An answer's connection read as a stream (`socket.makefile`'s), noting its end: `ended`
    once a read found nothing left, `ended_in_time` when that was before the request was
    due (the peer closed it: not the deadline's shutdown, after which a read finds nothing
    left either)."""

    def __init__(self, raw: Any, sockets: _Sockets) -> None:
        super().__init__()
        self._raw = raw
        self._sockets = sockets
        self.ended = False
        self.ended_in_time = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n: int = self._raw.readinto(buffer)
        if n == 0 and len(buffer) and not self.ended:
            self.ended = True
            self.ended_in_time = self._sockets.ended_in_time()
        return n

    def fileno(self) -> int:
        return int(self._raw.fileno())

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Connection:
    """The connected socket as HTTPResponse sees it: its `makefile` a `_Stream`'s, buffered."""

    def __init__(self, sock: socket.socket, sockets: _Sockets) -> None:
        self._sock = sock
        self._sockets = sockets
        self.stream: _Stream | None = None

    def makefile(self, mode: str) -> io.BufferedReader:
        assert mode == "rb"  # all HTTPResponse asks for
        self.stream = _Stream(self._sock.makefile("rb", buffering=0), self._sockets)
        return io.BufferedReader(self.stream)


class _Response(HTTPResponse):
    """http.client's answer, read through a `_Stream` (`stream`): whether its headers were
    cut (the stream ended before their blank line: http.client reads what came as all of
    them) and whether a body without a declared length ended at the peer's close, before
    the request was due."""

    def __init__(self, sock: socket.socket, *args: Any, sockets: _Sockets, **kwargs: Any
                 ) -> None:
        connection = _Connection(sock, sockets)
        super().__init__(connection, *args, **kwargs)  # type: ignore[arg-type]
        assert connection.stream is not None
        self.stream = connection.stream


class _WatchedHTTP(HTTPHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self._sockets = sockets

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self._sockets), req, **kwargs)


class _WatchedHTTPS(HTTPSHandler):
    def __init__(self, sockets: _Sockets, context: ssl.SSLContext | None) -> None:
        super().__init__(context=context)
        self._sockets = sockets

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_watched(http_class, self._sockets), req, **kwargs)


def open_whole(request: Request, *, timeout_s: float, context: ssl.SSLContext | None,
               proxy: str | None) -> tuple[int, Message, bytes]:
    """Send `request` and read its whole answer (status, headers, body), all within
    `timeout_s` of the call (each socket operation too), its host's lookup and connection
    included: once it is due, URLError of NotConnectedInTime when it was not sent yet, else
    TimeoutError. An HTTP error status raises HTTPError, as urlopen does, its body read
    within the bound too (its `read()` gives it back). `proxy`: the proxy's URL for http and
    https alike (slack_sdk's WebClient.proxy), None: none."""
    sockets = _Sockets(timeout_s)
    due = deadlines.at(sockets.ends, sockets.expire)
    opener = _opener(sockets, context, proxy)
    try:
        try:
            with opener.open(request, timeout=timeout_s) as resp:
                answer = resp.status, resp.headers, _read_whole(resp, sockets, timeout_s)
        except HTTPError as exc:
            body = _read_whole(exc.fp or io.BytesIO(), sockets, timeout_s)
            raise HTTPError(exc.url, exc.code, exc.msg, exc.headers,
                            io.BytesIO(body)) from None
        return answer
    except HTTPError:
        raise
    except Exception as exc:
        if not sockets.sent and (sockets.expired or _timed_out(exc)):
            raise URLError(NotConnectedInTime(
                f"the request was not sent within {timeout_s:g} s "
                f"({type(exc).__name__}: {exc})")) from exc
        if sockets.expired:
            raise _late(timeout_s, exc) from exc
        raise
    finally:
        due.cancel()
        sockets.close()


def _timed_out(exc: Exception) -> bool:
    reason = exc.reason if isinstance(exc, URLError) else exc
    return isinstance(reason, TimeoutError)


def _read_whole(resp: Any, sockets: _Sockets, timeout_s: float) -> bytes:
    """`resp`'s body, read whole: an answer whose headers were cut (its stream ended before
    their end: http.client reads what came as all of them) was lost, as a dropped
    connection's is (RemoteDisconnected; open_whole makes it TimeoutError when the
    request's time ran out). A body whose length was declared (or chunked), read to its end,
    is whole (a cut one raises IncompleteRead), even when the request's time ran out as its
    last byte came; one without (it ends at the connection's close) when its end came before
    the request was due (after, the end may be the shutdown's). Else TimeoutError."""
    stream = resp.stream if isinstance(resp, _Response) else None
    if stream is not None and stream.ended:
        raise RemoteDisconnected("the connection ended within the answer's headers")
    declared = isinstance(resp, HTTPResponse) and (resp.chunked or resp.length is not None)
    body: bytes = resp.read()
    in_time = sockets.answer_read()
    if not (in_time or declared or (stream is not None and stream.ended_in_time)):
        raise _late(timeout_s, None)
    return body


def _opener(sockets: _Sockets, context: ssl.SSLContext | None, proxy: str | None
            ) -> OpenerDirector:
    """urllib's opener for http(s), as slack_sdk builds it (its proxy for both schemes), each
    connection known to `sockets`; without urllib's ftp, file and data handlers, whose
    connections the bound would not know."""
    opener = OpenerDirector()
    for handler in (ProxyHandler({"http": proxy, "https": proxy} if proxy else {}),
                    UnknownHandler(), _WatchedHTTP(sockets), _WatchedHTTPS(sockets, context),
                    HTTPDefaultErrorHandler(), HTTPRedirectHandler(), HTTPErrorProcessor()):
        opener.add_handler(handler)
    return opener


def _late(timeout_s: float, exc: Exception | None) -> TimeoutError:
    cause = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    return TimeoutError(f"the request took longer than {timeout_s:g} s in all{cause}")
