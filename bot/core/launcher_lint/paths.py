"""The paths a script names: quotes dropped, plain `NAME=value` assignments substituted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

#: One shell word as an argument: a quoted string or a run of non-operator characters.
ARG = r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s;|&)<>]+)"
_VAR_RE = re.compile(r"\$(\w+)")
_SIMPLE_ASSIGN_RE = re.compile(
    r"(?m)^[ \t]*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=" + ARG
)


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


class Assignments(dict[str, str]):
    """The plain assignments of a script, with the paths resolved against them remembered
    (a script names the same few paths thousands of times)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.resolved: dict[str, str] = {}


def resolve(arg: str, assigns: Mapping[str, str]) -> str:
    if "$" not in arg:
        return arg
    cache = assigns.resolved if isinstance(assigns, Assignments) else None
    if cache is not None and arg in cache:
        return cache[arg]
    out = arg
    for _ in range(3):
        new = _VAR_RE.sub(lambda m: assigns.get(m.group(1), m.group(0)), out)
        if new == out:
            break
        out = new
    if cache is not None:
        cache[arg] = out
    return out


def assignments(code: str) -> Assignments:
    """The last plain `NAME=value` of each variable (quotes and `${}` braces dropped)."""
    return Assignments({m.group(1): norm(m.group(2)) for m in _SIMPLE_ASSIGN_RE.finditer(code)})
