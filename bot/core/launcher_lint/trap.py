"""`exit_trap_overrides_status`: an EXIT trap whose handler ends with `exit 0` (in the handler or
in a function it calls). bash runs the trap whenever the script ends, also when `set -e` stops
it or it calls `exit 1` itself, and the trap's `exit 0` becomes the script's status: a crashed
run ends COMPLETED 0:0. A trap that does not call `exit`, calls it bare (bash keeps the status
the script had), or exits with `$?` / a variable holding it keeps the failure."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from bot.core.findings import Finding
from bot.core.launcher_lint.exit_calls import never_called_bodies
from bot.core.launcher_lint.messages import short
from bot.core.launcher_lint.model import CHECK_EXIT_TRAP, Scan
from bot.core.launcher_lint.paths import unquote
from bot.core.shell_lexer import (
    CASE_BRANCH_ENDS,
    COMMAND_AT,
    Memo,
    shell_words,
    skip_group,
    split_top_level,
    subshell_spans,
)
from bot.core.text import N_

#: A `trap` command and an `exit` (with its argument), where a command may start: on a `case`
#: pattern's line too (`a) trap … EXIT ;;`, `*) trap - EXIT; … ;;`, `0) exit 0 ;;`).
_TRAP_AT = re.compile(COMMAND_AT + r"trap[ \t]")
_EXIT_AT = re.compile(COMMAND_AT + r"(exit)(?:[ \t]+([^\s;&|)}]+))?")
_FUNC_DEF = re.compile(
    r"(?m)^[ \t]*(?:function[ \t]+([A-Za-z_][\w:-]*)[ \t]*(?:\([ \t]*\))?"
    r"|([A-Za-z_][\w:-]*)[ \t]*\([ \t]*\))\s*(?=\{)"
)
_ZERO_ASSIGN = re.compile(r"(?<![\w$])([A-Za-z_]\w*)=(\S*)")
#: A command that runs training, between a trap and its reset.
_TRAINER = re.compile(
    r"(?<![\w./-])(?:python[\d.]*|torchrun|srun|deepspeed|accelerate|mpirun|mpiexec)(?![\w-])"
)
_EXIT_SIGNALS = {"EXIT", "0", "SIGEXIT"}
_MAX_CALL_DEPTH = 4
_NAME_RE = re.compile(r"(?<![\w$./-])[A-Za-z_][\w:-]*")


@dataclass(frozen=True)
class _Trap:
    offset: int
    handler: str | None  # None: the EXIT trap is reset (`trap - EXIT`, `trap '' EXIT`)
    scope: tuple[int, int] | None = None  # the `( … )`, `$( … )`, `` `…` `` it is set in
    # (None: the script's own)


def _traps(code: str) -> list[_Trap]:
    """Every `trap … EXIT` command in `code`, in order."""
    found: list[_Trap] = []
    for m in _TRAP_AT.finditer(code):
        start = m.end() - len("trap ")
        words = shell_words(_command_at(code, start), start)
        args = words[1:]
        if args[:1] == ["--"]:
            args = args[1:]
        if not args or args[0].startswith("-") and args[0] != "-":
            continue  # `trap -p`, `trap -l`
        signals = args[1:] if len(args) > 1 else args
        if not any(unquote(s).upper() in _EXIT_SIGNALS for s in signals):
            continue
        handler = unquote(args[0]) if len(args) > 1 else "-"
        found.append(_Trap(start, None if handler in ("-", "") else handler))
    return found


def _in_scopes(traps: list[_Trap], spans: list[tuple[int, int]]) -> list[_Trap]:
    """Each trap with the innermost subshell it is set in (`spans` as subshell_spans gives
    them): bash runs a subshell's EXIT trap when that subshell ends, and the script's own
    trap is not changed by it. One sweep over both, in order."""
    scoped: list[_Trap] = []
    open_: list[tuple[int, int]] = []
    k = 0
    for trap in traps:
        while k < len(spans) and spans[k][0] < trap.offset:
            while open_ and open_[-1][1] <= spans[k][0]:
                open_.pop()  # (subshells nest: one that ended before this one started is done)
            open_.append(spans[k])
            k += 1
        while open_ and open_[-1][1] <= trap.offset:
            open_.pop()
        scoped.append(replace(trap, scope=open_[-1] if open_ else None))
    return scoped


def _command_at(code: str, start: int) -> str:
    """The simple command that starts at code[start], read from its line, and from twice as
    much text each time a quote (a handler over several lines) keeps it open."""
    ops = ("\n", ";", "&", "&&", "||", "|", *CASE_BRANCH_ENDS)
    line_end = code.find("\n", start)
    size = (line_end - start + 1) if line_end >= 0 else len(code) - start
    while True:
        pieces = split_top_level(code[start : start + size], start, ops)
        if len(pieces) > 1 or start + size >= len(code):
            return pieces[0][0]
        size *= 2


def _functions(code: str, memo: Memo) -> dict[str, str]:
    bodies: dict[str, str] = {}
    for m in _FUNC_DEF.finditer(code):
        brace = code.index("{", m.end())
        end = skip_group(code, brace, 0, memo)
        bodies[m.group(1) or m.group(2)] = code[brace + 1 : end - 1]
    return bodies


def _zero_variables(code: str) -> set[str]:
    """Variables whose every assignment in the script is the constant 0."""
    values: dict[str, set[str]] = {}
    for m in _ZERO_ASSIGN.finditer(code):
        values.setdefault(m.group(1), set()).add(m.group(2).strip("\"'"))
    return {name for name, vals in values.items() if vals == {"0"}}


def _is_zero(arg: str | None, zero_vars: set[str]) -> bool:
    if arg is None:
        return False  # bare `exit` in a trap keeps the status the script had
    arg = unquote(arg)
    if arg == "0":
        return True
    m = re.fullmatch(r"\$(?:\{(\w+)\}|(\w+))", arg)
    return m is not None and (m.group(1) or m.group(2)) in zero_vars


def _zero_exit(handler: str, functions: dict[str, str], zero_vars: set[str]) -> str | None:
    """The `exit 0` the handler runs (directly or in a function it calls), unless the handler
    or those functions read `$?` (then the exit is taken to keep the status)."""
    texts, todo, seen = [handler], [(handler, 0)], set()
    while todo:
        text, depth = todo.pop()
        if depth >= _MAX_CALL_DEPTH:
            continue
        for name in _NAME_RE.findall(text):
            if name in functions and name not in seen:
                seen.add(name)
                texts.append(functions[name])
                todo.append((functions[name], depth + 1))
    if any("$?" in t or "${?}" in t for t in texts):
        return None
    for text in texts:
        for m in _EXIT_AT.finditer(text):
            if _is_zero(m.group(2), zero_vars):
                return " ".join(m.group().split())
    return None


def check_exit_trap(scan: Scan, code: str, memo: Memo) -> list[Finding]:
    """`code`: the text `scan` walked (the script with comments and heredoc bodies blanked)."""
    findings: list[Finding] = []
    if "trap" in code:
        traps = _traps(code)
        if traps and scan.uncalled_bodies:  # (one set in a body nothing calls is never set)
            never = never_called_bodies(code, scan.uncalled_bodies)
            traps = [t for t in traps if not any(s <= t.offset < e for s, e in never)]
        if traps and ("(" in code or "`" in code):
            spans = scan.subshells
            traps = _in_scopes(traps, subshell_spans(code, memo) if spans is None else spans)
        functions = _functions(code, memo) if any(t.handler for t in traps) else {}
        zero_vars = _zero_variables(code)
        judged: dict[str, str | None] = {}
        next_in_scope: dict[tuple[int, int] | None, int] = {}  # scope -> its next trap's offset
        for trap in reversed(traps):
            until = next_in_scope.get(trap.scope)
            next_in_scope[trap.scope] = trap.offset
            if trap.handler is None:
                continue
            if trap.handler not in judged:
                judged[trap.handler] = _zero_exit(trap.handler, functions, zero_vars)
            exit0 = judged[trap.handler]
            if exit0 is None:
                continue
            if until is None and trap.scope is not None:
                until = trap.scope[1]  # a subshell's trap ends with it
            if until is not None and not _TRAINER.search(code, trap.offset, until):
                continue  # reset, replaced or ended before anything that trains
            findings.append(_finding(scan, trap, exit0, code))
        findings.reverse()
    if not findings:
        findings.append(Finding(CHECK_EXIT_TRAP, "pass", None,
                                N_("no EXIT trap that exits 0 whatever happened")))
    return findings


def _finding(scan: Scan, trap: _Trap, exit0: str, code: str) -> Finding:
    line = scan.line_of(trap.offset)
    handler = short(trap.handler or "", 50)
    errexit = scan.opts.errexit_line
    said = {"line": line, "handler": handler, "exit0": exit0}
    if trap.scope is not None:
        text = N_("line %(line)s: the EXIT trap `%(handler)s`, set inside the subshell "
                  "`%(subshell)s`, runs `%(exit0)s` when that subshell ends: training that fails "
                  "in it, or stops it under `set -e`, leaves the subshell with status 0, so the "
                  "launcher carries on as if training had succeeded and a crashed run can end "
                  "COMPLETED 0:0 (trainbot then takes it for a finished one: no diagnosis, no "
                  "resubmit)", subshell=short(code[trap.scope[0]:trap.scope[1]], 40), **said)
    elif errexit:
        text = N_("line %(line)s: the EXIT trap `%(handler)s` runs `%(exit0)s`: when `set -e` "
                  "(line %(errexit)s) stops the launcher because training failed, bash runs the "
                  "trap and its `%(exit0)s` becomes the script's status, so a crashed run ends "
                  "COMPLETED 0:0 and trainbot takes it for a finished one (no diagnosis, no "
                  "resubmit)", errexit=errexit, **said)
    else:
        text = N_("line %(line)s: the EXIT trap `%(handler)s` runs `%(exit0)s`: whatever the "
                  "last command returns, and after the script's own `exit 1`, its `%(exit0)s` "
                  "becomes the script's status, so a crashed run ends COMPLETED 0:0 and "
                  "trainbot takes it for a finished one (no diagnosis, no resubmit)", **said)
    return Finding(
        CHECK_EXIT_TRAP, "fail" if errexit else "warn", line, text,
        N_("keep the status: `trap 'rc=$?; …; exit $rc' EXIT`, or drop the `exit 0` (an EXIT "
           "trap that does not call exit leaves the status as it was)"),
    )
