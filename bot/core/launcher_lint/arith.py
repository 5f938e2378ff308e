"""`arith_zero_under_errexit`: an arithmetic command whose value is 0 under `set -e`, so its
status is 1: `((n++))` / `let n++` with `n` last set to 0, `((n=0))` / `let n=0`."""

from __future__ import annotations

import re

from bot.core.findings import Finding
from bot.core.launcher_lint.messages import short, slurm_shows, under_errexit
from bot.core.launcher_lint.model import CHECK_ARITH_ZERO, Scan
from bot.core.text import N_

#: The arithmetic commands the walk collects where `set -e` is on: an increment or decrement
#: (its value is the variable's before it), or an assignment of 0 (its value is 0).
ARITH_RE = re.compile(r"^\(\(\s*([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)\s*\)\)$")
LET_RE = re.compile(r"^let\s+[\"']?([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)[\"']?$")
#: What sets a variable: a shell assignment (`n=0`, `n=0;`, `n="0"`, `local n=0`, `let n=0`),
#: its value up to a blank or an operator, and an arithmetic one, blanks around `=` allowed
#: (`((n=0))`, `(( n = 0 ))`, `for ((n = 0; …))`); `==` compares.
_ASSIGNMENT_RE = re.compile(
    r"(?<![\w$])(?P<var>[A-Za-z_]\w*)=(?!=)(?P<value>[^\s;&|)]*)"
    r"|\(\(\s*(?P<avar>[A-Za-z_]\w*)\s*=(?!=)\s*(?P<avalue>[^\s;,)]*)"
)


def check_arith(scan: Scan, code: str) -> list[Finding]:
    findings: list[Finding] = []
    values: dict[str, list[tuple[int, str]]] = {}
    if scan.arith:
        wanted = {a.variable for a in scan.arith}
        for m in _ASSIGNMENT_RE.finditer(code):
            var, value = m.group("var", "value") if m.group("var") else m.group("avar", "avalue")
            if var in wanted:
                values.setdefault(var, []).append((m.start(), value.strip("\"'")))
    seen: set[int] = set()
    for a in scan.arith:
        if not a.assigns_zero:
            before = [(pos, v) for pos, v in values.get(a.variable, []) if pos < a.offset]
            if not before or before[-1][1] != "0":
                continue
            if a.zero_after is not None and before[-1][0] < a.zero_after:
                continue  # a later pass of a loop: `n` is 0 before the loop only, in its first
        line = scan.line_of(a.offset)
        if line in seen:
            continue
        seen.add(line)
        said = {"line": line, "command": short(a.command), "var": a.variable,
                "under": under_errexit("`set -e`", a.errexit_partial), "slurm": slurm_shows(1)}
        findings.append(Finding(
            # with `set -e` on some paths only, the stop is on the runs that take them
            CHECK_ARITH_ZERO, "warn" if a.errexit_partial else "fail", line,
            N_("line %(line)s: `%(command)s` sets `%(var)s` to 0 and evaluates to 0, so its "
               "status is 1: %(under)s the launcher stops right here: %(slurm)s", **said)
            if a.assigns_zero else
            N_("line %(line)s: `%(command)s` with `%(var)s` at 0 evaluates to 0, so its status "
               "is 1: %(under)s the launcher stops right here the first time: %(slurm)s",
               **said),
            N_("write `%(var)s=0`, whose status is 0", var=a.variable) if a.assigns_zero else
            N_("use `(( ++%(var)s ))` or `%(var)s=$(( %(var)s + 1 ))`", var=a.variable),
        ))
    if not findings:
        findings.append(Finding(CHECK_ARITH_ZERO, "pass", None,
                                N_("no `((n++))` from 0 under `set -e`")))
    return findings
