"""The watcher tick (bot.services.watch.tick) driven deterministically: fake Slurm and SFTP, a real
SQLite store, the real catalogue, a recording sink, and a fake clock."""

from __future__ import annotations

import time as _time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
from fakes import (
    T0,
    FakeCheckpoints,
    FakeResubmit,
    FakeSFTP,
    FakeSlurm,
    RecordingEventSink,
    SstatSlurm,
    make_context,
    present,
    recorded,
)
from support.bar_draws import lightning_validation_draw, mmcv_draw
from support.watcher import (
    CLUSTER,
    LOG,
    STORY,
    WatchEnv,
    add_job,
    catalogue,
    head_line,
    make_watcher,
    running,
    story_lines,
    timed_out,
)

from bot.cluster.errors import ChannelClosed, ClusterUnavailable, CommandFailed
from bot.core.policy import DecisionKind, PolicyParams
from bot.core.slurm.records import JobRecord
from bot.core.tail import FAILED, FileRead
from bot.core.text import N_, mrkdwn_escape
from bot.services.watch.chains import ProgressRewriteBudget
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

if TYPE_CHECKING:
    from bot.config import PolicyConfig

# ------------------------------------------------------------------ cluster health


def test_a_job_slurm_never_knows_is_reported_once_then_no_longer_watched(env):
    store, slurm, sftp, sink = env
    chain = add_job(store, 4242)  # watched at T0; neither squeue nor sacct lists it
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 60)  # just submitted: it may take a moment to appear
    w.tick(T0 + 600)
    assert sink.events == []
    sink.fail_next = 1  # Slack down at the moment it would be told
    w.tick(T0 + 900)
    assert sink.events == [] and store.watched_jobs.get(CLUSTER, "4242") is not None
    w.tick(T0 + 960)
    assert sink.kinds() == ["unknown"]
    assert "4242" in sink.events[0].text and "/train watch 4242" in sink.events[0].text
    assert sink.events[0].chain_id == chain.id
    assert store.watched_jobs.get(CLUSTER, "4242") is None
    attempt = store.attempts.get_by_job("4242")
    assert (attempt.state, attempt.result) == ("UNKNOWN", "UNKNOWN")
    w.tick(T0 + 1020)
    assert sink.kinds() == ["unknown"] and len(slurm.acted("jobs")) == 4  # no longer asked about


def test_unreachable_cluster_one_notice_then_one_back_and_no_job_alarms(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:100]))
    w = make_watcher(store, slurm, sftp, sink)
    assert w.tick(T0).ok
    known = w.last_known
    slurm.down = True
    reports = [w.tick(T0 + 60 * i) for i in range(1, 8)]
    assert not any(r.ok for r in reports)
    assert sink.kinds() == ["cluster_unreachable"]  # after the 3rd failure, once
    assert "unreachable" in sink.events[0].text
    assert w.last_known == known  # last known state kept
    slurm.down = False
    sftp.clock = T0 + 600
    sftp.append(LOG, b"".join(story_lines()[100:250]))  # the job kept training meanwhile
    assert w.tick(T0 + 600).ok
    w.tick(T0 + 660)
    assert sink.kinds() == ["cluster_unreachable", "cluster_back"]


def test_short_outage_below_threshold_is_silent(env):
    store, slurm, sftp, sink = env
    add_job(store, 1)
    slurm.records[1] = running(1)
    w = make_watcher(store, slurm, sftp, sink)
    slurm.down = True
    w.tick(T0)
    w.tick(T0 + 60)
    slurm.down = False
    w.tick(T0 + 120)
    assert sink.events == []


@pytest.mark.parametrize("n_jobs", [1, 20, 200])
def test_one_slurm_call_per_tick_for_any_number_of_jobs(env, n_jobs):
    store, slurm, sftp, sink = env
    for i in range(n_jobs):
        add_job(store, 1000 + i)
        slurm.records[1000 + i] = JobRecord(job_id=1000 + i, state="PENDING", reason="Priority")
    w = make_watcher(store, slurm, sftp, sink)
    report = w.tick(T0)
    assert report.slurm_calls == 1 and len(slurm.acted("jobs")) == 1 and report.jobs == n_jobs


# ------------------------------------------------------------------ reading logs


def test_reads_only_new_bytes_and_persists_offsets(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    lines = story_lines()
    w = make_watcher(store, slurm, sftp, sink)
    sftp.append(LOG, b"".join(lines[:500]))
    first = w.tick(T0)
    assert first.bytes_read == len(b"".join(lines[:500]))
    chunk = b"".join(lines[500:520])
    sftp.append(LOG, chunk)
    before = sftp.bytes_out
    second = w.tick(T0 + 60)
    assert second.bytes_read == len(chunk)
    assert sftp.bytes_out - before <= len(chunk) + 64  # + the 64-byte anchor re-read
    # Progress is written to the store at most every persist_every_s (300 s) ...
    saved = store.tail_offsets.get("88154", LOG)
    assert saved.offset == len(b"".join(lines[:500])) and saved.line_no == 500
    assert store.attempts.get_by_job("88154").last_iter == 1498
    # ... and then it is.
    sftp.append(LOG, b"".join(lines[520:540]))
    w.tick(T0 + 300)
    saved = store.tail_offsets.get("88154", LOG)
    assert saved.offset == len(b"".join(lines[:540])) and saved.line_no == 540
    attempt = store.attempts.get_by_job("88154")
    assert b"iter: 1538/8000" in lines[539]
    assert attempt.last_iter == 1538 and attempt.state == "RUNNING"


def test_a_single_runs_root_follows_its_progress_and_its_state(env):
    """A run's root (a row per attempt, its progress bar) is rewritten at the tick's end when
    its job's state changes, and when its iteration is written to the attempt row (at most
    every persist_every_s), with no Slurm call of its own; Home is not told (its sink's
    progress_changed)."""
    store, slurm, sftp, sink = env
    chain = add_job(store, 88154)
    slurm.records[88154] = running(88154)
    lines = story_lines()
    sftp.append(LOG, b"".join(lines[:500]))
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0)  # PENDING (the row as added) -> RUNNING at iteration 1498: at once
    assert (sink.changed, sink.progressed) == ([], [chain.id])
    sftp.append(LOG, b"".join(lines[500:520]))
    w.tick(T0 + 60)  # within persist_every_s: nothing written, nothing to show
    assert sink.progressed == [chain.id]
    sftp.append(LOG, b"".join(lines[520:540]))
    report = w.tick(T0 + 300)
    assert store.attempts.get_by_job("88154").last_iter == 1538
    assert (sink.changed, sink.progressed) == ([], [chain.id, chain.id])
    assert report.slurm_calls == 1
    w.tick(T0 + 600)  # no new iteration: no rewrite
    assert sink.progressed == [chain.id, chain.id]


def _progressing_clusters(stores: dict[str, Store], sink: RecordingEventSink, *,
                          per_minute: int) -> tuple[dict[str, Watcher], dict[str, list[int]]]:
    """Two clusters back after a downtime, `gpu` with 8 runs progressing and `dev` with 12,
    each watched through its store in `stores` (one store: one replica; two stores on one
    database: two replicas) with a budget of `per_minute` progress rewrites: the watchers,
    and the chains of each cluster's runs."""
    watchers: dict[str, Watcher] = {}
    roots: dict[str, list[int]] = {}
    for cluster, jobs in (("gpu", range(9001, 9009)), ("dev", range(7001, 7013))):
        store = stores[cluster]
        slurm, sftp = FakeSlurm(), FakeSFTP()
        roots[cluster] = []
        for job in jobs:
            log = f"/scratch/{cluster}/mix-{job}.out"
            chain = store.chains.create(recipe="mix", cluster=cluster, job_name="mix", now=T0)
            attempt = store.attempts.record(chain_id=chain.id, job_id=str(job), now=T0).attempt
            store.attempts.update(attempt.id, state="RUNNING", last_iter=100)
            store.watched_jobs.add(cluster, str(job), now=T0, chain_id=chain.id)
            slurm.records[job] = JobRecord(job_id=job, state="RUNNING", stdout_path=log,
                                           start_time=T0)
            sftp.append(log, b"iter: 500/100000 | loss: 0.5\n")
            roots[cluster].append(chain.id)
        watchers[cluster] = Watcher(cluster, slurm=slurm, reader=partial(lambda s: s, sftp),
                                    store=store, catalogue=catalogue(), sink=sink,
                                    policy=PolicyParams(),
                                    progress_rewrites=ProgressRewriteBudget(store, per_minute))
    return watchers, roots


@pytest.mark.parametrize("replicas", [1, 2])
def test_the_workspaces_progress_rewrite_budget_is_shared_by_clusters_and_replicas(
        tmp_path, replicas: int):
    """Two clusters post into one workspace after a downtime, `gpu` with 8 runs progressing
    and `dev` with 12, watched by one replica or each by its own replica on one database:
    their ticks (30 s apart) together rewrite at most the workspace's budget of roots for
    progress in any minute (5 here; chat.update is rate-limited per workspace), each root
    once, the longest waiting first whichever cluster and replica has them: `dev`, ticking
    first with more roots, leaves the budget to `gpu`'s roots that waited longer."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    opened = [Store.open(url) for _ in range(replicas)]
    sink = RecordingEventSink()
    try:
        watchers, roots = _progressing_clusters(
            {"gpu": opened[0], "dev": opened[-1]}, sink, per_minute=5)
        gpu, dev = roots["gpu"], roots["dev"]
        rewritten: list[tuple[float, list[int]]] = []
        for n in range(9):  # dev at T0, gpu at T0 + 30, dev at T0 + 60, ...
            at, before = T0 + 30 * n, len(sink.progressed)
            watchers["dev" if n % 2 == 0 else "gpu"].tick(at)
            rewritten.append((at, sink.progressed[before:]))
    finally:
        for store in opened:
            store.close()
    assert [roots for _, roots in rewritten] == [
        dev[:5], [], [], gpu[:5], [], gpu[5:], dev[5:7], [], dev[7:]]
    for start, _ in rewritten:  # never more than 5 in a minute, however the ticks fall
        assert sum(len(r) for at, r in rewritten if start <= at < start + 60) <= 5
    assert sorted(sink.progressed) == sorted(gpu + dev)  # each root once
    assert sink.changed == []


def test_replicas_ticking_at_once_take_the_budget_once(tmp_path, monkeypatch):
    """Two replicas' ticks read the workspace's budget at once (5 free): the one that takes
    the slots first rewrites its 5 most overdue roots, the other none, though it read the
    same 5 free slots (each slot is taken by one conditional write); its roots wait, and
    the slots freed a minute later go to the roots that waited longest, whichever replica
    ticks, never more than 5 in a minute."""
    url = f"sqlite:///{tmp_path / 'state.db'}"
    gpu_replica, dev_replica = Store.open(url), Store.open(url)
    sink = RecordingEventSink()
    try:
        watchers, roots = _progressing_clusters({"gpu": gpu_replica, "dev": dev_replica},
                                                sink, per_minute=5)
        gpu, dev = roots["gpu"], roots["dev"]
        read_slots = dev_replica.progress_rewrites.slots

        def gpu_ticks_meanwhile() -> dict[int, float]:
            slots = read_slots()  # dev's tick read the slots: gpu's tick takes them now
            watchers["gpu"].tick(T0)
            return slots

        monkeypatch.setattr(dev_replica.progress_rewrites, "slots", gpu_ticks_meanwhile)
        watchers["dev"].tick(T0)
        monkeypatch.setattr(dev_replica.progress_rewrites, "slots", read_slots)
        rewritten = [(T0, sink.progressed[:])]
        assert rewritten == [(T0, gpu[:5])]  # dev's tick took no slot
        for cluster, at in (("dev", T0 + 30), ("gpu", T0 + 60), ("dev", T0 + 90),
                            ("gpu", T0 + 120), ("dev", T0 + 130)):
            before = len(sink.progressed)
            watchers[cluster].tick(at)
            rewritten.append((at, sink.progressed[before:]))
    finally:
        gpu_replica.close()
        dev_replica.close()
    # T0 + 30: no slot free; T0 + 60: gpu's 3 left (they and dev's waited since T0, never
    # rewritten: the lower ids first); T0 + 90: the 2 slots left to dev's first
    assert [r for _, r in rewritten] == [gpu[:5], [], gpu[5:], dev[:2], [], dev[2:5]]
    for start, _ in rewritten:
        assert sum(len(r) for at, r in rewritten if start <= at < start + 60) <= 5


def test_restart_from_a_throttled_offset_rereads_a_little_and_posts_nothing_twice(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    before, _ = _split_at_stall()
    w1 = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 - 100
    sftp.append(LOG, b"".join(before[:2000]))
    w1.tick(T0 - 100)
    sftp.clock = T0
    sftp.append(LOG, b"".join(before[2000:]))
    w1.tick(T0)  # 100 s later: this offset is not written (throttled)
    w1.tick(T0 + 360)
    assert sink.kinds() == ["warning"]
    assert store.tail_offsets.get("88154", LOG).line_no == 2000
    w2 = make_watcher(store, slurm, sftp, sink)
    w2.tick(T0 + 420)
    w2.tick(T0 + 480)
    assert sink.kinds() == ["warning"]
    assert w2._jobs[88154].analysis.series.last_iteration == 3470


# ------------------------------------------------------------------ the 88154 story


def _split_at_stall():
    lines = story_lines()
    stall = next(i for i, x in enumerate(lines) if b"iter: 3470/" in x)
    return lines[: stall + 1], lines[stall + 1:]


def test_story_88154_hang_warned_early_once_then_incident_resumes_from_3000(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154, attempts_before=((88016, 1049),))
    slurm.records[88154] = running(88154)
    before, after = _split_at_stall()
    sftp.append(LOG, b"".join(before))
    w = make_watcher(store, slurm, sftp, sink, checkpoint=FakeCheckpoints(3000))
    w.tick(T0)
    assert sink.events == []
    w.tick(T0 + 240)  # 4 min of silence: under the 5 min stall threshold
    assert sink.events == []
    w.tick(T0 + 360)  # 6 min: the stall is raised, long before the 30 min watchdog
    assert sink.kinds() == ["warning"]
    warn = sink.events[0]
    assert warn.decision.class_id == "hang" and "3470" in warn.text
    assert "cancel_resume" in warn.decision.offers
    for k in range(1, 5):
        w.tick(T0 + 360 + 60 * k)
    assert sink.kinds() == ["warning"]  # once per stall episode
    # The watchdog fires at 30 min; the job ends FAILED.
    sftp.clock = T0 + 1805
    sftp.append(LOG, b"".join(after))
    slurm.records[88154] = JobRecord(job_id=88154, state="FAILED", exit_code=1, signal=0,
                                     stdout_path=LOG, start_time=T0, end_time=T0 + 1810,
                                     mem_limit_bytes=950 << 30)
    w.tick(T0 + 1830)
    assert sink.kinds() == ["warning", "incident"]
    inc = sink.events[1]
    assert inc.diagnosis.class_id == "nccl_timeout" and "hang" in inc.diagnosis.secondary
    assert inc.decision.kind == DecisionKind.PROPOSE_RESUBMIT
    assert inc.decision.resume_from == 3000 and inc.decision.work_lost_iters == 470
    attempt = store.attempts.get_by_job("88154")
    assert (attempt.result, attempt.cause, attempt.last_iter, attempt.work_lost_iters) == (
        "FAILED", "nccl_timeout", 3470, 470)
    assert store.watched_jobs.get(CLUSTER, "88154") is None  # done with it
    w.tick(T0 + 1900)
    assert sink.kinds() == ["warning", "incident"]


def test_cancel_and_resume_clicked_during_a_tick_is_not_reported_as_a_failure(env):
    """The tick lists the stalled job; meanwhile "Cancel and resume" unwatches it, records
    its attempt (CANCELLED / hang) and scancels it; the tick's Slurm answer then says
    CANCELLED. That end is the person's decision: no incident, the attempt row kept."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    before, _ = _split_at_stall()
    sftp.append(LOG, b"".join(before))
    slurm.records[88154] = running(88154)
    w = make_watcher(store, slurm, sftp, sink, checkpoint=FakeCheckpoints(3000))
    w.tick(T0 + 360)
    assert sink.kinds() == ["warning"]
    attempt = store.attempts.get_by_job("88154")

    def click_then_answer(ids):  # the click lands between the tick's list and its squeue
        store.watched_jobs.remove(CLUSTER, "88154")
        store.attempts.update(attempt.id, state="CANCELLED", result="CANCELLED", cause="hang",
                              last_iter=3470)
        return {88154: JobRecord(job_id=88154, state="CANCELLED", exit_code=0, signal=15,
                                 stdout_path=LOG, start_time=T0, end_time=T0 + 400)}

    slurm.jobs = click_then_answer
    w.tick(T0 + 420)
    assert sink.kinds() == ["warning"]
    row = store.attempts.get_by_job("88154")
    assert (row.result, row.cause, row.last_iter) == ("CANCELLED", "hang", 3470)


