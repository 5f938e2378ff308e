"""Status of trainbot's jobs: what the store knows merged with what Slurm says now.

`trainbot status` and `/train status` both call `job_status`. Slurm is asked once per
cluster (one squeue + one sacct for all the jobs shown). A cluster that does not answer is
reported as unreachable and its rows keep the last state stored, never "job not found".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.cluster.errors import ClusterError
from bot.config import Config
from bot.core.slurm.records import JobRecord
from bot.services import UsageProblem
from bot.services.ports import Slurm
from bot.store import Attempt, Chain, Store

_JOB_ID_RE = re.compile(r"^\d{1,12}$")


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
    def state(self) -> str:
        if self.record is not None and self.record.state:
            return str(self.record.state)
        if self.attempt is not None:
            return f"{self.attempt.state} (stored)"
        return "UNKNOWN"


@dataclass(frozen=True)
class StatusReport:
    """What `status` shows: a title, one row per job, and clusters that did not answer."""

    title: str
    rows: list[JobStatus]
    unreachable: dict[str, str] = field(default_factory=dict)
    note: str = ""


def job_status(
    config: Config,
    target: str | None,
    *,
    store: Store,
    slurm_for: Callable[[str], Slurm],
) -> StatusReport:
    """Status of every watched job (no target), a recipe's latest chain, or one job id."""
    if target is None:
        title, rows, note = _watched(store)
    elif target in config.recipes:
        title, rows, note = _recipe(store, target)
    elif _JOB_ID_RE.match(target):
        title, rows, note = _job(config, store, target)
    else:
        known = ", ".join(sorted(config.recipes)) or "none configured"
        raise UsageProblem(
            f"{target!r} is neither a recipe nor a job id; use `status`, `status RECIPE` "
            f"(recipes: {known}) or `status JOBID` (digits)"
        )
    by_cluster: dict[str, list[int]] = {}
    for row in rows:
        by_cluster.setdefault(row.cluster, []).append(int(row.job_id))
    records: dict[tuple[str, int], JobRecord] = {}
    unreachable: dict[str, str] = {}
    for cluster, ids in by_cluster.items():
        try:
            found = slurm_for(cluster).jobs(ids)
        except ClusterError as exc:  # unreachable, host key refused, Slurm not answering
            unreachable[cluster] = str(exc)
            continue
        records.update({(cluster, job_id): rec for job_id, rec in found.items()})
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
    if target is not None and _JOB_ID_RE.match(target) and not unreachable:
        merged = [r for r in merged if r.record is not None or r.attempt is not None]
        if not merged:
            note = f"job {target} is unknown to trainbot and to Slurm on every cluster"
    return StatusReport(title=title, rows=merged, unreachable=unreachable, note=note)


def _row(chain: Chain, attempt: Attempt) -> JobStatus:
    return JobStatus(
        job_id=attempt.job_id,
        cluster=chain.cluster,
        recipe=chain.recipe,
        chain_id=chain.id,
        attempt=attempt,
    )


def _watched(store: Store) -> tuple[str, list[JobStatus], str]:
    rows: list[JobStatus] = []
    for watched in store.watched_jobs.list():
        attempt = store.attempts.get_by_job(watched.job_id, cluster=watched.cluster)
        chain = store.chains.get(attempt.chain_id) if attempt is not None else None
        if chain is not None and attempt is not None:
            rows.append(_row(chain, attempt))
        else:
            rows.append(JobStatus(job_id=watched.job_id, cluster=watched.cluster))
    note = "" if rows else "no watched jobs; submit one with `submit RECIPE`"
    return "watched jobs", rows, note


def _recipe(store: Store, recipe: str) -> tuple[str, list[JobStatus], str]:
    chain = store.chains.latest_for_recipe(recipe)
    if chain is None:
        return recipe, [], f"{recipe} has not been submitted by trainbot yet"
    rows = [_row(chain, a) for a in store.attempts.for_chain(chain.id)]
    title = f"{recipe} (chain {chain.id}, {chain.status}, retries used {chain.retries_used})"
    return title, rows, ""


def _job(config: Config, store: Store, job_id: str) -> tuple[str, list[JobStatus], str]:
    attempt = store.attempts.get_by_job(job_id)
    chain = store.chains.get(attempt.chain_id) if attempt is not None else None
    if chain is not None and attempt is not None:
        return f"job {job_id}", [_row(chain, attempt)], ""
    # Not submitted by trainbot: ask every cluster (one call each) about it.
    rows = [JobStatus(job_id=job_id, cluster=name) for name in config.clusters]
    return f"job {job_id}", rows, ""
