"""Hang forensics on the dev cluster: real py-spy (trainbot's own copy, placed and hash-checked
by the bot) against real Slurm jobs whose ranks are processes of their own.

The job (tests/fixtures/stacks/ranks.sbatch) runs four ranks in two srun steps — two "nodes"
on a one-node cluster — under a torchrun-like launcher, rank 0 with a DataLoader-like worker;
rank 3 waits in `Loader._get_data` while the others wait in `all_gather`. Every way of
getting nothing gives its one cause: py-spy absent, permission denied (ranks that forbid
ptrace), the job ended before, and the job ending during the collection.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.cluster.pyspy import local_pyspy, place_pyspy, remote_path, remote_sha256
from bot.cluster.sessions import ClusterSessions
from bot.cluster.ssh import SSHRunner
from bot.config import Config
from bot.core.stacks import JOB_ENDED, PERMISSION_DENIED, PYSPY_ABSENT
from bot.services.stacks import StackCollector

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "stacks"
CLUSTER = "dev"


@dataclass
class Cluster:
    ssh: SSHRunner
    dir: str
    tag: str
    dev_cluster: Any  # the DevCluster the jobs run on

    def submit(self, *script_args: str, script: str = "ranks.sbatch") -> str:
        out = self.ssh.run(["sbatch", "--parsable", "--ntasks=1", "--mem=200M", "--time=5",
                            f"--job-name=tb-stacks-{self.tag}",
                            f"--output={self.dir}/%j.out", posixpath.join(self.dir, script),
                            self.dir, *script_args])
        return out.stdout.strip().split(";")[0]

    def wait_for_ranks(self, job: str, ranks: int, timeout_s: float = 90.0) -> None:
        """Until the job runs and its launchers said they started `ranks` ranks."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = self.ssh.run(["cat", f"{self.dir}/{job}.out"], check=False)
            started = sum(len(line.split()) - 2 for line in out.stdout.splitlines()
                          if line.startswith("ranks started:"))
            if started >= ranks:
                time.sleep(0.5)  # the ranks are past their first line
                return
            time.sleep(0.5)
        raise AssertionError(f"job {job} did not start {ranks} ranks in {timeout_s:.0f} s")

    def cancel(self, job: str) -> None:
        self.ssh.run(["scancel", job], check=False)

    def collector(self, **cluster_over: object) -> tuple[StackCollector, ClusterSessions]:
        data = self.dev_cluster.bot_config_data(store_url="sqlite://")
        data["clusters"][CLUSTER].update(cluster_over)
        config = Config.model_validate(data)
        sessions = ClusterSessions(config)
        return StackCollector(config, sessions), sessions


@pytest.fixture(scope="module")
def cluster(dev_cluster) -> Iterator[Cluster]:  # noqa: ANN001
    with SSHRunner(dev_cluster.ssh_settings()) as ssh:
        tag = uuid.uuid4().hex[:8]
        run_dir = posixpath.join(dev_cluster.home, f"tb-stacks-{tag}")
        ssh.run(["mkdir", "-p", run_dir])
        sftp = ssh.sftp()
        for name in ("ranks.py", "ranks.sbatch"):
            sftp.put(str(FIXTURES / name), posixpath.join(run_dir, name))
        # A py-spy that ends the job it is asked about, then does its work: a job that
        # ends while its stacks are being collected.
        with sftp.open(posixpath.join(run_dir, "ending-py-spy"), "w") as f:
            f.write('#!/bin/sh\nscancel "$SLURM_JOB_ID"\nsleep 5\nexit 1\n')
        ssh.run(["chmod", "+x", posixpath.join(run_dir, "ending-py-spy")])
        yield Cluster(ssh, run_dir, tag, dev_cluster)
        ssh.run(["scancel", f"--name=tb-stacks-{tag}"], check=False)
        ssh.run(["rm", "-rf", run_dir], check=False)


@pytest.fixture(scope="module")
def stuck_job(cluster: Cluster) -> Iterator[str]:
    job = cluster.submit()
    try:
        cluster.wait_for_ranks(job, 4)
        yield job
    finally:
        cluster.cancel(job)