def test_restart_resumes_from_offset_without_duplicates_and_still_sees_the_stall(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    before, _ = _split_at_stall()
    sftp.append(LOG, b"".join(before))
    w1 = make_watcher(store, slurm, sftp, sink)
    w1.tick(T0)
    w1.tick(T0 + 360)
    assert sink.kinds() == ["warning"]
    # The bot restarts: a new Watcher over the same store.
    sink2 = RecordingEventSink()
    w2 = make_watcher(store, slurm, sftp, sink2, warmup_bytes=16 << 10)
    out_before = sftp.bytes_out
    w2.tick(T0 + 420)
    assert sink2.events == []  # the stall was already posted
    assert sftp.bytes_out - out_before <= (16 << 10) + 64  # a warm-up window, not the log
    # The warm-up gave it the last progress line: a fresh stall check still works.
    assert w2._jobs[88154].analysis.series.last_iteration == 3470


def test_restart_silent_job_first_seen_after_restart_is_judged(env):
    """Crash right after the last progress line was read, before the stall was due: the new
    process reads nothing new, yet ages the silence from the persisted file mtime."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    before, _ = _split_at_stall()
    sftp.append(LOG, b"".join(before))
    make_watcher(store, slurm, sftp, RecordingEventSink()).tick(T0)
    w2 = make_watcher(store, slurm, sftp, sink)
    w2.tick(T0 + 60)
    assert sink.events == []
    w2.tick(T0 + 400)
    assert sink.kinds() == ["warning"] and sink.events[0].decision.class_id == "hang"


# ------------------------------------------------------------------ crash safety


def test_failed_publish_keeps_job_watched_and_posts_once_later(env):
    store, slurm, sftp, sink = env
    add_job(store, 108687, recipe="launcher")
    sftp.append(LOG, b"[launcher] starting\n+ LATEST=$(ls -d /ckpt/checkpoint_step_* | tail)\n")
    slurm.records[108687] = JobRecord(job_id=108687, state="COMPLETED", exit_code=0, signal=0,
                                      elapsed_s=10, stdout_path=LOG, start_time=T0,
                                      end_time=T0 + 10)
    w = make_watcher(store, slurm, sftp, sink)
    sink.fail_next = 1
    w.tick(T0 + 30)
    assert sink.events == []
    assert store.watched_jobs.get(CLUSTER, "108687") is not None
    w.tick(T0 + 90)
    assert sink.kinds() == ["incident"]
    assert sink.events[0].diagnosis.class_id == "silent_exit"
    assert sink.events[0].decision.kind == DecisionKind.STOP
    chain = store.chains.latest_for_recipe("launcher")
    assert chain.status == "stopped"
    w.tick(T0 + 150)
    assert sink.kinds() == ["incident"]


# ------------------------------------------------------------------ held jobs


def test_job_held_admin_reported_once_after_threshold(env):
    store, slurm, sftp, sink = env
    add_job(store, 87870)
    slurm.records[87870] = JobRecord(job_id=87870, state="PENDING", reason="JobHeldAdmin",
                                     restart_count=1)
    w = make_watcher(store, slurm, sftp, sink, policy=PolicyParams(held_report_s=600))
    w.tick(T0)
    w.tick(T0 + 300)
    assert sink.events == []
    w.tick(T0 + 660)
    w.tick(T0 + 720)
    assert sink.kinds() == ["held"]
    assert "JobHeldAdmin" in sink.events[0].text


def test_a_restart_does_not_start_the_held_wait_over(env):
    store, slurm, sftp, sink = env
    add_job(store, 87870)
    slurm.records[87870] = JobRecord(job_id=87870, state="PENDING", reason="JobHeldAdmin",
                                     restart_count=1)
    policy = PolicyParams(held_report_s=600)
    make_watcher(store, slurm, sftp, sink, policy=policy).tick(T0)  # first seen held
    w = make_watcher(store, slurm, sftp, sink, policy=policy)  # the bot restarted
    w.tick(T0 + 300)
    assert sink.events == []
    w.tick(T0 + 660)  # 11 min held in all, though only 6 since the restart
    assert sink.kinds() == ["held"]
    # Released and held again later: the wait counts from the new hold.
    slurm.records[87870] = JobRecord(job_id=87870, state="RUNNING", stdout_path=LOG,
                                     start_time=T0 + 700, restart_count=1)
    w.tick(T0 + 720)
    assert store.watched_jobs.get(CLUSTER, "87870").held_since is None
    slurm.records[87870] = JobRecord(job_id=87870, state="PENDING", reason="JobHeldAdmin",
                                     restart_count=2)
    w.tick(T0 + 780)
    assert store.watched_jobs.get(CLUSTER, "87870").held_since == T0 + 780


# ------------------------------------------------------------------ automatic resubmits


def test_time_limit_on_auto_recipe_resubmits_after_backoff_and_charges(env):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    w.tick(T0 + 1310)
    assert sink.kinds() == ["incident"]
    assert sink.events[0].decision.kind == DecisionKind.RESUBMIT_NOW
    w.tick(T0 + 1340)  # inside the 60 s backoff
    assert resub.calls == []
    w.tick(T0 + 1380)
    assert resub.calls == [("auto", chain.id, 1200)]
    assert store.chains.get(chain.id).retries_used == 1
    assert sink.kinds() == ["incident", "resubmitted"]
    # the note and the decision word the resume point alike (bot.core.policy.resume_start)
    assert sink.events[1].text == \
        "job 88300 resubmitted automatically as 90001, from iteration 1,200"
    assert "resubmitting from iteration 1,200 (" in sink.events[0].decision.reason
    w.tick(T0 + 1440)
    assert len(resub.calls) == 1  # never twice


def test_failed_resubmit_is_retried_not_lost(env):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store, fail_first=1)
    w, chain = timed_out(env, resub)
    w.tick(T0 + 1310)
    w.tick(T0 + 1380)
    assert len(resub.calls) == 1 and store.chains.get(chain.id).retries_used == 0
    w.tick(T0 + 1440)
    assert len(resub.calls) == 2 and store.chains.get(chain.id).retries_used == 1
    w.tick(T0 + 1500)
    assert len(resub.calls) == 2


SBATCH_REFUSED = ("sbatch: error: Batch job submission failed: Invalid account or "
                  "account/partition combination specified\n")


class RefusedResubmit(FakeResubmit):
    """sbatch says no to every resubmit, with `stderr` (default: the recipe's account was
    taken away meanwhile)."""

    stderr = SBATCH_REFUSED

    def __call__(self, recipe: str, chain_id: int, decision: Any, *, intent: str) -> int:
        self.calls.append((recipe, chain_id, decision.resume_from))
        raise CommandFailed(["sbatch", "--parsable", "--account=gone"], 1, self.stderr)


def said_in_thread(store: Store, chain_id: int, note: Any, lang: str) -> str:
    """What the run's thread shows for watcher event `note`, in `lang` (posted under a key of
    its own per language: the thread's poster says each key once)."""
    ctx = make_context(store, slack_lang=lang)
    recorded(ctx).post_root(chain_id, "C0TRAIN", [], "auto")
    ThreadEvents(ctx).publish(replace(note, key=f"{note.key}:{lang}"))
    [said] = [text for kind, _, k, text in recorded(ctx).posts if k == f"{note.key}:{lang}"]
    return said


def test_a_resubmit_sbatch_refuses_is_told_in_the_thread_once_and_not_tried_again(env):
    """sbatch refuses the automatic resubmit: the thread says so at once, with sbatch's
    error and the `/train resume` that resumes the run by hand; trainbot tries no more
    (before: the same sbatch every tick, for ever, and the thread's last word was
    "resubmitting from iteration 1,200")."""
    store, slurm, sftp, sink = env
    resub = RefusedResubmit(store)
    w, chain = timed_out(env, resub)
    for k in range(60):  # an hour of ticks
        w.tick(T0 + 1310 + 60 * k)
    assert len(resub.calls) == 1
    assert sink.kinds() == ["incident", "note"]
    note = sink.events[1]
    assert note.text == (
        "job 88300 was not resubmitted: the cluster refused the automatic resubmit (sbatch: "
        "error: Batch job submission failed: Invalid account or account/partition "
        "combination specified), so trainbot will not try it again; fix the cause, then "
        "`/train resume auto` resumes the run.")
    assert said_in_thread(store, chain.id, note, "en") == mrkdwn_escape(note.text)
    korean = said_in_thread(store, chain.id, note, "ko")
    assert korean.startswith("작업 88300은(는) 재제출되지 않았습니다: 클러스터가 자동 "
                             "재제출을 거부")
    assert "Invalid account" in korean and "`/train resume auto`" in korean
    assert store.incidents.get(f"{CLUSTER}:88300:resubmit").state == "failed"
    assert store.chains.get(chain.id).retries_used == 0


def test_a_resubmit_failing_again_and_again_is_given_up_and_told_once(env):
    """The resubmit fails each try (an error that may not last): tried again after 1, 2, 4,
    8 minutes, not every tick; its fifth failure is its last, and the thread is told, once,
    with the last error and how to resume by hand."""
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store, fail_first=10**6)
    w, chain = timed_out(env, resub)
    tried_at = []
    for k in range(60):  # an hour of 60-s ticks
        t = T0 + 1310 + 60 * k
        before = len(resub.calls)
        w.tick(t)
        if len(resub.calls) > before:
            tried_at.append(t)
    assert [b - a for a, b in zip(tried_at, tried_at[1:], strict=False)] == [
        60, 120, 240, 480]
    assert sink.kinds() == ["incident", "note"]
    note = sink.events[1]
    assert note.text == (
        "job 88300 was not resubmitted: the automatic resubmit failed 5 times, the last with: "
        "sbatch: error: Slurm temporarily unable to accept job. trainbot stopped trying; "
        "`/train resume auto` resumes the run.")
    assert said_in_thread(store, chain.id, note, "ko") == (
        "작업 88300은(는) 재제출되지 않았습니다: 자동 재제출이 5번 실패했고, 마지막 오류는 "
        "sbatch: error: Slurm temporarily unable to accept job입니다. trainbot은 시도를 "
        "멈췄습니다. `/train resume auto`로 실행을 재개하세요.")
    assert store.incidents.get(f"{CLUSTER}:88300:resubmit").state == "failed"


