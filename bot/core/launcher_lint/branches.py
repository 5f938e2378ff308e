"""The `case`s, `if`s and loops the launcher lint's walk (bot.core.launcher_lint.engine) is in:
the options of each way into a branch and past the construct, and a loop's body read again
from the options its later passes start from."""

from __future__ import annotations

import bisect
import re
from copy import copy
from dataclasses import dataclass, field, replace
from typing import Protocol

from bot.core.launcher_lint.model import Construct, Cover, Hit, Opts, either
from bot.core.launcher_lint.syntax import (
    OPENING_KEYWORDS,
    branch_matches,
    constant_status,
    loop_leaves_at,
    loop_passes,
    loop_runs,
)


@dataclass(frozen=True)
class Marks:
    """How much the walk had collected (its lists' lengths, the `shift` count) when a `case`,
    `if` or loop began: a loop read again drops what its earlier reading collected, and one
    before `&&` / `||` drops what only `set -e` makes a finding (bash does not stop in it)."""

    hits: int
    arith: int
    unset: int
    interactive: int
    tees: int
    positional: int
    shifted: int
    may_read_positional: bool
    calls: int


@dataclass
class Branches:
    """A `case`, `if` or loop the walk is in (`kind`: "case", "if", "while" for `while` /
    `until`, "for" for `for` / `select`). Of a case's branches bash runs the first whose
    pattern matches, then the next ones while a branch ends with `;&` (fall through) or `;;&`
    (test the next patterns too), or none; of an if's, the one after the first condition that
    succeeds, or the `else` (none without one); a loop's body, as the `then` of an `if` with
    no `else`, runs or not. The options of each way there: `reaching` the next pattern test
    (at the header; a `;;&` branch's end) or, in an `if` or loop, the next `elif` / `else` /
    `fi` / `done` (the last condition's end), `falling` into the next branch (a `;&`
    branch's end), `exits` past `esac` / `fi` (a `;;` branch's end, an `if` branch's).
    `in_branch`: in a branch's commands (in an `if` or loop, not in a condition). `skipped`:
    the options before it when it follows `&&` / `||` (`[ -f x ] && if …`), a way past it
    that runs none of it. `start`: the options a loop's pass starts from, `again`: where its
    keyword is (the list's index, the part of the list, the step), to read it again from,
    `key` (its offset in the script, the step) names it in BranchWalk.loop_starts;
    `later_pass`: it is the outermost loop read again (as its passes after the first);
    `marks`: what the walk had collected when it began (Marks)."""

    kind: str
    reaching: list[Opts]
    marks: Marks
    start: Opts
    again: tuple[int, int, int]
    key: tuple[int, int]
    falling: Opts | None = None
    exits: list[Opts] = field(default_factory=list)
    in_branch: bool = False
    skipped: Opts | None = None
    later_pass: bool = False
    # where the branch the walk is in started (None: in no branch, a condition or the header),
    # the spans of the branches before it, and whether one of them always runs (an `else`, a
    # `*` pattern): model.Scan.constructs
    branch_from: int | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)
    exhaustive: bool = False
    # an `if`'s: the last list of the condition being read (the walk sets it)
    condition: str = ""
    # the status of the last list read of the loop's body or of the branch being read, as
    # bash's semantics decide it (syntax.constant_status; None: not known, or a compound
    # whose status is not; the walk sets it)
    body_status: bool | None = None
    # a `!` negates its status (`! if …; fi`; bash ignores `set -e` in all of it)
    negated: bool = False
    # an `if`'s / a `case`'s: the status each branch bash may run and leave past `fi` /
    # `esac` left (its last list's body_status), in order
    out_statuses: list[bool | None] = field(default_factory=list)
    # a `case`'s: the status of each branch that ended with `;;&` and whose end still reaches
    # the next pattern test (in `reaching`, after the header's way): no pattern below it may
    # match, the `case` then leaving with it
    tested_on_statuses: list[bool | None] = field(default_factory=list)
    # a `case`'s: its word when it is one literal word (syntax.case_word; "": another)
    word: str = ""
    # in a branch bash never runs (`if false; then`, an `else` after `if true`, a `case`
    # branch after `*)`: no way into it; from an `elif` with no way in, its condition too):
    # what the walk had collected where that began, where it is, and the options there
    dead: tuple[Marks, int, Opts] | None = None
    # a `case`'s: a branch of it ended with `;&` or `;;&` (bash may run the next one after it)
    chained: bool = False
    # the keys of the constructs right inside it (in this walk's list), as they end
    inner: list[tuple[int, int]] = field(default_factory=list)
    # a loop's: after a `break` / `continue` of its body's own (no `if`, `case`, `&&` / `||`
    # or group around it), the rest of the body never runs: what the walk had collected there,
    # where it is, and the options there (those the pass leaves with)
    left: tuple[Marks, int, Opts] | None = None
    # … where that `break` / `continue` list ended, kept past `done` (_one_pass)
    left_at: int | None = None
    # an `if`'s: the walk is in a branch bash runs whenever it reaches the `if` (the first,
    # after a condition that always succeeds, `if true`; an `else` after `if false`)
    certain: bool = False
    # an `if`'s / a `case`'s: the branch being read certainly leaves a loop once it runs (a
    # `break` bash always runs in it), and every branch bash may run so far did
    branch_left: bool = False
    all_left: bool = True
    # … alike, the branch being read ends the shell once it runs (an `exit` bash always runs
    # in it: script_exits), and every branch bash may run so far did
    branch_exits: bool = False
    all_exit: bool = True
    # an `if`'s / a `case`'s: the branch being read ends the shell whenever it runs (an `exit`
    # with no `break` / `continue` / `return` before it: engine._dead_end), and the indices in
    # `spans` of those that did (model.Cover.ends)
    branch_dies: bool = False
    ends: list[int] = field(default_factory=list)
    # a loop's: where its body's own `exit` bash always runs on a pass ends (no `if`, `case`,
    # `&&` / `||` around it, no `break` / `continue` before it), the first pass ending the
    # shell whenever the body runs (None: none, or one may leave the loop first)
    exit_at: int | None = None
    # an `if`'s / a loop's: the condition being read ends the shell (an `exit` bash always
    # runs in it; a `return` in a function's body): its branch never runs, and no way goes
    # past the condition to the next one or past the construct
    condition_ends: bool = False
    # where the `exit`s in it that bash may run or skip end (model.Scan.maybe_exits), kept
    # until it closes in the script's shell (none when piped: `fi | cat`)
    exit_seen: list[int] = field(default_factory=list)
    # a `case`'s: a branch that did not leave ended with `;;&`, and no `*` pattern is below it
    testing_on: bool = False
    # the last element of a pipeline (`cat x | if …`): it runs in a subshell; `piped_maybe`:
    # … on some paths only (`lastpipe` on some of them: it runs in this shell there)
    piped: bool = False
    piped_maybe: bool = False
    # after `&&` / `||` of commands whose status says bash never runs it (`true || if …`):
    # every part of it is dead (the walk kills it where it opens)
    never: bool = False
    # a loop's: the spans of its body whose `break` / `continue` / `return` leave no loop of
    # this shell (`true || break`, `( break )`, `{ break; } | cat`), in the order read
    inert: list[tuple[int, int]] = field(default_factory=list)

    @property
    def status(self) -> bool | None:
        """An `if`'s / a `case`'s status past `fi` / `esac`, as bash's semantics decide it:
        0 on a way that runs no branch (no condition succeeded, no pattern matched), else the
        status of the last command of the branch that ran last (out_statuses; a `;&` branch's
        way goes on into the next, a `;;&` branch's leaves with it when no pattern below
        matches: tested_on_statuses); True / False when every way past it leaves the same one,
        None when one is not known or they differ."""
        if self.kind not in ("if", "case"):
            return None
        ways = set(self.out_statuses) | set(self.tested_on_statuses) | (
            {True} if len(self.reaching) > len(self.tested_on_statuses) else set())
        return ways.pop() if len(ways) == 1 else None

    @property
    def leaves_whenever_run(self) -> bool:
        """An `if` / `case` one of whose branches always runs (an `else`, `if true`, a `*)`)
        and each branch bash may run of which leaves a loop: past it the loop's body never
        runs."""
        return self.kind in ("if", "case") and self.exhaustive and self.all_left

    @property
    def exits_whenever_run(self) -> bool:
        """An `if` / `case` one of whose branches always runs and each branch bash may run of
        which ends the shell (an `exit`: script_exits), none falling through (`;&`, `;;&`); or
        a loop whose body runs (`while true`, `for i in 1 2`) and ends the shell on its first
        pass (`exit_at`): past it nothing runs."""
        if self.kind in ("while", "for"):
            return self.exhaustive and self.exit_at is not None
        return (self.kind in ("if", "case") and self.exhaustive and self.all_exit
                and not self.chained)

    def leave(self, walk: BranchWalk, hits: list[Hit], at: int, before: int = 0) -> None:
        """From offset `at` to `done`, the loop's body never runs (the first such place);
        `hits` has `before` more before it where the loop is (read in a group of its body)."""
        if self.left is None:
            marks = walk.marks(hits)
            self.left = (replace(marks, hits=marks.hits + before), at, copy(walk.opts))

    def kill(self, walk: BranchWalk, hits: list[Hit], at: int) -> None:
        """From offset `at` on, the walk is in a part of this construct bash never runs."""
        self.dead = (walk.marks(hits), at, copy(walk.opts))

    @property
    def in_condition(self) -> bool:
        """In an `if` / `elif` / `while` / `until` condition list, up to `then` / `do`: errexit
        does not stop it."""
        return self.kind in ("if", "while") and not self.in_branch


