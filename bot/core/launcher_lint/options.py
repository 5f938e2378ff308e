"""What a `set` / `shopt` command does to the options the launcher lint's walk
(bot.core.launcher_lint.engine) follows: its words, read as bash reads them (apply_option_words),
and where in an and-or list it runs (OptionWalk, mixed into the walk)."""

from __future__ import annotations

import re
from copy import copy
from dataclasses import replace
from typing import Protocol

from bot.core.launcher_lint.branches import Marks
from bot.core.launcher_lint.model import Call, Hit, Opts, either
from bot.core.launcher_lint.syntax import first_word, past_negation
from bot.core.shell_lexer import Memo, group_end, shell_words, split_top_level

#: A `{ … }` group a `!` negates (`! { set +e; }`): bash stops in none of its commands.
NEGATED_GROUP_RE = re.compile(r"!\s+\{\s")

#: A `set` / `shopt` after an and-or list's `&&` / `||` (`[ -n "$STRICT" ] && set -e`), or one
#: a `!` negates (`! set -e`: bash runs it all the same).
OPTION_AFTER_AND_OR_RE = re.compile(r"(?:&&|\|\||^[ \t]*!|(?<=\s)!)\s*(?:set|shopt)\s")

#: A `{ … }` group before an and-or list's `&&` / `||` (`{ set -e; } && echo ok`).
GROUP_BEFORE_AND_OR_RE = re.compile(r"\}\s*(?:&&|\|\|)")

#: A `{ … }` group a `!` negates, first in an and-or list or after its `&&` / `||` (`! { set +e;
#: }`, `[ -f x ] && ! { …; }`).
NEGATED_AND_OR_GROUP_RE = re.compile(r"(?:^|&&|\|\|)\s*" + NEGATED_GROUP_RE.pattern)

#: A word of `set` that turns options on or off (`-e`, `+u`, `-euo`).
_SET_FLAGS_RE = re.compile(r"[-+][A-Za-z]+")


def apply_option_words(opts: Opts, words: list[str], line: int) -> bool:
    """Change `opts` as the `set` / `shopt` command of `words` (on `line`) does: of `set` the
    words before the first that is no option (`set -- -u`, `set -e x -u`: the positional
    parameters), of `shopt -s` / `-u` the options it names that the walk follows. True when
    it turns `set -u` on."""
    nounset_on = False
    if words[0] == "set":
        i = 1
        while i < len(words):
            w = words[i]
            if w in ("-o", "+o") and i + 1 < len(words):
                nounset_on |= set_option(opts, words[i + 1], w == "-o", line)
                i += 2
                continue
            if not _SET_FLAGS_RE.fullmatch(w):
                break  # `--`, `-` or an argument: the rest are positional parameters
            on = w[0] == "-"
            if "e" in w:
                set_errexit(opts, on, line)
            if "u" in w:
                opts.nounset = on
                nounset_on |= on
            if "o" in w and i + 1 < len(words):
                nounset_on |= set_option(opts, words[i + 1], on, line)
                i += 1
            i += 1
    elif words[0] == "shopt" and len(words) >= 3 and words[1] in ("-s", "-u"):
        on = words[1] == "-s"
        for name in words[2:]:
            if name == "nullglob":
                opts.nullglob = on
            elif name == "inherit_errexit":
                opts.inherit_errexit = on
            elif name == "lastpipe":
                opts.lastpipe, opts.lastpipe_partial = on, False
    return nounset_on


def set_option(opts: Opts, name: str, on: bool, line: int) -> bool:
    """`set -o NAME` (`on`) / `set +o NAME` on `line`; True when it turns `set -u` on."""
    if name == "errexit":
        set_errexit(opts, on, line)
    elif name == "pipefail":
        if on and not opts.pipefail_sure:
            opts.pipefail_line = line
        elif not on and opts.pipefail:
            opts.pipefail_off_line = line
        opts.pipefail, opts.pipefail_partial = on, False
    elif name == "nounset":
        opts.nounset = on
        return on
    return False


def set_errexit(opts: Opts, on: bool, line: int) -> None:
    """`set -e` (`on`) / `set +e` on `line`: where it first came on, where it last went off."""
    if not on and opts.errexit:
        opts.errexit_off_line = line
    opts.errexit, opts.errexit_partial, opts.errexit_in_body = on, False, on
    opts.errexit_in_body_partial = False
    if on and opts.errexit_line is None:
        opts.errexit_line = line


