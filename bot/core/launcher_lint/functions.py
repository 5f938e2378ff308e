"""How the launcher lint's walk (bot.core.launcher_lint.engine) reads the script's functions:
a body where it is defined, under the options a call will run it with (`set -e` on if the
script turns it on at all; only its last command where it is only called as `$(f)`), and
again at each call under `set -u` of one called only where `set -e` is off or defined where
`set -u` was off, where an unbound variable in it stops bash (model.Arith.called_at). Where a
counter in a body is judged (at the calls the walk records) is bot.core.launcher_lint.calls's."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from itertools import takewhile
from typing import Protocol

from bot.core.launcher_lint.branches import Marks
from bot.core.launcher_lint.calls import call_sites, called_command
from bot.core.launcher_lint.model import Arith, Call, Construct, Cover, Hit, Opts, with_
from bot.core.launcher_lint.syntax import (
    always_run,
    condition_command,
    first_word,
    keyword_prefix,
    lists_and_branches,
    loop_leaves_at,
)
from bot.core.shell_lexer import (
    CASE_BRANCH_ENDS,
    COMMAND_AT,
    Memo,
    group_end,
    shell_words,
    split_top_level,
)

#: A function definition starting a command, its name and its body's opening `{` / `(`
#: (FUNC_RE: `f() {`, `function f() {`; FUNC_RE2: `function f {`); FUNC_NAME_RE: anywhere.
FUNC_RE = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w:-]*)\s*\(\s*\)\s*(\{|\()")
FUNC_NAME_RE = re.compile(
    r"(?:function\s+([A-Za-z_][\w:-]*)\s*(?:\(\s*\)\s*)?|([A-Za-z_][\w:-]*)\s*\(\s*\)\s*)[{(]"
)
FUNC_RE2 = re.compile(r"^\s*function\s+([A-Za-z_][\w:-]*)\s*(\{|\()")
#: A `return` where a command starts (`return`, `return 0`, `[ … ] && return`), a
#: condition's first among them (`if return; then`, `elif ! return`).
_RETURN_RE = re.compile(r"(?:" + COMMAND_AT + r"|(?:(?<=\bif)|(?<=\belif)|(?<=\bwhile)"
                        r"|(?<=\buntil)|(?<=\s!))[ \t]+)(return)(?![\w:-])")


class _Walk(Protocol):
    """What FunctionBodies uses of the walk it is mixed into (engine._Analyzer)."""

    function_calls: dict[str, set[str]]
    piped_calls: dict[str, int]
    function_vars: dict[str, str]
    memo: Memo
    bodies: dict[str, tuple[int, int]]
    uncalled_bodies: list[tuple[int, int]]
    opts: Opts
    function: str | None
    later_errexit: bool
    guarded_bodies: dict[str, tuple[str, int]]
    guarded_budget: int
    ran_without_nounset: set[str]
    arith: list[Arith]
    calls: list[Call]
    text: str
    ending_bodies: dict[str, str]
    leaving_bodies: dict[str, bool]
    script_text: str

    def script(self, text: str, base: int, status_only: bool = False) -> list[Hit]: ...

    def marks(self, hits: list[Hit]) -> Marks: ...

    def _always_fails(self, lst: str, off: int) -> bool: ...

    def _ending_call(self, lst: str, off: int) -> str | None: ...

    def _exiting_call(self, lst: str, off: int) -> bool: ...

    def _forget_body(self, name: str) -> None: ...

    def drop(self, marks: Marks, hits: list[Hit], everything: bool) -> None: ...


class FunctionBodies:
    """The walk's reading of function bodies, mixed into engine._Analyzer."""

    def _function_body(self: _Walk, lst: str, off: int, m: re.Match[str],
                       hits: list[Hit]) -> None:
        name = m.group(1)
        self._forget_body(name)  # (a definition again: what the last body did holds no more)
        calls = self.function_calls.get(name, set())
        brace = m.start(2)
        end = group_end(lst, brace, off, self.memo)
        if not calls:  # never called: its body never runs
            self.uncalled_bodies.append((off + brace + 1, off + end - 1))
            return
        self.bodies[name] = (off + brace + 1, off + end - 1)
        saved_errexit, saved_off_line = self.opts.errexit, self.opts.errexit_off_line
        saved_in_body = self.opts.errexit_in_body, self.opts.errexit_in_body_partial
        saved_pipefail = (self.opts.pipefail, self.opts.pipefail_partial,
                          self.opts.pipefail_line, self.opts.pipefail_off_line)
        self.opts.errexit_in_body = self.opts.errexit_in_body_partial = False
        saved_function = self.function
        self.function = name
        if "direct" in calls or "piped" in calls:
            # the body runs when called, usually after `set -e` further down; where `set -u`
            # is off here, also at each call under `set -u` (_guarded_calls: an unbound
            # variable in it stops bash there)
            if "direct" in calls and not self.opts.nounset:
                self.guarded_bodies[name] = (lst[brace + 1 : end - 1], off + brace + 1)
            self.opts.errexit = saved_errexit or self.later_errexit
            body_hits = self.script(lst[brace + 1 : end - 1], off + brace + 1)
            if "direct" not in calls:  # only `name | tee …`: the stop is hidden
                body_hits = [with_(h, hidden_by=self.piped_calls.get(name)) for h in body_hits]
        elif "subst" not in calls:
            # only called where `set -e` is off (`if name`, `name || …`): read at those calls
            # (_guarded_calls), under the options there; read here for what bash's semantics
            # decide of it alone (status_only: no finding, no count), `set -e` off as at those
            # calls: its constructs, and whether it ends the shell whenever it runs (an `exit`:
            # ending_bodies, which a tested call ends the shell at too)
            self.guarded_bodies[name] = (lst[brace + 1 : end - 1], off + brace + 1)
            self.opts.errexit = False
            self.script(lst[brace + 1 : end - 1], off + brace + 1, status_only=True)
            body_hits = []
            note_body_calls(self, lst[brace + 1 : end - 1], off + brace + 1)
        else:
            # only called as `$(name)`: errexit is off inside (no inherit_errexit), and only
            # the body's last command gives the substitution its status
            body_hits = self.script(
                lst[brace + 1 : end - 1], off + brace + 1,
                status_only=not self.opts.inherit_errexit,
            )
            var = self.function_vars.get(name)
            body_hits = [with_(h, in_substitution=True, variable=h.variable or var)
                         for h in body_hits]
        hits.extend(body_hits)
        self.opts.errexit, self.opts.errexit_off_line = saved_errexit, saved_off_line
        self.opts.errexit_in_body, self.opts.errexit_in_body_partial = saved_in_body
        if (self.opts.pipefail, self.opts.pipefail_partial) == saved_pipefail[:2]:
            (self.opts.pipefail, self.opts.pipefail_partial, self.opts.pipefail_line,
             self.opts.pipefail_off_line) = saved_pipefail
        else:
            # the body turns pipefail on or off: on from its calls on, which the walk does not
            # place, so not known past the definition (`strict() { set -o pipefail; }`)
            self.opts.pipefail, self.opts.pipefail_partial = True, True
        self.function = saved_function

    def _note_ending_body(self: _Walk, command: str, off: int, ended: bool) -> None:
        """`command` (an and-or list at `off` of the body of the function the walk reads, run
        whenever the body runs: on no branch, condition or `&&` / `||` of it) ends the shell
        (`ended`: the walk met an `exit` bash always runs there, or a plain call of a function
        whose body does: "exit"), or fails where `set -e` is on in the body (a command that
        always fails, `false`, `( exit 3 )`, or a plain call of a function whose body does:
        "errexit", which ends the shell only where `set -e` applies at the call): noted in
        ending_bodies, "exit" over "errexit". Not in a body with a `return`, `break` or
        `continue` (it may leave the body, or the caller's loop, first)."""
        name = self.function
        if name is None or self.ending_bodies.get(name) == "exit":
            return
        if name not in self.leaving_bodies:
            start, end = self.bodies[name]
            self.leaving_bodies[name] = loop_leaves_at(self.text, start, end) is not None
        if self.leaving_bodies[name]:
            return
        called = self._ending_call(command, off) if self.ending_bodies else None
        if ended or self.ending_bodies and self._exiting_call(command, off):
            self.ending_bodies[name] = "exit"
        elif self.opts.errexit and not self.opts.errexit_partial and (
                called == "errexit" or self._always_fails(command, off)):
            self.ending_bodies[name] = "errexit"

    def _forget_body(self: _Walk, name: str) -> None:
        """The function `name` is defined again or unset: what the walk noted of its last
        body (ending_bodies, leaving_bodies) does not hold for the calls after."""
        self.ending_bodies.pop(name, None)
        self.leaving_bodies.pop(name, None)

    def _note_unset_functions(self: _Walk, lst: str, off: int) -> None:
        """The functions the `unset -f` that starts the and-or list `lst` (at `off`, in the
        script's shell: not piped) removes: no later call runs the body the walk read
        (_forget_body). One bash may skip (`[ … ] && unset -f f`) changes nothing here."""
        command, at, _op = split_top_level(lst, off, ("&&", "||"), self.memo)[0]
        if first_word(command) != "unset" or len(
                split_top_level(command, at, ("|",), self.memo)) > 1:
            return
        words = shell_words(command, at, self.memo)[1:]
        flags = list(takewhile(lambda w: w.startswith("-") and w != "--", words))
        if any("f" in flag for flag in flags):
            for name in words[len(flags):]:
                self._forget_body(name)

    def _ending_call(self: _Walk, lst: str, off: int) -> str | None:
        """Is the list `lst` (at `off`) a plain call (alone: no `&&` / `||`, no pipe, no
        `!`; redirections or not) of a function whose body ends the shell (ending_bodies):
        "exit" / "errexit" as noted there; None otherwise."""
        command, _at, negated = called_command(lst, off)
        kind = self.ending_bodies.get(first_word(command))
        if kind is None or negated or "&&" in command or "||" in command or "|" in command and (
                len(split_top_level(command, off, ("|",), self.memo)) > 1):
            return None
        if FUNC_RE.match(command) or FUNC_RE2.match(command):
            return None  # `f() { :; }`: the function defined again, no call
        return kind

    def _exiting_call(self: _Walk, lst: str, off: int) -> bool:
        """Does the and-or list `lst` (at `off`) call, where bash always runs it (syntax.
        always_run: first, or after commands whose status makes it run, `true && f`), a
        function whose body ends the shell with an `exit` (ending_bodies "exit")? Tested
        (`f || true`, `if f`) or negated (`! f`) or not: an `exit` ends the shell whatever takes
        its status. Not piped (a subshell), not the function defined again."""
        for element, e_off in always_run(split_top_level(lst, off, ("&&", "||"), self.memo),
                                         self.script_text):
            command = called_command(element, e_off)[0]
            if (self.ending_bodies.get(first_word(command)) == "exit"
                    and len(split_top_level(element, e_off, ("|",), self.memo)) == 1
                    and not (FUNC_RE.match(command) or FUNC_RE2.match(command))):
                return True
        return False

    def _note_calls_without_nounset(self: _Walk, lst: str, off: int) -> None:
        """The functions of guarded_bodies that the and-or list `lst` (at `off`, outside any
        function's body) calls in the script's shell, where `set -u` is off (not in a pipeline,
        a subshell): their body runs there before any call under `set -u`."""
        command, command_off = condition_command(lst, off)
        if not any(name in command for name in self.guarded_bodies):
            return
        for element, e_off, _op in split_top_level(command, command_off, ("&&", "||"),
                                                   self.memo):
            name = first_word(called_command(element, e_off)[0])
            if (name in self.guarded_bodies
                    and len(split_top_level(element, e_off, ("|",), self.memo)) == 1):
                self.ran_without_nounset.add(name)

    def _guarded_calls(self: _Walk, lst: str, off: int) -> None:
        """Under `set -u`, the and-or list `lst` (at `off`) calling a function that is only
        called where `set -e` is off (`f || true`, `if f; then`), or one called directly that
        was defined before `set -u` (its body read there under the options there): its body
        runs in the script's shell with the options here, so it is read here as a `{ … }`
        group before `&&` / `||` is (an unbound variable stops bash in it, `|| true` or not;
        what only `set -e` makes a finding is dropped, and a `set` in it holds after the
        call). Not in a pipeline (a subshell), not a function already being read
        (recursion). A body first run here, no call where `set -u` was off before, first runs
        under `set -u`: its `((n++))` read where it is defined (_function_body) reads an unset
        `n` as an unbound variable, which stops bash before `set -e` sees a status."""
        for element, e_off, _op in split_top_level(lst, off, ("&&", "||"), self.memo):
            command, called_at, _negated = called_command(element, e_off)
            name = first_word(command)
            body = self.guarded_bodies.get(name)
            if (body is None or name == self.function or len(body[0]) > self.guarded_budget
                    or len(split_top_level(element, e_off, ("|",), self.memo)) > 1):
                continue
            self.guarded_budget -= len(body[0])
            if name not in self.ran_without_nounset:
                self.ran_without_nounset.add(name)  # (the first call decides; `set +u` after)
                start, end = body[1], body[1] + len(body[0])
                for a in self.arith:
                    if start <= a.offset < end:
                        a.nounset = True
            saved_function, self.function = self.function, name
            marks = self.marks([])
            self.script(*body)
            self.drop(marks, [], everything=False)
            self.function = saved_function
            for a in self.arith[marks.arith:]:
                a.called_at = called_at


