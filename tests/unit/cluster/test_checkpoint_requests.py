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


def test_symlinks_not_named_like_checkpoints_take_no_request(peer: Peer) -> None:
    """30 symlinks in the root named like no checkpoint (a run's logs, its configs): none is
    stat'ed, so the complete checkpoint under 8 newer incomplete ones is found in the same 19
    requests as without them. Before, each took a stat at the root's listing and the lookup
    stopped there, 0 checkpoints checked."""
    root = _root(peer, range(2000, 2008))
    logs = peer.root / "logs"
    logs.mkdir()
    for i in range(30):
        (root / f"run_{i}.log").symlink_to(logs)
    decision = _probe(peer, "/ck/mix")
    assert decision.bound is None and decision.checkpoint is not None
    assert decision.checkpoint.path == "/ck/mix/iter_000001000"
    assert (peer.requests["stat"], made(peer)) == (0, 19)


def test_a_resume_stopped_by_symlinked_checkpoints_says_it_stopped_listing_them(
        peer: Peer) -> None:
    """25 symlinked checkpoints over a complete one: telling whether each is a directory (a
    stat each) takes the bound while listing `ck/mix`, before any checkpoint is checked. The
    refusal says so, with the directory as listed, the requests made and what to do, in
    English and Korean; it neither resumes nor starts afresh."""
    from fakes import make_config

    from bot.core.text import render_text
    from bot.services.submit import CheckpointLookupStopped, find_resume_checkpoint
    from bot.slack.render import translator

    root = _root(peer, range(0))
    elsewhere = peer.root / "elsewhere"
    for it in range(2000, 2025):
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))
    recipe = make_config(checkpoint={"dir": "ck/mix"}).recipes["mix"]
    with peer.runner() as runner:
        sftp = runner.sftp()
        peer.requests.clear()
        with pytest.raises(CheckpointLookupStopped) as refused:
            find_resume_checkpoint(recipe, sftp)
    assert (peer.requests["realpath"], peer.requests["stat"]) == (1, 18)
    assert made(peer) == CHECKPOINT_REQUESTS
    text = refused.value.args[0]
    assert str(text) == (
        "not resumed: the checkpoint lookup in /ck/mix stopped while listing the directory, "
        "after 20 SFTP requests (its bound is 20), before it checked any checkpoint: each of "
        "the 25 symlinks there named like a checkpoint takes a request to tell whether it is "
        "a directory, so the run neither resumes from one nor starts from scratch. Replace "
        "those symlinks with the directories they point to or remove the old ones, then "
        "resume again")
    assert render_text(text, translator("ko").gettext) == (
        "재개하지 않았습니다: `/ck/mix`의 체크포인트 조회가 디렉터리 목록을 읽는 중에 SFTP 요청 "
        "20개 뒤에 멈췄습니다(한도 20개). 체크포인트는 하나도 확인하지 못했습니다: 그곳에서 "
        "체크포인트처럼 이름 붙은 심볼릭 링크 25개는 각각 디렉터리인지 알아보는 데 요청이 "
        "하나씩 듭니다. 그래서 어느 것에서도 재개하지 않고 처음부터 시작하지도 않습니다. 그 "
        "심볼릭 링크를 가리키는 디렉터리로 바꾸거나 오래된 것을 지운 뒤 다시 재개하세요")


def test_the_preflight_stopped_by_symlinked_checkpoints_says_what_to_do(peer: Peer) -> None:
    """The same root, the preflight's memory budget: skipped, saying where the lookup stopped
    and to replace the symlinks or pass --params, in English and Korean."""
    from fakes import make_config

    from bot.core.text import render_text
    from bot.services.preflight import PreflightOptions, memory_section
    from bot.slack.render import translator

    root = _root(peer, range(0))
    elsewhere = peer.root / "elsewhere"
    for it in range(2000, 2025):
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))
    recipe = make_config(checkpoint={"dir": "/ck/mix"}).recipes["mix"]
    with peer.runner() as runner:
        (finding,), budget = memory_section(recipe, PreflightOptions(ranks_per_node=4), runner)
    assert budget is None and finding.level == "warn"
    assert finding.message == (
        "no parameter count (the checkpoint lookup in /ck/mix stopped while listing the "
        "directory, after 20 SFTP requests (its bound is 20), before it checked any "
        "checkpoint: each of the 25 symlinks there named like a checkpoint takes a request to "
        "tell whether it is a directory): skipped the checkpoint memory budget")
    assert finding.fix == (
        "replace those symlinks with the directories they point to or remove the old ones (a "
        "resume of this recipe is refused until then), or pass --params (e.g. --params 1.4B)")
    assert render_text(finding.fix_text, translator("ko").gettext) == (
        "그 심볼릭 링크를 가리키는 디렉터리로 바꾸거나 오래된 것을 지우세요(그때까지 이 레시피의 "
        "재개는 거부됩니다). 아니면 `--params`를 주세요 (예: `--params 1.4B`)")
