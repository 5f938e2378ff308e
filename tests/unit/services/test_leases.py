"""Leases for several replicas on one database: each scheduled job (`watch:<cluster>`,
`holds`) runs in exactly one replica, and another takes it over when the holder stops.

Each replica is its own `Store.open` handle (its own engine and connections) on one database,
a SQLite file and a PostgreSQL database (`store_url`, tests/conftest.py); clocks are injected,
nothing sleeps.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest
import yaml
from fakes import FakeSlurm, fake_slurm, make_context
from sqlalchemy import event
from support.race import winners_of_race

import bot.app
import bot.services.competitors as competitors
from bot.app import build_scheduler
from bot.cli import EXIT_OK, build_parser
from bot.cli import run as run_cmd
from bot.config import Config
from bot.services.leases import LeaseKeeper, lease_ttl, process_holder
from bot.services.ports import LeaseLost
from bot.services.scheduler import JobScheduler
from bot.store import Store
from bot.store.repos.replicas import LeasesRepo

LEASE = "watch:alpha"


# ------------------------------------------------------------------------------ the repository


def test_a_lease_is_renewed_by_its_holder_and_refused_to_another_until_it_lapses(replica_stores
                                                                                ) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, "A", now=100.0, ttl_s=30.0)  # free: taken
    assert b.leases.holder(LEASE) == "A"
    assert not b.leases.acquire(LEASE, "B", now=110.0, ttl_s=30.0)
    assert a.leases.acquire(LEASE, "A", now=120.0, ttl_s=30.0)  # renewed: until 150
    assert not b.leases.acquire(LEASE, "B", now=140.0, ttl_s=30.0)  # unrenewed, it lapsed at 130
    assert not b.leases.acquire(LEASE, "B", now=150.0, ttl_s=30.0)  # still A's at its expiry
    assert b.leases.acquire(LEASE, "B", now=150.5, ttl_s=30.0)  # lapsed: taken over
    assert a.leases.holder(LEASE) == "B"
    assert not a.leases.acquire(LEASE, "A", now=151.0, ttl_s=30.0)  # A lost it


def test_a_renewal_keeps_when_the_lease_was_taken_and_a_takeover_restarts_it(
        replica_stores) -> None:
    a, b = replica_stores

    def times() -> tuple[float, float]:
        with a.engine.begin() as conn:
            row = conn.exec_driver_sql("SELECT acquired_at, expires_at FROM leases").one()
        return row.acquired_at, row.expires_at

    a.leases.acquire(LEASE, "A", now=100.0, ttl_s=30.0)
    a.leases.acquire(LEASE, "A", now=120.0, ttl_s=30.0)
    assert times() == (100.0, 150.0)
    b.leases.acquire(LEASE, "B", now=200.0, ttl_s=60.0)
    assert times() == (200.0, 260.0)


def test_a_released_lease_is_free_at_once_and_only_its_holder_can_release_it(replica_stores
                                                                            ) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, "A", now=100.0, ttl_s=30.0)
    assert not b.leases.release(LEASE, "B")  # not B's to give up
    assert not b.leases.acquire(LEASE, "B", now=101.0, ttl_s=30.0)
    assert a.leases.release(LEASE, "A")  # clean shutdown
    assert a.leases.holder(LEASE) is None
    assert b.leases.acquire(LEASE, "B", now=101.0, ttl_s=30.0)  # long before the TTL
    assert not a.leases.release(LEASE, "A")


def test_leases_are_independent_by_name(replica_stores) -> None:
    a, b = replica_stores
    assert a.leases.acquire("watch:alpha", "A", now=100.0, ttl_s=30.0)
    assert b.leases.acquire("watch:beta", "B", now=100.0, ttl_s=30.0)
    assert (a.leases.holder("watch:beta"), b.leases.holder("watch:alpha")) == ("B", "A")


def test_the_epoch_rises_with_each_new_holder_and_never_repeats(replica_stores) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, "A", now=100.0, ttl_s=30.0) == 1
    assert a.leases.acquire(LEASE, "A", now=120.0, ttl_s=30.0) == 1  # renewed
    assert a.leases.acquire(LEASE, "A", now=200.0, ttl_s=30.0) == 1  # lapsed, nobody took it
    assert b.leases.acquire(LEASE, "B", now=300.0, ttl_s=30.0) == 2  # taken over
    assert b.leases.release(LEASE, "B")
    assert b.leases.epoch(LEASE) == 2
    assert b.leases.acquire(LEASE, "B", now=301.0, ttl_s=30.0) == 3  # released: a new take
    assert a.leases.acquire(LEASE, "A", now=302.0, ttl_s=30.0) is None


def test_a_renewal_under_a_stale_epoch_or_after_a_release_is_refused(replica_stores) -> None:
    """The fence: only the holder, under the epoch it took the lease with, may renew it."""
    a, b = replica_stores
    epoch_a = a.leases.acquire(LEASE, "A", now=100.0, ttl_s=30.0)
    assert a.leases.renew(LEASE, "A", epoch_a, now=125.0, ttl_s=30.0)  # until 155
    assert not b.leases.acquire(LEASE, "B", now=150.0, ttl_s=30.0)
    assert a.leases.renew(LEASE, "A", epoch_a, now=190.0, ttl_s=30.0)  # lapsed, not taken
    assert not b.leases.renew(LEASE, "B", epoch_a, now=190.0, ttl_s=30.0)  # not B's
    epoch_b = b.leases.acquire(LEASE, "B", now=300.0, ttl_s=30.0)
    assert epoch_b == epoch_a + 1
    assert not a.leases.renew(LEASE, "A", epoch_a, now=301.0, ttl_s=30.0)  # A stalled: refused
    assert b.leases.holder(LEASE) == "B"
    assert b.leases.release(LEASE, "B")
    assert not b.leases.renew(LEASE, "B", epoch_b, now=302.0, ttl_s=30.0)
    assert b.leases.holder(LEASE) is None


@pytest.mark.parametrize("before", ["never taken", "lapsed"])
def test_replicas_racing_for_a_lease_at_the_same_instant_get_exactly_one_winner(
        store_url, before) -> None:
    n = 8
    stores = [Store.open(store_url) for _ in range(n)]
    if before == "lapsed":  # the race is on the conditional UPDATE, not the INSERT
        stores[0].leases.acquire(LEASE, "dead", now=0.0, ttl_s=30.0)
    try:
        [winner] = winners_of_race([  # exactly one
            partial(lambda i: stores[i].leases.acquire(LEASE, f"R{i}", now=100.0,
                                                       ttl_s=30.0) is not None, i)
            for i in range(n)])
        assert stores[0].leases.holder(LEASE) == f"R{winner}"
    finally:
        for s in stores:
            s.close()


# ------------------------------------------------------------------------------ the keeper


def test_the_holder_name_is_host_pid_random_boot_namespace_start_made_once_per_process(
        ) -> None:
    import os
    import socket

    host, pid, rand, boot, ns, start = process_holder().split(":")
    assert (host, pid) == (socket.gethostname(), str(os.getpid())) and len(rand) == 8
    if os.path.exists("/proc/self/stat"):  # read from /proc: tests/unit/ops/test_procfs.py
        with open("/proc/sys/kernel/random/boot_id") as f:
            assert boot == f.read().strip()
        assert ns.isdigit() and start.isdigit()
    assert process_holder() == process_holder()


def test_a_lease_lasts_three_runs_and_at_least_30_s() -> None:
    assert lease_ttl(60.0) == 180.0
    assert lease_ttl(5.0) == 30.0


def test_the_keeper_logs_once_when_ownership_changes_and_quietly_skips(replica_stores, caplog
                                                                      ) -> None:
    a, b = replica_stores
    keeper_a, keeper_b = LeaseKeeper(a.leases, holder="A"), LeaseKeeper(b.leases, holder="B")
    caplog.set_level(logging.DEBUG, logger="bot.services.leases")
    assert keeper_a.holds(LEASE, 100.0, every_s=30.0)
    assert not keeper_b.holds(LEASE, 100.0, every_s=30.0)
    assert keeper_a.holds(LEASE, 130.0, every_s=30.0)
    assert not keeper_b.holds(LEASE, 130.0, every_s=30.0)
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert info == [f"{LEASE}: this replica (A) runs it now",
                    f"{LEASE}: run by replica A; this one (B) stands by"]
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug == [f"{LEASE}: skipped, another replica holds the lease"]
    keeper_a.release_all()
    assert a.leases.holder(LEASE) is None
    assert keeper_b.holds(LEASE, 131.0, every_s=30.0)
    assert caplog.records[-1].getMessage() == f"{LEASE}: this replica (B) runs it now"


def test_a_fence_refuses_the_side_effects_of_a_replica_whose_lease_was_taken_over(
        replica_stores, caplog) -> None:
    a, b = replica_stores
    now = [100.0]
    keeper_a, keeper_b = LeaseKeeper(a.leases, holder="A"), LeaseKeeper(b.leases, holder="B")
    fence = keeper_a.fence(LEASE, lambda: now[0])
    assert keeper_a.holds(LEASE, now[0], every_s=10.0)  # TTL 30 s
    done: list[str] = []
    with fence.acting("sbatch"):
        done.append("sbatch@100")
    now[0] = 200.0  # A stalled in a slow call: B takes the job over
    assert keeper_b.holds(LEASE, 200.0, every_s=10.0)
    with pytest.raises(LeaseLost, match="sbatch refused"), fence.acting("sbatch"):
        done.append("sbatch@200")
    with pytest.raises(LeaseLost):
        fence.heartbeat()
    assert done == ["sbatch@100"]
    assert b.leases.holder(LEASE) == "B"
    assert any("lost the lease (epoch 1)" in r.getMessage() for r in caplog.records)


def test_heartbeats_keep_a_long_run_its_lease(replica_stores) -> None:
    a, b = replica_stores
    now = [100.0]
    keeper_a, keeper_b = LeaseKeeper(a.leases, holder="A"), LeaseKeeper(b.leases, holder="B")
    fence = keeper_a.fence(LEASE, lambda: now[0])
    assert keeper_a.holds(LEASE, now[0], every_s=10.0)  # until 130
    for t in range(110, 400, 10):  # a run of 5 minutes, a step every 10 s
        now[0] = float(t)
        fence.heartbeat()
        assert not keeper_b.holds(LEASE, now[0] + 1, every_s=10.0)
    with fence.acting("Slack post"):
        pass


def test_a_stopping_keeper_starts_no_side_effect_and_keeps_a_lease_whose_side_effect_runs(
        replica_stores) -> None:
    a, b = replica_stores
    now = [100.0]
    keeper = LeaseKeeper(a.leases, holder="A")
    watch, holds = keeper.fence(LEASE, lambda: now[0]), keeper.fence("holds", lambda: now[0])
    assert keeper.holds(LEASE, now[0], every_s=10.0) and keeper.holds("holds", 100.0, 10.0)
    with watch.acting("sbatch"):  # under way while the replica stops
        keeper.stop()
        with pytest.raises(LeaseLost, match="stopping"), holds.acting("scontrol release 7"):
            pass
        with pytest.raises(LeaseLost, match="stopping"):
            holds.heartbeat()
        keeper.release_all()
        assert b.leases.holder("holds") is None  # released: taken over at once
        assert b.leases.holder(LEASE) == "A"  # kept while the sbatch may still go out
        assert not LeaseKeeper(b.leases, holder="B").holds(LEASE, 101.0, every_s=10.0)
    assert not keeper.holds("holds", 101.0, every_s=10.0)


def test_a_stop_ends_a_long_run_at_its_next_step_then_releases_the_lease(replica_stores,
                                                                        caplog) -> None:
    a, b = replica_stores
    scheduler = JobScheduler(LeaseKeeper(a.leases, holder="A"), clock=lambda: 1000.0)
    fence = scheduler.fence(LEASE)
    steps: list[int] = []

    def long_tick(now: float) -> None:
        while len(steps) < 100_000:
            fence.heartbeat()  # between steps
            steps.append(1)
            time.sleep(0.005)

    run = threading.Thread(target=scheduler.run_repeating(LEASE, long_tick, every_s=30).func,
                           daemon=True)
    run.start()
    while not steps:
        time.sleep(0.005)
    started = time.monotonic()
    assert scheduler.stop(grace_s=5.0)  # the run ended in time
    assert time.monotonic() - started < 2.5  # at its next step, not at the end of the grace
    run.join(5)
    assert not run.is_alive() and b.leases.holder(LEASE) is None
    assert any("stopped: watch:alpha: the next step refused: this replica is stopping"
               in r.getMessage() for r in caplog.records)


def test_a_stop_waits_for_a_stuck_run_no_longer_than_its_grace(replica_stores) -> None:
    a, b = replica_stores
    scheduler = JobScheduler(LeaseKeeper(a.leases, holder="A"), clock=lambda: 1000.0)
    entered, unstuck = threading.Event(), threading.Event()

    def stuck_tick(now: float) -> None:  # e.g. waiting on a hung SSH read
        entered.set()
        unstuck.wait(10)

    run = threading.Thread(target=scheduler.run_repeating(LEASE, stuck_tick, every_s=30).func,
                           daemon=True)
    run.start()
    assert entered.wait(5)
    started = time.monotonic()
    assert not scheduler.stop(grace_s=0.3)
    assert 0.3 <= time.monotonic() - started < 2.0
    assert b.leases.holder(LEASE) is None  # no side effect under way: released
    unstuck.set()
    run.join(5)


def stall_takes(leases: LeasesRepo, *, until: threading.Event, land_first: bool = False
                ) -> threading.Event:
    """Each take of a lease through `leases` (acquire_or_holder) stalls, as on a slow
    database, until `until` is set (10 s at most), then lands; with `land_first` it lands at
    once and only its answer waits (the stop coming between the take and its bookkeeping).
    The event set once a take has begun."""
    take = leases.acquire_or_holder
    at_take = threading.Event()

    def stalled_take(name: str, holder: str, now: float, ttl_s: float
                     ) -> tuple[int | None, str | None]:
        found = take(name, holder, now, ttl_s) if land_first else None
        at_take.set()
        assert until.wait(10)
        return found or take(name, holder, now, ttl_s)

    leases.acquire_or_holder = stalled_take  # type: ignore[method-assign]
    return at_take


@pytest.mark.parametrize("stop_comes", ["before the take", "after the take"])
def test_a_run_whose_take_stalls_past_the_stop_leaves_the_other_replica_the_lease_at_once(
        replica_stores, caplog, stop_comes) -> None:
    """A's run passes the keeper's stopping check, then its take stalls (a slow database)
    past the stop's grace and `release_all`; the take lands after them ("before the take":
    the stop comes before the store takes it; "after the take": between the take and its
    bookkeeping). The job does not run, and B takes the lease right after the stop, not
    after its TTL."""
    a, b = replica_stores
    caplog.set_level(logging.INFO, logger="bot.services.leases")
    keeper = LeaseKeeper(a.leases, holder="A")
    scheduler = JobScheduler(keeper, clock=lambda: 1000.0)
    stopped = threading.Event()
    at_take = stall_takes(a.leases, until=stopped, land_first=stop_comes == "after the take")
    ran: list[float] = []
    run = threading.Thread(target=scheduler.run_repeating(LEASE, ran.append, every_s=30).func,
                           daemon=True)
    run.start()
    assert at_take.wait(10)
    assert not scheduler.stop(grace_s=0)  # the run is still under way: past the grace
    stopped.set()
    run.join(10)
    assert not run.is_alive()
    assert LeaseKeeper(b.leases, holder="B").holds(LEASE, 1001.0, every_s=30)  # not at 1090
    assert b.leases.holder(LEASE) == "B"
    assert ran == []  # a run the stop came into does not start the job
    if stop_comes == "before the take":
        assert ("watch:alpha: taken while this replica (A) was stopping (epoch 1): released "
                "at once" in caplog.text)


def test_a_take_stalled_past_the_stop_keeps_a_lease_whose_side_effect_is_under_way(
        replica_stores) -> None:
    """As above, but an sbatch under A's lease is still under way at the stop: `release_all`
    leaves that lease A's, and the late take does not give it back either (B must not act
    before the sbatch has ended)."""
    a, b = replica_stores
    keeper = LeaseKeeper(a.leases, holder="A")
    assert keeper.holds(LEASE, 1000.0, every_s=30)
    stopped = threading.Event()
    at_take = stall_takes(a.leases, until=stopped)
    late: list[bool] = []
    with keeper.fence(LEASE, lambda: 1000.0).acting("sbatch"):
        run = threading.Thread(target=lambda: late.append(keeper.holds(LEASE, 1000.5, 30)),
                               daemon=True)
        run.start()
        assert at_take.wait(10)
        keeper.stop()
        keeper.release_all()
        stopped.set()
        run.join(10)
        assert late == [False]
        assert b.leases.holder(LEASE) == "A"
        assert not LeaseKeeper(b.leases, holder="B").holds(LEASE, 1001.0, every_s=30)


def test_a_lease_left_to_its_side_effect_at_the_stop_is_renewed_then_released_when_it_ends(
        replica_stores, caplog) -> None:
    """An sbatch under A's lease is under way when A stops (its grace over, `release_all`
    run): the lease stays A's and is renewed while the sbatch runs (B must not act before it
    has ended); once the sbatch ends, the lease is released at once, not renewed again, and
    B takes the job over on its next run. Before, the lease stayed marked busy for the rest
    of the process: never released (B waited out its TTL, 90 s at a 30-s tick) and renewed
    by nobody."""
    a, b = replica_stores
    caplog.set_level(logging.INFO, logger="bot.services.leases")
    keeper, keeper_b = LeaseKeeper(a.leases, holder="A"), LeaseKeeper(b.leases, holder="B")
    assert keeper.holds(LEASE, 1000.0, every_s=30)
    with keeper.fence(LEASE, lambda: 1000.0).acting("sbatch"):
        keeper.stop()
        keeper.release_all()
        assert keeper.renew(LEASE, 1080.0)  # the background renewal during the sbatch
        assert not keeper_b.holds(LEASE, 1100.0, every_s=30)  # not lapsed at 1090: renewed
        assert b.leases.holder(LEASE) == "A"
    assert b.leases.holder(LEASE) is None  # the sbatch ended: released at once
    assert not keeper.renew(LEASE, 1101.0)  # and not renewed from then on
    assert b.leases.holder(LEASE) is None
    assert keeper_b.holds(LEASE, 1101.0, every_s=30)  # taken over at B's next run
    assert "watch:alpha: its side effects under way at the stop have ended: released" \
        in caplog.text


def test_a_take_stalled_past_the_stop_gives_back_a_lease_whose_side_effect_has_ended(
        replica_stores) -> None:
    """A's sbatch is under way at the stop, and a run of A's whose take stalled lands after
    the sbatch ended: the lease is given back at once, as any lease taken while stopping (the
    job does not run), and B takes it. Before, the lease stayed marked busy for the rest of
    the process: the late take kept it A's, and B waited out its TTL."""
    a, b = replica_stores
    keeper = LeaseKeeper(a.leases, holder="A")
    assert keeper.holds(LEASE, 1000.0, every_s=30)
    sbatch_ended = threading.Event()
    at_take = stall_takes(a.leases, until=sbatch_ended)
    late: list[bool] = []
    run = threading.Thread(target=lambda: late.append(keeper.holds(LEASE, 1000.5, 30)),
                           daemon=True)
    with keeper.fence(LEASE, lambda: 1000.0).acting("sbatch"):
        run.start()
        assert at_take.wait(10)
        keeper.stop()
        keeper.release_all()
    sbatch_ended.set()
    run.join(10)
    assert late == [False]
    assert b.leases.holder(LEASE) is None
    assert LeaseKeeper(b.leases, holder="B").holds(LEASE, 1001.0, every_s=30)


