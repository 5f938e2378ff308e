"""What one batched read asks is bounded: the files share a byte budget below the runner's
output cap, so a backlog (a newly watched array's big logs, a bot that was down) moves on
every tick instead of failing the whole cluster's read each time; and an answer cut by the
timeout while bytes were still coming (a slow link) keeps what came and asks less next time,
where a hung path (nothing coming) is still left out."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from support.local_shell import LocalShell

from bot.cluster.errors import OutputTooLarge
from bot.cluster.ssh import Exchange
from bot.cluster.tail import ARGV, ShellTailReader
from bot.core.tail import (
    ANCHOR_BYTES,
    MIN_SHARE,
    MISSING,
    SAME,
    FileMissing,
    FileRead,
    ReadRequest,
    TailItem,
    TailOutcome,
    TailState,
    encode_requests,
    idle_paths,
    parse_frames,
    read_tails,
    share_budget,
    unread_for,
)

MIB = 1 << 20
LINE = b"step 1 loss 0.5 lr 1e-4 " + b"." * 39 + b"\n"  # 64 bytes


class Capped:
    """The runner's output cap (SSHRunner: OutputTooLarge past max_output_bytes)."""

    def __init__(self, inner: LocalShell, cap: int) -> None:
        self.inner, self.cap = inner, cap
        self.sizes: list[int] = []

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        answer = self.inner.exchange(argv, stdin=stdin, timeout=timeout)
        self.sizes.append(len(answer.stdout))
        if len(answer.stdout) > self.cap:
            raise OutputTooLarge(argv, self.cap)
        return answer


class SlowLink:
    """A link carrying `rate` bytes per second: an answer longer than the timeout lets through
    is cut there, the command unfinished (exit None), as SSHRunner.exchange gives it."""

    def __init__(self, inner: LocalShell, rate: float) -> None:
        self.inner, self.rate = inner, rate

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        answer = self.inner.exchange(argv, stdin=stdin, timeout=timeout)
        fits = int(self.rate * timeout)
        return Exchange(answer.stdout[:fits], b"", None) if len(answer.stdout) > fits else answer