class BranchWalk(Protocol):
    """What branch_step reads and changes of the walk: the options where it is, the options a
    loop read again started from (by its `key`), where the outermost loop read again as its
    later passes starts (None: not in one), where each loop starts and its `done` is, and what
    it has collected; the text it reads (a loop's words and input: syntax.loop_passes); the
    function whose body it reads (None: none, where bash refuses a `return`)."""

    opts: Opts
    loop_starts: dict[tuple[int, int], Opts]
    later_pass_of: int | None
    loops: dict[int, int]
    constructs: dict[tuple[int, int], Construct]
    exclusive: dict[tuple[int, int], str]
    never_run: list[tuple[int, int]]
    loop_order: list[int]
    loop_parent: dict[int, int | None]
    group_loop: tuple[Branches, int] | None
    text: str
    left_loops: set[int]
    one_pass: set[int]
    function: str | None

    def marks(self, hits: list[Hit]) -> Marks: ...

    def drop(self, marks: Marks, hits: list[Hit], everything: bool) -> None: ...

    def forget(self, marks: Marks, hits: list[Hit]) -> None: ...


def branch_step(walk: BranchWalk, frames: list[Branches], step: str, patterns: str, ended_by: str,
                at: tuple[int, int, int], key: tuple[int, int], hits: list[Hit],
                exempt: bool, skip: Opts | None) -> tuple[int, int, int] | None:
    """Follow a `case`, `if` or loop (syntax.keyword_prefix's `step`, at `at`; `ended_by`: the
    operator that ended the branch before this one): a branch starts from the options of every
    way into it (the header's, through the patterns before it, or the last condition's end; the
    previous branch's, after `;;&` or `;&`), so its commands are read as bash may run them; past
    `esac` / `fi` / `done` the options are `either` of every way out, the header's (the last
    condition's) included unless a pattern is `*` (there is an `else`), and those before it when
    it follows `&&` / `||` (`skip`: bash may not run it). A `set` in a branch bash may not run
    is thus read as maybe not run: no check misses the branch that kept `set -e`. One followed
    by `&&` / `||` (`exempt`: `fi || true`) is not stopped by `set -e`, as bash reads every
    command of an and-or list but the last: what only `set -e` makes a finding in it is dropped.

    A loop bash makes no pass through (syntax.loop_passes: `while read x; do …; done <
    /dev/null`) runs nothing of its body: what the walk collected in it is forgotten.
    A loop's body is read as bash runs it, pass after pass: each pass starts from `either`
    the options at the loop and those the previous pass left (a `set -e` at the end of the
    body holds in the next pass). At `done`, when the options the next pass would start
    from differ from those this pass started from, the loop is read again from its keyword
    (the returned `at`) from the merged ones, what its first reading collected dropped, so
    each finding is reported once; `key` names the loop across readings.

    Two readings reach the fixed point. Each option is an element of a finite lattice that
    `either` joins (errexit: off, on, maybe), and the body acts on it as a function
    f(x) = a or f(x) = a ⊔ x: a `set` gives the option a value whatever it was, branches
    join, and nothing sets an option from another's value (no toggle, no copy). The
    first reading starts from the loop's options e and the second from s = e ⊔ f(e),
    which is e ⊔ a; the next pass would start from e ⊔ f(s) = e ⊔ a = s, so the second
    reading's start is that of every later pass. That start is kept per loop and joined
    into the loop's start when it is read again as part of an enclosing loop's second
    reading (from e' ⊒ e: e' ⊔ a is again the fixed point), so a loop is read again once
    at most, and a nest of loops costs readings linear in its depth."""
    if step == "case" or step in OPENING_KEYWORDS:
        later = key in walk.loop_starts and walk.later_pass_of is None
        if key in walk.loop_starts:
            walk.opts = either([walk.opts, walk.loop_starts[key]])
            if later:
                walk.later_pass_of = key[0]
        start = copy(walk.opts)  # never changed: `either` makes new options
        frames.append(Branches(kind=OPENING_KEYWORDS.get(step, step), reaching=[start],
                                marks=walk.marks(hits), start=start, again=at, key=key,
                                skipped=skip, later_pass=later,
                                word=patterns if step == "case" else ""))
        return None
    kinds = {"branch": ("case",), "esac": ("case",), "do": ("while", "for"),
             "done": ("while", "for")}.get(step, ("if",))
    if not frames or frames[-1].kind not in kinds:
        return None  # a keyword or pattern of a case / if / loop this text does not open
    frame = frames[-1]
    if step == "done" and frame.left is not None:  # past a `break` / `continue`: never run
        marks, left_at, left_opts = frame.left
        walk.forget(marks, hits)
        walk.never_run.append((left_at, key[0]))
        walk.opts, frame.left, frame.left_at = copy(left_opts), None, left_at
    if frame.branch_from is not None:  # the branch before this step ends here
        if frame.dead is None:  # (one bash never runs is no branch: model.Scan.constructs)
            frame.spans.append((frame.branch_from, key[0]))
        frame.branch_from = None
    condition_ends = step in ("then", "do") and frame.condition_ends
    frame.condition_ends &= frame.kind != "if"  # (a loop's is kept to its `done`)
    if step == "then" and frame.dead is not None:  # the `then` of an `elif` never reached
        frame.branch_from, frame.in_branch = key[0], True
        return None
    dead = frame.dead is not None
    if step in ("elif", "else", "fi", "branch", "esac"):  # the branch before ends here
        # (one that falls through, `;&`, leaves as the branch it falls into does; one after
        # which the patterns are tested on, `;;&`, as the one that matches next, when one
        # always does: a `*` below it)
        on = frame.in_branch and not dead and not frame.branch_left and step == "branch" and (
            ended_by in (";&", ";;&"))
        frame.all_left &= not frame.in_branch or dead or frame.branch_left or on
        frame.testing_on |= on and ended_by == ";;&"
        frame.all_exit &= not frame.in_branch or dead or frame.branch_exits
        if frame.in_branch and not dead and frame.branch_dies:
            frame.ends.append(len(frame.spans) - 1)
        if frame.in_branch and not dead and not (frame.branch_left or frame.branch_exits) and (
                step != "branch" or ended_by not in (";&", ";;&")):
            frame.out_statuses.append(frame.body_status)  # (a way past `fi` / `esac`)
        status, frame.body_status = frame.body_status, None
        frame.branch_left = frame.branch_exits = frame.branch_dies = False
    if step == "branch" and branch_matches(patterns, frame.word) is True:
        frame.testing_on = False  # (the patterns tested on match here)
    if step == "esac" and frame.testing_on:
        frame.all_left = False  # (no pattern below a `;;&` matched: no branch left)
    if frame.dead is not None:  # a branch bash never runs ends here: nothing in it ran,
        marks, dead_at, dead_opts = frame.dead  # nothing it set holds, no option it set
        walk.forget(marks, hits)
        walk.never_run.append((dead_at, key[0]))
        walk.opts, frame.dead = copy(dead_opts), None
    if step in ("then", "do", "branch", "else"):
        frame.branch_from = key[0]
        frame.exhaustive |= step == "else" or step == "branch" and branch_matches(
            patterns, frame.word) is True
    if step in ("then", "do"):  # the condition ran: its end is the way to the next or past
        frame.reaching, frame.in_branch = [copy(walk.opts)], True
        if frame.never:  # (a loop's body bash never runs: no way into it)
            frame.reaching = []
            frame.kill(walk, hits, key[0])
            return None
        if condition_ends:  # (`if return; then`: no way into the branch, nor past it)
            frame.reaching = []
            # (… and, reached whenever the construct is, no branch of it runs: an `elif`'s,
            # after a branch bash may run, leaves that branch one bash may skip)
            frame.exhaustive |= not frame.spans
            frame.kill(walk, hits, key[0])
            if frame.kind != "if" and frame.exit_at is None:
                frame.exit_at = key[0]  # (its first pass ends the shell)
            return None
        if step == "then" and frame.kind == "if":
            # a condition bash's semantics decide (`if true`, `elif false`): the branch runs
            # whenever the condition is reached (no way past it), or never
            constant = constant_status(frame.condition, walk.text,
                                       outside_function=walk.function is None,
                                       pipefail=None if walk.function is not None
                                       else walk.opts.pipefail_known)
            if constant:
                frame.reaching, frame.exhaustive = [], True
                frame.certain = not frame.spans  # (no branch bash may run before it)
            elif constant is False:
                frame.kill(walk, hits, key[0])
        return None
    if step in ("branch", "elif", "else"):
        frame.chained |= ended_by in (";&", ";;&")
        frame.certain = False
        if frame.in_branch and not dead:
            end = copy(walk.opts)
            if ended_by == ";&":
                frame.falling = end
            elif ended_by == ";;&":
                frame.reaching.append(end)
                frame.tested_on_statuses.append(None if frame.branch_left or frame.branch_exits
                                                else status)
            else:
                frame.exits.append(end)
        # (a `case` pattern that never matches its word, `case x in y)`: the pattern test
        # gets past it only; bash may fall into it still)
        never = step == "branch" and branch_matches(patterns, frame.word) is False
        ways_in = ([] if never else frame.reaching) + ([frame.falling] if frame.falling else [])
        # a branch (an `elif`'s condition) with no way in never runs: after a `*` that ended
        # with `;;`, after `if true` / `elif true`, a pattern that never matches
        walk.opts = either(ways_in) if ways_in else copy(walk.opts)
        if not ways_in:
            frame.kill(walk, hits, key[0])
        # an `else` after branches bash never runs (`if false`) runs whenever it is reached
        # (or the first `case` branch, when its pattern is `*`)
        frame.certain = not frame.spans and bool(ways_in) and (
            step == "else" and frame.kind == "if" or step == "branch" and frame.kind == "case"
            and branch_matches(patterns, frame.word) is True)
        frame.falling, frame.in_branch = None, step != "elif"
        if step == "else" or branch_matches(patterns, frame.word) is True:
            frame.reaching = []  # no pattern test / condition gets past this branch
            frame.tested_on_statuses = []
        return None
    frames.pop()  # esac, fi, done
    if frames:
        frames[-1].inner.append(frame.key)
    passes = None
    if step == "done":
        if frame.key[0] not in walk.loops:
            bisect.insort(walk.loop_order, frame.key[0])
            # (the loop around it: this walk's, or the one whose body's group it reads)
            around = next((f for f in reversed(frames) if f.kind in ("while", "for")), None)
            if around is None and walk.group_loop is not None:
                around = walk.group_loop[0]
            walk.loop_parent[frame.key[0]] = None if around is None else around.key[0]
        walk.loops[frame.key[0]] = key[0]
        passes = loop_passes(walk.text, frame.key[0], key[0])
        # its body runs, or its condition ends the shell (`while exit 3; do`)
        frame.exhaustive = frame.condition_ends or loop_runs(walk.text, frame.key[0], key[0])
        leave = _leaving(walk, frame, key[0]) if frame.exhaustive and frame.spans else None
        if leave is not None and frame.exit_at is not None and leave < frame.exit_at and any(
                not walk.text.startswith("return", at)
                for at in _leaves(walk, frame, key[0], frame.exit_at)):
            # (a `break` / `continue` before it may leave the loop; a `return` leaves the
            # function's body, which is what such an `exit_at` ends in a function)
            frame.exit_at = None
        if leave is not None and not walk.text.startswith("continue", leave):
            walk.left_loops.add(frame.key[0])  # (its next pass: on some runs only)
        if frame.exit_at is not None or _one_pass(walk, frame, key[0]):
            walk.one_pass.add(frame.key[0])  # (… or never)
        elif _continued_only(walk, frame, key[0]):
            walk.left_loops.add(frame.key[0])  # (its next pass: on some runs only)
    # (after `&&` / `||`, `[ … ] && if true; then …`, bash may run none of its branches, as
    # it may skip any command there: syntax.and_or_branches)
    walk.constructs[frame.key] = (tuple(frame.spans),
                                  Cover(frame.exhaustive and frame.skipped is None,
                                        ends=frozenset(frame.ends)))
    if frame.kind == "if" or frame.kind == "case" and not frame.chained:
        walk.exclusive[frame.key] = frame.kind  # one pass through it runs one branch at most
    if passes == 0:  # bash makes no pass: nothing in the body runs, nothing it sets holds
        walk.forget(frame.marks, hits)
        walk.opts = either(frame.exits + frame.reaching
                           + ([frame.skipped] if frame.skipped else []))
        if frame.later_pass:
            walk.later_pass_of = None
        return None
    # (one pass, `for i in 1`: no later pass to read it again for)
    if step == "done" and frame.in_branch and frame.key not in walk.loop_starts and passes != 1:
        next_start = either([frame.start, walk.opts])
        if next_start != frame.start:
            walk.loop_starts[frame.key] = next_start
            walk.drop(frame.marks, hits, everything=True)
            walk.opts = copy(next_start)
            return frame.again
    if frame.later_pass:
        walk.later_pass_of = None
    if exempt:
        walk.drop(frame.marks, hits, everything=False)
    ways_out = frame.exits + frame.reaching + (
        [copy(walk.opts)] if frame.in_branch and not dead else []) + (
        [frame.skipped] if frame.skipped else [])
    # (none: its condition ends the shell, `if return; then`; nothing runs past it)
    walk.opts = either(ways_out) if ways_out else copy(walk.opts)
    return None