def test_a_side_effect_whose_renewal_failed_leaves_its_lease_to_be_released_at_the_stop(
        replica_stores) -> None:
    """The database fails the renewal that starts A's sbatch (the sbatch is not sent, the
    run fails); A then stops cleanly: the lease is released, B takes it over at once. Before,
    the failed renewal left the lease counted busy, so the stop left it to lapse after its
    TTL."""
    a, b = replica_stores
    keeper = LeaseKeeper(a.leases, holder="A")
    assert keeper.holds(LEASE, 1000.0, every_s=30)
    renew = a.leases.renew

    def database_gone(*args: Any, **kwargs: Any) -> bool:
        raise ConnectionError("server closed the connection unexpectedly")

    a.leases.renew = database_gone
    sent: list[str] = []
    with pytest.raises(ConnectionError), keeper.fence(LEASE, lambda: 1000.0).acting("sbatch"):
        sent.append("sbatch")
    a.leases.renew = renew
    assert sent == []
    keeper.stop()
    keeper.release_all()
    assert b.leases.holder(LEASE) is None
    assert LeaseKeeper(b.leases, holder="B").holds(LEASE, 1001.0, every_s=30)


# ------------------------------------------------------------------------------ two schedulers


def config_data() -> dict[str, Any]:
    cluster = {"host": "127.0.0.1", "port": 2222, "user": "slurmci", "key_file": "/nonexistent"}
    recipe = {"sbatch_script": "/home/slurmci/train.sbatch", "owners": ["U0OWNER"]}
    return {
        "clusters": {"alpha": cluster},
        "recipes": {"slow": {**recipe, "cluster": "alpha"}},
        "policy": {"tick_s": 30},
    }


