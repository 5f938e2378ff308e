"""A check's result (`Finding`) and its level, shared by the launcher lint, the probes, the
memory budget and preflight. What a finding says is a `Text` (bot.core.text): Slack shows it
in the thread's language through the message catalogue; `message` and `fix` are the English,
for the CLI, the JSON report and the logs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from bot.core.text import Text, render_text

Level = Literal["pass", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    """One check's result; `line` is 1-based in the checked file, None when it is about the
    whole file; `text` what it found and `fix_text` what to do, as sentences to translate
    (a plain `str` only for text that is data, e.g. a tool's own output)."""

    check: str
    level: Level
    line: int | None
    text: Text | str
    fix_text: Text | str = ""

    @property
    def message(self) -> str:
        """What the check found, in English."""
        return render_text(self.text)

    @property
    def fix(self) -> str:
        """What to do about it, in English ("" when nothing)."""
        return render_text(self.fix_text)

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "level": self.level, "line": self.line,
                "message": self.message, "fix": self.fix}


def worst_level(findings: Iterable[Finding]) -> Level:
    """`fail` if any finding fails, else `warn` if any warns, else `pass`."""
    levels = {f.level for f in findings}
    if "fail" in levels:
        return "fail"
    return "warn" if "warn" in levels else "pass"
