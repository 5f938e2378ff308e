"""Launcher lint: what bash never runs past an `exit` (or an `exec` of a command) that ends the
script's shell, checked against real bash. A counter past one is no finding; one before it,
or past one bash may skip, reads as before."""

from __future__ import annotations

import contextlib
import functools
import itertools
import random
import subprocess

import pytest

from bot.core.launcher_lint import CHECK_ARITH_UNSET, CHECK_ARITH_ZERO, lint_launcher


def _counter_stops_bash_as_the_level_says(tmp_path, body: str, level: str | None,
                                          lint_level: str | None = None) -> None:
    """`body`'s `((n++))` under `set -e`: real bash, run with X empty and with X=1, stops on it
    (status 1; every `exit` of these scripts is `exit 0` or `exit 3`) on both runs (fail), on
    one (warn), or on neither (None), and the lint's finding on that line says the same (or
    `lint_level`, where the lint cannot know as much as the two runs show)."""
    script = f"#!/bin/bash\n{body}"
    launch = tmp_path / "launch.sh"
    launch.write_text(script)
    stops = sorted(subprocess.run(
        ["bash", str(launch)], capture_output=True, text=True, timeout=20,
        env={"PATH": "/usr/bin:/bin", "X": x}).returncode == 1 for x in ("", "1"))
    assert stops == {"fail": [True, True], "warn": [False, True], None: [False, False]}[level]
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    counter = script.count("\n", 0, script.rindex("((n++))")) + 1
    said = lint_level or level
    assert [(f.level, f.line) for f in found] == ([(said, counter)] if said else [])


@pytest.mark.parametrize(("body", "level"), [
    # an `exit` bash always runs ends the script: nothing past it runs
    ("set -e\nn=0\nexit 0\n((n++))\n", None),
    ("set -e\nn=0\nexit 3; ((n++))\n", None),
    ("set -e\nn=0\ntrue && exit 0\n((n++))\n", None),
    ("set -e\nn=0\nfalse || exit 3\n((n++))\n", None),
    ("set -e\nn=0\nexit\n((n++))\n", None),
    ("set -e\nexit 0\nn=0\n((n++))\n", None),
    # … first in an and-or list, or after commands whose status bash's semantics decide, the
    # rest of the list with it (each said `fail`: the list's `n=1` read as skipped, the shell
    # as going on)
    ("set -e\nn=0\nexit 0 || n=1\n((n++))\n", None),
    ("set -e\nn=0\nexit 3 && n=1\n((n++))\n", None),
    ("set -e\nn=0\ntrue && exit 0 || n=1\n((n++))\n", None),
    ("set -e\nn=0\n{ echo a; exit 0; } || n=1\n((n++))\n", None),
    ("set -e\nn=0\ntrue && { echo a; exit 0; } || n=1\n((n++))\n", None),
    ("set -e\nn=0\nfalse && n=1 || { exit 0; } && n=2\n((n++))\n", None),
    # … in a condition, which bash runs as any other command (each said `fail`); in a
    # function, a `return` there leaves the body
    ("set -e\nn=0\nif exit 0; then :; fi\n((n++))\n", None),
    ("set -e\nn=0\nwhile exit 3; do :; done\n((n++))\n", None),
    ("set -e\nn=0\nif false; then :; elif ! exit 0; then :; else n=1; fi\n((n++))\n", None),
    ("set -e\nn=0\nf() { if return; then :; fi; ((n++)); }\nf\n", None),
    # … in a branch bash always runs, or in every branch of an `if` / `case` one of whose
    # branches always runs
    ("set -e\nn=0\nif true; then exit 0; fi\n((n++))\n", None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then exit 0; else exit 3; fi\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then echo a; exit 0; elif true; then exit 3; fi\n'
     "((n++))\n", None),
    ('set -e\nn=0\ncase "${X:-}" in 1) exit 3;; *) exit 0;; esac\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then if true; then exit 0; fi; else exit 3; fi\n'
     "((n++))\n", None),
    ("set -e\nn=0\nif false; then :; else exit 0; fi\n((n++))\n", None),
    # … and in a loop's body, or a function's, past it
    ("set -e\nn=0\nfor i in 1 2; do exit 0; ((n++)); done\n", None),
    ("set -e\nn=0\nwhile true; do if true; then exit 0; fi; ((n++)); done\n", None),
    ("set -e\nn=0\nf() { exit 0; ((n++)); }\nf\n", None),
    # an `exec` of a command replaces the shell: nothing past it runs (`exec` of redirections
    # only does not)
    ("set -e\nn=0\nexec true\n((n++))\n", None),
    ("set -e\nn=0\nexec >/dev/null 2>&1\n((n++))\n", "fail"),
    # … not past one in a subshell, a pipeline or the background, or one bash never runs
    ("set -e\nn=0\n( exit 0 )\n((n++))\n", "fail"),
    ("set -e\nn=0\nexit 0 | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\nexit 0 &\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\nif true; then exit 0; fi | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue || exit 0\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { exit 0; }\n((n++))\nf\n", "fail"),
    ("set -e\nn=0\n((n++))\nexit 0\n", "fail"),
])
def test_nothing_past_an_exit_bash_always_runs_is_read_as_run(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a loop whose body bash runs (`while true`, `for` over words) and ends the shell on its
    # first pass: nothing past it runs
    ("set -e\nn=0\nwhile true; do exit 0; done\n((n++))\n", None),
    ("set -e\nn=0\nuntil false; do exit 0; done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do echo; exit 0; done\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then exit 0; else exit 3; fi; done\n'
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do for j in 1; do exit 0; done; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do { exit 0; }; done\n((n++))\n", None),
    # … a `{ …; exit; }` group, alone or redirected, in a branch, nested, with an `if` in it
    ("set -e\nn=0\n{ echo a; exit 0; }\n((n++))\n", None),
    ("set -e\nn=0\ntrue && { echo a; exit 0; }\n((n++))\n", None),
    ("set -e\nn=0\nfalse || { exit 3; }\n((n++))\n", None),
    ("set -e\nn=0\n{ echo a; exit 0; } > /dev/null\n((n++))\n", None),
    ("n=0\n{ echo a; exit 0; }\nset -e\n((n++))\n", None),
    ("set -e\nn=0\n{ { exit 0; }; }\n((n++))\n", None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then { exit 0; }; else exit 3; fi\n((n++))\n', None),
    ('set -e\nn=0\n{ if [ -n "${X:-}" ]; then exit 0; else exit 3; fi; }\n((n++))\n', None),
    # … but not one that may leave the loop first, or run in a subshell, or a function's body
    ("set -e\nn=0\nwhile true; do break; exit 0; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do { break; exit 0; }; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do exit 0; done | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\n{ exit 0; } | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\n{ exit 0; } &\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\n( { exit 0; } )\n((n++))\n", "fail"),
    ("set -e\nn=0\nx=$( { exit 0; } )\n((n++))\n", "fail"),
    ("set -e\nn=0\nf()\n{\n  exit 0\n}\n((n++))\nf\n", "fail"),
    ("set -e\nn=0\nfunction f\n{\n  exit 0\n}\n((n++))\nf\n", "fail"),
])
def test_nothing_past_a_loop_or_group_that_always_exits_is_read_as_run(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


def _bash_exits_and_the_lint_says(tmp_path, body: str, codes: list[int], line: int | None
                                  ) -> None:
    """Real bash runs `body` with X empty and with X=1 and exits with `codes` (1: `set -e`
    stopped on the counter, or the row's own `exit` gave 1: `line` says which), and the
    lint's one counter finding is `fail` on `line` (a counter that stops bash on each run that
    reaches it), or there is none (None)."""
    script = f"#!/bin/bash\n{body}"
    launch = tmp_path / "launch.sh"
    launch.write_text(script)
    assert [subprocess.run(["bash", str(launch)], capture_output=True, timeout=20,
                           env={"PATH": "/usr/bin:/bin", "X": x}).returncode
            for x in ("", "1")] == codes
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    assert [(f.level, f.line) for f in found] == ([("fail", line)] if line else [])


@pytest.mark.parametrize(("body", "codes", "line"), [
    # past an `exit` bash may skip, the counter stops bash on each run that reaches it (X
    # empty; with X=1 bash exits 0 first): `fail`, as before
    ('set -e\nn=0\n[ -n "${X:-}" ] && exit 0\n((n++))\n', [1, 0], 5),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then exit 0; fi\n((n++))\n', [1, 0], 5),
    ('set -e\nn=0\ncase "${X:-}" in 1) exit 0;; esac\n((n++))\n', [1, 0], 5),
    ('set -e\nn=0\ncase "${X:-}" in 1) exit 0;& *) :;; esac\n((n++))\n', [1, 0], 5),
    ('set -e\nn=0\n[ -n "${X:-}" ] && if true; then exit 0; fi\n((n++))\n', [1, 0], 5),
    ('set -e\nn=0\n[ -n "${X:-}" ] && { exit 0; }\n((n++))\n', [1, 0], 5),
    # … or past one whose other branch sets the counter to 0 (the runs that do not exit)
    ('set -e\nn=0\n[ -n "${X:-}" ] && exit 0 || n=0\n((n++))\n', [1, 0], 5),
    ('set -e\nn=5\nif [ -n "${X:-}" ]; then exit 0; else n=0; fi\n((n++))\n', [1, 0], 5),
    # … or in an `elif`'s condition, which a branch before it may skip
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then :; elif exit 0; then :; fi\n((n++))\n', [0, 1], 5),
    # … past a `return` bash may skip (with X=1 the function returns first), as past an `exit`
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && return; ((n++)); }\nf\n', [1, 0], 4),
    # … in a branch that exits, reading what the branch set (X=1), or past it, reading what
    # holds without it (X empty)
    ('set -e\nn=5\nif [ -n "${X:-}" ]; then n=0; ((n++)); exit 0; fi\n', [0, 1], 4),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then ((n++)) || true; exit 0; fi\n((n++))\n', [1, 0], 5),
    # … after `&&` as the and-or list's last command (`[ … ] && ((n++))` from 0: X=1), as in
    # an `if` branch (bash goes on past the failed test, X empty); `|| true` after it, or a
    # command after its `&&`, tests its status: no stop
    ('set -e\nn=0\n[ -n "${X:-}" ] && ((n++))\necho done\n', [0, 1], 4),
    ('set -e\nn=0\n[ -n "${X:-}" ] && let n++\necho done\n', [0, 1], 4),
    ('set -e\nn=0\n[ -n "${X:-}" ] && ((n++)) || true\necho done\n', [0, 0], None),
    ('set -e\nn=0\n((n++)) && echo counted\necho done\n', [0, 0], None),
    # an `exit` of any words ends the shell: its status only known as it runs (an arithmetic
    # or command substitution), 2 for a word that is no number, 1 for more than one word
    # (those with a substitution, a blank or a redirection said `fail` on the counter, not
    # reading them as an `exit`)
    ("set -e\nn=0\nexit \"$X\"\n((n++))\n", [2, 1], None),
    ("set -e\nn=0\nexit $((X + 3))\n((n++))\n", [3, 4], None),
    ('set -e\nn=0\nexit "$(echo 3)" || n=1\n((n++))\n', [3, 3], None),
    ('set -e\nn=0\nexit "${X:-not a number}"\n((n++))\n', [2, 1], None),
    ("set -e\nn=0\nexit $X 3\n((n++))\n", [3, 1], None),
    ("set -e\nn=0\nexit 3 >&2\n((n++))\n", [3, 3], None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && exit $((X + 2))\n((n++))\n', [1, 3], 5),
    # a `return` outside a function: bash refuses it with status 2, on which `set -e` stops
    # the script (both said `fail` on the counter), and goes on where `set -e` is off
    ("set -e\nn=0\nreturn\n((n++))\n", [2, 2], None),
    ("set -e\nn=0\nreturn 0\n((n++))\n", [2, 2], None),
    ("n=0\nreturn\nset -e\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nreturn | cat\n((n++))\n", [1, 1], 5),
    # under `set -e`, a command bash's semantics say always fails (`false`, `( exit 3 )`, a
    # pipeline whose last command is one, a `return` outside a function: status 2) ends the
    # script where `set -e` applies: nothing past it runs, also past one in a branch bash
    # always runs, a loop's body or a `case` branch (each said `fail` on the counter)
    ("set -e\nn=0\nfalse\n((n++))\n", [1, 1], None),
    ("set -e\nn=0\n( exit 3 )\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\ntrue | ( exit 3 )\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\ntrue && ( exit 3 )\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nif true; then ( exit 3 ); fi\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nif true; then return; fi\n((n++))\n", [2, 2], None),
    ("set -e\nn=0\nfor i in 1 2; do ( echo a; exit 3 ); done\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nwhile true; do return; done\n((n++))\n", [2, 2], None),
    ("set -e\nn=0\ncase x in *) false;; esac\n((n++))\n", [1, 1], None),
    # … a `case` branch whose pattern is the `case`'s own literal word (quotes aside) too,
    # and one past patterns that are other literal words, which never match it
    ("set -e\nn=0\ncase x in x) false;; esac\n((n++))\n", [1, 1], None),
    ("set -e\nn=0\ncase gpu in\n  'gpu') false;;\nesac\n((n++))\n", [1, 1], None),
    ('set -e\nn=0\ncase "gpu" in cpu) :;; gpu|tpu) ( exit 3 );; esac\n((n++))\n', [3, 3], None),
    # … not past a glob, a word that expands, or a literal bash may fall from
    ("set -e\nn=0\ncase x in x*) false;; esac\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\ncase $X in x) false;; esac\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\ncase x in y) n=1;& x) :;; esac\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\ncase x in y) :;; x) n=1;; esac\n((n++))\n", [0, 0], None),
    # … on the runs that take a branch holding it only; what that branch set holds on none
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then ( exit 3 ); fi\n((n++))\n', [1, 3], 5),
    ('set -e\nn=5\nif [ -n "${X:-}" ]; then n=0; ( exit 3 ); fi\n((n++))\n', [0, 3], None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then ( exit 3 ); else n=1; fi\n((n++))\n', [0, 3], None),
    # … not where bash ignores `set -e`: a compound before `&&` / `||`, a negated pipeline, a
    # condition, a command before `&&` / `||`, nor where `set -e` is off; in a piped compound
    # (a subshell), it ends that subshell only
    ("set -e\nn=0\nif true; then ( exit 3 ); fi || true\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nfor i in 1; do ( exit 3 ); n=1; done || true\n((n++))\n", [0, 0], None),
    ("set -e\nn=0\nif true; then false; n=1; fi && true\n((n++))\n", [0, 0], None),
    ("set -e\nn=0\n! ( exit 3 )\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nif ( exit 3 ); then :; fi\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nwhile false; do :; done\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nfalse && true\n((n++))\n", [1, 1], 5),
    ("n=0\nfalse\nset -e\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nif true; then false; n=1; fi | cat\n((n++))\n", [1, 1], 5),
    # … read compound by compound: one before `&&` / `||` later in the script, or in a
    # substitution, leaves `set -e` on in the others (each said `fail` on the counter)
    ("set -e\nn=0\nif true; then ( exit 3 ); fi\nif true; then :; fi || true\n((n++))\n",
     [3, 3], None),
    ("set -e\nn=0\nfor i in 1; do false; done\ncase x in *) :;; esac && true\n((n++))\n",
     [1, 1], None),
    ("set -e\nn=0\nwhile true; do ( exit 3 ); done\nx=$(if true; then :; fi || true)\n((n++))\n",
     [3, 3], None),
    ("set -e\nn=0\nfor i in 1; do if true; then false; fi || true; ( exit 3 ); done\n((n++))\n",
     [3, 3], None),
    ("set -e\nn=0\nif true; then { false; }; fi\nfor i in 1; do :; done || true\n((n++))\n",
     [1, 1], None),
    # … and one inside a compound before `||` is exempt with it
    ("set -e\nn=0\ncase x in *) if true; then false; fi; n=1;; esac || true\n((n++))\n",
     [0, 0], None),
    ("set -e\nn=0\nif true; then false; n=1; fi | cat && true\n((n++))\n", [1, 1], 5),
    # … in a `{ … }` group's body too, where `set -e` applies to the group (each said
    # `fail` or `warn`): not in one before `||`, in a condition or piped
    ("set -e\nn=0\n{ echo a; false; }\n((n++))\n", [1, 1], None),
    ("set -e\nn=0\nif true; then { false; }; fi\n((n++))\n", [1, 1], None),
    ("set -e\nn=0\n{ { ( exit 3 ); }; } 2>/dev/null\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\n{ return; }\n((n++))\n", [2, 2], None),
    ('set -e\nn=5\n[ -n "${X:-}" ] && { n=0; ( exit 3 ); }\n((n++))\n', [0, 3], None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && { false; }\n((n++))\n', [1, 1], 5),
    ("set -e\nn=0\n{ echo a; false; } || true\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\nif { false; }; then :; fi\n((n++))\n", [1, 1], 5),
    ("set -e\nn=0\n{ false; } | cat\n((n++))\n", [1, 1], 5),
])
def test_a_counter_bash_reaches_on_some_runs_only_stops_each_run_that_reaches_it(
        tmp_path, body, codes, line):
    _bash_exits_and_the_lint_says(tmp_path, body, codes, line)


@pytest.mark.parametrize(("body", "codes", "line"), [
    # a plain call runs the function's body as where it is called: a command that always
    # fails there under `set -e`, or an `exit`, ends the script (each said `fail`)
    ("set -e\nn=0\nf() { ( exit 3 ); }\nf\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() {\n  echo a\n  ( exit 3 )\n}\nf > /dev/null\n((n++))\n", [3, 3], None),
    ("n=0\nf() { ( exit 3 ); }\nset -e\nf\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\nf\n((n++))\n", [3, 3], None),
    ("n=0\nf() { echo a; exit 3; }\nf\nset -e\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { ( exit 3 ); }\ng() { echo a; f; }\ng\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { ( exit 3 ); }\nfor i in a; do f; ((n++)); done\n", [3, 3], None),
    # … on the runs that make the call only
    ('set -e\nn=0\nf() { ( exit 3 ); }\nif [ -n "${X:-}" ]; then f; fi\n((n++))\n', [1, 3], 6),
    # … not where `set -e` is off at the call or in the body, the call is tested (`||`, `!`)
    # or piped
    ("n=0\nf() { ( exit 3 ); }\nf\nset -e\n((n++))\n", [1, 1], 6),
    ("set -e\nn=0\nf() { set +e; ( exit 3 ); }\nf\n((n++))\n", [1, 1], 6),
    ("set -e\nn=0\nf() { ( exit 3 ); }\nf || true\n((n++))\n", [1, 1], 6),
    ("set -e\nn=0\nf() { ( exit 3 ); }\n! f\n((n++))\n", [1, 1], 6),
    ("set -e\nn=0\nf() { ( exit 3 ); }\nf | cat\n((n++))\n", [1, 1], 6),
    ("set -e\nn=0\nf() { ( exit 3 ); n=1; }\nf || true\n((n++))\n", [0, 0], None),
])
def test_a_plain_call_of_a_function_whose_body_ends_the_script_ends_it(
        tmp_path, body, codes, line):
    _bash_exits_and_the_lint_says(tmp_path, body, codes, line)


@pytest.mark.parametrize(("body", "codes", "line"), [
    # a call whose status is tested runs the body all the same: its `exit` ends the script
    # whatever takes the status (`f || true`, `if f`, `while f`, `f && …`), where bash always
    # runs the call, through another body too (each said `fail`, the body read only at calls
    # where `set -u` is on)
    ("set -e\nn=0\nf() { exit 3; }\nf || true\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\nif f; then :; fi\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\nwhile f; do :; done\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\nf && n=1\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\ntrue && f || true\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\ng() { f || true; }\ng\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { exit 3; }\ng() { f || true; }\ng || true\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\nf() { echo a; exit 0; }\nf || true\n((n++))\n", [0, 0], None),
    # … on the runs that make the call only
    ('set -e\nn=0\nf() { exit 3; }\n[ -n "${X:-}" ] && f || true\n((n++))\n', [1, 3], 6),
    # … not where the call is piped or bash never runs it, nor past a `return` bash may take
    ("set -e\nn=0\nf() { exit 3; }\nf | cat || true\n((n++))\n", [1, 1], 6),
    ("set -e\nn=0\nf() { exit 3; }\nfalse && f || true\n((n++))\n", [1, 1], 6),
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && return; exit 3; }\nf || true\n((n++))\n',
     [3, 1], 6),
])
def test_a_tested_call_of_a_function_whose_body_exits_ends_the_script(
        tmp_path, body, codes, line):
    _bash_exits_and_the_lint_says(tmp_path, body, codes, line)


@pytest.mark.parametrize(("body", "codes", "line"), [
    # a call bash never makes (after `true ||`, `false &&`, in a branch or loop body it never
    # runs, in a body only such a call runs) runs no body: the body's counter stops nothing
    # (each said `fail` on the body's counter)
    ("set -e\nn=0\nf() { ((n++)); }\ntrue || f\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\nfalse && f\n:\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f; }\ntrue || g\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\nif false; then f; fi\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\nwhile false; do f; done\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\nfor i in 1; do break; f; done\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { if false; then f; fi; }\ng\n", [0, 0], None),
    # … a call it makes (or may make) stops it there
    ("set -e\nn=0\nf() { ((n++)); }\ntrue || f\nf\n", [1, 1], 4),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { if false; then f; fi; }\ng\nf\n", [1, 1], 4),
    ('set -e\nn=0\nf() { ((n++)); }\n[ -n "${X:-}" ] || f\n', [1, 0], 4),
    # … and so may one the walk does not place, wherever else the name is (each said nothing,
    # the body read as never run)
    ("set -e\nn=0\nf() { ((n++)); }\ntrue || f\neval f\n", [1, 1], 4),
    ("set -e\nn=0\nf() { ((n++)); }\ntrue || f\nc=f; $c\n", [1, 1], 4),
    ("set -e\nn=0\nf() { ((n++)); }\nif false; then f; fi\ntrap f EXIT\n", [1, 1], 4),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f; }\ntrue || g\neval g\n", [1, 1], 4),
    ('set -e\nn=0\nf() { ((n++)); }\ntrue || f\nbash -c "$(declare -f f); n=0; set -e; f"\n',
     [1, 1], 4),
])
def test_a_call_bash_never_makes_runs_no_body(tmp_path, body, codes, line):
    _bash_exits_and_the_lint_says(tmp_path, body, codes, line)


@pytest.mark.parametrize(("body", "codes", "line"), [
    # under `pipefail` a pipeline one of whose commands always fails always fails: `set -e`
    # ends the script there (said `fail`); without it, its last command's status
    ("set -eo pipefail\nn=0\n( exit 3 ) | true\n((n++))\n", [3, 3], None),
    ("set -o pipefail\nset -e\nn=0\necho a | ( exit 3 ) | cat\n((n++))\n", [3, 3], None),
    ("set -e\nn=0\n( exit 3 ) | true\n((n++))\n", [1, 1], 5),
    ("set -eo pipefail\nset +o pipefail\nn=0\n( exit 3 ) | true\n((n++))\n", [1, 1], 6),
])
def test_a_pipeline_that_always_fails_under_pipefail_ends_the_script(
        tmp_path, body, codes, line):
    _bash_exits_and_the_lint_says(tmp_path, body, codes, line)


def _reads_as_bash_runs(tmp_path, body: str, level: str | None) -> None:
    """`body`'s last `((n++))` under `set -e`: real bash, run with X empty and with X=1, stops
    before its end on both runs (fail), on one (warn), or on neither (None), and the lint's
    finding on that line says the same."""
    script = f"#!/bin/bash\n{body}"
    launch = tmp_path / "launch.sh"
    launch.write_text(script + "echo REACHED_THE_END\n")
    stops = sorted("REACHED_THE_END" not in subprocess.run(
        ["bash", str(launch)], capture_output=True, text=True, timeout=20,
        env={"PATH": "/usr/bin:/bin", "X": x}).stdout for x in ("", "1"))
    assert stops == {"fail": [True, True], "warn": [False, True], None: [False, False]}[level]
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    counter = script.count("\n", 0, script.rindex("((n++))")) + 1
    assert [(f.level, f.line) for f in found] == ([(level, counter)] if level else [])


#: `k` is 1 on one run and 3 on the other: a count the lint does not know.
_COUNT = 'k=${X:+3}; k=${k:-1}\n'


@pytest.mark.parametrize(("body", "level"), [
    # `break $k` / `continue $k` leaves the loop it is in whatever its count (bash leaves it
    # also on a count out of range, `break 0`, or stops): the rest of the body never runs
    (f"set -e\n{_COUNT}n=0\nwhile true; do break $k; n=5; done\n((n++))\n", "fail"),
    (f'set -e\n{_COUNT}n=0\nwhile true; do break "$k"; n=5; done\n((n++))\n', "fail"),
    (f"set -e\n{_COUNT}n=0\nfor i in 1 2; do continue $k; n=5; done\n((n++))\n", "fail"),
    (f"set -e\n{_COUNT}n=0\nfor i in 1; do while true; do break $k; n=5; done; done\n"
     "((n++))\n", "fail"),
    (f"set -e\n{_COUNT}n=0\nwhile true; do if true; then break $k; fi; n=5; done\n((n++))\n",
     "fail"),
    (f"set -e\n{_COUNT}n=0\nfor i in 1; do while true; do n=5; break $k; done; done\n"
     "((n++))\n", None),
    # (what it follows in the inner loop's body runs, as before a `break 2`)
    ("set -e\nn=0\nfor i in 1; do while true; do n=5; break 2; done; done\n((n++))\n", None),
    # … and may leave each loop around it: what follows the inner loop there may not run
    (f"set -e\n{_COUNT}n=0\nfor i in 1; do while true; do break $k; done; n=5; done\n"
     "((n++))\n", "warn"),
    (f"set -e\n{_COUNT}n=0\nfor i in 1; do for j in 1; do while true; do break $k; done; "
     "done; n=5; done\n((n++))\n", "warn"),
    (f"set -e\n{_COUNT}n=5\nfor i in 1; do for j in 1; do while true; do break $k; done; "
     "done; n=0; done\n((n++))\n", "warn"),
    # … but not in a subshell, nor where bash never runs it
    (f"set -e\n{_COUNT}n=0\nwhile true; do ( break $k ); n=5; break; done\n((n++))\n", None),
    (f"set -e\n{_COUNT}n=0\nwhile true; do true || break $k; n=5; break; done\n((n++))\n",
     None),
])
def test_a_break_whose_count_is_not_known_leaves_its_loop_and_maybe_those_around(
        tmp_path, body, level):
    _reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # under `set -u` an unbound counter in a compound bash runs in a subshell (a pipeline's
    # element, `fi &`) ends that subshell only: the script goes on where its status stops
    # nothing (no `set -e`; not the pipeline's status without pipefail; tested, `|| true`)
    ("set -u\nif true; then ((n++)); fi | cat\n", None),
    ("set -eu\nif true; then ((n++)); fi | cat\n", None),
    ("set -eu\nwhile true; do ((n++)); break; done | cat\n", None),
    ("set -u\nif true; then ((n++)) || true; fi | cat\n", None),
    ("set -u\nif true; then if true; then ((n++)); fi; fi | cat\n", None),
    ("set -u -o pipefail\nif true; then ((n++)); fi | cat\n", None),
    ("set -u\necho | if true; then ((n++)); fi\n", None),
    ("set -eu\nif true; then ((n++)); fi | cat || true\n", None),
    ("set -eu\nif true; then ((n++)); fi &\nwait\n", None),
    # … but stops it where `set -e` stops on that status: the last element's, or pipefail's
    ("set -eu\necho | if true; then ((n++)); fi\n", "fail"),
    ("set -eu -o pipefail\nif true; then ((n++)); fi | cat\n", "fail"),
    ("set -eu -o pipefail\nif true; then ((n++)) || true; fi | cat\n", "fail"),
    ("set -u\nif true; then ((n++)); fi\n", "fail"),
    ("set -u\nif true; then ((n++)) || true; fi\n", "fail"),
])
def test_an_unbound_counter_in_a_subshell_stops_the_script_only_as_its_status_does(
        tmp_path, body, level):
    _reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a `break 2` / `continue 2` bash runs in a subshell (a piped or background group, `( … )`,
    # a piped `if`) or never (`true || break 2`) leaves no loop of the script's shell, the
    # outer one neither: what follows the inner loop in its body runs
    ("set -e\nn=0\nfor i in 1; do while true; do { break 2; } | cat; break; done; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do while true; do echo | { break 2; }; break; done; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do while true; do { break 2; } &\nwait; break; done; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do while true; do ( break 2 ); break; done; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do while true; do if true; then break 2; fi | cat; break; done; "
     "n=5; done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do while true; do true || break 2; break; done; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do while true; do { continue 2; } | cat; break; done; n=5; "
     "done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do for j in 1; do while true; do { break 3; } | cat; break; "
     "done; done; n=5; done\n((n++))\n", None),
    # … as one in the script's shell does
    ("set -e\nn=0\nfor i in 1; do while true; do { break 2; }; break; done; n=5; done\n"
     "((n++))\n", "fail"),
])
def test_a_break_in_a_subshell_of_an_inner_loop_leaves_no_loop_around(tmp_path, body, level):
    _reads_as_bash_runs(tmp_path, body, level)


