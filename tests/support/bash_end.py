"""The launcher lint held against real bash. `run_with_bash` runs a script with bash;
`said` is what the lint says about it (the checks and levels asked for); `runs_to_the_end`
checks bash runs a script to its end and the lint says nothing of those checks and levels
about it; `judged_as_bash` checks the lint fails a script exactly when bash ends it with a
status other than 0 (and, where a test says the line, at that line). Shared by the
test_launcher_lint_* modules that run real bash."""

from __future__ import annotations

import subprocess
from collections.abc import Collection
from pathlib import Path

from bot.core.launcher_lint import CHECK_ARITH_UNSET, CHECK_ARITH_ZERO, lint_launcher

#: The counter checks (`((n++))` from 0 under `set -e`, an unset counter under `set -u`).
COUNTER_CHECKS = (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET)
#: Only a failure.
FAIL = ("fail",)
#: Any level but `pass` (a warning as well as a failure).
NOT_PASS = ("fail", "warn")


def run_with_bash(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`script` written to `tmp_path/launch.sh` and run there by bash, with a plain PATH and
    in a session of its own (a `kill 0` in it reaches nothing else)."""
    (tmp_path / "launch.sh").write_text(script)
    return subprocess.run(["bash", "launch.sh"], capture_output=True, text=True, timeout=20,
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, start_new_session=True)


def said(script: str, checks: Collection[str] = COUNTER_CHECKS,
         levels: Collection[str] = FAIL) -> list[tuple[str, str, int | None]]:
    """(check, level, line) of each finding of the lint on `script` whose check is one of
    `checks` and whose level is one of `levels`."""
    return [(f.check, f.level, f.line) for f in lint_launcher(script)
            if f.check in checks and f.level in levels]


def runs_to_the_end(tmp_path: Path, body: str, checks: Collection[str] = COUNTER_CHECKS,
                    levels: Collection[str] = FAIL) -> None:
    """`#!/bin/bash` then `body`, run by bash in `tmp_path`, exits 0 printing `done` last, and
    the lint says nothing of `checks` at `levels` about it (by default: neither counter check
    fails any line of it)."""
    script = "#!/bin/bash\n" + body
    ran = run_with_bash(tmp_path, script)
    assert (ran.returncode, ran.stdout.split()[-1:]) == (0, ["done"]), ran
    assert said(script, checks, levels) == []


def judged_as_bash(tmp_path: Path, body: str, bash_fails: bool,
                   checks: Collection[str] = COUNTER_CHECKS,
                   levels: Collection[str] = FAIL, line: int | None = None) -> None:
    """`#!/bin/bash` then `body`: bash ends it with a status other than 0 exactly when
    `bash_fails`, and the lint says something of `checks` at `levels` about it exactly then (by
    default: a counter check fails a line of it); with `line`, a line of `body` (1 its first),
    what the lint says is of that line only (bash names no line where `set -e` stops it)."""
    script = "#!/bin/bash\n" + body
    ran = run_with_bash(tmp_path, script)
    assert (ran.returncode != 0) is bash_fails, ran
    found = said(script, checks, levels)
    assert bool(found) is bash_fails, found
    if line is not None:
        assert {at for _check, _level, at in found} == {line + 1}, found
