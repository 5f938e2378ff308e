"""The bot's periodic jobs: APScheduler 3 behind domain verbs, each run only in the replica
holding its lease, and the graceful stop."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from datetime import datetime
from typing import Any

from apscheduler.executors.pool import BasePoolExecutor
from apscheduler.job import Job
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.services.leases import LeaseFence, LeaseKeeper
from bot.services.ports import LeaseLost

log = logging.getLogger(__name__)

Callback = Callable[[float], Any]  # (now) -> anything

STOP_GRACE_S = 4.0  # how long a stop waits for the runs under way to end
# How long a stop waits for its leases' release: the store may be busy (another writer holding
# SQLite's lock; its busy timeout is 30 s), and the stop must end in time (bot.app's
# STOP_WITHIN_S); a release left unfinished lets the leases lapse after their TTL.
RELEASE_WAIT_S = 2.0


def bounded(what: str, call: Callable[[], None], timeout_s: float) -> bool:
    """`call()` in a daemon thread, waited for at most `timeout_s` (then logged and left to
    finish on its own, or with the process). True if it finished in time."""
    thread = threading.Thread(target=call, name=f"trainbot {what}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        log.warning("%s did not finish within %g s; going on without it", what, timeout_s)
        return False
    return True


class DaemonThreadExecutor(Executor):
    """A `concurrent.futures` executor running each call in a new daemon thread. Unlike a
    thread pool's workers, which the interpreter joins at exit, a call stuck in a remote
    operation does not keep a stopped bot from exiting. The bot's runs and its Slack
    listeners use it."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def target() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the future's owner
                future.set_exception(exc)

        threading.Thread(target=target, name=f"trainbot {getattr(fn, '__name__', 'call')}",
                         daemon=True).start()
        return future


class _DaemonRuns(BasePoolExecutor):
    """APScheduler's pool executor on daemon threads (max_instances still holds)."""

    def __init__(self) -> None:
        super().__init__(DaemonThreadExecutor())


class FromStartTrigger(IntervalTrigger):
    """Every interval, the first time at once: when the scheduler starts (the first fire time
    of a job added before the start is asked for then) or, on a running scheduler, when the
    job is added. APScheduler's IntervalTrigger would first fire an interval later."""

    def get_next_fire_time(self, previous_fire_time: datetime | None,
                           now: datetime) -> datetime | None:
        if previous_fire_time is None:
            return now
        next_time: datetime | None = super().get_next_fire_time(previous_fire_time, now)
        return next_time


class JobScheduler:
    """Lease-guarded repeating jobs on a UTC BackgroundScheduler (coalesce, max_instances=1).

    `on_regained` (per job) runs before the first run after another replica held the job's
    lease (or a run lost it), e.g. a watcher dropping what it kept in memory meanwhile.
    """

    def __init__(self, leases: LeaseKeeper, *, clock: Callable[[], float] = time.time) -> None:
        self.leases = leases
        self.clock = clock
        self._scheduler = BackgroundScheduler(
            timezone="UTC", executors={"default": _DaemonRuns()},
            job_defaults={"coalesce": True, "max_instances": 1})
        self._running = 0  # runs under way
        self._idle = threading.Condition()

    def fence(self, job_id: str) -> LeaseFence:
        """The fence of job `job_id`'s lease, for its side effects (bot.services.fencing)."""
        return self.leases.fence(job_id, self.clock)

    def run_repeating(self, job_id: str, callback: Callback, *, every_s: float,
                      on_regained: Callable[[], None] | None = None) -> Job:
        """Run `callback(now)` at the start, then every `every_s` seconds, while this
        replica holds lease `job_id`; returns the APScheduler job (its `func` runs one guarded
        run). The first run is right at `start()` (FromStartTrigger), not one interval later:
        a restarted bot watches, recovers lost submits and follows prompts up at once, also
        when a process killed on this host held the job's lease (a provably dead holder's
        lease is taken over at once; one of another host's lapses first: bot.services.leases).
        No jitter: the jobs added together run together at every tick anyway, each on its own
        thread, so the start adds no collision; no job waits for another or assumes another
        ran first (several replicas may run them)."""
        return self._scheduler.add_job(
            self._guarded(job_id, callback, every_s, on_regained),
            FromStartTrigger(seconds=every_s, timezone=self._scheduler.timezone),
            id=job_id, name=job_id, replace_existing=True, coalesce=True,
            max_instances=1,
            misfire_grace_time=max(1, int(every_s)),
        )

    def _guarded(self, job_id: str, callback: Callback, every_s: float,
                 on_regained: Callable[[], None] | None) -> Callable[[], None]:
        held_last: list[bool] = []  # whether the previous run held the lease to its end

        def run() -> None:
            with self._idle:
                self._running += 1
            try:
                now = self.clock()
                held = self.leases.holds(job_id, now, every_s)
                if held and held_last == [False] and on_regained is not None:
                    on_regained()
                held_last[:] = [held]
                if held:
                    callback(now)
            except LeaseLost as exc:  # another replica runs the job now, or we are stopping
                held_last[:] = [False]
                log.warning("scheduled job %s stopped: %s", job_id, exc)
            except Exception:  # a failed run is reported, and the next one still runs
                log.exception("scheduled job %s failed", job_id)
            finally:
                with self._idle:
                    self._running -= 1
                    self._idle.notify_all()

        return run

    def jobs(self) -> list[Job]:
        return self._scheduler.get_jobs()

    @property
    def timezone(self) -> Any:
        return self._scheduler.timezone

    def start(self) -> None:
        self._scheduler.start()

    @property
    def running(self) -> bool:
        """Started, and not stopping (the liveness of `trainbot run`)."""
        return bool(self._scheduler.running) and not self.leases.stopping

    def stop(self, grace_s: float = STOP_GRACE_S, release_s: float = RELEASE_WAIT_S) -> bool:
        """Stop (see module doc): no new run, no new side effect; wait up to `grace_s` for
        the runs under way to end; then release this replica's leases, waiting up to
        `release_s` for the store (a busy store finishes the release later if the process
        still runs, else the leases lapse after their TTL), so another replica takes the
        jobs over on its next run instead of after the TTL (a lease whose side effect is
        still under way lapses instead; a run still taking its lease, past its stopping
        check, gives the lease back at once: LeaseKeeper.holds). True if every run had
        ended."""
        self.leases.stop()
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
        with self._idle:
            ended = self._idle.wait_for(lambda: self._running == 0, timeout=grace_s)
        if not ended:
            log.warning("%d scheduled run(s) still under way after %g s; stopping without "
                        "them (they make no further side effect)", self._running, grace_s)
        bounded("releasing the leases", self.leases.release_all, release_s)
        return ended
