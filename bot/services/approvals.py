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
The claim of any of its buttons checks, in the same transaction, that this job is still the
chain's latest attempt and that no other prompt of the chain is acting on it: a prompt the run
moved past (resumed by `/train resume` or another approval) is `stale` for good, and its click
submits, cancels and holds nothing, says "out of date: job N is now the latest (STATE)" and
rewrites the prompt to say so. A hold is also refused when its competitor already started or
left the queue (asked from Slurm just before holding).

What a click did is data (`Outcome`: kind, actor, job ids, iteration, --mem, a verbatim error);
the `decided` template says it in the recipe's language, and the `click_reply` template says
the replies only the clicker sees (unknown button, refused, already decided, expired).

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

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from bot.cluster.errors import ClusterError, OutcomeUnknown, said
from bot.config import PolicyConfig
from bot.core.arrays import task_retries_through
from bot.core.incident import ResumePoint, prompt_changed
from bot.core.policy import Decision, approval_charged, run_rows
from bot.core.takeover import cancel_takeover_s
from bot.core.text import N_, Text
from bot.services import ServiceError
from bot.services import competitors as comp
from bot.services.access import approvers_now
from bot.services.after_submit import after_person_submit
from bot.services.ports import Blocks, BotContext, Slurm
from bot.services.runs import (
    announce_submit,
    approval_intent,
    array_task_of,
    exclusion,
    lost_resubmit,
    submit_and_announce,
)
from bot.services.submit import (
    RunMovedOn,
    RunSubmitInFlight,
    SubmitNotQueued,
    SubmitResult,
    sent_moment,
)
from bot.services.submit_deadlines import cluster_deadlines, step_bounds
from bot.services.threads import render, task_bounds
from bot.slack.views import ActionId
from bot.store import Approval, Attempt

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


OutcomeKind = Literal["approved", "failed", "dismissed", "kept", "expired", "stale"]


@dataclass(frozen=True)
class Outcome:
    """What became of a decided prompt, as data for the `decided` template.

    `kind` approved: `did` is resubmitted | cancelled | cancel_resumed | cancel_moved_on |
    cancel_in_flight (cancelled, nothing resubmitted: another submit carries the run on,
    `carried_on`) | cancel_unknown or,
    for a plain Cancel, cancel_only_unknown (the scancel's end was not seen: `error`; trainbot
    looks at the job again `settle_s` after the click, the recipe's policy.cancel_settle_s,
    and says "not cancelled" only `over_s` after it, once the scancel can no longer land:
    `scancel_over_at`, never before the first look) |
    held | hold_skipped
    | hold_failed | hold_unknown; failed: `did` is error | not_running | resubmit_failed (the
    job was cancelled, its resubmit failed) | cancel_not_taken (a cancel whose end was not seen
    did not take effect: the job is still in `state`; offered again) | not_submitted (the
    resubmit's end was not seen and no job named `job_name` was found: nothing was
    submitted); stale (nothing was done,
    the prompt no longer applies): `did` is moved_on (the chain's latest attempt is
    `current_job` now, in `state`) | competitor_started | competitor_left (a hold prompt's
    competitor, in `state`). `job_id` is the prompt's target job (the competitor of a hold
    prompt), `new_job_id` the resubmitted one, `for_job` the resumed job a hold waits for,
    `state` a Slurm state (None: unknown to Slurm), `error` what the error said (its Text,
    which the template translates; Slurm's or ssh's own words inside stay verbatim);
    `not_applied` the overrides a site submit wrapper's job did not get ([key, requested, the
    job's value]); `exclude` the faulty node a resubmit left out (--exclude). A
    resubmit resumed from iteration `from_iter`, else from the checkpoint named
    `from_checkpoint` (its iteration unknown), else from scratch (the click's submit looked the
    checkpoint up and found none; a failed lookup fails the submit, so the start is never
    unknown); `prompt_iter`, else `prompt_checkpoint`, is where the prompt said it would resume
    (its iteration, else the checkpoint's name) when it resumed from another checkpoint (the
    newest complete one changed since it was posted)."""

    kind: OutcomeKind
    actor: str | None = None
    did: str | None = None
    recipe: str | None = None
    job_id: str | None = None
    new_job_id: str | None = None
    for_job: str | None = None
    current_job: str | None = None
    from_iter: int | None = None
    from_checkpoint: str | None = None
    prompt_iter: int | None = None
    prompt_checkpoint: str | None = None
    mem: str | None = None
    exclude: str | None = None
    state: str | None = None
    error: Text | str | None = None
    not_applied: list[list[str]] | None = None
    job_name: str | None = None
    settle_s: float | None = None
    over_s: float | None = None  # cancel_unknown / cancel_only_unknown: see above
    by: str | None = None  # cancel_moved_on / cancel_in_flight: whose submit carries the run
    sent: str | None = None  # cancel_in_flight: when that submit was sent (sent_moment)

    def to_view(self) -> dict[str, Any]:
        # field by field, not asdict: `error` stays a Text for the template's `msg` filter
        return {f.name: getattr(self, f.name) for f in fields(self)}


