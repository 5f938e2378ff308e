"""Launcher lint: `$1` / `${2}` read under `set -u` when the recipe passes fewer arguments,
checked against real bash run with the recipe's args (as sbatch passes them to the script)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.core.launcher_lint import CHECK_POSITIONAL, ArgOverrides, lint_launcher

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


def _fix_of(script: str, args: list[str], overrides: ArgOverrides) -> str:
    (finding,) = [f for f in lint_launcher(script, None, args, overrides)
                  if f.check == CHECK_POSITIONAL]
    assert finding.level == "warn"
    return finding.fix


def test_the_fix_names_the_override_that_supplies_the_argument_as_bash_gets_it(tmp_path):
    """The fix's claim holds in real bash: the run given `steps=VALUE` (appended after the
    recipe's args, as submit does) reaches the end, and gets the word `steps=VALUE` as `$2`."""
    script = "#!/bin/bash\nset -euo pipefail\necho \"GOT[$2]\"\n"
    fix = _fix_of(script, ["a.yaml"], ArgOverrides("mix", ("steps",)))
    assert "the override `steps`" in fix and "`submit mix steps=VALUE`" in fix
    assert "gets the word `steps=VALUE` as `$2`" in fix and "`preflight mix steps=VALUE`" in fix
    assert "`${2:-VALUE}`" in fix  # a run without it still needs the recipe's own fix
    (tmp_path / "launch.sh").write_text(script)
    proc = subprocess.run(["bash", "launch.sh", "a.yaml", "steps=VALUE"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and "GOT[steps=VALUE]" in proc.stdout


def test_the_fix_counts_how_many_overrides_a_later_argument_needs():
    script = "#!/bin/bash\nset -u\necho $3\n"
    fix = _fix_of(script, ["a.yaml"], ArgOverrides("mix", ("steps", "lr", "tag")))
    assert "a run given 2 of them (e.g. `submit mix steps=VALUE lr=VALUE`)" in fix
    assert "gets the last as `$3`" in fix and "steps, lr, tag" in fix


def test_the_fix_says_when_the_overrides_cannot_reach_the_argument():
    script = "#!/bin/bash\nset -u\necho $4\n"
    fix = _fix_of(script, ["a.yaml"], ArgOverrides("mix", ("steps",)))
    assert "(steps) add at most 1, up to `$2`, so none supplies `$4`" in fix
    assert fix.endswith("add it to the recipe's `args`, or give it a default: `${4:-VALUE}`")
    # a recipe with no override that becomes an argument: only the recipe's own fix
    assert _fix_of(script, ["a.yaml"], ArgOverrides("mix", ())) == (
        "add it to the recipe's `args`, or give it a default: `${4:-VALUE}`")
