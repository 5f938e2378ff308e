"""The paths a script names: quotes dropped, plain `NAME=value` assignments substituted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

#: One shell word as an argument: a quoted string or a run of non-operator characters.
ARG = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s;|&)<>]+)"
_VAR_RE = re.compile(r"\$(\w+)")
_SIMPLE_ASSIGN_RE = re.compile(r"(?m)^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=" + ARG)


def unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'":
        return word[1:-1]
    return word


@lru_cache(maxsize=4096)
def norm(arg: str) -> str:
    arg = arg.strip()
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "\"'":
        arg = arg[1:-1]
    arg = arg.replace('"', "").replace("'", "")
    return re.sub(r"\$\{(\w+)\}", r"$\1", arg) if "${" in arg else arg


def resolve(arg: str, assigns: Mapping[str, str]) -> str:
    if "$" not in arg:
        return arg
    for _ in range(3):
        new = _VAR_RE.sub(lambda m: assigns.get(m.group(1), m.group(0)), arg)
        if new == arg:
            break
        arg = new
    return arg


def assignments(code: str) -> dict[str, str]:
    """The last plain `NAME=value` of each variable (quotes and `${}` braces dropped)."""
    return {m.group(1): norm(m.group(2)) for m in _SIMPLE_ASSIGN_RE.finditer(code)}
