"""The pattern dialect: the subset of regex that Python `re` and POSIX `grep -E` read alike,
and a parser listing the literal text every match of a pattern contains."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_ESCAPABLE = set(".[](){}*+?|^$\\")
#: Characters that start a quantifier, and an interval `{m}`, `{m,}`, `{m,n}`.
QUANT_START = set("*+?{")
INTERVAL_RE = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")


def check_dialect(pattern: str) -> str | None:
    """Why `pattern` is not in the shared Python-re / POSIX-ERE subset, or None if it is."""
    i, n = 0, len(pattern)
    prev_quantifiable = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return "ends with a lone backslash"
            nxt = pattern[i + 1]
            if nxt not in _ESCAPABLE:
                return (f"'\\{nxt}' is not portable to grep -E: escape only . [ ] ( ) {{ }} * + ? "
                        "| ^ $ \\ (write [0-9] for \\d, ' ' or [ \t] for \\s)")
            i += 2
            prev_quantifiable = True
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                return "a bracket expression may not start with ']' (not portable)"
            while j < n and pattern[j] != "]":
                if pattern[j] in "\\[":
                    return "no backslash or '[' inside [...] (they differ between re and grep -E)"
                j += 1
            if j >= n:
                return "unterminated [...]"
            i = j + 1
            prev_quantifiable = True
            continue
        if c == "(":
            if pattern[i + 1: i + 2] == "?":
                return "'(?...)' groups and lookarounds are not POSIX ERE: use plain (...)"
            i += 1
            prev_quantifiable = False
            continue
        if c in QUANT_START:
            if not prev_quantifiable:
                return f"quantifier {c!r} at position {i} has nothing to repeat"
            if c == "{":
                m = INTERVAL_RE.match(pattern, i)
                if not m:
                    return "a literal '{' must be escaped as \\{"
                i = m.end()
            else:
                i += 1
            if i < n and pattern[i] in "?+":
                return "lazy or possessive quantifiers (*? +? ?? ++) are not POSIX ERE"
            prev_quantifiable = False
            continue
        if c == "}":
            return "a literal '}' must be escaped as \\}"
        prev_quantifiable = c not in "|^$"
        i += 1
    return None


# --------------------------------------------------------------------------- required literals
#
# A small parser for the dialect above that lists, for each way a pattern can match (its
# "variants": alternatives and small character classes expanded), the literal runs every
# match of that variant contains. None in a token list marks a break in the literal text.

_Tok = list[str | None]
_MAX_VARIANTS = 256
_MAX_CLASS_EXPAND = 4


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def parse_alt(self) -> list[_Tok]:
        variants = self.parse_seq()
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            variants = variants + self.parse_seq()
        return variants if len(variants) <= _MAX_VARIANTS else [[None]]

    def parse_seq(self) -> list[_Tok]:
        variants: list[_Tok] = [[]]
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self.parse_atom()
            lo, hi = self.parse_quant()
            options = _repeat(atom, lo, hi)
            if len(variants) * len(options) > _MAX_VARIANTS:
                options = [[None]]
            variants = _dedupe([v + o for v in variants for o in options])
        return variants

    def parse_atom(self) -> list[_Tok]:
        c = self.p[self.i]
        if c == "\\":
            self.i += 2
            return [[self.p[self.i - 1]]]
        if c == "[":
            j = self.p.index("]", self.i + 1)
            body = self.p[self.i + 1: j]
            self.i = j + 1
            chars = _class_chars(body)
            if chars is None or len(chars) > _MAX_CLASS_EXPAND:
                return [[None]]
            return [[ch] for ch in sorted(chars)]
        if c == "(":
            self.i += 1
            inner = self.parse_alt()
            self.i += 1  # ')'
            return inner
        self.i += 1
        if c == ".":
            return [[None]]
        if c in "^$":
            return [[]]
        return [[c]]

    def parse_quant(self) -> tuple[int, int | None]:
        if self.i >= len(self.p):
            return 1, 1
        c = self.p[self.i]
        if c == "?":
            self.i += 1
            return 0, 1
        if c == "*":
            self.i += 1
            return 0, None
        if c == "+":
            self.i += 1
            return 1, None
        if c == "{":
            m = INTERVAL_RE.match(self.p, self.i)
            assert m is not None  # checked by check_dialect
            self.i = m.end()
            lo = int(m.group(1))
            if m.group(2) is None:
                return lo, lo
            return lo, (int(m.group(3)) if m.group(3) else None)
        return 1, 1


def _dedupe(variants: list[_Tok]) -> list[_Tok]:
    """Drop variants that differ only in text that cannot become a run of 3+ characters,
    which keeps the expansion of `[Ll]oss'?"? *[=:]...` small."""
    seen: dict[tuple[tuple[str, ...], str], _Tok] = {}
    for v in variants:
        runs, tail = _literal_runs(v)
        seen.setdefault((tuple(runs), tail), v)
    return list(seen.values())


def _literal_runs(tokens: Iterable[str | None]) -> tuple[list[str], str]:
    """The runs of 3+ literal characters between the unknown parts (None) of `tokens`, and
    the literal text after the last one (not counted as a run: end `tokens` with None to
    count it)."""
    runs: list[str] = []
    run: list[str] = []
    for t in tokens:
        if t is None:
            if len(run) >= 3:
                runs.append("".join(run))
            run = []
        else:
            run.append(t)
    return runs, "".join(run)


def _class_chars(body: str) -> set[str] | None:
    if body.startswith("^"):
        return None
    chars: set[str] = set()
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            lo, hi = ord(body[i]), ord(body[i + 2])
            if hi - lo > _MAX_CLASS_EXPAND:
                return None
            chars.update(chr(k) for k in range(lo, hi + 1))
            i += 3
        else:
            chars.add(body[i])
            i += 1
    return chars


def _repeat(atom: list[_Tok], lo: int, hi: int | None) -> list[_Tok]:
    if (lo, hi) == (1, 1):
        return atom
    if (lo, hi) == (0, 1):
        return [*atom, []]
    if lo == 0:
        return [[None]]
    if len(atom) == 1 and hi == lo and lo <= 8:
        return [atom[0] * lo]
    # at least `lo` copies, then an unknown amount: keep the first copy, then break
    return [[*a, None] for a in atom]


@lru_cache(maxsize=4096)
def _variants(pattern: str) -> tuple[tuple[str | None, ...], ...]:
    """The pattern's variants as token lists, parsed once per process: loading a catalogue
    asks for a pattern's runs when it checks it and when it picks its triggers, and for its
    literal texts when it builds the cut-off check."""
    return tuple(tuple(tokens) for tokens in _Parser(pattern).parse_alt())


def required_runs(pattern: str) -> list[list[str]]:
    """For each variant of `pattern` (alternatives and small classes expanded), the literal
    runs of 3+ characters that every match of that variant contains, in order."""
    out: list[list[str]] = []
    for tokens in _variants(pattern):
        runs, _ = _literal_runs([*tokens, None])
        if runs not in out:
            out.append(runs)
    return out


def literal_variants(pattern: str) -> list[str]:
    """The texts `pattern` matches as they are, one for each of its variants (alternatives and
    small classes expanded) that is wholly literal: no `.`, large class or repeat left in it."""
    out: list[str] = []
    for tokens in _variants(pattern):
        if None not in tokens and (text := "".join(t for t in tokens if t)) not in out:
            out.append(text)
    return out
