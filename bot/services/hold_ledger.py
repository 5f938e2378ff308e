"""The hold ledger's settling and sayings: what becomes of a hold of a competing job once it is
let go of (bot.services.competitors holds and releases; this says and records how each hold
ended). A person's `/train hold|release` of a job trainbot holds takes it out of the ledger
(`taken_by_person`); a release that failed is recorded, said and tried again up to
MAX_RELEASE_ATTEMPTS times (`release_failed`); every outcome is said in the run's thread once
(`say_release`, templates/hold_released.json.j2). The ledger's step names live here, shared by
the holds (bot.services.competitors) and the store (bot.store.repos.approvals names them)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from bot.cluster.errors import ClusterError, CommandTimedOut, OutcomeUnknown
from bot.core.slurm.records import JobRecord
from bot.core.takeover import hold_step_takeover_s
from bot.services.ports import BotContext
from bot.services.submit_deadlines import cluster_deadlines
from bot.services.threads import (
    kept_message,
    outdate_kept,
    say_kept_message,
    thread_keeper,
    thread_message,
)
from bot.store import Approval

log = logging.getLogger(__name__)

HOLD_ACTION = "hold_competitor"

HOLD_APPROVED_STEP = "hold_approved"
"""Marked with a yes's claim (bot.services.approvals.handle_click): its hold is sent only
after its `holding` step is marked, so a release that takes that step first knows no hold
went out. A yes without it was claimed by a bot from before the `holding` step, whose hold
went out without one: released as any hold (`taken_before_its_hold`)."""
HOLDING_STEP = "holding"
HOLD_ENDED_STEP = "hold_ended"
HOLD_LANDING_STEP = "hold_landing"
"""Marked by a yes with its `holding` (apply_hold, one write), before its `scontrol hold`: that
hold may land in Slurm before `hold_ended` is marked, so a run letting go of the job meanwhile
hands it to this hold rather than release it under it (`store.approvals.pass_hold`)."""
HOLD_NOT_LANDED_STEP = "hold_not_landed"
"""Marked with `hold_ended` by a release that found the job no longer waiting before its hold
was seen to land (`hold_over`): Slurm holds no job that runs or ended, so that hold has
nothing to hand to another run's hold still landing (`store.approvals.pass_hold`)."""
HELD_BY_PERSON_STEP = "held_by_person"
"""Marked with the row a person's `/train hold` took out of the ledger (`taken_by_person`,
after their `scontrol hold` went through); "released_by_person" for a `/train release`."""


RELEASING_STEP = "releasing"
AFTER_HOLD_TOLD_STEP = "after_hold_told"
"""Marked with the kept reply that tells a thread its release went through (or may land)
after a person's `/train hold` (`tell_after_hold`)."""
MAX_RELEASE_ATTEMPTS = 3
"""`scontrol release` attempts at one hold: the first and two more, each one's failure said
once in the thread; the last one's with how to release the job by hand."""


def competitor_of(approval: Approval) -> int:
    """The competing job a hold approval is about (every one names it when made)."""
    if approval.target_job is None:
        raise ValueError(f"hold approval {approval.token} names no competing job")
    return int(approval.target_job)


