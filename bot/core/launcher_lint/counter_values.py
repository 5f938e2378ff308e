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
from collections.abc import Callable, Sequence
from typing import overload

from bot.core.launcher_lint.branch_paths import Step, last_to_run
from bot.core.launcher_lint.messages import short
from bot.core.launcher_lint.model import Arith, Construct, Cover, Scan

#: What sets a variable: a shell assignment (`n=0`, `n=0;`, `n="0"`, `local n=0`, `let n=0`),
#: its value up to a blank or an operator, and an arithmetic one, blanks around `=` allowed
#: (`((n=0))`, `(( n = 0 ))`, `for ((n = 0; …))`, `let n=0`); `==` compares. `+=` appends
#: (`n+=1`: "01", or 1 with `declare -i`) or adds (`((n+=1))`, `let n+=8`: 8, not "08"), an
#: arithmetic `-=` subtracts (`((n-=1))`); a pre-increment or -decrement (`((++n))`, `let --n`)
#: leaves the value it evaluates to, and a whole post-decrement (`((n--))`, `let n--`) what
#: `((--n))` does (a post-increment is a counter: model.Arith).
_ASSIGNMENT_RE = re.compile(
    r"(?<![\w$])(?P<var>[A-Za-z_]\w*)(?P<op>\+?)=(?!=)(?P<value>[^\s;&|)]*)"
    r"|(?:\(\(\s*|(?<![\w$])let\s+[\"']?)(?:(?P<avar>[A-Za-z_]\w*)\s*(?P<aop>[-+]?)=(?!=)\s*"
    r"(?P<avalue>[^\s;,)\"']*)|(?P<pop>\+\+|--)\s*(?P<pvar>[A-Za-z_]\w*)"
    r"|(?P<dvar>[A-Za-z_]\w*)\s*--(?=\s*\)\)|[\"']?(?:[ \t]*[;&|\n)]|[ \t]*$)))"
)
#: The text _assignments gives a whole post-decrement (`((n--))`).
_POST_DECREMENT = "n--"
#: An arithmetic expansion whose whole expression counts or sets a variable (`x=$((++n))`,
#: `echo $((n--))`, `$(( n = 5 ))`): bash evaluates it in the script's shell, its count holding
#: past it, and the command it is in has the status it would have without it (an assignment's
#: 0), so it never stops the script as `((n++))` does. A post-increment leaves what a
#: pre-increment does.
_EXPANSION_COUNT_RE = re.compile(
    r"\$\(\(\s*(?:(?P<pop>\+\+|--)\s*(?P<pvar>[A-Za-z_]\w*)|(?P<qvar>[A-Za-z_]\w*)\s*"
    r"(?P<qop>\+\+|--)|(?P<avar>[A-Za-z_]\w*)\s*(?P<aop>[-+]?)=(?!=)\s*(?P<avalue>[^\s;,)\"']*))"
    r"\s*\)\)"
)
#: A shell assignment's name up to its value (`n=`, `n="`): where an expansion that is its value
#: starts.
_SHELL_VALUE_RE = re.compile(r"(?<![\w$])(?P<var>[A-Za-z_]\w*)(?P<add>\+?)=[\"']?(?=\$\(\()")
#: Where a shell assignment's value ends past an expansion (`n=$((n++))`, `n="$((n++))";`): the
#: expansion is the whole value.
_VALUE_END_RE = re.compile(r"[\"']?(?:[\s;&|)]|$)")
#: Where an arithmetic `+=` / `-=`'s value ends the expression (`((n-=1))`, `let n+=2 m=1`):
#: only then is its first word all it adds (`(( n -= 1 + 1 ))` is not known).
_SUM_END_RE = re.compile(r"[\"']?[^\S\n]*(?:\)\)|,|[\n;&|]|$)|[ \t]+(?![-+*/%<>=!&|^?:])")
#: A decimal integer as arithmetic reads it (no leading 0, which makes it octal).
_DECIMAL_RE = re.compile(r"-?[1-9][0-9]*")
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
#: `unset n m` / `unset -v n` where a command starts: the names (not `unset -f f`, a function).
_UNSET_NAMES_RE = re.compile(
    r"(?:^|(?<=[;&|({!\n])|(?<=\bthen)|(?<=\belse)|(?<=\bdo))[ \t]*(?P<cmd>unset)(?:[ \t]+-v)?"
    r"(?P<names>(?:[ \t]+[A-Za-z_]\w*)+)[ \t]*(?=[;&|)}\n]|\Z)")