_MAYBE_PIPEFAIL = '[ -n "${X:-}" ] && set -o pipefail\n'
_MAYBE_LASTPIPE = '[ -n "${X:-}" ] && shopt -s lastpipe\n'


@pytest.mark.parametrize(("body", "level"), [
    # pipefail on some paths only: a counter in a pipeline's non-last element stops bash on
    # the runs that turned it on (a warning, where it said `fail`)
    (f"set -e\nn=0\n{_MAYBE_PIPEFAIL}if true; then ((n++)); fi | cat\n", "warn"),
    (f"set -e\nn=0\n{_MAYBE_PIPEFAIL}while true; do ((n++)); break; done | cat\n", "warn"),
    (f"set -e\nn=0\n{_MAYBE_PIPEFAIL}{{ ((n++)); }} | cat\n", "warn"),
    (f"set -eu\n{_MAYBE_PIPEFAIL}if true; then ((n++)); fi | cat\n", "warn"),
    # … on every path, it stops bash on every run, as before
    ("set -e\nn=0\nset -o pipefail\nif true; then ((n++)); fi | cat\n", "fail"),
    ("set -e\nn=0\nset -o pipefail\n{ ((n++)); } | cat\n", "fail"),
    # lastpipe on some paths only: what the last element sets holds on the runs that turned
    # it on, its `break` leaves the loop on those runs
    (f"set -e\nn=0\n{_MAYBE_LASTPIPE}echo | if true; then n=5; fi\n((n++))\n", "warn"),
    (f"set -e\nn=5\n{_MAYBE_LASTPIPE}echo | if true; then n=0; fi\n((n++))\n", "warn"),
    (f"set -e\nn=0\n{_MAYBE_LASTPIPE}echo | while true; do n=5; break; done\n((n++))\n",
     "warn"),
    (f"set -e\nn=5\n{_MAYBE_LASTPIPE}echo | n=0\n((n++))\n", "warn"),
    (f"set -e\nn=0\n{_MAYBE_LASTPIPE}while true; do echo | if true; then break; fi; n=5; "
     "break; done\n((n++))\n", "warn"),
    # … on every path, or off on every path, as before
    ("set -e\nn=0\nshopt -s lastpipe\necho | if true; then n=5; fi\n((n++))\n", None),
    ("set -e\nn=0\necho | if true; then n=5; fi\n((n++))\n", "fail"),
    # … or where job control is on (`set -m`: bash runs the last element in a subshell)
    ("set -em\nshopt -s lastpipe\nn=0\necho | n=5\n((n++))\n", "fail"),
])
def test_pipefail_or_lastpipe_on_some_paths_only_is_a_warning(tmp_path, body, level):
    _reads_as_bash_runs(tmp_path, body, level)


def _warns_saying(tmp_path, body: str, english: str, korean: str, unbound: bool = False
                  ) -> None:
    """`body`'s last `((n++))` stops real bash on one run of two (_reads_as_bash_runs's
    `warn`), and the lint's warning says `english`, and `korean` in the ko catalogue; `unbound`:
    it is the unbound-counter warning, which then never says "bash stops right here" (the
    counter's pipeline element ends, not the script)."""
    from bot.core.text import render_text
    from bot.slack.render import translator

    _reads_as_bash_runs(tmp_path, body, "warn")
    script = f"#!/bin/bash\n{body}"
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    assert english in found[0].message
    assert korean in render_text(found[0].text, translator("ko").gettext)
    if unbound:
        assert found[0].check == CHECK_ARITH_UNSET
        assert "bash stops right here" not in found[0].message


_PIPEFAIL_SOME = ("under `set -e`, when `pipefail` is on (only some branches or loop passes "
                  "before this line turn `pipefail` on), the launcher stops right here",
                  "`set -e`에서 `pipefail`이 켜져 있을 때(이 줄 앞의 일부 분기나 반복 회차에서만 "
                  "`pipefail`이 켜짐)")
_BOTH_SOME = ("when `set -e` and `pipefail` are on (only some branches or loop passes before "
              "this line turn them on), the launcher stops right here",
              "`set -e`와 `pipefail`이 켜져 있을 때(이 줄 앞의 일부 분기나 반복 회차에서만 켜짐)")
_MAYBE_ERREXIT = '[ -n "${X:-}" ] && set -e\n'


