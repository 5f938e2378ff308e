"""Shared printing for commands that report pass / warn / fail checks."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.findings import Finding

_MARK = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def print_findings(findings: Iterable[Finding], indent: str = "  ") -> None:
    """One line per check, and the fix under any warn/fail."""
    for f in findings:
        print(f"{indent}[{_MARK[f.level]}] {f.check}: {f.message}")
        if f.fix and f.level != "pass":
            print(f"{indent}       fix: {f.fix}")