class _NotPerformed(ServiceError):
    """An approved choice that was not (fully) carried out; `outcome` says why, as data."""

    def __init__(self, outcome: Outcome, message: Text) -> None:
        super().__init__(message)
        self.outcome = outcome


def decided(ctx: BotContext, recipe: str | None, prompt: Mapping[str, Any],
             outcome: Outcome) -> tuple[str, Blocks]:
    """The prompt after its decision (the `decided` template): (text, blocks), from the
    approval's `prompt` (its payload): its question (`summary`) and the incident card it
    showed under it (`card`, bot.services.prompts.create_resubmit_prompt), kept above the
    outcome so the thread keeps the card's figures. A hold prompt has no stored summary: the
    template asks its question again from the outcome's job ids."""
    blocks, text = render(ctx, "decided", recipe,
                          {"summary": prompt.get("summary"), "card": prompt.get("card"),
                           "outcome": outcome.to_view()})
    return text, blocks


def click_reply(ctx: BotContext, recipe: str | None, kind: str, **facts: Any) -> str:
    """A reply only the clicker sees (the `click_reply` template), in the recipe's language
    (slack.lang when the recipe is unknown): `kind` is unknown | unauthorized | duplicate |
    busy | internal_error; `facts` are approvers (user ids), decided_by, job (busy), and for
    duplicate and busy `cancel_job` / `cancel_wait_s` (`_acting_cancel`)."""
    view = {"kind": kind, "approvers": [], "decided_by": None, "job": None,
            "cancel_job": None, "cancel_wait_s": None, **facts}
    return render(ctx, "click_reply", recipe, view)[1]


def _acting_cancel(ctx: BotContext, other: Approval | None, now: float) -> dict[str, Any]:
    """For a click refused because `other` was decided (duplicate) or is acting on its job
    (busy): when `other` is an approved cancel still in its scancel (`cancel_takeover_at`),
    its job (`cancel_job`) and how long until trainbot takes that cancel over if its click's
    process died (`cancel_wait_s`), so the reply names the wait the takeover keeps; else
    nothing."""
    due = None if other is None or other.state != "approved" else cancel_takeover_at(ctx, other)
    if other is None or due is None:
        return {}
    return {"cancel_job": str(other.target_job), "cancel_wait_s": max(due - now, 0.0)}


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
    decide = store.approvals.refuse if choice in _NEGATIVE else store.approvals.claim
    claim = decide(token, actor, now, latest_job=latest_job_of(approval))
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
                job=latest_job_of(approval), **_acting_cancel(ctx, claim.other, now)))
        done = claim.approval
        audit("duplicate", target, recipe, state=done.state if done else None)
        return ClickResult("duplicate", ephemeral=click_reply(
            ctx, recipe, "duplicate", decided_by=done.decided_by if done else None,
            **_acting_cancel(ctx, done, now)))

    if choice in _NEGATIVE:
        audit("dismissed" if choice == "dismiss" else "declined", target, recipe)
        outcome = Outcome("dismissed" if choice == "dismiss" else "kept", actor, recipe=recipe,
                          job_id=target, for_job=for_job)
        return ClickResult("declined", *decided(ctx, recipe, payload, outcome))
    try:
        result = _perform(ctx, approval, choice, actor, now,
                          besides=actor if from_home else None)
    except RunSubmitInFlight as exc:  # a resubmit refused before its sbatch: nothing done
        # the other submit carries the run (the prompt goes out of date once its job is
        # recorded); if it queues none, the prompt is still there to press again
        store.approvals.release(token)
        audit("in_flight", target, recipe, choice=choice, error=str(exc))
        return ClickResult("busy", ephemeral=click_reply(ctx, recipe, "in_flight",
                                                         error=said(exc)))
    except (ServiceError, ClusterError) as exc:
        # decided, and nothing is under way any more: the chain's other prompts may act
        store.approvals.mark_done(token, now=now)
        audit("failed", target, recipe, choice=choice, error=str(exc))
        outcome = exc.outcome if isinstance(exc, _NotPerformed) else Outcome(
            "failed", actor, "error", recipe, job_id=target, for_job=for_job, error=said(exc))
        return ClickResult("failed", *decided(ctx, recipe, payload, outcome))
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


