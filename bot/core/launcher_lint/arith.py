"""`arith_zero_under_errexit`: an arithmetic command whose status is 1 under `set -e`: `((n++))`
/ `let n++` with `n` last set to 0, empty or never set (unset is 0), or to a number arithmetic
cannot read ("08": an error), `((n=0))` / `let n=0`. `arith_unset_under_nounset`: under
`set -u`, with or without `set -e`, `((n++))` of an `n` never set (an unbound variable, which
stops bash whatever tests the command's status). `arith_error_without_errexit`: where `set -e`
is off or does not apply (`((n++)) || true`, `if ((n++))`), `((n++))` of an `n` arithmetic
cannot read ("08"): bash says so, the command's status is 1 and bash goes on, `n` never
counts."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from bot.core.findings import Finding, Level
from bot.core.launcher_lint.branches import (
    Step,
    last_to_run,
    path_index,
)
from bot.core.launcher_lint.calls import outermost_calls, values_at_calls
from bot.core.launcher_lint.counter_values import (
    BAD_OCTAL_RE,
    UNSET_RE,
    ZERO_RE,
    Assigned,
    Before,
    NeverSet,
    assigned_values,
    assignment_text,
    between,
    in_other_branches,
    left_at_end,
    prefix_assignments,
    read_on_next_pass,
    set_in_branches_only,
    stops_at,
)
from bot.core.launcher_lint.counts_between import Counts, enclosing, find_subshells
from bot.core.launcher_lint.messages import (
    short,
    slurm_shows,
    under_errexit,
    under_pipefail_partly,
)
from bot.core.launcher_lint.model import (
    CHECK_ARITH_ERROR,
    CHECK_ARITH_UNSET,
    CHECK_ARITH_ZERO,
    Arith,
    Call,
    Construct,
    Scan,
)
from bot.core.launcher_lint.syntax import loop_passes
from bot.core.shell_lexer import Memo, split_top_level
from bot.core.text import N_, Text

#: The arithmetic commands the walk collects where `set -e` is on: an increment or decrement
#: (its value is the variable's before it), or an assignment of 0 (its value is 0).
ARITH_RE = re.compile(r"^\(\(\s*([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)\s*\)\)$")
LET_RE = re.compile(r"^let\s+[\"']?([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)[\"']?$")

#: Which runs an unbound counter stops bash on (_unbound_stop): where a branch bash may skip
#: leaves its variable unset, or where it is in another branch than the assignment.
_ON_THOSE_RUNS = N_("on those runs")
_ON_THIS_BRANCH = N_("on the runs that take this branch")


def and_or_ariths(lst: str, off: int, memo: Memo, zero_after: int | None, *, nounset: bool,
                  errexit_off: bool, keyword: str = "") -> list[Arith]:
    """The `((n++))` / `let n++` commands of the and-or list `lst` (at `off`) that `set -e`
    does not stop on: under `set -u` (`nounset`), where `n`, when nothing sets it, is an
    unbound variable that stops bash with or without `set -e`, whatever tests their status
    (`|| true`, an `if` condition); where `set -e` is off (`errexit_off`) or a command's
    status is tested (the `&&` / `||` after it; the last one's by `keyword`, when `lst` is a
    condition: model.Arith.tested_by), where a value arithmetic cannot read ("08") leaves `n`
    as it was. Not in a pipeline, whose commands run in subshells (`zero_after`:
    model.Arith.zero_after)."""
    if "((" not in lst and "let" not in lst:
        return []
    found: list[Arith] = []
    for element, e_off, op in split_top_level(lst, off, ("&&", "||"), memo):
        if len(split_top_level(element, e_off, ("|",), memo)) > 1:
            continue
        cmd = element.strip()
        m = ARITH_RE.match(cmd) or LET_RE.match(cmd)
        if m and not m.group(2).startswith("="):  # `((n=0))` reads no `n`
            at = e_off + len(element) - len(element.lstrip())
            found.append(Arith(at, cmd, m.group(1), zero_after=zero_after, nounset=nounset,
                               errexit=False, errexit_off=errexit_off,
                               tested_by=op or keyword))
    return found



def check_arith(scan: Scan, code: str) -> list[Finding]:
    """The findings of the arithmetic checks, each with a `pass` note when it finds nothing:
    `arith_zero_under_errexit` (a status of 1 that `set -e` stops on),
    `arith_unset_under_nounset` (an unbound variable that `set -u` stops on) and
    `arith_error_without_errexit` (an arithmetic error nothing stops on). One finding a line:
    the first collected, but a stop over an error bash goes past (a loop's first pass, where
    `set -e` is off, goes on; a later pass, after the body's `set -e`, stops there)."""
    findings: list[Finding] = []
    # the loops whose number of passes the script says (syntax.loop_passes): one bash makes no
    # pass through sets nothing, one it makes a single pass through has no next pass
    passes = {start: loop_passes(code, start, done) for start, done in scan.loops.items()}
    never_run = [(start, scan.loops[start]) for start, n in passes.items() if n == 0
                 ] + scan.never_run
    repeating = {start: done for start, done in scan.loops.items()
                 if passes[start] != 1 and start not in scan.one_pass}
    prefixes = prefix_assignments(code) if scan.arith else {}
    values = assigned_values(code, {a.variable for a in scan.arith}, prefixes,
                             never_run) if scan.arith else {}
    never_set = NeverSet(code, scan.arith, prefixes, never_run, values,
                         {a.variable for a in scan.arith})
    counters_of: dict[str, list[Arith]] = {}  # each variable's, in the walk's order
    for a in scan.arith:
        counters_of.setdefault(a.variable, []).append(a)
    # each variable's counters' offsets, and its prefix assignments (`n=0 cmd`), in order
    counted_at = {var: sorted(b.offset for b in counters) for var, counters in counters_of.items()}
    prefixes_of: dict[str, list[tuple[int, str]]] = {}
    for pos, (var, cmd) in sorted(prefixes.items()):
        prefixes_of.setdefault(var, []).append((pos, cmd))
    at_line: dict[int, int] = {}  # a line's finding's index in findings
    # the lines whose finding is a counter read unset on the runs that skip its assignments:
    # any other finding of the line takes its place
    partly_at: set[int] = set()
    errexit_off_at: dict[int, bool] = {}  # its arithmetic command: where `set -e` is off?
    calls_of: dict[str, list[Call]] = {}  # each function's calls, in the walk's order
    spans = sorted((start, end, name) for name, (start, end) in scan.bodies.items())
    placed = outermost_calls(scan.calls, scan.bodies) if scan.arith else []
    for call in _with_later_passes(placed, repeating) if repeating else placed:
        calls_of.setdefault(call.name, []).append(call)
    # (`( … )`, and the compounds bash runs in one: `fi | cat`, `cat x | if …`)
    # (… and the branches and bodies that run into an `exit`: model.Scan.dead_ends)
    subshells = find_subshells(code) + scan.piped + scan.dead_ends if values else []
    path_of, nested = path_index(scan.constructs)
    path_of = functools.cache(path_of)
    # the subshells around each assignment
    in_subshells = enclosing(subshells, [pos for v in values.values() for pos, _v in v])
    # each variable's assignments outside subshells read once for all its counters where the
    # branches nest: those of every counter when no assignment is in a subshell, else of the
    # counters in none (each counter in one reads them: the lists below)
    read_once: dict[str, Assigned] = {}
    in_subshell: set[str] = set()  # the variables assigned in a subshell
    if nested:
        for var, assignments in values.items():
            outside = [(pos, v) for pos, v in assignments if pos not in in_subshells]
            if len(outside) < len(assignments):
                in_subshell.add(var)
            read_once[var] = Assigned(outside, scan.constructs, path_of, spans)
    counter_in_subshell = enclosing(subshells, [a.offset for a in scan.arith]) \
        if in_subshell else {}
    # the innermost loop bash may make more than one pass through around each counter
    innermost = enclosing(list(repeating.items()), [a.offset for a in scan.arith])
    counts = Counts(scan.arith, subshells + [(s, e) for s, e, _n in spans], scan.constructs,
                     path_of, nested)
    # the counters the walk also collected where `set -e` applies: judged there
    errexit_at = {a.offset for a in scan.arith if a.errexit}
    unsets: dict[str, list[int]] = {}  # where `unset n` is, by variable
    if scan.loops and "unset" in code:
        for m in UNSET_RE.finditer(code):
            if not any(start <= m.start() < end for start, end in never_run):
                unsets.setdefault(m.group(1), []).append(m.start())
    for a in scan.arith:
        value: str | None = "0"
        # what the loop's body leaves it at: on this line, and on every run
        carried_at: tuple[int, bool] | None = None
        later: tuple[str, int, str, bool] | None = None  # judged at a later call (_AtCall)
        skipped_count: int | None = None  # a count bash may skip before it, where
        # the assignment it reads, where that is so on some runs only (a branch decides)
        set_partly: int | None = None
        # the assignment it reads, in a branch bash may skip, where nothing else sets it first
        unset_partly: int | None = None
        # the last assignment (or count) before it in the text that is in another branch of
        # an `if` / `case` it is in, which never runs before it: its offset and the
        # construct's kind
        apart: tuple[int, str] | None = None
        at, body = a.offset, (0, 0)  # where it is judged: at a call of its function, if in one
        if not a.assigns_zero:
            before: Sequence[tuple[int, str | None]]
            all_before: Sequence[tuple[int, str | None]]
            if a.variable in read_once and not (a.variable in in_subshell
                                                and a.offset in counter_in_subshell):
                assigned = read_once[a.variable].entries
                before = all_before = read_once[a.variable].before(a.offset)
            else:
                # an assignment in a subshell `a` is not in sets nothing where `a` runs
                assigned = [(pos, v) for pos, v in values.get(a.variable, [])
                            if pos not in in_subshells
                            or in_subshells[pos][0] <= a.offset < in_subshells[pos][1]]
                before = all_before = [(pos, v) for pos, v in assigned if pos < a.offset]
            called = _at_calls(a, assigned, calls_of, spans, scan.constructs, path_of)
            if called is not None and not (before and before[-1][0] >= called.body[0]):
                if called.at is None:
                    continue  # no call where its status or an unbound variable stops bash
                at, body, before, later = called.at, called.body, called.before, called.later
                set_partly = called.set_partly
                if called.partial:  # `set -e` on some paths only: said so, a warning
                    a = replace(a, errexit_partial=True)
            else:
                siblings = in_other_branches(a.offset, before, scan, spans, path_of)
                if siblings:  # never run before it: it reads what holds without them
                    apart = siblings[-1]
                    apart_at = {pos for pos, _kind in siblings}
                    before = all_before = before.without(apart_at) if isinstance(
                        before, Before) else [(pos, v) for pos, v in before if pos not in apart_at]
                may_hold = before
                if len(before) > 1:  # which of them holds here: through the branches on the way
                    before, every_run = before.left_at_end(a.offset) if isinstance(
                        before, Before) else left_at_end(list(before), before[0][0], a.offset,
                                                         scan.constructs, path_of)
                    set_partly = None if every_run else before[-1][0]
                    if every_run and _counted_where_last(a, may_hold, before, counts,
                                                         counted_at[a.variable], scan, path_of):
                        set_partly = before[-1][0]
                if (before and before[-1][1] is not None and ZERO_RE.fullmatch(before[-1][1])
                        and (counted := counts.since(a, before[-1][0]))):
                    # (a count matters to a 0 only: "08" stays, any other value stops nothing)
                    if counted[1]:
                        # an earlier `((n++)) || true` counted it: no longer 0
                        before = [*before[:-1], (before[-1][0], None)]
                    else:  # counted in a branch or loop bash may skip: 0 on the runs that skip
                        skipped_count = counted[0]
                        # … or in another branch of the `if` / `case` it is in: never before it
                        if other := in_other_branches(a.offset, [(counted[0], None)], scan,
                                                       spans, path_of):
                            skipped_count = None
                            apart = max(other[0], apart or other[0])
            unset = not before and (a.variable not in values and never_set.holds(a.variable)
                                    if apart is None else never_set.holds(
                                        a.variable, bisect.bisect_left(
                                            values[a.variable], a.offset, key=lambda v: v[0]))) \
                and a.zero_after is None \
                and not _counted_before(counted_at[a.variable], at, body)  # (a loop's earlier pass)
            stops, value = _stops(a, before, unset)
            if not stops and all_before and a.zero_after is None and (
                    a.errexit or a.offset not in errexit_at) and (
                    partly := set_in_branches_only(
                        a, all_before, scan, counters_of[a.variable], spans, path_of, never_set,
                        len(values.get(a.variable, [])))) is not None:
                # unset on the runs that skip every assignment before it (`if …; then n=5; fi`)
                stops, value = _stops(a, [], True)
                unset_partly = partly if stops else None
            if not stops:  # … on this pass: on the loop's next, with what its body's end left?
                carried = read_on_next_pass(a, assigned, innermost.get(a.offset),
                                            unsets.get(a.variable, []), scan.constructs, path_of)
                if carried is None:
                    continue
                stops, value = _stops(a, carried[1], not carried[1])
                if not stops:
                    continue
                # (… which follows on the runs that take no `break` / `exit` bash may skip
                # in the body only)
                carried_at = (scan.line_of(carried[0]), carried[2] and not _next_pass_partly(
                    innermost[a.offset], scan))
        line = scan.line_of(a.offset)
        if line in partly_at:  # said by the rule below, which gives way to any other finding
            if unset_partly is not None:
                continue
            findings[at_line.pop(line)] = _NONE
            partly_at.discard(line)
        if line in at_line and (findings[at_line[line]].check != CHECK_ARITH_ERROR
                                or unset_partly is not None):
            continue
        # an error on a loop's later pass, after its body's `set -e`, whose status is tested
        # (`|| true`): said so, which holds for every pass, where "`set -e` is off" does not
        later_tested = line in at_line and errexit_off_at[line] and not (a.errexit
                                                                         or a.errexit_off)
        prefix = prefixes_of.get(a.variable, [])[
            :bisect.bisect_left(prefixes_of.get(a.variable, []), at, key=lambda p: p[0])
        ] if value is None else []
        found = _finding(a, line, value,
                         (prefix[-1][1], scan.line_of(prefix[-1][0])) if prefix else None,
                         carried_at, None if later is None else (
                             later[0], scan.line_of(at), scan.line_of(later[1]), later[2],
                             later[3]),
                         None if skipped_count is None else scan.line_of(skipped_count),
                         None if set_partly is None else scan.line_of(set_partly),
                         None if unset_partly is None else scan.line_of(unset_partly),
                         None if apart is None or carried_at or later
                         or skipped_count or set_partly or unset_partly else (
                             scan.line_of(apart[0]), apart[1],
                             scan.line_of(before[-1][0]) if before else None,
                             assignment_text(code, apart[0])))
        if line not in at_line:
            at_line[line] = len(findings)
            errexit_off_at[line] = a.errexit_off and not a.errexit
            findings.append(found)
            if unset_partly is not None:
                partly_at.add(line)
        elif found.check != CHECK_ARITH_ERROR or later_tested:
            findings[at_line[line]] = found
            errexit_off_at[line] = False
    findings = [f for f in findings if f is not _NONE]
    if not any(f.check == CHECK_ARITH_ZERO for f in findings):
        findings.append(Finding(CHECK_ARITH_ZERO, "pass", None,
                                N_("no `((n++))` from 0 under `set -e`")))
    if not any(f.check == CHECK_ARITH_ERROR for f in findings):
        findings.append(Finding(CHECK_ARITH_ERROR, "pass", None,
                                N_("no counter bash cannot read (\"08\") where the launcher "
                                   "goes on past it")))
    if not any(f.check == CHECK_ARITH_UNSET for f in findings):
        findings.append(Finding(CHECK_ARITH_UNSET, "pass", None,
                                N_("no `((n++))` of a variable nothing sets under `set -u`")))
    return findings




def _counted_where_last(a: Arith, may_hold: Sequence[tuple[int, str | None]],
                        left: list[tuple[int, str | None]], counts: Counts,
                        counted: list[int], scan: Scan,
                        path_of: Callable[[int], tuple[Step, ...]]) -> bool:
    """`left` (left_at_end's: the assignment that stops `a` on every run) is a 0 with no count
    since it, but may be skipped on the way to `a` (a `break` before it: `n=0; ((n++)) || true;
    [ … ] && break; n=0; done`): is another of `may_hold` (the assignments before `a`) one that
    may be the last to run (branches.last_to_run), with a count of its variable on every way
    from it to `a`? On the runs where it is the last, the count left its variable past 0: `a`
    stops bash on some runs only. Only read where a count lies between the first of them and
    `left`'s."""
    if not left or left[-1][1] is None or not ZERO_RE.fullmatch(left[-1][1]):
        return False
    pos = left[-1][0]
    first = bisect.bisect_right(counted, may_hold[0][0])
    if first >= len(counted) or counted[first] >= pos or counts.since(a, pos):
        return False
    candidates, _every = last_to_run(list(may_hold), may_hold[0][0], a.offset, scan.constructs,
                                     path_of)
    return any(at != pos and (since := counts.since(a, at)) is not None and since[1]
               for at, _v in candidates)


def _counted_before(offsets: list[int], at: int, body: tuple[int, int]) -> bool:
    """Is one of `offsets` (a variable's counters', in order) before `at` and out of the span
    `body` (the function's body a counter is judged at a call of: its earlier pass)?"""
    before = bisect.bisect_left(offsets, at)
    inside = max(0, bisect.bisect_left(offsets, min(body[1], at))
                 - bisect.bisect_left(offsets, body[0])) if body[0] < body[1] else 0
    return before > inside


#: A finding given way to (check_arith's `partly_at`), left out of the result.
_NONE = Finding(CHECK_ARITH_ZERO, "pass", None, N_("no `((n++))` from 0 under `set -e`"))


class _AtCall(NamedTuple):
    """Where _at_calls judges an arithmetic command in a function's body."""

    at: int | None  # the call's offset (None: no call stops bash)
    body: tuple[int, int]  # the body's span
    # the assignments before it there (counter_values.assigned_values's)
    before: list[tuple[int, str | None]]
    partial: bool = False  # `set -e` applies there on some paths only (a branch of the body)
    # a call after an earlier one (not its function's first): "again", or "next pass" (the
    # same call on a loop's next pass), the offset of the assignment whose value it reads, the
    # function's name, and whether it reads that value on every run (not when the body leaves
    # it so in a branch bash may skip)
    later: tuple[str, int, str, bool] | None = None
    # the assignment it reads there on some runs only (a branch of a body the call is made
    # through sets it): _finding's `set_partly`
    set_partly: int | None = None


def _with_later_passes(calls: list[Call], loops: dict[int, int]) -> list[Call]:
    """`calls` (outermost_calls's) with the calls made in a loop's body made again on its next
    pass (model.Call.loop_from: the innermost loop's start), after the loop's last call, where
    the walk read that body once (its options the same on every pass): a call that runs a
    body leaving `m` at 0 (`f() { ((m++)); m=0; }`) reads it so on the loop's next pass."""
    again = {(c.offset, c.name, c.chain) for c in calls if c.loop_from is not None}
    result: list[Call] = []
    pending: dict[int, list[Call]] = {}  # by the end of its loop: the next pass's calls
    for call in calls:
        for end in [e for e in pending if call.offset >= e]:
            result.extend(pending.pop(end))
        result.append(call)
        around = [(start, end) for start, end in loops.items() if start <= call.offset < end]
        if around and call.loop_from is None and (call.offset, call.name, call.chain) not in again:
            start, end = max(around)  # the innermost
            pending.setdefault(end, []).append(replace(call, loop_from=start))
    for later in pending.values():
        result.extend(later)
    return result



def _stops(a: Arith, before: Sequence[tuple[int, str | None]],
           unset: bool) -> tuple[bool, str | None]:
    """Does `a` make a finding, with `before` the assignments to its variable before it
    (counter_values.assigned_values's; none: `unset`, when nothing may set it), and the value
    it reads there."""
    if not before:
        # `set -e` off, no `set -u`: an unset `n` is 0 and stops nothing
        return (a.errexit or a.nounset) and unset, None
    pos, value = before[-1]
    if not a.errexit:
        # set: no unbound variable, and no `set -e` to stop on its status
        return bool((a.errexit_off or a.tested_by) and value is not None
                    and BAD_OCTAL_RE.fullmatch(value)), value
    if value is None or not (ZERO_RE.fullmatch(value) or BAD_OCTAL_RE.fullmatch(value)):
        return False, value
    # a later pass of a loop: `n` is 0 before the loop only, in its first
    return not (a.zero_after is not None and pos < a.zero_after
                and not BAD_OCTAL_RE.fullmatch(value)), value




def _at_calls(a: Arith, assigned: list[tuple[int, str | None]],
              calls_of: dict[str, list[Call]], spans: list[tuple[int, int, str]],
              constructs: dict[tuple[int, int], Construct],
              path_of: Callable[[int], tuple[Step, ...]]) -> _AtCall | None:
    """Where `a`, in the body of a function the script calls (from its own shell, or from
    another function's body run there: calls.outermost_calls), is judged: at the call it was
    read again at under `set -u` (model.Arith.called_at: an earlier call, where `set -u` was
    off, counted the variable from unset), else under `set -e` at the first call where
    `set -e` stops on it (the variable zero, empty, unset or "08" there), else at the first
    call; with what sets the variable before that call: its last assignment outside the
    body, or, when the body ran since (an earlier call), what the body's end leaves (its last
    assignment after `a`, `m=0`, on every way through its branches: branches.last_to_run; one
    in a branch bash may skip leaves it so on some runs only) or else an unknown value, but an
    "08" that no count changes. None: `a` is in no such body, and is judged where it is."""
    k = bisect.bisect_right(spans, (a.offset, 1 << 62, ""))
    if not k or spans[k - 1][1] <= a.offset:
        return None  # in no body (or in one after a function defined in it: not judged here)
    start, end, name = spans[k - 1]
    body = (start, end)
    calls = calls_of.get(name, [])
    if not calls or any(c.in_function for c in calls):
        return None
    first: _AtCall | None = None
    # what the body's end leaves the variable at, set after `a` (`f() { ((m++)); m=0; }`): what
    # a call after one that ran the body reads (None: the body does not set it after `a`)
    left, every_run = left_at_end(between(assigned, a.offset, end), a.offset, end, constructs,
                                  path_of)
    earlier: set[int] = set()  # the offsets of the calls before this one
    for call, ran, last, also in values_at_calls(name, body, calls, assigned, constructs,
                                                 path_of):
        # set in a branch of a body the call is made through: on the runs where the value that
        # stops bash is the one that holds (said so, a warning)
        set_partly: int | None = None
        stopping = [(pos, v) for pos, v in [*also, last] if v is not None and stops_at(v)
                    ] if also and last is not None else []
        if stopping and len(stopping) <= len(also):
            last = stopping[-1]
            set_partly = last[0]
        value = last[1] if last is not None else ""
        octal = value is not None and BAD_OCTAL_RE.fullmatch(value) is not None
        from_body = ran and not octal
        before: list[tuple[int, str | None]] = (
            [(call.offset, left[-1][1] if left else None)] if from_body
            else [last] if last is not None else [])
        source = left[-1][0] if from_body and left else last[0] if last is not None else None
        later = None if not earlier or source is None else (
            "next pass" if call.offset in earlier else "again", source, name,
            every_run if from_body else set_partly is None)
        earlier.add(call.offset)
        if a.called_at is not None:  # read again at that call: judged there
            if call.offset == a.called_at:
                return _AtCall(call.offset, body, before)
            continue
        if first is None:
            first = _AtCall(call.offset, body, before)
        if not a.errexit:
            return first
        held = before[-1][1] if before else None
        stops = not before or held is not None and (
            ZERO_RE.fullmatch(held) or BAD_OCTAL_RE.fullmatch(held) or octal)
        # `set -e` applies there, or the body turned it on before `a` (not at a tested call),
        # each on every path or on some only
        by_body = a.errexit_in_body and not call.tested
        if (call.errexit or by_body) and stops:
            return _AtCall(call.offset, body, before, not (
                call.errexit and not call.errexit_partial
                or by_body and not a.errexit_in_body_partial), later,
                None if from_body else set_partly)
    return _AtCall(None, body, [])


def _next_pass_partly(loop: tuple[int, int], scan: Scan) -> bool:
    """Does the loop from `loop`'s start to its `done` make its next pass on some runs only:
    a `break` / `return` in its body leaves it, or an `exit` bash may skip is in it
    (model.Scan.left_loops, maybe_exits)?"""
    start, done = loop
    k = bisect.bisect_right(scan.maybe_exits, start)
    return start in scan.left_loops or k < len(scan.maybe_exits) and scan.maybe_exits[k] < done


def _finding(a: Arith, line: int, value: str | None,
             prefix: tuple[str, int] | None = None, carried: tuple[int, bool] | None = None,
             later: tuple[str, int, int, str, bool] | None = None,
             skipped_count: int | None = None, set_partly: int | None = None,
             unset_partly: int | None = None,
             apart: tuple[int, str, int | None, str] | None = None) -> Finding:
    """The finding of arithmetic command `a` on `line`, with `value` the text its variable
    holds there: zeros, empty, a number arithmetic cannot read ("08"), or None when nothing in
    the script sets it (`prefix`: the last command before it that the variable prefixes, `n=0
    cmd`, and its line, which sets it for that command only; `carried`: the line at the end
    of a loop's body that leaves it so for the loop's next pass, and whether on every run
    (else in a branch of the body bash may skip: on the runs that take it); `later`: in a function's
    body, stopping bash at a call after an earlier one, not the first (_AtCall.later): how
    ("again", "next pass"), that call's line, the line of the assignment whose value it
    reads, the function, and whether on every run (else in a branch of the body bash may
    skip: on the runs that take it); `skipped_count`: the line of a count of it after its assignment
    that bash may skip, a branch or a loop: it stops bash on the runs that skip it;
    `set_partly`: the line of the assignment it reads on some runs only, as branches on the way
    decide which value it holds: it stops bash on those runs; `unset_partly`: the line of the
    last assignment before it, where all of them are in branches bash may skip and nothing
    else sets it: it reads it unset on the runs that skip them, and stops bash there;
    `apart`: the line of an assignment before it in another branch of an `if` / `case` it is
    in, that construct's kind, the line of the assignment it reads (None: unset) and the
    first's text: it stops bash on the runs that take its branch, before which that
    assignment never runs)."""
    said = {"line": line, "command": short(a.command), "var": a.variable,
            "under": under_pipefail_partly(a.errexit_partial) if a.pipefail_partial
            else under_errexit("`set -e`", a.errexit_partial), "slurm": slurm_shows(1)}
    unset = value is None
    octal = value is not None and BAD_OCTAL_RE.fullmatch(value) is not None
    # with `set -e` on some paths only, the stop is on the runs that take them; an unset
    # variable in capitals may come from the job's environment (sbatch passes the submitter's)
    level: Level = "warn" if (a.errexit_partial or a.pipefail_partial
                              or unset and a.variable.isupper()
                              or skipped_count is not None
                              or later is not None and not later[4]
                              or carried is not None and not carried[1]
                              or set_partly is not None
                              or unset and unset_partly is not None
                              or apart is not None and not octal) else "fail"
    if octal and not a.errexit:
        # where `set -e` is off or does not apply, bash goes on past the error (status 1): the
        # count stays where it was
        fix_decimal = N_("read it as decimal: `%(var)s=$(( 10#$%(var)s %(step)s ))`, and add "
                         "with `(( %(var)s += N ))` (`%(var)s+=N` appends text: \"0\" and \"8\" "
                         "make \"08\")", var=a.variable,
                         step="- 1" if "--" in a.command else "+ 1")
        if a.errexit_off and a.tested_by in ("", "&&", "||"):
            return Finding(CHECK_ARITH_ERROR, "warn", line, N_(
                "line %(line)s: `%(command)s` with `%(var)s` at \"%(value)s\" is an arithmetic "
                "error (a leading 0 makes a number octal, which has no digit 8 or 9: bash says "
                "`value too great for base`); `set -e` is off, so the launcher goes on, but "
                "`%(var)s` stays \"%(value)s\" and never counts", value=value, **said),
                fix_decimal)
        return Finding(CHECK_ARITH_ERROR, "warn", line, N_(
            "line %(line)s: `%(command)s` with `%(var)s` at \"%(value)s\" is an arithmetic "
            "error (a leading 0 makes a number octal, which has no digit 8 or 9: bash says "
            "`value too great for base`) with status 1, and %(tested)s; `%(var)s` stays "
            "\"%(value)s\" and never counts", value=value,
            tested=_tested(a.tested_by), **said), fix_decimal)
    if carried is not None and not octal:
        text = _carried_text(a, unset, *carried, said)
    elif later is not None and value is not None:
        kind, call, at, function, every_run = later
        when = (N_("when the call on line %(call)s runs the body of `%(function)s` on the "
                   "loop's next pass", call=call, function=function) if kind == "next pass"
                else N_("when the call on line %(call)s runs the body of `%(function)s` again",
                        call=call, function=function))
        how = (N_("as line %(at)s sets it", at=at) if every_run else
               N_("as line %(at)s sets it on some runs only (branches of the body decide "
                  "which value it leaves)", at=at))
        text = N_("line %(line)s: %(when)s, `%(command)s` reads `%(var)s` at \"%(value)s\" "
                  "%(how)s, so its status is 1: %(under)s the launcher stops right here at that "
                  "call, not at an earlier one: %(slurm)s", when=when, value=value, how=how,
                  **said)
    elif unset and unset_partly is not None and a.nounset:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` unset on the runs that skip "
                  "line %(at)s, which sets it in a branch bash may not run (nothing else before "
                  "it does): %(stop)s: %(slurm)s", at=unset_partly,
                  stop=_unbound_stop(a, said, _ON_THOSE_RUNS), **said)
    elif unset and unset_partly is not None:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` unset on the runs that skip "
                  "line %(at)s, which sets it in a branch bash may not run (nothing else before "
                  "it does), and evaluates to 0 there, so its status is 1: %(under)s the "
                  "launcher stops right here on those runs: %(slurm)s", at=unset_partly,
                  **said)
    elif set_partly is not None and value is not None and not octal:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` at \"%(value)s\" as line %(at)s "
                  "sets it on some runs only (branches on the way here decide which value it "
                  "holds), so its status is 1: %(under)s the launcher stops right here on those "
                  "runs: %(slurm)s", value=value, at=set_partly, **said)
    elif skipped_count is not None and not octal:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` at 0 on the runs that skip line "
                  "%(at)s, which counts it in a branch or a loop bash may not run, and "
                  "evaluates to 0 there, so its status is 1: %(under)s the launcher stops right "
                  "here on those runs: %(slurm)s", at=skipped_count, **said)
    elif apart is not None and not octal and unset and a.nounset:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` unset, as `%(assignment)s` on "
                  "line %(other)s is in another branch of the same %(construct)s, which never "
                  "runs before this one, and nothing else before it sets it: %(stop)s: "
                  "%(slurm)s", assignment=apart[3], other=apart[0], construct=f"`{apart[1]}`",
                  stop=_unbound_stop(a, said, _ON_THIS_BRANCH), **said)
    elif apart is not None and not octal and unset:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` unset, as `%(assignment)s` on "
                  "line %(other)s is in another branch of the same %(construct)s, which never "
                  "runs before this one, and nothing else before it sets it; it evaluates to 0, "
                  "so its status is 1: %(under)s the launcher stops right here on the runs that "
                  "take this branch: %(slurm)s", assignment=apart[3], other=apart[0],
                  construct=f"`{apart[1]}`", **said)
    elif apart is not None and not octal:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s` at \"%(value)s\" as line %(at)s "
                  "sets it (`%(assignment)s` on line %(other)s is in another branch of the same "
                  "%(construct)s, which never runs before this one), so its status is 1: "
                  "%(under)s the launcher stops right here on the runs that take this branch: "
                  "%(slurm)s", value=value, at=apart[2], assignment=apart[3], other=apart[0],
                  construct=f"`{apart[1]}`", **said)
    elif a.assigns_zero:
        text = N_("line %(line)s: `%(command)s` sets `%(var)s` to 0 and evaluates to 0, so its "
                  "status is 1: %(under)s the launcher stops right here: %(slurm)s", **said)
    elif unset and a.nounset:
        text = N_("line %(line)s: `%(command)s` reads `%(var)s`, which nothing in the script "
                  "sets (only the job's environment could): %(stop)s: %(slurm)s",
                  stop=_unbound_stop(a, said), **said)
    elif unset:
        text = N_("line %(line)s: `%(command)s` with `%(var)s` unset (nothing in the script "
                  "sets it; only the job's environment could) evaluates to 0, so its status is "
                  "1: %(under)s the launcher stops right here the first time: %(slurm)s",
                  **said)
    elif octal:
        text = N_("line %(line)s: `%(command)s` with `%(var)s` at \"%(value)s\" is an "
                  "arithmetic error (a leading 0 makes a number octal, which has no digit 8 or "
                  "9: bash says `value too great for base`), so its status is 1: %(under)s "
                  "the launcher stops right here: %(slurm)s", value=value, **said)
    elif not value:
        text = N_("line %(line)s: `%(command)s` with `%(var)s` empty (`%(var)s=`: 0 in "
                  "arithmetic) evaluates to 0, so its status is 1: %(under)s the launcher "
                  "stops right here the first time: %(slurm)s", **said)
    else:
        text = N_("line %(line)s: `%(command)s` with `%(var)s` at 0 evaluates to 0, so its "
                  "status is 1: %(under)s the launcher stops right here the first time: "
                  "%(slurm)s", **said)
    if a.assigns_zero:
        fix = N_("write `%(var)s=0`, whose status is 0", var=a.variable)
    elif unset and prefix:
        fix = N_("`%(prefix)s` on line %(at)s sets `%(var)s` in that command's environment "
                 "only, not in the script: set it on a line of its own first (`%(var)s=0`), "
                 "then use `(( ++%(var)s ))` or `%(var)s=$(( %(var)s + 1 ))`",
                 prefix=short(prefix[0], 40), at=prefix[1], var=a.variable)
    elif unset:
        fix = N_("set it first (`%(var)s=0`), then use `(( ++%(var)s ))` or "
                 "`%(var)s=$(( %(var)s + 1 ))`", var=a.variable)
    elif octal:
        fix = N_("add with `(( %(var)s += N ))` (`%(var)s+=N` appends text: \"0\" and \"8\" "
                 "make \"08\"), and give arithmetic numbers without a leading 0 "
                 "(`$(( 10#$%(var)s ))` reads one as decimal)", var=a.variable)
    else:
        fix = N_("use `(( ++%(var)s ))` or `%(var)s=$(( %(var)s + 1 ))`", var=a.variable)
    return Finding(CHECK_ARITH_UNSET if unset and a.nounset else CHECK_ARITH_ZERO, level, line,
                   text, fix)


def _carried_text(a: Arith, unset: bool, at: int, every_run: bool, said: dict[str, Any]
                  ) -> Text:
    """The finding's text when `a` stops bash on a loop's next pass, with its variable as
    line `at` leaves it at the end of the body: 0 / empty, or unset (`unset n`); on every
    run, or on those that take a branch of the body (`every_run` False)."""
    if unset and not every_run and a.nounset:
        return N_("line %(line)s: on the loop's next pass `%(command)s` reads `%(var)s` unset, "
                  "as `unset %(var)s` on line %(at)s leaves it on some runs only (branches of "
                  "the body decide which value it leaves): %(stop)s: %(slurm)s", at=at,
                  stop=_unbound_stop(a, said, _ON_THOSE_RUNS), **said)
    if unset and not every_run:
        return N_("line %(line)s: on the loop's next pass `%(command)s` reads `%(var)s` unset, "
                  "as `unset %(var)s` on line %(at)s leaves it on some runs only (branches of "
                  "the body decide which value it leaves), and evaluates to 0, so its status is "
                  "1: %(under)s the launcher stops right here on those runs: %(slurm)s", at=at,
                  **said)
    if unset and a.nounset:
        return N_("line %(line)s: on the loop's next pass `%(command)s` reads `%(var)s` unset, "
                  "as `unset %(var)s` on line %(at)s leaves it at the end of the body: "
                  "%(stop)s: %(slurm)s", at=at, stop=_unbound_stop(a, said), **said)
    if unset:
        return N_("line %(line)s: on the loop's next pass `%(command)s` reads `%(var)s` unset, "
                  "as `unset %(var)s` on line %(at)s leaves it at the end of the body, and "
                  "evaluates to 0, so its status is 1: %(under)s the launcher stops right here "
                  "on that pass: %(slurm)s", at=at, **said)
    if not every_run:
        return N_("line %(line)s: on the loop's next pass `%(command)s` reads `%(var)s` at 0 "
                  "%(how)s, and evaluates to 0, so its status is 1: %(under)s the launcher "
                  "stops right here on that pass: %(slurm)s",
                  how=N_("as line %(at)s sets it on some runs only (branches of the body "
                         "decide which value it leaves)", at=at), **said)
    return N_("line %(line)s: on the loop's next pass `%(command)s` reads `%(var)s` at 0, as "
              "line %(at)s leaves it at the end of the body, and evaluates to 0, so its status "
              "is 1: %(under)s the launcher stops right here on that pass: %(slurm)s",
              at=at, **said)


def _unbound_stop(a: Arith, said: dict[str, Any], runs: Text | None = None) -> Text:
    """What `set -u` does at `a`, whose variable is unset there (on the `runs` it names, "on
    those runs", or on every run): bash stops right here; in a pipeline's element before the
    last where `pipefail` is on on some paths only (model.Arith.pipefail_partial), it ends
    that element's subshell, which stops the launcher only where `pipefail` (and `set -e`)
    are on, as `said`'s `under` says."""
    if a.pipefail_partial and runs is not None:
        return N_("under `set -u` bash ends this pipeline's element right here %(runs)s with "
                  "`%(var)s: unbound variable`, and %(under)s the launcher stops with it",
                  runs=runs, **said)
    if a.pipefail_partial:
        return N_("under `set -u` bash ends this pipeline's element right here with "
                  "`%(var)s: unbound variable`, and %(under)s the launcher stops with it",
                  **said)
    if runs is not None:
        return N_("under `set -u` bash stops right here %(runs)s with `%(var)s: unbound "
                  "variable`", runs=runs, **said)
    return N_("under `set -u` bash stops right here with `%(var)s: unbound variable`", **said)


def _tested(tested_by: str) -> Text:
    """What bash does with the status 1 of an arithmetic error that `tested_by` (model.Arith)
    tests, none of it a stop."""
    if tested_by in ("&&", "||"):
        return N_("`%(op)s` tests it, so `set -e` does not stop the launcher", op=tested_by)
    if tested_by in ("if", "elif"):
        return N_("`%(keyword)s` takes it as false: its `then` branch is skipped and the "
                  "launcher goes on", keyword=tested_by)
    if tested_by == "while":
        return N_("`while` takes it as false: the loop ends there and the launcher goes on")
    if tested_by == "until":
        return N_("`until` takes it as false: the loop's body runs again, and this test never "
                  "ends the loop")
    return N_("a condition tests it, so `set -e` does not stop the launcher")
