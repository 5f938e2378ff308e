"""Carrying out an approved prompt's choice, once its click is claimed (bot.services.approvals:
reached once per approval): a resubmit (plain, with --mem, the faulty node excluded), a Cancel
or Cancel and resume (the steps it marks: bot.services.cancel_steps; one whose scancel's end
was not seen, or whose process died, is finished by bot.services.cancel_settle, a cancel and
resume's rest through `resume_cancelled`), a competitor's hold (bot.services.competitors).
What it did is an `Outcome` (bot.services.approval_outcomes): `Performed`, or `NotPerformed`
raised for a choice not (fully) carried out.

Retry budget: an approved resubmit (plain, --mem, or cancel and resume) is charged to the
chain's retry ledger (`chains.retries_used`) exactly when the watcher's automatic resubmit of
the same failure would be: when the failure's class charges the budget
(`Diagnosis.charges_budget`, the catalogue's `charges_budget`; `preempted` and `node_failure`
do not) and it is no time-limit chunk that saved a newer checkpoint (the watcher's proposal
records `charged: false`: bot.core.policy.chunks), and while the chain has budget left (past
it, a person's approval is what lets the run go on). It is charged once, with the attempt's
record after the job was submitted, inside the claimed click (a double click or a Slack retry
never reaches it). Proposals themselves are never charged. An approved resubmit re-opens a
chain the policy had stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bot.cluster.errors import ClusterError, OutcomeUnknown, said
from bot.config import PolicyConfig
from bot.core.arrays import task_retries_through
from bot.core.incident import ResumePoint, prompt_changed
from bot.core.policy import Decision, approval_charged, run_rows
from bot.core.text import N_, Text
from bot.services import ServiceError
from bot.services import competitors as comp
from bot.services.after_submit import after_person_submit
from bot.services.approval_outcomes import Outcome, OutcomeKind
from bot.services.cancel_steps import (
    CANCELLING_STEP,
    RESUMING_STEP,
    UNKNOWN_CANCEL_STEP,
    scancel_over_at,
)
from bot.services.lost_submit import sent_moment
from bot.services.ports import BotContext, Slurm, StoreStep
from bot.services.root_views import task_bounds
from bot.services.runs import (
    announce_submit,
    array_task_of,
    exclusion,
    lost_resubmit,
    submit_and_announce,
)
from bot.services.submit import RunMovedOn, RunSubmitInFlight, under_way
from bot.services.submit_claim import (
    CLAIM_MARGIN_S,
    RecipeSubmitUnderWay,
    claim_key,
    claim_submit,
    flight_key,
    release_submit,
    renew_submit,
    submit_holder,
)
from bot.services.submit_deadlines import approval_intent, resubmit_settled_at, step_bounds
from bot.services.submit_result import SubmitResult
from bot.store import Approval, Attempt


@dataclass
class Performed:
    outcome: Outcome
    job_id: str | None = None
    holds: list[int] = field(default_factory=list)
    submitted: bool = False  # a job was submitted, and after_person_submit followed it


class NotPerformed(ServiceError):
    """An approved choice that was not (fully) carried out; `outcome` says why, as data."""

    def __init__(self, outcome: Outcome, message: Text) -> None:
        super().__init__(message)
        self.outcome = outcome


class ClaimLostBeforeScancel(RecipeSubmitUnderWay):
    """A Cancel and resume whose claim of its resubmit was lost before its scancel was sent
    (its hold lapsed, and another submit took it), and not taken again (`refused`, the
    refusal): nothing was sent, its job is watched again. Its claim of the prompt is released
    by the click's handler alone (bot.services.approvals.handle_click), once, with the steps
    of `forget` (its cancelling step) forgotten."""

    def __init__(self, refused: RecipeSubmitUnderWay, forget: tuple[str, ...]) -> None:
        ServiceError.__init__(self, *refused.args)
        self.recipe, self.other, self.run_job = refused.recipe, refused.other, refused.run_job
        self.click, self.forget = refused.click, forget


def perform(ctx: BotContext, approval: Approval, choice: str, actor: str,
            now: float, *, besides: str | None = None) -> Performed:
    """Carry out a claimed choice (only ever reached once per approval). A resubmit ends as
    every person's submit does (after_person_submit), the Home tabs refreshed but `besides`'s
    (the presser's on their Home tab, which bot.services.prompt_follow_up.after_click
    publishes with what the click did)."""
    payload = approval.payload
    recipe, target = payload.get("recipe"), str(approval.target_job)
    if choice == "hold":
        hold = comp.apply_hold(ctx, approval, actor, now)
        not_held = ("competitor_started", "competitor_left", "competitor_held",
                    "competitor_releasing")
        kind: OutcomeKind = "stale" if hold.did in not_held else "approved"
        return Performed(Outcome(kind, actor, hold.did, recipe, job_id=target,
                                 for_job=payload.get("for_job"), state=hold.state,
                                 error=hold.error, current_job=hold.releasing_for,
                                 retry_in_min=hold.retry_in_min), target)
    if choice in ("cancel", "cancel_resume"):
        return _cancel(ctx, approval, actor, now, resume=choice == "cancel_resume",
                       besides=besides)
    # after a fault of one node (payload "exclude"), every resubmit choice leaves it out, and
    # the nodes the run's earlier attempts left out
    task = array_task_of(ctx, approval.chain_id, target)
    attempts = (run_rows(ctx.store.attempts.for_chain(approval.chain_id), task)
                if approval.chain_id is not None else [])
    overrides, extra = exclusion(ctx.config, payload["recipe"], payload.get("exclude"), attempts)
    if choice == "resubmit_mem":
        overrides, extra = {**overrides, "mem": str(payload["mem"])}, {**extra, "mem": "size"}
    try:
        result = submit_and_announce(
            ctx, payload["recipe"], actor=actor, now=now, overrides=overrides,
            chain_id=approval.chain_id, extra_overridable=extra,
            charge_retry=approval.chain_id is not None and charges_budget(ctx, approval),
            array_task=task,
            prompt=_prompt_said(approval), reconcile_unknown=True,
            after_job=target if approval.chain_id is not None else None,
        )  # fmt: skip
    except RunMovedOn as exc:  # resumed, or a new run started, since: out of date
        ctx.store.approvals.mark_done(approval.token, now=now)
        return Performed(Outcome("stale", actor, "superseded" if exc.new_run else "moved_on",
                                 recipe, job_id=target,
                                 for_job=payload.get("for_job"), current_job=exc.job,
                                 state=exc.state), target)
    ctx.store.approvals.mark_done(approval.token, now=now)
    outcome = Outcome("approved", actor, "resubmitted", recipe, job_id=target,
                      new_job_id=str(result.job_id), **_resumed(approval, result),
                      mem=result.overrides.get("mem"),
                      exclude=payload.get("exclude") if "exclude" in result.overrides else None,
                      not_applied=[[n.key, n.requested, n.actual] for n in result.not_applied])
    return _after_submit(ctx, approval, outcome, result, now, besides)


def _cancel(ctx: BotContext, approval: Approval, actor: str, now: float, *,
            resume: bool, besides: str | None = None) -> Performed:
    """A running job's Cancel, approved: scancel it; with `resume` (Cancel and resume, a
    stalled job) resubmit the chain from its latest complete checkpoint next (the same submit
    as a Resubmit button). A cancel and resume's job leaves the watch list first, so the
    watcher does not judge it as one more failure of the chain; its attempt row says
    CANCELLED / hang and the work it lost. A plain Cancel's job stays watched: its end is
    judged as any job's.

    A scancel whose end was not seen (OutcomeUnknown) may or may not have cancelled the job:
    nothing is resubmitted, the job is watched again, the approval stays approved with its
    step `cancel_unknown` (Cancel and resume) or `cancel_only_unknown` (Cancel) (the watcher
    leaves such a job's end to it), and the prompt says so;
    bot.services.cancel_settle.settle_unknown_cancels looks at
    the job later and finishes the cancel (it was cancelled; a cancel and resume resumes the
    run) or says it was not (it still runs) and offers it again.

    The step `cancelling` (Cancel) or `cancelling_to_resume` (Cancel and resume) is marked
    before the job leaves the watch list and its scancel is sent: a process that dies before
    the scancel's end is seen leaves the approval approved with that step alone, and
    bot.services.cancel_settle settles it as a cancel whose end was not seen once the step is
    cancel_takeover_s old, counted at the longer of this click's own bounds (kept with the
    step: the jump host and timeouts its SSH runner uses) and the current config's (the job
    watched again; cancelled: finished as the click would have; still running: said, and
    offered again). `cancel_resuming` keeps the click's bounds too.

    A cancel and resume whose scancel was seen marks the step `cancel_resuming` before its
    resubmit: a process that dies between it and the approval's end (in the resubmit, its
    announcement, its hold questions) leaves the approval approved with that step, and
    bot.services.cancel_settle finishes it once, without a second job.

    A cancel and resume claims its resubmit (bot.services.submit_claim) before its scancel,
    its hold counted from when it is taken (not the click: its squeue may be slow), and is
    refused before anything is cancelled (RecipeSubmitUnderWay) while another submit of the
    recipe stands against it; its resubmit holds that claim on. A claim lost before the
    scancel is sent (its hold lapsed, and another submit took it) is claimed again, else
    nothing is sent (the job watched again; ClaimLostBeforeScancel: the click's handler
    leaves the prompt as it was, its step forgotten);
    one lost during the scancel is claimed again by the resubmit, else the job stays
    cancelled and the prompt says the scancel outlasted the click's hold."""
    payload = approval.payload
    recipe, cluster, job = payload["recipe"], payload["cluster"], str(approval.target_job)
    slurm = ctx.clusters.slurm(cluster)
    started = ctx.clock()  # `now`, by the clock: the claim's times count from it

    def at() -> float:  # the clock now, counted from the click's `now`
        return now + ctx.clock() - started

    _require_running(slurm, job, actor, recipe)
    bounds = step_bounds(ctx.config, cluster, slurm)  # kept with its steps, for their takeover
    # held for the scancel alone (one the click's process died in lapses before the settle
    # takes it over: bot.services.cancel_settle), then on for the resubmit; from when it is
    # taken (the squeue above may have outlasted its hold)
    scancel_s = bounds.command_at_most_s + CLAIM_MARGIN_S
    holder = submit_holder(approval.token) if resume else None
    if holder is not None and not _claim_resume(ctx, approval, holder, scancel_s, at()):
        holder = None
    ctx.store.approvals.mark_step(approval.token, CANCELLING_STEP[resume], now=now,
                                  bounds=bounds)
    watched = ctx.store.watched_jobs.get(cluster, job) if resume else None
    if watched is not None:
        ctx.store.watched_jobs.remove(cluster, job)

    def watch_again() -> None:  # still running (or it may be): keep watching it
        if watched is not None:
            ctx.store.watched_jobs.add(cluster, job, now=watched.added_at,
                                       chain_id=watched.chain_id, adopted=watched.adopted)

    if holder is not None and not renew_submit(
            ctx.store, _resume_key(ctx, approval), holder, at(), scancel_s):
        try:  # lost before the scancel (its hold lapsed and it was taken): taken again
            if not _claim_resume(ctx, approval, holder, scancel_s, at()):
                holder = None
        except RecipeSubmitUnderWay as exc:  # nothing sent: the prompt stays, as before its
            watch_again()  # step (released by the click's handler, once)
            raise ClaimLostBeforeScancel(exc, (CANCELLING_STEP[resume],)) from exc
    # a stop from the scancel on is told when its resubmit is settled, kept in flight or not
    due = StoreStep("resubmit_due", resubmit_settled_at(ctx.config, cluster, at(), bounds)) \
        if resume else None
    if due is not None:
        ctx.steps.noted(due)
    try:
        slurm.cancel(int(job))
    except ClusterError as exc:
        if due is not None:  # a reply comes: the cancel's, unknown or failed
            ctx.steps.undone(due)
        if holder is not None:  # nothing resubmitted now (bot.services.cancel_settle may)
            release_submit(ctx.store, _resume_key(ctx, approval), holder)
        watch_again()
        if not isinstance(exc, OutcomeUnknown):
            raise
        step = UNKNOWN_CANCEL_STEP[resume]
        ctx.store.approvals.mark_step(approval.token, step, now=now)
        settle_s = policy_of(ctx, recipe).cancel_settle_s
        over = scancel_over_at(ctx, approval)  # the step above is marked: never None here
        over_s = settle_s if over is None else max(over - now, settle_s)
        return Performed(Outcome("approved", actor, step, recipe, job_id=job, error=said(exc),
                                 settle_s=settle_s, over_s=over_s), job)
    if not resume:
        ctx.store.approvals.mark_done(approval.token, now=now)
        return Performed(Outcome("approved", actor, "cancelled", recipe, job_id=job), job)
    # the rest is this click's while its step is younger than the settle's takeover: a
    # process that dies in it leaves the approval approved, finished by the next run
    # (bot.services.cancel_settle)
    # held on for its checkpoint lookup and sbatch (and a lookup by name); lost during the
    # scancel (it outlasted the hold, and another submit took it), its resubmit claims it
    # again, or is refused and says why
    lost = holder is not None and not renew_submit(
        ctx.store, _resume_key(ctx, approval), holder, at(),
        2 * bounds.command_at_most_s + bounds.lookup_at_most_s + CLAIM_MARGIN_S)
    ctx.store.approvals.mark_step(approval.token, RESUMING_STEP, now=now, bounds=bounds)
    try:
        performed = _resume_cancelled(ctx, approval, actor, now, besides=besides,
                                      claim_holder=holder)
    except NotPerformed as exc:
        if due is not None:
            ctx.steps.undone(due)
        if lost and isinstance(exc.__cause__, RecipeSubmitUnderWay):
            error = N_("the scancel outlasted this click's hold on the run, and another "
                       "submit took the run meanwhile (%(error)s)", error=said(exc.__cause__))
            raise NotPerformed(replace(exc.outcome, error=error),
                               N_("cancelled job %(job)s, but the resubmit failed: %(error)s",
                                  job=job, error=error)) from exc.__cause__
        raise
    if due is not None:  # resubmitted, or carried on by another submit of the run
        ctx.steps.undone(due)
    ctx.store.approvals.mark_done(approval.token, now=now)
    return performed


