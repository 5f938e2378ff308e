"""What ends the shell a list of the launcher lint's walk (bot.core.launcher_lint.engine) runs
in: an `exit` bash always runs (alone, or after `&&` / `||` of commands whose status bash's
semantics decide: `true && exit 0`), or an `exec` of a command (it replaces the shell; one of
redirections only, `exec > log 2>&1`, does not). Past one, nothing of that text runs; an `if` /
`case` each branch of which ends the shell, one of them running whenever it is reached (an
`else`, `if true`, a `*)`), ends it as well, as does a loop whose body runs and ends it on its
first pass (branches.Branches.exits_whenever_run), and a `{ …; exit; }` group whose body's walk
met one (group_ends_shell)."""

from __future__ import annotations

import functools
import re

from bot.core.launcher_lint.syntax import REDIRECTION_RE, always_run, runs_after, runs_builtin
from bot.core.shell_lexer import Memo, group_end, split_top_level

#: `exec` and what follows it.
_EXEC_RE = re.compile(r"exec(?:[ \t]+(.*))?", re.S)
#: A function's name alone on its line, its body's `{` on the next (`f()`, `function f`).
_FUNCTION_HEAD_RE = re.compile(r"(?:function\s+)?[A-Za-z_][\w:-]*\s*\(\s*\)|function\s+\S+")
#: A function the script defines named `exit`, `exec` or `return` (bash would call it).
_REDEFINED_RE = re.compile(r"(?:^|[\s;&|({])(?:function\s+(?:exit|exec|return)(?![\w:-])"
                           r"|(?:exit|exec|return)\s*\(\s*\))")


def ends_shell(command: str, in_function: bool = False) -> bool:
    """Is `command` (one simple command) an `exit` (syntax.runs_builtin), or an `exec` of a command?
    In a function's
    body (`in_function`), a `return` too: it ends the body's text as `exit` ends the script's
    (outside one bash refuses it and goes on)."""
    if runs_builtin(command, "exit") or in_function and runs_builtin(command, "return"):
        return True
    m = _EXEC_RE.fullmatch(command)
    return m is not None and bool(REDIRECTION_RE.sub("", m.group(1) or "").strip())


def ends_script_shell(command: str, text: str) -> bool:
    """Is `command` (one simple command) an `exit` / an `exec` of a command (ends_shell, not a
    `return`), in the script `text` that defines no function of that name?"""
    return ends_shell(command) and not _redefined(text)


def ends_function_body(command: str, text: str) -> bool:
    """Is `command` (one simple command) a `return`, in the script `text` that defines no
    function of that name?"""
    return runs_builtin(command, "return") and not _redefined(text)



def certainly_ends_shell(command: str, off: int, memo: Memo, text: str,
                         in_function: bool = False) -> bool:
    """Is `command` (an and-or list at `off`, run in the foreground) one holding an `exit` /
    `exec` (ends_shell; a `return` too `in_function`, which ends the function's body) that
    bash always runs (always_run: alone, first, or after `&&` / `||` of commands whose status
    bash's semantics decide: `true && exit 0`, `exit 0 || n=1`), in the script `text` that
    defines no function of that name?"""
    if "exit" not in command and "exec" not in command and not (
            in_function and "return" in command):
        return False
    elements = split_top_level(command, off, ("&&", "||"), memo)
    return any(ends_shell(element.strip(), in_function)
               for element, _o in always_run(elements, text)) and not _redefined(text)


def may_end_shell(command: str, off: int, memo: Memo, text: str) -> bool:
    """Is `command` (an and-or list at `off`) one whose last element is an `exit` / `exec`
    (ends_shell) bash may run or skip, as the commands before its `&&` / `||` say (`[ … ] &&
    exit 0`), in the script `text` that defines no function of that name?"""
    if "exit" not in command and "exec" not in command:
        return False
    *heads, (last, _o, _op) = split_top_level(command, off, ("&&", "||"), memo)
    return (bool(heads) and ends_shell(last.strip()) and runs_after(heads, text) is None
            and not _redefined(text))


def group_ends_shell(command: str, off: int, memo: Memo, ended: set[int], before: str) -> bool:
    """Is `command` (a list at `off` run in the foreground, after its keywords: `then { …;
    exit 1; }`) a `{ … }` group alone, redirections after it or none (`{ …; } > log`), whose
    body's walk met an `exit` bash always runs there (`ended`: where each text the walk read
    to such an exit starts; a group's body starts one past its `{`)? Not the body of a
    function whose name is on the line `before` it (`f()` then `{ exit 1; }`: run by a call)."""
    if not command.startswith("{") or command[1:2] not in (" ", "\t", "\n") or (
            off + 1 not in ended) or _FUNCTION_HEAD_RE.fullmatch(before.strip()):
        return False
    end = group_end(command, 0, off, memo)
    return not REDIRECTION_RE.sub("", command[end:]).strip()


def and_or_group_ends_shell(command: str, off: int, memo: Memo, ended: set[int], text: str
                            ) -> str | None:
    """Is `command` (an and-or list at `off`, run in the foreground) one holding a `{ … }`
    group that ends the shell (group_ends_shell: `[ … ] && { …; exit 0; }`)? "always" when bash
    runs one whenever it reaches the list (always_run: `true && { exit 0; }`, `{ exit 0; } ||
    n=1`), "maybe" when the last element is one bash may run or skip, as for `[ … ] && exit 0`
    (may_end_shell); None otherwise (no such group, or one bash never runs)."""
    elements = split_top_level(command, off, ("&&", "||"), memo)

    def ends(element: str, at: int) -> bool:
        group = element.lstrip()
        return group_ends_shell(group, at + len(element) - len(group), memo, ended, "")

    if any(ends(element, at) for element, at in always_run(elements, text)):
        return "always"
    *heads, (last, last_off, _op) = elements
    if not heads or not ends(last, last_off):
        return None
    runs = runs_after(heads, text)
    return "always" if runs is True else "maybe" if runs is None else None


@functools.lru_cache(maxsize=8)
def _redefined(text: str) -> bool:
    """Does the script `text` define a function named `exit` or `exec`? Read once per
    script."""
    return _REDEFINED_RE.search(text) is not None
