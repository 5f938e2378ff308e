"""Launcher lint: what turns a crashed training run into a job that ends COMPLETED 0:0. Each
case runs the script under real bash, with a "trainer" that crashes (exit 3), and compares the
script's exit status (what Slurm shows for a batch job) with the lint's verdict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.launcher_lint import CHECK_EXIT_TRAP, CHECK_TEE_HIDES_STATUS, lint_launcher

#: A trainer that crashes: `python train.py` with this train.py exits 3.
CRASH = "import sys\nprint('step 1')\nsys.exit(3)\n"


def _run(tmp_path: Path, script: str, branch: str = "") -> int:
    """The exit status of `script` under bash (its job's status), train.py crashing;
    `$BRANCH` is `branch`."""
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    (tmp_path / "train.py").write_text(CRASH)
    (tmp_path / "launch.sh").write_text(script)
    python_dir = str(Path(sys.executable).parent)  # `python` is this interpreter
    proc = subprocess.run([bash, "launch.sh"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, env={"PATH": f"{python_dir}:/usr/bin:/bin",
                                           "BRANCH": branch})
    return proc.returncode


def _level(script: str, check: str) -> str:
    levels = {f.level for f in lint_launcher(script) if f.check == check}
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


TEE = [
    # (script body after #!/bin/bash, does the job end 0 after the crash?, the lint's level)
    ("python train.py 2>&1 | tee log.txt\n", True, "warn"),
    ("python train.py |& tee log.txt\necho \"END TIME: $(date)\"\n", True, "warn"),
    ("{ echo start; python train.py; } 2>&1 | tee -a log.txt\n", True, "warn"),
    ("set -e\nCUDA_VISIBLE_DEVICES=0 python train.py | tee log.txt\npython -c 'pass'\n",
     True, "warn"),
    ("set -e\ntrain() {\n  python train.py | tee log.txt\n}\ntrain\n", True, "warn"),
    ("if true; then\n  python train.py 2>&1 | tee log.txt\nfi\n", True, "warn"),
    # pipefail in effect: the trainer's status is the pipeline's
    ("set -o pipefail\npython train.py 2>&1 | tee log.txt\n", False, "pass"),
    ("set -euo pipefail\npython train.py | tee log.txt\necho done\n", False, "pass"),
    # the status read right after from PIPESTATUS
    ('python train.py | tee log.txt\nexit "${PIPESTATUS[0]}"\n', False, "pass"),
    ("python train.py | tee log.txt\nrc=${PIPESTATUS[0]}\nexit $rc\n", False, "pass"),
    # no set -e and more work after it: that command's status is the job's, tee or not
    ("python train.py | tee log.txt\nfalse\n", False, "pass"),
    # not training piped to tee
    ("set -e\necho start | tee log.txt\npython train.py\n", False, "pass"),
    ("{ echo a; date; } | tee log.txt\n", True, "pass"),
    # an if / until condition tests tee's status: the failure branch, the retry never run
    ("if python train.py 2>&1 | tee log.txt; then\n  echo 'training finished'\nelse\n"
     "  echo 'training failed' >&2\n  exit 1\nfi\n", True, "warn"),
    ("set -e\nif ! srun python train.py | tee -a log.txt\nthen\n  exit 1\nfi\n", True, "warn"),
    # (`!python` is a command's name, not `!` and python: no training runs)
    ("set -e\nif !python train.py | tee -a log.txt\nthen\n  exit 1\nfi\n", False, "pass"),
    ("n=0\nuntil python train.py | tee -a log.txt; do\n  n=$((n+1))\n"
     "  if [ $n -ge 3 ]; then exit 1; fi\ndone\n", True, "warn"),
    # pipefail on, or the condition's last command tests the trainer's own status
    ("set -o pipefail\nif python train.py 2>&1 | tee log.txt; then\n  echo ok\nelse\n"
     "  exit 1\nfi\n", False, "pass"),
    ('if python train.py | tee log.txt; [ "${PIPESTATUS[0]}" -eq 0 ]; then\n  echo ok\n'
     "else\n  exit 1\nfi\n", False, "pass"),
    ("if echo start | tee log.txt; then python train.py; fi\n", False, "pass"),
    # pipefail set in a subshell (after a `case` in it) is not the script's
    ("set -e\n( case \"$PWD\" in\n    /no) echo no ;;\n  esac\n  set -o pipefail\n)\n"
     "python train.py | tee log.txt\n", True, "warn"),
    # pipefail set on a case pattern's line holds after the `esac`, unless in a subshell
    ("set -e\ncase \"$PWD\" in\n  /no) set -o pipefail ;;\n  *) set -o pipefail ;;\nesac\n"
     "python train.py | tee log.txt\n", False, "pass"),
    ("set -e\n( case \"$PWD\" in *) set -o pipefail ;; esac )\n"
     "python train.py | tee log.txt\n", True, "warn"),
    # a quoted assignment before the trainer, whatever stands before it in the script
    ('START_TS=$(date +%s)\nset -e\ncase "$PWD" in /no) exit 1 ;; esac\n'
     'CUDA_VISIBLE_DEVICES="0" python train.py | tee log.txt\n', True, "warn"),
]


@pytest.mark.parametrize(("body", "ends_zero", "level"), TEE)
def test_tee_hides_status_against_real_bash(tmp_path, body, ends_zero, level):
    script = "#!/bin/bash\n" + body
    assert (_run(tmp_path, script) == 0) == ends_zero, "bash itself disagrees with the table"
    assert _level(script, CHECK_TEE_HIDES_STATUS) == level


@pytest.mark.parametrize(("body", "branches", "level"), [
    # pipefail on after one of a case's branches only: bash may have taken another
    ("set -e\ncase \"$BRANCH\" in\n  /no) echo no ;;\n  *) set -o pipefail ;;\nesac\n"
     "python train.py | tee log.txt\n", ("/no", "x"), "warn"),
    ("set -e\ncase \"$BRANCH\" in\n  a) set -o pipefail ;;\nesac\n"
     "python train.py | tee log.txt\n", ("a", "x"), "warn"),
    ("set -e\ncase \"$BRANCH\" in\n  a) set -o pipefail ;;\n  *) set -o pipefail ;;\nesac\n"
     "python train.py | tee log.txt\n", ("a", "x"), "pass"),
    # … or after one of an if's: without an `else` the `if` may change nothing
    ("set -e\nif [ \"$BRANCH\" = a ]; then\n  set -o pipefail\nfi\n"
     "python train.py | tee log.txt\n", ("a", "x"), "warn"),
    ("set -e\nif [ \"$BRANCH\" = a ]; then\n  set -o pipefail\nelse\n  set -o pipefail\nfi\n"
     "python train.py | tee log.txt\n", ("a", "x"), "pass"),
])
def test_tee_after_a_case_or_if_warns_when_any_branch_bash_may_take_hides_the_status(
    tmp_path, body, branches, level
):
    script = "#!/bin/bash\n" + body
    hidden = [_run(tmp_path, script, b) == 0 for b in branches]
    assert any(hidden) == (level == "warn"), f"bash itself disagrees with the table: {hidden}"
    assert _level(script, CHECK_TEE_HIDES_STATUS) == level


def test_tee_message_names_the_pipeline_and_the_fixes():
    script = "#!/bin/bash\nset -e\nmodule load cuda\nsrun python train.py 2>&1 | tee log\nls\n"
    (finding,) = [f for f in lint_launcher(script) if f.check == CHECK_TEE_HIDES_STATUS]
    assert finding.level == "warn" and finding.line == 4
    assert "`srun python train.py 2>&1 | tee log`" in finding.message
    assert "`set -e` (line 2)" in finding.message and "COMPLETED 0:0" in finding.message
    assert "set -o pipefail" in finding.fix and "PIPESTATUS[0]" in finding.fix
    last = "#!/bin/bash\ntorchrun train.py | tee log\n"
    (finding,) = [f for f in lint_launcher(last) if f.check == CHECK_TEE_HIDES_STATUS]
    assert "last command" in finding.message
    condition = "#!/bin/bash\nmodule load cuda\nif ! torchrun train.py | tee log; then exit 1; fi\n"
    (finding,) = [f for f in lint_launcher(condition) if f.check == CHECK_TEE_HIDES_STATUS]
    assert finding.line == 3 and "`if ! torchrun train.py | tee log`" in finding.message
    assert "the condition tests `tee`'s status" in finding.message
    assert "PIPESTATUS[0]" in finding.fix and '"$rc" -eq 0' in finding.fix


TRAP = [
    # (script body after #!/bin/bash, does the job end 0 after the crash?, the lint's level)
    ("set -e\ntrap 'echo bye; exit 0' EXIT\npython train.py\n", True, "fail"),
    ("set -e\ncleanup() {\n  rm -f tmp.lock\n  exit 0\n}\ntrap cleanup EXIT\n"
     "python train.py\n", True, "fail"),
    ("set -e\nfinish() { exit 0; }\ncleanup() { rm -f tmp.lock; finish; }\n"
     "trap cleanup EXIT\npython train.py\n", True, "fail"),
    ("set -e\ntrap 'exit 0' 0\npython train.py\n", True, "fail"),
    ("set -e\ntrap 'echo cleanup\n  rm -f tmp.lock\n  exit 0' EXIT\npython train.py\n", True,
     "fail"),
    ('set -e\nOK=0\ntrap "exit $OK" EXIT\npython train.py\n', True, "fail"),
    ("set -e\ntrap 'exit 0' EXIT\npython train.py\ntrap - EXIT\n", True, "fail"),
    # no set -e: the script's own error exit is turned into 0 as well
    ("trap 'exit 0' EXIT\npython train.py || exit 1\n", True, "warn"),
    # the status kept: exit $?, a variable holding it, a bare exit, no exit
    ("set -e\ntrap 'exit $?' EXIT\npython train.py\n", False, "pass"),
    ('set -e\ncleanup() {\n  rc=$?\n  rm -f tmp.lock\n  exit "$rc"\n}\ntrap cleanup EXIT\n'
     "python train.py\n", False, "pass"),
    ("set -e\ntrap 'rm -f tmp.lock; exit' EXIT\npython train.py\n", False, "pass"),
    ("set -e\ntrap 'rm -f tmp.lock' EXIT\npython train.py\n", False, "pass"),
    # reset before training starts; a trap on other signals only
    ("set -e\ntrap 'exit 0' EXIT\nmkdir -p out\ntrap - EXIT\npython train.py\n", False, "pass"),
    ("set -e\ntrap 'exit 0' INT TERM\npython train.py\n", False, "pass"),
    # a subshell's trap: it ends that subshell with 0, the script's status is left alone
    ("set -e\n( trap 'rm -rf tmp; exit 0' EXIT; mkdir -p tmp )\npython train.py\n", False,
     "pass"),
    ("set -e\nX=$(trap 'exit 0' EXIT; echo hi)\npython train.py\n", False, "pass"),
    ("set -e\n(\n  trap 'echo bye; exit 0' EXIT\n  mkdir -p out\n  trap - EXIT\n"
     "  python train.py\n)\n", False, "pass"),
    # … also after a `case` pattern's `)` in it, in `"$( … )"` and in backticks
    ("set -e\n( case \"$PWD\" in\n    /no) echo no ;;\n  esac\n  trap 'rm -f x; exit 0' EXIT\n"
     "  mkdir -p out\n)\npython train.py\n", False, "pass"),
    ("set -e\nX=\"$(trap 'exit 0' EXIT; echo hi)\"\npython train.py\n", False, "pass"),
    # … but training in that subshell ends it with 0, and the launcher goes on
    ("set -e\nX=`trap 'exit 0' EXIT; python train.py`\necho done\n", True, "fail"),
    ("set -e\nX=\"$(trap 'exit 0' EXIT; python train.py)\"\necho done\n", True, "fail"),
    ("set -e\n(\n  trap 'echo bye; exit 0' EXIT\n  python train.py\n)\necho done\n", True,
     "fail"),
    ("(cd . && trap 'exit 0' EXIT && python train.py)\n", True, "warn"),
    # a subshell's reset does not reset the script's own trap
    ("set -e\ntrap 'exit 0' EXIT\n( trap - EXIT; echo prep )\npython train.py\n", True,
     "fail"),
    # a trap on a `case` pattern's line, set or reset there (a trap on other signals resets
    # nothing, nor does a later branch's word)
    ("set -e\ncase \"${MODE:-train}\" in\n  train) trap 'rm -f tmp.lock; exit 0' EXIT ;;\n"
     "  *) echo other ;;\nesac\npython train.py\n", True, "fail"),
    ("set -e\ncase x in (x) trap 'exit 0' EXIT;; esac\npython train.py\n", True, "fail"),
    ("set -e\ntrap 'exit 0' EXIT\ncase \"${MODE:-train}\" in\n  *) trap - EXIT; echo reset ;;\n"
     "esac\npython train.py\n", False, "pass"),
    ("set -e\ntrap 'exit 0' EXIT\ncase x in\n  *) trap - ERR; echo run ;;\nesac\n"
     "python train.py\n", True, "fail"),
    ("set -e\ncase x in x) trap 'exit 0' INT ;; y) echo EXIT ;; esac\npython train.py\n",
     False, "pass"),
    # `exit 0` on a case pattern's line, in the handler or a function it calls
    ("set -e\nmode=done\ncleanup() { case $mode in done) exit 0 ;; esac; }\n"
     "trap cleanup EXIT\npython train.py\n", True, "fail"),
    ("set -e\ncleanup() {\n  rm -f tmp.lock\n  case \"${MODE:-train}\" in\n"
     "    train) exit 0 ;;\n    *) exit ;;\n  esac\n}\ntrap cleanup EXIT\npython train.py\n",
     True, "fail"),
    ("trap 'case x in (x) exit 0 ;; esac' EXIT\npython train.py || exit 1\n", True, "warn"),
    ("set -e\ncleanup() { case x in *) exit ;; esac; }\ntrap cleanup EXIT\npython train.py\n",
     False, "pass"),
    # `exit 0` in a function the trap does not call
    ("set -e\nusage() { echo usage; exit 0; }\ntrap 'rm -f x' EXIT\npython train.py\n",
     False, "pass"),
]


@pytest.mark.parametrize(("body", "ends_zero", "level"), TRAP)
def test_exit_trap_against_real_bash(tmp_path, body, ends_zero, level):
    script = "#!/bin/bash\n" + body
    assert (_run(tmp_path, script) == 0) == ends_zero, "bash itself disagrees with the table"
    assert _level(script, CHECK_EXIT_TRAP) == level


def test_a_trap_on_a_case_patterns_line_is_named_at_that_line():
    script = ("#!/bin/bash\nset -e\ncase \"$1\" in\n  debug) set -x ;;\n"
              "  a) trap 'cleanup; exit 0' EXIT ;;\nesac\nsrun python x.py\n")
    (finding,) = [f for f in lint_launcher(script) if f.check == CHECK_EXIT_TRAP]
    assert finding.level == "fail" and finding.line == 5
    assert "`cleanup; exit 0`" in finding.message


def test_exit_trap_message_names_the_trap_the_exit_and_set_e():
    script = "#!/bin/bash\nset -euo pipefail\ntrap 'rm -rf $TMP; exit 0' EXIT\nsrun python x.py\n"
    (finding,) = [f for f in lint_launcher(script) if f.check == CHECK_EXIT_TRAP]
    assert finding.level == "fail" and finding.line == 3
    assert "`rm -rf $TMP; exit 0`" in finding.message and "`exit 0`" in finding.message
    assert "`set -e` (line 2)" in finding.message and "COMPLETED 0:0" in finding.message
    assert "exit $rc" in finding.fix


def test_a_subshells_exit_trap_is_named_with_its_subshell():
    script = ("#!/bin/bash\nset -e\nmkdir -p out\n( trap 'rm -rf out/tmp; exit 0' EXIT; "
              "srun python x.py )\n")
    (finding,) = [f for f in lint_launcher(script) if f.check == CHECK_EXIT_TRAP]
    assert finding.level == "fail" and finding.line == 4
    assert "set inside the subshell `( trap 'rm -rf out/tmp; exit 0' EXIT;" in finding.message
    assert "status 0" in finding.message and "exit $rc" in finding.fix


@pytest.mark.parametrize(("body", "line", "subshell"), [
    ("( case $1 in\n  a) echo a ;;\nesac\ntrap 'exit 0' EXIT\nsrun python x.py\n)\n", 6,
     "`( case $1 in a) echo a ;; esac trap"),
    ("X=\"$(trap 'exit 0' EXIT; srun python x.py)\"\n", 3,
     "`$(trap 'exit 0' EXIT; srun python x.py)`"),
    ("X=`trap 'exit 0' EXIT; srun python x.py`\n", 3, "``trap 'exit 0' EXIT; srun python x.py``"),
])
def test_a_trap_in_a_case_subshell_quoted_substitution_or_backticks_names_it(body, line,
                                                                              subshell):
    (finding,) = [f for f in lint_launcher("#!/bin/bash\nset -e\n" + body)
                  if f.check == CHECK_EXIT_TRAP]
    assert finding.line == line and f"set inside the subshell {subshell}" in finding.message
