"""A local stand-in for Slack's Web API that `slack_sdk.WebClient(base_url=...)` talks to.

Modelled on bolt-python's tests/mock_web_api_server, but it *validates* like Slack: bad token,
Block Kit limits, unknown thread_ts / message ts, the three-step files_upload_v2 flow (the
upload URL it hands out points at itself). It records every request for assertions and can be
told to answer 429 (with Retry-After) or 5xx for the next K calls of a method, or to read a
call and close the connection without answering (`drop_next`: the fate a client cannot know).
With `tls=True` it serves HTTPS, as Slack does, under a certificate of its own for 127.0.0.1
that `client_ssl` trusts. `ConnectProxy` is an HTTP proxy in front of it (a CONNECT tunnel for
HTTPS), as on an institution's network.

    with SlackStandIn() as slack:
        client = WebClient(token=slack.token, base_url=slack.api_url)
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import itertools
import json
import re
import select
import socket
import socketserver
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlparse

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# Block Kit limits (https://docs.slack.dev/reference/block-kit/blocks) and the ~13k payload cap
# reported for chat.postMessage (`msg_blocks_too_long`).
MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100  # a Home tab or modal view (Block Kit: "up to 100 blocks")
MAX_PRIVATE_METADATA = 3000
MAX_VIEW_JSON_CHARS = 250_000  # views.publish rejects a larger `view` argument
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_URL = 3000
MAX_ID = 255
MAX_ACTIONS_ELEMENTS = 25
MAX_CONTEXT_ELEMENTS = 10
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_MARKDOWN_BLOCK = 12000
MAX_BLOCKS_JSON_CHARS = 13000
MAX_TEXT = 40000
# The confirmation dialog object (composition-objects/confirmation-dialog-object): plain_text
# title, text and buttons, each required, at most this many characters.
MAX_CONFIRM_TITLE = 100
MAX_CONFIRM_TEXT = 300
MAX_CONFIRM_BUTTON = 30

BLOCK_TYPES = {
    "section", "header", "divider", "context", "actions", "image", "rich_text", "markdown",
    "input", "video", "file",
}
_CHANNEL_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")
# mrkdwn and a message's `text` (https://docs.slack.dev/messaging/formatting): `<` opens a
# control sequence (a mention, a channel, a special mention, a link, each with an optional
# `|label`); any other `<`, `>` and `&` must be sent as &lt; &gt; &amp;. Slack does not refuse
# the rest: it shows it mangled (a stray `<` eats the text after it), so the stand-in does.
_CONTROL_RE = re.compile(
    r"<(?:[@#][A-Z0-9]+|![a-z]+(?:\^[^<>|\s]*)?|(?:https?|mailto|slack):[^<>|\s]+)"
    r"(?:\|[^<>]*)?>")
# trainbot never pings a whole channel: one of these in its text is user text left unescaped
_BROADCAST_RE = re.compile(r"<!(?:channel|here|everyone)(?:\|[^<>]*)?>")
# plain_text is shown as sent: an entity in it (`&amp;`) shows literally, text escaped for
# mrkdwn that reached a header, a button or a dialog (escaped where it must not be)
_ENTITY_RE = re.compile(r"&(?:amp|lt|gt);")


def mrkdwn_errors(text: str) -> list[str]:
    """What Slack would mangle in mrkdwn `text` ([] when none): a `<` or `>` outside a
    control sequence, and a broadcast mention trainbot never means."""
    errors = [f"broadcast mention {m.group()!r} (unescaped text?)"
              for m in _BROADCAST_RE.finditer(text)]
    rest = _CONTROL_RE.sub("", text)
    for ch in "<>":
        at = rest.find(ch)
        if at >= 0:
            errors.append(f"unescaped {ch!r} near {rest[max(0, at - 20):at + 20]!r}")
    return errors


def plain_text_errors(text: str) -> list[str]:
    """What Slack would show wrongly in plain_text `text` ([] when none): an entity
    (`&amp;`, `&lt;`, `&gt;`), which plain_text shows literally: mrkdwn escaping where none
    belongs."""
    return [f"entity {m.group()!r} in plain_text near "
            f"{text[max(0, m.start() - 20):m.end() + 20]!r} (escaped for mrkdwn?)"
            for m in _ENTITY_RE.finditer(text)]


@dataclass
class Recorded:
    """One request the stand-in received and what it answered (`status` 0: no answer, the
    connection was closed; `response` then holds what it would have answered)."""

    method: str
    params: dict[str, Any]  # query string + form body (+ JSON body keys), merged
    json: dict[str, Any] | None
    status: int
    response: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@dataclass
class _Fault:
    status: int
    remaining: int
    retry_after: int | None
    after_processing: bool
    drop: bool = False  # close the connection instead of answering
    error: str = "injected"  # the answer's `error`
    trickle_s: float | None = None  # answer as usual, one byte every trickle_s seconds
    framing: str = "length"  # "length": Content-Length; "close": none, the body ends at the
    # connection's close; "cut_headers": the status line and `Content-Length: 0`, then the
    # connection closed before the headers' end (their blank line)


def validate_blocks(blocks: Any, *, max_blocks: int = MAX_BLOCKS) -> list[str]:
    """Slack-style error messages for a blocks array ([] when valid); `max_blocks`: 50 in a
    message, 100 in a view."""
    errors: list[str] = []
    if not isinstance(blocks, list):
        return ["[ERROR] must be an array [json-pointer:/blocks]"]
    if len(blocks) > max_blocks:
        errors.append(f"[ERROR] no more than {max_blocks} items allowed [json-pointer:/blocks]")
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        p = f"/blocks/{i}"
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            errors.append(f"[ERROR] invalid block type [json-pointer:{p}/type]")
            continue
        bid = block.get("block_id")
        if bid is not None:
            if not isinstance(bid, str) or not bid or len(bid) > MAX_ID:
                errors.append(f"[ERROR] must be 1..{MAX_ID} characters [json-pointer:{p}/block_id]")
            elif bid in block_ids:
                errors.append(f"[ERROR] duplicate block_id [json-pointer:{p}/block_id]")
            else:
                block_ids.add(bid)
        errors.extend(_validate_block(block, p))
    return errors


def _text_obj(obj: Any, p: str, *, limit: int, plain_only: bool = False) -> list[str]:
    if not isinstance(obj, dict) or obj.get("type") not in ("plain_text", "mrkdwn"):
        return [f"[ERROR] must be a text object [json-pointer:{p}]"]
    if plain_only and obj["type"] != "plain_text":
        return [f"[ERROR] must be plain_text [json-pointer:{p}/type]"]
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        return [f"[ERROR] must be a non-empty string [json-pointer:{p}/text]"]
    if len(text) > limit:
        return [f"[ERROR] must be less than {limit + 1} characters [json-pointer:{p}/text]"]
    extra = set(obj) - {"type", "text", "emoji", "verbatim"}
    if extra:
        return [f"[ERROR] unknown field {sorted(extra)[0]} [json-pointer:{p}]"]
    errors = mrkdwn_errors(text) if obj["type"] == "mrkdwn" else plain_text_errors(text)
    return [f"[ERROR] {e} [json-pointer:{p}/text]" for e in errors]


def _validate_element(el: Any, p: str) -> list[str]:
    if not isinstance(el, dict) or "type" not in el:
        return [f"[ERROR] must be an element [json-pointer:{p}]"]
    errs: list[str] = []
    aid = el.get("action_id")
    if aid is not None and (not isinstance(aid, str) or not aid or len(aid) > MAX_ID):
        errs.append(f"[ERROR] must be 1..{MAX_ID} characters [json-pointer:{p}/action_id]")
    if el["type"] == "button":
        errs += _text_obj(el.get("text"), f"{p}/text", limit=MAX_BUTTON_TEXT, plain_only=True)
        value = el.get("value")
        if value is not None and (not isinstance(value, str) or len(value) > MAX_BUTTON_VALUE):
            errs.append(f"[ERROR] must be less than {MAX_BUTTON_VALUE + 1} characters "
                        f"[json-pointer:{p}/value]")
        url = el.get("url")
        if url is not None and (not isinstance(url, str) or len(url) > MAX_URL):
            errs.append(f"[ERROR] must be less than {MAX_URL + 1} characters "
                        f"[json-pointer:{p}/url]")
        if el.get("style") not in (None, "primary", "danger"):
            errs.append(f"[ERROR] must be primary or danger [json-pointer:{p}/style]")
        if el.get("style") == "danger" and "confirm" not in el:
            # the stand-in's own, as for broadcasts: trainbot's red buttons cancel a job, and
            # every one asks first
            errs.append(f"[ERROR] a danger button without a confirm dialog [json-pointer:{p}]")
    if "confirm" in el:
        errs += _validate_confirm(el["confirm"], f"{p}/confirm")
    return errs


def _validate_confirm(obj: Any, p: str) -> list[str]:
    """A confirmation dialog object: title, text, confirm and deny (plain_text, required,
    within their lengths) and an optional style."""
    if not isinstance(obj, dict):
        return [f"[ERROR] must be a confirmation dialog object [json-pointer:{p}]"]
    errs: list[str] = []
    for key, limit in (("title", MAX_CONFIRM_TITLE), ("text", MAX_CONFIRM_TEXT),
                       ("confirm", MAX_CONFIRM_BUTTON), ("deny", MAX_CONFIRM_BUTTON)):
        if key not in obj:
            errs.append(f"[ERROR] missing required field: {key} [json-pointer:{p}]")
        else:
            errs += _text_obj(obj[key], f"{p}/{key}", limit=limit, plain_only=True)
    if obj.get("style") not in (None, "primary", "danger"):
        errs.append(f"[ERROR] must be primary or danger [json-pointer:{p}/style]")
    extra = set(obj) - {"title", "text", "confirm", "deny", "style"}
    if extra:
        errs.append(f"[ERROR] unknown field {sorted(extra)[0]} [json-pointer:{p}]")
    return errs


def _validate_block(block: dict[str, Any], p: str) -> list[str]:
    kind = block["type"]
    errs: list[str] = []
    if kind == "section":
        if "text" not in block and "fields" not in block:
            errs.append(f"[ERROR] must provide text or fields [json-pointer:{p}]")
        if "text" in block:
            errs += _text_obj(block["text"], f"{p}/text", limit=MAX_SECTION_TEXT)
        if "fields" in block:
            fields = block["fields"]
            if not isinstance(fields, list) or not fields or len(fields) > MAX_FIELDS:
                errs.append(f"[ERROR] must be 1..{MAX_FIELDS} items [json-pointer:{p}/fields]")
            else:
                for j, f in enumerate(fields):
                    errs += _text_obj(f, f"{p}/fields/{j}", limit=MAX_FIELD_TEXT)
        if "accessory" in block:
            errs += _validate_element(block["accessory"], f"{p}/accessory")
    elif kind == "header":
        errs += _text_obj(block.get("text"), f"{p}/text", limit=MAX_HEADER_TEXT, plain_only=True)
    elif kind == "context":
        els = block.get("elements")
        if not isinstance(els, list) or not els or len(els) > MAX_CONTEXT_ELEMENTS:
            errs.append(f"[ERROR] must be 1..{MAX_CONTEXT_ELEMENTS} items "
                        f"[json-pointer:{p}/elements]")
        else:
            for j, el in enumerate(els):
                if isinstance(el, dict) and el.get("type") == "image":
                    continue
                errs += _text_obj(el, f"{p}/elements/{j}", limit=MAX_SECTION_TEXT)
    elif kind == "actions":
        els = block.get("elements")
        if not isinstance(els, list) or not els or len(els) > MAX_ACTIONS_ELEMENTS:
            errs.append(f"[ERROR] must be 1..{MAX_ACTIONS_ELEMENTS} items "
                        f"[json-pointer:{p}/elements]")
        else:
            seen: set[str] = set()
            for j, el in enumerate(els):
                errs += _validate_element(el, f"{p}/elements/{j}")
                aid = el.get("action_id") if isinstance(el, dict) else None
                if aid is not None and aid in seen:
                    errs.append(f"[ERROR] duplicate action_id [json-pointer:{p}/elements/{j}]")
                if aid is not None:
                    seen.add(aid)
    elif kind == "markdown":
        text = block.get("text")
        if not isinstance(text, str) or not text or len(text) > MAX_MARKDOWN_BLOCK:
            errs.append(f"[ERROR] must be 1..{MAX_MARKDOWN_BLOCK} characters "
                        f"[json-pointer:{p}/text]")
    elif kind == "image":
        if not (block.get("image_url") or block.get("slack_file")) or not block.get("alt_text"):
            errs.append(f"[ERROR] image needs image_url/slack_file and alt_text [json-pointer:{p}]")
    elif kind == "rich_text":
        if not isinstance(block.get("elements"), list):
            errs.append(f"[ERROR] must be an array [json-pointer:{p}/elements]")
    elif kind == "divider":
        if set(block) - {"type", "block_id"}:
            errs.append(f"[ERROR] divider takes no fields [json-pointer:{p}]")
    return errs


# The scopes an app installed from trainbot's manifest is granted (Slack sends the granted
# scopes in each Web API answer's `x-oauth-scopes` header).
GRANTED_SCOPES = frozenset({"commands", "chat:write", "chat:write.public", "files:write",
                            "channels:history", "groups:history"})

# Per Slack's method reference: the scope a bot token needs for each method (conversation
# methods: the public- or the private-channel scope, by the channel).
_METHOD_SCOPE = {
    "chat.postMessage": "chat:write", "chat.update": "chat:write",
    "chat.postEphemeral": "chat:write", "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
}
_HISTORY_METHODS = ("conversations.history", "conversations.replies")
# a ts as conversations.history takes `oldest` and `latest`: Unix seconds, decimals optional
_TS_RE = re.compile(r"^\d+(\.\d+)?$")
# `limit` of conversations.history and of conversations.replies: its default and its maximum
# (Slack's method references; a larger one is cut to the maximum)
HISTORY_LIMITS = (100, 999)
REPLIES_LIMITS = (1000, 1000)


def _cursor(where: str, ts: str) -> str:
    """An opaque cursor (as Slack's: base64) for the page of `where` (a channel's history, a
    thread) from its message `ts` on."""
    return base64.b64encode(f"{where}:{ts}".encode()).decode()


def _cursor_offset(cursor: str, where: str, msgs: list[dict[str, Any]]) -> int | None:
    """The offset in `msgs` of the message `cursor` names; None when it is not one handed
    out for `where` (or its message is gone)."""
    try:
        named, _, ts = base64.b64decode(cursor, validate=True).decode().rpartition(":")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return None
    offset = next((i for i, m in enumerate(msgs) if m["ts"] == ts), None)
    return offset if named == where and offset else None


def _within(p: dict[str, Any]) -> Callable[[float], bool] | dict[str, Any]:
    """Whether a message's ts is after `oldest` and before `latest` (ts, seconds; not one:
    `invalid_ts_oldest` / `invalid_ts_latest`, returned as the error answer; the bounds
    themselves with `inclusive`), as conversations.history and .replies take them."""
    bounds = []
    for name, unset in (("oldest", 0.0), ("latest", float("inf"))):
        raw = p.get(name)
        if raw in (None, ""):
            bounds.append(unset)
        elif not _TS_RE.match(str(raw)):
            return {"ok": False, "error": f"invalid_ts_{name}"}
        else:
            bounds.append(float(raw))
    oldest, latest = bounds
    inclusive = str(p.get("inclusive")) in ("1", "true", "True")

    def within(ts: float) -> bool:
        return oldest <= ts <= latest if inclusive else oldest < ts < latest

    return within


class _LocalServer:
    """A server on 127.0.0.1 serving in a thread of its own: `with X() as x:` or
    `start()`/`stop()`."""

    _server: socketserver.TCPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _serve(self, server: socketserver.TCPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                                        daemon=True, name=name)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SlackStandIn(_LocalServer):
    """The stand-in server; start with `with SlackStandIn() as s:` or `start()`/`stop()`.

    `scopes`: what the token was granted (a method needing another answers `missing_scope`);
    `outside`: channels the bot was not invited to (history answers `not_in_channel`, and so
    do posts, except in a public channel with `chat:write.public`).
    `tls`: serve HTTPS (its upload URLs too); a client trusts it with `client_ssl`.
    """

    def __init__(self, token: str = "xoxb-standin-token", *, team_id: str = "T0STANDIN",
                 tls: bool = False, clock: Callable[[], float] = time.time):
        self.token = token
        self.clock = clock  # Slack's clock: a message's ts is its time (`_next_ts`)
        self.tls = tls
        self._certificate = _loopback_certificate() if tls else None
        self.team_id = team_id
        self.requests: list[Recorded] = []
        # channel -> top-level messages in post order; each message dict carries "replies".
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.scopes: set[str] = set(GRANTED_SCOPES)
        self.outside: set[str] = set()
        self.home_views: dict[str, dict[str, Any]] = {}  # user id -> the Home tab published
        self._faults: dict[str, list[_Fault]] = {}
        self._lock = threading.RLock()
        self._ts_counter = itertools.count(1)
        self._last_ts_us = 0
        self._file_counter = itertools.count(1)

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "SlackStandIn not started"
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    @property
    def client_ssl(self) -> ssl.SSLContext | None:
        """The SSL context a client trusting the stand-in's certificate uses (None: plain
        HTTP)."""
        if self._certificate is None:
            return None
        return ssl.create_default_context(cadata=self._certificate[0].decode())

    @property
    def api_url(self) -> str:
        """The `base_url` for WebClient."""
        return self.url + "/api/"

    def start(self) -> SlackStandIn:
        standin = self

        class Handler(_Handler):
            owner = standin

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self._certificate is not None:
            server.socket = _server_ssl(*self._certificate).wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False)
        server.daemon_threads = True
        self._serve(server, "slack-standin")
        return self

    # --- test controls ----------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int = 429,
        count: int = 1,
        retry_after: int | None = None,
        after_processing: bool = False,
        error: str = "injected",
    ) -> None:
        """Answer the next `count` calls of `method` with HTTP `status`.

        429 carries `Retry-After: retry_after` (default 1). `after_processing=True` performs the
        call (the message IS posted) and then answers the error: the ambiguous case a client
        must reconcile instead of blindly re-posting. `error` is the answer's `error`; with
        `status` 200 the call is refused as Slack refuses one (`is_archived`,
        `msg_too_long` …: HTTP 200, `ok` false).
        """
        if status == 429 and retry_after is None:
            retry_after = 1
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(status, count, retry_after, after_processing, error=error)
            )

    def drop_next(self, method: str, *, count: int = 1, processed: bool = True) -> None:
        """Read the next `count` calls of `method` whole, then close the connection without
        answering. `processed=True` performs the call first (the message IS posted, the file
        IS shared): a request that reached Slack but whose answer was lost. `processed=False`
        drops it unperformed. `method` "upload" is the upload URL of step 2 of a file upload.
        """
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(0, count, None, processed, drop=True)
            )

    def trickle_next(self, method: str, *, every_s: float, count: int = 1) -> None:
        """Perform the next `count` calls of `method` and answer them as usual, but send the
        answer (status line, headers and body) one byte every `every_s` seconds: each byte
        within a client's socket timeout, the whole answer taking far longer. `method`
        "upload" is the upload URL of step 2 of a file upload. A client that hangs up stops
        the trickle."""
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(200, count, None, True, trickle_s=every_s))

    def unframed_next(self, method: str, *, count: int = 1, trickle_s: float | None = None
                      ) -> None:
        """Perform the next `count` calls of `method` and answer them with no declared length
        (no Content-Length, `Connection: close`): the body ends where the connection is
        closed, as HTTP/1.0 servers and some proxies answer. `trickle_s`: sent one byte every
        `trickle_s` seconds (as trickle_next)."""
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(200, count, None, True, trickle_s=trickle_s, framing="close"))

    def cut_headers_next(self, method: str, *, count: int = 1) -> None:
        """Perform the next `count` calls of `method`, then send only the answer's status
        line and `Content-Length: 0` and close the connection before the headers end (a
        proxy or load balancer dropping it mid-answer): the answer is lost after Slack acted."""
        with self._lock:
            self._faults.setdefault(method, []).append(
                _Fault(200, count, None, True, framing="cut_headers"))

    def heal(self) -> None:
        """Slack recovers: the faults still queued (fail_next, drop_next …) are dropped."""
        with self._lock:
            self._faults.clear()

    def calls(self, method: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == method]

    def ok_calls(self, method: str) -> list[Recorded]:
        return [r for r in self.calls(method) if r.status == 200 and r.response.get("ok")]

    def root_messages(self, channel: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.messages.get(channel, []))

    def replies(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        with self._lock:
            root = self._find(channel, thread_ts)
            return list(root["replies"]) if root else []

    def all_messages(self) -> list[dict[str, Any]]:
        with self._lock:
            out = []
            for msgs in self.messages.values():
                for m in msgs:
                    out.append(m)
                    out.extend(m["replies"])
            return out

    # --- state helpers (called with the lock held) ------------------------------------------

    def _next_ts(self) -> str:
        """A new message's ts, as Slack's: its time on `clock` in seconds, six decimals, each
        later than the one before (a microsecond on when the clock has not moved on)."""
        us = max(round(self.clock() * 1_000_000), self._last_ts_us + 1)
        self._last_ts_us = us
        return f"{us // 1_000_000}.{us % 1_000_000:06d}"

    def _find(self, channel: str, ts: str) -> dict[str, Any] | None:
        for m in self.messages.get(channel, []):
            if m["ts"] == ts:
                return m
            for r in m["replies"]:
                if r["ts"] == ts:
                    return r
        return None

    def _take_fault(self, method: str) -> _Fault | None:
        faults = self._faults.get(method)
        if not faults:
            return None
        fault = faults[0]
        fault.remaining -= 1
        if fault.remaining <= 0:
            faults.pop(0)
        return fault

    # --- API methods ------------------------------------------------------------------------

    def handle(self, method: str, p: dict[str, Any]) -> dict[str, Any]:
        fn = getattr(self, "_m_" + method.replace(".", "_"), None)
        if fn is None:
            return {"ok": False, "error": "unknown_method"}
        channel = p.get("channel") or p.get("channel_id")
        needed = _METHOD_SCOPE.get(method)
        if method in _HISTORY_METHODS:
            needed = "groups:history" if str(channel).startswith("G") else "channels:history"
        if needed is not None and needed not in self.scopes:
            return {"ok": False, "error": "missing_scope", "needed": needed,
                    "provided": ",".join(sorted(self.scopes))}
        if channel in self.outside and (method in _HISTORY_METHODS or not (
                str(channel).startswith("C") and "chat:write.public" in self.scopes)):
            return {"ok": False, "error": "not_in_channel"}
        return fn(p)

    def _m_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": "https://standin.slack.com/", "team": "Stand-in",
                "user": "trainbot", "team_id": self.team_id, "user_id": "U0TRAINBOT",
                "bot_id": "B0TRAINBOT"}

    def _check_message(self, p: dict[str, Any], *, need_channel: bool = True) -> str | None:
        channel = p.get("channel")
        if need_channel and (not isinstance(channel, str) or not _CHANNEL_RE.match(channel)):
            return "channel_not_found"
        blocks = p.get("blocks")
        text = p.get("text")
        if blocks is None and not text and not p.get("attachments"):
            return "no_text"
        if isinstance(text, str) and len(text) > MAX_TEXT:
            return "msg_too_long"
        if isinstance(text, str) and mrkdwn_errors(text):
            return "invalid_text"  # the stand-in's own: Slack would show it mangled
        if blocks is not None:
            if isinstance(blocks, str):
                try:
                    blocks = json.loads(blocks)
                except ValueError:
                    return "invalid_blocks_format"
                p["blocks"] = blocks
            if validate_blocks(blocks):
                return "invalid_blocks"
            if len(json.dumps(blocks, ensure_ascii=False)) > MAX_BLOCKS_JSON_CHARS:
                return "msg_blocks_too_long"
        return None

    def _message(self, p: dict[str, Any], ts: str) -> dict[str, Any]:
        msg: dict[str, Any] = {"type": "message", "user": "U0TRAINBOT", "bot_id": "B0TRAINBOT",
                               "ts": ts, "text": p.get("text") or "", "replies": []}
        if p.get("blocks") is not None:
            msg["blocks"] = p["blocks"]
        if p.get("metadata") is not None:
            meta = p["metadata"]
            msg["metadata"] = json.loads(meta) if isinstance(meta, str) else meta
        return msg

    def _public(self, msg: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in msg.items() if k != "replies"}
        if msg.get("replies"):
            out["reply_count"] = len(msg["replies"])
        return out

    def _m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        err = self._check_message(p)
        if err:
            return {"ok": False, "error": err}
        channel = p["channel"]
        thread_ts = p.get("thread_ts")
        if thread_ts is not None:
            root = next((m for m in self.messages.get(channel, []) if m["ts"] == thread_ts), None)
            if root is None:
                return {"ok": False, "error": "thread_not_found"}
        ts = self._next_ts()
        msg = self._message(p, ts)
        if thread_ts is not None:
            msg["thread_ts"] = thread_ts
            assert root is not None  # found above
            root["replies"].append(msg)
        else:
            self.messages.setdefault(channel, []).append(msg)
        return {"ok": True, "channel": channel, "ts": ts, "message": self._public(msg)}

    def _m_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        err = self._check_message(p)
        if err:
            return {"ok": False, "error": err}
        channel, ts = p["channel"], p.get("ts")
        msg = self._find(channel, ts) if isinstance(ts, str) else None
        if msg is None:
            return {"ok": False, "error": "message_not_found"}
        msg["text"] = p.get("text") or ""
        if p.get("blocks") is not None:
            msg["blocks"] = p["blocks"]
        msg["edited"] = {"user": "U0TRAINBOT", "ts": self._next_ts()}
        return {"ok": True, "channel": channel, "ts": ts, "text": msg["text"],
                "message": self._public(msg)}

    def _m_chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        err = self._check_message(p)
        if err:
            return {"ok": False, "error": err}
        if not p.get("user"):
            return {"ok": False, "error": "user_not_in_channel"}
        return {"ok": True, "message_ts": self._next_ts()}

    def _m_views_publish(self, p: dict[str, Any]) -> dict[str, Any]:
        """A user's Home tab (https://api.slack.com/methods/views.publish): `user_id`, `view`
        (JSON) of type home with at most 100 valid blocks, private_metadata <= 3000 and
        callback_id / external_id <= 255 characters; `hash` must be the current view's."""
        user = p.get("user_id")
        if not isinstance(user, str) or not re.match(r"^[UW][A-Z0-9]{2,}$", user):
            return {"ok": False, "error": "invalid_arguments"}
        view = p.get("view")
        if isinstance(view, str):
            if len(view) > MAX_VIEW_JSON_CHARS:
                return {"ok": False, "error": "invalid_arguments"}
            try:
                view = json.loads(view)
            except ValueError:
                return {"ok": False, "error": "invalid_arguments"}
        if not isinstance(view, dict) or view.get("type") != "home":
            return {"ok": False, "error": "invalid_arguments"}
        if len(json.dumps(view, ensure_ascii=False)) > MAX_VIEW_JSON_CHARS:
            return {"ok": False, "error": "invalid_arguments"}
        if len(str(view.get("private_metadata") or "")) > MAX_PRIVATE_METADATA or any(
                len(str(view.get(k) or "")) > MAX_ID for k in ("callback_id", "external_id")):
            return {"ok": False, "error": "invalid_arguments"}
        errors = validate_blocks(view.get("blocks"), max_blocks=MAX_VIEW_BLOCKS)
        if errors:
            return {"ok": False, "error": "invalid_blocks", "response_metadata":
                    {"messages": errors}}
        current = self.home_views.get(user)
        if p.get("hash") and current is not None and p["hash"] != current["hash"]:
            return {"ok": False, "error": "hash_conflict"}
        published = {**view, "id": (current or {}).get("id") or f"V{next(self._ts_counter):08d}",
                     "team_id": self.team_id, "hash": f"{next(self._ts_counter)}.standin"}
        self.home_views[user] = published
        return {"ok": True, "view": published}

    def _m_conversations_history(self, p: dict[str, Any]) -> dict[str, Any]:
        """A channel's messages within `oldest` and `latest` (`_within`), newest first, paged
        as replies are (`_page`; `limit`'s default and maximum: HISTORY_LIMITS)."""
        channel = p.get("channel")
        if not isinstance(channel, str) or not _CHANNEL_RE.match(channel):
            return {"ok": False, "error": "channel_not_found"}
        within = _within(p)
        if isinstance(within, dict):
            return within
        msgs = [m for m in reversed(self.messages.get(channel, [])) if within(float(m["ts"]))]
        return self._page(p, msgs, f"history:{channel}", HISTORY_LIMITS)

    def _m_conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        """A thread, oldest first: its root (the message `ts` names, whatever the bounds:
        Slack's replies start with the thread's parent) then its replies within `oldest` and
        `latest` (`_within`), paged (`_page`; `limit`'s default and maximum:
        REPLIES_LIMITS)."""
        channel, ts = p.get("channel"), p.get("ts")
        root = next((m for m in self.messages.get(channel or "", []) if m["ts"] == ts), None)
        if root is None:
            return {"ok": False, "error": "thread_not_found"}
        within = _within(p)
        if isinstance(within, dict):
            return within
        replies = [m for m in root["replies"] if within(float(m["ts"]))]
        return self._page(p, [root, *replies], f"replies:{channel}/{ts}", REPLIES_LIMITS)

    def _page(self, p: dict[str, Any], msgs: list[dict[str, Any]], where: str,
              limits: tuple[int, int]) -> dict[str, Any]:
        """One page of `msgs` (`where`'s), cursor-paginated as Slack's: at most `limit`
        messages (`limits`: its default and maximum; not a whole number of at least 1:
        `invalid_arguments`), `has_more` and `response_metadata.next_cursor` (empty at the
        end) naming the next page; `cursor` (empty: the first page) must be one the stand-in
        handed out for `where` (else `invalid_cursor`). Metadata only with
        `include_all_metadata`."""
        raw_limit = p.get("limit")
        try:
            limit = limits[0] if raw_limit in (None, "") else int(raw_limit)
        except (TypeError, ValueError):
            return {"ok": False, "error": "invalid_arguments"}
        if limit < 1:
            return {"ok": False, "error": "invalid_arguments"}
        limit = min(limit, limits[1])
        start: int | None = 0
        if p.get("cursor"):
            start = _cursor_offset(str(p["cursor"]), where, msgs)
        if start is None:
            return {"ok": False, "error": "invalid_cursor"}
        with_meta = str(p.get("include_all_metadata")) in ("1", "true", "True")
        page = [self._public(m) for m in msgs[start:start + limit]]
        if not with_meta:
            for m in page:
                m.pop("metadata", None)
        more = start + limit < len(msgs)
        return {"ok": True, "messages": page, "has_more": more, "response_metadata": {
            "next_cursor": _cursor(where, msgs[start + limit]["ts"]) if more else ""}}

    def _m_files_getUploadURLExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        filename, length = p.get("filename"), p.get("length")
        if not filename or length is None or not str(length).isdigit() or int(length) <= 0:
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F0STANDIN{next(self._file_counter):04d}"
        self.files[file_id] = {"id": file_id, "name": filename, "length": int(length),
                               "alt_txt": p.get("alt_txt"), "data": None, "completed": False}
        return {"ok": True, "upload_url": f"{self.url}/upload/v1/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        raw = p.get("files")
        try:
            items = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return {"ok": False, "error": "invalid_arguments"}
        if not isinstance(items, list) or not items:
            return {"ok": False, "error": "invalid_arguments"}
        for item in items:
            f = self.files.get(item.get("id", "")) if isinstance(item, dict) else None
            if f is None:
                return {"ok": False, "error": "file_not_found"}
            if f["data"] is None:
                return {"ok": False, "error": "file_upload_not_complete"}  # step 2 skipped
            if f["completed"]:
                return {"ok": False, "error": "file_already_completed"}
        channel, thread_ts = p.get("channel_id"), p.get("thread_ts")
        if thread_ts and not channel:
            return {"ok": False, "error": "invalid_arguments"}
        root = None
        if channel:
            if not _CHANNEL_RE.match(channel):
                return {"ok": False, "error": "channel_not_found"}
            if thread_ts:
                root = next((m for m in self.messages.get(channel, []) if m["ts"] == thread_ts),
                            None)
                if root is None:
                    return {"ok": False, "error": "thread_not_found"}
        out = []
        for item in items:
            f = self.files[item["id"]]
            f.update(completed=True, title=item.get("title") or f["name"], channel=channel,
                     thread_ts=thread_ts, initial_comment=p.get("initial_comment"))
            out.append({"id": f["id"], "name": f["name"], "title": f["title"],
                        "mimetype": "image/png" if f["name"].endswith(".png") else "text/plain",
                        "size": len(f["data"]),
                        "shares": {"public": {channel: [{"ts": thread_ts}]}} if channel else {}})
        if channel:
            ts = self._next_ts()
            msg = {"type": "message", "subtype": "file_share", "ts": ts,
                   "text": p.get("initial_comment") or "", "replies": [],
                   "files": [{k: v for k, v in o.items() if k != "shares"} for o in out]}
            if root is not None:
                msg["thread_ts"] = thread_ts
                root["replies"].append(msg)
            else:
                self.messages.setdefault(channel, []).append(msg)
        return {"ok": True, "files": out}

    def upload(self, file_id: str, data: bytes) -> tuple[int, str]:
        f = self.files.get(file_id)
        if f is None:
            return 404, "unknown upload url"
        if len(data) != f["length"]:
            return 400, f"length mismatch: expected {f['length']}, got {len(data)}"
        f["data"] = data
        return 200, f"OK - {len(data)}"


def _loopback_certificate() -> tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM), valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _server_ssl(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as tmp:  # load_cert_chain reads files only
        cert, key = f"{tmp}/cert.pem", f"{tmp}/key.pem"
        with open(cert, "wb") as f:
            f.write(cert_pem)
        with open(key, "wb") as f:
            f.write(key_pem)
        context.load_cert_chain(cert, key)
    return context


class _Trickle:
    """A response's writer sending one byte every `every_s` seconds (trickle_next)."""

    def __init__(self, raw: Any, every_s: float) -> None:
        self.raw = raw
        self.every_s = every_s

    def write(self, data: bytes) -> int:
        for i in range(len(data)):
            self.raw.write(data[i:i + 1])
            self.raw.flush()
            time.sleep(self.every_s)
        return len(data)

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        self.raw.close()

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)


