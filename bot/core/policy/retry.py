"""The decision for a finished job (`decide`): stop, ask a person or resubmit (now or with a
button), within the chain's retry budget, after a backoff, leaving a faulty node out; and
whether a person's approved resubmit is charged (`approval_charged`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bot.core.models import (
    HINT,
    MEMORY_CLASSES,
    STOP_CLASSES,
    Accounting,
    Action,
    CheckpointMark,
    Diagnosis,
)
from bot.core.policy.chain import ChainHistory
from bot.core.policy.chunks import ChunkProgress, chunk_progress, chunk_start_unknown
from bot.core.policy.decision import (
    OFFER_DISMISS,
    OFFER_RESUBMIT,
    RESUBMIT_BY_HAND,
    CheckpointUnknown,
    Decision,
    DecisionBase,
    DecisionKind,
    lookup_fact,
    resubmit_offers,
    resume_start,
)
from bot.core.policy.early import early_warnings
from bot.core.policy.memory import host_oom_decision
from bot.core.policy.params import params_from

if TYPE_CHECKING:
    from bot.core.catalogue import Catalogue

#: Classes that describe a job still running (early warnings, not end-of-job decisions).
RUNNING_CLASSES = frozenset({"none", "hang", "memory_leak"})


def approval_charged(*, budget_spent: bool, recorded: bool | None, class_id: str | None,
                     catalogue: Catalogue) -> bool:
    """Does a resubmit a person approved spend one of its chain's retries? Exactly when the
    automatic resubmit of the same failure would (`decide`: the diagnosis' `charges_budget`,
    never a time-limit chunk that saved a newer checkpoint): what the watcher `recorded` for
    it, else the catalogue's class `class_id`; a failure of unknown class charges (like
    unknown_failure). A chain whose budget is spent is not
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
    checkpoint_name: str | None = None,
    checkpoint_unknown: CheckpointUnknown | None = None,
    accounting: Accounting | None = None,
    worker_rss: tuple[int, int] | None = None,
    trainer_rss: tuple[int, int] | None = None,
) -> Decision:
    """The decision for one diagnosed job.

    `checkpoint_name` names the latest COMPLETE checkpoint (None: none, start from scratch) and
    `checkpoint_iter` is its iteration (None: unknown, its name has none, or no checkpoint);
    `checkpoint_unknown`: whether there is one is unknown, and why (looking it up failed or was
    late; the job has no recipe naming its checkpoint dir, one trainbot did not submit): the
    resume point and the work lost are unknown (fact `checkpoint_lookup`: "failed" /
    "no_recipe"), a leak's memory counts from iteration 0, the worst case, and says so, and a
    resubmit that would be automatic is proposed instead (fact `auto_withheld`): it could
    start from scratch, charged, with nobody asked; a job with no recipe ("no_recipe") has no
    retry budget and trainbot resubmits nothing of it: nothing is charged, and the decision
    says a person resubmits it (`RESUBMIT_BY_HAND`, fact `by_hand`);
    a time-limit chunk that advanced it past the checkpoint it resumed from (the last
    attempt's `start`), within the run's target (the diagnosis' `target_iter`), is resubmitted
    without charging the budget, up to `max_free_chunks` in a row (`chunk_progress`);
    `accounting` gives MaxRSS and the memory limit for a host_oom --mem proposal;
    after a steady leak (`leak_remedy`) the --mem is what finishes the run, or none when no
    memory can (`worker_rss` / `trainer_rss` from the sampler name what grows).
    A running job's diagnosis (none / hang / memory_leak) returns the first early warning.
    """
    p = params_from(policy)
    cid = diagnosis.class_id
    last_iter = _current_last_iter(diagnosis, chain_history)
    # a checkpoint of unknown iteration: the work lost is unknown too
    unknown_start = checkpoint_unknown or (checkpoint_iter is None and checkpoint_name)
    lost = None if unknown_start else _work_lost(last_iter, checkpoint_iter)
    base = DecisionBase(class_id=cid, resume_from=checkpoint_iter,
                        resume_checkpoint=checkpoint_name, work_lost_iters=lost)
    # an unknown checkpoint (and why) is said wherever a resume point or the work lost is
    lookup = lookup_fact(checkpoint_unknown)

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
            facts={"why": "not_retryable", **lookup},
            **base,
        )
    if diagnosis.action == Action.NONE:
        return Decision(DecisionKind.NONE, f"{cid}: nothing to do", cid,
                        facts={"why": "nothing_to_do"})
    if (diagnosis.detail or {}).get("kind") == "never_started":
        return _never_started(diagnosis, chain_history, p, now, base, checkpoint_iter,
                              checkpoint_name, checkpoint_unknown)

    chunk = chunk_progress(cid, chain_history, CheckpointMark(checkpoint_name, checkpoint_iter),
                           bounds=p.chunk_bounds(diagnosis.metrics.target_iter))
    free_chunk = chunk is not None and not chunk.capped
    # a job with no recipe (one trainbot did not submit) has no retry budget, and trainbot
    # resubmits nothing of it: nothing is charged, and the decision says who resubmits it;
    # a person decides (ask_human), offered no resubmit, since no button could make one (a
    # button resubmits a recipe), and nothing waits for a backoff
    by_hand = checkpoint_unknown == "no_recipe"
    hand = {"by_hand": True} if by_hand else {}
    proposed = DecisionKind.ASK_HUMAN if by_hand else DecisionKind.PROPOSE_RESUBMIT
    charged = bool(diagnosis.charges_budget) and not free_chunk and not by_hand
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
                   "budget": p.retry_budget, **node, **lookup},
            **base,
        )
    stalled = _no_progress(chain_history, last_iter) if charged else None
    if stalled is not None:
        return Decision(
            DecisionKind.ASK_HUMAN,
            f"no progress over the last attempt that ran, job {stalled['prev_job']} "
            f"({_no_progress_text(stalled)}); "
            f"stopping the chain instead of retrying {cid} again",
            stop_chain=True,
            offers=(OFFER_RESUBMIT, OFFER_DISMISS),
            facts={"why": "no_progress", **stalled, **node, **lookup},
            **base,
        )

    not_before = None if by_hand else now + backoff_delay(p, chain_history.resubmits_so_far)
    where = _resume_text(checkpoint_iter, checkpoint_name, lost, unknown=checkpoint_unknown)
    budget_text = (
        f"charged: {chain_history.retries_used + 1} of {p.retry_budget} retries"
        if charged
        else "not charged to the retry budget"
    )
    retry_facts = {"why": "retryable", "charge_no": chain_history.retries_used + 1,
                   "budget": p.retry_budget, **node, **lookup}
    if by_hand:  # no budget to name
        retry_facts = {"why": "retryable", **hand, **node, **lookup}
    # a time-limit stop that saved a checkpoint from an unknown start: charged, and said why
    if charged and checkpoint_unknown is None and chunk_start_unknown(
            cid, chain_history, CheckpointMark(checkpoint_name, checkpoint_iter)):
        budget_text += ", not a free chunk: the checkpoint this job started from is unknown"
        retry_facts["charged_why"] = "start_unknown"
    if node:
        where += f" on another node (--exclude={diagnosis.node})"
    resubmitting = f"{cid} is retryable: resubmitting {where} ({budget_text})"
    proposing = (f"{cid} is retryable; {RESUBMIT_BY_HAND} {where}" if by_hand
                 else f"{cid} is retryable: proposing to resubmit {where} ({budget_text})")
    if chunk is not None:  # the run goes on: said as the chunk's progress
        names = {k: v for k, v in (("from_checkpoint", chunk.start.name),
                                   ("to_checkpoint", chunk.saved.name)) if v}
        retry_facts = {"why": "chunk_progress", "from_iter": chunk.from_iter,
                       "to_iter": chunk.to_iter, **names, **node, **lookup}
        resubmitting = f"{_chunk_text(chunk, lost)}: resubmitting; retries not charged"
        proposing = f"{_chunk_text(chunk, lost)}: proposing to resubmit; retries not charged"
    if chunk is not None and chunk.capped:  # ... but one chunk too many in a row: charged
        retry_facts = {**retry_facts, "why": "chunk_capped", "in_a_row": chunk.in_a_row,
                       "charge_no": chain_history.retries_used + 1, "budget": p.retry_budget}
        capped = (f"({budget_text}): {chunk.in_a_row} chunks in a row went uncharged, the "
                  "recipe's max_free_chunks")
        resubmitting = f"{_chunk_text(chunk, lost)}: resubmitting {capped}"
        proposing = f"{_chunk_text(chunk, lost)}: proposing to resubmit {capped}"
    if diagnosis.action == Action.RESUBMIT:
        # a class named only by how the log ends (no decisive line, no accounting) is offered,
        # never resubmitted by itself: a person looks closer first
        automatic = p.auto_resubmit and diagnosis.retryable and diagnosis.decided_by != HINT
        if automatic and checkpoint_unknown is None:
            return Decision(
                DecisionKind.RESUBMIT_NOW,
                resubmitting,
                charged=charged,
                not_before=not_before,
                facts=retry_facts,
                **base,
            )
        if automatic and not by_hand:  # checkpoint unknown: a person approves where it starts
            proposing += ("; not resubmitted automatically: the checkpoint it would resume "
                          "from is unknown")
            retry_facts = {**retry_facts, "auto_withheld": "checkpoint_unknown"}
        return Decision(
            proposed,
            proposing,
            charged=charged,
            not_before=not_before,
            offers=resubmit_offers(by_hand=by_hand),
            facts={**retry_facts, **hand},
            **base,
        )
    # Action.ASK
    if cid in MEMORY_CLASSES:
        return host_oom_decision(diagnosis, p, accounting, charged, not_before, where, base,
                                 worker_rss=worker_rss, trainer_rss=trainer_rss,
                                 start_unknown=bool(unknown_start), by_hand=by_hand,
                                 lookup=lookup)
    offered = f"{RESUBMIT_BY_HAND} {where}." if by_hand else f"resubmit {where} is offered."
    return Decision(
        proposed,
        f"{cid}: a person should decide; {offered} {diagnosis.hint}".strip(),
        charged=charged,
        not_before=not_before,
        offers=resubmit_offers(by_hand=by_hand),
        facts={"why": "ask", **node, **lookup, **hand},
        **base,
    )


