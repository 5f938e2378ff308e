"""Outbound Slack: one thread per run chain, root updated in place, replies and charts in it.

Posts at most once, and none is lost while Slack can be asked:
- every post has a key; the store gets an *intent* row before Slack is called and the ts
  after. A key already `posted` is never sent again.
- every `chat.postMessage` carries the key in message `metadata`
  (`event_type="trainbot_post"`). A post whose fate is unknown (an intent left by a crash, a
  5xx or an `internal_error`/`fatal_error` answer, a connection dropped after the request was
  sent) is *reconciled* before anything is sent: the poster looks the key up in the thread
  (`conversations.replies`, its replies since bot.core.slack_bounds.LOOKUP_CLOCK_SKEW_S
  before its intent was recorded: nothing older can be it) or, for a root, in the channel
  (`conversations.history`, newest first, back as far), page by page through the cursor
  until the key is found or the end is read,
  records the ts it finds, and sends again only when Slack does not have it. While the lookup
  fails, nothing is sent (`SlackPostError`; the intent stays, and the next call looks it up
  first); so too when the thread or channel cannot be read to its end: past the post's
  deadline, or past bot.core.slack_bounds.LOOKUP_MAX_PAGES pages (SlackLookupRefused: one
  that long is never read whole).
- A chart is a three-step upload (`files.getUploadURLExternal`, the bytes to the upload URL,
  `files.completeUploadExternal`); only the completion makes it appear. Steps 1-2 are re-done
  freely; the file id is stored on the intent *before* the completion, which is reconciled
  by that file id in the thread and re-sent, if Slack does not have it, for the same file id:
  never a second upload of the same chart. (Intents stored before file ids were recorded are
  looked up by the file's title.)
- `chat.update` (the root, same content) is idempotent: the client re-sends it by itself.
- A call's failed attempts (a 429 or 5xx past the client's own retries, a connection lost)
  are one failure series in the log: a warning at the first, debug after it, one line when
  a later attempt goes through; when none does, the error raised is its end (the caller logs
  it: a note's through bot.services.threads.say_note).
- One post, chart upload, `chat.update` or Home tab (`views.publish`) has one deadline
  (`deadline_s`: the config's slack.post_deadline_s, which the poster is always given): its
  attempts, the client's retries and 429 waits all stop at it (a Retry-After
  ending past it is not waited, no request is started past it), and it then fails as when
  its attempts run out. A chart's upload URL and bytes are asked for only while one request
  (the client's timeout) still ends before it: the bytes never end past it, so an upload, as
  a post, ends within one request after its deadline.
- Residual risk: a root of unknown fate that Slack never posted, in a channel with more than
  LOOKUP_MAX_PAGES pages of messages since its intent (its lookup cannot read them all), is
  never posted.

What the client re-sends by itself (429s, 5xx and dropped connections of idempotent methods)
is decided in bot/slack/retry.py (`make_client`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from http.client import HTTPException
from typing import Any, Literal
from urllib.error import HTTPError, URLError
from urllib.request import Request

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError

from bot.core import slack_bounds
from bot.core.redact import Redactor
from bot.crashpoint import crashpoint
from bot.net.whole_request import open_whole
from bot.services.ports import (
    LookupRefused,
    MessageRefused,
    PostError,
    PostRefused,
    root_key,
    sending,
    sent_refused,
)
from bot.slack.retry import (
    Sleep,
    backoff_delay,
    post_deadline,
    request_not_sent,
    resends_watched,
)

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


class SlackPostError(PostError):
    """Slack refused a post; the message names the method, channel, key, error and the fix."""

    def __init__(self, message: str, *, error: str | None = None):
        super().__init__(message)
        self.error = error


class SlackPostRefused(SlackPostError, PostRefused):
    """Slack answered no to chat.postMessage itself (not_in_channel, channel_not_found,
    is_archived, missing_scope…): nothing was sent, and sending it again will not change it."""


class SlackMessageRefused(SlackPostRefused, MessageRefused):
    """Slack refused the message itself (`MESSAGE_ERRORS`: its size, its blocks, its
    metadata): sending the same message again will never be taken."""


# chat.postMessage's answers about the message itself, not where it goes or who sends it
MESSAGE_ERRORS = frozenset({
    "msg_too_long", "msg_blocks_too_long", "invalid_blocks", "invalid_blocks_format",
    "no_text", "too_many_attachments", "invalid_attachments", "invalid_metadata_format",
    "invalid_metadata_schema", "metadata_too_large", "markdown_text_conflict",
})


class SlackLookupRefused(SlackPostError, LookupRefused):
    """Slack refused to look a post up (`look_up`, or the lookup a post or an upload left as
    an intent reconciles with before it is sent again: not_in_channel, missing_scope…)."""


def payload_hash(blocks: list[dict], text: str) -> str:
    data = json.dumps({"blocks": blocks, "text": text}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def _explain(exc: Exception) -> tuple[str, str]:
    """(error code, what went wrong and the fix) of a failed call."""
    if not isinstance(exc, SlackApiError):
        return type(exc).__name__, str(exc)
    resp = exc.response
    data = resp.data if isinstance(resp.data, dict) else {}
    error = str(data.get("error") or f"HTTP {resp.status_code}")
    details = data.get("response_metadata", {}).get("messages") if data else None
    hint = _HINTS.get(error, "")
    text = error + (f" ({'; '.join(details)})" if details else "") + (f": {hint}" if hint else "")
    return error, text


# What a failed Slack call can raise: the API's answer, or the connection's failure.
CALL_ERRORS = (SlackApiError, SlackRequestError, URLError, OSError, HTTPException)
# completeUploadExternal errors that mean the uploaded file is gone: upload it again.
_FILE_GONE = frozenset({"file_not_found", "file_upload_not_complete"})

Fate = Literal["refused", "not_sent", "unknown"]


class _NoTimeForARequest(TimeoutError):
    """A request not started: it could end past its call's deadline (a chart's bytes)."""


# Slack's answers (HTTP 200, ok:false) after which "it's possible some aspect of the operation
# succeeded before the error was raised" (Slack's error docs): the call may have been performed.
MAYBE_PERFORMED = frozenset({"internal_error", "fatal_error"})


class _ThreadNotRead(TimeoutError):
    """A lookup that did not read the thread (a root's: the channel) to its end (its next
    page would start past its post's deadline): what it did not read may hold the post, so
    it is not sent again."""


class _ThreadTooLong(_ThreadNotRead):
    """A thread (a root's: channel) longer than LOOKUP_MAX_PAGES pages: never read whole, so
    a post of unknown fate in it is never sent again (asking again will not tell:
    `refused`)."""


def call_fate(exc: Exception) -> Fate:
    """What a failed call did: `refused` (Slack answered no; sending again is pointless),
    `not_sent` (Slack did not act: a 429, a connection never made) or `unknown` (a 5xx, an
    `internal_error` or `fatal_error` answer (MAYBE_PERFORMED), or the connection dropped once
    the request was out: Slack may have performed it)."""
    if isinstance(exc, SlackApiError):
        status = exc.response.status_code
        if status == 429:
            return "not_sent"
        if status >= 500 or _api_error(exc) in MAYBE_PERFORMED:
            return "unknown"
        return "refused"
    if isinstance(exc, HTTPError):  # the upload URL of step 2
        return "unknown" if exc.code >= 500 or exc.code == 429 else "refused"
    if isinstance(exc, SlackRequestError | _ThreadTooLong):  # the SDK refused the arguments,
        return "refused"  # or a thread too long to read whole
    return "not_sent" if request_not_sent(exc) else "unknown"


class _Attempts:
    """One call's failed attempts (a post's, an upload's), logged as one failure series: its
    first failure a warning, the attempts after it at debug, and, when a later attempt goes
    through, one line saying so. When every attempt failed, the error the call raises is
    the series' end (its caller logs it: bot.services.threads.say_note for a note)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.failed = 0

    def failure(self, message: str, *args: object) -> None:
        log.log(logging.WARNING if self.failed == 0 else logging.DEBUG, message, *args)
        self.failed += 1

    def through(self) -> None:
        if self.failed:
            log.warning("%s went through after %d failed attempt(s)", self.what, self.failed)


def _api_error(exc: Exception) -> str | None:
    if isinstance(exc, SlackApiError) and isinstance(exc.response.data, dict):
        return exc.response.data.get("error")
    return None


def _sent_after(intent: Any) -> float:
    """Slack's time (a ts) before which the message `intent` (a slack_posts row: a root or a
    reply) cannot have been posted: its recorded time (`updated_at`: set when the intent is
    recorded, or a refused root's made an intent again, before anything is sent, and not
    changed until it is posted; a refused reply's intent is forgotten, so a later one is a new
    intent) less the clock-skew margin (bot.core.slack_bounds.LOOKUP_CLOCK_SKEW_S)."""
    return float(intent.updated_at) - slack_bounds.LOOKUP_CLOCK_SKEW_S


class SlackPoster:
    """Posts a run chain's thread through `client`, keyed in `store.slack_posts`; every text
    redacted by `redactor` first (the bot's: `Config.redactor()`; default: token shapes).
    `deadline_s` is one post's overall deadline, the config's slack.post_deadline_s (no
    default: the configuration is its one source, bot.app.build_context passes it), held to
    the config's rule (bot.core.slack_bounds.post_deadline_refusal) with the client's request
    timeout: one too short for an upload's two requests raises ValueError."""

    def __init__(
        self,
        client: WebClient,
        store: Any,
        *,
        deadline_s: float,
        sleep: Sleep = time.sleep,
        clock: Callable[[], float] = time.time,
        max_attempts: int = slack_bounds.POST_ATTEMPTS,
        backoff_s: float = slack_bounds.BACKOFF_S,
        redactor: Redactor | None = None,
    ):
        refusal = slack_bounds.post_deadline_refusal(deadline_s, client.timeout)
        if refusal is not None:
            raise ValueError(f"the poster's deadline_s (slack.post_deadline_s): {refusal}")
        self.client = client
        self.redactor = redactor or Redactor()
        self.store = store
        self.sleep = sleep
        self.clock = clock
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.deadline_s = deadline_s

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

    def post_at_most_s(self) -> float:
        """The longest one post (`_post`) may take (bot.core.slack_bounds.post_at_most_s):
        its deadline (`deadline_s`, which its attempts, the client's retries and 429 waits
        all stop at), then its last request, at most the client's `timeout`."""
        return slack_bounds.post_at_most_s(self.deadline_s, self.client.timeout)

    def look_up(self, key: str) -> bool:
        """Whether Slack has the message `key`: its post recorded, or its intent (a post the
        bot may have sent before it stopped) found where it was posted by the key in its
        metadata (the lookup a post reconciles with before sending again), then recorded
        posted. False when nothing is recorded under `key` or Slack does not have it; raises
        SlackPostError when it cannot be looked up (Slack may have it): SlackLookupRefused
        when Slack refused the lookup (asking again will not tell)."""
        post = self.store.slack_posts.get(key)
        if post is None or post.posted:
            return post is not None
        try:
            found = self._find_message(post.channel, post.thread_ts, key,
                                       self.clock() + self.deadline_s, _sent_after(post))
        except CALL_ERRORS as exc:
            error = self._gave_up("conversations.replies", key, post.channel, exc, unknown=True)
            if call_fate(exc) == "refused":
                raise SlackLookupRefused(str(error), error=error.error) from exc
            raise error from exc
        if found is None:
            return False
        self._record_posted(key, found, post.thread_ts)
        return True

    def publish_home(self, user_id: str, blocks: list[dict]) -> None:
        """`user_id`'s Home tab (views.publish), redacted."""
        blocks, _ = self._redacted(blocks, "")
        self._call("views.publish", f"home:{user_id}", user_id,
                   lambda: self.client.views_publish(user_id=user_id,
                                                     view={"type": "home", "blocks": blocks}))

    def update_reply(self, chain_id: int, key: str, blocks: list[dict], text: str) -> None:
        """Rewrite the reply posted under `key` (chat.update); nothing when it was never
        posted, or when its content is already this."""
        post = self.store.slack_posts.get(key)
        if post is None or not post.posted or post.ts is None:
            return
        blocks, text = self._redacted(blocks, text)
        digest = payload_hash(blocks, text)
        if post.payload_hash == digest:
            return
        self._call("chat.update", key, post.channel,
                   lambda: self.client.chat_update(channel=post.channel, ts=post.ts,
                                                   blocks=blocks, text=text))
        self.store.slack_posts.record_updated(key, payload_hash=digest, now=self.clock())

    def upload_file(
        self, chain_id: int, key: str, data: bytes, filename: str, title: str
    ) -> str:
        """Share a file (a chart PNG, a stack dump) once in the chain's thread; returns the
        file id."""
        root = self._root(chain_id)
        channel, thread_ts = root.channel, root.ts
        existing = self.store.slack_posts.get(key)
        if existing is not None and existing.posted:
            return existing.ts
        if existing is None:
            self.store.slack_posts.record_intent(key, channel=channel, kind="chart",
                                                 chain_id=chain_id, thread_ts=thread_ts,
                                                 now=self.clock())
        file_id = existing.ts if existing is not None else None  # completion asked for it
        unknown = existing is not None
        last: Exception | None = None
        attempts = _Attempts(f"chart {key}")
        deadline = self.clock() + self.deadline_s
        with post_deadline(self.clock, deadline):
            for attempt in self._attempts_until(deadline):
                if unknown:
                    try:
                        found = self._find_file(channel, thread_ts, file_id, title, deadline)
                    except CALL_ERRORS as exc:
                        last = self._lookup_failed("files.completeUploadExternal", key,
                                                   channel, exc, attempts)
                        continue
                    if found:
                        attempts.through()
                        return self._record_posted(key, found, thread_ts)
                    unknown = False
                if file_id is None:
                    if (late := self._no_time_for_a_request(deadline)) is not None:
                        last = late  # its URL and bytes would end past the deadline
                        break
                    try:
                        file_id = self._upload_bytes(data, filename, deadline)
                    except _NoTimeForARequest as exc:  # its URL took the bytes' time
                        last = exc
                        break
                    except CALL_ERRORS as exc:  # nothing is visible before the completion
                        if call_fate(exc) == "refused" or attempt == self.max_attempts - 1:
                            raise self._error("files upload", key, channel, exc) from exc
                        attempts.failure("chart upload %s failed (%s); uploading again", key,
                                         exc)
                        last = exc
                        continue
                    self.store.slack_posts.record_file(key, file_id, now=self.clock())
                if (passed := self._deadline_passed(deadline)) is not None:
                    last = passed
                    break
                sending()  # the completion makes it appear
                try:
                    self.client.files_completeUploadExternal(
                        files=[{"id": file_id, "title": title}], channel_id=channel,
                        thread_ts=thread_ts)
                except CALL_ERRORS as exc:
                    fate = call_fate(exc)
                    if fate == "refused":
                        sent_refused()  # not shared: nothing appeared
                    if _api_error(exc) in _FILE_GONE:
                        file_id = None
                        self.store.slack_posts.record_file(key, None, now=self.clock())
                    elif fate == "refused":
                        raise self._error("files.completeUploadExternal", key, channel,
                                          exc) from exc
                    unknown = fate == "unknown"
                    attempts.failure("chart %s: completion failed (%s)%s", key, exc,
                                     "; looking it up before completing again" if unknown
                                     else "")
                    last = exc
                    continue
                attempts.through()
                return self._record_posted(key, file_id, thread_ts)
        assert last is not None
        raise self._gave_up("files.completeUploadExternal", key, channel, last, unknown=unknown)

    # --- internals --------------------------------------------------------------------------

    def _redacted(self, blocks: list[dict], text: str) -> tuple[list[dict], str]:
        """The last guard: a message of the renderer (bot.slack.render) was redacted before
        it was cut to Slack's limits, so this changes nothing of it."""
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
        # an intent left over: maybe posted already (a root refused before is not in Slack)
        unknown = existing is not None and not existing.refused
        intent = existing
        if not unknown:
            intent = self.store.slack_posts.record_intent(
                key, channel=channel, kind=kind, chain_id=chain_id, thread_ts=thread_ts,
                payload_hash=payload_hash(blocks, text), now=self.clock(),
            )
        sent_after = _sent_after(intent)
        kwargs: dict[str, Any] = {
            "channel": channel, "text": text, "blocks": blocks,
            "metadata": {"event_type": METADATA_EVENT, "event_payload": {"key": key}},
        }
        if thread_ts is not None:
            kwargs["thread_ts"] = thread_ts
        last: Exception | None = None
        attempts = _Attempts(f"post {key}")
        deadline = self.clock() + self.deadline_s
        with post_deadline(self.clock, deadline):
            for _attempt in self._attempts_until(deadline):
                if unknown:
                    try:
                        found = self._find_message(channel, thread_ts, key, deadline,
                                                   sent_after)
                    except CALL_ERRORS as exc:
                        last = self._lookup_failed("chat.postMessage", key, channel, exc,
                                                   attempts)
                        continue
                    if found:
                        attempts.through()
                        return self._record_posted(key, found, thread_ts)
                    unknown = False
                    if (passed := self._deadline_passed(deadline)) is not None:
                        last = passed
                        break
                sending()  # from here Slack may show it (handlers.fence.SideEffects)
                try:
                    resp = self.client.chat_postMessage(**kwargs)
                except CALL_ERRORS as exc:
                    fate = call_fate(exc)
                    if fate == "refused":
                        sent_refused()  # nothing reached Slack (handlers.fence.SideEffects)
                        # Slack answered no, and no earlier send of it is there (none was
                        # made, or the lookup above did not find it): no intent is left to
                        # reconcile, so the key reads as never posted (a cluster notice's
                        # "answers again" note does not follow it:
                        # bot.services.watch_events.ThreadEvents._told); a root is kept
                        # `refused`, with its channel: its replies then know its thread will
                        # not come by itself (bot.services.threads.say_in_thread)
                        if kind == "root":
                            self.store.slack_posts.record_refused(key, now=self.clock())
                        else:
                            self.store.slack_posts.forget_intent(key)
                        error = self._error("chat.postMessage", key, channel, exc)
                        refused = SlackMessageRefused if error.error in MESSAGE_ERRORS \
                            else SlackPostRefused
                        raise refused(str(error), error=error.error) from exc
                    unknown = fate == "unknown"
                    attempts.failure("post %s failed (%s)%s", key, exc,
                                     "; looking it up before sending again" if unknown else "")
                    last = exc
                    continue
                crashpoint("slack_accepted", key)  # crash-safety test hook (no-op in prod)
                attempts.through()
                return self._record_posted(key, resp["ts"], thread_ts)
        assert last is not None
        raise self._gave_up("chat.postMessage", key, channel, last, unknown=unknown)

    def _upload_bytes(self, data: bytes, filename: str, deadline: float) -> str:
        """Steps 1-2 of a file upload (invisible until completed); returns the file id. The
        bytes are sent only while their request, at most the client's `timeout`, ends before
        the upload's `deadline` (else _NoTimeForARequest), so they never end past it and the
        upload, whose completion starts before it, ends within one request after it, as a
        post (bot.core.slack_bounds.post_at_most_s)."""
        step1 = self.client.files_getUploadURLExternal(filename=filename,
                                                       length=len(data))
        if (late := self._no_time_for_a_request(deadline)) is not None:
            raise late
        request = Request(step1["upload_url"], data=data, method="POST")
        open_whole(request, timeout_s=self.client.timeout, context=self.client.ssl,
                   proxy=self.client.proxy)
        return str(step1["file_id"])

    def _history(self, channel: str, thread_ts: str | None, deadline: float,
                 oldest: float | None = None) -> Iterator[dict]:
        """The thread's messages, oldest first (`thread_ts` None: the channel's, newest
        first), only those after `oldest` when it is given (a thread's root comes first all
        the same, as Slack gives it), read a page (LOOKUP_PAGE
        messages) at a time as they are looked at, the next page asked for by the last one's
        `response_metadata.next_cursor` until Slack gives none (the end). Raises CALL_ERRORS,
        and _ThreadNotRead when the end is not reached: a next page would start past
        `deadline` (the post's), or there are more than LOOKUP_MAX_PAGES pages
        (_ThreadTooLong)."""
        page_size = slack_bounds.LOOKUP_PAGE
        kwargs: dict[str, Any] = {"channel": channel, "include_all_metadata": True,
                                  "limit": page_size}
        read: Callable[..., Any]
        if thread_ts is None:
            what, read = f"the channel {channel}", self.client.conversations_history
        else:
            what, read = f"the thread {thread_ts}", self.client.conversations_replies
            kwargs["ts"] = thread_ts
        if oldest is not None:
            kwargs["oldest"] = f"{oldest:.6f}"  # Slack's ts form
            what += f" since {kwargs['oldest']}"
        for page in range(slack_bounds.LOOKUP_MAX_PAGES):
            if page and not slack_bounds.waits_in_time(self.clock(), 0.0, deadline):
                raise _ThreadNotRead(
                    f"{what} was read for {page} page(s) of {page_size} messages, not to its "
                    f"end, before its {self.deadline_s:g} s deadline")
            resp = read(**kwargs)
            yield from resp.get("messages") or []
            kwargs["cursor"] = (resp.get("response_metadata") or {}).get("next_cursor")
            if not kwargs["cursor"]:
                return
        raise _ThreadTooLong(
            f"{what} has more than {slack_bounds.LOOKUP_MAX_PAGES} pages of {page_size} "
            "messages: it is not read whole")

    def _find_message(self, channel: str, thread_ts: str | None, key: str,
                      deadline: float, sent_after: float | None) -> str | None:
        """The ts of the message posted under `key`, looked for in its thread (`thread_ts`
        None, a root: its channel) after `sent_after` only (`_sent_after`)."""
        for msg in self._history(channel, thread_ts, deadline, sent_after):
            meta = msg.get("metadata") or {}
            if meta.get("event_type") == METADATA_EVENT and \
                    (meta.get("event_payload") or {}).get("key") == key:
                return msg["ts"]
        return None

    def _find_file(self, channel: str, thread_ts: str, file_id: str | None,
                   title: str, deadline: float) -> str | None:
        """The file shared in the thread: by its id, or by title when no id was recorded."""
        for msg in self._history(channel, thread_ts, deadline):
            for f in msg.get("files") or []:
                if (f.get("id") == file_id) if file_id else (f.get("title") == title):
                    return f["id"]
        return None

    def _lookup_failed(self, method: str, key: str, channel: str, exc: Exception,
                       attempts: _Attempts) -> Exception:
        """A reconciling lookup failed: raise if Slack refused it (SlackLookupRefused: asking
        again will not tell, and nothing is sent meanwhile), else return it to retry (one
        failure of the call's `attempts`)."""
        if call_fate(exc) == "refused":
            error = self._gave_up(method, key, channel, exc, unknown=True)
            raise SlackLookupRefused(str(error), error=error.error) from exc
        attempts.failure("cannot look up %s in %s yet (%s); not sending it again meanwhile",
                         key, channel, exc)
        return exc

    def _call(self, method: str, key: str, channel: str, fn: Callable[[], Any]) -> Any:
        """One call the client may send again by itself (chat.update, views.publish), within
        the post deadline (`deadline_s`): its retries and 429 waits stop at it. Refused, it
        changed nothing Slack shows (`sent_refused`) only when no earlier sending of it may
        have gone through (`resends_watched`: the client sent it again after a dropped
        connection or a 5xx, and the refusal answers that re-send)."""
        with post_deadline(self.clock, self.clock() + self.deadline_s), \
                resends_watched() as resent_after_unknown:
            sending()
            try:
                return fn()
            except CALL_ERRORS as exc:
                if call_fate(exc) == "refused" and not resent_after_unknown():
                    sent_refused()
                raise self._error(method, key, channel, exc) from exc

    def _attempts_until(self, deadline: float) -> Iterator[int]:
        """The attempts of one post or upload (`max_attempts`), the backoff waited before
        each after the first; no more once a backoff would end at or past `deadline` (the
        call then fails as when its attempts run out)."""
        for attempt in range(self.max_attempts):
            if attempt:
                delay = backoff_delay(attempt - 1, self.backoff_s)
                if not slack_bounds.waits_in_time(self.clock(), delay, deadline):
                    return
                self.sleep(delay)
            yield attempt

    def _no_time_for_a_request(self, deadline: float) -> _NoTimeForARequest | None:
        """The error of a request that could end at or past `deadline` (less than one
        request's timeout, the client's `timeout`, is left before it), else None."""
        if slack_bounds.waits_in_time(self.clock(), self.client.timeout, deadline):
            return None
        return _NoTimeForARequest(f"less than one request's {self.client.timeout:g} s is left "
                                  f"before its {self.deadline_s:g} s deadline")

    def _deadline_passed(self, deadline: float) -> TimeoutError | None:
        """The error of a call whose `deadline` has passed (no request is started then),
        else None."""
        if slack_bounds.waits_in_time(self.clock(), 0.0, deadline):
            return None
        return TimeoutError(f"its {self.deadline_s:g} s deadline passed")

    def _gave_up(self, method: str, key: str, channel: str, exc: Exception, *,
                 unknown: bool) -> SlackPostError:
        """The error after the last attempt; `unknown`: Slack may have performed the call."""
        if not unknown:
            return self._error(method, key, channel, exc)
        error, text = _explain(exc)
        return SlackPostError(
            f"Slack {method} for {key!r} in {channel}: Slack may have it already and it cannot "
            f"be looked up ({text}), so it is not sent again; the next attempt looks it up "
            "first (the lookup needs the channels:history and groups:history scopes)",
            error=error)

    def _error(self, method: str, key: str, channel: str, exc: Exception) -> SlackPostError:
        error, text = _explain(exc)
        return SlackPostError(f"Slack {method} failed for {key!r} in {channel}: {text}",
                              error=error)
