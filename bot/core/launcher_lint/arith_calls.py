"""Where the arithmetic checks (bot.core.launcher_lint.arith) judge a counter in a function's
body: at a call of the function (`f() { ((m++)); }; m=0; set -e; f`: `m` is 0 at the call),
the first where `set -e` stops on it or the one `set -u` read it again at (`at_calls`), with
the calls a loop's body makes again on its next pass (`with_later_passes`)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import NamedTuple

from bot.core.launcher_lint.branch_paths import Step
from bot.core.launcher_lint.calls import values_at_calls
from bot.core.launcher_lint.counter_values import (
    BAD_OCTAL_RE,
    between,
    left_at_end,
    stops_at,
)
from bot.core.launcher_lint.model import Arith, Call, Construct


class AtCall(NamedTuple):
    """Where at_calls judges an arithmetic command in a function's body."""

    at: int | None  # the call's offset (None: no call stops bash)
    body: tuple[int, int]  # the body's span
    # the assignments before it there (counter_values.assigned_values's)
    before: list[tuple[int, str | None]]
    partial: bool = False  # `set -e` applies there on some paths only (a branch of the body)
    # a call after an earlier one (not its function's first): "again", "in the shell" (every
    # earlier one ran the body in a subshell: `f | cat; f`), or "next pass" (the same call on a
    # loop's next pass), the offset of the assignment whose value it reads, the
    # function's name, and whether it reads that value on every run (not when the body leaves
    # it so in a branch bash may skip)
    later: tuple[str, int, str, bool] | None = None
    # the assignment it reads there on some runs only (a branch of a body the call is made
    # through sets it): arith_findings.arith_finding's `set_partly`
    set_partly: int | None = None


def with_later_passes(calls: list[Call], loops: dict[int, int]) -> list[Call]:
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


def at_calls(a: Arith, assigned: list[tuple[int, str | None]],
             calls_of: dict[str, list[Call]], spans: list[tuple[int, int, str]],
             constructs: dict[tuple[int, int], Construct],
             path_of: Callable[[int], tuple[Step, ...]],
             hidden: Collection[int] = frozenset()) -> AtCall | None:
    """Where `a`, in the body of a function the script calls (from its own shell, or from
    another function's body run there: calls.outermost_calls), is judged: at the call it was
    read again at under `set -u` (model.Arith.called_at: an earlier call, where `set -u` was
    off, counted the variable from unset), else under `set -e` at the first call where
    `set -e` stops on it (the variable zero, empty, unset or "08" there), else at the first
    call; with what sets the variable before that call: its last assignment outside the
    body, or, when the body ran since (an earlier call), what the body's end leaves (its last
    assignment after `a`, `m=0`, on every way through its branches: branches.last_to_run; one
    in a branch bash may skip leaves it so on some runs only) or else an unknown value, but an
    "08" that no count changes. None: `a` is in no such body, and is judged where it is.
    `hidden`: the offsets of `assigned` in function bodies, which hold at those bodies' calls
    (the entries of `assigned` there: body_assignments) and are read only through a call
    chain's bodies (calls.values_at_calls)."""
    k = bisect.bisect_right(spans, (a.offset, 1 << 62, ""))
    if not k or spans[k - 1][1] <= a.offset:
        return None  # in no body (or in one after a function defined in it: not judged here)
    start, end, name = spans[k - 1]
    body = (start, end)
    calls = calls_of.get(name)
    if calls == []:  # (the script makes calls of it only where bash never runs them)
        return AtCall(None, body, [])
    if not calls or any(c.in_function for c in calls):
        return None
    first: AtCall | None = None
    # what the body's end leaves the variable at, set after `a` (`f() { ((m++)); m=0; }`): what
    # a call after one that ran the body reads (None: the body does not set it after `a`)
    left, every_run = left_at_end(between(assigned, a.offset, end), a.offset, end, constructs,
                                  path_of)
    earlier: set[int] = set()  # the offsets of the calls before this one
    ran_here = False  # one of them ran the body in the script's shell (not in a subshell)
    for call, ran, last, also in values_at_calls(name, body, calls, assigned, constructs,
                                                 path_of, hidden):
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
            "next pass" if call.offset in earlier else "again" if ran_here else "in the shell",
            source, name, every_run if from_body else set_partly is None)
        earlier.add(call.offset)
        ran_here = ran_here or not call.in_subshell
        if a.called_at is not None:  # read again at that call: judged there
            if call.offset == a.called_at:
                return AtCall(call.offset, body, before)
            continue
        if first is None:
            first = AtCall(call.offset, body, before)
        if not a.errexit:
            return first
        held = before[-1][1] if before else None
        stops = not before or held is not None and (stops_at(held) or octal)
        # `set -e` applies there, or the body turned it on before `a` (not at a tested call),
        # each on every path or on some only
        by_body = a.errexit_in_body and not call.tested
        if (call.errexit or by_body) and stops:
            return AtCall(call.offset, body, before, not (
                call.errexit and not call.errexit_partial
                or by_body and not a.errexit_in_body_partial), later,
                None if from_body else set_partly)
    return AtCall(None, body, [])
