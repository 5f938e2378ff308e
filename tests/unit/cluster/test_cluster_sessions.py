"""ClusterSessions: one runner and one Slurm client per cluster, even when Bolt's lazy
listener threads ask for them at the same moment."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fakes import make_config

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.sessions import ClusterSessions

THREADS = 8


class SlowRunner:
    """Stands in for SSHRunner; its creation is slow enough for racing threads to overlap."""

    def __init__(self, made: list[Any]) -> None:
        time.sleep(0.05)  # widens the race window; nothing is timed or asserted on time
        made.append(self)
        self.closed = 0

    def close(self) -> None:
        self.closed += 1

    def run(self, argv: Any, **kw: Any) -> Any:
        raise AssertionError("no command runs in these tests")

    def sftp(self) -> Any:
        raise AssertionError("no SFTP opens in these tests")

    def deadlines(self) -> Any:
        raise AssertionError("no deadline is asked for in these tests")


def race(fn: Any) -> list[Any]:
    """Call `fn()` from THREADS threads released together; returns what each got."""
    barrier = threading.Barrier(THREADS)
    got: list[Any] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            got.append(fn())
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    return got


def test_racing_threads_share_one_runner_and_one_slurm_client() -> None:
    runners: list[SlowRunner] = []
    slurms: list[Any] = []

    def slurm_factory(runner: Any) -> Any:
        time.sleep(0.05)
        client = ("slurm", runner)
        slurms.append(client)
        return client

    sessions = ClusterSessions(make_config(), runner_factory=lambda _c: SlowRunner(runners),
                               slurm_factory=slurm_factory)
    got = race(lambda: sessions.slurm("dev"))
    assert len(runners) == 1 and len(slurms) == 1  # one SSH connection, one client
    assert all(g is slurms[0] for g in got) and len(got) == THREADS
    assert all(r is runners[0] for r in race(lambda: sessions.runner("dev")))

    sessions.close()
    assert runners[0].closed == 1
    sessions.close()  # idempotent: nothing left to close
    assert runners[0].closed == 1


def test_after_close_no_session_is_opened_again() -> None:
    """The bot stopping closed the connections: a Slack handler still under way gets a
    ClusterUnavailable (which it answers as the cluster not answering), never a new SSH
    connection over which it could still send an sbatch or a scancel."""
    runners: list[SlowRunner] = []
    slurm: Any = ("slurm",)  # a Slurm client stand-in: only its identity matters here
    sessions = ClusterSessions(make_config(), runner_factory=lambda _c: SlowRunner(runners),
                               slurm_factory=lambda _runner: slurm)
    sessions.slurm("dev")
    sessions.close()
    for use in (sessions.runner, sessions.slurm, sessions.tail_reader, sessions.sftp):
        with pytest.raises(ClusterUnavailable, match="trainbot is stopping"):
            use("dev")
    assert len(runners) == 1 and runners[0].closed == 1


def test_a_cluster_with_use_json_checks_the_slurm_release_before_reading_json():
    from fakes import FakeRunner

    config = make_config()
    config.clusters["dev"] = config.clusters["dev"].model_copy(update={"use_json": True})
    runner = FakeRunner({"sinfo": (0, "slurm-wlm 22.05.8\n", ""), "squeue": (0, "", ""),
                         "sacct": (0, "JobIDRaw|State|ExitCode|JobName\n", "")})
    sessions = ClusterSessions(config, runner_factory=lambda _cluster: runner)
    sessions.slurm("dev").jobs([5])
    # 22.05's JSON is known wrong: the columns are read, after one `sinfo --version`
    assert runner.commands() == ["sinfo", "squeue", "sacct"]
    assert not any("--json" in argv for argv in runner.argvs())


def test_one_batched_reader_per_cluster_on_its_runner_with_its_sftp_timeout() -> None:
    runners: list[SlowRunner] = []
    config = make_config()
    sessions = ClusterSessions(config, runner_factory=lambda cluster: SlowRunner(runners))
    readers = race(lambda: sessions.tail_reader("dev"))
    assert len({id(r) for r in readers}) == 1 and len(runners) == 1
    assert readers[0].runner is runners[0]
    assert readers[0].timeout == config.clusters["dev"].sftp_timeout
    sessions.close()
    assert runners[0].closed == 1
