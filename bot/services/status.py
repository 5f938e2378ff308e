"""Status of trainbot's jobs: what the store knows merged with what Slurm says now.

`trainbot status` and `/train status` both call `job_status`. Slurm is asked once per
cluster (one squeue + one sacct for all the jobs shown). A cluster that does not answer is
reported as unreachable and its rows keep the last state stored, never "job not found".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bot.cluster.errors import ClusterError
from bot.config import Config
from bot.core.slurm.job_ref import JobIdError, JobRef, parse_job_ref
from bot.core.slurm.records import JobRecord
from bot.core.text import N_, Text
from bot.services import UsageProblem
from bot.services.ports import Slurm
from bot.services.threads import unsaid_in_thread
from bot.store import Attempt, Chain, Store


@dataclass(frozen=True)
class JobStatus:
    """One job: the attempt trainbot recorded (if any) and Slurm's current record (if any)."""

    job_id: str
    cluster: str
    recipe: str | None = None
    chain_id: int | None = None
    attempt: Attempt | None = None
    record: JobRecord | None = None  # None when Slurm no longer knows it

    @property
    def display_id(self) -> str:
        """`123_4` for an array task (Slurm's record says), else the job id."""
        return self.record.display_id if self.record is not None else self.job_id

    @property
    def label(self) -> str:
        """How a listing shows the job: `123_4 (127)` for an array task (its raw id after),
        else the job id."""
        shown = self.display_id
        return shown if shown == self.job_id else f"{shown} ({self.job_id})"

    @property
    def state(self) -> str:
        return str(self.state_text)

    @property
    def state_text(self) -> Text | str:
        """Slurm's state now, else the one stored (so marked, for the renderer)."""
        if self.record is not None and self.record.state:
            return str(self.record.state)
        if self.attempt is not None:
            return N_("%(state)s (stored)", state=self.attempt.state)
        return "UNKNOWN"


@dataclass(frozen=True)
class StatusReport:
    """What `status` shows: a title, one row per job, and clusters that did not answer."""

    title: Text | str
    rows: list[JobStatus]
    unreachable: dict[str, Text | str] = field(default_factory=dict)  # its error's sentence
    note: Text | str = ""
    # what the shown runs' threads never got (bot.services.threads.unsaid_in_thread): the
    # run's job as its rows show it (its latest), and each reply's text; `unsaid` those
    # Slack did not take, `waiting` those said once the thread opens (its root never came)
    unsaid: list[tuple[str, str]] = field(default_factory=list)
    waiting: list[tuple[str, str]] = field(default_factory=list)


#: What one kind of status target found: its title, its rows and a note (may be empty).
_Found = tuple[Text | str, list[JobStatus], Text | str]


def job_status(
    config: Config,
    target: str | None,
    *,
    store: Store,
    slurm_for: Callable[[str], Slurm],
) -> StatusReport:
    """Status of every watched job (no target), a recipe's latest chain, one job id or one
    array task (`123_4`: asked of each cluster's Slurm for the task's own id)."""
    ref = _job_ref(target)
    if target is None:
        title, rows, note = _watched(store)
    elif target in config.recipes:
        title, rows, note = _recipe(store, target)
    elif ref is not None and ref.array_task is not None:
        title, rows, note = _array_task(config, store, ref, slurm_for)
    elif ref is not None:
        title, rows, note = _job(config, store, target)
    else:
        known = ", ".join(sorted(config.recipes)) or N_("none configured")
        raise UsageProblem(N_(
            "%(target)r is neither a recipe nor a job id; use `status`, `status RECIPE` "
            "(recipes: %(known)s) or `status JOBID` (123 (a job or a whole array) or 123_4 "
            "(task 4 of array 123))", target=target, known=known))
    by_cluster: dict[str, list[int]] = {}
    for row in rows:
        by_cluster.setdefault(row.cluster, []).append(int(row.job_id))
    records: dict[tuple[str, int], JobRecord] = {}
    unreachable: dict[str, Text | str] = {}
    for cluster, ids in by_cluster.items():
        try:
            found = slurm_for(cluster).jobs(ids)
        except ClusterError as exc:  # unreachable, host key refused, Slurm not answering
            unreachable[cluster] = exc.text
            continue
        records.update({(cluster, job_id): rec for job_id, rec in found.items()})
        if ref is not None and ref.array_task is None:  # `status 123` of an array: its tasks
            shown = {int(r.job_id) for r in rows if r.cluster == cluster}
            rows += [_task_row(store, cluster, rec) for job_id, rec in sorted(found.items())
                     if rec.array_job_id == ref.job_id and rec.array_task_id is not None
                     and job_id not in shown]
    merged = [
        JobStatus(
            job_id=r.job_id,
            cluster=r.cluster,
            recipe=r.recipe,
            chain_id=r.chain_id,
            attempt=r.attempt,
            record=records.get((r.cluster, int(r.job_id))),
        )
        for r in rows
    ]
    if ref is not None and not unreachable:
        merged = [r for r in merged if r.record is not None or r.attempt is not None]
        if not merged:
            note = N_("job %(job)s is unknown to trainbot and to Slurm on every cluster",
                      job=target)
    unsaid = _unsaid(store, merged)
    return StatusReport(title=title, rows=merged, unreachable=unreachable, note=note,
                        unsaid=[(job, text) for job, text, waits in unsaid if not waits],
                        waiting=[(job, text) for job, text, waits in unsaid if waits])


