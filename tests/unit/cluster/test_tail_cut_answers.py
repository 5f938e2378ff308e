"""A batched read's answer cut by the read's timeout: what of it is kept, whether the cut was a
slow link's or a hung path's, and what the watcher says of the files it left unread."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.cluster.ssh import Exchange
from bot.cluster.tail import ShellTailReader
from bot.core.tail import ReadRequest, TailItem, TailState, read_tails
from bot.core.tail_frames import DD_BLOCK

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


def test_a_read_stopped_on_a_block_after_many_quiet_logs_is_hung_at_once() -> None:
    """200 quiet logs answer `same`, then a log's own read sends one 64 KiB block of its
    200 000 bytes and stops. The link carried every byte dd wrote (the cut is on dd's
    block, not inside one): the path hangs, left out on the first tick, not taken for a slow
    link once (the next batches cut to the floor) and for a hung path only next tick."""
    quiet = [ReadRequest(f"/q/{k}.out", 100, 64, MIB, 100, 1, k) for k in range(200)]
    same = b"".join(b"F%d same 100 1 %d 0 0\nE%d 0 0\n" % (k + 1, k, k + 1)
                    for k in range(200))
    cut = same + b"F201 read 200000 2 999 0 200000\n" + b"z" * DD_BLOCK
    reader = ShellTailReader(Cut(cut, b""), timeout=15.0)
    got = reader.read([*quiet, ReadRequest("/hangs/job.out", budget=MIB)]).results
    assert got[-1].status == "failed" and not got[-1].later
    assert "/hangs/job.out" in reader._hung and reader._slow is None
    assert [r.status for r in got[:-1]] == ["same"] * 200
