"""A number field given an unquoted yes/no/on/off/true/false (a boolean in YAML 1.1) is
refused: pydantic took it as 1 or 0, so `target_iter: yes` finished the run at iteration 1
and `retry_budget: no` left no retries."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.recipe_yaml import ONE_RECIPE

from bot.config import ConfigError, load_config, parse_config


@pytest.mark.parametrize(("line", "path", "name", "read"), [
    ("target_iter: yes", "recipes.mix.target_iter (line 7)", "target_iter", "true"),
    ("policy: {retry_budget: no}", "recipes.mix.policy.retry_budget (line 7)",
     "retry_budget", "false"),
    ("policy: {max_free_chunks: true}", "recipes.mix.policy.max_free_chunks (line 7)",
     "max_free_chunks", "true"),
    ("dataloader_probe: {factory: 'd:b', timeout_s: on}",
     "recipes.mix.dataloader_probe.timeout_s (line 7)", "timeout_s", "true"),
])
def test_a_boolean_is_not_taken_as_a_number(tmp_path: Path, line, path, name, read) -> None:
    file = tmp_path / "trainbot.yaml"
    file.write_text(ONE_RECIPE % line)
    with pytest.raises(ConfigError) as info:
        load_config(file, env={})
    assert f"{path}: YAML reads an unquoted yes/no, on/off or true/false as a boolean (here " \
        f"{read}), but {name} is a number; give a number" in str(info.value)


def test_boolean_fields_still_take_booleans() -> None:
    config = parse_config(ONE_RECIPE % "policy: {auto_resubmit: yes, retry_budget: 2}",
                          source="x", env={})
    policy = config.policy_for("mix")
    assert policy.auto_resubmit is True and policy.retry_budget == 2