def _never_started(diagnosis: Diagnosis, chain_history: ChainHistory, p: Any, now: float,
                   base: DecisionBase, checkpoint_iter: int | None,
                   checkpoint_name: str | None,
                   checkpoint_unknown: CheckpointUnknown | None) -> Decision:
    """A job that ended while it waited in the queue (its diagnosis' `never_started` detail:
    bot.core.diagnose): nothing ran, so nothing was lost and nothing is charged, and a person
    decides whether to submit it again, from where the run's checkpoint stands (Resubmit /
    Dismiss; a job trainbot did not submit, Dismiss alone). Said as what happened, its State,
    who cancelled it and why it was pending (facts `state`, `cancelled_by`,
    `pending_reason`), not as its class's failure."""
    detail = diagnosis.detail or {}
    by_hand = checkpoint_unknown == "no_recipe"
    hand = {"by_hand": True} if by_hand else {}
    where = _resume_text(checkpoint_iter, checkpoint_name, None, unknown=checkpoint_unknown)
    ended = str(detail.get("state"))
    if detail.get("cancelled_by") is not None:
        ended += f" by user id {detail['cancelled_by']}"
    if detail.get("pending_reason"):
        ended += f", pending reason {detail['pending_reason']}"
    offered = (f"{RESUBMIT_BY_HAND} {where}." if by_hand
               else f"resubmit {where} or dismiss: a person decides.")
    return Decision(
        DecisionKind.ASK_HUMAN if by_hand else DecisionKind.PROPOSE_RESUBMIT,
        f"never started: Slurm ended it ({ended}) while it waited in the queue, so nothing "
        f"ran and nothing was lost; {offered}",
        not_before=None if by_hand else now + backoff_delay(p, chain_history.resubmits_so_far),
        offers=resubmit_offers(by_hand=by_hand),
        facts={"why": "never_started", "state": detail.get("state"),
               "cancelled_by": detail.get("cancelled_by"),
               "pending_reason": detail.get("pending_reason"),
               **lookup_fact(checkpoint_unknown), **hand},
        class_id=base["class_id"], resume_from=base["resume_from"],
        resume_checkpoint=base["resume_checkpoint"],
    )


