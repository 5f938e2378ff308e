"""Tail logic on local files through the batched reader: the real read script
(bot/cluster/tail_read.sh) under dash and bash, as a tick reads each file."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from support.local_shell import local_reader, read_new_lines

from bot.core.tail import (
    SAME,
    TailState,
    restart_reason,
    split_complete_lines,
)

SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]


@pytest.fixture(params=SHELLS)
def reader(request):
    return local_reader(request.param)


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def test_split_complete_lines_keeps_partial_last_line() -> None:
    assert split_complete_lines(b"a\nb\r\nhalf") == (["a", "b"], 5)
    assert split_complete_lines(b"half") == ([], 0)
    assert split_complete_lines(b"x" * 8, force=True) == (["x" * 8], 8)
    assert split_complete_lines("é\n".encode()) == (["é"], 3)
    assert split_complete_lines(b"\xff\n") == (["\ufffd"], 2)


def test_restart_reason_from_stat() -> None:
    s = TailState("/l", offset=100, inode=7, size=100)
    assert restart_reason(s, 100, 7) is None
    assert "truncated" in (restart_reason(s, 50, 7) or "")
    assert "inode 7 -> 8" in (restart_reason(s, 200, 8) or "")
    assert restart_reason(TailState("/l", offset=100), 200, 8) is None  # no inode known


def test_missing_file_is_an_empty_answer(tmp_path: Path, reader) -> None:
    chunk = read_new_lines(reader, TailState(str(tmp_path / "job.out")))
    assert chunk.lines == [] and not chunk.restarted and chunk.bytes_read == 0
    assert chunk.state == TailState(str(tmp_path / "job.out"))


def test_appended_lines_arrive_once_with_line_numbers_and_partials(tmp_path: Path, reader) -> None:
    log = tmp_path / "job.out"
    state = TailState(str(log))
    seen: list[tuple[int, str]] = []
    writes = [b"iter 1 loss 2.0\n", b"iter 2 lo", b"ss 1.9\niter 3", b"", b" loss 1.8\n", b"ok\n"]
    total_read = 0
    for w in writes:
        append(log, w)
        chunk = read_new_lines(reader, state)
        assert not chunk.restarted
        seen += [(chunk.first_line_no + i, line) for i, line in enumerate(chunk.lines)]
        total_read += chunk.bytes_read
        state = chunk.state
    assert seen == [
        (1, "iter 1 loss 2.0"),
        (2, "iter 2 loss 1.9"),
        (3, "iter 3 loss 1.8"),
        (4, "ok"),
    ]
    assert total_read == log.stat().st_size == state.offset
    # Persisted and restored, the state continues where it stopped.
    append(log, b"iter 4\n")
    chunk = read_new_lines(reader, TailState.from_dict(state.to_dict()))
    assert (chunk.lines, chunk.first_line_no, chunk.bytes_read) == (["iter 4"], 5, 7)


def test_unchanged_file_is_not_opened(tmp_path: Path, reader) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"a\nb\n")
    state = read_new_lines(reader, TailState(str(log))).state
    seen = []
    read = reader.read

    def reading(reqs):  # noqa: ANN001, ANN202
        seen.append(answer := read(reqs))
        return answer

    reader.read = reading
    chunk = read_new_lines(reader, state)
    assert chunk.lines == [] and chunk.bytes_read == 0
    assert [(r.status, r.data) for r in seen[0].results] == [(SAME, b"")]  # not read


def test_truncation_restarts_from_zero(tmp_path: Path, reader) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"one\ntwo\nthree\n")
    state = read_new_lines(reader, TailState(str(log))).state
    log.write_bytes(b"new\n")
    chunk = read_new_lines(reader, state)
    assert chunk.restarted and "truncated" in chunk.reason
    assert (chunk.lines, chunk.first_line_no, chunk.state.offset) == (["new"], 1, 4)


@pytest.mark.parametrize("with_inode", [False, True])
def test_replacement_by_a_longer_file_is_detected(tmp_path: Path, with_inode: bool,
                                                   reader) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"attempt 1 line 1\nattempt 1 line 2\n")
    state = read_new_lines(reader, TailState(str(log))).state
    if not with_inode:  # a state saved without one (an older version): the anchor tells
        state = replace(state, inode=None)
    log.unlink()
    log.write_bytes(b"attempt 2 started fresh\nattempt 2 line 2\nattempt 2 line 3\n")
    chunk = read_new_lines(reader, state)
    assert chunk.restarted
    assert chunk.lines == ["attempt 2 started fresh", "attempt 2 line 2", "attempt 2 line 3"]
    assert chunk.first_line_no == 1
    assert chunk.bytes_read == log.stat().st_size
    assert "replaced" in chunk.reason


def test_removed_file_restarts_and_the_next_file_is_read_from_zero(tmp_path: Path,
                                                                  reader) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"old\n")
    state = read_new_lines(reader, TailState(str(log))).state
    log.unlink()
    chunk = read_new_lines(reader, state)
    assert chunk.restarted and chunk.lines == [] and chunk.state.offset == 0
    log.write_bytes(b"old\nnewer\n")  # the same first bytes must not matter after a restart
    chunk = read_new_lines(reader, chunk.state)
    assert chunk.lines == ["old", "newer"] and chunk.first_line_no == 1


def test_max_bytes_bounds_each_read_and_long_lines_do_not_stall(tmp_path: Path,
                                                                reader) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"aaaa\nbbbb\ncccccccccccccccccccc\n")
    state = TailState(str(log))
    got: list[str] = []
    for _ in range(10):
        chunk = read_new_lines(reader, state, max_bytes=8)
        assert chunk.bytes_read <= 8
        got += chunk.lines
        state = chunk.state
        if not chunk.more and not chunk.lines:
            break
    # The 20-byte line is split at the read limit rather than waiting forever.
    assert got[:2] == ["aaaa", "bbbb"]
    assert "".join(got[2:]) == "c" * 20
    assert state.offset == log.stat().st_size
