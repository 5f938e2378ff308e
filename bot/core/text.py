"""Sentences for people made in pure code: an English message id and its named values.

The renderer translates one through the message catalogue (templates/locale, the `msg` filter
of bot.slack.render), values that are themselves `Text` too; `str()` is the English, for the
CLI and the logs. Word order stays whole: a sentence is one message id with `%(name)s`
placeholders, never translated fragments glued together.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
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


def render_text(value: Any, translate: Any = None) -> str:
    """`value` as a sentence: a Text's message id through `translate` (a `gettext`) filled
    with its values, rendered the same way; a list joined with ", "; anything else `str()`."""
    if isinstance(value, Text):
        msgid = translate(value.msgid) if translate is not None else value.msgid
        if not value.values:
            return msgid
        return msgid % {k: render_text(v, translate) if isinstance(v, Text | list | tuple)
                        else v for k, v in value.values}
    if isinstance(value, list | tuple):
        return ", ".join(render_text(v, translate) for v in value)
    return str(value)


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
