"""A check's result (`Finding`) and its level, shared by the launcher lint, the probes, the
memory budget and preflight."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

Level = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    """One check's result; `line` is 1-based in the checked file, None when it is about the
    whole file."""

    check: str
    level: Level
    line: int | None
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def worst_level(findings: Iterable[Finding]) -> Level:
    """`fail` if any finding fails, else `warn` if any warns, else `pass`."""
    levels = {f.level for f in findings}
    if "fail" in levels:
        return "fail"
    return "warn" if "warn" in levels else "pass"