def taken_by_person(ctx: BotContext, cluster: str, job_id: int, actor: str, verb: str,
                    now: float, tasks: Mapping[int, JobRecord] | None = None) -> list[int]:
    """A person's `/train hold` or `/train release` (`verb`) of job `job_id` on `cluster`,
    gone through: a hold of it trainbot keeps for a resumed job leaves the hold ledger
    (`store.approvals.settle_holds`), so trainbot's release once the resumed job starts no
    longer drops the hold the person asked for, nor tries again a release the person made;
    recorded (audit `competitor.release`, result `by_person`) and said in its run's thread.
    For an array's own id, `tasks` are its tasks' records read just before the command
    (Slurm.array_tasks): the holds trainbot keeps of its waiting tasks under their own ids
    (`scontrol hold|release ARRAY` holds or releases each) are settled as well
    (`array_task_holds`). A hold still on its way stays after a release, to be released
    once it has landed. What each thread is told is kept for it in the transaction that
    takes its row out (`settle_holds`' `keep`, rendered from the holds read just before),
    then posted: a bot that stops before the post says it after its restart (the `prompts`
    job). Returns the resumed jobs it was held for."""
    targets = sorted({str(job_id), *array_task_holds(ctx, cluster, job_id, tasks or {})})
    why = "held_by_person" if verb == "hold" else "released_by_person"
    keepers = {a.chain_id: thread_keeper(ctx, a.chain_id) for a in ctx.store.approvals
               .with_state(HOLD_ACTION, "approved") if a.target_job in targets}

    def keep(approval: Approval) -> dict[str, Any] | None:
        keeper = keepers.get(approval.chain_id)
        return None if keeper is None else keeper(*release_reply(
            approval, str(approval.payload.get("for_job")), why, None, by=actor))

    settled = ctx.store.approvals.settle_holds(
        HOLD_ACTION, targets, cluster=cluster, now=now, landed_only=verb == "release",
        step=HELD_BY_PERSON_STEP if verb == "hold" else "released_by_person", keep=keep)
    for approval in settled:
        for_job = str(approval.payload.get("for_job"))
        outdate_retry_notes(ctx, approval)
        ctx.store.audit.record(
            actor=actor, action="competitor.release", now=now,
            job_id=str(competitor_of(approval)), recipe=approval.payload.get("recipe"),
            result="by_person", detail={"for_job": for_job, "verb": verb, "as": str(job_id)},
        )  # fmt: skip
        if approval.chain_id not in keepers:  # approved after the read above: not kept
            say_release(ctx, approval, for_job, why, None, by=actor)
        elif keepers[approval.chain_id] is not None:
            say_kept_message(ctx, release_reply(approval, for_job, why, None)[0])
    return sorted({int(a.payload["for_job"]) for a in settled})


def array_task_holds(ctx: BotContext, cluster: str, array_id: int,
                     tasks: Mapping[int, JobRecord]) -> list[str]:
    """The own ids of array `array_id`'s waiting tasks, found among its `tasks` records or,
    for a hold trainbot keeps on `cluster` under an id those records do not list (squeue
    lists a waiting task split off the array's pending rest with that rest unless asked for
    one line a task), by Slurm's record of that id read now (one call): a task of the array,
    waiting. None when `tasks` is empty (`array_id` is no array's); a read that fails leaves
    out the holds it would have found (they stay trainbot's, released as before)."""
    if not tasks:
        return []
    found = {str(task) for task, rec in tasks.items() if rec.is_pending}
    unknown = sorted({int(a.target_job) for a in ctx.store.approvals.with_state(
        HOLD_ACTION, "approved") if a.payload.get("cluster") == cluster
        and a.target_job is not None and int(a.target_job) not in tasks})
    if unknown:
        try:
            records = ctx.clusters.slurm(cluster).jobs(unknown)
        except ClusterError as exc:
            log.warning("holds of array %s's tasks not read (%s); they stay trainbot's",
                        array_id, exc)
            records = {}
        found |= {str(i) for i in unknown
                  if (rec := records.get(i)) is not None and rec.array_job_id == array_id
                  and rec.is_pending}
    return sorted(found)


