"""Incremental tail of a file on the dev cluster through the batched reader (one remote
command per read), the file written by remote commands."""

from __future__ import annotations

import posixpath
import uuid

import pytest
from support.local_shell import read_new_lines

from bot.cluster.ssh import SSHRunner
from bot.cluster.tail import ShellTailReader
from bot.core.tail import TailState

pytestmark = pytest.mark.integration


@pytest.fixture
def runner(slurm_cluster):
    with SSHRunner(slurm_cluster.ssh_settings()) as r:
        yield r


@pytest.fixture
def reader(runner: SSHRunner) -> ShellTailReader:
    return ShellTailReader(runner)


@pytest.fixture
def log_path(runner: SSHRunner, slurm_cluster):
    d = posixpath.join(slurm_cluster.home, f"tail-test-{uuid.uuid4().hex}")
    runner.run(["mkdir", "-p", d])
    yield posixpath.join(d, "job-123.out")
    runner.run(["rm", "-rf", d])


def append(runner: SSHRunner, path: str, data: str) -> None:
    runner.run(["sh", "-c", 'printf %s "$1" >> "$2"', "sh", data, path])


def test_missing_file_is_empty_not_an_error(
    runner: SSHRunner, reader: ShellTailReader, log_path: str
) -> None:
    chunk = read_new_lines(reader, TailState(log_path))
    assert (chunk.lines, chunk.restarted, chunk.bytes_read) == ([], False, 0)


def test_appended_lines_arrive_exactly_once_across_many_reads(
    runner: SSHRunner, reader: ShellTailReader, log_path: str
) -> None:
    writes = [
        "iter 1 loss 2.00\n",
        "iter 2 loss 1.9",  # partial line: must wait
        "5\n",
        "",
        "iter 3 loss 1.80\niter 4 loss 1.7",
        "5\nrank0: ünïcode ok\n",
        "iter 5 loss 1.60\n" * 50,
    ]
    expected = "".join(writes).splitlines()
    state = TailState(log_path)
    seen: list[tuple[int, str]] = []
    for data in writes:
        if data:
            append(runner, log_path, data)
        size = runner.sftp().stat(log_path).st_size
        before = state.offset
        chunk = read_new_lines(reader, state)
        assert not chunk.restarted
        assert chunk.bytes_read == chunk.state.offset - before  # only the new bytes
        assert size is not None and chunk.state.offset <= size
        seen += [(chunk.first_line_no + i, line) for i, line in enumerate(chunk.lines)]
        state = chunk.state
    assert [line for _, line in seen] == expected
    assert [n for n, _ in seen] == list(range(1, len(expected) + 1))
    assert state.offset == runner.sftp().stat(log_path).st_size
    again = read_new_lines(reader, state)
    assert again.lines == [] and again.bytes_read == 0


def test_truncation_is_detected_and_reading_restarts(
    runner: SSHRunner, reader: ShellTailReader, log_path: str
) -> None:
    append(runner, log_path, "a long first attempt line\nanother line\n")
    state = read_new_lines(reader, TailState(log_path)).state
    runner.run(["sh", "-c", ': > "$1"; printf "short\\n" >> "$1"', "sh", log_path])
    chunk = read_new_lines(reader, state)
    assert chunk.restarted
    assert (chunk.lines, chunk.first_line_no, chunk.bytes_read) == (["short"], 1, 6)


def test_replacement_by_a_new_longer_file_is_detected(
    runner: SSHRunner, reader: ShellTailReader, log_path: str
) -> None:
    append(runner, log_path, "attempt 1: iter 1\nattempt 1: iter 2\n")
    state = read_new_lines(reader, TailState(log_path)).state
    runner.run(["rm", log_path])
    new = "attempt 2: resumed from iter 1000\nattempt 2: iter 1001\nattempt 2: iter 1002\n"
    append(runner, log_path, new)
    chunk = read_new_lines(reader, state)
    assert chunk.restarted
    assert chunk.lines == new.splitlines()
    assert chunk.first_line_no == 1
    assert chunk.bytes_read == len(new.encode())


def test_removed_file_then_recreated(
    runner: SSHRunner, reader: ShellTailReader, log_path: str
) -> None:
    append(runner, log_path, "x\n")
    state = read_new_lines(reader, TailState(log_path)).state
    runner.run(["rm", log_path])
    gone = read_new_lines(reader, state)
    assert gone.restarted and gone.lines == []
    append(runner, log_path, "x\ny\n")
    chunk = read_new_lines(reader, gone.state)
    assert chunk.lines == ["x", "y"] and not chunk.restarted


def test_a_backlog_past_the_output_cap_is_read_over_ticks(
    slurm_cluster, log_path: str
) -> None:
    """Four logs of 3 MiB waiting and a runner reading at most 8 MiB of one command's output
    (max_output_mib, scaled down): asked whole, the batch would fail every tick
    (OutputTooLarge, no offset moving); shared, each tick moves every log on."""
    from dataclasses import replace

    from bot.core.tail import TailItem, read_tails

    cap = 8 << 20
    directory = posixpath.dirname(log_path)
    paths = [posixpath.join(directory, f"big{i}.out") for i in range(4)]
    with SSHRunner(replace(slurm_cluster.ssh_settings(), max_output_bytes=cap)) as runner:
        runner.run(["sh", "-c", 'for p do yes "iter 1 loss 0.5 ......................" | '
                    'head -c 3145728 > "$p"; done', "sh", *paths], timeout=60)
        reader = ShellTailReader(runner, max_output=cap)
        states = [TailState(p) for p in paths]
        for _ in range(3):
            outs = read_tails([TailItem(s, 16 << 20) for s in states],
                              lambda reqs: reader.read(reqs).results,
                              batch_bytes=reader.batch_bytes)
            assert [o.error for o in outs] == [None] * 4
            assert all(o.state.offset > s.offset or o.state.offset > 3145000
                       for s, o in zip(states, outs, strict=True))
            states = [o.state for o in outs]
        assert all(s.offset > 3145000 for s in states)