ACCOUNTING_POLICY_REFUSED = (
    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job "
    "submit limit, user's size and/or time limits)\n")  # ESLURM_ACCOUNTING_POLICY's sentence


def refused_for_an_hour(env: Any, stderr: str) -> RefusedResubmit:
    """A timed-out job whose every resubmit sbatch refuses with `stderr`, watched for an hour
    of ticks: its resubmit, with the calls made."""
    store = env[0]
    resub = RefusedResubmit(store)
    resub.stderr = stderr
    w, _ = timed_out(env, resub)
    for k in range(60):
        w.tick(T0 + 1310 + 60 * k)
    return resub


def test_a_resubmit_sbatch_refuses_for_now_is_tried_again_then_given_up(env):
    """sbatch refuses for a reason that passes by itself (the user's submit limit, reached
    while other jobs run): tried again after 1, 2, 4, 8 minutes; the fifth refusal is the
    last, and the thread is told once."""
    store, slurm, sftp, sink = env
    resub = refused_for_an_hour(env, "sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
                                     + ACCOUNTING_POLICY_REFUSED)
    assert len(resub.calls) == 5
    assert sink.kinds() == ["incident", "note"]
    assert sink.events[1].text.startswith(
        "job 88300 was not resubmitted: the automatic resubmit failed 5 times, the last with: "
        "sbatch: error: QOSMaxSubmitJobPerUserLimit sbatch: error: Batch job submission "
        "failed: Job violates")


def test_a_resubmit_sbatch_refuses_over_a_size_or_time_limit_is_not_tried_again(env):
    """Slurm's one sentence for every accounting/QOS refusal names the "job submit limit" among
    others; said alone (no submit-limit reason before it) it is a size or time over a limit
    (DenyOnLimit), the same at each try: told once, not tried again."""
    store, slurm, sftp, sink = env
    resub = refused_for_an_hour(env, ACCOUNTING_POLICY_REFUSED)
    assert len(resub.calls) == 1
    assert sink.kinds() == ["incident", "note"]
    assert "the cluster refused the automatic resubmit" in sink.events[1].text
    assert "will not try it again" in sink.events[1].text


def test_crash_after_submit_before_done_does_not_submit_twice(env):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    w.tick(T0 + 1310)
    # The bot died inside the resubmit: the row says `submitting`, the attempt exists.
    key = f"{CLUSTER}:88300:resubmit"
    store.incidents.set_state(key, "submitting")
    store.attempts.record(chain_id=chain.id, job_id="90077", now=T0)
    w2 = make_watcher(store, slurm, sftp, RecordingEventSink(), resubmit=resub,
                      policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    w2.tick(T0 + 1400)
    assert resub.calls == []
    assert store.incidents.get(key).state == "done"


def test_budget_exhausted_on_auto_recipe_stops_the_chain(env):
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub, retry_budget=0)
    w.tick(T0 + 1310)
    w.tick(T0 + 1400)
    assert resub.calls == []
    assert sink.events[0].decision.kind == DecisionKind.STOP
    assert store.chains.get(chain.id).status == "stopped"


def test_live_job_with_a_growing_log_raises_nothing(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    lines = story_lines()
    w = make_watcher(store, slurm, sftp, sink)
    # 13 lines (~58 s of log time) per 60 s tick for an hour: a healthy run.
    for k in range(60):
        sftp.clock = T0 + 60 * k
        sftp.append(LOG, b"".join(lines[13 * k: 13 * (k + 1)]))
        w.tick(T0 + 60 * k + 5)
    assert sink.events == []


def _submitit_line(t: float, message: str) -> bytes:
    import time as _time

    stamp = _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(t))
    return f"submitit INFO ({stamp},000) - {message}\n".encode()


def _submitit_run_start(t: float) -> bytes:
    """submitit's first line of a run (submitit/core/submission.py, process_job): each run of
    a requeued job appends to the same log from one."""
    return _submitit_line(t, "Starting with JobEnvironment(job_id=7, hostname=node07, "
                             "local_rank=0(1), node=0(1), global_rank=0(1))")


def _faster_lines(first_iter: int, n: int, t0: float) -> bytes:
    """`_progress_lines` as a requeued job's next run on a faster node prints them (2 s/iter,
    its lines still 4.5 s apart)."""
    return b"".join(line.replace(b"4.50 s/iter", b"2.00 s/iter")
                    for line in _progress_lines(first_iter, n, t0).splitlines(keepends=True))


def _stall_told_at_114(w, sink: RecordingEventSink, now: float) -> None:
    """The tick at `now`, ten minutes after the next run's last line (iteration 114), warns
    of its stall, the line as its evidence."""
    w.tick(now)
    [warn] = sink.events
    assert warn.decision.class_id == "hang"
    assert "iter: 114/8000" in warn.diagnosis.evidence[0].text


def test_a_requeued_jobs_next_run_restarts_the_live_series_and_its_stall_is_warned(env):
    """submitit requeued the job: its next run appends to the log being followed, from its own
    start line, resuming below the iteration the first run reached. The watcher's series
    restarts at that line: the new run's progress dates its stall, although it never reached
    the first run's iteration, and its pace is its own."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 + 90
    first_run = _submitit_run_start(T0) + _progress_lines(100, 20, T0 + 1)  # to 119
    sftp.append(LOG, first_run)
    w.tick(T0 + 91)
    assert w._jobs[7].analysis.series.last_iteration == 119
    # preempted and requeued; the next run starts half an hour later, on a faster node
    sftp.clock = T0 + 1800
    sftp.append(LOG, _submitit_line(T0 + 100, "Requeued job 7 (3 remaining timeouts)")
                + _submitit_run_start(T0 + 1700) + _faster_lines(105, 10, T0 + 1750))
    w.tick(T0 + 1801)
    series = w._jobs[7].analysis.series
    assert (series.run_start, series.last_iteration) == (first_run.count(b"\n") + 2, 114)
    assert (series.samples[0].iteration, series.sec_per_iter()) == (105, 2.0)
    assert sink.events == []
    _stall_told_at_114(w, sink, T0 + 1801 + 600)


def test_after_a_restart_a_requeued_jobs_run_is_judged_from_its_own_progress(env):
    """The bot restarts while the requeued job's next run trains, below the iteration the first
    run reached: the warm-up window before the persisted offset holds the first run's last
    lines and the next run's start, not the first run's start line. The lines before that start
    are the earlier run's: the series is the next run's, and its progress is no stall."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    first_run = (_submitit_run_start(T0 - 7300) + _progress_lines(100, 200, T0 - 7200)  # to 299
                 + _submitit_line(T0 - 6200, "Requeued job 7 (3 remaining timeouts)"))
    next_run = _submitit_run_start(T0 - 600) + _progress_lines(150, 100, T0 - 550)  # to 249
    sftp.clock = T0 - 100
    sftp.append(LOG, first_run + next_run)
    make_watcher(store, slurm, sftp, RecordingEventSink()).tick(T0 - 99)
    w = make_watcher(store, slurm, sftp, sink, warmup_bytes=len(next_run) + 2000)
    w.tick(T0 - 40)
    series = w._jobs[7].analysis.series
    assert (series.run_start, series.last_iteration) == (first_run.count(b"\n") + 1, 249)
    assert sink.events == []


def test_a_requeued_job_without_a_run_start_line_is_timed_from_its_new_start(env):
    """Slurm requeued the job (no submitit: the next run writes no start line of its own) and it
    waited half an hour in the queue: its silence counts from the start squeue gives the next
    run, not from the first run's last progress, so no stall is told right after it starts
    again. Its progress, below the iteration the first run reached, is the next run's (its own
    pace), and a stall once it stops is still told."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1))  # to 119, 4.5 s/iter
    w.tick(T0 + 91)
    slurm.records[7] = JobRecord(job_id=7, state="PENDING", stdout_path=LOG, restart_count=1)
    w.tick(T0 + 400)
    slurm.records[7] = replace(running(7), start_time=T0 + 1800, restart_count=1)
    sftp.clock = T0 + 1805
    stamp = _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(T0 + 1804))
    sftp.append(LOG, f"{stamp}.000 | INFO | loading the checkpoint of iteration 105\n".encode())
    w.tick(T0 + 1830)
    assert sink.events == []  # the first run's last progress is half an hour old: no stall
    sftp.clock = T0 + 1870
    sftp.append(LOG, _faster_lines(105, 10, T0 + 1830))
    w.tick(T0 + 1871)
    series = w._jobs[7].analysis.series
    assert (series.last_iteration, series.sec_per_iter()) == (114, 2.0)
    assert sink.events == []
    _stall_told_at_114(w, sink, T0 + 1871 + 600)


def _evaluating(env: WatchEnv, advancing_minutes: int, *, restart_before: int | None,
                minutes: int = 14, redrawn: bool = True) -> Watcher:
    """Job 7's 20 training lines, then an evaluation under mmcv's ProgressBar alone: its
    count rises by 250 images a minute for `advancing_minutes`, then the bar is redrawn at
    that count each minute (it refreshes, frozen; not drawn again unless `redrawn`), read
    each minute up to `minutes`; the bot restarts (a new watcher over the same store) before
    the tick of minute `restart_before`. The watcher that reads on."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1) + mmcv_draw(0, 5000))  # 119 at T0+86.5
    w.tick(T0 + 91)
    for minute in range(1, minutes + 1):
        sftp.clock = T0 + 90 + 60 * minute
        if redrawn or minute <= advancing_minutes:
            sftp.append(LOG, mmcv_draw(250 * min(minute, advancing_minutes), 5000))
        if minute == restart_before:
            w = make_watcher(store, slurm, sftp, sink)
        w.tick(T0 + 91 + 60 * minute)
    return w


def _frozen_bar_warned(w, sink: RecordingEventSink, frozen: float, count: int) -> None:
    """Nothing warned yet, 4 minutes after the evaluation bar froze at `frozen`; the tick 6
    minutes after it (past the 5-minute threshold) warns `hang` once, the frozen draw, at
    `count` of 5,000 images, as its evidence."""
    assert sink.events == []
    w.tick(frozen + 360)
    [warn] = sink.events
    assert warn.decision.class_id == "hang"
    assert f"{count}/5000" in warn.diagnosis.evidence[0].text


def test_an_evaluation_drawn_by_a_bar_alone_is_no_stall_until_its_count_freezes(env):
    """After its last training line, the job evaluates for 15 minutes under mmcv's
    ProgressBar alone: redrawn after carriage returns, its line gets no newline, so no new line
    comes, but its count rises at every tick: no warning. Frozen at 3,750 images past the
    5-minute threshold, the stall is warned once, the bar's draw as its evidence. Once the
    line completes it is read once, as every line."""
    _, _, sftp, sink = env
    w = _evaluating(env, 15, restart_before=None, minutes=15)
    assert sink.events == []
    frozen = T0 + 90 + 60 * 15
    w.tick(frozen + 240)
    _frozen_bar_warned(w, sink, frozen, 3750)
    w.tick(frozen + 420)
    assert len(sink.events) == 1
    sftp.clock = frozen + 480
    sftp.append(LOG, mmcv_draw(5000, 5000) + b"\n" + _progress_lines(120, 2, frozen + 470))
    w.tick(frozen + 481)
    jw = w._jobs[7]
    assert jw.analysis.lines == 23 and jw.log is not None and jw.log.line_no == 23
    evaluation = jw.analysis.series.last_evaluation
    assert evaluation is not None and evaluation.line_no == 21
    assert evaluation.evaluation_batches == (5000, 5000)
    assert jw.analysis.series.last_iteration == 121


