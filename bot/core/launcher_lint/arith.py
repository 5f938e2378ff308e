"""`arith_zero_under_errexit`: `((n++))` / `let n++` with `n` last set to 0 under `set -e`."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, slurm_shows, under_errexit
from bot.core.launcher_lint.model import CHECK_ARITH_ZERO, Scan
from bot.core.text import N_

#: The increments the walk collects where `set -e` is on.
ARITH_RE = re.compile(r"^\(\(\s*([A-Za-z_]\w*)\s*(\+\+|--)\s*\)\)$")
LET_RE = re.compile(r"^let\s+[\"']?([A-Za-z_]\w*)(\+\+|--)[\"']?$")


def check_arith(scan: Scan, code: str) -> list[Finding]:
    findings: list[Finding] = []
    values: dict[str, list[tuple[int, str]]] = {}
    if scan.arith:
        wanted = {a.variable for a in scan.arith}
        for m in re.finditer(r"(?<![\w$])([A-Za-z_]\w*)=(\S*)", code):
            if m.group(1) in wanted:
                values.setdefault(m.group(1), []).append((m.start(), m.group(2).strip("\"'")))
    seen: set[int] = set()
    for a in scan.arith:
        before = [(pos, v) for pos, v in values.get(a.variable, []) if pos < a.offset]
        if not before or before[-1][1] != "0":
            continue
        if a.zero_after is not None and before[-1][0] < a.zero_after:
            continue  # a later pass of a loop: `n` is 0 before the loop only, in its first
        line = scan.line_of(a.offset)
        if line in seen:
            continue
        seen.add(line)
        findings.append(Finding(
            CHECK_ARITH_ZERO, "fail", line,
            N_("line %(line)s: `%(command)s` with `%(var)s` at 0 evaluates to 0, so its status "
               "is 1: %(under)s the launcher stops right here the first time: %(slurm)s",
               line=line, command=short(a.command), var=a.variable,
               under=under_errexit("`set -e`", a.errexit_partial), slurm=slurm_shows(1)),
            N_("use `(( ++%(var)s ))` or `%(var)s=$(( %(var)s + 1 ))`", var=a.variable),
        ))
    if not findings:
        findings.append(Finding(CHECK_ARITH_ZERO, "pass", None,
                                N_("no `((n++))` from 0 under `set -e`")))
    return findings
