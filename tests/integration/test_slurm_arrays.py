"""A real `sbatch --array` on both dev clusters: each task is its own record (raw id, array
fields, `%A_%a` log), on the json and the parsable squeue path; `/train watch A_T` watches it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


# A 4-task array, two at a time: tasks print progress; task 2 fails like a crashed trainer.
ARRAY_JOB = """#!/bin/bash
for i in 1 2 3; do echo "iter: $i/3 | loss: 0.$i"; sleep 1; done
if [ "$SLURM_ARRAY_TASK_ID" = 2 ]; then
  echo "Traceback (most recent call last):"
  echo "RuntimeError: task $SLURM_ARRAY_TASK_ID crashed"
  exit 3
fi
"""


@pytest.mark.timeout(240)
def test_a_whole_array_is_watched_in_one_thread_with_a_row_per_task(slurm_cluster, slack_bot,
                                                                     tmp_path):
    from slack_standin import SlackStandIn

    from bot.config import Config
    from bot.core.train_grammar import Watch
    from bot.services.train import execute
    from bot.services.watch.tick import Watcher
    from bot.services.watch_events import ThreadEvents

    tag = uuid.uuid4().hex[:8]
    name = f"it-warray-{tag}"
    work = f"{slurm_cluster.home}/warray-{tag}"
    # W0LEAD adopts a job trainbot did not submit: as with /train logs, an approver's to do
    config = Config.model_validate(slurm_cluster.bot_config_data(
        store_url=f"sqlite:///{tmp_path / 'state.db'}", channels={"train": "C0TRAIN"},
        approvers=["W0LEAD"]))
    array_id = None
    with SlackStandIn() as slack, slack_bot(config, slack, charts=False) as ctx:
        store, sessions = ctx.store, ctx.clusters
        try:
            runner = sessions.runner("dev")
            runner.run(["mkdir", "-p", work])
            out = runner.run([  # the script on sbatch's stdin
                "sbatch", "--parsable", "--array=0-3%2", f"--job-name={name}",
                f"--partition={slurm_cluster.partition}", "--time=5", "--mem=64M",
                f"--output={work}/%x-%A_%a.out"], stdin=ARRAY_JOB).stdout
            array_id = int(out.strip().split(";")[0])
            reply = execute(ctx, Watch(array_id), actor="W0LEAD", channel="C0TRAIN",
                            now=time.time())
            assert reply.text.startswith(f"Watching array {array_id} ({name}: "), reply.text
            [chain] = store.chains.for_recipe("")
            assert (chain.kind, chain.array_job_id) == ("array", array_id)

            watcher = Watcher("dev", slurm=sessions.slurm("dev"),
                              reader=lambda: sessions.tail_reader("dev"), store=store,
                              catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=config)
            deadline = time.monotonic() + 180
            ticks = 0
            while store.watched_jobs.list("dev") and time.monotonic() < deadline:
                report = watcher.tick(time.time())
                # one squeue + one sacct for the array and every task, at most one sstat
                assert report.ok and report.slurm_calls <= 2, report
                ticks += 1
                time.sleep(2)
            assert not store.watched_jobs.list("dev"), f"still watched after {ticks} ticks"

            attempts = {a.shown_id: a for a in store.attempts.for_chain(chain.id)}
            assert sorted(attempts) == [f"{array_id}_{n}" for n in range(4)]
            assert len({a.job_id for a in attempts.values()}) == 4  # each its own raw id
            assert attempts[f"{array_id}_2"].result == "FAILED"
            assert all(attempts[f"{array_id}_{n}"].result == "COMPLETED" for n in (0, 1, 3))
            assert store.chains.get(chain.id).status == "stopped"

            [root] = slack.root_messages("C0TRAIN")
            shown = json.dumps(root["blocks"], ensure_ascii=False)
            assert f"array {array_id} · FAILED" in shown
            assert all(f"{array_id}_{n}" in shown for n in range(4))
            texts = [m["text"] for m in slack.replies("C0TRAIN", root["ts"])
                     if not m.get("files")]
            failed = [t for t in texts if f"{array_id}_2" in t]
            assert failed and "FAILED" in failed[0], texts
            assert not any(attempts[f"{array_id}_2"].job_id in t for t in failed)
        finally:
            if array_id is not None:
                sessions.runner("dev").run(["scancel", str(array_id)], check=False)
            sessions.runner("dev").run(["rm", "-rf", work], check=False)


# Task 0 ends at once; the others run until cancelled (two at a time: 3 waits to start).
LONG_ARRAY_JOB = """#!/bin/bash
if [ "$SLURM_ARRAY_TASK_ID" = 0 ]; then echo done; exit 0; fi
sleep 300
"""


@contextmanager
def _one_ended_two_running_one_waiting(slurm_cluster, slack_bot, tmp_path: Path, tag: str, *,
                                       in_script: bool = False
                                       ) -> Iterator[tuple[Any, SlurmClient, int,
                                                           dict[int | None, JobRecord]]]:
    """The bot's services (W0LEAD may control any job) and a LONG_ARRAY_JOB array of 4 tasks
    run two at a time, once task 0 has ended, 1-2 run and the last waits: (the services, the
    cluster's Slurm client, the array id, its tasks by task id as then seen: the last task
    waiting is listed as task 3 or as the array's pending remainder, None). Cancelled after.
    `in_script`: the script's own `#SBATCH --array=0-3%2` asks for the array (no `--array`
    on sbatch's command line), and the store records the job as a recipe's plain run, as
    trainbot's submit of a recipe with no `array:` whose batch script says so does."""
    from slack_standin import SlackStandIn

    from bot.config import Config

    config = Config.model_validate(slurm_cluster.bot_config_data(
        store_url=f"sqlite:///{tmp_path / 'state.db'}", channels={"train": "C0TRAIN"},
        approvers=["W0LEAD"]))
    array_id = None
    with SlackStandIn() as slack, slack_bot(config, slack, charts=False) as ctx:
        runner = ctx.clusters.runner("dev")
        client = ctx.clusters.slurm("dev")
        try:
            name = f"it-{tag}-{uuid.uuid4().hex[:8]}"
            script = LONG_ARRAY_JOB
            if in_script:
                script = script.replace("#!/bin/bash\n", "#!/bin/bash\n#SBATCH --array=0-3%2\n")
            out = runner.run([
                "sbatch", "--parsable", *([] if in_script else ["--array=0-3%2"]),
                f"--job-name={name}",
                f"--partition={slurm_cluster.partition}", "--time=5", "--mem=64M",
                f"--output={slurm_cluster.home}/%x-%A_%a.out"], stdin=script).stdout
            array_id = int(out.strip().split(";")[0])
            if in_script:  # recorded as a plain run's attempt: the submit saw no array
                chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name=name,
                                                now=time.time())
                ctx.store.attempts.record(chain_id=chain.id, job_id=str(array_id),
                                          now=time.time(), state="PENDING")

            def settled(tasks: Mapping[int, JobRecord]) -> bool:
                by = _by_task(tasks)
                waiting = by.get(3, by.get(None))
                return (by.get(0) is not None and by[0].state == "COMPLETED"
                        and all(by.get(t) is not None and by[t].is_running for t in (1, 2))
                        and waiting is not None and waiting.is_pending)

            yield ctx, client, array_id, _by_task(wait_tasks(
                client, array_id, settled, timeout=90,
                what=f"array {array_id}: 0 ended, 1-2 run, 3 waits"))
        finally:
            if array_id is not None:
                runner.run(["scancel", str(array_id)], check=False)


