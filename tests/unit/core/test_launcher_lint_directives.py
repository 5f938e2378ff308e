"""Launcher lint: `#SBATCH` lines below the first command, which sbatch never reads (sbatch(1):
it stops reading directives at the first line that is neither blank nor a comment)."""

from __future__ import annotations

import pytest

from bot.core.launcher_lint import CHECK_SBATCH_AFTER_COMMAND, lint_launcher


def _flagged(script: str) -> dict[int, str]:
    return {f.line: f.message for f in lint_launcher(script)
            if f.check == CHECK_SBATCH_AFTER_COMMAND and f.level != "pass"}


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


def test_a_script_without_commands_or_directives_passes():
    (finding,) = [f for f in lint_launcher("#!/bin/bash\n#SBATCH -N 1\n")
                  if f.check == CHECK_SBATCH_AFTER_COMMAND]
    assert finding.level == "pass"
