"""A text field given an unquoted scalar that YAML 1.1 reads as a number or a boolean
(`time: 4:00:00` is sexagesimal 14400; `90`, `yes`) says what was typed and to quote it: the
error said "Input should be a valid string (got 14400)", a number never written, no fix."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.recipe_yaml import ONE_RECIPE

from bot.config import ConfigError, load_config


def problem_of(tmp_path: Path, line: str) -> str:
    path = tmp_path / "trainbot.yaml"
    path.write_text(ONE_RECIPE % line)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    return str(info.value).split("\n", 1)[1]  # after the file's path


@pytest.mark.parametrize(("line", "problem"), [
    ("time: 4:00:00", 'recipes.mix.time (line 7): YAML reads the unquoted 4:00:00 as a number, '
     'but it is text here; write it in quotes, e.g. time: "4:00:00"'),
    ("time: 1:30", 'recipes.mix.time (line 7): YAML reads the unquoted 1:30 as a number, '
     'but it is text here; write it in quotes, e.g. time: "1:30"'),
    ("mem: 400", 'recipes.mix.mem (line 7): YAML reads the unquoted 400 as a number, '
     'but it is text here; write it in quotes, e.g. mem: "400"'),
    ("partition: yes", 'recipes.mix.partition (line 7): YAML reads the unquoted yes as a '
     'boolean, but it is text here; write it in quotes, e.g. partition: "yes"'),
    ("args: [--lr, 0.5]", 'recipes.mix.args.1 (line 7): YAML reads the unquoted 0.5 as a '
     'number, but it is text here; write it in quotes, e.g. "0.5"'),
])
def test_an_unquoted_number_in_a_text_field_says_what_was_typed_and_to_quote_it(
        tmp_path, line, problem):
    assert problem_of(tmp_path, line).strip() == problem


def test_behind_an_alias_the_value_read_is_said(tmp_path):
    """Under an alias (`<<: *defaults`) the typed text is not at the key's path."""
    text = ONE_RECIPE.replace("recipes:\n", "x-defaults: &d {time: 4:00:00}\nrecipes:\n") % "<<: *d"
    path = tmp_path / "trainbot.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert "write it in quotes" in str(info.value)