def _resume_key(ctx: BotContext, approval: Approval) -> str:
    """The claim key of a cancel and resume's resubmit (bot.services.submit_claim)."""
    return claim_key(approval.payload["recipe"], approval.chain_id,
                     array_task_of(ctx, approval.chain_id, str(approval.target_job)))


def _claim_resume(ctx: BotContext, approval: Approval, holder: str, hold_s: float,
                  at: float) -> bool:
    """Claim a cancel and resume's resubmit for `holder` before its scancel, from `at` (the
    clock when it is taken) for `hold_s`: True once claimed; the click holds it on once the
    job is cancelled, and its resubmit after it. Refused (RecipeSubmitUnderWay, nothing
    cancelled) while another submit of the recipe stands against it; False (no claim taken)
    when that is a submit of this run in flight, which carries the run on once the job is
    cancelled (`carried_on`, as before)."""
    recipe = approval.payload["recipe"]
    task = array_task_of(ctx, approval.chain_id, str(approval.target_job))
    refused = claim_submit(ctx.store, recipe, approval.chain_id, task, holder=holder,
                           own=None, now=at, hold_s=hold_s, clusters=ctx.config.clusters)
    if refused is None:
        return True
    if refused.other is not None and \
            flight_key(refused.other) == claim_key(recipe, approval.chain_id, task):
        return False
    raise under_way(ctx.config, ctx.store, recipe, refused, at)