#: What `unset n` leaves among a variable's assignments (assigned_values): no value, which
#: arithmetic reads as 0 and `set -u` as an unbound variable.
UNSET = "\x00unset"
#: A command that may set variables the script does not name: `source` / `.` of a file, `eval`.
#: The blanks before the `.` stop at a line end: a line start (`^`) reads the lines below, and a
#: `\s*` there would read every blank line below each (quadratic in a script of blank lines).
_SOURCES_RE = re.compile(r"(?m)(?<![\w.-])(?:source|eval)\s|(?:^|[;&|({]|\bthen|\bdo|\belse)"
                         r"[^\S\n]*\.\s+\S")


#: What body_assignments gives for a body that only adds constants to its variable (`((n--))`,
#: `((--n))`, `let n-=2`): this, then the sum, in place of a value (resolved_steps reads it).
STEP = "\x00step:"


def arithmetic_step(code: str, at: int) -> int | None:
    """The constant the arithmetic assignment at offset `at` of `code` adds to its variable
    (`((n--))`, `((--n))`, `let n--`: -1; `((n+=2))`: 2); None when it is no such sum."""
    m = _ASSIGNMENT_RE.match(code, at)
    if m is None or m.group("var") is not None:
        return None
    if m.group("pvar") is not None:
        return 1 if m.group("pop") == "++" else -1
    if m.group("dvar") is not None:
        return -1
    value = m.group("avalue") or ""
    if m.group("aop") in ("+", "-") and _SUM_END_RE.match(code, m.end()) and (
            ZERO_RE.fullmatch(value) or _DECIMAL_RE.fullmatch(value)):
        return int(value or "0") * (-1 if m.group("aop") == "-" else 1)
    return None


def resolved_steps(entries: list[tuple[int, str | None]],
                   holds: Callable[[int, int], bool]) -> list[tuple[int, str | None]]:
    """`entries` (a variable's assignments, in order) with each STEP read as the sum of the
    value before it (unset: 0) and its constant, where that value is a known number that
    holds there on every run (`holds(at, step_at)`: not in a subshell, a branch or an and-or
    list bash may skip, `(n=1)`, `[ -n "$X" ] && n=1`; else not known: None)."""
    resolved: list[tuple[int, str | None]] = []
    was: str | None = ""
    was_at: int | None = None
    for pos, value in entries:
        if value is not None and value.startswith(STEP):
            held = None if was_at is not None and not holds(was_at, pos) else (
                "0" if was is not None and reads_zero(was) else was)
            value = str(int(held) + int(value[len(STEP):])) if held is not None and (
                held == "0" or _DECIMAL_RE.fullmatch(held)) else None
        resolved.append((pos, value))
        was, was_at = value, pos
    return resolved


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


#: `declare -i` (`typeset`, `local`, `-i` among the options): the names after it add.
_DECLARE_INTEGER = r"\b(?:declare|typeset|local)\s+(?:-\w+\s+)*-\w*i\w*"


