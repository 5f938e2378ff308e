"""Start a run and say so in its thread: submit a recipe (or resubmit into its chain) and
open / continue the run's thread. Used by `/train submit|resume`, an approved Resubmit
button and the watcher's automatic retries alike (`AutoResubmitter`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bot.config import Config, OverrideType, RecipeConfig
from bot.core.checkpoints import Checkpoint
from bot.core.incident import ResolutionView, ResumePoint, build_resolution
from bot.core.nodes import excluding, hostlist_nodes
from bot.core.policy import Decision, run_latest, run_rows
from bot.core.slurm.job_ref import array_task_in
from bot.core.text import N_
from bot.services.access import unwatched_submit_key
from bot.services.lost_submit import (
    SubmitNotSeen,
    adopt_unrecorded_submit,
    find_lost_submit,
    look_again_at,
    record_found_submit,
    recorded_result,
    sent_moment,
)
from bot.services.ports import SFTP, Abandon, BotContext, ClusterSessions, LeaseLost, RenderError
from bot.services.resume_point import find_resume_checkpoint
from bot.services.submit import (
    AUTOMATIC_ACTOR,
    RESUBMIT_CLASS,
    RunSubmitInFlight,
    describe_start,
    submit_recipe,
)
from bot.services.submit_claim import RecipeSubmitUnderWay
from bot.services.submit_deadlines import (
    flight_in_flight_s,
    flight_settled_at,
    in_flight_s,
    settle_lead_of,
)
from bot.services.submit_result import SubmitResult
from bot.services.threads import (
    has_thread,
    keep_reply,
    open_thread,
    post_or_keep,
    refresh_root,
    render,
    thread_message,
    thread_note,
)
from bot.store import Attempt, SubmitInFlight

log = logging.getLogger(__name__)

class LazySFTP:
    """Opens the cluster's SFTP channel only when the checkpoint lookup needs it."""

    def __init__(self, clusters: ClusterSessions, cluster: str):
        self._clusters = clusters
        self._cluster = cluster
        self._sftp: SFTP | None = None

    def __getattr__(self, name: str) -> Any:
        if self._sftp is None:
            self._sftp = self._clusters.sftp(self._cluster)
        return getattr(self._sftp, name)


def submit_and_announce(
    ctx: BotContext,
    recipe: str,
    *,
    actor: str,
    now: float,
    overrides: Mapping[str, str] | None = None,
    chain_id: int | None = None,
    extra_overridable: Mapping[str, OverrideType] | None = None,
    channel: str | None = None,
    charge_retry: bool = False,
    before_announce: Callable[[SubmitResult], None] | None = None,
    array_task: int | None = None,
    prompt: ResumePoint | None = None,
    reconcile_unknown: bool = False,
    intent: str | None = None,
    after_job: str | None = None,
    claim_holder: str | None = None,
) -> SubmitResult:
    """Submit (or resubmit into `chain_id`) and open / continue the run's thread.

    `extra_overridable` widens the recipe's overridable keys for this one submit: an approver
    approving "Resubmit with --mem=…" may change what a plain submitter may not.
    `charge_retry`: count this resubmit against the chain's retry budget, recorded with the
    attempt (submit_recipe), so the root the thread is told with already shows it; the caller
    decides (bot.services.approved_choices.charges_budget, or the policy's `Decision.charged`).
    `before_announce(result)` runs after the submit is recorded and before the thread is
    told (bookkeeping the thread's messages read, e.g. the work a cancelled attempt lost).
    `array_task`: resubmit only that task of the chain's array (bot.services.submit).
    `prompt`: where the approved prompt's button said it would resume (None: no prompt); the
    checkpoint is looked up again now, and the resolution says so when it differs.
    `reconcile_unknown`: a person's submit, whose end when not seen is looked up by its job
    name at once (bot.services.submit.submit_recipe): a job found is recorded and announced as
    any submit. `intent`: the key of what the submit carries out, kept with it in
    `submits_in_flight` until its job is recorded (the watcher's automatic resubmit, a cancel
    and resume: bot.services.submit.submit_recipe), whose recovery (`lost_resubmit`) forgets
    that row alone. `after_job`: the job the run's latest attempt must still be (a cancel and
    resume's cancelled job, a Resubmit prompt's job), else nothing is submitted
    (bot.services.submit.RunMovedOn). `claim_holder`: the holder of the run's submit claim
    the caller took already (a cancel and resume's: bot.services.submit.submit_recipe).
    """
    config = ctx.config
    if extra_overridable:
        config = _widen(config, recipe, extra_overridable)
    cluster = config.recipe(recipe).cluster
    result = submit_recipe(
        config,
        recipe,
        overrides=dict(overrides or {}),
        slurm=ctx.clusters.slurm(cluster),
        sftp=LazySFTP(ctx.clusters, cluster),
        store=ctx.store,
        now=now,
        actor=actor,
        chain_id=chain_id,
        charge_retry=charge_retry,
        array_task=array_task,
        reconcile_unknown=reconcile_unknown,
        intent=intent,
        channel=channel,
        after_job=after_job,
        clock=ctx.clock,
        claim_holder=claim_holder,
        steps=ctx.steps,
    )
    if before_announce is not None:
        before_announce(result)
    try:
        announce_submit(ctx, recipe, result, actor, channel, prompt=prompt)
    except RenderError as exc:  # a template bug must not hide a job that was submitted
        log.error("chain %s: job %s submitted but not announced: %s", result.chain_id,
                  result.job_id, exc)
    return result


