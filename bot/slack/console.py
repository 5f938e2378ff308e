"""The terminal as Slack: `ConsoleSink` renders run threads as text and writes charts to a
folder (its prompts are answered by handlers.console).

Used by `trainbot demo` so a newcomer sees the whole story without a Slack workspace. The
sink implements the thread writer port (bot.services.ports.ThreadWriter) with the poster's
semantics that the services rely on: every post has a key and is shown once; with a store,
the root and replies are recorded in `store.slack_posts` (ts `console.N`) and the chain's
thread is set, so `thread_note` / `submit_and_announce` find the thread as in Slack.

Buttons are shown as numbered choices (`take_prompts` hands them to whoever answers).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from bot.services.ports import root_key
from bot.slack.render import blocks_to_text
from bot.slack.views import ActionId

ROOT_BAR = "━" * 72
REPLY_BAR = "─" * 68
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)>")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")

# Action ids of the approval buttons (bot.slack.views, so rendering does not import
# the services layer).
RESUBMIT_ACTIONS = (ActionId.RESUBMIT.value, ActionId.RESUBMIT_MEM.value)
DISMISS_ACTION = ActionId.DISMISS.value
CANCEL_ACTIONS = (ActionId.CANCEL.value, ActionId.CANCEL_RESUME.value)


@dataclass(frozen=True)
class ConsoleButton:
    """One button of a posted message, as numbered in the terminal."""

    number: int
    label: str
    action_id: str
    value: str
    style: str | None = None


@dataclass(frozen=True)
class ConsolePrompt:
    """A posted message with buttons (an approval prompt, a stall's cancel offer, ...)."""

    chain_id: int
    key: str
    text: str
    buttons: tuple[ConsoleButton, ...]

    def button(self, *action_ids: str) -> ConsoleButton | None:
        """The first button whose action id is one of `action_ids`."""
        return next((b for b in self.buttons if b.action_id in action_ids), None)


@dataclass
class ConsoleSink:
    """A thread writer that prints threads to `out` and writes charts under `charts_dir`.

    `store` (bot.store.Store, optional) records posts like the Slack poster does; `names`
    maps Slack user ids to what the terminal shows for `<@U…>` mentions.
    """

    charts_dir: Path
    out: TextIO = field(default_factory=lambda: sys.stdout)
    store: Any = None
    names: dict[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.time
    root_every_s: float = 15.0
    charts: list[Path] = field(default_factory=list)
    _root_shown: dict[int, tuple[str, float]] = field(default_factory=dict)
    _posted: dict[str, str] = field(default_factory=dict)
    _root_digest: dict[int, str] = field(default_factory=dict)
    _prompts: list[ConsolePrompt] = field(default_factory=list)
    _seq: int = 0

    # --- ThreadWriter -------------------------------------------------------------------------

    def post_root(self, chain_id: int, channel: str, blocks: list[dict], text: str) -> str:
        """Open the chain's thread (once): the root framed by heavy rules."""
        key = root_key(chain_id)
        known = self._known(key)
        if known is not None:
            return known
        ts = self._next_ts()
        name = self.names.get(channel, channel)
        self._print(f"\n{ROOT_BAR}\n#{name} · thread of run chain {chain_id}\n{ROOT_BAR}")
        self._print(self._render(chain_id, key, blocks, text, indent=""))
        self._print(ROOT_BAR)
        self._root_digest[chain_id] = _digest(blocks, text)
        self._record(key, ts, chain_id=chain_id, channel=channel, kind="root", thread_ts=None)
        if self.store is not None and getattr(self.store, "chains", None) is not None:
            chain = self.store.chains.get(chain_id)
            if chain is not None and chain.thread_ts != ts:
                self.store.chains.set_thread(chain_id, channel=channel, thread_ts=ts,
                                             now=self.clock())
        return ts

    def update_root(self, chain_id: int, blocks: list[dict], text: str) -> None:
        """Reprint the root compactly when its content changed: in full (without blank
        lines) when its headline changed (state, job), else one line at most every
        `root_every_s` seconds (progress only)."""
        root = self._root_ts(chain_id)
        digest = _digest(blocks, text)
        if self._root_digest.get(chain_id) == digest:
            return
        self._root_digest[chain_id] = digest
        if self.store is not None:
            self.store.slack_posts.record_updated(root_key(chain_id), payload_hash=digest,
                                                  now=self.clock())
        headline, summary = _headline(blocks, text)
        now = self.clock()
        last = self._root_shown.get(chain_id)
        if last is not None and last[0] == headline:
            if now - last[1] >= self.root_every_s:
                self._root_shown[chain_id] = (headline, now)
                self._print(f"  ┃ ⟳ {self._names(summary)}")
            return
        self._root_shown[chain_id] = (headline, now)
        body = self._render(chain_id, root_key(chain_id), blocks, text, indent="  ┃ ")
        lines = [line for line in body.splitlines() if line.strip(" ┃`")]
        self._print(f"  ┏ thread root updated (chain {chain_id}, {root})")
        self._print("\n".join(lines))

    def post_reply(self, chain_id: int, key: str, blocks: list[dict], text: str) -> str:
        """Show `key` (once) as an indented reply in the chain's thread."""
        known = self._known(key)
        if known is not None:
            return known
        root = self._root_ts(chain_id)
        ts = self._next_ts()
        self._print(f"  ├{REPLY_BAR}")
        self._print(self._render(chain_id, key, blocks, text, indent="  │ ").rstrip())
        self._record(key, ts, chain_id=chain_id, channel=self._channel(chain_id), kind="reply",
                     thread_ts=root)
        return ts

    def post_at_most_s(self) -> float:
        """A post is a print: nothing to wait for, no retry."""
        return 0.0

    def look_up(self, key: str) -> bool:
        """Whether the terminal showed `key`: a post is printed before it is recorded, so
        one recorded at all, even as an intent (the demo stopped between the two records),
        was shown."""
        return key in self._posted or (
            self.store is not None and self.store.slack_posts.get(key) is not None)

    def update_reply(self, chain_id: int, key: str, blocks: list[dict], text: str) -> None:
        """A prompt rewritten in place (it expired): printed as a follow-up line."""
        if self._known(key) is not None:
            self.update_message(key, blocks, text)

    def upload_file(
        self, chain_id: int, key: str, data: bytes, filename: str, title: str
    ) -> str:
        """Write the file (a chart PNG, a stack dump; once per key) under `charts_dir` and
        print its path."""
        known = self._known(key)
        if known is not None:
            return known
        root = self._root_ts(chain_id)
        self.charts_dir.mkdir(parents=True, exist_ok=True)
        stem = _SAFE.sub("-", key.replace(":", "-")).strip("-") or "chart"
        suffix = Path(filename).suffix or ".png"
        path = self.charts_dir / f"{stem}{'' if stem.endswith(suffix) else suffix}"
        path.write_bytes(data)
        self.charts.append(path)
        self._print(f"  │ {'📈' if suffix == '.png' else '📄'} {title}: {path}")
        self._record(key, f"file:{path.name}", chain_id=chain_id,
                     channel=self._channel(chain_id), kind="chart", thread_ts=root)
        return f"file:{path.name}"

    # --- beyond the protocol ----------------------------------------------------------------

    def notice(self, text: str) -> None:
        """A message outside any thread (e.g. "cluster unreachable")."""
        self._print(f"\n⚠ {self._names(text)}")

    def say(self, text: str) -> None:
        """A line from the console itself (not a Slack message)."""
        self._print(text)

    def take_prompts(self) -> list[ConsolePrompt]:
        """Messages with buttons shown since the last call (oldest first)."""
        out, self._prompts = self._prompts, []
        return out

    def update_message(self, key: str, blocks: list[dict] | None, text: str | None) -> None:
        """What Slack's chat.update of a prompt would show: printed as a follow-up line."""
        shown = blocks_to_text(blocks, text or "") if blocks else (text or "")
        lines = [line for line in self._names(shown).splitlines() if line.strip()]
        if lines:
            self._print(f"  │ ↳ {lines[-1].strip()}")

    # --- internals --------------------------------------------------------------------------

    def _render(self, chain_id: int, key: str, blocks: list[dict], text: str,
                indent: str) -> str:
        """Blocks as text; actions blocks become numbered choices (and are remembered)."""
        parts: list[str] = []
        plain: list[dict] = []
        buttons: list[ConsoleButton] = []

        def flush() -> None:
            if plain:
                parts.append(blocks_to_text(plain, text).rstrip("\n"))
                plain.clear()

        for block in blocks:
            if block.get("type") != "actions":
                plain.append(block)
                continue
            flush()
            row = []
            for element in block.get("elements", []):
                if element.get("type") != "button":
                    continue
                label = (element.get("text") or {}).get("text", "?")
                button = ConsoleButton(len(buttons) + 1, label, str(element.get("action_id")),
                                       str(element.get("value", "")), element.get("style"))
                buttons.append(button)
                row.append(f"[{button.number}] {label}")
            if row:
                parts.append("   ".join(row))
        flush()
        if not blocks:
            parts.append(text)
        if buttons:
            self._prompts.append(ConsolePrompt(chain_id, key, text, tuple(buttons)))
        body = self._names("\n".join(parts)).rstrip("\n")
        return "\n".join(f"{indent}{line}".rstrip() for line in body.splitlines())

    def _names(self, text: str) -> str:
        return _MENTION.sub(lambda m: "@" + self.names.get(m[1], m[1]), text)

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _next_ts(self) -> str:
        self._seq += 1
        return f"console.{self._seq:06d}"

    def _known(self, key: str) -> str | None:
        if key in self._posted:
            return self._posted[key]
        if self.store is not None:
            row = self.store.slack_posts.get(key)
            if row is not None and row.posted:
                self._posted[key] = row.ts
                return row.ts
        return None

    def _record(self, key: str, ts: str, *, chain_id: int, channel: str, kind: str,
                thread_ts: str | None) -> None:
        self._posted[key] = ts
        if self.store is None:
            return
        now = self.clock()
        self.store.slack_posts.record_intent(key, channel=channel, kind=kind, chain_id=chain_id,
                                             thread_ts=thread_ts, now=now)
        self.store.slack_posts.record_posted(key, ts=ts, thread_ts=thread_ts, now=now)

    def _root_ts(self, chain_id: int) -> str:
        ts = self._known(root_key(chain_id))
        if ts is None:
            raise LookupError(f"chain {chain_id} has no root message: call post_root first")
        return ts

    def _channel(self, chain_id: int) -> str:
        if self.store is not None:
            row = self.store.slack_posts.get(root_key(chain_id))
            if row is not None:
                return row.channel
        return "console"


def _headline(blocks: list[dict], text: str) -> tuple[str, str]:
    """(the root's header, header + first line of the next section) for compact updates."""
    header = next((b["text"]["text"] for b in blocks if b.get("type") == "header"
                   and isinstance(b.get("text"), dict)), "")
    first = ""
    for b in blocks:
        body = b.get("text") if b.get("type") == "section" else None
        if isinstance(body, dict) and body.get("text", "").strip():
            first = body["text"].strip().splitlines()[0].strip("`* ")
            break
    header = header or (text.splitlines()[0] if text else "")
    return header, " · ".join(x for x in (header, first) if x)


def _digest(blocks: list[dict], text: str) -> str:
    data = json.dumps({"blocks": blocks, "text": text}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def chart_paths(paths: Iterable[Path]) -> list[str]:
    """Chart files as strings, oldest first (for the demo's summary)."""
    return [str(p) for p in paths]


__all__ = [
    "ConsoleButton",
    "ConsolePrompt",
    "ConsoleSink",
    "chart_paths",
]
