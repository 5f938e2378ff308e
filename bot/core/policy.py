"""The resubmit policy: what trainbot does about a diagnosis, given the run chain's history.

Pure: no I/O, no clock reads (callers pass `now`). Inputs are plain data; the output is a
`Decision` the watcher carries out (store intent first, then post / submit).

Rules (docs/failures.md, docs/incidents.md):
- `resubmit` classes (nccl_timeout, dataloader_timeout, time_limit, preempted, node_failure)
  are proposed with a button, or resubmitted at once when the recipe says `auto_resubmit`
  and the class is retryable; both wait for the backoff (`not_before`).
- `ask` classes are proposed, never automatic; host_oom and dataloader_worker_killed propose
  `--mem` sized from the limit and MaxRSS; a finished job whose class is memory_leak only warns.
- STOP classes (cuda_oom, compiler_missing, nan_loss, silent_exit) never resubmit.
- Budget (default 3 charged resubmits per chain); `preempted` / `node_failure` carry
  `charges_budget: false` in the catalogue and are not charged. Exhausted -> stop, ask a human.
- No progress: a retry whose last iteration is not above the previous attempt's stops the
  chain and asks a human (only for charged classes: a preemption is not the job's fault).
- Running jobs: early warnings (`early_warnings`): leak projection once per chain unless it
  worsens by a margin, stall with CPU corroboration and an offer to cancel and resume, low
  GPU utilisation as a note. `held_report` flags a requeued job stuck in JobHeldAdmin.

`Decision.facts` is what threads show, as data: `why` names the sentence (worded by
templates/event.json.j2 in the thread's language), the other keys are its figures not already
on the Decision (see `decide` and `early_warnings`). An early warning's facts are complete on
their own, so a warning re-posted from the store renders from them alone. `Decision.reason`
says the same in English for the log and the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from bot.core.models import MEMORY_CLASSES, STOP_CLASSES, Accounting, Action, Diagnosis
from bot.core.units import GIB, format_size

if TYPE_CHECKING:
    from bot.core.catalogue import Catalogue

#: Classes that describe a job still running (early warnings, not end-of-job decisions).
RUNNING_CLASSES = frozenset({"none", "hang", "memory_leak"})


class DecisionKind(StrEnum):
    """What the watcher does with a decision."""

    RESUBMIT_NOW = "resubmit_now"  # submit (after not_before) without asking
    PROPOSE_RESUBMIT = "propose_resubmit"  # incident with a Resubmit button
    PROPOSE_MEM_RESUBMIT = "propose_mem_resubmit"  # incident with "Resubmit with --mem=…"
    ASK_HUMAN = "ask_human"  # the chain stops here until a person decides
    STOP = "stop"  # explain; never resubmitted
    WARN = "warn"  # early warning in the thread (may offer cancel + resume)
    NOTE = "note"  # gentle note, not an incident
    NONE = "none"  # nothing to do


#: Button ids a decision may offer (the Slack layer maps them to action ids).
OFFER_RESUBMIT = "resubmit"
OFFER_RESUBMIT_MEM = "resubmit_mem"
OFFER_CANCEL_RESUME = "cancel_resume"
OFFER_DISMISS = "dismiss"


@dataclass(frozen=True)
class Decision:
    """Plain data: what to do and why. `charged` says whether carrying out the resubmit
    spends one unit of the chain's retry budget; `key` deduplicates warnings per chain;
    `facts` is `reason` as data (module doc)."""

    kind: DecisionKind
    reason: str
    class_id: str
    charged: bool = False
    not_before: float | None = None
    resume_from: int | None = None
    work_lost_iters: int | None = None
    mem: str | None = None  # suggested --mem as Slurm writes it ("600G")
    mem_bytes: int | None = None
    offers: tuple[str, ...] = ()
    stop_chain: bool = False
    key: str | None = None
    projected_oom_iter: int | None = None
    facts: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def resubmits(self) -> bool:
        """Does this decision resubmit (now or on approval)?"""
        return self.kind in (
            DecisionKind.RESUBMIT_NOW,
            DecisionKind.PROPOSE_RESUBMIT,
            DecisionKind.PROPOSE_MEM_RESUBMIT,
        )

    def to_json(self) -> dict[str, Any]:
        """The fields a stored decision keeps (the incidents table's JSON)."""
        return {
            "kind": str(self.kind), "reason": self.reason, "class_id": self.class_id,
            "charged": self.charged, "not_before": self.not_before,
            "resume_from": self.resume_from, "work_lost_iters": self.work_lost_iters,
            "mem": self.mem, "offers": list(self.offers), "stop_chain": self.stop_chain,
            "exclude": self.facts.get("exclude"),  # the faulty node a resubmit leaves out
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """A stored decision read back. Fails closed: a missing or unknown `kind` (a row
        written by another version, a damaged one) is `ask_human`, never an action."""
        try:
            kind = DecisionKind(data.get("kind"))
        except ValueError:
            kind = DecisionKind.ASK_HUMAN
        return cls(
            kind=kind, reason=str(data.get("reason") or ""),
            class_id=str(data.get("class_id") or ""), charged=bool(data.get("charged")),
            not_before=data.get("not_before"), resume_from=data.get("resume_from"),
            work_lost_iters=data.get("work_lost_iters"), mem=data.get("mem"),
            offers=tuple(data.get("offers") or ()), stop_chain=bool(data.get("stop_chain")),
            facts={"exclude": data["exclude"]} if data.get("exclude") else {},
        )


@dataclass(frozen=True)
class AttemptFacts:
    """One attempt of a run chain as the policy needs it (from the store's attempts table).

    `last_iter` is the highest iteration the attempt logged (None: none logged)."""

    job_id: str
    attempt_no: int
    last_iter: int | None = None
    start_iter: int | None = None
    class_id: str | None = None
    ended_at: float | None = None


@dataclass(frozen=True)
class PastWarning:
    """An early warning already posted in this chain (from the store's incidents)."""

    class_id: str  # memory_leak | hang | low_gpu_util
    at: float
    projected_oom_iter: int | None = None
    stall_started_at: float | None = None
    job_id: str | None = None


@dataclass(frozen=True)
class ChainHistory:
    """The run chain so far. `attempts` is oldest first and ENDS with the attempt being
    decided about; `retries_used` is the charged resubmits so far (chains.retries_used)."""

    attempts: tuple[AttemptFacts, ...] = ()
    retries_used: int = 0
    warnings: tuple[PastWarning, ...] = ()

    @property
    def resubmits_so_far(self) -> int:
        return max(0, len(self.attempts) - 1)


@dataclass(frozen=True)
class PolicyParams:
    """The policy settings decide() and the detectors read; built from bot.config.PolicyConfig
    (or anything with the same attribute names) by `params_from`; missing names take these
    defaults, which are also the config's defaults."""

    retry_budget: int = 3
    auto_resubmit: bool = False
    backoff_s: float = 60.0
    backoff_max_s: float = 3600.0
    leak_rewarn_margin: float = 0.1  # re-warn when the projected OOM iteration moves 10 % earlier
    gpu_util_warn_pct: float = 60.0
    cpu_drop_ratio: float = 0.5  # CPU after / before at or below this corroborates a stall
    mem_growth: float = 1.5  # host_oom: suggested --mem = max(limit, MaxRSS) x this ...
    mem_growth_save: float = 2.0  # ... or this when it died saving a checkpoint
    mem_cap_bytes: int | None = None  # largest --mem the site admits (None: unknown)
    held_report_s: float = 600.0  # report a JobHeldAdmin job after this long
    # Detector thresholds the watcher passes to diagnose() (same names as PolicyConfig).
    stall_min_s: float = 300.0
    stall_factor: float = 10.0
    save_time_s: float = 600.0
    leak_min_samples: int = 6  # RSS samples a leak finding needs
    leak_warn_margin: float = 0.1  # warn when RSS will reach limit x (1 - this) before target


#: The defaults of every policy setting: of the config, of diagnose() and of the detectors.
DEFAULT_POLICY = PolicyParams()


def params_from(policy: Any) -> PolicyParams:
    """PolicyParams from a PolicyConfig (pydantic) / mapping / PolicyParams: same names."""
    if isinstance(policy, PolicyParams):
        return policy
    if policy is None:
        return PolicyParams()
    get = policy.get if isinstance(policy, dict) else (lambda k, d: getattr(policy, k, d))
    values = {}
    for name in PolicyParams.__dataclass_fields__:
        value = get(name, None)
        if value is not None:
            values[name] = value
    return PolicyParams(**values)


# --------------------------------------------------------------------------- decide


def approval_charged(*, budget_spent: bool, recorded: bool | None, class_id: str | None,
                     catalogue: Catalogue) -> bool:
    """Does a resubmit a person approved spend one of its chain's retries? Exactly when the
    automatic resubmit of the same failure would (`decide`: the diagnosis' `charges_budget`):
    what the watcher `recorded` for it, else the catalogue's class `class_id`; a failure of
    unknown class charges (like unknown_failure). A chain whose budget is spent is not
    charged further: only a person's approval lets it go on, and the ledger stays at its
    budget ("3 of 3"), never "4 of 3"."""
    if budget_spent:
        return False
    if recorded is not None:
        return recorded
    if class_id is None:
        return True
    try:
        return bool(catalogue.get(class_id).charges_budget)
    except KeyError:
        return True


def decide(
    diagnosis: Diagnosis,
    chain_history: ChainHistory,
    policy: Any,
    now: float,
    *,
    checkpoint_iter: int | None = None,
    accounting: Accounting | None = None,
    worker_rss: tuple[int, int] | None = None,
    trainer_rss: tuple[int, int] | None = None,
) -> Decision:
    """The decision for one diagnosed job.

    `checkpoint_iter` is the iteration of the latest COMPLETE checkpoint (None: start from
    scratch); `accounting` gives MaxRSS and the memory limit for a host_oom --mem proposal;
    after a steady leak (`leak_remedy`) the --mem is what finishes the run, or none when no
    memory can (`worker_rss` / `trainer_rss` from the sampler name what grows).
    A running job's diagnosis (none / hang / memory_leak) returns the first early warning.
    """
    p = params_from(policy)
    cid = diagnosis.class_id
    last_iter = _current_last_iter(diagnosis, chain_history)
    lost = _work_lost(last_iter, checkpoint_iter)
    base = {"class_id": cid, "resume_from": checkpoint_iter, "work_lost_iters": lost}

    if cid in RUNNING_CLASSES and not _finished(accounting):
        found = early_warnings(diagnosis, chain_history, p, now)
        return found[0] if found else Decision(DecisionKind.NONE, "running normally", cid)
    if cid == "completed":
        return Decision(DecisionKind.NONE, "the run completed", cid, facts={"why": "completed"})
    if cid == "memory_leak":
        return Decision(
            DecisionKind.WARN,
            "the job ended while host memory was still growing; no resubmit proposed",
            cid,
            projected_oom_iter=diagnosis.metrics.projected_oom_iter,
            facts={"why": "leak_ended"},
        )
    if cid in STOP_CLASSES or diagnosis.action == Action.STOP:
        return Decision(
            DecisionKind.STOP,
            f"{cid} is not retryable: resubmitting unchanged would fail the same way. "
            f"{diagnosis.hint}".strip(),
            stop_chain=True,
            offers=(OFFER_DISMISS,),
            facts={"why": "not_retryable"},
            **base,
        )
    if diagnosis.action == Action.NONE:
        return Decision(DecisionKind.NONE, f"{cid}: nothing to do", cid,
                        facts={"why": "nothing_to_do"})

    charged = bool(diagnosis.charges_budget)
    # a fault of one node: every resubmit, automatic or offered, leaves it out (--exclude)
    node = {"exclude": diagnosis.node} if diagnosis.node else {}
    if charged and chain_history.retries_used >= p.retry_budget:
        return Decision(
            DecisionKind.STOP,
            f"retry budget exhausted: {chain_history.retries_used} of {p.retry_budget} "
            f"resubmits used in this chain; a person must decide ({cid})",
            stop_chain=True,
            offers=(OFFER_RESUBMIT, OFFER_DISMISS),
            facts={"why": "budget_exhausted", "used": chain_history.retries_used,
                   "budget": p.retry_budget, **node},
            **base,
        )
    stalled = _no_progress(chain_history, last_iter) if charged else None
    if stalled is not None:
        return Decision(
            DecisionKind.ASK_HUMAN,
            f"no progress since the previous attempt ({_no_progress_text(stalled)}); "
            f"stopping the chain instead of retrying {cid} again",
            stop_chain=True,
            offers=(OFFER_RESUBMIT, OFFER_DISMISS),
            facts={"why": "no_progress", **stalled, **node},
            **base,
        )

    not_before = now + backoff_delay(p, chain_history.resubmits_so_far)
    where = _resume_text(checkpoint_iter, lost)
    budget_text = (
        f"charged: {chain_history.retries_used + 1} of {p.retry_budget} retries"
        if charged
        else "not charged to the retry budget"
    )
    retry_facts = {"why": "retryable", "charge_no": chain_history.retries_used + 1,
                   "budget": p.retry_budget, **node}
    if node:
        where += f" on another node (--exclude={diagnosis.node})"
    if diagnosis.action == Action.RESUBMIT:
        if p.auto_resubmit and diagnosis.retryable:
            return Decision(
                DecisionKind.RESUBMIT_NOW,
                f"{cid} is retryable: resubmitting {where} ({budget_text})",
                charged=charged,
                not_before=not_before,
                facts=retry_facts,
                **base,
            )
        return Decision(
            DecisionKind.PROPOSE_RESUBMIT,
            f"{cid} is retryable: proposing to resubmit {where} ({budget_text})",
            charged=charged,
            not_before=not_before,
            offers=(OFFER_RESUBMIT, OFFER_DISMISS),
            facts=retry_facts,
            **base,
        )
    # Action.ASK
    if cid in MEMORY_CLASSES:
        return _host_oom(diagnosis, p, accounting, charged, not_before, where, base,
                         worker_rss=worker_rss, trainer_rss=trainer_rss)
    return Decision(
        DecisionKind.PROPOSE_RESUBMIT,
        f"{cid}: a person should decide; resubmit {where} is offered. {diagnosis.hint}".strip(),
        charged=charged,
        not_before=not_before,
        offers=(OFFER_RESUBMIT, OFFER_DISMISS),
        facts={"why": "ask", **node},
        **base,
    )


def _finished(accounting: Accounting | None) -> bool:
    return accounting is not None and accounting.state is not None and not accounting.is_running


def _host_oom(
    diagnosis: Diagnosis,
    p: PolicyParams,
    accounting: Accounting | None,
    charged: bool,
    not_before: float,
    where: str,
    base: dict[str, Any],
    *,
    worker_rss: tuple[int, int] | None = None,
    trainer_rss: tuple[int, int] | None = None,
) -> Decision:
    saving = " while saving a checkpoint" if diagnosis.during_checkpoint_save else ""
    remedy = leak_remedy(diagnosis, resume_iter=base.get("resume_from"),
                         limit_bytes=accounting.mem_limit_bytes if accounting else None,
                         max_rss_bytes=accounting.max_rss_bytes if accounting else None,
                         policy=p, worker_rss=worker_rss, trainer_rss=trainer_rss)
    if remedy is not None and not remedy.proposes_mem:
        who = f"; growing: {remedy.role}" if remedy.role else ""
        head = (f"host memory grew steadily ({remedy.slope_gib_per_100_iter:.1f} GiB per 100 "
                f"iterations{who}): reaching iteration {remedy.target_iter} needs ~"
                f"{remedy.need_gib}G")
        if remedy.hopeless:
            head += (f", above {remedy.ceiling_gib}G, so no --mem finishes the run (with "
                     f"{remedy.with_gib}G: ~iter {remedy.reach_iter} of {remedy.target_iter})")
        else:
            head += ("; the job's memory limit is unknown (and no site cap is set), so no "
                     "--mem is proposed")
        return Decision(
            DecisionKind.ASK_HUMAN,
            head + "; run `trainbot probe dataloader` for the recipe to find what grows",
            charged=charged,
            offers=(OFFER_RESUBMIT, OFFER_DISMISS),
            facts={"why": "leak_hopeless" if remedy.hopeless else "leak_limit_unknown",
                   **remedy.facts()},
            **base,
        )
    if diagnosis.class_id == "dataloader_worker_killed":
        saving = " (a DataLoader worker was killed)" + saving
    limit = accounting.mem_limit_bytes if accounting else None
    max_rss = accounting.max_rss_bytes if accounting else None
    size = suggest_mem(limit, max_rss, during_save=diagnosis.during_checkpoint_save, policy=p)
    if size is None and remedy is not None:  # the limit is unknown, a site cap is not
        size = remedy.need_gib * GIB, f"{remedy.need_gib}G"
    facts = {"during_save": diagnosis.during_checkpoint_save,
             "limit": _size_or_none(limit), "max_rss": _size_or_none(max_rss)}
    if size is None:
        return Decision(
            DecisionKind.ASK_HUMAN,
            f"host memory exhausted{saving}; the memory limit is unknown, so no --mem can be "
            f"suggested. {diagnosis.hint}".strip(),
            charged=charged,
            offers=(OFFER_RESUBMIT, OFFER_DISMISS),
            facts={"why": "mem_unknown", **facts},
            **base,
        )
    mem_bytes, mem_text = size
    if remedy is not None and remedy.need_gib * GIB > mem_bytes:
        mem_bytes, mem_text = remedy.need_gib * GIB, f"{remedy.need_gib}G"  # finishes the run
        facts["leak"] = remedy.facts()
    current = max(limit or 0, max_rss or 0)
    if mem_bytes <= current:
        return Decision(
            DecisionKind.ASK_HUMAN,
            f"host memory exhausted{saving} at {_size(current)}, already at the site's cap "
            f"({_size(p.mem_cap_bytes or current)}): cut host memory instead. "
            f"{diagnosis.hint}".strip(),
            charged=charged,
            offers=(OFFER_DISMISS,),
            facts={"why": "mem_at_cap", "current": _size(current),
                   "cap": _size(p.mem_cap_bytes or current), **facts},
            **base,
        )
    return Decision(
        DecisionKind.PROPOSE_MEM_RESUBMIT,
        f"host memory exhausted{saving} (limit {_size(limit)}, MaxRSS {_size(max_rss)}): "
        f"proposing to resubmit {where} with --mem={mem_text}",
        charged=charged,
        not_before=not_before,
        mem=mem_text,
        mem_bytes=mem_bytes,
        offers=(OFFER_RESUBMIT_MEM, OFFER_RESUBMIT, OFFER_DISMISS),
        facts={"why": "mem_propose", **facts},
        **base,
    )


@dataclass(frozen=True)
class LeakRemedy:
    """What more memory can do after a host OOM that followed a steady RSS trend.

    From the last complete checkpoint (`resume_iter`) the process starts again at
    `start_gib` and grows `slope_gib_per_100_iter`: reaching `target_iter` needs `need_gib`.
    `hopeless` when that is above the site's cap or twice the current limit: no `--mem`
    finishes the run; `with_gib` (the `--mem` a plain OOM would get) reaches `reach_iter`.
    `ceiling_gib` None: neither the job's limit nor a site cap is known, so whether any
    memory finishes the run cannot be told and no `--mem` is proposed (`proposes_mem`).
    `role` is what grows, from the sampler (DataLoader workers / trainer), else None."""

    slope_gib_per_100_iter: float
    start_gib: float
    resume_iter: int
    target_iter: int
    need_gib: int
    ceiling_gib: int | None
    hopeless: bool
    with_gib: int
    reach_iter: int
    role: str | None = None

    @property
    def proposes_mem(self) -> bool:
        """Is `need_gib` a `--mem` to propose (known to fit under the ceiling)?"""
        return self.ceiling_gib is not None and not self.hopeless

    def facts(self) -> dict[str, Any]:
        return {"slope": self.slope_gib_per_100_iter, "need_gib": self.need_gib,
                "ceiling_gib": self.ceiling_gib, "with_gib": self.with_gib,
                "reach_iter": self.reach_iter, "target": self.target_iter,
                "resume_from": self.resume_iter, "role": self.role,
                "hopeless": self.hopeless, "limit_known": self.ceiling_gib is not None}


def leak_remedy(
    diagnosis: Diagnosis,
    *,
    resume_iter: int | None,
    limit_bytes: int | None,
    max_rss_bytes: int | None = None,
    policy: Any = None,
    worker_rss: tuple[int, int] | None = None,
    trainer_rss: tuple[int, int] | None = None,
) -> LeakRemedy | None:
    """The memory a leaking run needs to finish (see LeakRemedy); None without a steady
    trend (`Diagnosis.leak_fit`) or a target iteration. `worker_rss` / `trainer_rss` are the
    sampler's (start, now) RSS of each role: the one that grew most is named."""
    fit, target = diagnosis.leak_fit, diagnosis.metrics.target_iter
    if not fit or not target or fit["slope_gib_per_100_iter"] <= 0:
        return None
    p = params_from(policy)
    per_iter = fit["slope_gib_per_100_iter"] / 100
    resume = resume_iter or 0
    need = fit["start_gib"] + per_iter * max(0, target - resume)
    step = 10 if need >= 100 else 1
    need_gib = int(math.ceil(need / step - 1e-9)) * step
    ceilings = [int(p.mem_cap_bytes // GIB)] if p.mem_cap_bytes is not None else []
    if limit_bytes:
        ceilings.append(int(2 * limit_bytes // GIB))
    ceiling = min(ceilings) if ceilings else None
    size = suggest_mem(limit_bytes, max_rss_bytes, policy=p)
    with_gib = int(size[0] // GIB) if size is not None else (ceiling or need_gib)
    reach = resume + (with_gib - fit["start_gib"]) / per_iter
    grew = {name: now / start for name, rss in (("workers", worker_rss),
                                                ("trainer", trainer_rss))
            if rss is not None and (start := rss[0]) > 0 and (now := rss[1]) > start * 1.25}
    return LeakRemedy(
        slope_gib_per_100_iter=fit["slope_gib_per_100_iter"],
        start_gib=fit["start_gib"],
        resume_iter=resume,
        target_iter=target,
        need_gib=need_gib,
        ceiling_gib=ceiling,
        hopeless=ceiling is not None and need_gib > ceiling,
        with_gib=with_gib,
        reach_iter=int(max(resume, min(target, reach))),
        role=max(grew, key=lambda k: grew[k]) if grew else None,
    )


def suggest_mem(
    limit_bytes: int | None,
    max_rss_bytes: int | None,
    *,
    during_save: bool = False,
    policy: Any = None,
) -> tuple[int, str] | None:
    """A bigger `--mem` after a host OOM: max(limit, MaxRSS) x growth, rounded UP to whole
    GiB (10 GiB steps from 100 GiB), capped at the site's cap. None when the job's limit is
    unknown: a number made up without it would be a guess (the caller says so instead).

    sacct's MaxRSS often misses the spike that killed the job, so the limit (which the job
    did reach) is the floor. A death inside a checkpoint save uses the larger growth factor:
    gathering weights + optimizer state on the CPU roughly doubles the peak.
    """
    p = params_from(policy)
    if not limit_bytes or limit_bytes <= 0:
        return None
    base = max(limit_bytes, max_rss_bytes or 0)
    growth = p.mem_growth_save if during_save else p.mem_growth
    want_gib = base * growth / GIB
    step = 10 if want_gib >= 100 else 1
    gib_rounded = int(math.ceil(want_gib / step - 1e-9)) * step
    if p.mem_cap_bytes is not None:
        cap_gib = int(p.mem_cap_bytes // GIB)
        gib_rounded = min(gib_rounded, cap_gib)
    return gib_rounded * GIB, f"{gib_rounded}G"


def backoff_delay(policy: Any, resubmits_so_far: int) -> float:
    """Seconds to wait before the next resubmit: backoff_s x 2^(resubmits so far), capped."""
    p = params_from(policy)
    if p.backoff_s <= 0:
        return 0.0
    return float(min(p.backoff_s * (2 ** max(0, resubmits_so_far)), p.backoff_max_s))


def _current_last_iter(diagnosis: Diagnosis, history: ChainHistory) -> int | None:
    """Highest iteration the attempt being decided reached (diagnosis, else the store)."""
    known = [diagnosis.metrics.last_iter]
    if history.attempts:
        known.append(history.attempts[-1].last_iter)
    values = [v for v in known if v is not None]
    return max(values) if values else None


def _no_progress(history: ChainHistory, last_iter: int | None) -> dict[str, Any] | None:
    """Why the attempt made no progress over the previous one (`job`, `last_iter`,
    `prev_job`, `prev_iter`; `last_iter` None: it logged none), or None if it did / is first."""
    if len(history.attempts) < 2:
        return None
    prev = history.attempts[-2].last_iter
    if last_iter is None or (prev is not None and last_iter <= prev):
        return {"job": history.attempts[-1].job_id, "last_iter": last_iter,
                "prev_job": history.attempts[-2].job_id, "prev_iter": prev}
    return None


def _no_progress_text(facts: Mapping[str, Any]) -> str:
    if facts["last_iter"] is None:
        return "this attempt logged no iteration"
    return (f"job {facts['job']} stopped at iteration {facts['last_iter']}, "
            f"previous attempt {facts['prev_job']} reached {facts['prev_iter']}")


def _work_lost(last_iter: int | None, checkpoint_iter: int | None) -> int | None:
    if last_iter is None:
        return None
    return max(0, last_iter - (checkpoint_iter or 0))


def _resume_text(checkpoint_iter: int | None, lost: int | None) -> str:
    if checkpoint_iter is None:
        return "from scratch (no complete checkpoint)"
    text = f"resuming from iteration {checkpoint_iter}"
    if lost:
        text += f" ({lost} iterations lost)"
    return text


def _size(n: int | None) -> str:
    return "unknown" if n is None else format_size(n)


def _size_or_none(n: int | None) -> str | None:
    return None if n is None else format_size(n)


# --------------------------------------------------------------------------- early warnings


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

    - hang (the detector's threshold was crossed): WARN with an offer to cancel and resume;
      once per stall episode (keyed by when progress stopped). `cpu` corroborates it when the
      CPU fell to `cpu_drop_ratio` of before, or says the job is still busy.
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
            grew = worker_rss is not None and worker_rss[1] > worker_rss[0] * 1.25
            if grew:
                text += (f"; DataLoader workers grew {worker_rss[0] / GIB:.1f} → "
                         f"{worker_rss[1] / GIB:.1f} GiB (look for a per-sample cache)")
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
                           "workers_gib": ([worker_rss[0] / GIB, worker_rss[1] / GIB]
                                           if grew else None),
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
    return text + ". Cancel and resume from the last complete checkpoint?"


def _bucket(t: float | None) -> str:
    return "?" if t is None else str(int(t // 60))


def _same_time(a: float | None, b: float | None, tol: float = 90.0) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= tol


# --------------------------------------------------------------------------- held jobs


@dataclass(frozen=True)
class HeldReport:
    """A job held by an admin (e.g. requeued after a failure): say so, don't wait forever."""

    job_id: int
    reason: str
    held_s: float
    text: str
    key: str = field(default="")


def held_report(record: Any, held_since: float | None, now: float, *, policy: Any = None
                ) -> HeldReport | None:
    """Report `record` (a bot.core.slurm.records.JobRecord) when it has been held by an admin
    (`JobHeldAdmin`, or `REQUEUE_HOLD` from a requeue) for `held_report_s` or longer.

    A user hold (`JobHeldUser`) is not reported: trainbot places those itself on competing
    jobs. `held_since` is when the watcher first saw it held (None: just now).
    """
    p = params_from(policy)
    admin = record.state == "REQUEUE_HOLD" or (
        record.state in ("PENDING", "REQUEUED") and record.reason == "JobHeldAdmin"
    )
    if not admin:
        return None
    since = held_since if held_since is not None else now
    held = max(0.0, now - since)
    if held < p.held_report_s:
        return None
    why = record.reason or record.state
    return HeldReport(
        job_id=record.job_id,
        reason=why,
        held_s=held,
        text=(
            f"job {record.job_id} has been held ({why}) for {held / 60:.0f} min, usually after "
            "a requeue; it will not start by itself. Ask an admin to release it, or cancel it "
            "and resubmit from the last complete checkpoint."
        ),
        key=f"held:{record.job_id}:{int(since)}",
    )


__all__ = [
    "DEFAULT_POLICY",
    "AttemptFacts",
    "ChainHistory",
    "CpuEvidence",
    "Decision",
    "DecisionKind",
    "HeldReport",
    "PastWarning",
    "PolicyParams",
    "backoff_delay",
    "decide",
    "early_warnings",
    "held_report",
    "leak_warning_due",
    "params_from",
    "suggest_mem",
]