#: The step after a person's submit is recorded and announced, (ctx, recipe, result, now):
#: bot.services.after_submit.after_person_submit, which the composition root gives the recovery of
#: the submits the bot died in.
AfterSubmit = Callable[[BotContext, str, SubmitResult, float], object]


def recover_submits_in_flight(ctx: BotContext, now: float, *,
                              after_submit: AfterSubmit) -> None:
    """A person's submits the bot died in (killed between sending the sbatch and recording
    its job), or whose job could not be looked up when its end was not seen: each one sent
    its `flight_in_flight_s` ago or more (its cluster's in_flight_s, each command counted at
    its sender's bound kept on the row when longer: its own deadlines have passed, a jump
    host or a timeout taken out of the config since or not) is looked up by
    its job name (`find_lost_submit`: a job of that name submitted since, that no attempt
    records). A job found is recorded as the
    run's (a new run's chain is started for it), watched and announced in its thread, and
    goes through `after_submit` (bot.services.after_submit.after_person_submit: its holds, the Home
    tabs) once, as the submit would have; none found (nothing was queued) forgets the
    submit and says so in the run's thread, once (whose submit, when it was sent, that the
    run can be resumed again). A lookup that fails keeps it for the next run of this job
    (bot.app.build_scheduler's `submits`). The watcher's automatic resubmits in flight (made
    by AUTOMATIC_ACTOR) are left to their own recovery while their intent row leads it
    (`_resubmit_leads`: AutoResubmitter.recover, through lost_resubmit), and so is a cancel
    and resume's resubmit whose approval is still approved (`_settle_leads`, for at most its
    cluster's settle_lead_s), so no job is recorded, and no submit followed up (its Home tabs
    refreshed), by two. An automatic one
    nothing leads any more (its intent dropped, done, back to due or gone, its run's chain
    gone, its recipe no longer configured, a row written before intents) is looked up here as
    a person's is, without the person's follow-up: a row in flight refuses every other submit
    of its run (RunSubmitInFlight), so none may outlive its submit. A row whose recipe is no
    longer configured is looked up too: none found, it is forgotten; a job found keeps it
    until the recipe is back (`_unconfigured`): the lookup by job name, not the config, says
    whether the run has a job. A row on a cluster no longer configured is not looked up until
    it is configured again (`_gone_cluster`)."""
    for flight in ctx.store.submits_in_flight.elsewhere(ctx.config.clusters):
        _gone_cluster(ctx, flight)
    for cluster in ctx.config.clusters:
        sent_before = now - in_flight_s(ctx.config, cluster)  # each row's bound is as long
        for flight in ctx.store.submits_in_flight.sent_before(cluster, sent_before):
            if now - flight.sent_at < flight_in_flight_s(ctx.config, flight):
                continue  # its sender counted longer commands (a jump host since removed)
            if _resubmit_leads(ctx, flight) or _settle_leads(ctx, flight, now):
                continue
            try:
                _recover_submit(ctx, flight, now, after_submit)
            except LeaseLost:
                raise  # another replica runs the job now
            except Exception as exc:  # noqa: BLE001 - kept, looked up again next time
                log.warning("submit of %s (recipe %s) sent at %.0f: cannot look it up yet: %s",
                            flight.job_name, flight.recipe, flight.sent_at, exc)


