"""bot.probes.sampler.run_sampler on this test process: lines are complete JSON, a failing sample is
counted and never raised, and the loop ends when the root process is gone."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading

from bot.probes import sampler as sampler_mod
from bot.probes.sampler import TreeSampler, run_sampler


def test_a_failing_sample_is_counted_not_raised(monkeypatch):
    real = TreeSampler.sample
    calls = {"n": 0}

    def flaky(self, now=None):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return real(self, now)

    monkeypatch.setattr(TreeSampler, "sample", flaky)
    out = io.StringIO()
    logged: list[str] = []
    rc = run_sampler(out, root_pid=os.getpid(), interval_s=0.01, max_samples=3,
                     log=logged.append)
    assert rc == 0
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert len(lines) == 3
    assert lines[1]["errors"] == 1 and "errors" not in lines[0]
    assert len(logged) == 1 and "RuntimeError" in logged[0]
    # The root here is the sampling process itself: it counts as `other`, never a trainer.
    assert lines[0]["n"]["trainer"] == 0 and lines[0]["n"]["other"] >= 1
    # Each line names the tree's root (pid, start time): a requeued run's is another
    assert {line["root"]["pid"] for line in lines} == {os.getpid()}
    assert len({line["root"]["started"] for line in lines}) == 1


def test_a_restarted_trainer_is_the_next_generation():
    """A batch script whose trainer is killed and started again (an elastic launcher's
    restart) writes the next trainer generation; the same trainer sampled twice does not."""
    import psutil

    script = f"while :; do {sys.executable} -c 'import time; time.sleep(60)'; done"
    root = subprocess.Popen(["bash", "-c", script])
    try:
        tree = TreeSampler(root.pid)

        def trainer() -> psutil.Process:
            for _ in range(500):
                kids = psutil.Process(root.pid).children()
                if kids and kids[0].cmdline()[:1] == [sys.executable]:
                    return kids[0]
                threading.Event().wait(0.01)
            raise AssertionError("the batch script started no trainer")

        first = trainer()
        assert tree.sample()["gen"] == 0
        assert tree.sample()["gen"] == 0
        first.kill()
        first.wait(10)
        while trainer().pid == first.pid:
            threading.Event().wait(0.01)
        record = tree.sample()
        assert record["n"]["trainer"] == 1 and record["gen"] == 1
    finally:
        for kid in psutil.Process(root.pid).children(recursive=True):
            kid.kill()
        root.kill()
        root.wait(10)


def test_write_errors_do_not_raise():
    class Full(io.StringIO):
        def write(self, s):  # noqa: ANN001
            raise OSError(28, "No space left on device")

    assert run_sampler(Full(), root_pid=os.getpid(), interval_s=0.01, max_samples=None,
                       stop=_stop_after(0.2)) == 0


def test_exits_when_root_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    out = io.StringIO()
    done = threading.Event()
    result = {}

    def go():
        result["rc"] = run_sampler(out, root_pid=child.pid, interval_s=0.05)
        done.set()

    threading.Thread(target=go, daemon=True).start()
    child.wait()
    assert done.wait(10), "sampler did not stop after its root exited"
    assert result["rc"] == 0 and out.getvalue().count("\n") >= 1


def test_missing_root_returns_quietly():
    logged: list[str] = []
    assert run_sampler(io.StringIO(), root_pid=2**22 + 12345, log=logged.append) == 0
    assert "not running" in logged[0]


def _stop_after(seconds: float) -> threading.Event:
    ev = threading.Event()
    threading.Timer(seconds, ev.set).start()
    return ev


def test_proc_table_sees_this_process_and_parent():
    table = sampler_mod._proc_table()
    assert table is not None
    assert table[os.getpid()][0] == os.getppid()
