"""The calls of the script's functions as the walk (bot.core.launcher_lint.engine) reaches
them, and what a counter in a function's body holds at each: the arithmetic checks
(bot.core.launcher_lint.arith) judge a body where it runs, not where it is defined
(`f() { ((m++)); }; m=0; set -e; f`: `m` is 0 at the call)."""

from __future__ import annotations

import bisect
import re

from bot.core.launcher_lint.model import Call, Opts
from bot.core.launcher_lint.syntax import first_word
from bot.core.shell_lexer import Memo, split_top_level

_CONDITION_KEYWORDS = ("if", "elif", "while", "until")
_DEFINITION_RE = re.compile(r"[A-Za-z_][\w:-]*\s*\(\s*\)")


def call_sites(lst: str, off: int, names: dict[str, set[str]], opts: Opts, memo: Memo, *,
               in_condition: bool, in_function: bool, loop_from: int | None) -> list[Call]:
    """The calls of functions `names` in the and-or list `lst` (at `off`), in the script's
    shell: not in a pipeline (a subshell). `set -e` applies in a body called as the list's
    last command, outside a condition (`in_condition`, or after `if` / `while` / `!`)."""
    command = lst
    keyword = first_word(command)
    if keyword in _CONDITION_KEYWORDS:
        command, in_condition = command[len(keyword):], True
    at = off + len(lst) - len(command)
    found: list[Call] = []
    elements = split_top_level(command, at, ("&&", "||"), memo)
    for i, (element, e_off, _op) in enumerate(elements):
        text = element.lstrip()
        negated = text.startswith("!") and text[1:2].isspace()
        text = text[1:].lstrip() if negated else text
        name = first_word(text)
        if (name not in names or _DEFINITION_RE.match(text)
                or len(split_top_level(element, e_off, ("|",), memo)) > 1):
            continue  # not a call, a definition (`f() {`), or piped
        tested = in_condition or negated or i < len(elements) - 1
        found.append(Call(e_off + len(element) - len(text), name,
                          opts.errexit and not tested, in_function, loop_from))
    return found


def values_at_calls(name: str, body: tuple[int, int], calls: list[Call],
                    assigned: list[tuple[int, str | None]]) -> list[tuple[Call, bool,
                                                                          tuple[int, str | None]
                                                                          | None]]:
    """For each call of function `name` (its body at `body`), in the order the walk reached
    them: whether the body ran since the variable's last assignment outside the body before
    the call (an earlier call after it; on a loop's later pass, not when the assignment is in
    that loop before the call, which runs again first), and that assignment ((offset, value),
    None when there is none)."""
    start, end = body
    outside = [(pos, v) for pos, v in assigned if not start <= pos < end]
    result: list[tuple[Call, bool, tuple[int, str | None] | None]] = []
    starts = [pos for pos, _v in outside]
    latest = -1  # the furthest an earlier call is in the script
    for call in calls:
        if call.name != name:
            continue
        k = bisect.bisect_left(starts, call.offset)
        last = outside[k - 1] if k else None
        pos = last[0] if last else -1
        fresh = call.loop_from is not None and pos >= call.loop_from
        result.append((call, not fresh and latest > pos, last))
        latest = max(latest, call.offset)
    return result
