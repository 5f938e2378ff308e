"""`arith_zero_under_errexit`: an arithmetic command whose value is 0 under `set -e`, so its
status is 1: `((n++))` / `let n++` with `n` last set to 0 or never set (unset is 0; under
`set -u` an unbound variable), `((n=0))` / `let n=0`."""

from __future__ import annotations

import re

from bot.core.findings import Finding, Level
from bot.core.launcher_lint.messages import short, slurm_shows, under_errexit
from bot.core.launcher_lint.model import CHECK_ARITH_ZERO, Arith, Scan
from bot.core.text import N_

#: The arithmetic commands the walk collects where `set -e` is on: an increment or decrement
#: (its value is the variable's before it), or an assignment of 0 (its value is 0).
ARITH_RE = re.compile(r"^\(\(\s*([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)\s*\)\)$")
LET_RE = re.compile(r"^let\s+[\"']?([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)[\"']?$")
#: What sets a variable: a shell assignment (`n=0`, `n=0;`, `n="0"`, `local n=0`, `let n=0`),
#: its value up to a blank or an operator, and an arithmetic one, blanks around `=` allowed
#: (`((n=0))`, `(( n = 0 ))`, `for ((n = 0; …))`); `==` compares. `+=` appends (`n+=1`: "01",
#: or 1 with `declare -i`) or adds (`((n+=1))`).
_ASSIGNMENT_RE = re.compile(
    r"(?<![\w$])(?P<var>[A-Za-z_]\w*)(?P<op>\+?)=(?!=)(?P<value>[^\s;&|)]*)"
    r"|\(\(\s*(?P<avar>[A-Za-z_]\w*)\s*(?P<aop>\+?)=(?!=)\s*(?P<avalue>[^\s;,)]*)"
)
_ZERO_RE = re.compile(r"0+")
#: A command that may set variables the script does not name: `source` / `.` of a file, `eval`.
_SOURCES_RE = re.compile(r"(?m)(?<![\w.-])(?:source|eval)\s|(?:^|[;&|({]|\bthen|\bdo|\belse)"
                         r"\s*\.\s+\S")


def _values(code: str, wanted: set[str]) -> dict[str, list[tuple[int, str]]]:
    """(offset, value) of each assignment to the `wanted` variables, in order; a `+=` gives "0"
    only when it adds zeros to a 0 or unset value (`n=0; n+=0` is "00", 0 in arithmetic), else
    what it appended (`n=0; n+=1` is "01", 1 in arithmetic: not 0)."""
    values: dict[str, list[tuple[int, str]]] = {}
    for m in _ASSIGNMENT_RE.finditer(code):
        var, op, value = (m.group("var", "op", "value") if m.group("var")
                          else m.group("avar", "aop", "avalue"))
        if var not in wanted:
            continue
        value = value.strip("\"'")
        earlier = values.setdefault(var, [])
        if op:
            was_zero = not earlier or earlier[-1][1] == "0"
            value = "0" if was_zero and _ZERO_RE.fullmatch(value) else "+" + value
        earlier.append((m.start(), value))
    return values


def _never_set(var: str, code: str, arith: list[Arith]) -> bool:
    """Does nothing in the script set `var`: its name appears only where it is read (`$n`,
    `${n}`, `${n:-1}`) and in the collected arithmetic commands, and no `source` / `eval` may
    set it. Any other word `n` (`read n`, `for n in`, `local n`, `((n+=2))` where `set -e` is
    off) may set it."""
    if _SOURCES_RE.search(code):
        return False
    spans = [(a.offset, a.offset + len(a.command)) for a in arith]
    for m in re.finditer(r"(?<![\w$\\/.-])" + re.escape(var) + r"(?!\w)", code):
        if any(start <= m.start() < end for start, end in spans):
            continue
        if code[m.start() - 2 : m.start()] == "${" and not re.match(r":?=", code[m.end():]):
            continue  # `${n}`, `${n:-1}`: a read
        return False
    return True


def check_arith(scan: Scan, code: str) -> list[Finding]:
    findings: list[Finding] = []
    values = _values(code, {a.variable for a in scan.arith}) if scan.arith else {}
    never_set = {var: _never_set(var, code, scan.arith)
                 for var in {a.variable for a in scan.arith} - values.keys()}
    seen: set[int] = set()
    for a in scan.arith:
        unset = False
        if not a.assigns_zero:
            before = [(pos, v) for pos, v in values.get(a.variable, []) if pos < a.offset]
            if not before:
                # unset, unless an arithmetic command before it (a loop's earlier pass) set it
                unset = never_set.get(a.variable, False) and a.zero_after is None and not any(
                    b.variable == a.variable and b.offset < a.offset for b in scan.arith)
                if not unset:
                    continue
            elif before[-1][1] != "0":
                continue
            elif a.zero_after is not None and before[-1][0] < a.zero_after:
                continue  # a later pass of a loop: `n` is 0 before the loop only, in its first
        line = scan.line_of(a.offset)
        if line in seen:
            continue
        seen.add(line)
        findings.append(_finding(a, line, unset))
    if not findings:
        findings.append(Finding(CHECK_ARITH_ZERO, "pass", None,
                                N_("no `((n++))` from 0 under `set -e`")))
    return findings


def _finding(a: Arith, line: int, unset: bool) -> Finding:
    """The finding of arithmetic command `a` on `line`, whose value is 0 (`unset`: because
    nothing in the script sets its variable)."""
    said = {"line": line, "command": short(a.command), "var": a.variable,
            "under": under_errexit("`set -e`", a.errexit_partial), "slurm": slurm_shows(1)}
    # with `set -e` on some paths only, the stop is on the runs that take them; an unset
    # variable in capitals may come from the job's environment (sbatch passes the submitter's)
    level: Level = "warn" if a.errexit_partial or (unset and a.variable.isupper()) else "fail"
    if a.assigns_zero:
        text = N_("line %(line)s: `%(command)s` sets `%(var)s` to 0 and evaluates to 0, so its "
                  "status is 1: %(under)s the launcher stops right here: %(slurm)s", **said)
    elif unset and a.nounset:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s`, which nothing in the script "
                  "sets (only the job's environment could): under `set -u` bash stops right "
                  "here with `%(var)s: unbound variable`: %(slurm)s", **said)
    elif unset:
        text = N_("line %(line)s: `%(command)s` with `%(var)s` unset (nothing in the script "
                  "sets it; only the job's environment could) evaluates to 0, so its status is "
                  "1: %(under)s the launcher stops right here the first time: %(slurm)s",
                  **said)
    else:
        text = N_("line %(line)s: `%(command)s` with `%(var)s` at 0 evaluates to 0, so its "
                  "status is 1: %(under)s the launcher stops right here the first time: "
                  "%(slurm)s", **said)
    fix = (N_("write `%(var)s=0`, whose status is 0", var=a.variable) if a.assigns_zero else
           N_("set it first (`%(var)s=0`), then use `(( ++%(var)s ))` or "
              "`%(var)s=$(( %(var)s + 1 ))`", var=a.variable) if unset else
           N_("use `(( ++%(var)s ))` or `%(var)s=$(( %(var)s + 1 ))`", var=a.variable))
    return Finding(CHECK_ARITH_ZERO, level, line, text, fix)