class _Handler(BaseHTTPRequestHandler):
    owner: SlackStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):  # the handshake in this request's thread,
            self.request.settimeout(5)  # not the server's accepting one
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str],
              fault: _Fault | None = None) -> None:
        trickle_s = fault.trickle_s if fault is not None else None
        framing = fault.framing if fault is not None else "length"
        if trickle_s is not None:
            self.wfile = _Trickle(self.wfile, trickle_s)  # type: ignore[assignment]
        try:
            if framing == "cut_headers":
                self.wfile.write(f"HTTP/1.1 {status} OK\r\nContent-Length: 0\r\n".encode())
                self.close_connection = True
                return
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            if framing == "close":
                self.send_header("Connection", "close")
                self.close_connection = True
            else:
                self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client hung up mid-trickle
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        s = self.owner
        parsed = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items()}
        if parsed.path.startswith("/upload/v1/"):
            file_id = parsed.path.rsplit("/", 1)[-1]
            with s._lock:
                fault = s._take_fault("upload")
                if fault is not None and not fault.after_processing:
                    status, text = fault.status, "injected failure"
                else:
                    status, text = s.upload(file_id, body)
                    if (fault is not None and fault.trickle_s is None
                            and fault.framing == "length"):
                        status, text = fault.status, "injected failure after upload"
                s.requests.append(Recorded("upload", {"file_id": file_id}, None, status,
                                           {"ok": status == 200, "text": text}, headers, body))
            if status == 0:  # read whole, maybe stored, never answered
                self.close_connection = True
                return
            self._send(status, text.encode(), "text/plain", {}, fault)
            return
        if not parsed.path.startswith("/api/"):
            self._send(404, b"not found", "text/plain", {})
            return
        method = parsed.path[len("/api/"):]
        params: dict[str, Any] = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        json_body = None
        ctype = self.headers.get("Content-Type", "")
        if body:
            if "json" in ctype:
                try:
                    json_body = json.loads(body)
                except ValueError:
                    json_body = None
                if isinstance(json_body, dict):
                    params.update(json_body)
            else:
                params.update({k: v[0] for k, v in parse_qs(body.decode("utf-8")).items()})
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else params.pop("token", None)
        extra: dict[str, str] = {}
        with s._lock:
            fault = s._take_fault(method)
            status = 200
            if not token:
                response: dict[str, Any] = {"ok": False, "error": "not_authed"}
            elif token != s.token:
                response = {"ok": False, "error": "invalid_auth"}
            elif fault is not None and fault.drop:
                status = 0
                response = (s.handle(method, params) if fault.after_processing
                            else {"ok": False, "error": "dropped"})
            elif fault is not None and not fault.after_processing:
                status, response = fault.status, {"ok": False, "error": fault.error}
            else:
                response = s.handle(method, params)
                if fault is not None and fault.trickle_s is None and fault.framing == "length":
                    status, response = fault.status, {"ok": False, "error": fault.error}
            if token == s.token:
                extra["x-oauth-scopes"] = ",".join(sorted(s.scopes))
            if fault is not None and fault.status == 429:
                response = {"ok": False, "error": "ratelimited"}
                extra["Retry-After"] = str(fault.retry_after)
            s.requests.append(Recorded(method, params, json_body, status, response, headers, body))
        if status == 0:  # read whole, maybe performed, never answered
            self.close_connection = True
            return
        self._send(status, json.dumps(response).encode(), "application/json; charset=utf-8",
                   extra, fault)


