"""Memory arithmetic after a host OOM: the `--mem` to suggest (`suggest_mem`), what a steady
leak needs to finish the run (`leak_remedy`), and the decision that offers it
(`host_oom_decision`, called by `decide`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.core.models import Accounting, Diagnosis
from bot.core.policy.decision import (
    OFFER_DISMISS,
    RESUBMIT_BY_HAND,
    Decision,
    DecisionBase,
    DecisionKind,
    resubmit_offers,
)
from bot.core.policy.params import PolicyParams, params_from
from bot.core.units import GIB, format_size, parse_size

# What a --mem=0 job's memory failure is told to do instead of its class's hint (host_oom's
# "Resubmit with more --mem", dataloader_worker_killed's "or raise --mem"): it already had all
# of its node's memory. templates/_common.j2's whole_node_hint says it in the thread.
WHOLE_NODE_HINT = ("Cut host memory: fewer DataLoader workers, smaller prefetch, save "
                   "checkpoints without gathering on CPU.")

# The causes of a DataLoader worker's death that are not host memory running out
# (bot.core.diagnose.line_cause: its workers out of /dev/shm, the process at its open-file
# limit): a failure of these is told their own fix, never a --mem (nor the whole-node one).
NOT_HOST_MEMORY = frozenset({"shm", "fd_limit"})


# MaxRSS at this share of the job's memory limit or above: the job reached its limit, host
# memory's evidence, which outweighs a worker's /dev/shm or open-file cause (`own_fix`).
RSS_AT_LIMIT = 0.95


def host_memory_cause(diagnosis: Diagnosis) -> bool:
    """Whether the memory failure `diagnosis` ran out of host memory (no cause of
    NOT_HOST_MEMORY named in its detail)."""
    return (diagnosis.detail or {}).get("kind") not in NOT_HOST_MEMORY


def own_fix(diagnosis: Diagnosis, *, limit_bytes: int | None, max_rss_bytes: int | None,
            leak: bool) -> bool:
    """Whether the memory failure `diagnosis` is told its cause's own fix and no --mem: a
    cause of NOT_HOST_MEMORY named (host_memory_cause), and no evidence that host memory ran
    out all the same, which wins: a steady leak (`leak`: leak_remedy found one) or a MaxRSS
    at its limit (RSS_AT_LIMIT of `limit_bytes`, a limit of 0 or unknown: none)."""
    if host_memory_cause(diagnosis) or leak:
        return False
    return not (limit_bytes and max_rss_bytes is not None
                and max_rss_bytes >= RSS_AT_LIMIT * limit_bytes)


def whole_node_mem(mem: str | None) -> bool:
    """Whether a job sent with `--mem=<mem>` (as trainbot passed it: a recipe's `mem` after a
    submit's overrides; None or '': no --mem) asked for all of each node's memory: --mem=0,
    however written (`0`, `0G`). Only what trainbot sent decides it: Slurm reports a requested
    memory of 0 for --mem-per-gpu jobs (and the site's DefMemPerGPU) and for jobs that asked
    for none, whose nodes' memory more --mem can still raise."""
    if not mem or not mem.strip():
        return False
    try:
        return parse_size(mem.strip()) == 0
    except ValueError:
        return False


def host_oom_decision(
    diagnosis: Diagnosis,
    p: PolicyParams,
    accounting: Accounting | None,
    charged: bool,
    not_before: float | None,
    where: str,
    base: DecisionBase,
    *,
    worker_rss: tuple[int, int] | None = None,
    trainer_rss: tuple[int, int] | None = None,
    start_unknown: bool = False,
    by_hand: bool = False,
    lookup: Mapping[str, str] | None = None,
) -> Decision:
    """The decision after a host OOM: the --mem to propose, or (after a steady leak,
    `leak_remedy`) the one that finishes the run, or why none is proposed. `start_unknown`:
    the iteration a resume starts from is unknown (a checkpoint known only by its name, a
    failed lookup), so a leak's figures count from iteration 0 and the reason says it is the
    worst case, in the words of the incident's memory paragraph. `by_hand`: the job has no
    recipe, so the --mem is for a person's own resubmit (`RESUBMIT_BY_HAND`, fact `by_hand`):
    a person decides (`ask_human`), offered no resubmit button. `lookup`: the facts of an
    unknown checkpoint (`lookup_fact`), said by every decision here."""
    hand = {"by_hand": True} if by_hand else {}
    saving = " while saving a checkpoint" if diagnosis.during_checkpoint_save else ""
    # --mem=0 as asked (Accounting.whole_node_mem: sacct's limit is then the node's memory),
    # or a limit of 0 given as such
    whole_node = accounting is not None and (accounting.whole_node_mem
                                             or accounting.mem_limit_bytes == 0)
    remedy = leak_remedy(diagnosis, resume_iter=base.get("resume_from"),
                         limit_bytes=accounting.mem_limit_bytes if accounting else None,
                         max_rss_bytes=accounting.max_rss_bytes if accounting else None,
                         policy=p, worker_rss=worker_rss, trainer_rss=trainer_rss,
                         start_unknown=start_unknown, whole_node=whole_node)
    if own_fix(diagnosis, limit_bytes=accounting.mem_limit_bytes if accounting else None,
               max_rss_bytes=accounting.max_rss_bytes if accounting else None,
               leak=remedy is not None):  # /dev/shm, open files: no --mem fixes it
        return _own_fix(diagnosis, charged, not_before, where, base, whole_node=whole_node,
                        by_hand=by_hand, lookup=lookup)
    if accounting is not None and whole_node:
        return _whole_node_decision(diagnosis, saving, accounting, remedy, charged, base,
                                    by_hand=by_hand, lookup=lookup)
    if remedy is not None and not remedy.proposes_mem:
        who = f"; growing: {remedy.role}" if remedy.role else ""
        head = (f"host memory grew steadily ({remedy.slope_gib_per_100_iter:.1f} GiB per 100 "
                f"iterations{who})" + (": " if remedy.start_known else "; ") + _need_text(remedy))
        if remedy.hopeless:
            bound = ("the site's cap, policy.max_mem" if remedy.ceiling_is_cap
                     else "twice the current limit")
            head += (f", above {remedy.ceiling_gib}G ({bound}), so no --mem finishes the run "
                     f"(with {remedy.with_gib}G: ~iter {remedy.reach_iter} of "
                     f"{remedy.target_iter})" if remedy.start_known else
                     f", above {remedy.ceiling_gib}G ({bound}), so from iteration 0 no --mem "
                     f"finishes the run (with {remedy.with_gib}G it runs ~{remedy.runs_iters} "
                     "iterations past the checkpoint it resumes from)")
        else:
            head += ("; the job's memory limit is unknown (and no site cap is set), so no "
                     "--mem is proposed")
        return Decision(
            DecisionKind.ASK_HUMAN,
            head + "; run `trainbot probe dataloader` for the recipe to find what grows",
            charged=charged,
            offers=resubmit_offers(by_hand=by_hand),
            facts={"why": "leak_hopeless" if remedy.hopeless else "leak_limit_unknown",
                   **remedy.facts(), **(lookup or {}), **hand},
            **base,
        )
    if diagnosis.class_id == "dataloader_worker_killed":
        saving = " (a DataLoader worker was killed)" + saving
    limit = accounting.mem_limit_bytes if accounting else None
    max_rss = accounting.max_rss_bytes if accounting else None
    size = suggest_mem(limit, max_rss, during_save=diagnosis.during_checkpoint_save, policy=p)
    if size is None and remedy is not None:  # the limit is unknown, a site cap is not
        size = remedy.need_gib * GIB, f"{remedy.need_gib}G"
    facts: dict[str, Any] = {"during_save": diagnosis.during_checkpoint_save,
             "limit": _size_or_none(limit), "max_rss": _size_or_none(max_rss)}
    if size is None:
        return Decision(
            DecisionKind.ASK_HUMAN,
            f"host memory exhausted{saving}; the memory limit is unknown, so no --mem can be "
            f"suggested. {diagnosis.hint}".strip(),
            charged=charged,
            offers=resubmit_offers(by_hand=by_hand),
            facts={"why": "mem_unknown", **facts, **(lookup or {}), **hand},
            **base,
        )
    mem_bytes, mem_text = size
    worst_case = ""
    if remedy is not None and remedy.need_gib * GIB > mem_bytes:
        mem_bytes, mem_text = remedy.need_gib * GIB, f"{remedy.need_gib}G"  # finishes the run
        facts["leak"] = remedy.facts()
        worst_case = "" if remedy.start_known else f"; {_need_text(remedy)}"
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
                   "cap": _size(p.mem_cap_bytes or current), **facts, **(lookup or {}), **hand},
            **base,
        )
    return Decision(
        DecisionKind.ASK_HUMAN if by_hand else DecisionKind.PROPOSE_MEM_RESUBMIT,
        f"host memory exhausted{saving} (limit {_size(limit)}, MaxRSS {_size(max_rss)}): "
        f"{RESUBMIT_BY_HAND if by_hand else 'proposing to resubmit'} {where} "
        f"with --mem={mem_text}{worst_case}",
        charged=charged,
        not_before=not_before,
        mem=mem_text,
        mem_bytes=mem_bytes,
        offers=resubmit_offers(by_hand=by_hand, mem=True),
        facts={"why": "mem_propose", **facts, **(lookup or {}), **hand},
        **base,
    )