def _probe_click(ctx: BotContext, approval: Approval, actor: str, now: float,
                 audit: Any) -> ClickResult:
    """A "Run DataLoader probe" click (bot.services.probes), already authorized: claimed once,
    then run by the scheduler's `probes` job. Its answers are the clicker's alone (the
    message it sits in is the incident, which stays as it is), but for a run that moved on:
    then, as for every button, the message says it is out of date."""
    recipe, target = approval.payload.get("recipe"), approval.target_job
    claim = ctx.store.approvals.claim(approval.token, actor, now,
                                      latest_job=latest_job_of(approval))
    if claim.claimed:
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
            **_acting_cancel(ctx, claim.other, now)))
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


@dataclass
class _Performed:
    outcome: Outcome
    job_id: str | None = None
    holds: list[int] = field(default_factory=list)
    submitted: bool = False  # a job was submitted, and after_person_submit followed it


def _perform(ctx: BotContext, approval: Approval, choice: str, actor: str,
             now: float, *, besides: str | None = None) -> _Performed:
    """Carry out a claimed choice (only ever reached once per approval). A resubmit ends as
    every person's submit does (after_person_submit), the Home tabs refreshed but `besides`'s
    (the presser's on their Home tab, which bot.services.prompt_follow_up.after_click
    publishes with what the click did)."""
    payload = approval.payload
    recipe, target = payload.get("recipe"), str(approval.target_job)
    if choice == "hold":
        hold = comp.apply_hold(ctx, approval, actor, now)
        kind: OutcomeKind = ("stale" if hold.did in ("competitor_started", "competitor_left")
                             else "approved")
        return _Performed(Outcome(kind, actor, hold.did, recipe, job_id=target,
                                  for_job=payload.get("for_job"), state=hold.state,
                                  error=hold.error), target)
    if choice in ("cancel", "cancel_resume"):
        return _cancel(ctx, approval, actor, now, resume=choice == "cancel_resume",
                       besides=besides)
    # after a fault of one node (payload "exclude"), every resubmit choice leaves it out
    overrides, extra = exclusion(ctx.config, payload["recipe"], payload.get("exclude"))
    if choice == "resubmit_mem":
        overrides, extra = {**overrides, "mem": str(payload["mem"])}, {**extra, "mem": "size"}
    try:
        result = submit_and_announce(
            ctx, payload["recipe"], actor=actor, now=now, overrides=overrides,
            chain_id=approval.chain_id, extra_overridable=extra,
            charge_retry=approval.chain_id is not None and charges_budget(ctx, approval),
            array_task=array_task_of(ctx, approval.chain_id, target),
            prompt=_prompt_said(approval), reconcile_unknown=True,
            after_job=target if approval.chain_id is not None else None,
        )  # fmt: skip
    except RunMovedOn as exc:  # resumed between the claim and this submit: out of date
        ctx.store.approvals.mark_done(approval.token, now=now)
        return _Performed(Outcome("stale", actor, "moved_on", recipe, job_id=target,
                                  for_job=payload.get("for_job"), current_job=exc.job,
                                  state=exc.state), target)
    except SubmitNotQueued as exc:
        raise _NotPerformed(Outcome("failed", actor, "not_submitted", recipe, job_id=target,
                                    job_name=exc.job_name), said(exc)) from exc
    ctx.store.approvals.mark_done(approval.token, now=now)
    outcome = Outcome("approved", actor, "resubmitted", recipe, job_id=target,
                      new_job_id=str(result.job_id), **_resumed(approval, result),
                      mem=result.overrides.get("mem"),
                      exclude=payload.get("exclude") if "exclude" in result.overrides else None,
                      not_applied=[[n.key, n.requested, n.actual] for n in result.not_applied])
    return _after_submit(ctx, approval, outcome, result, now, besides)


