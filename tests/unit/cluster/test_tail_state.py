"""Tail logic on local files through the same stat/open surface SFTP offers."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot.cluster.tail import (
    TailState,
    read_new_lines,
    restart_reason,
    split_complete_lines,
)


class LocalSFTP:
    """stat/open over the local disk; like OpenSSH's SFTP v3 it reports no inode by default."""

    def __init__(self, with_inode: bool = False):
        self.with_inode = with_inode
        self.opens = 0

    def stat(self, path: str) -> Any:
        st = os.stat(path)
        attrs = {"st_size": st.st_size, "st_mtime": int(st.st_mtime)}
        if self.with_inode:
            attrs["st_ino"] = st.st_ino
        return SimpleNamespace(**attrs)

    def open(self, filename: str, mode: str = "r", bufsize: int = -1) -> Any:
        self.opens += 1
        return open(filename, mode)  # noqa: SIM115 - returned to a `with` in the tail


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
    assert restart_reason(TailState("/l", offset=100), 200, 8) is None  # SFTP: no inode known


def test_missing_file_is_an_empty_answer(tmp_path: Path) -> None:
    chunk = read_new_lines(LocalSFTP(), TailState(str(tmp_path / "job.out")))
    assert chunk.lines == [] and not chunk.restarted and chunk.bytes_read == 0
    assert chunk.state == TailState(str(tmp_path / "job.out"))


def test_appended_lines_arrive_once_with_line_numbers_and_partials(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    sftp = LocalSFTP()
    state = TailState(str(log))
    seen: list[tuple[int, str]] = []
    writes = [b"iter 1 loss 2.0\n", b"iter 2 lo", b"ss 1.9\niter 3", b"", b" loss 1.8\n", b"ok\n"]
    total_read = 0
    for w in writes:
        append(log, w)
        chunk = read_new_lines(sftp, state)
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
    chunk = read_new_lines(sftp, TailState.from_dict(state.to_dict()))
    assert (chunk.lines, chunk.first_line_no, chunk.bytes_read) == (["iter 4"], 5, 7)


def test_unchanged_file_is_not_opened(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"a\nb\n")
    sftp = LocalSFTP()
    state = read_new_lines(sftp, TailState(str(log))).state
    opens = sftp.opens
    chunk = read_new_lines(sftp, state)
    assert chunk.lines == [] and chunk.bytes_read == 0 and sftp.opens == opens


def test_truncation_restarts_from_zero(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"one\ntwo\nthree\n")
    state = read_new_lines(LocalSFTP(), TailState(str(log))).state
    log.write_bytes(b"new\n")
    chunk = read_new_lines(LocalSFTP(), state)
    assert chunk.restarted and "truncated" in chunk.reason
    assert (chunk.lines, chunk.first_line_no, chunk.state.offset) == (["new"], 1, 4)


@pytest.mark.parametrize("with_inode", [False, True])
def test_replacement_by_a_longer_file_is_detected(tmp_path: Path, with_inode: bool) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"attempt 1 line 1\nattempt 1 line 2\n")
    sftp = LocalSFTP(with_inode=with_inode)
    state = read_new_lines(sftp, TailState(str(log))).state
    log.unlink()
    log.write_bytes(b"attempt 2 started fresh\nattempt 2 line 2\nattempt 2 line 3\n")
    chunk = read_new_lines(sftp, state)
    assert chunk.restarted
    assert chunk.lines == ["attempt 2 started fresh", "attempt 2 line 2", "attempt 2 line 3"]
    assert chunk.first_line_no == 1
    assert chunk.bytes_read == log.stat().st_size
    assert "replaced" in chunk.reason


def test_removed_file_restarts_and_the_next_file_is_read_from_zero(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"old\n")
    state = read_new_lines(LocalSFTP(), TailState(str(log))).state
    log.unlink()
    chunk = read_new_lines(LocalSFTP(), state)
    assert chunk.restarted and chunk.lines == [] and chunk.state.offset == 0
    log.write_bytes(b"old\nnewer\n")  # the same first bytes must not matter after a restart
    chunk = read_new_lines(LocalSFTP(), chunk.state)
    assert chunk.lines == ["old", "newer"] and chunk.first_line_no == 1


def test_max_bytes_bounds_each_read_and_long_lines_do_not_stall(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_bytes(b"aaaa\nbbbb\ncccccccccccccccccccc\n")
    sftp = LocalSFTP()
    state = TailState(str(log))
    got: list[str] = []
    for _ in range(10):
        chunk = read_new_lines(sftp, state, max_bytes=8)
        assert chunk.bytes_read <= 8
        got += chunk.lines
        state = chunk.state
        if not chunk.more and not chunk.lines:
            break
    # The 20-byte line is split at the read limit rather than waiting forever.
    assert got[:2] == ["aaaa", "bbbb"]
    assert "".join(got[2:]) == "c" * 20
    assert state.offset == log.stat().st_size