@pytest.mark.parametrize(("body", "said"), [
    # a counter that stops bash through pipefail, on some paths only: the warning names
    # pipefail (it said "when `set -e` is on (only some branches … turn it on)", where `set -e`
    # was on on every path)
    (f"set -e\nn=0\n{_MAYBE_PIPEFAIL}if true; then ((n++)); fi | cat\n", _PIPEFAIL_SOME),
    (f"set -e\nn=0\n{_MAYBE_PIPEFAIL}while true; do ((n++)); break; done | cat\n",
     _PIPEFAIL_SOME),
    (f"set -e\nn=0\n{_MAYBE_PIPEFAIL}{{ ((n++)); }} | cat\n", _PIPEFAIL_SOME),
    # … and `set -e` too where that is on on some paths only
    (f"n=0\n{_MAYBE_ERREXIT}{_MAYBE_PIPEFAIL}{{ ((n++)); }} | cat\n", _BOTH_SOME),
])
def test_the_warning_for_pipefail_on_some_paths_only_names_pipefail(tmp_path, body, said):
    english, korean = said
    _warns_saying(tmp_path, body, english, korean)


_NOUNSET_PIPEFAIL_SOME = (
    "under `set -u` bash ends this pipeline's element right here with `n: unbound variable`, "
    "and under `set -e`, when `pipefail` is on (only some branches or loop passes before this "
    "line turn `pipefail` on), the launcher stops with it",
    "`set -u`에서는 bash가 바로 여기서 `n: unbound variable`로 이 파이프라인 요소를 끝내고, "
    "`set -e`에서 `pipefail`이 켜져 있을 때(이 줄 앞의 일부 분기나 반복 회차에서만 `pipefail`이 "
    "켜짐) 런처도 함께 멈춥니다")
_NOUNSET_BOTH_SOME = (
    "under `set -u` bash ends this pipeline's element right here with `n: unbound variable`, "
    "and when `set -e` and `pipefail` are on (only some branches or loop passes before this "
    "line turn them on), the launcher stops with it",
    "`set -u`에서는 bash가 바로 여기서 `n: unbound variable`로 이 파이프라인 요소를 끝내고, "
    "`set -e`와 `pipefail`이 켜져 있을 때(이 줄 앞의 일부 분기나 반복 회차에서만 켜짐) 런처도 "
    "함께 멈춥니다")
_MAYBE_BOTH = 'if [ -n "${X:-}" ]; then set -e; set -o pipefail; fi\n'


@pytest.mark.parametrize(("body", "said"), [
    # an unbound counter under `set -u` in a pipeline's element before the last, pipefail on
    # some paths only: the warning says so, as the one for a counter at 0 does (it said "under
    # `set -u` bash stops right here", as if on every run)
    (f"set -eu\n{_MAYBE_PIPEFAIL}if true; then ((n++)); fi | cat\n", _NOUNSET_PIPEFAIL_SOME),
    (f"set -eu\n{_MAYBE_PIPEFAIL}while true; do ((n++)); break; done | cat\n",
     _NOUNSET_PIPEFAIL_SOME),
    (f"set -eu\n{_MAYBE_PIPEFAIL}{{ ((n++)); }} | cat\n", _NOUNSET_PIPEFAIL_SOME),
    # … and `set -e` too where that is on on some paths only (it said "under `set -e`")
    (f"set -u\n{_MAYBE_ERREXIT}{_MAYBE_PIPEFAIL}{{ ((n++)); }} | cat\n", _NOUNSET_BOTH_SOME),
    (f"set -u\n{_MAYBE_ERREXIT}{_MAYBE_PIPEFAIL}if true; then ((n++)); fi | cat\n",
     _NOUNSET_BOTH_SOME),
    (f"set -u\n{_MAYBE_BOTH}while true; do ((n++)); break; done | cat\n", _NOUNSET_BOTH_SOME),
])
def test_the_unbound_counter_warning_for_pipefail_on_some_paths_says_so(tmp_path, body, said):
    english, korean = said
    _warns_saying(tmp_path, body, english, korean, unbound=True)


_UNLESS_X = 'if [ -z "${X:-}" ]; then n=5; fi\n'


@pytest.mark.parametrize(("body", "english", "korean"), [
    # the other texts for an unbound counter under `set -u`, in a pipeline's element before
    # the last where pipefail is on on some paths only, say what bash does there, as the one
    # for a counter nothing sets does (they said "bash stops right here", as if on every run):
    # unset on the runs that skip a branch …
    (f"set -eu\n{_MAYBE_PIPEFAIL}{_UNLESS_X}{{ ((n++)); }} | cat\n",
     "which sets it in a branch bash may not run (nothing else before it does): under `set -u` "
     "bash ends this pipeline's element right here on those runs with `n: unbound variable`, "
     "and under `set -e`, when `pipefail` is on",
     "`set -u`에서는 그런 실행에서 bash가 바로 여기서 `n: unbound variable`로 이 파이프라인 "
     "요소를 끝내고, `set -e`에서 `pipefail`이 켜져 있을 때"),
    # … set in another branch of the same `if` …
    (f'set -eu\n{_MAYBE_PIPEFAIL}if [ -z "${{X:-}}" ]; then n=5; else {{ ((n++)); }} | cat; '
     "fi\n",
     "nothing else before it sets it: under `set -u` bash ends this pipeline's element right "
     "here on the runs that take this branch with `n: unbound variable`, and under `set -e`, "
     "when `pipefail` is on",
     "`set -u`에서는 이 분기를 타는 실행에서 bash가 바로 여기서 `n: unbound variable`로 이 "
     "파이프라인 요소를 끝내고, `set -e`에서 `pipefail`이 켜져 있을 때"),
    # … unset for the loop's next pass, on every run or on some
    (f"set -eu\n{_MAYBE_PIPEFAIL}n=5\nfor i in 1 2; do {{ ((n++)); }} | cat; unset n; done\n",
     "leaves it at the end of the body: under `set -u` bash ends this pipeline's element right "
     "here with `n: unbound variable`, and under `set -e`, when `pipefail` is on",
     "`set -u`에서는 bash가 바로 여기서 `n: unbound variable`로 이 파이프라인 요소를 끝내고, "
     "`set -e`에서 `pipefail`이 켜져 있을 때"),
    (f"set -eu\n{_MAYBE_PIPEFAIL}n=5\nfor i in 1 2; do {{ ((n++)); }} | cat; "
     'if [ -n "${X:-}" ]; then unset n; fi; done\n',
     "which value it leaves): under `set -u` bash ends this pipeline's element right here on "
     "those runs with `n: unbound variable`, and under `set -e`, when `pipefail` is on",
     "`set -u`에서는 그런 실행에서 bash가 바로 여기서 `n: unbound variable`로 이 파이프라인 "
     "요소를 끝내고, `set -e`에서 `pipefail`이 켜져 있을 때"),
    # … and `set -e` too where that is on on some paths only
    (f"set -u\n{_MAYBE_BOTH}{_UNLESS_X}{{ ((n++)); }} | cat\n",
     "on those runs with `n: unbound variable`, and when `set -e` and `pipefail` are on",
     "`n: unbound variable`로 이 파이프라인 요소를 끝내고, `set -e`와 `pipefail`이 켜져 있을 때"),
])
def test_every_unbound_counter_text_for_pipefail_on_some_paths_says_so(tmp_path, body,
                                                                       english, korean):
    _warns_saying(tmp_path, body, english, korean, unbound=True)