def _gone_cluster(ctx: BotContext, flight: SubmitInFlight) -> None:
    """A submit kept in flight on a cluster no longer configured: nothing reaches that cluster
    to look its job up, so it is kept, and it refuses the submits of its own key
    (bot.services.submit_claim._stands_against) until the cluster is configured again and
    its recovery settles it. Warned of once per row in a process, at debug after that
    (nothing changes on its own: every recovery tick would say it again)."""
    if flight.chain_id is None:
        refused = f"every new run of {flight.recipe}"
    else:
        task = f", task {flight.array_task}" if flight.array_task is not None else ""
        refused = f"every resubmit of its run (chain {flight.chain_id}{task})"
    ctx.once.warn_once(log, f"gone-cluster:{flight.id}:{flight.sent_at:.0f}",
                       "submit of %s (recipe %s) sent at %.0f is kept in flight on cluster %s, "
                       "which is no longer configured: its job is not looked up until that "
                       "cluster is configured again, and until then it refuses %s",
                       flight.job_name, flight.recipe, flight.sent_at, flight.cluster, refused,
                       later=logging.DEBUG)


def _settle_leads(ctx: BotContext, flight: SubmitInFlight, now: float) -> bool:
    """Whether `flight` is a cancel and resume's resubmit whose approval is still approved,
    before its settle's lead has passed (flight_settled_at: its cluster's settle_lead_s since
    it was sent, counted at the bounds its settle's steps keep, as
    bot.services.cancel_settle.takeover_s counts them): its click, or the settle that takes
    the click over once it died (bot.services.cancel_settle, through lost_resubmit),
    records, announces and follows up the job it left, once. Its approval done (its
    resubmit's lookup failed: nothing settles it any more), or still approved past that
    bound (a settle that cannot finish: Slurm no longer knows the cancelled job), the job is
    this recovery's to look up, so the row never refuses the run's submits for ever."""
    lead = settle_lead_of(ctx.store, flight.intent)
    if lead is None:
        return False
    if now < flight_settled_at(ctx.config, flight, lead):
        return True
    log.warning("submit of %s sent at %.0f: its cancel and resume (prompt %s) is still "
                "approved and unsettled; looked up here", flight.job_name, flight.sent_at,
                lead.token)
    return False


def _resubmit_leads(ctx: BotContext, flight: SubmitInFlight) -> bool:
    """Whether `flight` is the watcher's automatic resubmit whose own recovery still takes it
    up: its intent row (kept as `intent`; a row written before intents: any automatic
    resubmit's of its run) is `submitting`, its run's chain is there, on the row's cluster,
    and its recipe is configured (bot.services.watch.resubmit.AutoResubmits.run_due then
    calls lost_resubmit on it). Otherwise nothing else would ever forget the row."""
    if flight.actor != AUTOMATIC_ACTOR or flight.chain_id is None:
        return False
    chain = ctx.store.chains.get(flight.chain_id)
    if chain is None or chain.cluster != flight.cluster or flight.recipe not in ctx.config.recipes:
        return False
    if flight.intent is not None:
        intent = ctx.store.incidents.get(flight.intent)
        return intent is not None and intent.state == "submitting"
    return any(i.state == "submitting" and i.class_id == RESUBMIT_CLASS
               for i in ctx.store.incidents.for_chain(flight.chain_id))