def resume_cancelled(ctx: BotContext, approval: Approval, actor: str, now: float, *,
                     recover: bool = False) -> Outcome:
    """The rest of a cancel and resume whose job was found cancelled later (its scancel's end
    was not seen, or the click's process died): what `_resume_cancelled` did, as its outcome
    (a failed resubmit: `resubmit_failed`)."""
    try:
        return _resume_cancelled(ctx, approval, actor, now, recover=recover).outcome
    except NotPerformed as exc:
        return exc.outcome


def _resume_cancelled(ctx: BotContext, approval: Approval, actor: str,
                      now: float, *, recover: bool = False,
                      besides: str | None = None, claim_holder: str | None = None
                      ) -> Performed:
    """The rest of a cancel and resume, once its job is cancelled (and off the watch list):
    record its attempt, release what was held for it, resubmit the chain; the caller records
    the approval's end. With `recover` (an earlier run of it died), the job its resubmit left,
    recorded or found by the chain's job name (bot.services.runs.lost_resubmit), is kept and
    announced instead of a second, and the attempt keeps the end the dead run recorded."""
    payload = approval.payload
    recipe, cluster, job = payload["recipe"], payload["cluster"], str(approval.target_job)
    chain_id = approval.chain_id
    ctx.store.tail_offsets.delete_job(job)
    comp.release_held_for(ctx, job, now, "cancelled", cluster)
    old = ctx.store.attempts.get_by_job(job, cluster)
    last_iter = _stalled_at(ctx, approval, old)
    if old is not None:
        ended_at = old.ended_at if recover and old.ended_at is not None else now
        ctx.store.attempts.update(old.id, state="CANCELLED", result="CANCELLED", cause="hang",
                                  ended_at=ended_at, last_iter=last_iter)

    def record_work_lost(result: SubmitResult) -> None:  # before the resolution says what was lost
        ck = result.checkpoint
        if old is not None and last_iter is not None:
            start = ck.iteration if ck is not None and ck.iteration is not None else 0
            ctx.store.attempts.update(old.id, work_lost_iters=max(0, last_iter - start))

    charged = chain_id is not None and charges_budget(ctx, approval, "hang")
    intent = approval_intent(approval.token)  # its resubmit's, in flight: that row alone
    # a lookup Slurm does not answer goes up: the settle is taken over again later
    left = (lost_resubmit(ctx, cluster, recipe, chain_id, job, intent=intent, actor=actor,
                          now=now, resumed_at=last_iter, charged=charged,
                          array_task=array_task_of(ctx, chain_id, job))
            if recover and chain_id is not None else None)
    if left is not None:
        record_work_lost(left)
        announce_submit(ctx, recipe, left, actor, None, prompt=_prompt_said(approval))
        result = left
    else:
        try:
            result = submit_and_announce(
                ctx, recipe, actor=actor, now=now, chain_id=chain_id, charge_retry=charged,
                before_announce=record_work_lost, array_task=array_task_of(ctx, chain_id, job),
                prompt=_prompt_said(approval), reconcile_unknown=True, intent=intent,
                after_job=job, claim_holder=claim_holder,
            )  # fmt: skip
        except (RunMovedOn, RunSubmitInFlight) as exc:  # another submit carries the run on
            return Performed(carried_on(exc, actor, recipe, job, now), job)
        except (ServiceError, ClusterError) as exc:
            raise NotPerformed(
                Outcome("failed", actor, "resubmit_failed", recipe, job_id=job,
                        error=said(exc)),
                N_("cancelled job %(job)s, but the resubmit failed: %(error)s", job=job,
                   error=said(exc))) from exc
    outcome = Outcome("approved", actor, "cancel_resumed", recipe, job_id=job,
                      new_job_id=str(result.job_id), **_resumed(approval, result))
    return _after_submit(ctx, approval, outcome, result, now, besides)