def _cancel_says_which_tasks(ctx, client, array_id: int, seen) -> dict:
    """`/train cancel A` of the array `_one_ended_two_running_one_waiting` set up: its reply
    says task by task what scancel A did, and Slurm then shows it done (task 0 left
    COMPLETED, tasks 1-2 CANCELLED). The tasks' records by task id, once every task ended."""
    from bot.core.train_grammar import JobControl
    from bot.services.train import execute

    # the last task waiting keeps the array's own id, and Slurm may list it as task 3
    # (its own row) or as the array's pending remainder
    waiting = (f"waiting {array_id}_3 cancelled" if 3 in seen
               else "the tasks not started yet cancelled")
    reply = execute(ctx, JobControl("cancel", array_id), actor="W0LEAD",
                    channel="C0TRAIN", now=time.time())
    assert reply.text == (
        f"Array {array_id} cancelled by <@W0LEAD>: running {array_id}_[1-2] stopped; "
        f"{waiting}; {array_id}_0 already ended (left as they were)."), reply.text
    done = wait_tasks(
        client, array_id,
        lambda t: bool(t) and not any(r.is_running or r.is_pending for r in t.values()),
        timeout=60, what=f"every task of array {array_id} ended")
    by = _by_task(done)
    assert by[0].state == "COMPLETED"  # left as it was
    assert by[1].state == by[2].state == "CANCELLED"
    return by


