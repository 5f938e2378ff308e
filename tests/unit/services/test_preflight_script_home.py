"""Preflight reads a recipe's relative sbatch_script where sbatch finds it: under the workdir
(--chdir) first, then in the home (sbatch's own cwd, where SFTP starts too), so a script
that is only in the home, which submits fine, is linted rather than failed unread."""

from __future__ import annotations

import io
from types import SimpleNamespace

from fakes import make_config

from bot.services.preflight import PreflightOptions, lint_section, script_paths_on_cluster


class _SFTP:
    def __init__(self, files: dict[str, str]):
        self.files = files
        self.opened: list[str] = []

    def open(self, path: str, mode: str = "rb"):
        self.opened.append(path)
        if path not in self.files:
            raise FileNotFoundError(2, "No such file", path)
        return io.BytesIO(self.files[path].encode())


def _recipe(script: str = "train.sbatch", workdir: str | None = "/scratch/proj"):
    config = make_config(workdir=workdir) if workdir else make_config()
    recipe = next(iter(config.recipes.values()))
    return recipe.model_copy(update={"sbatch_script": script, "submit_command": None})


def test_the_order_is_the_workdir_then_the_home():
    assert script_paths_on_cluster(_recipe()) == ("/scratch/proj/train.sbatch", "train.sbatch")
    assert script_paths_on_cluster(_recipe("/abs/t.sbatch")) == ("/abs/t.sbatch",)


def test_a_script_only_in_the_home_is_read_from_there():
    sftp = _SFTP({"train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\nsrun python train.py\n"})
    runner = SimpleNamespace(sftp=lambda: sftp)
    findings, source = lint_section("r", _recipe(), PreflightOptions(shellcheck=False),
                                    runner)
    assert source == "cluster:train.sbatch"
    assert sftp.opened[:2] == ["/scratch/proj/train.sbatch", "train.sbatch"]
    assert not any("cannot read the recipe's batch script" in str(f.text) for f in findings)


def test_a_script_in_neither_is_reported_with_the_workdirs_path():
    runner = SimpleNamespace(sftp=lambda: _SFTP({}))
    findings, source = lint_section("r", _recipe(), PreflightOptions(shellcheck=False),
                                    runner)
    assert source == "/scratch/proj/train.sbatch"
    assert findings[0].level == "fail"
    assert "/scratch/proj/train.sbatch" in str(findings[0].text)