def carried_on(exc: RunMovedOn | RunSubmitInFlight, actor: str, recipe: str, job: str,
               now: float) -> Outcome:
    """A cancel and resume whose job was cancelled and whose resubmit was refused because
    another submit carries the run on: one recorded since the cancel (`cancel_moved_on`, its
    job `new_job_id`, by `by`), a new run of the recipe started since (`cancel_superseded`,
    likewise) or one in flight (`cancel_in_flight`, by `by`, sent `sent`)."""
    if isinstance(exc, RunMovedOn):
        return Outcome("approved", actor,
                       "cancel_superseded" if exc.new_run else "cancel_moved_on", recipe,
                       job_id=job, new_job_id=exc.job, by=exc.by)
    return Outcome("approved", actor, "cancel_in_flight", recipe, job_id=job,
                   by=exc.flight.actor, sent=sent_moment(exc.flight.sent_at, now))


def _resumed(approval: Approval, result: SubmitResult) -> dict[str, Any]:
    """Where an approved resubmit resumed (`from_iter`, else `from_checkpoint`'s name), and
    where the prompt said it would when that changed since it was posted (`prompt_iter`, else
    `prompt_checkpoint`), as the resolution line says it (bot.core.incident.prompt_changed)."""
    ck = result.checkpoint
    from_iter = ck.iteration if ck is not None else None
    said = prompt_changed(_prompt_said(approval),
                          ResumePoint(from_iter, ck.name if ck is not None else None))
    return {"from_iter": from_iter,
            "from_checkpoint": ck.name if ck is not None and from_iter is None else None,
            "prompt_iter": said.iteration if said else None,
            "prompt_checkpoint": said.checkpoint if said else None}


