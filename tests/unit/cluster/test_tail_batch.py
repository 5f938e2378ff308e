"""The batched read script (bot/cluster/tail_read.sh) under dash and bash, on real files: it
answers as its reference (tests/support/tail_model.py) for any content, path and request,
and a path that hangs costs one timeout, not the other files' reads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.local_shell import LocalShell, local_reader
from support.tail_model import answer

from bot.cluster.tail import ShellTailReader
from bot.core.tail import (
    FAILED,
    READ,
    FileMissing,
    ReadRequest,
    TailItem,
    TailState,
    read_tails,
)

SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]
MARKERS = [b"F1 read 1 2 3 4 5\n", b"E1 0 0\n", b"\0", b"\xff\xfe", b"x\n", b"\r\n", b"'"]
content = st.one_of(st.binary(max_size=200), st.binary(min_size=100, max_size=3000),
                    st.lists(st.sampled_from(MARKERS), max_size=300).map(b"".join))


@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=60, deadline=None,
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
        offset = data.draw(st.one_of(st.integers(0, size + 3),
                                     st.integers(max(0, size - 300), size)))
        back = data.draw(st.one_of(st.integers(0, offset), st.just(min(64, offset))))
        budget = data.draw(st.one_of(st.integers(1, size + 5), st.just(1 << 20)))
        mtime = int(st_.st_mtime) if st_ else 0
        inode = st_.st_ino if st_ else 0
        req = ReadRequest(str(path), offset, back, budget,
                          data.draw(st.sampled_from([-1, size, size + 1])),
                          data.draw(st.sampled_from([None, mtime, mtime - 1])),
                          data.draw(st.sampled_from([None, inode, inode + 1])),
                          data.draw(st.booleans()))
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


def shell_with(tmp_path: Path, **tools: str) -> LocalShell:
    """A login node whose `stat`, `tail`... are the given sh scripts (`{real}`: the real
    tool), first in its PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in tools.items():
        fake = bin_dir / name
        fake.write_text("#!/bin/sh\n" + body.replace("{real}", shutil.which(name) or name))
        fake.chmod(0o755)

    class Faked(LocalShell):
        def exchange(self, argv, *, stdin, timeout):  # noqa: ANN001
            os.environ["PATH"], saved = f"{bin_dir}:{os.environ['PATH']}", os.environ["PATH"]
            try:
                return super().exchange(argv, stdin=stdin, timeout=timeout)
            finally:
                os.environ["PATH"] = saved

    return Faked()


HANGING_STAT = """# blocks on a path holding "nfs-down", after answering the paths before it
fmt=
while [ "$#" -gt 0 ]; do
  case "$1" in --) shift; break ;; -c) fmt=$2; shift 2 ;; *) shift ;; esac
done
for p do
  case "$p" in *nfs-down*) sleep 60 ;; esac
  {real} -L -c "$fmt" -- "$p" 2>/dev/null
done
"""


@pytest.fixture
def hanging_shell(tmp_path: Path) -> LocalShell:
    """A login node whose filesystem hangs on any path holding "nfs-down" (what a dead NFS
    server does to the one process that touches it)."""
    return shell_with(tmp_path, stat=HANGING_STAT)


def test_a_hung_path_costs_one_timeout_and_the_other_files_are_read(
        tmp_path: Path, hanging_shell: LocalShell) -> None:
    logs = [tmp_path / f"job{i}.log" for i in range(20)]
    for i, p in enumerate(logs):
        p.write_bytes(b"iter %d\n" % i)
    paths = [str(p) for p in logs[:10]] + [str(tmp_path / "nfs-down" / "job.log")] + \
        [str(p) for p in logs[10:]]
    reader = ShellTailReader(hanging_shell, timeout=1.0)
    first = reader.read([ReadRequest(p) for p in paths])
    assert [r.status for r in first.results] == [READ] * 10 + [FAILED] + [READ] * 10
    assert "no answer within" in str(first.results[10].error)
    # the files after the hung one asked again at once, in a second command that answers
    assert first.round_trips == 2
    second = reader.read([ReadRequest(p) for p in paths])
    assert second.round_trips == 1  # the hung path left out: no command waits on it
    assert second.results[10].status == FAILED and "asked again after" in str(
        second.results[10].error)
    assert [r.data for r in second.results[:10]] == [b"iter %d\n" % i for i in range(10)]


