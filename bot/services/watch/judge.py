"""Judging one watched job from what the watcher holds of it (its log analysis, sampler
series, Slurm record and policy), with no I/O: a running job's diagnosis and early warnings,
a finished job's final diagnosis and decision (bot.core.diagnose, bot.core.policy).

The watcher (bot.services.watch.tick) reads the files and the store before, and posts and
records the outcome after.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.config import PolicyConfig
from bot.core.detectors import detect_stall
from bot.core.diagnose import LogAnalysis
from bot.core.models import Diagnosis
from bot.core.policy import (
    ChainHistory,
    CpuEvidence,
    Decision,
    PastWarning,
    PolicyParams,
    decide,
    early_warnings,
    params_from,
)
from bot.core.sampler_series import cpu_around, role_growth, sampler_leak
from bot.core.slurm.records import JobRecord
from bot.services.watch.logs import JobWatch
from bot.services.watch.recipes import CheckpointLookup
from bot.services.watch.sstat import rss_note

Policy = PolicyConfig | PolicyParams | None


@dataclass(frozen=True)
class RunningJudgement:
    """A running job's diagnosis this tick, when its stall started on the wall clock (a
    hang), and the early warnings and notes it calls for (not yet deduplicated by key)."""

    diagnosis: Diagnosis
    stall_started_at: float | None
    warnings: list[Decision]


def judge_running(jw: JobWatch, record: JobRecord, policy: Policy, now: float, *,
                  judge_every_s: float, target_iter: int | None,
                  past_warnings: Sequence[PastWarning]) -> RunningJudgement:
    """The running job's diagnosis (`running_diagnosis`, then a leak the sampler shows) and
    its early warnings (bot.core.policy.early_warnings), a leak warning on sstat's RSS
    saying so."""
    judge_at = now + jw.skew if jw.skew is not None else None
    diag = running_diagnosis(jw, record, policy, judge_at, now, judge_every_s=judge_every_s,
                             target_iter=target_iter)
    stall_started = None
    cpu = None
    if diag.class_id == "hang" and diag.metrics.stall_seconds is not None:
        stall_started = now - diag.metrics.stall_seconds  # on the wall clock
        around = cpu_around(jw.sampler, stall_started, now=now)
        if around is not None:
            cpu = CpuEvidence(*around)
    diag = with_sampler_leak(jw, diag, record, policy, target_iter=target_iter)
    history = ChainHistory(warnings=tuple(past_warnings))
    warnings = early_warnings(diag, history, policy, now, cpu=cpu,
                              gpu_util_pct=recent_gpu_util(jw.analysis),
                              stall_started_at=stall_started, job_id=str(jw.job_id),
                              worker_rss=role_growth(jw.sampler, "worker"))
    noted = []
    for dec in warnings:
        if dec.class_id == "memory_leak" and (note := rss_note(jw)):
            dec = replace(dec, reason=dec.reason + note,
                          facts={**dec.facts, "sstat_step": jw.rss_step or ""})
        noted.append(dec)
    return RunningJudgement(diag, stall_started, noted)


def running_diagnosis(jw: JobWatch, record: JobRecord, policy: Policy,
                      judge_at: float | None, now: float, *, judge_every_s: float,
                      target_iter: int | None) -> Diagnosis:
    """The running job's diagnosis. The full `diagnose` (whose leak fit costs ~10 ms a
    job) runs every `judge_every_s`; in between only the cheap stall detector runs each
    tick, and a stall (or the end of one) triggers the full diagnosis at once."""
    opts = detector_options(policy)
    last = jw.diagnosis
    if last is not None and now - jw.judged_at < judge_every_s \
            and last.class_id != "hang":
        stall = detect_stall(jw.analysis.series, judge_at,
                             min_s=opts["stall_min_s"], factor=opts["stall_factor"],
                             save_time_s=opts["save_time_s"])
        if stall is None:
            return last
    diag = jw.analysis.diagnose(record.accounting(), now=judge_at,
                                target_iter=target_iter, **opts)
    jw.diagnosis, jw.judged_at = diag, now
    return diag


def with_sampler_leak(jw: JobWatch, diag: Diagnosis, record: JobRecord, policy: Any, *,
                      target_iter: int | None) -> Diagnosis:
    """A log that prints no RSS: look for the leak in the sampler's RSS instead."""
    if diag.class_id == "memory_leak" or "memory_leak" in diag.secondary:
        return diag
    if jw.analysis.series.log_rss_seen or not jw.sampler.points or jw.skew is None:
        return diag
    progress = [(s.time - jw.skew, s.iteration) for s in jw.analysis.series.samples
                if s.time is not None and s.iteration is not None]
    params = params_from(policy)
    finding = sampler_leak(jw.sampler, progress, record.mem_limit_bytes,
                           target_iter=target_iter,
                           min_samples=params.leak_min_samples,
                           warn_margin=params.leak_warn_margin)
    if finding is None:
        return diag
    metrics = replace(diag.metrics, projected_oom_iter=finding.projected_oom_iter,
                      rss_gib_per_100_iter=round(finding.slope_gib_per_100_iter, 2))
    return replace(diag, secondary=(*diag.secondary, "memory_leak"), metrics=metrics)


