"""A checkpoint lookup stops at its bound of CHECKPOINT_REQUESTS SFTP requests, counted as the
server receives them: the lookup runs over trainbot's own SSHRunner against a real SFTP server
in this process (tests/support/sftp_peer.py), which counts every request it answers by kind,
and what the lookup counted is what the server answered, request for request.

paramiko's server answers a readdir with at most 16 entries (OpenSSH's with 100): a listing
of a few entries is its opendir, a readdir answered with them, one answered "no more", its
close (4); a root of 86 entries takes 6 readdirs more. A short file is its open, a read, the
read that finds its end, its close (4)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.sftp_peer import Peer, serve_peer

from bot.cluster.checkpoints import probe_checkpoints
from bot.core.checkpoints import CHECKPOINT_REQUESTS, CheckpointDecision, LookupBound


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Peer]:
    with serve_peer(tmp_path, sftp_timeout=5.0) as p:
        yield p


def sent(peer: Peer) -> int:
    """Every SFTP request the peer answered."""
    return sum(peer.requests.values())


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


MANY = range(2000, 2000 + CHECKPOINT_REQUESTS + 5)  # 85 newer incomplete ones: 86 candidates


@pytest.mark.parametrize("pointer, bound", [
    # no pointer file: the root's listing (86 entries: 9 requests), then each candidate's
    # listing and its model/ dir's (8); the 9th's model/ dir is closed at the 80th request
    (None, LookupBound("/ck/mix", checked=8, unchecked=78, requests=80)),
    # a pointer file to the newest (incomplete): its open, its read, the read that finds its
    # end and its close, then its target's two listings; the scan finds the target listed
    ("iter_000002084\n", LookupBound("/ck/mix", checked=8, unchecked=78, requests=80)),
    # a pointer file of 4096 bytes or more: one read has them all (3 requests)
    ("iter_000002084\n" + "\n" * 5000, LookupBound("/ck/mix", checked=8, unchecked=78,
                                                   requests=80)),
])
def test_the_lookup_stops_after_exactly_its_bound_of_requests(
        peer: Peer, pointer: str | None, bound: LookupBound) -> None:
    root = _root(peer, MANY)
    if pointer is not None:
        (root / "latest_checkpoint.txt").write_text(pointer)
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is None and decision.bound == bound
    assert sent(peer) == decision.requests == CHECKPOINT_REQUESTS
    assert peer.requests["close"] == peer.requests["opendir"] + peer.requests["open"]
    if pointer is not None:
        reads = 2 if len(pointer) < 4096 else 1
        assert (peer.requests["open"], peer.requests["read"]) == (1, reads)


def test_a_realistic_tree_is_counted_request_for_request(peer: Peer) -> None:
    """A run's directory as training leaves it: 40 logs and configs beside the checkpoints
    (a root of 53 entries: 4 readdirs answered with entries), a pointer file naming the
    newest, 12 checkpoints each with its model/ and optim/ dirs of 4 shards and a config
    file, the 3 newest without their .metadata. The lookup's count is the server's, and far
    within the bound: the pointer's target and the two older ones are listed (3 listings
    each), the 4th newest is complete."""
    root = peer.root / "ck" / "mix"
    for it in range(1000, 13000, 1000):
        ck = root / f"iter_{it:09d}"
        for sub in ("model", "optim"):
            (ck / sub).mkdir(parents=True)
            for rank in range(4):
                (ck / sub / f"__{rank}_0.distcp").write_bytes(b"x" * 10)
            if it <= 9000:
                (ck / sub / ".metadata").write_bytes(b"m")
        (ck / "config.yaml").write_text("lr: 1e-4\n")
    for i in range(40):
        (root / f"train_{i}.log").write_text("step\n")
    (root / "latest_checkpoint.txt").write_text("iter_000012000\n")
    decision = _probe(peer, "ck/mix")
    assert decision.checkpoint is not None
    assert decision.checkpoint.path == "/ck/mix/iter_000009000"
    assert sent(peer) == decision.requests == 1 + 7 + 4 + 4 * 3 * 4
    assert dict(peer.requests) == {"realpath": 1, "opendir": 13, "readdir": 29, "close": 14,
                                   "open": 1, "read": 2}


def test_a_pointer_file_read_in_short_answers_counts_each_read(peer: Peer) -> None:
    """A server may answer a read with fewer bytes than asked: a 95-byte pointer file read 10
    bytes an answer takes 10 reads and the one finding its end, each counted."""
    root = _root(peer, range(2000, 2002))
    (root / "latest_checkpoint.txt").write_text("iter_000001000" + " " * 80 + "\n")
    peer.read_at_most = 10
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is not None and decision.checkpoint.source == "pointer"
    assert peer.requests["read"] == 11
    assert sent(peer) == decision.requests == 4 + (1 + 11 + 1) + 8


def test_the_settles_takeover_allows_the_longest_lookup_each_request_at_its_deadline(
        peer: Peer) -> None:
    """A lookup stopped at its bound sends the most any lookup does, all on one channel: over
    a runner not yet connected, it opens one session (its SFTP channel) and sends its 80
    requests there. Opening the channel at its worst and each request waiting its whole SFTP
    deadline still end within the lookup's share of a settle's takeover
    (bot.core.takeover.settle_takeover_s), default or slower deadlines alike."""
    from bot.core.slack_bounds import POST_DEADLINE_S, bot_post_at_most_s
    from bot.core.takeover import (
        RESUME_COMMANDS,
        SLACK_CALLS,
        TAKEOVER_MARGIN_S,
        RemoteDeadlines,
        settle_takeover_s,
    )

    _root(peer, MANY)
    with peer.runner() as runner:
        decision = probe_checkpoints(runner.sftp(), "/ck/mix", "dcp")
    assert decision.bound is not None
    assert peer.sessions == 1 and sent(peer) == CHECKPOINT_REQUESTS
    for d in (RemoteDeadlines(), RemoteDeadlines(connect_s=30.0, sftp_s=60.0)):
        lookup_share = settle_takeover_s(d, post_deadline_s=POST_DEADLINE_S) \
            - (RESUME_COMMANDS * d.command_at_most_s
               + SLACK_CALLS * bot_post_at_most_s(POST_DEADLINE_S) + TAKEOVER_MARGIN_S)
        opening = d.session_at_most_s + 2 * d.sftp_s  # session (connections), subsystem, version
        assert opening + decision.requests * d.sftp_s <= lookup_share


def test_a_lookup_over_a_busy_pool_goes_on_its_own_channel(peer: Peer) -> None:
    """Every channel of the cluster's SFTP pool is busy (4 files held open by other work): a
    resume's lookup over the pool does not wait behind them, request after request, nor open
    a channel per request; it takes the pool's lookup channel, opened once, and finds its
    checkpoint. Before, its first request waited the SFTP deadline for a free channel and
    failed: "no SFTP channel came free within 1 s (all 4 busy)"."""
    root = _root(peer, range(2000, 2003))
    (peer.root / "held.log").write_text("x\n")
    with peer.runner(sftp_timeout=1.0) as runner:
        sftp = runner.sftp()
        held = [sftp.open("/held.log", "rb") for _ in range(4)]
        sessions = peer.sessions
        peer.requests.clear()
        decision = probe_checkpoints(sftp, "/ck/mix", "dcp")
        assert decision.checkpoint is not None
        assert decision.checkpoint.path == "/ck/mix/iter_000001000"
        assert peer.sessions == sessions + 1
        assert sent(peer) == decision.requests == 4 + 4 * 8
        for f in held:
            f.close()
    assert root.is_dir()


def test_the_pool_is_the_sftp_port_with_a_lookup_channel_and_a_lease_is_one_channel(
        peer: Peer) -> None:
    """What the lookup goes by (bot.cluster.checkpoints._one_channel): the cluster's SFTP pool
    is the SFTP port (it has a lookup channel: the lookup takes it), a lookup lease's SFTP is
    plain SFTP calls, one channel already (the lookup runs on it). Before, the port could
    not be checked (the lookup looked for a `lookup_channel` attribute): a pool that lost the
    port's shape would have sent the lookup's requests across its shared channels, unseen."""
    from bot.services.ports import SFTP

    _root(peer, range(2000, 2002))
    with peer.runner() as runner:
        pool = runner.sftp()
        assert isinstance(pool, SFTP)
        with pool.lookup_channel() as lease:
            assert not isinstance(lease.sftp, SFTP)
            sessions = peer.sessions
            decision = probe_checkpoints(lease.sftp, "/ck/mix", "dcp")
            assert peer.sessions == sessions  # on the lease's channel, no other opened
        assert decision.checkpoint is not None


def test_a_relative_root_and_symlinked_checkpoints_count_their_realpath_and_stats(
        peer: Peer) -> None:
    """`ck/mix` from the home (a realpath), 3 checkpoints that are symlinks (a stat each, at
    the root's listing), then the candidates' listings."""
    root = _root(peer, MANY[3:])
    elsewhere = peer.root / "elsewhere"
    for it in MANY[:3]:
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))
    decision = _probe(peer, "ck/mix")
    assert decision.bound == LookupBound("/ck/mix", checked=8, unchecked=78, requests=80)
    assert (peer.requests["realpath"], peer.requests["stat"]) == (1, 3)
    assert sent(peer) == CHECKPOINT_REQUESTS


def test_symlinks_inside_a_checkpoint_are_counted_as_the_stats_they_take(peer: Peer) -> None:
    """A checkpoint whose model/ dir and a file are symlinks: telling what each is takes a
    stat (the listing shows a link), and the lookup counts them as the server answers them."""
    root = _root(peer, range(2000, 2002))
    shared = peer.root / "shared"
    shared.mkdir()
    (peer.root / "tokenizer.json").write_text("{}")
    for it in (2000, 2001):
        ck = root / f"iter_{it:09d}"
        (ck / "model").rename(shared / str(it))
        (ck / "model").symlink_to(shared / str(it))
        (ck / "tokenizer.json").symlink_to(peer.root / "tokenizer.json")
    (shared / "2001" / ".metadata").write_bytes(b"m")
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is not None
    assert decision.checkpoint.path == "/ck/mix/iter_000002001"
    # the root's listing, iter 2001's (2 symlinks: a stat each), its model/ dir's
    assert peer.requests["stat"] == 2
    assert sent(peer) == decision.requests == 4 + (4 + 2) + 4


def test_a_complete_checkpoint_within_the_bound_is_found_with_the_requests_it_takes(
        peer: Peer) -> None:
    """8 newer incomplete ones: the complete one is found in 4 + 9 * 8 = 76 requests; with a
    pointer file naming the newest, its 4 requests more are 80, the bound; with a 9th newer
    one the complete one's listings would end at the 88th request, past it."""
    root = _root(peer, range(2000, 2008))
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is not None
    assert decision.checkpoint.iteration == 1000
    assert sent(peer) == decision.requests == 76
    (root / "latest_checkpoint.txt").write_text("iter_000002007\n")
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is not None and decision.checkpoint.iteration == 1000
    assert sent(peer) == decision.requests == CHECKPOINT_REQUESTS
    _checkpoint(root, 2008, complete=False)
    (root / "latest_checkpoint.txt").write_text("iter_000002008\n")
    decision = _probe(peer, "/ck/mix")
    assert decision.checkpoint is None
    assert decision.bound == LookupBound("/ck/mix", checked=9, unchecked=1, requests=80)
    assert sent(peer) == CHECKPOINT_REQUESTS


def test_symlinks_not_named_like_checkpoints_take_no_request(peer: Peer) -> None:
    """30 symlinks in the root named like no checkpoint (a run's logs, its configs): none is
    stat'ed, so the complete checkpoint under 8 newer incomplete ones is found with no stat,
    the root's longer listing (39 entries, 2 readdirs more) the only cost."""
    root = _root(peer, range(2000, 2008))
    logs = peer.root / "logs"
    logs.mkdir()
    for i in range(30):
        (root / f"run_{i}.log").symlink_to(logs)
    decision = _probe(peer, "/ck/mix")
    assert decision.bound is None and decision.checkpoint is not None
    assert decision.checkpoint.path == "/ck/mix/iter_000001000"
    assert (peer.requests["stat"], sent(peer)) == (0, 78)


def test_a_huge_root_stops_the_lookup_while_listing_it_and_says_so(peer: Peer) -> None:
    """A root of 1,300 entries takes more readdirs (16 entries each here) than the bound
    allows: the lookup stops half-way through its listing and closes the directory within the
    bound, no symlink stat'ed. The resume's refusal and the preflight say it stopped listing
    the directory, as it holds too many entries, and to move the old ones out (not "each of
    the 0 symlinks" nor to replace symlinks), in English and Korean."""
    from fakes import make_config

    from bot.core.text import render_text
    from bot.services.preflight import PreflightOptions, memory_section
    from bot.services.resume_point import CheckpointLookupStopped, find_resume_checkpoint
    from bot.slack.render import translator

    ko = translator("ko").gettext
    root = _root(peer, range(0))
    for i in range(1300):
        (root / f"events_{i}.log").write_text("")
    decision = _probe(peer, "/ck/mix")
    assert decision.bound == LookupBound("/ck/mix", 0, 0, requests=80, symlinks=0)
    assert dict(peer.requests) == {"opendir": 1, "readdir": 78, "close": 1}

    recipe = make_config(checkpoint={"dir": "/ck/mix"}).recipes["mix"]
    with peer.runner() as runner:
        with pytest.raises(CheckpointLookupStopped) as refused:
            find_resume_checkpoint(recipe, runner.sftp())
        (finding,), budget = memory_section(recipe, PreflightOptions(ranks_per_node=4), runner)
    stopped = (
        "the checkpoint lookup in /ck/mix stopped while listing the directory, after 80 SFTP "
        "requests (its bound is 80), before it checked any checkpoint: the directory holds "
        "too many entries to list within the bound (a request for each batch of them the "
        "server sends)")
    stopped_ko = (
        "`/ck/mix`의 체크포인트 조회가 디렉터리 목록을 읽는 중에 SFTP 요청 80개 뒤에 "
        "멈췄습니다(한도 80개). 체크포인트는 하나도 확인하지 못했습니다: 그 디렉터리에는 "
        "한도 안에 목록을 다 읽기에는 항목이 너무 많습니다(서버가 보내는 항목 묶음마다 요청이 "
        "하나씩 듭니다)")
    text = refused.value.args[0]
    assert str(text) == (
        f"not resumed: {stopped}, so the run neither resumes from one nor starts from "
        "scratch. Move the old checkpoints and other files out of the directory, then resume "
        "again")
    assert render_text(text, ko) == (
        f"재개하지 않았습니다: {stopped_ko}. 그래서 어느 것에서도 재개하지 않고 처음부터 "
        "시작하지도 않습니다. 오래된 체크포인트와 다른 파일을 그 디렉터리 밖으로 옮긴 뒤 다시 "
        "재개하세요")
    assert budget is None and finding.level == "warn"
    assert finding.message == (
        f"no parameter count ({stopped}): skipped the checkpoint memory budget")
    assert finding.fix == (
        "move the old checkpoints and other files out of the directory (a resume of this "
        "recipe is refused until then), or pass --params (e.g. --params 1.4B)")
    assert render_text(finding.fix_text, ko) == (
        "오래된 체크포인트와 다른 파일을 그 디렉터리 밖으로 옮기세요(그때까지 이 레시피의 "
        "재개는 거부됩니다). 아니면 `--params`를 주세요 (예: `--params 1.4B`)")


def test_a_resume_stopped_by_symlinked_checkpoints_says_it_stopped_listing_them(
        peer: Peer) -> None:
    """85 symlinked checkpoints over a complete one: telling whether each is a directory (a
    stat each) takes the bound while listing `ck/mix` (its realpath, its listing's 9
    requests, 70 stats), before any checkpoint is checked. The
    refusal says so, with the directory as listed, the requests made and what to do, in
    English and Korean; it neither resumes nor starts afresh."""
    from fakes import make_config

    from bot.core.text import render_text
    from bot.services.resume_point import CheckpointLookupStopped, find_resume_checkpoint
    from bot.slack.render import translator

    root = _root(peer, range(0))
    elsewhere = peer.root / "elsewhere"
    for it in MANY:
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))
    recipe = make_config(checkpoint={"dir": "ck/mix"}).recipes["mix"]
    with peer.runner() as runner:
        sftp = runner.sftp()
        peer.requests.clear()
        with pytest.raises(CheckpointLookupStopped) as refused:
            find_resume_checkpoint(recipe, sftp)
    assert (peer.requests["realpath"], peer.requests["stat"]) == (1, 70)
    assert sent(peer) == CHECKPOINT_REQUESTS
    text = refused.value.args[0]
    assert str(text) == (
        "not resumed: the checkpoint lookup in /ck/mix stopped while listing the directory, "
        "after 80 SFTP requests (its bound is 80), before it checked any checkpoint: each of "
        "the 85 symlinks there named like a checkpoint takes a request to tell whether it is "
        "a directory, so the run neither resumes from one nor starts from scratch. Replace "
        "those symlinks with the directories they point to or remove the old ones, then "
        "resume again")
    assert render_text(text, translator("ko").gettext) == (
        "재개하지 않았습니다: `/ck/mix`의 체크포인트 조회가 디렉터리 목록을 읽는 중에 SFTP 요청 "
        "80개 뒤에 멈췄습니다(한도 80개). 체크포인트는 하나도 확인하지 못했습니다: 그곳에서 "
        "체크포인트처럼 이름 붙은 심볼릭 링크 85개는 각각 디렉터리인지 알아보는 데 요청이 "
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
    for it in MANY:
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))
    recipe = make_config(checkpoint={"dir": "/ck/mix"}).recipes["mix"]
    with peer.runner() as runner:
        (finding,), budget = memory_section(recipe, PreflightOptions(ranks_per_node=4), runner)
    assert budget is None and finding.level == "warn"
    assert finding.message == (
        "no parameter count (the checkpoint lookup in /ck/mix stopped while listing the "
        "directory, after 80 SFTP requests (its bound is 80), before it checked any "
        "checkpoint: each of the 85 symlinks there named like a checkpoint takes a request to "
        "tell whether it is a directory): skipped the checkpoint memory budget")
    assert finding.fix == (
        "replace those symlinks with the directories they point to or remove the old ones (a "
        "resume of this recipe is refused until then), or pass --params (e.g. --params 1.4B)")
    assert render_text(finding.fix_text, translator("ko").gettext) == (
        "그 심볼릭 링크를 가리키는 디렉터리로 바꾸거나 오래된 것을 지우세요(그때까지 이 레시피의 "
        "재개는 거부됩니다). 아니면 `--params`를 주세요 (예: `--params 1.4B`)")


