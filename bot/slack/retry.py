"""Retry handlers for slack_sdk's WebClient: which failed calls the client may send again."""

from __future__ import annotations

import copy
import random
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.error import URLError
from urllib.request import Request

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from bot.core import slack_bounds as bounds
from bot.core.slack_bounds import (
    BACKOFF_CAP_S,
    BACKOFF_S,
    CONNECTION_DROP_RETRIES,
    JITTER,
    RATE_LIMIT_RETRIES,
    RETRY_AFTER_MAX_WAIT_S,
    SERVER_ERROR_RETRIES,
)
from bot.net.whole_request import NotConnectedInTime, open_whole

Sleep = Callable[[float], None]

# The deadline of the post being made in this thread (bot.slack.poster.SlackPoster._post):
# its clock and the time it ends at. None outside a post: the handlers' own limits only.
_POST_DEADLINE: ContextVar[tuple[Callable[[], float], float] | None] = ContextVar(
    "post_deadline", default=None)


@contextmanager
def post_deadline(clock: Callable[[], float], deadline: float) -> Iterator[None]:
    """Within it, the handlers below make no wait that would end at or past `deadline` (by
    `clock`): the call fails as when its retries run out (bot.core.slack_bounds)."""
    token = _POST_DEADLINE.set((clock, deadline))
    try:
        yield
    finally:
        _POST_DEADLINE.reset(token)


def waits_in_time(wait_s: float) -> bool:
    """Whether a wait of `wait_s` before a retry ends before the current post's deadline
    (always, outside a post)."""
    current = _POST_DEADLINE.get()
    if current is None:
        return True
    clock, deadline = current
    return bounds.waits_in_time(clock(), wait_s, deadline)

# Whether the client, in the call being made in this thread, sent a request again after one
# whose outcome it could not know (a connection dropped once the request was out, a 5xx):
# Slack may have performed that one, whatever the last answer says. None outside
# `resends_watched`.
_RESENT_AFTER_UNKNOWN: ContextVar[list[bool] | None] = ContextVar(
    "resent_after_unknown", default=None)


@contextmanager
def resends_watched() -> Iterator[Callable[[], bool]]:
    """Within it, the handlers below note each re-send of a request Slack may have performed
    (ConnectionDropHandler's after a request that went out, ServerErrorBackoffHandler's);
    yields a function telling whether there was one. A refusal answered to such a re-send
    does not tell that nothing changed: the first sending may have gone through."""
    resent = [False]
    token = _RESENT_AFTER_UNKNOWN.set(resent)
    try:
        yield lambda: resent[0]
    finally:
        _RESENT_AFTER_UNKNOWN.reset(token)


def _note_resent_after_unknown() -> None:
    resent = _RESENT_AFTER_UNKNOWN.get()
    if resent is not None:
        resent[0] = True

# Methods the client never re-sends after a 5xx or a dropped connection: each sending may
# make one more message or file appear. The poster reconciles them instead.
NON_IDEMPOTENT = frozenset({"chat.postMessage", "files.completeUploadExternal"})


def _method_of(request: HttpRequest) -> str:
    return request.url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def request_not_sent(error: BaseException) -> bool:
    """True when `error` proves no byte of the request reached Slack: the connection was
    refused, the host name did not resolve, or the request's time ran out before it was sent
    (NotConnectedInTime). Anything else (reset, closed without an answer, timeout) may have
    happened after Slack received the whole request."""
    reason = error.reason if isinstance(error, URLError) else error
    return isinstance(reason, ConnectionRefusedError | socket.gaierror | NotConnectedInTime)