def _prompt_said(approval: Approval) -> ResumePoint | None:
    """Where the prompt's buttons said the job would resume ("Resubmit from iteration 3,000",
    "… from checkpoint `final`"), fixed when it was posted: the checkpoint's iteration and name
    (a prompt stored before names were kept has only the iteration); None: they named none
    (its label says "Resubmit from scratch"). The submit looks for the newest complete checkpoint
    again at the click."""
    payload = approval.payload
    said = ResumePoint(payload.get("resume_iter"), payload.get("resume_checkpoint") or None)
    return said if said.iteration is not None or said.checkpoint else None


def _require_running(slurm: Slurm, job: str, actor: str, recipe: str | None) -> None:
    """Refuse (`not_running`) to cancel a job Slurm no longer runs or queues."""
    record = slurm.job(int(job))
    if record is None or not (record.is_running or record.is_pending):
        state = record.state if record is not None else None
        raise NotPerformed(
            Outcome("failed", actor, "not_running", recipe, job_id=job, state=state),
            N_("job %(job)s is no longer running (%(state)s)", job=job,
               state=state or N_("unknown to Slurm")))


def _after_submit(ctx: BotContext, approval: Approval, outcome: Outcome, result: SubmitResult,
                  now: float, besides: str | None) -> Performed:
    """An approved resubmit done: what follows every person's submit (after_person_submit:
    its hold questions, the Home tabs but `besides`'s), and what the click did."""
    proposals = after_person_submit(ctx, approval.payload["recipe"], result, now,
                                    besides=besides)
    return Performed(outcome, result.job_id, [p.competitor for p in proposals],
                     submitted=True)


