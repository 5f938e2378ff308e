"""deploy/demo/README.md's recipe loads as written: its example said `sbatch_script:
~/trainbot-demo/launch.sbatch`, which the config refuses (sbatch gets no shell to expand `~`),
so a person copying it got a config error instead of the demo."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from fakes import make_config

README = Path(__file__).parents[3] / "deploy" / "demo" / "README.md"


def _yaml_blocks() -> list[dict]:
    return [yaml.safe_load(block)
            for block in re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)]


def test_the_demo_readmes_recipes_load() -> None:
    blocks = [b for b in _yaml_blocks() if isinstance(b, dict) and "recipes" in b]
    assert blocks, "deploy/demo/README.md has no recipes example"
    for block in blocks:
        for name, recipe in block["recipes"].items():
            config = make_config(**recipe)
            assert config.recipes["mix"].sbatch_script == recipe["sbatch_script"], name