@pytest.mark.parametrize(("body", "level"), [
    # a loop's next pass follows on the runs that take no `exit` bash may skip in its body,
    # nor a `break` that leaves it: a counter that reads what the body's end left stops bash
    # on those runs only (a warning, as where a branch sets it; it said `fail` past an `exit`,
    # and past a `break` after the assignment)
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); [ -n "${X:-}" ] && exit 0; n=0; done\n', "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && exit 0; done\n', "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); if [ -n "${X:-}" ]; then exit 0; fi; n=0; done\n',
     "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); case "${X:-}" in 1) exit 0;; esac; n=0; done\n',
     "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); for j in 1; do [ -n "${X:-}" ] && exit 0; done; '
     "n=0; done\n", "warn"),
    ('set -e\nn=5\nwhile true; do ((n++)); n=0; [ -n "${X:-}" ] && exit 0; done\n', "warn"),
    ('set -eu\nn=5\nfor i in 1 2; do ((n++)); unset n; [ -n "${X:-}" ] && exit 0; done\n',
     "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && break; done\n', "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; if [ -n "${X:-}" ]; then break; fi; done\n',
     "warn"),
    # … a `{ …; exit; }` group after `&&` / `||` as well, as the `exit` alone (it said `fail`)
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && { exit 0; }; done\n',
     "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && { echo a; exit 0; }; '
     "done\n", "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); [ -n "${X:-}" ] || { exit 0; }; n=0; done\n',
     "warn"),
    ('set -e\nn=5\nwhile true; do ((n++)); n=0; [ -n "${X:-}" ] && { { exit 0; }; }; done\n',
     "warn"),
    # … and none where the first pass always exits
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; exit 0; done\n", None),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; true && { exit 0; }; done\n", None),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; if [ -n "${X:-}" ]; then exit 0; else exit 3; '
     "fi; done\n", None),
    # … not one in a subshell, a `continue` (the next pass follows), nor a `break` of an
    # inner loop: every run makes the next pass, as before
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && continue; done\n', "fail"),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; for j in 1; do break; done; done\n", "fail"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; ( [ -n "${X:-}" ] && exit 0 ); done\n',
     "fail"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; if [ -n "${X:-}" ]; then exit 0; fi | cat; '
     "done\n", "fail"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; x=$( [ -n "${X:-}" ] && exit 0 ); done\n',
     "fail"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && exit 0 | cat; done\n',
     "fail"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && { exit 0; } | cat; '
     "done\n", "fail"),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; true || { exit 0; }; done\n", "fail"),
])
def test_a_loops_next_pass_past_an_exit_or_break_bash_may_skip_is_on_some_runs_only(
        tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)
    if level == "warn":  # (the wording of a value some branches of the body leave)
        script = f"#!/bin/bash\n{body}"
        found = [f for f in lint_launcher(script)
                 if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
        assert "on some runs only (branches of the body decide which value it leaves)" in (
            found[0].message)


@pytest.mark.parametrize(("body", "level"), [
    # a `break` bash always runs in the loop's body (at its end, in each branch of an `if` /
    # `case` that always runs one, in a group of the body, after `true &&`) ends the first pass:
    # there is no next pass, and no counter reads what the body's end left (it said `warn`, or
    # `fail` where the body may not run)
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; break; done\n", None),
    ("set -e\nn=5\nwhile true; do ((n++)); n=0; break; done\n", None),
    ('set -e\nn=5\nwhile [ -z "${Y:-}" ]; do ((n++)); n=0; break; done\n', None),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; if [ -n "${X:-}" ]; then break; else break; '
     "fi; done\n", None),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; { break; }; done\n", None),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; true && break; done\n", None),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; for j in 1; do break 2; done; done\n", None),
    # … a `continue` in a subshell or an inner loop before it changes nothing
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; ( continue ); break; done\n", None),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; for j in 1 2; do continue; done; break; done\n",
     None),
    # … but not a `break` bash may skip, one in a subshell, or a `continue`: the next pass
    # follows, as before
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && break; done\n', "warn"),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; break | cat; done\n", "fail"),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; continue; done\n", "fail"),
    ("set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; continue; break; done\n", "fail"),
    # … a `continue` bash may skip before a `break` it always runs: the next pass follows on
    # the runs that take the `continue` only (it said `fail`)
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; [ -n "${X:-}" ] && continue; break; done\n',
     "warn"),
    ('set -e\nn=5\nwhile true; do ((n++)); n=0; [ -n "${X:-}" ] && continue; break; done\n',
     "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; if [ -n "${X:-}" ]; then continue; fi; '
     "break; done\n", "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; if [ -n "${X:-}" ]; then continue; else '
     "break; fi; done\n", "warn"),
    ('set -e\nn=5\nfor i in 1 2; do ((n++)); n=0; { [ -n "${X:-}" ] && continue; }; break; '
     "done\n", "warn"),
])
def test_a_loop_whose_body_always_breaks_has_no_next_pass(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a `return` bash always runs in a function's body leaves it: nothing past it in the body
    # runs on that path, as past an `exit` (it said `fail`), also where a loop's first pass, an
    # `if` that always runs a branch, or a group of the body returns
    ("set -e\nn=0\nf() { while true; do return; exit 0; done; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { while true; do return; done; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { return; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { return 0; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { return $((X * 0)); ((n++)); }\nf\n", None),  # (said `fail`)
    ('set -e\nn=0\nf() { return "$(echo 0)"; ((n++)); }\nf\n', None),
    ("set -e\nn=0\nf() { if true; then return; fi; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { { echo a; return; }; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { for i in 1 2; do [ -n \"${X:-}\" ] && return 0; exit 0; done; "
     "((n++)); }\nf\n", None),
    # … not one in a subshell, a `break` before it, nor what follows the call
    ("set -e\nn=0\nf() { ( return ); ((n++)); }\nf\n", "fail"),
    ("set -e\nn=0\nf() { return | cat; ((n++)); }\nf\n", "fail"),
    ("set -e\nn=0\nf() { while true; do break; return; done; ((n++)); }\nf\n", "fail"),
    ("set -e\nn=0\nf() { return; }\nf\n((n++))\n", "fail"),
    # … nor what follows it in its and-or list (each said `warn`, reading `n=1` as run on the
    # runs the `return` is skipped)
    ("set -e\nn=0\nf() { return || n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { true && return 0 || n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { for i in 1; do return || n=1; done; }\nf\n((n++))\n", "fail"),
])
def test_nothing_past_a_return_bash_always_runs_in_a_function_is_read_as_run(
        tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a `return` bash may skip leaves the rest of the function's body unrun on the calls that
    # take it, as a `break` does the rest of a loop's body: what the body sets after it holds
    # past the call on some runs only (each said nothing, reading `n=1` as run on every call)
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && return; n=1; }\nf\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { if [ -n "${X:-}" ]; then return; fi; n=1; }\nf\n((n++))\n', "warn"),
    ('set -e\nf() { n=0; [ -n "${X:-}" ] && return; n=1; }\nf\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && { echo a; return; }; n=1; }\nf\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { for i in 1 2; do [ -n "${X:-}" ] && return; done; n=1; }\nf\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in 1; do [ -n "${X:-}" ] && break; n=1; done\n((n++))\n', "warn"),
    # … not an `exit` (that way goes past nothing, as at the script's level), a `return` in a
    # subshell, one bash always runs after the assignment, nor one of a function defined in
    # the body
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && exit 0; n=1; }\nf\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && exit 0\nn=1\n((n++))\n', None),
    ('set -e\nn=0\nf() { ( if [ -n "${X:-}" ]; then return; fi ); n=1; }\nf\n((n++))\n', None),
    ("set -e\nn=0\nf() { n=1; return; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { true || return; n=1; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { false && return; n=1; }\nf\n((n++))\n", None),
    ('set -e\nn=0\nf() { g() { if [ -n "${X:-}" ]; then return; fi; }; g; n=1; }\nf\n'
     "((n++))\n", None),
    # … nor does one in a `$( … )` or backticks, which ends that subshell only (each said
    # `warn`), but one past it still counts
    ("set -e\nn=0\nf() { x=$(true || return); n=1; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { x=$(return); n=1; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { x=`return`; n=1; }\nf\n((n++))\n", None),
    ('set -e\nn=0\nf() { echo "$([ -n "${X:-}" ] && return)"; n=1; }\nf\n((n++))\n', None),
    ('set -e\nn=0\nf() { x=$(echo a; return 0); [ -n "${X:-}" ] && return; n=1; }\nf\n'
     "((n++))\n", "warn"),
    # a `return` in a condition (an `if`'s, an `elif`'s, a loop's) returns all the same:
    # nothing past it in the body runs (each said nothing, reading `n=1` as run), and one in
    # an `elif` after a branch bash may run leaves it to some calls; piped, a subshell's
    ("set -e\nn=0\nf() { if return; then :; fi; n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { if ! return 0; then n=1; fi; n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { if echo a; return; then :; fi; n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { while return; do :; done; n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { until return; do n=1; done; n=1; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { if false; then :; elif return; then :; else :; fi; n=1; }\nf\n"
     "((n++))\n", "fail"),
    ('set -e\nn=0\nf() { if [ -n "${X:-}" ]; then :; elif return; then :; fi; n=1; }\nf\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nf() { while [ -n "${X:-}" ] && return; do :; done; n=1; }\nf\n((n++))\n',
     "warn"),
    ("set -e\nn=0\nf() { if return; then :; fi | cat; n=1; }\nf\n((n++))\n", None),
])
def test_a_return_bash_may_skip_leaves_the_rest_of_the_body_to_some_calls(
        tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a `return` outside a function fails (status 2) and bash goes on where its status is
    # tested: it runs what follows `||`, never what follows `&&` or an `if`'s `then` (each
    # said `warn`, reading `n=1` as run on some runs)
    ("set -e\nn=0\nreturn || n=1\n((n++))\n", None),
    ("set -e\nn=0\nreturn 0 || n=1\n((n++))\n", None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && return || n=1\n((n++))\n', None),
    ("set -e\nn=0\nreturn && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nif return; then n=1; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\nif ! return 0; then n=1; fi\n((n++))\n", None),
    # … but in a function it returns, and a function named `return` is called
    ("set -e\nn=0\nf() { return || n=1; }\nf\n((n++))\n", "fail"),
    ('set -e\nn=0\nreturn() { [ -n "${X:-}" ]; }\nreturn || n=1\n((n++))\n', "warn"),
])
def test_a_return_outside_a_function_fails_and_bash_goes_on(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a count before a reset, then a `break` bash may skip (`[ … ] && break`, an `if`): past the
    # loop the reset holds on the runs that do not break only; on those that break, the count
    # left `n` past 0 (a warning, where it said `fail`)
    ('set -e\nn=5\nfor i in 1 2; do n=0; ((n++)) || true; [ -n "${X:-}" ] && break; n=0; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in 1 2; do ((n++)) || true; [ -n "${X:-}" ] && break; n=0; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in 1 2; do ((n++)) || true; if [ -n "${X:-}" ]; then break; fi; n=0; '
     "done\n((n++))\n", "warn"),
    # … but a reset before the `break`, or a count bash may skip, leaves 0 on every run, as before
    ('set -e\nn=0\nfor i in 1 2; do ((n++)) || true; n=0; [ -n "${X:-}" ] && break; done\n'
     "((n++))\n", "fail"),
    ('set -e\nn=0\nfor i in 1 2; do if [ -n "${Y:-}" ]; then ((n++)) || true; fi; '
     '[ -n "${X:-}" ] && break; n=0; done\n((n++))\n', "fail"),
])
def test_a_count_before_a_reset_a_break_may_skip_stops_bash_on_some_runs(tmp_path, body, level):
    _reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # what a branch, a group or a function's body assigns or counts before an `exit` bash always
    # runs there holds nowhere past it: the shell ends (it fed the counter past the branch: a
    # `warn` or `fail` where bash never stops)
    ('set -e\nn=5\nif [ -n "${X:-}" ]; then n=0; exit 0; fi\n((n++))\n', None),
    ('set -e\nn=5\ncase "${X:-}" in 1) n=0; exit 0;; esac\n((n++))\n', None),
    ('set -e\nn=5\n[ -n "${X:-}" ] && { n=0; exit 0; }\n((n++))\n', None),
    ('set -e\nn=5\nwhile true; do ((n++)); if [ -n "${X:-}" ]; then n=0; exit 0; fi; break; done\n'
     "((n++))\n", None),
    ('set -e\nn=5\nf() { n=0; exit 0; }\n[ -n "${X:-}" ] && f\n((n++))\n', None),
    # … not where a `break` / `return` may leave first: the value goes on
    ('set -e\nn=5\nfor i in 1 2; do if [ -n "${X:-}" ]; then n=0; [ -n "${X:-}" ] && break; '
     "exit 0; fi; done\n((n++))\n", "warn"),
    ('set -e\nn=5\nf() { if [ -n "${X:-}" ]; then n=0; return; fi; }\nf\n((n++))\n', "warn"),
])
def test_what_a_branch_that_exits_assigns_holds_nowhere_past_it(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a way that ends the shell reaches nothing past it: an `exit` in one branch (of an `if` /
    # `case` that always runs one, or after `&&` / `||`) and an assignment in the other set `n`
    # on every run that gets to the counter (each said `warn`, reading the way through the
    # `exit` as one that goes on with `n` at 0)
    ('set -e\nn=0\n[ -n "${X:-}" ] && exit 0 || n=1\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] || exit 0 && n=1\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && n=1 || exit 0\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then exit 0; else n=1; fi\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then { echo a; exit 0; }; else n=1; fi\n((n++))\n', None),
    ('set -e\nn=0\ncase "${X:-}" in 1) exit 0;; *) n=1;; esac\n((n++))\n', None),
    # … a `{ …; exit; }` group as a bare `exit` (each said `warn`): not a `( … )` subshell, whose
    # `exit` ends the subshell only (its status 0 skips `|| n=1`), nor a group a `return` /
    # `break` may leave first, nor a piped one
    ('set -e\nn=0\n[ -n "${X:-}" ] && { echo a; exit 0; } || n=1\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] || { echo a; exit 0; } && n=1\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && n=1 || { echo a; exit 0; }\n((n++))\n', None),
    ('set -e\nn=0\nif true; then [ -n "${X:-}" ] && { exit 0; } || n=1; fi\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && ( echo a; exit 0 ) || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && { echo a; return; } || n=1; }\nf\n((n++))\n',
     "warn"),
    ('set -e\nn=0\nfor i in 1; do [ -n "${X:-}" ] && { break; exit 0; } || n=1; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\n[ -n "${X:-}" ] && { echo a; exit 0; } | cat || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { if [ -n "${X:-}" ]; then exit 0; else n=1; fi; }\nf\n((n++))\n', None),
    # … but a way that leaves a function's body or a loop first goes on past it, without `n=1`
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] && return || n=1; }\nf\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { if [ -n "${X:-}" ]; then return; else n=1; fi; }\nf\n((n++))\n', "warn"),
    ('set -e\nn=0\nfor i in 1; do if [ -n "${X:-}" ]; then break; exit 0; else n=1; fi; done\n'
     "((n++))\n", "warn"),
    # … and a counter in the branch that exits reads what holds without the other branch
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then n=1; else ((n++)); exit 0; fi\n', "warn"),
    # … where there is no `else` (the runs that take neither branch), as before
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then exit 0; elif [ -n "${Y:-}" ]; then n=1; fi\n'
     "((n++))\n", "warn"),
])
def test_an_exit_in_one_branch_leaves_the_other_s_assignment_on_every_run_past_it(
        tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


_RC = 'rc=${X:-0}\n'  # (0 on one run, 1 on the other: `[[ $rc -ne 0 ]]` tests which)


@pytest.mark.parametrize(("body", "level"), [
    # a count or an assignment after `&&` / `||` runs on the runs whose test lets it, as in an
    # `if` branch with no `else`: a counter past it stops bash on the others (it was read as
    # run on every run: no finding, or `fail` where it resets the counter)
    ('set -e\nn=0\n[ -n "${X:-}" ] && ((n++)) || true\n((n++))\n', "warn"),
    ('set -e\nn=0\ntest -n "${X:-}" && n=$((n+1))\n((n++))\n', "warn"),
    (f"set -e\n{_RC}n=0\n[[ $rc -ne 0 ]] && let n+=1\n((n++))\n", "warn"),
    ('set -e\nn=0\n[ -z "${X:-}" ] || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n[ -n "${X:-}" ] && { ((n++)) || true; }\n((n++))\n', "warn"),
    ('set -e\nn=5\n[ -n "${X:-}" ] && n=0\n((n++))\n', "warn"),
    ('set -eu\n[ -n "${X:-}" ] && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nif [ -n "${X:-}" ] && n=1; then :; fi\n((n++))\n', "warn"),
    ('set -e\nfor i in 1 2; do n=0; [ -n "${X:-}" ] && ((n++)) || true; ((n++)); done\n',
     "warn"),
    ('set -e\nn=0\nfor i in 1 2; do [ -n "${X:-}" ] && { n=1; break; }; done\n((n++))\n',
     "warn"),
    # … a compound there too: bash may run none of its branches (`if true` always runs one)
    ('set -e\nn=0\n[ -n "${X:-}" ] && if true; then n=1; fi\n((n++))\n', "warn"),
    ('set -e\nn=0\n[ -n "${X:-}" ] && for i in 1; do n=1; done\n((n++))\n', "warn"),
    # … but of two in a row with unlike operators, one runs on every run (`a && b || c`: c
    # runs whenever b does not), and one bash's semantics decide runs always or never
    ('set -e\nn=0\n[ -n "${X:-}" ] && n=1 || n=2\n((n++))\n', None),
    ('set -eu\n[ -n "${X:-}" ] && n=1 || n=2\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && ((n++)) || ((n++)) || true\n((n++))\n', None),
    ('set -e\nn=0\n[ -z "${X:-}" ] || n=1 && n=2\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && n=3 || n=0\n((n++))\n', "warn"),
    ("set -e\nn=0\ntrue && n=1\n((n++))\n", None),
    ("set -e\nn=0\nfalse || n=1\n((n++))\n", None),
    ("set -e\nn=0\ntrue || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nfalse && { n=1; }\n((n++))\n", "fail"),
    # … as does a `( … )` subshell whose body first runs `exit N`: its status is N (each said
    # `warn`, reading the subshell's status as either)
    ("set -e\nn=0\n( exit 0 ) || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n( exit 0 ) && n=1\n((n++))\n", None),
    ("set -e\nn=0\n( exit 3; echo a ) && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n( exit 3 ) || n=1\n((n++))\n", None),
    ("set -e\nn=0\n! ( exit 3 ) || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nif ( exit 0 ); then :; else n=1; fi\n((n++))\n", "fail"),
    # … or runs commands bash runs to their end before that `exit` (each said `warn`): not one
    # that may end the subshell first, with another status (`${X:?}`, a function of the
    # script, an EXIT trap)
    ("set -e\nn=0\n( echo a; exit 0 ) || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n( echo a; exit 3 ) || n=1\n((n++))\n", None),
    ('set -e\nn=0\n(\n  echo "failed" >/dev/null\n  false\n  exit 0\n) || n=1\n((n++))\n',
     "fail"),
    ("set -e\nn=0\nif ( echo a >&2; exit 0 ); then :; else n=1; fi\n((n++))\n", "fail"),
    ('set -e\nn=0\n( echo "${X:?}"; exit 0 ) || n=1\n((n++))\n', "warn"),
    # … or an `exit` whose status bash only knows as it runs, which ends the subshell all the
    # same: no `exit` after it counts
    ('set -e\nn=0\n( exit "${X:-0}" ) || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n( exit "${X:-0}"; exit 3 ) || n=1\n((n++))\n', "warn"),
    ("set -e\nn=0\n( echo a; exit $((X)) ) || n=1\n((n++))\n", "warn"),
    # … and a pipeline whose last command always fails fails, `pipefail` or not (the first
    # five said `warn`); a subshell piped or in the background ends no more than itself, and
    # gives the list no status of its own (`( exit 0 ) | cat`: cat's)
    ("set -e\nn=0\ncat /dev/null | ( exit 3 ) || n=1\n((n++))\n", None),
    ("set -e\nn=0\ncat /dev/null | ( exit 3 ) && n=1\n((n++))\n", "fail"),
    ("set -e\nset -o pipefail\nn=0\ntrue | ( echo a; exit 3 ) || n=1\n((n++))\n", None),
    ("set -e\nn=0\nif ( exit 0 ) | false; then :; else n=1; fi\n((n++))\n", None),
    ("set -e\nn=0\n! true | false || n=1\n((n++))\n", "fail"),
    ('set -e\nn=0\n[ -n "${X:-}" ] && ( exit 0 ) | cat || n=1\n((n++))\n', "warn"),
    ("set -e\nn=0\n( echo a; exit 0 ) &\nn=1\nwait\n((n++))\n", None),
    ("set -e\nn=0\n( n=1; exit 0 ) | cat\n((n++))\n", "fail"),
    ('set -e\nn=0\nf() { [ -n "${X:-}" ] || exit 3; }\n( f; exit 0 ) || n=1\n((n++))\n', "warn"),
    ("set -e\nn=0\n( trap '[ -n \"${X:-}\" ] || exit 3' EXIT; exit 0 ) || n=1\n((n++))\n",
     "warn"),
    # … and a subshell with redirections keeps its status, but when a redirection fails (then
    # 1): one that always fails fails, one that always succeeds is not known (the first four
    # said `warn`, reading any redirection as an unknown status)
    ("set -e\nn=0\n( exit 3 ) > /dev/null || n=1\n((n++))\n", None),
    ("set -e\nn=0\n( echo a; exit 3 ) >/dev/null 2>&1 || n=1\n((n++))\n", None),
    ("set -e\nn=0\nif ( exit 3 ) 2>/dev/null; then n=1; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\n! ( exit 3 ) > /dev/null || n=1\n((n++))\n", "fail"),
    ('set -e\nn=0\n( exit 0 ) > "${X:+/nonexistent}/dev/null" || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n( exit 0 ) > "${X:+/nonexistent}/dev/null" && n=1\n((n++))\n', "warn"),
    # … read as bash groups the list, `((a && b) || c) && d`: every way runs `c` or `d` (`c`
    # is skipped only after `b` succeeded, which runs `d`), and a `true` there runs what
    # follows its `&&` whatever ran before it (both said `warn`: `c` was paired with `b` only)
    ('set -e\nn=0\n[ -n "${X:-}" ] && echo b || n=1 && n=2\n((n++))\n', None),
    ('set -e\nn=0\n[ -n "${X:-}" ] && n=1 || true && n=2\n((n++))\n', None),
    # … and a loop's status, that of the last command its body ran (0 when none ran), where
    # the passes and that command's status decide it (each said `warn`)
    ("set -e\nn=0\nfor i in a b; do :; done && n=1\n((n++))\n", None),
    ("set -e\nn=0\nfor i in a; do false; done || n=1\n((n++))\n", None),
    ("set -e\nn=0\nfor i in a b\ndo\n  ( exit 3 )\ndone || n=1\n((n++))\n", None),
    ("set -e\nn=0\nfor i in a; do false; done && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in; do false; done && n=1\n((n++))\n", None),
    ("set -e\nn=0\nfor i in; do false; done || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nwhile false; do false; done && n=1\n((n++))\n", None),
    ("set -e\nn=0\nuntil true; do false; done || n=1\n((n++))\n", "fail"),
    ('set -e\nn=0\nfor i in ${X:-}; do :; done && n=1\n((n++))\n', None),
    ("set -e\nn=0\nfor i in 1; do for j in 1; do false; done || n=1; done\n((n++))\n", None),
    # … not where the run decides it: passes over words that expand, a `break` / `continue`
    # bash may run, a compound last in the body
    ('set -e\nn=0\nfor i in ${X:-}; do false; done || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nfor i in a; do [ -n "${X:-}" ] || break; false; done || n=1\n((n++))\n',
     "warn"),
    ('set -e\nn=0\nfor i in a; do [ -n "${X:-}" ] && continue; ( exit 3 ); done && n=1\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in a; do if true; then [ -n "${X:-}" ]; fi; done || n=1\n((n++))\n',
     "warn"),
    ('set -e\nn=0\n[ -n "${X:-}" ] && for i in a; do :; done && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n[ -n "${X:-}" ] || for i in a; do false; done || n=1\n((n++))\n', "warn"),
    ("set -e\nn=0\ntrue && for i in a; do :; done && n=1\n((n++))\n", None),
    # … and an `if`'s / a `case`'s status, 0 when no branch ran, else that of the last
    # command of the branch that ran, and a `{ …; }` group's, its last list's (each said
    # `warn`)
    ("set -e\nn=0\nif true; then :; fi && n=1\n((n++))\n", None),
    ("set -e\nn=0\nif false; then false; fi && n=1\n((n++))\n", None),
    ("set -e\nn=0\nif true; then false; fi || n=1\n((n++))\n", None),
    ("set -e\nn=0\nif true; then false; fi && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nif false; then false; fi || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nif true; then n=1; false; fi || n=0\n((n++))\n", "fail"),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then :; fi && n=1\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then false; else false; fi || n=1\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then false; elif true; then false; fi && n=1\n'
     "((n++))\n", "fail"),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then exit 0; fi && n=1\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then\n  if true; then false; fi\nelse\n'
     "  { echo a; false; }\nfi || n=1\n((n++))\n", None),
    ("set -e\nn=0\nfor i in a; do if true; then false; fi; done || n=1\n((n++))\n", None),
    ("set -e\nn=0\ncase x in x) false;; esac || n=1\n((n++))\n", None),
    ("set -e\nn=0\ncase x in y) false;; esac && n=1\n((n++))\n", None),
    ("set -e\nn=0\ncase x in x) false;; esac && n=1\n((n++))\n", "fail"),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;; *) false;; esac || n=1\n((n++))\n', None),
    ("set -e\nn=0\n{ echo a; false; } || n=1\n((n++))\n", None),
    ("set -e\nn=0\n{\n  echo a\n  false\n} > /dev/null || n=1\n((n++))\n", None),
    ("set -e\nn=0\n{ :; } && n=1\n((n++))\n", None),
    ("set -e\nn=0\n{ :; } || n=1\n((n++))\n", "fail"),
    # … a `break` / `continue` leaves its loop with status 0 (so does an empty `case`
    # branch), a `;&` branch's way goes on into the next one, a `;;&` one's leaves with its
    # status when no pattern below matches, and `!` negates an `if` / `case` / loop (each said
    # `warn`; a `set -e` stop in a negated compound, `fail`, where bash ignores `set -e`)
    ("set -e\nn=0\nfor i in a; do false; break; done && n=1\n((n++))\n", None),
    ("set -e\nn=0\nfor i in a; do false; break; done || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in a b; do false; continue; done && n=1\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do [ -n "${X:-}" ] && break; :; break; done && n=1\n'
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in a; do if true; then false; fi; break; done || n=1\n((n++))\n",
     "fail"),
    ("set -e\nn=0\ncase x in x) ;; esac || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\ncase x in\n  x)\n    false\n    ;;\nesac && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\ncase x in x) false;& y) ;; esac && n=1\n((n++))\n", None),
    ("set -e\nn=0\ncase x in x) true;& y) false;; esac && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\ncase x in x) false;& esac || n=1\n((n++))\n", None),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;& *) true;; esac && n=1\n((n++))\n', None),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;& *) false;; esac || n=1\n((n++))\n', None),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;;& *) true;; esac && n=1\n((n++))\n', None),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;;& *) true;; esac || n=1\n((n++))\n', "fail"),
    ("set -e\nn=0\ncase x in x) false;;& y) true;; esac || n=1\n((n++))\n", None),
    ("set -e\nn=0\ncase x in x) false;;& y) true;; esac && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! if true; then ((n++)); fi\n((n++))\n", None),
    ("set -e\nn=0\n! if true; then false; n=1; fi\n((n++))\n", None),
    ("set -e\nn=0\n! case x in x) false; n=1;; esac\n((n++))\n", None),
    ("set -e\nn=0\n! for i in a; do false; n=1; done\n((n++))\n", None),
    ("set -e\nn=0\n! if true; then false; fi && n=1\n((n++))\n", None),
    ("set -e\nn=0\n! if true; then :; fi && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! for i in a; do false; done || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! while false; do :; done || n=1\n((n++))\n", None),
    ("set -e\nn=0\n! if true; then :; fi\n((n++))\n", "fail"),
    ('set -e\nn=0\n! if [ -n "${X:-}" ]; then false; fi\n((n++))\n', "fail"),
    # … and a pipeline's, its last command's without `pipefail` (`set -o pipefail` / `set -eo
    # pipefail` read where the script says them), the last failing one's with it (each said
    # `warn`)
    ("set -e\nn=0\nfalse | true || n=1\n((n++))\n", "fail"),
    ("set -eo pipefail\nn=0\nfalse | true || n=1\n((n++))\n", None),
    ("set -euo pipefail\nn=0\nfalse | true && n=1\n((n++))\n", "fail"),
    ("set -e\nset -o pipefail\nset +o pipefail\nn=0\nfalse | true || n=1\n((n++))\n", "fail"),
    ("set -eo pipefail\nn=0\nif false | true; then n=1; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\nif false | true; then n=1; fi\n((n++))\n", None),
    ("set -e\nn=0\ntrue | true && n=1\n((n++))\n", None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then set -o pipefail; fi\nfalse | true || n=1\n'
     "((n++))\n", "warn"),
    # … not where the run decides it: a branch bash may skip or take
    ('set -e\nn=0\nfor i in a; do [ -n "${X:-}" ] && break; false; done || n=1\n((n++))\n',
     "warn"),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;;& 2) true;; esac || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n! if [ -n "${X:-}" ]; then n=1; fi\n((n++))\n', "warn"),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then false; fi && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then false; else :; fi || n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\ncase "${X:-}" in 1) false;; esac && n=1\n((n++))\n', "warn"),
    # … and a piped compound's pipeline, whose status is its last element's: what follows its
    # `&&` / `||` runs in this shell (the loop and `if` rows said `fail`: `n=1` read as in
    # the compound's subshell, a `break` there as leaving no loop); `{ …; }` and `( … )` read
    # so already; not a list run in the background
    ('set -e\nn=0\nfor i in a; do :; done | [ -n "${X:-}" ] && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nif true; then :; fi | [ -n "${X:-}" ] && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n{ :; } | [ -n "${X:-}" ] && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\n( : ) | [ -n "${X:-}" ] && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\necho | if true; then [ -n "${X:-}" ]; fi && n=1\n((n++))\n', "warn"),
    ('set -e\nn=0\nfor i in 1; do for j in 1; do :; done | [ -n "${X:-}" ] && break; n=1; '
     "done\n((n++))\n", "warn"),
    ("set -e\nn=0\nfor i in a; do :; done | false && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nif true; then :; fi | false && n=1\n((n++))\n", "fail"),
    ('set -e\nn=0\nif true; then :; fi | [ -n "${X:-}" ] && n=1 &\nwait\n((n++))\n', "fail"),
])
def test_a_count_or_assignment_after_and_or_runs_on_some_runs_only(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a `( … )` subshell bash runs to its end without an `exit` has its last command's status
    # where that is a constant, negated or not (each said `warn`, its status not known)
    ("set -e\nn=0\n! (true) && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! (false) && n=1\n((n++))\n", None),
    ("set -e\nn=0\n( : ) || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n( echo a; false ) || n=1\n((n++))\n", None),
    ("set -e\nn=0\nif ( false ); then :; else n=1; fi\n((n++))\n", None),
    # (not a last command whose status the run decides)
    ('set -e\nn=0\n( [ -n "$X" ] ) && n=1\n((n++))\n', "warn"),
])
def test_a_subshell_ending_in_a_constant_has_its_status(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # `!` before a command or a `{ … }` group: bash ignores `set -e` in it and runs it in the
    # script's shell, so its count holds past it (each said `fail`: the negated list was not
    # read, the counter after it read `n` at 0) and its `set` holds too
    ("set -e\nn=0\n! ((n++))\n((n++))\n", None),
    ("set -e\nn=0\n! ((n++)); ((n++))\n", None),
    ("set -e\nn=0\n! let n++\n((n++))\n", None),
    ("set -e\nn=0\n! ((n++)) || true\n((n++))\n", None),
    ("set -e\nn=0\n! { ((n++)); }\n((n++))\n", None),
    ("set -e\nn=0\n! { false; ((n++)); }\n((n++))\n", None),
    ("set -e\nn=0\ntrue && ! ((n++))\n((n++))\n", None),
    ("set -e\nn=0\ntrue && ! { ((n++)); }\n((n++))\n", None),
    ("set -e\n! { set +e; }\nn=0\n((n++))\ntrue\n", None),
    # … its status negated (said `warn`: `n=5` read as maybe skipped)
    ("set -e\nn=0\n! ((n++)) && n=5\n((n++))\n", None),
    # … on the runs that reach it only; a `set -e` in the group holds past it
    ('set -e\nn=0\n[ -n "${X:-}" ] && ! ((n++))\n((n++))\n', "warn"),
    ("n=0\n! { set -e; }\n((n++))\n", "fail"),
    # … not in a subshell or a pipeline, nor a count of another variable, nor `! false`
    ("set -e\nn=0\n! ( ((n++)) )\n((n++))\n", "fail"),
    ("set -e\nn=0\n! ((n++)) | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\n! { ((n++)); } | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\n! ((m++))\n((n++))\n", "fail"),
    ("set -e\nn=0\n! false\n((n++))\n", "fail"),
])
def test_a_negated_command_counts_and_is_exempt_from_set_e(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a `!` right before `(` is a word of its own (`(` is an operator's character): bash
    # negates the command after it, a `(( … ))` or a subshell (the first said `fail`, the
    # others `warn`: `!((n++))` read as a command's name)
    ("set -e\nn=0\n!((n++))\n((n++))\n", None),
    ("set -e\nn=0\ntrue && !((n++))\n((n++))\n", None),
    ("set -e\nn=0\n!(false) && n=1\n((n++))\n", None),
    ("set -e\nn=0\n!(true) && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\nif !(false); then n=1; fi\n((n++))\n", None),
    ("set -e\nn=0\n!(exit 1) && n=1\n((n++))\n", None),
])
def test_a_bang_before_a_parenthesis_negates(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a compound a `!` negates after `&&` / `||` is one bash runs or skips, `set -e` ignored in
    # it, its status negated (the `[` / `false` rows said nothing, `n=1` read as always run;
    # the `((n++))` one said `fail` on the counter in the `if`; the `|| n=1` one `warn`)
    ('set -e\nn=0\n[ -n "${X:-}" ] && ! if true; then n=1; fi\n((n++))\n', "warn"),
    ('set -e\nn=0\n[ -n "${X:-}" ] || ! case x in x) false; n=1;; esac\n((n++))\n', "warn"),
    ("set -e\nn=0\nfalse && ! if true; then n=1; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue || ! case x in x) n=1;; esac\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue && ! if true; then ((n++)); fi\n((n++))\n", None),
    ("set -e\nn=0\ntrue && ! if true; then false; n=1; fi\n((n++))\n", None),
    ("set -e\nn=0\ntrue && ! for i in a; do false; n=1; done\n((n++))\n", None),
    ("set -e\nn=0\ntrue && ! if true; then :; fi || n=1\n((n++))\n", None),
    ("set -e\nn=0\ntrue && ! if true; then false; fi || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue && ! if true; then :; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue && ! while false; do :; done\n((n++))\n", "fail"),
    # … and one piped: the `!` negates the whole pipeline, whose status is its last
    # command's without pipefail (each said nothing, the pipe's status read unnegated)
    ("set -e\nn=0\n! for i in a; do :; done | true && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! case x in x) :;; esac | true && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! if true; then :; fi | true && n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! for i in a; do :; done | false || n=1\n((n++))\n", "fail"),
    ("set -e\nn=0\n! for i in a; do :; done | true || n=1\n((n++))\n", None),
    ('set -e\nn=0\n! for i in a; do :; done | [ -n "$X" ] && n=1\n((n++))\n', "warn"),
    ("set -eo pipefail\nn=0\n! case x in x) :;; esac | false || n=1\n((n++))\n", "fail"),
])
def test_a_negated_compound_after_and_or_runs_on_some_runs_only(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


#: The commands of a generated and-or list: one whose status bash's semantics do not decide
#: and that sets nothing (a test), `true`, `false`, an assignment (a branch the lint reads),
#: and an `exit` (it ends the shell: nothing after it runs).
_CHAIN_COMMANDS = {"test": '[ -n "$T{i}" ]', "true": "true", "false": "false",
                   "assign": "n={i}", "exit": "exit {i}"}


def _generated_chains(count: int) -> list[tuple[list[str], list[str]]]:
    """`count` and-or lists of 1 to 8 commands (their kinds, _CHAIN_COMMANDS's, and the
    operators between them), the same on every run."""
    rng = random.Random(20261206)
    chains = []
    for _ in range(count):
        size = rng.randint(1, 8)
        chains.append(([rng.choice(list(_CHAIN_COMMANDS)) for _ in range(size)],
                       [rng.choice(("&&", "||")) for _ in range(size - 1)]))
    return chains


#: An and-or list as the grammar groups it: a command's index, or (list, operator, index).
_Tree = int | tuple["_Tree", str, int]


class _Exited(Exception):
    """An `exit` of the list ran: the shell ends."""


def _evaluate(tree: _Tree, kinds: list[str], status_of: dict[int, int], ran: list[int]) -> int:
    """Run `tree` (kinds: _CHAIN_COMMANDS's; `status_of`: the status of each command whose
    status is not decided), adding each command run to `ran`; its status (_Exited: an `exit`
    ran)."""
    if isinstance(tree, int):
        ran.append(tree)
        if kinds[tree] == "exit":
            raise _Exited
        return {"true": 0, "false": 1}.get(kinds[tree], status_of.get(tree, 0))
    left, op, right = tree
    status = _evaluate(left, kinds, status_of, ran)
    return _evaluate(right, kinds, status_of, ran) if (status == 0) == (op == "&&") else status


def _reference_runs(kinds: list[str], ops: list[str]) -> list[tuple[int, ...]]:
    """The commands bash runs of the list (an `exit` the last, where one ran), for each
    outcome of those whose status is not decided (a test, an assignment: 0 or 1), by the
    grammar of the manual's "Lists of Commands": `&&` and `||` have equal precedence and are
    left-associative, so the list is the tree ((c0 op1 c1) op2 c2) …; `a && b` runs b if and
    only if a's status is 0, `a || b` if and only if it is not, and its status is that of the
    last command it ran."""
    free = [i for i, kind in enumerate(kinds) if kind in ("test", "assign")]
    tree: _Tree = 0
    for i, op in enumerate(ops, start=1):
        tree = (tree, op, i)
    runs = []
    for outcome in itertools.product((0, 1), repeat=len(free)):
        ran: list[int] = []
        with contextlib.suppress(_Exited):
            _evaluate(tree, kinds, dict(zip(free, outcome, strict=True)), ran)
        runs.append(tuple(ran))
    return runs


def _ends_script_shell(command: str, _at: int, text: str) -> bool:
    """script_exits.ends_script_shell as syntax.and_or_branches asks it (with the command's
    offset, which the generated lists, with no `{ … }` group, do not need)."""
    from bot.core.launcher_lint.script_exits import ends_script_shell

    return ends_script_shell(command, text)


def test_a_list_s_and_or_branches_follow_the_grammar_for_any_chain():
    """For generated lists, the commands the lint reads as branches bash may skip, and which
    sets of them bash runs one of on every way that goes on past the list (model.Cover.holds,
    counting those before a given branch only, or all: a way that ends the shell after that
    branch must run one too), agree with a reference evaluator of the grammar."""
    from bot.core.launcher_lint.syntax import and_or_branches

    for kinds, ops in _generated_chains(250):
        parts = [_CHAIN_COMMANDS[kind].format(i=i) for i, kind in enumerate(kinds)]
        lst = parts[0] + "".join(f" {op} {part}" for op, part in zip(ops, parts[1:],
                                                                       strict=True))
        starts = list(itertools.accumulate(
            (len(f"{part} {op} ") for part, op in zip(parts, ops, strict=False)), initial=0))
        runs = _reference_runs(kinds, ops)
        found = and_or_branches(lst, 0, {}, lst, functools.partial(_ends_script_shell, text=lst))
        # the branches: the commands that may set something (not `true`, `false`, `exit`)
        # that bash skips on some outcome (one that ended the shell before it skips nothing),
        # or never runs
        skipped = {i for i, kind in enumerate(kinds) if kind in ("test", "assign") and i and (
            all(i not in ran for ran in runs) or any(
                i not in ran and not (kinds[ran[-1]] == "exit" and ran[-1] < i)
                for ran in runs))}
        command_of = [starts.index(start) for start, _end in found.spans] if found else []
        assert set(command_of) == skipped, lst
        # the commands bash never runs: the branches, and those that set nothing (`true ||
        # false`, `true || exit 3`)
        never = [i for i in range(len(kinds)) if not any(i in ran for ran in runs)]
        ran_never = [starts.index(start) for start, _end in found.never] if found else []
        assert ran_never == never, lst
        if found is None or found.at is None:
            continue
        branches = len(command_of)
        for before in (None, *range(branches + 1)):
            counted = command_of if before is None else command_of[:before]
            for size in range(branches + 1):
                for chosen in itertools.combinations(range(branches), size):
                    hit = {command_of[b] for b in chosen} & set(counted)
                    # (where the asked branch is, past which an `exit` counts no more)
                    bound = command_of[before] if before is not None and before < branches \
                        else len(kinds)
                    expected = all(hit & set(ran) or kinds[ran[-1]] == "exit" and ran[-1] < bound
                                   for ran in runs)
                    assert found.cover.holds(set(chosen), branches, before) == expected, (
                        lst, chosen, before)


def test_a_tracked_set_of_branches_holds_as_the_cover_says_after_each_change():
    """model.CoveredBranches (what branch_paths.Coverage keeps as counts are added and taken
    back) says what Cover.holds says of the same set, every bound, after each add and discard
    of a generated sequence, for the generated lists (250 plus 20 of 40 to 200 commands: its
    tree has levels)."""
    from bot.core.launcher_lint.syntax import and_or_branches

    rng = random.Random(20261207)
    chains = _generated_chains(250) + [
        ([rng.choice(list(_CHAIN_COMMANDS)) for _ in range(size)],
         [rng.choice(("&&", "||")) for _ in range(size - 1)])
        for size in (rng.randint(40, 200) for _ in range(20))]
    compared = 0
    for kinds, ops in chains:
        parts = [_CHAIN_COMMANDS[kind].format(i=i) for i, kind in enumerate(kinds)]
        lst = parts[0] + "".join(f" {op} {part}" for op, part in zip(ops, parts[1:],
                                                                       strict=True))
        found = and_or_branches(lst, 0, {}, lst, functools.partial(_ends_script_shell, text=lst))
        if found is None or found.at is None:
            continue
        branches = len(found.spans)
        for before in (None, *rng.sample(range(branches + 1), min(3, branches + 1))):
            tracked = found.cover.tracker(branches, before)
            members: set[int] = set()
            for _ in range(3 * branches):
                branch = rng.randrange(branches)
                if rng.random() < 0.7:
                    tracked.add(branch)
                    members.add(branch)
                else:
                    tracked.discard(branch)
                    members.discard(branch)
                assert tracked.holds() == found.cover.holds(members, branches, before), (
                    lst, members, before)
                compared += 1
    assert compared > 10000


def test_the_reference_evaluator_runs_lists_as_bash_does(tmp_path):
    """The reference evaluator (_reference_runs) agrees with real bash on generated lists:
    each command prints its index, its status set by the outcome (an `exit` ends the list's
    subshell)."""
    for kinds, ops in _generated_chains(40):
        free = [i for i, kind in enumerate(kinds) if kind in ("test", "assign")]
        functions = "".join(
            f"c{i}() {{ printf '%s ' {i}; "
            f"{'exit' if kind == 'exit' else 'return'} "
            f"{ {'true': '0', 'false': '1', 'exit': '0'}.get(kind, f'$S{i}') }; }}\n"
            for i, kind in enumerate(kinds))
        lst = "c0" + "".join(f" {op} c{i}" for i, op in enumerate(ops, start=1))
        sets = "; ".join(f"S{i}=$(( m >> {k} & 1 ))" for k, i in enumerate(free)) or ":"
        script = (f"{functions}for ((m = 0; m < {1 << len(free)}; m++)); do "
                  f"{sets}; ( {lst} ); echo; done\n")
        launch = tmp_path / "chain.sh"
        launch.write_text(script)
        out = subprocess.run(["bash", str(launch)], capture_output=True, text=True,
                             timeout=20).stdout
        bash_runs = [tuple(int(i) for i in line.split()) for line in out.splitlines()]
        # (bash counts the outcomes from the first free command's bit up)
        expected = [_reference_runs(kinds, ops)[int("".join(
            str(m >> k & 1) for k in range(len(free))) or "0", 2)]
            for m in range(1 << len(free))]
        assert bash_runs == expected, (lst, kinds)


@pytest.mark.parametrize(("body", "level"), [
    # a call whose status is tested runs its body with `set -e` off there: the counter that
    # starts a list of it counts at the call (each said `fail`, the body's count never seen)
    ("set -e\nn=0\nf() { ((n++)); }\nf || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\n! f\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nif f; then :; fi\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nif ! f; then :; fi\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nwhile f; do break; done\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nf || true\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { n=0; ((n++)); }\nf || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { let n++; }\nf && true\n((n++))\n", None),
    # … on the runs that make the call only
    ('set -e\nn=0\nf() { ((n++)); }\n[ -n "$X" ] && f || true\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { ((n++)); }\nif [ -n "$X" ]; then f || true; fi\n((n++))\n', "warn"),
    # no count at the call: made before the definition, in a subshell or pipeline, the body's
    # counter in a subshell, pipeline or skipped `||`, the body setting it back after it, or
    # set again after the call
    ("set -e\nn=0\nf || true\nf() { ((n++)); }\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\n( f || true )\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\nf | cat || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ( ((n++)) ); }\nf || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) | cat; }\nf || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { true || ((n++)); }\nf || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); n=0; }\nf || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\nf || true\nn=0\n((n++))\n", "fail"),
])
def test_a_tested_call_counts_its_bodys_counter(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call runs its body's counters in a branch, a loop's body or a condition too: those it
    # makes on some runs only count there on those runs (each said `fail`, none counted)
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then ((n++)); fi; }\nf || true\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then ((n++)); fi; }\nif f; then :; fi\n((n++))\n',
     "warn"),
    ('set -e\nn=0\nf() {\n  if [ -n "$X" ]; then\n    ((n++))\n  fi\n}\nf || true\n((n++))\n',
     "warn"),
    ('set -e\nn=0\nf() { case "$X" in 1) ((n++));; esac; }\nf || true\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { for i in $X; do ((n++)); done; }\nf || true\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then ((n++)) || true; fi; }\nf\n((n++))\n', "warn"),
    # … and those it makes on every run, one branch or the other, or in a condition whose
    # status is tested, count there on every run
    ("set -e\nn=0\nf() { if true; then ((n++)); fi; }\nf || true\n((n++))\n", None),
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then ((n++)); else ((n++)); fi; }\nf || true\n'
     "((n++))\n", None),
    ("set -e\nn=0\nf() { if ((n++)); then :; fi; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { while ((n++)); do break; done; }\nf\n((n++))\n", None),
    # (none in a subshell, a branch bash never runs, or past a `return` the branch always takes)
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then ( ((n++)) ); fi; }\nf || true\n((n++))\n', "fail"),
    ("set -e\nn=0\nf() { if false; then ((n++)); fi; }\nf || true\n((n++))\n", "fail"),
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then return; ((n++)); fi; }\nf || true\n((n++))\n',
     "fail"),
])
def test_a_call_counts_its_bodys_counter_in_a_branch_or_condition(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call made through another body (g's `f`) counts f's counter where the call of g is
    # tested (`g || true`, `if g`), or g's call of f is, or f's counter's own status is (each
    # said `fail`, a call made through other bodies counting nothing)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f; }\ng || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f; }\nif g; then :; fi\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { echo a; f; }\nh() { g; }\nh || true\n((n++))\n",
     None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f || true; }\ng\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)) || true; }\ng() { f; }\ng\n((n++))\n", None),
    # … on the runs that make it only (g's call of f, or f's counter, in a branch)
    ('set -e\nn=0\nf() { ((n++)); }\ng() { if [ -n "$X" ]; then f; fi; }\ng || true\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then ((n++)); fi; }\ng() { f; }\ng || true\n'
     "((n++))\n", "warn"),
    # (none past a `return` in g, in the background, nor where f sets it back after)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { return; f; }\ng || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f; }\ng || true &\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); n=0; }\ng() { f; }\ng || true\n((n++))\n", "fail"),
])
def test_a_call_made_through_another_body_counts_its_counter(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call sent to the background in the calling body (`g() { f & }`) runs in a subshell: its
    # count does not hold in the script's shell (each said nothing, the count read as made there)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f & }\ng || true\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f & wait; }\ng || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { { f; } & }\ng || true\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f & echo; }\ng || true\nwait\n((n++))\n", "fail"),
    # (… one after another list sent there, or before `&&`, does)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { sleep 0 & f; }\ng || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { f && echo; }\ng || true\n((n++))\n", None),
])
def test_a_call_in_the_background_of_a_body_counts_in_no_shell_of_the_script(tmp_path, body,
                                                                            level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call in a subshell or a pipeline of a body called tested runs with `set -e` off, and
    # its count holds in that subshell only (each said `fail` on f's counter too, f's calls not
    # known: its body judged where it is defined)
    ("set -e\nn=0\nf() { ((n++)); }\ng(){ ( f ); }\ng || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng(){ f | cat; }\ng || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng(){ ( echo a; f ) && echo b; }\nif g; then :; fi\n"
     "((n++))\n", "fail"),
    # … and a pipeline's command stops the script only where its status is the pipeline's: the
    # last command's, or any with pipefail on (the first two said `fail` on f's counter)
    ("set -e\nn=0\nf() { ((n++)); }\ng(){ f | cat; }\ng\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\nf | cat\n((n++))\n", "fail"),
    # (one that stops bash stays said: `( f )` untested, the pipeline's last command)
    ("set -e\nn=0\nf() { ((n++)); }\ng(){ ( f ); }\ng\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\necho | f\n", "fail"),
    ("set -e\nset -o pipefail\nn=0\nf() { ((n++)); }\nf | cat\n", "fail"),
])
def test_a_call_in_a_subshell_or_pipeline_counts_there_only(tmp_path, body, level):
    """The finding bash agrees with is the counter's after the call (or, where none follows,
    the body's), and no other."""
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call in a `{ … }` group or a `( … )` subshell whose status is tested, in the script or
    # in a body, runs with `set -e` off (each said `fail` on f's counter: the call not known as
    # tested, f's body judged where it is defined, with `set -e` on); the group's count holds
    # past it, the subshell's does not
    ("set -e\nn=0\nf() { ((n++)); }\n{ f; } || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nif { f; }; then :; fi\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { { f; } || true; }\ng\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nfor i in 1 2; do { f; } || true; done\n((n++))\n",
     None),
    ("set -e\nn=0\nf() { ((n++)); }\n( f ) || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\nif ( f ); then :; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\n! ( f )\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { ( f ) || true; }\ng\n((n++))\n", "fail"),
])
def test_a_call_in_a_tested_group_or_subshell_runs_without_errexit(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


def _bash_goes_on_and_the_lint_says_nothing(tmp_path, body: str) -> None:
    """Real bash runs `body` to its end (status 0), and the lint has no counter finding."""
    launch = tmp_path / "launch.sh"
    launch.write_text(f"#!/bin/bash\n{body}")
    assert subprocess.run(["bash", str(launch)], capture_output=True, text=True, timeout=20,
                          env={"PATH": "/usr/bin:/bin"}).returncode == 0
    assert [f for f in lint_launcher(f"#!/bin/bash\n{body}")
            if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"] == []


@pytest.mark.parametrize("body", [
    "set -e\nn=0\nf() { ((n++)); }\n{ f; } || true\necho ok\n",
    "set -e\nn=0\nf() { ((n++)); }\n( f ) || true\necho ok\n",
    "set -e\nn=0\nf() { ((n++)); }\nif ( f ); then :; fi\necho ok\n",
])
def test_a_body_called_in_a_tested_group_or_subshell_only_is_no_finding(tmp_path, body):
    """Bash runs the script to its end; the lint said `fail` on f's counter."""
    _bash_goes_on_and_the_lint_says_nothing(tmp_path, body)


@pytest.mark.parametrize(("body", "level", "lint_level"), [
    # a function whose body turns pipefail on or off leaves it not known past its definition:
    # its calls, not the definition, change it (each said nothing, the body's `set` read as
    # run where it is defined)
    ("set -e\nn=0\nstrict() { set -o pipefail; }\nfalse | true || n=1\nstrict\n((n++))\n",
     "fail", "warn"),
    ('set -eo pipefail\nn=0\nrelax() { set +o pipefail; }\n[ -n "$X" ] && relax\n'
     "false | true && n=1\n((n++))\n", "warn", None),
    # (a body that leaves it as it was: as before the definition)
    ("set -e\nn=0\nsame() { set -o pipefail; set +o pipefail; }\nfalse | true || n=1\nsame\n"
     "((n++))\n", "fail", None),
])
def test_pipefail_a_function_body_sets_is_not_known_past_its_definition(
        tmp_path, body, level, lint_level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level, lint_level)


@pytest.mark.parametrize(("body", "level"), [
    # a pre-increment or -decrement evaluates to the value it leaves: from 0, 1 or -1, status 0,
    # and the counter after it reads that (each said `fail`, the variable read as still 0)
    ("set -e\nn=0\n((++n))\n((n++))\n", None),
    ("set -e\nn=0\n(( ++n )); ((n++))\n", None),
    ("set -e\nn=0\nlet ++n\n((n++))\n", None),
    ('set -e\nn=0\nlet "++n"\n((n++))\n', None),
    ("set -e\nn=0\n((--n))\n((n++))\n", None),
    ("set -e\n((++n))\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do ((++n)); done\n((n++))\n", None),
    # an arithmetic `-=`, and `let`'s `+=` / `-=`, which add, not append (`let n+=8` is 8, not
    # "08"; each said `fail`)
    ("set -e\nn=0\n((n-=1))\n((n++))\n", None),
    ("set -e\nn=0\nlet n+=8\n((n++))\n", None),
    ("set -e\nn=0\nlet n-=1\n((n++))\n", None),
    # … on the runs that make it only
    ('set -e\nn=0\nif [ -n "$X" ]; then ((++n)); fi\n((n++))\n', "warn"),
    ("set -e\nn=0\nfor i in $X; do ((++n)); done\n((n++))\n", "warn"),
    # a pre-increment or -decrement to 0, `-=` / `+=` of 0, `let n=0`, or one in a subshell,
    # leaves 0 where the counter reads it
    ("set -e\nn=1\n((--n)) || true\n((n++))\n", "fail"),
    ("set -e\nn=-1\nlet ++n || true\n((n++))\n", "fail"),
    ("set -e\nn=0\n((n-=0)) || true\n((n++))\n", "fail"),
    ('set -e\nn=0\nlet "n+=0" || true\n((n++))\n', "fail"),
    ("set -e\nn=5\nlet n=0 || true\n((n++))\n", "fail"),
    ("set -e\nn=0\n( ((++n)) )\n((n++))\n", "fail"),
])
def test_a_pre_increment_or_an_arithmetic_add_leaves_what_it_evaluates_to(tmp_path, body,
                                                                         level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # an arithmetic `-=` / `+=` of a constant to a known number leaves their sum (each said
    # nothing: any `-=` / `+=` but of 0 to 0 read as not known)
    ("set -e\nn=1\necho $((n-=1))\n((n++))\n", "fail"),
    ("set -e\nn=1\n((n-=1)) || true\n((n++))\n", "fail"),
    ("set -e\nn=5\nlet n-=5 || true\n((n++))\n", "fail"),
    ("set -e\nn=1\n: $((n+=1))\n(( n -= 2 )) || true\n((n++))\n", "fail"),
    ("set -e\nn=-3\nlet \"n+=3\" || true\n((n++))\n", "fail"),
    # … not to 0 (the counter then reads 1 or -1: status 0), and one whose value is more than
    # a constant is not known
    ("set -e\nn=1\n((n-=2)) || true\n((n++))\n", None),
    ("set -e\nn=1\n((n+=1))\n((n++))\n", None),
    ("set -e\nn=1\n(( n -= 1 + 1 )) || true\n((n++))\n", None),
])
def test_an_arithmetic_sum_of_a_constant_to_a_known_number_is_known(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # an arithmetic expansion that counts or sets the counter's variable (`x=$((++n))`) runs in
    # the script's shell and never fails its command: the counter after it reads its value
    # (each said `fail`, the variable read as still 0)
    ("set -e\nn=0\nx=$((++n))\n((n++))\n", None),
    ("set -e\nn=0\nx=$((n++))\n((n++))\n", None),
    ('set -e\nn=0\nx="$(( n++ ))"\n((n++))\n', None),
    ('set -e\nn=0\necho "$((n++))"\n((n++))\n', None),
    ("set -e\nn=0\n: $((n=5))\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do x=$((n++)); done\n((n++))\n", None),
    # … on the runs that make it only
    ('set -e\nn=0\n[ -n "$X" ] && x=$((++n))\n((n++))\n', "warn"),
    ('set -e\nn=0\nif [ -n "$X" ]; then x=$((n++)); fi\n((n++))\n', "warn"),
    # … and one that leaves 0 stops bash on the counter after it (each said nothing)
    ("set -e\nn=1\nx=$((--n))\n((n++))\n", "fail"),
    ("set -e\nn=5\nx=$(( n = 0 ))\n((n++))\n", "fail"),
    # (one that computes without setting it counts nothing)
    ("set -e\nn=0\nx=$((n+1))\n((n++))\n", "fail"),
])
def test_an_arithmetic_expansion_counts_where_the_script_runs_it(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # an arithmetic expansion's count in a function's body holds where a call in the script's
    # shell runs that body, as the body's counters do: not where no call runs it (never
    # called, called from an uncalled body, in a subshell, a pipe, the background or a
    # substitution, or after the counter) (each said nothing, the count read where its text is)
    ("set -e\nn=0\nf() { x=$((++n)); }\n((n++))\n", "fail"),
    ("set -e\nn=0\ng() { echo $((n++)); }\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { x=$((++n)); }\ng() { f; }\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { x=$((++n)); }\n( f )\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { x=$((++n)); }\nf | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { x=$((++n)); }\nf & wait\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { x=$((++n)); }\nx=$(f)\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { x=$((++n)); }\n((n++))\nf\n", "fail"),
    ("set -e\nn=0\nf() { echo $((++n)) | cat; }\nf\n((n++))\n", "fail"),
    # (… and holds where one does: a plain or tested call, through another body, and for the
    # body's own counter after it)
    ("set -e\nn=0\nf() { x=$((++n)); }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { x=$((++n)); }\nf || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { x=$((++n)); }\ng() { f; }\ng\n((n++))\n", None),
    ("set -e\nn=0\nf() { x=$((++n)); ((n++)); }\nf\n", None),
])
def test_an_arithmetic_expansion_in_a_body_counts_where_a_call_runs_it(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a count or an assignment in a command substitution (`$( … )`, backticks) holds in its
    # subshell only: the counter after it reads what held before (each said nothing, the
    # count read as the script's)
    ("set -e\nn=0\nx=$(echo $((++n)))\n((n++))\n", "fail"),
    ("set -e\nn=0\nx=`echo $((n++))`\n((n++))\n", "fail"),
    ('set -e\nn=0\necho "$(echo $((n+=1)))"\n((n++))\n', "fail"),
    ("set -e\nn=0\necho $(n=1)\n((n++))\n", "fail"),
    # (a counter inside the substitution reads what is set there)
    ("set -e\nx=$(n=1; ((n++)); echo)\nn=1\n((n++))\n", None),
])
def test_a_count_in_a_command_substitution_stays_there(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a shell assignment whose whole value is an arithmetic expansion counting its own variable
    # runs after the count: a post-increment or -decrement's value is the one before it, which
    # the assignment puts back (each said nothing, the variable read as not known)
    ("set -e\nn=0\nn=$((n++))\n((n++))\n", "fail"),
    ('set -e\nn=0\nn="$((n--))"\n((n++))\n', "fail"),
    ("set -e\nn=5\nn=$(( n = 0 ))\n((n++))\n", "fail"),
    ('set -e\nn=0\n[ -n "$X" ] || n=$((n++))\n((n++))\n', "fail"),
    # … else what the count leaves, or, past an earlier count, what that left
    ("set -e\nn=0\nn=$((++n))\n((n++))\n", None),
    ("set -e\nn=0\nn=$((n+=1))\n((n++))\n", None),
    ("set -e\nn=0\n((n++)) || true\nn=$((n++))\n((n++))\n", None),
    # (more text in the value: not known, nothing said)
    ("set -e\nn=0\nn=$((n++))5\n((n++))\n", None),
])
def test_an_assignment_of_its_own_count_leaves_the_expansions_value(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # an arithmetic expansion's pre-increment or -decrement counts once (each said nothing:
    # counted twice, `n` read as 2 or -1)
    ("set -e\nn=1\necho $((--n))\n((n++))\n", "fail"),
    ("set -e\nn=-1\necho $((++n))\n((n++))\n", "fail"),
    ("set -e\nn=1\n: $(( --n ))\n((n++))\n", "fail"),
])
def test_an_arithmetic_expansion_counts_once(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a post-decrement (`((n--))`, `let n--`) leaves one less than the variable held: a counter
    # after one that leaves 0 stops bash (each said nothing, the decrement not read)
    ("set -e\nn=1\n((n--))\n((n++))\n", "fail"),
    ("set -e\nn=1\nlet n--\necho\n((n++))\n", "fail"),
    ("set -e\nn=0\nx=$((++n))\n((n--))\n((n++))\n", "fail"),
    ("set -e\nn=1\n(( n-- ))\necho\n((n++))\n", "fail"),
    # (… and one that leaves another number, none)
    ("set -e\nn=0\n((n--)) || true\n((n++))\n", None),
    ("set -e\nn=3\n((n--))\n((n++))\n", None),
    # (past a counter since the last value, `((n++)) || true`, not known: nothing said)
    ("set -e\nn=2\n((n++)) || true\n((n--))\n((n--))\n((n++))\n", None),
])
def test_a_post_decrement_leaves_one_less(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a function defined again, or removed by `unset -f`, runs its new body (or the builtin)
    # at the calls after: its last body's `exit` / failure ends nothing there (each said
    # nothing, the first body read as run at the call)
    ("set -e\nn=0\nf() { exit 0; }\nf() { :; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { exit 0; }\nfunction f { :; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { false; }\nf() { :; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue() { exit 0; }\nunset -f true\ntrue\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue() { exit 0; }\nunset -f true && :\ntrue\n((n++))\n", "fail"),
    # (… not the one defined last, nor one `unset -v` or a subshell's `unset -f` leaves)
    ("set -e\nn=0\nf() { :; }\nf() { exit 0; }\nf\n((n++))\n", None),
    ("set -e\nn=0\ntrue() { exit 0; }\nunset -v true\ntrue\n((n++))\n", None),
    ("set -e\nn=0\ntrue() { exit 0; }\n( unset -f true )\ntrue\n((n++))\n", None),
])
def test_a_function_defined_again_or_unset_ends_nothing_its_last_body_did(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call whose status is not tested runs its body's counter whose own status is tested by
    # `||` or `!` whatever it reads: it counts at the call (each said `fail`)
    ("set -e\nn=0\nf() { ((n++)) || true; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)) || true; }\nf; ((n++))\n", None),
    ("set -e\nn=0\nf() { ! ((n++)); }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { let n++ || :; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { echo a; ((n++)) || true; echo b; }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)) || true; }\nfor i in 1 2; do f; done\n((n++))\n", None),
    # … on the runs that make the call only
    ('set -e\nn=0\nf() { ((n++)) || true; }\nif [ -n "$X" ]; then f; fi\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { ((n++)) || true; }\n[ -n "$X" ] && f\n((n++))\n', "warn"),
    ("set -e\nn=0\nf() { ((n++)) || true; }\nfor i in $X; do f; done\n((n++))\n", "warn"),
    # no count at the call: in the background, a subshell, a pipeline or `$( … )`, the body's
    # counter in a subshell or skipped, set back after it or after the call, a call before the
    # definition; a counter before `&&` leaves the body's status 1 (bash stops at the call)
    ("set -e\nn=0\nf() { ((n++)) || true; }\nf &\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\nf || true &\nwait\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) || true; }\n( f )\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) || true; }\nf | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) || true; }\nx=$(f)\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ( ((n++)) || true ); }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { true || ((n++)) || true; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) || true; n=0; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) || true; }\nf\nn=0\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)) && true; }\nf\n((n++))\n", "fail"),
])
def test_a_call_counts_its_bodys_counter_whose_status_is_tested(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call's body whose counter is past a `return` bash may take counts at the call on some
    # runs only (each said `fail`, where bash goes on when X is empty)
    ('set -e\nn=0\nf() { [ -n "$X" ] && return; ((n++)); }\nf || true\n((n++))\n', "warn"),
    ('set -e\nn=0\nf() { if [ -n "$X" ]; then return; fi; ((n++)); }\nf || true\n((n++))\n',
     "warn"),
    ('set -e\nn=0\nf() { [ -n "$X" ] && return; ((n++)) || true; }\nf\n((n++))\n', "warn"),
    # … none past a `return` that starts a list of the body (bash always takes it), nor one in
    # a subshell, nor where the variable is set again after the call
    ("set -e\nn=0\nf() { return; ((n++)); }\nf || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { return 0; ((n++)); }\nf || true\n((n++))\n", "fail"),
    ('set -e\nn=0\nf() { [ -n "$X" ] && return; ( ((n++)) ); }\nf || true\n((n++))\n', "fail"),
    ('set -e\nn=0\nf() { [ -n "$X" ] && return; ((n++)); }\nf || true\nn=0\n((n++))\n', "fail"),
    # (a `return` in a subshell leaves that subshell only)
    ("set -e\nn=0\nf() { ( return ); ((n++)); }\nf || true\n((n++))\n", None),
])
def test_a_call_counts_its_bodys_counter_past_a_return_on_some_runs(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a plain assignment in a function's body sets the variable where a call in the script's
    # shell runs the body, not where its text is (each misread by text position)
    ("set -e\nf() { n=1; }\n((n++))\n", "fail"),
    ("set -e\nf() { n=1; }\nn=0\nf\n((n++))\n", None),
    ("set -e\nf() { n=0; }\nn=5\nf\n((n++))\n", "fail"),
    ("set -e\nn=5\nf() { n=0; }\n((n++))\n", None),
    ("set -e\nn=5\nf() { n=0; }\n((n++))\nf\n", None),
    # … through another body, and on the runs that make the call only
    ("set -e\nn=0\nf() { n=1; }\ng() { f; }\ng\n((n++))\n", None),
    ('set -e\nf() { n=0; }\nn=5\n[ -n "$X" ] && f\n((n++))\n', "warn"),
    # (… not where the call runs it in a subshell, a pipeline or the background)
    ("set -e\nf() { n=1; }\n( f )\n((n++))\n", "fail"),
    ("set -e\nf() { n=1; }\nf | cat\n((n++))\n", "fail"),
    ("set -e\nf() { n=1; }\nf & wait\n((n++))\n", "fail"),
    # (… nor what it sets of a variable the body declares its own)
    ("set -e\nn=0\nf() { local n=5; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=5\nf() { local -i n=0; n=3; }\nf\n((n++))\n", None),
    # (still known after a call that runs it before the counter)
    ("set -e\nf() { n=1; }\nf\n((n++))\n", None),
])
def test_an_assignment_in_a_body_holds_where_a_call_runs_it(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a counter in a body that declares its variable its own (`local n`) reads the body's `n`:
    # unset (empty) from the declaration, what the body sets since (each read as the global)
    ("set -e\nn=5\nf() { local n; ((n++)); }\nf\n", "fail"),
    ("set -e\nn=5\nf() { local n=0; ((n++)); }\nf\n", "fail"),
    ("set -e\nn=5\nf() { declare -i n; ((n++)); }\nf\n", "fail"),
    ("set -e\nn=0\nf() { local n=1; ((n++)); }\nf\n", None),
    ("set -e\nn=0\nf() { local n; n=3; ((n++)); }\nf\n", None),
    # (… and the global where the body declares it so, or after the body)
    ("set -e\nn=5\nf() { declare -g n=0; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { local n; n=1; }\nf\n((n++))\n", "fail"),
])
def test_a_counter_of_a_bodys_local_reads_the_bodys_own(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize("body", [
    # a call after another command of a command substitution (`$(echo; f)`) runs its body in
    # that subshell, with `set -e` off there: nothing stops the script where the substitution's
    # status is tested or is not the command's (each said `fail` on f's counter, the call read
    # as a plain one)
    "set -e\nn=0\nf() { ((n++)); }\nx=$(echo; f) || true\necho ok\n",
    'set -e\nn=0\nf() { ((n++)); }\necho "$(echo; f)"\necho ok\n',
    "set -e\nn=0\nf() { ((n++)); }\nif x=$(echo a; f); then :; fi\necho ok\n",
    "set -e\nn=0\nf() { ((n++)); }\necho `echo a; f`\necho ok\n",
])
def test_a_call_after_another_command_of_a_substitution_is_no_plain_call(tmp_path, body):
    _bash_goes_on_and_the_lint_says_nothing(tmp_path, body)


@pytest.mark.parametrize(("body", "codes", "line"), [
    # a bare assignment whose substitution ends in a call of a function whose body ends in a
    # counter has that counter's status (the body runs in the substitution's subshell, `set -e`
    # off there): `set -e` stops on the assignment (each said nothing)
    ("set -e\nn=0\nf() { ((n++)); }\nx=$(f)\necho ok\n", [1, 1], 5),
    ("set -e\nn=0\nf() { echo a; ((n++)); }\nx=$(echo; f)\necho ok\n", [1, 1], 5),
    ("set -e\nn=0\nf() { ((n++)); }\nx=`f`\necho ok\n", [1, 1], 5),
    ('set -e\nn=0\nf() { let n++; }\nx="$(f)"\necho ok\n', [1, 1], 5),
    # (… where the script makes no other call of it: said there, not on the body's counter)
    ("set -e\nn=0\nf() { ((n++)); }\ntrue || f\nx=$(f)\n", [1, 1], 6),
    # (… not from a value that is no 0, where its status is tested or is not the command's, nor
    # where the counter does not end the body)
    ("set -e\nn=2\nf() { ((n++)); }\nx=$(f)\necho ok\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\nx=$(f) || true\necho ok\n", [0, 0], None),
    ('set -e\nn=0\nf() { ((n++)); }\necho "$(f)"\necho ok\n', [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); echo; }\nx=$(f)\necho ok\n", [0, 0], None),
    ("set -e\nn=0\nf() { ((n++)); }\nx=$(f) &\nwait\necho ok\n", [0, 0], None),
])
def test_an_assignment_of_a_substitution_ending_in_a_counting_call_has_its_status(
        tmp_path, body, codes, line):
    _bash_exits_and_the_lint_says(tmp_path, body, codes, line)


def test_the_assignments_finding_says_it_goes_through_the_substitution():
    """The finding is on the assignment's line, which has no `((n++))`: it says the counter
    ends the body the substitution runs, in English and in Korean (it named the counter
    alone, as if it were on that line)."""
    from bot.core.text import render_text
    from bot.slack.render import translator

    [found] = [f for f in lint_launcher("#!/bin/bash\nset -e\nn=0\nf() { ((n++)); }\nx=$(f)\n")
               if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert found.line == 5
    assert ("(through the command substitution on this line: `((n++))` is the last command of "
            "`f`, which it runs, so the assignment's status is the counter's)") in found.message
    korean = render_text(found.text, translator("ko").gettext)
    assert "`f`의 마지막 명령이므로, 할당의 종료 상태가 이 카운터의 상태가 됩니다" in korean
    assert "`n`이(가) 0일 때" in korean


@pytest.mark.parametrize(("body", "level"), [
    # a decrement in a body (`((n--))`, `((--n))`, `let n--`) takes one from what the variable
    # holds at the call: from 1, the counter after the call reads 0 (each said nothing, the
    # decrement counted as an increment)
    ("set -e\nn=1\nf() { ((n--)) || true; }\nf\n((n++))\n", "fail"),
    ("set -e\nf() { ((n--)) || true; }\nn=1\nf\n((n++))\n", "fail"),
    ("set -e\nf() { ((n--)); }\nn=1\nf\n((n++))\n", "fail"),
    ("set -e\nn=1\nf() { ((--n)) || true; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=1\nf() { let n-- || true; }\nf\n((n++))\n", "fail"),
    ("set -e\nn=3\nf() { ((n-=3)) || true; }\nf\n((n++))\n", "fail"),
    # (… and from 0 or 2, leaves no 0)
    ("set -e\nn=0\nf() { ((n--)) || true; }\nf\n((n++))\n", None),
    ("set -e\nn=2\nf() { ((n--)); }\nf\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((--n)); }\nf\n((n++))\n", None),
])
def test_a_decrement_in_a_body_takes_one_at_the_call(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a count made before a call, in the script or at a call of another body, holds in the
    # body the call runs: its counter reads the variable past 0 (each said `fail`, the body's
    # counter read from the last assignment as if nothing counted since)
    ("set -e\nn=0\nf() { ((n++)) || true; }\ng() { ((n++)); }\nf\ng\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { ((n++)); }\nf || true\ng\n", None),
    ("set -e\nn=0\ng() { ((n++)); }\n((n++)) || true\ng\n", None),
    ("set -e\nn=0\nf() { x=$((++n)); }\ng() { ((n++)); }\nf\ng\n", None),
    # … on the runs that make it only
    ('set -e\nn=0\ng() { ((n++)); }\n[ -n "$X" ] && { let n++ || true; }\ng\n', "warn"),
    # (… not one in a subshell, nor one after the call)
    ("set -e\nn=0\nf() { ((n++)) || true; }\ng() { ((n++)); }\n( f )\ng\n", "fail"),
    ("set -e\nn=0\ng() { ((n++)); }\ng\nlet n++ || true\n", "fail"),
])
def test_a_count_before_a_call_holds_in_the_body_it_runs(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a call sent to the background inside a `{ … }` group (of a body, or of the script) runs
    # in a subshell: its count and assignment hold nowhere else (each said nothing, the group's
    # lists not read for `&`)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { { f & }; wait; }\ng || true\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ng() { true && { f || true & }; wait; }\ng\n((n++))\n",
     "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\n{ f || true & }\nwait\n((n++))\n", "fail"),
    ("set -e\nf() { n=1; }\ng() { { f & }; wait; }\ng\n((n++))\n", "fail"),
    # (… but for the other lists of the group)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { { sleep 0 & }; f; }\ng || true\n((n++))\n", None),
])
def test_a_call_in_the_background_of_a_group_counts_in_no_shell_of_the_script(tmp_path, body,
                                                                              level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # `eval f` calls f: its body counts at a call whose status is tested (each said `fail`, the
    # call not read)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { eval f; }\ng || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\neval f || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)) || true; }\neval f\n((n++))\n", None),
    # (… and stops bash where it is not tested)
    ("set -e\nn=0\nf() { ((n++)); }\ng() { eval f; }\ng\n", "fail"),
])
def test_an_eval_of_a_function_calls_it(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize("body", [
    # a negated subshell (`!(f)`, `! ( f )`) tests f's status: `set -e` is off in its body, and
    # bash goes on (each said `fail` on the body's counter, the call read as a plain one)
    "set -e\nf() { n=0; ((n++)); }\n!(f); echo ok\n",
    "set -e\nf() { n=0; ((n++)); }\n! ( f )\necho ok\n",
])
def test_a_call_in_a_negated_subshell_is_tested(tmp_path, body):
    _bash_goes_on_and_the_lint_says_nothing(tmp_path, body)


@pytest.mark.parametrize(("body", "level"), [
    # `!false` (no blank after the `!`) is a command's name, not a negation: bash finds no
    # such command (status 127) with or without extglob (history expansion is off in a
    # script), so `&&` after it never runs and `||` always does (each said `warn`, its status
    # read as not known)
    ("set -e\n!false && n=1\n((n++))\n", "fail"),
    ("set -e\nshopt -s extglob\n!false && n=1\n((n++))\n", "fail"),
    ("set -e\nset -H\n!true && n=1\n((n++))\n", "fail"),
    ("set -e\n!true || n=1\n((n++))\n", None),
    # (… where `! false`, with a blank, negates)
    ("set -e\n! false && n=1\n((n++))\n", None),
])
def test_a_bang_glued_to_a_word_is_a_command_bash_does_not_find(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a counter in a body, judged at a call, reads what another body's call set before it, not
    # that body's text (each misread by text position)
    ("set -e\ng() { ((n++)); }\nf() { n=1; }\nn=0\nf\ng\n", None),
    ("set -e\nf() { n=0; }\ng() { ((n++)); }\nn=5\nf\ng\n", "fail"),
    ("set -e\ng() { ((n++)); }\nf() { n=0; }\nn=5\ng\n", None),
    # (… and through another body, as before)
    ("set -e\ninc() { ((n++)); }\nrun() { n=0; inc; }\nn=5\nrun\n", "fail"),
])
def test_a_body_counter_reads_what_another_bodys_call_set(tmp_path, body, level):
    _counter_stops_bash_as_the_level_says(tmp_path, body, level)