def test_the_stuck_rank_is_named_with_its_node_and_function(cluster: Cluster,
                                                            stuck_job: str) -> None:
    collector, sessions = cluster.collector()
    with sessions:
        report = collector.collect(CLUSTER, stuck_job)
    assert report.problem is None, report.problem
    summary = report.summary
    assert summary is not None
    # the four ranks, never the launchers (Python parents of other ranks) nor rank 0's worker
    assert summary.ranks == 4 and summary.failures == ()
    assert summary.majority is not None
    assert summary.majority.ranks == ["rank 0", "rank 1", "rank 2"]
    assert summary.majority.where == ("all_gather", "train_step")
    (odd,) = summary.odd
    assert odd.ranks == ["rank 3"] and odd.where == ("Loader._get_data", "Loader.__next__")
    # two steps: the "nodes" of this one-node cluster
    assert {m.step for g in summary.groups for m in g.members} == {"0", "1"}
    assert "=== rank 3 (pid" in report.dump and "Loader._get_data (ranks.py:" in report.dump


def test_trainbot_stacks_prints_the_summary_and_the_dump(cluster: Cluster, stuck_job: str,
                                                         tmp_path: Path) -> None:
    import yaml

    config = tmp_path / "trainbot.yaml"
    data = cluster.dev_cluster.bot_config_data(store_url=f"sqlite:///{tmp_path / 'store.db'}")
    config.write_text(yaml.safe_dump(data))
    place_pyspy(cluster.ssh, cluster.ssh.sftp())  # there already: only its checksum is checked
    done = subprocess.run([sys.executable, "-m", "bot", "stacks", stuck_job, "--config",
                           str(config)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert re.fullmatch(rf"🔎 Python stacks · job {stuck_job}: 3 of 4 ranks in `all_gather` ← "
                        r"`train_step`; the odd ones out: \*rank 3\* \(\S+\) in "
                        r"`Loader._get_data` ← `Loader.__next__`.", first), first
    assert re.search(r"^group 2: 1 × rank 3 on \S+$", done.stdout, re.M)
    assert "placing trainbot's py-spy" not in done.stderr


def test_py_spy_is_placed_by_the_bot_and_replaced_when_it_differs(cluster: Cluster,
                                                                  stuck_job: str) -> None:
    local = local_pyspy()
    home = cluster.ssh.sftp().normalize(".")
    path = remote_path(home, local.version)
    with cluster.ssh.sftp().open(path, "wb") as f:  # a damaged copy: replaced, never used
        f.write(b"not py-spy")
    collector, sessions = cluster.collector()
    with sessions:
        report = collector.collect(CLUSTER, stuck_job)
    assert report.problem is None and report.summary is not None
    assert remote_sha256(cluster.ssh, path) == local.sha256
    cluster.ssh.run(["rm", "-f", path])  # absent: copied again
    collector, sessions = cluster.collector()
    with sessions:
        assert collector.collect(CLUSTER, stuck_job).problem is None
    assert remote_sha256(cluster.ssh, path) == local.sha256


def test_py_spy_absent_is_one_clear_cause(cluster: Cluster, stuck_job: str) -> None:
    collector, sessions = cluster.collector(py_spy=f"{cluster.dir}/no-such-py-spy")
    with sessions:
        report = collector.collect(CLUSTER, stuck_job)
    assert report.problem is not None and report.problem.cause == PYSPY_ABSENT
    assert "no-such-py-spy: not an executable file" in str(report.problem.detail)


def test_ranks_that_forbid_ptrace_give_permission_denied(cluster: Cluster) -> None:
    job = cluster.submit("--undumpable", script="ranks.sbatch")
    try:
        cluster.wait_for_ranks(job, 4)
        collector, sessions = cluster.collector()
        with sessions:
            report = collector.collect(CLUSTER, job)
    finally:
        cluster.cancel(job)
    assert report.problem is not None and report.problem.cause == PERMISSION_DENIED


def test_a_job_that_ended_before_gives_job_ended(cluster: Cluster) -> None:
    job = cluster.submit()
    cluster.wait_for_ranks(job, 4)
    cluster.cancel(job)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = cluster.ssh.run(["squeue", "-h", "-j", job, "-o", "%T"], check=False)
        if not state.stdout.strip():
            break
        time.sleep(0.5)
    collector, sessions = cluster.collector()
    with sessions:
        report = collector.collect(CLUSTER, job)
    assert report.problem is not None and report.problem.cause == JOB_ENDED, report.problem


def test_a_job_that_ends_during_the_collection_gives_job_ended(cluster: Cluster) -> None:
    job = cluster.submit()
    try:
        cluster.wait_for_ranks(job, 4)
        collector, sessions = cluster.collector(py_spy=f"{cluster.dir}/ending-py-spy")
        with sessions:
            report = collector.collect(CLUSTER, job)
    finally:
        cluster.cancel(job)
    assert report.problem is not None and report.problem.cause == JOB_ENDED, report.problem
