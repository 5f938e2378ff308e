"""`arith_zero_under_errexit`: an arithmetic command whose status is 1 under `set -e`: `((n++))`
/ `let n++` with `n` last set to 0, empty or never set (unset is 0), or to a number arithmetic
cannot read ("08": an error), `((n=0))` / `let n=0`. `arith_unset_under_nounset`: under
`set -u`, with or without `set -e`, `((n++))` of an `n` never set (an unbound variable, which
stops bash whatever tests the command's status). `arith_error_without_errexit`: where `set -e`
is off or does not apply (`((n++)) || true`, `if ((n++))`), `((n++))` of an `n` arithmetic
cannot read ("08"): bash says so, the command's status is 1 and bash goes on, `n` never
counts.

Here: the judgment (`check_arith`: what each counter's variable holds where it runs); the
counters the walk collects and those a call of a function counts are
bot.core.launcher_lint.arith_commands', a counter in a function's body is judged at a call
(bot.core.launcher_lint.arith_calls), and what a finding says is
bot.core.launcher_lint.arith_findings'."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from bot.core.findings import Finding
from bot.core.launcher_lint.arith_calls import at_calls, with_later_passes
from bot.core.launcher_lint.arith_commands import counted_at_calls
from bot.core.launcher_lint.arith_findings import arith_finding, through_substitution
from bot.core.launcher_lint.body_assignments import (
    COMMAND_ARGUMENT_RE,
    AssignmentWalk,
    background_lists,
    bodies_called_before,
    calls_all_read,
    calls_in_shell,
    local_names,
    own_view,
    right_in_bodies,
    set_at_calls,
    set_at_links,
    trap_action,
)
from bot.core.launcher_lint.branch_paths import (
    Step,
    last_to_run,
    path_index,
)
from bot.core.launcher_lint.calls import outermost_calls
from bot.core.launcher_lint.counter_values import (
    BAD_OCTAL_RE,
    UNSET,
    UNSET_RE,
    ZERO_RE,
    Assigned,
    Before,
    NeverSet,
    assigned_values,
    assignment_text,
    in_other_branches,
    left_at_end,
    prefix_assignments,
    read_on_next_pass,
    reads_zero,
    resolved_steps,
    set_in_branches_only,
)
from bot.core.launcher_lint.counts_between import Counts, enclosing, find_subshells
from bot.core.launcher_lint.exit_calls import exit_trap_calls, never_called_bodies
from bot.core.launcher_lint.model import (
    CHECK_ARITH_ERROR,
    CHECK_ARITH_UNSET,
    CHECK_ARITH_ZERO,
    Arith,
    Call,
    Construct,
    Cover,
    Scan,
)
from bot.core.launcher_lint.signal_calls import in_order, signal_calls
from bot.core.launcher_lint.syntax import loop_passes
from bot.core.text import N_

#: The most functions with no placed call that check_arith reads the names of (one pass each).
MAX_UNPLACED_READ = 20


def _named_nowhere_else(code: str, names: set[str], bodies: dict[str, tuple[int, int]],
                        never_run: list[tuple[int, int]], read_at: set[int],
                        unplaced_exit: bool = False) -> set[str]:
    """Those of `names` (functions whose every call the walk placed is one bash never makes)
    whose name the script has nowhere but in their definitions, in what bash never runs
    (`never_run`: `true || f`) or in the bodies of others of them: no call the walk does not
    place may run them (`eval f`, `c=f; $c`, `x=$(f)`, `trap f EXIT`, `bash -c "…; f"`), but
    the calls whose body's counter is read there (`read_at`: model.Arith.substituted),
    `command f` (which skips functions) and a trap's action bash runs on a signal or `ERR`
    only (`trap f INT`: on no normal run, body_assignments.trap_action); with
    `unplaced_exit`, an `EXIT` trap's action too (`trap f EXIT` where exit_trap_calls did not
    place its call: set on some runs, in a body, reset or set again; bash runs the body as the
    shell exits, with values not read there, so it is judged nowhere: a miss rather than a
    fail of the body's text where it is)."""
    found = set(names)
    spots = {name: [m.start() for m in re.finditer(
        r"(?<![\w$./:-])" + re.escape(name) + r"(?![\w:-])", code)] for name in names}
    while True:
        holds = [*never_run, *(bodies[name] for name in found)]
        left = {name for name in found if all(
            at in read_at or any(start <= at < end for start, end in holds)
            or re.match(r"[ \t]*\(", code[at + len(name):at + len(name) + 40])
            or re.search(r"\bfunction[ \t]+$", code[max(0, at - 20):at])
            or COMMAND_ARGUMENT_RE.search(code, max(0, at - 40), at)
            or trap_action(code, at) == "signal"
            or unplaced_exit and trap_action(code, at) == "exit"
            for at in spots[name])}
        if left == found:
            return found
        found = left