@pytest.mark.parametrize(("advancing", "restart_before"),
                         [(10, None), (10, 12), (6, None), (6, 10)],
                         ids=["no restart", "restart", "frozen after the offset, no restart",
                              "frozen after the offset, restart"])
def test_a_refreshing_bar_frozen_before_a_restart_is_warned_as_without_one(env, advancing,
                                                                          restart_before):
    """The bar's count rose 250 images a minute up to minute `advancing`, then froze: it is
    redrawn at that count every minute since. The bot restarts after the freeze: seeing the bar
    again is no activity, so the stall is warned 5 minutes after the freeze, as without a
    restart, the frozen draw as its evidence; whether the log's offset (written every 300 s:
    minutes 0, 5, 10) was last written with the frozen count (minute 10, the restart two
    minutes later) or before the bar froze (at minute 5 with 1,250 images, the bar frozen at
    minute 6: the read that finds it unchanged for 150 s, at minute 9, writes it with the
    offset; the restart follows it)."""
    _, _, _, sink = env
    w = _evaluating(env, advancing, restart_before=restart_before, minutes=advancing + 4)
    frozen = T0 + 90 + 60 * advancing  # read last 4 minutes after it
    _frozen_bar_warned(w, sink, frozen, 250 * advancing)


@pytest.mark.parametrize("redrawn", [False, True], ids=["not redrawn", "redrawn"])
def test_a_bar_frozen_right_before_a_restart_is_no_advance_at_the_restarts_read(env, redrawn):
    """The bar rose 250 images a minute up to minute 6, then froze at 1,500; the log's offset
    was last written at minute 5 with 1,250, and the bot restarts before the tick of minute
    8, two minutes after the freeze: before the read that would have found it unchanged for
    150 s (persist_every_s / 2) and written it. The restart's read finds a count the store
    did not keep, first drawn since the offset's write: it is dated at the file's mtime, its
    last write. Not redrawn since (tqdm without an update), that is the freeze: the stall is
    warned as without the restart (5 minutes after the freeze, the frozen draw as its
    evidence); before e949522d the read took the frozen bar for an advance at minute 8.
    Redrawn each minute, it is the last redraw (minute 8): warned late, never early."""
    _, _, _, sink = env
    w = _evaluating(env, 6, restart_before=8, minutes=8, redrawn=redrawn)
    frozen = T0 + 90 + 60 * 6
    assert sink.events == []
    w.tick(frozen + 240)
    assert sink.events == []
    last_write = frozen + (120 if redrawn else 0)
    w.tick(last_write + 240)
    _frozen_bar_warned(w, sink, last_write, 1500)


def test_a_bar_that_moved_on_through_a_long_downtime_is_no_stall_at_the_restarts_read(env):
    """The bar rises 250 images a minute for 20 minutes, never frozen; the bot is down from
    minute 4 to minute 14 (10 minutes, twice the stall threshold) and restarts. The restart's
    read finds a count the store did not keep, drawn last after another: the bar moved at the
    file's mtime, so no hang is warned (no stacks collected over SSH) at that read or after.
    A regression of dating every such count at the offset's last write (minute 3): warned
    `hang` at minute 14."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1) + mmcv_draw(0, 5000))
    w.tick(T0 + 91)
    for minute in range(1, 21):
        sftp.clock = T0 + 90 + 60 * minute
        sftp.append(LOG, mmcv_draw(250 * minute, 5000))
        if 4 <= minute < 14:
            continue  # the bot is down
        if minute == 14:
            w = make_watcher(store, slurm, sftp, sink)
        w.tick(T0 + 91 + 60 * minute)
        assert sink.events == [], f"minute {minute}: {[e.decision.class_id for e in sink.events]}"


def test_a_new_bar_after_a_long_quiet_downtime_is_no_stall_at_the_restarts_read(env):
    """The bot is down two hours after the job's last training line; the log is silent, then
    a new Lightning bar is drawn at 0/1,000 a minute before the restart (tqdm draws each
    count twice) and moved to 10/1,000 at the restart. The restart's read dates the bar's
    count at the file's mtime, its last write: no hang is warned (no stacks collected over
    SSH). Before, the count was dated by its first draw's share of the bytes written while
    the bot was down (three draws of four): half an hour before it was drawn, and the read
    warned `hang`."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1))
    w.tick(T0 + 91)
    sftp.clock = T0 + 90 + 7140
    sftp.append(LOG, lightning_validation_draw(0, 1000) * 2)
    sftp.clock = T0 + 90 + 7200
    sftp.append(LOG, lightning_validation_draw(10, 1000) * 2)
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 91 + 7200)
    assert sink.events == [], [e.decision.class_id for e in sink.events]


def test_a_slowly_stepping_bar_writes_its_offset_at_the_throttles_pace(env):
    """An evaluation's bar steps every 90 or 150 s, read every minute: each step's count is
    seen unchanged by the next read or two, never for persist_every_s / 2 (150 s), so it is no
    freeze: over 20 minutes the log's offset is written every persist_every_s (minutes 0, 5,
    10, 15, 20), not once per step, and no stall is warned."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    writes: list[str] = []
    put = store.tail_offsets.put

    def counted(job_id: str, path: str, **kw: Any) -> None:
        writes.append(path)
        put(job_id, path, **kw)

    store.tail_offsets.put = counted
    steps = [90 + 60 * (k % 2) for k in range(20)]  # 90, 150, 90, ... s apart
    stepped_at = [sum(steps[:k]) for k in range(len(steps))]
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1) + mmcv_draw(0, 5000))
    w.tick(T0 + 91)
    for minute in range(1, 21):
        sftp.clock = T0 + 90 + 60 * minute
        done = 250 * sum(1 for t in stepped_at if 0 < t <= 60 * minute)
        sftp.append(LOG, mmcv_draw(done, 5000))  # redrawn each minute, at its count
        w.tick(T0 + 91 + 60 * minute)
    assert writes == [LOG] * 5, writes
    bar = w._jobs[7].analysis.series.unfinished_bar
    assert bar is not None and bar.count == (2500, 5000)  # 10 steps
    assert sink.events == []


def test_a_bar_still_advancing_across_a_restart_is_no_stall(env):
    """The bot restarts during a long evaluation drawn by a bar alone, its last training
    line 12 minutes old: the bar's count moved since the one kept with the log's offset, so
    it is activity, no stall, whatever the first read after the restart saw."""
    _, _, _, sink = env
    w = _evaluating(env, 14, restart_before=12)
    w.tick(T0 + 91 + 60 * 14 + 30)
    assert sink.events == []
    assert w._jobs[7].analysis.series.last_iteration == 119


def test_the_watcher_ticks_under_a_real_apscheduler(env):
    from bot.services.leases import LeaseKeeper
    from bot.services.scheduler import JobScheduler

    store, slurm, sftp, sink = env
    w = make_watcher(store, slurm, sftp, sink)
    sched = JobScheduler(LeaseKeeper(store.leases), clock=lambda: T0)
    job = sched.run_repeating(f"watch:{CLUSTER}", w.tick, every_s=30)
    assert job.id == f"watch:{CLUSTER}" and job.coalesce and job.max_instances == 1
    w.tick = lambda now: (_ for _ in ()).throw(  # type: ignore[method-assign]
        RuntimeError("boom"))  # a broken tick ...
    job.func()  # ... is logged, not raised


class _Config:
    """The two things the watcher asks of bot.config.Config."""

    def __init__(self, **recipe) -> None:
        from types import SimpleNamespace

        base: dict[str, Any] = dict(log_path=None, sampler_path=None, job_name=None, workdir=None,
                    target_iter=8000, metric_regexes=[])
        self._recipe = SimpleNamespace(**{**base, **recipe})
        self.policy: PolicyParams | PolicyConfig = PolicyParams()

    def recipe(self, name):
        return self._recipe

    def policy_for(self, name):
        return self.policy


def test_stall_warning_corroborated_by_sampler_cpu_drop(env):
    import json as _json

    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154, name="mix", workdir="/scratch/mix")
    before, _ = _split_at_stall()
    sftp.append(LOG, b"".join(before))
    rss_path = "/scratch/mix/logs/rss-88154.jsonl"

    def sample(t, cpu):
        return (_json.dumps({"v": 1, "t": t, "rss": {"trainer": 40 << 30, "worker": 8 << 30,
                                                     "other": 0},
                             "cpu": {"trainer": cpu, "worker": 0, "other": 0},
                             "n": {"trainer": 4, "worker": 40, "other": 2}}) + "\n").encode()

    sftp.append(rss_path, b"".join(sample(T0 - 600 + 30 * k, 92.0) for k in range(21)))
    cfg = _Config(sampler_path="/scratch/mix/logs/rss-%j.jsonl")
    w = make_watcher(store, slurm, sftp, sink, config=cfg, policy=None)
    w.tick(T0)
    sftp.append(rss_path, b"".join(sample(T0 + 30 * k, 8.0) for k in range(1, 12)))
    w.tick(T0 + 360)
    assert sink.kinds() == ["warning"]
    assert "92 % → 8 %" in sink.events[0].text
    assert present(w._jobs[88154].sampler.latest).rss["worker"] == 8 << 30


def test_finished_job_with_a_big_unread_log_is_diagnosed_only_when_caught_up(env):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    data = STORY.read_bytes()
    sftp.append(LOG, data)
    slurm.records[88154] = JobRecord(job_id=88154, state="FAILED", exit_code=1, signal=0,
                                     stdout_path=LOG, start_time=T0, end_time=T0 + 100)
    w = make_watcher(store, slurm, sftp, sink, max_bytes_per_job=64 << 10)
    ticks = 0
    while not sink.events and ticks < 20:
        report = w.tick(T0 + 200 + 60 * ticks)
        assert report.bytes_read <= 64 << 10
        ticks += 1
    assert ticks == -(-len(data) // (64 << 10))  # one tick per 64 KiB, then the verdict
    assert sink.events[0].diagnosis.class_id == "nccl_timeout"
    assert sink.events[0].diagnosis.metrics.last_iter == 3470


OOM_NO_NEWLINE = (b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                  b"has a total capacity of 79.15 GiB of which 1.06 GiB is free.")


def test_a_finished_jobs_last_line_without_newline_decides_its_class_once(env):
    """The process died writing PyTorch's out-of-memory error, no newline after it. While the
    job runs that line is not read (more of it may come); once Slurm says it FAILED, the log
    read to its end, it is the log's line 21 and the incident is a CUDA OOM. The first post
    fails; the newline arriving late before the retry is no line of its own: the retry tells
    the same incident, from one line 21."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    slurm.records[7] = running(7)
    w = make_watcher(store, slurm, sftp, sink)
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1) + OOM_NO_NEWLINE)
    w.tick(T0 + 91)
    jw = w._jobs[7]
    assert sink.events == [] and jw.analysis.lines == 20
    assert jw.diagnosis is None or jw.diagnosis.class_id != "cuda_oom"
    slurm.records[7] = replace(running(7), state="FAILED", exit_code=1, signal=0,
                               end_time=T0 + 95)
    sink.fail_next = 1
    w.tick(T0 + 150)
    assert sink.events == [] and jw.analysis.lines == 21
    sftp.clock = T0 + 160
    sftp.append(LOG, b"\n")
    w.tick(T0 + 210)
    [incident] = sink.events
    assert incident.kind == "incident" and incident.diagnosis.class_id == "cuda_oom"
    assert [(e.line, e.text) for e in incident.diagnosis.evidence if "OutOfMemory" in e.text] \
        == [(21, OOM_NO_NEWLINE.decode())]
    assert jw.analysis.lines == 21 and present(jw.log).line_no == 21


def test_a_finished_logs_last_line_one_read_long_is_read_once_across_a_restart(env):
    """The process died writing PyTorch's out-of-memory error, exactly one read long (the
    watcher's max_bytes_per_job), no newline after it. The job FAILED: its log is read over
    ticks and that line is its line 21, whole. The first post fails; the bot restarts (a new
    watcher over the same store) and the newline arrives late: it is no line of its own, and
    the one incident is a CUDA OOM from one line 21."""
    store, slurm, sftp, sink = env
    add_job(store, 7)
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(100, 20, T0 + 1) + OOM_NO_NEWLINE)
    slurm.records[7] = replace(running(7), state="FAILED", exit_code=1, signal=0,
                               end_time=T0 + 95)
    budget = len(OOM_NO_NEWLINE)
    w = make_watcher(store, slurm, sftp, sink, max_bytes_per_job=budget)
    sink.fail_next = 1
    now = T0 + 100
    for _ in range(30):  # ticks further apart than the offsets are persisted
        now += 400
        w.tick(now)
        if sink.fail_next == 0:  # the incident was told, and its post failed
            break
    assert sink.events == [] and w._jobs[7].analysis.lines == 21
    w = make_watcher(store, slurm, sftp, sink, max_bytes_per_job=budget)  # the bot restarted
    sftp.clock = now + 10
    sftp.append(LOG, b"\n")
    sink.fail_next = 1
    w.tick(now + 400)
    jw = w._jobs[7]
    assert jw.analysis.lines == 21 and present(jw.log).line_no == 21
    w.tick(now + 800)
    [incident] = sink.events
    assert incident.kind == "incident" and incident.diagnosis.class_id == "cuda_oom"
    assert [(e.line, e.text) for e in incident.diagnosis.evidence if "OutOfMemory" in e.text] \
        == [(21, OOM_NO_NEWLINE.decode())]