def _whole_node_decision(diagnosis: Diagnosis, saving: str, accounting: Accounting,
                         remedy: LeakRemedy | None, charged: bool, base: DecisionBase, *,
                         by_hand: bool, lookup: Mapping[str, str] | None) -> Decision:
    """A host OOM of a job with --mem=0 (Slurm: all of each node's memory): no --mem gives it
    more, so none is proposed (neither a size below the node's nor twice 0); it wants nodes
    with more memory or less host memory, and after a steady leak, finding what grows. A plain
    resubmit is offered only after a leak (it gets further from a newer checkpoint). The
    job's `mem_limit_bytes`, when sacct gave one, is the node's memory (what it allocated).
    The class's hint (more --mem) gives way to WHOLE_NODE_HINT."""
    node_mem = accounting.mem_limit_bytes or None
    # the class's hint asks for more --mem; a site's own hint for the class is said as it is
    hint = diagnosis.hint if diagnosis.site_hint else WHOLE_NODE_HINT
    had = f"{_size(node_mem)}, " if node_mem else ""
    leak = ""
    if remedy is not None:
        leak = (f"; host memory grew steadily ({remedy.slope_gib_per_100_iter:.1f} GiB per 100 "
                f"iterations): {_need_text(remedy)}; run `trainbot probe dataloader` for the "
                "recipe to find what grows")
    return Decision(
        DecisionKind.ASK_HUMAN,
        f"host memory exhausted{saving} with --mem=0, already all of its node's memory "
        f"({had}MaxRSS {_size(accounting.max_rss_bytes)}): no --mem gives it more; run it on nodes "
        f"with more memory, or cut host memory{leak}. {hint}".strip(),
        charged=charged,
        offers=resubmit_offers(by_hand=by_hand) if remedy is not None else (OFFER_DISMISS,),
        facts={"why": "mem_whole_node", "during_save": diagnosis.during_checkpoint_save,
               "max_rss": _size_or_none(accounting.max_rss_bytes),
               **({"node_mem": _size(node_mem)} if node_mem else {}),
               **({"leak": remedy.facts()} if remedy is not None else {}),
               **(lookup or {}), **({"by_hand": True} if by_hand else {})},
        **base,
    )