class Replica:
    """One `trainbot run` replica's scheduler on its own store handle, run by hand."""

    def __init__(self, url: str, holder: str, clock: Any) -> None:
        self.store = Store.open(url)
        self.ctx = make_context(self.store, {"alpha": FakeSlurm()},
                                config=Config.model_validate(config_data()), slack=False)
        self.leases = LeaseKeeper(self.store.leases, holder=holder)
        scheduler = build_scheduler(self.ctx, clock=clock, leases=self.leases)
        self.jobs = {job.id: job for job in scheduler.jobs()}

    def tick(self) -> None:
        for job in self.jobs.values():
            job.func()

    @property
    def slurm_calls(self) -> int:
        return len(fake_slurm(self.ctx, "alpha").acted("jobs"))


def test_two_replicas_on_one_database_run_each_job_in_one_and_fail_over_after_the_ttl(
        store_url, monkeypatch) -> None:
    released: list[Store] = []  # which replica ran the `holds` job
    monkeypatch.setattr(competitors, "release_started",
                        lambda services, now: released.append(services.store))
    now = [1000.0]
    a, b = Replica(store_url, "A", lambda: now[0]), Replica(store_url, "B", lambda: now[0])
    chain = a.store.chains.create(recipe="slow", cluster="alpha", job_name="slow", now=1.0)
    a.store.attempts.record(chain_id=chain.id, job_id="4242", now=1.0)
    a.store.watched_jobs.add("alpha", "4242", now=1000.0, chain_id=chain.id)
    try:
        for k in range(4):  # both replicas tick every 30 s, in either order
            now[0] = 1000.0 + 30 * k
            first, second = (a, b) if k % 2 == 0 else (b, a)
            first.tick()
            second.tick()
        assert (a.slurm_calls, b.slurm_calls) == (4, 0)
        assert len(released) == 4 and all(r is a.store for r in released)

        # A dies after its tick at 1090: its leases (TTL 90 s) lapse at 1180.
        for t in (1120.0, 1150.0, 1180.0):
            now[0] = t
            b.tick()
        assert b.slurm_calls == 0
        now[0] = 1210.0
        b.tick()
        assert b.slurm_calls == 1 and len(released) == 5 and released[-1] is b.store
        assert {b.store.leases.holder(n) for n in ("watch:alpha", "holds")} == {"B"}
    finally:
        a.store.close()
        b.store.close()


