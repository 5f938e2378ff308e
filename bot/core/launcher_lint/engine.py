"""The launcher lint's one walk over a script: list by list, with the options `set` / `shopt`
turn on and off, collecting what the checks judge (bot.core.launcher_lint.model.Scan)."""

from __future__ import annotations

import bisect
import re
from copy import copy

from bot.core.launcher_lint.arith_commands import and_or_ariths
from bot.core.launcher_lint.branches import Branches, Marks, branch_step
from bot.core.launcher_lint.call_kinds import function_calls
from bot.core.launcher_lint.calls import call_sites, tested_subshells
from bot.core.launcher_lint.commands import CommandWalk, has_candidate, substituted_counters
from bot.core.launcher_lint.compound_status import CompoundStatus
from bot.core.launcher_lint.empty_match import guard_greps
from bot.core.launcher_lint.functions import (
    FUNC_NAME_RE,
    FUNC_RE,
    FUNC_RE2,
    FunctionBodies,
    note_body_calls,
    past_returns,
)
from bot.core.launcher_lint.interactive import may_source_startup, startup_sources
from bot.core.launcher_lint.loop_exits import MAY_LEAVE_RE, LoopExits
from bot.core.launcher_lint.model import (
    MAX_DEPTH,
    Arith,
    Call,
    Construct,
    Hit,
    Interactive,
    Opts,
    Positional,
    Scan,
    Tee,
    TeeContext,
    Unset,
    either,
)
from bot.core.launcher_lint.nounset import may_read_unset, unset_reads
from bot.core.launcher_lint.options import (
    GROUP_BEFORE_AND_OR_RE,
    NEGATED_AND_OR_GROUP_RE,
    OPTION_AFTER_AND_OR_RE,
    OptionWalk,
)
from bot.core.launcher_lint.pipe_subshells import PipeSubshells
from bot.core.launcher_lint.positional import may_read_positional, positional_reads
from bot.core.launcher_lint.script_exits import (
    and_or_group_ends_shell,
    certainly_ends_shell,
    ends_function_body,
    ends_script_shell,
    group_ends_shell,
    may_end_shell,
)
from bot.core.launcher_lint.shebang import shebang_errexit
from bot.core.launcher_lint.syntax import (
    and_or_branches,
    and_or_compounds,
    compound_tail,
    condition_command,
    first_word,
    keyword_prefix,
    lists_and_branches,
    next_text,
    past_negation,
    piped_compound,
    runs_after,
)
from bot.core.launcher_lint.tee import TRAILING_RE, may_tee, tee_pipelines
from bot.core.shell_lexer import (
    CASE_BRANCH_ENDS,
    Memo,
    group_end,
    seed_subshells,
    split_top_level,
    subshell_spans,
)

_CONDITION_KEYWORDS = {"if", "elif", "while", "until"}

#: A `{ … }` group after an and-or list's `&&` / `||` (`[ -f x ] && { set -e; }`).
_GROUP_AFTER_AND_OR_RE = re.compile(r"(?:&&|\|\|)\s*\{\s")

#: A `{ … }` group that starts an and-or list or comes after its `&&` / `||`
#: (`{ set -e; false; }`, `true && { set -e; }`).
_GROUP_LAST_RE = re.compile(r"(?:^|&&|\|\|)\s*\{\s")