class ConnectProxy(_LocalServer):
    """A local HTTP proxy, as an institution's network puts in front of Slack: an https URL's
    request goes through a CONNECT tunnel (`CONNECT host:port`, answered 200, then the bytes
    relayed both ways as they come, a trickle too), an http URL's is forwarded (its absolute
    URL's request sent on to its host). `routed` lists the `host:port` of each request it
    carried, in order.

        with SlackStandIn(tls=True) as slack, ConnectProxy() as proxy:
            client = WebClient(token=slack.token, base_url=slack.api_url, proxy=proxy.url)
    """

    def __init__(self) -> None:
        self.routed: list[str] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        assert self._server is not None, "ConnectProxy not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ConnectProxy:
        proxy = self

        class Handler(_ProxyHandler):
            owner = proxy

        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._serve(server, "connect-proxy")
        return self

    def carried(self, hostport: str) -> None:
        with self._lock:
            self.routed.append(hostport)


class _ProxyHandler(socketserver.StreamRequestHandler):
    owner: ConnectProxy
    rbufsize = 0  # the request's head only: the bytes after it are relayed as they are

    def handle(self) -> None:
        parts = self.rfile.readline(65537).decode("latin-1").split()
        if len(parts) != 3:
            return
        verb, target, version = parts
        head = b""
        while (line := self.rfile.readline(65537)) not in (b"\r\n", b"\n", b""):
            head += line
        if verb == "CONNECT":
            hostport = target
        else:
            url = urlparse(target)
            hostport = url.netloc
            path = url.path + (f"?{url.query}" if url.query else "")
            head = f"{verb} {path} {version}\r\n".encode("latin-1") + head + b"\r\n"
        host, _, port = hostport.rpartition(":")
        self.owner.carried(hostport)
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with upstream:
            if verb == "CONNECT":
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(head)
            _relay(self.connection, upstream)


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Relay bytes between `a` and `b` until either ends its side (or fails)."""
    other = {a: b, b: a}
    while True:
        ready, _, _ = select.select([a, b], [], [], 1.0)
        for sock in ready:
            try:
                data = sock.recv(65536)
                if not data:
                    return
                other[sock].sendall(data)
            except OSError:
                return
