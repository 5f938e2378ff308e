"""Run chains, their attempts (Slurm jobs) and the log tail offsets of each job."""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import and_, func, insert, select, update

from bot.store import schema as t
from bot.store.repos.base import _insert_id, _Repo, _row, _wall
from bot.store.rows import (
    Attempt,
    Chain,
    TailOffset,
)


class ChainsRepo(_Repo):
    """Run chains."""

    def create(
        self,
        *,
        recipe: str,
        cluster: str,
        job_name: str,
        now: float,
        channel: str | None = None,
        thread_ts: str | None = None,
        status: str = "active",
        kind: str = "run",
        array_job_id: int | None = None,
        watched_by: str | None = None,
        target_iter: int | None = None,
    ) -> Chain:
        values: dict[str, Any] = dict(
            recipe=recipe,
            cluster=cluster,
            job_name=job_name,
            channel=channel,
            thread_ts=thread_ts,
            status=status,
            created_at=now,
            updated_at=now,
            retries_used=0,
        )
        if kind != "run":  # a run's chain is what every schema version can hold
            values.update(kind=kind, array_job_id=array_job_id)
        if watched_by is not None:
            values.update(watched_by=watched_by)
        if target_iter is not None:
            values.update(target_iter=target_iter)
        with self._engine.begin() as conn:
            chain_id = _insert_id(conn, insert(t.chains).values(**values))
        return Chain(id=chain_id, **values)

    def get(self, chain_id: int) -> Chain | None:
        return self._one(Chain, select(t.chains).where(t.chains.c.id == chain_id))

    def latest_for_recipe(self, recipe: str) -> Chain | None:
        """A recipe's latest run (any status): the first of `for_recipe`."""
        latest = self.for_recipe(recipe, limit=1)
        return latest[0] if latest else None

    def for_recipe(self, recipe: str, limit: int = 20) -> list[Chain]:
        """A recipe's chains, latest first: the one whose latest job was submitted last first
        (a run with no job yet by its creation), newest chain first on a tie. Not by when the
        chain was made: a lost submit's recovery makes its run's chain after one a person
        started since."""
        last_submit = (
            select(func.max(t.attempts.c.submitted_at))
            .where(t.attempts.c.chain_id == t.chains.c.id)
            .scalar_subquery()
        )
        return self._all(
            Chain,
            select(t.chains)
            .where(t.chains.c.recipe == recipe)
            .order_by(func.coalesce(last_submit, t.chains.c.created_at).desc(),
                      t.chains.c.id.desc())
            .limit(limit),
        )

    def of_array(self, array_job_id: int) -> Chain | None:
        """The newest chain of the whole job array `array_job_id` (its `array_job_id`: an array
        watched, or submitted from an array recipe)."""
        return self._one(Chain, select(t.chains).where(t.chains.c.array_job_id == array_job_id)
                         .order_by(t.chains.c.id.desc()).limit(1))

    def adopted(self, limit: int = 100) -> list[Chain]:
        """Chains of jobs and arrays watched without trainbot submitting them ("adopted",
        "array" with no recipe: not an array recipe's), newest first."""
        return self._all(
            Chain,
            select(t.chains)
            .where(and_(t.chains.c.kind != "run", t.chains.c.recipe == ""))
            .order_by(t.chains.c.id.desc())
            .limit(limit),
        )

    def with_status(self, status: str = "active") -> list[Chain]:
        return self._all(
            Chain,
            select(t.chains).where(t.chains.c.status == status).order_by(t.chains.c.id),
        )

    def set_thread(self, chain_id: int, *, channel: str, thread_ts: str, now: float) -> None:
        self._update(chain_id, now, channel=channel, thread_ts=thread_ts)

    def set_status(self, chain_id: int, status: str, *, now: float) -> None:
        self._update(chain_id, now, status=status)

    def set_target(self, chain_id: int, target_iter: int, *, now: float) -> None:
        """The run's target iteration, as a submit's `target_iter=` override set it."""
        self._update(chain_id, now, target_iter=target_iter)

    def _update(self, chain_id: int, now: float, **values: Any) -> None:
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.chains).where(t.chains.c.id == chain_id).values(updated_at=now, **values)
            )
        if result.rowcount != 1:
            raise KeyError(f"no chain {chain_id}")