def _one_pass(walk: BranchWalk, loop: Branches, done: int) -> bool:
    """Does every pass through the loop's body (to `done`) that gets to its end of its own
    leave the loop first: a `break` / `return` of its body's own that bash always runs
    (Branches.left_at: `…; break; done`, an `if` each branch of which breaks), with no `continue`
    before it that leaves this loop (one in a subshell or an inner loop does not)? Then no pass
    follows the first."""
    if loop.left_at is None or loop.dead is not None or not loop.spans:
        return False
    leaves = _leaves(walk, loop, done, loop.left_at)
    return bool(leaves) and not any(walk.text.startswith("continue", at) for at in leaves)


def _continued_only(walk: BranchWalk, loop: Branches, done: int) -> bool:
    """Does every pass through the loop's body (to `done`) that gets to its end of its own
    leave the loop through a `break` / `return` bash always runs (Branches.left_at), with a
    `continue` bash may skip before it (`[ … ] && continue; break`)? Then a next pass follows
    on the runs that take that `continue` only (model.Scan.left_loops)."""
    if loop.left_at is None or loop.dead is not None or not loop.spans:
        return False
    leaves = _leaves(walk, loop, done, loop.left_at)
    return bool(leaves) and not walk.text.startswith("continue", leaves[-1]) and any(
        walk.text.startswith("continue", at) for at in leaves)


