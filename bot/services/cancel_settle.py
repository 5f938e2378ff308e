"""Approved cancels whose end trainbot did not see, settled later from what Slurm says.

A Cancel or Cancel and resume whose scancel's end was not seen
(bot.services.approved_choices._cancel: the approval left approved with its step
`cancel_unknown` or `cancel_only_unknown`) is looked at again here, once the recipe's
`policy.cancel_settle_s` has passed: the job cancelled, a cancel and resume resumes the run as
the click would have; still running, the cancel is offered again; ended otherwise, its end is
the watcher's to judge. A cancel whose click's process died in its scancel is settled so too,
and a cancel and resume whose click's process died after its scancel took effect is finished
here. Run by the scheduler's `prompts` job (bot.app.build_scheduler) under its lease, before the
prompts' follow-up (bot.services.prompt_follow_up.follow_up_prompts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from bot.cluster.errors import ClusterError
from bot.core.backoff import Backoffs
from bot.core.takeover import settle_takeover_s
from bot.crashpoint import crashpoint
from bot.services.approval_outcomes import Outcome, decided
from bot.services.approved_choices import policy_of, resume_cancelled
from bot.services.cancel_steps import (
    ANNOUNCED_STEP,
    CANCELLING_STEP,
    RESUMING_STEP,
    SETTLED_STEP,
    UNKNOWN_CANCEL_STEP,
    cancel_takeover_at,
    scancel_over_at,
)
from bot.services.home import refresh_homes
from bot.services.ports import BotContext, LeaseLost
from bot.services.prompt_follow_up import rewrite_prompt
from bot.services.prompts import create_resubmit_prompt
from bot.services.submit_deadlines import approval_intent, cluster_deadlines, step_bounds
from bot.services.threads import RootTries, has_thread, post_safely, say_note
from bot.store import Approval

log = logging.getLogger(__name__)


def takeover_s(ctx: BotContext, approval: Approval, now: float, step: str) -> float:
    """How old `approval`'s `step` (`cancel_settled` or `cancel_resuming`) must be, its
    approval with no outcome yet, before another run takes it over: longer than a settle or
    the rest of a cancel and resume can take on the approval's cluster, each of its Slurm
    reads, its sbatch, its SFTP requests and its posts at its own deadline
    (bot.core.takeover.settle_takeover_s over the cluster's), so only one whose process died
    is taken over. Its commands and its checkpoint lookup are counted at the bounds the
    step's marker (or last taker-over) kept with it when longer than the current config's,
    and the commands at its resubmit's sender's bound when longer still (kept on the
    resubmit's row in flight, under the approval's intent): a jump host or a timeout taken
    out of the config since never lets a live settle, or a resume whose sbatch may still
    land, be taken over. Those rows are read by the intent (one indexed read,
    SubmitsInFlightRepo.with_intent), not every row of the cluster in flight, on each
    settle check. A step marked before its bounds were kept: the current config's."""
    cluster = approval.payload.get("cluster", "")
    intent = approval_intent(approval.token)
    flights = ctx.store.submits_in_flight.with_intent(cluster, intent, now)
    sent = [f.command_at_most_s for f in flights if f.command_at_most_s is not None]
    return settle_takeover_s(cluster_deadlines(ctx.config, cluster), max(sent, default=None),
                             ctx.store.approvals.bounds_of(approval.token, step),
                             post_deadline_s=ctx.config.slack.post_deadline_s)


def settle_unknown_cancels(ctx: BotContext, now: float, refused: Backoffs | None = None
                           ) -> None:
    """Every approved cancel whose scancel's end was not seen (`cancel_unknown`: Cancel and
    resume; `cancel_only_unknown`: Cancel), at least the recipe's `policy.cancel_settle_s`
    after the click (its first look; "not cancelled" waits for `scancel_over_at`, below):
    its job, asked from Slurm, says what happened. CANCELLED: the cancel took effect; for a
    cancel and resume trainbot leaves the job, records its attempt and resubmits, as the click
    would have (a plain Cancel's job stays watched, its end judged as any job's), and the
    prompt and the thread say so. Still running or pending: the cancel did not take effect;
    the prompt says so and a new prompt offers it again (the watcher goes on watching the
    job), said only once the scancel itself has ended at the latest (`scancel_over_at`: its
    click's step plus the takeover's bound, 584 s with the default deadlines): before it, a
    scancel whose end was not seen may still be running on the login node (a slow
    slurmctld, a jump host) and land after the settle said "not cancelled", so a job still
    running is asked about again next time. Ended otherwise (COMPLETED, FAILED, …): it ended
    before the cancel; the prompt says so and the watcher judges its end as any job's.
    Unknown to Slurm, or Slurm not answering: asked again next time. Each is settled once
    (the `cancel_settled` step), so nothing is resubmitted or offered twice. A settle whose
    process died before its outcome was recorded is taken over (by one replica) when its step
    is `takeover_s` old, and finished without a second job: the job its resubmit left,
    if Slurm has one under the run's job name, is the one recorded.

    The outcome is recorded with the approval's end (ApprovalsRepo.settle), then said: a
    note in the thread, the prompt rewritten, the cancel offered again; each post keyed, and
    the settle done saying it (the `cancel_announced` step) only once all went out, so a run
    that died (or a post Slack refused) half way is finished by the next, nothing said twice.
    The thread's note goes through bot.services.threads.say_note, as every kind of note
    does: Slack refusing it (PostRefused: the bot out of the channel, a scope missing; or
    its lookup refused), or the run having no thread yet, will not change at the next run:
    it is tried again after 1, 2, 4, 8, at most 16 runs skipped (`refused`,
    bot.core.backoff.Backoffs, one Backoff per note, kept by the caller across runs:
    bot.app.schedule_prompts), and posted once when Slack takes it; a transient failure is
    tried at the next run; a message Slack rejects itself (MessageRefused) is given up at
    once. A failure series is one warning, and one more when it ends (posted, or given up);
    a skipped run calls Slack for nothing of it. Without `refused`, a new Backoffs at each
    run.

    A cancel whose click's process died before its scancel's end was seen (its `cancelling`
    or `cancelling_to_resume` step left alone, cancel_takeover_s old at the click's own
    bounds or the cluster's current ones, whichever are longer) is one
    whose end was not seen (`_cancel_unseen`), settled as above in the same run.

    A cancel and resume whose scancel was seen and whose click's process died before the
    approval's end (its `cancel_resuming` step left, `takeover_s` old) is finished as a
    settle taken over is (`_finish_resume`), and said the same way."""
    _each(ctx, ctx.store.approvals.approved_in_steps(CANCELLING_STEP.values()), now,
          _cancel_unseen, "taking the cancel over")
    due = [a for a in ctx.store.approvals.cancels_unknown() if _settle_due(ctx, a, now)]
    _each(ctx, due, now, _settle_cancel, "settling the unknown cancel")
    _each(ctx, ctx.store.approvals.approved_in_steps([RESUMING_STEP]), now, _finish_resume,
          "finishing the cancel and resume")
    unannounced = ctx.store.approvals.cancels_unannounced()
    refused = Backoffs() if refused is None else refused
    notes = {_note_key(a.token) for a in unannounced}
    refused.forget(lambda key: key not in notes)  # said, or no longer to say
    _each(ctx, unannounced, now, partial(_announce_settled, refused=refused,
                                         roots=RootTries()),
          "saying the settled cancel")


def _settle_due(ctx: BotContext, approval: Approval, now: float) -> bool:
    """Is the recipe's `policy.cancel_settle_s` past since the click (the scancel has ended)?"""
    settle_s = policy_of(ctx, approval.payload.get("recipe")).cancel_settle_s
    return approval.decided_at is None or now - approval.decided_at >= settle_s


def _each(ctx: BotContext, approvals: list[Approval], now: float,
          step: Callable[[BotContext, Approval, float], None], what: str) -> None:
    """`step` for each approval; one's failure (logged as `what` of it) never stops the
    others, but a lost lease stops them all (another replica runs the job now)."""
    for approval in approvals:
        try:
            step(ctx, approval, now)
        except LeaseLost:
            raise
        except Exception:  # noqa: BLE001 - one prompt's failure never stops the others
            log.exception("%s of prompt %s failed", what, approval.token)


def _cancel_unseen(ctx: BotContext, approval: Approval, now: float) -> None:
    """An approved cancel whose click's process died before its scancel's end was seen
    (bot.services.approved_choices._cancel: its step `cancelling` or `cancelling_to_resume`, no step
    after it), once that step is cancel_takeover_s old, counted at the longer of the
    click's own bounds (kept with the step: the jump host and timeouts it sent under) and
    the cluster's current ones (the click's own deadlines have passed): the scancel may or
    may not have been sent, so it is left as the click leaves one whose end it did not see:
    the step `cancel_unknown` or `cancel_only_unknown` marked, by one run (the watcher leaves
    the job's end to the settle from then on); `_settle_cancel` then asks Slurm and finishes
    it (cancelled), or says it was not and offers it again (still running: a cancel and
    resume's job, which left the watch list before its scancel, is watched again), once. A
    step marked before its bounds were kept: the cluster's current ones alone."""
    token, payload = approval.token, approval.payload
    due = cancel_takeover_at(ctx, approval)  # at the click's own bounds, kept with its step
    if due is None:
        return  # the click saw its scancel's end and went on
    if now < due:
        return  # the click may still be in its scancel
    resume = CANCELLING_STEP[True] in ctx.store.approvals.steps(token)
    if ctx.store.approvals.mark_step(  # not once its click released it, nor another claim
            token, UNKNOWN_CANCEL_STEP[resume], now=now, state="approved",
            by=approval.decided_by, at=approval.decided_at):
        ctx.store.audit.record(
            actor="trainbot", action="approval.cancel_taken_over", now=now,
            recipe=payload.get("recipe"), job_id=str(approval.target_job),
            result="end_unseen", detail={"token": token},
        )  # fmt: skip


def _settle_cancel(ctx: BotContext, approval: Approval, now: float) -> None:
    payload = approval.payload
    recipe, cluster, job = payload.get("recipe"), payload["cluster"], str(approval.target_job)
    actor = approval.decided_by
    slurm = ctx.clusters.slurm(cluster)
    try:
        record = slurm.job(int(job))
    except ClusterError as exc:
        log.info("cannot tell yet whether job %s was cancelled: %s", job, exc)
        return
    if record is None:
        return  # not (yet) known to Slurm's answer: ask again next time
    over = scancel_over_at(ctx, approval)
    if not record.is_finished and over is not None and now < over:
        return  # the scancel may still be running on the login node: ask again next time
    taken_over = False
    bounds = step_bounds(ctx.config, cluster, slurm)  # this run's, kept with the step
    marked = ctx.store.approvals.mark_step(approval.token, SETTLED_STEP, now=now,
                                           bounds=bounds, state="approved",
                                           by=approval.decided_by, at=approval.decided_at)
    if marked is None:
        return  # given back by its click (or claimed again since): no cancel of it to settle
    if not marked:
        # being settled (by another replica), or its settler died before the outcome was
        # recorded (the approval is still approved): taken over, by one replica, once the
        # step is `takeover_s` old
        older_than = now - takeover_s(ctx, approval, now, SETTLED_STEP)
        if not ctx.store.approvals.take_over_step(approval.token, SETTLED_STEP,
                                                  older_than=older_than, now=now,
                                                  bounds=bounds):
            return
        taken_over = True
    crashpoint("cancel_settle_claimed", approval.token)  # crash-test hook (no-op in production)
    cancelled = record.is_finished and (record.state or "").startswith("CANCELLED")
    resume = UNKNOWN_CANCEL_STEP[True] in ctx.store.approvals.steps(approval.token)
    ctx.store.audit.record(
        actor="trainbot", action="approval.cancel_settled", now=now, recipe=recipe, job_id=job,
        result="took_effect" if cancelled else "not_taken",
        detail={"token": approval.token, "state": record.state},
    )  # fmt: skip
    if cancelled and not resume:
        outcome = Outcome("approved", actor, "cancelled", recipe, job_id=job)
    elif cancelled:
        ctx.store.watched_jobs.remove(cluster, job)
        outcome = resume_cancelled(ctx, approval, actor or "trainbot", now, recover=taken_over)
    else:
        # a cancel and resume's job left the watch list before its scancel (a click that
        # died in it did not put it back): its end is the watcher's again
        if resume:
            _watch_again(ctx, approval, now)
        outcome = Outcome("failed", actor, "cancel_not_taken" if record.is_running
                          or record.is_pending else "not_running", recipe, job_id=job,
                          state=record.state)
    crashpoint("cancel_settle_decided", approval.token)  # crash-test hook (no-op in production)
    _record_settled(ctx, approval, outcome, now)


def _watch_again(ctx: BotContext, approval: Approval, now: float) -> None:
    """Watch the cancel and resume's job again (nothing changes when it is watched: the
    click that did not see its scancel's end watched it again itself)."""
    chain_id = approval.chain_id
    chain = ctx.store.chains.get(chain_id) if chain_id is not None else None
    ctx.store.watched_jobs.add(approval.payload["cluster"], str(approval.target_job),
                               now=approval.decided_at or now, chain_id=chain_id,
                               adopted=chain is not None and chain.adopted)


def _finish_resume(ctx: BotContext, approval: Approval, now: float) -> None:
    """The rest of a cancel and resume whose click's process died after its scancel took
    effect (bot.services.approved_choices._cancel: the approval approved, its step
    `cancel_resuming`), once that step is `takeover_s` old (the click's own deadlines,
    kept with the step, have passed), by one run, which keeps its own with the step: the
    job the click's resubmit left, recorded or found by the run's job name, is kept (else
    one is submitted), announced and its hold questions asked, each once (keyed posts;
    bot.services.competitors asks once per job); the outcome is recorded with the approval's
    end and said as a settle's is (the `cancel_settled` step, `_announce_settled`): the
    prompt rewritten and a note in the thread. A run that dies in this is taken over again,
    `takeover_s` later."""
    token, payload = approval.token, approval.payload
    older_than = now - takeover_s(ctx, approval, now, RESUMING_STEP)
    if ctx.store.approvals.steps(token).get(RESUMING_STEP, now) > older_than:
        return  # the click (or the run that took it over) may still be in it
    cluster = payload.get("cluster", "")
    bounds = step_bounds(ctx.config, cluster, ctx.clusters.slurm(cluster))  # this run's
    if not ctx.store.approvals.take_over_step(token, RESUMING_STEP, older_than=older_than,
                                              now=now, bounds=bounds):
        return  # another run took it over just now
    ctx.store.approvals.mark_step(token, SETTLED_STEP, now=now,  # said as a settle is
                                  bounds=bounds)
    recipe, job = payload.get("recipe"), str(approval.target_job)
    ctx.store.audit.record(
        actor="trainbot", action="approval.cancel_resume_taken_over", now=now, recipe=recipe,
        job_id=job, result="taken_over", detail={"token": token},
    )  # fmt: skip
    outcome = resume_cancelled(ctx, approval, approval.decided_by or "trainbot", now,
                               recover=True)
    _record_settled(ctx, approval, outcome, now)


def _record_settled(ctx: BotContext, approval: Approval, outcome: Outcome, now: float) -> None:
    """Record what the settle of `approval` did with the approval's end, for
    `_announce_settled` to say: its words, whether the cancel is offered again (it did not
    take effect), and whether the Home tabs show it already (a resumed run: the resubmit
    refreshed them, bot.services.after_submit.after_person_submit)."""
    text, blocks = decided(ctx, approval.payload.get("recipe"), approval.payload,
                           outcome)
    ctx.store.approvals.settle(approval.token, now=now, settled={
        "text": text, "blocks": blocks, "offer_again": outcome.did == "cancel_not_taken",
        "homes_refreshed": outcome.did == "cancel_resumed"})


def _note_key(token: str) -> str:
    """The key of the thread note saying what the settle of prompt `token` found."""
    return f"cancel-settled:{token}"


def _announce_settled(ctx: BotContext, approval: Approval, now: float, *,
                      refused: Backoffs, roots: RootTries) -> None:
    """Say what the settle of `approval`'s unknown cancel found (recorded with its end): a
    note in the thread, then the same words in the prompt rewritten (once the note is in: a
    refusal of both is one warning), the cancel offered again when it did not take effect.
    Each post is keyed (made at most once); the step `cancel_announced` is marked once all
    went out, else the next run makes the ones left. The note goes through
    bot.services.threads.say_note, the one decision (and log) of every kind of note: one
    Slack did not take, or whose run has no thread yet, is not tried again (nor the prompt
    rewritten) until its backoff in `refused` is due; one given up (Slack rejected the
    message itself, or still no thread after THREADLESS_TRIES tries) is not said, and the
    rest (the prompt, the cancel offered again) goes on. A run's notes waiting for its
    thread try its root once in the run (`roots`).
    Then the Home tabs of who sees the run, once, unless the settle's resubmit refreshed
    them (`homes_refreshed`)."""
    settled = approval.payload.get("settled")
    chain_id = approval.chain_id
    if settled is not None and chain_id is not None:
        text, blocks = settled["text"], settled["blocks"]
        key = _note_key(approval.token)
        if ctx.sink is not None and say_note(ctx, chain_id, key, text, refused,
                                             what="settled cancel's note",
                                             roots=roots) in ("later", "deferred"):
            return  # said at a later run
        rewrite_prompt(ctx, approval, text, blocks)
        if settled.get("offer_again") and not _offer_cancel_again(ctx, approval, now):
            return
    if ctx.store.approvals.mark_step(approval.token, ANNOUNCED_STEP, now=now) \
            and chain_id is not None and not (settled or {}).get("homes_refreshed"):
        refresh_homes(ctx, chain_id, now)


def _offer_cancel_again(ctx: BotContext, approval: Approval, now: float) -> bool:
    """A new prompt, in the thread, with the same question and choices as `approval`'s (one,
    under one key, however often it is asked); False when it could not be posted."""
    payload = approval.payload
    if not has_thread(ctx, approval.chain_id) or payload.get("recipe") not in ctx.config.recipes:
        return True  # nowhere to offer it: nothing left to do
    assert approval.chain_id is not None
    key = f"cancel-again:{approval.token}"
    posted = ctx.store.slack_posts.get(key)
    if posted is not None and posted.posted:
        return True  # offered before (its prompt may be decided by now: none is made again)
    prompt = create_resubmit_prompt(
        ctx, recipe=payload["recipe"], chain_id=approval.chain_id,
        job_id=str(approval.target_job), now=now, summary=payload.get("summary") or "",
        resume_iter=payload.get("resume_iter"),
        resume_checkpoint=payload.get("resume_checkpoint"),
        checkpoint_unknown=payload.get("checkpoint_unknown"), offer_cancel=True, post_key=key,
    )  # fmt: skip
    return post_safely(ctx, "reply", approval.chain_id, key, prompt.blocks, prompt.text) is not None