def warning_key(cluster: str, jw: JobWatch, dec: Decision, diag: Diagnosis,
                past_warnings: Sequence[PastWarning] = ()) -> str:
    """The outbox key of an early warning: one per job and class, a stall's one per stall
    episode (its last progress line), a leak's one per warning the policy calls for (the
    first, then each of a projection moved earlier), numbered by the job's leak warnings
    posted before (`past_warnings`). Not by its projection, which moves from tick to tick:
    a leak warning whose post failed is tried again under its key with the newest projection
    (the outbox keeps that one), not warned again under another while the first is pending."""
    base = f"{cluster}:{jw.job_id}:{dec.class_id}"
    if dec.class_id == "hang":
        line = diag.evidence[0].line if diag.evidence else 0
        return f"{base}:line{line}"  # one warning per stall episode (its last progress)
    if dec.class_id == "memory_leak":
        warned = sum(1 for w in past_warnings
                     if w.class_id == "memory_leak" and w.job_id == str(jw.job_id))
        return f"{base}:warn{warned + 1}"
    return base


def finished_diagnosis(jw: JobWatch, record: JobRecord, acct: Any, policy: Policy, *,
                       target_iter: int | None) -> Diagnosis:
    """A finished job's final diagnosis (its analysis closed: the rest of the log was read);
    a one-node job's GPU or node failure names its node when the log does not."""
    jw.analysis.finish()
    diag = jw.analysis.diagnose(acct, target_iter=target_iter, **detector_options(policy))
    if (diag.class_id in ("gpu_failure", "node_failure") and diag.node is None
            and record.node and not any(c in record.node for c in ",[")):
        diag = replace(diag, node=record.node)  # a one-node job: its node is the faulty one
    return diag


def finished_decision(jw: JobWatch, diag: Diagnosis, history: ChainHistory, acct: Any,
                      policy: Policy, now: float, *, checkpoint: CheckpointLookup,
                      array_task: int | None) -> Decision:
    """What to do about a finished job (bot.core.policy.decide), resuming from the lookup's
    `checkpoint` (None: none; unknown when the lookup failed or the job has no recipe to look
    it up by, and why: its `unknown`); a submitted array's task
    (`array_task`) is named in the decision, as its resubmit reruns that task alone."""
    found = checkpoint.checkpoint
    decision = decide(diag, history, policy, now,
                      checkpoint_iter=found.iteration if found else None,
                      checkpoint_name=found.name if found else None,
                      checkpoint_unknown=checkpoint.unknown,
                      accounting=acct, worker_rss=role_growth(jw.sampler, "worker"),
                      trainer_rss=role_growth(jw.sampler, "trainer"))
    if array_task is not None:  # a resubmit reruns this task alone
        decision = replace(decision, facts={**decision.facts, "array_task": array_task})
    return decision


def detector_options(policy: Policy) -> dict[str, float]:
    """The diagnose() thresholds of a recipe's policy: stall time and factor, save time, leak
    samples and headroom (the policy's defaults where it sets none)."""
    p = params_from(policy)
    return {"stall_min_s": p.stall_min_s, "stall_factor": p.stall_factor,
            "save_time_s": p.save_time_s, "leak_min_samples": p.leak_min_samples,
            "leak_warn_margin": p.leak_warn_margin}


def recent_gpu_util(analysis: LogAnalysis, n: int = 20) -> float | None:
    """The median GPU utilisation of the log's last `n` samples that print one (None: fewer
    than 3)."""
    values = [s.gpu_util for s in analysis.series.samples[-200:] if s.gpu_util is not None]
    return statistics.median(values[-n:]) if len(values) >= 3 else None


__all__ = ["RunningJudgement", "detector_options", "finished_decision", "finished_diagnosis",
           "judge_running", "recent_gpu_util", "running_diagnosis", "warning_key",
           "with_sampler_leak"]