def test_two_replicas_started_together_run_a_job_at_once_in_one_of_them(replica_stores) -> None:
    """Each replica's first run of a job is at its start, not a tick (an hour here) later;
    the lease still lets one of them act, the other stands by."""
    acted: list[str] = []
    checked = threading.Semaphore(0)

    class Keeper(LeaseKeeper):
        def holds(self, name: str, now: float, every_s: float) -> bool:
            held = super().holds(name, now, every_s)
            checked.release()
            return held

    schedulers = [JobScheduler(Keeper(store.leases, holder=holder))
                  for store, holder in zip(replica_stores, "AB", strict=True)]
    for scheduler, holder in zip(schedulers, "AB", strict=True):
        scheduler.run_repeating(LEASE, partial(lambda h, now: acted.append(h), holder),
                                every_s=3600)
    for scheduler in schedulers:
        scheduler.start()
    try:  # a hang guard: the next runs are an hour away
        assert checked.acquire(timeout=30) and checked.acquire(timeout=30), "a run waited"
    finally:
        for scheduler in schedulers:
            scheduler.stop()  # waits for the runs under way
    assert len(acted) == 1


def test_a_replica_shutting_down_cleanly_hands_its_jobs_over_at_once(store_url) -> None:
    now = [1000.0]
    a, b = Replica(store_url, "A", lambda: now[0]), Replica(store_url, "B", lambda: now[0])
    a.store.watched_jobs.add("alpha", "4242", now=1000.0)
    try:
        a.tick()
        b.tick()
        a.leases.release_all()
        now[0] = 1030.0
        b.tick()
        assert (a.slurm_calls, b.slurm_calls) == (1, 1)
    finally:
        a.store.close()
        b.store.close()


