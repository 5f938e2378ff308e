"""Repositories: small classes with domain verbs over the store's tables (SQLAlchemy Core).

Each verb is one transaction. Times are passed in by the caller (`now`, epoch seconds);
where the time is bookkeeping only (`updated_at` of a Slack post or tail offset) `now` may
be omitted and the wall clock is used.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from sqlalchemy import Engine, Select, and_, case, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from bot.core.redact import Redactor
from bot.store import schema as t
from bot.store.rows import (
    Approval,
    Attempt,
    Chain,
    ClaimResult,
    Incident,
    TailOffset,
    WatchedJob,
)

R = TypeVar("R")  # a row class of bot.store.rows


def _wall(now: float | None) -> float:
    return time.time() if now is None else now


def _row(cls: type, row: Any) -> Any:
    return cls(**dict(row._mapping)) if row is not None else None


# --------------------------------------------------------------------------------------------
# repositories


class _Repo:
    def __init__(self, engine: Engine, redactor: Redactor | None = None):
        self._engine = engine
        self._redactor = redactor or Redactor()

    def _one(self, cls: type[R], query: Select[Any]) -> R | None:
        """The first row of `query` as a `cls`, or None (one transaction)."""
        with self._engine.begin() as conn:
            return _row(cls, conn.execute(query).first())

    def _all(self, cls: type[R], query: Select[Any]) -> list[R]:
        """Every row of `query` as a `cls` (one transaction)."""
        with self._engine.begin() as conn:
            return [_row(cls, r) for r in conn.execute(query).all()]


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
    ) -> Chain:
        values = dict(
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
        with self._engine.begin() as conn:
            chain_id = conn.execute(insert(t.chains).values(**values)).inserted_primary_key[0]
        return Chain(id=int(chain_id), **values)

    def get(self, chain_id: int) -> Chain | None:
        return self._one(Chain, select(t.chains).where(t.chains.c.id == chain_id))

    def latest_for_recipe(self, recipe: str) -> Chain | None:
        """The most recent chain of a recipe (any status)."""
        return self._one(
            Chain,
            select(t.chains)
            .where(t.chains.c.recipe == recipe)
            .order_by(t.chains.c.id.desc())
            .limit(1),
        )

    def for_recipe(self, recipe: str, limit: int = 20) -> list[Chain]:
        """A recipe's chains, newest first."""
        return self._all(
            Chain,
            select(t.chains)
            .where(t.chains.c.recipe == recipe)
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

    def _update(self, chain_id: int, now: float, **values: Any) -> None:
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.chains).where(t.chains.c.id == chain_id).values(updated_at=now, **values)
            )
        if result.rowcount != 1:
            raise KeyError(f"no chain {chain_id}")


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
}


class AttemptsRepo(_Repo):
    """Attempts (Slurm jobs) of run chains."""

    def add(
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
    ) -> Attempt:
        """Record a submitted job as the chain's next attempt (attempt_no 1, 2, …).

        `charge_retry`: the same transaction counts it against the chain's retry budget
        (`chains.retries_used`), so a crash can never leave an attempt without its charge
        or a charge without its attempt. Concurrent adds to one chain (several replicas) get
        consecutive numbers: the chain's row is locked first (`FOR UPDATE` on PostgreSQL;
        SQLite's `BEGIN IMMEDIATE` already serialises writers)."""
        with self._engine.begin() as conn:
            conn.execute(select(t.chains.c.id).where(t.chains.c.id == chain_id).with_for_update())
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
                job_id=str(job_id),
                attempt_no=int(last or 0) + 1,
                state=state,
                submitted_at=now,
                start_iter=start_iter,
                checkpoint_path=checkpoint_path,
                excluded_nodes=excluded_nodes,
            )
            if display_id is not None:  # an array task's (schema 11)
                values["display_id"] = display_id
            attempt_id = conn.execute(insert(t.attempts).values(**values)).inserted_primary_key[0]
            row = conn.execute(select(t.attempts).where(t.attempts.c.id == attempt_id)).first()
        return _row(Attempt, row)

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