def test_a_failed_open_frees_the_room_kept_for_its_close(peer: Peer) -> None:
    """A pointer file naming a checkpoint kept elsewhere that is gone: its opendir is answered
    "no such file", so no close follows, and the lookup may use that request. Here the
    complete checkpoint's listings end exactly at the bound: the root's listing (4), the
    pointer file read 10 bytes an answer (its open, 9 reads, its close), the failed opendir
    (1), 8 candidates (8 each): 80. Before, the failed opendir's close stayed reserved and
    the lookup stopped one short, refusing the run its checkpoint."""
    root = _root(peer, range(2000, 2007))
    (root / "latest_checkpoint.txt").write_text("/ck/gone/iter_000009999".ljust(79) + "\n")
    peer.read_at_most = 10
    decision = _probe(peer, "/ck/mix")
    assert decision.bound is None and decision.checkpoint is not None
    assert decision.checkpoint.path == "/ck/mix/iter_000001000"
    # 17 listings and the failed opendir; their 17 closes and the pointer file's
    assert (peer.requests["opendir"], peer.requests["close"], peer.requests["open"]) == (18, 18, 1)
    assert sent(peer) == decision.requests == CHECKPOINT_REQUESTS


def _stuck_read(peer: Peer, sftp: object) -> None:
    """A read of a file that hangs: its channel is set aside (SFTPTimedOut), then the late
    reply comes, so the pool's next request first closes that file and takes the channel
    back."""
    from bot.cluster.errors import SFTPTimedOut

    (peer.root / "hung-read.log").write_text("late\n")
    peer.release.clear()
    f = sftp.open("/hung-read.log", "rb")  # type: ignore[attr-defined]
    with pytest.raises(SFTPTimedOut):
        f.read(100)
    peer.entered.acquire(timeout=5)
    peer.release.set()
    time.sleep(0.2)  # the late reply on its way back


