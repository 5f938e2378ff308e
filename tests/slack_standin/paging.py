"""How the Slack stand-in pages conversations.history and .replies as Slack does: `limit`'s
defaults and maxima, opaque cursors (`_cursor`, `_cursor_offset`) and the `oldest` /
`latest` / `inclusive` bounds (`_within`)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

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