class IncidentsRepo(_Repo):
    """Diagnosed incidents, recorded once per key."""

    def record(
        self,
        key: str,
        *,
        class_id: str,
        diagnosis: Mapping[str, Any],
        now: float,
        chain_id: int | None = None,
        job_id: str | None = None,
        state: str = "open",
    ) -> tuple[Incident, bool]:
        """Record an incident unless one with `key` exists; returns (incident, created). The
        diagnosis's texts are stored redacted (bot.core.redact: no secret reaches the store)."""
        values = dict(
            key=key,
            chain_id=chain_id,
            job_id=None if job_id is None else str(job_id),
            class_id=class_id,
            diagnosis_json=json.dumps(self._redactor.redact_data(diagnosis), sort_keys=True),
            created_at=now,
            state=state,
        )
        existing = self.get(key)
        if existing is not None:
            return existing, False
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(t.incidents).values(**values))
        except IntegrityError:  # a concurrent writer recorded the same key first
            existing = self.get(key)
            if existing is None:
                raise
            return existing, False
        incident = self.get(key)
        assert incident is not None
        return incident, True

    def get(self, key: str) -> Incident | None:
        return self._one(Incident, select(t.incidents).where(t.incidents.c.key == key))

    def for_chain(self, chain_id: int) -> list[Incident]:
        return self._all(
            Incident,
            select(t.incidents)
            .where(t.incidents.c.chain_id == chain_id)
            .order_by(t.incidents.c.id),
        )

    def of_class(self, class_id: str, states: Iterable[str]) -> list[Incident]:
        """The incidents of `class_id` in one of `states`, oldest first (any chain)."""
        return self._all(
            Incident,
            select(t.incidents)
            .where(t.incidents.c.class_id == class_id, t.incidents.c.state.in_(list(states)))
            .order_by(t.incidents.c.id),
        )

    def set_state(self, key: str, state: str) -> None:
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.incidents).where(t.incidents.c.key == key).values(state=state)
            )
        if result.rowcount != 1:
            raise KeyError(f"no incident {key!r}")

    def set_state_from(self, key: str, expected: str, state: str) -> bool:
        """Set `state` only while the incident is still `expected` (one conditional UPDATE):
        of replicas acting on one row, one wins; False when another moved it meanwhile."""
        incidents = t.incidents
        with self._engine.begin() as conn:
            result = conn.execute(
                update(incidents).where(incidents.c.key == key, incidents.c.state == expected)
                .values(state=state)
            )
        return result.rowcount == 1


