"""A real `sbatch --array` on both dev clusters: each task is its own record (raw id, array
fields, `%A_%a` log), on the json and the parsable squeue path; `/train watch A_T` watches it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping

import pytest

from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner
from bot.core.slurm.records import JobRecord

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


@pytest.fixture
def array(slurm_cluster, ssh_runner) -> Iterator[tuple[int, str]]:
    """(array id, job name) of a 4-task array that runs two tasks at a time; cancelled after."""
    name = f"it-array-{uuid.uuid4().hex[:8]}"
    out = ssh_runner.run([
        "sbatch", "--parsable", "--array=0-3%2", f"--job-name={name}",
        f"--partition={slurm_cluster.partition}", "--time=5", "--mem=64M",
        f"--output={slurm_cluster.home}/%x-%A_%a.out",
        "--wrap", "echo task $SLURM_ARRAY_TASK_ID; sleep 4",
    ]).stdout
    array_id = int(out.strip().split(";")[0])
    yield array_id, name
    ssh_runner.run(["scancel", str(array_id)], check=False)


def wait_tasks(client: SlurmClient, array_id: int,
               done: Callable[[Mapping[int, JobRecord]], bool], *, timeout: float,
               what: str) -> dict[int, JobRecord]:
    deadline = time.monotonic() + timeout
    tasks: dict[int, JobRecord] = {}
    while time.monotonic() < deadline:
        tasks = client.array_tasks(array_id)
        if done(tasks):
            return tasks
        time.sleep(1)
    pytest.fail(f"{what} not reached within {timeout:g} s; last records: {tasks}")


def _by_task(tasks: Mapping[int, JobRecord]) -> dict[int | None, JobRecord]:
    return {rec.array_task_id: rec for rec in tasks.values()}


@pytest.mark.parametrize("path", ["json", "parsable"])
def test_array_tasks_are_records_of_their_own(slurm_cluster, ssh_runner, array, path):
    array_id, name = array
    client = SlurmClient(ssh_runner, use_json=(path == "json"), timeout=60)
    def seen_running(rec: JobRecord) -> bool:  # in squeue (its log path), not only in sacct
        return rec.is_running and rec.array_task_id is not None and "squeue" in rec.source

    running = wait_tasks(client, array_id, lambda t: any(map(seen_running, t.values())),
                         timeout=60, what=f"a task of array {array_id} RUNNING in squeue")
    task = next(r for r in running.values() if seen_running(r))
    assert task.array_job_id == array_id and task.display_id == f"{array_id}_{task.array_task_id}"
    assert task.stdout_path == f"{slurm_cluster.home}/{name}-{array_id}_{task.array_task_id}.out"
    # the watcher reads a task by its own id, like any job
    single = client.job(task.job_id)
    assert single is not None and single.display_id == task.display_id

    done = wait_tasks(
        client, array_id,
        lambda t: sorted(k for k in _by_task(t) if k is not None) == [0, 1, 2, 3]
        and all(r.state == "COMPLETED" and r.source == "squeue+sacct" for r in t.values()),
        timeout=90, what=f"all tasks of array {array_id} COMPLETED")
    assert len(done) == 4  # four raw ids: no task collapsed into another
    for task_id, rec in _by_task(done).items():
        assert rec.display_id == f"{array_id}_{task_id}"
        log = ssh_runner.run(["cat", f"{slurm_cluster.home}/{name}-{array_id}_{task_id}.out"])
        assert log.stdout.splitlines() == [f"task {task_id}"]