def policy_of(ctx: BotContext, recipe: str | None) -> PolicyConfig:
    """The recipe's policy; the defaults' for a recipe not (or no longer) configured."""
    return ctx.config.policy_for(recipe) if recipe in ctx.config.recipes else ctx.config.policy


def charges_budget(ctx: BotContext, approval: Approval, class_id: str | None = None) -> bool:
    """Does carrying out this approved resubmit spend one of its chain's retries? The facts
    for bot.core.policy.approval_charged: is the chain's budget spent, what the watcher
    recorded for the target job (its final incident, or for `class_id` — a stall: "hang" —
    that class's warning), else the class of the attempt's cause."""
    chain = ctx.store.chains.get(approval.chain_id) if approval.chain_id is not None else None
    recipe = approval.payload.get("recipe")
    used = chain.retries_used if chain is not None else 0
    task = array_task_of(ctx, approval.chain_id, str(approval.target_job))
    if chain is not None and task is not None:  # an array's task: its own budget
        mine = run_rows(ctx.store.attempts.for_chain(chain.id), task)
        used = task_retries_through(mine, str(approval.target_job), ctx.catalogue,
                                    bounds=task_bounds(ctx.config, chain, mine))
    spent = (chain is not None and recipe in ctx.config.recipes
             and used >= ctx.config.policy_for(recipe).retry_budget)
    job = str(approval.target_job)
    recorded: bool | None = None
    for incident in ctx.store.incidents.for_chain(approval.chain_id or -1):
        if incident.job_id != job or not (incident.class_id == class_id if class_id
                                          else incident.diagnosis.get("kind") == "incident"):
            continue
        flag = _recorded_charge(incident.diagnosis)
        if flag is not None:
            recorded = flag  # the latest recorded one wins
    if class_id is None:
        attempt = ctx.store.attempts.get_by_job(job, approval.payload.get("cluster"))
        class_id = attempt.cause if attempt is not None else None
    return approval_charged(budget_spent=spent, recorded=recorded, class_id=class_id,
                            catalogue=ctx.catalogue)


