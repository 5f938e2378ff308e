"""Launcher lint: the reports' launchers fail, their fixed forms pass, and the empty-match
verdict agrees with what real bash does with the same snippet in a directory with no checkpoint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.core.findings import worst_level
from bot.core.launcher_lint import (
    CHECK_ARITH_ERROR,
    CHECK_ARITH_ZERO,
    CHECK_EMPTY_MATCH,
    CHECK_INTERACTIVE,
    CHECK_JIT_CC,
    CHECK_POINTER,
    CHECK_STRICT_MODE,
    CHECK_TEE_HIDES_STATUS,
    lint_launcher,
    python_scripts_in,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "launchers"


def _levels(script: str, check: str) -> list[str]:
    return [f.level for f in lint_launcher(script) if f.check == check]


def _fails(script: str, check: str = CHECK_EMPTY_MATCH) -> bool:
    return "fail" in _levels(script, check)


def _reports(script: str) -> bool:
    """Does the empty-match check name a statement (at any level: how sure it is that the stop
    matters is a separate question, see the severity tests)?"""
    return any(
        f.check == CHECK_EMPTY_MATCH and f.line is not None for f in lint_launcher(script)
    )


def test_report_108687_launcher_fails_on_the_ls_line_with_the_guard_as_fix():
    script = (FIXTURES / "report_108687.sbatch").read_text()
    fails = [f for f in lint_launcher(script) if f.level == "fail"]
    assert [f.check for f in fails] == [CHECK_EMPTY_MATCH]
    assert fails[0].line == 10
    assert "`ls`" in fails[0].message and "pipefail" in fails[0].message
    assert "2>/dev/null || true" in fails[0].fix


def test_report_108687_fixed_launcher_passes():
    script = (FIXTURES / "report_108687_fixed.sbatch").read_text()
    assert worst_level(lint_launcher(script)) == "pass"


# (snippet, does bash stop before the end?) — run in a dir with an empty `ck/` and a log.txt
# without "nan". The lint must name the statement exactly when bash stops.
BASH_CASES = [
    ("set -euo pipefail\nLATEST=$(ls -d ck/checkpoint_step_* | sed s/x// | sort | tail -1)", True),
    ("set -euo pipefail\n"
     "LATEST=$({ ls -d ck/checkpoint_step_* 2>/dev/null || true; } | sed s/x// | sort | tail -1)",
     False),
    ("set -e\nLATEST=$(ls -d ck/checkpoint_step_* | sort | tail -1)", False),
    ("set -e\nLATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("set -o errexit\nset -o pipefail\nLATEST=$(ls -d ck/checkpoint_step_* | tail -1)", True),
    ("set -euo pipefail\nls ck/*.pt | head -1", True),
    ("set -euo pipefail\nN=$(grep -c nan log.txt)", True),
    ("set -euo pipefail\nN=$(grep -c nan log.txt || true)", False),
    ("set -euo pipefail\nif LATEST=$(ls -d ck/c_*); then :; fi", False),
    ("set -euo pipefail\nshopt -s nullglob\nLATEST=$(ls -d ck/checkpoint_step_* | tail -1)", False),
    ("set -euo pipefail\nf() { local x=$(ls ck/*); echo \"$x\"; }\nf", False),
    ("set -euo pipefail\nLATEST=$(find ck/missing -name '*.pt' | head -1)", True),
    ("set -euo pipefail\n[ -d ck ] && ls ck/*.pt", True),
    ("set -euo pipefail\nls ck/*.pt && echo found", False),
    ("set -euo pipefail\necho \"latest: $(ls -d ck/checkpoint_step_* | tail -1)\"", False),
    ("LATEST=$(ls ck/*)", False),
    ("set -euo pipefail\nlatest() { ls -d ck/checkpoint_step_* | tail -1; }\nL=$(latest)", True),
    ("set -euo pipefail\nL=$(ls -d ck/checkpoint_step_* 2>/dev/null | tail -1) || L=''", False),
    ("set -euo pipefail\nLATEST=$(ls -d ck/checkpoint_step_* \\\n  | sort | tail -1)", True),
    ("set -euo pipefail\nCOUNT=$(cat ck/*.txt | wc -l)", True),
    ("set -euo pipefail\nLATEST=`ls -d ck/checkpoint_step_* | tail -1`", True),
    ("set -euo pipefail\n# LATEST=$(ls -d ck/checkpoint_step_* | tail -1)\necho ok", False),
    ("#!/bin/bash -e\nLATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("set -euo pipefail\nLATEST=$(ls -d ck/c_* | tail -1) ||\n  LATEST=''", False),
    ("set -euo pipefail\nls ck/*.pt |\n  head -1", True),
    ("set -euo pipefail\nexport LATEST=$(ls ck/*)", False),
    ("set -euo pipefail\ncat > /dev/null <<EOF\nls ck/*.pt | head\nEOF", False),
    ("set -euo pipefail\ncat > /dev/null <<-'EOF'\n\tgrep nan log.txt\n\tEOF\necho after",
     False),
    ("set -euo pipefail\nif [ -d ck ]\nthen\n  L=$(ls ck/*.pt)\nfi", True),
    # every list of an `if` condition is exempt from errexit, not just the first
    ("set -euo pipefail\nif\n  N=$(ls -d ck/checkpoint_step_* | tail -1)\n  [ -n \"$N\" ]\n"
     "then echo \"$N\"; fi", False),
    ("set -euo pipefail\nif N=$(ls -d ck/checkpoint_step_* | tail -1); [ -n \"$N\" ]; then\n"
     "  echo \"$N\"\nfi", False),
    # … while a `set` in it holds, as anywhere in the script's shell
    ("set -e\nif\n  set +e\n  true\nthen echo off; fi\nLATEST=$(ls -d ck/checkpoint_step_*)",
     False),
    # … as is every list of a `while` / `until` condition, up to `do`
    ("set -euo pipefail\nwhile read -r line; L=$(ls -d ck/checkpoint_step_* | tail -1); do\n"
     "  echo \"$L\"\ndone < log.txt", False),
    ("set -euo pipefail\nwhile\n  echo checking\n  N=$(ls -d ck/checkpoint_step_* | tail -1)\n"
     "do echo \"$N\"; done", False),
    ("set -euo pipefail\nuntil echo checking; ls ck/*.pt > /dev/null; [ -d ck ]; do sleep 1; done",
     False),
    ("set -e\nwhile\n  set +e\n  false\ndo :; done\nLATEST=$(ls -d ck/checkpoint_step_*)", False),
    # … but not its body, a `for` loop in it or not
    ("set -euo pipefail\nwhile read -r line; [ -n \"$line\" ]; do\n"
     "  L=$(ls -d ck/checkpoint_step_*)\ndone < log.txt", True),
    ("set -euo pipefail\nwhile read -r line; [ -n \"$line\" ]; do\n"
     "  for f in a; do echo $f; done\n  L=$(ls -d ck/checkpoint_step_*)\ndone < log.txt", True),
    # a loop's body runs pass after pass: a `set` at its end holds in the next pass
    ("for i in 1 2; do LATEST=$(ls -d ck/checkpoint_step_*); set -e; done", True),
    ("i=0\nwhile [ $i -lt 2 ]; do LATEST=$(ls -d ck/checkpoint_step_*); i=$((i+1)); set -e; done",
     True),
    ("i=0\nuntil [ $i -ge 2 ]; do\n  LATEST=$(ls -d ck/checkpoint_step_*)\n  i=$((i+1))\n"
     "  set -e\ndone", True),
    ("for i in 1 2; do LATEST=$(ls -d ck/checkpoint_step_*); if [ $i = 1 ]; then set -e; fi; done",
     True),
    ("set -e\nfor i in 1 2; do LATEST=$(ls ck/*.pt | tail -1); set -o pipefail; done", True),
    ("set -euo pipefail\nshopt -s nullglob\nfor i in 1 2; do\n"
     "  LATEST=$(ls -d ck/checkpoint_step_* | tail -1)\n  shopt -u nullglob\ndone", True),
    ("for a in 1 2; do\n  for b in 1 2; do LATEST=$(ls -d ck/checkpoint_step_*); done\n"
     "  set -e\ndone", True),
    ("for a in 1; do\n  for b in 1 2; do LATEST=$(ls -d ck/checkpoint_step_*); set -e; done\n"
     "done", True),
    # … and a `set` before the command in every pass holds there
    ("set -e\nfor i in 1 2; do set +e; LATEST=$(ls -d ck/checkpoint_step_*); set -e; done",
     False),
    # a compound command before `&&` / `||` is not stopped by `set -e` (bash reads every
    # command of an and-or list but the last so); the last one is
    ("set -e\nif true; then LATEST=$(ls -d ck/checkpoint_step_*); echo after; fi || true",
     False),
    ("set -e\nfor i in 1; do LATEST=$(ls -d ck/checkpoint_step_*); done && echo ok", False),
    ("set -e\ncase x in *) LATEST=$(ls -d ck/checkpoint_step_*) ;; esac || echo failed", False),
    ("set -e\nwhile true; do LATEST=$(ls -d ck/checkpoint_step_*); break; done || true", False),
    ("set -e\ntrue && if true; then LATEST=$(ls -d ck/checkpoint_step_*); fi || true", False),
    ("set -e\ntrue && if true; then LATEST=$(ls -d ck/checkpoint_step_*); fi", True),
    ("set -euo pipefail\nfor f in $(ls ck/*.pt); do echo $f; done", False),
    ("set -euo pipefail\nwhile read -r f; do echo $f; done < <(ls ck/*.pt)", False),
    # a subshell's `set` stays in it, a `case` in the subshell or not: its patterns' `)` end
    # nothing, whether the `set` is in a case branch or after the `esac`
    ("set -e\n( case \"$PWD\" in\n    /no) echo no ;;\n  esac\n  set +e\n)\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("set -e\n( case \"$PWD\" in /no) set +e ;; *) set +e ;; esac; echo in )\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("( case \"$PWD\" in\n    /no) echo no ;;\n  esac\n  set -e\n)\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    # … and a case at the script's level opens or closes no subshell
    ("set -e\ncase \"$PWD\" in\n  /no) echo no ;;\nesac\n( set +e )\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("set -e\ncase \"$PWD\" in /no) echo no ;; esac\nset +e\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    # a `set` on a case pattern's line runs in the script's shell: it holds after the `esac`
    ("set -e\ncase \"$PWD\" in /no) set +e ;; *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    ("case \"$PWD\" in *) set -e ;; esac\nLATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("case \"$PWD\" in (/no|*) set -e ;; esac\nLATEST=$(ls -d ck/checkpoint_step_*)", True),
    ("set -e\ncase \"$PWD\" in\n  /no)\n    set +e\n    ;;\n  *) set +e\n    echo off ;;\nesac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    # bash runs one branch: each starts from the options at the `case`, not from the branch
    # written before it
    ("set -e\ncase \"$PWD\" in /no) set +e ;; *) LATEST=$(ls -d ck/checkpoint_step_*) ;; esac",
     True),
    ("set -eo pipefail\ncase \"$PWD\" in\n  /no) set +e ;;\n"
     "  *) LATEST=$(ls ck/*.pt | tail -1) ;;\nesac", True),
    ("case \"$PWD\" in /no) set -e ;; *) LATEST=$(ls -d ck/checkpoint_step_*) ;; esac", False),
    # … but not out of a subshell it is in
    ("set -e\n(\n  case \"$PWD\" in\n    *) set +e ;;\n  esac\n)\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", True),
    # … and the command on a pattern's line is read as one on a line of its own
    ("set -e\ncase \"$PWD\" in\n  *) LATEST=$(ls -d ck/checkpoint_step_*) ;;\nesac", True),
    # bash's `;&` (fall through) and `;;&` end a branch as `;;` does; after `;&` the next
    # branch's commands run too
    ("set -e\ncase \"$PWD\" in\n  /no) echo no ;&\n  *) set +e ;;\nesac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    ("set -e\ncase \"$PWD\" in /no) echo no ;& *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    ("set -e\ncase \"$PWD\" in /no) echo no ;;& *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    ("set -e\ncase \"$PWD\" in\n  *) echo first ;&\n"
     "  /no) LATEST=$(ls -d ck/checkpoint_step_*) ;;\nesac", True),
    # a pattern with parentheses: a command substitution, quoted or not, an extglob group
    ("set -e\ncase \"$PWD\" in\n  \"$(hostname)\"|*) set +e ;;\nesac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
    ("set -e\ncase \"$PWD\" in\n  $(hostname)|*) LATEST=$(ls -d ck/checkpoint_step_*) ;;\nesac",
     True),
    ("set -e\nshopt -s extglob\ncase \"$PWD\" in\n  @(/no|*)) set +e ;;\nesac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", False),
]


#: Launchers whose `case` or `if` takes the branch `$BRANCH` says, and the values bash is run
#: with: the lint cannot know which branch runs, so it warns when bash stops for one of them.
BRANCH_CASES = [
    # past `esac` the options of any branch may hold: here one keeps `set -e` on …
    ("set -e\ncase \"$BRANCH\" in /no) echo no ;; *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("/no", "x"), True),
    ("set -e\ncase \"$BRANCH\" in\n  /no)\n    echo no\n    ;;\n  *) set +e\n    echo off ;;\n"
     "esac\nLATEST=$(ls -d ck/checkpoint_step_*)", ("/no", "x"), True),
    # … here none does, or no branch at all runs
    ("set -e\ncase \"$BRANCH\" in a) set +e ;; *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), False),
    ("set -e\ncase \"$BRANCH\" in a) set +e ;; esac\nLATEST=$(ls -d ck/checkpoint_step_*)",
     ("a", "x"), True),
    ("case \"$BRANCH\" in a) set -e ;; esac\nLATEST=$(ls -d ck/checkpoint_step_*)",
     ("a", "x"), True),
    # nullglob on in one branch only: the glob may stay itself
    ("set -euo pipefail\ncase \"$BRANCH\" in a) shopt -s nullglob ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_* | tail -1)", ("a", "x"), True),
    ("set -euo pipefail\ncase \"$BRANCH\" in a) shopt -s nullglob ;; *) shopt -s nullglob ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_* | tail -1)", ("a", "x"), False),
    # a branch after `;&` runs after the previous one or on its own pattern's match
    ("set -e\ncase \"$BRANCH\" in a) set +e ;& b) LATEST=$(ls -d ck/checkpoint_step_*) ;; esac",
     ("a", "b"), True),
    ("case \"$BRANCH\" in a) set -e ;& b) LATEST=$(ls -d ck/checkpoint_step_*) ;; esac",
     ("a", "b"), True),
    ("set -e\ncase \"$BRANCH\" in a) set +e ;& *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), False),
    # after `;;&` the next patterns are tested: a `*` branch runs every time
    ("set -e\ncase \"$BRANCH\" in a) echo a ;;& *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), False),
    ("set -e\ncase \"$BRANCH\" in a) echo a ;;& b) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "b"), True),
    # nested: the inner case's way out is the outer branch's end
    ("set -e\ncase \"$BRANCH\" in\n  a) case \"$BRANCH\" in a) set +e ;; *) set +e ;; esac ;;\n"
     "  *) set +e ;;\nesac\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), False),
    ("set -e\ncase \"$BRANCH\" in\n  a) case \"$BRANCH\" in b) set +e ;; esac ;;\n"
     "  *) set +e ;;\nesac\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    # `if` / `else`: each branch starts from the options after the condition …
    ("set -e\nif [ \"$BRANCH\" = a ]; then set +e; else LATEST=$(ls -d ck/checkpoint_step_*); fi",
     ("a", "x"), True),
    ("set -eo pipefail\nif [ \"$BRANCH\" = a ]; then\n  set +e\nelse\n"
     "  LATEST=$(ls -d ck/checkpoint_step_* | tail -1)\nfi", ("a", "x"), True),
    # … and past `fi` the options of either may hold
    ("set -e\nif [ \"$BRANCH\" = a ]; then echo a; else set +e; fi\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("set -e\nif [ \"$BRANCH\" = a ]; then set +e; else set +e; fi\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), False),
    # without an `else` the options at the `if` may pass through unchanged
    ("set -e\nif [ \"$BRANCH\" = a ]; then set +e; fi\nLATEST=$(ls -d ck/checkpoint_step_*)",
     ("a", "x"), True),
    ("if [ \"$BRANCH\" = a ]; then set -e; fi\nLATEST=$(ls -d ck/checkpoint_step_*)",
     ("a", "x"), True),
    ("set -euo pipefail\nif [ \"$BRANCH\" = a ]; then\n  shopt -s nullglob\nfi\n"
     "LATEST=$(ls -d ck/checkpoint_step_* | tail -1)", ("a", "x"), True),
    # an `elif` chain: a branch does not start from the one written before it
    ("set -e\nif [ \"$BRANCH\" = a ]; then set +e\nelif [ \"$BRANCH\" = b ]; then\n"
     "  LATEST=$(ls -d ck/checkpoint_step_*)\nfi", ("a", "b"), True),
    ("set -e\nif [ \"$BRANCH\" = a ]; then set +e\nelif [ \"$BRANCH\" = b ]; then set +e\n"
     "else set +e\nfi\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "b", "x"), False),
    ("set -e\nif [ \"$BRANCH\" = a ]; then set +e\nelif [ \"$BRANCH\" = b ]; then set +e\n"
     "fi\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "b", "x"), True),
    # an `if` in a case branch: its way out is the branch's end
    ("set -e\ncase \"$BRANCH\" in\n  a) if [ -n \"$BRANCH\" ]; then set +e; else set +e; fi ;;\n"
     "  *) set +e ;;\nesac\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), False),
    ("set -e\ncase \"$BRANCH\" in\n  a) if [ \"$BRANCH\" = b ]; then set +e; fi ;;\n"
     "  *) set +e ;;\nesac\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    # a loop's body may run or not: past `done` the options of either may hold
    ("set -e\nwhile [ \"$BRANCH\" = a ]; do set +e; BRANCH=x; done\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("set -e\nfor f in $BRANCH; do set +e; done\nLATEST=$(ls -d ck/checkpoint_step_*)",
     ("a", ""), True),
    # … and runs any number of times: a `set -e` at its end holds from its second pass on
    ("for i in $BRANCH; do LATEST=$(ls -d ck/checkpoint_step_*); set -e; done", ("1", "1 2"),
     True),
    # a compound command after `&&` / `||` runs or not, its branches alternatives as anywhere
    ("set -e\n[ \"$BRANCH\" = a ] && if true; then set +e; fi\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("set -e\n[ \"$BRANCH\" = a ] && if true; then set +e; else set +e; fi\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("set -e\n[ \"$BRANCH\" = a ] || case \"$BRANCH\" in *) set +e ;; esac\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("set -e\n[ \"$BRANCH\" = a ] && for f in x; do set +e; done\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("[ \"$BRANCH\" = a ] && while [ -z \"$X\" ]; do set -e; X=1; done\n"
     "LATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    # … as does a group or a `set` there
    ("set -e\n[ \"$BRANCH\" = a ] || { echo b; set +e; }\nLATEST=$(ls -d ck/checkpoint_step_*)",
     ("a", "x"), True),
    ("[ \"$BRANCH\" = a ] && { set -e; }\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"),
     True),
    ("[ \"$BRANCH\" = a ] && set -e\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
    ("set -e\n[ \"$BRANCH\" = a ] || set +e\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"),
     True),
    # an `if` in an `if` branch
    ("set -e\nif [ -n \"$BRANCH\" ]; then\n  if [ \"$BRANCH\" = a ]; then set +e; fi\n"
     "else set +e\nfi\nLATEST=$(ls -d ck/checkpoint_step_*)", ("a", "x"), True),
]


def _bash_stops(tmp_path: Path, snippet: str, env: dict[str, str] | None = None) -> bool:
    """Does real bash stop before the end of `snippet`, run as sbatch runs a launcher?"""
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    (tmp_path / "ck").mkdir(exist_ok=True)
    (tmp_path / "log.txt").write_text("iter 1 loss 0.9\n")
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END\n")
    script.chmod(0o755)
    # sbatch executes the file, so a shebang's flags (`#!/bin/bash -e`) apply
    argv = [str(script)] if snippet.startswith("#!") else [bash, str(script)]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=20,
                          env={**os.environ, **(env or {})})
    return "REACHED_THE_END" not in proc.stdout


@pytest.mark.parametrize(("snippet", "bash_stops"), BASH_CASES)
def test_empty_match_verdict_agrees_with_real_bash(tmp_path, snippet, bash_stops):
    assert _bash_stops(tmp_path, snippet) == bash_stops, "bash itself disagrees with the table"
    assert _reports(snippet) == bash_stops


@pytest.mark.parametrize(("snippet", "branches", "bash_may_stop"), BRANCH_CASES)
def test_after_a_case_or_if_the_empty_match_verdict_holds_for_any_branch_bash_may_take(
    tmp_path, snippet, branches, bash_may_stop
):
    stops = [_bash_stops(tmp_path, snippet, {"BRANCH": b}) for b in branches]
    assert any(stops) == bash_may_stop, f"bash itself disagrees with the table: {stops}"
    assert _reports(snippet) == bash_may_stop


def test_line_numbers_point_at_the_failing_statement():
    script = "#!/bin/bash\nset -euo pipefail\n\necho start\nN=$(grep -c nan log.txt)\n"
    (finding,) = [f for f in lint_launcher(script)
                  if f.check == CHECK_EMPTY_MATCH and f.line is not None]
    assert finding.line == 5
    assert "grep" in finding.message


def test_flex_attention_without_cc_is_a_note_for_the_probe_and_with_cc_exported_passes():
    # a note, not a warning: whether the worker has gcc is not in the script, the toolchain
    # probe gives the verdict (after_toolchain_probe)
    bad = (FIXTURES / "flex_no_cc.sbatch").read_text()
    good = (FIXTURES / "flex_with_cc.sbatch").read_text()
    (finding,) = [f for f in lint_launcher(bad) if f.check == CHECK_JIT_CC]
    assert finding.level == "pass" and finding.message.startswith("note: ")
    assert "not in the script" in finding.message and "toolchain probe" in finding.message
    assert "--compile" in finding.message or "flex" in finding.message
    assert "gcc_linux-64" in finding.fix and "CC=" in finding.fix
    assert _levels(good, CHECK_JIT_CC) == ["pass"]


def test_jit_use_found_in_the_python_file_the_launcher_runs():
    script = "#!/bin/bash\nset -e\nsrun python train.py --config a.yaml\n"
    assert python_scripts_in(script) == ["train.py"]
    src = "import torch\nmodel = torch.compile(model)\n"
    assert _levels(script, CHECK_JIT_CC) == ["pass"]
    findings = lint_launcher(script, python_sources={"train.py": src})
    (jit,) = [f for f in findings if f.check == CHECK_JIT_CC]
    assert jit.level == "pass" and jit.message.startswith("note: ") and "train.py" in jit.message


def test_cc_without_cxx_warns_and_a_compiler_module_or_container_counts_as_a_compiler():
    cc_only = "set -e\nexport CC=/usr/bin/gcc\npython t.py --compile\n"
    assert _levels(cc_only, CHECK_JIT_CC) == ["warn"]
    module = "set -e\nmodule load gcc/12\npython t.py --compile\n"
    assert _levels(module, CHECK_JIT_CC) == ["pass"]
    image = "set -e\nsrun --container-image=nvcr.io/nvidia/pytorch:24.01 python t.py --compile\n"
    assert _levels(image, CHECK_JIT_CC) == ["pass"]
    inline = "set -e\nCC=gcc CXX=g++ python t.py --compile\n"
    assert _levels(inline, CHECK_JIT_CC) == ["pass"]


def test_blank_lines_and_indentation_before_export_or_source_are_still_read():
    # the patterns that find `export CC CXX` and `. file` read only the blanks of their own line
    # (they read every blank line below each line start: quadratic in a block of blank lines);
    # a line start below the blank lines finds them as before
    exported = "set -e\nexport CC=gcc\n\n  \n\t export CXX\npython t.py --compile\n"
    assert _levels(exported, CHECK_JIT_CC) == ["pass"]
    assert _levels("set -e\nexport CC=gcc\n\n  \npython t.py --compile\n", CHECK_JIT_CC) == [
        "warn"]
    sourced = "set -e\nif true; then\n\n  \n\t. ./env.sh\nfi\n((n++))\npython t.py\n"
    assert _levels(sourced, CHECK_ARITH_ZERO) == ["pass"]  # env.sh may set n
    assert _levels("set -e\n\n  \n((n++))\npython t.py\n", CHECK_ARITH_ZERO) == ["fail"]


def test_pointer_read_without_existence_check_fails_and_checked_passes():
    bad = (FIXTURES / "pointer_unchecked.sbatch").read_text()
    good = (FIXTURES / "pointer_checked.sbatch").read_text()
    (finding,) = [f for f in lint_launcher(bad) if f.check == CHECK_POINTER]
    assert finding.level == "fail" and finding.line == 6
    assert "[ -f" in finding.fix
    assert _levels(good, CHECK_POINTER) == ["pass"]


@pytest.mark.parametrize(
    ("script", "fails"),
    [
        ("R=$(< ck/latest_checkpoint.txt)", True),
        ("test -e ck/latest_checkpoint.txt && R=$(< ck/latest_checkpoint.txt)", False),
        ("[[ -s \"${CK}/latest_checkpoint.txt\" ]] && R=$(cat \"$CK/latest_checkpoint.txt\")",
         False),
        ("read -r R < ck/latest_checkpoint.txt", True),
        ("R=$(cat ck/latest_checkpoint.txt 2>/dev/null || true)", False),
        ("R=$(cat configs/notes.txt)", False),
        # a check for a different file does not count
        ("[ -f ck/other.txt ] && R=$(cat ck/latest_checkpoint.txt)", True),
    ],
)
def test_pointer_read_patterns(script, fails):
    assert _fails(script, CHECK_POINTER) == fails


def test_every_check_reports_even_when_nothing_is_wrong():
    checks = {f.check for f in lint_launcher("#!/bin/bash\necho hi\n")}
    assert {CHECK_EMPTY_MATCH, CHECK_JIT_CC, CHECK_POINTER} <= checks
    assert worst_level(lint_launcher("#!/bin/bash\necho hi\n")) == "pass"


def test_shellcheck_output_becomes_findings_with_levels_from_severity():
    from bot.probes.shellcheck import parse_shellcheck_json

    out = (
        '[{"line":3,"level":"error","code":1072,"message":"Expected end of $(..)"},'
        '{"line":5,"level":"warning","code":2034,"message":"X appears unused."},'
        '{"line":7,"level":"info","code":2012,"message":"Use find instead of ls"}]'
    )
    findings = parse_shellcheck_json(out)
    assert [(f.check, f.level, f.line) for f in findings] == [
        ("shellcheck:SC1072", "fail", 3),
        ("shellcheck:SC2034", "warn", 5),
    ]
    assert len(parse_shellcheck_json(out, min_severity="info")) == 3


def test_shellcheck_runs_on_a_broken_launcher_when_installed():
    from bot.probes.shellcheck import run_shellcheck

    if shutil.which("shellcheck") is None:
        assert run_shellcheck("echo hi\n") is None
        return
    findings = run_shellcheck("#!/bin/bash\necho $(ls *.txt\n")
    assert findings is not None
    assert any(f.level == "fail" and f.check.startswith("shellcheck:SC1") for f in findings)


@pytest.mark.parametrize(("branches", "pipe", "mode"), [
    # pipefail on after one branch only: the messages say what is certain …
    ("a) set -o pipefail ;;", "", ("set -e", "`set -e` the launcher")),
    # … and pipefail where the stop needs it (`ls … | tail` fails only through it)
    ("a) set -o pipefail ;;", " | tail -1", ("set -e", "`set -e` + `pipefail` the launcher")),
    ("a) set -o pipefail ;; *) set -o pipefail ;;", "",
     ("set -e + pipefail", "`set -e` + `pipefail` the launcher")),
])
def test_messages_name_pipefail_only_when_it_is_on_whichever_branch_ran(branches, pipe, mode):
    script = (f"#!/bin/bash\nset -e\ncase \"$BRANCH\" in {branches} esac\n"
              f"LATEST=$(ls -d ck/checkpoint_step_*{pipe})\npython train.py\n")
    findings = lint_launcher(script)
    (strict,) = [f for f in findings if f.check == CHECK_STRICT_MODE]
    (empty,) = [f for f in findings if f.check == CHECK_EMPTY_MATCH and f.line == 4]
    assert f"strict mode on ({mode[0]}):" in strict.message
    assert f"under {mode[1]} stops right here" in empty.message


#: "when `set -e` is on (…)": the wording where `set -e` is on on some paths to the line only
MAYBE_ERREXIT = ("when `set -e` is on (only some branches or loop passes before this line turn "
                 "it on)")


@pytest.mark.parametrize(("script", "check", "line", "said"), [
    # on in one branch of an `if` only: the stop is said for when it is on …
    ("if [ \"$BRANCH\" = a ]; then set -e; fi\nLATEST=$(ls -d ck/checkpoint_step_*)\n",
     CHECK_EMPTY_MATCH, 3, f"{MAYBE_ERREXIT}, the launcher stops right here"),
    # … in a loop's later passes only
    ("for i in 1 2; do\n  LATEST=$(ls -d ck/checkpoint_step_*)\n  set -e\ndone\n",
     CHECK_EMPTY_MATCH, 3, f"{MAYBE_ERREXIT}, the launcher stops right here"),
    ("for i in 1 2; do\n  ls /opt/x*\n  set -e\ndone\n",
     CHECK_EMPTY_MATCH, 3, f"and, {MAYBE_ERREXIT}, it would stop the launcher"),
    ("for i in 1 2; do\n  n=0\n  (( n++ ))\n  set -e\ndone\n",
     CHECK_ARITH_ZERO, 4, f"{MAYBE_ERREXIT}, the launcher stops right here the first time"),
    ("for i in 1 2; do\n  clear\n  set -e\ndone\n", CHECK_INTERACTIVE, 3,
     "when `set -e` is on (line 4; only some branches or loop passes before this line turn it "
     "on), the launcher stops right here"),
    ("for i in 1 2; do\n  python train.py | tee log\n  set -e\ndone\n", CHECK_TEE_HIDES_STATUS,
     3, "when `set -e` is on (line 4; only some branches or loop passes before this line turn "
        "it on), the launcher does not stop"),
    # on on every path: "under `set -e`", as before
    ("set -e\nif [ \"$BRANCH\" = a ]; then echo a; fi\nLATEST=$(ls -d ck/checkpoint_step_*)\n",
     CHECK_EMPTY_MATCH, 4, "under `set -e` the launcher stops right here"),
    ("set -e\nclear\n", CHECK_INTERACTIVE, 3, "under `set -e` (line 2) the launcher stops"),
])
def test_messages_say_set_e_is_on_only_on_some_paths_where_it_is(script, check, line, said):
    (finding,) = [f for f in lint_launcher("#!/bin/bash\n" + script)
                  if f.check == check and f.line == line]
    assert said in finding.message
    assert ("under `set -e`" in finding.message) == said.startswith("under")


@pytest.mark.parametrize(("script", "line", "note"), [
    ("set -e\nls /opt\n", 2, "strict mode on (set -e): unguarded failures stop the launcher"),
    ("if [ -n \"$STRICT\" ]; then set -e; fi\nls /opt\n", 2,
     "strict mode on only in some branches or loop passes (set -e): unguarded failures stop "
     "the launcher where `set -e` is on"),
    ("set -e\ncase \"$MODE\" in debug) set +e ;; esac\nls /opt\n", 2,
     "strict mode on only in some branches or loop passes (set -e): unguarded failures stop "
     "the launcher where `set -e` is on"),
    ("for i in 1 2; do\n  ls /opt\n  set -e\ndone\n", 4,
     "strict mode on only in some branches or loop passes (set -e): unguarded failures stop "
     "the launcher where `set -e` is on"),
    # `set +e` turns it off: for good, or until a later `set -e`
    ("set -e\nls /opt\nset +e\nfalse\n", 2,
     "strict mode on from line 2 (set -e), off after `set +e` on line 4: unguarded failures "
     "stop the launcher before that line, not after it"),
    ("set -euo pipefail\nls /opt\nset +e\nfalse\nrc=$?\nset -e\n", 2,
     "strict mode on in some lines only (set -e + pipefail; on from line 2, off from `set +e` "
     "on line 4 until a later `set -e`): unguarded failures stop the launcher where `set -e` "
     "is on"),
    # … not in a subshell, nor in a function's body (the walk keeps `set -e` there as it was)
    ("set -e\n( set +e; false )\nls /opt\n", 2,
     "strict mode on (set -e): unguarded failures stop the launcher"),
    ("set -e\ncleanup() {\n  set +e\n  rm -f x\n}\ntrap cleanup EXIT\nls /opt\n", 2,
     "strict mode on (set -e): unguarded failures stop the launcher"),
    # a `set` in an `if` condition holds past it
    ("if set -e && true; then :; fi\nls /opt\n", 2,
     "strict mode on (set -e): unguarded failures stop the launcher"),
])
def test_strict_mode_note_says_set_e_is_on_only_on_some_paths_where_it_is(script, line, note):
    (strict,) = [f for f in lint_launcher("#!/bin/bash\n" + script)
                 if f.check == CHECK_STRICT_MODE]
    assert (strict.level, strict.line, strict.message) == ("pass", line, note)


@pytest.mark.parametrize(("script", "english", "korean"), [
    ("set -e\nset +e\nset -e\n", "(set -e; on from line 2, off from `set +e` on line 3 until a "
     "later `set -e`)", "(`set -e`; 2행부터 켜짐, 3행의 `set +e`부터 이후의 `set -e`까지 꺼짐)"),
    ("set -euo pipefail\nset +e\nset -e\n", "(set -e + pipefail; on from line 2, off from "
     "`set +e` on line 3 until", "(`set -e + pipefail`; 2행부터 켜짐, 3행의 `set +e`부터"),
    # a mode with a line of its own: said apart from the lines `set -e` comes on and goes off
    ("set -e\nfalse | true\nset -o pipefail\nset +e\nset -e\n",
     "(set -e, pipefail from line 4 on; on from line 2, off from `set +e` on line 5 until",
     "(`set -e`, `pipefail`은 4행부터; 2행부터 켜짐, 5행의 `set +e`부터 이후의 `set -e`까지 "
     "꺼짐)"),
    ("set -eo pipefail\nset +o pipefail\nfalse | true\nset +e\nset -e\n",
     "(set -e, pipefail before line 3 only; on from line 2, off from `set +e` on line 5 until",
     "(`set -e`, `pipefail`은 3행 이전에만; 2행부터 켜짐, 5행의 `set +e`부터"),
])
def test_the_some_lines_strict_mode_note_reads_whole_with_every_mode(script, english, korean):
    from bot.core.text import render_text
    from bot.slack.render import translator

    (strict,) = [f for f in lint_launcher("#!/bin/bash\n" + script)
                 if f.check == CHECK_STRICT_MODE]
    assert strict.message.startswith("strict mode on in some lines only " + english)
    assert render_text(strict.text, translator("ko").gettext).startswith(
        "일부 줄에서만 엄격 모드 켜짐 " + korean)


@pytest.mark.parametrize(("snippet", "bash_stops", "note"), [
    ("set -e\nset +e\nfalse", False, "strict mode on from line 2 (set -e), off after `set +e` "
                                      "on line 3"),
    ("set -e\nset +e\nfalse\nset -e\nfalse", True,
     "strict mode on in some lines only (set -e; on from line 2, off from `set +e` on line 3"),
    ("set -e\n( set +e; false )\nfalse", True, "strict mode on (set -e): "),
])
def test_set_plus_e_turns_set_e_off_as_the_strict_mode_note_says(tmp_path, snippet, bash_stops,
                                                                   note):
    assert _bash_stops(tmp_path, snippet) == bash_stops, "bash itself disagrees with the table"
    (strict,) = [f for f in lint_launcher("#!/bin/bash\n" + snippet)
                 if f.check == CHECK_STRICT_MODE]
    assert strict.message.startswith(note)


@pytest.mark.parametrize(("snippet", "bash_stops", "state"), [
    ("set -e\nls /opt\nset +e\nls ck/*.pt", False, "(errexit on from line 2, off after `set +e` "
                                                  "on line 4)"),
    ("set -e\nset +e\nls ck/*.pt\nset -e", False,
     "(errexit on from line 2; off from `set +e` on line 3 until a later `set -e`)"),
    ("set -e\nls /opt", False, "(errexit on)"),
    ("ls ck/*.pt", False, "(errexit off)"),
    ("for i in 1 2; do ls /opt; set -e; done", False,
     "(errexit on only in some branches or loop passes)"),
])
def test_the_empty_match_note_says_where_set_e_is_on(tmp_path, snippet, bash_stops, state):
    assert _bash_stops(tmp_path, snippet) == bash_stops, "bash itself disagrees with the table"
    (note,) = [f for f in lint_launcher("#!/bin/bash\n" + snippet)
               if f.check == CHECK_EMPTY_MATCH]
    assert (note.level, note.line) == ("pass", None)
    assert note.message == ("no unguarded empty-match command decides a statement's status "
                            + state)


def test_an_expected_empty_match_warns_where_set_e_is_on_on_some_paths_only(tmp_path):
    script = ('if [ -n "$STRICT" ]; then set -euo pipefail; fi\n'
              'L=$(ls -d ckpt/step_* | tail -1)\n'
              'if [ -z "$L" ]; then echo new; fi\n')
    assert _bash_stops(tmp_path, script, {"STRICT": "1"})
    assert not _bash_stops(tmp_path, script, {"STRICT": ""})
    (f,) = [f for f in lint_launcher("#!/bin/bash\n" + script)
            if f.check == CHECK_EMPTY_MATCH and f.line == 3]
    assert f.level == "warn"
    assert f"{MAYBE_ERREXIT.replace('`set -e`', '`set -e` + `pipefail`')}, the launcher stops " \
           "right here" in f.message
    # on every path, the same statement fails
    strict = "#!/bin/bash\nset -euo pipefail\n" + script.split("\n", 1)[1]
    assert [f.level for f in lint_launcher(strict)
            if f.check == CHECK_EMPTY_MATCH and f.line == 3] == ["fail"]


@pytest.mark.parametrize(("errexit", "level"), [
    ("set -e", "fail"),
    # a `set` in an `if` condition runs: on every path after it (`!` negates the status only)
    ("if set -e && true; then :; fi", "fail"),
    ("if ! set -e; then :; fi", "fail"),
    ("if [ -n \"$STRICT\" ] && set -e; then :; fi", "warn"),
    # on some paths only: the stop happens on the runs that take them, which the script does
    # not say (`$STRICT` set or not), as for an empty match whose input may be there
    ("if [ -n \"$STRICT\" ]; then set -e; fi", "warn"),
    ("[ -n \"$STRICT\" ] && set -e", "warn"),
])
def test_arith_and_clear_fail_where_set_e_is_on_on_every_path_and_warn_where_on_some(
        errexit, level):
    findings = lint_launcher(f"#!/bin/bash\n{errexit}\nn=0\n((n++))\nclear\n")
    assert [(f.check, f.level) for f in findings if f.line in (4, 5)] == [
        (CHECK_ARITH_ZERO, level), (CHECK_INTERACTIVE, level)]


@pytest.mark.parametrize(("snippet", "bash_stops"), [
    # a loop's later passes: `n` starts from 0 again only when the loop sets it so
    ("n=0\nfor i in 1 2; do (( n++ )); set -e; done", False),
    ("for i in 1 2; do\n  n=0\n  (( n++ ))\n  set -e\ndone", True),
    # a loop before `||` is not stopped by `set -e`
    ("set -e\nn=0\nfor i in 1 2; do (( n++ )); done || true", False),
    # "08": the first pass, without `set -e`, goes past the error; the next, under the body's
    # `set -e`, stops on it; with its status tested no pass stops
    ("n=08\nfor i in 1 2; do (( n++ )); set -e; done", True),
    ("for i in 1 2; do\n  n=08\n  (( n++ ))\n  set -e\ndone", True),
    ("n=08\nfor i in 1 2; do (( n++ )) || true; set -e; done", False),
    ("for i in 1 2; do (( n++ )); set -e; done", False),
])
def test_arith_zero_verdict_in_loops_agrees_with_real_bash(tmp_path, snippet, bash_stops):
    assert _bash_stops(tmp_path, snippet) == bash_stops, "bash itself disagrees with the table"
    # reported: a `fail`, or a `warn` where `set -e` is on in the loop's later passes only
    reported = {"warn", "fail"} & set(_levels("#!/bin/bash\n" + snippet, CHECK_ARITH_ZERO))
    assert bool(reported) == bash_stops
    # one finding a line: where bash stops, not also an error it goes past there
    if bash_stops:
        assert set(_levels("#!/bin/bash\n" + snippet, CHECK_ARITH_ERROR)) == {"pass"}