def assigned_values(code: str, wanted: set[str], prefixes: dict[int, tuple[str, str]],
                    never_run: list[tuple[int, int]], bodies: Sequence[tuple[int, int]] = (),
                    loops: Sequence[tuple[int, int]] = ()
                    ) -> dict[str, list[tuple[int, str | None]]]:
    """(offset, value) of each assignment to the `wanted` variables, in order, but those in
    the spans `never_run` (a loop bash makes no pass through, a branch it never runs): the
    text bash holds after it, None when the script does not say (`n=$x`, a sum). A shell `+=`
    appends text (`n=0; n+=8` is "08"), or adds for a variable declared integer (`declare -i`); an
    arithmetic `((n+=1))` adds: either is 0 only when it adds zeros to a 0 or unset value. A
    whole post-decrement (`((n--))`) that first sets it reads it unset, but in one of the
    functions' `bodies` (it takes one from what the variable holds at a call). An arithmetic
    step outside the bodies, and outside the `loops` bash may pass through more than once, of a
    variable a body sets is a STEP: what it adds to what the calls before it left."""
    integer = {var for var in wanted if re.search(
        _DECLARE_INTEGER + r"\s+(?:[^\n;&|]*\s)?" + re.escape(var) + r"\b", code)
               } if re.search(_DECLARE_INTEGER, code) else set()  # (one search for none)
    values: dict[str, list[tuple[int, str | None]]] = {}
    found = _assignments(code)
    # (the variables a function's body sets: an arithmetic step outside the bodies adds to what
    # the calls before it left, not to what a body's text before it does, `n=2; f() {
    # ((n--)); }; ((n--)); f` is 1 at the call: left as a STEP, resolved with the calls)
    set_in_bodies = {var for start, var, _o, _t, _s in found
                     if any(s <= start < e for s, e in bodies)} if bodies else set()
    for start, var, op, text, shell in found:
        if (var not in wanted or start in prefixes
                or any(s <= start < end for s, end in never_run)):
            continue  # not wanted, set for one command only (`n=0 cmd`), or never run
        if text == _POST_DECREMENT and var not in values and not any(
                s <= start < e for s, e in bodies):
            continue  # (first set there: read unset by `((n--))` itself, as by `((n++))`; in
            # a function's `bodies`, what it holds at the calls: body_assignments)
        earlier = values.setdefault(var, [])
        if op == "unset":
            earlier.append((start, UNSET))
            continue
        text = text.strip("\"'")
        was = earlier[-1][1] if earlier else ""  # unset: "" appended to, 0 added to
        was = "" if was == UNSET else was
        if not shell and op and re.search(
                r"(?:\(\(\s*|\blet\s+)" + re.escape(var) + r"\s*\+\+",
                code[earlier[-1][0] if earlier else 0:start]):
            was = None  # (a counter since, `((n++)) || true`: what it left is not known here)
        value: str | None
        step = arithmetic_step(code, start) if not shell and var in set_in_bodies and not any(
            s <= start < e for s, e in [*bodies, *loops]) else None
        if step is not None:
            value = None if was is None else f"{STEP}{step}"
        elif op in ("++", "--"):  # `((++n))`: one more (less) than it held, where that is known
            held = "0" if was is not None and ZERO_RE.fullmatch(was) else was
            value = str(int(held) + (1 if op == "++" else -1)) if held is not None and (
                held == "0" or _DECIMAL_RE.fullmatch(held)) else None
        elif not op:
            # an arithmetic assignment holds the number, in decimal
            value = text if shell or ZERO_RE.fullmatch(text) or text.isdigit() and \
                not text.startswith("0") else None
        elif shell and var not in integer:
            value = was + text if was is not None else None
        else:  # an arithmetic sum of a known number and a constant (`((n-=1))`) is known
            held = "0" if was is not None and ZERO_RE.fullmatch(was) else was
            value = str(int(held) + int(text) * (-1 if op == "-" else 1)) if (
                held is not None and (held == "0" or _DECIMAL_RE.fullmatch(held))
                and (ZERO_RE.fullmatch(text) or _DECIMAL_RE.fullmatch(text))) else None
        if value is not None and re.search(r"[$`]", value):
            value = None  # an expansion: not known here
        earlier.append((start, value))
    return values


#: A `read` or `printf -v` where a command starts (not after a pipe: `x | read n` reads in a
#: subshell), its assignments before it allowed (`IFS= read -r n`), and its words up to the end
#: of the command or a redirection (`read -r n <<<1`, `printf -v n '%s' 1`).
_READ_RE = re.compile(
    r"(?:^|(?<=[;&({!\n])|(?<=\|\|)|(?<=\bthen|\belse|\belif)|(?<=\bwhile|\buntil)"
    r"|(?<=\bdo|\bif))[ \t]*(?:[A-Za-z_]\w*=(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s;&|'\"])*[ \t]+)*"
    r"(?P<cmd>read|printf)(?![\w-])"
    r"(?P<args>[ \t][^;&|<>\n)}]*)?")
#: `read`'s options that take an argument (`-p prompt`, `-t 5`, `-a arr`: an array, read apart).
_READ_ARG_OPTIONS = "adinNptu"
_NAME_RE = re.compile(r"[A-Za-z_]\w*")