def test_the_close_of_a_recovered_stuck_file_is_not_the_lookups(
        peer: Peer, caplog: pytest.LogCaptureFixture) -> None:
    """After another request's read got stuck and its late reply came, the pool's next
    request closes that file first. That close is the pool's: a lookup over the pool (as a
    resume's runs, on the pool's lookup channel) finds its checkpoint at exactly its bound,
    80, and a request under a count that refuses everything still has the recovery close
    sent first (not counted, never refused), so the channel is back in use, not dropped."""
    import logging

    from bot.cluster.sftp import each_request
    from bot.core.checkpoints import LookupBoundReached

    root = _root(peer, range(2000, 2008))
    (root / "latest_checkpoint.txt").write_text("iter_000002007\n")
    caplog.set_level(logging.INFO, logger="bot.cluster.sftp")
    with peer.runner(sftp_timeout=0.5) as runner:
        sftp = runner.sftp()
        _stuck_read(peer, sftp)
        peer.requests.clear()
        decision = probe_checkpoints(sftp, "/ck/mix", "dcp")
        assert decision.bound is None and decision.checkpoint is not None
        assert decision.checkpoint.iteration == 1000
        assert decision.requests == CHECKPOINT_REQUESTS
        assert sent(peer) == CHECKPOINT_REQUESTS

        # under a count that refuses every request, the recovery close still goes out
        _stuck_read(peer, sftp)
        peer.requests.clear()
        refused: list[str] = []

        def refuse(kind: str) -> None:
            refused.append(kind)
            raise LookupBoundReached

        with each_request(refuse), pytest.raises(LookupBoundReached):
            sftp.stat("/ck/mix")
        assert refused == ["stat"] and dict(peer.requests) == {"close": 1}
    back = [r.getMessage() for r in caplog.records
            if "its channel is back in use" in r.getMessage()]
    assert len(back) >= 1 and all("SFTP read /hung-read.log answered after" in m for m in back)