def say_release(ctx: BotContext, approval: Approval, for_job: str, why: str,
                state: str | None, problem: str | None = None,
                retry: tuple[int, int] | None = None, *, unknown: bool = False,
                still_held: bool = False, kept_for: str | None = None,
                by: str | None = None, after_hold: bool = False, job_now: str | None = None,
                job_state: str | None = None) -> None:
    """Say in the thread what became of held competitor `approval`'s release
    (templates/hold_released.json.j2), once: released, or failed (`problem`) and left to
    the person; or its `retry` (attempt, minutes until the next one) failed, once each;
    `unknown`: the release's end was not seen and the job was not read after it, or it
    outlived its timeout and may still land, so whether it worked is not known;
    `still_held`: its end was not seen (`problem`) and the job was read after it, still
    held; `kept_for`: not released, another run's hold keeps it held for that job; `by`:
    the person whose `/train hold` (`why` held_by_person) or `/train release`
    (released_by_person) took it out of trainbot's holds; `after_hold`: the release (`unknown`)
    may still land after a person's `/train hold` took the job out of trainbot's holds, and is
    not tried again, or went through after it (`released_after_person`: `job_now` and
    `job_state`, what Slurm's record of the job read then shows); said once, under its own
    key."""
    thread_message(ctx, approval.chain_id, *release_reply(
        approval, for_job, why, state, problem, retry, unknown=unknown, still_held=still_held,
        kept_for=kept_for, by=by, after_hold=after_hold, job_now=job_now, job_state=job_state))


def release_reply(approval: Approval, for_job: str, why: str, state: str | None,
                  problem: str | None = None, retry: tuple[int, int] | None = None, *,
                  unknown: bool = False, still_held: bool = False, kept_for: str | None = None,
                  by: str | None = None, after_hold: bool = False, job_now: str | None = None,
                  job_state: str | None = None) -> tuple[str, str, dict[str, object]]:
    """`say_release`'s reply: its key, template and view."""
    key = (f"hold-release:{approval.token}" if retry is None
           else retry_note_key(approval, retry[0])) + (":after-hold" if after_hold else "")
    return key, "hold_released", {
        "competitor": str(competitor_of(approval)), "for_job": for_job, "why": why,
        "state": state, "problem": problem, "retry_in_min": None if retry is None else retry[1],
        "unknown": unknown, "still_held": still_held, "kept_for": kept_for, "by": by,
        "after_hold": after_hold, "job_now": job_now, "job_state": job_state,
    }


def retry_note_key(approval: Approval, attempt: int) -> str:
    """The key of the reply that says held competitor `approval`'s `attempt`-th release
    failed and is tried again (`release_failed`)."""
    return f"hold-release:{approval.token}:failed:{attempt}"


def outdate_retry_notes(ctx: BotContext, approval: Approval) -> None:
    """Held competitor `approval` left the hold ledger (released, given up, taken out by a
    person's `/train hold|release`, or kept held by another run's hold): its failed
    releases' "tries again in N minutes" replies still kept, not posted (their post failed,
    or the bot stopped first), are given up (`outdate_kept`), so the `prompts` job never
    posts one after what its thread was told next."""
    for attempt in range(1, MAX_RELEASE_ATTEMPTS):
        outdate_kept(ctx, retry_note_key(approval, attempt))


def done_and_said(ctx: BotContext, approval: Approval, for_job: str, why: str,
                  state: str | None, now: float, problem: str | None = None, *,
                  unknown: bool = False) -> bool:
    """Held competitor `approval`'s release is over: its row done and what its thread is
    told of it (`say_release`'s reply under its key: "Released", or, with `problem`, its last
    failure and how to release the job by hand) kept for the thread in the
    same transaction (`store.approvals.mark_done`'s `keep`), then posted: a bot that stops
    before the post leaves it kept, posted by the `prompts` job, so the done row, out of the
    ledger, never goes unsaid. False (nothing done, nothing said) when the row is no longer
    approved: a person's `/train hold|release` took it out of trainbot's holds meanwhile
    (`taken_by_person`), whose text the thread has under that key."""
    key, template, view = release_reply(approval, for_job, why, state, problem,
                                        unknown=unknown)
    kept = kept_message(ctx, approval.chain_id, key, template, view)
    if not ctx.store.approvals.mark_done(approval.token, now=now, keep=kept):
        return False
    outdate_retry_notes(ctx, approval)
    if kept is not None:
        say_kept_message(ctx, key)
    return True