def read_assignments(code: str) -> list[tuple[int, str, str, str, bool]]:
    """The variables `read` (`read -r n`, `IFS=, read -r a b`) and `printf -v n` set, as
    _assignments gives them: each a value the script does not say ("?", arithmetic-read: not
    known), at its name's offset."""
    found: list[tuple[int, str, str, str, bool]] = []
    for m in _READ_RE.finditer(code):
        args = m.group("args") or ""
        at = m.start("args") if args else m.end()
        words = [(w.start() + at, w.group()) for w in re.finditer(r"\S+", args)]
        if m.group("cmd") == "printf":
            if len(words) > 1 and words[0][1] == "-v" and _NAME_RE.fullmatch(words[1][1]):
                found.append((words[1][0], words[1][1], "", "?", False))
            continue
        k = 0
        while k < len(words) and words[k][1].startswith("-"):
            flags = words[k][1][1:]
            takes = next((i for i, c in enumerate(flags) if c in _READ_ARG_OPTIONS), None)
            k += 2 if takes is not None and takes == len(flags) - 1 else 1
        found.extend((pos, word, "", "?", False) for pos, word in words[k:]
                     if _NAME_RE.fullmatch(word))
    return found


def _assignments(code: str) -> list[tuple[int, str, str, str, bool]]:
    """Each assignment of `code` (_ASSIGNMENT_RE's, and the counts of its arithmetic expansions:
    _EXPANSION_COUNT_RE's), in order: where it starts, the variable, its operator (`+` / `-`
    of `+=` / `-=`, `++` / `--`, "" for `=`), its text (an increment's: its operator) and
    whether it is a shell assignment (`n=0`, not `((n=0))`)."""
    found: list[tuple[int, str, str, str, bool]] = []
    for m in _ASSIGNMENT_RE.finditer(code):
        if code[m.start() - 1 : m.start()] == "$" and _EXPANSION_COUNT_RE.match(
                code, m.start() - 1):
            continue  # (`$((++n))`: the expansion's count, read once below)
        shell = m.group("var") is not None
        var, op, text = m.group("var", "op", "value") if shell else m.group(
            "avar", "aop", "avalue") if m.group("avar") is not None else m.group(
            "pvar", "pop", "pop") if m.group("pvar") is not None else (
            m.group("dvar"), "--", _POST_DECREMENT)  # (`((++n))`: its operator says the value)
        if op in ("+", "-") and not shell and not _SUM_END_RE.match(code, m.end()):
            text = "?"  # (`(( n -= 1 + 1 ))`: more than the first word: not known)
        found.append((m.start(), var, op, text, shell))
    if "read" in code or "printf" in code:
        found = sorted(found + read_assignments(code))
    if "unset" in code:  # (`unset n m`: each name left with no value, at the command's start)
        found = sorted(found + [(m.start("cmd"), name, "unset", "", True)
                                for m in _UNSET_NAMES_RE.finditer(code)
                                for name in m.group("names").split()])
    if "$((" not in code:
        return found
    # (the shell assignment whose value an expansion is in runs after it: `n=$((n++))` leaves
    # what the expansion evaluates to: the value before a post-increment's count, which sets
    # nothing then, else what the count leaves; a value with more than it, or `n+=`, is not
    # known, the expansion's count left out)
    shell_values = {m.end(): m for m in _SHELL_VALUE_RE.finditer(code)}
    overwritten: set[int] = set()  # the shell assignments whose whole value such a count is
    for m in _EXPANSION_COUNT_RE.finditer(code):
        var, op, text = m.group("avar", "aop", "avalue") if m.group(
            "avar") is not None else m.group("pvar", "pop", "pop") if m.group(
            "pvar") is not None else m.group("qvar", "qop", "qop")
        shell_value = shell_values.get(m.start())
        if shell_value is None or shell_value.group("var") != var:
            found.append((m.start(), var, op, text, False))
        elif not shell_value.group("add") and _VALUE_END_RE.match(code, m.end()):
            overwritten.add(shell_value.start())
            if m.group("qvar") is None:
                found.append((m.start(), var, op, text, False))
    return sorted(f for f in found if not (f[4] and f[0] in overwritten))


#: A word that may be a variable's name: where never_set's per-variable pattern would find it.
_WORD_RE = re.compile(r"(?<![\w$\\/.-])[A-Za-z_]\w*")
_DEFAULT_RE = re.compile(r":?=")