class RecordedAttempt(NamedTuple):
    """The chain's attempt for a job, and whether the call that returned it recorded it."""

    attempt: Attempt
    new: bool


_ATTEMPT_UPDATABLE = {
    "state",
    "started_at",
    "ended_at",
    "start_iter",
    "last_iter",
    "result",
    "cause",
    "work_lost_iters",
    "work_lost_s",
    "checkpoint_path",
    "logged_target_iter",
}


class AttemptsRepo(_Repo):
    """Attempts (Slurm jobs) of run chains."""

    def record(
        self,
        *,
        chain_id: int,
        job_id: str,
        now: float,
        state: str = "PENDING",
        start_iter: int | None = None,
        checkpoint_path: str | None = None,
        charge_retry: bool = False,
        excluded_nodes: str | None = None,
        display_id: str | None = None,
        submitted_at: float | None = None,
        submit_mem: str | None = None,
    ) -> RecordedAttempt:
        """Record a submitted job as the chain's next attempt (attempt_no 1, 2, …), submitted
        at `submitted_at` (default `now`: a job found after its submit was lost says when);
        `submit_mem`: the --mem its submit passed ('' none; None: not known, Attempt.submit_mem).
        `new` False when the chain already records that job (one Slurm job is one attempt of
        its run, however many paths record it: a lost submit's recovery and the settle that
        took over its cancel and resume may both find it by its name): that attempt comes back
        unchanged, uncharged, and the caller's once-per-job steps are the first recorder's.

        `charge_retry`: the same transaction counts it against the chain's retry budget
        (`chains.retries_used`), so a crash can never leave an attempt without its charge
        or a charge without its attempt. Concurrent adds to one chain (several replicas) get
        consecutive numbers and see each other's job: the chain's row is locked first
        (`FOR UPDATE` on PostgreSQL; SQLite's `BEGIN IMMEDIATE` already serialises writers);
        the unique (chain_id, job_id) index (schema 17) is the database's own guard."""
        job_id = str(job_id)
        with self._engine.begin() as conn:
            conn.execute(select(t.chains.c.id).where(t.chains.c.id == chain_id).with_for_update())
            existing = conn.execute(select(t.attempts).where(
                and_(t.attempts.c.chain_id == chain_id, t.attempts.c.job_id == job_id))).first()
            if existing is not None:
                return RecordedAttempt(_row(Attempt, existing), new=False)
            if charge_retry:
                charged = conn.execute(
                    update(t.chains).where(t.chains.c.id == chain_id)
                    .values(retries_used=t.chains.c.retries_used + 1, updated_at=now)
                )
                if charged.rowcount != 1:
                    raise KeyError(f"no chain {chain_id}")
            last = conn.execute(
                select(func.max(t.attempts.c.attempt_no)).where(t.attempts.c.chain_id == chain_id)
            ).scalar()
            values = dict(
                chain_id=chain_id,
                job_id=job_id,
                attempt_no=int(last or 0) + 1,
                state=state,
                submitted_at=now if submitted_at is None else submitted_at,
                start_iter=start_iter,
                checkpoint_path=checkpoint_path,
                excluded_nodes=excluded_nodes,
                submit_mem=submit_mem,
            )
            if display_id is not None:  # an array task's (schema 11)
                values["display_id"] = display_id
            attempt_id = _insert_id(conn, insert(t.attempts).values(**values))
            row = conn.execute(select(t.attempts).where(t.attempts.c.id == attempt_id)).first()
        return RecordedAttempt(_row(Attempt, row), new=True)

    def get(self, attempt_id: int) -> Attempt | None:
        return self._one(Attempt, select(t.attempts).where(t.attempts.c.id == attempt_id))

    def get_by_job(self, job_id: str, cluster: str | None = None) -> Attempt | None:
        """The attempt for a Slurm job id (the newest, if ids repeat across clusters)."""
        query = select(t.attempts).where(t.attempts.c.job_id == str(job_id))
        if cluster is not None:
            query = query.join(t.chains, t.chains.c.id == t.attempts.c.chain_id).where(
                t.chains.c.cluster == cluster
            )
        return self._one(Attempt, query.order_by(t.attempts.c.id.desc()).limit(1))

    def in_array(self, array_job_id: int, task: int | None = None) -> Attempt | None:
        """The newest attempt of task `task` of array `array_job_id` as people write it
        (`display_id` `123_4`, its job_id being the task's own raw id); `task` None: of any
        task of that array."""
        shown = t.attempts.c.display_id
        query = select(t.attempts).where(
            shown.startswith(f"{array_job_id}_", autoescape=True) if task is None
            else shown == f"{array_job_id}_{task}")
        return self._one(Attempt, query.order_by(t.attempts.c.id.desc()).limit(1))

    def for_chain(self, chain_id: int) -> list[Attempt]:
        """A chain's attempts in order (the thread's attempts table)."""
        return self._all(
            Attempt,
            select(t.attempts)
            .where(t.attempts.c.chain_id == chain_id)
            .order_by(t.attempts.c.attempt_no),
        )

    def latest(self, chain_id: int) -> Attempt | None:
        attempts = self.for_chain(chain_id)
        return attempts[-1] if attempts else None

    def update(self, attempt_id: int, **fields: Any) -> Attempt:
        """Set progress/result fields (state, last_iter, result, cause, work_lost_*, …)."""
        unknown = set(fields) - _ATTEMPT_UPDATABLE
        if unknown:
            raise ValueError(f"cannot update attempt fields {sorted(unknown)}")
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.attempts).where(t.attempts.c.id == attempt_id).values(**fields)
            )
            if result.rowcount != 1:
                raise KeyError(f"no attempt {attempt_id}")
            row = conn.execute(select(t.attempts).where(t.attempts.c.id == attempt_id)).first()
        return _row(Attempt, row)

