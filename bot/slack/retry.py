"""Retry handlers for slack_sdk's WebClient: wait `Retry-After` on 429, back off on 5xx.

python-slack-sdk retries only connection errors by default. These subclass its
`slack_sdk.http_retry` handlers so the wait is injectable (tests count waits instead of
sleeping) and so `chat.postMessage` is never re-sent blindly after a 5xx: Slack may have
posted it already, so `SlackPoster` reconciles (looks the message up by its key) first.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

Sleep = Callable[[float], None]

# Methods whose 5xx the SDK must not retry by itself (not idempotent: the poster reconciles).
NON_IDEMPOTENT = frozenset({"chat.postMessage"})


def _method_of(request: HttpRequest) -> str:
    return request.url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


class RetryAfterHandler(RateLimitErrorRetryHandler):
    """429: wait exactly `Retry-After` seconds (capped by `max_wait_s`), then resend.

    A rate-limited request was not processed by Slack, so resending any method is safe.
    """

    def __init__(self, max_retry_count: int = 5, *, sleep: Sleep = time.sleep,
                 max_wait_s: float = 120.0):
        super().__init__(max_retry_count=max_retry_count)
        self.sleep = sleep
        self.max_wait_s = max_wait_s
        self.waits: list[float] = []

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
        state.next_attempt_requested = True
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
        self.waits.append(wait)
        self.sleep(wait)
        state.increment_current_attempt()


class ServerErrorBackoffHandler(ServerErrorRetryHandler):
    """5xx: exponential backoff with jitter (0.5 s, 1 s, 2 s …), except for non-idempotent
    methods, which are left to the caller's reconcile-then-retry."""

    def __init__(self, max_retry_count: int = 3, *, sleep: Sleep = time.sleep,
                 backoff_s: float = 0.5, skip_methods: Iterable[str] = NON_IDEMPOTENT):
        super().__init__(max_retry_count=max_retry_count)
        self.sleep = sleep
        self.backoff_s = backoff_s
        self.skip_methods = frozenset(skip_methods)
        self.waits: list[float] = []

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

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        state.next_attempt_requested = True
        wait = backoff_delay(state.current_attempt, self.backoff_s)
        self.waits.append(wait)
        self.sleep(wait)
        state.increment_current_attempt()


def backoff_delay(attempt: int, base_s: float = 0.5, cap_s: float = 30.0) -> float:
    """Exponential backoff with up to 25 % jitter: base·2^attempt, capped."""
    delay = min(cap_s, base_s * (2**attempt))
    return delay * (1.0 + 0.25 * random.random())  # noqa: S311 - jitter, not crypto


def make_client(
    token: str,
    *,
    base_url: str | None = None,
    sleep: Sleep = time.sleep,
    rate_limit_retries: int = 5,
    server_error_retries: int = 3,
    backoff_s: float = 0.5,
    timeout: int = 30,
) -> WebClient:
    """A WebClient that waits out 429s and backs off on 5xx (see module docstring)."""
    handlers = [
        ConnectionErrorRetryHandler(max_retry_count=2),
        RetryAfterHandler(rate_limit_retries, sleep=sleep),
        ServerErrorBackoffHandler(server_error_retries, sleep=sleep, backoff_s=backoff_s),
    ]
    kwargs: dict = {"token": token, "retry_handlers": handlers, "timeout": timeout}
    if base_url is not None:
        kwargs["base_url"] = base_url
    return WebClient(**kwargs)