class NeverSet:
    """Whether nothing in the script sets a variable, for each of the `wanted` (the counters'),
    but the first assignments of it (assigned_values's; `but` of them): its name appears only
    where it is read (`$n`, `${n}`, `${n:-1}`), in the collected arithmetic commands, in prefix
    assignments (`n=0 cmd`: that command's environment only), in those assignments and in what
    bash never runs (`never_run`, assigned_values's), and no `source` / `eval` may set it. Any
    other word `n` (`read n`, `for n in`, `local n`, `((n+=2))` where `set -e` is off) may set
    it.

    The script's words are read once, for every variable: each word `n` that none of the
    above holds is set aside with the assignment of `n` it is in (none: it may set `n`), so
    that the question costs one comparison per counter, not a search of the script."""

    def __init__(self, code: str, arith: list[Arith], prefixes: dict[int, tuple[str, str]],
                 never_run: list[tuple[int, int]],
                 values: dict[str, list[tuple[int, str | None]]], wanted: set[str]) -> None:
        self.sources = _SOURCES_RE.search(code) is not None
        # for each variable, the number of its assignments (from the first) that must be
        # left out for nothing else to set it (len + 1: some word may set it whatever is)
        self.needs = dict.fromkeys(wanted, 0)
        # for each variable, where its words that may set it are (in no assignment of it)
        self.setters: dict[str, list[int]] = {var: [] for var in wanted}
        if self.sources or not wanted:
            return
        spans = sorted([(a.offset, a.offset + len(a.command)) for a in arith] + [
            (a.body_counter, a.body_counter + len(a.command)) for a in arith
            if a.body_counter is not None] + never_run)
        starts = [start for start, _end in spans]
        reach = list(itertools.accumulate((end for _start, end in spans), max))  # furthest end
        # each variable's assignments: where each starts and ends, and its place among them
        assignments: dict[str, tuple[list[int], list[int], list[int]]] = {}
        for var in wanted:
            found = [(k, pos, m.end()) for k, (pos, _v) in enumerate(values.get(var, []))
                     if (m := _ASSIGNMENT_RE.match(code, pos))]
            assignments[var] = ([pos for _k, pos, _end in found], [end for _k, _pos, end in found],
                                [k for k, _pos, _end in found])
        for m in _WORD_RE.finditer(code):
            var, at = m.group(), m.start()
            if var not in self.needs:
                continue
            k = bisect.bisect_right(starts, at)
            if k and reach[k - 1] > at or at in prefixes:
                continue  # an arithmetic command collected, or a prefix (`n=0 cmd`)
            if code[at - 2 : at] == "${" and not _DEFAULT_RE.match(code, m.end()):
                continue  # `${n}`, `${n:-1}`: a read
            positions, ends, places = assignments[var]
            i = bisect.bisect_right(positions, at) - 1
            if i >= 0 and ends[i] > at:
                self.needs[var] = max(self.needs[var], places[i] + 1)
            else:
                self.needs[var] = len(values.get(var, [])) + 1
                self.setters[var].append(at)

    def holds(self, var: str, but: int = 0) -> bool:
        """Does nothing set `var` but its first `but` assignments (assigned_values's)?"""
        return not self.sources and self.needs[var] <= but

    def set_between(self, var: str, start: int, end: int) -> bool:
        """May a word between `start` and `end` set `var` (`for n in`, `: ${n:=3}`,
        `[[ -v n ]] || n=5`, `read n`), as the assignments of it (assigned_values's) leave out?
        Also where a `source` / `eval` may set it."""
        at = self.setters.get(var, [])
        return self.sources or bisect.bisect_right(at, start) < bisect.bisect_left(at, end)


def set_in_branches_only(a: Arith, before: Sequence[tuple[int, str | None]], scan: Scan,
                         counters: list[Arith], spans: list[tuple[int, int, str]],
                         path_of: Callable[[int], tuple[Step, ...]], never_set: NeverSet,
                         assignments: int) -> int | None:
    """Where `a`, judged where it is, reads its variable unset on some runs: every assignment
    `before` it is in a branch bash may skip on its way to `a` (none runs on every way from
    the script's start: branches.last_to_run), neither `a` nor they are in a function's body
    (where they run is where it is called), nothing else in the script may set it (never_set
    but for its `assignments`, all of them) and no count of it before `a` (of its variable's
    `counters`, the walk's) runs in its shell (`((n++)) || true` leaves 1). The offset of the
    last of those assignments, or None."""
    if any(s <= a.offset < e for s, e, _n in spans) or (
            before.any_in_body() if isinstance(before, Before)
            else any(s <= pos < e for s, e, _n in spans for pos, _v in before)):
        return None  # in a function's body (judged at its calls), or set in one
    if any(b.offset < a.offset and not b.assigns_zero
           and not any(s <= b.offset < e and not s <= a.offset < e for s, e, _n in spans)
           for b in counters):
        return None
    every_run = (before.assigned.covered_from(before.length, 0, a.offset) >= 0
                 if isinstance(before, Before) else
                 last_to_run(list(before), 0, a.offset, scan.constructs, path_of)[1])
    if every_run or not never_set.holds(a.variable, assignments):
        return None
    return before[-1][0]


