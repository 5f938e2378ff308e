"""The watcher tick for one cluster: poll Slurm once, read only new log bytes, warn early,
diagnose finished jobs, and decide what to do (bot.core.policy).

`Watcher.tick(now)` is deterministic given its adapters, so tests drive it with fakes and a
fake clock; APScheduler (coalesce, max_instances=1, UTC) only calls it.

Per tick:
- ONE `slurm.jobs(ids)` call (one squeue + one sacct) for all watched jobs of the cluster;
- `ClusterUnavailable` -> the tick is logged and counted, the last known state is kept and no
  job is judged; after `unreachable_ticks` failures in a row ONE "cluster unreachable" event,
  and ONE "back" event when a tick succeeds again (never per-job alarms);
- ONE `slurm.memory(ids)` call (one sstat) for the running jobs whose host RSS has no better
  source (the log prints none and the sampler has written nothing): each job's MaxRSS is fed to
  its analysis as a sample at its current iteration (leak fit, RSS chart), and a leak warning
  built on it says "RSS from sstat"; a failed sstat costs only this tick's samples;
- running job: new log bytes by offset (`bot.cluster.tail.read_new_lines`, offsets persisted
  in the store), fed to the job's `LogAnalysis`; sampler JSON lines likewise; early warnings
  through `bot.core.policy.early_warnings`;
- pending job held by an admin: `held_report` once the hold has lasted long enough;
- finished job: the rest of the log, `diagnose`, `decide`; the attempt row gets progress,
  result, cause and work lost; the job leaves the watch list.

Crash safety: every event is first recorded in the store's incidents table under a stable
key with state `pending`, then published, then marked `posted`. A key already `posted` is
never published again; one left `pending` (a crash between the two) is published again when
the condition is seen on a later tick — the finished job stays watched until its event is
posted, so that is guaranteed for incidents; a warning still `pending` when its job ends is
published (as a note) before the incident. Publishing must be idempotent by key (the Slack
poster is). Automatic resubmits go `due` -> `submitting` -> `submitted` -> `done`; a crash
inside the submit is reconciled with Slurm before anything is submitted again (see
`_due_resubmits`). tests/integration/test_crash_safety.py kills the bot at these points.

Restart: the in-memory analysis is rebuilt from the persisted offset after re-reading a
bounded window (`warmup_bytes`) before it, so a job that is silent right now (a hang) is still
judged against its last progress line.

Log clock vs wall clock: log timestamps are parsed as written (no time zone). The watcher
keeps `skew = last log time - the file's mtime` (when that line was written; the read time if
SFTP gives no mtime) and judges a running job at `now + skew` on the log's clock, so a silent
log ages with the wall clock — also right after a restart, from the persisted mtime.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bot.cluster.errors import ClusterError, ClusterUnavailable
from bot.cluster.tail import TailState, read_new_lines
from bot.core.detectors import detect_stall
from bot.core.diagnose import LogAnalysis
from bot.core.metrics import MetricSeries
from bot.core.models import Diagnosis
from bot.core.policy import (
    AttemptFacts,
    ChainHistory,
    CpuEvidence,
    Decision,
    DecisionKind,
    PastWarning,
    decide,
    early_warnings,
    held_report,
    params_from,
)
from bot.core.sampler_series import SamplerSeries, cpu_around, role_growth, sampler_leak
from bot.core.slurm_records import JobRecord, SlurmParseError, StepMemory, expand_output_pattern
from bot.crashpoint import crashpoint

log = logging.getLogger(__name__)

WARNING_CLASSES = ("memory_leak", "hang", "low_gpu_util")
RESUBMIT_CLASS = "resubmit"  # an incidents row tracking an automatic resubmit (due ... done)


@dataclass(frozen=True)
class WatchEvent:
    """Something the thread (or the ops channel) should say. `key` is stable and unique.

    kind: `incident` (a finished job, with `diagnosis` + `decision`), `warning` / `note`
    (early warnings on a running job), `held` (JobHeldAdmin), `unknown` (a watched job Slurm
    does not know, no longer watched), `cluster_unreachable`, `cluster_back`.

    Incidents and early warnings also carry what their charts are drawn from, in memory only
    (never stored): `series`, the job's bounded MetricSeries; `sampler`, its SamplerSeries
    (None when the sampler wrote nothing); `skew`, log clock minus wall clock (see the module
    doc), which maps the sampler's wall times onto the log's.

    `text` is the English message (stored with the event, logged); `facts` says it as data
    for messages in other languages where `decision` / `record` do not: held (`reason`,
    `held_s`), unknown (`minutes`), resubmitted (`new_job`), cluster_unreachable (`ticks`,
    `since`, `error`), cluster_back (`since`), a warning re-posted as a note (its decision's
    facts, from the store).
    """

    kind: str
    key: str
    cluster: str
    text: str
    chain_id: int | None = None
    job_id: str | None = None
    recipe: str | None = None
    diagnosis: Diagnosis | None = None
    decision: Decision | None = None
    record: JobRecord | None = None
    series: MetricSeries | None = field(default=None, repr=False, compare=False)
    sampler: SamplerSeries | None = field(default=None, repr=False, compare=False)
    skew: float | None = None
    facts: dict[str, Any] = field(default_factory=dict, compare=False)


class EventSink(Protocol):
    """Where events go (the Slack layer renders them; tests record them). Idempotent by key.

    A sink may also define `chain_changed(chain_id)`: called once the store holds a finished
    attempt's result and the chain's status, so the thread's root can be rewritten from it.
    """

    def publish(self, event: WatchEvent) -> None: ...


@dataclass
class TickReport:
    """What one tick did (for logs, tests and the benchmarks)."""

    ok: bool
    slurm_calls: int = 0
    jobs: int = 0
    bytes_read: int = 0
    events: list[WatchEvent] = field(default_factory=list)
    error: str | None = None


@dataclass
class _JobWatch:
    job_id: int
    chain_id: int | None
    recipe: str | None
    analysis: LogAnalysis
    log: TailState | None = None
    sampler: SamplerSeries = field(default_factory=SamplerSeries)
    sampler_tail: TailState | None = None
    skew: float | None = None
    held_since: float | None = None
    record: JobRecord | None = None
    persisted_at: dict[str, float] = field(default_factory=dict)  # tail offsets, by path
    attempt: Any = None  # the store's attempt row as last read / written
    diagnosis: Diagnosis | None = None  # the last full diagnosis of the running job
    judged_at: float = 0.0
    attempt_written_at: float | None = None
    rss_step: str | None = None  # the sstat step whose MaxRSS was last fed to the analysis


class Watcher:
    """The tick of one cluster (see module doc). Adapters are injected:

    - `slurm`: has `jobs(ids) -> {id: JobRecord}` and, optionally, `memory(ids) -> {id:
      StepMemory}` (bot.cluster.slurm.SlurmClient; without `memory` no sstat is made);
    - `sftp`: a zero-argument callable returning an SFTP client (stat/open) — called lazily,
      so an unreachable cluster is only contacted by the one Slurm call;
    - `store`: bot.store.Store; `catalogue`: bot.core.catalogue.Catalogue; `config`:
      bot.config.Config (recipes, policy_for), may be None in tests with `policy`;
    - `checkpoint_iter`: recipe name -> iteration of its latest complete checkpoint (None:
      none); default: no checkpoint knowledge (resubmits say "from scratch");
    - `sink`: EventSink;
    - `resubmit`: (recipe, chain_id, decision) -> new job id; carries out `resubmit_now`
      decisions once `not_before` has passed (None: they are only published). It records
      the new attempt and, when `decision.charged`, its retry charge in one store
      transaction (`attempts.add(charge_retry=…)`): the charge is never lost or doubled;
    - `recover`: (recipe, chain_id, old job id, decision) -> the job a resubmit interrupted
      by a crash left (recorded, charged like `resubmit`, and announced), or None (see
      `_due_resubmits`).

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
        slurm: Any,
        sftp: Callable[[], Any],
        store: Any,
        catalogue: Any,
        sink: EventSink,
        config: Any = None,
        policy: Any = None,
        checkpoint_iter: Callable[[str], int | None] | None = None,
        resubmit: Callable[[str, int, Decision], Any] | None = None,
        recover: Callable[[str, int, str, Decision], Any] | None = None,
        unreachable_ticks: int | None = None,
        max_bytes_per_job: int = 16 << 20,
        warmup_bytes: int = 8 << 20,
        persist_every_s: float = 300.0,
        max_samples_per_job: int = 1024,
        judge_every_s: float = 300.0,
        unknown_after_s: float = 900.0,
    ) -> None:
        self.cluster = cluster
        self.slurm = slurm
        self._sftp_factory = sftp
        self.store = store
        self.catalogue = catalogue
        self.sink = sink
        self.config = config
        self._policy = policy
        self._checkpoint_iter = checkpoint_iter or (lambda recipe: None)
        self._resubmit = resubmit
        self._recover = recover
        default_n = getattr(getattr(config, "policy", None), "unreachable_ticks", 3)
        self.unreachable_ticks = unreachable_ticks or default_n
        self.max_bytes_per_job = max_bytes_per_job
        self.warmup_bytes = warmup_bytes
        self.persist_every_s = persist_every_s
        self.max_samples_per_job = max_samples_per_job
        self.judge_every_s = judge_every_s
        self.unknown_after_s = unknown_after_s
        self._warnings: dict[int, list[PastWarning]] = {}  # per chain, loaded once
        self._jobs: dict[int, _JobWatch] = {}
        self._records: dict[int, JobRecord] = {}  # last known state (kept on failed ticks)
        self._failed = 0
        self._down_since: float | None = None
        self._down_notified = False

    # ------------------------------------------------------------------ tick

    def tick(self, now: float) -> TickReport:
        """One poll of the cluster at wall time `now` (epoch seconds)."""
        watched = self.store.watched_jobs.list(self.cluster)
        ids = sorted({int(w.job_id) for w in watched})
        report = TickReport(ok=True, jobs=len(ids))
        if not ids:
            self._cluster_ok(now, report)
            self._due_resubmits(now, report)
            return report
        try:
            report.slurm_calls = 1
            records = self.slurm.jobs(ids)
        except ClusterUnavailable as exc:
            return self._failed_tick(now, exc, report)
        self._cluster_ok(now, report)
        self._records.update(records)
        memory = self._memory(records, report)
        for w in watched:
            job_id = int(w.job_id)
            record = records.get(job_id)
            if record is None:  # not known to squeue/sacct (yet): nothing to judge
                self._unknown(w, now, report)
                continue
            try:
                self._job(w, record, now, report, memory.get(job_id))
            except ClusterError as exc:  # SSH dropped mid-tick: try again next tick
                log.warning("%s: job %s: %s; will retry next tick", self.cluster, job_id, exc)
            except OSError as exc:  # SFTP read failed
                log.warning("%s: job %s: cannot read its files: %s", self.cluster, job_id, exc)
            except Exception:  # noqa: BLE001 - one bad job must not starve the others
                log.exception("%s: job %s: watching it failed; the other jobs go on",
                              self.cluster, job_id)
        # Jobs no longer watched (unwatched, finished elsewhere): forget their state, and the
        # warnings of chains with no job left here (read again from the store if they return).
        for gone in set(self._jobs) - set(ids):
            del self._jobs[gone]
        for gone in set(self._records) - set(ids):
            del self._records[gone]
        for gone in set(self._warnings) - {w.chain_id for w in watched}:
            del self._warnings[gone]
        self._due_resubmits(now, report)
        return report

    def forget(self) -> None:
        """Drop what this watcher holds in memory (job series, tail positions, last records,
        outage counters): the next tick rebuilds it from the store, as after a restart. For a
        replica taking a cluster back after another one watched it meanwhile."""
        self._warnings.clear()
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
            self._emit(WatchEvent("cluster_unreachable",
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
            self._emit(WatchEvent("cluster_back",
                                  f"cluster:{self.cluster}:back:{int(self._down_since)}",
                                  self.cluster, text, facts={"since": _utc(self._down_since)}),
                       "cluster_back", now, report)
        self._failed = 0
        self._down_since = None
        self._down_notified = False

    # ------------------------------------------------------------------ jobs

    def _job(self, w: Any, record: JobRecord, now: float, report: TickReport,
             memory: StepMemory | None = None) -> None:
        jw = self._watch_for(w, record)
        jw.record = record
        if record.is_pending:
            self._pending(jw, record, now, report)
            return
        self._set_held_since(jw, None)
        if record.is_running:
            self._read(jw, record, now, report)
            self._sstat_sample(jw, memory)
            self._running(jw, record, now, report)
        elif record.is_finished:
            if self.store.watched_jobs.get(self.cluster, str(w.job_id)) is None:
                # Unwatched while this tick ran (a "Cancel and resume" click scancels only
                # after removing the job from the list, and records its attempt itself):
                # its end is that decision's, not a failure to report.
                self._jobs.pop(jw.job_id, None)
                return
            if self._read(jw, record, now, report, drain=True):
                return  # more of the log than one tick may read: diagnose when caught up
            self._finished(w, jw, record, now, report)

    def _unknown(self, w: Any, now: float, report: TickReport) -> None:
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
        if not self._emit(WatchEvent("unknown", f"{self.cluster}:{job}:unknown", self.cluster,
                                     text, w.chain_id, job, recipe,
                                     facts={"minutes": minutes}), "unknown", now, report):
            return  # not told yet: keep it, the next tick tries again
        attempt = self.store.attempts.get_by_job(job, self.cluster)
        if attempt is not None and attempt.result is None:
            self.store.attempts.update(attempt.id, state="UNKNOWN", result="UNKNOWN")
        self._unwatch(job)
        if w.chain_id is not None:
            self._chain_changed(w.chain_id)

    # ------------------------------------------------------------------ memory from sstat

    @staticmethod
    def _needs_sstat(jw: _JobWatch | None) -> bool:
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
        try:
            return memory(ids)
        except (ClusterError, SlurmParseError) as exc:
            log.warning("%s: sstat for %d running job(s) failed, no RSS samples this tick: %s",
                        self.cluster, len(ids), exc)
            return {}

    def _sstat_sample(self, jw: _JobWatch, memory: StepMemory | None) -> None:
        """The job's sstat MaxRSS as a sample at its current iteration. No time: progress
        charts and timings read (time, iteration) from samples, and this one is no progress."""
        if memory is None or memory.max_rss_bytes is None or not self._needs_sstat(jw):
            return
        if jw.analysis.add_rss(memory.max_rss_bytes, source="sstat"):
            jw.rss_step = memory.step

    def _rss_note(self, jw: _JobWatch) -> str:
        """Where a leak warning's RSS came from, when it is not the log itself."""
        series = jw.analysis.series
        if series.external_rss_source == "sstat" and self._needs_sstat(jw):
            step = f" (MaxRSS of step {jw.rss_step})" if jw.rss_step else ""
            return f"; RSS from sstat{step}"
        return ""

    def _watch_for(self, w: Any, record: JobRecord) -> _JobWatch:
        job_id = int(w.job_id)
        jw = self._jobs.get(job_id)
        if jw is None:
            recipe = self._recipe_of(w.chain_id)
            jw = _JobWatch(job_id, w.chain_id, recipe, self._new_analysis(recipe),
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

    def _pending(self, jw: _JobWatch, record: JobRecord, now: float, report: TickReport) -> None:
        if not record.is_held:
            self._set_held_since(jw, None)
            return
        if jw.held_since is None:
            self._set_held_since(jw, now)
        rep = held_report(record, jw.held_since, now, policy=self._params(jw.recipe))
        if rep is not None:
            key = f"{self.cluster}:{record.job_id}:held:{record.restart_count}"
            self._emit(WatchEvent("held", key, self.cluster, rep.text, jw.chain_id,
                                  str(record.job_id), jw.recipe, record=record,
                                  facts={"reason": rep.reason, "held_s": rep.held_s}),
                       "held", now, report)

    def _set_held_since(self, jw: _JobWatch, held_since: float | None) -> None:
        """When the job was first seen held, kept in the store: a restart of the bot does not
        start the `held_report_s` wait over."""
        if jw.held_since != held_since:
            jw.held_since = held_since
            self.store.watched_jobs.set_held_since(self.cluster, str(jw.job_id), held_since)

    def _running(self, jw: _JobWatch, record: JobRecord, now: float, report: TickReport) -> None:
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
        diag = self._with_sampler_leak(jw, diag, record)
        history = ChainHistory(warnings=tuple(self._past_warnings(jw.chain_id)))
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
            self._emit(WatchEvent(kind, key, self.cluster, dec.reason, jw.chain_id,
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

    def _judge_running(self, jw: _JobWatch, record: JobRecord, policy: Any,
                       judge_at: float | None, now: float) -> Diagnosis:
        """The running job's diagnosis. The full `diagnose` (whose leak fit costs ~10 ms a
        job) runs every `judge_every_s`; in between only the cheap stall detector runs each
        tick, and a stall (or the end of one) triggers the full diagnosis at once."""
        opts = _detector_options(policy)
        last = jw.diagnosis
        if last is not None and now - jw.judged_at < self.judge_every_s \
                and last.class_id != "hang":
            stall = detect_stall(jw.analysis.series, judge_at,
                                 min_s=opts.get("stall_min_s", 300.0),
                                 factor=opts.get("stall_factor", 10.0),
                                 save_time_s=opts.get("save_time_s", 600.0))
            if stall is None:
                return last
        diag = jw.analysis.diagnose(record.accounting(), now=judge_at,
                                    target_iter=self._target(jw.recipe), **opts)
        jw.diagnosis, jw.judged_at = diag, now
        return diag

    def _with_sampler_leak(self, jw: _JobWatch, diag: Diagnosis, record: JobRecord
                           ) -> Diagnosis:
        """A log that prints no RSS: look for the leak in the sampler's RSS instead."""
        if diag.class_id == "memory_leak" or "memory_leak" in diag.secondary:
            return diag
        if jw.analysis.series.log_rss_seen or not jw.sampler.points or jw.skew is None:
            return diag
        progress = [(s.time - jw.skew, s.iteration) for s in jw.analysis.series.samples
                    if s.time is not None and s.iteration is not None]
        finding = sampler_leak(jw.sampler, progress, record.mem_limit_bytes,
                               target_iter=self._target(jw.recipe))
        if finding is None:
            return diag
        metrics = replace(diag.metrics, projected_oom_iter=finding.projected_oom_iter,
                          rss_gib_per_100_iter=round(finding.slope_gib_per_100_iter, 2))
        return replace(diag, secondary=(*diag.secondary, "memory_leak"), metrics=metrics)

    def _warning_key(self, jw: _JobWatch, dec: Decision, diag: Diagnosis) -> str:
        base = f"{self.cluster}:{jw.job_id}:{dec.class_id}"
        if dec.class_id == "hang":
            line = diag.evidence[0].line if diag.evidence else 0
            return f"{base}:line{line}"  # one warning per stall episode (its last progress)
        if dec.class_id == "memory_leak":
            return f"{base}:{dec.projected_oom_iter}"
        return base

    def _finished(self, w: Any, jw: _JobWatch, record: JobRecord, now: float,
                  report: TickReport) -> None:
        jw.analysis.finish()
        acct = record.accounting()
        p = self._raw_policy(jw.recipe)
        diag = jw.analysis.diagnose(acct, target_iter=self._target(jw.recipe),
                                    **_detector_options(p))
        history = self._history(jw.chain_id, current_job=str(jw.job_id),
                                current_last_iter=diag.metrics.last_iter)
        checkpoint = self._checkpoint(jw.recipe)
        decision = decide(diag, history, p, now, checkpoint_iter=checkpoint, accounting=acct)
        self._flush_warnings(jw, now, report)  # one that fails never holds the incident back
        key = f"{self.cluster}:{jw.job_id}:final"
        text = f"job {jw.job_id} {record.state}: {diag.class_id} — {decision.reason}"
        posted = self._emit(
            WatchEvent("incident", key, self.cluster, text, jw.chain_id, str(jw.job_id),
                       jw.recipe, diagnosis=diag, decision=decision, record=record,
                       series=jw.analysis.series,
                       sampler=jw.sampler if jw.sampler.points else None, skew=jw.skew),
            diag.class_id, now, report,
            extra={"decision": decision.to_json()},
        )
        if not posted:
            return  # publishing failed: keep watching, the next tick retries
        if (decision.kind == DecisionKind.RESUBMIT_NOW and self._resubmit is not None
                and jw.chain_id is not None and jw.recipe is not None):
            self.store.incidents.record(
                f"{self.cluster}:{jw.job_id}:resubmit", class_id=RESUBMIT_CLASS, now=now,
                chain_id=jw.chain_id, job_id=str(jw.job_id), state="due",
                diagnosis={"recipe": jw.recipe, "decision": decision.to_json()},
            )
        self._update_attempt(
            jw, now, force=True, state=record.state, last_iter=diag.metrics.last_iter,
            ended_at=record.end_time or now, result=record.state, cause=diag.class_id,
            work_lost_iters=decision.work_lost_iters,
        )
        if jw.chain_id is not None:
            if diag.class_id == "completed":
                self.store.chains.set_status(jw.chain_id, "completed", now=now)
            elif decision.stop_chain:
                self.store.chains.set_status(jw.chain_id, "stopped", now=now)
            self._chain_changed(jw.chain_id)
        self._unwatch(str(jw.job_id))

    def _unwatch(self, job: str) -> None:
        """Done with a job: off the watch list, its tail offsets and in-memory state gone."""
        self.store.watched_jobs.remove(self.cluster, job)
        self.store.tail_offsets.delete_job(job)
        self._jobs.pop(int(job), None)

    def _chain_changed(self, chain_id: int) -> None:
        chain_changed = getattr(self.sink, "chain_changed", None)
        if chain_changed is not None:
            try:
                chain_changed(chain_id)
            except Exception:  # noqa: BLE001 - a stale root never stops the watch
                log.exception("chain %s: updating the thread's root failed", chain_id)

    def _flush_warnings(self, jw: _JobWatch, now: float, report: TickReport) -> bool:
        """Publish the job's warnings still `pending` (the bot died between intent and post
        and the condition was not seen again) before its incident, as plain notes: the job
        has ended, so their buttons would act on nothing. Slack's copy, if the post went
        through, is found by key (no duplicate). False if one could not be published."""
        if jw.chain_id is None:
            return True
        ok = True
        for inc in self.store.incidents.for_chain(jw.chain_id):
            if inc.job_id != str(jw.job_id) or inc.state != "pending" or \
                    inc.class_id not in WARNING_CLASSES:
                continue
            text = str(inc.diagnosis.get("text") or inc.class_id)
            ok = self._emit(WatchEvent("note", inc.key, self.cluster, text, jw.chain_id,
                                       str(jw.job_id), jw.recipe,
                                       facts=dict(inc.diagnosis.get("facts") or {})),
                            inc.class_id, now, report) and ok
        return ok

    # ------------------------------------------------------------------ reading

    def _read(self, jw: _JobWatch, record: JobRecord, now: float, report: TickReport,
              drain: bool = False) -> bool:
        """Read new log (and sampler) lines; True when unread log bytes remain."""
        path = self._log_path(jw, record)
        more = False
        if path is not None:
            before = jw.log.offset if jw.log is not None else None
            jw.log, more = self._tail(jw, path, jw.log, jw.analysis, report, drain, now)
            last = jw.analysis.series.last_time
            if last is not None and (jw.skew is None or jw.log.offset != before):
                # The file's mtime is when its last line was written (cluster clock, synced
                # with ours by NTP); without it, when we read it.
                written = jw.log.mtime if jw.log.mtime is not None else now
                jw.skew = last - written
        sampler_path = self._sampler_path(jw, record)
        if sampler_path is not None:
            jw.sampler_tail, _ = self._tail(jw, sampler_path, jw.sampler_tail, jw.sampler,
                                            report, drain, now)
        return more

    def _tail(self, jw: _JobWatch, path: str, state: TailState | None, target: Any,
              report: TickReport, drain: bool, now: float) -> tuple[TailState, bool]:
        """Read up to `max_bytes_per_job` new bytes of `path` into `target`; persist the
        offset. Returns the new state and whether unread bytes remain."""
        sftp = self._sftp_client()
        restored = state is None or state.path != path
        if restored:
            state = self._restore(jw, sftp, path, target)
        start_state = None if restored else state
        budget = self.max_bytes_per_job
        more = False
        while True:
            chunk = read_new_lines(sftp, state, max_bytes=budget)
            if chunk.restarted and state.offset:  # a new file (requeue, rotation): start over
                if isinstance(target, LogAnalysis):
                    target = jw.analysis = self._new_analysis(jw.recipe)
                    jw.skew, jw.diagnosis = None, None
                else:
                    target = jw.sampler = SamplerSeries()
            if chunk.lines:
                if isinstance(target, LogAnalysis):
                    target.feed(("\n".join(chunk.lines) + "\n").encode("utf-8"))
                else:
                    target.feed_lines(chunk.lines)
            report.bytes_read += chunk.bytes_read
            state = chunk.state
            budget -= chunk.bytes_read
            if not (drain and chunk.more and chunk.bytes_read and budget > 0):
                more = chunk.more
                break
        last = jw.persisted_at.get(path)
        due = last is None or now - last >= self.persist_every_s
        if state != start_state and due:  # an idle log costs no write; a busy one, few
            jw.persisted_at[path] = now
            self.store.tail_offsets.put(
                str(jw.job_id), path, offset=state.offset, size=state.size,
                line_no=state.line_no,
                signature=json.dumps({"anchor": state.anchor, "mtime": state.mtime,
                                      "inode": state.inode}),
            )
        return state, more

    def _restore(self, jw: _JobWatch, sftp: Any, path: str, target: Any) -> TailState:
        """The persisted tail state, with the analysis warmed up on the bytes before it."""
        saved = self.store.tail_offsets.get(str(jw.job_id), path)
        if saved is None or saved.offset <= 0:
            return TailState(path=path)
        try:
            sig = json.loads(saved.inode_or_signature or "{}")
        except ValueError:
            sig = {}
        state = TailState(path=path, offset=saved.offset, size=saved.size,
                          line_no=saved.line_no, anchor=sig.get("anchor", ""),
                          mtime=sig.get("mtime"), inode=sig.get("inode"))
        start = max(0, saved.offset - self.warmup_bytes)
        try:
            with sftp.open(path, "rb") as f:
                f.seek(start)
                window = f.read(saved.offset - start)
        except OSError:
            return state
        if start > 0:
            cut = window.find(b"\n") + 1
            window = window[cut:] if cut else b""
        if isinstance(target, LogAnalysis):
            target.lines = max(0, saved.line_no - window.count(b"\n"))
            target.feed(window)
        else:
            target.feed_lines(window.decode("utf-8", "replace").splitlines())
        return state

    def _sftp_client(self) -> Any:
        # Asked for each time: the factory (ClusterSessions) caches the channel and reopens it
        # after a reconnect; a copy kept here would go stale.
        return self._sftp_factory()

    # ------------------------------------------------------------------ events

    def _emit(self, event: WatchEvent, class_id: str, now: float, report: TickReport,
              extra: dict[str, Any] | None = None) -> bool:
        """Intent (store, `pending`) -> publish -> `posted`. False if publishing failed."""
        payload: dict[str, Any] = {"kind": event.kind, "text": event.text,
                                   "job_id": event.job_id, "cluster": self.cluster}
        if event.diagnosis is not None:
            payload["diagnosis"] = event.diagnosis.to_json()
        payload.update(extra or {})
        incident, _created = self.store.incidents.record(
            event.key, class_id=class_id, diagnosis=payload, now=now,
            chain_id=event.chain_id, job_id=event.job_id, state="pending",
        )
        if incident.state != "pending":
            return True  # published before (this key is done)
        crashpoint("intent_recorded", event.key)  # crash-safety test hook (no-op in production)
        try:
            self.sink.publish(event)
        except Exception as exc:  # noqa: BLE001 - a failed post must not stop the tick
            log.warning("%s: publishing %s failed, will retry: %s", self.cluster, event.key, exc)
            return False
        self.store.incidents.set_state(event.key, "posted")
        if class_id in WARNING_CLASSES and event.chain_id is not None:
            self._past_warnings(event.chain_id).append(PastWarning(
                class_id, now, projected_oom_iter=payload.get("projected_oom_iter"),
                stall_started_at=payload.get("stall_started_at"), job_id=event.job_id))
        report.events.append(event)
        return True

    # ------------------------------------------------------------------ automatic resubmits

    def _due_resubmits(self, now: float, report: TickReport) -> None:
        """Carry out `resubmit_now` decisions whose backoff has passed, through an intent row:
        `due` -> `submitting` (sbatch; the attempt and its charge recorded together) ->
        `submitted` -> `done` (thread told).

        A row found `submitting` is a crash or an error after the intent: the submit may have
        gone through. `recover(recipe, chain_id, old_job, decision)` (when given) finds and
        records the job it left (an unrecorded sbatch, or a recorded attempt whose thread was
        not told) and returns its id, or None when there is none (then it is submitted); without
        `recover`, a chain with a newer attempt counts as done. A `submitted` row is only
        told (posts are idempotent by key)."""
        if self._resubmit is None:
            return
        for chain in self.store.chains.with_status("active"):
            if chain.cluster != self.cluster:
                continue
            for inc in self.store.incidents.for_chain(chain.id):
                if inc.class_id != RESUBMIT_CLASS or \
                        inc.state not in ("due", "submitting", "submitted"):
                    continue
                data = inc.diagnosis
                decision = Decision.from_json(data.get("decision") or {})
                if decision.kind != DecisionKind.RESUBMIT_NOW:
                    self._ask_instead(inc, chain.id, data, decision, now, report)
                    continue
                if decision.not_before is not None and now < float(decision.not_before):
                    continue
                latest = self.store.attempts.latest(chain.id)
                if inc.state == "submitted":
                    new_job = latest.job_id if latest is not None else "?"
                    self._tell_resubmitted(inc, chain.id, data, decision, new_job, now, report)
                    continue
                new_job = None
                if inc.state == "submitting":
                    if self._recover is not None:
                        try:
                            new_job = self._recover(data["recipe"], chain.id,
                                                    str(inc.job_id), decision)
                        except Exception as exc:  # noqa: BLE001 - never guess: retry later
                            log.warning("%s: cannot tell whether the resubmit of %s went "
                                        "through (%s); asking again next tick",
                                        self.cluster, inc.job_id, exc)
                            continue
                    elif latest is not None and latest.job_id != inc.job_id:
                        self.store.incidents.set_state(inc.key, "done")  # it went through
                        continue
                if new_job is None:
                    self.store.incidents.set_state(inc.key, "submitting")
                    crashpoint("resubmit_intent", inc.key)  # crash-safety test hook (no-op)
                    try:
                        new_job = self._resubmit(data["recipe"], chain.id, decision)
                    except Exception as exc:  # noqa: BLE001 - retried next tick, never lost
                        log.warning("%s: resubmit of %s (chain %s) failed, will retry: %s",
                                    self.cluster, inc.job_id, chain.id, exc)
                        self.store.incidents.set_state(inc.key, "due")
                        continue
                self.store.incidents.set_state(inc.key, "submitted")
                self._tell_resubmitted(inc, chain.id, data, decision, new_job, now, report)

    def _ask_instead(self, inc: Any, chain_id: int, data: dict[str, Any], decision: Decision,
                     now: float, report: TickReport) -> None:
        """A resubmit row whose stored decision does not say `resubmit_now` (unreadable,
        written by another version): nothing is submitted, a person is asked in the thread."""
        recipe = data.get("recipe")
        resume = f"`/train resume {recipe}`" if recipe else "`/train resume RECIPE`"
        text = (f"job {inc.job_id}: trainbot could not read back its decision to resubmit "
                f"(stored kind {(data.get('decision') or {}).get('kind')!r}), so it did not "
                f"resubmit; a person decides: {resume} resumes the run.")
        if self._emit(WatchEvent("note", f"{self.cluster}:{inc.job_id}:resubmit:ask",
                                 self.cluster, text, chain_id, str(inc.job_id), recipe,
                                 decision=decision),
                      "resubmit_ask", now, report):
            self.store.incidents.set_state(inc.key, "asked")

    def _tell_resubmitted(self, inc: Any, chain_id: int, data: dict[str, Any],
                          decision: Decision, new_job: Any, now: float,
                          report: TickReport) -> None:
        text = (f"job {inc.job_id} resubmitted automatically as {new_job}"
                + (f", resuming from iteration {decision.resume_from}"
                   if decision.resume_from is not None else ", from scratch"))
        if self._emit(WatchEvent("resubmitted", f"{self.cluster}:{inc.job_id}:resubmitted",
                                 self.cluster, text, chain_id, str(inc.job_id),
                                 data["recipe"], decision=decision,
                                 facts={"new_job": str(new_job)}),
                      "resubmitted", now, report):
            self.store.incidents.set_state(inc.key, "done")

    # ------------------------------------------------------------------ store views

    def _history(self, chain_id: int | None, *, current_job: str | None = None,
                 current_last_iter: int | None = None) -> ChainHistory:
        if chain_id is None:
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
                            warnings=tuple(self._past_warnings(chain_id)))

    def _past_warnings(self, chain_id: int | None) -> list[PastWarning]:
        """Warnings posted in the chain: read from the store once, then kept up to date."""
        if chain_id is None:
            return []
        cached = self._warnings.get(chain_id)
        if cached is None:
            cached = []
            for inc in self.store.incidents.for_chain(chain_id):
                if inc.class_id not in WARNING_CLASSES or inc.state != "posted":
                    continue
                data = inc.diagnosis
                cached.append(PastWarning(inc.class_id, inc.created_at,
                                          projected_oom_iter=data.get("projected_oom_iter"),
                                          stall_started_at=data.get("stall_started_at"),
                                          job_id=inc.job_id))
            self._warnings[chain_id] = cached
        return cached

    def _update_attempt(self, jw: _JobWatch, now: float, *, force: bool = False,
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

    def _recipe_of(self, chain_id: int | None) -> str | None:
        if chain_id is None:
            return None
        chain = self.store.chains.get(chain_id)
        return chain.recipe if chain else None

    def _recipe_cfg(self, recipe: str | None) -> Any:
        if self.config is None or recipe is None:
            return None
        try:
            return self.config.recipe(recipe)
        except Exception:  # noqa: BLE001 - a recipe removed from the config
            return None

    def _raw_policy(self, recipe: str | None) -> Any:
        if self._policy is not None:
            return self._policy
        if self.config is not None and recipe is not None and self._recipe_cfg(recipe):
            return self.config.policy_for(recipe)
        return getattr(self.config, "policy", None)

    def _params(self, recipe: str | None) -> Any:
        return params_from(self._raw_policy(recipe))

    def _target(self, recipe: str | None) -> int | None:
        cfg = self._recipe_cfg(recipe)
        return getattr(cfg, "target_iter", None)

    def _checkpoint(self, recipe: str | None) -> int | None:
        if recipe is None:
            return None
        try:
            return self._checkpoint_iter(recipe)
        except (ClusterError, OSError) as exc:
            log.warning("%s: cannot look up %s's checkpoints: %s", self.cluster, recipe, exc)
            return None

    def _log_path(self, jw: _JobWatch, record: JobRecord) -> str | None:
        if record.stdout_path:
            return record.stdout_path
        cfg = self._recipe_cfg(jw.recipe)
        if cfg is None or not cfg.log_path:
            return None
        return expand_output_pattern(cfg.log_path, job_id=record.job_id,
                                     name=record.name or cfg.job_name or jw.recipe,
                                     user=record.user, workdir=record.workdir or cfg.workdir)

    def _sampler_path(self, jw: _JobWatch, record: JobRecord) -> str | None:
        cfg = self._recipe_cfg(jw.recipe)
        if cfg is None or not getattr(cfg, "sampler_path", None):
            return None
        return expand_output_pattern(cfg.sampler_path, job_id=record.job_id,
                                     name=record.name or cfg.job_name or jw.recipe,
                                     user=record.user, workdir=record.workdir or cfg.workdir)


def schedule_ticks(scheduler: Any, watcher: Watcher, *, seconds: float,
                   clock: Callable[[], float] | None = None, leases: Any = None) -> Any:
    """Add `watcher.tick(clock())` to an APScheduler 3 scheduler (UTC): every `seconds`,
    coalesced, one instance at a time, one job id per cluster. A tick that raises is logged
    and the next one runs as usual (the failure is never silent, never fatal).

    With `leases` (a bot.services.leases.LeaseKeeper) a tick runs only while this replica
    holds the lease named after the job, so of several replicas one watches the cluster; a
    replica that gets the lease back first forgets what it held in memory (`forget`)."""
    import time as _time

    now = clock or _time.time
    job_id = f"watch:{watcher.cluster}"
    held_last: list[bool] = []  # whether the previous run held the lease

    def run() -> None:
        try:
            at = now()
            if leases is not None:
                held = leases.holds(job_id, at, seconds)
                if held and held_last == [False]:
                    watcher.forget()  # another replica watched meanwhile: start from the store
                held_last[:] = [held]
                if not held:
                    return
            watcher.tick(at)
        except Exception:  # noqa: BLE001 - logged; the next tick retries
            log.exception("%s: watcher tick failed", watcher.cluster)

    return scheduler.add_job(
        run, "interval", seconds=seconds, id=job_id,
        coalesce=True, max_instances=1, replace_existing=True,
        misfire_grace_time=max(1, int(seconds)),
    )


def _detector_options(policy: Any) -> dict[str, float]:
    """The diagnose() thresholds a recipe's policy sets (stall time, factor, save time)."""
    out = {}
    for name, key in (("stall_min_s", "stall_min_s"), ("stall_factor", "stall_factor"),
                      ("save_time_s", "save_time_s")):
        value = getattr(policy, name, None) if not isinstance(policy, dict) else policy.get(name)
        if value is not None:
            out[key] = float(value)
    return out


def _recent_gpu_util(analysis: LogAnalysis, n: int = 20) -> float | None:
    values = [s.gpu_util for s in analysis.series.samples[-200:] if s.gpu_util is not None]
    return statistics.median(values[-n:]) if len(values) >= 3 else None


def _utc(t: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__ = ["EventSink", "TickReport", "WatchEvent", "Watcher", "schedule_ticks"]
