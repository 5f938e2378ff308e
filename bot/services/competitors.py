"""Competing jobs: the team's pending jobs that would take a resumed job's slot (88017's case).

After a person's submit (`propose_holds_for_submit`), `propose_holds` asks in the run's
thread, per competitor, "Hold 88017 until the resumed job starts?" with Yes / No buttons (an
approval each). Nothing is held without a yes. A yes holds the job (`apply_hold`);
`release_started` (run by the scheduler every tick) releases it as soon as the resumed job is
RUNNING, or finished / gone without running, and says so in the thread; a cancel of the resumed
job releases at once (bot.services.train, bot.services.approved_choices), and a yes whose
resumed job stopped waiting while its hold was on its way releases it as soon as its hold is
over (`release_if_no_longer_waiting`; a hold whose end was not seen is left to the holds tick
once Slurm shows the job held or no longer waiting, or the hold can no longer be running,
`hold_over`).

The hold ledger is the approval row itself: action `hold_competitor`, state `approved` while
the job is held by trainbot, `done` once released (or when nothing was held after all);
`store.approvals.with_state(HOLD_ACTION, "approved")` lists exactly the jobs held now. A job
held for several runs (a yes on a competitor trainbot already holds for another run shares
that hold) has a row per run, and is released by the last of them to let go; a job its
owner or an admin held is never entered in the ledger, so trainbot never releases it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from bot.cluster.errors import ClusterError, OutcomeUnknown, said
from bot.core.slack_bounds import bot_post_at_most_s
from bot.core.slurm.records import JobRecord
from bot.core.takeover import StepBounds, post_takeover_s
from bot.core.text import Text
from bot.crashpoint import crashpoint
from bot.services.access import approvers_now
from bot.services.hold_ledger import (  # noqa: F401 (the ledger's names, as callers know them)
    HELD_BY_PERSON_STEP,
    HOLD_ACTION,
    HOLD_APPROVED_STEP,
    HOLD_ENDED_STEP,
    HOLD_LANDING_STEP,
    HOLD_NOT_LANDED_STEP,
    HOLDING_STEP,
    MAX_RELEASE_ATTEMPTS,
    RELEASING_STEP,
    done_and_said,
    handed_hold_held,
    may_still_run,
    outdate_retry_notes,
    release_failed,
    release_reply,
    release_takeover_s,
    released_after_person,
    say_release,
    step_takeover_s,
    taken_by_person,
)
from bot.services.hold_ledger import competitor_of as _competitor
from bot.services.ports import BotContext, Slurm
from bot.services.submit_deadlines import step_bounds
from bot.services.submit_result import SubmitResult
from bot.services.threads import (
    KeptReply,
    post_safely,
    render,
    say_kept_message,
    thread_keeper,
)
from bot.slack.views import ActionId
from bot.store import Approval

log = logging.getLogger(__name__)

MAX_PROPOSALS = 3


@dataclass(frozen=True)
class HoldProposal:
    token: str
    competitor: int
    for_job: int


@dataclass(frozen=True)
class HoldResult:
    """What an approved hold did: `did` is held | held_released (held, then released at once:
    the resumed job stopped waiting while the hold was on its way, `state` its state now, None
    when Slurm no longer knows it) | held_not_released (held, the resumed job stopped waiting,
    `state` as for held_released, and the release that followed did not go through: the
    thread says what follows) | held_by_person (held, but a person's `/train hold` took the
    job out of trainbot's holds meanwhile: their hold now, which trainbot leaves alone) |
    released_by_person (held, but a person's `/train release` ended trainbot's hold
    meanwhile) |
    hold_skipped (the resumed job is no longer
    pending: `state`, None when Slurm no longer knows it, or `error` when it could not be read
    again after its release came first) | competitor_started (running now:
    `state`) | competitor_left (no longer queued: `state`, None when Slurm no longer knows it)
    | competitor_held (held already, by no hold of trainbot's: by its owner or an admin;
    `state` the hold's reason, JobHeldUser; nothing held nor recorded)
    | competitor_releasing (held by trainbot for another run, `releasing_for`, whose
    release is on its way, or, `retry_in_min` set, failed and waits to be tried again that
    many minutes from now, `retry_in_min`: nothing held nor recorded)
    | hold_failed (`error` from Slurm; nothing held) | hold_failed_kept (`error` from
    Slurm; another run's hold was handed to it and the job could not be read: it stays in
    the hold ledger, released as any hold) | hold_unknown (`error`: `scontrol hold`'s
    end was not seen, so the job may be held: it stays in the hold ledger and is released
    like any hold, once it is seen to have landed or the hold can no longer be running:
    `hold_over`)."""

    did: str
    state: str | None = None
    error: Text | str | None = None
    releasing_for: str | None = None
    retry_in_min: int | None = None


def ahead_of(mine: JobRecord | None, competitors: Iterable[JobRecord]) -> list[JobRecord]:
    """Competitors Slurm would start before `mine`: higher priority, or equal and older.

    Already-held jobs are not competing. With `mine` unknown, every pending one competes.
    """
    out = []
    for job in competitors:
        if job.is_held or job.priority == 0:
            continue
        if mine is None or mine.priority is None or job.priority is None:
            out.append(job)
            continue
        if job.priority > mine.priority:
            out.append(job)
        elif job.priority == mine.priority and (job.submit_time or 0) <= (mine.submit_time or 0):
            out.append(job)
    return out


def find_competitors(ctx: BotContext, recipe: str, job_id: int, chain_id: int) -> list[JobRecord]:
    """Pending jobs of the same team (account, else SSH user) on the recipe's partition/QOS
    that would start before `job_id`."""
    cfg = ctx.config.recipe(recipe)
    slurm = ctx.clusters.slurm(cfg.cluster)
    own = {int(a.job_id) for a in ctx.store.attempts.for_chain(chain_id)} | {int(job_id)}
    user = None if cfg.account else ctx.config.clusters[cfg.cluster].user
    if cfg.account is None and user is None:
        log.info("%s: no account and no SSH user configured; not looking for competitors", recipe)
        return []
    pending = slurm.pending_competitors(
        user=user, account=cfg.account, partition=cfg.partition, qos=cfg.qos, exclude=own
    )
    return ahead_of(slurm.job(int(job_id)), pending)


def hold_prompt_key(token: str) -> str:
    """The thread post of the hold prompt behind `token`."""
    return f"hold-prompt:{token}"


def propose_holds(
    ctx: BotContext,
    *,
    recipe: str,
    chain_id: int,
    job_id: int,
    allowed: Iterable[str],
    now: float,
    action_ids: tuple[str, str],
) -> list[HoldProposal]:
    """Ask in the thread whether to hold each competitor; returns the proposals made.

    Asked once per submitted job: when `job_id` already has hold prompts (a settle taken over
    with its resubmit found, a recovery run again), those are its proposals and nothing is
    asked again; the question of each one still pending and not gone out is posted under its
    key once its record is old enough that its recording run can no longer be posting it
    (`ask_when_due`), so one whose process died between the prompt's record and its post is
    posted by this run, once (one asked by no run after that is asked by the prompts'
    follow-up: bot.services.prompt_follow_up.follow_up_prompts). Each prompt is recorded
    before its question is posted: no hold is asked for, nor applied, without its record.
    `action_ids` are the (yes, no) button action ids (handlers.actions.ActionId).
    """
    asked = hold_prompts_for(ctx, chain_id, job_id)
    if asked:
        for approval in asked:
            if approval.state == "pending":
                ask_when_due(ctx, approval, now, action_ids)
        return [HoldProposal(a.token, _competitor(a), int(job_id)) for a in asked]
    try:
        competitors = find_competitors(ctx, recipe, job_id, chain_id)
    except ClusterError as exc:  # the resubmit stands; the question is just not asked
        log.warning("competitor lookup for %s failed: %s", job_id, exc)
        return []
    expiry = ctx.config.policy_for(recipe).approval_expiry_s
    cluster = ctx.config.recipe(recipe).cluster
    allowed = sorted(set(allowed))
    proposals = []
    for comp in competitors[:MAX_PROPOSALS]:
        token = ctx.store.approvals.create(
            action=HOLD_ACTION,
            payload={
                "choices": ["hold", "keep"],
                "recipe": recipe,
                "cluster": cluster,
                "for_job": str(job_id),
                "competitor_name": comp.name,
                # its question's worst case, as this run posts it (question_at_most_s)
                "post_at_most_s": bot_post_at_most_s(ctx.config.slack.post_deadline_s),
            },
            allowed=allowed,
            expires_at=now + expiry,
            now=now,
            target_job=str(comp.job_id),
            chain_id=chain_id,
        )
        prompt = ctx.store.approvals.get(token)
        assert prompt is not None
        ask(ctx, prompt, action_ids)
        ctx.store.audit.record(
            actor="trainbot", action="competitor.propose_hold", now=now, recipe=recipe,
            job_id=str(comp.job_id), result="asked", detail={"for_job": job_id, "token": token},
        )  # fmt: skip
        proposals.append(HoldProposal(token, comp.job_id, int(job_id)))
    return proposals


def ask(ctx: BotContext, approval: Approval,
        action_ids: tuple[str, str] = (ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR)
        ) -> None:
    """Post the hold prompt `approval`'s question ("Hold 88017 until the resumed job
    starts?", its Yes / No buttons, `action_ids`) in its run's thread, under its key
    (`hold_prompt_key`): the keyed post is made once, however often it is asked for
    (bot.slack.poster)."""
    if ctx.sink is None or approval.chain_id is None:
        return
    payload, token = approval.payload, approval.token
    blocks, text = render(ctx, "hold_prompt", payload.get("recipe"), {
        "competitor": str(_competitor(approval)),
        "competitor_name": payload.get("competitor_name") or None,
        "for_job": str(payload["for_job"]), "token": token, "block_id": f"hold:{token}",
        "yes_action": str(action_ids[0]), "no_action": str(action_ids[1]),
    })
    post_safely(ctx, "reply", approval.chain_id, hold_prompt_key(token), blocks, text)


def ask_when_due(ctx: BotContext, approval: Approval, now: float,
                 action_ids: tuple[str, str] = (ActionId.HOLD_COMPETITOR,
                                                ActionId.KEEP_COMPETITOR)) -> None:
    """Ask the hold prompt `approval`'s question (`ask`) if it has not gone out and its
    record is bot.core.takeover.post_takeover_s old at `now` (the longer of the configured
    slack.post_deadline_s's and the one its recording run kept with it, one request and the
    margin): before that, the run that recorded it may still be posting it, and Slack, not
    having it yet, would be sent it twice (two questions, each with its buttons)."""
    if asked(ctx, approval):
        return
    wait_s = post_takeover_s(ctx.config.slack.post_deadline_s,
                             kept=question_at_most_s(approval))
    if now - approval.created_at >= wait_s:
        ask(ctx, approval, action_ids)


def question_at_most_s(approval: Approval) -> float | None:
    """How long the hold prompt `approval`'s question may take as the run that recorded it
    posts it right after (its post deadline, slack.post_deadline_s, then one request: kept
    in its payload); None for a prompt recorded before it was kept."""
    kept = approval.payload.get("post_at_most_s")
    return None if kept is None else float(kept)


def asked(ctx: BotContext, approval: Approval) -> bool:
    """Has the hold prompt `approval`'s question gone out (its keyed post made)?"""
    post = ctx.store.slack_posts.get(hold_prompt_key(approval.token))
    return post is not None and post.posted


def hold_prompts_for(ctx: BotContext, chain_id: int, job_id: int) -> list[Approval]:
    """The hold prompts made for the submitted job `job_id` of chain `chain_id`, whatever
    their state (the key that asks about its competitors once)."""
    return [a for a in ctx.store.approvals.for_chain(chain_id)
            if a.action == HOLD_ACTION and a.payload.get("for_job") == str(job_id)]


def propose_holds_for_submit(ctx: BotContext, recipe: str, result: SubmitResult,
                             now: float) -> list[HoldProposal]:
    """The step after a person's submit is recorded and announced (`/train submit|resume`,
    and one the bot died in, found by bot.services.runs.recover_submits_in_flight): ask in the
    run's thread whether to hold each of the team's pending jobs that would start before its
    job, approvable by the recipe's approvers now; returns the proposals made."""
    return propose_holds(
        ctx, recipe=recipe, chain_id=result.chain_id, job_id=int(result.job_id),
        allowed=approvers_now(ctx.config, recipe).users, now=now,
        action_ids=(ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR),
    )  # fmt: skip


def apply_hold(ctx: BotContext, approval: Approval, actor: str, now: float) -> HoldResult:
    """Carry out an approved hold; returns what happened (for the message update).

    Slurm is asked first (one call for both jobs): nothing is held when the resumed job no
    longer waits, or when the competitor already started or left the queue. A competitor
    Slurm shows held already is held by trainbot for another run (another approved hold of
    it has its hold out and landed: this yes shares that hold, `store.approvals.join_hold`,
    and the job is released only once the last hold on it lets go, `release_held_for`; while
    another run's hold of it is still on its way, which may yet fail, this yes sends its own,
    `hold_on_its_way`), or by its owner
    or an admin (`scontrol hold` of a held job succeeds, and Slurm keeps no record of who
    held it): then nothing is held nor recorded (competitor_held, `state` the hold's
    reason), so trainbot never releases a hold it did not place."""
    payload = approval.payload
    slurm = ctx.clusters.slurm(payload["cluster"])
    comp, for_job = _competitor(approval), int(payload["for_job"])
    records = slurm.jobs([for_job, comp])
    mine, theirs = records.get(for_job), records.get(comp)
    skipped: HoldResult | None = None
    if mine is None or not mine.is_pending:
        state = mine.state if mine is not None else None
        skipped = HoldResult("hold_skipped", state=state)
        why = f"job {for_job} is already {state or 'gone'}; {comp} was not held"
    elif theirs is None or not theirs.is_pending:
        state = theirs.state if theirs is not None else None
        started = theirs is not None and theirs.is_running
        skipped = HoldResult("competitor_started" if started else "competitor_left", state=state)
        why = (f"{comp} already started ({state}); not held" if started
               else f"{comp} is no longer queued ({state or 'unknown to Slurm'}); not held")
    elif theirs.is_held:
        shared = ctx.store.approvals.join_hold(approval.token, now=now)
        if shared is not None:  # trainbot's own hold for another run: this yes shares it
            ctx.store.audit.record(
                actor=actor, action="competitor.hold", now=now, recipe=payload.get("recipe"),
                job_id=str(comp), result="ok",
                detail={"for_job": for_job, "shared_with": shared.payload.get("for_job")},
            )  # fmt: skip
            return release_if_no_longer_waiting(ctx, approval, now)
        if HOLDING_STEP in ctx.store.approvals.steps(approval.token):
            return skipped_after_release(slurm, for_job)  # its release came first
        releasing = ctx.store.approvals.hold_being_released(approval.token)
        if releasing is None and ctx.store.approvals.hold_on_its_way(approval.token):
            pass  # another run's hold still on its way may fail: this yes sends its own
        elif releasing is not None:  # trainbot's own hold, its release on its way
            retry_in = retry_in_min(ctx, releasing, now)
            skipped = HoldResult("competitor_releasing",
                                 releasing_for=releasing.payload.get("for_job"),
                                 retry_in_min=retry_in)
            why = (f"{comp} is being released by trainbot right now; not held"
                   if retry_in is None else f"trainbot's release of {comp} failed and is "
                   f"tried again in about {retry_in} min; not held")
        else:
            skipped = HoldResult("competitor_held", state=theirs.reason or theirs.state)
            why = (f"{comp} is already held ({theirs.reason or theirs.state}), not by "
                   "trainbot; not held, and not trainbot's to release")
    if skipped is not None:
        ctx.store.approvals.mark_done(approval.token, now=now)
        ctx.store.audit.record(
            actor=actor, action="competitor.hold", now=now, recipe=payload.get("recipe"),
            job_id=str(comp), result="skipped", detail=why,
        )  # fmt: skip
        return skipped
    # from "holding" the hold may land before it is marked over: a run letting go of the job
    # meanwhile hands it to this hold, not releasing it under it (`pass_hold`): "hold_landing"
    # in the same write, so none sees "holding" alone, lets go with a release and has it
    # reach Slurm after this hold lands
    if not ctx.store.approvals.mark_step(approval.token, HOLDING_STEP, now=now,
                                         bounds=step_bounds(ctx.config, payload["cluster"],
                                                            slurm),
                                         also=(HOLD_LANDING_STEP,)):
        # its release came first (the resumed job no longer waits): no hold may follow it
        return skipped_after_release(slurm, for_job)
    try:
        slurm.hold(comp)
    except OutcomeUnknown as exc:
        # It may have taken effect: the approval stays in the hold ledger (not marked done), so
        # the job is released when the resumed one no longer needs it, as a certain hold is.
        # It may also still be running: its `holding` step is left without `hold_ended`, so
        # no release is sent before the step is old enough for it to have ended (`hold_over`);
        # a release right away could go out before the hold lands and leave the job held.
        ctx.store.audit.record(
            actor=actor, action="competitor.hold", now=now, recipe=payload.get("recipe"),
            job_id=str(comp), result="unknown", detail=str(exc),
        )  # fmt: skip
        return HoldResult("hold_unknown", error=said(exc))
    except ClusterError as exc:
        # done with its hold marked over in one write: nothing to release later, unless
        # another run's hold was handed to it as its own was landing (`pass_hold`): kept
        # then only while Slurm shows the job held (that hold, now this yes's, said held and
        # released as any hold), or when it cannot be read (said so); not held, done
        held: bool | None = False
        if not ctx.store.approvals.end_failed_hold(approval.token, now=now):
            held = handed_hold_held(ctx, approval)
            if ctx.store.approvals.end_failed_hold(approval.token, now=now,
                                                   handed_held=held is not False):
                held = False
        ctx.store.audit.record(
            actor=actor, action="competitor.hold", now=now, recipe=payload.get("recipe"),
            job_id=str(comp), result="failed", detail=str(exc) if held is False else
            {"error": str(exc), "held_by_hold_handed": held or "unknown"},
        )  # fmt: skip
        if held:
            return release_if_no_longer_waiting(ctx, approval, now)
        return HoldResult("hold_failed" if held is False else "hold_failed_kept",
                          error=said(exc))
    ctx.store.audit.record(
        actor=actor, action="competitor.hold", now=now, recipe=payload.get("recipe"),
        job_id=str(comp), result="ok", detail={"for_job": for_job},
    )  # fmt: skip
    ctx.store.approvals.mark_step(approval.token, HOLD_ENDED_STEP, now=now)
    return release_if_no_longer_waiting(ctx, approval, now)


def release_if_no_longer_waiting(ctx: BotContext, approval: Approval, now: float) -> HoldResult:
    """After a yes's hold is over: release it at once when the resumed job `for_job` stopped
    waiting while the hold was on its way (it started, or a person cancelled it). A release
    meanwhile (the cancel's, a tick's) waited for the hold to be over (`hold_over`) and left
    it; without this the competitor stayed held until the next holds tick
    (`release_started`). The job is read again, once; when Slurm does not answer, that tick
    releases it. Returns the yes's answer, `approval`'s: held, or held_released when this
    released it, or held_not_released when its release did not go through (failed, its end
    not seen, or another run's still under way: the thread says what follows); `state`: the
    resumed job's, None when Slurm no longer knows it. held_by_person when a person's
    `/train hold` took the job out of trainbot's holds while the yes's hold was on its way
    (or before its release was claimed, `claim_release`), released_by_person when their
    `/train release` did, looked at again after the resumed job is read (their command may
    land meanwhile): it is their hold now, which trainbot never releases, or no hold at
    all, and trainbot says so, not that it could not release it yet (no retry comes) or
    holds it until the resumed job starts."""
    if (taken := taken_by_persons_command(ctx, approval)) is not None:
        return HoldResult(taken)
    cluster, for_job = approval.payload["cluster"], int(approval.payload["for_job"])
    try:
        rec = ctx.clusters.slurm(cluster).job(for_job)
    except ClusterError as exc:
        log.info("cannot look at %s after holding for it (%s); the next tick does", for_job, exc)
        return HoldResult(taken_by_persons_command(ctx, approval) or "held")
    if rec is not None and rec.is_pending:
        return HoldResult(taken_by_persons_command(ctx, approval) or "held")
    state = rec.state if rec is not None else None
    released = release_unless_waiting(ctx, cluster, for_job, rec, now)
    if _competitor(approval) in released or released_by_another(ctx, approval):
        return HoldResult("held_released", state=state)
    if (taken := taken_by_persons_command(ctx, approval)) is not None:
        return HoldResult(taken)
    return HoldResult("held_not_released", state=state)


def taken_by_persons_command(ctx: BotContext, approval: Approval) -> str | None:
    """Did a person's `/train hold` ("held_by_person") or `/train release`
    ("released_by_person") take held competitor `approval` out of trainbot's holds
    (`taken_by_person`: its row done, marked with that step)? None when neither did."""
    steps = ctx.store.approvals.steps(approval.token)
    return next((step for step in (HELD_BY_PERSON_STEP, "released_by_person")
                 if step in steps), None)


def released_by_another(ctx: BotContext, approval: Approval) -> bool:
    """Has another run (a tick, a cancel) released held competitor `approval` meanwhile
    (it saw its hold land: `hold_seen_over`): its row done with an `ok` release (not let go
    to another run's hold: "hold_kept", nor taken out by a person's `/train hold|release`:
    "held_by_person" | "released_by_person")?"""
    done = ctx.store.approvals.get(approval.token)
    return done is not None and done.state == "done" and not any(
        step.startswith("release_failed_")
        or step in ("hold_kept", "held_by_person", "released_by_person")
        for step in ctx.store.approvals.steps(approval.token))


def release_unless_waiting(ctx: BotContext, cluster: str, for_job: int, rec: JobRecord | None,
                           now: float, passing_over: Collection[str] = ()) -> list[int]:
    """Release what is held for `for_job` on `cluster` unless Slurm's record of it (`rec`,
    None: Slurm no longer knows it) says it still waits: it runs, ended or is gone.
    `passing_over`: the other resumed jobs the same read found no longer waiting
    (`release_held_for`)."""
    if rec is not None and rec.is_pending:
        return []
    why = "gone" if rec is None else "running" if rec.is_running else "ended"
    return release_held_for(ctx, for_job, now, why, cluster,
                            rec.state if rec is not None else None, passing_over)


def skipped_after_release(slurm: Slurm, for_job: int) -> HoldResult:
    """The hold_skipped answer of a yes whose release came first: the resumed job `for_job`
    stopped waiting after the yes read it, so its state is read again (the one read before
    says PENDING); when that read fails, its `error` says the state is unknown."""
    try:
        mine = slurm.job(for_job)
    except ClusterError as exc:
        return HoldResult("hold_skipped", error=said(exc))
    return HoldResult("hold_skipped", state=mine.state if mine is not None else None)


def held_for(ctx: BotContext, chain_id: int) -> list[Approval]:
    """Approvals of the chain whose competitor trainbot currently holds."""
    return [a for a in held_now(ctx) if a.chain_id == chain_id]


def held_now(ctx: BotContext) -> list[Approval]:
    """Every hold trainbot has out right now, across all chains (the hold ledger)."""
    return ctx.store.approvals.with_state(HOLD_ACTION, "approved")


def release_held_for(ctx: BotContext, job_id: int | str, now: float, why: str,
                     cluster: str | None = None, state: str | None = None,
                     passing_over: Collection[str] = ()) -> list[int]:
    """Release every competitor held for `job_id` (on `cluster`, when given: job ids repeat
    across clusters), once each; notes it in the thread (templates/hold_released.json.j2).
    `why` the job no longer needs the hold: running | ended (its `state`) | gone | cancelled.

    Each release is claimed by its `releasing` step (`claim_release`) and leaves the hold
    ledger only once its `scontrol release` went through, its row done with its "Released"
    reply kept for the thread in the same transaction (`done_and_said`: posted then, or by
    the `prompts` job when the process stopped first): one whose process died between the
    claim and the outcome is released again by a later run (tick,
    replica) once the step is old enough (bot.core.takeover.hold_step_takeover_s); Slurm
    takes a release of a job with no hold left as done (bot.cluster.slurm.SlurmClient
    .release). A release that fails (or whose end was not seen) is said in the thread and
    tried again as long after, up to MAX_RELEASE_ATTEMPTS times in all (`release_failed`).
    A job trainbot holds for several runs (`apply_hold` shares a hold) is released by the
    last of their holds to let go: one let go while another's is still out is done without
    a release, what its thread is told of it kept in the same transaction
    (`store.approvals.pass_hold`'s `keep`), then posted (or by the `prompts` job). One a
    person's `/train hold|release` took out of the ledger after its release was claimed
    (`pass_hold` finds it "gone") is theirs: no release is sent, which would drop their hold.
    `passing_over`: other resumed jobs (ids) read no longer waiting by the caller's same read
    (a holds tick's): no hold is let go to a hold for one of them, which is released in the
    same tick, so no thread is told the job stays held for a job that no longer waits."""
    released = []
    for approval in held_now(ctx):
        if approval.payload.get("for_job") != str(job_id):
            continue
        if cluster is not None and approval.payload.get("cluster") != cluster:
            continue
        if not hold_over(ctx, approval, now):
            continue  # its `scontrol hold` may still land (released once it is over), or
            # the release came before the hold was sent: nothing held, nothing to release
        if not claim_release(ctx, approval, now, why):
            continue  # another tick or replica is releasing it, or tries again later
        crashpoint("hold_release_claimed", approval.token)  # crash-test hook (no-op in production)
        comp = _competitor(approval)
        keeper = thread_keeper(ctx, approval.chain_id)
        still_held = None if keeper is None else partial(
            still_held_reply, keeper, approval, str(job_id), why, state)
        passed = ctx.store.approvals.pass_hold(approval.token, now=now, keep=still_held,
                                               passing_over=passing_over)
        if passed.outcome == "gone":
            continue  # a person's /train hold|release took it out since its claim: theirs
        if passed.kept_by is not None:
            outdate_retry_notes(ctx, approval)
            kept_for = passed.kept_by.payload.get("for_job")
            ctx.store.audit.record(
                actor="trainbot", action="competitor.release", now=now, job_id=str(comp),
                recipe=approval.payload.get("recipe"), result="kept",
                detail={"for_job": str(job_id), "why": why, "state": state,
                        "still_held_for": kept_for},
            )  # fmt: skip
            if keeper is not None:  # kept with the row done: posted now, or by `prompts`
                say_kept_message(ctx, release_reply(approval, str(job_id), why, state)[0])
            continue  # another run's hold still needs it: the last one to let go releases it
        try:
            ctx.clusters.slurm(approval.payload["cluster"]).release(comp)
        except KeyError as exc:  # nothing to try again: the ledger cannot reach its cluster
            release_failed(ctx, approval, str(job_id), why, state, now,
                           f"cluster {exc.args[0]!r} is no longer configured", final=True)
            continue
        except OutcomeUnknown as exc:
            if not release_seen(ctx, approval, str(job_id), why, state, now, exc):
                continue
        except ClusterError as exc:
            release_failed(ctx, approval, str(job_id), why, state, now, str(exc))
            continue
        ctx.store.audit.record(
            actor="trainbot", action="competitor.release", now=now, job_id=str(comp),
            recipe=approval.payload.get("recipe"), result="ok",
            detail={"for_job": str(job_id), "why": why, "state": state},
        )  # fmt: skip
        if not done_and_said(ctx, approval, str(job_id), why, state, now):
            # a person's /train hold|release took it out while the release was on its way
            released_after_person(ctx, approval, str(job_id), why, state, now)
        released.append(comp)
    return released


def still_held_reply(keeper: KeptReply, approval: Approval, for_job: str, why: str,
                     state: str | None, other: Approval) -> dict[str, Any]:
    """The row kept for held competitor `approval`'s thread (`keeper`, reading no store)
    when it lets go of the job to `other`'s hold (`pass_hold`): still held for its job."""
    return keeper(*release_reply(approval, for_job, why, state,
                                 kept_for=other.payload.get("for_job")))


def release_seen(ctx: BotContext, approval: Approval, for_job: str, why: str,
                 state: str | None, now: float, exc: OutcomeUnknown) -> bool:
    """The `scontrol release` of held competitor `approval` whose end was not seen (`exc`):
    it may have worked, so the job is read again. True when it holds no more (or Slurm no
    longer knows it): released, said and done as any release, not tried again. Still held:
    it did not take effect (`release_failed` with `still_held`: said as still held, tried
    again), unless it outlived its timeout (`may_still_run`): it may land after this read,
    so it is said as unknown, as when the job is not read; either is looked at again as a
    failure is tried again (`release_failed` with `unknown`)."""
    try:
        rec = ctx.clusters.slurm(approval.payload["cluster"]).job(_competitor(approval))
    except ClusterError:
        release_failed(ctx, approval, for_job, why, state, now, str(exc), unknown=True)
        return False
    if rec is None or not rec.is_held:
        return True
    release_failed(ctx, approval, for_job, why, state, now, str(exc),
                   unknown=may_still_run(exc), still_held=True)
    return False


def approved_step(approval: Approval) -> str | None:
    """The step a yes on `approval` marks with its claim: HOLD_APPROVED_STEP for a hold
    prompt, none for any other prompt."""
    return HOLD_APPROVED_STEP if approval.action == HOLD_ACTION else None


def hold_over(ctx: BotContext, approval: Approval, now: float) -> bool:
    """Can held competitor `approval` be released now, no `scontrol hold` of it still able
    to land after the release? Its hold's `holding` step, marked by apply_hold before it sends
    the hold, is taken by this release when not marked yet: no hold may follow (apply_hold
    then holds nothing and says the job was not held), so nothing is released or said and the
    row is done (`taken_before_its_hold`). Else its hold is over (`hold_ended`), or its holder
    died or did not see its hold's end (hold_unknown) and the step is
    bot.core.takeover.hold_step_takeover_s old (its hold has ended by then), or Slurm's
    record of the job shows no hold can land any more (`hold_seen_over`)."""
    approvals, token = ctx.store.approvals, approval.token
    if approvals.mark_step(token, HOLDING_STEP, now=now):
        # over only once done when nothing was held: a hold over and approved may be handed
        # the job by another run's hold letting go of it (`store.approvals.pass_hold`)
        taken = taken_before_its_hold(ctx, approval, now)
        approvals.mark_step(token, HOLD_ENDED_STEP, now=now)
        return not taken
    steps = approvals.steps(token)
    if HOLD_ENDED_STEP in steps:
        return True
    if steps[HOLDING_STEP] <= now - step_takeover_s(ctx, approval, HOLDING_STEP):
        return True
    # handed another run's hold as its own was landing: the job held is that hold, no sign
    # that its own has landed (a release now could go out before it, leaving the job held)
    if (seen := hold_seen_over(ctx, approval, held_is_over="hold_handed" not in steps)) is None:
        return False
    # a job that no longer waits holds nothing this hold could hand to another (`pass_hold`)
    approvals.mark_step(token, HOLD_ENDED_STEP, now=now,
                        also=() if seen.is_pending else (HOLD_NOT_LANDED_STEP,))
    return True


def hold_seen_over(ctx: BotContext, approval: Approval, *,
                   held_is_over: bool = True) -> JobRecord | None:
    """Does Slurm's record of held competitor `approval`, whose `scontrol hold` may still be
    on its way (its end not seen, or its holder still waiting for it), show that no hold of
    it can land any more? It is held (JobHeldUser, JobHeldAdmin: the hold landed; Slurm
    keeps no record of who held a job, so a hold its owner or an admin placed meanwhile is
    read as trainbot's, and a hold of trainbot's landing after its release would leave the
    job held as they held it), or it runs or ended (Slurm refuses to hold a job that no
    longer waits: "Job is no longer pending execution"). Only a plain job's record says so:
    an array's id stands for tasks some of which may still wait, and a job Slurm does not
    know, or a record that cannot be read, says nothing (False: its hold is over once its
    `holding` step is old enough, `hold_over`). Not `held_is_over`: only a record no longer
    waiting says so (the job is held by a hold handed to it, `store.approvals.pass_hold`).
    Returns the record that shows it, None when none does."""
    rec = competitor_record(ctx, approval)
    seen = rec is not None and ((held_is_over and rec.is_held) or not rec.is_pending)
    return rec if seen else None


def taken_before_its_hold(ctx: BotContext, approval: Approval, now: float) -> bool:
    """A release took held competitor `approval`'s `holding` step first (`hold_over`): when
    its yes was claimed with HOLD_APPROVED_STEP, its apply_hold sends its hold only after
    that step, so now sends none (or its process died before it):
    trainbot holds nothing, so the row is done without a release (`scontrol release` of a
    job trainbot did not hold would drop a hold its owner placed) nor a note (its prompt
    says it was not held); True then. A yes without it was claimed by a bot from before the
    `holding` step, whose hold went out with no step (or whose process died before it):
    False, released as any hold, however old the yes."""
    if HOLD_APPROVED_STEP not in ctx.store.approvals.steps(approval.token):
        return False
    ctx.store.approvals.mark_done(approval.token, now=now)
    ctx.store.audit.record(
        actor="trainbot", action="competitor.release", now=now,
        job_id=str(_competitor(approval)), recipe=approval.payload.get("recipe"),
        result="skipped", detail={"for_job": approval.payload.get("for_job"),
                                  "why": "taken before its hold was sent: nothing held"},
    )  # fmt: skip
    return True


def claim_release(ctx: BotContext, approval: Approval, now: float, why: str) -> bool:
    """Claim the release of the held competitor `approval` (its `releasing` step, with this
    run's bounds): True for exactly one caller, at once the first time; after that once
    the step is bot.core.takeover.hold_step_takeover_s old (its claimer died before the
    outcome was recorded, or its release failed and is due again), for one caller; or,
    its last attempt over (`last_attempt_ended_at`), at once when the resumed job was
    cancelled (`why`: a person asked, so the failed release is tried again now) or the job
    is read no longer held (`competitor_not_held`: said released without waiting). Each
    claim is made only while the row is still approved, checked in its own write (the row
    locked): a person's `/train hold|release` that took the hold out of the ledger after
    the caller listed it (`taken_by_person`) leaves nothing to claim, so no `scontrol
    release` undoes their hold (False)."""
    cluster = approval.payload.get("cluster", "")
    try:
        bounds: StepBounds | None = step_bounds(ctx.config, cluster, ctx.clusters.slurm(cluster))
    except KeyError:  # the cluster is no longer configured: the release says so
        bounds = None
    approvals = ctx.store.approvals
    marked = approvals.mark_step(approval.token, RELEASING_STEP, now=now, bounds=bounds,
                                 state="approved")
    if marked is not False:
        return bool(marked)  # None: no longer approved (see below)
    older_than = now - release_takeover_s(ctx, approval)
    if approvals.take_over_step(approval.token, RELEASING_STEP, older_than=older_than,
                                now=now, bounds=bounds, state="approved"):
        return True
    ended_at = last_attempt_ended_at(ctx, approval)
    if ended_at is None or not (why == "cancelled" or competitor_not_held(ctx, approval)):
        return False
    return approvals.take_over_step(approval.token, RELEASING_STEP, older_than=ended_at,
                                    now=now, bounds=bounds, state="approved")


def retry_in_min(ctx: BotContext, approval: Approval, now: float) -> int | None:
    """In how many minutes (at least 1) from `now` the failed release of held competitor
    `approval` is tried again (its `releasing` step due to be taken over: `claim_release`);
    None while a release of it may be on its way (`last_attempt_ended_at`)."""
    if last_attempt_ended_at(ctx, approval) is None:
        return None
    due = ctx.store.approvals.steps(approval.token)[RELEASING_STEP] + release_takeover_s(
        ctx, approval)
    return max(1, math.ceil((due - now) / 60))


def last_attempt_ended_at(ctx: BotContext, approval: Approval) -> float | None:
    """When held competitor `approval`'s last release attempt was recorded as failed (or
    not known: its `release_failed_N` step), if no claim came after it (the `releasing`
    step no newer): no run is releasing it now; None while one may be."""
    steps = ctx.store.approvals.steps(approval.token)
    failed = [at for step, at in steps.items() if step.startswith("release_failed_")]
    if not failed or RELEASING_STEP not in steps or max(failed) < steps[RELEASING_STEP]:
        return None
    return max(failed)


def competitor_not_held(ctx: BotContext, approval: Approval) -> bool:
    """Does Slurm's record of held competitor `approval` show it no longer held (an earlier
    release landed after its end was not seen, or a person released it), or no longer
    waiting? Only a plain job's record read says so (`competitor_record`)."""
    rec = competitor_record(ctx, approval)
    return rec is not None and not rec.is_held


def competitor_record(ctx: BotContext, approval: Approval) -> JobRecord | None:
    """Slurm's record of held competitor `approval` when it is a plain job's, read now; None
    when it cannot be read, Slurm does not know it, or it is an array's (its id stands for
    tasks some of which may still wait: one record says nothing of them all)."""
    try:
        rec = ctx.clusters.slurm(approval.payload["cluster"]).job(_competitor(approval))
    except (ClusterError, KeyError):
        return None
    return None if rec is None or rec.array_job_id is not None else rec


def release_started(ctx: BotContext, now: float) -> list[int]:
    """Scheduler hook: release competitors whose resumed job is running, ended or gone.

    The holds come straight from the ledger (`store.approvals.with_state`), whatever chain,
    recipe or age they belong to. One `jobs()` call per cluster for all held-for jobs; a
    cluster that does not answer keeps its holds until the next tick.
    """
    waiting: dict[str, set[int]] = {}
    for approval in held_now(ctx):
        waiting.setdefault(approval.payload["cluster"], set()).add(
            int(approval.payload["for_job"])
        )
    released: list[int] = []
    for cluster, ids in sorted(waiting.items()):
        try:
            records = ctx.clusters.slurm(cluster).jobs(sorted(ids))
        except ClusterError as exc:
            log.warning("cannot check held-for jobs on %s: %s", cluster, exc)
            continue
        except KeyError:
            log.warning("trainbot holds jobs on cluster %r, which is no longer configured; "
                        "release them by hand (scontrol release)", cluster)
            continue
        over = {str(job_id) for job_id in ids
                if (rec := records.get(job_id)) is None or not rec.is_pending}
        for job_id in sorted(ids):
            released += [comp for comp in release_unless_waiting(
                ctx, cluster, job_id, records.get(job_id), now, over - {str(job_id)})
                if comp not in released]  # each hold of a job shared by two runs releases it
    return released