def _leaves(walk: BranchWalk, loop: Branches, done: int, end: int) -> list[int]:
    """Where each `break` / `continue` / `return` in the loop's body (to `done`) before `end`
    that leaves it starts: not one in a subshell (Branches.inert), nor one an inner loop
    holds that leaves only that one (_leaves_past)."""
    found: list[int] = []
    inert = sorted(loop.inert)
    k = 0
    leave = loop_leaves_at(walk.text, loop.spans[0][0], done)
    while leave is not None and leave < end:
        while k < len(inert) and inert[k][1] <= leave:
            k += 1
        if k < len(inert) and inert[k][0] <= leave:  # (one that leaves no loop of this shell)
            leave = loop_leaves_at(walk.text, inert[k][1], done)
            continue
        if _leaves_past(walk, loop.key[0], leave, done):
            found.append(leave)
        leave = loop_leaves_at(walk.text, leave + 1, done)
    return found


def _leaving(walk: BranchWalk, loop: Branches, done: int) -> int | None:
    """A loop whose body runs (`while true`, `for i in 1 2`) with a `break` / `continue` /
    `return` in it at offset b that leaves it runs what comes after b on some passes only: from
    the start of the construct right inside the body around b (or b; the `done` of a loop
    right inside the body around b, which it leaves too), to `done`, is held in a branch bash
    may skip (a construct of its own, model.Scan.constructs, keyed (start, -1)), so
    that the branches still nest. One in a loop inside the body leaves this loop only when its
    number says so (_leaves_past: `break` leaves the innermost loop, `break 2` one more).
    Returns b, the first that leaves it (None: none does)."""
    body = loop.spans[0][0]
    inert = sorted(loop.inert)
    k = 0
    leave = loop_leaves_at(walk.text, body, done)
    while leave is not None:
        while k < len(inert) and inert[k][1] <= leave:
            k += 1
        if k < len(inert) and inert[k][0] <= leave:  # (one that leaves no loop of this shell)
            leave = loop_leaves_at(walk.text, inert[k][1], done)
        elif _leaves_past(walk, loop.key[0], leave, done):
            break
        else:
            leave = loop_leaves_at(walk.text, leave + 1, done)
    if leave is None:
        return None
    # (a loop inside the body that holds it: it leaves that loop too, whose own reading has
    # what follows it in that body; from that loop's `done` on is what it may skip here)
    holders = [(key[0], spans[-1][1]) for key in loop.inner if key in walk.constructs
               and key[0] <= leave and (spans := walk.constructs[key][0])
               and spans[-1][1] > leave]
    cut = min([leave] + [start for start, _end in holders])
    if holders and walk.loops.get(cut) == max(end for start, end in holders if start == cut):
        cut = walk.loops[cut]
    walk.constructs[(cut, -1)] = (((cut, done),), Cover())
    return leave