def assignment_text(code: str, at: int) -> str:
    """The assignment (_ASSIGNMENT_RE's) at offset `at` of `code`, shortened (`n=5`, `((n =
    5))`)."""
    m = _ASSIGNMENT_RE.match(code, at)
    if m is None:
        return short(code[at:].split(None, 1)[0], 40)
    end = code.find("))", m.end()) + 2 if code.startswith("((", at) else m.end()
    return short(code[at:max(end, m.end())], 40)


def in_other_branches(target: int, before: Sequence[tuple[int, str | None]], scan: Scan,
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
    # only the assignments between the first branch of each such construct and the branch
    # `target` is in may be in another branch of it (those in `target`'s own are not)
    found: list[tuple[int, str]] = []
    for key, i in here:
        if i and key in scan.exclusive:
            branches = scan.constructs[key][0]
            for pos, _v in before[bisect.bisect_left(before, branches[0][0], key=_offset)
                                  :bisect.bisect_left(before, branches[i][0], key=_offset)]:
                if _in_other_branch(here, path_of(pos), scan):
                    found.append((pos, scan.exclusive[key]))
        if key[0] in scan.loops or key not in scan.exclusive:
            break
    return found


def _in_other_branch(here: tuple[Step, ...], there: tuple[Step, ...], scan: Scan) -> bool:
    """Is the offset whose branches are `there` in another branch of an `if` / `case` than
    the one whose branches are `here` (in_other_branches's rule, where they part)?"""
    for (key, i), (other, j) in zip(here, there, strict=False):
        if key != other:
            return False
        if i != j:
            return key in scan.exclusive
        if key[0] in scan.loops or key not in scan.exclusive:
            return False
    return False


def stops_at(value: str) -> bool:
    """Does `((n++))` of an `n` holding `value` have status 1: 0, empty, unset (UNSET), or
    "08"."""
    return bool(reads_zero(value) or BAD_OCTAL_RE.fullmatch(value))


def reads_zero(value: str) -> bool:
    """Does arithmetic read `value` as 0: zeros, empty, or unset (UNSET)."""
    return value == UNSET or ZERO_RE.fullmatch(value) is not None


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


class Assigned:
    """One variable's assignments (assigned_values's, in order), none of them in a subshell,
    read once for all of its counters: the ones before a counter are the first of them
    (Before), and which of those may be the last to run on the way to it (last_to_run's
    answer, left_at_end's) is found from what each branch holds, without reading the
    assignments again for each counter.

    A branch (or the script's top) is covered from assignment k on when one of the
    assignments from k on is right in it (in no branch inside it), or a construct right in it
    always runs one of its branches (an `else`, a `*`, a loop over words written out) and each
    of those is covered from k on: `_from`, the last such k, by branch, and by construct.
    last_to_run takes the branches the counter and `since` are in as run (they hold both, or
    end before the counter), so the assignments from k on run one on every way exactly when
    one of them is right in one of those branches, or a construct right in one of them that
    ends before the counter is covered from k on: the last such k is read by bisection in
    each of those branches (as many as the counter's depth), where last_to_run reads every
    assignment back to it. Only where the branches nest (branches.path_index: every script
    bash parses)."""

    def __init__(self, entries: list[tuple[int, str | None]],
                 constructs: dict[tuple[int, int], Construct],
                 path_of: Callable[[int], tuple[Step, ...]],
                 bodies: list[tuple[int, int, str]]) -> None:
        self.entries, self.path_of = entries, path_of
        self.positions = [pos for pos, _v in entries]
        # how many of the first assignments stop bash (0, empty, "08"), and the last that does
        self.stopping, self.last_stopping = [0], [-1]
        for k, (_pos, v) in enumerate(entries):
            stops = v is not None and stops_at(v)
            self.stopping.append(self.stopping[-1] + stops)
            self.last_stopping.append(k if stops else self.last_stopping[-1])
        # the assignments in a function's body (in the bodies' union: one bisection each)
        union: list[list[int]] = []
        for start, end, _n in sorted(bodies):
            if union and start <= union[-1][1]:
                union[-1][1] = max(union[-1][1], end)
            else:
                union.append([start, end])
        starts = [start for start, _end in union]
        self.in_body = [k for k, pos in enumerate(self.positions)
                        if (i := bisect.bisect_right(starts, pos)) and pos < union[i - 1][1]]
        right_in: dict[Step | None, list[int]] = {}  # the assignments right in each branch
        inside: dict[Step | None, set[tuple[int, int]]] = {}  # the constructs right in it
        depth: dict[Step, int] = {}
        for k, pos in enumerate(self.positions):
            path = path_of(pos)
            right_in.setdefault(path[-1] if path else None, []).append(k)
            for d, step in enumerate(path):
                inside.setdefault(path[d - 1] if d else None, set()).add(step[0])
                depth[step] = d
        branch_from: dict[Step, int] = {}
        construct_from: dict[tuple[int, int], int] = {}
        by_depth: dict[int, list[Step]] = {}
        for step, d in depth.items():
            by_depth.setdefault(d, []).append(step)
        for d in sorted(by_depth, reverse=True):  # the deepest first
            for step in by_depth[d]:
                found = [right_in[step][-1]] if step in right_in else []
                found += [construct_from[key] for key in inside.get(step, ())
                          if key in construct_from]
                if found:
                    branch_from[step] = max(found)
            for key in {step[0] for step in by_depth[d]}:
                spans, cover = constructs[key]
                froms = {i: branch_from[key, i] for i in range(len(spans))
                         if (key, i) in branch_from}
                last = _last_covering(froms, cover, len(spans))
                if last is not None:
                    construct_from[key] = last
        self.right_in = right_in
        # the constructs right in each branch that are covered from some assignment on: by
        # the end of their last branch, with the latest that covers one ending there or before
        self.ends: dict[Step | None, list[int]] = {}
        self.latest: dict[Step | None, list[int]] = {}
        for parent, keys in inside.items():
            rows = sorted((constructs[key][0][-1][1], construct_from[key]) for key in keys
                          if key in construct_from)
            if rows:
                self.ends[parent] = [end for end, _k in rows]
                self.latest[parent] = list(itertools.accumulate((k for _e, k in rows), max))

    def before(self, offset: int) -> Before:
        """The assignments before `offset`."""
        return Before(self, bisect.bisect_left(self.positions, offset))

    def covered_from(self, count: int, since: int, target: int) -> int:
        """The last k such that one of the assignments from k on, of the first `count` (all
        those before `target`), runs on every way from `since` to `target`; -1: none
        (branches.last_to_run's answer)."""
        known: set[Step | None] = {None, *self.path_of(since), *self.path_of(target)}
        last = -1
        for step in known:
            right = self.right_in.get(step)
            if right and (i := bisect.bisect_left(right, count)):
                last = max(last, right[i - 1])
            ends = self.ends.get(step)
            if ends and (i := bisect.bisect_right(ends, target)):
                last = max(last, self.latest[step][i - 1])
        return last

    def left_at_end(self, count: int, since: int, target: int,
                    holes: frozenset[int] = frozenset()
                    ) -> tuple[list[tuple[int, str | None]], bool]:
        """left_at_end of the first `count` assignments (those before `target`) but the
        `holes` (their indices: in another branch of an `if` / `case` `target` is in, which
        never run before it). Those are right in no branch `target` or `since` is in, nor in a
        construct that ends before `target` there, so they cover nothing (covered_from's
        answer is the same without them); they are only left out of what is counted."""
        k = self.covered_from(count, since, target)
        every_run, k = k >= 0, max(k, 0)
        left_out = [h for h in holes if k <= h < count]
        stopping = self.stopping[count] - self.stopping[k] - sum(
            self.stopping[h + 1] - self.stopping[h] for h in left_out)
        if stopping:
            last = self.last_stopping[count]
            while last in holes:
                last = self.last_stopping[last]
            return [self.entries[last]], every_run and stopping == count - k - len(left_out)
        last = count - 1
        while last in holes:
            last -= 1
        return [self.entries[last]] if last >= k else [], True


def _last_covering(froms: dict[int, int], cover: Cover, branches: int) -> int | None:
    """The last k such that the branches whose assignments from k on cover them (`froms`: the
    last k of each branch that has one) run one of them on every way through their construct
    (`cover`, of `branches` branches), None: no k. The fewer k leaves, the fewer it holds:
    found by bisection."""
    ks = sorted(set(froms.values()))
    lo, hi = 0, len(ks)  # ks[:lo] hold, ks[hi:] do not
    while lo < hi:
        mid = (lo + hi) // 2
        if cover.holds({i for i, f in froms.items() if f >= ks[mid]}, branches):
            lo = mid + 1
        else:
            hi = mid
    return ks[lo - 1] if lo else None


class Before(Sequence[tuple[int, str | None]]):
    """The first `length` of a variable's assignments (Assigned's) but the `holes` (their
    indices): those before a counter, read where they are, not copied for each counter."""

    def __init__(self, assigned: Assigned, length: int,
                 holes: frozenset[int] = frozenset()) -> None:
        self.assigned, self.length, self.holes = assigned, length, holes

    def __len__(self) -> int:
        return self.length - len(self.holes)

    def _index(self, index: int) -> int:
        """The index among all the assignments of the one at `index` here."""
        if not self.holes:
            return range(self.length)[index]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        step, k = (1, -1) if index >= 0 else (-1, self.length)
        for _ in range(index + 1 if index >= 0 else -index):
            k += step
            while k in self.holes:
                k += step
        return k

    @overload
    def __getitem__(self, index: int) -> tuple[int, str | None]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, str | None]]: ...

    def __getitem__(self, index: int | slice
                    ) -> tuple[int, str | None] | list[tuple[int, str | None]]:
        if isinstance(index, slice):
            return [self.assigned.entries[self._index(i)] for i in range(len(self))[index]]
        return self.assigned.entries[self._index(index)]

    def without(self, offsets: set[int]) -> Before:
        """These assignments but those at `offsets` (some of them)."""
        positions = self.assigned.positions
        return Before(self.assigned, self.length, self.holes | {
            bisect.bisect_left(positions, pos) for pos in offsets})

    def left_at_end(self, target: int) -> tuple[list[tuple[int, str | None]], bool]:
        """left_at_end of these assignments, `target` the counter (since the first)."""
        return self.assigned.left_at_end(self.length, self[0][0], target, self.holes)

    def any_in_body(self) -> bool:
        """Is one of these in a function's body?"""
        return any(k not in self.holes for k in self.assigned.in_body[
            :bisect.bisect_left(self.assigned.in_body, self.length)])


