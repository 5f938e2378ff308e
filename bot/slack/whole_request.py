"""One HTTP request to Slack bounded as a whole, by the wall clock.

A socket timeout bounds each socket operation only: a response whose bytes trickle in (one
every few seconds, each within the timeout) could outlast it without end, and a post's worst
case ("its deadline, then one request": bot.core.slack_bounds.post_at_most_s) would not
hold. Here the whole request (connecting, sending, the status line, the headers and the
body) ends within `timeout_s`: a timer shuts down the request's sockets when it is due, the
read blocked on them returns, and the request fails with TimeoutError, as a socket timeout
does (Slack may have performed it: bot.slack.poster reconciles it by its key).

Behind a proxy too: the request goes through the proxy slack_sdk would use (the client's
`proxy`, which slack_sdk takes from HTTPS_PROXY, https_proxy, HTTP_PROXY or http_proxy when
none is given; NO_PROXY's hosts are reached directly, as urllib's ProxyHandler does for
slack_sdk), an https URL through its CONNECT tunnel. The connection to the proxy is the
request's connection (the tunnel carries the TLS connection inside it), so shutting it down
cuts the request as a direct one. Only http(s) handlers open anything here: a proxy URL that
would turn the request into another kind (ftp://) fails at once ("unknown url type"), never
unbounded.

Used by the bot's WebClient (bot.slack.retry.make_client: every Web API call) and by a file
upload's bytes (bot.slack.poster.SlackPoster._upload_bytes).
"""

from __future__ import annotations

import errno
import io
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from email.message import Message
from typing import Any
from urllib.error import HTTPError
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

log = logging.getLogger(__name__)


class _Sockets:
    """The connections one request opened (its connection, a proxy's tunnel), shut down at
    once once it is due (`expire`), and every one opened after that as it opens.

    Each is held by a duplicate of its descriptor: over HTTPS, ssl wraps the socket
    http.client connected into an SSLSocket that takes its descriptor away (`detach`), and the
    connected socket then has none to shut down. A shutdown acts on the connection, whichever
    descriptor names it: the duplicate's ends the TLS socket's read, and the handshake's, as
    a plain socket's. `close` closes the duplicates once the request is over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.expired = False

    def opened(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            held = sock.dup()
            self._open.append(held)
            if self.expired:
                _shut(held)
        return sock

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for held in self._open:
                _shut(held)

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
    """`connection` (an http.client connection class) whose sockets `sockets` knows."""

    def make(*args: Any, **kwargs: Any) -> Any:
        conn = connection(*args, **kwargs)
        create = conn._create_connection
        conn._create_connection = lambda *a, **k: sockets.opened(create(*a, **k))
        return conn

    return make


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
    `timeout_s` of the call (each socket operation too): TimeoutError once it is due. An
    HTTP error status raises HTTPError, as urlopen does, its body read within the bound
    too (its `read()` gives it back). `proxy`: the proxy's URL for http and https alike
    (slack_sdk's WebClient.proxy), None: none."""
    sockets = _Sockets()
    timer = threading.Timer(timeout_s, sockets.expire)
    timer.daemon = True
    timer.start()
    opener = _opener(sockets, context, proxy)
    try:
        try:
            with opener.open(request, timeout=timeout_s) as resp:
                answer = resp.status, resp.headers, resp.read()
        except HTTPError as exc:
            body = exc.read()
            _whole(sockets, timeout_s)
            raise HTTPError(exc.url, exc.code, exc.msg, exc.headers,
                            io.BytesIO(body)) from None
        _whole(sockets, timeout_s)
        return answer
    except HTTPError:
        raise
    except Exception as exc:
        if sockets.expired:
            raise _late(timeout_s, exc) from exc
        raise
    finally:
        timer.cancel()
        sockets.close()


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


def _whole(sockets: _Sockets, timeout_s: float) -> None:
    """Raise TimeoutError when the request's sockets were shut down: what was read may be
    cut anywhere (http.client reads headers cut at the end of the stream as all of them,
    and a body without its length as ended there)."""
    if sockets.expired:
        raise _late(timeout_s, None)


def _late(timeout_s: float, exc: Exception | None) -> TimeoutError:
    cause = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    return TimeoutError(f"the request took longer than {timeout_s:g} s in all{cause}")
