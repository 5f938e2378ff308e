"""The counting commands between an assignment and a counter that reads it (`n=0; ((n++))
|| true; ((n++))`: the second reads 1), for arith's check: which of the script's subshells
and function bodies hold an offset (one sweep), those spans as a tree, and the counts of each
variable read once for all the counters that read one assignment."""

from __future__ import annotations

import bisect
import functools
import heapq
import re
from collections.abc import Callable

from bot.core.launcher_lint.branch_paths import Coverage, Step, on_every_path
from bot.core.launcher_lint.model import Arith, Construct
from bot.core.shell_lexer import COMMAND_AT, Memo, group_end, subshell_spans

#: A subshell's `(` where a command starts (not `((`, `$(`, `<(`).
_SUBSHELL_RE = re.compile(COMMAND_AT + r"\((?!\()")


def find_subshells(code: str) -> list[tuple[int, int]]:
    """The spans of the script's `( … )` subshells and `$( … )` / backtick substitutions (not
    `$(( … ))`), in whose shell an assignment or a count stays: `f() { ( m=0 ); ((m++)); }`
    counts `m` from what it was before the subshell, `x=$(echo $((++m)))` leaves `m` as it
    was."""
    memo: Memo = {}
    spans: list[tuple[int, int]] = []
    if "$(" in code or "`" in code:
        spans.extend((start, end) for start, end in subshell_spans(code, memo)
                     if code[start] == "`" or code.startswith("$(", start)
                     and not code.startswith("$((", start))
    for m in _SUBSHELL_RE.finditer(code):
        at = m.end() - 1
        if at and code[at - 1] == "(":
            continue  # the inner `(` of `((`
        try:
            spans.append((at, group_end(code, at, 0, memo)))
        except Exception:  # noqa: BLE001 (an unclosed `(`: no span)
            continue
    return spans


def enclosing(spans: list[tuple[int, int]], offsets: list[int]) -> dict[int, tuple[int, int]]:
    """For each of `offsets` that one of `spans` (start, end) or more hold: the part they all
    hold, (the latest start, the earliest end). Every span that holds offset x holds y too
    exactly when y lies in that part of x's (or x is in none), which this answers in one
    look. One sweep over both, sorted."""
    if not spans:
        return {}
    ordered = sorted(spans)
    latest: list[tuple[int, int]] = []  # (-start, end) of the spans begun: the latest start
    earliest: list[int] = []  # their ends: the earliest
    found: dict[int, tuple[int, int]] = {}
    k = 0
    for x in sorted(set(offsets)):
        while k < len(ordered) and ordered[k][0] <= x:
            heapq.heappush(latest, (-ordered[k][0], ordered[k][1]))
            heapq.heappush(earliest, ordered[k][1])
            k += 1
        while latest and latest[0][1] <= x:  # (a span that ended before x never holds a later one)
            heapq.heappop(latest)
        while earliest and earliest[0] <= x:
            heapq.heappop(earliest)
        if earliest:
            found[x] = (-latest[0][0], earliest[0])
    return found