@pytest.mark.parametrize("call", [
    "FOO=1 f", "time f", "time -p f", '"f"', "\\f", "eval f arg", 'cmd=f; eval "$cmd"',
    "cmd=f; $cmd", 'cmd=f; "$cmd"', "cmd=f; ${cmd}",
])
def test_a_body_run_by_a_call_the_walk_does_not_read_may_set_the_counter(tmp_path, call):
    """Bash runs f's `n=1` at the call, and the script to its end; the lint said `fail` on the
    counter, f's assignment dropped where no call it reads was."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=0\nf() {{ n=1; }}\n{call}\n((n++))\necho REACHED\n")


def test_a_call_in_a_command_substitution_still_sets_nothing(tmp_path):
    """`$(f)` runs f's count in a subshell: `n` stays 1 for the script's `((n++))`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, "set -e\nn=1\nf() { ((n--)) || true; echo $n; }\nx=$(f)\n((n++))\n")


@pytest.mark.parametrize("before", ["return_code=0", 'echo "no early return here"'])
def test_a_word_return_that_is_no_return_command_leaves_the_call_made(tmp_path, before):
    """Bash runs g's call of f (n=1) and the script to its end; the lint read the text
    `return` as a return before the call and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=0\nf() {{ n=1; }}\ng() {{ {before}; f; }}\ng\n((n++))\n"
        "echo REACHED\n")


def test_a_call_past_a_conditional_return_may_set_the_counter(tmp_path):
    """Bash goes on when X is empty (f sets n=1) and stops when it is set (g returns first):
    a warning, no longer `fail`."""
    body = 'set -e\nn=0\nf() { n=1; }\ng() { [ -n "$X" ] && return 0; f; }\ng\n((n++))\n'
    launch = tmp_path / "launch.sh"
    launch.write_text(f"#!/bin/bash\n{body}")
    for x, code in (("", 0), ("1", 1)):
        assert subprocess.run(["bash", str(launch)], capture_output=True, timeout=20,
                              env={"PATH": "/usr/bin:/bin", "X": x}).returncode == code
    assert [f.level for f in lint_launcher(f"#!/bin/bash\n{body}")
            if f.check == CHECK_ARITH_ZERO] == ["warn"]


@pytest.mark.parametrize("before", [
    "(n=1)", "for x in a; do\n  ( n=1 )\ndone", 'printf "a\\nb\\n" | while read x; do n=1; done',
    '[ -n "$X" ] && n=1', 'if [ -n "$X" ]; then n=1; fi',
])
def test_a_body_step_adds_to_no_value_that_may_not_hold_at_its_call(tmp_path, before):
    """Bash leaves `n` at 3 (the subshell's or the skipped branch's 1 never holds), f takes
    it to 2 and the script runs to its end; the lint added f's -1 to that 1 and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=3\n{before}\nf() {{ ((n--)) || true; }}\nf\n((n++))\n"
        "echo REACHED\n")


