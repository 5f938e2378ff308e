"""The status of what the launcher lint's walk (bot.core.launcher_lint.engine) reads, where the
`&&` / `||` after it or `set -e` takes it (CompoundStatus, mixed into the walk): a compound's at
its closing keyword (an `if`'s / `case`'s from its branches' ends, a loop's from its body's, a
`{ … }` group's body's last list: syntax.constant_status), negated where a `!` negates it (`! if
…; fi`, `! for …; done | true`); a branch's or loop body's last list's; a list's that always
fails, which ends the script where `set -e` applies (not in a condition, a function, nor a
compound before `&&` / `||`); and a pipeline a `!` negates (`! ((n++))`, `! { set +e; }`), which
bash runs exempt from `set -e`, its counters tested."""

from __future__ import annotations

import re
from typing import Protocol

from bot.core.launcher_lint.arith_commands import and_or_ariths
from bot.core.launcher_lint.branches import Branches
from bot.core.launcher_lint.loop_exits import leaves_with_0
from bot.core.launcher_lint.model import Arith, Opts
from bot.core.launcher_lint.options import (
    GROUP_BEFORE_AND_OR_RE,
    NEGATED_AND_OR_GROUP_RE,
    OPTION_AFTER_AND_OR_RE,
)
from bot.core.launcher_lint.syntax import (
    REDIRECTION_RE,
    constant_status,
    loop_status,
    past_negation,
    runs_after,
)
from bot.core.shell_lexer import Memo, group_end, split_top_level

#: What a command that always fails holds (syntax.constant_status): `false`, a `( … )`
#: subshell, a `return` (refused outside a function).
_MAY_FAIL_RE = re.compile(r"\b(?:false|return)\b|\(")
#: How a list starts whose status syntax.constant_status may know (`true`, `:`, `false`, `[`,
#: `test`, `!`, `return`, a `{ … }` group, a `( … )` subshell), or one that leaves a loop
#: (`break`, `continue`), or one with a pipe in it (a pipeline's status).
_MAY_BE_CONSTANT_RE = re.compile(r"(?:true|:|false|\[|test|!|return|break|continue|\{|\()|[^|]*\|")


class _Walk(Protocol):
    """What CompoundStatus uses of the walk it is mixed into (engine._Analyzer): the text it
    reads and the original (syntax.constant_status reads the script's own definitions), the
    lexer's memo, the options where it is, how deep it is and in which function, the texts
    where `set -e` applies as in the script's own and the compounds before `&&` / `||`, the
    functions whose body ends the shell, and the counters it collects."""

    text: str
    script_text: str
    memo: Memo
    opts: Opts
    depth: int
    function: str | None
    errexit_texts: set[int]
    and_or_compounds: set[tuple[int, int]]
    ending_bodies: dict[str, str]
    arith: list[Arith]
    later_pass_of: int | None

    def _ending_call(self, lst: str, off: int) -> str | None: ...

    def _and_or_options(self, lst: str, off: int, in_condition: bool = False) -> None: ...

    def _errexit_applies(self, frames: list[Branches], base: int) -> bool: ...

    def _always_fails(self, lst: str, off: int) -> bool: ...

    def _pipefail(self, piped: bool = True) -> bool | None: ...