def _own_fix(diagnosis: Diagnosis, charged: bool, not_before: float | None, where: str,
             base: DecisionBase, *, whole_node: bool, by_hand: bool,
             lookup: Mapping[str, str] | None) -> Decision:
    """A DataLoader worker's failure whose cause is not host memory (its workers out of
    /dev/shm, the process at its open-file limit: NOT_HOST_MEMORY), with --mem=0 or not: no
    --mem is proposed (more host memory does not fix it: fewer workers, a larger /dev/shm,
    the file_system sharing strategy or a higher `ulimit -n` do), nor is host memory said to
    have run out; a person decides, as for any `ask` class, told the cause's own fix: the
    fact `own_fix` (and `whole_node` for a --mem=0 job) keeps the class's hint, which asks for
    more --mem, out of the thread (a site's own is said)."""
    hand = {"by_hand": True} if by_hand else {}
    offered = f"{RESUBMIT_BY_HAND} {where}." if by_hand else f"resubmit {where} is offered."
    hint = f" {diagnosis.hint}" if diagnosis.site_hint else ""
    return Decision(
        DecisionKind.ASK_HUMAN,
        f"{diagnosis.class_id}: a person should decide; {offered}{hint}",
        charged=charged,
        not_before=not_before,
        offers=resubmit_offers(by_hand=by_hand),
        facts={"why": "ask", "own_fix": True, **({"whole_node": True} if whole_node else {}),
               **(lookup or {}), **hand},
        **base,
    )


