"""The call bash makes of a function an `EXIT` trap names (`f() { ((n++)); }; trap f EXIT`):
bash runs the trap's action as the shell exits, so the body runs after the script's last
command, with what the script left its variables at there, not where the body or the `trap`
is in the text (`n=0; …; trap f EXIT; n=5` counts `n` from 5: status 0). And the bodies
bash never runs: those of functions nothing calls (never_called_bodies)."""

from __future__ import annotations

import re

from bot.core.launcher_lint.body_assignments import trap_action
from bot.core.launcher_lint.branch_paths import path_index
from bot.core.launcher_lint.counts_between import find_subshells
from bot.core.launcher_lint.model import Call, Scan
from bot.core.launcher_lint.trap_actions import always_called, trap_commands
from bot.core.shell_lexer import COMMAND_AT

#: The conditions named on a `trap`'s line that are the shell's exit (`EXIT`, `SIGEXIT`, `0`).
_ON_EXIT_RE = re.compile(r"[ \t]['\"]?(?:SIG)?(?:EXIT|0)['\"]?(?=[ \t;&|)}]|$)", re.I)
#: An `exit` where a command starts (`exit 0`, `then exit 0; fi`, `[ … ] && exit 0`).
_EXIT_RE = re.compile(r"(?m)" + COMMAND_AT + r"(?P<exit>exit)(?![\w-])")
#: `set -e` turned off somewhere (`set +e`, `set +o errexit`, `shopt … errexit`): whether it is
#: on at an earlier `exit` is not read.
_ERREXIT_OFF_RE = re.compile(r"\bset[ \t]+(?:[^\n;&|]*[ \t])?(?:\+[A-Za-z]*e|\+o[ \t]+errexit\b)"
                             r"|\bshopt\b[^\n]*\berrexit\b")


def exit_trap_calls(code: str, scan: Scan) -> list[Call]:
    """A call at the script's end of the one function the script's one `EXIT` trap's action
    always calls (trap_actions.always_called, body_assignments.trap_action: "exit"), where
    bash always sets that trap: at the script's level (no function's body, no subshell, no
    branch or loop around it). None where the script sets or resets an `EXIT` trap more than
    once (which holds at the end is not read) or the trap is set on some runs only: its body
    is then read where it is, as before."""
    if "trap" not in code or not scan.bodies:
        return []
    on_exit = [t for t in trap_commands(code) if _ON_EXIT_RE.search(" " + t.rest)]
    if len(on_exit) != 1:
        return []
    trap = on_exit[0]
    # (the functions its action always calls: `trap f EXIT`, `trap 'f "$tmp"' EXIT`, `trap
    # 'f; echo bye' EXIT`; one only)
    named = {name for call_at, name in always_called(trap, scan.bodies)
             if trap_action(code, call_at) == "exit"}
    if len(named) != 1:
        return []
    name = named.pop()
    at = trap.at
    if any(start <= at < end for start, end in [
            *scan.bodies.values(), *scan.uncalled_bodies, *find_subshells(code), *scan.piped,
            *scan.never_run, *scan.dead_ends]):
        return []
    path_of, _nested = path_index(scan.constructs)
    if path_of(at):
        return []
    end = len(code.rstrip())
    # (… and at each `exit` past the trap bash may run in the script's shell, at its level or
    # in a branch there: the trap runs there too, with what the script left its variables at
    # there; not one in a body, a subshell, a loop, or where `set -e` may be off)
    if not scan.opts.errexit or _ERREXIT_OFF_RE.search(code):
        return [Call(end, name, scan.opts.errexit)]
    outside = [*scan.bodies.values(), *scan.uncalled_bodies, *find_subshells(code),
               *scan.piped, *scan.never_run, *scan.loops.items()]
    earlier = [Call(m.start("exit"), name, True) for m in _EXIT_RE.finditer(code, at)
               if not any(start <= m.start("exit") < stop for start, stop in outside)]
    return [*earlier, Call(end, name, scan.opts.errexit)]



#: What may run a function whose name the script has in no plain word: a command's name built
#: from a parameter, quotes, a backslash or braces (`"$STAGE"`, `se"tup"`, `\setup`,
#: `set{up,}`), after the assignments, redirections and `time` before it
#: (`OMP_NUM_THREADS="8" "$STAGE"`, `>>log "$STAGE"`, `time -p "$STAGE"`); `eval`, `trap`, a
#: sourced file, a listing of the functions (`compgen`, `declare -F`), an exported function
#: another bash runs.
_BUILT_NAME_RE = re.compile(
    r"(?:^|[;&|`]|(?<!\$)\{|(?<![$(])\((?!\()|\$\((?!\()"
    r"|\b(?:then|do|else|if|elif|while|until|time|exec|command|builtin)\b)"
    r"(?:[ \t]+|[ \t]*(?:-p[ \t]+|\w+=(?:\"[^\"\n]*\"|'[^'\n]*'|\S)*[ \t]+"
    r"|\d*[<>]+&?[ \t]*(?:\"[^\"\n]*\"|\S)+[ \t]+)*)"
    r"(?![\w]+\+?=)[^\s;&|()]*[\"'\\${`]"
    r"|\b(?:eval|source|trap|compgen|declare|typeset|export|alias)\b"
    r"|(?:^|[;&|({])[ \t]*\.[ \t]", re.MULTILINE)


def never_called_bodies(code: str, uncalled: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The `uncalled` bodies (model.Scan.uncalled_bodies: their function's name is in no word
    of the script but its definition) where nothing else may run them either: no command
    outside them builds its name (_BUILT_NAME_RE). What they assign then holds nowhere
    (`n=1; setup() { n=0; }`, `setup` never called: `n` stays 1); else none of them."""
    never = [body for body in uncalled if _named_only_where_defined(code, body)]
    if not never:
        return []
    outside, last = [], 0
    for start, end in sorted(never):
        outside.append(code[last:start])
        last = max(last, end)
    outside.append(code[last:])
    return [] if _BUILT_NAME_RE.search("".join(outside)) else sorted(never)


#: The name a function's body is defined for, right before the body (its `{`).
_DEFINED_RE = re.compile(r"([A-Za-z_][\w:-]*)[ \t]*(?:\([ \t]*\))?[ \t\n]*\{[ \t]*\Z")


def _named_only_where_defined(code: str, body: tuple[int, int]) -> bool:
    """Is the function whose body is `body` named nowhere in the script but where a function
    of that name is defined (`name()`, `function name`)? (A body the walk did not read for
    another reason, defined in a branch and called, is not.)"""
    m = _DEFINED_RE.search(code, max(0, body[0] - 120), body[0])
    if m is None:
        return False
    name = m.group(1)
    for word in re.finditer(r"(?<![\w$./:-])" + re.escape(name) + r"(?![\w:-])", code):
        if not (re.match(r"[ \t]*\(", code[word.end():word.end() + 40])
                or re.search(r"\bfunction[ \t]+\Z", code[max(0, word.start() - 20):word.start()])):
            return False
    return True

