"""The Slack stand-in's Web API: `SlackStandIn` (its methods, state, injected faults and
recorded requests) and its HTTP request handler (`_Handler`)."""

from __future__ import annotations

import itertools
import json
import re
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from slack_standin.net import _LocalServer, _loopback_certificate, _server_ssl, _Trickle
from slack_standin.paging import HISTORY_LIMITS, REPLIES_LIMITS, _cursor, _cursor_offset, _within
from slack_standin.validation import (
    _CHANNEL_RE,
    MAX_BLOCKS_JSON_CHARS,
    MAX_ID,
    MAX_PRIVATE_METADATA,
    MAX_TEXT,
    MAX_VIEW_BLOCKS,
    MAX_VIEW_JSON_CHARS,
    mrkdwn_errors,
    validate_blocks,
)


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
