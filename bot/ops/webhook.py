"""A generic webhook: each watcher event POSTed as one JSON object (`trainbot run --webhook`),
for event callbacks and chat systems other than Slack. Each POST ends within its timeout as
a whole (bot.net.whole_request, as Slack's requests), not per socket read: a receiver
trickling its answer cannot hold the watcher's tick that publishes through it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from bot.net.whole_request import open_whole
from bot.services.ports import PostError

TIMEOUT_S = 10.0  # per POST, all of it; a receiver slower than this is retried at the next tick


class JsonWebhook:
    """POSTs JSON to `url` (http or https); a refusal, a non-2xx answer or a timeout raises
    PostError (the outbox keeps the event and publishes it again next tick)."""

    def __init__(self, url: str, *, timeout_s: float = TIMEOUT_S) -> None:
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise ValueError(f"webhook {url!r}: an http:// or https:// URL")
        self.url, self.timeout_s = url, timeout_s

    def post_json(self, payload: dict[str, Any]) -> None:
        request = urllib.request.Request(
            self.url, data=json.dumps(payload, default=str).encode(), method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "trainbot"})
        proxy = urllib.request.getproxies().get(urlsplit(self.url).scheme)
        try:
            open_whole(request, timeout_s=self.timeout_s, context=None, proxy=proxy)
        except urllib.error.HTTPError as exc:
            raise PostError(f"webhook answered {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PostError(f"webhook {urlsplit(self.url).netloc} unreachable: {reason}"
                            ) from None
