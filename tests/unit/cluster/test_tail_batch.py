"""The batched read script (bot/cluster/tail_read.sh) under dash and bash, on real files: it
answers as its reference (tests/support/tail_model.py) for any content, path and request,
and a path that hangs costs one timeout, not the other files' reads."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.local_shell import LocalShell, local_reader
from support.tail_model import answer

from bot.cluster.tail import ShellTailReader
from bot.core.tail import FAILED, READ, ReadRequest

SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]
MARKERS = [b"F1 read 1 2 3 4 5\n", b"E1 0 0\n", b"\0", b"\xff\xfe", b"x\n", b"\r\n", b"'"]
content = st.one_of(st.binary(max_size=200),
                    st.lists(st.sampled_from(MARKERS), max_size=30).map(b"".join))


@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.one_of(st.none(), content), min_size=1, max_size=6), data=st.data())
def test_the_script_answers_as_its_reference(tmp_path: Path, shell: str, files, data) -> None:
    reader = local_reader(shell)
    requests, expected = [], []
    for i, body in enumerate(files):
        path = tmp_path / f"job {i} 'q' $(x)\n.out"
        if path.exists():
            path.unlink()
        if body is not None:
            path.write_bytes(body)
        st_ = path.stat() if body is not None else None
        size = len(body) if body is not None else 0
        offset = data.draw(st.integers(0, size + 3))
        back = data.draw(st.integers(0, offset))
        budget = data.draw(st.integers(1, size + 5))
        mtime = int(st_.st_mtime) if st_ else 0
        inode = st_.st_ino if st_ else 0
        req = ReadRequest(str(path), offset, back, budget,
                          data.draw(st.sampled_from([-1, size, size + 1])),
                          data.draw(st.sampled_from([None, mtime, mtime - 1])),
                          data.draw(st.sampled_from([None, inode, inode + 1])))
        requests.append(req)
        expected.append(answer(req, body, mtime, inode))
    batch = reader.read(requests)
    assert batch.results == expected
    assert batch.round_trips == 1


def test_one_command_for_many_files_and_nothing_read_of_unchanged_ones(tmp_path: Path) -> None:
    shell = LocalShell()
    reader = ShellTailReader(shell)
    paths = [tmp_path / f"{i}.log" for i in range(300)]
    for p in paths:
        p.write_bytes(b"iter 1\n")
    first = reader.read([ReadRequest(str(p)) for p in paths])
    assert shell.commands == 1 and all(r.data == b"iter 1\n" for r in first.results)
    again = reader.read([ReadRequest(str(p), 7, 7, 100, r.size, r.mtime, r.inode)
                         for p, r in zip(paths, first.results, strict=True)])
    assert shell.commands == 2 and {r.status for r in again.results} == {"same"}
    assert sum(len(r.data) for r in again.results) == 0


@pytest.fixture
def hanging_shell(tmp_path: Path) -> LocalShell:
    """A login node whose filesystem hangs on any path holding "nfs-down": `stat` answers the
    paths before it, then blocks (what a dead NFS server does to the one process)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("stat")
    fake = bin_dir / "stat"
    fake.write_text(f"""#!/bin/sh
# fake stat: the options, then each path in turn (line by line, like stdbuf -oL stat)
fmt=
while [ "$#" -gt 0 ]; do
  case "$1" in --) shift; break ;; -c) fmt=$2; shift 2 ;; *) shift ;; esac
done
for p do
  case "$p" in *nfs-down*) sleep 60 ;; esac
  {real} -L -c "$fmt" -- "$p" 2>/dev/null
done
""")
    fake.chmod(0o755)

    class Hanging(LocalShell):
        def exchange(self, argv, *, stdin, timeout):  # noqa: ANN001
            os.environ["PATH"], saved = f"{bin_dir}:{os.environ['PATH']}", os.environ["PATH"]
            try:
                return super().exchange(argv, stdin=stdin, timeout=timeout)
            finally:
                os.environ["PATH"] = saved

    return Hanging()


def test_a_hung_path_costs_one_timeout_and_the_other_files_are_read(
        tmp_path: Path, hanging_shell: LocalShell) -> None:
    logs = [tmp_path / f"job{i}.log" for i in range(20)]
    for i, p in enumerate(logs):
        p.write_bytes(b"iter %d\n" % i)
    paths = [str(p) for p in logs[:10]] + [str(tmp_path / "nfs-down" / "job.log")] + \
        [str(p) for p in logs[10:]]
    reader = ShellTailReader(hanging_shell, timeout=1.0)
    start = time.monotonic()
    first = reader.read([ReadRequest(p) for p in paths])
    elapsed = time.monotonic() - start
    assert [r.status for r in first.results] == [READ] * 10 + [FAILED] + [READ] * 10
    assert "no answer within" in first.results[10].error
    assert first.round_trips == 2  # the files after the hung one asked again at once
    assert elapsed < 1.0 + 0.02 * 21 + 2.0
    start = time.monotonic()
    second = reader.read([ReadRequest(p) for p in paths])
    assert second.round_trips == 1 and time.monotonic() - start < 1.0  # left out: no wait
    assert second.results[10].status == FAILED and "asked again after" in \
        second.results[10].error
    assert [r.data for r in second.results[:10]] == [b"iter %d\n" % i for i in range(10)]
