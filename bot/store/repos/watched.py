"""Jobs the watcher polls, per cluster."""

from __future__ import annotations

from sqlalchemy import and_, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.store import schema as t
from bot.store.repos.base import _Repo
from bot.store.rows import (
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
