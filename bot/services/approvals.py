"""Approval clicks: the opaque token behind each prompt is accepted exactly once.

A prompt (bot.services.prompts, or a competitor's "Hold / No" from bot.services.competitors)
is one approval row; every button of it carries the same token, its action id
(bot.slack.views.ActionId) says which choice. `handle_click` accepts one click per prompt:
a double click, a Slack retry or a replay after expiry changes nothing. Who may click is
decided at the click, by the running config (bot.services.access.approvers_now), not by the
approvers stored with the prompt (a record of who could when it was posted): someone removed
from a recipe's approvers is refused, and told who can, however old the prompt. Every click
is audited, whatever its outcome.

A prompt is about one job of a run chain (a hold prompt: about the resumed job it waits for).
A stall prompt (Cancel and resume / Cancel / Dismiss) whose job trained on past the
iteration it stalled at (its attempt's progress: bot.services.approved_choices.stall_over)
is out of date too: its click cancels nothing, and says so; the watcher marks it so as soon
as it sees the progress (bot.services.watch_events, `stall_over`). The claim of any of its
buttons checks, in the same transaction, that this job is still the
chain's latest attempt and that no other prompt of the chain is acting on it: a prompt the run
moved past (resumed by `/train resume` or another approval) is `stale` for good, and its click
submits, cancels and holds nothing, says "out of date: job N is now the latest (STATE)" and
rewrites the prompt to say so. A hold is also refused when its competitor already started or
left the queue (asked from Slurm just before holding).

What a click did is data (`Outcome`: kind, actor, job ids, iteration, --mem, a verbatim error),
which the `decided` template says in the recipe's language (bot.services.approval_outcomes);
the `click_reply` template says the replies only the clicker sees (unknown button, refused,
already decided, expired). Every acting claim marks its step with it (a hold's yes
`hold_approved`, any other `claimed`), with the clicker's bounds: a click whose process dies
before its choice's next step is taken over by bot.services.claim_takeover. What a claimed
choice does is bot.services.approved_choices';
the steps an approved cancel marks and the times counted from them,
bot.services.cancel_steps'.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.cluster.errors import ClusterError, said
from bot.core.policy import run_latest
from bot.core.takeover import StepBounds, settle_takeover_s
from bot.services import ServiceError
from bot.services import competitors as comp
from bot.services.access import approvers_now
from bot.services.after_submit import took_over_outcome
from bot.services.approval_outcomes import Outcome, decided, expired_outcome
from bot.services.approved_choices import (
    ClaimLostBeforeScancel,
    NotPerformed,
    perform,
    recovered_outcome,
    stall_over,
)
from bot.services.cancel_steps import (
    CANCEL_STEPS,
    CANCELLING_STEP,
    CLAIMED_STEP,
    RESUMING_STEP,
    UNKNOWN_CANCEL_STEP,
    cancel_takeover_at,
)
from bot.services.ports import Blocks, BotContext, StoreStep
from bot.services.runs import array_task_of
from bot.services.submit import RunSubmitInFlight
from bot.services.submit_claim import RecipeSubmitUnderWay
from bot.services.submit_deadlines import cluster_deadlines, step_bounds
from bot.services.threads import render
from bot.slack.views import ActionId
from bot.store import Approval

log = logging.getLogger(__name__)
# choice name stored in the approval's payload <-> the button's action id
CHOICES: dict[ActionId, str] = {
    ActionId.RESUBMIT: "resubmit",
    ActionId.RESUBMIT_MEM: "resubmit_mem",
    ActionId.CANCEL_RESUME: "cancel_resume",
    ActionId.HOLD_COMPETITOR: "hold",
    ActionId.KEEP_COMPETITOR: "keep",
    ActionId.CANCEL: "cancel",
    ActionId.DISMISS: "dismiss",
    ActionId.RUN_PROBE: "probe",
}

_NEGATIVE = {"dismiss", "keep"}

ClickStatus = Literal[
    "done", "failed", "declined", "unauthorized", "expired", "stale", "busy", "duplicate",
    "unknown"
]


@dataclass(frozen=True)
class ClickResult:
    """What a click did. `update_*` replace the prompt message (None: leave it as is);
    `ephemeral` is shown to the clicker only."""

    status: ClickStatus
    update_text: str | None = None
    update_blocks: Blocks | None = None
    ephemeral: str | None = None
    job_id: str | None = None
    holds: list[int] = field(default_factory=list)
    homes_refreshed: bool = False  # its submit refreshed the Home tabs (after_person_submit)


def click_reply(ctx: BotContext, recipe: str | None, kind: str, *, channel: str | None = None,
                **facts: Any) -> str:
    """A reply only the clicker sees (the `click_reply` template), in the recipe's language
    (when the recipe is unknown, the `channel`'s recipes', else slack.lang): `kind` is unknown |
    unauthorized | duplicate | busy | failed_released (`error`: what a claimed choice raised;
    nothing was done and the prompt stays usable) | cancel_taken_over (`error`, `job`: a cancel
    and resume that sent nothing, whose cancel the settle took over meanwhile) | stopping
    (`started`, `steps`: handlers.fence) | internal_error; `facts` are approvers (user ids),
    decided_by, job (busy), and for duplicate and busy `cancel_job` / `cancel_wait_s` or
    `claim_wait_s` (`_acting`)."""
    view = {"kind": kind, "approvers": [], "decided_by": None, "job": None,
            "cancel_job": None, "cancel_wait_s": None, "claim_wait_s": None, "cancel": False,
            "steps": [], **facts}
    return render(ctx, "click_reply", recipe, view, channel=channel)[1]


def claim_bounds(ctx: BotContext, approval: Approval) -> StepBounds | None:
    """The bounds a claim of `approval` keeps with its step (its click's Slurm reads,
    checkpoint lookup and posts at this process's worst case), so its takeover
    (bot.services.claim_takeover) waits for them; None when its cluster is no longer
    configured (the current config's then)."""
    cluster = str(approval.payload.get("cluster", ""))
    try:
        return step_bounds(ctx.config, cluster, ctx.clusters.slurm(cluster))
    except KeyError:
        return None


_SETTLE_TOOK_OVER = tuple(s for s in sorted(CANCEL_STEPS)
                          if s not in (*CANCELLING_STEP.values(), RESUMING_STEP))
"""The steps a settle marks once it takes a cancel over (bot.services.cancel_settle): a click
that finds them after its claim of the resubmit was lost leaves the prompt approved, the
settle's."""


CLAIM_WENT_ON = frozenset({comp.HOLDING_STEP, *CANCEL_STEPS})
"""The steps a claimed choice marks once it goes on from its claim's step (a hold's
`holding`, a cancel's steps): its own recovery has it from then on."""


def claim_step(steps: Mapping[str, float]) -> str | None:
    """The claim's step an approval with these `steps` is left in, no next step marked
    (CLAIMED_STEP, or a hold's yes's HOLD_APPROVED_STEP): its click is under way, or its
    process died before its choice went on (bot.services.claim_takeover); None when it has no
    such step, or its choice went on (CLAIM_WENT_ON)."""
    step = CLAIMED_STEP if CLAIMED_STEP in steps else comp.HOLD_APPROVED_STEP
    if step not in steps or any(s in steps for s in CLAIM_WENT_ON):
        return None
    return step


def claim_takeover_s(ctx: BotContext, approval: Approval, step: str) -> float:
    """How old `approval`'s claim `step` must be, no next step marked, before its click is
    taken to have died: longer than a settle can take on its cluster (bot.core.takeover.
    settle_takeover_s: its Slurm reads, a checkpoint lookup, its posts, and the margin), at
    the bounds the clicker kept with the step when longer than the current config's."""
    cluster = str(approval.payload.get("cluster", ""))
    return settle_takeover_s(cluster_deadlines(ctx.config, cluster), None,
                             ctx.store.approvals.bounds_of(approval.token, step),
                             post_deadline_s=ctx.config.slack.post_deadline_s)


def claim_given_back_at(ctx: BotContext, approval: Approval, now: float) -> float | None:
    """When bot.services.claim_takeover gives `approval`'s claim back at the earliest if its
    click died before it sent anything (the prompt pending again, its buttons usable): its
    claim's step's time plus claim_takeover_s, the bound the clicker kept with it. None when
    it is in no claim's step (`claim_step`), or a submit of its run is in flight (its sbatch
    went out: the submits' recovery records its job or forgets it, and the takeover waits
    for that)."""
    steps = ctx.store.approvals.steps(approval.token)
    step = claim_step(steps)
    if step is None or run_submit_in_flight(ctx, approval, now):
        return None
    return steps[step] + claim_takeover_s(ctx, approval, step)


def run_submit_in_flight(ctx: BotContext, approval: Approval, now: float) -> bool:
    """Is a submit of `approval`'s run kept in flight (its sbatch sent, its job not yet
    recorded)?"""
    cluster = approval.payload.get("cluster")
    return approval.chain_id is not None and cluster is not None and any(
        f.chain_id == approval.chain_id
        for f in ctx.store.submits_in_flight.sent_before(str(cluster), now + 1))


def _acting(ctx: BotContext, other: Approval | None, now: float) -> dict[str, Any]:
    """For a click refused because `other` was decided (duplicate) or is acting on its job
    (busy), when `other` is still approved: an approved cancel still in its scancel
    (`cancel_takeover_at`), its job (`cancel_job`) and how long until trainbot takes that
    cancel over if its click's process died (`cancel_wait_s`); a claim left in its step
    (`claim_given_back_at`), how long until trainbot gives it back if its click died before
    it sent anything (`claim_wait_s`), so the reply names the wait the takeover keeps; else
    nothing."""
    if other is None or other.state != "approved":
        return {}
    due = cancel_takeover_at(ctx, other)
    if due is not None:
        return {"cancel_job": str(other.target_job), "cancel_wait_s": max(due - now, 0.0)}
    back = claim_given_back_at(ctx, other, now)
    if back is not None:
        return {"claim_wait_s": max(back - now, 0.0)}
    return {}


def handle_click(
    ctx: BotContext,
    token: str,
    action_id: str,
    actor: str,
    now: float,
    retry_num: int = 0,
    *,
    from_home: bool = False,
) -> ClickResult:
    """Accept one click (once per prompt), carry out the choice, say what happened.

    The claim checks, in its transaction, that the prompt still applies (`latest_job`): a
    click on a prompt whose run moved on does nothing and says so ("out of date"), in the
    prompt and to the clicker, whichever button it was."""
    store = ctx.store
    detail: dict[str, Any] = {"token": token, "action_id": action_id, "retry_num": retry_num}

    def audit(result: str, job: str | None = None, recipe: str | None = None, **more: Any):
        store.audit.record(actor=actor, action="approval.click", now=now, result=result,
                           job_id=job, recipe=recipe, detail={**detail, **more})

    approval = store.approvals.get(token)
    try:
        choice = CHOICES[ActionId(action_id)]
    except ValueError:
        choice = None
    if approval is None or choice is None or choice not in approval.payload.get("choices", []):
        audit("unknown")
        recipe = approval.payload.get("recipe") if approval is not None else None
        return ClickResult("unknown", ephemeral=click_reply(ctx, recipe, "unknown"))
    payload = approval.payload
    recipe, target = payload.get("recipe"), approval.target_job
    for_job = payload.get("for_job")
    approvers = approvers_now(ctx.config, recipe)
    if actor not in approvers:
        audit("unauthorized", target, recipe)
        return ClickResult("unauthorized", ephemeral=click_reply(
            ctx, recipe, "unauthorized", approvers=sorted(approvers.users)))
    if choice == "probe":
        return _probe_click(ctx, approval, actor, now, audit)
    over = stall_over(ctx, approval) if approval.state in ("pending", "stale") else None
    if over is not None:  # its job trained on: a Cancel would stop a healthy run
        ctx.store.approvals.mark_out_of_date(token, actor, now=now)
        audit("stale", target, recipe, choice=choice, stalled_at=over.stalled_at,
              reached=over.reached)
        text, blocks = decided(ctx, recipe, payload, recovered_outcome(approval, over, actor))
        return ClickResult("stale", text, blocks, ephemeral=text)
    claimed: StoreStep | None = None  # the claim, as noted in the context's `steps`
    if choice in _NEGATIVE:
        claim = store.approvals.refuse(token, actor, now, latest_job=latest_job_of(approval))
        if claim.claimed:  # for good: a retry is told it was decided
            ctx.steps.noted(StoreStep("refused"))
    else:  # marked with the claim: a hold's yes, that its hold waits for its `holding` step;
        # any choice, the click's lease on it (bot.services.claim_takeover)
        step, bounds = comp.approved_step(approval) or CLAIMED_STEP, claim_bounds(ctx, approval)
        claim = store.approvals.claim(token, actor, now, latest_job=latest_job_of(approval),
                                      step=step, bounds=bounds)
        if claim.claimed:  # given back by the takeover if nothing is sent (claim_takeover_s)
            cluster = str(approval.payload.get("cluster", ""))
            claimed = StoreStep("claimed", now + settle_takeover_s(
                cluster_deadlines(ctx.config, cluster), None, bounds,
                post_deadline_s=ctx.config.slack.post_deadline_s))
            ctx.steps.noted(claimed)
    if not claim.claimed:
        if claim.reason == "expired":
            audit("expired", target, recipe)
            text, blocks = decided(ctx, recipe, payload, expired_outcome(approval))
            return ClickResult("expired", text, blocks, ephemeral=text)
        if claim.reason == "stale" and claim.latest is not None:
            latest = claim.latest
            audit("stale", target, recipe, choice=choice, latest_job=latest.job_id,
                  latest_state=latest.state)
            text, blocks = decided(ctx, recipe, payload, Outcome(
                "stale", actor, "moved_on", recipe, job_id=target, for_job=for_job,
                current_job=latest.shown_id, state=latest.state))
            return ClickResult("stale", text, blocks, ephemeral=text)
        if claim.reason == "busy" and claim.other is not None:
            audit("busy", target, recipe, choice=choice, other_token=claim.other.token)
            return ClickResult("busy", ephemeral=click_reply(
                ctx, recipe, "busy", decided_by=claim.other.decided_by,
                job=latest_job_of(approval), **_acting(ctx, claim.other, now)))
        done = claim.approval
        if done is not None and done.state == "stale" and done.payload.get("took_over"):
            # rewritten when a newer job took over (after_submit.supersede_prompts): a click
            # from a view not refreshed yet is told the same
            audit("stale", target, recipe, choice=choice)
            text, blocks = decided(ctx, recipe, payload, took_over_outcome(ctx, done))
            return ClickResult("stale", text, blocks, ephemeral=text)
        audit("duplicate", target, recipe, state=done.state if done else None)
        return ClickResult("duplicate", ephemeral=click_reply(
            ctx, recipe, "duplicate", decided_by=done.decided_by if done else None,
            **_acting(ctx, done, now)))

    if choice in _NEGATIVE:
        audit("dismissed" if choice == "dismiss" else "declined", target, recipe)
        outcome = Outcome("dismissed" if choice == "dismiss" else "kept", actor, recipe=recipe,
                          job_id=target, for_job=for_job)
        return ClickResult("declined", *decided(ctx, recipe, payload, outcome))
    try:
        result = perform(ctx, approval, choice, actor, now,
                         besides=actor if from_home else None)
    except (RunSubmitInFlight, RecipeSubmitUnderWay) as exc:  # refused before its sbatch
        # (a cancel and resume's before its scancel: nothing was cancelled)
        # the other submit carries the run, or the recipe (the prompt goes out of date once
        # its job is recorded); if it queues none, the prompt is still there to press again.
        # Released once, here, and only while the claim is still this click's
        forget = exc.forget if isinstance(exc, ClaimLostBeforeScancel) else ()
        lost = bool(forget)
        released = store.approvals.release(token, by=actor, at=now, forget=forget,
                                           unless=_SETTLE_TOOK_OVER if lost else ())
        if released and claimed is not None:  # given back: a retry is no longer held off
            ctx.steps.undone(claimed)
        if not released and lost \
                and any(s in _SETTLE_TOOK_OVER for s in store.approvals.steps(token)):
            # its click seemed dead (stalled past its takeover): the settle took its cancel
            # over (bot.services.cancel_settle), and finds the job still running and says so
            audit("in_flight", target, recipe, choice=choice, error=str(exc), taken_over=True)
            return ClickResult("busy", ephemeral=click_reply(
                ctx, recipe, "cancel_taken_over", error=said(exc), job=target))
        audit("in_flight", target, recipe, choice=choice, error=str(exc))
        return ClickResult("busy", ephemeral=click_reply(
            ctx, recipe, "in_flight", error=said(exc), cancel=choice == "cancel_resume"))
    except (ServiceError, ClusterError) as exc:
        # decided, and nothing is under way any more: the chain's other prompts may act
        store.approvals.mark_done(token, now=now)
        audit("failed", target, recipe, choice=choice, error=str(exc))
        outcome = exc.outcome if isinstance(exc, NotPerformed) else Outcome(
            "failed", actor, "error", recipe, job_id=target, for_job=for_job, error=said(exc))
        return ClickResult("failed", *decided(ctx, recipe, payload, outcome))
    except Exception as exc:  # noqa: BLE001 - a bug or a refused setting: said, never stuck
        return _unexpected_error(ctx, approval, choice, actor, now, exc, audit, claimed)
    if result.outcome.kind == "stale":
        audit("stale", target, recipe, choice=choice, state=result.outcome.state)
        text, blocks = decided(ctx, recipe, payload, result.outcome)
        return ClickResult("stale", text, blocks, ephemeral=text)
    if result.outcome.did in UNKNOWN_CANCEL_STEP.values():  # may or may not have cancelled: said so
        audit("unknown", target, recipe, choice=choice, error=str(result.outcome.error))
    else:
        audit("ok", result.job_id or target, recipe, choice=choice)
    return ClickResult("done", *decided(ctx, recipe, payload, result.outcome),
                       job_id=result.job_id, holds=result.holds,
                       homes_refreshed=result.submitted)


def _unexpected_error(ctx: BotContext, approval: Approval, choice: str, actor: str,
                      now: float, exc: Exception, audit: Any,
                      claimed: StoreStep | None = None) -> ClickResult:
    """A claimed choice that raised what no step expects (a bug, a recipe setting the submit
    refuses): logged, and the claim never left taken with nothing done. When nothing reached
    the cluster (`_reached_cluster`), the claim is released and the prompt stays usable (the
    clicker is told what failed); else the approval is done, and the prompt says it failed
    and why. A hold is the exception: it stays approved, so the hold it may have made is
    released when its job starts, as every hold is. `claimed`: the claim as noted in the
    context's `steps`, undone there once released."""
    token, recipe, target = approval.token, approval.payload.get("recipe"), approval.target_job
    log.error("click %s (%s) on job %s failed", token, choice, target, exc_info=exc)
    error = f"{type(exc).__name__}: {said(exc)}"
    if not _reached_cluster(ctx, approval, choice, now):
        if ctx.store.approvals.release(token, by=actor, at=now) and claimed is not None:
            ctx.steps.undone(claimed)
        audit("released", target, recipe, choice=choice, error=error)
        return ClickResult("failed", ephemeral=click_reply(ctx, recipe, "failed_released",
                                                           error=error))
    if choice != "hold":
        ctx.store.approvals.mark_done(token, now=now)
    audit("failed", target, recipe, choice=choice, error=error)
    text, blocks = decided(ctx, recipe, approval.payload, Outcome(
        "failed", actor, "error", recipe, job_id=target,
        for_job=approval.payload.get("for_job"), error=error))
    return ClickResult("failed", text, blocks, ephemeral=text)


def _reached_cluster(ctx: BotContext, approval: Approval, choice: str, now: float) -> bool:
    """Whether a claimed choice that raised may have sent its command to the cluster: a hold
    (its scontrol is not recorded before it is sent); a cancel in one of its CANCEL_STEPS (the
    first marked just before its scancel; a reminder's or an escalation's step says nothing
    was sent); a resubmit whose job was recorded in the chain since the claim,
    or whose submit is still kept in flight (its sbatch was sent, its job not recorded)."""
    if choice == "hold":
        return True
    if not CANCEL_STEPS.isdisjoint(ctx.store.approvals.steps(approval.token)):
        return True
    if choice in ("cancel", "cancel_resume") or approval.chain_id is None:
        return False
    target = str(approval.target_job)
    latest = run_latest(ctx.store.attempts.for_chain(approval.chain_id),
                        array_task_of(ctx, approval.chain_id, target))
    if latest is not None and latest.job_id != target:  # the claim found it the latest
        return True
    return run_submit_in_flight(ctx, approval, now)


def _probe_click(ctx: BotContext, approval: Approval, actor: str, now: float,
                 audit: Any) -> ClickResult:
    """A "Run DataLoader probe" click (bot.services.probes), already authorized: claimed once,
    then run by the scheduler's `probes` job. Its answers are the clicker's alone (the
    message it sits in is the incident, which stays as it is), but for a run that moved on:
    then, as for every button, the message says it is out of date."""
    recipe, target = approval.payload.get("recipe"), approval.target_job
    claim = ctx.store.approvals.claim(approval.token, actor, now,
                                      latest_job=latest_job_of(approval))
    if claim.claimed:  # the `probes` job runs it from here
        ctx.steps.noted(StoreStep("probe_queued"))
        audit("ok", target, recipe, choice="probe")
        return ClickResult("done", ephemeral=click_reply(ctx, recipe, "probe_queued",
                                                         name=recipe, job=target))
    if claim.reason == "stale" and claim.latest is not None:  # as any prompt's (above)
        latest = claim.latest
        audit("stale", target, recipe, choice="probe", latest_job=latest.job_id,
              latest_state=latest.state)
        text, blocks = decided(ctx, recipe, approval.payload, Outcome(
            "stale", actor, "moved_on", recipe, job_id=target, current_job=latest.shown_id,
            state=latest.state))
        return ClickResult("stale", text, blocks, ephemeral=text)
    if claim.reason == "expired":
        audit("expired", target, recipe, choice="probe")
        return ClickResult("expired", ephemeral=click_reply(ctx, recipe, "probe_expired"))
    if claim.reason == "busy" and claim.other is not None:
        audit("busy", target, recipe, choice="probe", other_token=claim.other.token)
        return ClickResult("busy", ephemeral=click_reply(
            ctx, recipe, "busy", decided_by=claim.other.decided_by, job=target,
            **_acting(ctx, claim.other, now)))
    done = claim.approval
    audit("duplicate", target, recipe, state=done.state if done else None)
    return ClickResult("duplicate", ephemeral=click_reply(
        ctx, recipe, "duplicate", decided_by=done.decided_by if done else None))


def latest_job_of(approval: Approval) -> str | None:
    """The job that must still be its chain's latest attempt for the prompt to apply: a
    resubmit or cancel prompt's own job; for a hold prompt, the resumed job it waits for."""
    if approval.action == comp.HOLD_ACTION:
        for_job = approval.payload.get("for_job")
        return None if for_job is None else str(for_job)
    return approval.target_job
