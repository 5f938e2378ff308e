"""Outbound Slack: one thread per run chain, root updated in place, replies and charts in it.

Idempotency (a retry or a restart never posts twice and never loses a post):
- every post has a key; the store gets an *intent* row before Slack is called and the ts
  after. A key already `posted` is never sent again.
- every `chat.postMessage` carries the key in message `metadata`
  (`event_type="trainbot_post"`). Before re-sending a key that has an intent but no ts (a
  restart after a crash, or a 5xx/connection error where Slack may have posted anyway), the
  poster *reconciles*: it looks the key up in the thread (`conversations.replies`) or the
  channel's latest 100 messages (`conversations.history`) and records the ts it finds.
- Charts are reconciled by file title within the thread (files carry no metadata).
- Accepted residual risk (at-least-once): if the lookup itself is refused (no
  `channels:history`/`groups:history` scope) or the lost root message is older than the
  channel's latest 100, the post is sent again and a warning is logged.

429s are waited out by the client's `RetryAfterHandler`; 5xx of idempotent methods are retried
with backoff by `ServerErrorBackoffHandler` (see bot/slack/retry.py, `make_client`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.error import HTTPError, URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError

from bot.core.redact import Redactor
from bot.crashpoint import crashpoint
from bot.slack.retry import Sleep, backoff_delay

log = logging.getLogger(__name__)

METADATA_EVENT = "trainbot_post"
_HINTS = {
    "invalid_auth": "the bot token is wrong or revoked: check SLACK_BOT_TOKEN",
    "not_authed": "no bot token was sent: set SLACK_BOT_TOKEN",
    "account_inactive": "the bot token belongs to a deactivated app: reinstall the app",
    "token_revoked": "the bot token was revoked: reinstall the app and update SLACK_BOT_TOKEN",
    "channel_not_found": "check the channel id in the config, and that the bot can see it",
    "not_in_channel": "invite the bot to the channel (/invite @trainbot)",
    "thread_not_found": "the run's root message is gone: the next post opens a new thread",
    "message_not_found": "the root message was deleted",
    "invalid_blocks": "trainbot built a message Slack rejects: a bug, please report it",
    "msg_blocks_too_long": "trainbot built a message over Slack's size limit: a bug",
}


class SlackPostError(Exception):
    """Slack refused a post; the message names the method, channel, key, error and the fix."""

    def __init__(self, message: str, *, error: str | None = None):
        super().__init__(message)
        self.error = error


class MessageSink(Protocol):
    """Where run threads go: Slack (`SlackPoster`) or, for the console demo, a terminal."""

    def post_root(self, chain_id: int, channel: str, blocks: list[dict], text: str) -> str: ...

    def update_root(self, chain_id: int, blocks: list[dict], text: str) -> None: ...

    def post_reply(self, chain_id: int, key: str, blocks: list[dict], text: str) -> str: ...

    def upload_chart(
        self, chain_id: int, key: str, png_bytes: bytes, filename: str, title: str
    ) -> str: ...


def root_key(chain_id: int) -> str:
    """The store key of a chain's root message."""
    return f"chain:{chain_id}:root"


