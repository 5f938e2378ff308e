"""Launcher lint severity: FAIL only where the job's own output can be missing and the script
expects that, the guards it understands, the misses it now catches, and messages that say
what Slurm will show and when. Stops are checked against real bash where bash can show them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.core.launcher_lint import (
    CHECK_ARITH_ERROR,
    CHECK_ARITH_UNSET,
    CHECK_ARITH_ZERO,
    CHECK_EMPTY_MATCH,
    CHECK_JIT_CC,
    CHECK_NOUNSET,
    CHECK_SHEBANG,
    CHECK_STRICT_MODE,
    after_toolchain_probe,
    lint_launcher,
)

HEAD = "#!/bin/bash\nset -euo pipefail\n"


def _levels(script: str, check: str = CHECK_EMPTY_MATCH) -> list[str]:
    return [f.level for f in lint_launcher(script) if f.check == check and f.line is not None
            or f.check == check and f.level != "pass"]


def _worst(script: str, check: str = CHECK_EMPTY_MATCH) -> str:
    levels = {f.level for f in lint_launcher(script) if f.check == check}
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


def _bash_stops_as_the_level_says(tmp_path, script: str, level: str | None) -> bool:
    """Whether bash, running `script` with X empty and with X=1, stops before its end as the
    lint's `level` says: on both runs (fail), on one of them (warn), on neither (None)."""
    launch = tmp_path / "launch.sh"
    launch.write_text(script + "echo REACHED_THE_END\n")
    stops = [("REACHED_THE_END" not in subprocess.run(
        ["bash", str(launch)], capture_output=True, text=True, timeout=20,
        env={"PATH": "/usr/bin:/bin", "X": x}).stdout) for x in ("", "1")]
    return sorted(stops) == {"fail": [True, True], "warn": [False, True],
                             None: [False, False]}[level]


# ---------------------------------------------------------------- empty match: how sure

@pytest.mark.parametrize(("body", "level"), [
    # the incident: the job's checkpoints, an empty-result branch the author meant to reach
    ('CK=/scratch/ck\nmkdir -p "$CK"\nL=$(ls -d "$CK"/step_* | sort | tail -1)\n'
     'if [ -z "$L" ]; then echo fresh; fi\n', "fail"),
    ("L=$(grep 'Node failure' logs/latest.err | tail -1)\n"
     'if [ -n "$L" ]; then echo requeue; fi\n', "fail"),
    # the job's own output but no branch: a warning
    ("L=$(ls -d ckpt/step_* | tail -1)\npython train.py --resume $L\n", "warn"),
    # the empty side is an error exit anyway: stopping earlier loses nothing
    ('L=$(ls -d ckpt/step_* | tail -1)\nif [ -z "$L" ]; then echo none; exit 1; fi\n', "pass"),
    # not the job's output: input data, system files, other commands' output
    ("FILES=$(ls /data/imagenet/train/*.tar | wc -l)\n", "pass"),
    ("cp /usr/lib64/libnccl*.so* $TMPDIR/\n", "pass"),
    ('NAME=$(scontrol show job "$SLURM_JOB_ID" | grep JobName= | cut -d= -f2)\n', "pass"),
    ('if grep -q "loss" run.log; then L=$(grep "loss" run.log | tail -1); fi\n', "pass"),
    # guards
    ("L=$(ls -d ckpt/step_* 2>/dev/null | tail -1 || true)\n", "pass"),
    ("latest() { ls -d ckpt/step_* | tail -1; }\n", "pass"),  # never called
    # `ls DIR | head` / `find DIR | head` of a directory made earlier: it exists
    ('mkdir -p ckpt\nL=$(ls -t ckpt | head -1)\nif [ -z "$L" ]; then echo fresh; fi\n', "pass"),
    ('L=$(ls -t ckpt | head -1)\nif [ -z "$L" ]; then echo fresh; fi\n', "fail"),
    ('mkdir -p ckpt\nL=$(find ckpt -name "*.pt" | head -1)\n', "pass"),
])
def test_empty_match_severity(body, level):
    assert _worst(HEAD + body) == level


def test_a_function_only_called_in_a_substitution_counts_its_last_command_only():
    script = HEAD + ("latest() {\n  ls -d ckpt/step_* | tail -1\n  echo done\n}\n"
                     'L=$(latest)\nif [ -z "$L" ]; then echo fresh; fi\n')
    assert _worst(script) == "pass"
    last = HEAD + ("latest() {\n  echo looking\n  ls -d ckpt/step_* | tail -1\n}\n"
                   'L=$(latest)\nif [ -z "$L" ]; then echo fresh; fi\n')
    assert _worst(last) == "fail"


def test_message_says_what_slurm_shows_and_when():
    script = HEAD + ('mkdir -p ckpt\nL=$(ls -d ckpt/step_* | tail -1)\n'
                     'if [ -z "$L" ]; then echo fresh; fi\nsrun python train.py\n'
                     "grep -c 'loss: nan' logs/train.log\n")
    findings = [f for f in lint_launcher(script) if f.check == CHECK_EMPTY_MATCH]
    before = next(f for f in findings if f.line == 4)
    assert before.level == "fail"
    assert "FAILED 2:0" in before.message and "before training starts" in before.message
    assert "training runs on line 6" in before.message
    after = next(f for f in findings if f.line == 7)
    assert "FAILED 1:0" in after.message and "after the training command" in after.message


