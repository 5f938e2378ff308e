"""Submit a recipe: validate overrides, find the checkpoint to resume from, sbatch, record.

Used by `trainbot submit`, `/train submit` and `/train resume`, and by resubmits of a chain.
Where the job resumes and how it learns it: bot.services.resume_point; how the job is sent
(sbatch, or a site submit wrapper) and which overrides a wrapper's job did not get:
bot.services.send_job; what it returns: bot.services.submit_result; a submit whose answer was
lost, found on the cluster by its job name: bot.services.lost_submit. Here: one submit into
its run (one job of a run at a time, a person's submit kept in flight until its job is
recorded) and what it records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bot.cluster.errors import OutcomeUnknown
from bot.config import Config, RecipeConfig
from bot.core.nodes import left_out_beyond
from bot.core.policy import resume_start, run_latest
from bot.core.slurm.array_spec import task_resubmit_spec
from bot.core.text import N_, Text
from bot.crashpoint import crashpoint
from bot.services import ServiceError, UsageProblem
from bot.services.lost_submit import (
    SubmitNotSeen,
    look_again_at,
    look_up_lost_submit,
    no_run_chain,
    sent_moment,
)
from bot.services.overrides import OverrideError, apply_overrides, parse_overrides
from bot.services.ports import SFTP, Slurm, StepNotes, StoreStep
from bot.services.resume_point import find_resume_checkpoint, submit_env
from bot.services.send_job import NotApplied, send_job, wrapper_not_applied
from bot.services.submit_claim import (
    CLAIM_MARGIN_S,
    ClickHolding,
    RecipeSubmitUnderWay,
    Refused,
    claim_key,
    claim_submit,
    release_submit,
    submit_holder,
)
from bot.services.submit_deadlines import (
    flight_settled_at,
    sender_command_at_most_s,
    settle_lead_of,
)
from bot.services.submit_result import SubmitResult
from bot.store import Store, SubmitInFlight


def describe_start(result: SubmitResult, recipe: RecipeConfig) -> Text:
    """THE wording of where a submitted job starts, a sentence part: `trainbot submit` (its
    `str()`, English) and Slack's reply and thread note (translated by the renderer, the path
    escaped), in bot.core.policy.resume_start's words, the ones every resume says. A whole job
    array's first submit: each task finding its own checkpoint (the message names the array
    and its tasks); a checkpoint with its iteration (0 included): resuming from that iteration,
    its path after it; one without: resuming from that checkpoint (its path); none: starting
    from scratch, because none is complete yet or the recipe keeps none."""
    ck = result.checkpoint
    if result.array is not None and result.attempt_no == 0:
        return N_("each task finding its own checkpoint")
    if ck is not None and ck.iteration is not None:
        return N_("resuming %(start)s (`%(path)s`)", start=resume_start(ck.iteration),
                  path=ck.path)
    if ck is not None:
        return N_("resuming %(start)s", start=resume_start(None, ck.path))
    if recipe.checkpoint is not None:
        return N_("starting %(start)s", start=resume_start(None))
    return N_("starting from scratch (the recipe has no checkpoint dir)")


# --------------------------------------------------------------------------------------------
# submit


#: Who the watcher's automatic resubmits are made by (bot.services.runs.AutoResubmitter).
AUTOMATIC_ACTOR = "trainbot"
#: The incidents class of their intent rows (bot.services.watch.resubmit.AutoResubmits),
#: each tracking one automatic resubmit, due ... done.
RESUBMIT_CLASS = "resubmit"


class RunSubmitInFlight(ServiceError):
    """A submit into a run that has one in flight already (`flight`: sent, its job not
    recorded yet), refused before its sbatch: a run's jobs run one after another, and the
    one in flight may be queued already (a person's resume beside the watcher's automatic
    resubmit, two people pressing resume at once). When it was sent is said as `HH:MM UTC`
    on the day of `now` (the refused submit's), with its date (`YYYY-MM-DD HH:MM UTC`) on an
    earlier one: a row whose lookup has failed since may be days old."""

    def __init__(self, flight: SubmitInFlight, now: float):
        sent = sent_moment(flight.sent_at, now)
        if flight.actor == AUTOMATIC_ACTOR:
            reason = N_(
                "not submitted: trainbot's automatic resubmit of this run was sent at "
                "%(sent)s and its job is not recorded yet, and a run's jobs run one after "
                "another. Wait for it: the run's thread tells which job it is; check the "
                "thread before resuming again", sent=sent)
        else:
            reason = N_(
                "not submitted: <@%(actor)s>'s submit of this run was sent at %(sent)s and "
                "its job is not recorded yet, and a run's jobs run one after another. Wait "
                "for it: the run's thread tells which job it is; check the thread before "
                "resuming again", actor=flight.actor, sent=sent)
        super().__init__(reason)
        self.flight = flight


class RunMovedOn(ServiceError):
    """A resubmit after job `after` (a cancel and resume's cancelled job, a Resubmit prompt's
    job, the watcher's automatic resubmit's failed job) that would not carry its recipe on,
    refused before its sbatch: someone resumed the run meanwhile, or (`new_run`) started a
    new run of the recipe since (`/train submit`: same job name, same checkpoints), and that
    job carries it on (`job`, in Slurm state `state`, submitted by `by`; None: not known)."""

    def __init__(self, after: str, job: str, by: str | None, state: str, *,
                 recipe: str = "", new_run: bool = False) -> None:
        super().__init__(
            N_("not submitted: a new run of %(recipe)s was started since as job %(job)s, and "
               "a second copy beside it would write the same checkpoints", recipe=recipe,
               job=job) if new_run
            else N_("not submitted: the run was resumed meanwhile as job %(job)s", job=job))
        self.after, self.job, self.by, self.state = after, job, by, state
        self.new_run = new_run


def run_moved_on(store: Store, chain_id: int, recipe: str, array_task: int | None,
                 after: str) -> RunMovedOn | None:
    """Whether a resubmit after job `after` would no longer carry `recipe` on: the run's
    (`array_task`'s) latest attempt is another job now, or the recipe's current run (the
    one `/train resume` resumes: bot.store chains.latest_for_recipe) is a newer one, which
    has a job. What says so (RunMovedOn, raised by the submit), None: it would."""
    latest = run_latest(store.attempts.for_chain(chain_id), array_task)
    new_run = False
    if latest is None or latest.job_id == after:
        current = store.chains.latest_for_recipe(recipe) if recipe else None
        latest = (store.attempts.latest(current.id)
                  if current is not None and current.id != chain_id else None)
        if latest is None:
            return None
        new_run = True
    by = next((e.actor for e in store.audit.recent(20, job_id=latest.job_id)
               if e.action == "submit" and e.result == "ok"), None)
    return RunMovedOn(after, latest.shown_id, by, latest.state, recipe=recipe, new_run=new_run)


def _array_of_submit(recipe_name: str, recipe: RecipeConfig, chain: Any,
                     array_task: int | None) -> RecipeConfig:
    """The recipe as this submit runs it: a task's resubmit is the one-task array
    `--array=N` of the array's chain; a whole array is submitted into a new chain only."""
    if array_task is None:
        if recipe.array is not None and chain is not None:
            raise UsageProblem(N_(
                "recipe %(recipe)r submits a job array (%(array)s): `/train submit %(recipe)s` "
                "submits the whole array again, and a failed task is resubmitted alone from "
                "its incident (Resubmit) or automatically", recipe=recipe_name,
                array=recipe.array))
        return recipe
    if recipe.array is None:
        raise UsageProblem(N_("recipe %(recipe)r submits no job array (no `array:`); task "
                              "%(task)s cannot be resubmitted alone", recipe=recipe_name,
                              task=array_task))
    if chain is None or chain.kind != "array":
        raise UsageProblem(N_("task %(task)s of %(recipe)r is resubmitted into its array's "
                              "own run, not into another one: use the Resubmit button of the "
                              "task's incident", task=array_task, recipe=recipe_name))
    return recipe.model_copy(update={"array": task_resubmit_spec(array_task)})


def submit_recipe(
    config: Config,
    recipe_name: str,
    *,
    overrides: Sequence[str] | Mapping[str, str] = (),
    slurm: Slurm,
    sftp: SFTP,
    store: Store,
    now: float,
    actor: str,
    chain_id: int | None = None,
    charge_retry: bool = False,
    array_task: int | None = None,
    reconcile_unknown: bool = False,
    intent: str | None = None,
    channel: str | None = None,
    after_job: str | None = None,
    clock: Callable[[], float] | None = None,
    claim_holder: str | None = None,
    steps: StepNotes | None = None,
) -> SubmitResult:
    """Submit `recipe_name` (resuming from its latest complete checkpoint) and record it.

    With `chain_id` the job is the next attempt of that chain (a resubmit); otherwise a new
    chain is started. `charge_retry` counts the resubmit against the chain's retry budget in
    the transaction that records the attempt. A resubmit into a chain the policy stopped
    (budget spent, no progress) re-opens it: someone chose to go on with this run. A
    `target_iter=` override is the run's target from then on, its resubmits' too (kept with
    the chain: bot.core.models.run_target). Every outcome, including a refused submit, goes
    to the audit log.

    An array recipe (`array:`) starts an "array" chain: the whole array is watched under its
    id, each task becoming an attempt row as it starts (bot.services.watch.tick). With
    `array_task` (and the array's `chain_id`) only that task is resubmitted, as a new
    one-task array (`--array=N`) from the task's own checkpoint; its attempt row is `NEW_N`.

    `reconcile_unknown` (a person's submit: `/train submit|resume`, a Resubmit button): a
    submit whose end was not seen (OutcomeUnknown) is looked up by its job name at once
    (`bot.services.lost_submit`, as the watcher's automatic resubmit does after a crash): the
    job found is recorded, watched and returned as sbatch's answer would have been; none
    found yet raises SubmitNotSeen (an overloaded controller may still queue it: its row in
    flight is kept and looked up again once its bound passed); a lookup that fails raises
    the OutcomeUnknown again, saying so. Without it the OutcomeUnknown goes up
    as it came (the automatic resubmit reconciles it through its own intent row). A person's
    submit is also kept in `submits_in_flight` from just before its sbatch until its job is
    recorded (or is known not to have gone through), with `channel`, where they asked: a job
    whose submit the bot died in, or whose lookup failed, is found by its name and recorded
    later (bot.services.runs.recover_submits_in_flight). `intent`, the key of what the
    submit carries out (the watcher's automatic resubmit's intent row, a cancel and resume's
    approval), is kept on that row, and keeps a submit there too without
    `reconcile_unknown` (the automatic resubmit): the recovery of a resubmit the bot died in
    (bot.services.runs.lost_resubmit) records the job it left as submitted when its sbatch was
    sent and forgets its row alone, never a person's submit of the same run. A submit into a
    run (`chain_id`, `array_task`) that has one in flight already is refused before its
    sbatch (RunSubmitInFlight, saying whose and since when): one job of a run at a time.
    `after_job` (a cancel and resume's cancelled job, a Resubmit prompt's job): the run's
    latest attempt must still be that job once the submit is in flight, and the run the
    recipe's current one, else it is refused before its sbatch (RunMovedOn: the run was
    resumed meanwhile, its submit recorded, or a new run of the recipe was started since;
    `run_moved_on`; checked after the in-flight row is added, so a resume either is seen here
    or is refused by the row). `clock` (default: `now` throughout) tells when the sbatch is
    sent: `now` and the whole seconds the clock says passed since this call began, read once
    the checkpoint is found (its lookup may outlast the row's bound), is the time the row in
    flight and the attempt keep, from which its lookups are counted.

    The submit holds its run's claim (bot.services.submit_claim) from just before its sbatch
    until its job is recorded, or nothing was sent: a crossing submit (a new run of the
    recipe, the same run or task) is refused before its sbatch (RecipeSubmitUnderWay). A
    submit whose job may be queued and is not recorded (an OutcomeUnknown after its sbatch
    left, the process stopping, its record failing) keeps it until it lapses by its hold
    (its row in flight, kept, stands against crossing submits until its recovery settles
    it). `steps` (a Slack handler's: its context's) is told of the row in flight once
    added (StoreStep `in_flight`, when its recovery settles it if no sbatch is sent), and
    that it is undone once the submit removes the row again.
    `claim_holder`: the holder of that claim the caller took already (a cancel and
    resume's, before its scancel), which this submit holds on to and ends as its own.
    """
    if charge_retry and chain_id is None:
        raise ValueError("only a resubmit into an existing chain can be charged")
    started = clock() if clock is not None else now  # `now`, by the clock
    try:
        recipe = config.recipe(recipe_name)
    except KeyError as exc:
        raise UsageProblem(str(exc.args[0])) from None
    try:
        typed = parse_overrides(recipe_name, recipe, overrides)
        effective = apply_overrides(recipe, typed)
    except OverrideError as exc:
        store.audit.record(
            actor=actor, action="submit", now=now, recipe=recipe_name, result="refused",
            detail=str(exc),
        )  # fmt: skip
        raise
    job_name = effective.job_name or recipe_name
    chain = store.chains.get(chain_id) if chain_id is not None else None
    if chain_id is not None and chain is None:
        raise UsageProblem(no_run_chain(chain_id, recipe_name))
    effective = _array_of_submit(recipe_name, effective, chain, array_task)
    whole_array = effective.array is not None and array_task is None

    found_by_name = sending = held = False  # held: the run's submit claim (submit_claim)
    flight: SubmitInFlight | None = None  # a person's submit, kept until its job is recorded
    row_step: StoreStep | None = None  # its row, as noted in `steps`
    holder = claim_holder or submit_holder()
    key = claim_key(recipe_name, chain.id if chain is not None else None, array_task)
    try:
        checkpoint = find_resume_checkpoint(effective, sftp, array_task)
        env = submit_env(recipe_name, effective, checkpoint)
        at_most = sender_command_at_most_s(config, recipe.cluster, slurm)
        sent_at = now + (max(0, math.floor(clock() - started)) if clock is not None else 0)
        if reconcile_unknown or intent is not None:
            # read before the row: a stop's close right after it leaves it to be told
            lead = settle_lead_of(store, intent) if steps is not None else None
            added = store.submits_in_flight.add(
                cluster=recipe.cluster, recipe=recipe_name, job_name=job_name,
                chain_id=chain.id if chain is not None else None, array_task=array_task,
                resumed_at=checkpoint.iteration if checkpoint else None,
                charge_retry=charge_retry, actor=actor, channel=channel, sent_at=sent_at,
                intent=intent, command_at_most_s=at_most, holder=holder)
            if not added.new:
                raise RunSubmitInFlight(added.flight, now)
            flight = added.flight
            if steps is not None:  # settled by its recovery if no sbatch is sent
                row_step = StoreStep("in_flight", flight_settled_at(config, flight, lead))
                steps.noted(row_step)
        # held for its sbatch and, its end unseen, the lookup by name (two commands at
        # worst) from when it is taken: the checkpoint lookup may have outlasted that
        claimed_at = now + (clock() - started if clock is not None else 0.0)
        refused = claim_submit(store, recipe_name, chain.id if chain is not None else None,
                               array_task, holder=holder, own=flight, now=claimed_at,
                               hold_s=2 * at_most + CLAIM_MARGIN_S, clusters=config.clusters)
        if refused is not None:
            raise under_way(config, store, recipe_name, refused, now)
        held = True
        if after_job is not None and chain is not None:
            moved = run_moved_on(store, chain.id, recipe_name, array_task, after_job)
            if moved is not None:
                raise moved
        sending = True  # from here its job may be queued: the claim stays until recorded
        try:
            job_id = send_job(slurm, effective, job_name, env)
        except OutcomeUnknown as exc:
            if flight is None:  # `trainbot submit`: its person looks
                raise
            if not reconcile_unknown:  # its intent's recovery looks it up once its bound passed
                raise SubmitNotSeen.of(exc, look_again_at(config, flight)) from exc
            job_id = look_up_lost_submit(config, recipe_name, slurm, store, exc, flight,
                                         job_name=job_name, chain=chain, array_task=array_task,
                                         sent_at=sent_at)
            found_by_name = True
        crashpoint("sbatch_returned", job_name)  # crash-safety test hook (no-op in production)
    except Exception as exc:
        if flight is not None and not isinstance(exc, OutcomeUnknown):
            # nothing was queued (refused, never sent, or looked up and not there); an
            # OutcomeUnknown here is a lookup that failed: the job is looked for again later
            store.submits_in_flight.remove(flight.id)
            _undone(steps, row_step)
        if (held or claim_holder) and not (sending and isinstance(exc, OutcomeUnknown)):
            release_submit(store, key, holder)  # nothing was queued
        not_sent = isinstance(exc, RunSubmitInFlight | RunMovedOn | RecipeSubmitUnderWay)
        store.audit.record(
            actor=actor, action="submit", now=now, recipe=recipe_name,
            result="refused" if not_sent else "failed", detail=f"{type(exc).__name__}: {exc}",
        )  # fmt: skip
        raise
    except BaseException:  # the process is stopping: its claim ends with it if its sbatch
        if (held or claim_holder) and not sending:  # was not sent (else it lapses by its
            release_submit(store, key, holder)  # hold, or is taken over once the process
        raise  # is dead)
    recorded = False
    try:
        not_applied = wrapper_not_applied(slurm, effective, job_id, typed)

        if chain is None:
            chain = store.chains.create(
                recipe=recipe_name,
                cluster=recipe.cluster,
                job_name=job_name,
                channel=config.channel_id_for(recipe_name),
                now=now,
                kind="array" if whole_array else "run",
                array_job_id=int(job_id) if whole_array else None,
                target_iter=typed.get("target_iter"),
            )
        elif "target_iter" in typed:  # the run goes on to the target this submit sets
            store.chains.set_target(chain.id, typed["target_iter"], now=now)
        attempt_no = 0  # a whole array: its tasks become attempt rows as they start
        if not whole_array:
            attempt_no = store.attempts.record(
                chain_id=chain.id,
                job_id=job_id,
                now=now,
                start_iter=checkpoint.iteration if checkpoint else None,
                checkpoint_path=checkpoint.path if checkpoint else None,
                charge_retry=charge_retry,
                # the nodes this run left out (after node faults, or a person's exclude=),
                # not the recipe's own: those are its recipe's, said nowhere in its thread
                excluded_nodes=left_out_beyond(recipe.exclude, effective.exclude),
                display_id=f"{job_id}_{array_task}" if array_task is not None else None,
                submitted_at=sent_at,
                # the --mem it was sent with (a wrapper's job that did not get an override
                # has its own), which tells a host OOM whether it had its node's whole memory
                submit_mem=not_applied.get("mem", effective.mem or ""),
            ).attempt.attempt_no
        if chain.status == "stopped":
            store.chains.set_status(chain.id, "active", now=now)
        store.watched_jobs.add(recipe.cluster, job_id, now=now, chain_id=chain.id)
        if flight is not None:
            store.submits_in_flight.remove(flight.id)
            _undone(steps, row_step)
        store.audit.record(
            actor=actor, action="submit", now=now, recipe=recipe_name, job_id=job_id, result="ok",
            detail={
                "chain_id": chain.id, "attempt_no": attempt_no,
                **({"found_by_name": True} if found_by_name else {}),
                **({"array": effective.array} if effective.array is not None else {}),
                "overrides": {k: v for k, v in typed.items() if k not in not_applied},
                "resume_from": checkpoint.path if checkpoint else None,
                **({"not_applied": {k: {"requested": str(typed[k]), "job_has": v}
                                    for k, v in not_applied.items()}} if not_applied else {}),
            },
        )  # fmt: skip
        recorded = True
        return SubmitResult(
            job_id=job_id,
            chain_id=chain.id,
            attempt_no=attempt_no,
            job_name=job_name,
            checkpoint=checkpoint,
            overrides={k: v for k, v in typed.items() if k not in not_applied},
            not_applied=tuple(NotApplied(k, str(typed[k]), v) for k, v in not_applied.items()),
            display_id=f"{job_id}_{array_task}" if array_task is not None else None,
            array=effective.array,
        )
    finally:  # recorded: the run's next submit may go (its job queued and not recorded, the
        if recorded:  # store failed or the process stops: the claim lapses by its hold)
            release_submit(store, key, holder)


def _undone(steps: StepNotes | None, step: StoreStep | None) -> None:
    """Tell `steps` that the store step it was told of (`step`) is undone: no longer there
    for a retry to meet."""
    if steps is not None and step is not None:
        steps.undone(step)


def under_way(config: Config, store: Store, recipe: str, refused: Refused,
              now: float) -> RecipeSubmitUnderWay:
    """The refusal of a submit of `recipe` that `refused.other` stands against (the submit
    holding the claim, or an older one kept in flight: bot.services.submit_claim), naming it
    and the run it goes into, and for a row kept in flight when its recovery looks its job up
    (flight_settled_at; now, once that is past; a row on a cluster no longer configured: that it
    is not looked up until the cluster is configured again), or the Cancel and resume click
    whose claim it is (`refused.click`: who pressed it on which job, when); else unnamed (a
    submit that keeps no row in flight)."""
    other, run_job = refused.other, None
    if other is not None and other.chain_id is not None:
        latest = run_latest(store.attempts.for_chain(other.chain_id), other.array_task)
        run_job = latest.shown_id if latest is not None else None
    approval = store.approvals.get(refused.click) if refused.click else None
    click = None
    if other is None and approval is not None and approval.decided_by is not None:
        click = ClickHolding(approval.decided_by, str(approval.target_job),
                             sent_moment(approval.decided_at or now, now))
    kept = other if refused.kept else None
    gone = kept.cluster if kept is not None and kept.cluster not in config.clusters else None
    looked_up_at = None
    if kept is not None and gone is None:  # a cancel and resume's: once its settle's lead
        settled = flight_settled_at(config, kept, settle_lead_of(store, kept.intent))
        looked_up_at = sent_moment(max(now, settled), now)
    return RecipeSubmitUnderWay(recipe, other, run_job,
                                sent_moment(other.sent_at, now) if other else "", click,
                                looked_up_at, gone)