@pytest.mark.parametrize("script", [
    'TRIES=0\nsetup() {\n  TRIES=1\n}\ntrain() {\n  ((TRIES++))\n  echo "attempt $TRIES"\n}\n'
    'main() {\n  setup\n  train\n}\nmain "$@"\n',
    "n=0\nsetup() { n=1; }\nrun() { ((n++)); }\nstage() { run; }\nmain() { setup; stage; }\n"
    "main\n",
    "setup() { n=1; }\nrun() { ((n++)); }\nmain() { n=0; setup; run; }\nmain\n",
])
def test_a_body_reads_what_another_body_sets_before_it_in_one_chain(tmp_path, script):
    """Bash runs setup's assignment before the counter's body, both at main's call, and the
    script to its end; the lint read the value from before main's call and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(tmp_path, f"set -e\n{script}echo REACHED\n")


def test_a_body_counting_from_its_chains_zero_still_stops_bash(tmp_path):
    """No other body sets `n` at main's call: run counts main's 0, and bash stops there."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, "set -e\nrun() { ((n++)); }\nmain() { n=0; run; }\nmain\n", "fail")


@pytest.mark.parametrize("define", [
    "if true; then f() { n=1; }; fi",
    'if [ -n "$BASH" ]; then f() { n=1; }; else f() { n=2; }; fi',
])
def test_a_function_defined_in_a_branch_may_set_the_counter_at_its_call(tmp_path, define):
    """Bash defines f in the branch, its call sets `n`, and the script runs to its end; the
    lint dropped the body's assignment (a body it never read) and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=0\n{define}\nf\n((n++))\necho REACHED\n")


def test_a_substituted_counter_after_a_test_stops_bash_on_some_runs(tmp_path):
    """`x=$(f)` runs when X is set only: bash stops on f's count there (a warning, not
    `fail`)."""
    body = 'set -e\nn=0\nf() { echo; ((n++)); }\n[ -n "$X" ] && x=$(f)\necho REACHED\n'
    launch = tmp_path / "launch.sh"
    launch.write_text(f"#!/bin/bash\n{body}")
    for x, code in (("", 0), ("1", 1)):
        assert subprocess.run(["bash", str(launch)], capture_output=True, timeout=20,
                              env={"PATH": "/usr/bin:/bin", "X": x}).returncode == code
    assert [(f.level, f.line) for f in lint_launcher(f"#!/bin/bash\n{body}")
            if f.check == CHECK_ARITH_ZERO] == [("warn", 5)]


def test_a_substituted_body_that_returns_first_gives_its_return_status(tmp_path):
    """f returns 0 before its count: `x=$(f)` is 0 and bash runs to its end; the lint read
    the body's last command as its status and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, "set -e\nn=0\nf() { return 0; ((n++)); }\nx=$(f)\necho REACHED\n")