class ApprovalsRepo(_Repo):
    """Approval tokens behind buttons: each is accepted at most once, before it expires.

    Authorization (may the clicker approve, by the config running now?) is the caller's job,
    before `claim`; `allowed` records who could approve when the prompt was posted.
    Approvals of a `PASSIVE_ACTIONS` action (a probe) do nothing to their chain's job: one
    approved and under way never makes the chain's other prompts `busy`.
    """

    PASSIVE_ACTIONS = ("probe",)

    def create(
        self,
        *,
        action: str,
        payload: Mapping[str, Any],
        allowed: Iterable[str],
        expires_at: float,
        now: float,
        target_job: str | None = None,
        chain_id: int | None = None,
    ) -> str:
        """Store a pending approval; returns its opaque random token (the button value)."""
        token = secrets.token_urlsafe(16)
        with self._engine.begin() as conn:
            conn.execute(
                insert(t.approvals).values(
                    id=token,
                    action=action,
                    payload_json=json.dumps(payload, sort_keys=True),
                    target_job=None if target_job is None else str(target_job),
                    chain_id=chain_id,
                    allowed_json=json.dumps(sorted(set(allowed))),
                    expires_at=expires_at,
                    state="pending",
                    created_at=now,
                )
            )
        return token

    def get(self, token: str) -> Approval | None:
        return self._one(Approval, select(t.approvals).where(t.approvals.c.id == token))

    def claim(self, token: str, actor: str, now: float, *,
              latest_job: str | None = None) -> ClaimResult:
        """pending → approved, for exactly one caller, only before expiry; with `latest_job`
        only while the chain is where the prompt left it (see `_decide`)."""
        return self._decide(token, actor, now, "approved", latest_job)

    def refuse(self, token: str, actor: str, now: float, *,
               latest_job: str | None = None) -> ClaimResult:
        """pending → refused (a 'no' or 'Dismiss'), for exactly one caller, before expiry;
        `latest_job` as for `claim`."""
        return self._decide(token, actor, now, "refused", latest_job)

    def _decide(self, token: str, actor: str, now: float, new_state: str,
                latest_job: str | None) -> ClaimResult:
        """One transaction: the chain check, then the state change.

        With `latest_job` (the job the prompt is about: a failed job's resubmit, the resumed
        job a hold waits for) and a chain, the approval is decided only while `latest_job` is
        still the chain's latest attempt — else it becomes `stale`, for good: the run moved
        on — and while no other approval of the chain is approved and acting on that job
        (approved, not yet done: its sbatch or scancel is under way; `busy`, the approval
        stays pending). The chain's row is locked first, as `AttemptsRepo.add` does, so a
        resubmit recording its attempt and this check take turns."""
        with self._engine.begin() as conn:
            found = _row(Approval, conn.execute(
                select(t.approvals).where(t.approvals.c.id == token)).first())
            if found is not None and latest_job is not None and found.chain_id is not None and (
                    found.state == "stale"
                    or (found.state == "pending" and found.expires_at > now)):
                moved = self._chain_moved(conn, found, str(latest_job), actor, now)
                if moved is not None:
                    return moved
            result = conn.execute(
                update(t.approvals)
                .where(
                    and_(
                        t.approvals.c.id == token,
                        t.approvals.c.state == "pending",
                        t.approvals.c.expires_at > now,
                    )
                )
                .values(state=new_state, decided_by=actor, decided_at=now)
            )
            claimed = result.rowcount == 1
            if not claimed:  # mark a stale pending one expired, for the record
                conn.execute(
                    update(t.approvals)
                    .where(
                        and_(
                            t.approvals.c.id == token,
                            t.approvals.c.state == "pending",
                            t.approvals.c.expires_at <= now,
                        )
                    )
                    .values(state="expired")
                )
            row = conn.execute(select(t.approvals).where(t.approvals.c.id == token)).first()
        approval = _row(Approval, row)
        if claimed:
            return ClaimResult(True, "claimed", approval)
        if approval is None:
            return ClaimResult(False, "unknown", None)
        if approval.state == "expired":
            return ClaimResult(False, "expired", approval)
        return ClaimResult(False, "decided", approval)

    @staticmethod
    def _chain_moved(conn: Any, approval: Approval, latest_job: str, actor: str,
                     now: float) -> ClaimResult | None:
        """The stale or busy answer of `_decide`, None when the chain is where the prompt
        left it. Runs inside `_decide`'s transaction."""
        chain_id = approval.chain_id
        conn.execute(select(t.chains.c.id).where(t.chains.c.id == chain_id).with_for_update())
        latest = _row(Attempt, conn.execute(
            select(t.attempts).where(t.attempts.c.chain_id == chain_id)
            .order_by(t.attempts.c.attempt_no.desc()).limit(1)).first())
        if latest is not None and latest.job_id != latest_job:
            if approval.state == "pending":
                conn.execute(
                    update(t.approvals)
                    .where(and_(t.approvals.c.id == approval.id,
                                t.approvals.c.state == "pending"))
                    .values(state="stale", decided_by=actor, decided_at=now)
                )
            row = conn.execute(select(t.approvals).where(t.approvals.c.id == approval.id)).first()
            return ClaimResult(False, "stale", _row(Approval, row), latest=latest)
        if approval.state == "stale":  # cannot happen: a chain's latest attempt only moves on
            return ClaimResult(False, "decided", approval)
        other = _row(Approval, conn.execute(
            select(t.approvals).where(and_(
                t.approvals.c.chain_id == chain_id,
                t.approvals.c.target_job == latest_job,
                t.approvals.c.state == "approved",
                t.approvals.c.id != approval.id,
                t.approvals.c.action.not_in(ApprovalsRepo.PASSIVE_ACTIONS),
            )).limit(1)).first())
        if other is not None:
            return ClaimResult(False, "busy", approval, latest=latest, other=other)
        return None

    def mark_done(self, token: str, *, now: float) -> bool:
        """approved → done once the approved action was carried out; False if not approved."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "approved"))
                .values(state="done", decided_at=now)
            )
        return result.rowcount == 1

    def mark_step(self, token: str, step: str, *, now: float) -> bool:
        """Record that a prompt was reminded (`step` "reminded") or escalated ("escalated"):
        True for exactly one caller, so no replica follows a prompt up twice."""
        if step not in ("reminded", "escalated"):
            raise ValueError(f"step must be reminded or escalated, not {step!r}")
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(t.prompt_steps).values(token=token, step=step, at=now))
        except IntegrityError:  # done before, or by another replica just now
            return False
        return True

    def steps(self, token: str) -> dict[str, float]:
        """The follow-up steps `token`'s prompt went through: step -> when."""
        with self._engine.begin() as conn:
            rows = conn.execute(select(t.prompt_steps.c.step, t.prompt_steps.c.at)
                                .where(t.prompt_steps.c.token == token)).all()
        return {step: at for step, at in rows}

    def expire(self, token: str, *, now: float) -> bool:
        """pending → expired once its time is up: True for exactly one caller."""
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.approvals)
                .where(and_(t.approvals.c.id == token, t.approvals.c.state == "pending",
                            t.approvals.c.expires_at <= now))
                .values(state="expired")
            )
        return result.rowcount == 1

    def approved(self, action: str) -> list[Approval]:
        """The approvals of `action` approved and not yet done, oldest first (probes a
        person asked for, waiting for their run)."""
        query = (select(t.approvals).where(t.approvals.c.state == "approved",
                                           t.approvals.c.action == action)
                 .order_by(t.approvals.c.decided_at, t.approvals.c.id))
        return self._all(Approval, query)

    def pending(self) -> list[Approval]:
        """Every pending approval of every action, oldest first (the prompts' follow-up)."""
        query = (select(t.approvals).where(t.approvals.c.state == "pending")
                 .order_by(t.approvals.c.created_at, t.approvals.c.id))
        return self._all(Approval, query)

    def expire_due(self, now: float) -> list[str]:
        """Mark every pending approval past its expiry expired; returns their tokens."""
        with self._engine.begin() as conn:
            due = [
                r[0]
                for r in conn.execute(
                    select(t.approvals.c.id).where(
                        and_(t.approvals.c.state == "pending", t.approvals.c.expires_at <= now)
                    )
                ).all()
            ]
            if due:
                conn.execute(
                    update(t.approvals)
                    .where(and_(t.approvals.c.id.in_(due), t.approvals.c.state == "pending"))
                    .values(state="expired")
                )
        return due

    def with_state(self, action: str, state: str) -> list[Approval]:
        """Every approval of `action` in `state`, oldest first, across all chains.

        E.g. `with_state("hold_competitor", "approved")`: exactly the jobs trainbot holds now
        (served by the `ix_approvals_action_state` index, schema version 3).
        """
        query = (
            select(t.approvals)
            .where(and_(t.approvals.c.action == action, t.approvals.c.state == state))
            .order_by(t.approvals.c.created_at, t.approvals.c.id)
        )
        return self._all(Approval, query)

    def for_chain(self, chain_id: int, state: str | None = None) -> list[Approval]:
        query = select(t.approvals).where(t.approvals.c.chain_id == chain_id)
        if state is not None:
            query = query.where(t.approvals.c.state == state)
        return self._all(Approval, query.order_by(t.approvals.c.created_at))


