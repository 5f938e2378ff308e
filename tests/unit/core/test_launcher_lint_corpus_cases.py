"""Launcher lint on the patterns the real-launcher corpus (bench/launcher_corpus.py) turned up:
each case is a small script written here that reproduces one true alarm the lint missed or one
false alarm it raised. Where bash can show the stop, bash is run too."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.core.launcher_lint import (
    CHECK_EMPTY_MATCH,
    CHECK_JIT_CC,
    CHECK_POINTER,
    after_toolchain_probe,
    lint_launcher,
)

HEAD = "#!/bin/bash\nset -euo pipefail\n"


def _level(script: str, check: str, line: int) -> str:
    levels = [f.level for f in lint_launcher(script) if f.check == check and f.line == line]
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


def _bash_reaches_the_end(tmp_path, script: str, files: dict[str, str]) -> bool:
    bash = shutil.which("bash")
    assert bash, "bash is needed to check the lint against the real shell"
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "launch.sh").write_text(script + "echo REACHED_THE_END\n")
    proc = subprocess.run([bash, "launch.sh"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=20, env={"PATH": "/usr/bin:/bin"})
    return "REACHED_THE_END" in proc.stdout


# ------------------------------------------- empty-result branches the job never reaches

# TRL's GOLD launchers: a key read from the config with a default for a config without it,
# and an unrelated error exit further down that must not count as the empty side
CONFIG_DEFAULT = HEAD + (
    'CONFIG=recipe.yaml\n'
    "STEPS=$(grep -E '^\\s*grad_acc:' \"$CONFIG\" | head -n 1 | awk '{print $2}')\n"
    'STEPS=${STEPS:-1}\n'
    'if [[ ! -f "$CONFIG" ]]; then\n  echo "no config"\n  exit 1\nfi\n'
)
CONFIG_FALLBACK = HEAD + (
    'CONFIG=recipe.yaml\n'
    "REV=$(grep -E '^\\s*model_revision:' \"$CONFIG\" | head -n 1 | awk '{print $2}')\n"
    'if [[ -z "${REV:-}" ]]; then\n  REV=main\nfi\n'
)


@pytest.mark.parametrize("script", [CONFIG_DEFAULT, CONFIG_FALLBACK])
def test_a_config_grep_with_an_empty_branch_under_pipefail_warns(tmp_path, script):
    (finding,) = [f for f in lint_launcher(script)
                  if f.check == CHECK_EMPTY_MATCH and f.line == 4]
    assert finding.level == "warn"
    assert "expects an empty result" in finding.message and "FAILED 1:0" in finding.message
    assert not _bash_reaches_the_end(tmp_path, script, {"recipe.yaml": "lr: 1e-4\n"})
    assert _bash_reaches_the_end(tmp_path, script, {
        "recipe.yaml": "grad_acc: 4\nmodel_revision: main\n"})


@pytest.mark.parametrize(("branch", "level"), [
    # the empty side exits anyway: stopping earlier loses nothing
    ('if [ -z "$V" ]; then\n  echo "no key"; exit 1\nfi\n', "pass"),
    ('if [ -z "$V" ]; then echo "no key"; exit 1; fi\n', "pass"),
    ('[ -z "$V" ] && { echo "no key"; exit 1; }\n', "pass"),
    ('if [ -n "$V" ]; then\n  echo "$V"\nelse\n  exit 2\nfi\n', "pass"),
    # the empty side goes on
    ('if [ -n "$V" ]; then\n  echo "$V"\nelse\n  V=none\nfi\nexit 1\n', "warn"),
    ('[ -n "$V" ] || V=none\n', "warn"),
])
def test_the_empty_side_of_the_branch_decides(branch, level):
    script = HEAD + "V=$(grep key: params.yaml | awk '{print $2}')\n" + branch
    assert _level(script, CHECK_EMPTY_MATCH, 3) == level


def test_another_programs_output_with_a_default_stays_a_note():
    # `scontrol show job` always prints JobName=: a default after it is no evidence
    script = HEAD + ("NAME=$(scontrol show job \"$SLURM_JOB_ID\" | grep -oP 'JobName=\\K\\S+')\n"
                     "NAME=${NAME:-train}\n")
    assert _level(script, CHECK_EMPTY_MATCH, 3) == "pass"


def test_an_eval_master_over_opt_step_checkpoints_warns(tmp_path):
    # SmolVLM's eval masters: `opt_step*` is a checkpoint name; none exists before the first save
    script = HEAD + ("CK=exp/run1\nSTEPS=(`ls -d $CK/opt_step*/unwrapped_model`)\n"
                     'for s in "${STEPS[@]}"; do echo "$s"; done\n')
    assert _level(script, CHECK_EMPTY_MATCH, 4) == "warn"
    assert not _bash_reaches_the_end(tmp_path, script, {})
    assert _bash_reaches_the_end(tmp_path, script, {"exp/run1/opt_step-1000/unwrapped_model": ""})


# ------------------------------------------- the script's own output, read as it wrote it

TEE_LOG = HEAD + ('LOG=out/train.log\nmkdir -p out\nsrun python train.py 2>&1 | tee "$LOG"\n'
                  'IT=$(grep "iteration 1/" "$LOG" | head -1)\n')


def test_a_grep_over_a_log_the_script_just_wrote_is_a_note():
    # Megatron-LM's tp-numerics launcher: pipefail stops the job first if training failed
    (note,) = [f for f in lint_launcher(TEE_LOG) if f.check == CHECK_EMPTY_MATCH and f.line == 6]
    assert note.level == "pass" and "this script wrote on line 5" in note.message


def test_the_same_grep_with_an_empty_branch_still_fails():
    script = TEE_LOG + 'if [ -z "$IT" ]; then echo "no iteration logged"; fi\n'
    assert _level(script, CHECK_EMPTY_MATCH, 6) == "fail"


# ------------------------------------------- a pointer the command before writes

def test_a_pointer_written_by_the_command_before_is_a_note():
    # gpt-neox's merge_ckpt.sh: the merge step writes $OUT/latest, the next line reads it
    script = ("#!/bin/bash\nOUT=/fsx/merged\nmkdir -p $OUT\n"
              "python3 merge.py --input_dir ckpts --output_dir ${OUT}\n"
              "STEP=`cat ${OUT}/latest`\npython3 convert.py --input_dir ${OUT}/${STEP}\n")
    (note,) = [f for f in lint_launcher(script) if f.check == CHECK_POINTER]
    assert note.level == "pass" and note.line == 5 and "line 4 writes it" in note.message
    assert "`$OUT/latest`" in note.message  # the backquotes around the read are not the path
    unwritten = "#!/bin/bash\nOUT=/fsx/merged\nSTEP=`cat ${OUT}/latest`\n"
    assert _level(unwritten, CHECK_POINTER, 3) == "fail"


# ------------------------------------------- what the script cannot tell is a note

def test_jit_with_no_compiler_in_sight_is_a_note_until_the_probe_speaks():
    findings = lint_launcher(HEAD + "deepspeed train.py --deepspeed ds.json\n")
    (note,) = [f for f in findings if f.check == CHECK_JIT_CC]
    assert note.level == "pass" and note.message.startswith("note: ")
    assert "not in the script" in note.message
    (broken,) = [f for f in after_toolchain_probe(findings, False) if f.check == CHECK_JIT_CC]
    assert broken.level == "warn" and "probe found no working one" in broken.message
    assert not broken.message.startswith("note: ")