def check_arith(scan: Scan, code: str) -> list[Finding]:
    """The findings of the arithmetic checks, each with a `pass` note when it finds nothing:
    `arith_zero_under_errexit` (a status of 1 that `set -e` stops on),
    `arith_unset_under_nounset` (an unbound variable that `set -u` stops on) and
    `arith_error_without_errexit` (an arithmetic error nothing stops on). One finding a line:
    the first collected, but a stop over an error bash goes past (a loop's first pass, where
    `set -e` is off, goes on; a later pass, after the body's `set -e`, stops there). `code` is
    the text the walk read, each here-document's body blanked in place (its data no call, no
    assignment, no `kill`, no `trap`), with the script's offsets."""
    findings: list[Finding] = []
    # the loops whose number of passes the script says (syntax.loop_passes): one bash makes no
    # pass through sets nothing, one it makes a single pass through has no next pass
    passes = {start: loop_passes(code, start, done) for start, done in scan.loops.items()}
    never_run = [(start, scan.loops[start]) for start, n in passes.items() if n == 0
                 ] + scan.never_run
    # (… and the bodies of the functions nothing calls: what they assign holds nowhere)
    never_run += never_called_bodies(code, scan.uncalled_bodies)
    # (… and the calls of a signal trap's function at a `kill` the script sends itself, past
    # which nothing runs where that function always exits)
    at_kills, past_exits = signal_calls(code, scan) if scan.arith else ([], [])
    if past_exits:
        never_run += past_exits
        scan = replace(scan, arith=[a for a in scan.arith if not any(
            start <= a.offset < end for start, end in past_exits)])
    repeating = {start: done for start, done in scan.loops.items()
                 if passes[start] != 1 and start not in scan.one_pass}
    # the calls bash never makes (`true || f`, `if false; then f; fi`) run no body, and the
    # bodies of the functions it calls there only never run
    # (… and the call bash makes of an `EXIT` trap's function as the shell exits: at the end)
    at_exit = exit_trap_calls(code, scan) if scan.arith else []
    placed = outermost_calls(in_order(scan.calls, [*at_kills, *at_exit]), scan.bodies
                             ) if scan.arith else []
    never_called: set[str] = set()
    # (the functions the walk placed no call of: named only where bash runs no body, `command
    # f`, `g() { return 0; f; }`, they never run either; read for a few only, each a pass)
    unplaced = set(scan.bodies) - {c.name for c in placed} if scan.arith else set()
    if len(unplaced) > MAX_UNPLACED_READ:
        unplaced = set()
    if placed and never_run or unplaced:
        # (a call made through bodies is never made where one of its links is not)
        skipped = enclosing(never_run, [
            *(c.offset for c in placed), *(link[2] for c in placed for link in c.chain)])
        made = [c for c in placed if c.offset not in skipped
                and not any(link[2] in skipped for link in c.chain)]
        never_called = _named_nowhere_else(code, {c.name for c in placed} - {
            c.name for c in made} | unplaced, scan.bodies, never_run,
            {a.offset for a in scan.arith if a.substituted}, unplaced_exit=not at_exit)
        never_run += [scan.bodies[name] for name in never_called]
        placed = made
    prefixes = prefix_assignments(code) if scan.arith else {}
    values = assigned_values(code, {a.variable for a in scan.arith}, prefixes, never_run,
                             [*scan.bodies.values(), *scan.uncalled_bodies],
                             list(repeating.items())) if scan.arith else {}
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
    # each function's calls, in the walk's order (none: bash never makes one)
    calls_of: dict[str, list[Call]] = {name: [] for name in never_called}
    spans = sorted((start, end, name) for name, (start, end) in scan.bodies.items())
    for call in with_later_passes(placed, repeating) if repeating else placed:
        calls_of.setdefault(call.name, []).append(call)
    # (`( … )`, and the compounds bash runs in one: `fi | cat`, `cat x | if …`)
    # (… and the branches and bodies that run into an `exit`: model.Scan.dead_ends)
    subshells = find_subshells(code) + scan.piped + scan.dead_ends if values else []
    path_of, nested = path_index(scan.constructs)
    path_of = functools.cache(path_of)
    # the subshells around each assignment
    in_subshells = enclosing(subshells, [pos for v in values.values() for pos, _v in v])
    # the counts of the arithmetic expansions in a body (`f() { x=$((++n)); }`) hold in that
    # body only, as one in a subshell does: where a call runs it, they count at the call, as
    # the body's counters do (arith_commands.counted_at_calls)
    # (and in a body the walk did not read, of a function never called: nowhere)
    expansions = {pos: var for var, v in values.items() for pos, _v in v
                  if code.startswith("$((", pos)} if (scan.bodies or scan.uncalled_bodies) \
        and "$((" in code else {}
    expansion_body = enclosing([*scan.bodies.values(), *scan.uncalled_bodies],
                               list(expansions)) if expansions else {}
    for pos, body in expansion_body.items():
        in_subshells.setdefault(pos, body)
    expansions = {pos: var for pos, var in expansions.items() if pos in expansion_body}
    # the variables each body declares its own (`local n`), and where
    locals_of = {body: local_names(code, body) for body in scan.bodies.values()} if (
        "local" in code or "declare" in code or "typeset" in code) else {}
    counter_body = enclosing([(s, e) for s, e, _n in spans], [a.offset for a in scan.arith]
                             ) if any(locals_of.values()) else {}
    # the calls that run a body in the script's shell, and where a body's plain assignments
    # hold for the counters outside the bodies: at those calls (body_assignments)
    in_shell = calls_in_shell(code, placed, scan.bodies, subshells, path_of, {}) \
        if placed else []
    # (… where every place a body may run is such a call: else where the body is, as bash
    # may run it anywhere past it)
    top_values, fake_paths, fake_constructs, at_links = _set_where_called(
        code, values, in_shell, scan, subshells, in_subshells, expansions, locals_of, path_of
    ) if calls_all_read(code, scan.calls, scan.bodies, scan.uncalled_bodies,
                      scan.never_run) else (values, {}, {}, {})
    if at_links:  # (a counter in a body reads what the bodies it called before it set)
        values = {var: sorted([*v, *at_links.get(var, [])], key=lambda e: e[0])
                  for var, v in values.items()}
    # (what a call in a body reads: the script's view and the bodies' own assignments, these
    # read through a chain of calls only: arith_calls.at_calls's `hidden`)
    in_bodies: set[int] = set()
    for_calls = values
    if top_values is not values:
        in_bodies = {pos for v in values.values() for pos, _v in v} - {
            pos for v in top_values.values() for pos, _v in v}
        for_calls = {var: [e for e in sorted(
            [*top_values[var], *(e for e in v if e[0] in in_bodies)], key=lambda e: e[0])
            if e[0] not in in_subshells] for var, v in values.items()}
    if fake_paths:
        scan = replace(scan, constructs={**scan.constructs, **fake_constructs})
        real_path_of = path_of

        def path_of(pos: int) -> tuple[Step, ...]:
            return fake_paths[pos] if pos in fake_paths else real_path_of(pos)
    # each variable's assignments outside subshells read once for all its counters where the
    # branches nest: those of every counter when no assignment is in a subshell, else of the
    # counters in none (each counter in one reads them: the lists below); of the counters in
    # a function's body (`values`), and of the others (`top_values`)
    read_once, in_subshell = _read_once(values, in_subshells, scan, path_of, spans, nested)
    read_once_top, in_subshell_top = (read_once, in_subshell) if top_values is values else \
        _read_once(top_values, in_subshells, scan, path_of, spans, nested)
    counter_in_subshell = enclosing(subshells + list(expansion_body.values()),
                                    [a.offset for a in scan.arith]) if (
        in_subshell or in_subshell_top) else {}
    counter_in_body = enclosing([(s, e) for s, e, _n in spans], [a.offset for a in scan.arith]
                                ) if top_values is not values else {}
    # (… and, there, the assignments right in each body, by variable: a body's text runs at its
    # calls, so a counter in another body reads them only through those: at_links)
    elsewhere = right_in_bodies(values, spans) if counter_in_body else {}
    # (… but for those of a body called before the counter's: `setup; main`)
    called_before = bodies_called_before(in_shell, scan.bodies) if elsewhere else {}
    # the innermost loop bash may make more than one pass through around each counter
    innermost = enclosing(list(repeating.items()), [a.offset for a in scan.arith])
    at_calls_always, at_calls_maybe = counted_at_calls(code, in_shell, scan.bodies, values,
                                                       subshells, path_of, never_run,
                                                       scan.constructs, expansions)
    # (a count in a list run in the background, `((n++)) || true &`, counts in its subshell)
    behind = background_lists(code, 0, len(code), {}) if "&" in code else []
    counts = Counts(scan.arith + at_calls_always + at_calls_maybe,
                    subshells + behind + [(s, e) for s, e, _n in spans], scan.constructs,
                    path_of, nested,
                    maybe=len(scan.arith) + len(at_calls_always))
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
        # judged at a later call (arith_calls.AtCall)
        later: tuple[str, int, str, bool] | None = None
        skipped_count: int | None = None  # a count bash may skip before it, where
        # the assignment it reads, where that is so on some runs only (a branch decides)
        set_partly: int | None = None
        # the assignment it reads, in a branch bash may skip, where nothing else sets it first
        unset_partly: int | None = None
        # the last assignment (or count) before it in the text that is in another branch of
        # an `if` / `case` it is in, which never runs before it: its offset and the
        # construct's kind
        apart: tuple[int, str] | None = None
        unset_by: int | None = None  # the `unset n` it reads `n` unset after
        at, body = a.offset, (0, 0)  # where it is judged: at a call of its function, if in one
        if not a.assigns_zero:
            before: Sequence[tuple[int, str | None]]
            all_before: Sequence[tuple[int, str | None]]
            # (a counter outside the bodies reads their assignments at their calls)
            outside = a.offset not in counter_in_body and top_values is not values
            its_values, once, assigned_in_subshell = (
                (top_values, read_once_top, in_subshell_top) if outside
                else (values, read_once, in_subshell))
            if a.variable in once and not (a.variable in assigned_in_subshell
                                           and a.offset in counter_in_subshell):
                assigned = once[a.variable].entries
                before = all_before = once[a.variable].before(a.offset)
            else:
                # an assignment in a subshell `a` is not in sets nothing where `a` runs
                assigned = [(pos, v) for pos, v in its_values.get(a.variable, [])
                            if pos not in in_subshells
                            or in_subshells[pos][0] <= a.offset < in_subshells[pos][1]]
                before = all_before = [(pos, v) for pos, v in assigned if pos < a.offset]
            if a.offset in counter_in_body and a.variable in elsewhere:
                assigned, before = own_view(
                    assigned, before, elsewhere[a.variable], counter_in_body[a.offset],
                    called_before.get(counter_in_body[a.offset], ()))
                all_before = before
            declared = locals_of.get(counter_body.get(a.offset, (0, 0)), {}).get(a.variable)
            if declared is not None and declared < a.offset:
                # declared its body's own before it (`local n`): it reads what the body sets
                # since, unset (empty) at the declaration
                end = counter_body[a.offset][1]
                assigned = [(declared, ""), *(
                    (pos, v) for pos, v in values.get(a.variable, []) if declared < pos < end
                    and (pos not in in_subshells
                         or in_subshells[pos][0] <= a.offset < in_subshells[pos][1]))]
                before = all_before = [(pos, v) for pos, v in assigned if pos < a.offset]
            called = at_calls(a, assigned if outside or declared is not None or not in_bodies
                              else for_calls[a.variable], calls_of, spans, scan.constructs,
                              path_of, in_bodies)
            if called is not None and not (before and before[-1][0] >= called.body[0]):
                if called.at is None:
                    continue  # no call where its status or an unbound variable stops bash
                at, body, before, later = called.at, called.body, called.before, called.later
                set_partly = called.set_partly
                if called.partial:  # `set -e` on some paths only: said so, a warning
                    a = replace(a, errexit_partial=True)
                if (before and before[-1][1] is not None and reads_zero(before[-1][1])
                        and (counted := counts.since(replace(a, offset=at), before[-1][0]))):
                    # a count between the assignment and the call (in the script, at a call
                    # of another body): past 0 there, on every run or on some
                    if counted[1]:
                        before = [*before[:-1], (before[-1][0], None)]
                    else:
                        skipped_count = counted[0]
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
                if (before and before[-1][1] is not None and reads_zero(before[-1][1])
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
            if before and before[-1][1] == UNSET and not _set_since_unset(
                    a, before[-1][0], at, body, code, never_set):
                unset_by, before = before[-1][0], []  # `unset n`: no value, as if never set
            unset = unset_by is not None or not before and (not assigned and never_set.holds(
                a.variable, len(values.get(a.variable, [])))
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
        ] if value is None and unset_by is None else []
        found = arith_finding(a, line, value,
                              (prefix[-1][1], scan.line_of(prefix[-1][0])) if prefix else None,
                              carried_at, None if later is None else (
                                  later[0], scan.line_of(at), scan.line_of(later[1]), later[2],
                                  later[3]),
                              None if skipped_count is None else scan.line_of(skipped_count),
                              None if set_partly is None else scan.line_of(set_partly),
                              None if unset_partly is None else scan.line_of(unset_partly),
                              None if apart is None or carried_at or later or unset_by
                              or skipped_count or set_partly or unset_partly else (
                                  scan.line_of(apart[0]), apart[1],
                                  scan.line_of(before[-1][0]) if before else None,
                                  assignment_text(code, apart[0])),
                              None if unset_by is None else scan.line_of(unset_by))
        if a.substituted:  # (`x=$(f)`: the assignment's status is the body's last command's)
            found = through_substitution(found, code, a)
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


def _read_once(values: dict[str, list[tuple[int, str | None]]],
               in_subshells: dict[int, tuple[int, int]], scan: Scan,
               path_of: Callable[[int], tuple[Step, ...]], spans: list[tuple[int, int, str]],
               nested: bool) -> tuple[dict[str, Assigned], set[str]]:
    """Each variable's assignments of `values` outside subshells (`in_subshells`: the
    subshell around each), read once for all its counters (counter_values.Assigned), where the
    branches nest (`nested`); and the variables one of whose assignments is in a subshell."""
    read_once: dict[str, Assigned] = {}
    in_subshell: set[str] = set()
    if nested:
        for var, assignments in values.items():
            outside = [(pos, v) for pos, v in assignments if pos not in in_subshells]
            if len(outside) < len(assignments):
                in_subshell.add(var)
            read_once[var] = Assigned(outside, scan.constructs, path_of, spans)
    return read_once, in_subshell


def _set_where_called(code: str, values: dict[str, list[tuple[int, str | None]]],
                      in_shell: list[tuple[Call, bool]], scan: Scan,
                      subshells: list[tuple[int, int]],
                      in_subshells: dict[int, tuple[int, int]], expansions: dict[int, str],
                      locals_of: dict[tuple[int, int], dict[str, int]],
                      path_of: Callable[[int], tuple[Step, ...]]
                      ) -> tuple[dict[str, list[tuple[int, str | None]]],
                                 dict[int, tuple[Step, ...]], dict[tuple[int, int], Construct],
                                 dict[str, list[tuple[int, str | None]]]]:
    """`values` as a counter outside the function bodies reads them: without the assignments
    in a body (called or not), with those the calls `in_shell` (body_assignments.calls_in_shell)
    make (body_assignments.set_at_calls): one on every run at the call's offset, one on some
    runs only just past it, in a branch of a construct of its own that bash may skip (its
    path, and the construct, by key: to add to path_of's and the scan's); the subshell around
    a call (`( f )`) added to `in_subshells`. `values` itself where no body sets a counter's
    variable. And what the calls made in bodies set where they are in their bodies
    (body_assignments.set_at_links), for the counters in bodies, placed the same way."""
    bodies = [*scan.bodies.values(), *scan.uncalled_bodies]
    positions = [pos for v in values.values() for pos, _v in v]
    body_around = enclosing(bodies, positions) if bodies else {}
    if not body_around:
        return values, {}, {}, {}
    right_in = enclosing([*subshells, *bodies], positions)
    # (an arithmetic expansion's count in a body counts at the calls:
    # arith_commands.counted_at_calls)
    plain = {var: [e for e in v if e[0] not in expansions] for var, v in values.items()}
    walk = AssignmentWalk(code, scan.bodies, plain, right_in, in_shell, locals_of,
                          scan.constructs, path_of)
    made, at_links = set_at_calls(walk), set_at_links(walk)
    fake_paths: dict[int, tuple[Step, ...]] = {}
    fake_constructs: dict[tuple[int, int], Construct] = {}

    def placed(by_call: dict[int, list[tuple[str | None, bool]]]
               ) -> list[tuple[int, str | None]]:
        """What calls leave: at each call's offset where on every run, else just past it, in
        a branch of a construct of its own that bash may skip."""
        found: list[tuple[int, str | None]] = []
        for at, left in by_call.items():
            for value, every_run in left:
                if every_run:
                    found.append((at, value))
                    continue
                key = (at + 1, -1)  # (no list starts there: the call's name is before it)
                fake_constructs[key] = (((at + 1, at + 2),), Cover())
                fake_paths[at + 1] = (*path_of(at), (key, 0))
                found.append((at + 1, value))
        return found

    at_calls = {var: placed(by_call) for var, by_call in made.items()}
    links = {var: placed(by_call) for var, by_call in at_links.items()}
    in_subshells.update(enclosing(subshells, [pos for v in at_calls.values() for pos, _v in v]))

    def holds(at: int, step_at: int) -> bool:
        """Does the assignment at `at` hold on every run at the body's step at `step_at`: in
        no subshell but the step's, in no branch the step is not in, at the head of its
        list (not `[ -n "$X" ] && n=1`)?"""
        path, step_path = fake_paths.get(at) or path_of(at), fake_paths.get(step_at) or \
            path_of(step_at)
        return in_subshells.get(at) in (None, in_subshells.get(step_at)) \
            and step_path[:len(path)] == path \
            and _LIST_HEAD_RE.search(code, max(0, at - 80), at) is not None

    return {var: resolved_steps(sorted([*(e for e in v if e[0] not in body_around),
                                        *at_calls.get(var, [])], key=lambda e: e[0]), holds)
            for var, v in values.items()}, fake_paths, fake_constructs, links


#: An `unset` command's names (where it starts): what follows is after it.
_UNSET_WORDS_RE = re.compile(r"unset(?:[ \t]+-v)?(?:[ \t]+[A-Za-z_]\w*)+")


def _set_since_unset(a: Arith, unset_at: int, at: int, body: tuple[int, int], code: str,
                     never_set: NeverSet) -> bool:
    """Does a word between the `unset` at `unset_at` and `a` (judged at `at`, a call of its
    function's `body`) that is no plain assignment set `a`'s variable (`for n in`,
    `: "${n:=3}"`, `[[ -v n ]] || n=5`: never_set's words)? Then `a` does not read it unset."""
    m = _UNSET_WORDS_RE.match(code, unset_at)
    start = m.end() if m else unset_at
    if body[0] <= unset_at < a.offset:  # in the body, or neither in one
        return never_set.set_between(a.variable, start, a.offset)
    return never_set.set_between(a.variable, start, at) \
        or never_set.set_between(a.variable, body[0], a.offset)


#: The end of the text before a command that is the head of its list: a line's start, `;`,
#: `{`, `(`, or `then` / `do` / `else`, and blanks.
_LIST_HEAD_RE = re.compile(r"(?:^|[;\n{(]|\bthen|\bdo|\belse)[ \t]*\Z")


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
    if not left or left[-1][1] is None or not reads_zero(left[-1][1]):
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


def _next_pass_partly(loop: tuple[int, int], scan: Scan) -> bool:
    """Does the loop from `loop`'s start to its `done` make its next pass on some runs only:
    a `break` / `return` in its body leaves it, or an `exit` bash may skip is in it
    (model.Scan.left_loops, maybe_exits)?"""
    start, done = loop
    k = bisect.bisect_right(scan.maybe_exits, start)
    return start in scan.left_loops or k < len(scan.maybe_exits) and scan.maybe_exits[k] < done