def release_failed(ctx: BotContext, approval: Approval, for_job: str, why: str,
                   state: str | None, now: float, problem: str, *, final: bool = False,
                   unknown: bool = False, still_held: bool = False) -> None:
    """The release of held competitor `approval` failed (Slurm's or ssh's words: `problem`),
    or, `unknown`, may have (its end not seen, the job not read after it or the release
    timed out and may still be running), or, `still_held`, its end was not seen and the job
    was read still held after it: recorded and said
    in the thread once per attempt (its `release_failed_N` step). Before the
    MAX_RELEASE_ATTEMPTS-th (and unless `final`) the hold stays in the ledger, its release
    tried again once its `releasing` step is due (`claim_release`), the thread told so (the
    reply kept with the step, in its transaction: `mark_step`'s `keep`); then
    it leaves the ledger, the thread told how to release the job by hand (`done_and_said`).
    A hold a person's `/train hold|release` took out of the ledger while the release was on
    its way (`taken_by_person`) is never tried again, so no retry is promised: the thread was
    told it is the person's (a settle after this read is found by the same locked write that
    marks the failure, or, at the last attempt, that takes the row out: `done_and_said`);
    after a `/train hold`, a release that may still land (`unknown`) could undo it, which is
    said, with how to hold the job again."""
    comp, token = competitor_of(approval), approval.token
    current = ctx.store.approvals.get(token)  # read before its steps: a settle marks its
    settled = current is None or current.state != "approved"  # step as it takes it out
    steps = ctx.store.approvals.steps(token)
    failures = sum(1 for step in steps if step.startswith("release_failed_"))
    final = final or settled or failures + 1 >= MAX_RELEASE_ATTEMPTS
    marked, retry = None, None
    if not final:  # marked only while still approved: a settle may have come after the read
        retry = (failures + 1, math.ceil(release_takeover_s(ctx, approval) / 60))
        kept = kept_message(ctx, approval.chain_id, *release_reply(
            approval, for_job, why, state, problem, retry, unknown=unknown,
            still_held=still_held))
        marked = ctx.store.approvals.mark_step(
            token, f"release_failed_{failures + 1}", now=now, state="approved",
            by=approval.decided_by, at=approval.decided_at, keep=kept)
        if marked is None:
            settled, final, steps = True, True, ctx.store.approvals.steps(token)
    ctx.store.audit.record(
        actor="trainbot", action="competitor.release", now=now, job_id=str(comp),
        recipe=approval.payload.get("recipe"),
        result="unknown" if unknown else "failed" if final else "retry",
        detail=problem,
    )  # fmt: skip
    if final and not settled and not done_and_said(ctx, approval, for_job, why, state, now,
                                                   problem, unknown=unknown):
        settled, steps = True, ctx.store.approvals.steps(token)  # settled after the read
    if settled:
        if unknown and HELD_BY_PERSON_STEP in steps:
            tell_after_hold(ctx, approval, now, release_reply(
                approval, for_job, why, state, problem, unknown=True, after_hold=True))
        return
    if final:
        return  # done, the thread told how to release the job by hand
    if marked and retry is not None:  # its reply kept with the step: posted now or later
        say_kept_message(ctx, release_reply(approval, for_job, why, state, problem, retry)[0])