RESUMING_STEP = "cancel_resuming"
"""The step of an approved cancel and resume whose scancel took effect, from the resubmit on
until the approval's end: its time is the click's lease on the rest."""

UNKNOWN_CANCEL_STEP = {True: "cancel_unknown", False: "cancel_only_unknown"}
"""The step an approved cancel whose scancel's end was not seen is left in, by what it was to
do after the cancel: resume the run (Cancel and resume: True) or nothing more (Cancel)."""

CANCELLING_STEP = {True: "cancelling_to_resume", False: "cancelling"}
"""The step of an approved cancel from its click, marked before its job leaves the watch list
and its scancel is sent, by what it was to do after the cancel (as UNKNOWN_CANCEL_STEP's): its
time is the click's lease on the scancel. One with no step after it (the scancel's end not
seen, the resume begun) nor an end, once bot.core.takeover.cancel_takeover_s old (at the
longer of the click's bounds, kept with the step, and the current config's), is a click
whose process died in its scancel: bot.services.cancel_settle settles it as a cancel whose
end was not seen (`cancel_takeover_at` says when)."""


def cancel_takeover_at(ctx: BotContext, approval: Approval) -> float | None:
    """When `approval`'s cancel, left in its CANCELLING_STEP with no step after it (its
    click's scancel under way, or its process dead in it), is taken over as one whose end was
    not seen (bot.services.cancel_settle): `scancel_over_at`. None when it is in no such
    step. The takeover and the replies that name its wait both count it here."""
    steps = ctx.store.approvals.steps(approval.token)
    if any(s in steps for s in (*UNKNOWN_CANCEL_STEP.values(), RESUMING_STEP)):
        return None  # the click saw its scancel's end (or not) and went on
    return _scancel_over_at(ctx, approval, steps)


def scancel_over_at(ctx: BotContext, approval: Approval) -> float | None:
    """When `approval`'s click's scancel has ended at the latest, wherever it is now: its
    CANCELLING_STEP's time (marked before the scancel was sent) plus cancel_takeover_s at the
    longer of the bounds its click kept with the step and the current config's, the time its
    takeover comes (`cancel_takeover_at`). A settle concludes "not cancelled" only after it
    (bot.services.cancel_settle): a scancel whose end was not seen may still be running on the
    login node until then. None when the approval has no such step (not a cancel)."""
    return _scancel_over_at(ctx, approval, ctx.store.approvals.steps(approval.token))


def _scancel_over_at(ctx: BotContext, approval: Approval,
                     steps: Mapping[str, float]) -> float | None:
    marked = CANCELLING_STEP[CANCELLING_STEP[True] in steps]
    if marked not in steps:
        return None  # not cancelling
    deadlines = cluster_deadlines(ctx.config, approval.payload.get("cluster", ""))
    return steps[marked] + cancel_takeover_s(deadlines,
                                             ctx.store.approvals.bounds_of(approval.token,
                                                                           marked))