def _recover_submit(ctx: BotContext, flight: SubmitInFlight, now: float,
                    after_submit: AfterSubmit) -> None:
    store = ctx.store
    unconfigured = flight.recipe not in ctx.config.recipes
    last = ctx.kept_looked_up.get(_kept_key(flight)) if unconfigured else None
    if last is not None and now - last < flight_in_flight_s(ctx.config, flight):
        return  # kept for its job, looked up lately: not again each run (`_unconfigured`)
    chain = store.chains.get(flight.chain_id) if flight.chain_id is not None else None
    recorded = _recorded_since(store.attempts.for_chain(chain.id), flight) \
        if chain is not None and not unconfigured else None
    if chain is not None and recorded is not None:  # its sender (or a recovery) died after
        if recorded.result is None:  # recording it: watched, announced and followed up here
            store.watched_jobs.add(flight.cluster, recorded.job_id, now=now, chain_id=chain.id)
        _recovered(ctx, flight, recorded_result(recorded, chain.job_name), now, after_submit)
        return
    job_id = find_lost_submit(ctx.config, flight.recipe, ctx.clusters.slurm(flight.cluster),
                              store, job_name=flight.job_name, chain=chain,
                              array_task=flight.array_task, sent_at=flight.sent_at,
                              cluster=flight.cluster)
    if unconfigured:
        _unconfigured(ctx, flight, job_id, now)
        return
    recipe = ctx.config.recipe(flight.recipe)
    if job_id is None:
        log.info("submit of %s sent at %.0f: no job of that name since; nothing was queued",
                 flight.job_name, flight.sent_at)
        if chain is not None:  # said once by its key (ids may be reused: with the time),
            key = f"submit-not-queued:{flight.id}:{flight.sent_at:.0f}"  # before it is forgotten
            thread_note(ctx, chain.id, key, render(ctx, "train_reply", flight.recipe, {
                "kind": "submit_not_queued", "actor": flight.actor,
                "automatic": flight.actor == AUTOMATIC_ACTOR,
                "sent": sent_moment(flight.sent_at, now)})[1])
        store.submits_in_flight.remove(flight.id)
        return
    later = _attempt_after(store.attempts.for_chain(chain.id), flight.array_task, job_id) \
        if chain is not None else None
    if chain is not None and later is not None:
        _tell_unwatched(ctx, flight, chain.id, job_id, later, now)
        return
    if chain is None:  # the submit started a new run
        whole_array = recipe.array is not None
        chain = store.chains.create(
            recipe=flight.recipe, cluster=flight.cluster, job_name=flight.job_name,
            channel=ctx.config.channel_id_for(flight.recipe), now=now,
            kind="array" if whole_array else "run",
            array_job_id=int(job_id) if whole_array else None)
    result = record_found_submit(
        ctx.config, flight.recipe, chain_id=chain.id, job_id=job_id,
        sftp=LazySFTP(ctx.clusters, flight.cluster), store=store, now=now,
        resumed_at=flight.resumed_at, charge_retry=flight.charge_retry,
        array_task=flight.array_task, actor=flight.actor, found="found_after_lost_submit",
        submitted_at=flight.sent_at)
    _recovered(ctx, flight, result, now, after_submit)


def _recorded_since(attempts: list[Attempt], flight: SubmitInFlight) -> Attempt | None:
    """The run's (`flight.array_task`'s, or the chain's) attempt recorded as submitted when
    `flight` was sent (its sender and its recovery both record the row's `sent_at`): the one
    its sender, or a recovery of it, recorded before it died, the row still there. A job
    submitted into the run since by another path (a trainbot that did not keep rows in
    flight) is not it: the lost one is looked for by name below it. None: none."""
    return next((a for a in run_rows(attempts, flight.array_task)
                 if a.submitted_at == flight.sent_at), None)


def _recovered(ctx: BotContext, flight: SubmitInFlight, result: SubmitResult, now: float,
               after_submit: AfterSubmit) -> None:
    """The job of `flight` is recorded and watched (`result`): the row is forgotten, and the
    run that forgot it announces the job and (a person's submit) follows it up."""
    if not ctx.store.submits_in_flight.remove(flight.id):
        return  # forgotten by another run of the recovery, which goes on with it
    # only the run that forgot the submit goes on: its post-submit step happens once (a crash
    # before it leaves it undone, as it does a submit's that recorded its job)
    log.warning("submit of %s sent at %.0f: found its job %s and recorded it",
                flight.job_name, flight.sent_at, result.job_id)
    announce_submit(ctx, flight.recipe, result, flight.actor, flight.channel)
    if flight.actor != AUTOMATIC_ACTOR:  # the watcher's resubmit has no person's follow-up
        after_submit(ctx, flight.recipe, result, now)


def _unconfigured(ctx: BotContext, flight: SubmitInFlight, job_id: str | None,
                  now: float) -> None:
    """A submit in flight of a recipe no longer configured, looked up by its job name at `now`
    (`job_id`: the job found, None: none): with no job it is forgotten; a job found cannot be
    recorded as the recipe's (how it runs, an array or not, where it resumes from are the
    recipe's), so the row is kept, and once the recipe is configured again the next recovery
    records that job as the run's, as it does any: forgetting it would let a resume queue a
    second job of the run beside it. A kept row is looked up again only once its cluster's
    in_flight_s has passed (`ctx.kept_looked_up`; the recoveries between skip it: a recipe
    gone for good costs one lookup per in_flight_s, not one each policy tick), until its job
    is gone (forgotten) or its recipe is back (a restart: looked up at once). The warning is
    said once per row in a process, the later lookups' at info."""
    key = _kept_key(flight)
    if job_id is None:
        log.warning("submit of %s sent at %.0f: recipe %s is no longer configured and no job "
                    "of that name was queued since; forgotten", flight.job_name, flight.sent_at,
                    flight.recipe)
        ctx.store.submits_in_flight.remove(flight.id)
        ctx.kept_looked_up.pop(key, None)
        return
    ctx.kept_looked_up[key] = now
    ctx.once.warn_once(log, key, "submit of %s sent at %.0f: its job %s is on the cluster, but "
                       "recipe %s is no longer configured; kept until it is, then recorded as "
                       "the run's", flight.job_name, flight.sent_at, job_id, flight.recipe)