@pytest.mark.timeout(240)
def test_cancelling_an_arrays_own_id_cancels_every_task_and_says_which(slurm_cluster, slack_bot,
                                                                       tmp_path):
    """`/train cancel A` of an array's own id on Slurm: scancel A stops the tasks that run and
    cancels the one not started yet, leaves the one that ended, and the reply says so task by
    task, as people see them (A_[1-2], A_0)."""

    with _one_ended_two_running_one_waiting(slurm_cluster, slack_bot, tmp_path, "carray") as (
            ctx, client, array_id, seen):
        by = _cancel_says_which_tasks(ctx, client, array_id, seen)
        # task 3 never started: cancelled in the queue (the remainder, or its own row)
        assert all(r.state == "CANCELLED" for k, r in by.items() if k not in (0, 1, 2))
        assert set(by) - {0, 1, 2}, by  # Slurm still lists the task that never ran


@pytest.mark.timeout(240)
def test_cancelling_a_runs_job_its_script_made_an_array_says_which_tasks(slurm_cluster,
                                                                         slack_bot, tmp_path):
    """A recipe's run the store records as a plain job (no `array:`), whose batch script's
    `#SBATCH --array=0-3%2` made it array A: `/train cancel A` reads its tasks from Slurm and
    the reply says task by task what scancel A did, as for any array."""

    with _one_ended_two_running_one_waiting(slurm_cluster, slack_bot, tmp_path, "sarray",
                                            in_script=True) as (ctx, client, array_id, seen):
        _cancel_says_which_tasks(ctx, client, array_id, seen)


@pytest.mark.timeout(240)
def test_holding_and_releasing_an_arrays_own_id_touch_the_waiting_tasks_and_say_which(
        slurm_cluster, slack_bot, tmp_path):
    """`/train hold A` then `/train release A` of an array's own id on Slurm: scontrol holds
    and then releases the task that waits, leaves the two that run running and the one that
    ended as it was, and each reply says so task by task (A_[1-2], A_0)."""
    from bot.core.train_grammar import JobControl
    from bot.services.train import execute

    with _one_ended_two_running_one_waiting(slurm_cluster, slack_bot, tmp_path, "harray") as (
            ctx, client, array_id, seen):
        # the last task waiting is listed as task 3 or as the array's pending remainder
        for verb, done, going_on in (
                ("hold", "held", " (a hold stops no task that runs)"),
                ("release", "released", "")):
            waiting = (f"waiting {array_id}_3 {done}" if 3 in seen
                       else f"the tasks not started yet {done}")
            reply = execute(ctx, JobControl(verb, array_id),  # type: ignore[arg-type]
                            actor="W0LEAD",
                            channel="C0TRAIN", now=time.time())
            assert reply.text == (
                f"Array {array_id} {done} by <@W0LEAD>: {waiting}; running "
                f"{array_id}_[1-2] left running{going_on}; {array_id}_0 already ended "
                "(left as they were)."), reply.text
            by = _by_task(client.array_tasks(array_id))
            assert by[0].state == "COMPLETED" and by[1].is_running and by[2].is_running
            rest = [r for k, r in by.items() if k not in (0, 1, 2)]
            assert rest and all(r.is_pending for r in rest), by
            assert all(r.is_held for r in rest) == (verb == "hold"), rest


