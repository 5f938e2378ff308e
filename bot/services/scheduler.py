"""The bot's periodic jobs: APScheduler 3 behind domain verbs, and the one lease guard.

`JobScheduler.run_repeating(job_id, callback, every_s=…)` runs `callback(now)` every `every_s`
seconds (UTC, coalesced, one instance at a time, explicit job ids), and only while this
replica holds the lease named after the job (bot.services.leases): of several replicas on one
database, one runs each job. This is the single place where "run this job only while this
replica holds its lease" lives. A job that raises is logged and the next run goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from apscheduler.job import Job
from apscheduler.schedulers.background import BackgroundScheduler

from bot.services.leases import LeaseKeeper

log = logging.getLogger(__name__)

Callback = Callable[[float], Any]  # (now) -> anything


class JobScheduler:
    """Lease-guarded repeating jobs on a UTC BackgroundScheduler (coalesce, max_instances=1).

    `on_regained` (per job) runs before the first run after another replica held the job's
    lease, e.g. a watcher dropping what it kept in memory meanwhile.
    """

    def __init__(self, leases: LeaseKeeper, *, clock: Callable[[], float] = time.time) -> None:
        self.leases = leases
        self.clock = clock
        self._scheduler = BackgroundScheduler(
            timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})

    def run_repeating(self, job_id: str, callback: Callback, *, every_s: float,
                      on_regained: Callable[[], None] | None = None) -> Job:
        """Run `callback(now)` every `every_s` seconds while this replica holds lease
        `job_id`; returns the APScheduler job (its `func` runs one guarded run)."""
        return self._scheduler.add_job(
            self._guarded(job_id, callback, every_s, on_regained), "interval",
            seconds=every_s, id=job_id, replace_existing=True, coalesce=True, max_instances=1,
            misfire_grace_time=max(1, int(every_s)),
        )

    def _guarded(self, job_id: str, callback: Callback, every_s: float,
                 on_regained: Callable[[], None] | None) -> Callable[[], None]:
        held_last: list[bool] = []  # whether the previous run held the lease

        def run() -> None:
            try:
                now = self.clock()
                held = self.leases.holds(job_id, now, every_s)
                if held and held_last == [False] and on_regained is not None:
                    on_regained()
                held_last[:] = [held]
                if held:
                    callback(now)
            except Exception:  # a failed run is reported, and the next one still runs
                log.exception("scheduled job %s failed", job_id)

        return run

    def jobs(self) -> list[Job]:
        return self._scheduler.get_jobs()

    @property
    def timezone(self) -> Any:
        return self._scheduler.timezone

    def start(self) -> None:
        self._scheduler.start()

    def stop(self) -> None:
        """Stop scheduling and release this replica's leases, so another replica takes the
        jobs over on its next run instead of after the lease's TTL."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        self.leases.release_all()