def _kept_key(flight: SubmitInFlight) -> str:
    """The key a submit in flight kept for its job is remembered by (`_unconfigured`): its
    id with its sent time (ids may be reused)."""
    return f"unconfigured:{flight.id}:{flight.sent_at:.0f}"


def _attempt_after(attempts: list[Attempt], array_task: int | None,
                   job_id: str) -> Attempt | None:
    """The run's (`array_task`'s, or the chain's) first attempt submitted after job `job_id`
    (job ids only grow), None: none."""
    return next((a for a in run_rows(attempts, array_task)
                 if a.job_id.isdigit() and int(a.job_id) > int(job_id)), None)


def _tell_unwatched(ctx: BotContext, flight: SubmitInFlight, chain_id: int, job_id: str,
                    later: Attempt, now: float) -> None:
    """The lost submit's job `job_id`, found after `later` was submitted into its run (a
    second submit made before the bot recovered the first): a run's jobs run one after
    another, so it is not recorded as an attempt nor watched, and nothing is done to it; the
    run's thread says it is queued under the run's name and how to cancel it."""
    shown = f"{job_id}_{flight.array_task}" if flight.array_task is not None else job_id
    # posted once by its key, before the submit is forgotten: a crash in between tells again
    thread_message(ctx, chain_id, unwatched_submit_key(job_id), "submitted", {
        "recipe": flight.recipe, "job_id": shown, "raw_job_id": job_id,
        "job_name": flight.job_name, "actor": flight.actor,
        "automatic": flight.actor == AUTOMATIC_ACTOR,
        "later_job": later.shown_id, "overrides": [], "not_applied": [], "also_queued": True})
    if not ctx.store.submits_in_flight.remove(flight.id):
        return
    log.warning("submit of %s sent at %.0f: found its job %s by name, but job %s was "
                "submitted into the run after it; %s is not watched", flight.job_name,
                flight.sent_at, job_id, later.job_id, job_id)
    ctx.store.audit.record(
        actor=flight.actor, action="submit", now=now, recipe=flight.recipe, job_id=job_id,
        result="not_recorded", detail={"chain_id": chain_id, "later_job": later.job_id,
                                       "found_after_lost_submit": True})  # fmt: skip


def _widen(config: Config, recipe: str, extra: Mapping[str, OverrideType]) -> Config:
    widened = config.model_copy(deep=True)
    cfg = widened.recipes[recipe]
    cfg.overridable = {**cfg.overridable, **extra}
    return widened


def announce_submit(
    ctx: BotContext, recipe: str, result: SubmitResult, actor: str, channel: str | None,
    *, prompt: ResumePoint | None = None,
) -> None:
    """Open or continue the run's thread: the root (posted, or rewritten for the new job),
    then the first job's "submitted" note or a resumed job's resolution (which says so when
    the job resumed elsewhere than the approved `prompt` said). A root another try is
    posting now (`open_thread`'s claim: a watcher's reply, another replica) is not waited
    for, so the watcher's tick that resubmitted is not held: the note is kept for the thread
    (`keep_reply`), posted under that root once it is there; so is it when this try of the
    root failed for now (a 5xx, a rate limit outlasting the retries), the root tried again
    with it, and when Slack did not take the note in a thread that is there (`post_or_keep`).
    A root Slack refused, or with no channel to go to, keeps no note."""
    if ctx.sink is None:
        return
    chain_id = result.chain_id
    threaded = has_thread(ctx, chain_id)
    if threaded:
        refresh_root(ctx, chain_id)
    else:
        target = ctx.config.channel_id_for(recipe) or channel
        if target is None:
            log.warning("no channel for %s's thread: set recipes.%s.channel", recipe, recipe)
            return
        rooted = open_thread(ctx, chain_id, target)
        if rooted.refused is not None or rooted.no_channel is not None:
            return
        threaded = rooted.open
    # a task's resubmit resolves that task's previous attempt
    attempts = run_rows(ctx.store.attempts.for_chain(chain_id),
                        array_task_in(result.display_id))
    previous = next((a for a in reversed(attempts) if a.attempt_no < result.attempt_no), None)
    if previous is None:
        key = f"chain:{chain_id}:attempt:{result.attempt_no}:submitted"
        blocks, text = render(ctx, "submitted", recipe,
                              submitted_view(recipe, result, actor, ctx.config.recipe(recipe)))
    else:
        key = f"resolution:{result.job_id}"
        current = next((a for a in attempts if a.attempt_no == result.attempt_no), None)
        blocks, text = render(ctx, "resolution", recipe, resolution_view(
            recipe, result, actor, previous, prompt,
            left_out=current.excluded_nodes if current is not None else None))
    if threaded:
        post_or_keep(ctx, chain_id, key, blocks, text)
    else:
        keep_reply(ctx, chain_id, key, blocks, text)


