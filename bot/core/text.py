"""Sentences for people made in pure code: an English message id and its named values.

The renderer translates one through the message catalogue (templates/locale, the `msg` filter
of bot.slack.render), values that are themselves `Text` too; `str()` is the English, for the
CLI and the logs. Word order stays whole: a sentence is one message id with `%(name)s`
placeholders, never translated fragments glued together.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Text:
    """A message id (English source text, `%(name)s` placeholders) with its values; a value
    may be a `Text` or a list of them (joined with ", ")."""

    msgid: str
    values: tuple[tuple[str, Any], ...] = ()

    def format(self, translate: Any = None) -> str:
        """The sentence, each message id passed through `translate` (identity: English)."""
        return render_text(self, translate)

    def __str__(self) -> str:
        return render_text(self)


def N_(msgid: str, /, **values: Any) -> Text:  # noqa: N802 - the gettext marker's usual name
    """Mark `msgid` for the catalogue (Babel's `N_` keyword) with its named values."""
    return Text(msgid, tuple(values.items()))


# Below this a duration reads in seconds ("95 s", never "2 min" for an 8 s stall).
SECONDS_BELOW = 120


def duration_phrase(seconds: float, *, up: bool = False, down: bool = False) -> Text:
    """THE duration wording of every text trainbot writes, as a Text (bot.slack.render's
    format_duration says it in a language; a sentence made in code carries it as a value):
    seconds below two minutes, then minutes, hours, days. Rounded to the nearest of the last
    unit shown; with `up` (a wait announced to a person), rounded up to it, so the time said
    is never before the real one; with `down` (a time left, as an approval's expiry), rounded
    down to it, so the time said is never after the real one."""
    if up and down:
        raise ValueError("duration_phrase: up or down, not both")
    whole: Callable[[float], int] = (math.ceil if up else math.floor if down
                                     else (lambda x: int(round(x))))
    if whole(max(0.0, seconds)) < SECONDS_BELOW:
        return N_("%(seconds)d s", seconds=whole(max(0.0, seconds)))
    hours, minutes = divmod(whole(seconds / 60.0), 60)
    if up and hours >= 24 and minutes:  # days show whole hours: the next one
        hours, minutes = hours + 1, 0
    days, hours = divmod(hours, 24)
    if days:
        return N_("%(days)d d %(hours)d h", days=days, hours=hours)
    if hours:
        return N_("%(hours)d h %(minutes)02d min", hours=hours, minutes=minutes)
    return N_("%(minutes)d min", minutes=minutes)


def text_to_json(value: Any) -> Any:
    """`value` as JSON data to store: a Text as {"msgid": …, "values": {…}} (its values the
    same way), a list or a dict item by item, anything else as it is (text_from_json reads it
    back)."""
    if isinstance(value, Text):
        return {"msgid": value.msgid, "values": {k: text_to_json(v) for k, v in value.values}}
    if isinstance(value, list | tuple):
        return [text_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: text_to_json(v) for k, v in value.items()}
    return value


def text_from_json(data: Any) -> Any:
    """What text_to_json stored, its sentences Texts again (for the renderer to translate)."""
    if isinstance(data, dict) and set(data) == {"msgid", "values"} \
            and isinstance(data["msgid"], str) and isinstance(data["values"], dict):
        return Text(data["msgid"], tuple((k, text_from_json(v))
                                         for k, v in data["values"].items()))
    if isinstance(data, list):
        return [text_from_json(v) for v in data]
    if isinstance(data, dict):
        return {k: text_from_json(v) for k, v in data.items()}
    return data


def render_text(value: Any, translate: Any = None,
                escape: Callable[[Any], str] | None = None) -> str:
    """`value` as a sentence: a Text's message id through `translate` (a `gettext`) filled
    with its values, rendered the same way; a list joined with ", "; anything else `str()`.
    With `escape` (mrkdwn_escape), every value that is not a sentence or a number (a path,
    a command, a log line, a job name) is passed through it: `translate` then says how the
    message ids themselves are made safe (mrkdwn_sentence)."""
    if isinstance(value, Text):
        msgid = translate(value.msgid) if translate is not None else value.msgid
        if not value.values:
            return msgid
        return msgid % {k: _value(v, translate, escape) for k, v in value.values}
    if isinstance(value, list | tuple):
        return ", ".join(render_text(v, translate, escape) for v in value)
    return escape(value) if escape is not None else str(value)


def _value(value: Any, translate: Any, escape: Callable[[Any], str] | None) -> Any:
    if isinstance(value, Text | list | tuple):
        return render_text(value, translate, escape)
    if escape is None or isinstance(value, int | float):  # `%(n)d` stays a number
        return value
    return escape(value)


class Mrkdwn(str):
    """Text already escaped for Slack mrkdwn: mrkdwn_escape leaves it as it is."""

    __slots__ = ()


def mrkdwn_escape(text: Any) -> Mrkdwn:
    """Slack's three control characters as entities (&amp; &lt; &gt;,
    https://docs.slack.dev/messaging/formatting), so a path, a command, a log line or a job
    name shows as typed: a `<!channel>` in it pings no one, `a < b` breaks nothing. Text
    already escaped (a Mrkdwn) is returned unchanged, never escaped twice."""
    if isinstance(text, Mrkdwn):
        return text
    return Mrkdwn(str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def shorten(text: Any, limit: int) -> str:
    """`text` in at most `limit` characters, for a plain_text field Slack caps (a header, a
    button, a confirm dialog's title): a longer one keeps its start and its end, where job
    names and node lists differ (`sweep-lr0.1-…-seed3`), around one `…`."""
    text = str(text)
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 3
    return text[:limit - 1 - tail] + "…" + (text[-tail:] if tail else "")


# The control sequences trainbot's own sentences build on purpose: a mention of a person,
# channel or group (`<@%(user)s>`, `<#%(channel)s>`, `<!subteam^S1>`) and a link
# (`<https://…|label>`).
_OWN_CONTROL = re.compile(r"<(?:[@#!][^<>\s|]+|(?:https?|mailto):[^<>\s|]+)(?:\|[^<>]*)?>")


def mrkdwn_sentence(sentence: str) -> Mrkdwn:
    """A message id (or its translation) made safe for mrkdwn: its mentions and links kept,
    any other `<`, `>` and `&` escaped (`recipes.<name>.sbatch_script`, `2>/dev/null`)."""
    out: list[str] = []
    last = 0
    for m in _OWN_CONTROL.finditer(sentence):
        out += [mrkdwn_escape(sentence[last:m.start()]), m.group()]
        last = m.end()
    out.append(mrkdwn_escape(sentence[last:]))
    return Mrkdwn("".join(out))


def display_width(text: str) -> int:
    """Columns `text` takes in a monospaced font: East-Asian wide and full-width characters
    (Hangul, CJK) take two, combining marks none."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def align_table(rows: Sequence[Sequence[Any]], align: str = "", sep: str = "  ",
                min_widths: Sequence[int] = ()) -> str:
    """Rows of cells as lines of aligned columns (for a code block), padded by display width
    so Korean headers line up: `align` has one letter per column, `r` right, else left; a
    column is at least as wide as `min_widths` says. The last column is not padded."""
    cells = [[str(c) for c in row] for row in rows]
    count = max((len(r) for r in cells), default=0)
    widths = [max([display_width(r[i]) for r in cells if i < len(r)]
                  + [min_widths[i] if i < len(min_widths) else 0]) for i in range(count)]
    lines = []
    for row in cells:
        out = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - display_width(cell))
            right = i < len(align) and align[i] == "r"
            out.append(pad + cell if right else cell if i == len(row) - 1 else cell + pad)
        lines.append(sep.join(out))
    return "\n".join(lines)


# How join_text joins: "a; b; c" (the default), "a; or b".
SEMICOLONS = N_("%(first)s; %(rest)s")
SEMICOLONS_OR = N_("%(first)s; or %(rest)s")


def join_text(items: Sequence[Any], sep: Text = SEMICOLONS) -> Any:
    """`items` (sentences or values) as one: `sep` is a message id with `%(first)s` and
    `%(rest)s` (SEMICOLONS, SEMICOLONS_OR), applied pairwise; "" for none."""
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return Text(sep.msgid, (("first", items[0]), ("rest", join_text(items[1:], sep))))