class WatchedJobsRepo(_Repo):
    """Jobs the watcher polls, per cluster."""

    def add(
        self,
        cluster: str,
        job_id: str,
        *,
        now: float,
        chain_id: int | None = None,
        adopted: bool = False,
    ) -> bool:
        """Start watching; False if it was already watched (nothing changes)."""
        try:
            with self._engine.begin() as conn:
                conn.execute(
                    insert(t.watched_jobs).values(
                        cluster=cluster,
                        job_id=str(job_id),
                        chain_id=chain_id,
                        adopted=adopted,
                        added_at=now,
                    )
                )
        except IntegrityError:
            return False
        return True

    def set_held_since(self, cluster: str, job_id: str, held_since: float | None) -> None:
        """Record when the job was first seen held (None: it is not held any more)."""
        with self._engine.begin() as conn:
            conn.execute(
                update(t.watched_jobs)
                .where(t.watched_jobs.c.cluster == cluster,
                       t.watched_jobs.c.job_id == str(job_id))
                .values(held_since=held_since)
            )

    def remove(self, cluster: str, job_id: str) -> bool:
        with self._engine.begin() as conn:
            result = conn.execute(
                t.watched_jobs.delete().where(
                    and_(
                        t.watched_jobs.c.cluster == cluster,
                        t.watched_jobs.c.job_id == str(job_id),
                    )
                )
            )
        return result.rowcount == 1

    def list(self, cluster: str | None = None) -> list[WatchedJob]:
        query = select(t.watched_jobs)
        if cluster is not None:
            query = query.where(t.watched_jobs.c.cluster == cluster)
        return self._all(WatchedJob, query.order_by(t.watched_jobs.c.added_at))

    def get(self, cluster: str, job_id: str) -> WatchedJob | None:
        return self._one(
            WatchedJob,
            select(t.watched_jobs).where(
                and_(
                    t.watched_jobs.c.cluster == cluster,
                    t.watched_jobs.c.job_id == str(job_id),
                )
            ),
        )