class _Backoff(RetryHandler):
    """What the two handlers below share: their settings (`skip_methods`: what their
    `_can_retry` holds back) and a `backoff_delay` wait before each next attempt. It comes
    before slack_sdk's handler among their bases, so `max_retry_count` reaches that one."""

    def __init__(self, max_retry_count: int, *, sleep: Sleep = time.sleep,
                 backoff_s: float = BACKOFF_S,
                 skip_methods: Iterable[str] = NON_IDEMPOTENT) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.sleep = sleep
        self.backoff_s = backoff_s
        self.skip_methods = frozenset(skip_methods)
        self.waits: list[float] = []

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        wait = backoff_delay(state.current_attempt, self.backoff_s)
        if not waits_in_time(wait):
            return  # past the post's deadline: the call fails as when retries run out
        state.next_attempt_requested = True
        if self._outcome_unknown(error):
            _note_resent_after_unknown()
        self.waits.append(wait)
        self.sleep(wait)
        state.increment_current_attempt()

    def _outcome_unknown(self, error: Exception | None) -> bool:
        """Whether Slack may have performed the request sent again (a 5xx: it may have)."""
        return True


class ConnectionDropHandler(_Backoff, ConnectionErrorRetryHandler):
    """A connection error: re-send idempotent methods with backoff; a method in
    `skip_methods` only when the request was never sent (`request_not_sent`)."""

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if not super()._can_retry(state=state, request=request, response=response, error=error):
            return False
        return _method_of(request) not in self.skip_methods or (
            error is not None and request_not_sent(error))

    def _outcome_unknown(self, error: Exception | None) -> bool:
        """A request that never went out (`request_not_sent`) was not performed."""
        return error is None or not request_not_sent(error)


class RetryAfterHandler(RateLimitErrorRetryHandler):
    """429: wait exactly `Retry-After` seconds (capped by `max_wait_s`), then resend.

    A rate-limited request was not processed by Slack, so resending any method is safe.
    """

    def __init__(self, max_retry_count: int = RATE_LIMIT_RETRIES, *, sleep: Sleep = time.sleep,
                 max_wait_s: float = RETRY_AFTER_MAX_WAIT_S,
                 on_wait: Callable[[float], None] | None = None):
        super().__init__(max_retry_count=max_retry_count)
        self.sleep = sleep
        self.max_wait_s = max_wait_s
        self.on_wait = on_wait  # told each wait (the 429 metrics)
        self.waits: list[float] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> RetryAfterHandler:
        """Itself: slack_bolt gives each request a client with the app's client's handlers
        and deep-copies the request for a lazy listener (`/train`, a click); a copy would
        tell a copy of `on_wait`'s metrics, whose locks cannot be copied anyway (the copy
        then failed, answering every `/train` and click of `trainbot run` with a 500)."""
        return self

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if response is None:  # pragma: no cover - _can_retry requires a response
            raise error  # type: ignore[misc]
        wait = 1.0
        for k, v in response.headers.items():
            if k.lower() == "retry-after":
                raw = v[0] if isinstance(v, list) else v
                try:
                    wait = float(raw)
                except ValueError:
                    wait = 1.0
                break
        wait = min(max(wait, 0.0), self.max_wait_s)
        if not waits_in_time(wait):
            return  # a Retry-After past the post's deadline is not waited: the 429 stands
        state.next_attempt_requested = True
        self.waits.append(wait)
        if self.on_wait is not None:
            self.on_wait(wait)
        self.sleep(wait)
        state.increment_current_attempt()


class ServerErrorBackoffHandler(_Backoff, ServerErrorRetryHandler):
    """5xx: exponential backoff with jitter (0.5 s, 1 s, 2 s …), except for the methods in
    `skip_methods`: Slack may have performed them, the caller reconciles."""

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code < 500 or response.status_code > 599:
            return False
        return _method_of(request) not in self.skip_methods


def backoff_delay(attempt: int, base_s: float = BACKOFF_S, cap_s: float = BACKOFF_CAP_S
                  ) -> float:
    """Exponential backoff with up to JITTER (25 %) jitter: base·2^attempt, capped; at most
    (1 + JITTER)·min(cap, base·2^attempt)."""
    delay = min(cap_s, base_s * (2**attempt))
    return delay * (1.0 + JITTER * random.random())  # noqa: S311 - jitter, not crypto


