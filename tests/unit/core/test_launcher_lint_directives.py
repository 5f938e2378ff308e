"""Launcher lint: `#SBATCH` lines sbatch never reads: below the first command (sbatch(1): it
stops reading directives at the first line that is neither blank nor a comment), and after
spaces or tabs (sbatch reads only lines starting with `#SBATCH`; Slurm 22.05 and 24.11 ignore
an indented one, tests/integration/test_launcher_lint_slurm.py)."""

from __future__ import annotations

import pytest
from fakes import present

from bot.core.launcher_lint import (
    CHECK_SBATCH_AFTER_COMMAND,
    CHECK_SBATCH_INDENTED,
    CHECK_SBATCH_OWN_ERROR,
    lint_launcher,
)


def _flagged(script: str, check: str = CHECK_SBATCH_AFTER_COMMAND) -> dict[int, str]:
    return {present(f.line): f.message for f in lint_launcher(script)
            if f.check == check and f.level != "pass"}


def test_a_directive_below_the_first_command_is_named_with_that_command():
    script = ("#!/bin/bash\n#SBATCH --nodes=2\n\nmodule load cuda/12.4\n"
              "#SBATCH --time=2-00:00:00\n#SBATCH --gres=gpu:8\nsrun python train.py\n")
    found = _flagged(script)
    assert sorted(found) == [5, 6]
    assert "`#SBATCH --time=2-00:00:00`" in found[5]
    assert "line 4: `module load cuda/12.4`" in found[5]
    (fix,) = {f.fix for f in lint_launcher(script)
              if f.check == CHECK_SBATCH_AFTER_COMMAND and f.line == 5}
    assert "above line 4" in fix


@pytest.mark.parametrize("script", [
    # comments and blank lines (indented ones too) do not end the directives
    "#!/bin/bash\n# job settings\n\n   # indented comment\n#SBATCH --time=1:00:00\nsrun x\n",
    # a heredoc writing another batch script: its directives are that script's
    "#!/bin/bash\nmkdir -p logs\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --nodes=2\nsrun x\nEOF\n",
    "#!/bin/bash\nset -e\ncat > job.sh <<-'END'\n\t#!/bin/bash\n#SBATCH --gres=gpu:1\nEND\n",
    # a multi-line string holding a script
    '#!/bin/bash\nHEAD="#!/bin/bash\n#SBATCH --nodes=1\n"\necho "$HEAD" > job.sh\n',
    # a commented-out directive
    "#!/bin/bash\n#SBATCH --nodes=1\necho hi\n##SBATCH --time=1:00:00\n# SBATCH --mem=1G\n",
])
def test_what_is_not_an_ignored_directive(script):
    assert _flagged(script) == {}
    assert _flagged(script, CHECK_SBATCH_INDENTED) == {}


def test_a_script_without_commands_or_directives_passes():
    (finding,) = [f for f in lint_launcher("#!/bin/bash\n#SBATCH -N 1\n")
                  if f.check == CHECK_SBATCH_AFTER_COMMAND]
    assert finding.level == "pass"


def test_an_indented_directive_is_named_with_the_fix():
    script = ("#!/bin/bash\n#SBATCH --job-name=pretrain\n  #SBATCH --gres=gpu:8\n"
              "\t#SBATCH --time=2-00:00:00\n#SBATCH --nodes=2\n\nsrun python train.py\n")
    found = {present(f.line): f for f in lint_launcher(script)
             if f.check == CHECK_SBATCH_INDENTED and f.level == "warn"}
    assert sorted(found) == [3, 4]
    assert "`#SBATCH --gres=gpu:8` has spaces or tabs before `#SBATCH`" in found[3].message
    assert found[4].fix == "start line 4 with `#SBATCH` (remove the spaces or tabs before it)"
    # an indented line is a comment to sbatch: the flush ones below it are still read
    assert _flagged(script) == {}


def test_an_indented_directive_below_the_first_command_is_one_finding_with_both_fixes():
    script = ("#!/bin/bash\n#SBATCH --nodes=1\nmodule load cuda\nif [ -n \"$BIG\" ]; then\n"
              "    #SBATCH --mem=900G\nfi\nsrun python train.py\n")
    (late,) = [f for f in lint_launcher(script)
               if f.check == CHECK_SBATCH_AFTER_COMMAND and f.level == "warn"]
    assert late.line == 5 and "line 3: `module load cuda`" in late.message
    assert "above line 3" in late.fix and "no spaces or tabs before it" in late.fix
    assert _flagged(script, CHECK_SBATCH_INDENTED) == {}


@pytest.mark.parametrize("script", [
    # an indented directive in a heredoc or a string writes another script
    "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n  #SBATCH --nodes=2\nsrun x\nEOF\n",
    '#!/bin/bash\nHEAD="#!/bin/bash\n    #SBATCH --nodes=1\n"\necho "$HEAD" > job.sh\n',
    # indented comments that only mention sbatch
    "#!/bin/bash\n#SBATCH -N 1\n  # SBATCH --time=1\n  ## SBATCH x\nsrun x  #SBATCH not\n",
])
def test_what_is_not_an_indented_directive(script):
    assert _flagged(script, CHECK_SBATCH_INDENTED) == {}


def _own_error_notes(script: str) -> list[tuple[int | None, str]]:
    return [(f.line, f.message) for f in lint_launcher(script)
            if f.check == CHECK_SBATCH_OWN_ERROR]


@pytest.mark.parametrize("directive", ["--error=logs/%x-%j.err", "--error logs/e.err",
                                       "-e logs/e.err", "-elogs/e.err",
                                       "--time=1:00:00 --error=e.err"])
def test_a_scripts_own_stderr_file_is_said_once_to_be_joined_into_the_watched_log(directive):
    script = (f"#!/bin/bash\n#SBATCH --output=o.out\n#SBATCH {directive}\n"
              "#SBATCH -e again.err\nsrun python train.py\n")
    [(line, message)] = _own_error_notes(script)
    assert line == 3 and f"`#SBATCH {directive}`" in message
    assert "goes into the log trainbot watches" in message
    assert "`SBATCH_ERROR` for a `submit_command` wrapper" in message  # (a wrapper's recipe)
    assert all(f.level == "pass" for f in lint_launcher(script)
               if f.check == CHECK_SBATCH_OWN_ERROR)


@pytest.mark.parametrize("script", [
    "#!/bin/bash\n#SBATCH --output=o.out\n#SBATCH --exclude=n1\n#SBATCH --export=ALL\nsrun x\n",
    "#!/bin/bash\nsrun x\n#SBATCH --error=late.err\n",  # ignored by sbatch: not its stderr
    "#!/bin/bash\n  #SBATCH --error=indented.err\nsrun x\n",
    "#!/bin/bash\ncat > job.sh <<EOF\n#SBATCH --error=other.err\nEOF\n",  # another script's
])
def test_a_script_naming_no_stderr_file_in_force_gets_a_pass_without_a_line(script):
    """Every check reports a line of the report: this one said nothing at all."""
    assert _own_error_notes(script) == [
        (None, "no `#SBATCH --error` in force: the job's stderr goes into the log trainbot "
               "watches (the recipe's log_path)")]