def _finished(accounting: Accounting | None) -> bool:
    return accounting is not None and accounting.state is not None and not accounting.is_running


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
    """Why the attempt made no progress over the latest earlier one that ran (`job`,
    `last_iter`, `prev_job`, `prev_iter`; `last_iter` None: it logged none), or None if it
    did / none earlier ran. An attempt Slurm ended while it waited in the queue
    (AttemptFacts.ran False: bot.core.slurm.states.ended_unstarted) ran nothing, so it is
    no measure of progress: the attempt is compared with the one before it that ran, and
    is a first one when there is none."""
    if not history.attempts:
        return None
    prev = next((a for a in reversed(history.attempts[:-1]) if a.ran), None)
    if prev is None:
        return None
    if last_iter is None or (prev.last_iter is not None and last_iter <= prev.last_iter):
        return {"job": history.attempts[-1].job_id, "last_iter": last_iter,
                "prev_job": prev.job_id, "prev_iter": prev.last_iter}
    return None


def _no_progress_text(facts: Mapping[str, Any]) -> str:
    if facts["last_iter"] is None:
        return "this attempt logged no iteration"
    return (f"job {facts['job']} stopped at iteration {facts['last_iter']}, "
            f"job {facts['prev_job']} at {facts['prev_iter']}")


def _chunk_text(chunk: ChunkProgress, lost: int | None) -> str:
    """The chunk's progress in the words its posted line has (templates/event.json.j2), where
    it started in the one start phrase (`resume_start`): `chunk from iteration 2,000 ended at
    the time limit after saving iter 4,000 (300 iterations since lost)`; a checkpoint's name
    where it has no iteration (`chunk from scratch (no complete checkpoint) ended at the time
    limit after saving checkpoint `final``)."""
    start = resume_start(chunk.from_iter, chunk.start.name)
    saved = (f"iter {chunk.to_iter:,}" if chunk.to_iter is not None
             else f"checkpoint `{chunk.saved.name}`")
    since = f" ({lost:,} iterations since lost)" if lost else ""
    return f"chunk {start} ended at the time limit after saving {saved}{since}"


def _work_lost(last_iter: int | None, checkpoint_iter: int | None) -> int | None:
    if last_iter is None:
        return None
    return max(0, last_iter - (checkpoint_iter or 0))


def _resume_text(checkpoint_iter: int | None, checkpoint_name: str | None,
                 lost: int | None, *, unknown: CheckpointUnknown | None = None) -> str:
    """The decision's resume point (`resume_start`) with the iterations lost since its
    checkpoint, when known."""
    text = str(resume_start(checkpoint_iter, checkpoint_name, unknown))
    known = unknown is None and (checkpoint_iter is not None or checkpoint_name)
    return f"{text} ({lost} iterations lost)" if known and lost else text