def released_after_person(ctx: BotContext, approval: Approval, for_job: str, why: str,
                          state: str | None, now: float) -> None:
    """The `scontrol release` of held competitor `approval` went through (or its end was not
    seen and the job was read no longer held) but its row was done meanwhile: a person's
    `/train hold|release` took the job out of trainbot's holds (`taken_by_person`: the thread
    was told it is theirs). After a `/train hold` ("held_by_person", looked at first: after
    a `/train release`, nothing is said and Slurm is not asked), the release may have undone
    that hold: Slurm's record of the job is read now, and unless it is held (their hold
    stands: nothing said) the thread is told what is known, once, under its own key
    (`after_hold`): no longer held, waiting (that hold released too: how to hold it again),
    running, gone from Slurm, or in another state (ended); when it cannot be read, that the
    release may have released their hold, and how to hold the job again. Told through the
    thread's outbox (`tell_after_hold`)."""
    if HELD_BY_PERSON_STEP not in ctx.store.approvals.steps(approval.token):
        return
    try:
        rec = ctx.clusters.slurm(approval.payload["cluster"]).job(competitor_of(approval))
    except (ClusterError, KeyError):
        tell_after_hold(ctx, approval, now, release_reply(
            approval, for_job, why, state, unknown=True, after_hold=True))
        return
    if rec is not None and rec.is_held:
        return
    job_now = "gone" if rec is None else "running" if rec.is_running \
        else "released" if rec.is_pending else "other"
    tell_after_hold(ctx, approval, now, release_reply(
        approval, for_job, why, state, after_hold=True, job_now=job_now,
        job_state=rec.state if rec is not None else None))


def tell_after_hold(ctx: BotContext, approval: Approval, now: float,
                    reply: tuple[str, str, dict[str, object]]) -> None:
    """Tell held competitor `approval`'s thread that its release may have undone, or undid,
    a person's `/train hold` (`reply`: `release_reply`'s, `after_hold`), through the same
    outbox as the ledger's other replies: kept for the thread in the transaction that marks
    its AFTER_HOLD_TOLD_STEP (`mark_step`'s `keep`), then posted; a bot that stops before
    the post says it after its restart (the `prompts` job), and the step, marked once, keeps
    a second teller (a replica, a retry) from keeping it again."""
    kept = kept_message(ctx, approval.chain_id, *reply)
    if kept is None:
        return
    ctx.store.approvals.mark_step(approval.token, AFTER_HOLD_TOLD_STEP, now=now, keep=kept)
    say_kept_message(ctx, reply[0])


def handed_hold_held(ctx: BotContext, approval: Approval) -> bool | None:
    """Is held competitor `approval`, whose own `scontrol hold` failed after another run's
    hold was handed to it (`store.approvals.end_failed_hold`), held in Slurm now? That hold
    may have been undone since it was handed (seen over as the job started, a person's
    `/train release` of landed holds only), so Slurm's record is read once (one squeue and
    sacct, each within the cluster's command timeout): True when it shows the job held,
    False when not (or Slurm no longer knows it), None when it cannot be read."""
    try:
        rec = ctx.clusters.slurm(approval.payload["cluster"]).job(competitor_of(approval))
    except ClusterError as exc:
        log.info("cannot read %s after its hold failed (%s): kept as held", competitor_of(
            approval), exc)
        return None
    return rec is not None and rec.is_held


def release_takeover_s(ctx: BotContext, approval: Approval) -> float:
    """How old held competitor `approval`'s `releasing` step must be before another run
    releases it: its claimer has ended by then (`step_takeover_s`)."""
    return step_takeover_s(ctx, approval, RELEASING_STEP)


def step_takeover_s(ctx: BotContext, approval: Approval, step: str) -> float:
    """How old held competitor `approval`'s `holding` or `releasing` step must be before
    another run goes on as if its marker had died (bot.core.takeover.hold_step_takeover_s on
    its cluster's deadlines, at the bounds its marker kept when longer)."""
    return hold_step_takeover_s(
        cluster_deadlines(ctx.config, approval.payload.get("cluster", "")),
        ctx.store.approvals.bounds_of(approval.token, step),
        post_deadline_s=ctx.config.slack.post_deadline_s)


def may_still_run(exc: OutcomeUnknown) -> bool:
    """Did the command behind `exc` outlive its timeout (bot.cluster.slurm raises that
    OutcomeUnknown from its CommandTimedOut), so that it may still be running and take
    effect after a look at the job?"""
    return isinstance(exc.__cause__, CommandTimedOut)
