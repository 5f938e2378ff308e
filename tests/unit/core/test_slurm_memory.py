"""SlurmClient.memory: one sstat call for all running jobs; per-job misses are absences,
a silent controller is ClusterUnavailable. Answers are the real 22.05 output in
tests/fixtures/slurm/sstat.* (the controller-down stderr was produced by pointing sstat at a
closed slurmctld port)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeRunner

from bot.cluster.errors import ClusterUnavailable, CommandFailed, CommandTimedOut
from bot.cluster.slurm import SlurmClient

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
MiB = 1024**2


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_memory_one_call_for_all_jobs() -> None:
    runner = FakeRunner(default=(0, fixture("sstat.running.txt"), ""))
    memory = SlurmClient(runner).memory([361, 360])
    assert len(runner.calls) == 1 and runner.argvs()[0][0] == "sstat"
    assert "--jobs=360,361" in runner.argvs()[0]
    assert set(memory) == {360, 361}
    rss = memory[360].max_rss_bytes
    assert memory[360].step == "batch" and rss is not None and 300 * MiB < rss < 340 * MiB


def test_memory_jobs_without_running_steps_are_absent() -> None:
    runner = FakeRunner(default=(0, fixture("sstat.mixed.txt"), fixture("sstat.mixed.stderr")))
    memory = SlurmClient(runner).memory([358, 360, 361, 99999])
    assert set(memory) == {360, 361}


def test_memory_nonzero_exit_for_some_ids_is_not_an_error() -> None:
    """Newer sstat may exit non-zero when some ids have no steps: still an answer."""
    runner = FakeRunner(default=(1, fixture("sstat.mixed.txt"), fixture("sstat.mixed.stderr")))
    assert set(SlurmClient(runner).memory([358, 360, 361, 99999])) == {360, 361}


def test_memory_no_running_step_anywhere_is_empty_not_an_error() -> None:
    runner = FakeRunner(default=(0, "", "sstat: error: No steps running for job 358\n"))
    assert SlurmClient(runner).memory([358]) == {}


def test_memory_empty_ids_makes_no_call() -> None:
    runner = FakeRunner(default=(0, "", ""))
    assert SlurmClient(runner).memory([]) == {}
    assert runner.calls == []


def test_memory_controller_down_is_cluster_unavailable() -> None:
    """22.05 with slurmctld gone: exit 0, no rows, "couldn't get steps" for every id."""
    runner = FakeRunner(default=(0, "", fixture("sstat.controller_down.stderr")))
    with pytest.raises(ClusterUnavailable, match="slurmctld"):
        SlurmClient(runner).memory([360, 361])


def test_memory_unreachable_message_and_timeout_are_cluster_unavailable() -> None:
    runner = FakeRunner(default=(1, "", "sstat: error: Unable to contact slurm controller (connect "
                              "failure)\n"))
    with pytest.raises(ClusterUnavailable):
        SlurmClient(runner).memory([360])
    runner = FakeRunner(default=CommandTimedOut(["sstat"], 30))
    with pytest.raises(ClusterUnavailable, match="did not answer within 30 s"):
        SlurmClient(runner, timeout=30).memory([360])


def test_memory_other_failures_are_command_failed() -> None:
    runner = FakeRunner(default=(1, "", "sstat: error: Invalid field requested: \"MaxRSSS\"\n"))
    with pytest.raises(CommandFailed, match="MaxRSSS"):
        SlurmClient(runner).memory([360])