def _need_text(remedy: LeakRemedy) -> str:
    """What reaching the target needs; from an unknown start, said to be the worst case, with
    the best case from the last iteration the log reached (templates' leak_remedy_text)."""
    need = f"reaching iteration {remedy.target_iter} needs ~{remedy.need_gib}G"
    if remedy.start_known:
        return need
    reached = (f" (from iteration {remedy.reached_iter}, the last the log reached: "
               f"~{remedy.reached_need_gib}G)" if remedy.reached_iter else "")
    return ("the iteration a resume starts from is unknown, so this counts from iteration 0, "
            f"the worst case: {need}{reached}")


@dataclass(frozen=True)
class LeakRemedy:
    """What more memory can do after a host OOM that followed a steady RSS trend.

    From the last complete checkpoint (`resume_iter`) the process starts again at
    `start_gib` and grows `slope_gib_per_100_iter`: reaching `target_iter` needs `need_gib`.
    `hopeless` when that is above `ceiling_gib`, the lower of the site's cap
    (`mem_cap_bytes`, the config's `policy.max_mem`) and twice the current limit
    (`ceiling_is_cap` says which): no `--mem` finishes the run; `with_gib` (the `--mem` a
    plain OOM would get) reaches `reach_iter`.
    `ceiling_gib` None: neither the job's limit nor a site cap is known, so whether any
    memory finishes the run cannot be told and no `--mem` is proposed (`proposes_mem`).
    `role` is what grows, from the sampler (DataLoader workers / trainer), else None.
    `whole_node`: the job asked for --mem=0 (all of each node's memory; its limit then 0, or the
    node's memory as sacct allocated it), so no `--mem` gives it more and none is proposed.

    `start_known` False: the iteration a resume starts from is unknown (`trainbot report`'s
    log numbered no save; the checkpoint is known only by its name, or its lookup failed), so
    `resume_iter` is 0, the worst case: every figure counts the whole run, and a later
    checkpoint needs less (`need_gib` is a --mem that finishes from any). `reached_iter`, the
    last iteration the log reached, bounds that checkpoint from above: from there the run
    needs `reached_need_gib`, the best case."""

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
    ceiling_is_cap: bool = False
    start_known: bool = True
    reached_iter: int | None = None
    reached_need_gib: int | None = None
    whole_node: bool = False

    @property
    def runs_iters(self) -> int:
        """How many iterations past its checkpoint `with_gib` runs (up to the target)."""
        return self.reach_iter - self.resume_iter

    @property
    def proposes_mem(self) -> bool:
        """Is `need_gib` a `--mem` to propose (known to fit under the ceiling)?"""
        return self.ceiling_gib is not None and not self.hopeless and not self.whole_node

    def facts(self) -> dict[str, Any]:
        return {"slope": self.slope_gib_per_100_iter, "need_gib": self.need_gib,
                "ceiling_gib": self.ceiling_gib, "with_gib": self.with_gib,
                "reach_iter": self.reach_iter, "target": self.target_iter,
                "resume_from": self.resume_iter, "role": self.role,
                "hopeless": self.hopeless, "limit_known": self.ceiling_gib is not None,
                "ceiling_is_cap": self.ceiling_is_cap, "start_known": self.start_known,
                "reached_iter": self.reached_iter, "reached_need_gib": self.reached_need_gib,
                "runs_iters": self.runs_iters, "whole_node": self.whole_node}


