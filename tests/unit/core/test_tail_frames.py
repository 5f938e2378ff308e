"""The batched read protocol, pure (bot.core.tail): requests encoded, frames parsed whatever
bytes the files hold (the frame markers themselves, NULs, invalid UTF-8, lines longer than a
budget), answers cut short, and the decisions a tick takes over them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.tail_model import answer

from bot.core.tail import (
    FAILED,
    MISSING,
    NEW,
    READ,
    SAME,
    FileRead,
    FramingError,
    ReadRequest,
    TailItem,
    TailState,
    askable_path,
    encode_requests,
    frame,
    parse_frames,
    read_tails,
)


def paths(n: int) -> list[str]:
    """The paths of a batch of `n` files (what parse_frames' errors name)."""
    return [f"/scratch/run/f{k}.out" for k in range(1, n + 1)]


MARKERS = [b"F1 read 1 2 3 4 5\n", b"E1 0 0\n", b"\nF2 missing 0 0 0 0 0\n", b"\0", b"\xff\xfe"]
data = st.one_of(st.binary(max_size=300),
                 st.lists(st.sampled_from(MARKERS + [b"x\n", b"\r\n"]), max_size=20)
                 .map(b"".join))
results = st.one_of(
    st.builds(lambda d, s, m, i, st_: FileRead(READ, s + len(d), m, i, st_, d), data,
              st.integers(0, 10**12), st.integers(-10**9, 10**10), st.integers(0, 2**63),
              st.integers(0, 10**12)),
    st.builds(lambda d: FileRead(NEW, len(d), 7, 9, 0, d), data),
    st.builds(lambda s: FileRead(SAME, s, 5, 6), st.integers(0, 10**12)),
    st.just(FileRead(MISSING)),
)


@settings(max_examples=300)
@given(st.lists(st.tuples(results, st.integers(0, 40)), max_size=8))
def test_frames_round_trip_whatever_the_bytes(answers):
    """Data holding the markers, NULs or invalid UTF-8 comes back byte for byte; so does a
    frame padded after a file shrank under the read."""
    out = b"".join(frame(k, r, padded_to=len(r.data) + pad if r.status in (READ, NEW) else None)
                   for k, (r, pad) in enumerate(answers, 1))
    assert parse_frames(out, paths(len(answers))).results == [r for r, _ in answers]


@settings(max_examples=200)
@given(st.lists(results, min_size=1, max_size=6), st.data())
def test_output_cut_anywhere_gives_the_frames_before_the_cut(answers, draw):
    frames = [frame(k, r) for k, r in enumerate(answers, 1)]
    out = b"".join(frames)
    cut = draw.draw(st.integers(0, len(out)))
    got = parse_frames(out[:cut], paths(len(answers)))
    complete = sum(1 for k in range(len(frames)) if len(b"".join(frames[:k + 1])) <= cut)
    assert got.results == answers[:complete] + [None] * (len(answers) - complete)
    assert got.stopped_at == (complete if complete < len(answers) else None)


def test_malformed_answers_are_framing_errors_not_data():
    ok = frame(1, FileRead(READ, 3, 1, 1, 0, b"abc"))
    for bad in (b"garbage\n", ok.replace(b"E1 3 0", b"E1 4 0"), ok + ok,
                frame(2, FileRead(MISSING)), ok[:-1] + b"x\n" + b"F2 same 0 0 0 0 0\n"):
        with pytest.raises(FramingError):
            parse_frames(bad, paths(2))


def test_a_failed_read_says_so():
    out = frame(1, FileRead(READ, 10, 1, 1, 0, b"ab"), padded_to=5, rc=1)
    (got,) = parse_frames(out, paths(1)).results
    assert got is not None
    assert got.status == FAILED and "dd exit 1" in str(got.error) and got.data == b""


@given(st.text(min_size=1).filter(lambda p: "\0" not in p))
def test_requests_quote_any_path(path):
    text = encode_requests([ReadRequest(path, 10, 4, 100, 12, None, 3)])
    assert text.startswith(b"set -- '") and text.endswith(b"' \"$t\"\nnums='10 4 100 12 x 3 0'\n")
    assert askable_path(path)
    for bad in (path + "\0", "", "\ud800"):  # a NUL byte, nothing, no file name's bytes
        assert not askable_path(bad)
        with pytest.raises(ValueError):
            encode_requests([ReadRequest(bad, 0)])


# ---- a tick's reads, against the read script's rules ------------------------------------------


class Files:
    """Files as the login node holds them, answered by the read script's rules."""

    def __init__(self) -> None:
        self.content: dict[str, bytes] = {}
        self.inode: dict[str, int] = {}
        self.mtime = 100
        self.batches: list[list[ReadRequest]] = []

    def write(self, path: str, data: bytes, *, new_inode: bool = False) -> None:
        if new_inode or path not in self.inode:
            self.inode[path] = len(self.inode) + 1 + (1000 if new_inode else 0)
        self.content[path] = data
        self.mtime += 1

    def read(self, requests: list[ReadRequest]) -> list[FileRead]:
        self.batches.append(requests)
        return [answer(r, self.content.get(r.path), self.mtime, self.inode.get(r.path, 0))
                for r in requests]


def follow(files: Files, state: TailState, budget: int = 1 << 20, drain: bool = False):
    (out,) = read_tails([TailItem(state, budget, drain)], files.read)
    return out


@settings(max_examples=150)
@given(st.lists(data, min_size=1, max_size=12), st.integers(1, 64), st.booleans())
def test_appends_read_in_any_pieces_give_the_same_lines(pieces, budget, drain):
    """Whatever the pieces, the budget and a drain's second read (on the budget left), the
    lines read are the file's lines, each once and whole (one as long as the budget too; a
    line longer is cut at it, never stalls) and the offset ends at the last newline."""
    files, state, got = Files(), TailState("/log"), []
    whole = b""
    for piece in pieces:
        whole += piece
        files.write("/log", whole)
        for _ in range(len(whole) + 2):
            out = follow(files, state, budget, drain)
            for chunk in out.chunks:
                got.extend(chunk.lines)
            state = out.state
            if not out.more:
                break
    complete = whole[:whole.rfind(b"\n") + 1]
    if all(len(line) <= budget for line in whole.split(b"\n")):
        expect = [ln.decode("utf-8", "replace").rstrip("\r")
                  for ln in complete.split(b"\n")[:-1]]
        assert got == expect
        assert state.offset == len(complete)
    else:  # a line longer than the budget is cut at it: nothing lost, nothing twice
        assert state.offset >= len(complete)


def test_a_line_as_long_as_the_budget_then_a_shorter_unfinished_one_is_read_once():
    """A line exactly as long as a read is taken without its newline; the next read starts
    with that late newline and holds fewer bytes than a read of the line after it: that
    unfinished line waits for its newline instead of being cut as if it were too long
    (hypothesis found it: 6 NULs, a newline, 6 NULs, budget 6)."""
    files, state = Files(), TailState("/log")
    got: list[str] = []
    files.write("/log", b"abcdef\nghijkl")
    for _ in range(5):
        out = follow(files, state, 6)
        got.extend(line for chunk in out.chunks for line in chunk.lines)
        state = out.state
    assert got == ["abcdef"]
    assert state.offset == 7
    files.write("/log", b"abcdef\nghijkl\n")
    out = follow(files, state, 6)
    got.extend(line for chunk in out.chunks for line in chunk.lines)
    out = follow(files, out.state, 6)
    got.extend(line for chunk in out.chunks for line in chunk.lines)
    assert got == ["abcdef", "ghijkl"]


def test_one_batch_for_many_files_and_a_second_only_for_rewritten_ones():
    files = Files()
    for i in range(50):
        files.write(f"/l{i}", b"a\nb\n")
    items = [TailItem(TailState(f"/l{i}"), 1 << 20) for i in range(50)]
    outs = read_tails(items, files.read)
    assert len(files.batches) == 1 and all(o.chunks[0].lines == ["a", "b"] for o in outs)
    states = [o.state for o in outs]
    files.write("/l7", b"X\nY\nZ\n")  # rewritten in place, longer: only the anchor tells
    files.write("/l8", b"a\nb\nc\n")  # appended
    outs = read_tails([TailItem(s, 1 << 20) for s in states], files.read)
    assert [len(b) for b in files.batches] == [50, 50, 1]
    assert outs[7].chunks[-1].restarted and outs[7].chunks[-1].lines == ["X", "Y", "Z"]
    assert "rewritten or replaced" in outs[7].chunks[-1].reason
    assert outs[8].chunks[-1].lines == ["c"] and not outs[8].chunks[-1].restarted
    assert all(o.chunks[-1].lines == [] for i, o in enumerate(outs) if i not in (7, 8))


def test_a_finished_jobs_log_is_drained_in_a_second_batch_within_its_budget():
    files = Files()
    files.write("/log", b"".join(b"line %d\n" % i for i in range(100)))
    out = follow(files, TailState("/log"), budget=400, drain=True)
    assert len(files.batches) == 2 and len(out.chunks) == 2
    assert sum(c.bytes_read for c in out.chunks) <= 400 and out.more
    out = follow(files, TailState("/log"), budget=400, drain=False)
    assert len(files.batches) == 3 and len(out.chunks) == 1 and out.more


def test_a_drains_second_read_ending_mid_line_leaves_that_line_whole_for_the_next_tick():
    """The first read stops 2 bytes short of the budget, after `line 50`; the second one,
    on those 2 bytes, reads `li` of `line 51`: that is no line, it is read whole next tick."""
    files = Files()
    files.write("/log", b"".join(b"line %d\n" % i for i in range(100)) + b"Killed")
    out = follow(files, TailState("/log"), budget=400, drain=True)
    assert [c.lines for c in out.chunks] == [[f"line {i}" for i in range(51)], []]
    assert out.more and out.state.line_no == 51
    out = follow(files, out.state, budget=400, drain=True)
    assert out.chunks[0].lines[0] == "line 51" and out.chunks[0].first_line_no == 52


def test_ticks_whose_leftover_budget_ends_mid_line_give_each_line_whole_once():
    """A finished job's log read over ticks, each draining on the budget left after its first
    read: that leftover ends inside `line 51` on the first tick and inside the error line on
    the second; every line, the error line included, comes whole, once, numbered in order."""
    error = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    files = Files()
    files.write("/log", b"".join(b"line %d\n" % i for i in range(100)) + error.encode())
    state, got = TailState("/log"), []
    for _ in range(5):
        out = _last_line_read(files, state, budget=400)
        got += [(c.first_line_no + k, line) for c in out.chunks for k, line in enumerate(c.lines)]
        state = out.state
        if not out.more:
            break
    assert got == list(enumerate([f"line {i}" for i in range(100)] + [error], 1))
    assert state.line_no == 101 and not out.more


def test_a_line_longer_than_the_budget_is_cut_at_it_when_drained():
    """A line longer than a whole read is cut at the budget, so the tail goes on past it."""
    files = Files()
    files.write("/log", b"a\n" + b"x" * 1000 + b"\nb\n")
    state, got = TailState("/log"), []
    for _ in range(6):
        out = follow(files, state, budget=400, drain=True)
        got += [line for c in out.chunks for line in c.lines]
        state = out.state
    assert "".join(got) == "a" + "x" * 1000 + "b" and got[0] == "a" and got[-1] == "b"
    assert state.offset == 1005


def _last_line_read(files: Files, state: TailState, budget: int = 1 << 20):
    (out,) = read_tails([TailItem(state, budget, drain=True, last_line=True)], files.read)
    return out


def test_an_ended_writers_unfinished_last_line_is_read_once_a_late_newline_no_line():
    """Read while written, the last line without newline waits; once its writer has ended it
    is the file's last line, read again though the file looks unchanged, then never again:
    not on a later read, and a newline arriving late is no line of its own."""
    files = Files()
    files.write("/log", b"iter 1\nRuntimeError: CUDA out of memory.")
    running = follow(files, TailState("/log"))
    assert running.chunks[-1].lines == ["iter 1"]
    assert running.chunks[-1].unfinished == b"RuntimeError: CUDA out of memory."
    ended = _last_line_read(files, running.state)
    assert [c.lines for c in ended.chunks] == [["RuntimeError: CUDA out of memory."]]
    assert ended.state.line_no == 2 and ended.chunks[-1].unfinished == b""
    again = _last_line_read(files, ended.state)
    assert [c.lines for c in again.chunks] == [[]]
    files.write("/log", files.content["/log"] + b"\n")
    late = _last_line_read(files, again.state)
    assert [c.lines for c in late.chunks] == [[]] and late.state.line_no == 2
    files.write("/log", files.content["/log"] + b"epilogue\n")
    after = _last_line_read(files, late.state)
    assert [c.lines for c in after.chunks] == [["epilogue"]] and after.state.line_no == 3


def test_a_last_line_is_not_taken_while_bytes_beyond_the_budget_wait():
    files = Files()
    files.write("/log", b"".join(b"line %02d\n" % i for i in range(100)) + b"Killed")  # 8 B
    out = _last_line_read(files, TailState("/log"), budget=400)
    assert out.more and all("Killed" not in line for c in out.chunks for line in c.lines)
    while out.more:
        out = _last_line_read(files, out.state, budget=400)
    assert out.chunks[-1].lines[-1] == "Killed" and out.state.line_no == 101


def _lines_read(out) -> list[tuple[int, str]]:
    """(line number, line) of every line a tick read."""
    return [(c.first_line_no + k, line) for c in out.chunks for k, line in enumerate(c.lines)]


@pytest.mark.parametrize(("extra", "expect"), [
    (-1, [(2, "E" * 63)]),
    (0, [(2, "E" * 64)]),
    (1, [(2, "E" * 64), (3, "E")]),  # longer than any read: cut at it
], ids=["budget-1", "budget", "budget+1"])
def test_a_finished_logs_last_line_about_a_reads_length_is_taken_once(extra, expect):
    """A finished job's log ends with an error line of a read's length (64 B), a byte short
    or a byte over, without newline. As long as a read or shorter it is the log's last line,
    whole; a byte longer it is cut at the budget, its last byte the last line. Each is taken
    once: read after read, a newline arriving late is no line, the next line is numbered on."""
    files = Files()
    files.write("/log", b"iter 1\n" + b"E" * (64 + extra))
    state, got = TailState("/log"), []
    for write in (b"", b"", b"", b"\n", b"", b"epilogue\n"):
        files.write("/log", files.content["/log"] + write)
        out = _last_line_read(files, state, budget=64)
        got += _lines_read(out)
        state = out.state
    assert got == [(1, "iter 1"), *expect, (len(expect) + 2, "epilogue")]


def test_a_line_as_long_as_a_read_then_its_newline_is_one_line():
    """A running job's line exactly one read long (64 B): read while its newline is not
    written yet, it waits; read once the newline waits after it, it is one line, whole, and
    that newline ends it: no empty line after it, the next line numbered on."""
    files = Files()
    files.write("/log", b"E" * 64)
    out = follow(files, TailState("/log"), budget=64)
    assert _lines_read(out) == [] and out.chunks[-1].unfinished == b"E" * 64
    state, got = out.state, []
    files.write("/log", files.content["/log"] + b"\nnext\n")
    for _ in range(3):
        out = follow(files, state, budget=64)
        got += _lines_read(out)
        state = out.state
    assert got == [(1, "E" * 64), (2, "next")] and state.offset == 70


def test_a_warm_up_window_comes_with_the_new_bytes_when_the_file_is_the_same():
    files = Files()
    files.write("/log", b"old 1\nold 2\nnew\n")
    saved = TailState("/log", offset=12, size=12, line_no=2, anchor=b"old 1\nold 2\n".hex(),
                      mtime=1, inode=1)
    (out,) = read_tails([TailItem(saved, 1 << 20, window=8)], files.read)
    assert out.window == b"old 1\nold 2\n" and out.chunks[0].lines == ["new"]  # >= anchor
    files.write("/log", b"other\nfile\nnew\n", new_inode=True)
    (out,) = read_tails([TailItem(saved, 1 << 20, window=8)], files.read)
    assert out.window == b"" and out.chunks[0].restarted
    assert out.chunks[0].lines == ["other", "file", "new"]
