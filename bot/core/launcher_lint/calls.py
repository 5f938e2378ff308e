"""The calls of the script's functions as the walk (bot.core.launcher_lint.engine) reaches
them, and what a counter in a function's body holds at each: the arithmetic checks
(bot.core.launcher_lint.arith) judge a body where it runs, not where it is defined
(`f() { ((m++)); }; m=0; set -e; f`: `m` is 0 at the call)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection

from bot.core.launcher_lint.branch_paths import Step, last_to_run
from bot.core.launcher_lint.model import Call, Construct, Opts
from bot.core.launcher_lint.syntax import first_word, past_negation
from bot.core.shell_lexer import Memo, group_end, split_top_level

_CONDITION_KEYWORDS = ("if", "elif", "while", "until")
_DEFINITION_RE = re.compile(r"[A-Za-z_][\w:-]*\s*\(\s*\)")


def call_sites(lst: str, off: int, names: dict[str, set[str]], opts: Opts, memo: Memo, *,
               in_condition: bool, in_function: bool, loop_from: int | None) -> list[Call]:
    """The calls of functions `names` in the and-or list `lst` (at `off`): in the script's
    shell, or as a pipeline's command (in a subshell: model.Call.in_subshell). `set -e` applies in a
    body called as the list's last command, outside a condition (`in_condition`, or after
    `if` / `while` / `!`); a status it stops a pipeline's command on stops the script where it
    is the pipeline's: the last command's, or, with `pipefail` on, any's (on some paths only
    where pipefail is: Call.errexit_partial)."""
    command = lst
    keyword = first_word(command)
    if keyword in _CONDITION_KEYWORDS:
        command, in_condition = command[len(keyword):], True
    at = off + len(lst) - len(command)
    found: list[Call] = []
    elements = split_top_level(command, at, ("&&", "||"), memo)
    for i, (element, e_off, _op) in enumerate(elements):
        text, at, negated = called_command(element, e_off)
        tested = in_condition or negated or i < len(elements) - 1
        piped = split_top_level(text, at, ("|",), memo) if "|" in text else [(text, at, "")]
        for k, (piece, p_off, _p) in enumerate(piped):
            name = first_word(piece.lstrip())
            if name == "eval":  # `eval f`, `eval f arg`, `eval "f arg"`: a call of f
                name = evaluated_call(piece) or name
            if name not in names or _DEFINITION_RE.match(piece.lstrip()):
                continue  # not a call, or a definition (`f() {`)
            last = k == len(piped) - 1
            errexit = opts.errexit and not tested and (last or opts.pipefail)
            found.append(Call(
                p_off + len(piece) - len(piece.lstrip()), name, errexit, in_function, loop_from,
                tested=tested, errexit_in_body=in_function and opts.errexit_in_body,
                errexit_in_body_partial=in_function and opts.errexit_in_body_partial,
                errexit_partial=errexit and not last and opts.pipefail_partial,
                in_subshell=len(piped) > 1))
    return found


#: What an `eval`'s words may hold for it to run one plain command bash reads as they are:
#: words and quotes only (no expansion, separator, redirection or escape).
_PLAIN_EVAL_RE = re.compile(r"[ \t]*eval[ \t]+[\"']?([A-Za-z_][\w:-]*)[\"']?"
                            r"(?:[ \t]+[^\s;&|$`()<>{}\\=]+)*[ \t]*")


def evaluated_call(command: str) -> str | None:
    """The command name an `eval` of plain words runs (`eval f`, `eval f arg`, `eval 'f x'`,
    `eval "f" x`: f); None for any other `eval` (`eval "$cmd"`, `eval "f; g"`)."""
    m = _PLAIN_EVAL_RE.fullmatch(command)
    return m.group(1) if m else None


def tested_subshells(lst: str, off: int, memo: Memo, *, in_condition: bool
                     ) -> list[tuple[str, int]]:
    """The bodies (and their offsets) of the `( … )` subshells of the and-or list `lst` (at
    `off`) whose status bash tests: in a condition (`in_condition`, or after `if` / `while` /
    `!`) or before `&&` / `||` (`( f ) || true`), where `set -e` is off in them."""
    command = lst
    keyword = first_word(command)
    if keyword in _CONDITION_KEYWORDS:
        command, in_condition = command[len(keyword):], True
    at = off + len(lst) - len(command)
    found: list[tuple[str, int]] = []
    elements = split_top_level(command, at, ("&&", "||"), memo)
    for i, (element, e_off, _op) in enumerate(elements):
        text, t_off, negated = called_command(element, e_off)
        if (in_condition or negated or i < len(elements) - 1) and text.startswith(
                "(") and not text.startswith("(("):
            end = group_end(text, 0, t_off, memo)
            found.append((text[1 : end - 1], t_off + 1))
    return found


def called_command(element: str, e_off: int) -> tuple[str, int, bool]:
    """The command the and-or element `element` (at `e_off`) runs, without the blanks and the
    `!` before it (`! f`: bash negates its status); where it starts, which is where a call of
    a function there is (model.Call.offset, model.Arith.called_at); and whether it is
    negated."""
    text = element.lstrip()
    text, negated = past_negation(text)
    return text, e_off + len(element) - len(text), negated


#: How deep the calls made in function bodies are followed from a script-level call (a
#: function that calls itself, `f(){ f; }`, is followed this far), and how many such calls are
#: placed in all (past it, outermost_calls gives the calls as the walk made them).
MAX_CALL_DEPTH = 8
MAX_NESTED_CALLS = 4096


def outermost_calls(calls: list[Call], bodies: dict[str, tuple[int, int]]) -> list[Call]:
    """`calls` (the walk's, in its order) as bash makes them from the script's shell: each
    call made at the script's level, followed by the calls its function's body makes, and
    theirs, in order, each placed at that script-level call (its offset and loop_from), with
    `set -e` applying in it where it applies at every call of the chain (none of them tested)
    and the bodies it is made through (model.Call.chain): `inc(){ ((m++)); }; run(){ inc; };
    m=0; set -e; run` runs inc's body at `run`, where `m` is 0 and `set -e` on. A call made
    in a body is judged where that body runs, not where it is defined; a body the walk read
    more than once (model.Arith.called_at) makes each of its calls once."""
    spans = sorted((start, end, name) for name, (start, end) in bodies.items())
    made_in: dict[str, list[Call]] = {}  # the calls each function's body makes, by offset
    seen: set[int] = set()
    for call in calls:
        if call.in_function and call.offset not in seen:
            seen.add(call.offset)
            around = [(start, name) for start, end, name in spans if start <= call.offset < end]
            if around:
                made_in.setdefault(max(around)[1], []).append(call)
    if not made_in:
        return calls
    for made in made_in.values():
        made.sort(key=lambda c: c.offset)
    placed: list[Call] = []
    budget = MAX_NESTED_CALLS

    def follow(top: Call, name: str, chain: tuple[tuple[int, int, int], ...], errexit: bool,
               partial: bool) -> bool:
        nonlocal budget
        start, end = bodies[name]
        for inner in made_in.get(name, ()):
            budget -= 1
            if budget < 0:
                return False
            link = (*chain, (start, end, inner.offset))
            # `set -e` applies in it where it applies at the call of its body, or that body
            # turned it on before it (not where the script-level call is tested); on some
            # paths only when each of those holds on some paths only
            by_body = inner.errexit_in_body and not top.tested
            call = Call(top.offset, inner.name, (errexit or by_body) and inner.errexit,
                        False, top.loop_from, link, tested=top.tested or inner.tested,
                        in_subshell=top.in_subshell or inner.in_subshell,
                        errexit_partial=not (errexit and not partial or by_body
                                             and not inner.errexit_in_body_partial)
                        or inner.errexit_partial)
            placed.append(call)
            if (inner.name in bodies and len(link) < MAX_CALL_DEPTH
                    and not follow(top, inner.name, link, call.errexit, call.errexit_partial)):
                return False
        return True

    for call in calls:
        if call.in_function:
            continue
        placed.append(call)
        if call.name in bodies and not follow(call, call.name, (), call.errexit,
                                               call.errexit_partial):
            return calls  # too many to place: as the walk made them
    return placed


#: What holds at a call (values_at_calls): the call, whether the body ran since, the
#: assignment it reads, and those it reads instead on the runs a branch skips that one.
AtCall = tuple[Call, bool, tuple[int, str | None] | None, list[tuple[int, str | None]]]


def values_at_calls(name: str, body: tuple[int, int], calls: list[Call],
                    assigned: list[tuple[int, str | None]],
                    constructs: dict[tuple[int, int], Construct],
                    path_of: Callable[[int], tuple[Step, ...]],
                    hidden: Collection[int] = frozenset()) -> list[AtCall]:
    """For each call of function `name` (its body at `body`), in the order the walk reached
    them: whether the body ran since the variable's last assignment outside the body before
    the call (an earlier call after it; on a loop's later pass, not when the assignment is in
    that loop before the call, which runs again first), and that assignment ((offset, value),
    None when there is none); with the assignments that hold there instead on some runs (the
    bodies the call is made through set it in a branch bash may skip: _set_in_chain), [] when
    that one holds on every run. `hidden`: offsets of `assigned` never read as what holds
    outside the body (other bodies' assignments, which hold at their calls: read through a
    chain's bodies only).

    Each call costs the logarithm of the number of assignments (bisection in them; a call made
    through other bodies steps back over each of those bodies' assignments at once) and what
    its chain of bodies sets, read once per chain (many calls of one function are linear in
    their number)."""
    start, end = body
    # (what this body leaves at its own earlier calls is read from its text: `ran` below)
    own = {c.offset for c in calls if c.name == name} if hidden else set()
    outside = [(pos, v) for pos, v in assigned if not start <= pos < end and pos not in hidden
               and pos not in own and pos - 1 not in own]
    starts = [pos for pos, _v in outside]
    offsets = [pos for pos, _v in assigned]
    sets_itself = any(start <= pos < end for pos in offsets)
    set_in: dict[tuple[tuple[int, int, int], ...],
                 tuple[list[tuple[int, str | None]], bool] | None] = {}
    result: list[AtCall] = []
    placed: set[int] = set()  # the offsets of the calls answered
    latest = -1  # the furthest an earlier call is in the script
    for call in calls:
        if call.name != name:
            continue
        if call.chain:  # made in another function's body (outermost_calls)
            last = _last_outside(outside, starts, call.offset, call.chain)
            if call.chain not in set_in:
                set_in[call.chain] = _set_in_chain(call.chain, assigned, offsets, constructs,
                                                   path_of)
            inner = set_in[call.chain]
            k = bisect.bisect_left(offsets, call.offset)
            there = [v for _p, v in assigned[k:bisect.bisect_right(offsets, call.offset + 1)]]
            if not sets_itself and there and (inner is None or None in there):
                # (this body setting none) another body's assignment made at the same
                # script-level call (`main() { setup; run; }`), not the chain's: before or
                # after this one, not known here (its place in the chain is not kept), so
                # neither is the value
                result.append((call, False, (call.offset, None), []))
                continue
            if inner is not None:
                # … which sets the variable before it (None: after it, so an earlier run of
                # that body may have left any value), on every run or with what holds outside
                # on the others; an earlier call at the same script-level call may have
                # counted it since
                found, every_run = inner
                also = found[:-1] + ([] if every_run or last is None else [last])
                result.append((call, call.offset in placed, found[-1], also))
                if not call.in_subshell:  # (one run in a subshell leaves nothing here)
                    placed.add(call.offset)
                    latest = max(latest, call.offset)
                continue
        else:
            k = bisect.bisect_left(starts, call.offset)
            last = outside[k - 1] if k else None
        pos = last[0] if last else -1
        fresh = call.loop_from is not None and pos >= call.loop_from
        result.append((call, not fresh and latest > pos, last, []))
        if not call.in_subshell:
            placed.add(call.offset)
            latest = max(latest, call.offset)
    return result


def _last_outside(outside: list[tuple[int, str | None]], starts: list[int], offset: int,
                  chain: tuple[tuple[int, int, int], ...]) -> tuple[int, str | None] | None:
    """The last of `outside` (their offsets: `starts`) before `offset` that is in none of the
    bodies of `chain` (model.Call.chain): from the last before it, back over the whole of a
    body it is in at each step."""
    k = bisect.bisect_left(starts, offset)
    while k:
        pos = starts[k - 1]
        around = [s for s, e, _p in chain if s <= pos < e]
        if not around:
            return outside[k - 1]
        k = bisect.bisect_left(starts, min(around), 0, k - 1)
    return None


def _set_in_chain(chain: tuple[tuple[int, int, int], ...],
                  assigned: list[tuple[int, str | None]], offsets: list[int],
                  constructs: dict[tuple[int, int], Construct],
                  path_of: Callable[[int], tuple[Step, ...]]
                  ) -> tuple[list[tuple[int, str | None]], bool] | None:
    """What the bodies a call is made through (model.Call.chain, outermost first) set the
    variable to before the call, and whether on every run: the assignments in the innermost
    body that has one before the call made in it that may be the last to run there, through
    its branches (branches.last_to_run: `if c; then m=0; fi` on some runs only, when those of
    the bodies around it, or else what holds outside, hold on the others); (its offset, None)
    when that body sets it only after (the value an earlier run left is not known); None when
    none of them sets it. `offsets`: those of `assigned`, in which each body's are found by
    bisection."""
    found: list[tuple[int, str | None]] = []
    for start, end, at in reversed(chain):
        before = assigned[bisect.bisect_left(offsets, start):bisect.bisect_left(offsets, at)]
        if before:
            left, every_run = last_to_run(before, start, at, constructs, path_of)
            found = left + found
            if every_run:
                return found, True
            continue
        k = bisect.bisect_right(offsets, at)
        if k < len(offsets) and offsets[k] < end:
            return [(offsets[k], None), *found], True
    return (found, False) if found else None