class CompoundStatus:
    """The walk's reading of compound and negated statuses, mixed into engine._Analyzer."""

    def _closed_status(self: _Walk, closing: Branches, step: str, off: int) -> bool | None:
        """The status of the compound `closing` that the list at `off` closes with `step`
        (`done`: syntax.loop_status; `fi` / `esac`: Branches.status), negated where a `!`
        negates it; None where bash's semantics do not decide it."""
        status = loop_status(self.text, closing.key[0], off, closing.body_status
                             ) if step == "done" else closing.status
        return status if status is None or not closing.negated else not status

    def _negated_pipeline_status(self: _Walk, pipeline: str) -> bool | None:
        """The status of `pipeline`, the rest of a piped compound a `!` negates (`! for …; done
        | true`): its constant status under the pipefail known there, negated; None where it is
        not known."""
        status = constant_status(pipeline, self.script_text,
                                 outside_function=self.function is None,
                                 pipefail=self._pipefail())
        return None if status is None else not status

    def _fails_under_errexit(self: _Walk, frames: list[Branches], lst: str, off: int, base: int
                             ) -> bool:
        """Is `lst` (a list at `off` of the text the walk reads from `base`) one whose status
        bash's semantics say is a failure (syntax.constant_status: `false`, `( exit 3 )`, `true
        | false`, a `return`, which bash refuses outside a function with status 2; the last
        command of an and-or list bash always runs, `true && false`), where `set -e` stops on
        it (_errexit_applies)? Not negated (`! true`: `set -e` ignores it). Or a plain call of
        a function whose body such a command ends (FunctionBodies._ending_call: "errexit";
        under `set -e` bash runs the body as where it is called). Bash ends the shell there as
        on an `exit` (in a compound piped or in the background, its subshell)."""
        if not (_MAY_FAIL_RE.search(lst) or self.ending_bodies) or not self._errexit_applies(
                frames, base):
            return False
        return self._always_fails(lst, off) or bool(self.ending_bodies) and self._ending_call(
            lst, off) == "errexit"

    def _last_status(self: _Walk, frame: Branches, steps: list[tuple[str, str]], rest: str,
                     closed_status: bool | None) -> bool | None:
        """The status of `rest`, the command after the keywords (`steps`) of a list of the
        branch or loop body `frame` is reading, as its last list: a closer's alone (`fi`),
        that of the compound it closes (`closed_status`); a `case` pattern's alone, 0 (an
        empty branch leaves with 0, and a command after it on later lists decides); a
        `break` / `continue` in a loop's body, 0; else syntax.constant_status's, read only
        for a list it may know (_MAY_BE_CONSTANT_RE)."""
        command = rest.strip()
        if not command:
            return (True if steps[-1][0] == "branch" else closed_status) if steps else None
        if not _MAY_BE_CONSTANT_RE.match(command):
            return None
        if frame.kind in ("while", "for") and leaves_with_0(command):
            return True
        return constant_status(command, self.script_text, outside_function=self.function is None,
                               pipefail=self._pipefail("|" in command))

    def _always_fails(self: _Walk, lst: str, off: int) -> bool:
        """Is the and-or list `lst` (at `off`) one whose status bash's semantics say is a
        failure (_fails_under_errexit's, wherever `set -e` applies or not)?"""
        if not _MAY_FAIL_RE.search(lst):
            return False
        *heads, (last, _o, _op) = split_top_level(lst, off, ("&&", "||"), self.memo)
        pipefail = self._pipefail("|" in lst)
        return (not past_negation(last.lstrip())[1] and runs_after(
            heads, self.script_text, pipefail) is True and constant_status(
                last, self.script_text, outside_function=True, pipefail=pipefail) is False)

    def _pipefail(self: _Walk, piped: bool = True) -> bool | None:
        """Is `pipefail` on (True) or off (False) on every path that reaches where the walk
        is; None where it is on on some only, or in a function's body (whose options are its
        call's), or where no pipeline is asked about (`piped` False: it says nothing then)."""
        return None if self.function is not None or not piped else self.opts.pipefail_known

    def _errexit_applies(self: _Walk, frames: list[Branches], base: int) -> bool:
        """Does `set -e` stop on a failing command where the walk is, in the text it reads from
        `base`: the script's own text, or a `{ … }` group's body read where it applies
        (errexit_texts), not in a function, where it is on on every path; not in a condition,
        nor in a compound whose closing keyword is before `&&` / `||` (`fi || true`: bash
        ignores `set -e` in all of it; syntax.and_or_compounds)."""
        if not ((self.depth == 1 or base in self.errexit_texts) and self.function is None
                and self.opts.errexit and not self.opts.errexit_partial):
            return False
        return not any(f.in_condition or f.key in self.and_or_compounds for f in frames)

    def _note_errexit_group(self: _Walk, lst: str, off: int) -> None:
        """The and-or list `lst` (at `off`, where `set -e` applies: _errexit_applies) whose
        last element is a `{ … }` group, redirections after it or none: `set -e` applies in
        its body as here (errexit_texts), bash running it or not."""
        last, last_off, _op = split_top_level(lst, off, ("&&", "||"), self.memo)[-1]
        group = last.lstrip()
        if group.startswith("{") and group[1:2] in (" ", "\t", "\n"):
            group_off = last_off + len(last) - len(group)
            end = group_end(group, 0, group_off, self.memo)
            if not REDIRECTION_RE.sub("", group[end:]).strip():
                self.errexit_texts.add(group_off + 1)

    def _negated(self: _Walk, lst: str, off: int) -> None:
        """An and-or list whose first pipeline a `!` negates (`! ((n++))`, `! { set +e; … }`):
        bash ignores `set -e` in that pipeline, whose status it flips (syntax.constant_status
        reads it so), and runs it in the script's shell: its counters count, tested
        (and_or_ariths), and a negated `{ … }` group's body sets the options past it, as a
        group before `&&` / `||` does (_and_or_options)."""
        self.arith.extend(and_or_ariths(lst, off, self.memo, self.later_pass_of,
                                        nounset=self.opts.nounset,
                                        errexit_off=not self.opts.errexit))
        if (OPTION_AFTER_AND_OR_RE.search(lst) or GROUP_BEFORE_AND_OR_RE.search(lst)
                or NEGATED_AND_OR_GROUP_RE.search(lst)):
            self._and_or_options(lst, off)
