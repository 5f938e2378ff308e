"""SlurmClient.memory against the real dev cluster: one sstat call for all running jobs,
MaxRSS close to what each job really holds, jobs without running steps simply absent.

Memory is held by `python3 -c 'b=bytearray(N*2**20); …'` (bytearray touches every page, so
RSS really is N MiB). Job names are unique per test: the cluster is shared.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence

import pytest
from cluster_jobs import CountingRunner

from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.slurm.sstat import StepMemory

pytestmark = pytest.mark.integration

MiB = 1024**2
HOLD = "python3 -c 'b=bytearray({mib}*2**20); import time; time.sleep(120)'"


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


@pytest.fixture
def submitted(ssh_runner) -> Iterator[list[int]]:
    ids: list[int] = []
    yield ids
    for job_id in ids:
        ssh_runner.run(["scancel", str(job_id)], check=False)


def unique(prefix: str) -> str:
    return f"it-sstat-{prefix}-{uuid.uuid4().hex[:8]}"


def wait_memory(client: SlurmClient, ids: Sequence[int], floor: dict[int, int], *,
                timeout: float) -> dict[int, StepMemory]:
    """Poll memory(ids) until every job in `floor` reports at least that MaxRSS."""
    deadline = time.monotonic() + timeout
    memory: dict[int, StepMemory] = {}
    while time.monotonic() < deadline:
        memory = client.memory(ids)
        if all(j in memory and (memory[j].max_rss_bytes or 0) >= low for j, low in floor.items()):
            return memory
        time.sleep(1)
    pytest.fail(f"MaxRSS floors {floor} not reached within {timeout:g} s; last: {memory}")


def test_two_running_jobs_one_sstat_call_maxrss_near_allocation(
        slurm_cluster, ssh_runner, submitted):
    counting = CountingRunner(ssh_runner)
    client = SlurmClient(counting, use_json=True, timeout=60)
    # Job a: the batch script holds 300 MiB and an srun step holds 200 MiB at the same time.
    script_a = (f"#!/bin/bash\n{HOLD.format(mib=300)} &\n"
                f"srun --mem=300M -n1 {HOLD.format(mib=200)} &\nwait\n")
    job_a = client.submit(
        SubmitSpec(
            job_name=unique("a"),
            mem="900M",
            time="5",
            partition=slurm_cluster.partition,
            output="/dev/null",
        ),
        script=script_a,
    )
    submitted.append(job_a)
    job_b = client.submit(
        SubmitSpec(
            job_name=unique("b"),
            mem="400M",
            time="5",
            partition=slurm_cluster.partition,
            output="/dev/null",
        ),
        script=f"#!/bin/bash\n{HOLD.format(mib=150)}\n",
    )
    submitted.append(job_b)
    unknown = 987654321
    ids = [job_a, job_b, unknown]

    memory = wait_memory(client, ids, {job_a: 300 * MiB, job_b: 150 * MiB}, timeout=90)

    counting.calls.clear()
    memory = client.memory(ids)
    assert counting.programs() == ["sstat"], counting.calls
    assert set(memory) == {job_a, job_b}
    a, b = memory[job_a], memory[job_b]
    # The batch step (script + its python child) is the largest; the srun step is counted.
    assert a.step == "batch" and a.steps >= 2, a
    assert a.max_rss_bytes is not None and 300 * MiB <= a.max_rss_bytes < 400 * MiB, a
    assert a.total_max_rss_bytes is not None and a.total_max_rss_bytes >= 500 * MiB, a
    assert (a.max_rss_node, a.max_rss_task) == (slurm_cluster.node, 0)
    assert b.max_rss_bytes is not None and 150 * MiB <= b.max_rss_bytes < 230 * MiB, b
    assert b.step == "batch" and b.steps == 1


def test_finished_and_pending_jobs_are_absent_not_errors(slurm_cluster, ssh_runner, submitted):
    client = SlurmClient(ssh_runner, use_json=True, timeout=60)
    running = client.submit(
        SubmitSpec(
            job_name=unique("run"),
            mem="300M",
            time="5",
            output="/dev/null",
            partition=slurm_cluster.partition,
        ),
        script=f"#!/bin/bash\n{HOLD.format(mib=100)}\n",
    )
    submitted.append(running)
    pending = client.submit(
        SubmitSpec(
            job_name=unique("pend"),
            mem="64M",
            time="5",
            output="/dev/null",
            hold=True,
            partition=slurm_cluster.partition,
        ),
        script="#!/bin/bash\nsleep 5\n",
    )
    submitted.append(pending)
    finished = client.submit(
        SubmitSpec(
            job_name=unique("done"),
            mem="64M",
            time="5",
            output="/dev/null",
            partition=slurm_cluster.partition,
        ),
        script="#!/bin/bash\ntrue\n",
    )
    submitted.append(finished)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        record = client.job(finished)
        if record is not None and record.is_finished:
            break
        time.sleep(1)
    else:
        pytest.fail(f"job {finished} did not finish within 60 s")

    memory = wait_memory(client, [running, pending, finished], {running: 100 * MiB},
                         timeout=90)
    assert set(memory) == {running}