class TailOffsetsRepo(_Repo):
    """Where each job's log tail stopped, so a restart reads only new bytes."""

    def get(self, job_id: str, path: str) -> TailOffset | None:
        return self._one(
            TailOffset,
            select(t.tail_offsets).where(
                and_(t.tail_offsets.c.job_id == str(job_id), t.tail_offsets.c.path == path)
            ),
        )

    def put(
        self,
        job_id: str,
        path: str,
        *,
        offset: int,
        size: int,
        line_no: int,
        signature: str | None = None,
        now: float | None = None,
    ) -> None:
        """Insert or replace the offset for (job_id, path)."""
        values = dict(
            offset=offset,
            size=size,
            line_no=line_no,
            inode_or_signature=signature,
            updated_at=_wall(now),
        )
        where = and_(t.tail_offsets.c.job_id == str(job_id), t.tail_offsets.c.path == path)
        with self._engine.begin() as conn:
            if conn.execute(update(t.tail_offsets).where(where).values(**values)).rowcount == 0:
                conn.execute(insert(t.tail_offsets).values(job_id=str(job_id), path=path, **values))

    def paths(self, job_id: str) -> list[str]:
        """The files of a job whose offsets are kept (its log first seen first): where its
        log was read while Slurm still said, for when squeue has forgotten the job."""
        with self._engine.begin() as conn:
            rows = conn.execute(
                select(t.tail_offsets.c.path).where(t.tail_offsets.c.job_id == str(job_id))
                .order_by(t.tail_offsets.c.updated_at)
            ).all()
        return [r[0] for r in rows]

    def delete_job(self, job_id: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(t.tail_offsets.delete().where(t.tail_offsets.c.job_id == str(job_id)))
