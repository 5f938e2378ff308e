"""Lost submits: an sbatch that ran but whose answer trainbot never got (its channel closed,
it outlived its timeout, it exited 0 with no job id trainbot could read: OutcomeUnknown; or
the bot died between the sbatch and recording its job), so the job may be queued with no
attempt recording it.

Such a submit is never simply sent again: its job is looked for on the cluster by its job
name (one squeue, then one sacct: `find_unrecorded_submit`), among jobs with an id above
every job its run recorded before the sbatch and, for a person's submit, submitted since it
was sent (`find_lost_submit`: a job of that name someone submitted by hand before is not
it). A job found is recorded as the run's next attempt and watched, as sbatch's answer would
have been (`record_found_submit`); none found means it has not been queued yet
(SubmitNotSeen), and it is looked up again once its bound has passed: none then, it most
likely did not go through. Used by bot.services.submit.submit_recipe (a person's submit,
looked up at once: `look_up_lost_submit`) and bot.services.runs (a submit in flight the bot
died in or whose lookup failed, and the watcher's automatic resubmit after a crash:
`adopt_unrecorded_submit`). A submit into a run trainbot no longer has is refused in the
words of `no_run_chain`, submit_recipe's resubmits too.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bot.cluster.errors import ChannelClosed, ClusterError, OutcomeUnknown, said
from bot.config import Config
from bot.core.checkpoints import Checkpoint
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.job_ref import parse_raw_job_ids
from bot.core.slurm.sacct import sacct_ids_by_name_argv
from bot.core.slurm.squeue import squeue_ids_by_name_argv
from bot.core.text import N_, Text
from bot.services import UsageProblem
from bot.services.fencing import read_only
from bot.services.ports import SFTP, Slurm
from bot.services.resume_point import CheckpointLookupStopped, find_resume_checkpoint
from bot.services.submit_deadlines import flight_in_flight_s
from bot.services.submit_result import SubmitResult
from bot.store import Attempt, Store, SubmitInFlight

log = logging.getLogger(__name__)


def sent_moment(sent_at: float, now: float) -> str:
    """When a submit was sent (or is looked up again), as a person reads it at `now`:
    `HH:MM UTC` on the same day, `YYYY-MM-DD HH:MM UTC` on another one."""
    sent = datetime.fromtimestamp(sent_at, UTC)
    today = sent.date() == datetime.fromtimestamp(now, UTC).date()
    return sent.strftime("%H:%M UTC" if today else "%Y-%m-%d %H:%M UTC")


class SubmitNotSeen(OutcomeUnknown):
    """A submit whose end was not seen and whose job is not on the cluster yet: an
    overloaded controller may still queue an sbatch that timed out, so nothing concludes
    that it did not go through while its row in flight is younger than its bound
    (flight_in_flight_s): the row is kept, refusing every other submit of its run, and the
    submit is looked up again at `look_again_at` (epoch seconds)."""

    def __init__(self, argv: Sequence[str], what: Text | str, *, advice: Text | str = "",
                 look_again_at: float) -> None:
        super().__init__(argv, what, advice=advice)
        self.look_again_at = look_again_at

    @classmethod
    def of(cls, lost: OutcomeUnknown, look_again_at: float, advice: Text | str = ""
           ) -> SubmitNotSeen:
        """`lost` (raise it `from` lost), looked up again at `look_again_at`, `advice`
        added to its message."""
        return cls(lost.argv, lost.what,
                   advice=lost.advised(advice).advice if advice else lost.advice,
                   look_again_at=look_again_at)


def look_again_at(config: Config, flight: SubmitInFlight) -> float:
    """When a submit in flight whose job was not found is looked up again: once its bound
    (flight_in_flight_s) has passed since it was sent, as
    bot.services.runs.recover_submits_in_flight does."""
    return flight.sent_at + flight_in_flight_s(config, flight)


def look_up_lost_submit(config: Config, recipe_name: str, slurm: Slurm, store: Store,
                        lost: OutcomeUnknown, flight: SubmitInFlight, *, job_name: str,
                        chain: Any, array_task: int | None, sent_at: float) -> str:
    """The job a submit whose end was not seen (`lost`) left, found by its name
    (`find_lost_submit`: a job of the same name someone submitted by hand before the click
    is not this submit's, and is never adopted). None there yet raises SubmitNotSeen (an
    overloaded controller may still queue it: its row in flight is kept, the run takes no
    other submit, and the person is told when trainbot looks again), and a lookup that fails
    raises `lost` again (with what the lookup said); both say when the submit is looked for
    again: its row in flight's (`flight`) bound, the one
    bot.services.runs.recover_submits_in_flight waits for (flight_in_flight_s: its sender's
    command bound when longer than the config's), which records the job then, or says in the
    run's thread that none was queued."""
    try:
        found = find_lost_submit(config, recipe_name, slurm, store, job_name=job_name,
                                 chain=chain, array_task=array_task, sent_at=sent_at)
    except (ClusterError, SlurmParseError) as exc:
        log.warning("submit of %s: its end was not seen, and looking it up failed: %s",
                    job_name, exc)
        raise lost.advised(N_(
            "Looking it up by name failed too (%(error)s): trainbot looks for it again in "
            "%(minutes)d minutes and, if it is there, records it and tells the run's thread.",
            error=said(exc),
            # rounded up: a person told N minutes never looks before the lookup does
            minutes=math.ceil(flight_in_flight_s(config, flight) / 60))) from lost
    if found is None:
        again = look_again_at(config, flight)
        raise SubmitNotSeen.of(lost, again, N_(
            "No job of that name is queued yet (not seen yet): trainbot looks again at "
            "%(at)s and, if it is there, records it and tells the run's thread; until then "
            "the run takes no other submit.", at=sent_moment(again, sent_at))) from lost
    log.warning("submit of %s: its end was not seen; found its job %s by name", job_name, found)
    return found


def find_lost_submit(config: Config, recipe_name: str, slurm: Slurm, store: Store, *,
                     job_name: str, chain: Any, array_task: int | None,
                     sent_at: float, cluster: str | None = None) -> str | None:
    """The job a person's submit whose end was not seen left, by its name (None: none): one
    that no job the run (`chain`; a new run, None: the recipe's runs of that name) records
    is, submitted once the sbatch was sent (`sent_at`, trainbot's clock), with an id above
    every job recorded before then. A job recorded since (a second submit, made before this
    one was recovered) may have a higher id: the lost one is looked for below it too.
    `cluster`: the submit's (default: the recipe's), whose user's jobs are looked at; a
    recipe no longer configured is looked up so. Raises ClusterError / SlurmParseError when
    the lookup fails."""
    if chain is not None:
        chains = [chain]
    else:
        chains = [c for c in store.chains.for_recipe(recipe_name) if c.job_name == job_name]
    before = sent_at - SUBMIT_CLOCK_MARGIN_S  # recorded before the sbatch, on any replica
    recorded = [(a.job_id, a.submitted_at) for c in chains for a in store.attempts.for_chain(c.id)]
    recorded += [(str(c.array_job_id), c.created_at) for c in chains if c.array_job_id is not None]
    known = {job for job, _ in recorded}
    after = max((int(job) for job, at in recorded if at < before and job.isdigit()), default=0)
    cluster = cluster if cluster is not None else config.recipe(recipe_name).cluster
    user = getattr(config.clusters.get(cluster), "user", None)
    return find_unrecorded_submit(slurm, job_name=job_name, user=user, after_job=str(after),
                                  known=known, array_task=array_task, submitted_since=sent_at)


def no_run_chain(chain_id: int, recipe_name: str) -> Text:
    """Why a submit into run chain `chain_id` (a resume, a Resubmit click, a lost submit's
    recovery) cannot be made: trainbot has no such chain (removed, or never recorded)."""
    return N_("trainbot has no run %(chain)s of %(recipe)r any more (removed, or never "
              "recorded), so nothing can be resubmitted into it: start a new run with "
              "`/train submit %(recipe)s`.", chain=chain_id, recipe=recipe_name)


#: How far the Slurm controller's clock may be behind trainbot's (both kept by NTP) when a
#: job's submit time is compared with the moment trainbot sent its sbatch.
SUBMIT_CLOCK_MARGIN_S = 300.0


def find_unrecorded_submit(
    slurm: Slurm, *, job_name: str, user: str | None, after_job: str, known: set[str],
    array_task: int | None = None, submitted_since: float | None = None,
) -> str | None:
    """A job named `job_name` with an id above `after_job` that no attempt records: what a
    resubmit left behind when the bot died between `sbatch` and recording the attempt.

    One squeue (queued/running) and, if nothing is there, one sacct (finished since); job ids
    only grow, so "above the failed attempt's id" means "submitted after it". With
    `array_task` the resubmit was the one-task array `--array=N`: only a job that is task N
    of an array of its own id counts (a sibling task of the original array that started
    since has the same name and a higher id, and is no resubmit). With `submitted_since`
    (epoch seconds: when the lost sbatch was sent) only a job Slurm says was submitted then
    or later (less SUBMIT_CLOCK_MARGIN_S) counts."""
    for argv in (squeue_ids_by_name_argv(job_name, user=user),
                 sacct_ids_by_name_argv(job_name, user=user)):
        try:
            listing = read_only(slurm.runner).run(argv, check=True).stdout
        except ChannelClosed as exc:  # a read: nothing changed, the lookup is asked again
            raise exc.as_read() from exc
        try:
            ids = parse_raw_job_ids(listing)
        except SlurmParseError as exc:
            raise exc.in_answer_to(argv) from exc
        found = sorted(i for i in ids if i > int(after_job) and str(i) not in known)
        if found and (array_task is not None or submitted_since is not None):
            records = slurm.jobs(found)
            found = [i for i in found if (rec := records.get(i)) is not None
                     and (array_task is None
                          or rec.array_job_id == i and rec.array_task_id == array_task)
                     and (submitted_since is None or rec.submit_time is not None
                          and rec.submit_time >= submitted_since - SUBMIT_CLOCK_MARGIN_S)]
        if found:
            return str(found[0])
    return None


def adopt_unrecorded_submit(
    config: Config, recipe_name: str, *, chain_id: int, after_job: str, slurm: Slurm,
    sftp: SFTP, store: Store, now: float, resumed_at: int | None,
    charge_retry: bool = False, array_task: int | None = None,
    submitted_at: float | None = None,
) -> SubmitResult | None:
    """Record (as the chain's next attempt, watched, charged as the lost submit would have
    been) a job a crashed resubmit left on the cluster; None when there is none (then
    submitting is safe). `array_task`: the lost submit resubmitted that task of an array;
    `submitted_at`: when its sbatch was sent, when known (else `now`).

    `resumed_at` is the iteration the lost submit resumed from (its decision's
    `resume_from`; None: from scratch): the attempt records the newest checkpoint at or below
    it, never one the job saved since (the bot may come back long after it ran)."""
    recipe = config.recipe(recipe_name)
    chain = store.chains.get(chain_id)
    if chain is None:
        raise UsageProblem(no_run_chain(chain_id, recipe_name))
    known = {a.job_id for a in store.attempts.for_chain(chain_id)}
    user = getattr(config.clusters.get(recipe.cluster), "user", None)
    job_id = find_unrecorded_submit(slurm, job_name=chain.job_name, user=user,
                                    after_job=after_job, known=known, array_task=array_task)
    if job_id is None:
        return None
    return record_found_submit(config, recipe_name, chain_id=chain_id, job_id=job_id,
                               sftp=sftp, store=store, now=now, resumed_at=resumed_at,
                               charge_retry=charge_retry, array_task=array_task,
                               submitted_at=submitted_at)


def record_found_submit(
    config: Config, recipe_name: str, *, chain_id: int, job_id: str, sftp: SFTP, store: Store,
    now: float, resumed_at: int | None, charge_retry: bool = False,
    array_task: int | None = None, actor: str = "trainbot", found: str = "adopted_after_crash",
    submitted_at: float | None = None,
) -> SubmitResult:
    """Record `job_id`, a job a submit whose end was not seen left on the cluster and that
    was found by its name, as chain `chain_id`'s next attempt, watched, charged as the lost
    submit would have been; `resumed_at`: the iteration it resumed from (the attempt records
    the newest checkpoint at or below it, never one the job saved since). A whole job array's
    submit (an array recipe, no `array_task`) is only watched, as submit_recipe's: its tasks
    become attempt rows as they start. `found` names how it was found, in the audit log;
    `submitted_at`: when its sbatch was sent, when known (else `now`)."""
    recipe = config.recipe(recipe_name)
    chain = store.chains.get(chain_id)
    if chain is None:
        raise UsageProblem(no_run_chain(chain_id, recipe_name))
    whole_array = recipe.array is not None and array_task is None
    # what the lost submit resumed from
    checkpoint = None
    if resumed_at is not None and not whole_array:
        try:
            checkpoint = find_resume_checkpoint(recipe, sftp, array_task, at_most=resumed_at)
        except CheckpointLookupStopped:  # the job runs already: recorded with no checkpoint
            checkpoint = None
    attempt_no, display_id = 0, None
    if not whole_array:
        attempt, new = store.attempts.record(
            chain_id=chain_id, job_id=job_id, now=now,
            start_iter=checkpoint.iteration if checkpoint else None,
            checkpoint_path=checkpoint.path if checkpoint else None,
            charge_retry=charge_retry,
            display_id=f"{job_id}_{array_task}" if array_task is not None else None,
            submitted_at=submitted_at,
        )
        if not new:  # another path found the job first: watched and in the ledger by it
            return recorded_result(attempt, chain.job_name)
        attempt_no, display_id = attempt.attempt_no, attempt.display_id
    store.watched_jobs.add(recipe.cluster, job_id, now=now, chain_id=chain_id)
    store.audit.record(
        actor=actor, action="submit", now=now, recipe=recipe_name, job_id=job_id,
        result="ok", detail={"chain_id": chain_id, "attempt_no": attempt_no,
                             **({"array": recipe.array} if whole_array else {}),
                             found: True},
    )  # fmt: skip
    return SubmitResult(job_id=job_id, chain_id=chain_id, attempt_no=attempt_no,
                        job_name=chain.job_name, checkpoint=checkpoint,
                        display_id=display_id, array=recipe.array if whole_array else None)


def recorded_result(attempt: Attempt, job_name: str) -> SubmitResult:
    """The submit result of job `attempt.job_id` as its attempt recorded it (where it
    resumed from: its checkpoint's path and iteration)."""
    ck = (Checkpoint(attempt.checkpoint_path, attempt.start_iter, "pointer")
          if attempt.checkpoint_path else None)
    return SubmitResult(attempt.job_id, attempt.chain_id, attempt.attempt_no, job_name, ck,
                        display_id=attempt.display_id)