def test_overlapping_checks_of_one_lease_recorded_out_of_order_still_release_it_at_stop(
        replica_stores) -> None:
    """Two runs of one job overlap in one replica (the scheduler's first run at its start and
    another): the first finds B's lease at 1000, the second takes it over at 1100 (it lapsed
    at 1090), and the first records its result last. The store says A holds it: a clean stop
    releases it, so B takes the job at once instead of after the TTL."""
    a_store, b_store = replica_stores
    assert b_store.leases.acquire(LEASE, "B", now=1000.0, ttl_s=90.0)
    keeper = LeaseKeeper(a_store.leases, holder="A")
    take = a_store.leases.acquire_or_holder
    second: list[bool] = []

    def first_take_then_the_overlapping_run(name: str, holder: str, now: float, ttl_s: float
                                            ) -> tuple[int | None, str | None]:
        found = take(name, holder, now, ttl_s)
        if not second:  # the first run, between its take and its bookkeeping
            a_store.leases.acquire_or_holder = take
            second.append(keeper.holds(LEASE, 1100.0, every_s=30))
        return found

    a_store.leases.acquire_or_holder = (
        first_take_then_the_overlapping_run)
    assert not keeper.holds(LEASE, 1000.0, every_s=30)
    assert second == [True]
    assert b_store.leases.holder(LEASE) == "A"
    keeper.stop()
    keeper.release_all()
    assert b_store.leases.holder(LEASE) is None
    assert b_store.leases.acquire(LEASE, "B", now=1101.0, ttl_s=90.0)