def test_a_path_that_hangs_while_its_bucket_is_read_is_found_by_the_bytes_received(
        tmp_path: Path) -> None:
    """The metadata answers, the data does not: `tail` blocks on the hung file after the
    files before it in its bucket; the bytes that came say which file it was at."""
    shell = shell_with(tmp_path, tail="""for p do :; done
for p do case "$p" in *nfs-down*) hung=1 ;; esac; done
if [ -n "$hung" ]; then
  for p do case "$p" in *nfs-down*) sleep 60 ;; -*) ;; *) {real} -q -c "$3" -- "$p" ;; esac; done
fi
exec {real} "$@"
""")
    logs = [tmp_path / f"job{i}.log" for i in range(6)]
    logs.insert(3, tmp_path / "nfs-down.log")
    for p in logs:
        p.write_bytes(b"x" * 999 + b"\n")
    reader = ShellTailReader(shell, timeout=1.0)
    got = reader.read([ReadRequest(str(p), 900, 64, 1 << 20) for p in logs])
    assert [r.status for r in got.results] == [READ] * 3 + [FAILED] + [READ] * 3
    assert got.round_trips == 2
    assert all((r.start, r.data) == (836, b"x" * 163 + b"\n")
               for i, r in enumerate(got.results) if i != 3)


def test_a_file_that_grows_while_its_bucket_is_read_is_read_again_exactly(
        tmp_path: Path) -> None:
    """`tail` reads the end of a file that grew after stat saw it: stat's second look says
    so, and the file is read again with its own process, from its offset (a tick's second
    round trip), so no byte is skipped or read twice."""
    log = tmp_path / "job.log"
    log.write_bytes(b"".join(b"iter %d\n" % i for i in range(100)))
    plain = local_reader()
    state = read_tails([TailItem(TailState(str(log)), 1 << 20)],
                       lambda reqs: plain.read(reqs).results)[0].state
    with log.open("ab") as f:
        f.write(b"".join(b"iter %d\n" % i for i in range(100, 110)))
    shell = shell_with(tmp_path, tail=f"""echo "iter 110" >> {log}
exec {{real}} "$@"
""")
    reader = ShellTailReader(shell)
    out = read_tails([TailItem(state, 1 << 20)], lambda reqs: reader.read(reqs).results)[0]
    assert shell.commands == 2
    lines = [line for chunk in out.chunks for line in chunk.lines]
    assert lines == [f"iter {i}" for i in range(100, 111)]
    assert out.state.offset == log.stat().st_size


def test_a_file_growing_during_its_read_sets_aside_the_files_after_it_in_its_bucket(
        tmp_path: Path) -> None:
    """`tail` read on past the bytes stat saw of the first file (it grew during the read):
    the shares after it in the bucket are shifted, so they are read again exactly too, and
    every file's lines arrive exactly once."""
    logs = [tmp_path / f"job{i}.log" for i in range(3)]
    plain = local_reader()
    states = []
    for p in logs:
        p.write_bytes(b"".join(b"%s %d\n" % (p.name.encode(), i) for i in range(100)))
        states.append(read_tails([TailItem(TailState(str(p)), 1 << 20)],
                                 lambda reqs: plain.read(reqs).results)[0].state)
        with p.open("ab") as f:
            f.write(b"%s 100\n" % p.name.encode())
    shell = shell_with(tmp_path, tail=f"""k=$3; shift 4
echo "{logs[0].name} 101" >> "$1"
{{real}} -q -c "$((k + 12))" -- "$1"
shift
exec {{real}} -q -c "$k" -- "$@"
""")
    reader = ShellTailReader(shell)
    outs = read_tails([TailItem(s, 1 << 20) for s in states],
                      lambda reqs: reader.read(reqs).results)
    assert shell.commands == 2
    for p, out in zip(logs, outs, strict=True):
        lines = [line for chunk in out.chunks for line in chunk.lines]
        last = 101 if p == logs[0] else 100
        assert lines == [f"{p.name} {i}" for i in range(100, last + 1)], p.name


def test_a_missing_file_that_must_exist_is_its_error_and_one_that_need_not_is_empty(
        tmp_path: Path) -> None:
    """The read script says a path does not exist: a file that must exist (a finished job's
    log) ends with FileMissing naming it, its state untouched; one that need not (a job not
    started yet) reads as empty; the other files of the batch are read."""
    log = tmp_path / "job.log"
    log.write_bytes(b"iter 1\n")
    gone = str(tmp_path / "gone.log")
    reader = local_reader()
    outs = read_tails([TailItem(TailState(gone, offset=7, size=7), 1 << 20, must_exist=True),
                       TailItem(TailState(gone), 1 << 20),
                       TailItem(TailState(str(log)), 1 << 20, must_exist=True)],
                      lambda reqs: reader.read(reqs).results)
    assert isinstance(outs[0].error, FileMissing) and outs[0].error.path == gone
    assert (outs[0].state.offset, outs[0].chunks) == (7, [])
    assert outs[1].error is None and [c.lines for c in outs[1].chunks] == [[]]
    assert outs[2].error is None and outs[2].chunks[0].lines == ["iter 1"]