class _Nesting:
    """Spans (the subshells, the function bodies) as a tree, each with the one around it, when
    they nest (`nested`; they do in every script bash parses)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.ordered = sorted(set(spans), key=lambda span: (span[0], -span[1]))
        self.parent: list[int] = []
        self.nested = True
        stack: list[int] = []
        for k, (start, end) in enumerate(self.ordered):
            while stack and self.ordered[stack[-1]][1] <= start:
                stack.pop()
            if stack and self.ordered[stack[-1]][1] < end:
                self.nested = False
                return
            self.parent.append(stack[-1] if stack else -1)
            stack.append(k)
        self.starts = [start for start, _end in self.ordered]

    def around(self, offset: int) -> list[int]:
        """The spans that hold `offset` (their index), outermost first."""
        k = bisect.bisect_right(self.starts, offset) - 1
        while k >= 0 and self.ordered[k][1] <= offset:
            k = self.parent[k]
        chain: list[int] = []
        while k >= 0:
            chain.append(k)
            k = self.parent[k]
        return chain[::-1]

    def holds(self, k: int, offset: int) -> bool:
        start, end = self.ordered[k]
        return start <= offset < end


class Counts:
    """The counting commands of each variable (`((n++))`, not `((n=0))`) between a counter and
    the assignment it reads, that run in its shell: not in a function's body or a subshell the
    counter is not in (`spans`; `enclosing`: enclosing's over them of every counter; a body
    counts where it is called). `n=0; ((n++)) || true; ((n++))`: the second reads 1.

    Answered for the counters in the script's order from what was answered for the one before
    with the same assignment: the counts between the two are read, those in the subshells and
    bodies left since are taken back, so that many counters of one variable cost time linear
    in their number; a counter before the last one asked starts its answer over. Where spans
    cross (not a script bash parses), each is answered over every count, as
    branch_paths.on_every_path does (`nested` False: the branches')."""

    def __init__(self, arith: list[Arith], spans: list[tuple[int, int]],
                 constructs: dict[tuple[int, int], Construct],
                 path_of: Callable[[int], tuple[Step, ...]], nested: bool,
                 maybe: int | None = None) -> None:
        # arith[maybe:]: counts bash makes on some runs only (a call's, of a counter in a
        # branch of its body: arith_commands.counted_at_calls), which cover no way to a counter
        self.maybe = len(arith) if maybe is None else maybe
        self.enclosing = enclosing(spans, [b.offset for b in arith])
        self.nesting = _Nesting(spans)
        self.constructs, self.path_of = constructs, path_of
        self.nested = nested and self.nesting.nested
        self.of: dict[str, list[tuple[int, int]]] = {}  # (offset, index in arith), by offset
        for k, b in enumerate(arith):
            if not b.assigns_zero:
                self.of.setdefault(b.variable, []).append((b.offset, k))
        for counters in self.of.values():
            counters.sort()
        self.read: dict[tuple[str, int], _CountsRead] = {}

    def since(self, a: Arith, since: int) -> tuple[int, bool] | None:
        """Of the counts of `a`'s variable after offset `since` (its last assignment) and
        before `a` that run in its shell: the first the walk collected, and whether one of
        them runs on every way bash goes from `since` to `a` (branch_paths.on_every_path); None
        when there are none."""
        counters = self.of.get(a.variable, [])
        if not self.nested:
            counts = sorted((k, offset) for offset, k in counters
                            if since < offset < a.offset and self._runs_with(offset, a.offset))
            return (counts[0][1], on_every_path([offset for k, offset in counts
                                                 if k < self.maybe], since,
                                                a.offset, self.constructs, self.path_of)
                    ) if counts else None
        read = self.read.get((a.variable, since))
        if read is None or a.offset < read.upto:
            read = self.read[a.variable, since] = _CountsRead(
                bisect.bisect_right(counters, (since, 1 << 62)), set(self.path_of(since)),
                self.constructs)
        # the counts in a subshell or body `a` is not in (left since) do not count here
        while read.inside and not self.nesting.holds(read.inside[-1][0], a.offset):
            read.undo(read.inside.pop()[1])
        while read.next < len(counters) and counters[read.next][0] < a.offset:
            offset, k = counters[read.next]
            read.next += 1
            if not self._runs_with(offset, a.offset):
                continue  # in a subshell or body `a` is not in (nor any later counter here)
            read.inside.extend((span, len(read.log))
                               for span in self.nesting.around(offset)[len(read.inside):])
            if read.first is None or k < read.first[1]:
                read.log.append(functools.partial(setattr, read, "first", read.first))
                read.first = (offset, k)
            if k < self.maybe:
                read.coverage.add(tuple(step for step in self.path_of(offset)
                                        if step not in read.known))
        read.upto = a.offset
        if read.first is None:
            return None
        return read.first[0], read.coverage.covers(
            tuple(step for step in self.path_of(a.offset) if step not in read.known))

    def _runs_with(self, count: int, counter: int) -> bool:
        """Is every subshell and body that holds offset `count` around offset `counter` too?"""
        held = self.enclosing.get(count)
        return held is None or held[0] <= counter < held[1]


class _CountsRead:
    """What Counts has read for the counters that read one assignment: the index of the next
    count to read, the branches around the assignment (on every way from it), the coverage of
    the counts read that count here, the first of them the walk collected (offset, index),
    the subshells and bodies they are in (each with where its changes start in `log`), and the
    last counter answered."""

    def __init__(self, first_unread: int, known: set[Step],
                 constructs: dict[tuple[int, int], Construct]) -> None:
        self.next, self.known = first_unread, known
        self.log: list[Callable[[], object]] = []
        self.coverage = Coverage(constructs, self.log)
        self.first: tuple[int, int] | None = None
        self.inside: list[tuple[int, int]] = []
        self.upto = -1

    def undo(self, mark: int) -> None:
        """Take back the changes made since `log` was `mark` long."""
        while len(self.log) > mark:
            self.log.pop()()