_RELEASED = ""  # the holder of a released lease


class LeasesRepo(_Repo):
    """Named leases with an expiry, so that of several replicas on one database exactly one
    runs each scheduled job (`watch:<cluster>`, `holds`). Taking a lease is one conditional
    UPDATE (or one INSERT for a name never taken), atomic on SQLite and PostgreSQL alike.
    Expiry compares the callers' clocks: replicas need clocks in sync to well under a TTL.

    Each lease has an epoch, raised each time it changes holder (a takeover, or a take after a
    release). A holder fences its side effects with the epoch it took the lease under:
    `renew(name, holder, epoch, …)` succeeds only while the row still names both, so a replica
    that stalled past its TTL while another took over is refused by the database.
    A released lease keeps its row (holder `""`), so epochs never repeat."""

    def acquire(self, name: str, holder: str, now: float, ttl_s: float) -> int | None:
        """Take or renew `name` for `holder` until `now + ttl_s`: the epoch it is held under
        when it was free, expired, released or already `holder`'s; None while another
        holder's lease runs."""
        epoch = self._take(name, holder, now, ttl_s)
        if epoch is not None:
            return epoch
        if self.holder(name) is not None:  # another holder's lease runs
            return None
        try:
            with self._engine.begin() as conn:
                conn.execute(
                    insert(t.leases).values(
                        name=name, holder=holder, acquired_at=now, expires_at=now + ttl_s,
                        epoch=1,
                    )
                )
        except IntegrityError:  # another replica inserted it first: re-check, theirs stands
            return self._take(name, holder, now, ttl_s)
        return 1

    def _take(self, name: str, holder: str, now: float, ttl_s: float) -> int | None:
        """The conditional UPDATE: renew our lease or take a lapsed or released one (a new
        holder: epoch + 1); the epoch if it did. A missing row is not taken (`acquire`
        inserts it)."""
        lease = t.leases
        ours = lease.c.holder == holder
        with self._engine.begin() as conn:
            result = conn.execute(
                update(lease)
                .where(lease.c.name == name,
                       or_(ours, lease.c.holder == _RELEASED, lease.c.expires_at < now))
                .values(
                    holder=holder,
                    acquired_at=case((ours, lease.c.acquired_at), else_=now),
                    epoch=case((ours, lease.c.epoch), else_=lease.c.epoch + 1),
                    expires_at=now + ttl_s,
                )
            )
            if result.rowcount != 1:
                return None
            # Read in the transaction that took it: no other replica can move it meanwhile.
            return conn.execute(select(lease.c.epoch).where(lease.c.name == name)).scalar_one()

    def renew(self, name: str, holder: str, epoch: int, now: float, ttl_s: float) -> bool:
        """The fence: extend `name` to `now + ttl_s` only if `holder` still holds it under
        `epoch` (one conditional UPDATE). False once another replica took it over or it was
        released: the caller must not act. A lapsed lease nobody took is renewed (nobody
        acted meanwhile)."""
        lease = t.leases
        with self._engine.begin() as conn:
            result = conn.execute(
                update(lease)
                .where(lease.c.name == name, lease.c.holder == holder, lease.c.epoch == epoch)
                .values(expires_at=now + ttl_s)
            )
        return result.rowcount == 1

    def release(self, name: str, holder: str) -> bool:
        """Give `name` up at once (clean shutdown): any replica may take it, and `holder`'s
        epoch is void; False if `holder` did not hold it."""
        lease = t.leases
        with self._engine.begin() as conn:
            result = conn.execute(
                update(lease)
                .where(lease.c.name == name, lease.c.holder == holder)
                .values(holder=_RELEASED)
            )
        return result.rowcount == 1

    def holder(self, name: str) -> str | None:
        """Who last took `name` (its lease may have lapsed since); None if nobody holds it
        (never taken, or released)."""
        with self._engine.begin() as conn:
            holder = conn.execute(
                select(t.leases.c.holder).where(t.leases.c.name == name)
            ).scalar()
        return holder or None

    def epoch(self, name: str) -> int | None:
        """The epoch of `name` (raised on each change of holder); None if never taken."""
        with self._engine.begin() as conn:
            return conn.execute(select(t.leases.c.epoch).where(t.leases.c.name == name)).scalar()


