"""The watcher and job arrays: tasks of a watched array picked up from the tick's one Slurm
call, each judged under its own id and named `A_T`; the array's root follows its running
tasks' iterations; the array's chain ends with its last task; a finished task's log found
after squeue forgot it."""

from __future__ import annotations

from fakes import (
    T0,
    FakeSFTP,
    FakeSlurm,
    RecordingMessageSink,
    homes,
    make_context,
)
from support.watcher import CLUSTER, count_reads, make_watcher

from bot.services.threads import open_thread
from bot.services.watch_events import ThreadEvents
from bot.store import Store

LOG = "/home/u/logs/sweep-6100_{}.out"


def watch_array(store: Store):
    chain = store.chains.create(recipe="", cluster=CLUSTER, job_name="sweep", now=T0,
                                kind="array", array_job_id=6100)
    store.watched_jobs.add(CLUSTER, "6100", now=T0, chain_id=chain.id, adopted=True)
    return chain


def start(slurm: FakeSlurm, sftp: FakeSFTP, job_id: int, task: int, **kw) -> None:
    slurm.add(job_id, name="sweep", state=kw.pop("state", "RUNNING"), array_job_id=6100,
              array_task_id=task, stdout_path=LOG.format(task), start_time=T0, **kw)
    sftp.append(LOG.format(task), b"iter: 10/100 | loss: 0.5\n")


def test_tasks_that_start_later_join_the_arrays_chain_in_the_same_tick(env):
    store, slurm, sftp, sink = env
    chain = watch_array(store)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 60)
    assert store.attempts.for_chain(chain.id) == []
    start(slurm, sftp, 6101, 0)
    start(slurm, sftp, 6102, 1)
    report = w.tick(T0 + 120)
    assert report.slurm_calls == 1 and slurm.acted("jobs")[-1] == [6100]  # no call per task
    assert [(a.job_id, a.shown_id, a.state) for a in store.attempts.for_chain(chain.id)] == [
        ("6101", "6100_0", "RUNNING"), ("6102", "6100_1", "RUNNING")]
    assert sorted(j.job_id for j in store.watched_jobs.list(CLUSTER)) == ["6100", "6101", "6102"]
    assert sink.changed == [chain.id]  # its root rewritten once for the tick
    w.tick(T0 + 180)
    assert slurm.acted("jobs")[-1] == [6100, 6101, 6102]


def test_a_task_that_starts_costs_no_read_of_its_chains_row_in_the_next_ticks(env, monkeypatch):
    """A task starting is no submit: its array's row (read for the run's target) is not read
    again because the task is watched from then on (ChainBook.new_tick)."""
    store, slurm, sftp, sink = env
    chain = watch_array(store)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    start(slurm, sftp, 6101, 0)
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 60)  # task 0 started: judged by its run's target, the row read for it
    reads = count_reads(monkeypatch, store.chains, "get")
    w.tick(T0 + 120)
    start(slurm, sftp, 6102, 1)
    w.tick(T0 + 180)  # task 1 starts mid-tick
    w.tick(T0 + 240)
    assert reads == []
    assert sorted(j.job_id for j in store.watched_jobs.list(CLUSTER)) == ["6100", "6101", "6102"]
    assert [a.shown_id for a in store.attempts.for_chain(chain.id)] == ["6100_0", "6100_1"]


def test_the_roots_iterations_follow_the_running_tasks_between_their_state_changes(env):
    """A task's progress written to its row (at most every persist_every_s) rewrites the
    array's root at the tick's end, once for all its tasks, with no Slurm call of its own;
    Home, which counts the tasks by state, is not republished for it."""
    store, slurm, sftp, sink = env
    chain = watch_array(store)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    start(slurm, sftp, 6101, 0)
    start(slurm, sftp, 6102, 1)
    w = make_watcher(store, slurm, sftp, sink, persist_every_s=300)
    w.tick(T0 + 60)  # the tasks start: their rows, and the root, at iteration 10
    assert (sink.changed, sink.progressed) == ([chain.id], [])
    sftp.append(LOG.format(0), b"iter: 40/100 | loss: 0.4\n")
    sftp.append(LOG.format(1), b"iter: 70/100 | loss: 0.3\n")
    w.tick(T0 + 120)  # within persist_every_s: nothing written, nothing to show
    assert (sink.changed, sink.progressed) == ([chain.id], [])
    report = w.tick(T0 + 400)  # still RUNNING both: no state change
    assert report.slurm_calls == 1
    assert [(a.shown_id, a.state, a.last_iter) for a in store.attempts.for_chain(chain.id)] == [
        ("6100_0", "RUNNING", 40), ("6100_1", "RUNNING", 70)]
    assert (sink.changed, sink.progressed) == ([chain.id], [chain.id])  # one root rewrite
    w.tick(T0 + 800)  # no new iteration: no rewrite
    assert (sink.changed, sink.progressed) == ([chain.id], [chain.id])