def _cancel(ctx: BotContext, approval: Approval, actor: str, now: float, *,
            resume: bool, besides: str | None = None) -> _Performed:
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
    bot.services.cancel_settle finishes it once, without a second job."""
    payload = approval.payload
    recipe, cluster, job = payload["recipe"], payload["cluster"], str(approval.target_job)
    slurm = ctx.clusters.slurm(cluster)
    _require_running(slurm, job, actor, recipe)
    bounds = step_bounds(ctx.config, cluster, slurm)  # kept with its steps, for their takeover
    ctx.store.approvals.mark_step(approval.token, CANCELLING_STEP[resume], now=now,
                                  bounds=bounds)
    watched = ctx.store.watched_jobs.get(cluster, job) if resume else None
    if watched is not None:
        ctx.store.watched_jobs.remove(cluster, job)
    try:
        slurm.cancel(int(job))
    except ClusterError as exc:
        if watched is not None:  # still running (or it may be): keep watching it
            ctx.store.watched_jobs.add(cluster, job, now=watched.added_at,
                                       chain_id=watched.chain_id, adopted=watched.adopted)
        if not isinstance(exc, OutcomeUnknown):
            raise
        step = UNKNOWN_CANCEL_STEP[resume]
        ctx.store.approvals.mark_step(approval.token, step, now=now)
        settle_s = policy_of(ctx, recipe).cancel_settle_s
        over = scancel_over_at(ctx, approval)  # the step above is marked: never None here
        over_s = settle_s if over is None else max(over - now, settle_s)
        return _Performed(Outcome("approved", actor, step, recipe, job_id=job, error=said(exc),
                                  settle_s=settle_s, over_s=over_s), job)
    if not resume:
        ctx.store.approvals.mark_done(approval.token, now=now)
        return _Performed(Outcome("approved", actor, "cancelled", recipe, job_id=job), job)
    # the rest is this click's while its step is younger than the settle's takeover: a
    # process that dies in it leaves the approval approved, finished by the next run
    # (bot.services.cancel_settle)
    ctx.store.approvals.mark_step(approval.token, RESUMING_STEP, now=now, bounds=bounds)
    performed = _resume_cancelled(ctx, approval, actor, now, besides=besides)
    ctx.store.approvals.mark_done(approval.token, now=now)
    return performed


def resume_cancelled(ctx: BotContext, approval: Approval, actor: str, now: float, *,
                     recover: bool = False) -> Outcome:
    """The rest of a cancel and resume whose job was found cancelled later (its scancel's end
    was not seen, or the click's process died): what `_resume_cancelled` did, as its outcome
    (a failed resubmit: `resubmit_failed`)."""
    try:
        return _resume_cancelled(ctx, approval, actor, now, recover=recover).outcome
    except _NotPerformed as exc:
        return exc.outcome


def _resume_cancelled(ctx: BotContext, approval: Approval, actor: str,
                      now: float, *, recover: bool = False,
                      besides: str | None = None) -> _Performed:
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
                after_job=job,
            )  # fmt: skip
        except (RunMovedOn, RunSubmitInFlight) as exc:  # another submit carries the run on
            return _Performed(carried_on(exc, actor, recipe, job, now), job)
        except (ServiceError, ClusterError) as exc:
            raise _NotPerformed(
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
    job `new_job_id`, by `by`) or one in flight (`cancel_in_flight`, by `by`, sent `sent`)."""
    if isinstance(exc, RunMovedOn):
        return Outcome("approved", actor, "cancel_moved_on", recipe, job_id=job,
                       new_job_id=exc.job, by=exc.by)
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
        raise _NotPerformed(
            Outcome("failed", actor, "not_running", recipe, job_id=job, state=state),
            N_("job %(job)s is no longer running (%(state)s)", job=job,
               state=state or N_("unknown to Slurm")))


def _after_submit(ctx: BotContext, approval: Approval, outcome: Outcome, result: SubmitResult,
                  now: float, besides: str | None) -> _Performed:
    """An approved resubmit done: what follows every person's submit (after_person_submit:
    its hold questions, the Home tabs but `besides`'s), and what the click did."""
    proposals = after_person_submit(ctx, approval.payload["recipe"], result, now,
                                    besides=besides)
    return _Performed(outcome, result.job_id, [p.competitor for p in proposals],
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
    seen = [attempt.last_iter] if attempt is not None else []
    for incident in ctx.store.incidents.for_chain(approval.chain_id or -1):
        if incident.job_id == str(approval.target_job) and incident.class_id == "hang":
            metrics = (incident.diagnosis.get("diagnosis") or {}).get("metrics") or {}
            seen.append(metrics.get("last_iter"))
    known = [int(v) for v in seen if v is not None]
    return max(known) if known else None


def expired_outcome(approval: Approval) -> Outcome:
    """What an expired prompt leaves as it is: `did` resubmit (a finished job's resubmit
    prompt), cancel (a running job's stall prompt) or hold (a competitor's hold prompt)."""
    payload = approval.payload
    choices = payload.get("choices", [])
    did = "hold" if "hold" in choices else ("cancel" if "cancel_resume" in choices
                                            else "resubmit")
    return Outcome("expired", did=did, recipe=payload.get("recipe"),
                   job_id=approval.target_job, for_job=payload.get("for_job"))