def test_a_log_read_whose_channel_closed_is_retried_next_tick_not_judged(env, caplog):
    """The batched read's channel closed before its end (ChannelClosed from the runner's
    exchange): the finished job is neither diagnosed on what was read nor dropped; the next
    tick reads its log and gives the verdict."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    slurm.records[88154] = JobRecord(job_id=88154, state="FAILED", exit_code=1, signal=0,
                                     stdout_path=LOG, start_time=T0, end_time=T0 + 100)
    read = sftp.read

    def closed_under_it(requests):
        raise ChannelClosed(["/bin/sh", "-c", "..."], "login1", connection_lost=False)

    sftp.read = closed_under_it
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0 + 200)
    assert sink.events == [] and store.watched_jobs.get(CLUSTER, "88154") is not None
    assert "the batched read of the files of 1 job failed" in caplog.text
    sftp.read = read
    w.tick(T0 + 260)
    assert sink.events[0].diagnosis.class_id == "nccl_timeout"


def test_leak_seen_by_the_sampler_when_the_log_prints_no_rss(env):
    import json as _json
    import time as _time

    store, slurm, sftp, sink = env
    add_job(store, 88016)
    slurm.records[88016] = JobRecord(job_id=88016, state="RUNNING", stdout_path=LOG,
                                     start_time=T0, mem_limit_bytes=100 << 30, name="mix",
                                     workdir="/scratch/mix")
    log_lines = []
    for k in range(161):  # no RSS on these lines
        stamp = _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(T0 - 720 + 4.5 * k))
        log_lines.append(f"{stamp}.000 | INFO | iter: {64 + k}/8000 | loss: 0.9 | 4.50 s/iter\n")
    sftp.append(LOG, "".join(log_lines).encode())
    rss = "".join(_json.dumps({"v": 1, "t": T0 - 720 + 4.5 * k,
                               "rss": {"trainer": 60 << 30,
                                       "worker": int((1.9 + 7.3 * k / 160) * (1 << 30)),
                                       "other": 0},
                               "cpu": {"trainer": 90, "worker": 40, "other": 0},
                               "n": {"trainer": 4, "worker": 40, "other": 2}}) + "\n"
                  for k in range(0, 161, 8))
    sftp.append("/scratch/mix/logs/rss-88016.jsonl", rss.encode())
    cfg = _Config(sampler_path="/scratch/mix/logs/rss-%j.jsonl")
    w = make_watcher(store, slurm, sftp, sink, config=cfg, policy=None)
    w.tick(T0 + 5)
    [warn] = sink.events
    assert warn.decision.class_id == "memory_leak"
    assert warn.decision.projected_oom_iter is not None
    assert "DataLoader workers grew 2.3 → 8.8 GiB" in warn.text  # medians of 3 samples
    w.tick(T0 + 65)
    assert len(sink.events) == 1  # once per chain


def _rss_sample(t: float, trainer_gib: int) -> bytes:
    """One line of the job-side sampler (bot.probes.sampler), without its newline."""
    import json as _json

    return _json.dumps({"v": 1, "t": t, "rss": {"trainer": trainer_gib << 30, "worker": 0,
                                                "other": 0},
                        "cpu": {"trainer": 90, "worker": 0, "other": 0},
                        "n": {"trainer": 1, "worker": 0, "other": 1}},
                       separators=(",", ":")).encode()


def test_an_oom_killed_jobs_last_sample_without_newline_reaches_its_incident_once(env):
    """The sampler was killed writing its last sample (98 GiB, just before the OOM kill):
    the line has no newline. While the job runs it is not read (more of it may come); the
    bot restarts (a new watcher over the same store); once Slurm says OUT_OF_MEMORY, it is
    the sampler file's last line: the incident's samples, its RSS chart, end at 98 GiB. The
    first post fails; the newline arriving late before the retry is no sample of its own."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154, name="mix", workdir="/scratch/mix")
    cfg = _Config(sampler_path="/scratch/mix/logs/rss-%j.jsonl")
    sftp.clock = T0 + 90
    sftp.append(LOG, _progress_lines(1, 20, T0 + 1))
    sftp.append(RSS_PATH, b"".join(_rss_sample(T0 + 10 * k, 60 + 4 * k) + b"\n"
                                   for k in range(9)) + _rss_sample(T0 + 90, 98))
    w = make_watcher(store, slurm, sftp, sink, config=cfg, policy=None)
    w.tick(T0 + 91)
    assert present(w._jobs[88154].sampler.latest).rss["trainer"] == 92 << 30
    w = make_watcher(store, slurm, sftp, sink, config=cfg, policy=None)  # the bot restarted
    slurm.records[88154] = replace(running(88154, name="mix", workdir="/scratch/mix"),
                                   state="OUT_OF_MEMORY", exit_code=0, signal=9,
                                   end_time=T0 + 95)
    sink.fail_next = 1
    w.tick(T0 + 150)
    assert "incident" not in sink.kinds()
    jw = w._jobs[88154]
    assert present(jw.sampler.latest).rss["trainer"] == 98 << 30  # read with no newline
    sftp.clock = T0 + 160
    sftp.append(RSS_PATH, b"\n")
    w.tick(T0 + 210)
    [incident] = [e for e in sink.events if e.kind == "incident"]
    samples = present(incident.sampler)
    assert [p.rss["trainer"] >> 30 for p in samples.points] == [*range(60, 96, 4), 98]
    assert samples.bad_lines == 0 and present(jw.sampler_tail).line_no == 10


def test_one_broken_job_does_not_starve_the_others(env, monkeypatch):
    store, slurm, sftp, sink = env
    add_job(store, 1)
    add_job(store, 108687, recipe="launcher")
    slurm.records[1] = running(1)
    sftp.append(LOG, b"x\n")
    silent = "/scratch/launcher.out"
    sftp.append(silent, b"[launcher] starting\n")
    slurm.records[108687] = JobRecord(job_id=108687, state="COMPLETED", exit_code=0, signal=0,
                                      elapsed_s=10, stdout_path=silent, start_time=T0,
                                      end_time=T0 + 10)
    w = make_watcher(store, slurm, sftp, sink)
    real = w._running

    def broken(jw, *a, **k):
        if jw.job_id == 1:
            raise ZeroDivisionError("a bug while judging job 1")
        return real(jw, *a, **k)

    monkeypatch.setattr(w, "_running", broken)
    w.tick(T0 + 30)
    assert [e.job_id for e in sink.events] == ["108687"]
    # The finished job's state is dropped from memory once it has left the watch list.
    w.tick(T0 + 90)
    assert set(w._jobs) == {1} and set(w.last_known) == {1}


# ------------------------------------------------------------------ memory from sstat


def _progress_lines(first_iter: int, n: int, t0: float, rss: bool = False) -> bytes:
    import time as _time

    out = []
    for k in range(n):
        stamp = _time.strftime("%Y-%m-%d %H:%M:%S", _time.gmtime(t0 + 4.5 * k))
        extra = " | rss: 40.0 GiB" if rss else ""
        out.append(f"{stamp}.000 | INFO | iter: {first_iter + k}/8000 | loss: 0.9 | "
                   f"4.50 s/iter{extra}\n")
    return "".join(out).encode()


@pytest.fixture
def sstat_env(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, sink = SstatSlurm(), FakeSFTP(), RecordingEventSink()
    yield store, slurm, sftp, sink
    store.close()


def test_leak_warned_from_sstat_rss_when_the_log_prints_none(sstat_env):
    """No RSS in the log, no sampler: sstat's MaxRSS (growing 0.5 GiB per 20 iterations)
    becomes the series the leak detector fits, and the warning says where it came from."""
    store, slurm, sftp, sink = sstat_env
    add_job(store, 88016)
    slurm.records[88016] = JobRecord(job_id=88016, state="RUNNING", stdout_path=LOG,
                                     start_time=T0, mem_limit_bytes=100 << 30)
    w = make_watcher(store, slurm, sftp, sink, config=_Config(), policy=None, judge_every_s=0)
    for tick in range(10):
        sftp.clock = T0 + 90 * tick
        sftp.append(LOG, _progress_lines(100 + 20 * tick, 20, T0 + 90 * tick - 90))
        slurm.rss[88016] = (40 << 30) + tick * (1 << 29)
        report = w.tick(T0 + 90 * tick + 1)
        assert report.slurm_calls == 2  # one jobs() (squeue + sacct), one memory() (sstat)
    assert slurm.acted("memory") == [[88016]] * 10
    series = w._jobs[88016].analysis.series
    points = series.rss_points()
    assert [p.iteration for p in points] == [119 + 20 * k for k in range(10)]
    assert points[-1].host_rss_bytes == (40 << 30) + 9 * (1 << 29)
    assert all(p.time is None for p in points)  # no fake progress on the time axis
    assert not series.log_rss_seen
    [warn] = sink.events
    assert warn.decision.class_id == "memory_leak"
    assert warn.decision.projected_oom_iter is not None
    assert "RSS from sstat (MaxRSS of step batch)" in warn.text


def test_no_sstat_once_the_log_prints_rss(sstat_env):
    store, slurm, sftp, sink = sstat_env
    add_job(store, 7)
    slurm.records[7] = running(7)
    slurm.rss[7] = 99 << 30
    sftp.append(LOG, _progress_lines(100, 20, T0 - 90, rss=True))
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0)  # a job seen for the first time: asked, but the log's own RSS wins
    series = w._jobs[7].analysis.series
    assert series.log_rss_seen and series.external_rss_source is None
    assert {p.host_rss_bytes for p in series.rss_points()} == {40 << 30}
    sftp.append(LOG, _progress_lines(120, 20, T0))
    report = w.tick(T0 + 90)
    assert slurm.acted("memory") == [[7]]  # not asked again
    assert report.slurm_calls == 1


def test_no_sstat_when_the_sampler_writes(sstat_env):
    import json as _json

    store, slurm, sftp, sink = sstat_env
    add_job(store, 88154)
    slurm.records[88154] = running(88154, name="mix", workdir="/scratch/mix")
    slurm.rss[88154] = 50 << 30
    sftp.append(LOG, _progress_lines(100, 20, T0 - 90))
    sftp.append("/scratch/mix/logs/rss-88154.jsonl", (_json.dumps(
        {"v": 1, "t": T0 - 10, "rss": {"trainer": 40 << 30, "worker": 8 << 30, "other": 0},
         "cpu": {"trainer": 90, "worker": 10, "other": 0},
         "n": {"trainer": 4, "worker": 40, "other": 2}}) + "\n").encode())
    w = make_watcher(store, slurm, sftp, sink,
                     config=_Config(sampler_path="/scratch/mix/logs/rss-%j.jsonl"), policy=None)
    w.tick(T0)
    assert w._jobs[88154].analysis.series.rss_points() == []  # the sampler is the source
    w.tick(T0 + 90)
    assert slurm.acted("memory") == [[88154]]


def test_one_sstat_call_for_all_running_jobs_and_none_for_pending(sstat_env):
    store, slurm, sftp, sink = sstat_env
    for i in range(20):
        add_job(store, 3000 + i)
        slurm.records[3000 + i] = running(3000 + i)
        slurm.rss[3000 + i] = 10 << 30
    for i in range(5):
        add_job(store, 4000 + i)
        slurm.records[4000 + i] = JobRecord(job_id=4000 + i, state="PENDING", reason="Priority")
    sftp.append(LOG, _progress_lines(100, 5, T0 - 30))
    w = make_watcher(store, slurm, sftp, sink)
    report = w.tick(T0)
    assert report.slurm_calls == 2 and len(slurm.acted("jobs")) == 1
    assert slurm.acted("memory") == [list(range(3000, 3020))]
    for i in range(5):
        slurm.records[3000 + i] = JobRecord(job_id=3000 + i, state="PENDING", reason="Priority")
    w.tick(T0 + 60)
    assert slurm.acted("memory")[-1] == list(range(3005, 3020))


