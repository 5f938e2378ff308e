"""A batched read's answer cut by the read's timeout: what of it is kept, whether the cut was a
slow link's or a hung path's, and what the watcher says of the files it left unread."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.cluster.ssh import Exchange
from bot.cluster.tail import ShellTailReader
from bot.core.tail import ReadRequest, TailItem, TailState, read_tails

MIB = 1 << 20
LINE = b"step 1 loss 0.5 lr 1e-4 " + b"." * 39 + b"\n"  # 64 bytes


class Cut:
    """A runner whose answers a slow link cut (exit None), one per command."""

    def __init__(self, *outs: bytes) -> None:
        self.outs = list(outs)

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        return Exchange(self.outs.pop(0), b"", None)


@pytest.mark.parametrize(("budget", "data"), [
    (MIB, b""),  # its read failed at once: every byte announced is padding
    (600, LINE + b"x" * 300),  # its window, a line longer than a read, then the padding
])
def test_the_padding_of_a_cut_answers_last_file_is_no_bytes_of_it(budget: int,
                                                                   data: bytes) -> None:
    """A log at byte 1000 that grew to 2000 gives fewer bytes than announced (a failed read,
    the file shrank meanwhile): the script pads them with spaces, and only the end line says
    how many were data; the link cuts the answer inside that end line. The spaces are not
    the log's: it is not read again from 0 (its window of spaces is no anchor), nor is a line
    of them fed to the watcher; what came of it is kept, the rest read next tick."""
    state = TailState("/logs/job.out", offset=1000, size=1000, line_no=15, inode=11, mtime=1,
                      anchor=(LINE * 2)[-64:].hex())
    length = 64 + min(budget, 1000)
    answer = (b"F1 read 2000 2 11 936 %d\n" % length + data + b" " * (length - len(data))
              + b"E1 %d" % len(data))
    reader = ShellTailReader(Cut(answer), timeout=15.0)
    [out] = read_tails([TailItem(state, budget)], lambda reqs: reader.read(reqs).results,
                       max_rounds=1)
    assert not any(chunk.restarted for chunk in out.chunks)
    assert out.state.offset == 1000 and out.state.line_no == 15
    assert all(line.strip() for chunk in out.chunks for line in chunk.lines)


def test_a_read_that_hangs_after_many_quiet_files_is_hung_at_once() -> None:
    """1000 quiet logs answer `same` (44 KB of frames), then the read of the last one sends a
    handful of its 5000 bytes and hangs: the link carried the answer fine, so the path is hung
    this tick (left out, the budget untouched), not taken for a slow link first and found
    hung only on the next tick."""
    quiet = b"".join(b"F%d same 640 1 %d 0 0\nE%d 0 0\n" % (k, 100 + k, k)
                     for k in range(1, 1001))
    answer = quiet + b"F1001 read 5000 1 11 0 5000\n" + b"z" * 10
    requests = [ReadRequest(f"/logs/quiet_{k}.out", budget=MIB, size=640, mtime=1)
                for k in range(1, 1001)] + [ReadRequest("/nfs/hung.out", budget=MIB)]
    reader = ShellTailReader(Cut(answer), timeout=15.0)
    results = reader.read(requests).results
    assert [r.status for r in results[:-1]] == ["same"] * 1000
    assert results[-1].status == "failed" and "no answer" in str(results[-1].error)
    assert "/nfs/hung.out" in reader._hung and reader._slow is None


def test_a_slow_link_cut_inside_a_small_file_or_after_a_large_ones_bytes_is_a_slow_link() -> None:
    """The file being sent when the link cut the answer: part of a small one (read at once),
    or every byte of a large one (its end line is written at once) is a slow link's cut."""
    small = b"G1 new 100 1 11 0 100 128\nB128 1 %d mk1\n" % (100 + 3) + b"s" * 30
    large = b"F1 read 9000 1 11 0 9000\n" + b"l" * 9000
    for answer in (small, large):
        reader = ShellTailReader(Cut(answer), timeout=15.0)
        [got] = reader.read([ReadRequest("/logs/a.out", budget=MIB)]).results
        assert not reader._hung and reader._slow is not None
        assert got.later or got.data