def payload_hash(blocks: list[dict], text: str) -> str:
    data = json.dumps({"blocks": blocks, "text": text}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def _describe(exc: SlackApiError) -> tuple[str, str]:
    resp = exc.response
    data = resp.data if isinstance(resp.data, dict) else {}
    error = str(data.get("error") or f"HTTP {resp.status_code}")
    details = data.get("response_metadata", {}).get("messages") if data else None
    hint = _HINTS.get(error, "")
    text = error + (f" ({'; '.join(details)})" if details else "") + (f": {hint}" if hint else "")
    return error, text


def _transient(exc: Exception) -> bool:
    if isinstance(exc, SlackApiError):
        return exc.response.status_code >= 500
    if isinstance(exc, HTTPError):  # the upload POST of files_upload_v2 (no SDK retry)
        return exc.code >= 500 or exc.code == 429
    return isinstance(exc, URLError | ConnectionError | TimeoutError | SlackRequestError)


class SlackPoster:
    """Posts a run chain's thread through `client`, keyed in `store.slack_posts`; every text
    redacted by `redactor` first (the bot's: `Config.redactor()`; default: token shapes)."""

    def __init__(
        self,
        client: WebClient,
        store: Any,
        *,
        sleep: Sleep = time.sleep,
        clock: Callable[[], float] = time.time,
        max_attempts: int = 4,
        backoff_s: float = 0.5,
        redactor: Redactor | None = None,
    ):
        self.client = client
        self.redactor = redactor or Redactor()
        self.store = store
        self.sleep = sleep
        self.clock = clock
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s

    # --- public API -------------------------------------------------------------------------

    def post_root(self, chain_id: int, channel: str, blocks: list[dict], text: str) -> str:
        """Open the chain's thread (once); returns the root ts (the thread_ts of replies)."""
        key = root_key(chain_id)
        blocks, text = self._redacted(blocks, text)
        ts = self._post(key, kind="root", chain_id=chain_id, channel=channel, thread_ts=None,
                        blocks=blocks, text=text)
        self._set_chain_thread(chain_id, channel, ts)
        return ts

    def update_root(self, chain_id: int, blocks: list[dict], text: str) -> None:
        """Rewrite the root message in place (chat.update); skipped if nothing changed."""
        root = self._root(chain_id)
        blocks, text = self._redacted(blocks, text)
        digest = payload_hash(blocks, text)
        if root.payload_hash == digest:
            return
        self._call("chat.update", root.key, root.channel,
                   lambda: self.client.chat_update(channel=root.channel, ts=root.ts,
                                                   blocks=blocks, text=text))
        self.store.slack_posts.record_updated(root.key, payload_hash=digest, now=self.clock())

    def post_reply(self, chain_id: int, key: str, blocks: list[dict], text: str) -> str:
        """Post `key` (once) as a reply in the chain's thread; returns its ts."""
        root = self._root(chain_id)
        blocks, text = self._redacted(blocks, text)
        return self._post(key, kind="reply", chain_id=chain_id, channel=root.channel,
                          thread_ts=root.ts, blocks=blocks, text=text)

    def upload_chart(
        self, chain_id: int, key: str, png_bytes: bytes, filename: str, title: str
    ) -> str:
        """Upload a PNG (once) into the chain's thread with files_upload_v2; returns file id."""
        root = self._root(chain_id)
        existing = self.store.slack_posts.get(key)
        if existing is not None and existing.posted:
            return existing.ts
        if existing is not None:
            found = self._find_file(root.channel, root.ts, title)
            if found:
                return self._record_posted(key, found, root.ts)
        else:
            self.store.slack_posts.record_intent(key, channel=root.channel, kind="chart",
                                                 chain_id=chain_id, thread_ts=root.ts,
                                                 now=self.clock())
        for attempt in range(self.max_attempts):
            try:
                resp = self.client.files_upload_v2(
                    channel=root.channel, thread_ts=root.ts, content=png_bytes,
                    filename=filename, title=title,
                )
                file_id = resp["file"]["id"]
                return self._record_posted(key, file_id, root.ts)
            except (SlackApiError, SlackRequestError, URLError, OSError) as exc:
                if not _transient(exc) or attempt == self.max_attempts - 1:
                    raise self._error("files_upload_v2", key, root.channel, exc) from exc
                log.warning("chart upload %s failed (%s); retrying", key, exc)
                self.sleep(backoff_delay(attempt, self.backoff_s))
                found = self._find_file(root.channel, root.ts, title)
                if found:
                    return self._record_posted(key, found, root.ts)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- internals --------------------------------------------------------------------------

    def _redacted(self, blocks: list[dict], text: str) -> tuple[list[dict], str]:
        return self.redactor.redact_data(blocks), self.redactor.redact(text)

    def _root(self, chain_id: int) -> Any:
        root = self.store.slack_posts.get(root_key(chain_id))
        if root is None or not root.posted:
            raise SlackPostError(
                f"chain {chain_id} has no posted root message: call post_root first"
            )
        return root

    def _set_chain_thread(self, chain_id: int, channel: str, ts: str) -> None:
        chains = getattr(self.store, "chains", None)
        if chains is None:
            return
        chain = chains.get(chain_id)
        if chain is not None and (chain.thread_ts != ts or chain.channel != channel):
            chains.set_thread(chain_id, channel=channel, thread_ts=ts, now=self.clock())

    def _record_posted(self, key: str, ts: str, thread_ts: str | None) -> str:
        self.store.slack_posts.record_posted(key, ts=ts, thread_ts=thread_ts, now=self.clock())
        return ts

    def _post(self, key: str, *, kind: str, chain_id: int, channel: str,
              thread_ts: str | None, blocks: list[dict], text: str) -> str:
        existing = self.store.slack_posts.get(key)
        if existing is not None and existing.posted:
            return existing.ts
        if existing is not None:  # intent without ts: a crash or an error after sending
            found = self._find_message(channel, thread_ts, key)
            if found:
                return self._record_posted(key, found, thread_ts)
        else:
            self.store.slack_posts.record_intent(
                key, channel=channel, kind=kind, chain_id=chain_id, thread_ts=thread_ts,
                payload_hash=payload_hash(blocks, text), now=self.clock(),
            )
        metadata = {"event_type": METADATA_EVENT, "event_payload": {"key": key}}
        for attempt in range(self.max_attempts):
            try:
                kwargs: dict[str, Any] = {"channel": channel, "text": text, "blocks": blocks,
                                          "metadata": metadata}
                if thread_ts is not None:
                    kwargs["thread_ts"] = thread_ts
                resp = self.client.chat_postMessage(**kwargs)
                crashpoint("slack_accepted", key)  # crash-safety test hook (no-op in production)
                return self._record_posted(key, resp["ts"], thread_ts)
            except (SlackApiError, SlackRequestError, URLError, OSError) as exc:
                if not _transient(exc) or attempt == self.max_attempts - 1:
                    raise self._error("chat.postMessage", key, channel, exc) from exc
                log.warning("post %s failed (%s); reconciling before retry", key, exc)
                self.sleep(backoff_delay(attempt, self.backoff_s))
                found = self._find_message(channel, thread_ts, key)
                if found:
                    return self._record_posted(key, found, thread_ts)
        raise AssertionError("unreachable")  # pragma: no cover

    def _history(self, channel: str, thread_ts: str | None) -> list[dict] | None:
        try:
            if thread_ts is not None:
                resp = self.client.conversations_replies(
                    channel=channel, ts=thread_ts, include_all_metadata=True, limit=200)
            else:
                resp = self.client.conversations_history(
                    channel=channel, include_all_metadata=True, limit=100)
        except (SlackApiError, SlackRequestError, URLError, OSError) as exc:
            log.warning("cannot look up earlier posts in %s (%s): a retry may duplicate a "
                        "message", channel, exc)
            return None
        return list(resp.get("messages") or [])

    def _find_message(self, channel: str, thread_ts: str | None, key: str) -> str | None:
        for msg in self._history(channel, thread_ts) or []:
            meta = msg.get("metadata") or {}
            if meta.get("event_type") == METADATA_EVENT and \
                    (meta.get("event_payload") or {}).get("key") == key:
                return msg["ts"]
        return None

    def _find_file(self, channel: str, thread_ts: str, title: str) -> str | None:
        for msg in self._history(channel, thread_ts) or []:
            for f in msg.get("files") or []:
                if f.get("title") == title:
                    return f["id"]
        return None

    def _call(self, method: str, key: str, channel: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except (SlackApiError, SlackRequestError, URLError, OSError) as exc:
            raise self._error(method, key, channel, exc) from exc

    def _error(self, method: str, key: str, channel: str, exc: Exception) -> SlackPostError:
        if isinstance(exc, SlackApiError):
            error, text = _describe(exc)
        else:
            error, text = type(exc).__name__, str(exc)
        return SlackPostError(f"Slack {method} failed for {key!r} in {channel}: {text}",
                              error=error)