class _Analyzer(FunctionBodies, OptionWalk, LoopExits, PipeSubshells, CommandWalk,
                CompoundStatus):
    """Follows the script list by list with the options `set` / `shopt` turn on and off, and
    collects the commands whose failure on an empty match decides a statement's status.

    Iterative over lists, recursive only into nested groups, substitutions and function bodies,
    at most MAX_DEPTH deep; one memo of construct ends, so each character is lexed a bounded
    number of times."""

    def __init__(self, text: str, script_text: str) -> None:
        self.text = text
        self.opts = Opts()
        self.memo: Memo = {}
        self.subshells = seed_subshells(text, self.memo)  # None: no `case` in the script
        self.depth = 0
        self.too_deep_at: int | None = None
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.later_errexit = bool(
            # (also first in a function's body: `run() { set -e; inc; }` runs inc under it)
            re.search(r"(?m)(?:^|(?<=[;{]))[ \t]*(?:then\s+|do\s+|\{\s*)?"
                      r"set\s+(-\w*e|-o\s+errexit)", text)
        )
        self.function_calls, self.piped_calls = function_calls(text)
        self.function_vars = (
            {name: var for var, name in re.findall(
                r"([A-Za-z_]\w*)=[\"']?\$\(\s*([A-Za-z_][\w:-]*)", text)}
            if self.function_calls else {}
        )
        self.function: str | None = None
        self.guard_greps: set[tuple[str, str]] = set()
        self.arith: list[Arith] = []
        self.calls: list[Call] = []  # the functions' calls, and their bodies by name
        self.bodies: dict[str, tuple[int, int]] = {}
        self.loops: dict[int, int] = {}  # each loop's start and `done`
        self.loop_order: list[int] = []  # the starts of `loops`, in order
        self.loop_parent: dict[int, int | None] = {}  # the loop around each (its start)
        self.constructs: dict[tuple[int, int], Construct] = {}  # each case / if / loop
        self.never_run: list[tuple[int, int]] = []  # branches bash never runs (`if false`)
        self.uncalled_bodies: list[tuple[int, int]] = []  # (model.Scan.uncalled_bodies)
        self.exclusive: dict[tuple[int, int], str] = {}  # each if / case running one branch
        self.unset: list[Unset] = []
        self.script_text = script_text  # the original, comments included
        #: job control may be on (`set -m`): bash then runs a pipeline's last element in a
        #: subshell whatever `shopt -s lastpipe` says (pipe_subshells._lastpipe)
        self.may_monitor = re.search(r"\bset\s+[-+](?:\w*m|o\s+monitor\b)", text) is not None
        self.nounset_line: int | None = None
        self.may_read_unset = may_read_unset(text)
        self.may_source_startup = may_source_startup(text)
        self.interactive: list[Interactive] = []
        self.may_tee = may_tee(text)
        self.may_read_positional = may_read_positional(text)
        self.positional: list[Positional] = []
        self.shifted = 0
        self.tees: list[Tee] = []
        #: the bodies of functions called only where `set -e` is off, or called directly and
        #: defined where `set -u` is off, by name, with their offsets; read at each call under
        #: `set -u` (_guarded_calls), the script's length in all at most, so the walk stays
        #: linear
        self.guarded_bodies: dict[str, tuple[str, int]] = {}
        self.guarded_budget = len(text)
        #: the functions of guarded_bodies the script's shell called where `set -u` was off
        #: (_note_calls_without_nounset): their body ran there first
        self.ran_without_nounset: set[str] = set()
        #: the options a loop read again started from (branches.branch_step), by its `key`
        self.loop_starts: dict[tuple[int, int], Opts] = {}
        #: where the outermost loop read again as its later passes starts (None: not in one)
        self.later_pass_of: int | None = None
        #: the group of a loop's body the walk reads next (its text's offset), that loop and
        #: the hits its walk had before (_leaving_loop), and, reading it, that loop and hits
        self.group_of: tuple[int, Branches, int, list[tuple[Branches, int]]] | None = None
        self.group_loop: tuple[Branches, int] | None = None
        #: reading a group of a loop's body, the `case`s / `if`s / loops of the walks around
        #: it (those it is a group of), outermost first, each with the hits before this walk's
        #: (loop_exits._loops_around crosses them)
        self.group_around: list[tuple[Branches, int]] = []
        #: the compounds bash runs in a subshell (model.Scan.piped)
        self.piped: list[tuple[int, int]] = []
        #: where each text the walk read to an `exit` bash always runs there starts (a `{ … }`
        #: group's body: script_exits.group_ends_shell)
        self.ended_groups: set[int] = set()
        #: the functions whose body ends the shell where a plain call runs it (functions.
        #: FunctionBodies._note_ending_body)
        self.ending_bodies: dict[str, str] = {}
        self.leaving_bodies: dict[str, bool] = {}
        #: model.Scan.left_loops, maybe_exits; how many subshells (`( … )`, `$( … )`, a
        #: pipeline's elements) around where the walk is
        self.left_loops: set[int] = set()
        self.one_pass: set[int] = set()
        self.maybe_exits: list[int] = []
        self.in_subshell = 0
        self.dead_ends: list[tuple[int, int]] = []  # model.Scan.dead_ends
        #: their starts: a `{ … }` group whose body's start is one ends the shell whenever it
        #: runs, as a branch that is one does (an and-or list's element: _and_or_branches)
        self.dead_from: set[int] = set()
        #: where each `{ … }` group's body the walk reads where `set -e` applies as in the
        #: script's own text starts (_note_errexit_group)
        self.errexit_texts: set[int] = set()
        #: the `case`s / `if`s / loops whose closing keyword is followed by `&&` / `||`, by
        #: their keys (syntax.and_or_compounds), of each text read (by its offset)
        self.and_or_compounds: set[tuple[int, int]] = set()
        self.compounds_read: set[int] = set()

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    # -- top level: every and-or list in order, tracking `set` / `shopt`
    def script(self, text: str, base: int, status_only: bool = False) -> list[Hit]:
        if self.depth >= MAX_DEPTH:
            if self.too_deep_at is None:
                self.too_deep_at = base
            return []
        self.depth += 1
        group, self.group_of = self.group_of, None
        outer, self.group_loop = self.group_loop, (
            (group[1], group[2]) if group is not None and group[0] == base else None)
        around = self.group_around
        self.group_around = group[3] if group is not None and group[0] == base else []
        try:
            return self._script(text, base, status_only)
        finally:
            self.depth -= 1
            self.group_loop, self.group_around = outer, around

    def _runs_after_heads(self, whole: str, off: int, at_branch: bool) -> bool | None:
        """Whether bash runs the compound that ends the and-or list `whole` (at `off`, after
        the keywords that start it: `do false || if …`) whenever it reaches it (syntax.
        runs_after)."""
        cut, _steps = keyword_prefix(whole, at_branch)
        heads = split_top_level(whole[cut:], off + cut, ("&&", "||"), self.memo)[:-1]
        return runs_after(heads, self.script_text)

    def _script(self, text: str, base: int, status_only: bool) -> list[Hit]:
        hits: list[Hit] = []
        lists, branches = lists_and_branches(
            split_top_level(text, base, ("\n", ";", "&", *CASE_BRANCH_ENDS), self.memo))
        if base not in self.compounds_read and (
                "&&" in text or "||" in text or "!" in text) and (
                "fi" in text or "done" in text or "esac" in text):
            self.compounds_read.add(base)
            self.and_or_compounds |= and_or_compounds(lists, branches, self.memo)
        last = len(lists) - 1
        trailing_from: int | None = None  # lists[trailing_from:] are all TRAILING_RE
        frames: list[Branches] = []  # the `case`s / `if`s this list is in, the innermost last
        idx, resume = -1, (0, 0)  # resume: the part and step a loop read again starts from
        ended: int | None = None  # past an `exit` bash always runs here: nothing runs
        while idx < last and ended is None:
            idx += 1
            raw, off, _op = lists[idx]
            is_last = idx == last
            whole = raw.strip()
            lead = len(raw) - len(raw.lstrip()) if whole else 0
            # `[ -f x ] && if …`: the compound after the last `&&` / `||` is read as one on a
            # list of its own, bash running it or not
            tail = compound_tail(whole, off + lead, self.memo) if (
                "&&" in whole or "||" in whole) else None
            # … that bash runs whenever it reaches the list (`false || if …`), never, or maybe
            tail_runs = None if tail is None else self._runs_after_heads(
                whole, off + lead, idx in branches)
            # `cat x | if …`: the compound after a pipe is read as one on a list of its own
            # too; it runs in a subshell (without `lastpipe`), as one before a pipe does
            piped = piped_compound(whole, off + lead, self.memo) if (
                tail is None and "|" in whole) else None
            if piped is not None and self._lastpipe() == "on":
                # (under `lastpipe` it runs in this shell whenever its pipeline runs)
                tail_runs = self._runs_after_heads(whole, off + lead, idx in branches)
            tail = piped if tail is None else tail
            parts = ((0, len(whole)),) if tail is None else ((0, tail), (tail, len(whole)))
            first_part, first_step = resume
            resume = (0, 0)
            # the and-or lists of it with a `{ … }` group, read again once the walk has been
            # through their groups (_and_or_branches), and how many dead_ends there were
            grouped: list[tuple[str, int, bool | None]] = []
            dead_before = len(self.dead_ends)
            back: tuple[int, int, int] | None = None
            for part, (start, end) in enumerate(parts):
                if part < first_part:
                    continue
                lst = whole if tail is None else whole[start:end]
                lst_off = off + lead + start
                # the command on a pattern's line (`a) set -e ;;`) runs in the script's shell, as
                # one on a line of its own does
                cut, steps = keyword_prefix(lst, idx in branches and part == 0)
                closed_left = closed_exit = False
                # the status of the loop whose `done` this list starts (`done && n=1`), when
                # bash's semantics decide it (syntax.loop_status; None: not known)
                closed_status: bool | None = None
                negated_closer = False  # (it closes a compound a `!` negates: `! if …; fi`)
                # the compound this list closes runs in a subshell when it is piped or run in
                # the background (`fi | cat`, `esac &`): it leaves no loop of this shell
                background = cut > 0 and _op == "&" and part == len(parts) - 1
                piped_on = cut > 0 and self._piped(lst[cut:], lst_off + cut)
                in_subshell = background or piped_on
                # … to the end of the pipeline it is an element of (`fi | cat && n=1`: `n=1`
                # runs in this shell), or of the list in the background
                sub_end = lst_off + len(lst) if background else lst_off + cut + len(
                    split_top_level(lst[cut:], lst_off + cut, ("&&", "||"), self.memo)[0][0])
                if steps:
                    skip = copy(self.opts) if part and not tail_runs else None
                    # what only `set -e` makes a finding in the compound this list closes does
                    # not stop the script: before `&&` / `||` (`fi || true`, `fi | cat && x`),
                    # bash ignores it; in a subshell whose status is not the script's to stop on
                    # (`fi | cat` without pipefail, `esac &`), it ends that subshell only
                    exempt = (lst[cut:].lstrip().startswith(("&&", "||")) or background
                              or piped_on and not (frames and frames[-1].start.pipefail)
                              or self._and_or_after(lst[cut:], lst_off + cut))
                    for k in range(first_step if part == first_part else 0, len(steps)):
                        step, patterns = steps[k]
                        if step == "!":  # (read with the compound it negates, opened next)
                            continue
                        closing = frames[-1] if frames and step in ("fi", "esac", "done") else None
                        if k == len(steps) - 1:
                            negated_closer = closing is not None and closing.negated
                        sub = in_subshell or closing is not None and closing.piped
                        back = branch_step(self, frames, step, patterns, branches.get(idx, ""),
                                                 (idx, part, k), (lst_off, k), hits,
                                                 exempt or closing is not None and closing.negated,
                                                 skip if k == 0 or k == 1 and steps[0][0] == "!"
                                                 else None)
                        if back is not None:
                            break
                        if k and steps[k - 1][0] == "!" and frames and (
                                frames[-1].key == (lst_off, k)):
                            frames[-1].negated = True
                        if tail_runs is False and part == 1 and frames and (
                                frames[-1].key == (lst_off, k)):
                            # (`true || if …`: bash never runs any of it)
                            frames[-1].never, frames[-1].reaching = True, []
                            frames[-1].kill(self, hits, lst_off)
                        if piped is not None and part == 1 and frames and (
                                frames[-1].key == (lst_off, k)):
                            # (the compound it opens is piped: a subshell, but under
                            # `lastpipe`, where it runs in this shell)
                            frames[-1].piped = self._lastpipe() != "on"
                            frames[-1].piped_maybe = self._lastpipe_partial()
                        # an `if` / `case` each branch of which leaves the loop (`if c; then
                        # break; else break; fi`): as a `break` bash always runs
                        closed_left |= (closing is not None and closing.leaves_whenever_run
                                        and closing.skipped is None and not sub)
                        # … or ends the shell (`if c; then exit 1; else exit 0; fi`)
                        whole_exit = (closing is not None and closing.exits_whenever_run
                                      and closing.skipped is None and not sub
                                      and not closing.never)
                        closed_exit |= whole_exit
                        if closing is not None and closing.exit_seen and not (
                                sub or whole_exit or closing.never):
                            self._maybe_exits(frames, closing.exit_seen)
                        # (the last element where `lastpipe` is on on some paths: in this
                        # shell on those only)
                        maybe = closing is not None and closing.piped_maybe and not in_subshell
                        if closing is not None and sub:
                            self._subshell(closing, sub_end, maybe,
                                           exempt or not closing.start.errexit,
                                           piped_on and closing.start.pipefail_partial)
                        if closing is not None and (sub or closing.never):
                            # (its `break` / `continue` leave no loop of this shell)
                            self._in_subshell(frames, closing.key[0], sub_end,
                                              maybe and not closing.never)
                        # (… not one bash may skip, `[ … ] && for …`: the test's status then)
                        if closing is not None and k == len(steps) - 1 and (
                                closing.skipped is None and not closing.never and not sub):
                            closed_status = self._closed_status(closing, step, lst_off)
                    if back is not None:
                        break
                if frames and frames[-1].in_branch:
                    # (a list of a loop's body or of a branch: the last one read decides the
                    # loop's / the branch's status; one in the background has status 0, one
                    # before a compound's is not known; a closer alone, `fi`, has the status
                    # of the compound it closes)
                    frames[-1].body_status = self._last_status(
                        frames[-1], steps, lst[cut:], closed_status
                    ) if _op != "&" and part == len(parts) - 1 else None
                if not lst[cut:].lstrip().startswith(("&&", "||")):
                    closed_status = None  # (the status a list after the closer starts from)
                and_or_from = cut
                if negated_closer and piped_on and not background:
                    # `! for …; done | true && n=1`: the `!` negates the whole pipeline, whose
                    # status the list after it starts from (its last command's without
                    # pipefail, a failing one's with it; not known otherwise)
                    and_or_from = sub_end - lst_off
                    closed_status = self._negated_pipeline_status(lst[cut:and_or_from])
                if "&&" in lst or "||" in lst:  # (`[ -f x ] && n=1`: a branch bash may skip)
                    self._and_or_branches(frames, lst[and_or_from:], lst_off + and_or_from,
                                          closed_status)
                    if "{" in lst:
                        grouped.append((lst[cut:], lst_off + cut, closed_status))
                if "|" in lst and "=" in lst:
                    self._pipe_elements(lst[cut:], lst_off + cut)
                if (_op == "&" or piped is not None and part == 0) and MAY_LEAVE_RE.search(
                        lst[cut:]):  # `break &`, `{ break; } | if …`
                    at = lst_off + cut
                    if _op != "&":  # (`a || break && b | if …`: the pipeline's elements only)
                        at = split_top_level(lst[cut:], at, ("&&", "||"), self.memo)[-1][1]
                    self._in_subshell(frames, at, lst_off + len(lst))
                elif (tail is None or part == 1 and steps and steps[-1][0] == "branch") and (
                        _op != "&" and (frames or self.group_loop is not None)):
                    # (one after `&&` / `||` or a pipe: the command on its first pattern's
                    # line, `false || case x in *) break;; esac`, as one on a line of its own)
                    self._leaving_list(frames, hits, lst[cut:], lst_off + cut, closed_left,
                                       lst_off + len(lst))
                # (a condition's list without its keyword: `if return; then` in a function
                # returns from it, `while exit 3; do` ends the shell)
                command, command_off = condition_command(lst[cut:], lst_off + cut) if (
                    frames and frames[-1].in_condition) else (lst[cut:], lst_off + cut)
                if _op != "&" and (closed_exit or tail is None and (certainly_ends_shell(
                        command, command_off, self.memo, self.script_text,
                        self.function is not None) or self.ending_bodies and self._exiting_call(
                            command, command_off) or not status_only
                        and self._fails_under_errexit(frames, lst[cut:], lst_off + cut, base))):
                    ended = self._ends_shell(frames, hits, lst_off + len(lst))
                if self.function is not None and not frames and tail is None and _op != "&" and (
                        base == self.bodies[self.function][0]):
                    # (a list of a function's body, run whenever the body is: does it end the
                    # shell where a plain call runs the body?)
                    self._note_ending_body(lst[cut:], lst_off + cut, ended is not None)
                if self.ending_bodies and first_word(lst[cut:]) == "unset" and not (
                        status_only or self.in_subshell):
                    self._note_unset_functions(lst[cut:], lst_off + cut)
                if frames and frames[-1].kind == "if" and not frames[-1].in_branch:
                    # a list of the condition: the last one decides its status
                    condition = lst[cut:].lstrip()
                    keyword = first_word(condition)
                    frames[-1].condition = condition[len(keyword):] if keyword in (
                        "if", "elif") else condition
                if self.guarded_bodies and not self.opts.nounset and self.function is None:
                    self._note_calls_without_nounset(lst[cut:], lst_off + cut)
                if self.function_calls and not status_only:
                    in_condition = bool(frames and frames[-1].in_condition)
                    if not in_condition and _op != "&" and "=" in lst:
                        self.arith.extend(substituted_counters(
                            lst[cut:], lst_off + cut, self.bodies, self.text, self.opts,
                            self.memo, later_pass_of=self.later_pass_of))
                    self.calls.extend(call_sites(
                        lst[cut:], lst_off + cut, self.function_calls, self.opts, self.memo,
                        in_condition=in_condition, in_function=self.function is not None,
                        loop_from=self.later_pass_of))
                    for inside, inside_off in tested_subshells(
                            lst[cut:], lst_off + cut, self.memo, in_condition=in_condition):
                        note_body_calls(self, inside, inside_off, True, tested=True,
                                        in_function=self.function is not None,
                                        loop_from=self.later_pass_of)
                if not self.opts.nounset and not (status_only and is_last) and not has_candidate(
                    lst, quick=True
                ) and not (self.may_tee and "tee" in lst):
                    continue  # nothing here can fail on an empty match or change an option
                lst_off += cut
                lst = lst[cut:]
                rest, negated = past_negation(lst)
                if not negated and rest != lst:  # (`! ! cmd`: bash runs it as `cmd`)
                    lst_off, lst = lst_off + len(lst) - len(rest), rest
                first = first_word(lst)
                if first in _CONDITION_KEYWORDS or (frames and frames[-1].in_condition):
                    # every list of an `if` / `while` condition (`if a; b; then`), not just the
                    # first
                    if not status_only:
                        self._condition(lst, lst_off, next_text(lists, idx))
                    continue  # an if/while condition never triggers errexit
                if negated:
                    if not status_only:
                        self._negated(lst, lst_off)
                    continue
                if not lst or first == "for":
                    continue
                defined = FUNC_NAME_RE.match(lst)
                if defined and not self.function_calls.get(defined.group(1) or defined.group(2)):
                    # a function nobody calls: its body never runs (its span recorded only)
                    if definition := FUNC_RE.match(lst) or FUNC_RE2.match(lst):
                        self._function_body(lst, lst_off, definition, [])
                    continue
                if not status_only:
                    if first in ("set", "shopt"):
                        self._track_options(lst, lst_off)
                    elif first == "shift" and self.function is None:
                        self._shift(lst)
                    elif self.opts.nounset:
                        self._positional(lst, lst_off)
                        if self.may_read_unset:
                            self.unset.extend(unset_reads(lst, lst_off, self.script_text,
                                                          self.memo))
                        self.arith.extend(and_or_ariths(
                            lst, lst_off, self.memo, self.later_pass_of, nounset=True,
                            errexit_off=not self.opts.errexit))
                        if self.guarded_bodies:
                            self._guarded_calls(lst, lst_off)
                        if self.may_source_startup:
                            self.interactive.extend(startup_sources(lst, lst_off))
                    if (OPTION_AFTER_AND_OR_RE.search(lst) or GROUP_BEFORE_AND_OR_RE.search(lst)
                            or "!" in lst and NEGATED_AND_OR_GROUP_RE.search(lst)):
                        self._and_or_options(lst, lst_off)
                    if self.may_tee and "tee" in lst and not self.opts.pipefail_sure:
                        if trailing_from is None:
                            trailing_from = _trailing_from(lists)
                        self._note_tees(lst, lst_off, next_text(lists, idx),
                                        ends_script=idx + 1 >= trailing_from)
                if status_only and not is_last:
                    continue
                if not has_candidate(lst) and not _GROUP_AFTER_AND_OR_RE.search(lst):
                    continue  # no command that can fail on an empty match, no group, no function
                if not status_only and not self.opts.errexit:
                    if not self.opts.nounset:  # (under `set -u` they are collected above)
                        self.arith.extend(and_or_ariths(lst, lst_off, self.memo,
                                                        self.later_pass_of, nounset=False,
                                                        errexit_off=True))
                    # Function bodies and groups may run with `set -e` on (set there or later).
                    self._outside_errexit(lst, lst_off, hits)
                    continue
                if not status_only and not self.opts.nounset:
                    # (under `set -u` they are collected above): `((n++)) || true` where `set
                    # -e` is on, whose status is tested
                    self.arith.extend(and_or_ariths(lst, lst_off, self.memo,
                                                    self.later_pass_of, nounset=False,
                                                    errexit_off=False))
                if not status_only and "{" in lst and self._errexit_applies(frames, base):
                    self._note_errexit_group(lst, lst_off)
                hits.extend(self._and_or(lst, lst_off, errexit_mode=not status_only))
            if grouped and len(self.dead_ends) > dead_before:  # (`[ … ] && { exit 0; } || …`)
                for lst, lst_off, closed_status in grouped:
                    self._and_or_branches(frames, lst, lst_off, closed_status)
            if ended is None and _op != "&" and ("exit" in whole or "exec" in whole):
                cut = keyword_prefix(whole, idx in branches)[0]  # (`[ … ] && exit 0`)
                if may_end_shell(whole[cut:], off + lead + cut, self.memo, self.script_text):
                    self._maybe_exits(frames, [off + lead + len(whole)])
            if ended is None and tail is None and _op != "&" and self.ended_groups and (
                    "{" in whole):  # (`{ …; exit 1; }`: its walk met an `exit`)
                cut = keyword_prefix(whole, idx in branches)[0]
                group = whole[cut:].lstrip()
                if group_ends_shell(group, off + lead + len(whole) - len(group), self.memo,
                                    self.ended_groups, lists[idx - 1][0] if idx else ""):
                    ended = self._ends_shell(frames, hits, off + lead + len(whole))
                elif "&&" in group or "||" in group:  # (`[ … ] && { exit 0; }`)
                    runs = and_or_group_ends_shell(group, off + lead + len(whole) - len(group),
                                                   self.memo, self.ended_groups,
                                                   self.script_text)
                    if runs == "always":
                        ended = self._ends_shell(frames, hits, off + lead + len(whole))
                    elif runs == "maybe":
                        self._maybe_exits(frames, [off + lead + len(whole)])
            if ended is not None:  # (the rest of this text never runs)
                self.never_run.append((ended, base + len(text)))
                if base:  # (a group's or a function's body: what it set goes no further)
                    self._dead_end(base, ended)
                self.ended_groups.add(base)
            elif back is not None:  # a loop read again from its keyword
                idx, resume = back[0] - 1, back[1:]
        return hits

    def _ends_shell(self, frames: list[Branches], hits: list[Hit], end: int) -> int | None:
        """An `exit` bash always runs where the walk is (script_exits), its list ending at
        `end`: past it nothing of this walk's text runs (returned: where that starts), or, in
        a branch, the branch ends the shell (and leaves the loop it is in) whenever it runs;
        in a loop's body, the rest of the body never runs; in an `if` / `elif` / `while`
        condition, no way goes past it (Branches.condition_ends)."""
        if not frames:
            return end
        frame = frames[-1]
        if frame.in_condition:  # (no way past the condition: branches.branch_step)
            frame.condition_ends = True
            frame.exit_seen.append(end)
            return None
        if frame.in_branch:  # (bash may skip it: model.Scan.maybe_exits, where it closes)
            frame.exit_seen.append(end)
            if frame.branch_from is not None:
                frame.branch_dies |= self._dead_end(frame.branch_from, end)
        if frame.kind in ("if", "case") and frame.in_branch:
            frame.branch_exits = frame.branch_left = True
        elif frame.in_branch:
            if frame.kind in ("while", "for") and frame.dead is None and (
                    frame.left is None or frame.left[1] == end):  # (an `if` that exits)
                frame.exit_at = end  # (its first pass ends the shell, unless it leaves first)
            frame.leave(self, hits, end)
        return None


    def _and_or_branches(self, frames: list[Branches], lst: str, off: int,
                         closed_status: bool | None = None) -> None:
        """The commands of the and-or list `lst` (at `off`) bash may skip (syntax.
        and_or_branches: `[ -f x ] && n=$((n+1))`, `[ … ] && ((n++)) || true`, `[ … ] && n=1
        || n=2`), read as an `if`'s branches are (model.Scan.constructs, keyed by the
        operator's offset and -2, so that a loop's part past a `break` in one still nests:
        branches._leaving); one bash never runs, as a branch it never runs too (`true || n=5`).
        An element that ends the shell: an `exit` / `exec`, or a `{ … }` group whose body the
        walk found to end it whenever it runs (dead_from: `[ … ] && { echo; exit 0; } || n=1`),
        known once the walk has been through it: a list with a group is read again then (the
        same construct, its never-run commands added). `closed_status`: that of the loop whose
        `done` starts the list (`done && n=1`), when known."""
        def ends_shell(command: str, at: int) -> bool:
            return ends_script_shell(command, self.script_text) or bool(self.dead_from) and (
                group_ends_shell(command, at, self.memo, self.dead_from, ""))

        def returns(command: str) -> bool:
            return ends_function_body(command, self.script_text)

        found = and_or_branches(lst, off, self.memo, self.script_text, ends_shell,
                                returns if self.function is not None else None, closed_status,
                                self._pipefail("|" in lst))
        if found is None:
            return
        if found.at is not None:
            key = (found.at, -2)
            if frames and key not in self.constructs:
                frames[-1].inner.append(key)
            self.constructs[key] = (found.spans, found.cover)
        self.never_run.extend(span for span in found.never if span not in self.never_run)

    def _dead_end(self, start: int, end: int) -> bool:
        """From `start` (a branch's, a body's) to `end`, bash runs into an `exit` (model.Scan.
        dead_ends), unless a `break` / `continue` / `return` may leave that way first (or it
        is a `return`: the body's values then hold past the call). Whether it does."""
        if MAY_LEAVE_RE.search(self.text, start, end):
            return False
        self.dead_ends.append((start, end))
        self.dead_from.add(start)
        return True

    def _maybe_exits(self, frames: list[Branches], ends: list[int]) -> None:
        """`exit`s bash may run or skip, ending at `ends`: kept by the construct the walk is
        in until it closes, or model.Scan.maybe_exits (not in a subshell)."""
        if frames:
            frames[-1].exit_seen.extend(ends)
        elif not self.in_subshell:
            self.maybe_exits.extend(ends)

    def marks(self, hits: list[Hit]) -> Marks:
        return Marks(len(hits), len(self.arith), len(self.unset), len(self.interactive),
                      len(self.tees), len(self.positional), self.shifted,
                      self.may_read_positional, len(self.calls))

    def drop(self, marks: Marks, hits: list[Hit], everything: bool) -> None:
        """Drop what the walk collected since `marks`: `everything` (a loop read again: its
        reading from the merged options replaces it, and a `shift` in it counts once), but an
        `((n++))`, whose first pass is the one where `n` may be 0 (model.Arith.zero_after); or
        what only `set -e` makes a finding (in a compound before `&&` / `||`, which bash does
        not stop in; an unbound variable under `set -u` stops it all the same)."""
        del hits[marks.hits:]
        if everything:
            del self.interactive[marks.interactive:], self.tees[marks.tees:]
            del self.unset[marks.unset:], self.positional[marks.positional:]
            self.shifted, self.may_read_positional = marks.shifted, marks.may_read_positional
            return
        self.arith[marks.arith:] = [a for a in self.arith[marks.arith:] if not a.errexit]
        self.interactive[marks.interactive:] = [
            i for i in self.interactive[marks.interactive:] if i.kind != "clear"]
        self.tees[marks.tees:] = [t for t in self.tees[marks.tees:] if t.why != "errexit"]

    def forget(self, marks: Marks, hits: list[Hit]) -> None:
        """Forget all the walk collected since `marks`, counters too: what bash never runs
        (the body of a loop it makes no pass through), which the walk notes in never_run. Its
        calls are kept: a function called only there never runs (arith.check_arith)."""
        self.drop(marks, hits, everything=True)
        del self.arith[marks.arith:]

    def _note_tees(self, lst: str, off: int, after: str, ends_script: bool) -> None:
        """Training piped to `tee` where its status matters: under `set -e`, or followed only
        by messages at the end of the script (`ends_script`); `${PIPESTATUS[0]}` read in the
        list `after` it keeps the status."""
        if "PIPESTATUS" in after:
            return
        if self.opts.errexit:
            why: TeeContext = "errexit"
        elif self.depth == 1 and self.function is None and ends_script:
            why = "last"
        else:
            return
        partial = why == "errexit" and self.opts.errexit_partial
        self.tees.extend(Tee(o, cmd, why, errexit_partial=partial)
                         for o, cmd in tee_pipelines(lst, off, self.memo))

    def _outside_errexit(self, lst: str, off: int, hits: list[Hit]) -> None:
        m = FUNC_RE.match(lst) or FUNC_RE2.match(lst)
        if m:
            self._function_body(lst, off, m, hits)
            return
        if lst.startswith("{") and lst[1:2] in (" ", "\t", "\n"):
            end = group_end(lst, 0, off, self.memo)
            if not lst[end:].strip().startswith(("|", "&&")):
                hits.extend(self.script(lst[1 : end - 1], off + 1))
                return
            # piped, it runs in a subshell; before `&&` / `||`, _and_or_options read it
        if "&&" in lst or "||" in lst:
            self._note_guards(lst)
            # `[ -f x ] && { set -e; … }`: the group, bash running it or not, may turn it on
            last, last_off, _op = split_top_level(lst, off, ("&&", "||"), self.memo)[-1]
            group = last.lstrip()
            if group.startswith("{") and group[1:2] in (" ", "\t", "\n"):
                group_off = last_off + len(last) - len(group)
                end = group_end(group, 0, group_off, self.memo)
                if not group[end:].strip():
                    before = copy(self.opts)
                    hits.extend(self.script(group[1 : end - 1], group_off + 1))
                    self.opts = either([before, self.opts])

    def _condition(self, lst: str, off: int, after: str) -> None:
        """An `if` / `while` condition list: errexit is off in it, `set -u` is not (an unbound
        variable ends a non-interactive shell wherever it is read), and it runs in the script's
        shell, so a `set` / `shopt` in it holds past it (`if set -u && …; then`, `if { set -e;
        false; }; then`), as one in a list of its own does; under `set -u`, `((n++))` of an
        unset `n` stops bash there too. Its last list (`after` it comes `then` / `do`) decides the
        branch: training piped to `tee` there without `pipefail` is tested by tee's status."""
        self._note_guards(lst)
        command, command_off = condition_command(lst, off)
        if first_word(command) in ("set", "shopt"):
            self._track_options(command, command_off)
        if (self.may_tee and "tee" in lst and not self.opts.pipefail_sure
                and first_word(after.lstrip()) in ("then", "do")):
            keyword = first_word(lst)
            rest = lst[len(keyword):]
            rest_off = off + len(keyword)
            command, negated = past_negation(rest.lstrip())
            if negated:  # `if ! python … | tee`: tee's status, negated
                keyword += " !"
                rest, rest_off = command, rest_off + len(rest) - len(command)
            self.tees.extend(Tee(o, cmd, "condition", keyword)
                             for o, cmd in tee_pipelines(rest, rest_off, self.memo))
        # the status of the condition's last list is its keyword's to take (negated after `!`)
        keyword = first_word(lst)
        if (keyword not in _CONDITION_KEYWORDS or "!" in lst[: command_off - off]
                or first_word(after.lstrip()) not in ("then", "do")):
            keyword = "condition"
        self.arith.extend(and_or_ariths(command, command_off, self.memo, self.later_pass_of,
                                        nounset=self.opts.nounset, errexit_off=False,
                                        keyword=keyword))
        if self.opts.nounset:
            self._positional(lst, off)
            if self.may_read_unset:
                self.unset.extend(unset_reads(lst, off, self.script_text, self.memo))
            if self.may_source_startup:
                self.interactive.extend(startup_sources(lst, off))
            if self.guarded_bodies:
                self._guarded_calls(command, command_off)
        if (OPTION_AFTER_AND_OR_RE.search(command) or GROUP_BEFORE_AND_OR_RE.search(command)
                or _GROUP_LAST_RE.search(command) or NEGATED_AND_OR_GROUP_RE.search(command)):
            self._and_or_options(command, command_off, in_condition=True)

    def _positional(self, lst: str, off: int) -> None:
        """`$N` read under `set -u` at the script's level (in a function it is the function's
        argument)."""
        if self.may_read_positional and self.function is None and not FUNC_NAME_RE.match(lst):
            self.positional.extend(positional_reads(lst, off, self.shifted))

    def _shift(self, lst: str) -> None:
        m = re.match(r"shift(?:\s+(\d+))?\s*$", lst)
        if m:
            self.shifted += int(m.group(1) or 1)
        else:
            self.may_read_positional = False  # `shift $n`: the count is not known any more

    def _note_guards(self, lst: str) -> None:
        self.guard_greps |= guard_greps(lst)