def leak_remedy(
    diagnosis: Diagnosis,
    *,
    resume_iter: int | None,
    limit_bytes: int | None,
    max_rss_bytes: int | None = None,
    policy: Any = None,
    worker_rss: tuple[int, int] | None = None,
    trainer_rss: tuple[int, int] | None = None,
    start_unknown: bool = False,
    whole_node: bool = False,
) -> LeakRemedy | None:
    """The memory a leaking run needs to finish (see LeakRemedy); None without a steady
    trend (`Diagnosis.leak_fit`) or a target iteration. `worker_rss` / `trainer_rss` are the
    sampler's (start, now) RSS of each role: the one that grew most is named.
    `resume_iter` None is from scratch, unless `start_unknown`: then where the resume starts is
    not known, the figures count from iteration 0 (the worst case) and the need from the last
    iteration the log reached (`DiagnosisMetrics.last_iter`) is the best case. `whole_node`:
    the job asked for --mem=0 (`limit_bytes` 0, or the node's memory sacct allocated)."""
    fit, target = diagnosis.leak_fit, diagnosis.metrics.target_iter
    if not fit or not target or fit["slope_gib_per_100_iter"] <= 0:
        return None
    p = params_from(policy)
    per_iter = fit["slope_gib_per_100_iter"] / 100
    resume = 0 if start_unknown else resume_iter or 0

    def needs(start_iter: int) -> float:
        return float(fit["start_gib"] + per_iter * max(0, target - start_iter))

    need = needs(resume)
    need_gib = _gib_up(need)
    reached = diagnosis.metrics.last_iter if start_unknown else None
    reached_need_gib = _gib_up(needs(reached)) if reached else None
    cap = int(p.mem_cap_bytes // GIB) if p.mem_cap_bytes is not None else None
    twice = int(2 * limit_bytes // GIB) if limit_bytes else None
    ceiling = min((c for c in (cap, twice) if c is not None), default=None)
    if ceiling is not None and need <= ceiling < need_gib:
        need_gib = ceiling  # the need fits: rounding it up must not push it past the ceiling
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
        ceiling_is_cap=cap is not None and cap == ceiling,
        start_known=not start_unknown,
        reached_iter=reached or None,
        reached_need_gib=reached_need_gib,
        whole_node=whole_node or limit_bytes == 0,
    )


def _gib_up(need_gib: float) -> int:
    """Memory in whole GiB, rounded up (10 GiB steps from 100 GiB)."""
    step = 10 if need_gib >= 100 else 1
    return int(math.ceil(need_gib / step - 1e-9)) * step


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


def _size(n: int | None) -> str:
    return "unknown" if n is None else format_size(n)


def _size_or_none(n: int | None) -> str | None:
    return None if n is None else format_size(n)