def _unsaid(store: Store, rows: list[JobStatus]) -> list[tuple[str, str, bool]]:
    """Each shown run's replies its thread never got (given up), named by the run's latest
    row's job, and whether each waits for the thread to open."""
    latest = {row.chain_id: row.label for row in rows if row.chain_id is not None}
    return [(job, *note) for chain_id, job in latest.items()
            for note in unsaid_in_thread(store, chain_id)]


def _task_row(store: Store, cluster: str, rec: JobRecord) -> JobStatus:
    """A row for an array's task (its attempt, when trainbot watches the array)."""
    attempt = store.attempts.get_by_job(str(rec.job_id), cluster=cluster)
    chain = store.chains.get(attempt.chain_id) if attempt is not None else None
    if chain is not None and attempt is not None:
        return _row(chain, attempt)
    return JobStatus(job_id=str(rec.job_id), cluster=cluster)


def _job_ref(target: str | None) -> JobRef | None:
    if target is None:
        return None
    try:
        return parse_job_ref(target)
    except JobIdError:
        return None


def _array_task(config: Config, store: Store, ref: JobRef,
                slurm_for: Callable[[str], Slurm]) -> _Found:
    """The rows of task `ref` on every cluster whose Slurm knows it (by its own raw id)."""
    rows: list[JobStatus] = []
    for name in config.clusters:
        try:
            tasks = slurm_for(name).array_tasks(ref.job_id)
        except ClusterError:
            rows.append(JobStatus(job_id=str(ref.job_id), cluster=name))  # unreachable
            continue
        for rec in tasks.values():
            if rec.array_task_id == ref.array_task:
                rows.append(JobStatus(job_id=str(rec.job_id), cluster=name))
    for i, row in enumerate(rows):
        attempt = store.attempts.get_by_job(row.job_id, cluster=row.cluster)
        chain = store.chains.get(attempt.chain_id) if attempt is not None else None
        if chain is not None and attempt is not None:
            rows[i] = _row(chain, attempt)
    return N_("job %(job)s", job=ref.display), rows, ""


def _row(chain: Chain, attempt: Attempt) -> JobStatus:
    return JobStatus(
        job_id=attempt.job_id,
        cluster=chain.cluster,
        recipe=chain.recipe,
        chain_id=chain.id,
        attempt=attempt,
    )


def _watched(store: Store) -> _Found:
    rows: list[JobStatus] = []
    for watched in store.watched_jobs.list():
        attempt = store.attempts.get_by_job(watched.job_id, cluster=watched.cluster)
        chain = store.chains.get(attempt.chain_id) if attempt is not None else None
        if chain is not None and attempt is not None:
            rows.append(_row(chain, attempt))
        else:
            rows.append(JobStatus(job_id=watched.job_id, cluster=watched.cluster))
    note = "" if rows else N_("no watched jobs; submit one with `submit RECIPE`")
    return N_("watched jobs"), rows, note


def _recipe(store: Store, recipe: str) -> _Found:
    chain = store.chains.latest_for_recipe(recipe)
    if chain is None:
        return recipe, [], N_("%(recipe)s has not been submitted by trainbot yet", recipe=recipe)
    rows = [_row(chain, a) for a in store.attempts.for_chain(chain.id)]
    title = N_("%(recipe)s (chain %(chain)s, %(status)s, retries used %(retries)s)",
               recipe=recipe, chain=chain.id, status=chain.status, retries=chain.retries_used)
    return title, rows, ""


def _job(config: Config, store: Store, job_id: str) -> _Found:
    attempt = store.attempts.get_by_job(job_id)
    chain = store.chains.get(attempt.chain_id) if attempt is not None else None
    if chain is not None and attempt is not None:
        return N_("job %(job)s", job=job_id), [_row(chain, attempt)], ""
    # Not submitted by trainbot: ask every cluster (one call each) about it.
    rows = [JobStatus(job_id=job_id, cluster=name) for name in config.clusters]
    return N_("job %(job)s", job=job_id), rows, ""
