"""What a counter (`((n++))`, `let n++`) reads of its variable where the arithmetic checks
(bot.core.launcher_lint.arith) judge it: the script's assignments to the variable and the text
each leaves (assigned_values; `n=0 cmd` sets it for that command only: prefix_assignments),
whether nothing in the script sets it (never_set), and which of the assignments before the
counter may hold there: those in another branch of an `if` / `case` it is in never run before
it (in_other_branches), the branches on the way decide which is the last to run (left_at_end),
all of them may be skipped (set_in_branches_only), and what a loop's body leaves it at for the
next pass (read_on_next_pass)."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable

from bot.core.launcher_lint.branches import Step, last_to_run
from bot.core.launcher_lint.messages import short
from bot.core.launcher_lint.model import Arith, Construct, Scan

#: What sets a variable: a shell assignment (`n=0`, `n=0;`, `n="0"`, `local n=0`, `let n=0`),
#: its value up to a blank or an operator, and an arithmetic one, blanks around `=` allowed
#: (`((n=0))`, `(( n = 0 ))`, `for ((n = 0; …))`); `==` compares. `+=` appends (`n+=1`: "01",
#: or 1 with `declare -i`) or adds (`((n+=1))`).
_ASSIGNMENT_RE = re.compile(
    r"(?<![\w$])(?P<var>[A-Za-z_]\w*)(?P<op>\+?)=(?!=)(?P<value>[^\s;&|)]*)"
    r"|\(\(\s*(?P<avar>[A-Za-z_]\w*)\s*(?P<aop>\+?)=(?!=)\s*(?P<avalue>[^\s;,)]*)"
)
#: What may come before a command's first word on its line: a separator or a keyword, then
#: assignments (`FOO=1 n=0 cmd`).
_COMMAND_START_RE = re.compile(
    r"(?:^|[;&|({!]|\b(?:then|do|else|if|elif|while|until|time))[ \t]*"
    r"(?:[A-Za-z_]\w*\+?=\S*[ \t]+)*$"
)
#: After an assignment: more assignments, then a command word (`n=0 cmd`, `n=0 m=1 cmd`).
_COMMAND_AFTER_RE = re.compile(r"[ \t]+(?:[A-Za-z_]\w*\+?=\S*[ \t]+)*[^\s;&|)}\\]")
#: A value read whole by _ASSIGNMENT_RE: no quote that may hold a blank, no expansion.
_PLAIN_VALUE_RE = re.compile(r"[\w.,:/+@%-]*|\"[\w.,:/+@%-]*\"|'[\w.,:/+@%-]*'")
#: A value arithmetic reads as 0: empty (`n=`) or zeros.
ZERO_RE = re.compile(r"0*")
#: A value arithmetic cannot read: a leading 0 makes a number octal, and 8 / 9 are no octal
#: digits ("08", what `n=0; n+=8` appends to: `value too great for base`).
BAD_OCTAL_RE = re.compile(r"0[0-7]*[89][0-9]*")
#: `unset n` / `unset -v n`: the variable's name.
UNSET_RE = re.compile(r"(?<![\w$])unset\s+(?:-v\s+)?([A-Za-z_]\w*)(?!\w)")
#: A command that may set variables the script does not name: `source` / `.` of a file, `eval`.
_SOURCES_RE = re.compile(r"(?m)(?<![\w.-])(?:source|eval)\s|(?:^|[;&|({]|\bthen|\bdo|\belse)"
                         r"\s*\.\s+\S")


def prefix_assignments(code: str) -> dict[int, tuple[str, str]]:
    """The assignments that prefix a command (`n=0 cmd`, `n=0 m=1 cmd`), by offset: the
    variable and the command. They set the variable in that command's environment only, not
    in the shell (after it `n` is what it was, unset if nothing else set it). Only where the
    value is plain text, so that `n=$(cmd arg)` or `n="a b"` is not taken for one."""
    prefixes: dict[int, tuple[str, str]] = {}
    for m in _ASSIGNMENT_RE.finditer(code):
        if m.group("var") is None or not _PLAIN_VALUE_RE.fullmatch(m.group("value")):
            continue
        line_start = code.rfind("\n", 0, m.start()) + 1
        if (_COMMAND_AFTER_RE.match(code, m.end())
                and _COMMAND_START_RE.search(code[line_start:m.start()])):
            end = re.compile(r"[;&|\n]|$").search(code, m.end())
            prefixes[m.start()] = (m.group("var"), code[m.start() : end.start() if end else None])
    return prefixes


def assigned_values(code: str, wanted: set[str], prefixes: dict[int, tuple[str, str]],
            never_run: list[tuple[int, int]]) -> dict[str, list[tuple[int, str | None]]]:
    """(offset, value) of each assignment to the `wanted` variables, in order, but those in
    the spans `never_run` (a loop bash makes no pass through, a branch it never runs): the
    text bash holds after it, None when the script does not say (`n=$x`, a sum). A shell `+=`
    appends text (`n=0; n+=8` is "08"), or adds for a variable declared integer (`declare -i`); an
    arithmetic `((n+=1))` adds: either is 0 only when it adds zeros to a 0 or unset value."""
    integer = {var for var in wanted if re.search(
        r"\b(?:declare|typeset|local)\s+(?:-\w+\s+)*-\w*i\w*\s+(?:[^\n;&|]*\s)?"
        + re.escape(var) + r"\b", code)}
    values: dict[str, list[tuple[int, str | None]]] = {}
    for m in _ASSIGNMENT_RE.finditer(code):
        shell = m.group("var") is not None
        var, op, text = m.group("var", "op", "value") if shell else m.group("avar", "aop", "avalue")
        if (var not in wanted or m.start() in prefixes
                or any(start <= m.start() < end for start, end in never_run)):
            continue  # not wanted, set for one command only (`n=0 cmd`), or never run
        text = text.strip("\"'")
        earlier = values.setdefault(var, [])
        was = earlier[-1][1] if earlier else ""  # unset: "" appended to, 0 added to
        value: str | None
        if not op:
            # an arithmetic assignment holds the number, in decimal
            value = text if shell or ZERO_RE.fullmatch(text) or text.isdigit() and \
                not text.startswith("0") else None
        elif shell and var not in integer:
            value = was + text if was is not None else None
        else:
            added_zero = was is not None and ZERO_RE.fullmatch(was) and ZERO_RE.fullmatch(text)
            value = "0" if added_zero else None
        if value is not None and re.search(r"[$`]", value):
            value = None  # an expansion: not known here
        earlier.append((m.start(), value))
    return values


def never_set(var: str, code: str, arith: list[Arith],
               prefixes: dict[int, tuple[str, str]], never_run: list[tuple[int, int]],
               but: list[int] = []) -> bool:  # noqa: B006
    """Does nothing in the script set `var` (but the assignments at offsets `but`,
    assigned_values's): its name appears only where it is read (`$n`, `${n}`, `${n:-1}`), in
    the collected arithmetic commands, in prefix assignments (`n=0 cmd`: that command's
    environment only), in those assignments and in what bash never runs (`never_run`,
    assigned_values's), and no `source` / `eval` may set it. Any other word `n` (`read n`,
    `for n in`, `local n`, `((n+=2))` where `set -e` is off) may set it."""
    if _SOURCES_RE.search(code):
        return False
    spans = sorted([(a.offset, a.offset + len(a.command)) for a in arith] + never_run
                   + [(pos, m.end()) for pos in but if (m := _ASSIGNMENT_RE.match(code, pos))])
    starts = [start for start, _end in spans]
    reach = list(itertools.accumulate((end for _start, end in spans), max))  # the furthest end
    for m in re.finditer(r"(?<![\w$\\/.-])" + re.escape(var) + r"(?!\w)", code):
        k = bisect.bisect_right(starts, m.start())
        if k and reach[k - 1] > m.start() or m.start() in prefixes:
            continue  # an arithmetic command collected, or a prefix (`n=0 cmd`)
        if code[m.start() - 2 : m.start()] == "${" and not re.match(r":?=", code[m.end():]):
            continue  # `${n}`, `${n:-1}`: a read
        return False
    return True


def set_in_branches_only(a: Arith, before: list[tuple[int, str | None]], scan: Scan, code: str,
                          prefixes: dict[int, tuple[str, str]],
                          values: dict[str, list[tuple[int, str | None]]],
                          spans: list[tuple[int, int, str]],
                          path_of: Callable[[int], tuple[Step, ...]],
                          never_run: list[tuple[int, int]]) -> int | None:
    """Where `a`, judged where it is, reads its variable unset on some runs: every assignment
    `before` it is in a branch bash may skip on its way to `a` (none runs on every way from
    the script's start: branches.last_to_run), neither `a` nor they are in a function's body
    (where they run is where it is called), nothing else in
    the script may set it (never_set but for its assignments) and no count of it before `a`
    runs in its shell (`((n++)) || true` leaves 1). The offset of the last of those
    assignments, or None."""
    if any(s <= pos < e for s, e, _n in spans for pos in [a.offset, *(p for p, _v in before)]):
        return None  # in a function's body (judged at its calls), or set in one
    if any(b.variable == a.variable and b.offset < a.offset and not b.assigns_zero
           and not any(s <= b.offset < e and not s <= a.offset < e for s, e, _n in spans)
           for b in scan.arith):
        return None
    _left, every_run = last_to_run(before, 0, a.offset, scan.constructs, path_of)
    if every_run or not never_set(a.variable, code, scan.arith, prefixes, never_run,
                                   [pos for pos, _v in values.get(a.variable, [])]):
        return None
    return before[-1][0]


def assignment_text(code: str, at: int) -> str:
    """The assignment (_ASSIGNMENT_RE's) at offset `at` of `code`, shortened (`n=5`, `((n =
    5))`)."""
    m = _ASSIGNMENT_RE.match(code, at)
    if m is None:
        return short(code[at:].split(None, 1)[0], 40)
    end = code.find("))", m.end()) + 2 if m.group("avar") else m.end()
    return short(code[at:max(end, m.end())], 40)


def in_other_branches(target: int, before: list[tuple[int, str | None]], scan: Scan,
                       spans: list[tuple[int, int, str]],
                       path_of: Callable[[int], tuple[Step, ...]]) -> list[tuple[int, str]]:
    """Of the assignments `before` the command at offset `target` (in order), those in another
    branch of an `if` or `case` it is in (model.Scan.exclusive: `if c; then n=0; else ((n++));
    fi`), which bash never runs before it: (offset, "if" / "case"). None in a loop's body
    around both (an earlier pass may have run the other branch) nor when `target` is in a
    function's body (an earlier call may have). Only the assignments between the first branch
    of such a construct and the branch `target` is in are looked at."""
    if any(s <= target < e for s, e, _n in spans):
        return []
    here = path_of(target)
    first = None  # where the first branch of the outermost such construct starts
    for key, i in here:
        if key[0] in scan.loops or key not in scan.exclusive:
            break  # (a loop's body, a part of one after a `break`)
        if i:
            first = scan.constructs[key][0][0][0]
            break
    if first is None:
        return []
    found: list[tuple[int, str]] = []
    for pos, _v in before[bisect.bisect_left(before, first, key=lambda b: b[0]):]:
        for (key, i), (other, j) in zip(here, path_of(pos), strict=False):
            if key != other:
                break
            if i != j:
                if key in scan.exclusive:
                    found.append((pos, scan.exclusive[key]))
                break
            if key[0] in scan.loops or key not in scan.exclusive:
                break
    return found


def stops_at(value: str) -> bool:
    """Does `((n++))` of an `n` holding `value` have status 1: 0, empty, or "08"."""
    return bool(ZERO_RE.fullmatch(value) or BAD_OCTAL_RE.fullmatch(value))


def left_at_end(assigned: list[tuple[int, str | None]], since: int, end: int,
                 constructs: dict[tuple[int, int], Construct],
                 path_of: Callable[[int], tuple[Step, ...]]
                 ) -> tuple[list[tuple[int, str | None]], bool]:
    """What a body (a function's, a loop's) leaves its variable at, of `assigned` (its
    assignments between `since`, the counter, and `end`, in order): the one of those that may
    be the last to run (branches.last_to_run) that stops bash (0, empty, "08") on the runs
    it is the last, else the last in the text ([] when none), and whether it is so on every
    run (not when another may be the last, or none runs on some way through the body)."""
    left, every_run = last_to_run(assigned, since, end, constructs, path_of)
    stopping: list[tuple[int, str | None]] = [(pos, v) for pos, v in left
                                             if v is not None and stops_at(v)]
    if stopping:
        return stopping[-1:], every_run and len(stopping) == len(left)
    return left[-1:], True


#: `unset n` among a body's assignments (read_on_next_pass): what it leaves is no value.
_UNSET = "\x00unset"


def read_on_next_pass(a: Arith, assigned: list[tuple[int, str | None]], loops: dict[int, int],
             unsets: list[int], constructs: dict[tuple[int, int], Construct],
             path_of: Callable[[int], tuple[Step, ...]]
             ) -> tuple[int, list[tuple[int, str | None]], bool] | None:
    """What `a`, in a loop's body, reads on the loop's next pass when nothing in the body
    sets its variable before it: what the body's end left, an assignment after `a`
    (`n=08`) or an `unset n` ([]: unset), read through the body's branches (the one of those
    that may be the last to run that stops bash: left_at_end, `unset n` among them), where,
    and whether on every run (not when a branch bash may skip decides it). None: not in a
    loop, nothing after it, or set again before it on each pass (`unsets`: where `unset n`
    is)."""
    around = [(start, end) for start, end in loops.items() if start <= a.offset < end]
    if not around:
        return None
    start, end = max(around)  # the innermost
    if any(start <= pos < a.offset for pos, _v in assigned):
        return None
    after = [(pos, v) for pos, v in assigned if a.offset < pos < end]
    removed: list[tuple[int, str | None]] = [(pos, _UNSET) for pos in unsets
                                              if a.offset < pos < end]
    if removed:  # which of them the body's end leaves, through its branches, as assignments
        left, every_run = last_to_run(sorted(after + removed), a.offset, end, constructs,
                                      path_of)
        stopping = [(pos, v) for pos, v in left
                    if v is _UNSET or v is not None and stops_at(v)]
        if stopping:  # (an unset stops bash: there is one)
            pos, value = stopping[-1]
            return (pos, [] if value is _UNSET else [(pos, value)],
                    every_run and len(stopping) == len(left))
    left, every_run = left_at_end(after, a.offset, end, constructs, path_of)
    return (left[-1][0], left, every_run) if left else None
