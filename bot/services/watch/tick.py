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
  `bot.core.policy.early_warnings`;
- pending job held by an admin: `held_report` once the hold has lasted long enough;
- finished job: the rest of the log, `diagnose`, `decide`; the attempt row gets progress,
  result, cause and work lost; the job leaves the watch list.

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

Events go out through the outbox (bot.services.watch.outbox: recorded, then published
once), logs are read by bot.services.watch.logs, and `resubmit_now` decisions are carried out
by bot.services.watch.resubmit.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bot.cluster.errors import ClusterError, ClusterUnavailable
from bot.config import Config, PolicyConfig, RecipeConfig
from bot.core.arrays import task_retries_used
from bot.core.catalogue import Catalogue
from bot.core.detectors import detect_stall
from bot.core.diagnose import LogAnalysis
from bot.core.models import Diagnosis
from bot.core.policy import (
    AttemptFacts,
    ChainHistory,
    CpuEvidence,
    Decision,
    DecisionKind,
    PolicyParams,
    decide,
    early_warnings,
    held_report,
    params_from,
)
from bot.core.sampler_series import cpu_around, role_growth, sampler_leak
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sstat import StepMemory
from bot.log_format import log_fields
from bot.services.ports import LeaseLost, SlurmJobs, TailReader
from bot.services.watch.events import EventSink, TickReport, WatchEvent
from bot.services.watch.logs import JobReads, JobWatch, LogFollower
from bot.services.watch.outbox import Outbox
from bot.services.watch.resubmit import AutoResubmits, Recover, Resubmit
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
    - `checkpoint_iter`: recipe name -> iteration of its latest complete checkpoint (None:
      none), called with `task=N` for task N of an array recipe (its own checkpoints);
      default: no checkpoint knowledge (resubmits say "from scratch");
    - `sink`: EventSink;
    - `resubmit`: (recipe, chain_id, decision) -> new job id; carries out `resubmit_now`
      decisions once `not_before` has passed (None: they are only published). It records
      the new attempt and, when `decision.charged`, its retry charge in one store
      transaction (`attempts.add(charge_retry=…)`): the charge is never lost or doubled;
    - `recover`: (recipe, chain_id, old job id, decision) -> the job a resubmit interrupted
      by a crash left (recorded, charged like `resubmit`, and announced), or None (see
      bot.services.watch.resubmit).

    A watched job that neither squeue nor sacct knows `unknown_after_s` after it was added
    (purged from accounting, a mistyped `/train watch`, submitted to another cluster) is
    reported once in its thread and no longer watched; before that it is just not judged
    (a job just submitted may take a moment to appear).

    A running job gets the full `diagnose` every `judge_every_s` and the cheap stall check on
    every tick (a stall triggers the full diagnosis at once). Store writes of a running job's
    progress (tail offset, attempt last_iter) happen at most every `persist_every_s`: after a
    crash the watcher re-reads at most that much log (event keys make the re-read harmless).
    State changes and finished jobs are written at once.
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
        checkpoint_iter: Callable[..., int | None] | None = None,
        resubmit: Resubmit | None = None,
        recover: Recover | None = None,
        unreachable_ticks: int | None = None,
        max_bytes_per_job: int = 16 << 20,
        warmup_bytes: int = 8 << 20,
        persist_every_s: float = 300.0,
        max_samples_per_job: int = 1024,
        judge_every_s: float = 300.0,
        unknown_after_s: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self._clock = clock
        self.slurm = slurm
        self.store = store
        self.catalogue = catalogue
        self.config = config
        self._policy = policy
        self._checkpoint_iter = checkpoint_iter or (lambda recipe, task=None: None)
        default_n = getattr(getattr(config, "policy", None), "unreachable_ticks", 3)
        self.unreachable_ticks = unreachable_ticks or default_n
        self.persist_every_s = persist_every_s
        self.max_samples_per_job = max_samples_per_job
        self.judge_every_s = judge_every_s
        self.unknown_after_s = unknown_after_s
        self.outbox = Outbox(cluster, store=store, sink=sink)
        self.logs = LogFollower(reader=reader, store=store, recipe_cfg=self._recipe_cfg,
                                new_analysis=self._new_analysis,
                                max_bytes_per_job=max_bytes_per_job,
                                warmup_bytes=warmup_bytes, persist_every_s=persist_every_s)
        self.resubmits = (AutoResubmits(cluster, store=store, outbox=self.outbox,
                                        resubmit=resubmit, recover=recover)
                          if resubmit is not None else None)
        self._jobs: dict[int, JobWatch] = {}
        self._records: dict[int, JobRecord] = {}  # last known state (kept on failed ticks)
        self._chains: dict[int, Chain] = {}  # by id, for their kind (which never changes)
        self._changed_chains: set[int] = set()  # adopted chains whose rows changed this tick
        self._failed = 0
        self._down_since: float | None = None
        self._down_notified = False

    # ------------------------------------------------------------------ tick

    def tick(self, now: float) -> TickReport:
        """One poll of the cluster at wall time `now` (epoch seconds). The report says what it
        cost (wall time, round trips, bytes) and is logged."""
        report = TickReport(ok=True, cluster=self.cluster)
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
        ids = sorted({int(w.job_id) for w in watched})
        report.jobs = len(ids)
        if not ids:
            self._cluster_ok(now, report)
            self._run_due_resubmits(now, report)
            return report
        try:
            report.slurm_calls = 1
            report.round_trips += 2  # squeue + sacct
            records = self.slurm.jobs(ids)
        except ClusterUnavailable as exc:
            return self._failed_tick(now, exc, report)
        self._cluster_ok(now, report)
        watched = self._started_array_tasks(watched, records, now)
        ids = sorted({int(w.job_id) for w in watched})
        report.jobs = len(ids)
        records = {i: r for i, r in records.items() if i in ids}  # not an array's other tasks
        self._records.update(records)
        memory = self._memory(records, report)
        reads = self._read_files(watched, records, report)
        for w in watched:
            job_id = int(w.job_id)
            record = records.get(job_id)
            if record is None:  # not known to squeue/sacct (yet): nothing to judge
                self._unknown(w, now, report)
                continue
            with log_fields(job=w.job_id, chain=w.chain_id):
                self._judge(w, record, now, report, memory.get(job_id), reads.get(job_id))
        # Jobs no longer watched (unwatched, finished elsewhere): forget their state, and the
        # warnings of chains with no job left here (read again from the store if they return).
        for gone in set(self._jobs) - set(ids):
            del self._jobs[gone]
        for gone in set(self._records) - set(ids):
            del self._records[gone]
        self.outbox.keep_warnings_of({w.chain_id for w in watched})
        for chain_id in sorted(self._changed_chains):  # one root update per chain and tick
            self.outbox.chain_changed(chain_id)
        self._changed_chains.clear()
        self._run_due_resubmits(now, report)
        return report

    def _chain(self, chain_id: int | None) -> Chain | None:
        if chain_id is None:
            return None
        chain = self._chains.get(chain_id)
        if chain is None:
            chain = self.store.chains.get(chain_id)
            if chain is not None:
                self._chains[chain_id] = chain
        return chain

    def _started_array_tasks(self, watched: list[WatchedJob], records: dict[int, JobRecord],
                             now: float) -> list[WatchedJob]:
        """Tasks of the watched arrays that started since the last tick (in `records`
        already): each becomes an attempt row of its array's chain and a watched job."""
        arrays: dict[int, tuple[Chain, set[int]]] = {}
        for w in watched:
            chain = self._chain(w.chain_id)
            if chain is not None and chain.is_array and chain.array_job_id is not None:
                # the array's id, and the ids of its tasks' one-task resubmits
                arrays.setdefault(chain.id, (chain, {chain.array_job_id}))[1].add(int(w.job_id))
        if not arrays:
            return watched
        added = False
        for chain, array_ids in arrays.values():
            tasks = [r for r in records.values()
                     if r.array_job_id in array_ids and r.array_task_id is not None]
            if not tasks:
                continue
            known = {a.job_id for a in self.store.attempts.for_chain(chain.id)}
            for rec in sorted(tasks, key=lambda r: r.array_task_id or 0):
                job = str(rec.job_id)
                if job in known:
                    continue
                self.store.attempts.add(chain_id=chain.id, job_id=job, now=now,
                                        state=rec.state or "", display_id=rec.display_id)
                self.store.watched_jobs.add(self.cluster, job, now=now, chain_id=chain.id,
                                            adopted=chain.adopted)
                log.info("%s: array %s: task %s started as job %s", self.cluster,
                         chain.array_job_id, rec.display_id, job)
                self._changed_chains.add(chain.id)
                added = True
        return self.store.watched_jobs.list(self.cluster) if added else watched

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
        outage counters): the next tick rebuilds it from the store, as after a restart. For a
        replica taking a cluster back after another one watched it meanwhile."""
        self.outbox.forget()
        self._jobs.clear()
        self._records.clear()
        self._failed = 0
        self._down_since = None
        self._down_notified = False

    @property
    def last_known(self) -> dict[int, JobRecord]:
        """The latest record of every job seen (unchanged by failed ticks)."""
        return dict(self._records)

    # ------------------------------------------------------------------ cluster health

    def _failed_tick(self, now: float, exc: Exception, report: TickReport) -> TickReport:
        self._failed += 1
        if self._down_since is None:
            self._down_since = now
        log.warning("%s: tick failed (%d in a row), keeping the last known state: %s",
                    self.cluster, self._failed, exc)
        report.ok = False
        report.error = str(exc)
        if self._failed >= self.unreachable_ticks and not self._down_notified:
            text = (f"cluster {self.cluster} unreachable for {self._failed} ticks "
                    f"(since {_utc(self._down_since)}): {exc}. Jobs are not being judged; "
                    "nothing is concluded about them until it answers again.")
            self.outbox.emit(WatchEvent("cluster_unreachable",
                                  f"cluster:{self.cluster}:down:{int(self._down_since)}",
                                  self.cluster, text,
                                  facts={"ticks": self._failed, "error": str(exc),
                                         "since": _utc(self._down_since)}),
                       "cluster_unreachable", now, report)
            self._down_notified = True
        return report

    def _cluster_ok(self, now: float, report: TickReport) -> None:
        if self._down_notified and self._down_since is not None:
            text = (f"cluster {self.cluster} answers again (unreachable since "
                    f"{_utc(self._down_since)}); watching resumes.")
            self.outbox.emit(WatchEvent("cluster_back",
                                  f"cluster:{self.cluster}:back:{int(self._down_since)}",
                                  self.cluster, text, facts={"since": _utc(self._down_since)}),
                       "cluster_back", now, report)
        self._failed = 0
        self._down_since = None
        self._down_notified = False

    # ------------------------------------------------------------------ jobs

    def _job(self, w: WatchedJob, record: JobRecord, now: float, report: TickReport,
             memory: StepMemory | None = None, reads: JobReads | None = None) -> None:
        jw = self._watch_for(w, record)
        jw.record = record
        if record.array_job_id is not None and record.array_task_id is None \
                and record.is_finished:
            # An array's tasks that never started (cancelled while waiting): nothing ran,
            # nothing to diagnose; its chain's root counts the tasks that did.
            self._unwatch(w.job_id)
            self._end_adopted_chain(w.chain_id, now)
            return
        if record.is_pending:
            self._pending(jw, record, now, report)
            return
        self._set_held_since(jw, None)
        reads = reads if reads is not None else JobReads()
        if record.is_running:
            self.logs.apply(jw, reads, now, report)
            self._sstat_sample(jw, memory)
            self._running(jw, record, now, report)
        elif record.is_finished:
            if self.store.watched_jobs.get(self.cluster, str(w.job_id)) is None:
                # Unwatched while this tick ran (a "Cancel and resume" click scancels only
                # after removing the job from the list, and records its attempt itself):
                # its end is that decision's, not a failure to report.
                self._jobs.pop(jw.job_id, None)
                return
            if self.logs.apply(jw, reads, now, report):
                return  # more of the log than one tick may read: diagnose when caught up
            self._finished(w, jw, record, now, report)

    def _end_adopted_chain(self, chain_id: int | None, now: float) -> None:
        """An adopted job's or array's chain ends once none of its jobs is watched and no
        resubmit of a task is pending (one waiting out its backoff, or one a crash
        interrupted after sbatch: its job is adopted first): completed when every attempt (of
        an array: each task's latest) completed, else stopped; its root is rewritten either
        way."""
        chain = self._chain(chain_id)
        if chain is None or not chain.parallel:
            return
        self._changed_chains.add(chain.id)
        if any(w.chain_id == chain.id for w in self.store.watched_jobs.list(self.cluster)):
            return
        if self.resubmits is not None and self.resubmits.pending(chain.id):
            return
        latest: dict[object, Any] = {}
        for a in self.store.attempts.for_chain(chain.id):
            latest[a.array_task if a.array_task is not None else a.job_id] = a
        attempts = list(latest.values())
        done = attempts and all(a.result == "COMPLETED" and a.cause in (None, "completed")
                                for a in attempts)
        self.store.chains.set_status(chain.id, "completed" if done else "stopped", now=now)

    def _unknown(self, w: WatchedJob, now: float, report: TickReport) -> None:
        """A watched job Slurm does not know: after `unknown_after_s`, say so and stop."""
        if now - w.added_at < self.unknown_after_s:
            return
        job = str(w.job_id)
        recipe = self._recipe_of(w.chain_id)
        minutes = (now - w.added_at) / 60
        text = (f"job {job} is known to neither squeue nor sacct {minutes:.0f} min after it "
                f"was watched (purged from accounting, or not a job of cluster "
                f"{self.cluster}); trainbot stopped watching it. `/train watch {job}` "
                "watches it again.")
        if not self.outbox.emit(WatchEvent("unknown", f"{self.cluster}:{job}:unknown", self.cluster,
                                     text, w.chain_id, job, recipe,
                                     facts={"minutes": minutes}), "unknown", now, report):
            return  # not told yet: keep it, the next tick tries again
        attempt = self.store.attempts.get_by_job(job, self.cluster)
        if attempt is not None and attempt.result is None:
            self.store.attempts.update(attempt.id, state="UNKNOWN", result="UNKNOWN")
        self._unwatch(job)
        self._end_adopted_chain(w.chain_id, now)
        if w.chain_id is not None:
            self.outbox.chain_changed(w.chain_id)

    # ------------------------------------------------------------------ memory from sstat

    @staticmethod
    def _needs_sstat(jw: JobWatch | None) -> bool:
        """Host RSS has no better source: the log printed none, the sampler wrote nothing
        (a job not seen before may turn out to print RSS: the sample is then dropped)."""
        return jw is None or not (jw.analysis.series.log_rss_seen or jw.sampler.points)

    def _memory(self, records: dict[int, JobRecord], report: TickReport
                ) -> dict[int, StepMemory]:
        """ONE `slurm.memory` (sstat) call for every running job that needs it. A failure
        (controller gone between squeue and sstat, an odd answer) is logged and costs only
        this tick's RSS samples: the jobs are still judged from their logs."""
        memory = getattr(self.slurm, "memory", None)
        if memory is None:
            return {}
        ids = sorted(job_id for job_id, record in records.items()
                     if record.is_running and self._needs_sstat(self._jobs.get(job_id)))
        if not ids:
            return {}
        report.slurm_calls += 1
        report.round_trips += 1  # sstat
        try:
            return memory(ids)
        except (ClusterError, SlurmParseError) as exc:
            log.warning("%s: sstat for %d running job(s) failed, no RSS samples this tick: %s",
                        self.cluster, len(ids), exc)
            return {}

    def _sstat_sample(self, jw: JobWatch, memory: StepMemory | None) -> None:
        """The job's sstat MaxRSS as a sample at its current iteration. No time: progress
        charts and timings read (time, iteration) from samples, and this one is no progress."""
        if memory is None or memory.max_rss_bytes is None or not self._needs_sstat(jw):
            return
        if jw.analysis.add_rss(memory.max_rss_bytes, source="sstat"):
            jw.rss_step = memory.step

    def _rss_note(self, jw: JobWatch) -> str:
        """Where a leak warning's RSS came from, when it is not the log itself."""
        series = jw.analysis.series
        if series.external_rss_source == "sstat" and self._needs_sstat(jw):
            step = f" (MaxRSS of step {jw.rss_step})" if jw.rss_step else ""
            return f"; RSS from sstat{step}"
        return ""

    def _watch_for(self, w: WatchedJob, record: JobRecord) -> JobWatch:
        job_id = int(w.job_id)
        jw = self._jobs.get(job_id)
        if jw is None:
            recipe = self._recipe_of(w.chain_id)
            jw = JobWatch(job_id, w.chain_id, recipe, self._new_analysis(recipe),
                           held_since=getattr(w, "held_since", None))
            self._jobs[job_id] = jw
        return jw

    def _new_analysis(self, recipe: str | None) -> LogAnalysis:
        cfg = self._recipe_cfg(recipe)
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
        rep = held_report(record, jw.held_since, now, policy=self._params(jw.recipe))
        if rep is not None:
            key = f"{self.cluster}:{record.job_id}:held:{record.restart_count}"
            self.outbox.emit(WatchEvent("held", key, self.cluster, rep.text, jw.chain_id,
                                  str(record.job_id), jw.recipe, record=record,
                                  facts={"reason": rep.reason, "held_s": rep.held_s}),
                       "held", now, report)

    def _set_held_since(self, jw: JobWatch, held_since: float | None) -> None:
        """When the job was first seen held, kept in the store: a restart of the bot does not
        start the `held_report_s` wait over."""
        if jw.held_since != held_since:
            jw.held_since = held_since
            self.store.watched_jobs.set_held_since(self.cluster, str(jw.job_id), held_since)

    def _running(self, jw: JobWatch, record: JobRecord, now: float, report: TickReport) -> None:
        p = self._raw_policy(jw.recipe)
        judge_at = now + jw.skew if jw.skew is not None else None
        diag = self._judge_running(jw, record, p, judge_at, now)
        stall_started = None
        cpu = None
        if diag.class_id == "hang" and diag.metrics.stall_seconds is not None:
            stall_started = now - diag.metrics.stall_seconds  # on the wall clock
            around = cpu_around(jw.sampler, stall_started, now=now)
            if around is not None:
                cpu = CpuEvidence(*around)
        diag = self._with_sampler_leak(jw, diag, record, p)
        history = ChainHistory(warnings=tuple(self.outbox.past_warnings(jw.chain_id)))
        warnings = early_warnings(diag, history, p, now, cpu=cpu,
                                  gpu_util_pct=_recent_gpu_util(jw.analysis),
                                  stall_started_at=stall_started, job_id=str(jw.job_id),
                                  worker_rss=role_growth(jw.sampler, "worker"))
        for dec in warnings:
            if dec.class_id == "memory_leak" and (note := self._rss_note(jw)):
                dec = replace(dec, reason=dec.reason + note,
                              facts={**dec.facts, "sstat_step": jw.rss_step or ""})
            key = self._warning_key(jw, dec, diag)
            kind = "note" if dec.kind == DecisionKind.NOTE else "warning"
            self.outbox.emit(WatchEvent(kind, key, self.cluster, dec.reason, jw.chain_id,
                                  str(jw.job_id), jw.recipe, diagnosis=diag, decision=dec,
                                  record=record, series=jw.analysis.series,
                                  sampler=jw.sampler if jw.sampler.points else None,
                                  skew=jw.skew),
                       dec.class_id, now, report,
                       extra={"projected_oom_iter": dec.projected_oom_iter,
                              "stall_started_at": stall_started, "facts": dict(dec.facts)})
        self._update_attempt(jw, now, state=record.state,
                             last_iter=jw.analysis.series.last_iteration,
                             started_at=record.start_time)

    def _judge_running(self, jw: JobWatch, record: JobRecord,
                       policy: PolicyConfig | PolicyParams | None,
                       judge_at: float | None, now: float) -> Diagnosis:
        """The running job's diagnosis. The full `diagnose` (whose leak fit costs ~10 ms a
        job) runs every `judge_every_s`; in between only the cheap stall detector runs each
        tick, and a stall (or the end of one) triggers the full diagnosis at once."""
        opts = _detector_options(policy)
        last = jw.diagnosis
        if last is not None and now - jw.judged_at < self.judge_every_s \
                and last.class_id != "hang":
            stall = detect_stall(jw.analysis.series, judge_at,
                                 min_s=opts["stall_min_s"], factor=opts["stall_factor"],
                                 save_time_s=opts["save_time_s"])
            if stall is None:
                return last
        diag = jw.analysis.diagnose(record.accounting(), now=judge_at,
                                    target_iter=self._target(jw.recipe), **opts)
        jw.diagnosis, jw.judged_at = diag, now
        return diag

    def _with_sampler_leak(self, jw: JobWatch, diag: Diagnosis, record: JobRecord,
                           policy: Any) -> Diagnosis:
        """A log that prints no RSS: look for the leak in the sampler's RSS instead."""
        if diag.class_id == "memory_leak" or "memory_leak" in diag.secondary:
            return diag
        if jw.analysis.series.log_rss_seen or not jw.sampler.points or jw.skew is None:
            return diag
        progress = [(s.time - jw.skew, s.iteration) for s in jw.analysis.series.samples
                    if s.time is not None and s.iteration is not None]
        params = params_from(policy)
        finding = sampler_leak(jw.sampler, progress, record.mem_limit_bytes,
                               target_iter=self._target(jw.recipe),
                               min_samples=params.leak_min_samples,
                               warn_margin=params.leak_warn_margin)
        if finding is None:
            return diag
        metrics = replace(diag.metrics, projected_oom_iter=finding.projected_oom_iter,
                          rss_gib_per_100_iter=round(finding.slope_gib_per_100_iter, 2))
        return replace(diag, secondary=(*diag.secondary, "memory_leak"), metrics=metrics)

    def _warning_key(self, jw: JobWatch, dec: Decision, diag: Diagnosis) -> str:
        base = f"{self.cluster}:{jw.job_id}:{dec.class_id}"
        if dec.class_id == "hang":
            line = diag.evidence[0].line if diag.evidence else 0
            return f"{base}:line{line}"  # one warning per stall episode (its last progress)
        if dec.class_id == "memory_leak":
            return f"{base}:{dec.projected_oom_iter}"
        return base

    def _finished(self, w: WatchedJob, jw: JobWatch, record: JobRecord, now: float,
                  report: TickReport) -> None:
        jw.analysis.finish()
        acct = record.accounting()
        p = self._raw_policy(jw.recipe)
        diag = jw.analysis.diagnose(acct, target_iter=self._target(jw.recipe),
                                    **_detector_options(p))
        if (diag.class_id in ("gpu_failure", "node_failure") and diag.node is None
                and record.node and not any(c in record.node for c in ",[")):
            diag = replace(diag, node=record.node)  # a one-node job: its node is the faulty one
        history = self._history(jw.chain_id, current_job=str(jw.job_id),
                                current_last_iter=diag.metrics.last_iter)
        chain = self._chain(jw.chain_id)
        task = record.array_task_id if chain is not None and chain.is_array \
            and not chain.adopted else None
        checkpoint = self._checkpoint(jw.recipe, task)
        decision = decide(diag, history, p, now, checkpoint_iter=checkpoint, accounting=acct,
                          worker_rss=role_growth(jw.sampler, "worker"),
                          trainer_rss=role_growth(jw.sampler, "trainer"))
        if task is not None:  # a resubmit reruns this task alone
            decision = replace(decision, facts={**decision.facts, "array_task": task})
        # A warning that fails to post never holds the incident back.
        self.outbox.flush_warnings(jw.chain_id, str(jw.job_id), jw.recipe, now, report)
        key = f"{self.cluster}:{jw.job_id}:final"
        text = f"job {record.display_id} {record.state}: {diag.class_id} — {decision.reason}"
        posted = self.outbox.emit(
            WatchEvent("incident", key, self.cluster, text, jw.chain_id, str(jw.job_id),
                       jw.recipe, diagnosis=diag, decision=decision, record=record,
                       series=jw.analysis.series,
                       sampler=jw.sampler if jw.sampler.points else None, skew=jw.skew),
            diag.class_id, now, report,
            extra={"decision": decision.to_json()},
        )
        if not posted:
            return  # publishing failed: keep watching, the next tick retries
        resubmitting = (decision.kind == DecisionKind.RESUBMIT_NOW and self.resubmits is not None
                        and jw.chain_id is not None and jw.recipe is not None)
        if resubmitting:
            assert self.resubmits is not None and jw.chain_id is not None and jw.recipe
            self.resubmits.record_due(jw.chain_id, str(jw.job_id), jw.recipe, decision, now)
        self._update_attempt(
            jw, now, force=True, state=record.state, last_iter=diag.metrics.last_iter,
            ended_at=record.end_time or now, result=record.state, cause=diag.class_id,
            work_lost_iters=decision.work_lost_iters,
        )
        if chain is not None and not chain.parallel:
            if diag.class_id == "completed":
                self.store.chains.set_status(chain.id, "completed", now=now)
            elif decision.stop_chain:
                self.store.chains.set_status(chain.id, "stopped", now=now)
            self.outbox.chain_changed(chain.id)
        self._unwatch(str(jw.job_id))
        if chain is not None and chain.parallel and not resubmitting:
            self._end_adopted_chain(chain.id, now)  # an array goes on while tasks remain

    def _unwatch(self, job: str) -> None:
        """Done with a job: off the watch list, its tail offsets and in-memory state gone."""
        self.store.watched_jobs.remove(self.cluster, job)
        self.store.tail_offsets.delete_job(job)
        self._jobs.pop(int(job), None)

    # ------------------------------------------------------------------ store views

    def _history(self, chain_id: int | None, *, current_job: str | None = None,
                 current_last_iter: int | None = None) -> ChainHistory:
        chain = self._chain(chain_id)
        if chain is not None and chain.is_array and not chain.adopted and current_job:
            return self._task_history(chain, current_job, current_last_iter)
        if chain_id is None or (chain is not None and chain.parallel):
            # no chain, or one trainbot did not submit (an array's tasks run side by side,
            # not one after another): the job is its own history
            attempts = ()
            if current_job is not None:
                attempts = (AttemptFacts(current_job, 1, last_iter=current_last_iter),)
            return ChainHistory(attempts=attempts)
        chain = self.store.chains.get(chain_id)
        rows = self.store.attempts.for_chain(chain_id)
        facts = []
        for a in rows:
            last = a.last_iter
            if current_job is not None and a.job_id == current_job:
                last = current_last_iter if current_last_iter is not None else last
            facts.append(AttemptFacts(a.job_id, a.attempt_no, last_iter=last,
                                      start_iter=a.start_iter, class_id=a.cause,
                                      ended_at=a.ended_at))
        return ChainHistory(attempts=tuple(facts),
                            retries_used=chain.retries_used if chain else 0,
                            warnings=tuple(self.outbox.past_warnings(chain_id)))

    def _task_history(self, chain: Chain, current_job: str,
                      current_last_iter: int | None) -> ChainHistory:
        """A submitted array's task judged on its own: its earlier attempts (the task's
        resubmits) and the retries of its own budget they spent."""
        rows = self.store.attempts.for_chain(chain.id)
        current = next((a for a in rows if a.job_id == current_job), None)
        task = current.array_task if current is not None else None
        mine = [a for a in rows if a.array_task == task] if task is not None else \
            [a for a in rows if a.job_id == current_job]
        facts = []
        for n, a in enumerate(mine, start=1):
            last = a.last_iter
            if a.job_id == current_job and current_last_iter is not None:
                last = current_last_iter
            facts.append(AttemptFacts(a.job_id, n, last_iter=last, start_iter=a.start_iter,
                                      class_id=a.cause, ended_at=a.ended_at))
        if not facts:
            facts = [AttemptFacts(current_job, 1, last_iter=current_last_iter)]
        used = task_retries_used([a.cause for a in mine if a.job_id != current_job],
                                 self.catalogue)
        return ChainHistory(attempts=tuple(facts), retries_used=used,
                            warnings=tuple(self.outbox.past_warnings(chain.id)))

    def _update_attempt(self, jw: JobWatch, now: float, *, force: bool = False,
                        **fields: Any) -> None:
        """Progress into the attempt row: state changes at once, last_iter at most every
        `persist_every_s` (always when `force`, i.e. at the end)."""
        attempt = jw.attempt
        if attempt is None or force:
            attempt = jw.attempt = self.store.attempts.get_by_job(str(jw.job_id), self.cluster)
        if attempt is None:
            return
        values = {k: v for k, v in fields.items() if v is not None}
        if values.get("last_iter") is not None and attempt.last_iter is not None:
            values["last_iter"] = max(values["last_iter"], attempt.last_iter)
        changed = {k: v for k, v in values.items() if getattr(attempt, k) != v}
        if not changed:
            return
        recent = jw.attempt_written_at is not None and \
            now - jw.attempt_written_at < self.persist_every_s
        if set(changed) == {"last_iter"} and recent and not force:
            return
        jw.attempt = self.store.attempts.update(attempt.id, **changed)
        jw.attempt_written_at = now
        chain = self._chain(jw.chain_id)
        if chain is not None and chain.parallel and "state" in changed:
            self._changed_chains.add(chain.id)  # its row in the root changes

    def _recipe_of(self, chain_id: int | None) -> str | None:
        chain = self._chain(chain_id)
        return chain.recipe if chain is not None and not chain.adopted else None

    def _recipe_cfg(self, recipe: str | None) -> RecipeConfig | None:
        if self.config is None or recipe is None:
            return None
        try:
            return self.config.recipe(recipe)
        except Exception:  # noqa: BLE001 - a recipe removed from the config
            return None

    def _raw_policy(self, recipe: str | None) -> PolicyConfig | PolicyParams | None:
        if self._policy is not None:
            return self._policy
        if self.config is not None and recipe is not None and self._recipe_cfg(recipe):
            return self.config.policy_for(recipe)
        return getattr(self.config, "policy", None)

    def _params(self, recipe: str | None) -> PolicyParams:
        return params_from(self._raw_policy(recipe))

    def _target(self, recipe: str | None) -> int | None:
        cfg = self._recipe_cfg(recipe)
        return getattr(cfg, "target_iter", None)

    def _checkpoint(self, recipe: str | None, task: int | None = None) -> int | None:
        """The iteration of the recipe's latest complete checkpoint (of an array's task
        `task`: its own, `%a` in the recipe's checkpoint dir)."""
        if recipe is None:
            return None
        try:
            if task is not None:
                return self._checkpoint_iter(recipe, task=task)
            return self._checkpoint_iter(recipe)
        except (ClusterError, OSError) as exc:
            log.warning("%s: cannot look up %s's checkpoints: %s", self.cluster, recipe, exc)
            return None

def _detector_options(policy: PolicyConfig | PolicyParams | None) -> dict[str, float]:
    """The diagnose() thresholds of a recipe's policy: stall time and factor, save time, leak
    samples and headroom (the policy's defaults where it sets none)."""
    p = params_from(policy)
    return {"stall_min_s": p.stall_min_s, "stall_factor": p.stall_factor,
            "save_time_s": p.save_time_s, "leak_min_samples": p.leak_min_samples,
            "leak_warn_margin": p.leak_warn_margin}


def _recent_gpu_util(analysis: LogAnalysis, n: int = 20) -> float | None:
    values = [s.gpu_util for s in analysis.series.samples[-200:] if s.gpu_util is not None]
    return statistics.median(values[-n:]) if len(values) >= 3 else None


def _utc(t: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__ = ["Watcher"]
