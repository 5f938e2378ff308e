"""The dump of a stacks collection the nodes kept within their bound
(bot.probes.stacks.MAX_OUTPUT_BYTES) fits what a kept thread post keeps of its file
(bot.services.threads.MAX_KEPT_FILE_BYTES), both counted in bytes of UTF-8: a stall's stacks
post Slack did not take at once is posted later with its file, never without it for its
size, also when its frames name non-ASCII functions and files."""

from __future__ import annotations

import json

import pytest

from bot.core.stacks import MARKER, build_report
from bot.probes.stacks import MAX_OUTPUT_BYTES
from bot.services.threads import MAX_KEPT_FILE_BYTES


def node_line(ranks: int, depth: int, name: str = "f") -> str:
    """One node's line of `ranks` trainers, each stuck somewhere of its own (a group per
    rank: the dump repeats each one's frames), `depth` frames of the fields py-spy gives
    that the dump shows (function `name…`, short file name, line), as the node script
    writes it (json.dumps: non-ASCII as \\u escapes)."""
    procs = [{"pid": 1000 + r, "rank": r, "step": "0", "ok": True, "cmd": "python train.py",
              "threads": [{"os_thread_id": 1000 + r, "thread_name": "MainThread",
                           "active": True,
                           "frames": [{"name": f"{name}{r}_{i}",
                                       "short_filename": f"{name}{i}.py",
                                       "line": i + 1} for i in range(depth)]}]}
             for r in range(ranks)]
    return MARKER + json.dumps({"host": "n1", "procs": procs}) + "\n"


@pytest.mark.parametrize(("depth", "name"), [(1, "f"), (30, "f"), (30, "학습_단계_")])
def test_the_dump_of_a_collection_at_the_nodes_bound_is_kept_with_its_post(
        depth: int, name: str) -> None:
    """As many ranks as one node's line may carry within MAX_OUTPUT_BYTES: their dump is
    no longer than MAX_KEPT_FILE_BYTES, both in bytes of UTF-8; with Korean function and file
    names too (the dump's UTF-8 is shorter than the line's \\u escapes). Before, a kept post
    kept 2 MiB of the dump of a 4 MiB collection, which could be longer, and the kept
    bound counted characters where the nodes' bound counts bytes."""
    def line(ranks: int) -> bytes:
        return node_line(ranks, depth, name).encode()

    one, each = len(line(1)), len(line(2)) - len(line(1))
    ranks = (MAX_OUTPUT_BYTES - one) // each + 1
    out = line(ranks)
    while len(out) > MAX_OUTPUT_BYTES:  # later ranks' numbers are longer
        ranks -= (len(out) - MAX_OUTPUT_BYTES) // each + 1
        out = line(ranks)
    report = build_report("88154", 0, out.decode(), "", collected_at="now")
    assert report.summary is not None and len(report.summary.groups) == ranks
    assert len(out) > MAX_OUTPUT_BYTES * 0.95
    assert len(report.dump.encode()) <= MAX_KEPT_FILE_BYTES
    assert name in report.dump


def test_a_file_longer_in_utf8_than_the_kept_bound_is_not_kept(store, monkeypatch) -> None:
    """The kept bound counts a file's bytes of UTF-8, as the nodes' bound does: a dump of
    Korean frames within the bound in characters but not in bytes is not kept with its
    reply (the reply kept without it). Before, it counted characters and kept it."""
    from fakes import make_context

    from bot.services import threads

    monkeypatch.setattr(threads, "MAX_KEPT_FILE_BYTES", 100)
    ctx = make_context(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=0.0)
    dump = "학습_단계 (train.py:12)\n" * 4  # 80 characters, 160 bytes
    assert len(dump) <= 100 < len(dump.encode())
    for key, text in (("stacks:1", dump), ("stacks:2", dump[:40])):  # 80 bytes: kept
        threads.keep_reply(ctx, chain.id, key, [], "stacks", attachment=threads.Attachment(
            f"{key}:dump", text, "stacks-88154.txt", "stacks"))
    assert threads.attachment_fate(ctx, "stacks:1", "stacks:1:dump") == "dropped"
    assert threads.attachment_fate(ctx, "stacks:2", "stacks:2:dump") == "kept"
