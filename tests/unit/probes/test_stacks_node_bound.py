"""The stacks node script (bot.probes.stacks.NODE_SCRIPT) run here, on two trainer processes
of this machine, with a stand-in py-spy that dumps many threads of deep stacks: what a node
sends back keeps within its share of the collection's bound, the main threads (the ones the
summary groups) first, and the dump attached to the thread ends saying what was left out."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.stacks import MARKER, build_report
from bot.probes.stacks import NODE_SCRIPT

THREADS, DEPTH = 50, 30


@pytest.fixture
def trainers() -> Iterator[list[int]]:
    """Two sleeping Python processes with a rank each."""
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                              env={**os.environ, "RANK": str(r)}) for r in range(2)]
    yield [p.pid for p in procs]
    for p in procs:
        p.kill()
        p.wait()


def fake_pyspy(tmp_path: Path) -> str:
    """A py-spy that dumps THREADS threads of DEPTH frames for any pid, its main thread
    (`MainThread`, in `all_gather` ← `train_step`) among the workers."""
    path = tmp_path / "py-spy"
    path.write_text(f"""#!{sys.executable}
import json, sys
pid = int(sys.argv[sys.argv.index("--pid") + 1])
def frames(top):
    return [{{"name": top[i] if i < len(top) else "helper_%d" % i,
              "filename": "/opt/train/deep/module_%d.py" % i,
              "short_filename": "module_%d.py" % i, "line": 10 + i}} for i in range({DEPTH})]
threads = [{{"os_thread_id": 1000 + i, "thread_name": "worker-%d" % i, "active": False,
             "frames": frames(["wait", "run"])}} for i in range({THREADS})]
threads[7] = {{"os_thread_id": pid, "thread_name": "MainThread", "active": True,
               "frames": frames(["all_gather", "train_step"])}}
print(json.dumps(threads))
""")
    path.chmod(0o755)
    return str(path)


def collect(tmp_path: Path, pids: list[int], bound: int) -> tuple[str, str]:
    """The node script's stdout on this machine ("node" n1 of a two-node step), the
    collection bounded to `bound` bytes, and its stderr."""
    argv = [sys.executable, "-c", NODE_SCRIPT, "88154", fake_pyspy(tmp_path), "10.0", "0",
            "n1=" + ",".join(map(str, pids)), str(bound)]
    env = {**os.environ, "SLURMD_NODENAME": "n1", "SLURM_STEP_NUM_NODES": "2"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60,
                          check=True)
    return done.stdout, done.stderr


def line_of(stdout: str) -> str:
    [line] = [ln for ln in stdout.splitlines() if ln.startswith(MARKER)]
    return line


def test_a_node_within_its_share_sends_every_thread(tmp_path: Path, trainers: list[int]
                                                    ) -> None:
    stdout, _ = collect(tmp_path, trainers, 64 << 20)
    report = build_report("88154", 0, stdout, "", collected_at="now")
    assert report.summary is not None and report.summary.ranks == 2
    assert report.dump.count('Thread ') == 2 * THREADS
    assert "truncated" not in report.dump


def test_a_node_over_its_share_sends_its_main_threads_and_says_so(
        tmp_path: Path, trainers: list[int]) -> None:
    """Two ranks of 50 threads of 30 frames are about 0.5 MB of JSON; with a bound of 64 KiB
    (32 KiB for each of the two nodes) the node sends each rank's main thread only, the
    summary is whole, and the dump's last line says what was left out."""
    bound = 64 << 10
    whole, _ = collect(tmp_path, trainers, 64 << 20)
    assert len(line_of(whole)) > bound
    stdout, _ = collect(tmp_path, trainers, bound)
    assert len(line_of(stdout)) + 1 <= bound // 2
    report = build_report("88154", 0, stdout, "", collected_at="now")
    assert report.summary is not None and report.summary.ranks == 2
    [group] = report.summary.groups
    assert group.where == ("all_gather", "train_step")
    assert report.dump.count('Thread ') == 2 and '"MainThread"' in report.dump
    assert report.dump.rstrip("\n").splitlines()[-1] == (
        f"truncated on n1: {2 * (THREADS - 1)} thread(s) other than the main ones and the "
        f"stacks of 0 process(es) left out, to keep within the node's {bound // 2}-byte "
        "share of what the collection sends back")


def test_a_node_whose_main_threads_are_over_its_share_leaves_out_stacks_and_says_so(
        tmp_path: Path, trainers: list[int]) -> None:
    """A share smaller than the two main threads: one rank's stack is left out (a failure
    the summary counts), the other sent; the dump's last line says so."""
    bound = 10_000
    stdout, _ = collect(tmp_path, trainers, bound)
    assert len(line_of(stdout)) + 1 <= bound // 2
    report = build_report("88154", 0, stdout, "", collected_at="now")
    assert report.summary is not None and report.summary.ranks == 1
    [failure] = report.summary.failures
    assert failure.host == "n1" and str(failure.detail).startswith("left out: this node's stacks")
    assert report.dump.rstrip("\n").splitlines()[-1].startswith(
        f"truncated on n1: {2 * (THREADS - 1)} thread(s) other than the main ones and the "
        "stacks of 1 process(es) left out")

