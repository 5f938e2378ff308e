"""Launcher lint: `$1` / `${2}` read under `set -u` when the recipe passes fewer arguments,
checked against real bash run with the recipe's args (as sbatch passes them to the script)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.core.launcher_lint import CHECK_POSITIONAL, lint_launcher

CASES = [
    # (snippet, the recipe's args, does bash stop?, the lint's level)
    ("set -u\nCFG=$1", [], True, "warn"),
    ("set -euo pipefail\nCFG=$1\necho run ${2}", ["a.yaml"], True, "warn"),
    ("set -euo pipefail\nCFG=$1\necho run ${2}", ["a.yaml", "b"], False, "pass"),
    # an `if` condition is no guard for an unbound variable
    ('set -u\nif [ "$1" = resume ]; then echo resuming; fi', [], True, "warn"),
    # after `shift` the same `$1` is the next argument
    ("set -u\nshift\necho $1", ["a"], True, "warn"),
    ("set -u\nshift\necho $1", ["a", "b"], False, "pass"),
    # defaults, single quotes, escapes, a function's own arguments, no nounset
    ("set -u\nCFG=${1:-a.yaml}\nN=${2-1}", [], False, "pass"),
    ("set -u\nawk '{print $1}' /dev/null\necho \\$1", [], False, "pass"),
    ("set -u\nf() { echo $1; }\nf x", [], False, "pass"),
    ("CFG=$1\nset -u", [], False, "pass"),
    # the script checks its argument count itself: its own message, not the lint's
    ("set -u\nif [ $# -lt 1 ]; then echo usage; exit 2; fi\nCFG=$1", [], True, "pass"),
]


@pytest.mark.parametrize(("snippet", "args", "bash_stops", "level"), CASES)
def test_positional_under_nounset_against_real_bash(tmp_path, snippet, args, bash_stops, level):
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    script = "#!/bin/bash\n" + snippet + "\n"
    (tmp_path / "launch.sh").write_text(script + "echo REACHED_THE_END\n")
    proc = subprocess.run([bash, "launch.sh", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
    stopped = "REACHED_THE_END" not in proc.stdout
    assert stopped == bash_stops, f"bash itself disagrees with the table: {proc.stderr}"
    levels = {f.level for f in lint_launcher(script, None, args) if f.check == CHECK_POSITIONAL}
    assert ("warn" if "warn" in levels else "pass") == level


def test_message_names_the_argument_the_args_and_the_fix():
    script = "#!/bin/bash\nset -euo pipefail\nCFG=$1\nsrun python train.py $CFG ${2}\n"
    (finding,) = [f for f in lint_launcher(script, None, ["a.yaml"])
                  if f.check == CHECK_POSITIONAL]
    assert finding.level == "warn" and finding.line == 4
    assert "`${2}` under `set -u` (line 2)" in finding.message
    assert "passes 1 argument (`args`: a.yaml)" in finding.message
    assert "`$2: unbound variable`" in finding.message and "FAILED 1:0" in finding.message
    assert "`${2:-VALUE}`" in finding.fix


def test_unknown_args_are_only_noted():
    # a submit_command recipe: its wrapper, not sbatch, decides what the script gets
    script = "#!/bin/bash\nset -u\nCFG=$1\n"
    findings = [f for f in lint_launcher(script) if f.check == CHECK_POSITIONAL]
    assert [f.level for f in findings] == ["pass"]
    assert "not known here" in findings[0].message