@pytest.mark.parametrize("behind", ["((n++)) || true & wait", "{ ((n++)) || true; } &\nwait"])
def test_a_count_run_in_the_background_leaves_the_script_shells_zero(tmp_path, behind):
    """The background list counts `n` in its own subshell: f's `((n++))` reads 0 and bash
    stops there; the lint took the count for the script's and said nothing."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, f"set -e\nn=0\n{behind}\nf() {{ ((n++)); }}\nf\n", "fail")


@pytest.mark.parametrize("named", [
    "cmd=f\ntrue || f", 'cmd="f"', "trap f EXIT", "trap -- 'f' EXIT", 'trap "f" 0',
    "command f || true", "command -p f || true", "g() { return 0; f; }\ng",
])
def test_a_name_where_bash_runs_no_body_before_the_counter_keeps_the_real_zero(tmp_path, named):
    """Bash never runs f's `n=1` before the counter (an assigned word, an `EXIT` trap's action,
    `command`'s skip of functions, a call past a `return` bash always takes) and stops there;
    the lint read f's name as a call it could not place and said nothing."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, f"set -e\nn=0\nf() {{ n=1; }}\n{named}\n((n++))\necho REACHED\n", "fail")


@pytest.mark.parametrize("named", [
    "trap f EXIT\nf", "cmd=f\n$cmd",
])
def test_a_name_where_bash_may_run_the_body_still_keeps_its_assignment(tmp_path, named):
    """`f` and `$cmd` run f before the counter: bash goes on, and the lint says nothing."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=0\nf() {{ n=1; }}\n{named}\n((n++))\necho REACHED\n")


@pytest.mark.parametrize("body", [
    "n=0\nread -r n <<<1\n((n++))\n", "n=0\nIFS=' ' read -r x n <<<'a 1'\n((n++))\n",
    "n=0\nprintf -v n '%s' 1\n((n++))\n", "f() { n=0; }\nf\nread -r n <<<1\n((n++))\n",
    "n=0\nf() { read -r n <<<1; }\nf\n((n++))\n", "n=0\nf() { printf -v n 1; }\nf\n((n++))\n",
])
def test_a_value_read_by_read_or_printf_v_is_not_the_zero_before(tmp_path, body):
    """Bash's `read` / `printf -v` sets `n` to 1 and the script runs to its end; the lint
    read the 0 before them and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(tmp_path, f"set -e\n{body}echo REACHED\n")