def note_body_calls(walk: _Walk, body: str, off: int, in_subshell: bool = False, *,
                    in_function: bool = True, tested: bool = False,
                    loop_from: int | None = None) -> None:
    """The calls of the script's functions that `body` (at `off`), a body the walk does not
    read where it is defined (its function is only called where `set -e` is off), makes in
    its own lists: calls.outermost_calls places them at its function's calls, where they
    change what a counter holds (`run || true` runs `inc`, which counts `m`); `set -e` does
    not apply in them there. The lists of its `{ … }` groups too (`{ inc; } && echo`), which
    run in the same shell, and of its `( … )` subshells (`( inc )`: `set -e` is off there too;
    a count there holds in the subshell only, which arith reads from the call's place).
    Also those of a `( … )` whose status is tested where the walk reads `set -e` on
    (calls.tested_subshells: `( f ) || true`, in the script or a body): `tested` (its calls are;
    `in_function`: made in a body; `loop_from`: the walk's)."""
    if not walk.function_calls:
        return
    lists, branches = lists_and_branches(
        split_top_level(body, off, ("\n", ";", "&", *CASE_BRANCH_ENDS), walk.memo))
    for idx, (raw, l_off, _op) in enumerate(lists):
        whole = raw.strip()
        lead = len(raw) - len(raw.lstrip())
        cut, _steps = keyword_prefix(whole, idx in branches)
        calls = call_sites(whole[cut:], l_off + lead + cut, walk.function_calls, Opts(),
                           walk.memo, in_condition=tested, in_function=in_function,
                           loop_from=loop_from)
        walk.calls.extend(replace(c, in_subshell=True) if in_subshell else c for c in calls)
        for element, e_off, _op in split_top_level(whole[cut:], l_off + lead + cut,
                                                   ("&&", "||"), walk.memo):
            text, at, _negated = called_command(element, e_off)
            subshell = text.startswith("(") and not text.startswith("((")
            if text.startswith("{") and text[1:2].isspace() or subshell:
                end = group_end(text, 0, at, walk.memo)
                note_body_calls(walk, text[1 : end - 1], at + 1, in_subshell or subshell,
                                in_function=in_function, tested=tested, loop_from=loop_from)


