"""One reading of a `trap` command for the launcher lint: its action and the conditions it is
set for (trap_commands), and the functions bash calls whenever it runs the action
(always_called): `trap h USR1`, `trap 'h "$1"' TERM`, `trap "echo 'got'; h" USR1`, `trap
'cleanup "$tmp"' EXIT` all call `h` / `cleanup` each time their trap runs; `trap '[ -n "$X" ] &&
h' USR1`, `trap 'true || h' USR1`, `trap '(h)' USR1` may not, or not in the script's shell.
The calls at a self-sent `kill` (signal_calls), at the exit (exit_calls) and the names in an
action (body_assignments.trap_action) are all read here."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from bot.core.shell_lexer import split_top_level

#: A `trap` word (where a word starts) and the rest of its line.
_TRAP_WORD_RE = re.compile(r"(?m)(?<![\w$./:-])trap[ \t]+(?P<rest>[^\n]*)")
#: What comes right before a `trap` that is a command's name, on its line (after `;`, `&&`,
#: `{`, `then`, `do`, `else`: `if …; then trap f USR1; fi`).
_COMMAND_BEFORE_RE = re.compile(r"(?m)(?:^|[;&|({]|\bthen|\bdo|\belse)[ \t]*\Z")
#: A trap's action and its conditions, after `trap `: one plain word (`h`, `-`), or a quoted
#: one (`'h "$1"'`, `"echo 'got'; h"`, `''`), after an optional `--`; then the conditions
#: (group `on`) up to the command's end.
_ACTION_RE = re.compile(
    r"(?:--[ \t]+)?(?:(?P<q>[\"'])(?P<quoted>(?:(?!(?P=q))[^\n])*)(?P=q)"
    r"|(?P<word>[^\s;&|()'\"]+))(?P<on>(?:[ \t]+[\w+-]+)+)[ \t]*(?=[;&|)}]|\Z)")
#: The operators of an action's lists: a command after `;` or a line break runs whenever the
#: action runs, one after `&&` / `||` on some runs, one before `|` / `&` in a subshell.
_LIST_OPS = ("\n", ";", "&&", "||", "|", "&")
#: A command's name: a word alone or before a blank (`h`, `h "$1"`; not `FOO=1 h`, `"h"`,
#: `(h)`, `{ h; }`).
_NAME_RE = re.compile(r"[ \t]*(?P<name>[A-Za-z_][\w:-]*)(?=[ \t]|\Z)")
#: What in an action may set a variable itself (`h; n=3`, `((n++))`, `read -r n`, `eval …`):
#: the calls of such an action are not read, since what it sets around them is not.
_SETS_RE = re.compile(
    r"(?:^|(?<=[\s;&|({]))(?:[A-Za-z_]\w*(?:\[[^]]*\])?\+?=|\(\(|(?:let|read|unset|declare"
    r"|typeset|export|local|readonly|mapfile|readarray|shift|source|eval|getopts)(?![\w-])"
    r"|printf[ \t]+-v|\.[ \t])")


@dataclass(frozen=True)
class Trap:
    """A `trap` word of the script: where it starts (`at`), the rest of its line (`rest`, from
    `rest_at`), whether it is a command's name (`command`), and, where its action and
    conditions are read, the action's text inside its quotes (`action`, from `action_at`; None
    where not read) and the conditions, by name without `SIG` (`on`)."""

    at: int
    rest: str
    rest_at: int
    command: bool
    action: str | None
    action_at: int
    on: frozenset[str]


def trap_commands(code: str) -> list[Trap]:
    """Every `trap` word of `code`, in order, with its action and conditions where they are
    read (Trap)."""
    found: list[Trap] = []
    for m in _TRAP_WORD_RE.finditer(code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        command = bool(_COMMAND_BEFORE_RE.search(code, line_start, m.start()))
        action, action_at, on = None, m.start("rest"), frozenset[str]()
        if command and (a := _ACTION_RE.match(m.group("rest"))):
            group = "quoted" if a.group("q") else "word"
            action, action_at = a.group(group), m.start("rest") + a.start(group)
            on = frozenset(w.upper().removeprefix("SIG") for w in a.group("on").split())
        found.append(Trap(m.start(), m.group("rest"), m.start("rest"), command, action,
                          action_at, on))
    return found


def always_called(trap: Trap, names: Collection[str]) -> list[tuple[int, str]]:
    """The calls of the functions `names` that bash makes whenever it runs `trap`'s action, in
    order, each with where its name is: the name of a command of the action's list run after
    no `&&` / `||` and in no pipeline or background list (`h`, `h "$1"`, `echo 'got'; h`,
    `h || true`), up to an `exit` or `return` (past which bash may run none). None in an
    action that may set a variable itself (_SETS_RE: `h; n=3`): what it sets is not read."""
    if trap.action is None or _SETS_RE.search(trap.action):
        return []
    calls: list[tuple[int, str]] = []
    before = ""
    for piece, at, after in split_top_level(trap.action, trap.action_at, _LIST_OPS, {}):
        m = _NAME_RE.match(piece)
        if m and m.group("name") in ("exit", "return"):
            break
        if (m and m.group("name") in names and before in ("", "\n", ";")
                and after not in ("|", "&")):
            calls.append((at + m.start("name"), m.group("name")))
        before = after
    return calls