def _trailing_from(lists: list[tuple[str, int, str]]) -> int:
    """The index from which every list is one TRAILING_RE allows after the script's last
    command (messages, waits, `exit $?`): read back from the end, once per list of lists."""
    k = len(lists)
    while k > 0 and TRAILING_RE.match(lists[k - 1][0].strip()):
        k -= 1
    return k


def scan(script_text: str, code: str) -> Scan:
    """Walk `code` (the script with comments and heredoc bodies blanked) once."""
    analyzer = _Analyzer(code, script_text)
    if shebang_errexit(script_text):
        analyzer.opts.errexit = True
        analyzer.opts.errexit_line = 1
    hits = analyzer.script(code, 0)
    analyzer.constructs.update(past_returns(
        code, analyzer.bodies, analyzer.constructs,
        lambda: subshell_spans(code) + analyzer.piped + analyzer.never_run))
    return Scan(analyzer.opts, hits, analyzer.arith, analyzer.unset, analyzer.nounset_line,
                analyzer.too_deep_at, analyzer.line_starts, analyzer.interactive, analyzer.tees,
                analyzer.positional, analyzer.subshells, analyzer.calls, analyzer.bodies,
                analyzer.loops, analyzer.constructs, analyzer.never_run, analyzer.exclusive,
                sorted(set(analyzer.piped)), analyzer.left_loops, sorted(analyzer.maybe_exits),
                analyzer.one_pass, sorted(set(analyzer.dead_ends)), analyzer.uncalled_bodies)
