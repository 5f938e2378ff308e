"""The watcher tick for one cluster: poll Slurm once, read only new log bytes, warn early,
diagnose finished jobs, and decide what to do (bot.core.policy).

`Watcher.tick(now)` is deterministic given its adapters, so tests drive it with fakes and a
fake clock; the scheduler (bot.services.scheduler) only calls it.

Per tick:
- ONE `slurm.jobs(ids)` call (one squeue + one sacct) for all watched jobs of the cluster;
- `ClusterUnavailable` -> the tick is logged and counted, the last known state is kept and no
  job is judged; after `unreachable_ticks` failures in a row ONE "cluster unreachable" event,
  and ONE "back" event when a tick succeeds again (never per-job alarms);
- ONE `slurm.memory(ids)` call (one sstat) for the running jobs whose host RSS has no better
  source (the log prints none and the sampler has written nothing): each job's MaxRSS is fed to
  its analysis as a sample at its current iteration (leak fit, RSS chart), and a leak warning
  built on it says "RSS from sstat"; a failed sstat costs only this tick's samples;
- ONE batched read (one round trip; two when a file must be read again from 0 or a finished
  job's log has more) of every running job's log and sampler file, by offset
  (bot.services.watch.logs over the cluster's TailReader, offsets persisted in the store),
  fed to the job's `LogAnalysis`; sampler JSON lines likewise; early warnings through
  `bot.core.policy.early_warnings`; a stall warning's ONE checkpoint lookup (its Cancel and
  resume names where it starts) when it is to be posted, within `checkpoint_deadline_s`;
- pending job held by an admin: `held_report` once the hold has lasted long enough;
- finished job: the rest of the log, its ONE checkpoint lookup (within
  `checkpoint_deadline_s`; kept while its incident's post is retried), `diagnose`, `decide`;
  the attempt row gets progress, result, cause and work lost; the job leaves the watch list
  once its incident is posted (kept watched, its incident published again, meanwhile). A
  completed run's result (and its root, Home's rows with it) does not wait for its ✅ line:
  it is stored at the line's first try, once.

Adopted jobs (watched without trainbot submitting them: chains of kind "adopted" or "array"
with no recipe) are judged alike, with no recipe (nothing is resubmitted). A whole array is
watched as its own id (its tasks still waiting to start) plus each started task under its raw
id: the tasks that started since the last tick are in the tick's squeue/sacct answer already
(asking for an array's id lists its tasks), and are added to its chain and watch list there,
with no extra round trip. The chain ends once none of its jobs is watched any more (and no
resubmit of one of its tasks is due). An array trainbot submitted (an array recipe) has its
recipe: a failed task is judged against its own attempts and retry budget (its earlier
attempts whose cause charges the budget: bot.core.arrays.task_retries_used), and its
`resubmit_now` decision names the task (`array_task`), which is resubmitted alone as a
one-task array whose id the chain watches too, so the resubmit's task joins the same row.

This module is the tick itself: one poll, and each watched job dispatched by its state. The
rest lives beside it in bot.services.watch: events go out through the outbox (`outbox`:
recorded, then published once); logs are read by `logs`; a job is judged, without I/O, by
`judge`; host memory comes from sstat (`sstat`); chains and attempt rows are kept by `chains`;
recipe settings come from `recipes`; outages are counted and told by `health`; files that
cannot be read are waited for and logged by `unreadable`; and `resubmit_now` decisions are
carried out by `resubmit`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.cluster.errors import ClusterError, ClusterUnavailable, said
from bot.config import Config, PolicyConfig
from bot.core.catalogue import Catalogue
from bot.core.checkpoints import Checkpoint
from bot.core.diagnose import LogAnalysis
from bot.core.metrics import MIN_RSS_CHART_POINTS, MetricSeries
from bot.core.models import Diagnosis
from bot.core.policy import (
    OFFER_CANCEL_RESUME,
    Decision,
    DecisionKind,
    PolicyParams,
    held_report,
    stall_resume_point,
    stall_without_recipe,
    whole_node_mem,
)
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sstat import StepMemory
from bot.core.slurm.states import PAUSED_STATES
from bot.core.tail import FileMissing, FileReadFailed
from bot.log_format import log_fields
from bot.services.ports import LeaseLost, SlurmJobs, TailReader
from bot.services.watch.chains import ChainBook, ProgressRewriteBudget
from bot.services.watch.events import EventSink, TickReport, WatchEvent
from bot.services.watch.health import ClusterHealth
from bot.services.watch.judge import (
    finished_decision,
    finished_diagnosis,
    judge_running,
    warning_key,
)
from bot.services.watch.logs import JobReads, JobWatch, LogFollower
from bot.services.watch.outbox import Outbox
from bot.services.watch.recipes import RecipeSettings
from bot.services.watch.resubmit import AutoResubmits, Recover, Resubmit
from bot.services.watch.said import held_said, read_failed_said, unknown_said
from bot.services.watch.sstat import add_sstat_sample, read_memory
from bot.services.watch.unreadable import READ_FAILED_NOTE_TICKS, UnreadableFiles
from bot.store import Chain, Store, WatchedJob

log = logging.getLogger(__name__)


class Watcher:
    """The tick of one cluster (see module doc). Adapters are injected:

    - `slurm`: has `jobs(ids) -> {id: JobRecord}` and, optionally, `memory(ids) -> {id:
      StepMemory}` (bot.cluster.slurm.SlurmClient; without `memory` no sstat is made);
    - `reader`: a zero-argument callable returning the cluster's TailReader (every log and
      sampler file of a tick in one batch) — called lazily, so an unreachable cluster is only
      contacted by the one Slurm call;
    - `store`: bot.store.Store; `catalogue`: bot.core.catalogue.Catalogue; `config`:
      bot.config.Config (recipes, policy_for), may be None in tests with `policy`;
    - `checkpoint`: recipe name -> its latest complete checkpoint (bot.core.checkpoints.
      Checkpoint: its name and iteration; None: none), called with `task=` (N for task N of
      an array recipe: its own checkpoints; else None) and `abandon=` (bot.services.ports.
      Abandon: told when the lookup is given up), once per finished job (its answer kept
      while the incident's post is retried): the decision carries it to the incident and its
      prompt; default: no checkpoint knowledge (resubmits say "from scratch"). A stall
      warning's prompt looks it up once too, when it is to be posted. Both lookups are given
      up after `checkpoint_deadline_s` seconds (None: the cluster's `sftp_timeout`, else
      15 s; zero or less is refused); a failed or late one is told as unknown: the incident or
      prompt says so, and a resubmit that would be automatic waits for a person's approval;
    - `sink`: EventSink;
    - `resubmit`: (recipe, chain_id, decision) -> new job id; carries out `resubmit_now`
      decisions once `not_before` has passed (None: they are only published). It records
      the new attempt and, when `decision.charged`, its retry charge in one store
      transaction (`attempts.record(charge_retry=…)`): the charge is never lost or doubled;
    - `recover`: (recipe, chain_id, old job id, decision) -> the job a resubmit interrupted
      by a crash left (recorded, charged like `resubmit`, and announced), or None (see
      bot.services.watch.resubmit).

    A watched job that neither squeue nor sacct knows `unknown_after_s` after it was added
    (purged from accounting, a mistyped `/train watch`, submitted to another cluster) is
    reported once in its thread and no longer watched; before that it is just not judged
    (a job just submitted may take a moment to appear).

    A job's log or sampler file the login node answers for but cannot read (or, once the job
    has ended, a log that does not exist) is read again: a finished job's for
    `unreadable_file_s`, then it is judged without it, and its incident says why; a running
    job's next tick. A job that ended without starting (cancelled while it waited) has no file
    to wait for: it is judged at once, and its incident says it never started. What is
    waited for, and logged once, is bot.services.watch.unreadable's.

    A running job gets the full `diagnose` every `judge_every_s` and the cheap stall check on
    every tick (a stall triggers the full diagnosis at once). Store writes of a running job's
    progress (tail offset, attempt last_iter) happen at most every `persist_every_s` (and once
    when a progress bar on the log's last line freezes, unchanged for `persist_every_s` / 2,
    so a restart does not take it for an advance): after a crash the watcher re-reads at most
    that much log (event keys make the re-read harmless).
    State changes and finished jobs are written at once. Thread roots rewritten for progress
    alone are counted in `progress_rewrites`, the workspace's budget in the store that the
    watchers of every replica share (bot.services.watch.chains.ProgressRewriteBudget;
    None: of PROGRESS_REWRITES_PER_MINUTE).
    """

    def __init__(
        self,
        cluster: str,
        *,
        slurm: SlurmJobs,
        reader: Callable[[], TailReader],
        store: Store,
        catalogue: Catalogue,
        sink: EventSink,
        config: Config | None = None,
        policy: PolicyConfig | PolicyParams | None = None,
        checkpoint: Callable[..., Checkpoint | None] | None = None,
        resubmit: Resubmit | None = None,
        recover: Recover | None = None,
        unreachable_ticks: int | None = None,
        max_bytes_per_job: int = 16 << 20,
        warmup_bytes: int = 8 << 20,
        persist_every_s: float = 300.0,
        progress_rewrites: ProgressRewriteBudget | None = None,
        max_samples_per_job: int = 1024,
        judge_every_s: float = 300.0,
        unknown_after_s: float = 900.0,
        unreadable_file_s: float = 600.0,
        checkpoint_deadline_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self._clock = clock
        self.slurm = slurm
        self.store = store
        self.catalogue = catalogue
        self.config = config
        self.recipes = RecipeSettings(cluster, config=config, policy=policy,
                                      checkpoint=checkpoint)
        default_n = getattr(getattr(config, "policy", None), "unreachable_ticks", 3)
        self.unreachable_ticks = unreachable_ticks or default_n
        self.persist_every_s = persist_every_s
        self.max_samples_per_job = max_samples_per_job
        self.judge_every_s = judge_every_s
        self.unknown_after_s = unknown_after_s
        cluster_cfg = (getattr(config, "clusters", None) or {}).get(cluster)
        if checkpoint_deadline_s is None:  # the default: as long as one SFTP reply may take
            sftp_timeout = getattr(cluster_cfg, "sftp_timeout", None)
            checkpoint_deadline_s = 15.0 if sftp_timeout is None else sftp_timeout
        elif not checkpoint_deadline_s > 0:  # NaN too
            raise ValueError(
                f"checkpoint_deadline_s must be a positive number of seconds, not "
                f"{checkpoint_deadline_s!r} (None: the cluster's sftp_timeout)")
        self.checkpoint_deadline_s = float(checkpoint_deadline_s)
        self.outbox = Outbox(cluster, store=store, sink=sink)
        self.unreadable = UnreadableFiles(cluster, store=store,
                                          unreadable_file_s=unreadable_file_s)
        self.health = ClusterHealth(cluster, outbox=self.outbox,
                                    unreachable_ticks=self.unreachable_ticks)
        self.logs = LogFollower(reader=reader, store=store, recipe_cfg=self.recipes.cfg,
                                new_analysis=self._new_analysis,
                                max_bytes_per_job=max_bytes_per_job,
                                warmup_bytes=warmup_bytes, persist_every_s=persist_every_s)
        self.resubmits = (AutoResubmits(cluster, store=store, outbox=self.outbox,
                                        resubmit=resubmit, recover=recover)
                          if resubmit is not None else None)
        self.chains = ChainBook(cluster, store=store, catalogue=catalogue, outbox=self.outbox,
                                resubmits=self.resubmits, persist_every_s=persist_every_s,
                                progress_rewrites=progress_rewrites
                                or ProgressRewriteBudget(store))
        self._jobs: dict[int, JobWatch] = {}
        self._records: dict[int, JobRecord] = {}  # last known state (kept on failed ticks)
        self._told_watched = False  # the sink's cluster_watched (see EventSink)
        self._last_tick_at: float | None = None  # `now` of this watcher's latest tick

    # ------------------------------------------------------------------ tick

    def tick(self, now: float) -> TickReport:
        """One poll of the cluster at wall time `now` (epoch seconds). The report says what it
        cost (wall time, round trips, bytes) and is logged."""
        report = TickReport(ok=True, cluster=self.cluster)
        self._last_tick_at = now
        started = self._clock()
        try:
            return self._tick(now, report)
        finally:
            report.wall_s = self._clock() - started
            log.info("%s: tick %.3f s, %d jobs, %d round trips (%d reading files), "
                     "%d bytes moved, %d new log bytes%s", self.cluster, report.wall_s,
                     report.jobs, report.round_trips, report.read_round_trips,
                     report.bytes_moved, report.bytes_read, "" if report.ok else ", failed")

    def _tick(self, now: float, report: TickReport) -> TickReport:
        watched = self.store.watched_jobs.list(self.cluster)
        self.chains.new_tick(watched)
        self.outbox.new_tick()
        ids = sorted({int(w.job_id) for w in watched})
        report.jobs = len(ids)
        if not ids:
            self._forget_unwatched(set(), now)
            self.health.ok(now, report)
            self._run_due_resubmits(now, report)
            return report
        try:
            report.slurm_calls = 1
            report.round_trips += 2  # squeue + sacct
            records = self.slurm.jobs(ids)
        except ClusterUnavailable as exc:
            return self.health.failed(now, exc, report)
        self.health.ok(now, report)
        if not self._told_watched:  # once: py-spy placed ahead of a stall's stacks
            self._told_watched = True
            self.outbox.cluster_watched()
        watched = self.chains.started_array_tasks(watched, records, now)
        ids = sorted({int(w.job_id) for w in watched})
        report.jobs = len(ids)
        records = {i: r for i, r in records.items() if i in ids}  # not an array's other tasks
        self._records.update(records)
        memory = read_memory(self.slurm, self.cluster, records, self._jobs, report)
        reads = self._read_files(watched, records, report)
        self.unreadable.tick_read(reads, now)
        for w in watched:
            job_id = int(w.job_id)
            record = records.get(job_id)
            if record is None:  # not known to squeue/sacct (yet): nothing to judge
                self._unknown(w, now, report)
                continue
            with log_fields(job=w.job_id, chain=w.chain_id):
                self._judge(w, record, now, report, memory.get(job_id), reads.get(job_id))
        self._forget_unwatched(set(ids), now)
        # the warnings of chains with no job left here (read again from the store if they
        # return)
        self.outbox.keep_warnings_of({w.chain_id for w in watched})
        self.chains.publish_changed(now)  # at most one root update per chain and tick
        self._run_due_resubmits(now, report)
        return report

    def _judge(self, w: WatchedJob, record: JobRecord, now: float, report: TickReport,
               memory: StepMemory | None, reads: JobReads | None) -> None:
        """`_job`, a failure logged and left for the next tick (a lost lease ends the tick)."""
        job_id = w.job_id
        try:
            self._job(w, record, now, report, memory, reads)
        except LeaseLost:
            raise  # another replica watches now: this tick ends here
        except ClusterError as exc:  # SSH dropped mid-tick: try again next tick
            log.warning("%s: job %s: %s; will retry next tick", self.cluster, job_id, exc)
        except OSError as exc:  # SFTP read failed
            log.warning("%s: job %s: cannot read its files: %s", self.cluster, job_id, exc)
        except Exception:  # noqa: BLE001 - one bad job must not starve the others
            log.exception("%s: job %s: watching it failed; the other jobs go on",
                          self.cluster, job_id)

    def _read_files(self, watched: list[WatchedJob], records: dict[int, JobRecord],
                    report: TickReport) -> dict[int, JobReads]:
        """The new bytes of every running job's files, and the rest of every finished job's
        log, in one batched read (bot.services.watch.logs)."""
        jobs = []
        for w in watched:
            record = records.get(int(w.job_id))
            if record is None or not (record.is_running or record.is_finished):
                continue
            jw = self._watch_for(w, record)
            jobs.append((jw, record, record.is_finished))
        return self.logs.read(jobs, report) if jobs else {}

    def _run_due_resubmits(self, now: float, report: TickReport) -> None:
        if self.resubmits is not None:
            self.resubmits.run_due(now, report)

    def forget(self) -> None:
        """Drop what this watcher holds in memory (job series, tail positions, last records,
        outage counters, chains' targets): the next tick rebuilds it from the store, as after
        a restart. For a replica taking a cluster back after another one watched it
        meanwhile. A running job's file that could not be read when this replica last ticked
        is logged once as such (its end is the other replica's to see; the next tick reads
        it anew), as `_forget_job` logs one of a job no longer watched (UnreadableFiles)."""
        self.outbox.forget()
        self.chains.forget()
        for jw in self._jobs.values():
            self.unreadable.forgotten(jw, self._last_tick_at)
        self.unreadable.series_over(
            self._last_tick_at, "the cluster is no longer followed from this replica's memory "
            "(another replica watched it meanwhile)")
        self._jobs.clear()
        self._records.clear()
        self.health.forget()

    @property
    def last_known(self) -> dict[int, JobRecord]:
        """The latest record of every job seen (unchanged by failed ticks)."""
        return dict(self._records)

    # ------------------------------------------------------------------ jobs

    def _job(self, w: WatchedJob, record: JobRecord, now: float, report: TickReport,
             memory: StepMemory | None = None, reads: JobReads | None = None) -> None:
        jw = self._watch_for(w, record)
        jw.record = record
        if record.array_job_id is not None and record.array_task_id is None \
                and record.is_finished:
            # An array's tasks that never started (cancelled while waiting): nothing ran,
            # nothing to diagnose; its chain's root counts the tasks that did.
            self._unwatch(w.job_id, now)
            self.chains.end_adopted(w.chain_id, now)
            return
        if record.is_pending:
            self.unreadable.requeued(jw, now)  # (a job requeued while it ran)
            self._pending(jw, record, now, report)
            return
        self._set_held_since(jw, None)
        reads = reads if reads is not None else JobReads()
        if record.is_running:
            self._restarted(jw, record, now)
            if self._batch_failed(jw, reads, now, report):
                return
            if self.unreadable.running(jw, reads, now) or reads.unread:
                # what did read is applied; the rest (a file that failed, or one the batch's
                # bytes did not reach) is read again next tick, and the job is judged when its
                # files read
                self.logs.apply(jw, reads, now, report, without_unreadable=True)
                return
            self.logs.apply(jw, reads, now, report)
            add_sstat_sample(jw, memory)
            self._running(jw, record, now, report)
        elif record.is_finished:
            self.unreadable.ended(jw, reads, now)
            if self.store.watched_jobs.get(self.cluster, str(w.job_id)) is None:
                # Unwatched while this tick ran (a "Cancel and resume" click scancels only
                # after removing the job from the list, and records its attempt itself):
                # its end is that decision's, not a failure to report.
                self._forget_job(jw.job_id, now)
                return
            if self._cancel_unknown(str(w.job_id)):
                # A Cancel (and resume) whose scancel's end was not seen: whether this end is
                # that cancel's is settled by bot.services.cancel_settle.settle_unknown_cancels,
                # never judged as a failure of the chain here.
                return
            # a failed batched read (logged once per series) is each file's failed read:
            # waited for as an unreadable file, then judged without it, its incident saying
            # why (no read_failed note: the job is judged, not held back)
            self.unreadable.batch(jw, reads, now)
            unreadable = self.unreadable.finished(jw, reads, now)
            # waiting for a file that cannot be read: what did read is applied, the rest is
            # read again next tick
            waiting = unreadable is None and bool(reads.failures)
            if self.logs.apply(jw, reads, now, report,
                               without_unreadable=waiting or unreadable is not None) \
                    or waiting:
                return  # (or more of the log than one tick may read: judged when caught up)
            self._finished(w, jw, record, now, report, unreadable=unreadable)

    def _batch_failed(self, jw: JobWatch, reads: JobReads, now: float,
                      report: TickReport) -> bool:
        """Did this tick's batched read fail as a whole (none of the running job's files read:
        it is not judged this tick)? Logged once per cluster series (UnreadableFiles.tick_read);
        once the job's series has lasted READ_FAILED_NOTE_TICKS ticks, the run's thread is told,
        once per thread and cluster series (its key is the chain's and the start of the cluster's
        failed batches, UnreadableFiles.failing_since: an array's tasks, a job that began
        being read while they failed, share one note; emitted at each tick until the outbox
        takes it, so a post that failed is tried again, then no more: UnreadableFiles.noted),
        in the thread's language."""
        failures = self.unreadable.batch(jw, reads, now)
        if failures is None:
            return False
        if failures.ticks < READ_FAILED_NOTE_TICKS:
            return True
        job = str(jw.job_id)
        thread = f"chain:{jw.chain_id}" if jw.chain_id is not None else job
        # this tick's failed batch began or went on the cluster's series (tick_read, first)
        since = self.unreadable.failing_since
        assert since is not None
        key = f"{self.cluster}:{thread}:read_failed:{int(since)}"
        if key in self.unreadable.noted:
            return True
        error = said(failures.error)
        told = read_failed_said(job, failures.ticks, now - failures.since, error)
        if self.outbox.emit(WatchEvent(
                "read_failed", key, self.cluster, str(told), jw.chain_id, job, jw.recipe,
                facts={"ticks": failures.ticks, "seconds": now - failures.since,
                       "error": error, "said": told}), "read_failed", now, report):
            self.unreadable.noted.add(key)
        return True

    def _forget_unwatched(self, ids: set[int], now: float) -> None:
        """Jobs no longer watched (unwatched, finished elsewhere; `ids` are those watched):
        their state forgotten, so one watched again starts anew."""
        for gone in set(self._jobs) - ids:
            self._forget_job(gone, now)
        for gone in set(self._records) - ids:
            del self._records[gone]

    def _forget_job(self, job_id: int, now: float) -> None:
        """Drop a job's in-memory state (no longer watched); a file of it that could not be
        read when it last ran is logged once as such, its end never seen."""
        jw = self._jobs.pop(job_id, None)
        if jw is None:
            return
        self.unreadable.unwatched(jw, now)

    def _cancel_unknown(self, job_id: str) -> bool:
        """Is `job_id` the target of an approved cancel whose scancel's end was not seen?"""
        return any(a.target_job == job_id and a.payload.get("cluster") == self.cluster
                   for a in self.store.approvals.cancels_unknown())

    def _restarted(self, jw: JobWatch, record: JobRecord, now: float) -> None:
        """Slurm started the running job again (requeued: preempted, its node failed,
        `scontrol requeue`; squeue's start time moved on): its series is told the start on
        the log's clock, before the new bytes are fed, so the next run's lines (if it writes
        no start line of its own) start its own series and its silence counts from that start,
        not across the queue wait (bot.core.metrics.MetricSeries.restarted). Before the log
        printed a time (no skew) there is no silence to time. A requeue no tick saw PENDING
        ends the memory of the run's unreadable files as one seen does
        (UnreadableFiles.requeued)."""
        start = record.start_time
        if start is None:
            return
        if jw.run_started_at is not None and start > jw.run_started_at:
            self.unreadable.requeued(jw, now)
            if jw.skew is not None:
                jw.analysis.series.restarted(start + jw.skew)
        jw.run_started_at = start

    def _unknown(self, w: WatchedJob, now: float, report: TickReport) -> None:
        """A watched job Slurm does not know: after `unknown_after_s`, say so and stop."""
        if now - w.added_at < self.unknown_after_s:
            return
        job = str(w.job_id)
        recipe = self.chains.recipe_of(w.chain_id)
        minutes = (now - w.added_at) / 60
        told = unknown_said(job, minutes, self.cluster)
        if not self.outbox.emit(WatchEvent("unknown", f"{self.cluster}:{job}:unknown", self.cluster,
                                     str(told), w.chain_id, job, recipe,
                                     facts={"minutes": minutes, "said": told}),
                                "unknown", now, report):
            return  # not told yet: keep it, the next tick tries again
        attempt = self.store.attempts.get_by_job(job, self.cluster)
        if attempt is not None and attempt.result is None:
            self.store.attempts.update(attempt.id, state="UNKNOWN", result="UNKNOWN")
        self._unwatch(job, now)
        self.chains.end_adopted(w.chain_id, now)
        if w.chain_id is not None:
            self.chains.ended(w.chain_id, now)

    def _watch_for(self, w: WatchedJob, record: JobRecord) -> JobWatch:
        job_id = int(w.job_id)
        jw = self._jobs.get(job_id)
        if jw is None:
            recipe = self.chains.recipe_of(w.chain_id)
            jw = JobWatch(job_id, w.chain_id, recipe, self._new_analysis(recipe),
                           held_since=getattr(w, "held_since", None),
                           unreadable_since=getattr(w, "unreadable_since", None))
            self._jobs[job_id] = jw
        return jw

    def _new_analysis(self, recipe: str | None) -> LogAnalysis:
        cfg = self.recipes.cfg(recipe)
        extra = tuple(getattr(cfg, "metric_regexes", None) or ())
        # 1024 samples (not diagnose's 4096) per watched job: ~0.4 KiB each with its line
        # text, so 200 jobs stay near 80 MiB; the leak fit uses at most 600 points anyway.
        return LogAnalysis(self.catalogue, extra_patterns=extra,
                           max_samples=self.max_samples_per_job)

    def _pending(self, jw: JobWatch, record: JobRecord, now: float, report: TickReport) -> None:
        if not record.is_held:
            self._set_held_since(jw, None)
            return
        if jw.held_since is None:
            self._set_held_since(jw, now)
        rep = held_report(record, jw.held_since, now, policy=self.recipes.params(jw.recipe))
        if rep is not None:
            key = f"{self.cluster}:{record.job_id}:held:{record.restart_count}"
            told = held_said(record.display_id, rep.reason, rep.held_s)
            self.outbox.emit(WatchEvent("held", key, self.cluster, str(told), jw.chain_id,
                                  str(record.job_id), jw.recipe, record=record,
                                  facts={"reason": rep.reason, "held_s": rep.held_s,
                                         "said": told}),
                       "held", now, report)

    def _set_held_since(self, jw: JobWatch, held_since: float | None) -> None:
        """When the job was first seen held, kept in the store: a restart of the bot does not
        start the `held_report_s` wait over."""
        if jw.held_since != held_since:
            jw.held_since = held_since
            self.store.watched_jobs.set_held_since(self.cluster, str(jw.job_id), held_since)

    def _running(self, jw: JobWatch, record: JobRecord, now: float, report: TickReport) -> None:
        """A running job judged (bot.services.watch.judge), its early warnings posted and its
        progress written to its attempt row. One Slurm shows stopped (SIGSTOP) or suspended
        is silent from now, not hung: its series is told (MetricSeries.paused), so no stall
        is timed across the stop, and none after it before the usual threshold passes."""
        if record.state in PAUSED_STATES and jw.skew is not None:
            jw.analysis.series.paused(now + jw.skew)
        judged = judge_running(jw, record, self.recipes.policy(jw.recipe), now,
                               judge_every_s=self.judge_every_s,
                               target_iter=self._target(jw),
                               past_warnings=self.outbox.past_warnings(jw.chain_id))
        diag = judged.diagnosis
        for dec in judged.warnings:
            key = warning_key(self.cluster, jw, dec, diag,
                              self.outbox.past_warnings(jw.chain_id))
            if OFFER_CANCEL_RESUME in dec.offers:  # no recipe: nothing resumes it
                dec = (self._stall_resume_point(jw, record, key, dec) if jw.recipe is not None
                       else stall_without_recipe(dec, job=record.display_id))
            kind = "note" if dec.kind == DecisionKind.NOTE else "warning"
            self.outbox.emit(WatchEvent(kind, key, self.cluster, dec.reason, jw.chain_id,
                                  str(jw.job_id), jw.recipe, diagnosis=diag, decision=dec,
                                  record=record, series=jw.analysis.series,
                                  sampler=jw.sampler if jw.sampler.points else None,
                                  skew=jw.skew),
                       dec.class_id, now, report,
                       extra={"projected_oom_iter": dec.projected_oom_iter,
                              "stall_started_at": judged.stall_started_at,
                              "facts": dict(dec.facts)})
        self.chains.update_attempt(jw, now, state=record.state,
                                   last_iter=jw.analysis.series.last_iteration,
                                   logged_target_iter=jw.analysis.series.target_iter,
                                   started_at=record.start_time)
        self._stalls_over(jw, now, report)

    def _stalls_over(self, jw: JobWatch, now: float, report: TickReport) -> None:
        """The job's stall warnings it trained on past (its last iteration beyond the one each
        stalled at): each told once, a `stall_over` event (keyed by its warning's key), so
        the thread marks the stall's prompt out of date: its Cancel would stop a healthy run.
        Its attempt row gets the iteration before the event goes out (a progress write
        out of its pace), so a click refuses the Cancel too, even one the thread's rewrite
        has not reached (bot.services.approved_choices.stall_over)."""
        reached = jw.analysis.series.last_iteration
        if reached is None:
            return
        for past in self.outbox.past_warnings(jw.chain_id):
            if past.class_id != "hang" or past.job_id != str(jw.job_id) or past.key is None \
                    or past.last_iter is None or reached <= past.last_iter \
                    or past.key in jw.stalls_over:
                continue
            text = (f"job {jw.job_id} trains again: iteration {reached}, past its stall at "
                    f"iteration {past.last_iter}")
            event = WatchEvent("stall_over", f"{past.key}:over", self.cluster, text,
                               jw.chain_id, str(jw.job_id), jw.recipe,
                               facts={"stall_key": past.key, "stalled_at": past.last_iter,
                                      "reached": reached})
            # its row first: a click reads the progress there, whatever the write's pace
            self.chains.update_attempt(jw, now, force=True, last_iter=reached)
            if self.outbox.emit(event, "stall_over", now, report):
                jw.stalls_over.add(past.key)

    def _target(self, jw: JobWatch) -> int | None:
        """The run's target its diagnosis is given (ChainBook.target)."""
        return self.chains.target(jw, self.recipes.target(jw.recipe))

    def _stall_resume_point(self, jw: JobWatch, record: JobRecord, key: str,
                            dec: Decision) -> Decision:
        """The stall warning `dec` (key `key`) with the checkpoint its Cancel and resume starts
        from: looked up once per warning (kept while its post is retried), within the
        deadline; a failed or late lookup says it is unknown."""
        if jw.stall_lookup is None or jw.stall_lookup[0] != key:
            lookup = self.recipes.checkpoint_within(jw.recipe, self._task_of(jw, record),
                                                    deadline_s=self.checkpoint_deadline_s)
            jw.stall_lookup = (key, lookup)
        found = jw.stall_lookup[1]
        ck = found.checkpoint
        return stall_resume_point(dec, checkpoint_iter=ck.iteration if ck else None,
                                  checkpoint_name=ck.name if ck else None,
                                  lookup_failed=found.failed)

    def _task_of(self, jw: JobWatch, record: JobRecord) -> int | None:
        """The task of an array trainbot submitted (its checkpoints are the task's own);
        None for any other job."""
        chain = self.chains.get(jw.chain_id)
        return record.array_task_id if chain is not None and chain.is_array \
            and not chain.adopted else None

    def _submitted_mem(self, jw: JobWatch, record: JobRecord) -> JobRecord:
        """`record`, marked as sent with --mem=0 (JobRecord.whole_node_mem: all of each node's
        memory, so no --mem gives it more) when the --mem its attempt records its submit
        passed is 0 (Attempt.submit_mem: the recipe's `mem` after that submit's overrides);
        an attempt that records none (recorded before schema 24, a whole array's task as it
        started, a lost submit found by its name) goes by its recipe's `mem`, and a job of no
        recipe (adopted) is never marked. Slurm's requested memory is not asked: it is 0 for
        a --mem-per-gpu job too (or one the site's DefMemPerGPU gives its memory), and for
        one that asked for none on a cluster with no default."""
        attempt = self.store.attempts.get_by_job(str(jw.job_id), self.cluster)
        mem = attempt.submit_mem if attempt is not None else None
        if mem is None:
            mem = getattr(self.recipes.cfg(jw.recipe), "mem", None)
        return replace(record, whole_node_mem=whole_node_mem(mem))

    def _finished(self, w: WatchedJob, jw: JobWatch, record: JobRecord, now: float,
                  report: TickReport, *,
                  unreadable: dict[str, FileReadFailed] | None = None) -> None:
        """A finished job judged, its incident posted (its warnings first), its resubmit made
        due, its attempt row and chain ended, and the job no longer watched. A failed post
        keeps it watched for the next tick, and keeps its checkpoint lookup's answer: the
        retry decides from the same one (one lookup per finished job). `unreadable`: its files
        that could not be read, by kind (judged without them): an unreadable "log" is said in
        the incident, with why (its facts `log_path` and `log_unreadable`, the reader's
        sentence), a log that did not exist (FileMissing) likewise (`log_path`, `log_missing`);
        a "sampler" file's leaves it without the samples it did not read, and, when there is
        no RSS chart then, says why (`sampler_path`, `sampler_unreadable` or
        `sampler_missing`). Those facts are all the event says of them: the one renderer
        words them (c.unread_files_text), and the English `text` is the decision alone. A job
        that ended without starting (JobRecord.never_started: cancelled while it waited in the
        queue) is judged at once, no file read: its diagnosis says it never started
        (accounting's `never_started`, the detail of that name)."""
        record = self._submitted_mem(jw, record)
        acct = record.accounting()
        p = self.recipes.policy(jw.recipe)
        diag = finished_diagnosis(jw, record, acct, p, target_iter=self._target(jw))
        # the target its log printed is in its row before anything is told from the rows
        self.chains.update_attempt(jw, now, logged_target_iter=jw.analysis.series.target_iter)
        history = self.chains.history(
            jw.chain_id, current_job=str(jw.job_id), current_last_iter=diag.metrics.last_iter,
            bounds=self.recipes.params(jw.recipe).chunk_bounds(diag.metrics.target_iter))
        chain = self.chains.get(jw.chain_id)
        task = self._task_of(jw, record)
        if jw.final_lookup is None:  # once per finished job: kept while its post is retried
            jw.final_lookup = self.recipes.checkpoint_within(
                jw.recipe, task, deadline_s=self.checkpoint_deadline_s)
        decision = finished_decision(jw, diag, history, acct, p, now,
                                     checkpoint=jw.final_lookup, array_task=task)
        # A warning that fails to post never holds the incident back.
        self.outbox.flush_warnings(jw.chain_id, str(jw.job_id), jw.recipe, now, report)
        key = f"{self.cluster}:{jw.job_id}:final"
        # a job that never started is said as that, not as its State's class (its reason)
        text = (f"job {record.display_id} {decision.reason}"
                if decision.facts.get("why") == "never_started"
                else f"job {record.display_id} {record.state}: {diag.class_id} — {decision.reason}")
        facts: dict[str, Any] = {}
        log_failure = (unreadable or {}).get("log")
        if isinstance(log_failure, FileMissing):
            facts = {"log_path": log_failure.path, "log_missing": True}
        elif log_failure is not None:
            facts = {"log_path": log_failure.path, "log_unreadable": log_failure.reason}
        sampler_failure = (unreadable or {}).get("sampler")
        if sampler_failure is not None and not jw.sampler.points \
                and not _rss_charted(jw.analysis.series):
            if isinstance(sampler_failure, FileMissing):
                facts |= {"sampler_path": sampler_failure.path, "sampler_missing": True}
            else:
                facts |= {"sampler_path": sampler_failure.path,
                          "sampler_unreadable": sampler_failure.reason}
        posted = self.outbox.emit(
            WatchEvent("incident", key, self.cluster, text, jw.chain_id, str(jw.job_id),
                       jw.recipe, diagnosis=diag, decision=decision, record=record,
                       series=jw.analysis.series,
                       sampler=jw.sampler if jw.sampler.points else None, skew=jw.skew,
                       facts=facts),
            diag.class_id, now, report,
            extra={"decision": decision.to_json()},
        )
        completed = diag.class_id == "completed"
        if completed and not self._result_stored(jw):
            # nothing waits for a ✅ line: the run's result is stored (its root rewritten,
            # Home's rows with it) at its first try, whether or not Slack took the line
            self._end_attempt(jw, record, diag, decision, chain, now)
        if not posted:
            return  # publishing failed: keep watching, the next tick retries
        resubmitting = (decision.kind == DecisionKind.RESUBMIT_NOW and self.resubmits is not None
                        and jw.chain_id is not None and jw.recipe is not None)
        if resubmitting:
            assert self.resubmits is not None and jw.chain_id is not None and jw.recipe
            self.resubmits.record_due(jw.chain_id, str(jw.job_id), jw.recipe, decision, now)
        if not completed:
            self._end_attempt(jw, record, diag, decision, chain, now)
        self._unwatch(str(jw.job_id), now)
        if chain is not None and chain.parallel and not resubmitting:
            self.chains.end_adopted(chain.id, now)  # an array goes on while tasks remain

    def _result_stored(self, jw: JobWatch) -> bool:
        """Whether the finished job's result is in its attempt row (`_end_attempt` ran for
        it: a completed run's, at an earlier tick whose ✅ line Slack did not take)."""
        attempt = self.store.attempts.get_by_job(str(jw.job_id), self.cluster)
        return attempt is not None and attempt.result is not None

    def _end_attempt(self, jw: JobWatch, record: JobRecord, diag: Diagnosis,
                     decision: Decision, chain: Chain | None, now: float) -> None:
        """The finished job's result into its attempt row, and a run's status (completed,
        or stopped when the decision stops it) into its chain's, whose root is rewritten
        now (`ChainBook.ended`: Home's rows with it; a parallel chain's at the tick's end)."""
        self.chains.update_attempt(
            jw, now, force=True, state=record.state, last_iter=diag.metrics.last_iter,
            ended_at=record.end_time or now, result=record.state, cause=diag.class_id,
            work_lost_iters=decision.work_lost_iters,
            # it ran (no later than its end, when sacct gives no start), unless it never
            # started (Slurm's Start is then its end): the backoff counts the attempts that ran
            started_at=None if record.never_started
            else record.start_time if record.start_time is not None else record.end_time or now,
        )
        if chain is not None and not chain.parallel:
            if diag.class_id == "completed":
                self.store.chains.set_status(chain.id, "completed", now=now)
            elif decision.stop_chain:
                self.store.chains.set_status(chain.id, "stopped", now=now)
            self.chains.ended(chain.id, now)

    def _unwatch(self, job: str, now: float) -> None:
        """Done with a job: off the watch list, its tail offsets and in-memory state gone."""
        self.store.watched_jobs.remove(self.cluster, job)
        self.store.tail_offsets.delete_job(job)
        self._forget_job(int(job), now)


def _rss_charted(series: MetricSeries) -> bool:
    """Does the log (or sstat) give the job an RSS chart without the sampler's samples (the
    points bot.charts.series draws it from)?"""
    return len(series.rss_at_iterations()) >= MIN_RSS_CHART_POINTS


__all__ = ["Watcher"]
