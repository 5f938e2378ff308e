"""The calls bash makes of a signal trap's function at a `kill` the script sends its own shell
(`h() { n=5; }; trap h USR1; kill -USR1 $$`): bash runs the trap's action right after the
`kill`, in the script's shell, so what the body assigns holds past it, a counter in it counts
there, and an `exit` in it ends the script there."""

from __future__ import annotations

import re

from bot.core.launcher_lint.body_assignments import trap_action
from bot.core.launcher_lint.branch_paths import path_index
from bot.core.launcher_lint.counts_between import find_subshells
from bot.core.launcher_lint.model import Call, Scan
from bot.core.launcher_lint.trap_actions import always_called, trap_commands
from bot.core.shell_lexer import Memo, group_end

#: A `kill` the script sends its own shell, where a command starts, by a signal's name (`kill
#: -USR1 $$`, `kill -s USR1 "$$"`, `kill -SIGTERM ${$}`; a number is not read), as a command of
#: its own (not `&`, not in a pipeline).
_SELF_KILL_RE = re.compile(
    r"(?m)(?:^|(?<=[;{])|(?<=&&)|(?<=\|\|))[ \t]*kill[ \t]+(?:-s[ \t]+|-)(?:SIG)?"
    r"(?P<sig>[A-Z][A-Z0-9+-]*)[ \t]+(?:\$\$|\"\$\$\"|\$\{\$\}|\"\$\{\$\}\")[ \t]*(?=;(?!;)|\n|\Z)")
#: The signals whose trap bash does not run at a `kill` the script sends itself: `CHLD` (run
#: when a child ends, not at a signal sent), `KILL` and `STOP` (no trap can catch them).
_NOT_RUN_AT_KILL = {"CHLD", "CLD", "KILL", "STOP"}
#: A `coproc` and the `{` / `(` of its group (`coproc { …; }`, `coproc NAME ( … )`): bash runs
#: the group in the background, in a subshell of its own.
_COPROC_RE = re.compile(r"(?<![\w-])coproc[ \t]+(?:[A-Za-z_]\w*[ \t]+)?(?=[{(])")


def _signals(words: str) -> set[str]:
    return {w.strip("\"'").upper().removeprefix("SIG") for w in words.split()}


def signal_calls(code: str, scan: Scan) -> tuple[list[Call], list[tuple[int, int]]]:
    """The calls bash makes of a signal trap's function at a `kill` the script sends itself
    (`h() { n=5; }; trap h USR1; kill -USR1 $$`: bash runs `h` right after the `kill`, and its
    `n=5` holds past it), and where nothing runs past such a call whose body always runs into
    an `exit` (model.Scan.dead_ends). Only where the `trap` and the `kill` are both at the
    script's level, bash always runs them (no branch, loop, body or subshell around them), the
    `trap` before the `kill`, no other `trap` names that signal (or a number), and `kill` is no
    function or alias of the script's; elsewhere the trap is read as running on no normal run,
    as before."""
    if "kill" not in code or "trap" not in code or re.search(
            r"(?<![\w-])kill[ \t]*\(|\balias\b|\bfunction[ \t]+kill\b|\benable\b", code):
        return [], []
    kills = list(_SELF_KILL_RE.finditer(code))
    if not kills:
        return [], []
    traps = trap_commands(code)
    if any(re.search(r"[ \t]['\"]?\d+['\"]?(?=[ \t;&|]|$)", t.rest) for t in traps):
        return [], []  # (a signal by its number: which it is, is not read)
    memo: Memo = {}
    coprocs: list[tuple[int, int]] = []
    for co in _COPROC_RE.finditer(code):
        try:
            coprocs.append((co.start(), group_end(code, co.end(), 0, memo)))
        except Exception:  # noqa: BLE001 (an unclosed group: none read)
            return [], []
    outside = [*scan.bodies.values(), *scan.uncalled_bodies, *find_subshells(code),
               *scan.piped, *scan.never_run, *scan.dead_ends, *coprocs]
    path_of, _nested = path_index(scan.constructs)

    def always_here(at: int) -> bool:
        return not any(start <= at < end for start, end in outside) and not path_of(at)

    calls: list[Call] = []
    never: list[tuple[int, int]] = []
    for kill in kills:
        sig = kill.group("sig").upper()
        if sig in _NOT_RUN_AT_KILL:
            continue
        setting = [t for t in traps if sig in _signals(t.rest)]
        if len(setting) != 1 or setting[0].at > kill.start():
            continue
        trap = setting[0]
        # (the functions its action always calls, trap_actions.always_called: `trap h USR1`,
        # `trap 'h "$1"' TERM`, `trap "echo 'got'; h" USR1`; a name elsewhere in it, `trap
        # 'true || h' USR1`, `trap '(h)' USR1`, is not read as a call)
        handlers = [(call_at, name) for call_at, name in always_called(trap, scan.bodies)
                    if trap_action(code, call_at) == "signal"]
        at = kill.start() + len(kill.group()) - len(kill.group().lstrip())
        if not handlers or not always_here(trap.at) or not always_here(at):
            continue
        for _call_at, name in handlers:
            # (read as a call whose status is tested: a count in the handler that may stop
            # bash there, `[ -f x ] && ((n++))`, is not judged at the `kill`, a miss rather
            # than a fail)
            calls.append(Call(at, name, False, tested=True))
            start, _end = scan.bodies[name]
            if any(s == start for s, _e in scan.dead_ends):  # (its body always ends the shell)
                never.append((kill.end(), len(code)))
                break
    return calls, never


def in_order(calls: list[Call], more: list[Call]) -> list[Call]:
    """`calls` (the walk's, in its order) with each of `more` after the last of them made
    before it in the text (at the end where none is)."""
    merged = list(calls)
    for call in more:
        after = max((i + 1 for i, c in enumerate(merged) if c.offset < call.offset), default=0)
        merged.insert(after, call)
    return merged
