"""Claimed clicks whose process died before their choice's first recorded step.

A click's claim (bot.services.approvals.handle_click) sets its approval `approved` and marks,
in the same transaction, its claim's step with the clicker's bounds: `claimed`
(bot.services.cancel_steps.CLAIMED_STEP) for a resubmit or a cancel, `hold_approved` for a
hold's yes. What it does next is recorded by its next step: a Cancel's `cancelling` (before its
scancel; bot.services.cancel_settle from then on), a resubmit's row in flight (before its
sbatch; bot.services.runs.recover_submits_in_flight from then on) and its job's attempt, a
hold's `holding` (before its `scontrol hold`; the holds' ledger from then on). A process that
dies between the claim and that step (a crash, a SIGTERM, a replica's lease lapsing: in a
resubmit's checkpoint lookup, a Cancel's squeue, a hold's squeue) sent nothing, and left the
approval approved with nothing to revisit it: every later click of the prompt said "already
decided", every other prompt about its job "busy", for good.

`take_over_claims` (the scheduler's `prompts` job, under its lease) looks at every approval
approved with a claim's step and no next step, once that step is `claim_takeover_s` old (the
click's own bounds, kept with the step, and the current config's, whichever are longer: its
process has ended by then, or never sends anything; bot.services.approvals.claim_takeover_s,
which the "already decided" and "busy" replies about such a claim count their wait by:
`claim_given_back_at`):

- a resubmit with a row in flight for its run: left to that row's recovery (it records the
  job, or says nothing was queued), looked at again next time;
- a resubmit whose run has a job recorded since the claim (its own, recorded by its click or
  that recovery): done, its prompt rewritten to say it was resubmitted (a job recorded
  before it, by another: out of date), once (the claim's step taken over first);
- anything else sent nothing: the claim is released (`pending` again, its buttons usable: the
  prompt was never rewritten, its click having died before it), one replica alone
  (ApprovalsRepo.release_claim, conditional on the claim's step being that old and no next
  step marked), and the thread says the earlier click was not carried out, once.
"""

from __future__ import annotations

import logging

from bot.core.policy import run_latest
from bot.services.approval_outcomes import Outcome, decided
from bot.services.approvals import (
    CLAIM_WENT_ON,
    claim_step,
    claim_takeover_s,
    click_reply,
    run_submit_in_flight,
)
from bot.services.cancel_steps import CLAIMED_STEP
from bot.services.competitors import HOLD_APPROVED_STEP
from bot.services.home import refresh_homes
from bot.services.ports import BotContext, LeaseLost
from bot.services.prompt_follow_up import rewrite_prompt
from bot.services.runs import array_task_of
from bot.services.threads import thread_note
from bot.store import Approval, Attempt

log = logging.getLogger(__name__)

_RESUBMITS = ("resubmit", "resubmit_mem")


def take_over_claims(ctx: BotContext, now: float) -> None:
    """Every approval whose click died between its claim and its next step, taken over as
    the module says; one's failure (logged) never stops the others, a lost lease stops them
    all (another replica runs the job now)."""
    for approval in ctx.store.approvals.approved_in_steps((CLAIMED_STEP, HOLD_APPROVED_STEP)):
        try:
            _take_over(ctx, approval, now)
        except LeaseLost:
            raise
        except Exception:  # noqa: BLE001 - one prompt's failure never stops the others
            log.exception("taking over the claim of prompt %s failed", approval.token)


def _take_over(ctx: BotContext, approval: Approval, now: float) -> None:
    approvals, token = ctx.store.approvals, approval.token
    steps = approvals.steps(token)
    step = claim_step(steps)
    if step is None:
        return  # its choice went on: its own recovery (cancel_settle, the holds) has it
    older_than = now - claim_takeover_s(ctx, approval, step)
    if steps[step] > older_than:
        return  # its click may still be at work
    resubmit = step == CLAIMED_STEP and _may_resubmit(approval)
    if resubmit and run_submit_in_flight(ctx, approval, now):
        return  # its sbatch may have gone out: the submits' recovery records or forgets it
    latest = _moved_on(ctx, approval) if resubmit else None
    if latest is not None:
        if approvals.take_over_step(token, step, older_than=older_than, now=now):
            _finish(ctx, approval, latest, now)
        return
    if not approvals.release_claim(token, step, older_than=older_than,
                                   unless=sorted(CLAIM_WENT_ON)):
        return  # taken over by another replica, or its choice went on just now
    _said_released(ctx, approval, now)


def _may_resubmit(approval: Approval) -> bool:
    """May the claim have been a resubmit (its prompt offers one, into a run)? A Cancel's
    steps alone say whether it sent anything: one with no `cancelling` after its claim sent
    nothing."""
    return approval.chain_id is not None \
        and any(c in _RESUBMITS for c in approval.payload.get("choices", []))


def _moved_on(ctx: BotContext, approval: Approval) -> Attempt | None:
    """The run's latest attempt when it is no longer the prompt's job (a job was recorded
    since the prompt: its resubmit's, or another's); None while it still is."""
    assert approval.chain_id is not None
    target = str(approval.target_job)
    latest = run_latest(ctx.store.attempts.for_chain(approval.chain_id),
                        array_task_of(ctx, approval.chain_id, target))
    return latest if latest is not None and latest.job_id != target else None


def _finish(ctx: BotContext, approval: Approval, latest: Attempt, now: float) -> None:
    """A resubmit whose job was recorded (announced by its click or the submits' recovery)
    but whose approval was left approved: done, and its prompt says what became of it."""
    if not ctx.store.approvals.mark_done(approval.token, now=now):
        return
    payload, actor = approval.payload, approval.decided_by
    recipe, target = payload.get("recipe"), str(approval.target_job)
    decided_at = approval.decided_at if approval.decided_at is not None else now
    cancels = "cancel" in payload.get("choices", [])  # its claim may have been a Cancel
    if latest.submitted_at >= decided_at and not cancels:  # recorded since the claim: its own
        outcome = Outcome("approved", actor, "resubmitted", recipe, job_id=target,
                          new_job_id=latest.shown_id)
    else:
        outcome = Outcome("stale", actor, "moved_on", recipe, job_id=target,
                          for_job=payload.get("for_job"), current_job=latest.shown_id,
                          state=latest.state)
    ctx.store.audit.record(actor="trainbot", action="approval.claim_taken_over", now=now,
                           recipe=recipe, job_id=target, result="finished",
                           detail={"token": approval.token, "job": latest.shown_id})
    text, blocks = decided(ctx, recipe, payload, outcome)
    rewrite_prompt(ctx, approval, text, blocks)


def _said_released(ctx: BotContext, approval: Approval, now: float) -> None:
    """The claim released: audited, said once in the run's thread (its key names the
    claim's time: a prompt claimed and released again says so again), the Home tabs
    refreshed."""
    recipe, target = approval.payload.get("recipe"), str(approval.target_job)
    ctx.store.audit.record(actor="trainbot", action="approval.claim_taken_over", now=now,
                           recipe=recipe, job_id=target, result="released",
                           detail={"token": approval.token, "decided_by": approval.decided_by})
    log.warning("prompt %s: the click of %s died before it sent anything; released",
                approval.token, approval.decided_by)
    if approval.chain_id is None:
        return
    key = f"claim-released:{approval.token}:{approval.decided_at or 0:.0f}"
    thread_note(ctx, approval.chain_id, key, click_reply(
        ctx, recipe, "claim_released", decided_by=approval.decided_by, job=target))
    refresh_homes(ctx, approval.chain_id, now)