class _Walk(Protocol):
    """What OptionWalk uses of the walk it is mixed into (engine._Analyzer)."""

    opts: Opts
    memo: Memo
    nounset_line: int | None
    calls: list[Call]

    def line_of(self, offset: int) -> int: ...

    def script(self, text: str, base: int, status_only: bool = False) -> list[Hit]: ...

    def marks(self, hits: list[Hit]) -> Marks: ...

    def drop(self, marks: Marks, hits: list[Hit], everything: bool) -> None: ...

    def _track_options(self, lst: str, off: int) -> None: ...

    def _exempt_group(self, group: str, off: int) -> None: ...


class OptionWalk:
    """The walk's reading of the `set` / `shopt` commands of an and-or list, mixed into
    engine._Analyzer."""

    nounset_line: int | None  # the line `set -u` first came on (the walk's)

    def _track_options(self: _Walk, lst: str, off: int) -> None:
        """The options the `set` / `shopt` command that starts `lst` (an and-or list at `off`)
        turns on and off: its own words only, up to its `&&` / `||` (in `set -e && grep -u x`,
        `-u` is grep's), and of `set` those before the first that is no option (`set -- -u`,
        `set -e x -u`: the positional parameters); piped (`set -e | cat`), it runs in a
        subshell and changes nothing."""
        command, at, _op = split_top_level(lst, off, ("&&", "||"), self.memo)[0]
        if len(split_top_level(command, at, ("|",), self.memo)) > 1:
            return
        line = self.line_of(off)
        if apply_option_words(self.opts, shell_words(command, at, self.memo), line) and (
                self.nounset_line is None):
            self.nounset_line = line

    def _and_or_options(self: _Walk, lst: str, off: int, in_condition: bool = False) -> None:
        """What an and-or list's commands before its last (and the last, when it is a `set`)
        do to the options, in order: a `set` / `shopt` after `&&` / `||` (`[ -n "$STRICT" ] &&
        set -e`), and the commands of a `{ … }` group before `&&` / `||` (`{ set -e; } && echo
        ok`) or a `!` negates (`! { set +e; }`, anywhere in the list), which run in the
        script's shell, exempt from `set -e` (bash stops in no command
        of an and-or list but the last) and not from `set -u`. Bash runs each after the first
        or not, so past it the options are `either` of both; a group last in the list is read
        where its status is (_and_or, _outside_errexit), but in an `if` / `while` condition
        (`in_condition`: `if { set -e; false; }; then`), where no command stops on `set -e`,
        as one before `&&` / `||`."""
        elements = split_top_level(lst, off, ("&&", "||"), self.memo)
        for i, (pipeline, p_off, op) in enumerate(elements):
            text = pipeline.lstrip()
            at = p_off + len(pipeline) - len(text)
            command, negated_option = past_negation(text)
            if (i or negated_option) and first_word(command) in ("set", "shopt"):
                before = copy(self.opts)  # (`! set -e`: run, its status negated)
                self._track_options(command, at + len(text) - len(command))
            elif (negated := NEGATED_GROUP_RE.match(text)) or (op or in_condition) and (
                    text.startswith("{") and text[1:2] in (" ", "\t", "\n")):
                if len(split_top_level(text, at, ("|",), self.memo)) > 1:
                    continue  # `{ … } | tee log && …`: a pipeline's group runs in a subshell
                before = copy(self.opts)
                bang = negated.end() - 2 if negated else 0  # (`! { …; }`: the group)
                self._exempt_group(text[bang:], at + bang)
            else:
                continue
            if i:
                self.opts = either([before, self.opts])

    def _exempt_group(self: _Walk, group: str, off: int) -> None:
        """Follow the `{ … }` group `group` (at `off`) that bash does not stop in on `set -e`:
        the options it leaves, and what it reads under `set -u`, but not what only `set -e`
        makes a finding: its calls are tested (`{ f; } || true`: `set -e` is off in f's
        body)."""
        marks = self.marks([])
        end = group_end(group, 0, off, self.memo)
        first_call = len(self.calls)
        self.script(group[1 : end - 1], off + 1)
        self.calls[first_call:] = [replace(c, errexit=False, errexit_partial=False, tested=True)
                                   for c in self.calls[first_call:]]
        self.drop(marks, [], everything=False)
