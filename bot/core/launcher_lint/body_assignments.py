"""Where a function body's plain assignments hold for the arithmetic checks
(bot.core.launcher_lint.arith): at the calls that run the body in the script's shell, not where
the body's text is (`f() { n=1; }; ((n++))`: `n` is never set; `f() { n=0; }; n=5; f;
((n++))`: 0). The calls a body runs in the script's shell at (calls_in_shell), the variables a
body declares local (local_names: what it sets of them holds in the body only), the
assignments those calls make (set_at_calls), and what a counter in another body reads of a
body's text (own_view)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from bot.core.launcher_lint.branch_paths import Step, last_to_run
from bot.core.launcher_lint.counter_values import STEP, arithmetic_step, stops_at
from bot.core.launcher_lint.counts_between import enclosing
from bot.core.launcher_lint.model import MAX_DEPTH, Call, Construct
from bot.core.launcher_lint.trap_actions import trap_commands
from bot.core.shell_lexer import CASE_BRANCH_ENDS, Memo, group_end, split_top_level

#: `local` / `declare` / `typeset` where a command starts in a body, and its arguments up to
#: the end of the command: the names there (`local n`, `local -i n=0 m`) are the body's own.
_LOCAL_RE = re.compile(r"(?:^|(?<=[\s;&|({]))(?:local|declare|typeset)[ \t]+([^;&|\n)}]*)")
#: Where the command of an assignment ends (what follows it may count its variable).
_COMMAND_END_RE = re.compile(r"[;&|\n]")
_LOCAL_NAME_RE = re.compile(r"(?:^|(?<=\s))([A-Za-z_]\w*)(?=[=\s]|$)")


def calls_in_shell(code: str, calls: list[Call], bodies: dict[str, tuple[int, int]],
                   subshells: list[tuple[int, int]],
                   path_of: Callable[[int], tuple[Step, ...]], memo: Memo
                   ) -> list[tuple[Call, bool]]:
    """Of `calls` (calls.outermost_calls's), those that run their function's body in the
    script's shell: made from it (model.Call.in_function false), not a pipeline's command
    (model.Call.in_subshell), after the function's definition, not in a list run in the
    background (`f &`, `f || true &`), and, for one made through other bodies (model.Call.chain),
    each call of the chain right in its body's shell (no subshell, no nested body, not in a
    list of the body run in the background); none in a piped `{ … }` group (_piped_groups);
    each with whether bash runs it whenever the
    chain's first body runs (each call of the chain in no branch of its body, past no `return`
    there: one past a `return` is made on some runs at most, `[ -n "$X" ] && return 0; f`)."""
    placed = [c for c in calls if not c.in_function and not c.in_subshell
              and c.name in bodies and c.offset > bodies[c.name][1]]
    if not placed:
        return []
    groups = _piped_groups(code)  # (`cat x | { f; }`: f's body runs in a subshell)
    if groups:
        in_group = enclosing(groups, [c.offset for c in placed])
        placed = [c for c in placed if c.offset not in in_group]
        subshells = [*subshells, *groups]
    links = {link for c in placed for link in c.chain}
    link_in = enclosing([*subshells, *bodies.values()], [at for _s, _e, at in links])
    behind_in_bodies = [span for start, end in {(s, e) for s, e, _at in links}
                        for span in background_lists(code, start, end, memo)]
    placed = [c for c in placed if all(
        link_in.get(at) == (start, end)
        and not any(s <= at < e for s, e in behind_in_bodies) for start, end, at in c.chain)]
    # the lists run in the background (`f || true &`), read once for all the calls
    background = background_lists(code, 0, len(code), memo)
    behind = enclosing(background, [c.offset for c in placed]) if background else {}
    return [(c, all(path_of(at) == path_of(start) and not _RETURN_RE.search(code, start, at)
                    for start, _end, at in c.chain))
            for c in placed if c.offset not in behind]


#: `return` as a command's name (not `return_code=0`, nor a word of `echo "no return"`).
_RETURN_RE = re.compile(r"(?:(?<=[;&|({!\n])|(?<=then)|(?<=else)|(?<=do))[ \t]*return\b"
                        r"(?![=\w-])")


#: A `{` that opens a group (a word of its own where a command starts).
_GROUP_OPEN_RE = re.compile(r"(?:^|(?<=[\s;&|]))\{(?=\s)")


def background_lists(code: str, start: int, end: int, memo: Memo, depth: int = 0
                     ) -> list[tuple[int, int]]:
    """The spans of the lists of `code` from `start` to `end` that bash runs in the background
    (`f &`, `f || true &`), in its lists and in those of the `{ … }` groups in them, at any
    depth (`{ f & }`, `true && { f & }`, `if c; then { f & }; fi`); one inside a `( … )` is
    in a subshell already."""
    spans: list[tuple[int, int]] = []
    if "&" not in code[start:end]:
        return spans
    for lst, o, op in split_top_level(code[start:end], start,
                                      ("\n", ";", "&", *CASE_BRANCH_ENDS), memo):
        if op == "&":
            spans.append((o, o + len(lst)))
        elif "{" in lst and "&" in lst and depth < MAX_DEPTH:
            past = 0  # (a group inside one read: read with it)
            for m in _GROUP_OPEN_RE.finditer(lst):
                if m.start() < past:
                    continue
                try:
                    past = group_end(lst, m.start(), o, memo)
                except Exception:  # noqa: BLE001 (an unclosed group: nothing to read)
                    continue
                spans.extend(background_lists(code, o + m.start() + 1, o + past - 1, memo,
                                              depth + 1))
    return spans


def local_names(code: str, body: tuple[int, int]) -> dict[str, int]:
    """The variables the body at `body` declares its own (`local n`, `declare -i n=0`; not
    `declare -g`), each with where its first declaration starts."""
    start, end = body
    text = code[start:end]
    if "local" not in text and "declare" not in text and "typeset" not in text:
        return {}
    names: dict[str, int] = {}
    for m in _LOCAL_RE.finditer(text):
        args = m.group(1)
        if re.search(r"(?:^|\s)-\w*g", args):
            continue  # `declare -g n`: the global one
        for name in _LOCAL_NAME_RE.findall(re.sub(r"=\S*", "=", args)):
            names.setdefault(name, start + m.start())
    return names


def right_in_bodies(values: dict[str, list[tuple[int, str | None]]],
               spans: list[tuple[int, int, str]]) -> dict[str, list[tuple[int, tuple[int, int]]]]:
    """The assignments of `values` (a body's own, and what a call in it leaves there:
    body_assignments.set_at_links) right in a function's body (the innermost around it), by
    variable: (offset, that body), in order."""
    positions = [pos for v in values.values() for pos, _v in v]
    around = enclosing([(s, e) for s, e, _n in spans], positions)
    return {var: found for var, v in values.items()
            if (found := [(pos, around[pos]) for pos, _v in v if pos in around])}


def own_view(assigned: list[tuple[int, str | None]],
              before: Sequence[tuple[int, str | None]],
              in_bodies: list[tuple[int, tuple[int, int]]], body: tuple[int, int],
              run_first: Collection[tuple[int, int]] = ()
              ) -> tuple[list[tuple[int, str | None]], Sequence[tuple[int, str | None]]]:
    """`assigned` and `before` (a variable's assignments, and those before a counter in the
    function body `body`) as that counter reads them where it is: without those right in
    another body (`in_bodies`: right_in_bodies's), whose text bash runs at that body's calls only
    (`setup() { n=0; }; main() { [ … ] && setup; ((n++)); }`: setup's `n=0` holds at the call
    in main, on some runs, not where its text is, on every run); one in a body around `body`
    (a function defined in another's body) stays, as do those of the bodies `run_first`
    (body_calls_before's: called in the script's shell before `body`'s first call, `setup;
    main`, where what they leave holds). Themselves where there is none."""
    start, end = body
    k = bisect.bisect_left(in_bodies, before[-1][0] + 1, key=lambda e: e[0]) if before else 0
    other = {pos for pos, (s, e) in in_bodies[:k]
             if not (s <= start and end <= e) and (s, e) not in run_first}
    if not other:
        return assigned, before
    return ([(pos, v) for pos, v in assigned if pos not in other],
            [(pos, v) for pos, v in before if pos not in other])


def bodies_called_before(in_shell: list[tuple[Call, bool]], bodies: dict[str, tuple[int, int]]
                         ) -> dict[tuple[int, int], set[tuple[int, int]]]:
    """For each body called in the script's shell (`in_shell`: calls_in_shell's), the bodies
    with a call there before its first (`setup; main`; one made from its body only, placed
    at its call, is not before it): what they set holds when it runs (own_view's
    `run_first`)."""
    first: dict[tuple[int, int], int] = {}
    for call, _always in in_shell:
        if (where := bodies.get(call.name)) is not None:
            first[where] = min(first.get(where, call.offset), call.offset)
    return {body: {other for other, at in first.items() if at < called}
            for body, called in first.items()}


#: What a call leaves a variable at (set_at_calls): the value (None: not known) and whether on
#: every run that makes the call (else on some runs only, the value before holding on others).
SetAtCall = tuple[str | None, bool]


@dataclass(frozen=True)
class AssignmentWalk:
    """What set_at_calls and set_at_links read of the walk: the script's `code`, its function
    `bodies` by name, each variable's plain assignments (`values`: offset and value, None not
    known), the innermost subshell or body right around each (`right_in`), the calls that run
    a body in the script's shell (`in_shell`: calls_in_shell's), the variables each body
    declares local (`locals_of`: local_names's), and the walk's `constructs` and `path_of`."""

    code: str
    bodies: dict[str, tuple[int, int]]
    values: dict[str, list[tuple[int, str | None]]]
    right_in: dict[int, tuple[int, int]]
    in_shell: list[tuple[Call, bool]]
    locals_of: dict[tuple[int, int], dict[str, int]]
    constructs: dict[tuple[int, int], Construct]
    path_of: Callable[[int], tuple[Step, ...]]


def set_at_calls(walk: AssignmentWalk) -> dict[str, dict[int, list[SetAtCall]]]:
    """The assignments the calls `in_shell` (calls_in_shell's) make, by variable and call
    offset: what the body leaves the variable at, of its assignments right in it (`right_in`:
    the innermost subshell or body around each), through its branches and a `return` bash may
    take (branch_paths.last_to_run): one value on every run, or one
    that does not stop a counter (known or not) on every run and one that does (0, empty,
    "08") on some, or, where the body or the call through other bodies (not `always`) may
    leave it as it was, a value on some runs only. Not known (None) where a count of it
    follows in the body; none for a variable the body declares local (`locals_of`)."""
    plans, by_body = _plans(walk)
    found: dict[str, dict[int, list[SetAtCall]]] = {}
    for call, always in walk.in_shell:
        for var in by_body.get(call.name, ()):
            candidates, every_run = plans[call.name, var]
            made = _made(candidates, every_run and always)
            at = found.setdefault(var, {})
            # (two bodies setting it at one call, through one another: not known here)
            at[call.offset] = made if at.get(call.offset, made) == made else [(None, True)]
    return found


#: What each body leaves each variable it sets at (_left_by_body's), by (function, variable);
#: and the variables each body sets, by function.
Plans = tuple[dict[tuple[str, str], tuple[list[str | None], bool]], dict[str, list[str]]]


def _plans(walk: AssignmentWalk) -> Plans:
    """What each body leaves the variables it sets at (not those it declares local), of its
    assignments right in it (`right_in`: the innermost subshell or body around each)."""
    plans: dict[tuple[str, str], tuple[list[str | None], bool]] = {}
    by_body: dict[str, list[str]] = {}
    name_of = {body: name for name, body in walk.bodies.items()}
    for var, assignments in walk.values.items():
        mine: dict[str, list[tuple[int, str | None]]] = {}  # right in each body, by function
        for pos, v in assignments:
            name = name_of.get(walk.right_in.get(pos, (0, 0)))
            if name is not None and var not in walk.locals_of.get(walk.bodies[name], ()):
                mine.setdefault(name, []).append((pos, v))
        for name, entries in mine.items():
            plans[name, var] = _left_by_body(walk.code, walk.bodies[name], var, entries,
                                             walk.constructs, walk.path_of)
            by_body.setdefault(name, []).append(var)
    return plans, by_body


def set_at_links(walk: AssignmentWalk) -> dict[str, dict[int, list[SetAtCall]]]:
    """The assignments the calls `in_shell` made through other bodies (model.Call.chain) make
    where each call of the chain is in its body (`main() { setup; ((n++)); }`: setup's `n=1`
    holds at `setup`, in main's body, for what follows it there): by variable and the call's
    offset in that body, what the called body leaves (set_at_calls's SetAtCall's): on every
    run where it sets it on every run and bash makes the rest of the chain whenever it makes
    that call, else on some runs only (`setup() { [ -n "$X" ] && n=1; }`, a `return` between)."""
    plans, by_body = _plans(walk)
    found: dict[str, dict[int, list[SetAtCall]]] = {}
    for call, _always in walk.in_shell:
        sure = True  # (bash makes the rest of the chain whenever it makes the call at `at`)
        for start, _end, at in reversed(call.chain):
            for var in by_body.get(call.name, ()):
                candidates, every_run = plans[call.name, var]
                made = _made(candidates, every_run and sure)
                placed = found.setdefault(var, {})
                # (two chains leaving it different at one call: not known there)
                placed[at] = made if placed.get(at, made) == made else [(None, True)]
            sure = sure and walk.path_of(at) == walk.path_of(start) and not _RETURN_RE.search(
                walk.code, start, at)
    return found


def _left_by_body(code: str, body: tuple[int, int], var: str,
                  entries: list[tuple[int, str | None]],
                  constructs: dict[tuple[int, int], Construct],
                  path_of: Callable[[int], tuple[Step, ...]]
                  ) -> tuple[list[str | None], bool]:
    """The values the body at `body` may leave its variable at, of its assignments `entries`
    (right in it, in order), and whether it sets it on every run: those that may be the last
    to run (branch_paths.last_to_run: what follows a `return` bash may take is a branch of
    the walk's constructs), or, where each of them adds a constant on every run (`((n--))`),
    their sum (counter_values.STEP). All not known (None)
    where a count of `var` (`((n++))`, `let n+=2`, `$((++n))`) follows the first of them in the
    body."""
    start, end = body
    left, every_run = last_to_run(entries, start, end, constructs, path_of)
    candidates = [v for _pos, v in left]
    steps = [arithmetic_step(code, pos) for pos, _v in entries]
    if all(step is not None for step in steps) and all(
            path_of(pos) == path_of(start) for pos, _v in entries):
        # (only constants added, on every run: what it adds to the value at the call)
        candidates, every_run = [f"{STEP}{sum(s for s in steps if s is not None)}"], True
    name = re.escape(var)
    past = _COMMAND_END_RE.search(code, left[0][0], end) if left else None
    if past and re.compile(r"(?<![\w$])" + name + r"\s*(?:\+\+|--|[-+*/%]=)|(?:\+\+|--)\s*"
                           + name + r"(?!\w)").search(code, past.start(), end):
        candidates = [None]
    return candidates, every_run


def _made(candidates: list[str | None], every_run: bool) -> list[SetAtCall]:
    """What a call leaves (SetAtCall's, in the order bash may run them: one on every run first)
    of a body that may leave `candidates`, on every run that makes the call or not."""
    values = list(dict.fromkeys(candidates))
    stopping = [v for v in values if v is not None and stops_at(v)]
    others = [v for v in values if v not in stopping]
    if len(values) == 1:
        return [(values[0], every_run)]
    if every_run and stopping:
        return [(others[-1] if len(others) == 1 else None, True), (stopping[-1], False)]
    if every_run:
        return [(None, True)]
    return [(stopping[-1] if stopping else None, False)]


#: A command whose name is a parameter (`$cmd`, `"${cmd}"`), or an `eval` of one: bash may
#: run any function there.
_DYNAMIC_CALL_RE = re.compile(
    r"(?:^|[;&|({`]|\b(?:then|do|else|time|command|exec)\b|\w=\S*)[ \t]*[\"']?\$[{\w]"
    r"|\beval\b[^\n;]*\$", re.MULTILINE)


#: A word that may name a function (not part of a path, a parameter or a longer word).
_WORD_RE = re.compile(r"(?<![\w$./:-])[A-Za-z_][\w:-]*(?![\w:./-])")
#: The name a function's body is defined for, right before the body.
_DEFINED_RE = re.compile(r"([A-Za-z_][\w:-]*)[ \t]*(?:\([ \t]*\))?[ \t\n]*\{?[ \t]*\Z")


def calls_all_read(code: str, calls: list[Call], bodies: dict[str, tuple[int, int]],
                   uncalled: list[tuple[int, int]], never_run: list[tuple[int, int]]) -> bool:
    """Is every place bash may run a function's body a call the walk read (`calls`)? Not so
    where a function's name is elsewhere than at those calls and its definition (`FOO=1 f`,
    `time f`, `"f"`, `\\f`, `eval "f; g"`), or a command's name is a parameter
    (`$cmd`, `eval "$cmd"`): there its body's assignments may hold, which set_at_calls cannot
    place (the arithmetic checks then read them where the body is); so where a function the
    walk read no body of (`uncalled`: defined in a branch) is named. A call in a command
    substitution (`$(f)`, `` `f` ``, `<(f)`) runs in a subshell: it sets nothing here; a name
    bash runs no body at (_RUNS_NO_BODY_HERE_RE: `cmd=f`, `command f`), an `EXIT` trap's
    (`trap f EXIT`: after every command), a signal's or `ERR`'s (`trap f INT`: on no normal
    run; trap_action), one where bash never goes (`never_run`: `g() {
    return 0; f; }`) and one in a piped group (_piped_groups: a subshell) are no such place."""
    if _DYNAMIC_CALL_RE.search(code):
        return False
    read = {c.offset for c in calls}
    names = list(bodies)
    for start, _end in uncalled:  # (a body the walk did not read: `if c; then f() { …; }; fi`)
        if m := _DEFINED_RE.search(code, max(0, start - 120), start):
            names.append(m.group(1))
    named = set(names)
    unread: list[int] = []
    for m in _WORD_RE.finditer(code):  # (one pass for all the names)
        if m.group() in named:
            at = m.start()
            if not (at in read or _evaluated_at(code, at) in read
                    or re.match(r"[ \t]*\(", code[m.end():m.end() + 40])
                    or re.search(r"(?:\bfunction|[$<>]\(|`)[ \t]*$", code[max(0, at - 20):at])
                    or _RUNS_NO_BODY_HERE_RE.search(code[max(0, at - 40):at])
                    or trap_action(code, at) is not None):
                unread.append(at)
    if not unread:
        return True
    skipped = enclosing(never_run + _piped_groups(code), unread)
    return all(at in skipped for at in unread)


#: An `eval` right before a word (`eval f`, `eval 'f`): the walk's call (calls.evaluated_call)
#: is at the `eval`.
_EVAL_BEFORE_RE = re.compile(r"eval[ \t]+[\"']?\Z")


def _evaluated_at(code: str, at: int) -> int | None:
    """Where the `eval` that runs the word at `at` starts, if one does."""
    m = _EVAL_BEFORE_RE.search(code, max(0, at - 30), at)
    return m.start() if m else None


#: After a group's `}`: its redirections (`2>&1`, `> log`), then a pipe (`|`, `|&`).
_PIPE_AFTER_RE = re.compile(r"(?:[ \t]*\d*[<>&]+[ \t]*[^\s|;]*)*[ \t]*\|(?!\|)")
#: Before a group's `{`: a pipe (not `||`), and blanks.
_PIPE_BEFORE_RE = re.compile(r"(?<!\|)\|[ \t\n]*\Z")


def _piped_groups(code: str) -> list[tuple[int, int]]:
    """The spans of the `{ … }` groups that are a pipeline's elements (`{ f; } | tee log`,
    `cat x | { f; }`): bash runs each in a subshell, so a call in one runs its body there
    (none under `shopt -s lastpipe`, where the last may run in the script's shell)."""
    if "|" not in code or "lastpipe" in code:
        return []
    spans: list[tuple[int, int]] = []
    memo: Memo = {}
    for m in _GROUP_OPEN_RE.finditer(code):
        try:
            past = group_end(code, m.start(), 0, memo)
        except Exception:  # noqa: BLE001 (an unclosed group: nothing to read)
            continue
        if _PIPE_AFTER_RE.match(code, past) or _PIPE_BEFORE_RE.search(
                code, max(0, m.start() - 40), m.start()):
            spans.append((m.start(), past))
    return spans


#: `command` or `builtin` right before a word (`command f`, `command -p f`, `builtin command f`,
#: `builtin f`): both skip functions, so bash runs no body of `f` there (`builtin f` fails,
#: not a builtin; under `set -e` bash 5.2 ends the shell at `builtin command f` when no `f`
#: file is found, tested or not).
COMMAND_ARGUMENT_RE = re.compile(
    r"(?<![\w-])(?:(?:builtin[ \t]+)?command[ \t]+(?:-[pvV]+[ \t]+)*|builtin[ \t]+)\Z")
#: What, right before a function's name, makes it a word bash runs no body at: a value
#: assigned (`cmd=f`, `cmd="f"`: only a later `$cmd` runs it, read as dynamic) or a command run
#: by `command` (COMMAND_ARGUMENT_RE).
_RUNS_NO_BODY_HERE_RE = re.compile(r"\w=[\"']?\Z|" + COMMAND_ARGUMENT_RE.pattern)


#: The conditions a trap's action runs on, by name without `SIG`: the shell's exit (after every
#: command of the script), and those on the way of a run that ends normally (before each simple
#: command, at each function's return). Any other, a signal (`INT`, `TERM`, `USR1`) or `ERR`
#: (a command failing where `set -e` would stop on it: under `set -e`, only as the script
#: stops; with `set -e` off anywhere, on the way: _err_on_no_normal_run), runs it on no run
#: that reaches its end normally.
_ON_EXIT = {"EXIT", "0"}
_ON_THE_WAY = {"DEBUG", "RETURN"}
#: `set -e` turned on (`set -e`, `set -euo pipefail`, `set -o errexit`, a `#!/bin/bash -e`
#: line) and off (`set +e`, `set +o errexit`, `shopt -u -o errexit`): an `ERR` trap's action
#: runs on no normal run only where `set -e` is on from before the trap to the end (_ERR_ON).
_ERREXIT_ON_RE = re.compile(r"\bset[ \t]+(?:[^\n;&|]*[ \t])?(?:-[A-Za-z]*e|-o[ \t]+errexit\b)"
                            r"|\A#![^\n]*[ \t]-[A-Za-z]*e")
_ERREXIT_OFF_RE = re.compile(r"\bset[ \t]+(?:[^\n;&|]*[ \t])?(?:\+[A-Za-z]*e|\+o[ \t]+errexit\b)"
                             r"|\bshopt\b[^\n]*\berrexit\b")


def _err_on_no_normal_run(code: str, at: int) -> bool:
    """Does an `ERR` trap set at `at` run on no run that ends normally: `set -e` is on before
    it and nothing turns it off (a `set +e` anywhere, or no `set -e` before the trap, and a
    failing command runs the action on the way: `set +e; false; set -e`)."""
    on = _ERREXIT_ON_RE.search(code, 0, at)
    return on is not None and not _ERREXIT_OFF_RE.search(code)


def trap_action(code: str, at: int) -> str | None:
    """Is the word at `at` in a `trap` command's action on its line (trap_actions.trap_commands),
    and when does bash run it: "exit" (a word of the action of a trap on the shell's exit, run
    after every command: `trap f EXIT`, `trap 'f "$tmp"' EXIT`, `trap '[ -n "$X" ] && f'
    EXIT`; the calls it always makes there are trap_actions.always_called's), "signal" (a word
    of an action run on a signal or `ERR` only, `trap f INT`, `trap 'h "$1"' TERM`, `trap '[
    -n "$X" ] && h' USR1`: on no normal run), None (no such action, or one bash runs on the
    way, `trap f DEBUG`)."""
    line_start = code.rfind("\n", 0, at) + 1
    if "trap" not in code[line_start:at]:
        return None
    line_end = code.find("\n", at)
    line = code[line_start : len(code) if line_end < 0 else line_end]
    rel = at - line_start
    for trap in trap_commands(line):
        on = trap.on
        if trap.action is None or not trap.action_at <= rel < trap.action_at + len(trap.action):
            continue
        if on & _ON_THE_WAY or ("ERR" in on and not _err_on_no_normal_run(code, line_start)):
            continue
        return "exit" if on & _ON_EXIT else "signal"
    return None
