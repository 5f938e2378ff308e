"""The finding an arithmetic command makes (bot.core.launcher_lint.arith judges which): its
check (`arith_zero_under_errexit`, `arith_unset_under_nounset`, `arith_error_without_errexit`),
its level, the words that say when and why bash stops or goes on there, and its fix."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from bot.core.findings import Finding, Level
from bot.core.launcher_lint.counter_values import BAD_OCTAL_RE
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
)
from bot.core.text import N_, Text

#: Which runs an unbound counter stops bash on (_unbound_stop): where a branch bash may skip
#: leaves its variable unset, or where it is in another branch than the assignment.
_ON_THOSE_RUNS = N_("on those runs")
_ON_THIS_BRANCH = N_("on the runs that take this branch")


def arith_finding(a: Arith, line: int, value: str | None,
                  prefix: tuple[str, int] | None = None, carried: tuple[int, bool] | None = None,
                  later: tuple[str, int, int, str, bool] | None = None,
                  skipped_count: int | None = None, set_partly: int | None = None,
                  unset_partly: int | None = None,
                  apart: tuple[int, str, int | None, str] | None = None,
                  unset_by: int | None = None) -> Finding:
    """The finding of arithmetic command `a` on `line`, with `value` the text its variable
    holds there: zeros, empty, a number arithmetic cannot read ("08"), or None when nothing in
    the script sets it (`prefix`: the last command before it that the variable prefixes, `n=0
    cmd`, and its line, which sets it for that command only; `carried`: the line at the end
    of a loop's body that leaves it so for the loop's next pass, and whether on every run
    (else in a branch of the body bash may skip: on the runs that take it); `later`: in a
    function's body, stopping bash at a call after an earlier one, not the first
    (arith_calls.AtCall.later): how
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
    assignment never runs); `unset_by`: the line of the `unset` of it it reads it unset after
    (on the runs `set_partly` says, where it is that line's)."""
    said = {"line": line, "command": short(a.command), "var": a.variable,
            "under": under_pipefail_partly(a.errexit_partial) if a.pipefail_partial
            else under_errexit("`set -e`", a.errexit_partial), "slurm": slurm_shows(1)}
    unset = value is None
    octal = value is not None and BAD_OCTAL_RE.fullmatch(value) is not None
    # with `set -e` on some paths only, the stop is on the runs that take them; an unset
    # variable in capitals may come from the job's environment (sbatch passes the submitter's)
    level: Level = "warn" if (a.errexit_partial or a.pipefail_partial
                              or unset and a.variable.isupper() and unset_by is None
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
                        call=call, function=function) if kind == "again"
                else N_("when the call on line %(call)s runs the body of `%(function)s` in the "
                        "script's shell (the calls before it ran it in a subshell, whose "
                        "counts do not hold here)", call=call, function=function))
        how = (N_("as line %(at)s sets it", at=at) if every_run else
               N_("as line %(at)s sets it on some runs only (branches of the body decide "
                  "which value it leaves)", at=at))
        text = N_("line %(line)s: %(when)s, `%(command)s` reads `%(var)s` at \"%(value)s\" "
                  "%(how)s, so its status is 1: %(under)s the launcher stops right here at that "
                  "call, not at an earlier one: %(slurm)s", when=when, value=value, how=how,
                  **said)
    elif unset_by is not None and skipped_count is None:
        text = _unset_text(a, unset_by, set_partly is None, said)
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


#: The name of the function a substitution's call runs, at the call.
_CALLED_RE = re.compile(r"[A-Za-z_][\w:-]*")


def through_substitution(found: Finding, code: str, a: Arith) -> Finding:
    """`found` for a counter that gives an assignment its status through the call at the end of
    its command substitution (model.Arith.substituted, `x=$(f)`): said so, as the line is the
    assignment's, not the counter's."""
    m = _CALLED_RE.match(code, a.offset)
    return replace(found, text=N_(
        "%(finding)s (through the command substitution on this line: `%(command)s` is the last "
        "command of `%(function)s`, which it runs, so the assignment's status is the "
        "counter's)", finding=found.text, command=short(a.command),
        function=m.group() if m else "?"))


def _unset_text(a: Arith, at: int, every_run: bool, said: dict[str, Any]) -> Text:
    """The finding's text when `a` reads its variable unset after `unset` on line `at`: on
    every run, or on those where branches on the way make that line's the last to run."""
    if every_run and a.nounset:
        return N_("line %(line)s: `%(command)s` reads `%(var)s` unset, as `unset %(var)s` on "
                  "line %(at)s leaves it: %(stop)s: %(slurm)s", at=at,
                  stop=_unbound_stop(a, said), **said)
    if every_run:
        return N_("line %(line)s: `%(command)s` reads `%(var)s` unset, as `unset %(var)s` on "
                  "line %(at)s leaves it, and evaluates to 0, so its status is 1: %(under)s the "
                  "launcher stops right here: %(slurm)s", at=at, **said)
    if a.nounset:
        return N_("line %(line)s: `%(command)s` reads `%(var)s` unset as `unset %(var)s` on "
                  "line %(at)s leaves it on some runs only (branches on the way here decide "
                  "which value it holds): %(stop)s: %(slurm)s", at=at,
                  stop=_unbound_stop(a, said, _ON_THOSE_RUNS), **said)
    return N_("line %(line)s: `%(command)s` reads `%(var)s` unset as `unset %(var)s` on line "
              "%(at)s leaves it on some runs only (branches on the way here decide which value "
              "it holds), and evaluates to 0 there, so its status is 1: %(under)s the launcher "
              "stops right here on those runs: %(slurm)s", at=at, **said)


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
    if tested_by == "!":
        return N_("`!` negates it to 0, so `set -e` does not stop the launcher")
    if tested_by in ("if", "elif"):
        return N_("`%(keyword)s` takes it as false: its `then` branch is skipped and the "
                  "launcher goes on", keyword=tested_by)
    if tested_by == "while":
        return N_("`while` takes it as false: the loop ends there and the launcher goes on")
    if tested_by == "until":
        return N_("`until` takes it as false: the loop's body runs again, and this test never "
                  "ends the loop")
    return N_("a condition tests it, so `set -e` does not stop the launcher")
