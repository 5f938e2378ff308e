"""How each function a launcher script defines is called (function_calls): a plain command,
a pipeline element before the last, under a condition or `&&` / `||`, or inside `$( … )` /
backticks: what `set -e` does inside its body depends on it."""

from __future__ import annotations

import re
from collections import Counter

#: Call sites are classified one by one only up to this many functions (each costs a pass).
MAX_CLASSIFIED_FUNCTIONS = 50


#: Where a function definition may start: a line's start, or after `;` / `&` / `{` on a line
#: (`inc(){ ((m++)); }; run(){ inc; }`).
_DEFINED_AT = r"(?m)(?:^|(?<=[;&{]))[ \t]*"


def function_calls(text: str) -> tuple[dict[str, set[str]], dict[str, int]]:
    """How each function defined in the script is called: a set of "direct" (a plain command:
    `set -e` applies inside), "piped" (a pipeline element before the last: its status is
    hidden), "guarded" (an `if`/`while` condition or before `&&`/`||`: `set -e` is off inside)
    and "subst" (inside `$( … )` / backticks); and the offset of each one's first piped call."""
    names = set(re.findall(
        _DEFINED_AT + r"(?:function[ \t]+)?([A-Za-z_][\w:-]*)[ \t]*\([ \t]*\)", text))
    if "function" in text:
        names |= set(re.findall(r"(?m)^[ \t]*function\s+([A-Za-z_][\w:-]*)", text))
    if not names:
        return {}, {}
    words = Counter(re.findall(r"(?<![\w$./:-])[A-Za-z_][\w:-]*(?![\w:-])", text))
    in_subst = Counter(re.findall(r"(?:\$\(|`)\s*([A-Za-z_][\w:-]*)(?![\w:-])", text))
    defined = Counter(re.findall(
        _DEFINED_AT + r"(?:function[ \t]+)?([A-Za-z_][\w:-]*)[ \t]*(?:\([ \t]*\)|(?=[ \t]*\{))",
        text))
    calls: dict[str, set[str]] = {}
    piped: dict[str, int] = {}
    count, subst_count, defined_count = words.get, in_subst.get, defined.get
    for name in names:
        subst = subst_count(name, 0)
        direct = count(name, 0) - subst - max(1, defined_count(name, 0))
        kinds = {"direct"} if direct > 0 else set()
        if subst:
            kinds.add("subst")
        calls[name] = kinds
    if len(names) <= MAX_CLASSIFIED_FUNCTIONS:
        for name, kinds in calls.items():
            if "direct" in kinds:
                kinds.discard("direct")
                kinds |= _call_kinds(text, name, piped)
    return calls, piped


_SINGLE_QUOTED_RE = re.compile(r"'[^']*'")


#: Where the list holding a command starts on its line: after the last separator, `(` / `{`,
#: or `then` / `do` / `else` before it (`if true; then f; fi; f`: the last `f`'s list is `f`).
_CLAUSE_START_RE = re.compile(r"(?:.*(?:[;\n({]|(?<![&<>])&(?![&>])|\b(?:then|do|else)\b))?")
#: Where the list holding a command ends on its line: the next `;`, a lone `&` (not `2>&1`,
#: `&>`), or `)` / `}`.
_CLAUSE_END_RE = re.compile(r"[;)}]|(?<![&<>])&(?![&>])")


#: A negated subshell's opening before a command (`!(`, `! ( `).
_NEGATED_SUBSHELL_RE = re.compile(r"(?:^|[\s;&|({])!\s*\($")


def _call_kinds(text: str, name: str, piped: dict[str, int]) -> set[str]:
    """The kinds (function_calls's) of every use of `name` on every line, each judged by the
    list it is in (`if true; then f; fi; f` calls `f` in a `then` branch and after `fi`, both
    direct; the `if` before them is not their condition)."""
    kinds: set[str] = set()
    rx = re.compile(r"(?<![\w$./:-])" + re.escape(name) + r"(?![\w:-])")
    for m in rx.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        pre = text[line_start : m.start()]
        post = text[m.end() : line_end if line_end >= 0 else len(text)]
        head = pre.strip()
        if post.lstrip().startswith("(") or head.endswith("function") or head.endswith(
            ("$(", "`", "=", "echo", "printf")
        ):
            continue  # its definition, a substitution, an assignment or text
        if ("$(" in pre or "`" in pre) and _in_substitution(pre):
            kinds.add("subst")  # after another command of a substitution: `$(echo; f)`
            continue
        if head and not re.search(
            r"(?:^|[;&|({]|\b(?:then|do|else|time|exec|if|elif|while|until)|!)$", head
        ):
            continue  # an argument of another command
        if _NEGATED_SUBSHELL_RE.search(head):
            kinds.add("guarded")  # `!(f)`, `! ( f )`: its status tested, `set -e` off in it
            continue
        start = _CLAUSE_START_RE.match(head)
        clause = head[start.end() if start else 0 :].strip()
        rest = _SINGLE_QUOTED_RE.sub("", post)
        end = _CLAUSE_END_RE.search(rest)
        rest = rest[: end.start()] if end else rest
        if re.match(r"(?:if|elif|while|until|!)\b", clause) or "&&" in rest or "||" in rest:
            kinds.add("guarded")
        elif re.search(r"(?<![|>])\|(?!\|)", rest):
            kinds.add("piped")
            piped.setdefault(name, m.end())
        else:
            kinds.add("direct")
    return kinds or {"direct"}


def _in_substitution(pre: str) -> bool:
    """Is the end of `pre` (a line's text before a word) inside a `$( … )` or backticks opened
    on that line? (Quotes are not read: `"$(a; f)"` is in one, as bash reads it.)"""
    open_: list[str] = []
    ticks = False
    i = 0
    while i < len(pre):
        c = pre[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            ticks = not ticks
        elif c == "$" and pre.startswith("((", i + 1):
            open_ += ["arith", "arith"]
            i += 3
            continue
        elif c == "$" and pre.startswith("(", i + 1):
            open_.append("subst")
            i += 2
            continue
        elif c == "(":
            open_.append("paren")
        elif c == ")" and open_:
            open_.pop()
        i += 1
    return ticks or "subst" in open_