@pytest.mark.integration
def test_a_take_that_reads_its_own_holder_after_its_update_failed_takes_it(
        postgres_store_url: str, caplog) -> None:
    """PostgreSQL (read committed): A's UPDATE finds B's lease unlapsed at 1000, then an
    overlapping run of A's takes it over at 1100 before A's take reads the holder. That take
    reads A itself: it is A's lease, renewed, and A does not stand by for itself. PostgreSQL
    only: SQLite's BEGIN IMMEDIATE lets nothing in between."""
    a_store, b_store = Store.open(postgres_store_url), Store.open(postgres_store_url)
    try:
        _take_reading_its_own_holder(a_store, b_store, caplog)
    finally:
        a_store.close()
        b_store.close()


def _take_reading_its_own_holder(a_store: Store, b_store: Store, caplog: Any) -> None:
    assert b_store.leases.acquire(LEASE, "B", now=1000.0, ttl_s=90.0)
    overlapping = Store.open(a_store.url)
    fired: list[int | None] = []

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not fired and statement.startswith("UPDATE leases") and cursor.rowcount == 0:
            fired.append(overlapping.leases.acquire(LEASE, "A", now=1100.0, ttl_s=90.0))

    event.listen(a_store.engine, "after_cursor_execute", after)
    try:
        keeper = LeaseKeeper(a_store.leases, holder="A")
        caplog.set_level(logging.INFO, logger="bot.services.leases")
        assert keeper.holds(LEASE, 1000.0, every_s=30)
    finally:
        event.remove(a_store.engine, "after_cursor_execute", after)
        overlapping.close()
    assert fired == [2]
    assert "stands by" not in caplog.text
    keeper.release_all()
    assert b_store.leases.holder(LEASE) is None


