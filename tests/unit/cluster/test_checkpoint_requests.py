"""A checkpoint lookup stops at its bound of CHECKPOINT_REQUESTS SFTP requests, counted as the
server receives them: the lookup runs over trainbot's own SSHRunner against a real SFTP server
in this process (tests/support/sftp_peer.py), which counts every request it answers by kind.

The bound counts a listing once (its opendir: paramiko's listdir_attr sends the readdirs and
the close of it within the same call) and every other request once: a relative root's
realpath, a symlink's stat, a file's open, each of its reads, its close."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.sftp_peer import Peer, serve_peer

from bot.cluster.checkpoints import probe_checkpoints
from bot.core.checkpoints import CHECKPOINT_REQUESTS, CheckpointDecision, LookupBound


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=5.0) as p:
        yield p


def made(peer: Peer) -> int:
    """The requests the peer answered, as the bound counts them (a listing once)."""
    r = peer.requests
    file_closes = r["close"] - r["opendir"]  # each listing closes its directory handle
    return r["opendir"] + r["realpath"] + r["stat"] + r["open"] + r["read"] + file_closes


def _checkpoint(base: Path, it: int, *, complete: bool) -> Path:
    model = base / f"iter_{it:09d}" / "model"
    model.mkdir(parents=True)
    (model / "__0_0.distcp").write_bytes(b"x")
    if complete:
        (model / ".metadata").write_bytes(b"m")
    return model.parent


def _root(peer: Peer, newer_incomplete: range) -> Path:
    """/ck/mix: a complete iter 1000, and incomplete ones at `newer_incomplete`."""
    root = peer.root / "ck" / "mix"
    _checkpoint(root, 1000, complete=True)
    for it in newer_incomplete:
        _checkpoint(root, it, complete=False)
    return root


def _probe(peer: Peer, root: str) -> CheckpointDecision:
    with peer.runner() as runner:
        sftp = runner.sftp()
        peer.requests.clear()  # the connection's own, before the lookup
        return probe_checkpoints(sftp, root, "dcp")


@pytest.mark.parametrize("pointer, bound", [
    # no pointer file: the root's listing, then each candidate's listing and its model/ dir's;
    # the 10th candidate's listing is the 20th request, its model/ dir's would be the 21st
    (None, LookupBound("/ck/mix", checked=9, unchecked=17, requests=20)),
    # a pointer file to the newest (incomplete): its open, its read, the read that finds its
    # end and its close, then its target's two listings; the scan finds the target listed
    ("iter_000002024\n", LookupBound("/ck/mix", checked=7, unchecked=19, requests=20)),
    # a pointer file of 4096 bytes or more: one read has them all (3 requests)
    ("iter_000002024\n" + "\n" * 5000, LookupBound("/ck/mix", checked=8, unchecked=18,
                                                   requests=20)),
])
def test_the_lookup_stops_after_exactly_its_bound_of_requests(
        peer: Peer, pointer: str | None, bound: LookupBound) -> None:
    root = _root(peer, range(2000, 2025))
    if pointer is not None:
        (root / "latest_checkpoint.txt").write_text(pointer)
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is None and decision.bound == bound
    assert made(peer) == CHECKPOINT_REQUESTS
    if pointer is not None:
        reads = 2 if len(pointer) < 4096 else 1
        assert (peer.requests["open"], peer.requests["read"]) == (1, reads)


def test_a_relative_root_and_symlinked_checkpoints_count_their_realpath_and_stats(
        peer: Peer) -> None:
    """`ck/mix` from the home (a realpath), 3 checkpoints that are symlinks (a stat each, at
    the root's listing), then the candidates' listings."""
    root = _root(peer, range(2003, 2023))
    elsewhere = peer.root / "elsewhere"
    for it in (2000, 2001, 2002):
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))
    decision = _probe(peer, "ck/mix")
    assert decision.bound == LookupBound(
        "/ck/mix", checked=7, unchecked=17, requests=20)
    assert (peer.requests["realpath"], peer.requests["stat"]) == (1, 3)
    assert made(peer) == CHECKPOINT_REQUESTS


def test_a_complete_checkpoint_within_the_bound_is_found_with_the_requests_it_takes(
        peer: Peer) -> None:
    """8 newer incomplete ones: the complete one is found in 1 + 9 * 2 = 19 requests; with a
    pointer file naming the newest, 1 + 4 + 9 * 2 = 23 would be needed, past the bound."""
    root = _root(peer, range(2000, 2008))
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is not None
    assert decision.checkpoint.iteration == 1000
    assert made(peer) == 19
    (root / "latest_checkpoint.txt").write_text("iter_000002007\n")
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is None
    assert decision.bound == LookupBound(
        "/ck/mix", checked=7, unchecked=2, requests=20)
    assert made(peer) == CHECKPOINT_REQUESTS
