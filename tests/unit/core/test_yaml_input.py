"""The bounded YAML loader: its limits are exact, they are counted while composing (a refused
document costs no more than the limit), and what fits loads as yaml.safe_load would."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml

from bot.core.yaml_input import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    BoundedLoader,
    YAMLBoundError,
    decode_text,
    describe_yaml_error,
    load_yaml,
)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_depth_up_to_the_limit_loads_and_one_more_is_refused():
    assert load_yaml(nested(MAX_DEPTH)) == yaml.safe_load(nested(MAX_DEPTH))
    with pytest.raises(YAMLBoundError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_yaml(nested(MAX_DEPTH + 1))


def test_nodes_up_to_the_limit_load_and_one_more_is_refused():
    fits = "[" + ",".join(["1"] * (MAX_NODES - 1)) + "]"  # the list itself is a node too
    assert len(load_yaml(fits)) == MAX_NODES - 1
    with pytest.raises(YAMLBoundError, match="far more than a config needs"):
        load_yaml("[" + ",".join(["1"] * MAX_NODES) + "]")


def test_aliases_count_as_what_they_stand_for():
    base = "[" + ",".join(["1"] * 999) + "]"  # 1,000 nodes
    fits = f"a: &a {base}\nb: [{', '.join(['*a'] * 18)}]\n"  # 19 x 1,000 + a few
    assert len(load_yaml(fits)["b"]) == 18
    with pytest.raises(YAMLBoundError, match="an alias bomb"):
        load_yaml(f"a: &a {base}\nb: [{', '.join(['*a'] * 20)}]\n")


def test_a_refused_bomb_costs_little_memory():
    bomb = "".join([f'l0: &l0 [{", ".join(["lol"] * 9)}]\n']
                   + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)])
    tracemalloc.start()
    try:
        with pytest.raises(YAMLBoundError):
            load_yaml(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 1024**2


def test_what_fits_loads_like_safe_load():
    text = ("a: &x {k: 1, t: 2024-05-01, f: 1.5, s: 'q'}\nb: {<<: *x, k: 2}\n"
            "c: [*x, null, true, 0x1F]\n")
    assert load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("a: [1, 2", "at line 1, column 9: while parsing a flow sequence expected ',' or ']'"),
    ("a: 2024-02-30", "'2024-02-30' is not a valid date (day is out of range for month)"),
    ("a: \x07", "at character 4: control character #x07 is not allowed in YAML"),
])
def test_errors_are_one_line_saying_where(text, expected):
    with pytest.raises(yaml.YAMLError) as info:
        load_yaml(text)
    described = describe_yaml_error(info.value)
    assert expected in described and "\n" not in described


def test_decode_text_says_why_bytes_are_not_text():
    assert decode_text("café: 1\n".encode()) == "café: 1\n"
    with pytest.raises(ValueError, match=r"not UTF-8 text \(byte 3 is 0xe9\)"):
        decode_text("caf\u00e9".encode("latin-1"))
    with pytest.raises(ValueError, match="a NUL byte at offset 2"):
        decode_text(b"ab\0cd")
    with pytest.raises(ValueError, match="larger than 1024 KiB"):
        decode_text(b"#" * (MAX_FILE_BYTES + 1))


def test_subclasses_keep_the_bounds():
    class Strict(BoundedLoader):
        pass

    with pytest.raises(YAMLBoundError):
        load_yaml(nested(MAX_DEPTH + 1), Strict)