class CommandClaimsRepo(_Repo):
    """Slash-command invocations claimed by key (Slack's trigger_id), shared by every replica
    on the database, so an invocation Slack delivers again (a late ack) is carried out once.
    A claim is one INSERT on the primary key: on SQLite and PostgreSQL alike exactly one of
    several concurrent claims of a key commits. Claims lapse after their TTL and are deleted
    by the next claim, so the table holds only the last TTL's commands."""

    def claim(self, key: str, holder: str, now: float, ttl_s: float) -> bool:
        """Claim `key` for `holder` until `now + ttl_s`; False if it is claimed already."""
        claims = t.command_claims
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(claims).where(claims.c.expires_at < now))
                conn.execute(insert(claims).values(key=key, holder=holder, claimed_at=now,
                                                   expires_at=now + ttl_s))
        except IntegrityError:  # claimed by another delivery: theirs stands
            return False
        return True

    def holder(self, key: str) -> str | None:
        """Who claimed `key` (None if nobody has, or the claim was deleted)."""
        with self._engine.begin() as conn:
            return conn.execute(
                select(t.command_claims.c.holder).where(t.command_claims.c.key == key)
            ).scalar()


class HomeViewersRepo(_Repo):
    """The users who opened the bot's App Home tab, shared by every replica on the database,
    so whichever replica sees a run change refreshes their tabs, also after a restart. A
    viewer who has not opened it for `ttl_s` is dropped by the next `record` (their tab is
    published again when they next open it)."""

    def record(self, user_id: str, now: float, ttl_s: float) -> None:
        """`user_id` opened (or clicked on) their Home tab at `now`."""
        viewers = t.home_viewers
        with self._engine.begin() as conn:
            conn.execute(delete(viewers).where(viewers.c.opened_at < now - ttl_s))
            if conn.execute(update(viewers).where(viewers.c.user_id == user_id)
                            .values(opened_at=now)).rowcount == 1:
                return
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(viewers).values(user_id=user_id, opened_at=now))
        except IntegrityError:  # another replica recorded the same opening first
            pass

    def since(self, cutoff: float) -> list[str]:
        """The users who opened their Home tab at or after `cutoff`, sorted."""
        viewers = t.home_viewers
        with self._engine.begin() as conn:
            return list(conn.execute(select(viewers.c.user_id)
                                     .where(viewers.c.opened_at >= cutoff)
                                     .order_by(viewers.c.user_id)).scalars())
