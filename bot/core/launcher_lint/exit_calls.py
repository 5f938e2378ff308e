"""The call bash makes of a function an `EXIT` trap names (`f() { ((n++)); }; trap f EXIT`):
bash runs the trap's action as the shell exits, so the body runs after the script's last
command, with what the script left its variables at there, not where the body or the `trap`
is in the text (`n=0; …; trap f EXIT; n=5` counts `n` from 5: status 0)."""

from __future__ import annotations

import re

from bot.core.launcher_lint.body_assignments import trap_action
from bot.core.launcher_lint.branch_paths import path_index
from bot.core.launcher_lint.counts_between import find_subshells
from bot.core.launcher_lint.model import Call, Scan

#: A `trap` command (where a word starts) and the conditions named on its line that are the
#: shell's exit (`EXIT`, `SIGEXIT`, `0`).
_TRAP_RE = re.compile(r"(?<![\w$./:-])trap[ \t][^\n]*")
_ON_EXIT_RE = re.compile(r"[ \t]['\"]?(?:SIG)?(?:EXIT|0)['\"]?(?=[ \t;&|)}]|$)", re.I)


def exit_trap_calls(code: str, scan: Scan) -> list[Call]:
    """A call at the script's end of the function the script's one `EXIT` trap names as its
    action (body_assignments.trap_action: "exit"), where bash always sets that trap: at the
    script's level (no function's body, no subshell, no branch or loop around it). None where
    the script sets or resets an `EXIT` trap more than once (which holds at the end is not
    read) or the trap is set on some runs only: its body is then read where it is, as before."""
    if "trap" not in code or not scan.bodies:
        return []
    on_exit = [m for m in _TRAP_RE.finditer(code) if _ON_EXIT_RE.search(m.group())]
    if len(on_exit) != 1:
        return []
    trap = on_exit[0]
    named = [name for name in scan.bodies
             if (m := re.search(r"(?<![\w$./:-])" + re.escape(name) + r"(?![\w:-])",
                                code[trap.start():trap.end()]))
             and trap_action(code, trap.start() + m.start()) == "exit"]
    if len(named) != 1:
        return []
    at = trap.start()
    if any(start <= at < end for start, end in [
            *scan.bodies.values(), *scan.uncalled_bodies, *find_subshells(code), *scan.piped,
            *scan.never_run, *scan.dead_ends]):
        return []
    path_of, _nested = path_index(scan.constructs)
    if path_of(at):
        return []
    end = len(code.rstrip())
    return [Call(end, named[0], scan.opts.errexit)]