def _realistic(root: Path) -> None:
    for it in range(1000, 13000, 1000):
        ck = root / f"iter_{it:09d}"
        for sub in ("model", "optim"):
            (ck / sub).mkdir(parents=True)
            for rank in range(4):
                (ck / sub / f"__{rank}_0.distcp").write_bytes(b"x" * 10)
            if it <= 9000:
                (ck / sub / ".metadata").write_bytes(b"m")
        (ck / "config.yaml").write_text("lr: 1e-4\n")
    for i in range(40):
        (root / f"train_{i}.log").write_text("step\n")
    (root / "latest_checkpoint.txt").write_text("iter_000012000\n")


def _symlinked(root: Path) -> None:
    _root_at(root, range(2003, 2000 + CHECKPOINT_REQUESTS + 5))
    elsewhere = root.parent.parent / "elsewhere"
    for it in range(2000, 2003):
        (root / f"iter_{it:09d}").symlink_to(_checkpoint(elsewhere, it, complete=False))


def _gone_pointer(root: Path) -> None:
    _root_at(root, range(2000, 2007))
    (root / "latest_checkpoint.txt").write_text("/ck/gone/iter_000009999".ljust(79) + "\n")


def _huge(root: Path) -> None:
    _root_at(root, range(0))
    for i in range(1300):
        (root / f"events_{i}.log").write_text("")


