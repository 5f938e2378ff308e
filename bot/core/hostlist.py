"""Slurm hostlists (pure): `gpu[01-03,07],cpu5` read as its node names, and node names
written back as one hostlist (what --exclude takes)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_TAIL_DIGITS = re.compile(r"^(.*?)([0-9]+)$")

#: Slurm's hosts per bracket range (src/common/hostlist.c MAX_RANGE, 64K): a wider range it
#: refuses.
MAX_RANGE = 65536
#: The most node names one hostlist is read as (parse_hostlist's default `limit`).
MAX_NODES = 65536
# What Slurm separates a hostlist's names with outside brackets: commas and white space.
_SEPARATORS = frozenset(", \t\n\r")


class HostlistError(ValueError):
    """A hostlist Slurm would refuse (an unclosed or stray bracket, a bad range, text after a
    bracket, a range wider than MAX_RANGE), or one of more names than its reader allows."""


def _split_top(text: str) -> list[str]:
    """`text` cut at its commas and white space outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested bracket in hostlist {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unopened bracket in hostlist {text!r}")
        elif ch in _SEPARATORS and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"unclosed bracket in hostlist {text!r}")
    parts.append(text[start:])
    return [p for p in parts if p]


def _number(digits: str) -> bool:
    """Whether `digits` is a number Slurm reads in a range: ASCII digits only (`²`, `٣` are
    digits to str.isdigit, not to Slurm)."""
    return digits.isascii() and digits.isdigit()


def _ranges(spec: str, text: str) -> list[tuple[int, int, int]]:
    """One bracket's `01-03,07` as (low, high, zero-pad width) ranges, each of at most
    MAX_RANGE hosts."""
    ranges: list[tuple[int, int, int]] = []
    for item in spec.split(","):
        item = item.strip()
        lo, sep, hi = item.partition("-")
        if not _number(lo) or sep and not _number(hi):
            raise HostlistError(f"bad range {item!r} in hostlist {text!r}")
        high = int(hi) if sep else int(lo)
        if high < int(lo):
            raise HostlistError(f"descending range {item!r} in hostlist {text!r}")
        if high - int(lo) + 1 > MAX_RANGE:
            raise HostlistError(f"range {item!r} of more than {MAX_RANGE} hosts in hostlist "
                                f"{text!r}")
        ranges.append((int(lo), high, len(lo) if lo.startswith("0") else 0))
    return ranges


def _parts(name: str, text: str) -> tuple[str, list[tuple[int, int, int]]] | None:
    """One top-level name's prefix and bracket ranges (`gpu[01-03,07]`); None for a name
    without brackets. Only one bracket, at the end of its name, as Slurm reads it: `a[1-3]b`
    and `rack[1-2]-n01` are no hostlists to Slurm (`Invalid hostlist`), nor to trainbot."""
    open_at = name.find("[")
    if open_at < 0:
        return None
    close_at = name.index("]", open_at)
    if close_at != len(name) - 1:
        raise HostlistError(f"text after a bracket in hostlist {text!r}")
    return name[:open_at], _ranges(name[open_at + 1:close_at], text)


def parse_hostlist(text: str | None, *, limit: int = MAX_NODES) -> list[str]:
    """The node names of hostlist `text` (None or '': none), in order, each once. Raises
    HostlistError when Slurm would not read it, or when it writes more than `limit` names
    (counted before any is made: `n[1-40000]` is refused whole, never expanded)."""
    text = text or ""
    parsed = [(part, _parts(part, text)) for part in _split_top(text)]
    count = sum(1 if ranges is None else sum(hi - lo + 1 for lo, hi, _ in ranges[1])
                for _, ranges in parsed)
    if count > limit:
        raise HostlistError(f"hostlist {text[:80]!r} names {count} nodes, more than {limit}")
    seen: dict[str, None] = {}
    for part, ranges in parsed:
        if ranges is None:
            seen.setdefault(part, None)
            continue
        prefix, spans = ranges
        for lo, hi, width in spans:
            for n in range(lo, hi + 1):
                seen.setdefault(f"{prefix}{n:0{width}d}", None)
    return list(seen)


def render_hostlist(nodes: Iterable[str]) -> str:
    """`nodes` as one hostlist, each once: names that differ only in a trailing number of
    the same width are folded into one bracket (`gpu[01-03,07]`), the rest listed as they
    are; groups in the order their first node came."""
    groups: dict[tuple[str, int], set[int]] = {}
    order: list[tuple[str, int] | str] = []
    plain: set[str] = set()
    for node in nodes:
        m = _TAIL_DIGITS.match(node)
        if m is None or not m.group(1) or "[" in node or "]" in node:
            if node not in plain:
                plain.add(node)
                order.append(node)
            continue
        key = (m.group(1), len(m.group(2)))
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(m.group(2)))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width = item
        numbers = sorted(groups[item])
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        out.append(f"{prefix}[{','.join(_runs(numbers, width))}]")
    return ",".join(out)


def _runs(numbers: list[int], width: int) -> list[str]:
    """Sorted `numbers` as Slurm's ranges (`1-3`, `7`), zero-padded to `width`."""
    runs: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        runs.append(f"{start:0{width}d}" if start == prev
                    else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return runs