def trainbot_run(tmp_path: Any, monkeypatch: Any, store_url: str,
                 serve: Callable[[JobScheduler], None]) -> int:
    """`trainbot run` (its exit code) on the store at `store_url`, Slack stood in: while it
    would serve, `serve` gets its scheduler (and ends the run, e.g. with Ctrl-C)."""
    path = tmp_path / "trainbot.yaml"
    path.write_text(yaml.safe_dump({**config_data(), "store": {"url": store_url}}))
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test")
    schedulers: list[JobScheduler] = []
    real_build = bot.app.build_scheduler

    def spy_build(*args: Any, **kw: Any) -> JobScheduler:
        schedulers.append(real_build(*args, **kw))
        return schedulers[-1]

    monkeypatch.setattr(bot.app, "build_scheduler", spy_build)
    monkeypatch.setattr(bot.app, "build_app", lambda config, services, **kw: object())
    monkeypatch.setattr(bot.app, "start", lambda app, config, http_port: serve(schedulers[0]))
    return run_cmd.run(build_parser(only="run").parse_args(["run", "--config", str(path)]))


def test_trainbot_run_takes_the_leases_and_releases_them_when_stopped(
        tmp_path, store_url, monkeypatch) -> None:
    held: dict[str, str | None] = {}

    def serve_then_stop(scheduler: JobScheduler) -> None:
        for job in scheduler.jobs():  # each job runs once, as the scheduler would
            job.func()
        with Store.open(store_url) as other:
            held.update({n: other.leases.holder(n) for n in ("holds", "watch:alpha")})
        raise KeyboardInterrupt  # Ctrl-C

    assert trainbot_run(tmp_path, monkeypatch, store_url, serve_then_stop) == EXIT_OK
    assert held == {"holds": process_holder(), "watch:alpha": process_holder()}
    with Store.open(store_url) as other:
        assert other.leases.holder("holds") is None
        assert other.leases.holder("watch:alpha") is None


