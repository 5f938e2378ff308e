"""Jobs the watcher polls, per cluster, and the submits whose job is not recorded yet."""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from sqlalchemy import and_, delete, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from bot.core.submit_keys import NEWER_SUBMITS, claim_key, legacy_key, top_key
from bot.store import schema as t
from bot.store.repos.base import _insert_id, _Repo, _row
from bot.store.repos.replicas import sync_legacy
from bot.store.rows import (
    SubmitInFlight,
    WatchedJob,
)


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

    # The times a watched job's row keeps, the only columns _set_since writes.
    _SINCE_COLUMNS = frozenset({"held_since", "unreadable_since"})

    def set_held_since(self, cluster: str, job_id: str, held_since: float | None) -> None:
        """Record when the job was first seen held (None: it is not held any more)."""
        self._set_since(cluster, job_id, "held_since", held_since)

    def set_unreadable_since(self, cluster: str, job_id: str,
                             unreadable_since: float | None) -> None:
        """Record when the ended job's log or sampler file was first found unreadable or
        missing (None: its files read again)."""
        self._set_since(cluster, job_id, "unreadable_since", unreadable_since)

    def _set_since(self, cluster: str, job_id: str, column: str, since: float | None) -> None:
        """Write one of _SINCE_COLUMNS of the job's row (`column` is a name in this module,
        never one from input)."""
        if column not in self._SINCE_COLUMNS:
            raise ValueError(f"{column!r} is not one of {sorted(self._SINCE_COLUMNS)}")
        with self._engine.begin() as conn:
            conn.execute(
                update(t.watched_jobs)
                .where(t.watched_jobs.c.cluster == cluster,
                       t.watched_jobs.c.job_id == str(job_id))
                .values({column: since})
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


class AddedFlight(NamedTuple):
    """The run's submit in flight, and whether the call that returned it added it."""

    flight: SubmitInFlight
    new: bool


class SubmitsInFlightRepo(_Repo):
    """A person's submits between their sbatch and the attempt row that records the job
    (bot.services.submit.submit_recipe writes one before the sbatch and deletes it with the
    record), so one the bot died in is found by the job's name afterwards
    (bot.services.runs.recover_submits_in_flight)."""

    def add(self, *, cluster: str, recipe: str, job_name: str, chain_id: int | None,
            array_task: int | None, resumed_at: int | None, charge_retry: bool, actor: str,
            channel: str | None, sent_at: float, intent: str | None = None,
            command_at_most_s: float | None = None, holder: str | None = None) -> AddedFlight:
        """Keep a submit in flight from just before its sbatch; `new` False when a submit into
        the same run (`chain_id` and `array_task`: a run's jobs run one after another) is in
        flight already: that one comes back and nothing is added, so a second submit of a run
        is never sent while the first one's job is not recorded (a person's resume beside the
        watcher's automatic resubmit, two people pressing resume). A submit that starts a new
        run (no `chain_id`) is always added. Concurrent adds into one run (several replicas)
        see each other's: the chain's row is locked first (`FOR UPDATE` on PostgreSQL;
        SQLite's `BEGIN IMMEDIATE` already serialises writers), as AttemptsRepo.record does.
        `command_at_most_s`: one remote command's worst case as the sender counts it now
        (bot.core.takeover.RemoteDeadlines.command_at_most_s), kept for the lookup's bound.
        `holder`: the holder of the submit claim it is sent under (bot.services.submit_claim
        .submit_holder), which `remove` ends with the row."""
        c = t.submits_in_flight.c
        with self._engine.begin() as conn:
            if chain_id is not None:
                conn.execute(select(t.chains.c.id).where(t.chains.c.id == chain_id)
                             .with_for_update())
                task = c.array_task.is_(None) if array_task is None \
                    else c.array_task == array_task
                existing = conn.execute(select(t.submits_in_flight)
                                        .where(c.chain_id == chain_id, task)
                                        .order_by(c.sent_at, c.id).limit(1)).first()
                if existing is not None:
                    return AddedFlight(_row(SubmitInFlight, existing), new=False)
            flight_id = _insert_id(conn, insert(t.submits_in_flight).values(
                cluster=cluster, recipe=recipe, job_name=job_name, chain_id=chain_id,
                array_task=array_task, resumed_at=resumed_at, charge_retry=charge_retry,
                actor=actor, channel=channel, sent_at=sent_at, intent=intent,
                command_at_most_s=command_at_most_s, holder=holder))
            row = conn.execute(select(t.submits_in_flight).where(c.id == flight_id)).first()
        return AddedFlight(_row(SubmitInFlight, row), new=True)

    def remove(self, flight_id: int) -> bool:
        """Forget the submit (its job is recorded, or it is known not to have gone through);
        True for the one caller that removed it. That caller ends, in the same transaction,
        the submit claim the row was sent under (its key, bot.core.submit_keys.claim_key, held
        by its `holder`), so a recovery that settles the row does not leave it standing until
        it lapses; a claim of that key another submit took since (another holder) stays, and
        a row without a holder (written before schema 23) ends none. The hold of the key an
        older trainbot claims the recipe under, kept while the row was in flight, ends too,
        unless another newer submit of the recipe still holds its claim or keeps a row in
        flight (replicas.sync_legacy)."""
        c = t.submits_in_flight.c
        with self._engine.begin() as conn:
            row = conn.execute(select(c.recipe, c.chain_id, c.array_task, c.holder)
                               .where(c.id == flight_id)).first()
            result = conn.execute(t.submits_in_flight.delete().where(c.id == flight_id))
            if result.rowcount == 1 and row is not None:
                claims = t.command_claims.c
                key = claim_key(row.recipe, row.chain_id, row.array_task)
                if conn.dialect.name == "postgresql":  # serialised with the recipe's claims
                    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"),
                                 {"k": top_key(key)})
                if row.holder is not None:
                    conn.execute(delete(t.command_claims).where(claims.key == key,
                                                                claims.holder == row.holder))
                sync_legacy(conn, legacy_key(key), top_key(key), row.holder or NEWER_SUBMITS,
                            ended=True)
        return result.rowcount == 1

    def of_recipe(self, recipe: str) -> list[SubmitInFlight]:
        """The submits of `recipe` in flight, whichever run they go into, oldest first."""
        c = t.submits_in_flight.c
        return self._all(SubmitInFlight, select(t.submits_in_flight)
                         .where(c.recipe == recipe).order_by(c.sent_at, c.id))

    def sent_before(self, cluster: str, before: float) -> list[SubmitInFlight]:
        """The cluster's submits sent before `before`, oldest first."""
        c = t.submits_in_flight.c
        return self._all(SubmitInFlight, select(t.submits_in_flight)
                         .where(c.cluster == cluster, c.sent_at < before).order_by(c.sent_at))

    def elsewhere(self, clusters: Collection[str]) -> list[SubmitInFlight]:
        """The submits in flight on none of `clusters` (the configured ones), oldest first."""
        c = t.submits_in_flight.c
        return self._all(SubmitInFlight, select(t.submits_in_flight)
                         .where(c.cluster.not_in(list(clusters))).order_by(c.sent_at, c.id))

    def with_intent(self, cluster: str, intent: str, before: float) -> list[SubmitInFlight]:
        """The cluster's submits carrying out `intent` (an automatic resubmit's intent row, a
        cancel and resume's approval) sent before `before`, oldest first: the rows of
        `sent_before` with that intent, read by the intent's index (schema 20)."""
        c = t.submits_in_flight.c
        return self._all(SubmitInFlight, select(t.submits_in_flight)
                         .where(c.intent == intent, c.cluster == cluster, c.sent_at < before)
                         .order_by(c.sent_at))

    def legacy_of_run(self, cluster: str, chain_id: int, array_task: int | None, actor: str,
                      before: float) -> list[SubmitInFlight]:
        """The cluster's submits into the run (`chain_id`, `array_task`) made by `actor` and
        sent before `before` that carry no intent (written before schema 18, or a person's
        submit, which has none), oldest first: the rows of `sent_before` so, read by the
        intent's index (its NULLs) rather than the whole cluster's rows in flight."""
        c = t.submits_in_flight.c
        task = c.array_task.is_(None) if array_task is None else c.array_task == array_task
        return self._all(SubmitInFlight, select(t.submits_in_flight)
                         .where(c.intent.is_(None), c.cluster == cluster,
                                c.chain_id == chain_id, task, c.actor == actor,
                                c.sent_at < before)
                         .order_by(c.sent_at))