@pytest.mark.timeout(300)
def test_a_task_stopped_by_sigstop_is_named_as_stopped_and_each_verb_leaves_it_as_said(
        slurm_cluster, slack_bot, tmp_path):
    """A task of the array sent SIGSTOP by its own user (`scancel --signal=STOP --full A_1`):
    squeue lists it STOPPED (both readers, json and parsable). `/train hold A` and `/train
    release A` leave it stopped, `/train cancel A` ends it, and each reply names it as stopped
    by SIGSTOP, not among the running tasks (A_2)."""
    from bot.core.train_grammar import JobControl, Status
    from bot.services.train import execute

    with _one_ended_two_running_one_waiting(slurm_cluster, slack_bot, tmp_path, "sarray") as (
            ctx, client, array_id, seen):
        runner = ctx.clusters.runner("dev")
        # While the array has tasks waiting, slurmctld's job_str_signal signals the running
        # task named `A_1` and then answers ESLURM_TRANSITION_STATE_NO_UPDATE (2020) for any
        # signal but SIGKILL (its pending remainder "cannot be altered now"): scancel retries
        # 10 times (sleep 5..14 s, each retry sending SIGSTOP again) and exits 2020 & 0xff =
        # 228 after ~95 s though the task stopped at the first try (slurmctld.log: one
        # `job_str_signal() ... sig=19 returned: Job can not be altered now` per try; 22.05
        # and 24.11 alike, nothing to do with SSH). So scancel gets 15 s (its first tries),
        # and squeue's STOPPED, within its own deadline, is what counts.
        sent = runner.run(["timeout", "15", "scancel", "--signal=STOP", "--full",
                           f"{array_id}_1"], check=False, timeout=40)
        assert sent.exit_code in (0, 124), sent  # done, or still retrying at 15 s
        wait_tasks(client, array_id,
                   lambda t: getattr(_by_task(t).get(1), "state", None) == "STOPPED",
                   timeout=60, what=f"{array_id}_1 STOPPED")
        for use_json in (True, False):  # 24.11's json says ["RUNNING", "STOPPED"]
            reader = SlurmClient(runner, use_json=use_json, timeout=60)
            assert _by_task(reader.array_tasks(array_id))[1].state == "STOPPED", use_json
        # `/train status A_1` and `/train status A` show squeue's STOPPED (sacct: RUNNING)
        task_1 = _by_task(client.array_tasks(array_id))[1].job_id
        for target in (f"{array_id}_1", str(array_id)):
            shown = execute(ctx, Status(target), actor="W0LEAD", channel="C0TRAIN",
                            now=time.time()).text
            [row] = [line for line in shown.splitlines()
                     if f"{array_id}_1 ({task_1})" in line or line.startswith(f"{array_id}_1 ")]
            assert "STOPPED" in row and "RUNNING" not in row, shown
        stopped = f"{array_id}_1, stopped by SIGSTOP"
        for verb, done, running, left in (
                ("hold", "held", "left running (a hold stops no task that runs)",
                 "left stopped (a hold only keeps waiting tasks from starting)"),
                ("release", "released", "left running",
                 "left stopped (a release does not continue it; SIGCONT does: `scancel "
                 "--signal=CONT`)")):
            waiting = (f"waiting {array_id}_3 {done}" if 3 in seen
                       else f"the tasks not started yet {done}")
            reply = execute(ctx, JobControl(verb, array_id),  # type: ignore[arg-type]
                            actor="W0LEAD",
                            channel="C0TRAIN", now=time.time())
            assert reply.text == (
                f"Array {array_id} {done} by <@W0LEAD>: {waiting}; running {array_id}_2 "
                f"{running}; {stopped}, {left}; {array_id}_0 already ended (left as they "
                "were)."), reply.text
            by = _by_task(client.array_tasks(array_id))
            assert by[1].state == "STOPPED" and by[2].is_running, by
        waiting = (f"waiting {array_id}_3 cancelled" if 3 in seen
                   else "the tasks not started yet cancelled")
        reply = execute(ctx, JobControl("cancel", array_id), actor="W0LEAD",
                        channel="C0TRAIN", now=time.time())
        assert reply.text == (
            f"Array {array_id} cancelled by <@W0LEAD>: running {array_id}_2 stopped; "
            f"{waiting}; {stopped}, cancelled; {array_id}_0 already ended (left as they "
            "were)."), reply.text
        ended = wait_tasks(
            client, array_id,
            lambda t: bool(t) and not any(r.is_running or r.is_pending for r in t.values()),
            timeout=60, what=f"every task of array {array_id} ended")
        by = _by_task(ended)
        assert by[0].state == "COMPLETED" and by[1].state == by[2].state == "CANCELLED", by