def test_failed_sstat_costs_only_the_samples(sstat_env):
    store, slurm, sftp, sink = sstat_env
    add_job(store, 7)
    slurm.records[7] = running(7)
    slurm.memory_error = ClusterUnavailable("sstat: couldn't get steps for job 7")
    sftp.append(LOG, _progress_lines(100, 20, T0 - 90))
    w = make_watcher(store, slurm, sftp, sink)
    for i in range(4):  # more than unreachable_ticks: still no "cluster unreachable"
        report = w.tick(T0 + 60 * i)
        assert report.ok
    assert sink.events == []
    assert w._jobs[7].analysis.series.last_iteration == 119  # the log was still read
    assert w._jobs[7].analysis.series.rss_points() == []


@pytest.mark.parametrize("kind", [None, "resubmit_later"])
def test_a_due_resubmit_whose_stored_decision_is_unreadable_asks_a_person(env, kind):
    """Fail closed: a resubmit row whose decision has no kind, or one this version does not
    know, is never carried out; the thread says so and the row is not looked at again."""
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    w, chain = timed_out(env, resub)
    w.tick(T0 + 1310)
    key = f"{CLUSTER}:88300:resubmit"
    row = store.incidents.get(key)
    stored = dict(row.diagnosis)
    decision = {k: v for k, v in stored["decision"].items() if k != "kind"}
    if kind is not None:
        decision["kind"] = kind
    with store.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM incidents WHERE key = ?", (key,))
    store.incidents.record(key, class_id=row.class_id, now=T0 + 1310, chain_id=chain.id,
                           job_id="88300", state="due",
                           diagnosis={**stored, "decision": decision})
    w.tick(T0 + 1380)
    w.tick(T0 + 1440)
    assert resub.calls == []
    assert store.chains.get(chain.id).retries_used == 0
    assert sink.kinds() == ["incident", "note"]
    note = sink.events[1]
    assert note.decision.kind is DecisionKind.ASK_HUMAN
    assert "did not resubmit" in note.text and "/train resume auto" in note.text
    assert store.incidents.get(key).state == "asked"
    # the thread shows that text alone, not the stored decision's sentence ("… is retryable:
    # resubmitting …"), while the decision passed along keeps its facts whole
    assert note.decision.facts["why"] == "retryable"
    ctx = make_context(store, slurm, sftp=sftp)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "auto")
    ThreadEvents(ctx).publish(note)
    [said] = [text for kind, _, k, text in recorded(ctx).posts if k == f"{key}:ask"]
    assert said == mrkdwn_escape(note.text)
    assert "retryable" not in said and "resubmitting" not in said
    assert said_in_thread(store, chain.id, note, "ko") == (
        f"작업 88300: trainbot이 재제출 결정을 다시 읽지 못해(저장된 종류 `{kind}`) 재제출하지 "
        "않았습니다. 사람이 결정해 주세요: `/train resume auto`로 실행을 재개합니다.")


def _leak_with_failed_posts(sstat_env, fails: int) -> tuple[list[Any], list[Any]]:
    """Job 88016 leaking (sstat RSS +0.5 GiB per 20 iterations, not a perfect line, so its
    projected OOM iteration moves from tick to tick) for 12 ticks, the first `fails` tries to
    post its leak warning failing (Slack down, while it runs), then ending FAILED: (the leak
    warnings tried, the leak events posted)."""
    store, slurm, sftp, sink = sstat_env
    tried: list[Any] = []
    publish = sink.publish

    def failing(event: Any) -> None:
        if "memory_leak" in event.key:
            tried.append(event)
            if event.kind == "warning" and len(tried) <= fails:
                raise RuntimeError("slack is down")
        publish(event)

    sink.publish = failing
    add_job(store, 88016)
    slurm.records[88016] = JobRecord(job_id=88016, state="RUNNING", stdout_path=LOG,
                                     start_time=T0, mem_limit_bytes=100 << 30)
    w = make_watcher(store, slurm, sftp, sink, config=_Config(), policy=None, judge_every_s=0)
    for tick in range(12):
        sftp.clock = T0 + 90 * tick
        sftp.append(LOG, _progress_lines(100 + 20 * tick, 20, T0 + 90 * tick - 90))
        slurm.rss[88016] = (40 << 30) + tick * (1 << 29) + (tick % 3) * (1 << 26)
        w.tick(T0 + 90 * tick + 1)
    slurm.records[88016] = replace(slurm.records[88016], state="FAILED", exit_code=1,
                                   end_time=T0 + 90 * 12)
    w.tick(T0 + 90 * 13)
    return tried, [e for e in sink.events if "memory_leak" in e.key]


def test_a_leak_warning_whose_post_failed_is_warned_once(sstat_env):
    """The leak warning's first post fails; the next tick's projection has moved. It is tried
    again under its key, saying the newest projection, and posts: one leak warning, not a
    second at the job's end (the failed one published as a note by flush_warnings)."""
    tried, posted = _leak_with_failed_posts(sstat_env, fails=1)
    assert tried[0].decision.projected_oom_iter != tried[1].decision.projected_oom_iter
    assert len({e.key for e in tried}) == 1
    [warning] = posted
    assert warning.kind == "warning" and warning is tried[1]


def test_a_leak_warning_never_posted_while_running_is_one_note_with_the_newest_projection(
        sstat_env):
    """Every try while the job runs fails: its end publishes the warning once, as a note,
    saying what the last try said (the row kept the newest projection)."""
    store = sstat_env[0]
    tried, posted = _leak_with_failed_posts(sstat_env, fails=10**6)
    assert len(tried) > 2 and len({e.key for e in tried[:-1]}) == 1
    [note] = posted
    assert note.kind == "note" and note.key == tried[0].key and note.text == tried[-2].text
    assert store.incidents.get(note.key).diagnosis["projected_oom_iter"] == \
        tried[-2].decision.projected_oom_iter


@pytest.mark.parametrize(("policy", "warned"), [
    ({}, True),  # default headroom 10 %: 216 GiB is reached before iteration 8000
    ({"leak_warn_margin": 0.0}, False),  # the 240 GiB limit itself only after it (~8119)
    ({"leak_min_samples": 11}, False),  # ten sstat samples are not enough
])
def test_the_recipe_policy_sets_the_leak_headroom_and_samples(sstat_env, policy, warned):
    """policy.leak_warn_margin and policy.leak_min_samples reach the leak detector."""
    from bot.config import PolicyConfig

    store, slurm, sftp, sink = sstat_env
    add_job(store, 88016)
    slurm.records[88016] = JobRecord(job_id=88016, state="RUNNING", stdout_path=LOG,
                                     start_time=T0, mem_limit_bytes=240 << 30)
    config = _Config()
    config.policy = PolicyConfig(**policy)
    w = make_watcher(store, slurm, sftp, sink, config=config, policy=None, judge_every_s=0)
    for tick in range(10):  # RSS 40 GiB + 0.5 GiB per 20 iterations
        sftp.clock = T0 + 90 * tick
        sftp.append(LOG, _progress_lines(100 + 20 * tick, 20, T0 + 90 * tick - 90))
        slurm.rss[88016] = (40 << 30) + tick * (1 << 29)
        w.tick(T0 + 90 * tick + 1)
    leaks = [e for e in sink.events if e.decision and e.decision.class_id == "memory_leak"]
    assert len(leaks) == (1 if warned else 0)
    if warned:
        assert leaks[0].decision.projected_oom_iter > 8000  # where the limit itself is crossed


def test_tick_report_says_what_the_tick_cost_and_is_logged(env, caplog):
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:50]))
    ticks = iter([100.0, 100.25, 200.0, 200.5])
    w = make_watcher(store, slurm, sftp, sink, clock=lambda: next(ticks))
    with caplog.at_level("INFO", logger="bot.services.watch.tick"):
        report = w.tick(T0)
    assert (report.cluster, report.wall_s) == (CLUSTER, 0.25)
    assert report.round_trips == 2 + report.read_round_trips  # squeue + sacct, then the reads
    assert report.read_round_trips >= 1 and report.bytes_moved >= report.bytes_read > 0
    assert any("dev: tick 0.250 s" in r.getMessage() and "round trips" in r.getMessage()
               for r in caplog.records)
    slurm.down = True
    failed = w.tick(T0 + 60)
    assert (failed.ok, failed.wall_s, failed.read_round_trips) == (False, 0.5, 0)


# ------------------------------------------------------- a log or sampler file that cannot be read


def _unreadable(sftp: FakeSFTP, path: str = LOG) -> None:
    """The login node answers for `path`, but reading it fails (as a file chmod 000 does:
    stat answers, dd's redirection fails); every other file reads as before."""
    read = sftp.read

    def failing(requests):
        batch = read(requests)
        return replace(batch, results=[
            FileRead(FAILED, error=N_("reading it failed on the login node (dd exit %(code)s)",
                                      code=1)) if req.path == path else got
            for req, got in zip(requests, batch.results, strict=True)])

    sftp.read = failing  # type: ignore[method-assign]
    sftp.readable = read  # type: ignore[attr-defined]


def _ended(slurm: FakeSlurm) -> None:
    slurm.records[88154] = JobRecord(job_id=88154, state="FAILED", exit_code=1, signal=0,
                                     stdout_path=LOG, start_time=T0, end_time=T0 + 100)


def test_a_finished_job_whose_log_stays_unreadable_is_judged_from_accounting_and_says_why(env):
    """The log of a job that ended cannot be read (permission denied): it is read again each
    tick for unreadable_file_s, then the job is judged without it, once, from Slurm's
    accounting, and its incident names the log and the reader's reason."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    _ended(slurm)
    _unreadable(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    for t in (200, 260, 500, 799):
        w.tick(T0 + t)
    assert sink.events == [] and store.watched_jobs.get(CLUSTER, "88154") is not None
    w.tick(T0 + 800)  # 600 s after its first failed read
    [incident] = sink.events
    assert incident.kind == "incident" and incident.key == f"{CLUSTER}:88154:final"
    assert incident.diagnosis.class_id == "unknown_failure"  # exit 1, no log line to go by
    assert incident.diagnosis.metrics.last_iter is None
    assert incident.facts["log_path"] == LOG
    assert str(incident.facts["log_unreadable"]) == \
        "reading it failed on the login node (dd exit 1)"
    said = f" Its log {LOG} could not be read (reading it failed on the login node (dd exit " \
        "1)), so it was judged from Slurm's accounting alone."
    assert head_line(incident).endswith(said) and said not in incident.text  # said once
    assert store.watched_jobs.get(CLUSTER, "88154") is None
    w.tick(T0 + 860)
    assert len(sink.events) == 1  # once


def _said(caplog, job: str = "88154") -> list[str]:
    """What the watcher logged of job `job`'s files, in order."""
    return [r.getMessage() for r in caplog.records
            if f"job {job}" in r.getMessage() and any(
                said in r.getMessage() for said in ("files", "cannot read", "cannot be read",
                                                    "could not be read", "read again"))]


def test_the_wait_for_an_unreadable_log_is_logged_when_it_starts_and_ends_not_each_tick(
        env, caplog):
    """A finished job whose log cannot be read: the watcher's log says so once when the wait
    starts and once when the job is judged without it, not on each of the ticks between."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    _ended(slurm)
    _unreadable(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    with caplog.at_level("INFO", logger="bot.services.watch"):
        for t in (200, 260, 320, 500, 799, 800):
            w.tick(T0 + t)
    assert _said(caplog) == [
        f"dev: job 88154 ended and its files cannot be read: {LOG}: reading it failed on the "
        "login node (dd exit 1); read again each tick for 600 s, then judged without them",
        f"dev: job 88154: judged without its files, unread for 600 s: {LOG}: reading it failed "
        "on the login node (dd exit 1)"]
    assert [e.kind for e in sink.events] == ["incident"]


def test_a_log_read_again_ends_the_logged_wait_once(env, caplog):
    """The log of a finished job is missing for a few ticks, then appears: the wait is logged
    when it starts and when the log reads again."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    _ended(slurm)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    with caplog.at_level("INFO", logger="bot.services.watch"):
        for t in (200, 260, 320):
            w.tick(T0 + t)
        sftp.append(LOG, STORY.read_bytes())
        w.tick(T0 + 380)
    assert _said(caplog) == [
        f"dev: job 88154 ended and its files cannot be read: {LOG}: no such file; read again "
        "each tick for 600 s, then judged without them",
        "dev: job 88154: its files read again after 180 s"]
    assert [e.diagnosis.class_id for e in sink.events] == ["nccl_timeout"]