def test_staggered_progress_of_many_tasks_rewrites_the_root_once_per_interval(env):
    """Tasks whose progress reaches their rows on different ticks (each at most every
    persist_every_s) rewrite the array's root for it at most once every persist_every_s, the
    last rewrite showing the latest iterations; a task's change of state rewrites it at that
    tick."""
    store, slurm, sftp, sink = env
    chain = watch_array(store)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    for n in range(10):
        start(slurm, sftp, 6101 + n, n)
    w = make_watcher(store, slurm, sftp, sink, persist_every_s=300)
    w.tick(T0 + 60)  # the tasks start: their rows written at once
    assert (sink.changed, sink.progressed) == ([chain.id], [])
    rewrites: list[int] = []
    for tick in range(2, 32):  # 30 one-minute ticks; task n's rows written from tick 6 + n % 5
        for n in range(10):
            if tick >= 6 + n % 5:
                sftp.append(LOG.format(n), f"iter: {10 * tick}/100 | loss: 0.4\n".encode())
        w.tick(T0 + 60 * tick)
        if len(sink.progressed) > len(rewrites):  # its root rewritten for progress
            rewrites.append(tick)
    assert rewrites == [6, 11, 16, 21, 26, 31]  # not one a tick from tick 10 on
    slurm.set(6104, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1890)
    w.tick(T0 + 60 * 32)  # a minute after the last progress rewrite
    assert sink.changed == [chain.id, chain.id]  # the failure's rewrite did not wait


class RootRecorder(RecordingMessageSink):
    """A thread writer that also rewrites the root in place, remembering each rewrite."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.roots: list[list] = []  # the blocks of each root rewrite

    def update_root(self, chain_id: int, blocks: list, text: str) -> None:
        self.roots.append(blocks)


def test_the_arrays_thread_root_shows_its_running_tasks_iterations(env):
    store, slurm, sftp, _ = env
    root = RootRecorder(store)
    ctx = make_context(store, slurm, sftp=sftp, sink=root, charts=False,
                       clock=lambda: T0)
    chain = store.chains.create(recipe="", cluster=CLUSTER, job_name="sweep", now=T0,
                                kind="array", array_job_id=6100, watched_by="U0ALICE")
    store.watched_jobs.add(CLUSTER, "6100", now=T0, chain_id=chain.id, adopted=True)
    store.home_viewers.record("U0ALICE", T0, ttl_s=3600.0)
    assert open_thread(ctx, chain.id, "C0TRAIN")
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    start(slurm, sftp, 6101, 0)
    w = make_watcher(store, slurm, sftp, ThreadEvents(ctx), persist_every_s=300)
    w.tick(T0 + 60)
    assert homes(ctx).users() == ["U0ALICE"]  # the task started: its Home row counts it
    sftp.append(LOG.format(0), b"iter: 4321/10000 | loss: 0.4\n")
    w.tick(T0 + 400)
    tasks = next(b for b in root.roots[-1] if b.get("block_id") == "tasks")["text"]["text"]
    assert "6100_0" in tasks and "4,321" in tasks and "RUNNING" in tasks
    assert homes(ctx).users() == ["U0ALICE"]  # nothing on Home moved


def test_a_failed_task_is_named_as_the_arrays_task_and_the_array_goes_on(env):
    store, slurm, sftp, sink = env
    chain = watch_array(store)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    start(slurm, sftp, 6101, 0)
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 60)
    slurm.set(6101, state="FAILED", exit_code=1, signal=0, end_time=T0 + 90)
    w.tick(T0 + 120)
    [incident] = [e for e in sink.events if e.kind == "incident"]
    assert incident.text.startswith("job 6100_0 FAILED") and incident.job_id == "6101"
    assert store.chains.get(chain.id).status == "active"  # task 1 has not even started
    # the tasks that never started are cancelled: nothing to diagnose, the chain ends
    slurm.set(6100, state="CANCELLED")
    w.tick(T0 + 180)
    assert [e.kind for e in sink.events] == ["incident"]
    assert store.watched_jobs.list(CLUSTER) == []
    assert store.chains.get(chain.id).status == "stopped"


def test_an_array_whose_tasks_all_completed_ends_completed(env):
    store, slurm, sftp, sink = env
    chain = watch_array(store)
    start(slurm, sftp, 6101, 0, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 30)
    start(slurm, sftp, 6100, 1, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 30)
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 60)
    assert store.watched_jobs.list(CLUSTER) == []
    assert [a.shown_id for a in store.attempts.for_chain(chain.id)] == ["6100_0", "6100_1"]
    assert store.chains.get(chain.id).status in ("completed", "stopped")


def test_a_finished_tasks_log_is_found_after_squeue_forgot_it(env, tmp_path):
    store, slurm, sftp, sink = env
    watch_array(store)
    start(slurm, sftp, 6101, 0)
    w = make_watcher(store, slurm, sftp, sink, persist_every_s=0)
    w.tick(T0 + 60)
    sftp.append(LOG.format(0), b"Traceback (most recent call last):\nRuntimeError: boom\n")
    # only sacct knows it now (22.05's gives no output path)
    slurm.set(6101, state="FAILED", exit_code=1, signal=0, end_time=T0 + 90, stdout_path=None)
    restarted = make_watcher(store, slurm, sftp, sink)  # nothing in memory: the stored path
    restarted.tick(T0 + 120)
    [incident] = [e for e in sink.events if e.kind == "incident"]
    assert any("RuntimeError: boom" in ev.text for ev in incident.diagnosis.evidence)
