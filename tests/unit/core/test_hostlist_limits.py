"""Slurm hostlists no larger than Slurm reads: a range of more than Slurm's
65,536 hosts, or a list of more names than its reader allows, is refused before any name is
made. Writing nodes back is linear in them. A log's line names a faulty node, or srun's
hostlist of a few, never tens of thousands."""

from __future__ import annotations

import time

import pytest

from bot.core.hostlist import HostlistError, parse_hostlist, render_hostlist
from bot.core.nodes import node_in


@pytest.mark.parametrize("text", [
    "n[1-65537]",  # one range wider than Slurm's 65,536 hosts
    "n[1-40000],m[1-40000]",  # more names than the reader allows
    "n[0-99999999999999]",
])
def test_a_hostlist_too_large_is_refused_before_it_is_expanded(text: str) -> None:
    with pytest.raises(HostlistError):
        parse_hostlist(text)


def test_a_reader_may_allow_fewer_names() -> None:
    assert len(parse_hostlist("n[1-64]", limit=64)) == 64
    with pytest.raises(HostlistError):
        parse_hostlist("n[1-65]", limit=64)


def test_rendering_many_nodes_is_linear() -> None:
    nodes = [f"n{i}" for i in range(1, 20001)]
    start = time.perf_counter()
    assert render_hostlist(nodes) == "n[1-9],n[10-99],n[100-999],n[1000-9999],n[10000-20000]"
    assert time.perf_counter() - start < 3.0


@pytest.mark.parametrize("line", [
    "*** STEP 9001.0 ON n[1-40000] CANCELLED AT 2026-12-07T10:05:00 DUE TO NODE FAILURE ***",
    "srun: error: Node failure on n[1-40000]",
])
def test_a_log_naming_tens_of_thousands_of_nodes_names_no_faulty_node(line: str) -> None:
    assert node_in([line]) is None


@pytest.mark.parametrize(("line", "node"), [
    ("srun: error: Node failure on gpu[01-02]", "gpu[01-02]"),
    ("srun: error: Node failure on gpu07.", "gpu07"),
    ("*** STEP 9001.0 ON gpu-a07 CANCELLED AT 2026-12-07T10:05:00 DUE TO NODE FAILURE ***",
     "gpu-a07"),
])
def test_srun_names_a_hostlist_of_faulty_nodes(line: str, node: str) -> None:
    assert node_in([line]) == node
