"""The dump of a stacks collection the nodes kept within their bound
(bot.probes.stacks.MAX_OUTPUT_BYTES) fits what a kept thread post keeps of its file
(bot.services.threads.MAX_KEPT_FILE_CHARS): a stall's stacks post Slack did not take at once
is posted later with its file, never without it for its size."""

from __future__ import annotations

import json

import pytest

from bot.core.stacks import MARKER, build_report
from bot.probes.stacks import MAX_OUTPUT_BYTES
from bot.services.threads import MAX_KEPT_FILE_CHARS


def node_line(ranks: int, depth: int) -> str:
    """One node's line of `ranks` trainers, each stuck somewhere of its own (a group per
    rank: the dump repeats each one's frames), `depth` frames of the fields py-spy gives
    that the dump shows (function, short file name, line)."""
    procs = [{"pid": 1000 + r, "rank": r, "step": "0", "ok": True, "cmd": "python train.py",
              "threads": [{"os_thread_id": 1000 + r, "thread_name": "MainThread",
                           "active": True,
                           "frames": [{"name": f"f{r}_{i}", "short_filename": f"m{i}.py",
                                       "line": i + 1} for i in range(depth)]}]}
             for r in range(ranks)]
    return MARKER + json.dumps({"host": "n1", "procs": procs}) + "\n"


@pytest.mark.parametrize("depth", [1, 30])
def test_the_dump_of_a_collection_at_the_nodes_bound_is_kept_with_its_post(depth: int) -> None:
    """As many ranks as one node's line may carry within MAX_OUTPUT_BYTES: their dump is
    no longer than MAX_KEPT_FILE_CHARS. Before, a kept post kept 2 MiB of the dump of a
    4 MiB collection, which could be longer."""
    one, each = len(node_line(1, depth)), len(node_line(2, depth)) - len(node_line(1, depth))
    ranks = (MAX_OUTPUT_BYTES - one) // each + 1
    out = node_line(ranks, depth)
    while len(out) > MAX_OUTPUT_BYTES:  # later ranks' numbers are longer
        ranks -= len(out) // MAX_OUTPUT_BYTES * 100
        out = node_line(ranks, depth)
    report = build_report("88154", 0, out, "", collected_at="now")
    assert report.summary is not None and len(report.summary.groups) == ranks
    assert len(out) > MAX_OUTPUT_BYTES * 0.95
    assert len(report.dump) <= MAX_KEPT_FILE_CHARS
