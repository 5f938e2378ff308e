"""The launcher lint on hostile input: deep nesting, unclosed quotes, many functions, a check
that raises. It never raises itself, and always reports every check."""

from __future__ import annotations

import re
import sys

import pytest

import bot.core.launcher_lint as lint
from bot.core.launcher_lint import (
    CHECK_EMPTY_MATCH,
    CHECK_JIT_CC,
    CHECK_POINTER,
    MAX_DEPTH,
    lint_launcher,
)
from bot.core.shell_lexer import skip_quoted, split_top_level

DEPTH = 20_000  # far past Python's recursion limit (1,000)

NESTED = {
    "command substitution": "X=" + "$(" * DEPTH + "ls ck/*" + ")" * DEPTH,
    "subshell": "(" * DEPTH + "ls ck/*" + ")" * DEPTH,
    "brace group": "{ " * DEPTH + "ls ck/*; " + "} " * DEPTH,
    "function body": "f() { " * DEPTH + "ls ck/*; " + "}; " * DEPTH + "f",
    "quoted substitution": "X=" + '"$(' * DEPTH + "ls ck/*" + ')"' * DEPTH,
    "backticks in substitutions": "X=" + "$(`" * DEPTH + "ls" + "`)" * DEPTH,
    "arithmetic": "X=" + "$((" * DEPTH + "1" + "))" * DEPTH,
    "unclosed": "X=" + "$( \"'`{(" * DEPTH,
}


@pytest.mark.parametrize("shape", sorted(NESTED))
def test_deep_nesting_never_raises_and_every_check_reports(shape):
    script = "#!/bin/bash\nset -euo pipefail\n" + NESTED[shape] + "\necho done\n"
    assert sys.getrecursionlimit() < DEPTH
    findings = lint_launcher(script)
    checks = {f.check for f in findings}
    assert {CHECK_EMPTY_MATCH, CHECK_JIT_CC, CHECK_POINTER} <= checks
    assert not any("could not read the script" in f.message for f in findings)


def test_nesting_past_the_cap_is_reported_as_not_checked():
    script = "#!/bin/bash\nset -e\n" + "( " * (MAX_DEPTH + 5) + "ls ck/*" + ")" * (MAX_DEPTH + 5)
    notes = [f for f in lint_launcher(script) if "nesting deeper" in f.message]
    assert len(notes) == 1 and notes[0].level == "pass" and notes[0].line == 3


def test_nesting_within_the_cap_is_still_analysed():
    script = ("#!/bin/bash\nset -euo pipefail\nmkdir -p ck\n"
              + "( " * 10 + "ls -d ck/step_* | tail -1" + ")" * 10 + "\n")
    levels = [f.level for f in lint_launcher(script) if f.check == CHECK_EMPTY_MATCH]
    assert "warn" in levels


def test_the_lexer_skips_deep_nesting_without_recursion():
    text = "$(" * DEPTH + ")" * DEPTH + " after"
    assert skip_quoted(text, 0) == 3 * DEPTH
    pieces = split_top_level("(" * DEPTH + ")" * DEPTH + "; b", 0, (";",))
    assert [p.strip() for p, _o, _op in pieces][1] == "b"


def test_many_one_line_functions_are_each_read_once(monkeypatch):
    # 32k one-line functions took 118 s when each rescanned the whole text for `set -e`
    script = "#!/bin/bash\nset -e\n" + "".join(f"f{i}() {{ ls ck/*; }}\n" for i in range(3000))
    script += "f7\n"
    scans = []
    real = re.search

    def counting_search(pattern, string, *args, **kwargs):
        scans.append(len(string))
        return real(pattern, string, *args, **kwargs)

    monkeypatch.setattr(re, "search", counting_search)
    findings = lint_launcher(script)
    whole_text_scans = sum(1 for n in scans if n >= len(script) // 2)
    assert whole_text_scans < 10
    hits = [f for f in findings if f.check == CHECK_EMPTY_MATCH and f.line is not None]
    assert [f.line for f in hits] == [10]  # only the function that is called: f7


def test_a_check_that_raises_becomes_a_warning_and_the_others_still_run(monkeypatch):
    def boom(*_args, **_kwargs):
        raise IndexError("list index out of range")

    monkeypatch.setattr(lint, "check_pointer", boom)
    monkeypatch.setattr(lint, "check_empty_match", boom)
    findings = lint_launcher("#!/bin/bash\nset -e\nsrun python train.py --compile\n")
    by_check = {f.check: f for f in findings}
    for check in (CHECK_POINTER, CHECK_EMPTY_MATCH):
        assert by_check[check].level == "warn"
        assert "IndexError: list index out of range" in by_check[check].message
    assert "toolchain probe" in by_check[CHECK_JIT_CC].message  # the JIT check still ran


def test_a_lexer_failure_is_reported_for_every_check(monkeypatch):
    def boom(_text):
        raise ValueError("no quote or substitution starts at 'x'")

    monkeypatch.setattr(lint, "strip_comments", boom)
    script = "#!/bin/bash\nsrun python train.py\n"
    findings = lint_launcher(script)
    crashed = {f.check for f in findings if "could not read the script" in f.message}
    assert crashed == {CHECK_EMPTY_MATCH, lint.CHECK_ARITH_ZERO, lint.CHECK_ARITH_UNSET,
                       lint.CHECK_ARITH_ERROR, lint.CHECK_NOUNSET,
                       lint.CHECK_INTERACTIVE, CHECK_JIT_CC, CHECK_POINTER,
                       lint.CHECK_SBATCH_AFTER_COMMAND, lint.CHECK_SBATCH_INDENTED,
                       lint.CHECK_SBATCH_OWN_ERROR, lint.CHECK_TEE_HIDES_STATUS,
                       lint.CHECK_EXIT_TRAP, lint.CHECK_POSITIONAL}
    assert all(f.level == "warn" for f in findings if f.check in crashed)
    assert lint.python_scripts_in(script) == ["train.py"]


def test_an_arithmetic_check_that_raises_is_reported_under_each_of_its_ids(monkeypatch):
    def boom(*_args):
        raise ValueError("bad offset")

    monkeypatch.setattr(lint, "check_arith", boom)
    findings = lint_launcher("#!/bin/bash\nset -u\n((n++))\n")
    crashed = {f.check for f in findings if "could not read the script" in f.message}
    assert crashed == {lint.CHECK_ARITH_ZERO, lint.CHECK_ARITH_UNSET, lint.CHECK_ARITH_ERROR}