def test_a_running_jobs_unreadable_log_is_logged_when_it_starts_and_ends_not_each_tick(
        env, caplog):
    """The log of a running job cannot be read for a few ticks (chmod 000), then reads again:
    the watcher's log says so once when it starts and once when it reads again, with how long
    it was unread, not on each tick between."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:100]))
    w = make_watcher(store, slurm, sftp, sink)
    w.tick(T0)
    read = sftp.read
    _unreadable(sftp)
    with caplog.at_level("INFO", logger="bot.services.watch"):
        for t in (60, 120, 180, 240):
            w.tick(T0 + t)
        sftp.read = read
        w.tick(T0 + 300)
        w.tick(T0 + 360)
    assert _said(caplog) == [
        f"dev: job 88154: its log cannot be read: {LOG}: reading it failed on the login node "
        "(dd exit 1); read again each tick",
        f"dev: job 88154: its log {LOG} read again after 240 s"]
    assert store.watched_jobs.get(CLUSTER, "88154") is not None  # still watched


def _running_with_its_log_unreadable(env):
    """Job 88154 running; its log read once, then unreadable (chmod 000) at T0 + 60 and
    T0 + 120: the watcher and the function that makes the log readable again."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:100]))
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0)
    read = sftp.read
    _unreadable(sftp)
    for t in (60, 120):
        w.tick(T0 + t)

    def readable() -> None:
        sftp.read = read
    return w, readable


UNREADABLE = (f"dev: job 88154: its log cannot be read: {LOG}: reading it failed on the login "
              "node (dd exit 1); read again each tick")


def test_a_running_job_that_ends_while_its_log_is_unreadable_logs_it_once(env, caplog):
    """The job ends while its log still cannot be read: the watcher's log says so once, with
    how long it was unread, then the ended job's wait (its start, its end when the log reads
    again), and nothing of the running job's file again."""
    store, slurm, sftp, sink = env
    with caplog.at_level("INFO", logger="bot.services.watch"):
        w, readable = _running_with_its_log_unreadable(env)
        _ended(slurm)
        w.tick(T0 + 180)
        w.tick(T0 + 240)
        readable()
        w.tick(T0 + 300)
    assert _said(caplog) == [
        UNREADABLE,
        f"dev: job 88154 ended while its log {LOG} could not be read (unread for 120 s)",
        f"dev: job 88154 ended and its files cannot be read: {LOG}: reading it failed on the "
        "login node (dd exit 1); read again each tick for 600 s, then judged without them",
        "dev: job 88154: its files read again after 120 s"]
    assert [e.kind for e in sink.events] == ["incident"]


def test_a_running_jobs_log_that_reads_again_as_the_job_ends_is_logged_read_again(
        env, caplog):
    store, slurm, sftp, sink = env
    with caplog.at_level("INFO", logger="bot.services.watch"):
        w, readable = _running_with_its_log_unreadable(env)
        _ended(slurm)
        readable()
        w.tick(T0 + 180)
        w.tick(T0 + 240)
    assert _said(caplog) == [
        UNREADABLE, f"dev: job 88154: its log {LOG} read again after 120 s, the job ended"]
    assert [e.kind for e in sink.events] == ["incident"]


def test_a_running_job_no_longer_watched_while_its_log_is_unreadable_logs_it_once(
        env, caplog):
    store, slurm, sftp, sink = env
    with caplog.at_level("INFO", logger="bot.services.watch"):
        w, _readable = _running_with_its_log_unreadable(env)
        store.watched_jobs.remove(CLUSTER, "88154")  # /train unwatch
        w.tick(T0 + 180)
        store.watched_jobs.add(CLUSTER, "88154", now=T0 + 200)  # watched again: a new memory
        w.tick(T0 + 240)
    assert _said(caplog) == [
        UNREADABLE,
        f"dev: job 88154 is no longer watched; its log {LOG} could not be read for the last "
        "120 s",
        UNREADABLE]


def test_judged_without_its_files_is_logged_once_while_the_incidents_post_is_retried(
        env, caplog):
    """A finished job judged without its unreadable log whose incident fails to post (Slack
    down) and is posted a tick later: the watcher's log says it was judged without its files
    once, not again on the retry."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    _ended(slurm)
    _unreadable(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    with caplog.at_level("INFO", logger="bot.services.watch"):
        w.tick(T0 + 200)
        sink.fail_next = 2  # the first two posts of the incident fail
        for t in (800, 860, 920):
            w.tick(T0 + t)
    assert [s for s in _said(caplog) if ": judged without" in s] == [
        f"dev: job 88154: judged without its files, unread for 600 s: {LOG}: reading it failed "
        "on the login node (dd exit 1)"]
    assert [e.kind for e in sink.events] == ["incident"]
    assert store.watched_jobs.get(CLUSTER, "88154") is None


def test_a_tick_whose_read_fails_as_a_whole_does_not_start_the_wait_over(env):
    """The connection drops during a tick while the watcher waits for a finished job's
    missing log: that tick read nothing, so the wait goes on from its first failure, and the
    job is judged unreadable_file_s after it."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    _ended(slurm)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 200)
    read = sftp.read

    def dropped(requests):
        raise OSError("Socket is closed")

    sftp.read = dropped
    w.tick(T0 + 500)
    sftp.read = read
    assert store.watched_jobs.get(CLUSTER, "88154").unreadable_since == T0 + 200
    w.tick(T0 + 799)
    assert sink.events == []
    w.tick(T0 + 800)
    assert [e.facts.get("log_missing") for e in sink.events] == [True]


def test_a_log_readable_again_within_the_bound_gives_the_usual_incident(env):
    """A log that fails to read for a while after the job ended (NFS catching up) and reads
    within unreadable_file_s: the job is judged from its log, as if it had read at once."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    _ended(slurm)
    _unreadable(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 200)
    w.tick(T0 + 700)
    assert sink.events == []
    sftp.read = sftp.readable
    w.tick(T0 + 799)
    [incident] = sink.events
    assert incident.diagnosis.class_id == "nccl_timeout"
    assert incident.diagnosis.metrics.last_iter == 3470
    assert "log_unreadable" not in incident.facts \
        and "could not be read" not in head_line(incident)


def test_a_running_jobs_unreadable_log_starts_no_wait(env):
    """A running job's log that cannot be read is only read again: its time unreadable while
    it ran does not count, the wait starts when it has ended."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    slurm.records[88154] = running(88154)
    _unreadable(sftp)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    for t in range(0, 1200, 300):
        w.tick(T0 + t)
    _ended(slurm)
    w.tick(T0 + 1200)
    w.tick(T0 + 1799)
    assert sink.events == [] and store.watched_jobs.get(CLUSTER, "88154") is not None
    w.tick(T0 + 1800)
    assert [e.facts.get("log_path") for e in sink.events] == [LOG]


def test_a_finished_job_whose_sampler_file_stays_unreadable_is_judged_without_its_samples(env):
    """The sampler file of a job that ended cannot be read, its log can: it is read again each
    tick for unreadable_file_s, then the job is judged from its log, once, its incident
    without the samples (no RSS chart) and saying nothing of a log that could not be read."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())
    rss_path = "/scratch/mix/logs/rss-88154.jsonl"
    sftp.append(rss_path, b'{"v": 1, "t": 0, "rss": {"trainer": 1}}\n')
    _ended(slurm)
    _unreadable(sftp, rss_path)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600, policy=None,
                     config=_Config(sampler_path="/scratch/mix/logs/rss-%j.jsonl"))
    for t in (200, 260, 500, 799):
        w.tick(T0 + t)
    assert sink.events == [] and store.watched_jobs.get(CLUSTER, "88154") is not None
    w.tick(T0 + 800)  # 600 s after its first failed read
    [incident] = sink.events
    assert incident.kind == "incident" and incident.key == f"{CLUSTER}:88154:final"
    assert incident.diagnosis.class_id == "nccl_timeout"  # judged from its log
    assert incident.diagnosis.metrics.last_iter == 3470
    assert incident.sampler is None
    assert "log_unreadable" not in incident.facts \
        and "could not be read" not in head_line(incident)
    assert store.watched_jobs.get(CLUSTER, "88154") is None
    w.tick(T0 + 860)
    assert len(sink.events) == 1  # once


def test_a_finished_job_whose_log_does_not_exist_is_judged_from_accounting_and_says_so(env):
    """A job that ran and ended, whose log is not there (deleted, a wrong --output path, a
    node-local one): it is asked for again each tick for unreadable_file_s (a log late on NFS
    may appear), then the job is judged from Slurm's accounting, once, and its incident says
    the log did not exist."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    _ended(slurm)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    for t in (200, 260, 500, 799):
        w.tick(T0 + t)
    assert sink.events == [] and store.watched_jobs.get(CLUSTER, "88154") is not None
    w.tick(T0 + 800)  # 600 s after it was first found missing
    [incident] = sink.events
    assert incident.kind == "incident" and incident.key == f"{CLUSTER}:88154:final"
    assert incident.diagnosis.class_id == "unknown_failure"  # exit 1, no log line to go by
    assert incident.facts == {"log_path": LOG, "log_missing": True}
    said = f" Its log {LOG} did not exist, so it was judged from Slurm's accounting alone."
    assert head_line(incident).endswith(said) and said not in incident.text  # said once
    assert store.watched_jobs.get(CLUSTER, "88154") is None
    w.tick(T0 + 860)
    assert len(sink.events) == 1  # once


def test_a_log_that_appears_within_the_bound_gives_the_usual_incident(env):
    """The log of a job that ended is not there yet (NFS late) and appears within
    unreadable_file_s: the job is judged from it, and nothing says it was missing."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    _ended(slurm)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 200)
    w.tick(T0 + 700)
    assert sink.events == []
    sftp.append(LOG, STORY.read_bytes())
    w.tick(T0 + 760)
    [incident] = sink.events
    assert incident.diagnosis.class_id == "nccl_timeout"
    assert "log_missing" not in incident.facts and "did not exist" not in head_line(incident)


def test_a_log_removed_after_the_job_ended_is_judged_from_what_was_read_while_it_ran(env):
    """A job's log read while it ran, then removed once it ended: after unreadable_file_s it
    is judged from what was read of it (not from an empty log started over) and Slurm's
    accounting, and the incident says the log did not exist."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:500]))
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 100)
    del sftp.files[LOG]
    _ended(slurm)
    w.tick(T0 + 200)
    w.tick(T0 + 799)
    assert sink.events == []
    w.tick(T0 + 800)
    [incident] = sink.events
    assert incident.diagnosis.metrics.last_iter == 1498
    assert incident.facts["log_missing"] is True


@pytest.mark.parametrize(("state", "start", "class_id"), [
    # Slurm 22.05: scancel of a pending job: Start = End, Elapsed 0
    ("CANCELLED", T0 + 100, "unknown_failure"),
    ("CANCELLED", None, "unknown_failure"),
    ("DEADLINE", None, "time_limit"),  # a class the recipe would resubmit by itself
])
def test_a_job_that_never_started_is_judged_at_once_and_says_it_never_started(
        env, state, start, class_id):
    """A job that ended while it waited in the queue (cancelled while pending: sacct gives it
    its end as its start time, no node, no time elapsed) wrote no log: it is judged at once,
    no file read (a log at its path, as `%x.out` leaves, is another job's), from accounting
    alone: its diagnosis says it never started (who cancelled it, why it was pending), its
    State's class, and a person is offered to submit it again; nothing is resubmitted by
    itself, not even a DEADLINE's time limit, and nothing says its log did not exist."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, STORY.read_bytes())  # an earlier job's log at the same path
    slurm.records[88154] = JobRecord(job_id=88154, state=state, exit_code=0, signal=0,
                                     stdout_path=LOG, start_time=start, end_time=T0 + 100,
                                     elapsed_s=0 if start else None, reason="BeginTime",
                                     cancelled_by=1000 if state == "CANCELLED" else None)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600,
                     policy=PolicyParams(backoff_s=60, auto_resubmit=True))
    w.tick(T0 + 200)
    [incident] = sink.events
    d = incident.diagnosis
    assert incident.facts == {}
    assert (d.class_id, d.action, d.retryable, d.charges_budget, d.decided_by) == (
        class_id, "ask", False, False, "accounting")
    assert d.detail == {"kind": "never_started", "state": state,
                        "cancelled_by": 1000 if state == "CANCELLED" else None,
                        "pending_reason": "BeginTime"}
    assert d.metrics.last_iter is None and d.evidence == ()  # the other job's log was not read
    assert incident.decision.kind == DecisionKind.PROPOSE_RESUBMIT and not incident.decision.charged
    # its English line says what happened, not its State's class, and loses nothing
    by = " by user id 1000" if state == "CANCELLED" else ""
    assert incident.text == (
        f"job 88154 never started: Slurm ended it ({state}{by}, pending reason BeginTime) "
        "while it waited in the queue, so nothing ran and nothing was lost; resubmit from "
        "scratch (no complete checkpoint) or dismiss: a person decides.")
    assert store.watched_jobs.get(CLUSTER, "88154") is None


def test_a_job_that_ran_without_a_start_time_in_sacct_waits_for_its_log(env):
    """A job that ran (a node, its batch step) whose accounting lacks its start time: its
    missing log is waited for as any ended job's, then it is judged from accounting and its
    incident says the log did not exist, not that it never started."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = JobRecord(job_id=88154, state="FAILED", exit_code=1, signal=0,
                                     stdout_path=LOG, end_time=T0 + 100, node="vm",
                                     step_states=(("batch", "FAILED"),))
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 200)
    w.tick(T0 + 799)
    assert sink.events == []
    w.tick(T0 + 800)
    [incident] = sink.events
    assert incident.facts == {"log_path": LOG, "log_missing": True}
    assert incident.diagnosis.detail is None
    # its row says it ran (its start, unknown to sacct, no later than its end): the backoff
    # counts it (bot.core.slurm.states.ended_unstarted)
    assert store.attempts.get_by_job("88154").started_at == T0 + 100