def announce_unposted_roots(ctx: BotContext) -> None:
    """At startup: each run whose root message's post was begun and never confirmed (its
    intent kept: the bot stopped, or Slack failed, between announcing the run's submit and
    Slack's answer) is announced as its latest submit would have been: its root posted once
    (`open_thread`: the poster looks the intent up first, so a root Slack has is recorded,
    not sent again) and that submit's "submitted" note (a resumed job's resolution), once by
    its key (`announce_submit`), by who submitted it (its audit entry). Before, the root
    waited for the run's first reply and the note was never said. A run not trainbot's (an
    adopted job) or whose recipe is no longer configured gets its root only."""
    if ctx.sink is None:
        return
    for post in ctx.store.slack_posts.unposted():
        chain = ctx.store.chains.get(post.chain_id) if post.kind == "root" and \
            post.chain_id is not None else None
        attempts = ctx.store.attempts.for_chain(chain.id) if chain is not None else []
        if chain is None or not attempts:
            continue
        if chain.adopted or chain.recipe not in ctx.config.recipes:
            open_thread(ctx, chain.id)
            continue
        latest = attempts[-1]
        submit = next((e for e in ctx.store.audit.recent(job_id=latest.job_id)
                       if e.action == "submit" and e.result == "ok"), None)
        log.warning("chain %s: its root message was begun and never confirmed: announcing "
                    "job %s now", chain.id, latest.shown_id)
        try:
            announce_submit(ctx, chain.recipe, recorded_result(latest, chain.job_name),
                            submit.actor if submit is not None else AUTOMATIC_ACTOR,
                            chain.channel)
        except RenderError as exc:  # a template bug must not stop the other runs'
            log.error("chain %s: job %s not announced: %s", chain.id, latest.job_id, exc)


def submitted_view(recipe: str, result: SubmitResult, actor: str, recipe_config: RecipeConfig
                   ) -> dict[str, Any]:
    """What the `submitted` template shows: who, which attempt, where it starts (`start`,
    describe_start's sentence part; the checkpoint's path and iteration too), the overrides
    the job got and those a site submit wrapper did not apply."""
    ck = result.checkpoint
    return {
        "recipe": recipe,
        "job_id": str(result.job_id),
        "attempt_no": result.attempt_no,
        "job_name": result.job_name,
        "actor": actor,
        "automatic": actor == AUTOMATIC_ACTOR,
        "checkpoint_path": ck.path if ck is not None else None,
        "checkpoint_iter": ck.iteration if ck is not None else None,
        "start": describe_start(result, recipe_config),
        "overrides": [[str(k), _literal(v)] for k, v in result.overrides.items()],
        "not_applied": [[n.key, n.requested, n.actual] for n in result.not_applied],
        "array": result.array if result.attempt_no == 0 else None,  # a whole array's submit
    }


def resolution_view(recipe: str, result: SubmitResult, actor: str, previous: Attempt,
                    prompt: ResumePoint | None = None, *,
                    left_out: str | None = None) -> ResolutionView:
    """"Resumed as N (was M) from iteration K": the resolution template's view; "The prompt
    said iteration P" when the approved `prompt` said another checkpoint than where it
    resumed; the nodes its run leaves out (`left_out`, its attempt's excluded_nodes)."""
    ck = result.checkpoint
    mem = result.overrides.get("mem")
    return build_resolution(
        recipe=recipe,
        old_job_id=previous.shown_id,
        new_job_id=result.display_id or str(result.job_id),
        from_iter=ck.iteration if ck is not None else None,
        lost_iters=previous.work_lost_iters,
        lost_seconds=previous.work_lost_s,
        actor="auto" if actor == AUTOMATIC_ACTOR else actor,
        mem=str(mem) if mem is not None else None,
        prompt=prompt,
        from_checkpoint=ck.name if ck is not None else None,
        left_out=left_out,
    )