def test_a_read_after_a_pipe_still_sets_nothing_in_the_script(tmp_path):
    """`echo 1 | read -r n` reads in the pipeline's subshell: `n` stays 0 and bash stops."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, "set -e\nn=0\necho 1 | read -r n\n((n++))\necho REACHED\n", "fail")


@pytest.mark.parametrize("script", [
    "n=0\nsetup() { n=1; }\nmain() { setup; ((n++)); }\nmain\n",
    "setup() { n=1; }\nmain() { n=0; setup; ((n++)); }\nmain\n",
    "n=0\nsetup() { n=1; }\nstage() { setup; }\nmain() { stage; ((n++)); }\nmain\n",
    "n=0\nsetup() { if [ -n \"${X:-}\" ]; then n=1; else n=2; fi; }\n"
    "main() { setup; ((n++)); }\nmain\n",
    "n=0\nsetup() { n=1; }\nmain() { setup; ((n++)); }\nmain\nmain\n",
])
def test_a_counter_in_main_reads_what_a_body_it_called_before_set(tmp_path, script):
    """Bash runs setup's assignment before main's own counter, and the script to its end; the
    lint read the value from before main's call (or main's own 0) and said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(tmp_path, f"set -e\n{script}echo REACHED\n")


@pytest.mark.parametrize(("script", "line"), [
    # setup's 0 at main's call, before run's counter: the chain's order is read
    ("setup() { n=0; }\nrun() { ((n++)); }\nmain() { setup; run; }\nmain\n", 4),
    ("n=5\nsetup() { n=0; }\nrun() { ((n++)); }\nmain() { setup; run; }\nmain\n", 5),
    # … and before main's own counter
    ("n=1\nsetup() { n=0; }\nmain() { setup; ((n++)); }\nmain\n", 5),
    # but not where it runs in a subshell, the background, or after the counter
    ("n=0\nsetup() { n=1; }\nmain() { ( setup ); ((n++)); }\nmain\n", 5),
    ("n=0\nsetup() { n=1; }\nmain() { setup | cat; ((n++)); }\nmain\n", 5),
    ("n=0\nsetup() { n=1; }\nmain() { ((n++)); setup; }\nmain\n", 5),
    ("n=0\nsetup() { local n=5; }\nmain() { setup; ((n++)); }\nmain\n", 5),
])
def test_a_zero_a_body_called_before_the_counter_set_stops_bash(tmp_path, script, line):
    """Bash stops on the counter at the line given (the lint said nothing on the first three:
    another body set `n` at the same script-level call, its order not kept)."""
    _bash_exits_and_the_lint_says(tmp_path, f"set -e\n{script}echo REACHED\n", [1, 1], line)


@pytest.mark.parametrize("piped", [
    "{ f; } | cat", "{ echo a; f; } 2>&1 | tee /dev/null", "{\n  f\n} | cat",
    "cat /dev/null | { f; }", "main() { cat /dev/null | { f; }; }\nmain",
])
def test_a_call_in_a_piped_group_sets_nothing_in_the_script(tmp_path, piped):
    """Bash runs the group in a pipeline's subshell: f's `n=0` never holds after it, `n`
    stays 1 and the script runs to its end; the lint read f's 0 after the group and said
    `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=1\nf() {{ n=0; }}\n{piped}\n((n++))\necho REACHED\n")


@pytest.mark.parametrize("piped", ["{ f; } | cat", "main() { { f; } 2>&1 | cat; }\nmain"])
def test_a_zero_left_as_a_piped_group_found_it_still_stops_bash(tmp_path, piped):
    """f's `n=1` is the subshell's: the script's `n` stays 0 and bash stops on the counter
    (the lint said nothing: the name in the group read as a call it could not place)."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, f"set -e\nn=0\nf() {{ n=1; }}\n{piped}\n((n++))\necho REACHED\n", "fail")


@pytest.mark.parametrize("call", ["eval f arg", "eval 'f x'", 'eval "f" x'])
def test_an_eval_of_a_call_with_arguments_is_a_call(tmp_path, call):
    """Bash's `eval` runs f (its arguments aside) with `n` at 0 and stops on its counter; the
    lint read `eval` with more than one word as no call and said nothing."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, f"set -e\nf() {{ ((n++)); }}\nn=0\n{call}\necho REACHED\n", "fail")


@pytest.mark.parametrize("call", ["eval f arg", "eval 'f x'"])
def test_an_eval_of_a_call_with_arguments_sets_what_the_body_sets_there(tmp_path, call):
    """f's `n=0` holds after the `eval`: bash stops on the counter (the lint kept f's `n=0`
    where its text is, before `n=1`, and said nothing)."""
    _counter_stops_bash_as_the_level_says(
        tmp_path, f"set -e\nn=0\nf() {{ n=0; }}\nn=1\n{call}\n((n++))\necho REACHED\n", "fail")


@pytest.mark.parametrize("body", [
    "set -e\nf() { ((n++)); }\nx=$(f)\necho ok\n",
    "set -e\nf() { echo a; ((n++)); }\nx=$(f)\necho ok\n",
])
def test_a_substituted_counter_of_a_variable_nothing_sets_stops_bash(tmp_path, body):
    """`n` is unset (0 in arithmetic): the substitution's status is 1 and bash stops at the
    assignment; the lint read the body's own `((n++))` as a word that may set `n` and said
    nothing."""
    _bash_exits_and_the_lint_says(tmp_path, body, [1, 1], 4)


@pytest.mark.parametrize("named", ["command f || true", "g() { return 0; f; }\ng"])
def test_a_body_named_only_where_bash_runs_no_body_never_counts(tmp_path, named):
    """`command f` skips the function and a call past a `return` bash always takes is never
    made: f's counter never runs and bash goes on; the lint judged it where its text is and
    said `fail`."""
    _bash_goes_on_and_the_lint_says_nothing(
        tmp_path, f"set -e\nn=0\nf() {{ ((n++)); }}\n{named}\necho REACHED\n")


@pytest.mark.parametrize("named", ["command f || true\nf", "g() { return 0; f; }\ng\nf",
                                   "trap f EXIT", "cmd=f\n$cmd"])
def test_a_body_also_run_elsewhere_still_counts(tmp_path, named):
    _counter_stops_bash_as_the_level_says(
        tmp_path, f"set -e\nn=0\nf() {{ ((n++)); }}\n{named}\necho REACHED\n", "fail")


@pytest.mark.parametrize("script", [
    'n=0\nsetup() { if [ -n "${X:-}" ]; then n=1; fi; }\nmain() { setup; ((n++)); }\nmain\n',
    'n=0\nsetup() { [ -n "${X:-}" ] && n=1; true; }\nmain() { setup; ((n++)); }\nmain\n',
    'setup() { [ -n "${X:-}" ] && n=0; true; }\nn=1\nmain() { setup; ((n++)); }\nmain\n',
    'n=0\nsetup() { [ -n "${X:-}" ] || return 0; n=1; }\nmain() { setup; ((n++)); }\nmain\n',
])
def test_a_body_that_sets_the_counter_on_some_runs_before_it_is_a_warning(tmp_path, script):
    """Bash stops on main's counter on one run only (setup sets `n` on the other): the lint
    said nothing, reading setup's value as not known at main's call of it."""
    _counter_stops_bash_as_the_level_says(tmp_path, f"set -e\n{script}echo REACHED\n", "warn")