def _root_at(root: Path, newer_incomplete: range) -> None:
    _checkpoint(root, 1000, complete=True)
    for it in newer_incomplete:
        _checkpoint(root, it, complete=False)


@pytest.mark.parametrize("tree, root, answer_at_most", [
    (_realistic, "ck/mix", None),
    (lambda r: _root_at(r, MANY), "/ck/mix", None),
    (_symlinked, "ck/mix", None),
    (_gone_pointer, "/ck/mix", 10),
    (_huge, "/ck/mix", None),
    (lambda r: _root_at(r, range(2000, 2002)), "/ck/nothing/here", None),
])
def test_a_lookup_over_the_fake_sends_what_it_sends_to_the_server(
        peer: Peer, tree: Callable[[Path], None], root: str,
        answer_at_most: int | None) -> None:
    """The tests' SFTP fake over a local tree (fakes.LocalTreeSFTP) sends a lookup's requests
    as trainbot's client sends them to the server in this process, kind for kind, for the
    same tree: so unit tests over the fake exercise the lookup's bound as a cluster would."""
    from fakes import LocalTreeSFTP

    (peer.root / "ck" / "mix").mkdir(parents=True)
    tree(peer.root / "ck" / "mix")
    peer.read_at_most = answer_at_most
    over_server = _probe(peer, root)
    fake = LocalTreeSFTP(peer.root, answer_at_most=answer_at_most)
    assert probe_checkpoints(fake, root, "dcp") == over_server
    assert fake.requests == peer.requests
    assert sum(fake.requests.values()) == over_server.requests