def _recorded_charge(stored: dict[str, Any]) -> bool | None:
    """Whether the watcher charged what it recorded (an incident's stored payload): a resubmit
    it decided says so itself (`Decision.charged`: a time-limit chunk that saved a newer
    checkpoint is not charged), any other incident by its diagnosis' `charges_budget`."""
    if isinstance(stored.get("decision"), dict):
        decision = Decision.from_json(stored["decision"])
        if decision.resubmits:
            return decision.charged
    flag = (stored.get("diagnosis") or {}).get("charges_budget")
    return flag if isinstance(flag, bool) else None


def _stalled_at(ctx: BotContext, approval: Approval, attempt: Attempt | None) -> int | None:
    """The stalled job's last iteration: the attempt row (written by the watcher at most every
    few minutes) or the stall warning's diagnosis, whichever is further."""
    seen = [stall_iteration(ctx, approval), attempt.last_iter if attempt is not None else None]
    known = [int(v) for v in seen if v is not None]
    return max(known) if known else None


def stall_iteration(ctx: BotContext, approval: Approval) -> int | None:
    """The iteration a stall prompt's job stalled at, as its warning's diagnosis says: the
    warning the prompt was posted with (its `post_key`), else the job's furthest stall warning
    (a prompt stored without its key); None: unknown, or no stall prompt."""
    if "cancel_resume" not in approval.payload.get("choices", []):
        return None
    job, key = str(approval.target_job), approval.payload.get("post_key")
    seen = []
    for incident in ctx.store.incidents.for_chain(approval.chain_id or -1):
        if incident.job_id == job and incident.class_id == "hang" \
                and (key is None or incident.key == key):
            metrics = (incident.diagnosis.get("diagnosis") or {}).get("metrics") or {}
            seen.append(metrics.get("last_iter"))
    known = [int(v) for v in seen if v is not None]
    return max(known) if known else None


@dataclass(frozen=True)
class StallOver:
    """A stall prompt's job trained on past its stall: it stalled at iteration `stalled_at`
    and its attempt row has reached `reached` since."""

    stalled_at: int
    reached: int


def stall_over(ctx: BotContext, approval: Approval) -> StallOver | None:
    """Whether the stall a stall prompt asks about is over: its job's attempt row (the
    watcher's progress) is past the iteration it stalled at (`stall_iteration`). Its Cancel
    and Cancel and resume would stop a healthy run: the prompt is out of date."""
    stalled_at = stall_iteration(ctx, approval)
    if stalled_at is None:
        return None
    attempt = ctx.store.attempts.get_by_job(str(approval.target_job),
                                            approval.payload.get("cluster"))
    if attempt is None or attempt.last_iter is None or attempt.last_iter <= stalled_at:
        return None
    return StallOver(stalled_at, attempt.last_iter)


def recovered_outcome(approval: Approval, over: StallOver, actor: str | None) -> Outcome:
    """What a stall prompt whose stall is over says (`stale`, did `recovered`)."""
    return Outcome("stale", actor, "recovered", approval.payload.get("recipe"),
                   job_id=str(approval.target_job), stalled_iter=over.stalled_at,
                   reached_iter=over.reached)