def past_returns(text: str, bodies: dict[str, tuple[int, int]],
                 constructs: dict[tuple[int, int], Construct],
                 inert: Callable[[], list[tuple[int, int]]]
                 ) -> dict[tuple[int, int], Construct]:
    """For each function body (`bodies`, in the script `text`) with a `return` in its shell
    (not in a span `inert` gives, read only where a body has a `return`: a subshell, `( … )`,
    `$( … )` or backticks, whose `return` ends that subshell only, a compound bash runs in
    one, a branch bash never runs; nor in a function defined inside it), the part of the
    body bash runs on the calls that take no such `return` only: from the start of the
    construct right inside the body around the first of them (or from it, in none), to the
    body's end, as a construct of one branch bash may skip (keyed (start, -3)), so that what
    the body sets after it holds past the call on some runs only (`f() { [ … ] && return;
    n=1; }`), as past a loop's `break` (branches._leaving). One bash always runs leaves the
    rest never run, which the walk already reads so (model.Scan.never_run)."""
    found: dict[tuple[int, int], Construct] = {}
    spans = sorted(bodies.values())
    skipped: list[tuple[int, int]] | None = None
    for start, end in spans:
        if _RETURN_RE.search(text, start, end) is None:
            continue
        if skipped is None:
            skipped = inert()
        inner = [(s, e) for s, e in spans if start < s and e <= end]
        leave = next((m.start(1) for m in _RETURN_RE.finditer(text, start, end)
                      if not any(s <= m.start(1) < e for s, e in [*inner, *skipped])), None)
        if leave is None:
            continue
        # (the constructs inside the body around it: from the outermost one's start on)
        cut = min([leave] + [key[0] for key, (branches, _cover) in constructs.items()
                             if start <= key[0] <= leave and branches
                             and branches[-1][1] > leave])
        found[(cut, -3)] = (((cut, end),), Cover())
    return found