@contextmanager
def another_writer(db: Any) -> Iterator[None]:
    """Another connection holding the SQLite file's write lock (another replica or `trainbot`
    command mid-write), for the block: the bot's writes wait on it (busy timeout 30 s)."""
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_stop_on_a_busy_store_ends_in_time_and_releases_the_leases_when_the_store_frees(
        tmp_path, caplog) -> None:
    """The release of the leases waits at most RELEASE_WAIT_S for a store another writer holds
    (not SQLite's 30 s busy timeout), so the stop keeps its bound (STOP_WITHIN_S); the
    release still lands once the store frees, if the process runs on."""
    db = tmp_path / "state.db"
    with Store.open(f"sqlite:///{db}") as store:
        scheduler = JobScheduler(LeaseKeeper(store.leases, holder="A"), clock=lambda: 1000.0)
        assert scheduler.leases.holds(LEASE, 1000.0, every_s=30.0)
        with another_writer(db):
            started = time.monotonic()
            assert scheduler.stop(grace_s=0.1, release_s=0.5)
            assert time.monotonic() - started < 2.0
        assert "releasing the leases did not finish within 0.5 s" in caplog.text
        deadline = time.monotonic() + 10
        while store.leases.holder(LEASE) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.leases.holder(LEASE) is None


def test_trainbot_run_stops_within_its_bound_while_another_writer_holds_the_store(
        tmp_path, monkeypatch) -> None:
    """Ctrl-C (or SIGTERM) while another writer holds the SQLite store: `trainbot run` exits
    0 within STOP_WITHIN_S, its store calls at the stop (the release, the close) bounded;
    before, each waited out SQLite's 30 s busy timeout (minutes in all) and systemd killed
    the bot."""
    db = tmp_path / "state.db"
    writer = another_writer(db)
    stop_asked: list[float] = []

    def serve_then_stop(scheduler: JobScheduler) -> None:
        for job in scheduler.jobs():  # each job runs once: the leases are taken
            job.func()
        writer.__enter__()  # then another writer holds the store
        stop_asked.append(time.monotonic())
        raise KeyboardInterrupt  # Ctrl-C

    try:
        code = trainbot_run(tmp_path, monkeypatch, f"sqlite:///{db}", serve_then_stop)
        took = time.monotonic() - stop_asked[0]
    finally:
        writer.__exit__(None, None, None)
    assert code == EXIT_OK
    assert took < bot.app.STOP_WITHIN_S, f"stopped after {took:.1f} s"


def test_a_replica_taking_a_cluster_back_starts_from_the_store_not_its_memory(
        replica_stores) -> None:
    """Replica A watched, lost the lease to B, and gets it back: what A kept in memory (tail
    positions, series) is as old as its last tick, so it is dropped before A ticks again."""
    class Watcher:
        cluster = "alpha"

        def __init__(self) -> None:
            self.calls: list[str] = []

        def tick(self, now: float) -> None:
            self.calls.append(f"tick@{now:.0f}")

        def forget(self) -> None:
            self.calls.append("forget")

    now = [1000.0]
    a_store, b_store = replica_stores
    a, b = LeaseKeeper(a_store.leases, holder="A"), LeaseKeeper(b_store.leases, holder="B")
    watcher = Watcher()
    job = JobScheduler(a, clock=lambda: now[0]).run_repeating(
        LEASE, watcher.tick, every_s=30, on_regained=watcher.forget)
    job.func()  # A watches
    now[0] = 1200.0  # A stalled past its TTL: B takes the cluster over
    assert b.holds(LEASE, now[0], every_s=30)
    now[0] = 1210.0
    job.func()  # A stands by
    b.release_all()  # B stops cleanly
    now[0] = 1240.0
    job.func()
    assert watcher.calls == ["tick@1000", "forget", "tick@1240"]
