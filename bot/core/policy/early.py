"""Early warnings for a RUNNING job (`early_warnings`): a stall, a memory leak's projected
OOM, low GPU utilisation; each at most once per chain or stall episode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.core.models import Diagnosis
from bot.core.policy.chain import ChainHistory, PastWarning
from bot.core.policy.decision import (
    OFFER_CANCEL_RESUME,
    OFFER_DISMISS,
    Decision,
    DecisionKind,
    checkpoint_unknown_of,
    resume_start,
)
from bot.core.policy.params import PolicyParams, params_from
from bot.core.units import GIB


@dataclass(frozen=True)
class CpuEvidence:
    """Job CPU % (sum over the tree, from the sampler) before and since a stall began."""

    before_pct: float
    after_pct: float


def early_warnings(
    diagnosis: Diagnosis,
    chain_history: ChainHistory,
    policy: Any,
    now: float,
    *,
    cpu: CpuEvidence | None = None,
    gpu_util_pct: float | None = None,
    stall_started_at: float | None = None,
    job_id: str | None = None,
    worker_rss: tuple[int, int] | None = None,
) -> list[Decision]:
    """Warnings for a RUNNING job, most urgent first, each at most once (see module doc).

    - hang (the detector's threshold was crossed): WARN with an offer to cancel and resume
      (the watcher names where it resumes, `stall_resume_point`, or, for a job with no
      recipe, drops it, `stall_without_recipe`); once per stall episode (keyed by when
      progress stopped). `cpu` corroborates it when the CPU fell to `cpu_drop_ratio` of
      before, or says the job is still busy.
    - memory_leak (class or secondary): WARN with the projected OOM iteration, once per
      chain unless the projection moves earlier by more than `leak_rewarn_margin`.
    - GPU utilisation below `gpu_util_warn_pct`: NOTE, once per chain.
    `worker_rss` (start, now) from the sampler names the DataLoader workers when they grew.
    """
    p = params_from(policy)
    out: list[Decision] = []
    cid = diagnosis.class_id
    m = diagnosis.metrics
    if cid == "hang":
        started = stall_started_at
        if started is None and m.stall_seconds is not None:
            started = now - m.stall_seconds
        key = f"hang:{job_id or ''}:{_bucket(started)}"
        seen = any(
            w.class_id == "hang" and w.job_id == job_id and _same_time(w.stall_started_at, started)
            for w in chain_history.warnings
        )
        if not seen:
            stall = _stall_facts(m.last_iter, m.stall_seconds, cpu, p)
            out.append(
                Decision(
                    DecisionKind.WARN,
                    _stall_text(stall),
                    "hang",
                    offers=(OFFER_CANCEL_RESUME, OFFER_DISMISS),
                    key=key,
                    facts=stall,
                )
            )
    if cid == "memory_leak" or "memory_leak" in diagnosis.secondary:
        proj = m.projected_oom_iter
        previous = [w for w in chain_history.warnings if w.class_id == "memory_leak"]
        if leak_warning_due(previous, proj, p.leak_rewarn_margin):
            slope = m.rss_gib_per_100_iter
            text = "host memory is growing"
            if slope is not None:
                text += f" by {slope:.1f} GiB per 100 iterations"
            if proj is not None:
                text += f"; at this rate the job reaches its memory limit near iteration {proj}"
                if m.target_iter:
                    text += f" (target {m.target_iter})"
            grew = (worker_rss if worker_rss is not None and worker_rss[1] > worker_rss[0] * 1.25
                    else None)  # the DataLoader workers' RSS (first, last) when it grew
            if grew:
                text += (f"; DataLoader workers grew {grew[0] / GIB:.1f} → "
                         f"{grew[1] / GIB:.1f} GiB (look for a per-sample cache)")
            if previous:
                text += " — earlier than last projected"
            out.append(
                Decision(
                    DecisionKind.WARN,
                    text,
                    "memory_leak",
                    projected_oom_iter=proj,
                    key=f"memory_leak:{proj}",
                    facts={"why": "leak", "slope": slope, "projected_oom_iter": proj,
                           "target": m.target_iter or None,
                           "workers_gib": [grew[0] / GIB, grew[1] / GIB] if grew else None,
                           "earlier": bool(previous)},
                )
            )
    if gpu_util_pct is not None and gpu_util_pct < p.gpu_util_warn_pct:
        if not any(w.class_id == "low_gpu_util" for w in chain_history.warnings):
            out.append(
                Decision(
                    DecisionKind.NOTE,
                    f"GPU utilisation is {gpu_util_pct:.0f} % (below {p.gpu_util_warn_pct:.0f} %):"
                    " the job is healthy but may be input- or CPU-bound",
                    "low_gpu_util",
                    key="low_gpu_util",
                    facts={"why": "low_gpu", "pct": gpu_util_pct,
                           "threshold": p.gpu_util_warn_pct},
                )
            )
    return out


def stall_resume_point(decision: Decision, *, checkpoint_iter: int | None,
                       checkpoint_name: str | None, lookup_failed: bool = False) -> Decision:
    """A stall warning told where its Cancel and resume starts: the newest complete checkpoint
    the watcher looked up when it posts the warning (`checkpoint_name`, at `checkpoint_iter`
    when its name has one; neither: none, from scratch), or, when `lookup_failed`, that it is
    unknown. The sentence (`reason`, `facts`) and the decision's `resume_from` /
    `resume_checkpoint` (the prompt's buttons) say the same, worded as a failure's resume."""
    facts = {**decision.facts, "resume_from": checkpoint_iter,
             "resume_checkpoint": checkpoint_name,
             "checkpoint_lookup": "failed" if lookup_failed else "done"}
    return replace(decision, reason=_stall_text(facts), resume_from=checkpoint_iter,
                   resume_checkpoint=checkpoint_name, facts=facts)


def stall_without_recipe(decision: Decision, *, job: str) -> Decision:
    """A stall warning of job `job` (as people name it, `123_4` of an array task) that has no
    recipe (one trainbot did not submit): nothing could resume it, so it offers no Cancel and
    resume and asks no question: it says so, and how a person cancels it (`/train cancel`)."""
    facts = {**decision.facts, "checkpoint_lookup": "no_recipe", "job": job}
    return replace(decision, reason=_stall_text(facts), offers=(OFFER_DISMISS,), facts=facts)


def leak_warning_due(
    previous: Sequence[PastWarning], projected_oom_iter: int | None, margin: float
) -> bool:
    """Warn about a leak the first time, then again only if the projected OOM iteration moved
    earlier by more than `margin` (a fraction) of the last warned projection."""
    if not previous:
        return True
    last = previous[-1].projected_oom_iter
    if projected_oom_iter is None:
        return False
    if last is None:
        return True  # first warning had no limit to project against; now there is one
    return projected_oom_iter < last * (1.0 - margin)


def _stall_facts(
    last_iter: int | None, stalled_s: float | None, cpu: CpuEvidence | None, p: PolicyParams
) -> dict[str, Any]:
    """A stall warning as data: `cpu_hung` says the CPU fell (None: no CPU evidence)."""
    return {
        "why": "stall", "last_iter": last_iter, "stalled_s": stalled_s,
        "cpu_before": cpu.before_pct if cpu else None,
        "cpu_after": cpu.after_pct if cpu else None,
        "cpu_hung": (cpu.before_pct > 0 and cpu.after_pct <= cpu.before_pct * p.cpu_drop_ratio)
        if cpu else None,
    }


def _stall_text(f: Mapping[str, Any]) -> str:
    text = "no training progress"
    if f["last_iter"] is not None:
        text += f" since iteration {f['last_iter']}"
    if f["stalled_s"] is not None:
        text += f" for {f['stalled_s'] / 60:.0f} min"
    if f["cpu_hung"] is not None:
        before, after = f["cpu_before"], f["cpu_after"]
        if f["cpu_hung"]:
            text += f"; CPU fell {before:.0f} % → {after:.0f} % (likely hung)"
        else:
            text += (
                f"; CPU still busy ({before:.0f} % → {after:.0f} %): "
                "it may be in a long save or evaluation"
            )
    if "checkpoint_lookup" not in f:  # not looked up (yet): no checkpoint named or denied
        return text + ". Cancel and resume from the last complete checkpoint?"
    unknown = checkpoint_unknown_of(f["checkpoint_lookup"])
    if unknown == "no_recipe":  # nothing resumes it: no question it offers no answer to
        return text + (f". trainbot did not submit this job, so it offers no resume: if it is "
                       f"stuck, `/train cancel {f['job']}` cancels it")
    where = resume_start(f["resume_from"], f["resume_checkpoint"], unknown)
    return text + f". Cancel and resubmit {where}?"


def _bucket(t: float | None) -> str:
    return "?" if t is None else str(int(t // 60))


def _same_time(a: float | None, b: float | None, tol: float = 90.0) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= tol