@pytest.mark.parametrize("size, reads", [
    (15, [4096]),  # a pointer file: one read answered with it all, one with its end
    (5000, [4096, 4096]),  # what is asked, then the rest and the end
    (20000, [None]),  # to the end, 8 KiB a read
    (70000, [40000, 100, None]),  # 32 KiB a request at most
])
def test_a_fake_files_reads_send_what_they_send_to_the_server(
        peer: Peer, size: int, reads: list[int | None]) -> None:
    """Reading a file of the in-memory fake (fakes.FakeSFTP) sends the requests trainbot's
    client sends the server, kind for kind, and gives the same bytes."""
    from fakes import FakeSFTP

    data = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
    (peer.root / "f.bin").write_bytes(data)
    fake = FakeSFTP()
    fake.append("/f.bin", data)

    def read_all(sftp: object, got: list[bytes]) -> None:
        with sftp.open("/f.bin", "rb") as f:  # type: ignore[attr-defined]
            got.extend(f.read(n) for n in reads)

    with peer.runner() as runner:
        sftp = runner.sftp()
        sftp.stat("/")  # the channel opened
        peer.requests.clear()
        server_got: list[bytes] = []
        read_all(sftp, server_got)
    fake_got: list[bytes] = []
    read_all(fake, fake_got)
    assert fake.requests == peer.requests
    assert fake_got == server_got