#: The number after a `break` / `continue` (`break 2`): how many loops it leaves.
_LEAVE_COUNT_RE = re.compile(r"(?:break|continue)(?:[ \t]+([^\s;&|<>()]+))?")


def _leaves_past(walk: BranchWalk, start: int, at: int, done: int) -> bool:
    """Does the `break` / `continue` / `return` at `at`, in the body of the loop from `start` to
    `done`, leave that loop? A `return` does, and a `break N` / `continue N` (N 1 when not
    written) in fewer than N loops inside that body (BranchWalk.loops: those the walk closed,
    loop_parent: the loop around each where the walk knows it, else none, so that it reads as
    leaving); one whose number is not written out (`break $n`) is taken as leaving it."""
    count = _LEAVE_COUNT_RE.match(walk.text, at)
    if count is None:  # (`return`)
        return True
    number = count.group(1)
    if number is None:
        levels = 1
    elif number.isdigit() and int(number) > 0:
        levels = int(number)
    else:
        return True
    # the last loop inside the body to start before it; those around it that hold it (each
    # loop around it: the loops nest) are the loops it is in
    order = walk.loop_order
    k = bisect.bisect_right(order, at) - 1
    inner = order[k] if k >= 0 and order[k] > start else None
    inside = 0
    while inner is not None and inner > start:
        if walk.loops[inner] > at:
            inside += 1
            if inside >= levels:
                return False
        inner = walk.loop_parent.get(inner)
    return True