def _literal(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def array_task_of(ctx: BotContext, chain_id: int | None, job_id: str) -> int | None:
    """The task of job `job_id` when it ran in an array trainbot submitted (its chain's
    attempt row says, `123_4` → 4): what a resubmit of it reruns alone; else None."""
    chain = ctx.store.chains.get(chain_id) if chain_id is not None else None
    if chain is None or not chain.is_array or chain.adopted:
        return None
    attempt = next((a for a in ctx.store.attempts.for_chain(chain.id) if a.job_id == job_id),
                   None)
    return attempt.array_task if attempt is not None else None


def exclusion(config: Config, recipe: str, node: str | None,
              attempts: Sequence[Attempt] = ()) -> tuple[dict[str, str], dict[str, OverrideType]]:
    """A resubmit's overrides that leave out every node the run left out so far (the recipe's
    own --exclude list, each of the run's `attempts`' excluded_nodes: the nodes of its earlier
    faults) and the faulty `node`, and the key they widen; nothing when no node beyond the
    recipe's own is to be left out. A second fault never brings the first faulty node back,
    and a later resubmit (a larger --mem) keeps them out."""
    own = config.recipe(recipe).exclude or ""
    left_out = [n for text in (*(a.excluded_nodes for a in attempts), node)
                for n in hostlist_nodes(text)]
    excluded = excluding(own, left_out)
    if excluded == own:
        return {}, {}
    return {"exclude": excluded}, {"exclude": "str"}


def lost_resubmit(ctx: BotContext, cluster: str, recipe: str, chain_id: int, old_job: str, *,
                  intent: str, actor: str, now: float, resumed_at: int | None, charged: bool,
                  array_task: int | None) -> SubmitResult | None:
    """The job a resubmit of `old_job` into `chain_id` left when trainbot died in it: its
    attempt if it was recorded (watched again while it has not ended), else the job of the
    chain's name Slurm has above `old_job` and no attempt records, recorded now
    (adopt_unrecorded_submit: resumed from the newest checkpoint at or below `resumed_at`,
    charged as `charged`, submitted when the dead resubmit's sbatch was sent: the time of its
    `submits_in_flight` row, the one it kept under `intent`, the key of what it carried out
    (the watcher's intent row, a cancel and resume's approval); else now); None when Slurm has
    none and that row's bound (flight_in_flight_s) has passed since it was sent (then
    submitting is safe). Before that bound an overloaded controller may still queue the
    sbatch (one that timed out, or the dead process's): nothing is concluded, the row is
    kept and SubmitNotSeen raised, saying when to look again, as recover_submits_in_flight
    waits for a person's. That row is forgotten once it is known (the job recorded, or none
    left): this recovery took it up. Any other row in flight, a person's submit of
    the same run at that moment, is left to its own recovery (recover_submits_in_flight). A
    row written before schema 18 has no intent: the one of the run (`chain_id`,
    `array_task`) made by `actor`, who made the dead resubmit (AUTOMATIC_ACTOR, or the
    approver of a cancel and resume), is taken for it, with the time it was sent."""
    latest = run_latest(ctx.store.attempts.for_chain(chain_id), array_task)
    chain = ctx.store.chains.get(chain_id)
    in_flight = ctx.store.submits_in_flight
    flights = [*in_flight.with_intent(cluster, intent, now),  # both read by the intent's index
               *in_flight.legacy_of_run(cluster, chain_id, array_task, actor, now)]
    if latest is not None and chain is not None and latest.job_id != old_job:
        if latest.result is None:
            ctx.store.watched_jobs.add(cluster, latest.job_id, now=now, chain_id=chain_id)
        left: SubmitResult | None = recorded_result(latest, chain.job_name)
    else:
        left = adopt_unrecorded_submit(
            ctx.config, recipe, chain_id=chain_id, after_job=old_job,
            slurm=ctx.clusters.slurm(cluster), sftp=LazySFTP(ctx.clusters, cluster),
            store=ctx.store, now=now, resumed_at=resumed_at, charge_retry=charged,
            array_task=array_task, submitted_at=max((f.sent_at for f in flights), default=None))
        again = max((look_again_at(ctx.config, f) for f in flights), default=now)
        if left is None and now < again:  # Slurm may still queue it: nothing concluded yet
            raise SubmitNotSeen(
                ["sbatch"], N_("the resubmit of job %(job)s sent at %(sent)s is not on the "
                               "cluster yet; it may still be queued", job=old_job,
                               sent=sent_moment(min(f.sent_at for f in flights), now)),
                look_again_at=again)
    for flight in flights:
        ctx.store.submits_in_flight.remove(flight.id)
    return left


class AutoResubmitter:
    """The watcher's automatic resubmits of one cluster's chains, through the same submit as
    `/train resume` (same job name, same chain): `resubmit` and `recover` are the callbacks
    of bot.services.watch.resubmit.AutoResubmits."""

    def __init__(self, ctx: BotContext, cluster: str, *, actor: str = AUTOMATIC_ACTOR) -> None:
        self.ctx, self.cluster, self.actor = ctx, cluster, actor

    def resubmit(self, recipe: str, chain_id: int, decision: Decision, *,
                 intent: str) -> str | None:
        """Resubmit into the chain; after a fault of one node (`facts["exclude"]`) without it.
        Kept in `submits_in_flight` from just before its sbatch until its job is recorded, as a
        person's submit is, under `intent` (its intent row's key): a resubmit the bot died in is
        recovered (`recover`) with the time its sbatch was sent, its row alone forgotten.
        None, nothing sent, while another submit of the run is in flight (a person's resume:
        RunSubmitInFlight), or of the recipe (RecipeSubmitUnderWay: a new run, another run's
        resubmit); the watcher looks again on its next tick."""
        task = decision.facts.get("array_task")
        attempts = run_rows(self.ctx.store.attempts.for_chain(chain_id), task)
        overrides, extra = exclusion(self.ctx.config, recipe, decision.facts.get("exclude"),
                                     attempts)
        try:
            result = submit_and_announce(
                self.ctx, recipe, actor=self.actor, now=self.ctx.clock(), chain_id=chain_id,
                charge_retry=decision.charged, overrides=overrides, extra_overridable=extra,
                array_task=decision.facts.get("array_task"), intent=intent)
        except RunSubmitInFlight as exc:
            log.warning("chain %s: not resubmitted automatically: %s's submit of the run, "
                        "sent at %.0f, is in flight", chain_id, exc.flight.actor,
                        exc.flight.sent_at)
            return None
        except RecipeSubmitUnderWay as exc:  # another submit of the recipe: looked at again
            log.warning("chain %s: not resubmitted automatically: %s", chain_id, exc)
            return None
        return result.display_id or str(result.job_id)

    def recover(self, recipe: str, chain_id: int, old_job: str, decision: Decision, *,
                intent: str) -> str | None:
        """A resubmit the bot died in (of intent row `intent`): the job it left (recorded or
        not) is kept and announced (posts are idempotent by key) instead of submitting a second
        one."""
        result = lost_resubmit(self.ctx, self.cluster, recipe, chain_id, old_job, intent=intent,
                               actor=self.actor, now=self.ctx.clock(),
                               resumed_at=decision.resume_from, charged=decision.charged,
                               array_task=decision.facts.get("array_task"))
        if result is None:
            return None
        announce_submit(self.ctx, recipe, result, self.actor, None)
        return result.display_id or str(result.job_id)

    def checkpoint(self, recipe: str, task: int | None = None, *,
                   abandon: Abandon | None = None) -> Checkpoint | None:
        """The recipe's latest complete checkpoint (of an array recipe's task `task`: its
        own), None: none or the recipe keeps none (the watcher's one lookup per finished job,
        bot.services.watch.recipes). Looked up on the cluster's lookup channel (one for the
        lookups one after another, `SFTP.lookup_channel`), closed when the lookup is
        `abandon`ed (its deadline passed): a lookup given up stops at once, the next one opens
        a fresh channel, and a hung checkpoint dir never holds a channel the cluster's other
        SFTP use needs."""
        cfg = self.ctx.config.recipe(recipe)
        if cfg.checkpoint is None:
            return None
        with self.ctx.clusters.sftp(self.cluster).lookup_channel() as lease:
            if abandon is not None:
                abandon.on_abandon(lease.abandon)
            return find_resume_checkpoint(cfg, lease.sftp, task)
