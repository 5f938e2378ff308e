"""The arithmetic commands the checks of bot.core.launcher_lint.arith judge: those the walk
collects in an and-or list (`and_or_ariths`: `((n++))` / `let n++` where `set -u` applies or
`set -e` does not stop on them), and the counts a call of a function makes in the script's
shell (`counted_at_calls`: the counters that start a list of its body, at the call)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from bot.core.launcher_lint.branch_paths import Step, on_every_path
from bot.core.launcher_lint.counts_between import enclosing
from bot.core.launcher_lint.model import Arith, Call, Construct
from bot.core.launcher_lint.syntax import (
    condition_command,
    keyword_prefix,
    lists_and_branches,
    past_negation,
)
from bot.core.shell_lexer import CASE_BRANCH_ENDS, Memo, split_top_level

#: The arithmetic commands the walk collects where `set -e` is on: an increment or decrement
#: (its value is the variable's before it), or an assignment of 0 (its value is 0).
ARITH_RE = re.compile(r"^\(\(\s*([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)\s*\)\)$")
LET_RE = re.compile(r"^let\s+[\"']?([A-Za-z_]\w*)\s*(\+\+|--|=\s*0+)[\"']?$")

#: The keywords whose condition's status bash tests (`if ((n++))`, `while …`).
_TESTING_KEYWORDS = ("if", "elif", "while", "until")


def and_or_ariths(lst: str, off: int, memo: Memo, zero_after: int | None, *, nounset: bool,
                  errexit_off: bool, keyword: str = "") -> list[Arith]:
    """The `((n++))` / `let n++` commands of the and-or list `lst` (at `off`) that `set -e`
    does not stop on: under `set -u` (`nounset`), where `n`, when nothing sets it, is an
    unbound variable that stops bash with or without `set -e`, whatever tests their status
    (`|| true`, an `if` condition); where `set -e` is off (`errexit_off`) or a command's
    status is tested (the `&&` / `||` after it, a `!` before it; the last one's by `keyword`,
    when `lst` is a condition: model.Arith.tested_by), where a value arithmetic cannot read
    ("08") leaves `n` as it was. Not in a pipeline, whose commands run in subshells (`zero_after`:
    model.Arith.zero_after)."""
    if "((" not in lst and "let" not in lst:
        return []
    found: list[Arith] = []
    for element, e_off, op in split_top_level(lst, off, ("&&", "||"), memo):
        if len(split_top_level(element, e_off, ("|",), memo)) > 1:
            continue
        cmd = element.strip()
        at = e_off + len(element) - len(element.lstrip())
        tested_by = op or keyword
        rest, negated = past_negation(cmd)
        cmd, at = rest, at + len(cmd) - len(rest)  # (`! ! ((n++))`: as `((n++))`)
        if negated:  # `! ((n++))`: its status negated
            tested_by = "!"
        m = ARITH_RE.match(cmd) or LET_RE.match(cmd)
        if m and not m.group(2).startswith("="):  # `((n=0))` reads no `n`
            found.append(Arith(at, cmd, m.group(1), zero_after=zero_after, nounset=nounset,
                               errexit=False, errexit_off=errexit_off, tested_by=tested_by))
    return found


def counted_at_calls(code: str, in_shell: list[tuple[Call, bool]],
                      bodies: dict[str, tuple[int, int]],
                      values: dict[str, list[tuple[int, str | None]]],
                      subshells: list[tuple[int, int]],
                      path_of: Callable[[int], tuple[Step, ...]],
                      never_run: list[tuple[int, int]],
                      constructs: dict[tuple[int, int], Construct],
                      expansions: dict[int, str]
                      ) -> tuple[list[Arith], list[Arith]]:
    """The counts that a call made from the script's shell makes: each counter that starts a
    list of its function's body, after the keywords or pattern that start it (`then
    ((n++))`, `a) ((n++))`, an `if` / `while` condition's), in no subshell or nested body of
    it, nor in what bash never runs (`never_run`, or past a `return` that starts a list of the
    body or of a branch around it: one bash takes whenever it runs it), the body assigning the
    variable after it (`values`) leaving it
    uncounted, as a count at the call, so that a counter after the call reads the variable as
    counted (`n=0; f() { ((n++)); }; f || true; ((n++))`: 1): those bash runs whenever the
    body runs (`path_of` the body's start's, or, of a variable whose counters are all in
    branches, one on every way through them: branch_paths.on_every_path, `if c; then ((n++));
    else ((n++)); fi`, one count), and those it may skip (in a branch, past a `return` bash
    may take, `[ … ] && return`, where the walk read the body's branches: counted on some
    runs only). At a call whose status is tested (`f || true`, `! f`,
    `if f`: model.Call.tested; `set -e` is off in the body there) every such counter counts;
    at one that is not (`f`, or made through another body, `g() { f; }`, at a call of that body
    that is not: model.Call.tested), those whose own status is tested by `||`, `!` or a condition
    (`((n++)) || true`, `! ((n++))`, `if ((n++))`: an untested one that reads 0 stops bash
    there, judged at the call; one before
    `&&` may leave the body's status 1, which stops bash at the call). A call made through other
    bodies (model.Call.chain) counts at the script's call of the first, each call of the chain
    in its body's shell, past no `return` there, and on some runs only where one of them is in a
    branch. Not one before the function is defined (no body to run yet),
    nor one in a list run in the background (`f &`, `f || true &`: a subshell), nor a
    pipeline's command (`f | cat`: model.Call.in_subshell). The count of an arithmetic
    expansion in the body (`expansions`, by offset: `x=$((++n))`) is one such counter whose
    status is tested (it never fails its command), wherever in its list it is, but in a
    pipeline's command."""
    if not in_shell:
        return [], []
    memo: Memo = {}
    placed = [c for c, _always in in_shell]
    chain_always = {c.chain: always for c, always in in_shell}
    # the counters that start a list of each body called so, not in the background or a pipe,
    # and whether their own status is tested
    starting: list[tuple[str, int, str, str, bool]] = []
    returns: dict[str, list[int]] = {}  # the `return`s that start a list of each body
    for name in {c.name for c in placed}:
        start, end = bodies[name]
        if "((" not in code[start:end] and "let" not in code[start:end]:
            continue
        lists, branches = lists_and_branches(split_top_level(
            code[start:end], start, ("\n", ";", "&", *CASE_BRANCH_ENDS), memo))
        for idx, (raw, l_off, op) in enumerate(lists):
            if op == "&":  # in the background: a subshell
                continue
            # (the command after the keywords and pattern that start the list: `then ((n++))`,
            # `a) ((n++))`; one in an `if` / `while` condition has its status tested)
            lead = len(raw) - len(raw.lstrip())
            cut, steps = keyword_prefix(raw.strip(), idx in branches)
            rest, r_off = raw[lead + cut:], l_off + lead + cut
            in_condition = bool(steps) and steps[-1][0] in _TESTING_KEYWORDS
            if in_condition:
                rest, r_off = condition_command(rest, r_off)
            element, e_off, and_or = split_top_level(rest, r_off, ("&&", "||"), memo)[0]
            cmd = element.strip()
            if cmd == "return" or cmd.startswith("return "):  # (one bash takes if it runs it)
                returns.setdefault(name, []).append(e_off)
            tested = and_or == "||" or in_condition
            cmd, negated = past_negation(cmd)
            tested = tested or negated
            m = ARITH_RE.match(cmd) or LET_RE.match(cmd)
            # (a decrement sets what the value at the call leaves: body_assignments)
            if m and not m.group(2).startswith("=") and m.group(2) != "--" and len(
                    split_top_level(element, e_off, ("|",), memo)) == 1:
                starting.append((name, e_off + element.find(cmd), cmd, m.group(1), tested))
            # (an expansion's count anywhere in the list: one that is never tested to fail)
            for o in (o for o in expansions if l_off <= o < l_off + len(raw)):
                if not any(a_off <= o < a_off + len(a_raw) and len(
                        split_top_level(a_raw, a_off, ("|",), memo)) > 1
                           for a_raw, a_off, _op in split_top_level(raw, l_off, ("&&", "||"),
                                                                    memo)):
                    starting.append((name, o, code[o:code.index("))", o) + 2],
                                     expansions[o], True))
    if not starting:
        return [], []
    inside = enclosing([*subshells, *bodies.values()], [
        *(o for _n, o, _c, _v, _t in starting), *(o for r in returns.values() for o in r)])
    # each body's counters that run when it runs, whether their own status is tested, and
    # whether bash runs them whenever it runs the body
    runs: dict[str, list[tuple[str, str, bool, bool, int]]] = {}
    for name, o, cmd, var, tested in starting:
        start, end = bodies[name]
        assigned = values.get(var, [])
        k = bisect.bisect_right(assigned, o, key=lambda v: v[0])
        # (past a `return` bash takes whenever the body runs: never run, as past one the
        # walk read in never_run)
        if (inside.get(o) == (start, end)
                and not any(s <= o < e for s, e in never_run)
                and not any(r < o and inside.get(r) == (start, end)
                            and path_of(o)[:len(path_of(r))] == path_of(r)
                            for r in returns.get(name, []))
                and not (k < len(assigned) and assigned[k][0] < end)):
            runs.setdefault(name, []).append(
                (cmd, var, tested, path_of(o) == path_of(start), o))
    if not runs:
        return [], []
    counted: tuple[list[Arith], list[Arith]] = ([], [])  # (every run's, some runs')
    covered: dict[tuple[str, str, bool], bool] = {}  # by function, variable, tested call
    for c in placed:
        made = [(cmd, var, always and chain_always[c.chain], o)
                for cmd, var, tested, always, o in runs.get(c.name, []) if tested or c.tested]
        for cmd, var, always, _o in made:
            counted[not always].append(Arith(c.offset, cmd, var, errexit=False,
                                             tested_by="||"))
        # (one of a variable's counters runs whenever the body does, none alone: each
        # branch of an `if` with an `else` counts, or an `if true`: one count every run)
        for var in {var for _c, var, always, _o in made if not always}:
            key = (c.name, var, c.tested)
            if not chain_always[c.chain]:
                continue
            if key not in covered:
                start, end = bodies[c.name]
                offsets = [o for _c, v, _a, o in made if v == var]
                covered[key] = not any(a for _c, v, a, _o in made if v == var) and (
                    on_every_path(offsets, start, end, constructs, path_of))
            if covered[key]:
                cmd = next(cmd for cmd, v, _a, _o in made if v == var)
                counted[0].append(Arith(c.offset, cmd, var, errexit=False, tested_by="||"))
    return counted
