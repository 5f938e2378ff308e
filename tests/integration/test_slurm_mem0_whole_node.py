"""A --mem=0 job as the dev clusters' Slurm reports it: sacct --json says what it required (0
per node) beside what it was allocated (the node's whole memory), so trainbot reads it as a
whole-node job (JobRecord.whole_node_mem) with the node's memory as its limit; squeue, while
it runs, says so too. sacct --parsable2 cannot tell (ReqMem is the allocation from 21.08 on):
the watcher then takes it from the recipe's `mem: 0`."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from bot.cluster.errors import ClusterUnavailable
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


def test_a_mem_0_job_is_read_as_a_whole_node_job(slurm_cluster, ssh_runner):
    out = ssh_runner.run(
        ["sbatch", "--parsable", "--mem=0", f"--partition={slurm_cluster.partition}",
         "--time=1", "--output=/dev/null", "--job-name=trainbot-mem0", "--wrap", "sleep 3"],
        timeout=60)
    job = int(out.stdout.strip().split(";")[0])
    live = SlurmClient(ssh_runner, use_json=False)._squeue([job])  # noqa: SLF001
    if job in live and live[job].state in ("PENDING", "RUNNING"):
        assert live[job].whole_node_mem, live[job]
    deadline = time.monotonic() + 90
    done: dict = {}
    while time.monotonic() < deadline:
        try:
            done = SlurmClient(ssh_runner, use_json=False, sacct_json=True)._sacct([job])  # noqa: SLF001
        except ClusterUnavailable:
            # 22.05's sacct --json answers "Nothing found" (error 9003) as an error until
            # slurmdbd has the job, seconds after its submit
            done = {}
        if job in done and done[job].end_time is not None:
            break
        time.sleep(2)
    assert job in done, f"sacct --json never listed job {job}"
    rec = done[job]
    assert rec.state == "COMPLETED", rec
    assert rec.whole_node_mem and rec.mem_limit_bytes, rec  # asked 0, allocated the node's
    assert rec.accounting().whole_node_mem
    parsable = SlurmClient(ssh_runner, use_json=False)._sacct([job])[job]  # noqa: SLF001
    assert parsable.mem_limit_bytes == rec.mem_limit_bytes
    # its ReqMem is the allocation: it cannot say, and must not deny it (the recipe's mem: 0
    # then tells the watcher)
    assert parsable.whole_node_mem is not False, parsable