@pytest.mark.parametrize(("options", "later", "under"), [
    # the stop needs `pipefail` (ls is not the pipeline's last command): on at the line, off
    # after it
    ("set -euo pipefail", "set +o pipefail", "under `set -e` + `pipefail` the launcher stops"),
    # `pipefail` off at the line, on only after it
    ("set -eu", "set -o pipefail", None),
])
def test_the_empty_match_wording_takes_pipefail_as_it_is_on_the_line(tmp_path, options, later,
                                                                      under):
    body = (f'{options}\nL=$(ls -d ckpt/step_* | tail -1)\nif [ -z "$L" ]; then echo fresh; '
            f"fi\n{later}\n")
    script = tmp_path / "launch.sh"
    script.write_text(body + "echo REACHED_THE_END\n")
    proc = subprocess.run([shutil.which("bash") or "bash", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
    assert ("REACHED_THE_END" not in proc.stdout) == (under is not None)  # bash agrees
    found = [f for f in lint_launcher("#!/bin/bash\n" + body)
             if f.check == CHECK_EMPTY_MATCH and f.line == 3]
    if under is None:
        assert not found
        return
    (f,) = found
    assert under in f.message


def test_the_empty_match_wording_says_no_pipefail_where_it_comes_on_only_later():
    body = 'set -e\nL=$(ls -d ckpt/step_*)\nif [ -z "$L" ]; then echo fresh; fi\nset -o pipefail\n'
    (f,) = [f for f in lint_launcher("#!/bin/bash\n" + body)
            if f.check == CHECK_EMPTY_MATCH and f.line == 3]
    assert "under `set -e` the launcher stops right here" in f.message
    assert "pipefail" not in f.message


@pytest.mark.parametrize(("body", "stops", "mode"), [
    # `pipefail` only after the pipeline: bash goes on past it; the note does not say
    # "set -e + pipefail" as if it held there
    ("set -e\nfalse | true\nset -o pipefail\n", False, "(set -e, pipefail from line 4 on)"),
    # `pipefail` on at the first pipeline, off at the second: bash stops at the first; the
    # note does not say `set -e` alone, nor pipefail for the second (a first pipeline whose
    # failure the lint cannot know: one it knows always fails ends the script for it too)
    ("set -euo pipefail\nls /no/such/dir | true\nset +o pipefail\nfalse | true\n", True,
     "(set -e, pipefail before line 4 only)"),
    # … off only after every pipeline: it holds wherever it matters
    ("set -euo pipefail\nfalse | true\nset +o pipefail\n", True, "(set -e + pipefail)"),
    # on before `set -e` and on to the end: as before
    ("set -o pipefail\nset -e\nfalse | true\n", True, "(set -e + pipefail)"),
    # on and off again before `set -e`: it holds nowhere that matters
    ("set -o pipefail\nset +o pipefail\nset -e\nfalse | true\n", False, "(set -e)"),
])
def test_the_strict_mode_note_names_pipefail_where_set_e_is_on(tmp_path, body, stops, mode):
    script = tmp_path / "launch.sh"
    script.write_text(body + "echo REACHED_THE_END\n")
    proc = subprocess.run([shutil.which("bash") or "bash", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
    assert ("REACHED_THE_END" not in proc.stdout) == stops  # bash agrees
    (note,) = [f for f in lint_launcher("#!/bin/bash\n" + body) if f.check == CHECK_STRICT_MODE]
    assert note.message.startswith(f"strict mode on {mode}: ")


# ---------------------------------------------------------------- misses now caught (real bash)

BASH_STOPS = [
    # (snippet, check, does bash stop?)
    ("mkdir -p runs\nset -euo pipefail\nL=$(ls ck/missing | head -1)", CHECK_EMPTY_MATCH, True),
    ("set -e\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\n((++n))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=1\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\n((n++)) || true", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nlet n++", CHECK_ARITH_ZERO, True),
    ("set -u\necho task $SLURM_ARRAY_TASK_ID", CHECK_NOUNSET, True),
    ("set -u\necho task ${SLURM_ARRAY_TASK_ID:-0}", CHECK_NOUNSET, False),
    ("set -u\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, True),
    ("set -u\necho '$SLURM_ARRAY_TASK_ID'", CHECK_NOUNSET, False),
    # `set -u` holds in an `if` condition (errexit does not), every list of it
    ("set -u\nif [ \"$SLURM_RESTART_COUNT\" -gt 0 ]; then echo again; fi", CHECK_NOUNSET, True),
    ("set -u\nif\n  echo checking\n  [ \"$SLURM_RESTART_COUNT\" -gt 0 ]\nthen echo again; fi",
     CHECK_NOUNSET, True),
    ("if true; then\n  set -euo pipefail\nfi\nL=$(ls ck/*.pt)", CHECK_EMPTY_MATCH, True),
    ("{ set -e; }\nL=$(ls ck/*.pt)", CHECK_EMPTY_MATCH, True),
    ("( set -e )\nL=$(ls ck/*.pt)", CHECK_EMPTY_MATCH, False),
    # a function called only where errexit is off: its failing `ls` stops nothing
    ("set -euo pipefail\nf() { ls ck/*.pt; }\nif f; then :; fi", CHECK_EMPTY_MATCH, False),
    ("set -euo pipefail\nf() { ls ck/*.pt; }\nf || true", CHECK_EMPTY_MATCH, False),
    ("set -euo pipefail\nf() { ls ck/*.pt; }\nf", CHECK_EMPTY_MATCH, True),
    # a `{ … }` group before `&&` / `||` runs in the script's shell: its `set` holds after it
    ("{ set -e; } && echo strict\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("{ set -e; } || echo lax\nL=$(ls ck/*.pt)", CHECK_EMPTY_MATCH, True),
    ("set -e\n{ set +e; } && echo lax\nn=0\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\n{ set -o pipefail; } && :\nL=$(ls ck/*.pt | head -1)", CHECK_EMPTY_MATCH, True),
    ("{ set -u; } && :\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, True),
    # … bash not stopping in it on `set -e`; piped, it runs in a subshell
    ("set -e\nn=0\n{ (( n++ )); echo counted; } && true", CHECK_ARITH_ZERO, False),
    ("{ set -e; n=0; (( n++ )); } && true", CHECK_ARITH_ZERO, False),
    ("{ set -e; } | cat\nn=0\n((n++))", CHECK_ARITH_ZERO, False),
    # only the `set` command's own options count: not another command's after `&&`, not the
    # positional parameters after `--` or an argument, not in a pipeline (a subshell)
    ("set -e && sort -u /dev/null\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, False),
    ("set -e && set -u\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, True),
    ("set -- -u\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, False),
    ("set -e train -u\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, False),
    ("set -e | cat\nn=0\n((n++))", CHECK_ARITH_ZERO, False),
    # `n` set to 0 however it is spelled
    ("set -e\nn=0;\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=\"0\"; m=1\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\n((n=0)) || true\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\n(( n = 0 )) || :\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nfor ((n=0; n<3; n++)); do ((n++)); done", CHECK_ARITH_ZERO, True),
    ("set -e\nn=1\n((n==0)) || echo nonzero\n(( n == 0 )) || :\n((n++))", CHECK_ARITH_ZERO,
     False),
    # an arithmetic assignment of 0 is itself 0: its status is 1
    ("set -e\n((n=0))\necho assigned", CHECK_ARITH_ZERO, True),
    ("set -e\n(( n = 0 ))", CHECK_ARITH_ZERO, True),
    ("set -e\nlet n=0", CHECK_ARITH_ZERO, True),
    ("set -e\n((n=0)) || true", CHECK_ARITH_ZERO, False),
    ("set -e\n((n=1))\nlet n=2", CHECK_ARITH_ZERO, False),
    # a variable nothing sets is 0 in arithmetic (under `set -u`, an unbound variable): the
    # first increment's status is 1, as from 0
    ("set -e\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nlet n--", CHECK_ARITH_ZERO, True),
    ("set -eu\n((n++))", CHECK_ARITH_UNSET, True),
    ("set -e\n((RETRIES++))", CHECK_ARITH_ZERO, True),
    ("set -e\nfor i in 1 2; do ((n++)); done", CHECK_ARITH_ZERO, True),
    ("set -e\nf() { ((count++)); }\ncount=5\nf", CHECK_ARITH_ZERO, False),
    ("set -e\nfor n in 3; do :; done\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\n: \"${n:=1}\"\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\n((n++)) || true\n((n++))", CHECK_ARITH_ZERO, False),
    # `n+=1` appends ("01", 1 with `declare -i`): not 0 any more; `n+=0` ("00") still is
    ("set -e\nn=0\nn+=1\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\ndeclare -i n=0\nn+=1\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn+=1\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\n((n+=1))\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nn+=0\n((n++))", CHECK_ARITH_ZERO, True),
    # a `set` in an `if` / `while` condition runs in the script's shell: it holds past it
    ("if set -e && true; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("if ! set -e; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("while set -e && false; do :; done\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("if [ -n \"$NOPE\" ]; then :; elif set -e; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO,
     True),
    ("if set -u && true; then :; fi\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET, True),
    ("if set -eu && [ -n \"$SLURM_RESTART_COUNT\" ]; then :; fi", CHECK_NOUNSET, True),
    ("if set -o pipefail; then :; fi\nset -e\nL=$(ls ck/*.pt | head -1)", CHECK_EMPTY_MATCH,
     True),
    # … and in a `{ … }` group there, which runs in the script's shell, exempt from `set -e`
    ("if { set -e; false; }; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("while { set -e; false; }; do :; done\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("until { set -e; true; }; do :; done\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("if ! { set -e; }; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("if true && { set -e; }; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nif { set +e; true; }; then :; fi\nn=0\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nif { n=0; ((n++)); }; then :; fi", CHECK_ARITH_ZERO, False),
    ("if { set -u; true; }; then :; fi\necho restarts $SLURM_RESTART_COUNT", CHECK_NOUNSET,
     True),
    ("if { set -o pipefail; }; then :; fi\nset -e\nL=$(ls ck/*.pt | head -1)",
     CHECK_EMPTY_MATCH, True),
    # an empty `n` is 0 in arithmetic, as zeros are
    ("set -e\nn=\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=\"\"\nlet n--", CHECK_ARITH_ZERO, True),
    ("set -eu\nn=\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=\n((++n))", CHECK_ARITH_ZERO, False),
    # under `set -u` alone, `((n++))` of an `n` nothing sets is an unbound variable: bash
    # stops, `|| true` or an `if` notwithstanding; not in a pipeline (a subshell)
    ("set -u\n((n++))", CHECK_ARITH_UNSET, True),
    ("set -u\nlet n++", CHECK_ARITH_UNSET, True),
    ("set -u\n((n++)) || true", CHECK_ARITH_UNSET, True),
    ("set -eu\n((n++)) || true", CHECK_ARITH_UNSET, True),
    ("set -u\nif ((n--)); then :; fi", CHECK_ARITH_UNSET, True),
    ("set -u\n((n++)) | cat", CHECK_ARITH_UNSET, False),
    ("set -u\nn=0\n((n++)) || true", CHECK_ARITH_UNSET, False),
    ("set -u\n((n=0))", CHECK_ARITH_UNSET, False),
    # a function called only where `set -e` is off runs in the script's shell all the same:
    # an unbound variable in its body stops bash at `f || true` / `if f` (not in a pipeline);
    # `set -e` does not stop it there
    ("set -u\nf() { ((m++)); }\nf || true", CHECK_ARITH_UNSET, True),
    ("set -u\nf() { ((m++)); }\nif f; then :; fi", CHECK_ARITH_UNSET, True),
    ("f() { ((m++)); }\nset -u\nf || true", CHECK_ARITH_UNSET, True),
    ("set -u\nf() { ((m++)); }\nf | cat || true", CHECK_ARITH_UNSET, False),
    ("set -u\nf() { m=0; ((m++)); }\nf || true", CHECK_ARITH_UNSET, False),
    ("set -eu\nf() { m=0; ((m++)); }\nf || true", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); }\nf || true\nset -u", CHECK_ARITH_UNSET, False),
    ("set -u\nf() { set -e; }\nf || true\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    # a function called directly is read where it is called, under the options there: one
    # defined before `set -u` and called after it stops bash on an unbound variable in it
    ("f() { ((m++)); }\nset -u\nf", CHECK_ARITH_UNSET, True),
    ("f() { ((m++)); }\nset -u\nf\nf", CHECK_ARITH_UNSET, True),
    ("f() { ((m++)); }\nf\nset -u", CHECK_ARITH_UNSET, False),
    # … its first call, where `set -u` is off, counts `m` from unset to 1: no later call reads
    # it unset (but a piped call runs in a subshell)
    ("f() { ((m++)); }\nf\nset -u\nf", CHECK_ARITH_UNSET, False),
    ("f() { ((m++)); }\nf; set -u; f", CHECK_ARITH_UNSET, False),
    ("f() { ((m++)); }\nf | cat\nset -u\nf", CHECK_ARITH_UNSET, True),
    ("f() { ((m++)); }\nif f; then :; fi\nset -u\nf", CHECK_ARITH_UNSET, False),
    ("f() { m=0; ((m++)); }\nset -u\nf", CHECK_ARITH_UNSET, False),
    ("f() { ((m++)); }\nset -u\nf | cat", CHECK_ARITH_UNSET, False),
    ("f() { set -e; }\nset -u\nf\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    # … under `set -e` too: its body first runs under `set -u`, which stops bash on the unbound
    # variable before `set -e` sees a status; a call before `set -u` runs it there first
    ("set -e\nf() { ((m++)); }\nset -u\nf", CHECK_ARITH_UNSET, True),
    ("set -e\nf() { ((m++)); }\ng() { f; }\nset -u\ng", CHECK_ARITH_UNSET, True),
    ("set -e\nf() { ((m++)); }\nf\nset -u\nf", CHECK_ARITH_ZERO, True),
    # a function's body is judged at its calls, with what the variable holds at each and the
    # options there: not by the assignments above its definition
    ("set -e\nf() { ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); }\nm=0\nset -e\nf", CHECK_ARITH_ZERO, True),
    ("set -e\nf() { ((m++)); }\nm=5\nf\nm=0\nf", CHECK_ARITH_ZERO, True),
    ("set -e\nf() { ((m++)); }\nm=0\nf | cat\nf", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); }\nm=0\nf\nset -e\nf", CHECK_ARITH_ZERO, False),
    ("set -e\nf() { ((m++)); }\nm=0\nif f; then :; fi\nf", CHECK_ARITH_ZERO, False),
    ("set -e\nf() { ((m++)); }\nm=0\nf || true\nf", CHECK_ARITH_ZERO, False),
    ("set -e\nf() { ((m++)); }\nm=08\nf || true\nf", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); }; m=0; set -u; f", CHECK_ARITH_UNSET, False),
    # … written without a blank before the body's `{` (`f(){`, `function f(){`), as bash
    # allows: read as `f() {` is, its body run at its calls only
    ("set -e\nf(){ ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, True),
    ("set -e\nfunction f(){ ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, True),
    ("f(){ ((m++)); }\nm=0\nset -e\nf", CHECK_ARITH_ZERO, True),
    ("set -e\nf(){ ((m++)); }\nm=5\nf", CHECK_ARITH_ZERO, False),
    ("set -e\nm=0\nf(){ ((m++)); }", CHECK_ARITH_ZERO, False),
    ("set -e\nf(){ m=1; ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, False),
    ("set -u\nf(){ ((m++)); }\nf || true", CHECK_ARITH_UNSET, True),
    # a function called from another function's body runs where that body runs: judged at
    # the script's call of the outermost one, with what `m` holds and the options there
    ("inc() { ((m++)); }\nrun() { inc; }\nm=0\nset -e\nrun", CHECK_ARITH_ZERO, True),
    ("inc(){ ((m++)); }; run(){ inc; }; m=0; set -e; run", CHECK_ARITH_ZERO, True),
    ("inc() { ((m++)); }\nmid() { inc; }\nrun() { mid; }\nm=0\nset -e\nrun", CHECK_ARITH_ZERO,
     True),
    ("inc() { ((m++)); }\nrun() { inc; }\nm=5\nset -e\nrun\nm=0\nrun", CHECK_ARITH_ZERO, True),
    ("inc() { ((m++)); }\nrun() { m=0; inc; }\nm=5\nset -e\nrun", CHECK_ARITH_ZERO, True),
    ("inc() { ((m++)); }\nrun() { inc; m=0; }\nm=5\nset -e\nrun", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { inc; }\nm=5\nset -e\nrun", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { inc; }\nm=0\nset -e\nrun || true", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { inc; }\nm=0\nset -e\nif run; then :; fi", CHECK_ARITH_ZERO,
     False),
    ("inc() { ((m++)); }\nrun() { inc || true; }\nm=0\nset -e\nrun", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { inc; }\nset -e\nm=0\nrun || true\nrun", CHECK_ARITH_ZERO,
     False),
    ("inc() { ((m++)); }\nrun() { inc; inc; }\nm=0\nset -e\nrun || true", CHECK_ARITH_ZERO,
     False),
    # … also from a function only called where `set -e` is off: it counts `m` all the same
    ("inc() { ((m++)); }\nrun() { inc; }\nset -e\nm=0\nrun || true\ninc", CHECK_ARITH_ZERO,
     False),
    ("inc() { ((m++)); }\nrun() { if true; then inc; fi; }\nset -e\nm=0\nif run; then :; fi\n"
     "inc", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { echo; }\nset -e\nm=0\nrun || true\ninc", CHECK_ARITH_ZERO,
     True),
    # … in a `{ … }` group of its body too, which runs in the same shell (not a subshell)
    ("inc() { ((m++)); }\nrun() { { inc; }; }\nset -e\nm=0\nrun || true\ninc", CHECK_ARITH_ZERO,
     False),
    ("inc() { ((m++)); }\nrun() { true && { inc; }; }\nset -e\nm=0\nrun || true\ninc",
     CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { { echo; }; }\nset -e\nm=0\nrun || true\ninc", CHECK_ARITH_ZERO,
     True),
    ("inc() { ((m++)); }\nrun() { ( inc; ); }\nset -e\nm=0\nrun || true\ninc", CHECK_ARITH_ZERO,
     True),
    # … and one calling itself, followed some calls deep: bash stops at the first pass
    ("f() { ((m++)); f; }\nm=0\nset -e\nf", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); if ((m < 3)); then f; fi; }\nm=1\nset -e\nf", CHECK_ARITH_ZERO, False),
    # a `set -e` run in the body before the counter applies at a call where it is off (the
    # common `main() { set -euo pipefail; …; }; main`), and in the bodies called after it;
    # not at a call whose status is tested, nor after it, nor when set in a subshell
    ("f() { set -e; ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, True),
    ("inc() { ((m++)); }\nrun() { set -e; inc; }\nm=0\nrun", CHECK_ARITH_ZERO, True),
    ("inc() { ((m++)); }\nmid() { inc; }\nrun() { set -e; mid; }\nm=0\nrun", CHECK_ARITH_ZERO,
     True),
    ("f() { set -e; ((m++)); }\nm=1\nf", CHECK_ARITH_ZERO, False),
    ("f() { set -e; ((m++)); }\nm=0\nf || true", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); set -e; }\nm=0\nf", CHECK_ARITH_ZERO, False),
    ("f() { set -e; set +e; ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, False),
    ("f() { ( set -e; ((m++)) ); }\nm=0\nf", CHECK_ARITH_ZERO, False),
    ("f() { ( set -e; ); ((m++)); }\nm=0\nf", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { set -e; inc; }\nm=0\nrun || true", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { set -e; inc || true; }\nm=0\nrun", CHECK_ARITH_ZERO, False),
    ("inc() { ((m++)); }\nrun() { ( set -e; inc; ); }\nm=0\nrun", CHECK_ARITH_ZERO, False),
    # … also in a branch of an `if` of the body (with no `else`, or an `else` that leaves it
    # off): bash stops where that branch ran; not after a `set +e`, nor at a tested call
    ("f() {\n  if true; then set -e; fi\n  ((m++))\n}\nm=0\nf", CHECK_ARITH_ZERO, True),
    ("f() {\n  if true; then set -e; else :; fi\n  ((m++))\n}\nm=0\nf", CHECK_ARITH_ZERO,
     True),
    ("inc() { ((m++)); }\nrun() {\n  if true; then set -e; fi\n  inc\n}\nm=0\nrun",
     CHECK_ARITH_ZERO, True),
    ("f() {\n  if true; then set -e; fi\n  ((m++))\n}\nm=1\nf", CHECK_ARITH_ZERO, False),
    ("f() {\n  if true; then set -e; fi\n  set +e\n  ((m++))\n}\nm=0\nf", CHECK_ARITH_ZERO,
     False),
    ("f() {\n  if true; then set -e; fi\n  ((m++))\n}\nm=0\nf || true", CHECK_ARITH_ZERO,
     False),
    ("inc() { ((m++)); }\nrun() {\n  if true; then set -e; fi\n  inc\n}\nm=0\nrun || true",
     CHECK_ARITH_ZERO, False),
    # every call on a line is told by its own list, not by the line's first: `then f` is no
    # condition, and a piped `f` (a subshell) leaves `m` at 0 for the `f` after it
    ("f() { ((m++)); }\nm=0\nset -e\nif true; then f; fi; f", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); }\nm=0\nset -e\nf | cat; f", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); }\nm=0\nset -e\nif f; then :; fi; f", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); }\nm=0\nset -e\nf || true; f", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); }\nm=0\nset -e\nf 2>&1 || true; f", CHECK_ARITH_ZERO, False),
    # what a body leaves after its counter is what its next call reads: that call stops bash
    # (a call after one, or the same call on a loop's next pass)
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nf\nf", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); m=08; }\nm=1\nset -e\nf\nf", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in 1 2; do f; done", CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nf", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); m=5; }\nm=1\nset -e\nf\nf", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nf\nm=1\nf", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in 1 2; do m=1; f; done", CHECK_ARITH_ZERO,
     False),
    ("f() { ((m++)); m=5; }\nm=1\nset -e\nfor i in 1 2; do f; done", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in 1 2; do f || true; done", CHECK_ARITH_ZERO,
     False),
    # … only where the loop makes a next pass: not over one word written out; an inner loop of
    # one pass is made again by the outer loop's next pass
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in a b; do for j in 1; do f; done; done",
     CHECK_ARITH_ZERO, True),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in 1; do f; done", CHECK_ARITH_ZERO, False),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in 1; do for j in 1; do f; done; done",
     CHECK_ARITH_ZERO, False),
    ("set -e\nn=1\nfor i in 1; do\n  ((n++))\n  n=0\ndone", CHECK_ARITH_ZERO, False),
    # a loop bash makes no pass through runs nothing of its body (`while read` from
    # /dev/null, `while false`, `for i in` with no words): no count, assignment or `set -e`
    # in it happens; read from a file with a line, the body runs
    ("set -e\nn=0\nwhile read -r x; do ((n++)); done < /dev/null", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nwhile IFS= read -r x; do\n  ((n++))\ndone </dev/null", CHECK_ARITH_ZERO,
     False),
    ("set -e\nn=0\nwhile false; do ((n++)); done", CHECK_ARITH_ZERO, False),
    ("set -e\nn=5\nwhile read -r x; do n=0; done < /dev/null\n((n++))", CHECK_ARITH_ZERO,
     False),
    ("set -e\nn=5\nfor i in; do n=0; done\n((n++))", CHECK_ARITH_ZERO, False),
    ("while false; do set -e; done\nn=0\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nwhile read -r x; do ((n++)) || true; done < /dev/null\n((n++))",
     CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\necho line > in.txt\nwhile read -r x; do ((n++)); done < in.txt",
     CHECK_ARITH_ZERO, True),
    ("set -euo pipefail\nwhile read -r x; do L=$(ls ck/*.pt); done < /dev/null",
     CHECK_EMPTY_MATCH, False),
    ("set -euo pipefail\necho line > in.txt\nwhile read -r x; do L=$(ls ck/*.pt); done < in.txt",
     CHECK_EMPTY_MATCH, True),
    ("set -e\nn=0\nwhile read -r x || true; do ((n++)); break; done < /dev/null",
     CHECK_ARITH_ZERO, True),
    # an assignment in a subshell stays there: the counter after it reads what it was before
    ("f() { ( m=0 ); ((m++)); }\nm=5\nset -e\nf", CHECK_ARITH_ZERO, False),
    ("set -e\nm=5\n(m=0)\n((m++))", CHECK_ARITH_ZERO, False),
    ("f() { ( m=0; ((m++)) ); }\nm=5\nset -e\nf", CHECK_ARITH_ZERO, True),
    ("f() { m=0; ( ((m++)) ); }\nm=5\nset -e\nf", CHECK_ARITH_ZERO, True),
    ("f() { { m=0; }; ((m++)); }\nm=5\nset -e\nf", CHECK_ARITH_ZERO, True),
    # a tested `((n++))` counts `n` all the same: the next one reads 1, not 0 (on its line or
    # the next); not in a subshell, and an "08" it cannot count stays "08"
    ("set -e\nn=0\n((n++)) || true; ((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nif ((n++)); then :; fi\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\n( ((n++)) || true )\n((n++))", CHECK_ARITH_ZERO, True),
    # … where bash runs it on its way: not in an `if` with no `else`, an `elif`'s branch, a
    # `case` with no `*`, a loop that may make no pass; in both branches of an `if` / `else`,
    # a `case` with `*` or a loop over words or globs (which stay as written when nothing
    # matches) it does
    ("set -e\nn=0\nif [ -n \"${X:-}\" ]; then ((n++)) || true; fi\n((n++))", CHECK_ARITH_ZERO,
     True),
    ("set -e\nn=0\nif false; then :; elif [ -n \"${X:-}\" ]; then ((n++)) || true; fi\n"
     "((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\ncase \"${X:-}\" in a) ((n++)) || true ;; esac\n((n++))", CHECK_ARITH_ZERO,
     True),
    ("shopt -s nullglob\nset -e\nn=0\nfor f in ck/*.pt; do ((n++)) || true; done\n((n++))",
     CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\nif [ -n \"${X:-}\" ]; then ((n++)) || true; else ((n++)) || true; fi\n"
     "((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\ncase \"${X:-}\" in a) ((n++)) || true ;; *) let n++ || : ;; esac\n((n++))",
     CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nfor i in 1 2; do ((n++)) || true; done\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nfor f in ck/*.pt; do ((n++)) || true; done\n((n++))", CHECK_ARITH_ZERO,
     False),
    ("set -e\nif [ -n \"${X:-}\" ]; then\n  n=0\n  ((n++)) || true\nfi\nn=${n:-1}\n((n++))",
     CHECK_ARITH_ZERO, False),
    ("set -e\nn=08\n((n++)) || true\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\n((n++)) || true\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    # what a loop's body leaves at its end is what its next pass reads at its top
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  n=0\ndone", CHECK_ARITH_ZERO, True),
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  n=08\ndone", CHECK_ARITH_ZERO, True),
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  unset n\ndone", CHECK_ARITH_ZERO, True),
    ("set -u\nn=1\nfor i in 1 2; do\n  ((n++)) || true\n  unset n\ndone", CHECK_ARITH_UNSET,
     True),
    ("set -e\nn=1\nfor i in 1 2; do\n  n=1\n  ((n++))\n  n=0\ndone", CHECK_ARITH_ZERO, False),
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  n=5\ndone", CHECK_ARITH_ZERO, False),
    # `n=0 cmd` sets `n` in cmd's environment only: in the shell it is as before, unset
    ("set -u\nn=0 true\n((n++))", CHECK_ARITH_UNSET, True),
    ("set -e\nn=5 true\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=5 m=1 env true\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nif true; then n=3 true; fi\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -u\nexport n=0\n((n++))", CHECK_ARITH_UNSET, False),
    ("set -u\nn=0; true\n((n++))", CHECK_ARITH_UNSET, False),
    ("set -e\nn=1 \n((n++))", CHECK_ARITH_ZERO, False),
    ("set -u\nn=$(printf '%s' 1 2)\n((n++))", CHECK_ARITH_UNSET, False),
    # `n+=8` appends: "08", which arithmetic reads as octal and cannot (status 1); "07" and
    # "010" it can; `declare -i` and `((n+=8))` add
    # `!` negates a pipeline's status and `set -e` ignores it, but bash runs it: `! set -e`
    # turns `set -e` on; `! !` cancels out, `set -e` applying as without them
    ("! set -e\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("[ -n \"${X:-}\" ] || ! set -e\nn=0\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\n! ! ((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\n! ! ! ((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\n! ! set +e\nn=0\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\n! ((n++))\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nn+=8\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\nn+=9\nlet n--", CHECK_ARITH_ZERO, True),
    ("set -e\nn=08\n((n++))", CHECK_ARITH_ZERO, True),
    ("set -e\nn=0\nn+=8\n((n++)) || true", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nn+=7\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\nn+=10\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\ndeclare -i n=0\nn+=8\n((n++))", CHECK_ARITH_ZERO, False),
    ("set -e\nn=0\n((n+=8))\n((n++))", CHECK_ARITH_ZERO, False),
]


@pytest.mark.parametrize(("snippet", "check", "bash_stops"), BASH_STOPS)
def test_new_checks_agree_with_real_bash(tmp_path, snippet, check, bash_stops):
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    (tmp_path / "ck").mkdir()
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END\n")
    env = {"PATH": "/usr/bin:/bin"}  # no SLURM_* variables: a plain, non-array first run
    proc = subprocess.run([bash, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=20, env=env)
    stopped = "REACHED_THE_END" not in proc.stdout
    assert stopped == bash_stops, f"bash itself disagrees with the table: {proc.stderr}"
    flagged = any(f.check == check and f.line is not None and f.level != "pass"
                  or f.check == check and f.line is not None and check == CHECK_EMPTY_MATCH
                  for f in lint_launcher("#!/bin/bash\n" + snippet))
    assert flagged == bash_stops


@pytest.mark.parametrize(("snippet", "bash_says", "check"), [
    # a function defined under `set -e` and first called after `set -u`: bash stops on the
    # unbound variable, not on the status `set -e` would see
    ("set -e\nf() { ((m++)); }\nset -u\nf", "line 2: m: unbound variable", CHECK_ARITH_UNSET),
    # … called once before `set -u`: that first call stops it, on the status
    ("set -e\nf() { ((m++)); }\nf\nset -u\nf", "", CHECK_ARITH_ZERO),
])
def test_a_function_counter_is_reported_as_the_first_call_stops_bash(tmp_path, snippet,
                                                                     bash_says, check):
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END\n")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=20,
                          env={"PATH": "/usr/bin:/bin"})
    assert "REACHED_THE_END" not in proc.stdout
    assert proc.stderr.strip() == (f"{script}: {bash_says}" if bash_says else ""), proc.stderr
    found = [(f.check, f.line) for f in lint_launcher("#!/bin/bash\n" + snippet)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    assert found == [(check, 3)]


@pytest.mark.parametrize(("snippet", "said"), [
    # a later call stops bash: the message names it, the way it runs the body (again, or on
    # the loop's next pass), and the line whose value it reads
    ("f() { ((m++)); m=0; }\nm=1\nset -e\necho call 5; f\necho call 6; f",
     "line 2: when the call on line 6 runs the body of `f` again, `((m++))` reads `m` at \"0\" "
     "as line 2 sets it, so its status is 1: under `set -e` the launcher stops right here at "
     "that call, not at an earlier one"),
    ("f() { ((m++)); }\nm=5\nset -e\necho call 5; f\nm=0\necho call 7; f",
     "line 2: when the call on line 7 runs the body of `f` again, `((m++))` reads `m` at \"0\" "
     "as line 6 sets it"),
    ("f() { ((m++)); m=0; }\nm=1\nset -e\nfor i in 1 2; do echo call 5; f; done",
     "line 2: when the call on line 5 runs the body of `f` on the loop's next pass, `((m++))` "
     "reads `m` at \"0\" as line 2 sets it"),
    ("inc() { ((m++)); }\nrun() { inc; }\nm=5\nset -e\necho call 6; run\nm=0\necho call 8; run",
     "line 2: when the call on line 8 runs the body of `inc` again, `((m++))` reads `m` at "
     "\"0\" as line 7 sets it"),
    ("f() { ((m++)); }\nm=08\nset -e\necho call 5; f || true\necho call 6; f",
     "line 2: when the call on line 6 runs the body of `f` again, `((m++))` reads `m` at "
     "\"08\" as line 3 sets it"),
    # … and, where every call before it ran the body in a subshell, that this one runs it in
    # the script's shell (each said it runs the body "again", as if its count held)
    ("f() { ((m++)); }\nm=0\nset -e\necho call 5; f | cat\necho call 6; f",
     "line 2: when the call on line 6 runs the body of `f` in the script's shell (the calls "
     "before it ran it in a subshell, whose counts do not hold here), `((m++))` reads `m` at "
     "\"0\" as line 3 sets it"),
    ("f() { ((m++)); }\nm=0\nset -e\necho call 5; ( f ) || true\necho call 6; f",
     "line 2: when the call on line 6 runs the body of `f` in the script's shell"),
    # the first call stops it: said as the first time
    ("f() { ((m++)); }\nm=0\nset -e\necho call 5; f\necho call 6; f",
     "line 2: `((m++))` with `m` at 0 evaluates to 0, so its status is 1: under `set -e` the "
     "launcher stops right here the first time"),
])
def test_a_counter_in_a_function_names_the_call_that_stops_bash(tmp_path, snippet, said):
    script = "#!/bin/bash\n" + snippet + "\n"
    launch = tmp_path / "launch.sh"
    launch.write_text(script + "echo REACHED_THE_END\n")
    proc = subprocess.run(["bash", str(launch)], capture_output=True, text=True, timeout=20,
                          env={"PATH": "/usr/bin:/bin"})
    stopped_at = proc.stdout.splitlines()[-1]  # the `echo call N` of the call bash stops in
    assert stopped_at.startswith("call "), proc.stdout
    (f,) = [f for f in lint_launcher(script)
            if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert f.message.startswith(said)
    if "the first time" in said:
        assert stopped_at == "call 5"
        assert "again" not in f.message
    else:
        assert f"when the call on line {stopped_at.split()[1]} runs" in f.message


@pytest.mark.parametrize(("snippet", "bash_errs"), [
    # where `set -e` is off, `n` at "08" is an arithmetic error bash reports and goes past:
    # the count never moves
    ("n=08\n((n++))", True),
    ("n=0\nn+=8\nlet n++", True),
    ("set -u\nn=09\n((n--)) || true", True),
    ("for i in 1 2; do n=08; ((n++)); done", True),
    ("n=07\n((n++))", False),
    ("n=08\nn=$((10#$n + 1))\n((n++))", False),
    ("n=8\n((n++))", False),
])
def test_an_arithmetic_error_without_errexit_agrees_with_real_bash(tmp_path, snippet, bash_errs):
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END\n")
    proc = subprocess.run([bash, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=20, env={"PATH": "/usr/bin:/bin"})
    assert "REACHED_THE_END" in proc.stdout  # nothing stops it
    assert ("value too great for base" in proc.stderr) == bash_errs, proc.stderr
    levels = [f.level for f in lint_launcher("#!/bin/bash\n" + snippet)
              if f.check == CHECK_ARITH_ERROR and f.line is not None]
    assert levels == (["warn"] if bash_errs else [])


@pytest.mark.parametrize(("snippet", "body_runs", "said"), [
    # where `set -e` is on but the status is tested, bash reports the error, takes its status
    # (1) and goes on: `|| true` holds, a condition is false (true after `!`)
    ("set -e\nn=08\n((n++)) || true", False, "`||` tests it, so `set -e` does not stop"),
    ("set -e\nn=08\n((n++)) && echo BODY", False, "`&&` tests it, so `set -e` does not stop"),
    ("set -e\nn=08\nlet n++ || true", False, "`||` tests it"),
    ("set -e\nn=08\nif ((n++)); then echo BODY; fi", False,
     "`if` takes it as false: its `then` branch is skipped and the launcher goes on"),
    ("set -eu\nn=09\nif false; then :; elif ((n--)); then echo BODY; fi", False,
     "`elif` takes it as false"),
    ("set -e\nn=08\nwhile ((n++)); do echo BODY; break; done", False,
     "`while` takes it as false: the loop ends there and the launcher goes on"),
    ("set -e\nn=08\nuntil ((n++)); do echo BODY; break; done", True,
     "`until` takes it as false: the loop's body runs again, and this test never ends"),
    ("set -e\nn=08\nif ! ((n++)); then echo BODY; fi", True,
     "a condition tests it, so `set -e` does not stop the launcher"),
    ("n=08\nif ((n++)); then echo BODY; fi", False, "`if` takes it as false"),
    ("set -e\nn=08\n! ((n++))", False,
     "`!` negates it to 0, so `set -e` does not stop the launcher"),
    ("set -e\nn=08\n! let n++ && echo BODY", True, "`!` negates it to 0"),
])
def test_an_arithmetic_error_whose_status_is_tested_agrees_with_real_bash(tmp_path, snippet,
                                                                         body_runs, said):
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END n=$n\n")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=20,
                          env={"PATH": "/usr/bin:/bin"})
    assert "value too great for base" in proc.stderr, proc.stderr
    # nothing stops it, and the count never moved
    assert proc.stdout.splitlines()[-1] in ("REACHED_THE_END n=08", "REACHED_THE_END n=09")
    assert ("BODY" in proc.stdout) == body_runs
    findings = [f for f in lint_launcher("#!/bin/bash\n" + snippet)
                if f.check in (CHECK_ARITH_ERROR, CHECK_ARITH_ZERO) and f.level != "pass"]
    assert [(f.check, f.level, f.line) for f in findings] == [
        (CHECK_ARITH_ERROR, "warn", snippet.count("\n") + 2)]
    assert said in findings[0].message
    assert findings[0].message.endswith("never counts")


@pytest.mark.parametrize(("snippet", "said"), [
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  n=0\ndone",
     "line 5: on the loop's next pass `((n++))` reads `n` at 0, as line 6 leaves it at the end "
     "of the body, and evaluates to 0, so its status is 1: under `set -e` the launcher stops "
     "right here on that pass"),
    ("set -u\nn=1\nfor i in 1 2; do\n  ((n++)) || true\n  unset n\ndone",
     "line 5: on the loop's next pass `((n++))` reads `n` unset, as `unset n` on line 6 leaves "
     "it at the end of the body: under `set -u` bash stops right here with `n: unbound "
     "variable`"),
])
def test_a_counter_a_loop_body_leaves_at_0_or_unset_is_reported_for_the_next_pass(
        tmp_path, snippet, said):
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END\n")
    proc = subprocess.run(["bash", "-x", str(script)], capture_output=True, text=True,
                          timeout=20, env={"PATH": "/usr/bin:/bin"})
    # bash runs the counter twice, the second time on the value the body's end left
    assert "REACHED_THE_END" not in proc.stdout
    assert proc.stderr.count("+ (( n++ ))") == 2, proc.stderr
    (f,) = [f for f in lint_launcher("#!/bin/bash\n" + snippet)
            if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    assert f.line == 5
    assert f.message.startswith(said)


@pytest.mark.parametrize(("snippet", "said"), [
    # a loop's first pass runs with `set -e` off, its later passes after the body's `set -e`:
    # `||` / `&&` tests the error's status on every pass, which is what holds for all of them
    ("n=08\nfor i in 1 2; do\n  ((n++)) || true\n  set -e\ndone",
     "`||` tests it, so `set -e` does not stop the launcher"),
    ("n=08\nfor i in 1 2; do\n  ((n++)) && echo BODY\n  set -e\ndone",
     "`&&` tests it, so `set -e` does not stop the launcher"),
])
def test_a_tested_error_in_a_loop_that_turns_set_e_on_is_described_for_every_pass(
        tmp_path, snippet, said):
    script = tmp_path / "launch.sh"
    script.write_text(snippet + "\necho REACHED_THE_END n=$n\n")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=20,
                          env={"PATH": "/usr/bin:/bin"})
    # bash reports the error on both passes, `set -e` on in the second, and goes on
    assert proc.stderr.count("value too great for base") == 2, proc.stderr
    assert proc.stdout.splitlines()[-1] == "REACHED_THE_END n=08"
    (f,) = [f for f in lint_launcher("#!/bin/bash\n" + snippet)
            if f.check in (CHECK_ARITH_ERROR, CHECK_ARITH_ZERO) and f.level != "pass"]
    assert (f.check, f.level, f.line) == (CHECK_ARITH_ERROR, "warn", 4)
    assert said in f.message
    assert "`set -e` is off" not in f.message


@pytest.mark.parametrize("snippet", [
    "set -e\nn=0\n((n++)) || true", "set -e\nn=07\nif ((n++)); then :; fi",
    "set -e\nn=1\nwhile ((n--)); do :; done", "set -e\nn=08\nn=$((10#$n))\n((n++)) || true",
])
def test_a_tested_counter_bash_reads_is_no_arithmetic_error(snippet):
    assert [f.level for f in lint_launcher("#!/bin/bash\n" + snippet)
            if f.check == CHECK_ARITH_ERROR] == ["pass"]


def test_an_arithmetic_error_without_errexit_names_the_line_and_the_decimal_fix():
    findings = lint_launcher("#!/bin/bash\nn=0\nn+=9\n((n--))\n")
    (f,) = [f for f in findings if f.check == CHECK_ARITH_ERROR]
    assert (f.level, f.line) == ("warn", 4)
    assert f.message == (
        "line 4: `((n--))` with `n` at \"09\" is an arithmetic error (a leading 0 makes a "
        "number octal, which has no digit 8 or 9: bash says `value too great for base`); `set "
        "-e` is off, so the launcher goes on, but `n` stays \"09\" and never counts")
    assert f.fix.startswith("read it as decimal: `n=$(( 10#$n - 1 ))`")
    # under `set -e` the same error stops the launcher: that is arith_zero_under_errexit's
    assert {f.check: f.level for f in lint_launcher("#!/bin/bash\nset -e\nn=08\n((n++))\n")
            if f.check in (CHECK_ARITH_ERROR, CHECK_ARITH_ZERO)} == {
        CHECK_ARITH_ZERO: "fail", CHECK_ARITH_ERROR: "pass"}


def test_an_arithmetic_zero_assignment_is_reported_where_bash_stops_with_its_fix():
    findings = [f for f in lint_launcher(HEAD + "((n=0))\n((n++))\n")
                if f.check == CHECK_ARITH_ZERO]
    assert [(f.level, f.line) for f in findings] == [("fail", 3), ("fail", 4)]
    assert findings[0].message.startswith("line 3: `((n=0))` sets `n` to 0 and evaluates to 0")
    assert findings[0].fix == "write `n=0`, whose status is 0"


@pytest.mark.parametrize(("script", "level", "said", "fix"), [
    ("set -e\n((n++))\n", "fail",
     "line 3: `((n++))` with `n` unset (nothing in the script sets it; only the job's "
     "environment could) evaluates to 0, so its status is 1: under `set -e` the launcher stops "
     "right here the first time: Slurm shows FAILED 1:0",
     "set it first (`n=0`), then use `(( ++n ))` or `n=$(( n + 1 ))`"),
    ("set -eu\nlet n++\n", "fail",
     "line 3: `let n++` reads `n`, which nothing in the script sets (only the job's environment "
     "could): under `set -u` bash stops right here with `n: unbound variable`: Slurm shows "
     "FAILED 1:0",
     "set it first (`n=0`), then use `(( ++n ))` or `n=$(( n + 1 ))`"),
    # a name in capitals may come from the environment sbatch passes on: a warning
    ("set -e\n((RETRIES++))\n", "warn",
     "line 3: `((RETRIES++))` with `RETRIES` unset (nothing in the script sets it; only the "
     "job's environment could) evaluates to 0",
     "set it first (`RETRIES=0`), then use `(( ++RETRIES ))`"),
])
def test_an_increment_of_a_variable_nothing_sets_says_why_it_stops(script, level, said, fix):
    # under `set -u` the unbound variable stops bash, whatever the status: its own check
    check = CHECK_ARITH_UNSET if "-eu" in script else CHECK_ARITH_ZERO
    (f,) = [f for f in lint_launcher("#!/bin/bash\n" + script) if f.line is not None
            and f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET)]
    assert (f.check, f.level, f.line) == (check, level, 3)
    assert f.message.startswith(said) and f.fix.startswith(fix)


@pytest.mark.parametrize(("script", "said", "fix"), [
    ("set -e\nn=0\nn+=8\n((n++))\n",
     "line 5: `((n++))` with `n` at \"08\" is an arithmetic error (a leading 0 makes a number "
     "octal, which has no digit 8 or 9: bash says `value too great for base`), so its status "
     "is 1: under `set -e` the launcher stops right here: Slurm shows FAILED 1:0",
     "add with `(( n += N ))` (`n+=N` appends text: \"0\" and \"8\" make \"08\")"),
    ("set -e\nn=\n\n((n++))\n",
     "line 5: `((n++))` with `n` empty (`n=`: 0 in arithmetic) evaluates to 0, so its status is "
     "1: under `set -e` the launcher stops right here the first time: Slurm shows FAILED 1:0",
     "use `(( ++n ))`"),
    # `set -u` alone: the unbound variable stops bash, not a status
    ("set -u\n\n\n((n++)) || true\n",
     "line 5: `((n++))` reads `n`, which nothing in the script sets (only the job's "
     "environment could): under `set -u` bash stops right here with `n: unbound variable`",
     "set it first (`n=0`)"),
])
def test_an_increment_bash_cannot_count_from_says_why_it_stops(script, said, fix):
    check = CHECK_ARITH_UNSET if "unbound variable" in said else CHECK_ARITH_ZERO
    (f,) = [f for f in lint_launcher("#!/bin/bash\n" + script) if f.line is not None
            and f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET)]
    assert (f.check, f.level, f.line) == (check, "fail", 5)
    assert f.message.startswith(said) and f.fix.startswith(fix)


@pytest.mark.parametrize(("script", "stops_on"), [
    ("set -u\n((n++)) || true\n", CHECK_ARITH_UNSET),  # the unbound variable, not the status
    ("set -eu\n((n++))\n", CHECK_ARITH_UNSET),
    ("set -eu\nn=\n((n++))\n", CHECK_ARITH_ZERO),  # set, empty: 0, a status of 1
])
def test_an_unbound_variable_and_a_zero_status_are_reported_under_their_own_ids(script,
                                                                                stops_on):
    findings = lint_launcher("#!/bin/bash\n" + script)
    levels = {f.check: f.level for f in findings
              if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET)}
    other = CHECK_ARITH_ZERO if stops_on == CHECK_ARITH_UNSET else CHECK_ARITH_UNSET
    assert levels == {stops_on: "fail", other: "pass"}


@pytest.mark.parametrize(("body", "level"), [
    # `set -e` in a branch of the body: on the runs that take it (`STRICT` set), not on the
    # others, so a warning that says when; in both branches it is on every run
    ('  if [ -n "${STRICT:-}" ]; then set -e; fi\n', "warn"),
    ('  if [ -n "${STRICT:-}" ]; then set -e; else echo lax; fi\n', "warn"),
    ('  case "${MODE:-}" in strict) set -e ;; esac\n', "warn"),
    ('  if [ -n "${STRICT:-}" ]; then set -e; else set -e; fi\n', "fail"),
    ("  set -e\n", "fail"),
])
def test_a_set_e_in_a_branch_of_a_function_body_is_a_warning_that_says_when(tmp_path, body,
                                                                            level):
    script = f"#!/bin/bash\nstep() {{\n{body}  ((done_steps++))\n}}\ndone_steps=0\nstep\n"
    launch = tmp_path / "launch.sh"
    launch.write_text(script + "echo REACHED_THE_END\n")
    for strict, stops in (("1", True), ("", level == "fail")):
        proc = subprocess.run(["bash", str(launch)], capture_output=True, text=True, timeout=20,
                              env={"PATH": "/usr/bin:/bin", "STRICT": strict,
                                   "MODE": "strict" if strict else ""})
        assert ("REACHED_THE_END" not in proc.stdout) == stops
    (f,) = [f for f in lint_launcher(script) if f.check == CHECK_ARITH_ZERO]
    assert (f.level, f.line) == (level, script.count("\n", 0, script.index("((done")) + 1)
    assert ("when `set -e` is on (only some branches or loop passes before this line turn it "
            "on), the launcher stops right here" in f.message) == (level == "warn")


def test_a_count_in_a_branch_bash_may_skip_is_a_warning_for_the_runs_that_skip_it(tmp_path):
    script = ("#!/bin/bash\nset -e\nretries=0\nif [ -f resume.flag ]; then\n"
              "  ((retries++)) || true\nfi\n((retries++))\necho REACHED_THE_END\n")
    launch = tmp_path / "launch.sh"
    launch.write_text(script)
    for flag, stops in ((False, True), (True, False)):
        if flag:
            (tmp_path / "resume.flag").touch()
        proc = subprocess.run(["bash", str(launch)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
        assert ("REACHED_THE_END" not in proc.stdout) == stops
    (f,) = [f for f in lint_launcher(script) if f.check == CHECK_ARITH_ZERO]
    assert (f.level, f.line) == ("warn", 7)
    assert f.message.startswith(
        "line 7: `((retries++))` reads `retries` at 0 on the runs that skip line 5, which counts "
        "it in a branch or a loop bash may not run, and evaluates to 0 there, so its status is "
        "1: under `set -e` the launcher stops right here on those runs")


@pytest.mark.parametrize(("ending", "level"), [
    # what the body leaves for its next call, set in a branch: the next call stops bash on
    # the runs that take it (a warning), on every run when each way sets it so (a failure)
    ('  if [ -n "${X:-}" ]; then m=0; fi\n', "warn"),
    ('  if [ -z "${X:-}" ]; then m=0; else m=5; fi\n', "warn"),
    ('  m=0\n  if [ -n "${X:-}" ]; then m=7; fi\n', "warn"),
    ('  if [ -z "${X:-}" ]; then m=0; else m=00; fi\n', "fail"),
    ('  if [ -n "${X:-}" ]; then m=7; fi\n  m=0\n', "fail"),
    ('  if [ -z "${X:-}" ]; then m=7; else m=5; fi\n', None),
    ('  if [ -n "${X:-}" ]; then m=0; fi\n  m=3\n', None),
])
def test_what_a_body_leaves_in_a_branch_is_what_the_next_call_reads_on_those_runs(
        tmp_path, ending, level):
    script = f"#!/bin/bash\nf() {{\n  ((m++))\n{ending}}}\nm=1\nset -e\nf\nf\n"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert [f.level for f in found] == ([level] if level else [])
    if found:
        call = script.count("\n")  # the second `f`, the script's last line
        assert f"when the call on line {call} runs the body of `f` again" in found[0].message
        assert ("sets it on some runs only (branches of the body decide which value it "
                "leaves)" in found[0].message) == (level == "warn")


@pytest.mark.parametrize(("ending", "level"), [
    # what a loop's body leaves for its next pass, set in a branch: the next pass stops bash
    # on the runs that take it (a warning), on every run when each way sets it so or the
    # assignment is after the `fi` (a failure)
    ('  if [ -n "${X:-}" ]; then n=0; fi\n', "warn"),
    ('  if [ -z "${X:-}" ]; then n=0; else n=5; fi\n', "warn"),
    ('  if [ -z "${X:-}" ]; then n=0; else n=0; fi\n', "fail"),
    ('  if [ -n "${X:-}" ]; then n=7; fi\n  n=0\n', "fail"),
    ('  if [ -z "${X:-}" ]; then n=7; else n=5; fi\n', None),
    ('  if [ -n "${X:-}" ]; then n=0; fi\n  n=3\n', None),
])
def test_what_a_loop_body_leaves_in_a_branch_is_what_its_next_pass_reads_on_those_runs(
        tmp_path, ending, level):
    script = f"#!/bin/bash\nset -e\nn=1\nfor i in 1 2; do\n  ((n++))\n{ending}done\n"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert [(f.level, f.line) for f in found] == ([(level, 5)] if level else [])
    if found:
        assert found[0].message.startswith("line 5: on the loop's next pass `((n++))` reads `n` "
                                           "at 0")
        assert ("sets it on some runs only (branches of the body decide which value it "
                "leaves)" in found[0].message) == (level == "warn")


@pytest.mark.parametrize(("options", "ending", "level"), [
    # `unset n` in a branch of a loop's body: the next pass reads it unset on the runs that
    # take the branch (a warning), on every run when each way leaves it unset or 0 (a
    # failure), on none when it is set again after the `fi`
    ("set -e", '  if [ -n "${X:-}" ]; then unset n; fi\n', "warn"),
    ("set -e", '  if [ -n "${X:-}" ]; then unset n; else n=5; fi\n', "warn"),
    ("set -u", '  if [ -n "${X:-}" ]; then unset n; fi\n', "warn"),
    ("set -e", '  if [ -n "${X:-}" ]; then n=0; else unset n; fi\n', "fail"),
    ("set -e", '  if [ -n "${X:-}" ]; then n=7; fi\n  unset n\n', "fail"),
    ("set -e", '  if [ -n "${X:-}" ]; then unset n; fi\n  n=3\n', None),
])
def test_an_unset_in_a_loop_body_branch_is_what_the_next_pass_reads_on_those_runs(
        tmp_path, options, ending, level):
    counter = "((n++))" if options == "set -e" else "((n++)) || true"
    script = f"#!/bin/bash\n{options}\nn=1\nfor i in 1 2; do\n  {counter}\n{ending}done\n"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    assert [(f.level, f.line) for f in found] == ([(level, 5)] if level else [])
    if level == "warn":
        assert found[0].message.startswith(
            "line 5: on the loop's next pass `((n++))` reads `n` unset, as `unset n` on line 6 "
            "leaves it on some runs only (branches of the body decide which value it leaves)")
        assert found[0].check == (CHECK_ARITH_UNSET if options == "set -u" else CHECK_ARITH_ZERO)


@pytest.mark.parametrize(("middle", "level", "at"), [
    # the value a counter reads, set in a branch on the way: bash stops on the runs where the
    # 0 is the last set (a warning), on every run when each way sets it so or it is set again
    # after the `fi` (a failure)
    ('n=0\nif [ -n "${X:-}" ]; then n=5; fi\n', "warn", 3),
    ('n=5\nif [ -n "${X:-}" ]; then n=0; fi\n', "warn", 4),
    ('n=0\nif [ -z "${X:-}" ]; then n=0; else n=5; fi\n', "warn", 4),
    ('n=7\nif [ -n "${X:-}" ]; then n=0; else n=0; fi\n', "fail", None),
    ('n=0\nif [ -n "${X:-}" ]; then n=5; fi\nn=0\n', "fail", None),
    ('n=0\nif [ -n "${X:-}" ]; then n=5; else n=6; fi\n', None, None),
    ('n=0\nif [ -n "${X:-}" ]; then n=5; fi\nn=3\n', None, None),
])
def test_a_counter_set_in_a_branch_on_the_way_reads_that_value_on_those_runs(
        tmp_path, middle, level, at):
    script = f"#!/bin/bash\nset -e\n{middle}((n++))\n"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    line = script.count("\n")  # the `((n++))`, the script's last line
    assert [(f.level, f.line) for f in found] == ([(level, line)] if level else [])
    if level == "warn":
        assert found[0].message.startswith(
            f"line {line}: `((n++))` reads `n` at \"0\" as line {at} sets it on some runs only "
            "(branches on the way here decide which value it holds), so its status is 1: under "
            "`set -e` the launcher stops right here on those runs")


@pytest.mark.parametrize(("middle", "level"), [
    # a condition bash's semantics decide (`true`, `:`, `false`, `[ WORD ]`, `!` before one):
    # its branch always runs, or never
    ("n=0\nif true; then ((n++)) || true; fi\n", None),
    ("n=0\nif :; then ((n++)) || true; fi\n", None),
    ("n=0\nif [ 1 ]; then ((n++)) || true; fi\n", None),
    ("n=0\nif ! false; then n=5; fi\n", None),
    ("if true; then n=5; fi\n", None),
    ("n=0\nif false; then ((n++)) || true; fi\n", "fail"),
    ("n=5\nif false; then n=0; fi\n", None),
    ("n=0\nif false; then n=5; fi\n", "fail"),
    ("n=0\nif ! true; then ((n++)) || true; fi\n", "fail"),
    # a condition it does not decide: as before
    ('n=0\nif [ -n "${X:-}" ]; then ((n++)) || true; fi\n', "warn"),
])
def test_a_branch_whose_condition_bash_decides_is_read_as_always_or_never_run(
        tmp_path, middle, level):
    script = f"#!/bin/bash\nset -e\n{middle}((n++))\n"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert [(f.level, f.line) for f in found] == ([(level, script.count("\n"))] if level else [])


def _counter_reads_as_bash_runs(tmp_path, body: str, level: str | None) -> None:
    """`body`'s `((n++))` under `set -e`: real bash stops there or not as `level` says, and
    the lint's finding on that line (none when `level` is None) says the same."""
    script = f"#!/bin/bash\n{body}"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    counter = script.count("\n", 0, script.rindex("((n++))")) + 1
    assert [(f.level, f.line) for f in found] == ([(level, counter)] if level else [])


@pytest.mark.parametrize(("body", "level"), [
    # the branches after one whose condition always succeeds (`if true`, `elif :`) never run:
    # nothing in them counts, sets or unsets anything, nor changes an option
    ("set -e\nn=0\nif true; then :; else ((n++)) || true; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\nif true; then ((n++)) || true; else :; fi\n((n++))\n", None),
    ("set -e\nn=5\nif true; then :; else n=0; fi\n((n++))\n", None),
    ("set -e\nif true; then :; else n=5; fi\n((n++))\n", "fail"),
    ("set -u\nif true; then n=1; else :; fi\n((n++)) || true\n", None),
    ("set -e\nif true; then :; else set +e; fi\nn=0\n((n++))\n", "fail"),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then n=5; elif true; then n=6; else n=0; fi\n((n++))\n',
     None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then n=5; elif :; then n=6; '
     'elif [ -z "${X:-}" ]; then n=0; fi\n((n++))\n', None),
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  if true; then n=5; else n=0; fi\ndone\n", None),
    ("set -e\nn=1\nfor i in 1 2; do\n  ((n++))\n  if true; then :; else unset n; fi\ndone\n",
     None),
    # … and one whose condition always fails (`if false`, `elif false`) never runs its
    # branch: an `else` after it always does
    ("set -e\nn=0\nif false; then :; else ((n++)) || true; fi\n((n++))\n", None),
    ("set -e\nn=0\nif false; then n=5; else n=0; fi\n((n++))\n", "fail"),
    ("set -u\nif false; then n=1; else :; fi\n((n++)) || true\n", "fail"),
    ("if false; then set -e; else :; fi\nn=0\n((n++))\n", None),
    ('set -e\nn=5\nif [ -n "${X:-}" ]; then :; elif false; then n=0; fi\n((n++))\n', None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then n=5; elif false; then n=6; fi\n((n++))\n', "warn"),
    # a `case` branch after `*)` that ended with `;;` never runs
    ('set -e\nn=5\ncase "${X:-}" in *) :;; 1) n=0;; esac\n((n++))\n', None),
    # `while true` / `while :` / `until false`: the body runs, up to its first `break`
    # (what comes after one may not run)
    ("set -e\nn=0\nwhile true; do ((n++)) || true; break; done\n((n++))\n", None),
    ("set -e\nwhile :; do n=1; break; done\n((n++))\n", None),
    ("set -e\nn=5\nuntil false; do n=0; break; done\n((n++))\n", "fail"),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then break; fi; n=5; break; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nwhile true; do [ -n "${X:-}" ] && break; n=5; break; done\n((n++))\n',
     "warn"),
    ('set -e\nn=0\nfor i in 1 2; do if [ -n "${X:-}" ]; then break; fi; n=5; done\n((n++))\n',
     "warn"),
    # what follows a `break` / `continue` of the body's own (a list of its own) never runs:
    # it sets, counts and stops nothing
    ("set -e\nn=5\nfor i in 1 2; do continue; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do break; n=0; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do ((n++)) || true; break; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nfor i in 1 2; do n=1; continue 1; ((n = 0)); done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do\n  break\n  ((n++))\ndone\n", None),
    ("set -u\nfor i in 1 2; do continue; n=1; done\n((n++)) || true\n", "fail"),
    # … and after one bash always runs: in a group of the body (`{ …; break; }`), after
    # `&&` / `||` of commands whose status is known (`true && break`), in a branch bash runs
    # whenever it reaches its `if` (`if true; then`, the `else` after `if false`)
    ("set -e\nn=5\nwhile true; do { echo hi; break; }; n=0; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do { ((n++)) || true; break; }; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do { break; n=0; }; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do true && break; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do false || break; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do false && :; [ 1 ] && break; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do if true; then break; fi; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nfor i in 1 2; do if true; then continue; fi; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do if false; then :; else break; fi; n=0; done\n((n++))\n", None),
    ("set -e\nn=5\nwhile true; do { if true; then { break; }; fi; }; n=0; done\n((n++))\n",
     None),
    ("set -u\nfor i in 1 2; do { continue; }; n=1; done\n((n++)) || true\n", "fail"),
    # … but not after one bash may skip, in a group or not (what follows it may run)
    ('set -e\nn=5\nwhile true; do { [ -n "${X:-}" ] && break; }; n=0; break; done\n((n++))\n',
     "warn"),
    ('set -e\nn=5\nwhile true; do [ -n "${X:-}" ] || break; n=0; break; done\n((n++))\n',
     "warn"),
    ('set -e\nn=5\nwhile true; do [ -n "${X:-}" ] && if true; then break; fi; n=0; break; done'
     "\n((n++))\n", "warn"),
    ('set -e\nn=5\nwhile true; do if true; then [ -z "${X:-}" ] && break; fi; n=0; break; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=5\nwhile true; do if [ -n "${X:-}" ]; then :; else break; fi; n=0; break; done'
     "\n((n++))\n", "warn"),
    # a `break` bash never runs, or runs in a subshell (`( … )`, a pipeline's element), leaves
    # no loop of the script's shell: what follows it runs
    ("set -e\nn=0\nwhile true; do true || break; n=5; break; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do ( break ); n=5; break; done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do ( continue ); n=5; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do { break; } | cat; n=5; break; done\n((n++))\n", None),
    # a `case` whose first pattern is `*`, an `if` / `case` each branch of which leaves (one of
    # them always running: an `else`, a `*)`), a redirected group (run in the script's shell):
    # the loop is left, what follows never runs
    ("set -e\nn=5\nwhile true; do case x in *) break;; esac; n=0; done\n((n++))\n", None),
    ('set -e\nn=5\nwhile true; do if [ -n "${X:-}" ]; then break; else break; fi; n=0; done\n'
     "((n++))\n", None),
    ('set -e\nn=5\nwhile true; do if [ -n "${X:-}" ]; then break; elif [ -z "${X:-}" ]; then '
     "break; else break; fi; n=0; done\n((n++))\n", None),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) break;; *) break;; esac; n=0; done\n'
     "((n++))\n", None),
    ("set -e\nn=5\nwhile true; do { break; } > /dev/null 2>&1; n=0; done\n((n++))\n", None),
    # … but not one a branch of which may not leave, nor a `break` that may run
    ('set -e\nn=5\nwhile true; do if [ -n "${X:-}" ]; then break; else :; fi; n=0; break; done'
     "\n((n++))\n", "warn"),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) break;; *) :;; esac; n=0; break; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) break;; esac; n=0; break; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=5\nwhile true; do [ -z "${X:-}" ] || { break; } 2>&1; n=0; break; done\n'
     "((n++))\n", "warn"),
    # a `case` branch that falls through (`;&`) into one that leaves, or after which the
    # patterns are tested on (`;;&`) with a `*` below it: it leaves as that one does
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) :;& *) break;; esac; n=0; done\n'
     "((n++))\n", None),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in *) :;& 1) break;; esac; n=0; done\n'
     "((n++))\n", None),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) :;& 2) :;& *) break;; esac; n=0; done\n'
     "((n++))\n", None),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) :;;& *) break;; esac; n=0; done\n'
     "((n++))\n", None),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) :;;& 2) break;; *) break;; esac; n=0; '
     "done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do case x in *) :;& y) break;; esac; n=5; break; done\n"
     "((n++))\n", "fail"),
    # … but not a `;;&` with no `*` below it (no pattern may match), nor one into a branch
    # that may not leave
    ('set -e\nn=5\nwhile true; do case "${X:-}" in *) :;;& 1) break;; esac; n=0; break; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=5\nwhile true; do case "${X:-}" in 1) :;& 2) :;; *) break;; esac; n=0; break; '
     "done\n((n++))\n", "warn"),
    # what runs in a subshell leaves no loop of the script's shell: a background list
    # (`break &`, `{ break; } &`), an `if` / `case` piped or in the background (`fi | cat`),
    # a subshell or pipeline in a group in a branch bash may skip
    ("set -e\nn=0\nwhile true; do break & n=5; break; done\nwait\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do { break; } &\nwait; n=5; break; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do if true; then break; fi | cat; n=5; break; done\n((n++))\n",
     None),
    ("set -e\nn=0\nwhile true; do if true; then break; fi 2>&1 | cat; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do case x in *) break;; esac | cat; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do if true; then break; fi &\nwait; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do if true; then continue; fi | cat; n=5; done\n((n++))\n",
     None),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then { ( break ); }; fi; n=5; break; '
     "done\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then { true || break; }; fi; n=5; '
     "break; done\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then { if true; then ( break ); fi; }; '
     "fi; n=5; break; done\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then { break & }; fi; n=5; break; done\n'
     "wait\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do { if true; then if true; then break; fi | cat; fi; }; n=5; "
     "break; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do { if true; then break & fi; }; n=5; break; done\nwait\n"
     "((n++))\n", None),
    # … but a compound followed by `||` / `&&` runs in the script's shell, and so does a group
    ("set -e\nn=0\nwhile true; do if true; then break; fi || true; n=5; break; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do if true; then break; fi && echo | cat; n=5; break; done\n"
     "((n++))\n", "fail"),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then { break; }; fi; n=5; break; done\n'
     "((n++))\n", "warn"),
    # a compound after a pipe (`cat x | if …`) runs in a subshell as one before it does, and
    # so does a loop before it (`done | cat`): its `break` / `break 2` leaves no loop here
    ("set -e\nn=0\nwhile true; do cat /dev/null | if true; then break; fi; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo |\nif true\nthen\nbreak\nfi\nn=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo | echo | if true; then break; fi || true; n=5; break; "
     "done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo | if true; then break; else break; fi; n=5; break; "
     "done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do echo | if true; then continue; fi; n=5; done\n((n++))\n",
     None),
    ('set -e\nn=0\nwhile true; do echo | if [ -n "${X:-}" ]; then break; fi; n=5; break; '
     "done\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do if [ -n "${X:-}" ]; then echo | if true; then break; fi; fi; '
     "n=5; break; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo | case x in *) if true; then break; fi;; esac; n=5; "
     "break; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do while true; do break 2; done | cat; n=5; break; done\n"
     "((n++))\n", None),
    # `break N` / `continue N` leaves N loops (all there are when fewer): the rest of each
    # body never runs, where bash runs it whenever it reaches it
    ("set -e\nn=0\nfor i in 1; do while true; do break 2; done; n=5; done\n((n++))\n", "fail"),
    ("set -e\nn=5\nwhile true; do while true; do break 2; n=0; done; n=0; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do while true; do break 3; done; n=5; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1 2; do while true; do continue 2; done; n=5; done\n((n++))\n",
     "fail"),
    ("set -e\nn=0\nfor i in 1; do while true; do if true; then break 2; fi; done; n=5; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do if true; then while true; do true && break 2; done; fi; "
     "n=5; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do { while true; do break 2; done; }; n=5; done\n((n++))\n",
     "fail"),
    ("set -e\nshopt -s lastpipe\nn=0\necho | for i in 1; do while true; do break 2; done; "
     "n=5; done\n((n++))\n", "fail"),
    # … not past a loop that may make no pass, nor one bash may not reach, nor in a subshell
    ('set -e\nn=0\nfor i in 1; do while [ -n "${X:-}" ]; do break 2; done; n=5; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in 1; do while true; do [ -n "${X:-}" ] && break 2; break; done; '
     "n=5; done\n((n++))\n", "warn"),
    ("set -e\nn=0\nfor i in 1; do echo | while true; do break 2; done; n=5; done\n((n++))\n",
     None),
    ("set -e\nn=0\nfor i in 1; do while true; do break 2; done | cat; n=5; done\n((n++))\n",
     None),
    # a plain `break` / `continue` leaves the innermost loop only (`break 2` two, …): the rest
    # of the loop around runs on every pass
    ("set -e\nn=0\nfor i in 1; do while true; do break; done; n=5; done\n((n++))\n", None),
    ("set -e\nn=0\nfor i in 1 2; do for j in 1; do continue; done; n=5; done\n((n++))\n",
     None),
    ("set -e\nn=0\nwhile true; do for j in 1 2; do break; done; n=5; break; done\n((n++))\n",
     None),
    ("set -e\nn=0\nfor i in 1; do while true; do while true; do break 2; done; done; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do if true; then while true; do break; done; fi; n=5; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nfor i in 1; do { while true; do break; done; }; n=5; done\n((n++))\n", None),
    # … and the loop around's own `break`, or a `break 2` in the inner loop, still does
    ('set -e\nn=0\nfor i in 1; do while true; do break; done; [ -n "${X:-}" ] && continue; '
     "n=5; done\n((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in 1; do while true; do break; done; while [ -n "${X:-}" ]; do '
     "break 2; done; n=5; done\n((n++))\n", "warn"),
    ("set -e\nn=0\nfor i in 1; do while true; do while true; do break 3; done; done; n=5; "
     "done\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do echo | while true; do break; done; n=5; done\n((n++))\n",
     None),
    # a `break 2` / `continue 2` in a group of the inner loop's body (`{ break 2; }`: the
    # script's shell) leaves the loop around too
    ("set -e\nn=0\nfor i in 1; do while true; do { break 2; }; done; n=5; done\n((n++))\n",
     "fail"),
    ("set -e\nn=0\nfor i in 1; do while true; do { { break 2; }; }; done; n=5; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do while true; do if true; then { break 2; }; fi; done; n=5; "
     "done\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1 2; do while true; do { continue 2; }; done; n=5; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do { while true; do { break 2; }; done; }; n=5; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=5\nfor i in 1; do while true; do { break 2; }; n=0; done; n=0; done\n"
     "((n++))\n", None),
    # … not past a loop that may make no pass, nor where bash may skip it
    ('set -e\nn=0\nfor i in 1; do while [ -n "${X:-}" ]; do { break 2; }; done; n=5; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nfor i in 1; do while true; do { [ -n "${X:-}" ] && break 2; break; }; '
     "done; n=5; done\n((n++))\n", "warn"),
    # … but one after `||` runs in the script's shell
    ("set -e\nn=0\nwhile true; do echo || if true; then break; fi; break; done\n((n++))\n",
     "fail"),
    # under `lastpipe` a pipeline's last element runs in the script's shell: its `break`
    # leaves the loop; the other elements' do not
    ("set -e\nshopt -s lastpipe\nn=0\nwhile true; do echo | if true; then break; fi; n=5; "
     "break; done\n((n++))\n", "fail"),
    ("set -e\nshopt -s lastpipe\nn=0\nwhile true; do true && echo | if true; then break; fi; "
     "n=5; break; done\n((n++))\n", "fail"),
    ("set -e\nshopt -s lastpipe\nn=0\nwhile true; do { break; } | cat; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nshopt -s lastpipe\nn=0\nwhile true; do if true; then break; fi | cat; n=5; "
     "break; done\n((n++))\n", None),
    # an `if` / `case` after `&&` / `||` of commands whose status is known, that bash runs
    # whenever it reaches the list (`false || if …`, `true && if …`), leaves as one on a list
    # of its own does; one after a status not known may not run
    ("set -e\nn=0\nwhile true; do false || if true; then break; fi; n=5; break; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=5\nwhile true; do false || if true; then break; fi; n=0; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do true && if true; then break; fi; n=5; break; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1 2; do false || if true; then continue; fi; n=5; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do false && true || if true; then break; fi; n=5; break; done\n"
     "((n++))\n", "fail"),
    ('set -e\nn=0\nwhile true; do false || if [ -n "${X:-}" ]; then break; else break; fi; '
     "n=5; break; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do if true; then false || if true; then break; fi; fi; n=5; "
     "break; done\n((n++))\n", "fail"),
    ("set -e\nfalse || if true; then set +e; fi\nn=0\n((n++))\n", None),
    ('set -e\nn=0\nwhile true; do [ -n "${X:-}" ] || if true; then break; fi; n=5; break; '
     "done\n((n++))\n", "warn"),
    # … and so does a `case` whose first pattern is on its header's line, after `&&` / `||`
    # (or a pipe, under `lastpipe`): the command after `*)` runs as one on a line of its own
    ("set -e\nn=0\nwhile true; do false || case x in *) break;; esac; n=5; break; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=5\nwhile true; do false || case x in *) break;; esac; n=0; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do true && case x in *) break;; esac; n=5; break; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1 2; do false || case x in *) continue;; esac; n=5; done\n"
     "((n++))\n", "fail"),
    ('set -e\nn=0\nwhile true; do false || case "${X:-}" in 1) break;; *) break;; esac; n=5; '
     "break; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nfor i in 1; do while true; do false || case x in *) break 2;; esac; done; "
     "n=5; done\n((n++))\n", "fail"),
    ("set -e\nshopt -s lastpipe\nn=0\nwhile true; do echo | case x in *) break;; esac; n=5; "
     "break; done\n((n++))\n", "fail"),
    # … not one bash may skip, nor a branch that may not leave, nor one in a subshell
    ('set -e\nn=0\nwhile true; do [ -n "${X:-}" ] || case x in *) break;; esac; n=5; break; '
     "done\n((n++))\n", "warn"),
    ('set -e\nn=0\nwhile true; do false || case "${X:-}" in 1) break;; esac; n=5; break; done\n'
     "((n++))\n", "warn"),
    ('set -e\nn=0\nwhile true; do false || case x in *) [ -n "${X:-}" ] && break;; esac; n=5; '
     "break; done\n((n++))\n", "warn"),
    ("set -e\nn=0\nwhile true; do echo | case x in *) break;; esac; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do true && echo | case x in *) break;; esac; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do false || case x in *) break;; esac | cat; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do false || case x in *) break;; esac &\nwait; n=5; break; "
     "done\n((n++))\n", None),
    # … and one such a status says bash never runs (`true || if …`, `false && while …`) runs
    # nothing: it counts, sets, leaves and changes nothing
    ("set -e\nn=0\nwhile true; do true || if true; then break; fi; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=5\nwhile true; do true || if true; then break; fi; n=0; break; done\n"
     "((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do true || if true; then if true; then break; fi; fi; n=5; "
     "break; done\n((n++))\n", None),
    ("set -e\nn=5\ntrue || if true; then n=0; fi\n((n++))\n", None),
    ('set -e\nn=5\ntrue || if [ -n "${X:-}" ]; then n=0; elif true; then n=0; else n=0; fi\n'
     "((n++))\n", None),
    ("set -e\nn=5\ntrue || while true; do n=0; break; done\n((n++))\n", None),
    ("set -e\nn=5\nfalse && for i in 1; do n=0; done\n((n++))\n", None),
    ("set -e\nn=5\ntrue || case x in\n  *) n=0;;\nesac\n((n++))\n", None),
    ("set -e\nn=0\ntrue || if true; then ((n++)); fi\n", None),
    ("set -e\ntrue || if true; then set +e; fi\nn=0\n((n++))\n", "fail"),
    ("n=0\ntrue || if true; then set -e; fi\n((n++))\n", None),
    ("set -e\nn=5\ntrue && false || if true; then n=0; fi\n((n++))\n", "fail"),
    # a compound after a pipe on a list with `&&` / `||` (after them, or in its condition)
    # runs in a subshell too
    ("set -e\nn=0\nwhile true; do true && echo | if true; then break; fi; n=5; break; done\n"
     "((n++))\n", None),
    ('set -e\nn=0\nwhile true; do [ -n "${X:-}" ] && echo | if true; then break; fi; n=5; '
     "break; done\n((n++))\n", None),
    ("set -e\nn=0\nwhile true; do true && echo | if true\nthen\nbreak\nfi\nn=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo | if true && true; then break; fi; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo | if false || true; then break; fi; n=5; break; done\n"
     "((n++))\n", None),
    ("set -e\nn=0\nwhile true; do echo x | if grep -q x | cat; then break; fi; n=5; break; "
     "done\n((n++))\n", None),
    # … up to its pipeline's end: a `break` after its `||` leaves the loop (this row had `:`
    # for the test and said None only as it read that `break` as in the subshell)
    ('set -e\nn=0\nwhile true; do true && echo | if true; then [ -n "${X:-}" ]; fi || break; '
     "n=5; break; done\n((n++))\n", "warn"),
])
def test_a_branch_bash_never_runs_counts_sets_and_changes_nothing(tmp_path, body, level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # what a pipeline's element sets, a compound's (`fi | cat`, `cat x | if …`) or a
    # command's (`echo | n=5`), bash sets in a subshell: after it the counter reads 0
    ("set -e\nn=0\necho | if true; then n=5; fi\n((n++))\n", "fail"),
    ('set -e\nn=0\necho | if [ -n "${X:-}" ]; then n=5; else n=6; fi\n((n++))\n', "fail"),
    ("set -e\nn=0\nif true; then n=5; fi | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\necho | case x in *) n=5;; esac\n((n++))\n", "fail"),
    ("set -e\nn=0\necho | while true; do n=5; break; done\n((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do n=5; break; done | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\nwhile true; do echo | if true; then n=5; fi; break; done\n((n++))\n",
     "fail"),
    ("set -e\nn=0\n{ n=5; } | cat\n((n++))\n", "fail"),
    ("set -e\nn=0\necho | { n=5; }\n((n++))\n", "fail"),
    ("set -e\nn=0\necho | n=5\n((n++))\n", "fail"),
    ("set -e\nn=0\ntrue && echo | if true; then n=5; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\nfalse || echo | if true; then n=5; fi\n((n++))\n", "fail"),
    ("set -e\nn=0\necho | if true && true; then n=5; fi\n((n++))\n", "fail"),
    ('set -e\nn=5\n[ -n "${X:-}" ] && echo | if true; then n=0; fi\n((n++))\n', None),
    # … but one set before the pipeline, after `&&`, or in the last element under
    # `lastpipe`, holds
    ("set -e\nn=0\nif true; then n=5; fi\necho | cat\n((n++))\n", None),
    ("set -e\nn=0\nn=5 && echo | cat\n((n++))\n", None),
    ("set -e\nshopt -s lastpipe\nn=0\necho | n=5\n((n++))\n", None),
    ("set -e\nshopt -s lastpipe\nn=0\necho | if true; then n=5; fi\n((n++))\n", None),
    ("set -e\nshopt -s lastpipe\nn=0\necho | while true; do n=5; break; done\n((n++))\n",
     None),
    ("set -e\nshopt -s lastpipe\nn=0\ntrue && echo | if true; then n=5; fi\n((n++))\n", None),
    # … not one before the pipe, nor where `lastpipe` is off again, or job control is on
    # (`set -m`), or a script only says the word
    ("set -e\nshopt -s lastpipe\nn=0\nif true; then n=5; fi | cat\n((n++))\n", "fail"),
    ("set -e\nshopt -s lastpipe\nn=0\n{ n=5; } | cat\n((n++))\n", "fail"),
    ("set -e\nshopt -s lastpipe\nshopt -u lastpipe\nn=0\necho | if true; then n=5; fi\n"
     "((n++))\n", "fail"),
    ("set -em\nshopt -s lastpipe\nn=0\necho | if true; then n=5; fi\n((n++))\n", "fail"),
    ("set -e\necho lastpipe\nn=0\necho | if true; then n=5; fi\n((n++))\n", "fail"),
])
def test_what_a_pipeline_sets_does_not_hold_past_it(tmp_path, body, level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # `set -e` stopping on a counter in a compound that is not a pipeline's last element
    # (`fi | cat`) ends that element's subshell only: without pipefail the script goes on, as
    # it does after one in the background (`fi &`) or before `&&` / `||` (`fi | cat || true`)
    ("set -e\nn=0\nif true; then ((n++)); fi | cat\n", None),
    ('set -e\nn=0\nif [ -n "${X:-}" ]; then ((n++)); fi | cat\n', None),
    ("set -e\nn=0\nif true; then ((n++)); echo hi; fi | cat\n", None),
    ("set -e\nn=0\nwhile true; do ((n++)); break; done | cat\n", None),
    ("set -e\nn=0\nfor i in 1; do ((n++)); done 2>&1 | cat\n", None),
    ("set -e\nn=0\ncase x in *) ((n++));; esac | cat\n", None),
    ("set -e\nn=0\necho | if true; then ((n++)); fi | cat\n", None),
    ("set -e\nn=0\nif true; then if true; then ((n++)); fi; fi | cat\n", None),
    ("set -e\nn=0\ntrue && if true; then ((n++)); fi | cat\n", None),
    ("set -e\nn=0\nif true; then ((n++)); fi | cat || true\n", None),
    ("set -e\nn=0\nif true; then ((n++)); fi &\nwait\n", None),
    ("set -e\nn=0\nif true; then set -o pipefail; ((n++)); fi | cat\n", None),
    ("set -e\nf() { if true; then ((n++)); fi | cat; }\nn=0\nf\n", None),
    # … but with pipefail its status is the pipeline's, and so is the last element's: bash
    # stops
    ("set -eo pipefail\nn=0\nif true; then ((n++)); fi | cat\n", "fail"),
    ("set -e\nn=0\necho | if true; then ((n++)); fi\n", "fail"),
    ("set -e\nn=0\nwhile true; do ((n++)); break; done | cat\n((n++))\n", "fail"),
])
def test_a_counter_in_a_piped_compound_stops_bash_as_its_pipeline_does(tmp_path, body, level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


def test_a_constant_condition_the_script_redefines_is_not_decided():
    # `true() { …; }`: bash calls the function, whose status the lint does not read
    script = ("#!/bin/bash\nset -e\ntrue() { [ -n \"$X\" ]; }\nn=0\n"
              "if true; then ((n++)) || true; fi\n((n++))\n")
    assert [f.level for f in lint_launcher(script)
            if f.check == CHECK_ARITH_ZERO and f.level != "pass"] == ["warn"]


@pytest.mark.parametrize(("options", "middle", "level"), [
    # every assignment before the counter is in a branch bash may skip, and nothing else sets
    # it: the runs that skip them read it unset, 0 (or unbound), and stop (a warning)
    ("set -e", 'if [ -n "${X:-}" ]; then n=5; fi\n', "warn"),
    ("set -e", 'case "${X:-}" in 1) n=5;; esac\n', "warn"),
    ("set -e", 'if [ -n "${X:-}" ]; then n=5; elif [ -z "${X:-}" ]; then :; fi\n', "warn"),
    ("set -u", 'if [ -n "${X:-}" ]; then n=5; fi\n', "warn"),
    # … set on every way, or counted first from unset (`|| true`): no stop on either run
    ("set -e", 'if [ -n "${X:-}" ]; then n=5; else n=6; fi\n', None),
    ("set -e", 'if [ -n "${X:-}" ]; then n=5; fi\n((n++)) || true\n', None),
    ("set -e", 'n=1\nif [ -n "${X:-}" ]; then n=5; fi\n', None),
    # a 0 in the branch stops bash on both runs (a failure, as before)
    ("set -e", 'if [ -n "${X:-}" ]; then n=0; fi\n', "fail"),
])
def test_a_counter_set_only_in_a_branch_before_it_reads_it_unset_on_the_other_runs(
        tmp_path, options, middle, level):
    script = f"#!/bin/bash\n{options}\n{middle}((n++))\n"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    line = script.count("\n")  # the `((n++))`, the script's last line
    assert [(f.level, f.line) for f in found] == ([(level, line)] if level else [])
    if level == "warn":
        assert found[0].message.startswith(
            f"line {line}: `((n++))` reads `n` unset on the runs that skip line 3, which sets it "
            "in a branch bash may not run (nothing else before it does)")
        assert found[0].check == (CHECK_ARITH_UNSET if options == "set -u" else CHECK_ARITH_ZERO)


_OTHER_BRANCH_UNSET = (
    "line 3: `((n++))` reads `n` unset, as `{a}` on line 3 is in another branch of the same "
    "`{c}`, which never runs before this one, and nothing else before it sets it",
    "3행: 3행의 `{a}`은(는) 같은 `{c}`의 다른 분기에 있어 이 분기보다 먼저 실행되는 일이 "
    "없고 그 앞에서 설정하는 다른 곳도 없어, `((n++))`은(는) 설정되지 않은 `n`을(를) 읽")


@pytest.mark.parametrize(("options", "middle", "level", "said"), [
    # an assignment in another branch of the `if` / `case` the counter is in never runs
    # before it: the counter reads what holds without it, and stops bash on the runs that
    # take its branch (a warning that says so)
    ("set -e", 'if [ -n "${X:-}" ]; then n=5; else ((n++)); fi\n', "warn",
     (_OTHER_BRANCH_UNSET[0].format(a="n=5", c="if") + "; it evaluates to 0, so its status is "
      "1: under `set -e` the launcher stops right here on the runs that take this branch",
      _OTHER_BRANCH_UNSET[1].format(a="n=5", c="if") + "고 값이 0이므로 종료 상태는 1입니다. "
      "`set -e`에서 이 분기를 타는 실행에서 런처가 바로 여기서 멈춥니다")),
    ("set -e", 'if [ -n "${X:-}" ]; then n=0; else ((n++)); fi\n', "warn",
     (_OTHER_BRANCH_UNSET[0].format(a="n=0", c="if"),
      _OTHER_BRANCH_UNSET[1].format(a="n=0", c="if"))),
    ("set -u", 'case "${X:-}" in 1) n=0;; *) ((n++)) || true;; esac\n', "warn",
     (_OTHER_BRANCH_UNSET[0].format(a="n=0", c="case") + ": under `set -u` bash stops right "
      "here on the runs that take this branch with `n: unbound variable`",
      _OTHER_BRANCH_UNSET[1].format(a="n=0", c="case") + "습니다. `set -u`에서는 이 분기를 "
      "타는 실행에서 bash가 `n: unbound variable`로 바로 여기서 멈춥니다")),
    ("set -e", 'n=0\nif [ -n "${X:-}" ]; then n=5; else ((n++)); fi\n', "warn",
     ("line 4: `((n++))` reads `n` at \"0\" as line 3 sets it (`n=5` on line 4 is in another "
      "branch of the same `if`, which never runs before this one), so its status is 1: under "
      "`set -e` the launcher stops right here on the runs that take this branch",
      "4행: `((n++))`은(는) 3행이 설정한 대로 `n`을(를) \"0\"(으)로 읽어(4행의 `n=5`은(는) 같은 "
      "`if`의 다른 분기에 있어 이 분기보다 먼저 실행되는 일이 없음) 종료 상태는 1입니다")),
    # … a count there too
    ("set -e", 'n=0\nif [ -n "${X:-}" ]; then ((n++)) || true; else ((n++)); fi\n', "warn",
     ("line 4: `((n++))` reads `n` at \"0\" as line 3 sets it (`((n++))` on line 4 is in "
      "another branch of the same `if`, which never runs before this one)", None)),
    # … what holds without it does not stop bash
    ("set -e", 'n=5\nif [ -n "${X:-}" ]; then n=0; else ((n++)); fi\n', None, None),
    ("set -e", 'n=5\nif [ -n "${X:-}" ]; then n=0; else if [ -z "${X:-}" ]; then ((n++)); fi; '
     "fi\n", None, None),
    # a `case` branch ended by `;;&` may run before the next one: not another branch
    ("set -e", 'n=5\ncase "${X:-}" in "") n=0;;& *) ((n++));; esac\n', "warn",
     ("line 4: `((n++))` reads `n` at \"0\" as line 4 sets it on some runs only", None)),
])
def test_an_assignment_in_another_branch_of_the_counters_if_is_said_to_never_run_before_it(
        tmp_path, options, middle, level, said):
    from bot.core.text import render_text
    from bot.slack.render import translator

    script = f"#!/bin/bash\n{options}\n{middle}"
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level != "pass"]
    line = script.count("\n")  # the counter's, the script's last line
    assert [(f.level, f.line) for f in found] == ([(level, line)] if level else [])
    if said:
        english, korean = said
        assert found[0].message.startswith(english)
        if korean:
            assert render_text(found[0].text, translator("ko").gettext).startswith(korean)


@pytest.mark.parametrize(("middle", "level"), [
    # a body the call is made through sets the counter in a branch: bash stops on the runs
    # where the 0 is what holds at the call (a warning), on every run when each way sets it so
    # or it is set again after the `fi` (a failure)
    ('if [ -n "${X:-}" ]; then m=0; fi', "warn"),
    ('if [ -z "${X:-}" ]; then m=0; else m=3; fi', "warn"),
    ('m=0; if [ -n "${X:-}" ]; then m=7; fi', "warn"),
    ('if [ -n "${X:-}" ]; then m=0; else m=0; fi', "fail"),
    ('if [ -n "${X:-}" ]; then m=7; fi; m=0', "fail"),
    ('if [ -n "${X:-}" ]; then m=7; else m=3; fi', None),
    ('if [ -n "${X:-}" ]; then m=0; fi; m=3', None),
])
def test_a_counter_set_in_a_branch_of_the_calling_body_reads_that_value_on_those_runs(
        tmp_path, middle, level):
    script = (f"#!/bin/bash\nrun() {{\n  {middle}\n  inc\n}}\ninc() {{ ((m++)); }}\nm=5\n"
              "set -e\nrun\n")
    assert _bash_stops_as_the_level_says(tmp_path, script, level)
    found = [f for f in lint_launcher(script)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert [(f.level, f.line) for f in found] == ([(level, 6)] if level else [])
    if level == "warn":
        assert found[0].message.startswith(
            "line 6: `((m++))` reads `m` at \"0\" as line 3 sets it on some runs only (branches "
            "on the way here decide which value it holds), so its status is 1: under `set -e` "
            "the launcher stops right here on those runs")


@pytest.mark.parametrize(("body", "level"), [
    # a body's assignment holds where bash runs it, at its calls, not where its text is: a
    # counter in main after a call of setup that bash may skip (an `if`, `[ … ] &&`) reads
    # setup's 0 on some runs only, with setup defined above main as below it
    ('set -e\nn=1\nsetup() { n=0; }\nmain() { [ -n "${X:-}" ] && setup; ((n++)); }\nmain\n',
     "warn"),
    ('set -e\nn=1\nsetup() { n=0; }\nmain() { if [ -n "${X:-}" ]; then setup; fi; ((n++)); }\n'
     "main\n", "warn"),
    ('set -e\nn=1\nmain() { [ -n "${X:-}" ] && setup; ((n++)); }\nsetup() { n=0; }\nmain\n',
     "warn"),
    ('set -e\nn=0\nsetup() { n=1; }\nmain() { if [ -n "${X:-}" ]; then setup; fi; ((n++)); }\n'
     "main\n", "warn"),
    # … on every run where each way through main sets it so, or the call is on every way
    ('set -e\nsetup() { n=0; }\nmain() { if [ -n "${X:-}" ]; then setup; fi; ((n++)); }\n'
     "main\n", "fail"),
    ("set -e\nn=1\nsetup() { n=0; }\nmain() { setup; ((n++)); }\nmain\n", "fail"),
    ('set -e\nn=0\nsetup() { n=1; }\nmain() { if [ -n "${X:-}" ]; then setup; else setup; fi; '
     "((n++)); }\nmain\n", None),
    # … and what a body called in the script before the counter's body (`setup; main`, or
    # through another body) left holds there, on every run
    ('set -e\nsetup() { n=0; }\nsetup\nmain() { if [ -n "${X:-}" ]; then n=3; fi; ((n++)); }\n'
     "main\n", "warn"),
    ('set -e\nsetup() { n=0; }\ninit() { setup; }\ninit\n'
     'main() { if [ -n "${X:-}" ]; then n=3; fi; ((n++)); }\nmain\n', "warn"),
    ("set -e\nsetup() { n=0; }\nsetup\nmain() { ((n++)); }\nmain\n", "fail"),
    ("set -e\nsetup() { n=5; }\nsetup\nmain() { ((n++)); }\nmain\n", None),
])
def test_a_counter_in_a_body_reads_another_bodys_assignment_at_its_call_only(tmp_path, body,
                                                                           level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # a trap's action on a signal (`INT`, `TERM`, `USR1`) or `ERR` runs on no normal run (`ERR`
    # under `set -e`: only as the script stops): its function's body is no call there, neither
    # its counter nor what it sets
    ("set -e\nn=1\nreset() { n=0; }\ntrap reset INT\n((n++))\n", None),
    ("set -e\nn=1\nreset() { n=0; }\ntrap 'reset; exit 1' INT TERM\n((n++))\n", None),
    ('set -e\nn=1\nreset() { n=0; }\ntrap -- "reset" SIGUSR1\n((n++))\n', None),
    ("set -e\nn=0\nf() { ((n++)); }\ntrap f ERR\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\ntrap 'f; exit 1' TERM\n", None),
    # … set where a command starts after `then`, `do` or `else` on the line
    ("set -e\nn=1\nreset() { n=0; }\nif true; then trap reset INT; fi\n((n++))\n", None),
    ('set -e\nn=1\nreset() { n=0; }\nif [ -n "${X:-}" ]; then :; else trap reset TERM; fi\n'
     "((n++))\n", None),
    ("set -e\nn=1\nreset() { n=0; }\nfor s in 1; do trap 'reset; exit 1' USR2; done\n((n++))\n",
     None),
    ("set -e\nn=0\nf() { ((n++)); }\nif true; then trap f INT; fi\n", None),
    # … but an ERR trap's action runs on the way where `set -e` is off anywhere or not yet on
    ("set -e\nn=1\non_err() { n=0; }\nif true; then trap on_err ERR; fi\nset +e; false; set -e\n"
     "((n++))\n", "fail"),
    ("set -e\nn=1\non_err() { n=0; }\ntrap on_err ERR\nset +o errexit\nfalse\nset -e\n((n++))\n",
     "fail"),
    ("n=1\non_err() { n=0; }\ntrap on_err ERR\nfalse\nset -e\n((n++))\n", "fail"),
    ("set -euo pipefail\nn=1\non_err() { n=0; }\nif true; then trap on_err ERR; fi\n"
     "if ! false; then :; fi\n((n++))\n", None),
    # … a call of it is one all the same
    ("set -e\nn=1\nreset() { n=0; }\ntrap reset INT\nreset\n((n++))\n", "fail"),
    ("set -e\nn=0\nf() { ((n++)); }\ntrap f INT\nf\n", "fail"),
    ("set -e\nn=1\nreset() { n=0; }\nif true; then trap reset INT; reset; fi\n((n++))\n",
     "fail"),
])
def test_a_function_named_only_in_a_signal_trap_runs_on_no_normal_run(tmp_path, body, level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # `builtin f` and `builtin command f` skip functions as `command f` does: no body of f runs
    # there (`builtin f` fails: no such builtin; `builtin command f` looks for a file f, and
    # under `set -e` bash 5.2 ends the shell there when there is none, tested or not: these
    # rows run it without `set -e`)
    ("set -e\nn=1\nf() { n=0; }\nbuiltin f || true\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nbuiltin f || true\n", None),
    ("n=1\nf() { n=0; }\nbuiltin command f\nset -e\n((n++))\n", None),
    ("set -e\nn=0\nf() { ((n++)); }\nset +e\nbuiltin command f\nset -e\n", None),
    # … a call of f is one all the same
    ("set -e\nn=0\nf() { ((n++)); }\nbuiltin f || true\nf\n", "fail"),
])
def test_builtin_and_builtin_command_run_no_function_body(tmp_path, body, level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


@pytest.mark.parametrize(("body", "level"), [
    # `unset n` leaves `n` with no value: arithmetic reads 0 (a stop under `set -e`), `set -u`
    # an unbound variable (a stop whatever tests the status)
    ("set -e\nn=1\nunset n\n((n++))\n", "fail"),
    ("set -e\nn=1\nunset -v m n\n((n++))\n", "fail"),
    ("set -u\nn=1\nunset n\n((n++)) || true\n", "fail"),
    ('set -eu\nn=5\nif [ -n "${X:-}" ]; then unset n; else unset n; fi\n((n++))\n', "fail"),
    ("set -e\nn=1\nf() { unset n; }\nf\n((n++))\n", "fail"),
    ("set -e\nf() { n=1; unset n; ((n++)); }\nf\n", "fail"),
    # … on the runs that take a branch bash may skip
    ('set -e\nn=1\n[ -n "${X:-}" ] && unset n\n((n++))\n', "warn"),
    ('set -e\nn=1\nif [ -n "${X:-}" ]; then unset n; fi\n((n++))\n', "warn"),
    # … set or counted again since, in a subshell, a function, or no command
    ("set -e\nn=1\nunset n; n=5\n((n++))\n", None),
    ("set -e\nn=1\nunset n\n((n++)) || true\n((n++))\n", None),
    ("set -e\nn=1\nunset n\nn+=1\n((n++))\n", None),
    ("set -e\nn=1\n( unset n )\n((n++))\n", None),
    ("set -e\nn=1\nunset -f n\n((n++))\n", None),
    ("set -e\nn=1\necho unset n\n((n++))\n", None),
    # … or set since by what is no plain assignment: a default, a `for`, a `-v` guard (also
    # where the counter is in a function called after them)
    ('set -euo pipefail\nunset n\n: "${n:=3}"\n((n++))\n', None),
    ("set -euo pipefail\nunset n\nfor n in 1 2 3; do :; done\n((n++))\n", None),
    ("set -euo pipefail\nunset n\n[[ -v n ]] || n=5\n((n++)) || true\n", None),
    ("set -eu\nf() { ((n++)); }\nn=1\nunset n\nfor n in 1 2; do :; done\nf\n", None),
    # (… but not when it sets another variable, or only after the counter)
    ('set -eu\nunset n\n: "${m:=3}"\n((n++)) || true\n', "fail"),
    ("set -e\nn=1\nunset n\n((n++))\nfor n in 1; do :; done\n", "fail"),
])
def test_a_counter_after_unset_reads_its_variable_unset(tmp_path, body, level):
    _counter_reads_as_bash_runs(tmp_path, body, level)


def test_a_counter_after_unset_names_the_unset():
    (f,) = [f for f in lint_launcher("#!/bin/bash\nset -e\nn=1\nunset n\n((n++))\n")
            if f.check == CHECK_ARITH_ZERO]
    assert f.message.startswith("line 5: `((n++))` reads `n` unset, as `unset n` on line 4 "
                                "leaves it, and evaluates to 0, so its status is 1")
    assert f.fix.startswith("set it first (`n=0`)")


def test_a_function_calling_itself_without_end_is_followed_a_bounded_depth():
    # bash would recurse until it runs out of stack; the lint follows the calls MAX_CALL_DEPTH
    # deep and says what the first pass does
    script = "#!/bin/bash\nf() { ((m++)); f; }\ng() { f; g; }\nm=0\nset -e\ng\n"
    found = [(f.check, f.line) for f in lint_launcher(script)
             if f.check == CHECK_ARITH_ZERO and f.level != "pass"]
    assert found == [(CHECK_ARITH_ZERO, 2)]
    assert [f.level for f in lint_launcher("#!/bin/bash\nset -e\nf(){ f; }\nf\n")
            if f.check == CHECK_ARITH_ZERO] == ["pass"]


def test_a_prefix_assignment_is_named_as_setting_the_variable_for_one_command_only():
    (f,) = [f for f in lint_launcher(HEAD + "n=5 srun true\n((n++))\n")
            if f.check == CHECK_ARITH_UNSET and f.line is not None]
    assert (f.level, f.line) == ("fail", 4)
    assert f.fix.startswith("`n=5 srun true` on line 3 sets `n` in that command's environment "
                            "only, not in the script: set it on a line of its own first (`n=0`)")


def test_arith_finding_names_the_fix():
    (f,) = [f for f in lint_launcher(HEAD + "n=0\n((n++))\n") if f.check == CHECK_ARITH_ZERO]
    assert f.level == "fail" and f.line == 4 and "(( ++n ))" in f.fix and "FAILED 1:0" in f.message


def test_array_variable_is_fine_in_an_array_job():
    script = "#!/bin/bash\n#SBATCH --array=0-3\nset -u\necho $SLURM_ARRAY_TASK_ID\n"
    assert _worst(script, CHECK_NOUNSET) == "pass"


def test_conda_activate_under_nounset_is_a_note():
    # whether the env's activate.d scripts read unset variables is not in the launcher
    script = HEAD + "source ~/miniconda3/etc/profile.d/conda.sh\nconda activate train\n"
    (f,) = [f for f in lint_launcher(script) if f.check == CHECK_NOUNSET]
    assert f.level == "pass" and f.line == 4 and "set +u" in f.fix
    assert f.message.startswith("line 4: note: ") and "not in the script" in f.message
    unguarded = "#!/bin/bash\nset -eo pipefail\nconda activate train\n"
    assert _worst(unguarded, CHECK_NOUNSET) == "pass"
    guarded = HEAD + "set +u\nconda activate train\nset -u\n"
    assert _worst(guarded, CHECK_NOUNSET) == "pass"


@pytest.mark.parametrize(("script", "level"), [
    ("#!/bin/bash\n#SBATCH -N 1\necho hi\n", "pass"),
    ("#SBATCH -N 1\necho hi\n", "fail"),
    ("\n#!/bin/bash\necho hi\n", "fail"),
    ("# launcher\n#!/bin/bash\necho hi\n", "fail"),
])
def test_sbatch_needs_a_shebang_on_line_one(script, level):
    assert _worst(script, CHECK_SHEBANG) == level


# ---------------------------------------------------------------- JIT

def _jit(script: str) -> str:
    """The JIT check's verdict on the script alone: `note` for a use with no compiler in sight
    (the toolchain probe decides), else the finding's level."""
    (f,) = [f for f in lint_launcher(script) if f.check == CHECK_JIT_CC]
    return "note" if f.level == "pass" and f.message.startswith("note: ") else f.level


@pytest.mark.parametrize(("line", "level"), [
    ("python train.py --compile=False", "pass"),
    ("python train.py --compile 0", "pass"),
    ("python train.py --compile", "note"),
    ("export TRITON_HOME=/tmp/triton_home\npython train.py", "pass"),
    ("export TRITON_CACHE_DIR=$HOME/.triton/cache\npython train.py", "pass"),
    ('echo "torch.compile is off"\npython train.py', "pass"),
    ("export TORCH_COMPILE_DISABLE=1\npython train.py --compile", "pass"),
    ("deepspeed train.py --deepspeed ds.json", "note"),
    ("DS_BUILD_OPS=1 deepspeed train.py --deepspeed ds.json", "pass"),
    ("module load gcc/12\npython train.py --compile", "pass"),
    ("ml GCCcore/12.3.0\npython train.py --compile", "note"),
    ("srun --container-image=nvcr.io/nvidia/pytorch:24.01 python train.py --compile", "pass"),
    ("singularity exec --nv img.sif python train.py --compile", "pass"),
])
def test_jit_detection(line, level):
    assert _jit(HEAD + line + "\n") == level


def test_the_toolchain_probe_gives_the_jit_verdict():
    findings = lint_launcher(HEAD + "python train.py --compile\n")
    (skipped,) = [f for f in after_toolchain_probe(findings, None) if f.check == CHECK_JIT_CC]
    assert skipped.level == "fail" and "probe was skipped" in skipped.message
    (works,) = [f for f in after_toolchain_probe(findings, True) if f.check == CHECK_JIT_CC]
    assert works.level == "pass" and "compiled and ran" in works.message
    (broken,) = [f for f in after_toolchain_probe(findings, False) if f.check == CHECK_JIT_CC]
    assert broken.level == "warn"  # beside the probe's own fail
    module = lint_launcher(HEAD + "module load gcc\npython train.py --compile\n")
    assert [f.level for f in after_toolchain_probe(module, None) if f.check == CHECK_JIT_CC] == [
        "pass"]


def test_slurm_variables_the_sbatch_command_line_may_set_are_warnings_or_nothing():
    restart = "#!/bin/bash\nset -u\necho $SLURM_RESTART_COUNT\n"
    assert _worst(restart, CHECK_NOUNSET) == "fail"  # unset on every first run
    array = "#!/bin/bash\nset -u\necho $SLURM_ARRAY_TASK_ID\n"
    assert _worst(array, CHECK_NOUNSET) == "warn"  # unless submitted with --array
    usage = "#!/bin/bash\n# Usage: sbatch --array=1-4 run.sh\nset -u\necho $SLURM_ARRAY_TASK_ID\n"
    assert _worst(usage, CHECK_NOUNSET) == "pass"
    cpus = "#!/bin/bash\n#SBATCH -c 8\nset -u\necho $SLURM_CPUS_PER_TASK\n"
    assert _worst(cpus, CHECK_NOUNSET) == "pass"


def test_a_cc_flag_variable_is_not_a_compiler():
    (jit,) = [f for f in lint_launcher(HEAD + "CC=true\ndeepspeed train.py\n")
              if f.check == CHECK_JIT_CC]
    assert jit.level == "pass" and jit.message.startswith("note: ")
    assert "sets no `CC`" in jit.message
    real = HEAD + "export CC=gcc CXX=g++\ndeepspeed train.py\n"
    assert _worst(real, CHECK_JIT_CC) == "pass"


def test_a_function_piped_into_tee_stops_silently_and_the_message_says_completed(tmp_path):
    # the silent exit: `set -e` ends main's subshell at the `ls`, the pipeline returns tee's 0
    script = ("#!/bin/bash\nset -eu\nmain() {\n  L=$(ls -d ckpt/step_*)\n"
              '  if [ -z "$L" ]; then echo fresh; fi\n  echo TRAINING\n}\n'
              'main "$@" 2>&1 | tee run.log\n')
    path = tmp_path / "launch.sh"
    path.write_text(script)
    proc = subprocess.run([shutil.which("bash") or "bash", str(path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and "TRAINING" not in proc.stdout
    (f,) = [f for f in lint_launcher(script) if f.check == CHECK_EMPTY_MATCH]
    assert f.level == "fail" and f.line == 4
    assert "COMPLETED 0:0" in f.message and "line 8" in f.message


def test_a_group_after_a_prefix_word_is_still_read():
    script = HEAD + ("mkdir -p ckpt\ntime { L=$(ls -d ckpt/step_*); }\n"
                     'if [ -z "$L" ]; then :; fi\n')
    assert _worst(script) == "fail"