def _offset(assignment: tuple[int, str | None]) -> int:
    return assignment[0]


def between(assigned: list[tuple[int, str | None]], start: int, end: int
            ) -> list[tuple[int, str | None]]:
    """The assignments of `assigned` (in order) after offset `start` and before `end`."""
    return assigned[bisect.bisect_right(assigned, start, key=_offset)
                    :bisect.bisect_left(assigned, end, key=_offset)]




def read_on_next_pass(a: Arith, assigned: list[tuple[int, str | None]],
                      loop: tuple[int, int] | None,
                      unsets: list[int], constructs: dict[tuple[int, int], Construct],
                      path_of: Callable[[int], tuple[Step, ...]]
                      ) -> tuple[int, list[tuple[int, str | None]], bool] | None:
    """What `a`, in a loop's body, reads on the loop's next pass when nothing in the body
    sets its variable before it: what the body's end left, an assignment after `a`
    (`n=08`) or an `unset n` ([]: unset), read through the body's branches (the one of those
    that may be the last to run that stops bash: left_at_end, `unset n` among them), where,
    and whether on every run (not when a branch bash may skip decides it). None: not in a
    loop, nothing after it, or set again before it on each pass (`unsets`: where `unset n`
    is). `loop`: the innermost loop around `a` that bash may pass through more than once, its
    start and `done` (None: none)."""
    if loop is None:
        return None
    start, end = loop
    if bisect.bisect_left(assigned, start, key=_offset) < bisect.bisect_left(
            assigned, a.offset, key=_offset):
        return None  # set before it in the body
    after = between(assigned, a.offset, end)
    removed: list[tuple[int, str | None]] = [(pos, UNSET) for pos in unsets
                                              if a.offset < pos < end]
    if removed:  # which of them the body's end leaves, through its branches, as assignments
        left, every_run = last_to_run(sorted(after + removed), a.offset, end, constructs,
                                      path_of)
        stopping = [(pos, v) for pos, v in left
                    if v is UNSET or v is not None and stops_at(v)]
        if stopping:  # (an unset stops bash: there is one)
            pos, value = stopping[-1]
            return (pos, [] if value is UNSET else [(pos, value)],
                    every_run and len(stopping) == len(left))
    left, every_run = left_at_end(after, a.offset, end, constructs, path_of)
    return (left[-1][0], left, every_run) if left else None
