"""sbatch's --array spec checked with Slurm's grammar; the one-task resubmit spec; `%a` in a
recipe's checkpoint dir; the recipe field refused with the recipe and field named."""

from __future__ import annotations

import pytest

from bot.config import ConfigError, parse_config
from bot.core.slurm.array_spec import expand_task_path, parse_array_spec, task_resubmit_spec


@pytest.mark.parametrize(("text", "tasks", "throttle"), [
    ("0-15%4", list(range(16)), 4),
    ("0-15:2", list(range(0, 16, 2)), None),
    ("1,3,5-7", [1, 3, 5, 6, 7], None),
    ("7", [7], None),
    ("0-4:2,9%1", [0, 2, 4, 9], 1),
])
def test_slurms_array_grammar(text, tasks, throttle):
    spec = parse_array_spec(text)
    assert spec.tasks() == tasks and spec.throttle == throttle and str(spec) == text


@pytest.mark.parametrize(("text", "says"), [
    ("", "not an array spec"), (" 0-3", "no spaces"), ("0-3%0", "throttle"),
    ("0-3%", "throttle"), ("5-2", "ends before it starts"), ("0-8:0", "step"),
    ("-1", "not a task index"), ("a-b", "not a task index"), ("1,,2", "not a task index"),
    ("0-3;rm -rf /", "not a task index"), ("0-4000001", "limit"),
])
def test_nonsense_is_refused_with_the_reason(text, says):
    with pytest.raises(ValueError, match=says):
        parse_array_spec(text)


def test_a_task_resubmit_is_a_one_task_array_and_its_checkpoint_dir_is_its_own():
    assert task_resubmit_spec(4) == "4"
    assert expand_task_path("/ck/sweep/task_%a", 4) == "/ck/sweep/task_4"
    with pytest.raises(ValueError):
        task_resubmit_spec(-1)


CONFIG = """
clusters: {dev: {host: 127.0.0.1, user: u, key_file: /k}}
recipes:
  sweep:
    cluster: dev
    sbatch_script: /home/u/sweep.sbatch
    array: "%s"
    checkpoint: {dir: "%s"}
"""


def test_the_recipe_field_is_validated_naming_recipe_and_field():
    cfg = parse_config(CONFIG % ("0-15%4", "/ck/sweep/task_%a"), source="c.yaml", env={})
    assert cfg.recipes["sweep"].array == "0-15%4"
    with pytest.raises(ConfigError, match=r"sweep.*array.*ends before it starts"):
        parse_config(CONFIG % ("9-1", "/ck/sweep/task_%a"), source="c.yaml", env={})
    with pytest.raises(ConfigError, match=r"sweep.*has no %a"):
        parse_config(CONFIG % ("0-3", "/ck/sweep"), source="c.yaml", env={})
