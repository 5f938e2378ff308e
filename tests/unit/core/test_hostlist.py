"""Slurm hostlists: an --exclude like `gpu[01,03]` is one list of two nodes, not two names cut
at the bracket's comma. A resubmit's --exclude reads the recipe's own and the nodes its run
left out as hostlists, leaves each node out once and writes a list sbatch reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.hostlist import HostlistError, parse_hostlist, render_hostlist
from bot.core.nodes import excluding


@pytest.mark.parametrize(("text", "nodes"), [
    ("gpu[01,03]", ["gpu01", "gpu03"]),
    ("gpu[01-03,07],cpu5", ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]),
    ("gpu-a07,gpu-b12", ["gpu-a07", "gpu-b12"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("gpu01,gpu[01-02]", ["gpu01", "gpu02"]),
    ("", []),
])
def test_a_hostlist_is_read_as_its_nodes(text: str, nodes: list[str]) -> None:
    assert parse_hostlist(text) == nodes


@pytest.mark.parametrize("text", ["gpu[01", "gpu01]", "gpu[a-b]", "gpu[3-1]", "g[[1]]"])
def test_a_hostlist_slurm_would_refuse_is_an_error(text: str) -> None:
    with pytest.raises(HostlistError):
        parse_hostlist(text)


@pytest.mark.parametrize("text", ["a[1-3]b", "rack[1-2]-n01", "rack[1-2]-n[01,03]",
                                  "n[\u00b2-3]", "n[1-\u0663]", "n[\u0661]"])
def test_what_slurm_calls_an_invalid_hostlist_is_an_error(text: str) -> None:
    """One bracket, at a name's end (scontrol: `Invalid hostlist`), of ASCII digits only."""
    with pytest.raises(HostlistError):
        parse_hostlist(text)


def test_white_space_separates_names_as_slurm_reads_them() -> None:
    assert parse_hostlist("gpu01 gpu[02-03]\tcpu5\n") == ["gpu01", "gpu02", "gpu03", "cpu5"]


def test_nodes_are_written_as_one_hostlist() -> None:
    assert render_hostlist(["gpu01", "gpu02", "gpu03", "gpu07", "cpu5", "gpu02"]) == (
        "gpu[01-03,07],cpu5")


@pytest.mark.parametrize(("own", "added", "result"), [
    ("gpu[01,03]", "gpu07", "gpu[01,03],gpu07"),
    ("gpu[01,03]", "gpu03", "gpu[01,03]"),  # named already: not twice
    ("gpu[01-03,07],cpu5", "gpu[01,03],gpu05,cpu5", "gpu[01-03,07],cpu5,gpu05"),
    (None, "gpu[01,03],gpu-b12", "gpu[01,03],gpu-b12"),
    ("bad-n1", ["gpu-b12", "gpu-b13"], "bad-n1,gpu-b[12-13]"),
])
def test_excluding_adds_each_node_once_as_a_hostlist(own: str | None,
                                                     added: str | list[str],
                                                     result: str) -> None:
    assert excluding(own, added) == result


_NAME = st.builds(lambda p, n, w: f"{p}{n:0{w}d}",
                  st.sampled_from(["gpu", "cpu-", "n", "rack1-gpu"]),
                  st.integers(0, 120), st.integers(1, 3))
_PLAIN = st.sampled_from(["login", "gpu-a", "node-x.ib"])
_NODES = st.lists(st.one_of(_NAME, _PLAIN), max_size=25)


@given(_NODES)
def test_rendering_then_reading_gives_each_node_once(nodes: list[str]) -> None:
    text = render_hostlist(nodes)
    read = parse_hostlist(text)
    assert sorted(read) == sorted(set(nodes))
    assert len(read) == len(set(read))


@given(_NODES, _NODES)
def test_excluding_leaves_out_both_lists_each_node_once(own: list[str],
                                                        added: list[str]) -> None:
    own_text = render_hostlist(own)
    merged = parse_hostlist(excluding(own_text, render_hostlist(added)))
    assert set(merged) == set(own) | set(added)
    assert len(merged) == len(set(merged))