def logs(tmp_path: Path, n: int, size: int) -> list[TailState]:
    for i in range(n):
        (tmp_path / f"log{i}").write_bytes(LINE * (size // len(LINE)))
    return [TailState(str(tmp_path / f"log{i}")) for i in range(n)]


def tick(reader: ShellTailReader, states: list[TailState], budget: int = 16 * MIB):
    return read_tails([TailItem(s, budget) for s in states],
                      lambda reqs: reader.read(reqs).results, batch_bytes=reader.batch_bytes)


@given(st.lists(st.tuples(st.integers(0, 8 * MIB), st.integers(1, 16 * MIB)), min_size=1,
                max_size=40), st.integers(1 << 10, 64 * MIB))
def test_shares_fit_the_total_keep_anchors_and_give_every_file_read_bytes(asks, total) -> None:
    """Always within the total (but for the first file's minimum): when the files' minimums
    do not all fit, the first ones whose minimums do are read, the others another tick."""
    requests = [ReadRequest(f"/l{i}", offset=back + 10, back=back, budget=budget)
                for i, (back, budget) in enumerate(asks)]
    shared = share_budget(requests, total)
    assert len(shared) == len(requests)
    read = [new for new in shared if new is not None]
    assert read and shared[:len(read)] == read  # the first ones
    for old, new in zip(requests, read, strict=False):
        assert new.path == old.path and new.offset == old.offset
        assert min(old.budget, MIN_SHARE) <= new.budget <= old.budget
        assert min(old.back, ANCHOR_BYTES) <= new.back <= old.back
    asked = sum(r.back + r.budget for r in read)
    if sum(r.back + r.budget for r in requests) <= total:
        assert shared == requests
    elif len(read) > 1:
        assert asked <= total
        nxt = requests[len(read)] if len(read) < len(requests) else None
        assert nxt is None or asked + min(nxt.back, ANCHOR_BYTES) + min(
            nxt.budget, MIN_SHARE) > total  # as many as fit
    else:
        assert asked <= max(total, min(requests[0].back, ANCHOR_BYTES) + min(
            requests[0].budget, MIN_SHARE))


def test_a_file_asking_less_than_its_share_gives_the_rest_to_the_others() -> None:
    small, big = ReadRequest("/s", budget=1000), ReadRequest("/b", budget=16 * MIB)
    assert share_budget([small, big, big], 10_000) == [
        small, ReadRequest("/b", budget=4500), ReadRequest("/b", budget=4500)]


def test_a_backlog_larger_than_the_output_cap_moves_on_every_tick(tmp_path: Path) -> None:
    """Five logs of 3 MiB each waiting, a 4 MiB output cap (the 64 MiB default with five
    15 MiB logs, scaled down): each batch stays below the cap and every log is read to its
    end within a few ticks, where asking for everything failed every tick."""
    states = logs(tmp_path, 5, 3 * MIB)
    runner = Capped(LocalShell(), 4 * MIB)
    reader = ShellTailReader(runner, timeout=30.0, max_output=4 * MIB)
    for _ in range(6):
        outs = tick(reader, states)
        assert all(o.error is None for o in outs)
        assert all(new.offset > old.offset or new.offset == 3 * MIB
                   for old, new in zip(states, (o.state for o in outs), strict=True))
        states = [o.state for o in outs]
    assert [s.offset for s in states] == [3 * MIB] * 5
    assert max(runner.sizes) <= 4 * MIB


def test_a_slow_link_keeps_what_came_and_asks_less_until_the_log_is_read(
        tmp_path: Path) -> None:
    """A link moving 1 MiB per timeout and a 3 MiB backlog: the first answer is cut while the
    log's bytes are coming. That is no hung filesystem: the log is not left out, the next
    batches ask what the link carries, and the log is read to its end over the ticks."""
    [state] = logs(tmp_path, 1, 3 * MIB)
    reader = ShellTailReader(SlowLink(LocalShell(), 1 * MIB), timeout=1.0)
    errors = []
    for _ in range(12):
        [out] = tick(reader, [state])
        if out.error is not None:
            errors.append(str(out.error))
        assert out.state.offset >= state.offset
        state = out.state
        if state.offset == 3 * MIB:
            break
    assert state.offset == 3 * MIB
    assert errors and all("came too slowly" in e for e in errors), errors
    assert not any("hung" in e for e in errors)


def test_the_bytes_of_the_file_being_sent_when_the_link_was_too_slow_are_kept(
        tmp_path: Path) -> None:
    """A file read by its own process (more waiting than its budget): its bytes that came
    before the cut are its answer, from where it was asked."""
    [state] = logs(tmp_path, 1, 3 * MIB)
    state = TailState(state.path)
    reader = ShellTailReader(SlowLink(LocalShell(), 1 * MIB), timeout=1.0)
    [out] = read_tails([TailItem(state, 2 * MIB)], lambda reqs: reader.read(reqs).results)
    assert out.error is None and out.more
    assert 0 < out.state.offset < 1.1 * MIB and out.state.offset % len(LINE) == 0


class Scripted:
    """A runner answering each command with the next of `outs` (cut: exit None)."""

    def __init__(self, *outs: bytes) -> None:
        self.outs, self.asked = list(outs), list[bytes]()

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        self.asked.append(stdin)
        out = self.outs.pop(0)
        return Exchange(out, b"", None if not out.endswith(b"D128 50 0\nS1:2 0\n\n") else 0)


def test_a_hung_path_after_a_bucket_file_that_grew_is_hung_not_a_slow_link() -> None:
    """/ok had 50 bytes at stat, 60 when its bucket's tail read it; /hung sends nothing.
    The 10 extra bytes are /ok's, not /hung's: /hung is left out and /ok read at once again,
    the batch budget untouched."""
    head = b"G1 new 50 1 11 0 50 128\nG2 new 100 1 12 0 100 128\nB128 2 150\n"
    cut = head + b"x" * 59 + b"\n"
    assert parse_frames(cut, ["/ok", "/hung"]).cut_bytes == 0
    again = (b"G1 new 50 1 11 0 50 128\nB128 1 50\n" + b"y" * 50 + b"D128 50 0\n"
             b"S1:2 0\n\n")
    runner = Scripted(cut, again)
    reader = ShellTailReader(runner, timeout=15.0)
    batch = reader.read([ReadRequest("/ok", budget=MIB), ReadRequest("/hung", budget=MIB)])
    assert [r.status for r in batch.results] == ["retry", "failed"]  # /ok: asked again
    assert "no answer" in str(batch.results[1].error)
    assert "/hung" in reader._hung and reader._slow is None and batch.round_trips == 2


def test_a_cut_inside_a_files_first_block_is_the_link_however_few_bytes_came() -> None:
    """A file's own read cut after 10 of its 5000 bytes in 15 s: dd wrote its 5000 bytes at
    once, so only the link stopped inside them: its bytes that came are kept, the rest read
    next tick; it is not left out as hung."""
    cut = b"F1 read 5000 1 11 0 5000\n" + b"z" * 10
    reader = ShellTailReader(Scripted(cut), timeout=15.0)
    [got] = reader.read([ReadRequest("/slow", budget=MIB)]).results
    assert got.status == "read" and got.data == b"z" * 10
    assert not reader._hung and reader._slow is not None


def test_a_link_slower_than_any_batch_floor_still_reads_every_file(tmp_path: Path) -> None:
    """A link carrying 100 KB per timeout, eight 1 MiB logs growing 48 KiB a tick: the files
    a cut left unread go first next tick and the batches ask less than 256 KiB, so every
    log moves on, where the last three failed every tick, never read."""
    states = logs(tmp_path, 8, MIB)
    reader = ShellTailReader(SlowLink(LocalShell(), 100_000), timeout=1.0)
    behind: dict[str, int] = {}
    failed = [0] * 8
    for _ in range(8):
        for s in states:
            with open(s.path, "ab") as f:
                f.write(LINE * 768)
        outs = read_tails([TailItem(s, 16 * MIB) for s in states],
                          lambda reqs: reader.read(reqs).results,
                          batch_bytes=reader.batch_bytes, behind=behind)
        behind = unread_for(behind, outs)
        failed = [n + (o.error is not None) for n, o in zip(failed, outs, strict=True)]
        assert not any(o.error is not None and "hung" in str(o.error) for o in outs)
        states = [o.state if o.error is None else s for s, o in zip(states, outs, strict=True)]
    assert all(s.offset >= 16 << 10 for s in states), [s.offset for s in states]
    assert max(failed) <= 4, failed
    assert reader.batch_bytes(8) < 256 << 10


def test_the_files_unread_longest_go_first() -> None:
    """Each batch asks first the files not read for the most ticks in a row."""
    asked: list[list[str]] = []

    def batch(reqs: list[ReadRequest]) -> list[FileRead]:
        asked.append([r.path for r in reqs])
        return [FileRead(SAME) for _ in reqs]

    items = [TailItem(TailState(f"/l{i}"), MIB) for i in range(4)]
    read_tails(items, batch, behind={"/l3": 2, "/l1": 1, "/gone": 5})
    assert asked == [["/l3", "/l1", "/l0", "/l2"]]
    outs = [TailOutcome(TailState("/l1")),
            TailOutcome(TailState("/l3"), error=OSError("x"), unreached=True),
            TailOutcome(TailState("/l0"), skipped=True, unreached=True)]
    assert unread_for({"/l3": 2, "/l1": 1}, outs) == {"/l3": 3, "/l0": 1}


def test_more_files_than_the_output_cap_holds_minimums_for_are_read_over_ticks(
        tmp_path: Path) -> None:
    """2000 logs at an 8 MiB output cap need more than the cap for their minimums alone
    (4160 bytes each); scaled down: 40 logs of 64 KiB, a batch of 48 KiB. Each tick reads the
    files whose minimums fit, those waiting longest first: the answer stays within its
    bytes, every log is read within a few ticks, and the others are not failed."""
    states = logs(tmp_path, 40, 64 << 10)
    runner = Capped(LocalShell(), 64 << 10)
    reader = ShellTailReader(runner, timeout=30.0)
    behind: dict[str, int] = {}
    for _ in range(5):
        outs = read_tails([TailItem(s, MIB) for s in states],
                          lambda reqs: reader.read(reqs).results,
                          batch_bytes=lambda files: 48 << 10, behind=behind)
        assert all(o.error is None for o in outs)
        assert 0 < sum(o.skipped for o in outs) < 40
        assert all(o.more for o in outs if o.skipped)
        behind = unread_for(behind, outs)
        states = [o.state for o in outs]
    assert all(s.offset > 0 for s in states), [s.offset for s in states]
    assert max(runner.sizes) <= 64 << 10


def test_an_answer_cut_in_a_header_its_end_or_the_stat_part_is_a_slow_link(
        tmp_path: Path) -> None:
    """Cut in a part the script writes at once (a header line, a bucket's bytes all come but
    its end line, the stat part after every bucket): the link was still carrying it, however
    few bytes came. Only an answer stopped where a file's starts is a hung path."""
    paths = []
    for i in range(40):
        (tmp_path / f"job_{i}.out").write_bytes(b"epoch 1 loss 0.3\n" * 20)
        paths.append(str(tmp_path / f"job_{i}.out"))
    requests = [ReadRequest(p, budget=MIB) for p in paths]
    full = LocalShell().exchange(ARGV, stdin=encode_requests(requests), timeout=30).stdout
    bucket_end = full.rfind(b"D", 0, full.rfind(b"\nS"))  # (its bytes end with its mark)
    cuts = {"the stat part": full.rfind(b"\nS") + 10, "a header line": full.find(b"G5 ") + 10,
            "a bucket's end line": bucket_end + 3, "after a bucket's bytes": bucket_end}
    for where, at in cuts.items():
        reader = ShellTailReader(Scripted(full[:at]), timeout=15.0)
        results = reader.read(requests).results
        assert not reader._hung and reader._slow is not None, where
        assert all("came too slowly" in str(r.error) for r in results), where
    stalled = full[:full.find(b"B") + full[full.find(b"B"):].find(b"\n") + 1]
    reader = ShellTailReader(Scripted(stalled, b""), timeout=15.0)
    reader.read(requests)
    assert list(reader._hung)[0] == paths[0] and reader._slow is None  # at its start


def test_a_slow_link_cut_inside_a_bucket_of_small_logs_moves_on_and_leaves_out_no_log(
        tmp_path: Path) -> None:
    """A newly started array: 300 logs of 100 bytes, each read whole in one bucket, and a link
    that cuts the answer inside that bucket. The cut file had sent some of its bytes: a slow
    link, so no log is left out as hung and the logs are read over the next ticks (the cut
    used to be taken for a hung path: two logs left out per tick, none read, every tick)."""
    paths = []
    for i in range(300):
        (tmp_path / f"task_{i}.out").write_bytes(LINE[:99] + b"\n")
        paths.append(str(tmp_path / f"task_{i}.out"))
    full = LocalShell().exchange(ARGV, stdin=encode_requests(
        [ReadRequest(p, budget=MIB) for p in paths]), timeout=30).stdout
    bucket = full.find(b"\nB128 ") + 1
    got = parse_frames(full[:bucket + 5_000], paths)
    assert got.stopped_at is not None and got.cut_bytes > 0
    reader = ShellTailReader(SlowLink(LocalShell(), 3_000), timeout=1.0)
    states = [TailState(p) for p in paths]
    behind: dict[str, int] = {}
    read = []
    for _ in range(3):
        outs = read_tails([TailItem(s, MIB) for s in states],
                          lambda reqs: reader.read(reqs).results,
                          batch_bytes=reader.batch_bytes, behind=behind)
        behind = unread_for(behind, outs)
        assert not reader._hung
        assert not any("hung" in str(o.error) for o in outs)
        states = [o.state if o.error is None else s for s, o in zip(states, outs, strict=True)]
        read.append(sum(s.offset > 0 for s in states))
    assert reader._slow is not None and 0 < read[1] < read[2], read


def test_in_a_marked_bucket_the_file_being_sent_is_told_by_the_marks() -> None:
    """Each file's bytes in a bucket end at the bucket's mark: after /ok (50 bytes at stat, 60
    when read), /hung sent nothing (hung); after /small (50 bytes), /next sent 30 (coming)."""
    mark = b"tmp.Zq81xWv0"
    head = b"G1 new 50 1 11 0 50 128\nG2 new 100 1 12 0 100 128\nB128 2 %d %s\n" % (
        150 + 2 * len(mark), mark)
    grown = parse_frames(head + b"x" * 60 + mark, ["/ok", "/hung"])
    assert grown.stopped_at == 1 and grown.cut_bytes == 0
    coming = parse_frames(head + b"x" * 50 + mark + b"y" * 30, ["/small", "/next"])
    assert coming.stopped_at == 1 and coming.cut_bytes == 30
    # files that grew filled the bucket's bytes: tail waits on a later file (no end line)
    filled = parse_frames(head + b"x" * 128 + mark + b"y" * 34, ["/grew", "/hung"])
    assert filled.stopped_at == 1 and filled.cut_bytes == 0 and not filled.arriving
    post = b"9:11 50 1\n1:2 0 0\n9:12 100 1\n1:2 0 0"
    whole = head + b"x" * 50 + mark + b"y" * 100 + mark + b"D128 %d 0\nS1:2 %d\n%s\n" % (
        150 + 2 * len(mark), len(post), post)
    results = parse_frames(whole, ["/small", "/next"]).results
    assert [r.data if r else None for r in results] == [b"x" * 50, b"y" * 100]


class Hiccup:
    """A link whose first long answer a network hiccup cuts after `carried` bytes."""

    def __init__(self, inner: LocalShell, carried: int) -> None:
        self.inner, self.carried, self.cut = inner, carried, False

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        answer = self.inner.exchange(argv, stdin=stdin, timeout=timeout)
        if not self.cut and len(answer.stdout) > self.carried:
            self.cut = True
            return Exchange(answer.stdout[:self.carried], b"", None)
        return answer


def test_after_one_slow_answer_quiet_logs_answered_at_once_bring_back_no_limit(
        tmp_path: Path) -> None:
    """One answer a hiccup cut makes the next batches ask 16 KiB; 30 quiet logs then answer
    at once with a line each: every such batch doubles what the next may ask, back to no
    limit (the batches stayed at 16-32 KiB for good, three or four logs read a tick)."""
    states = [o.state for o in tick(ShellTailReader(LocalShell()), logs(tmp_path, 30, 64 << 10))]
    with open(states[0].path, "ab") as f:
        f.write(LINE * 3000)  # a backlog
    reader = ShellTailReader(Hiccup(LocalShell(), 20_000), timeout=15.0, clock=lambda: 0.0)
    for _ in range(14):
        for s in states:
            with open(s.path, "ab") as f:
                f.write(LINE)
        states = [o.state if o.error is None else s
                  for s, o in zip(states, tick(reader, states), strict=True)]
    assert reader.batch_bytes(30) == ShellTailReader(LocalShell()).batch_bytes(30)
    assert all(s.offset == os.path.getsize(s.path) for s in states)


def test_files_failing_every_tick_take_no_minimums_ahead_of_the_others() -> None:
    """Three finished jobs' deleted logs (missing each tick) and 20 running logs, batches of
    16 KiB (three files' minimums): the failing files are asked after the others, so every
    running log is read in turn (the failing ones grew their count each tick, went first
    and took every minimum: no running log was ever read)."""
    bad = [f"/logs/deleted_{i}.out" for i in range(3)]
    good = [f"/logs/run_{i}.out" for i in range(20)]
    asked: list[str] = []

    def batch(reqs: list[ReadRequest]) -> list[FileRead]:
        asked.extend(r.path for r in reqs)
        return [FileRead(MISSING) if r.path in bad else FileRead(SAME, r.size, r.mtime)
                for r in reqs]

    items = [TailItem(TailState(p, offset=100, size=100, mtime=1, anchor="0a"), 16 * MIB,
                      must_exist=p in bad) for p in bad + good]
    behind: dict[str, int] = {}
    for _ in range(20):
        outs = read_tails(items, batch, batch_bytes=lambda files: 16 << 10, behind=behind)
        assert all(isinstance(o.error, FileMissing) for o in outs[:3] if not o.skipped)
        behind = unread_for(behind, outs)
    assert all(asked.count(p) >= 2 for p in good), [asked.count(p) for p in good]
    assert all(asked.count(p) >= 2 for p in bad)  # in their turn, once not reached


def test_a_line_longer_than_a_files_share_is_read_whole_on_a_later_tick(tmp_path: Path) -> None:
    """A tqdm bar redrawn after carriage returns, then the crash's first words on the same
    line (4105 bytes), in four logs sharing 16 KiB (4096 bytes each): the share ends inside
    the line, which is left whole for the next tick, read then with twice its bytes seen; the
    traceback's header is one line, as without a shared budget (it was cut in two at the
    share, neither part holding it)."""
    bar = "".join(f"\r 37%|###7      | {i}/1000 [00:{i % 60:02d}<01:40, 9.8it/s]"
                  for i in range(85))
    line = (bar + "\rTraceback (most recent call last):").encode()
    for i in range(4):
        (tmp_path / f"job{i}.out").write_bytes(
            line + b"\ntorch.OutOfMemoryError: CUDA out of memory\n" + b"step\n" * 3000)
    states = [TailState(str(tmp_path / f"job{i}.out")) for i in range(4)]
    reader = ShellTailReader(LocalShell(), timeout=30.0)
    fed: list[list[str]] = [[] for _ in states]
    behind: dict[str, int] = {}
    for _ in range(4):
        outs = read_tails([TailItem(s, 16 * MIB) for s in states],
                          lambda reqs: reader.read(reqs).results,
                          batch_bytes=lambda files: 16 << 10, behind=behind)
        behind = unread_for(behind, outs)
        for got, out in zip(fed, outs, strict=True):
            got.extend(line for chunk in out.chunks for line in chunk.lines)
        states = [o.state for o in outs]
    for got in fed:
        assert got[:2] == [line.decode(), "torch.OutOfMemoryError: CUDA out of memory"]


def test_a_line_longer_than_the_whole_batch_is_still_cut_so_the_log_moves_on(
        tmp_path: Path) -> None:
    """A 40 KB line in batches of 16 KiB: no tick's read can hold it, so it is cut (at the
    batch's bytes) and the log moves on past it."""
    (tmp_path / "big.out").write_bytes(b"x" * 40_000 + b"\nend\n")
    state = TailState(str(tmp_path / "big.out"))
    reader = ShellTailReader(LocalShell(), timeout=30.0)
    behind: dict[str, int] = {}
    lines: list[str] = []
    for _ in range(6):
        outs = read_tails([TailItem(state, 16 * MIB)], lambda reqs: reader.read(reqs).results,
                          batch_bytes=lambda files: 16 << 10, behind=behind)
        behind = unread_for(behind, outs)
        state = outs[0].state
        lines += [line for chunk in outs[0].chunks for line in chunk.lines]
    assert lines[-1] == "end" and sum(map(len, lines[:-1])) == 40_000


def test_idle_files_are_charged_almost_nothing_of_a_shared_batch() -> None:
    """24 files unchanged at their last read and 6 that write, 28 KiB for the batch: the idle
    ones are asked their anchor and a few hundred bytes, charged IDLE_COST each; the six
    writing ones share the rest (only six files' minimums fitted: the writing ones last in
    order were left out)."""
    requests = [ReadRequest(f"/l{i}", offset=640, back=64, budget=16 * MIB, size=640, mtime=1)
                for i in range(30)]
    shared = share_budget(requests, 28 << 10, None, [True] * 24 + [False] * 6)
    assert all(r is not None for r in shared)
    idle, writing = shared[:24], shared[24:]
    assert all(r is not None and r.back == 64 and r.budget <= MIN_SHARE for r in idle)
    assert all(r is not None and r.budget >= MIN_SHARE for r in writing)
    assert sum(r.back + r.budget for r in writing if r is not None) <= (28 << 10) - 24 * 64


def test_an_idle_files_long_unfinished_line_is_not_cut_at_its_idle_budget() -> None:
    """A log idle last tick whose last line is an unfinished progress bar (10 000 bytes of
    redraws, no newline yet) draws on while three other logs write, 16 KiB for the batch:
    asked an idle file's few KiB, it sends no line (its bar is not cut there as a line
    longer than any read); with bytes waiting it is not idle next tick, and its line, ended
    by a newline, is read whole."""
    bar = b"".join(b"\r %3d%%|#####     | %d/1000 [00:%02d<01:00, 9.9it/s]   "
                   % (i % 100, i, i % 60) for i in range(400))
    head = b"epoch 1 start\n"
    content = {"/l/bar.out": head + bar[:12000],
               **{f"/l/w{k}.out": LINE * 1500 for k in range(3)}}

    def batch(reqs: list[ReadRequest]) -> list[FileRead]:
        out = []
        for r in reqs:
            data = content[r.path]
            if r.size == len(data):
                out.append(FileRead(SAME, len(data), 6, 1))
                continue
            start = r.offset - r.back
            out.append(FileRead("read", len(data), 6, 1, start, data[start:r.offset + r.budget]))
        return out

    states = [TailState("/l/bar.out", offset=len(head), size=len(head) + 10000, line_no=1,
                        anchor=head.hex(), mtime=5, inode=1),
              *(TailState(f"/l/w{k}.out") for k in range(3))]
    idle: frozenset[str] = frozenset({"/l/bar.out"})
    behind: dict[str, int] = {}
    lines: list[str] = []
    for tick in range(8):
        if tick == 1:
            content["/l/bar.out"] += b"\n"
        outs = read_tails([TailItem(s, 16 * MIB) for s in states], batch,
                          batch_bytes=lambda files: 16 << 10, behind=behind, idle=idle)
        behind, idle = unread_for(behind, outs), idle_paths(outs)
        states = [o.state for o in outs]
        lines += [line for chunk in outs[0].chunks for line in chunk.lines]
    assert lines == [(bar[:12000]).decode()], [len(line) for line in lines]
    assert not states[0].unterminated