def test_a_running_jobs_missing_log_starts_no_wait(env):
    """A running job whose log is not there yet is only read again; the wait starts when it
    has ended."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    slurm.records[88154] = running(88154)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    for t in range(0, 1200, 300):
        w.tick(T0 + t)
    _ended(slurm)
    w.tick(T0 + 1200)
    w.tick(T0 + 1799)
    assert sink.events == []
    w.tick(T0 + 1800)
    assert [e.facts.get("log_missing") for e in sink.events] == [True]


@pytest.mark.parametrize("log", ["unreadable", "missing"])
def test_a_restart_judges_a_job_whose_log_is_unreadable_at_the_first_failures_deadline(env, log):
    """The bot restarts (a new Watcher on the same store) while it waits for a finished job's
    log that cannot be read or does not exist: the job is judged unreadable_file_s after the
    first failed read, before the restart, not that long after the restart."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    if log == "unreadable":
        sftp.append(LOG, STORY.read_bytes())
        _unreadable(sftp)
    _ended(slurm)
    before = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    before.tick(T0 + 200)  # the first failed read
    before.tick(T0 + 500)
    assert store.watched_jobs.get(CLUSTER, "88154").unreadable_since == T0 + 200
    after = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    after.tick(T0 + 700)
    after.tick(T0 + 799)
    assert sink.events == []
    after.tick(T0 + 800)
    [incident] = sink.events
    assert incident.facts["log_path"] == LOG
    assert ("log_missing" if log == "missing" else "log_unreadable") in incident.facts


def test_a_log_readable_again_clears_the_stored_wait(env):
    """A log that reads again within the bound clears the stored first failure: a later
    failure (after a restart) starts its own wait."""
    store, slurm, sftp, sink = env
    add_job(store, 88154)
    sftp.append(LOG, b"".join(story_lines()[:500]))
    slurm.records[88154] = running(88154)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    w.tick(T0 + 100)
    _ended(slurm)
    _unreadable(sftp)
    w.tick(T0 + 200)
    assert store.watched_jobs.get(CLUSTER, "88154").unreadable_since == T0 + 200
    failing = sftp.read
    sftp.read = sftp.readable
    sftp.append(LOG, b"x" * (17 << 20))  # more than one tick reads: not judged yet
    w.tick(T0 + 300)
    assert sink.events == []
    assert store.watched_jobs.get(CLUSTER, "88154").unreadable_since is None
    sftp.read = failing
    after = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600)
    after.tick(T0 + 900)
    after.tick(T0 + 1499)
    assert sink.events == []
    after.tick(T0 + 1500)
    assert [e.facts.get("log_path") for e in sink.events] == [LOG]


RSS_PATH = "/scratch/mix/logs/rss-88154.jsonl"
NO_RSS_LOG = b"".join(
    b"2025-01-01 00:00:%02d.000 | INFO | iter: %d/100 | loss: 0.9%d | 0.50 s/iter\n" % (i, i, i)
    for i in range(1, 9))


def _sampled(store, slurm, sftp, sink, log: bytes = NO_RSS_LOG, *,
             sampler_path: str | None = "/scratch/mix/logs/rss-%j.jsonl") -> Watcher:
    """Job 88154 ended, its log written; a watcher whose recipe expects sampler samples at
    RSS_PATH (`sampler_path`: None, none)."""
    add_job(store, 88154)
    sftp.append(LOG, log)
    _ended(slurm)
    return make_watcher(store, slurm, sftp, sink, unreadable_file_s=600, policy=None,
                        config=_Config(sampler_path=sampler_path))


def test_a_finished_job_whose_sampler_file_does_not_exist_says_why_there_is_no_rss_chart(env):
    """A job that ran and ended, whose recipe expects memory samples and whose sampler file
    does not exist (the job ended before its sampler started, a wrong path): it is judged at
    once, from its log (no wait: a job that failed early has none), and its incident says no
    samples were found there, so there is no RSS chart."""
    store, slurm, sftp, sink = env
    w = _sampled(store, slurm, sftp, sink)
    w.tick(T0 + 200)
    [incident] = sink.events
    assert incident.diagnosis.metrics.last_iter == 8 and incident.sampler is None
    assert incident.facts == {"sampler_path": RSS_PATH, "sampler_missing": True}
    said = f" No memory samples were found at {RSS_PATH}, so there is no RSS chart."
    assert head_line(incident).endswith(said) and said not in incident.text  # said once


def test_a_finished_job_whose_sampler_file_stays_unreadable_says_why_there_is_no_rss_chart(
        env):
    """The sampler file of a job that ended cannot be read to the end of unreadable_file_s,
    and the log prints no RSS: the incident says the samples could not be read, and why."""
    store, slurm, sftp, sink = env
    sftp.append(RSS_PATH, b'{"v": 1, "t": 0, "rss": {"trainer": 1}}\n')
    _unreadable(sftp, RSS_PATH)
    w = _sampled(store, slurm, sftp, sink)
    w.tick(T0 + 200)
    w.tick(T0 + 799)
    assert sink.events == []
    w.tick(T0 + 800)
    [incident] = sink.events
    assert incident.facts["sampler_path"] == RSS_PATH
    said = f" The memory samples at {RSS_PATH} could not be read (reading it failed on the " \
        "login node (dd exit 1)), so there is no RSS chart."
    assert head_line(incident).endswith(said) and said not in incident.text  # said once


@pytest.mark.parametrize("case", ["no sampler in the recipe", "the log prints RSS"])
def test_a_missing_sampler_file_is_not_said_where_it_changes_no_chart(env, case):
    """No sentence about samples when the recipe expects none, or when the log's own RSS
    lines give the incident its RSS chart anyway."""
    store, slurm, sftp, sink = env
    if case == "no sampler in the recipe":
        w = _sampled(store, slurm, sftp, sink, sampler_path=None)
    else:
        w = _sampled(store, slurm, sftp, sink, STORY.read_bytes())
    w.tick(T0 + 200)
    [incident] = sink.events
    assert "sampler_path" not in incident.facts and "memory samples" not in head_line(incident)


def test_an_array_tasks_log_and_samples_are_found_at_the_recipes_patterns(env):
    """An ended array task that Slurm names no log path for (squeue forgot it; sacct 22.05
    has no StdOut): its log and sampler file are where the recipe's patterns put them,
    `%A_%a` the array's id and task, `%N` its node, as sbatch expands them; it is judged from
    both, with no wait for files at a wrongly guessed path."""
    store, slurm, sftp, sink = env
    add_job(store, 57)
    sftp.append("/scratch/mix/logs/mix-50_7-n17.out", NO_RSS_LOG)
    sftp.append("/scratch/mix/logs/rss-50_7-n17.jsonl",
                b'{"v": 1, "t": 0, "rss": {"trainer": 1}}\n')
    slurm.records[57] = JobRecord(job_id=57, array_job_id=50, array_task_id=7, name="mix",
                                  node="n17", state="FAILED", exit_code=1, signal=0,
                                  start_time=T0, end_time=T0 + 100)
    w = make_watcher(store, slurm, sftp, sink, unreadable_file_s=600, policy=None,
                     config=_Config(log_path="/scratch/mix/logs/%x-%A_%a-%N.out",
                                    sampler_path="/scratch/mix/logs/rss-%A_%a-%N.jsonl"))
    w.tick(T0 + 200)
    [incident] = sink.events
    assert incident.diagnosis.metrics.last_iter == 8
    assert incident.sampler is not None
    assert incident.facts == {}


def test_a_replica_forgetting_a_running_job_whose_log_is_unreadable_logs_it_once(env, caplog):
    """The replica takes the cluster back after another one watched it (Watcher.forget): the
    running job's unreadable log it remembered is logged once as no longer followed, with how
    long it was unread up to this replica's last tick, and the next tick reads it anew (its
    unreadable log logged again as a new start)."""
    with caplog.at_level("INFO", logger="bot.services.watch"):
        w, _readable = _running_with_its_log_unreadable(env)
        w.forget()
        w.tick(T0 + 600)
    assert _said(caplog) == [
        UNREADABLE,
        f"dev: job 88154 is no longer followed from this replica's memory (another replica "
        f"watched the cluster meanwhile); its log {LOG} could not be read for the last 60 s "
        "this replica watched it",
        UNREADABLE]


@pytest.mark.parametrize("seen_pending", [True, False])
def test_a_running_job_requeued_while_its_log_is_unreadable_starts_its_next_runs_reads_anew(
        env, caplog, seen_pending):
    """The job is requeued while its log cannot be read (a tick sees it PENDING, or only its
    later start): the run that could not be read is logged once as requeued, with how long;
    its next run, appending to the same log, is read anew: the log still unreadable is a new
    start, and its reading again counts from there, not across the wait in the queue."""
    store, slurm, sftp, sink = env
    with caplog.at_level("INFO", logger="bot.services.watch"):
        w, readable = _running_with_its_log_unreadable(env)
        if seen_pending:
            slurm.records[88154] = JobRecord(job_id=88154, state="PENDING", stdout_path=LOG,
                                             restart_count=1)
            w.tick(T0 + 180)
        slurm.records[88154] = replace(running(88154), start_time=T0 + 1700, restart_count=1)
        w.tick(T0 + 1800)
        readable()
        w.tick(T0 + 1860)
    requeued_after = 120 if seen_pending else 1740
    assert _said(caplog) == [
        UNREADABLE,
        f"dev: job 88154 was requeued while its log {LOG} could not be read (unread for "
        f"{requeued_after} s); its next run's reads start anew",
        UNREADABLE,
        f"dev: job 88154: its log {LOG} read again after 60 s"]


@pytest.mark.parametrize("first_ran, due_at", [(False, T0 + 1370), (True, T0 + 1430)])
def test_a_never_started_attempt_does_not_double_the_backoff_of_a_later_crash(
        env, first_ran, due_at):
    """The backoff of an automatic resubmit doubles for each earlier attempt that ran: a job
    Slurm ended while it waited in the queue (written to its row by the watcher: CANCELLED, no
    start) ran nothing, so the time limit after it waits 60 s as a first failure does, where
    after an attempt that ran (FAILED, started, iteration 1,000) it waits 120 s. Neither
    charges the retry budget for the never-started one."""
    store, slurm, sftp, sink = env
    resub = FakeResubmit(store)
    chain = store.chains.create(recipe="auto", cluster=CLUSTER, job_name="auto", now=T0)
    first = store.attempts.record(chain_id=chain.id, job_id="88299", now=T0).attempt
    w = make_watcher(store, slurm, sftp, sink, resubmit=resub, checkpoint=FakeCheckpoints(1200),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60))
    if first_ran:
        store.attempts.update(first.id, state="FAILED", result="FAILED", started_at=T0,
                              ended_at=T0 + 50, last_iter=1000, cause="unknown_failure")
    else:  # the watcher judges it: it never started
        store.watched_jobs.add(CLUSTER, "88299", now=T0, chain_id=chain.id)
        slurm.records[88299] = JobRecord(job_id=88299, state="CANCELLED", exit_code=0, signal=0,
                                         stdout_path=LOG, start_time=T0 + 50,
                                         end_time=T0 + 50, elapsed_s=0, cancelled_by=1000)
        w.tick(T0 + 60)
        row = store.attempts.get_by_job("88299")
        assert (row.result, row.started_at, row.last_iter) == ("CANCELLED", None, None)
        assert store.chains.get(chain.id).retries_used == 0
    second = store.attempts.record(chain_id=chain.id, job_id="88300", now=T0).attempt
    store.attempts.update(second.id, start_iter=1200)
    store.watched_jobs.add(CLUSTER, "88300", now=T0, chain_id=chain.id)
    sftp.append(LOG, b"".join(story_lines()[:300]))
    slurm.records[88300] = JobRecord(job_id=88300, state="TIMEOUT", exit_code=0, signal=0,
                                     stdout_path=LOG, start_time=T0 + 100, end_time=T0 + 1300)
    w.tick(T0 + 1310)
    decision = sink.events[-1].decision
    assert decision.kind == DecisionKind.RESUBMIT_NOW
    assert decision.not_before == due_at
    # the crash's row records its start (sacct's), though no tick saw it run
    assert store.attempts.get_by_job("88300").started_at == T0 + 100
    w.tick(due_at - 1)
    assert resub.calls == []
    w.tick(due_at)
    assert resub.calls == [("auto", chain.id, 1200)]
    assert store.chains.get(chain.id).retries_used == 1
