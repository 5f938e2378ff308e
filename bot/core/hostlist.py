"""Slurm hostlists (pure): `gpu[01-03,07],cpu5` read as its node names, and node names
written back as one hostlist (what --exclude takes)."""

from __future__ import annotations

import re
from collections.abc import Iterable

_TAIL_DIGITS = re.compile(r"^(.*?)([0-9]+)$")


class HostlistError(ValueError):
    """A hostlist Slurm would refuse: an unclosed or stray bracket, a bad range."""


def _split_top(text: str) -> list[str]:
    """`text` cut at its commas outside brackets."""
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
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"unclosed bracket in hostlist {text!r}")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _range_values(spec: str, text: str) -> list[str]:
    """The values of one bracket's `01-03,07` (zero padding kept, as Slurm does)."""
    values: list[str] = []
    for item in spec.split(","):
        item = item.strip()
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or sep and not hi.isdigit():
            raise HostlistError(f"bad range {item!r} in hostlist {text!r}")
        if not sep:
            values.append(lo)
            continue
        if int(hi) < int(lo):
            raise HostlistError(f"descending range {item!r} in hostlist {text!r}")
        width = len(lo) if lo.startswith("0") else 0
        values.extend(str(n).zfill(width) for n in range(int(lo), int(hi) + 1))
    return values


def _expand(name: str, text: str) -> list[str]:
    """One top-level name with any brackets (`rack[1-2]-n[01,03]`) expanded in order."""
    open_at = name.find("[")
    if open_at < 0:
        return [name]
    close_at = name.index("]", open_at)
    head, spec, rest = name[:open_at], name[open_at + 1:close_at], name[close_at + 1:]
    tails = _expand(rest, text)
    return [f"{head}{v}{t}" for v in _range_values(spec, text) for t in tails]


def parse_hostlist(text: str | None) -> list[str]:
    """The node names of hostlist `text` (None or '': none), in order, each once. Raises
    HostlistError when Slurm would not read it."""
    seen: dict[str, None] = {}
    for part in _split_top(text or ""):
        for node in _expand(part, text or ""):
            seen.setdefault(node, None)
    return list(seen)


def render_hostlist(nodes: Iterable[str]) -> str:
    """`nodes` as one hostlist, each once: names that differ only in a trailing number of
    the same width are folded into one bracket (`gpu[01-03,07]`), the rest listed as they
    are; groups in the order their first node came."""
    groups: dict[tuple[str, int], list[int]] = {}
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
            groups[key] = []
            order.append(key)
        number = int(m.group(2))
        if number not in groups[key]:
            groups[key].append(number)
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