def make_client(
    token: str,
    *,
    timeout: int,
    base_url: str | None = None,
    sleep: Sleep = time.sleep,
    rate_limit_retries: int = RATE_LIMIT_RETRIES,
    server_error_retries: int = SERVER_ERROR_RETRIES,
    backoff_s: float = BACKOFF_S,
    on_call: Callable[[str], None] | None = None,
    on_rate_limit_wait: Callable[[float], None] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    proxy: str | None = None,
) -> WebClient:
    """A WebClient that waits out 429s and re-sends after 5xx or a dropped connection only
    what cannot be performed twice (see docs/architecture.md, bot/slack/retry.py).
    `timeout`: one request's, no default (the bot's is bot.core.slack_bounds.CALL_TIMEOUT_S,
    which its post bounds count: bot.app.slack_client). `on_call(method)` is told each Web
    API call, `on_rate_limit_wait(s)` each 429 wait. `ssl_context`: the certificates HTTPS
    trusts (None: the system's), for the Web API and a file's upload URL alike. `proxy`: the
    HTTP proxy's URL (the config's slack.proxy) for both, and for Socket Mode's connection
    (slack_bolt's SocketModeHandler takes the app's client's); None: slack_sdk's, from
    HTTPS_PROXY and its kin."""
    handlers = [
        ConnectionDropHandler(CONNECTION_DROP_RETRIES, sleep=sleep, backoff_s=backoff_s),
        RetryAfterHandler(rate_limit_retries, sleep=sleep, on_wait=on_rate_limit_wait),
        ServerErrorBackoffHandler(server_error_retries, sleep=sleep, backoff_s=backoff_s),
    ]
    kwargs: dict = {"token": token, "retry_handlers": handlers, "timeout": timeout,
                    "ssl": ssl_context, "proxy": proxy}
    if base_url is not None:
        kwargs["base_url"] = base_url
    if on_call is None:
        return _WholeRequestClient(**kwargs)
    return _CountingClient(on_call, **kwargs)


def request_client(app_client: WebClient, bolt_client: WebClient) -> WebClient:
    """The client a Slack handler is given for one request: slack_bolt makes a plain
    WebClient per request (`bolt_client`: the app's token, base URL, timeout, TLS, proxy and
    a copy of its retry handlers list, for the request's team), which is not the class of the
    app's client made here (`app_client`): its calls were not counted (`on_call`, the
    trainbot_slack_api_calls_total metric) and its requests not bounded as a whole. This is
    `bolt_client`'s settings in a client of `app_client`'s class, with its callbacks;
    `bolt_client` itself when `app_client` is no client of make_client's."""
    if not isinstance(app_client, _WholeRequestClient) or isinstance(bolt_client, type(app_client)):
        return bolt_client
    client = copy.copy(app_client)  # its class and what it adds (`_on_call`)
    client.__dict__.update(bolt_client.__dict__)  # the request's token, team, handlers list
    return client


class _WholeRequestClient(WebClient):
    """A WebClient whose every request ends within its `timeout` as a whole
    (bot.net.whole_request): a response trickling in byte by byte fails with TimeoutError
    when it is due, as a socket timeout does, not one socket read's timeout after each byte
    (which would let one request outlast a post's worst case,
    bot.core.slack_bounds.post_at_most_s). Through its `proxy` too (slack_sdk's: given, or
    from HTTPS_PROXY and its kin), bounded the same way."""

    def _perform_urllib_http_request_internal(self, url: str, req: Request) -> dict[str, Any]:
        if not url.lower().startswith("http"):
            return super()._perform_urllib_http_request_internal(url, req)  # refuses it
        status, headers, body = open_whole(req, timeout_s=self.timeout, context=self.ssl,
                                           proxy=self.proxy)
        if headers.get_content_type() == "application/gzip":  # as slack_sdk's: bytes
            return {"status": status, "headers": headers, "body": body}
        charset = headers.get_content_charset() or "utf-8"
        return {"status": status, "headers": headers, "body": body.decode(charset)}


class _CountingClient(_WholeRequestClient):
    """A WebClient telling `on_call` the method of each Web API call it makes."""

    def __init__(self, on_call: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_call = on_call

    def api_call(self, api_method: str, **kwargs: Any) -> Any:
        self._on_call(api_method)
        return super().api_call(api_method, **kwargs)
