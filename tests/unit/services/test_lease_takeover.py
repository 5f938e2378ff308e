"""A restarted replica takes over at once the leases of a holder it proves dead (a process of
its own host, boot and pid namespace that is gone, reused or exited: bot.core.holders), under
a new epoch, so a late write of the old holder is fenced; a holder it cannot judge, or one
that lives, keeps today's TTL.

Each replica is its own `Store.open` handle on one database (SQLite and PostgreSQL,
`store_url`); the machine's processes are a fake (the /proc reads: tests/unit/ops); clocks are
injected, nothing sleeps.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial

import pytest
from support.race import race

from bot.core.holders import Machine, PidNow, ProcStat, format_holder, holder_label
from bot.services.leases import LeaseKeeper
from bot.services.ports import LeaseLost
from bot.services.scheduler import JobScheduler
from bot.store import Store

LEASE = "watch:alpha"
BOOT = "1d1a866c-5458-4c1e-82e8-8b3d99d5a26e"
HERE = Machine("vm", BOOT, "4026531836")
OLD = format_holder("vm", 4242, "96e72bf3", HERE, 29026)  # the replica kill -9'd
NEW = format_holder("vm", 5151, "0badcafe", HERE, 31000)  # the one started after it
OTHER = format_holder("vm", 6262, "feedf00d", HERE, 31500)  # a second restarted replica


class Processes:
    """This machine's processes as the keeper sees them: pid -> what /proc shows."""

    def __init__(self, pids: Mapping[int, PidNow] | None = None,
                 machine: Machine | None = HERE) -> None:
        self.pids = dict(pids or {})
        self._machine = machine
        self.looked: list[int] = []

    def machine(self) -> Machine | None:
        return self._machine

    def own_start(self) -> int | None:
        return 31000

    def pid_now(self, pid: int) -> PidNow:
        self.looked.append(pid)
        return self.pids.get(pid, "gone")


def _takeovers(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "taken over" in r.getMessage()]


def test_a_restarted_replica_takes_its_dead_predecessors_lease_at_once_and_fences_it(
        replica_stores, caplog) -> None:
    a, b = replica_stores
    old = LeaseKeeper(a.leases, holder=OLD, processes=Processes())
    now = [100.0]
    late = old.fence(LEASE, lambda: now[0])  # a write of the old process, were it late
    assert old.holds(LEASE, 100.0, every_s=10.0)  # until 130
    assert a.leases.epoch(LEASE) == 1

    # killed at 100; the new process starts at 101, its pid 4242 no process has any more
    new = LeaseKeeper(b.leases, holder=NEW, processes=Processes({5151: ProcStat("S", 31000)}))
    assert new.holds(LEASE, 101.0, every_s=10.0)  # at once, not at 130
    assert (b.leases.holder(LEASE), b.leases.epoch(LEASE)) == (NEW, 2)
    assert _takeovers(caplog) == [
        f"{LEASE}: taken over from replica vm:4242:96e72bf3, which is dead (no process has its "
        "pid any more): this replica (vm:5151:0badcafe) runs it now, at once instead of after "
        "the lease's TTL (epoch 2)"]  # the ids' short forms: the store keeps them whole
    with pytest.raises(LeaseLost), late.acting("sbatch"):  # the epoch moved on
        pytest.fail("the old holder's write went through")
    with b.engine.begin() as conn:
        row = conn.exec_driver_sql("SELECT acquired_at, expires_at FROM leases").one()
    assert (row.acquired_at, row.expires_at) == (101.0, 131.0)
    assert new.holds(LEASE, 110.0, every_s=10.0)  # renewed, no second takeover
    assert b.leases.epoch(LEASE) == 2 and len(_takeovers(caplog)) == 1


def test_a_pid_reused_by_another_process_does_not_keep_the_dead_holders_lease(
        replica_stores, caplog) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, OLD, now=100.0, ttl_s=30.0)
    reused = Processes({4242: ProcStat("S", 30999)})  # the same pid, started later
    assert LeaseKeeper(b.leases, holder=NEW, processes=reused).holds(LEASE, 101.0, 10.0)
    assert b.leases.holder(LEASE) == NEW
    assert "its pid now belongs to a process started at another time" in _takeovers(caplog)[0]


def test_a_holder_that_exited_but_is_not_yet_reaped_is_dead(replica_stores) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, OLD, now=100.0, ttl_s=30.0)
    zombie = Processes({4242: ProcStat("Z", 29026)})
    assert LeaseKeeper(b.leases, holder=NEW, processes=zombie).holds(LEASE, 101.0, 10.0)


def test_a_live_replica_on_the_same_host_keeps_its_lease(replica_stores, caplog) -> None:
    a, b = replica_stores
    alive = Processes({4242: ProcStat("S", 29026)})
    caplog.set_level(logging.INFO, logger="bot.services.leases")
    assert a.leases.acquire(LEASE, OLD, now=100.0, ttl_s=30.0)
    keeper = LeaseKeeper(b.leases, holder=NEW, processes=alive)
    for t in (101.0, 110.0, 120.0):
        assert not keeper.holds(LEASE, t, every_s=10.0)
    assert (b.leases.holder(LEASE), b.leases.epoch(LEASE)) == (OLD, 1)
    assert alive.looked == [4242, 4242, 4242] and not _takeovers(caplog)
    assert [r.getMessage() for r in caplog.records] == [
        f"{LEASE}: run by replica vm:4242:96e72bf3; this one (vm:5151:0badcafe) stands by"]


@pytest.mark.parametrize("holder", [
    format_holder("gpu-02", 4242, "96e72bf3", Machine("gpu-02", BOOT, "4026531836"), 29026),
    format_holder("vm", 4242, "96e72bf3", Machine("vm", "an-earlier-boot", "4026531836"), 29026),
    format_holder("vm", 4242, "96e72bf3", Machine("vm", BOOT, "4026532999"), 29026),
    "vm:4242:96e72bf3",  # written before holders recorded their boot and start
    "A",
])
def test_a_holder_that_cannot_be_judged_keeps_its_lease_until_the_ttl(replica_stores, holder
                                                                      ) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, holder, now=100.0, ttl_s=30.0)
    procs = Processes()  # no pid has a process: yet nothing proves it is the holder's
    keeper = LeaseKeeper(b.leases, holder=NEW, processes=procs)
    assert not keeper.holds(LEASE, 101.0, every_s=10.0)
    assert not keeper.holds(LEASE, 130.0, every_s=10.0)  # still its at its expiry
    assert procs.looked == []
    assert keeper.holds(LEASE, 130.5, every_s=10.0)  # lapsed: taken over as ever
    assert b.leases.epoch(LEASE) == 2


def test_a_machine_that_cannot_be_read_or_judged_takes_nothing_over(replica_stores, caplog) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, OLD, now=100.0, ttl_s=30.0)
    assert not LeaseKeeper(b.leases, holder=NEW, processes=Processes(machine=None)).holds(
        LEASE, 101.0, every_s=10.0)
    hidden = Processes({4242: "unknown"})  # hidepid, another user's process
    assert not LeaseKeeper(b.leases, holder=NEW, processes=hidden).holds(LEASE, 101.0, 10.0)

    class Failing(Processes):
        def pid_now(self, pid: int) -> PidNow:
            raise OSError("no /proc")

    assert not LeaseKeeper(b.leases, holder=NEW, processes=Failing()).holds(LEASE, 101.0, 10.0)
    assert "could not judge whether holder" in caplog.text
    assert (b.leases.holder(LEASE), b.leases.epoch(LEASE)) == (OLD, 1)


def test_of_two_replicas_taking_a_dead_holders_lease_at_once_one_does(replica_stores) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, OLD, now=100.0, ttl_s=30.0)
    alive = {5151: ProcStat("S", 31000), 6262: ProcStat("S", 31500)}  # both new ones live
    keepers = [LeaseKeeper(a.leases, holder=OTHER, processes=Processes(alive)),
               LeaseKeeper(b.leases, holder=NEW, processes=Processes(alive))]
    won = race([partial(lambda k: k.holds(LEASE, 101.0, every_s=10.0), k) for k in keepers])
    assert sorted(won) == [False, True]
    winner = [OTHER, NEW][won.index(True)]
    assert (a.leases.holder(LEASE), a.leases.epoch(LEASE)) == (winner, 2)
    loser = keepers[won.index(False)]
    assert not loser.holds(LEASE, 102.0, every_s=10.0)  # the winner lives: it stands by


def test_the_repository_takes_over_only_from_the_holder_named(replica_stores) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, OLD, now=100.0, ttl_s=30.0) == 1
    assert b.leases.take_over(LEASE, "someone-else", NEW, now=101.0, ttl_s=30.0) is None
    assert b.leases.take_over(LEASE, NEW, NEW, now=101.0, ttl_s=30.0) is None
    assert b.leases.take_over(LEASE, OLD, NEW, now=101.0, ttl_s=30.0) == 2
    assert a.leases.take_over(LEASE, OLD, OTHER, now=102.0, ttl_s=30.0) is None  # moved on
    assert b.leases.release(LEASE, NEW)
    assert a.leases.take_over(LEASE, "", OTHER, now=103.0, ttl_s=30.0) is None
    assert a.leases.take_over("never-taken", OLD, OTHER, now=103.0, ttl_s=30.0) is None
    assert a.leases.holder(LEASE) is None and a.leases.epoch(LEASE) == 2


def test_a_restarted_schedulers_first_run_is_at_once_under_the_dead_holders_lease(
        replica_stores) -> None:
    a, b = replica_stores
    assert a.leases.acquire(LEASE, OLD, now=1000.0, ttl_s=90.0)  # watched every 30 s
    ran: list[float] = []
    scheduler = JobScheduler(LeaseKeeper(b.leases, holder=NEW, processes=Processes()),
                             clock=lambda: 1001.0)
    scheduler.run_repeating(LEASE, ran.append, every_s=30).func()  # its run at the start
    assert ran == [1001.0]


def _statements(store: Store) -> list[str]:
    """The SQL statements `store` sends from now on (each one a read or a write)."""
    from sqlalchemy import event

    sent: list[str] = []
    event.listen(store.engine, "before_cursor_execute",
                 lambda _conn, _cur, statement, *_rest: sent.append(statement.split()[0]))
    return sent


@pytest.mark.parametrize("holder, looks", [
    (OLD, 1),  # a replica of this host: its pid is looked at on each run, to see it die
    (format_holder("gpu-02", 4242, "96e72bf3", Machine("gpu-02", BOOT, "4026531836"), 29026),
     0),  # another host's: nothing to look at
])
def test_a_skipped_run_reads_the_holder_once_with_its_take(replica_stores, caplog, holder,
                                                           looks: int) -> None:
    """A replica standing by for a live holder: each skipped run is the take it tries (one
    UPDATE) and one read of who holds the lease, in the same transaction, and /proc only for
    a holder of this host (one pid). Before, a skipped run read the holder twice more (the
    take's check, then the dead-holder judgement: three SELECTs and three transactions), and
    its first a fourth time for its log line."""
    a, b = replica_stores
    alive = Processes({4242: ProcStat("S", 29026)})
    caplog.set_level(logging.INFO, logger="bot.services.leases")
    assert a.leases.acquire(LEASE, holder, now=100.0, ttl_s=30.0)
    keeper = LeaseKeeper(b.leases, holder=NEW, processes=alive)
    sent = _statements(b)
    for t in (101.0, 110.0, 120.0):
        assert not keeper.holds(LEASE, t, every_s=10.0)
    assert [s for s in sent if s not in ("BEGIN", "COMMIT")] == ["UPDATE", "SELECT"] * 3
    assert alive.looked == [4242] * (3 * looks)
    assert [r.getMessage() for r in caplog.records] == [
        f"{LEASE}: run by replica {holder_label(holder)}; this one (vm:5151:0badcafe) stands by"]
    alive.pids.clear()  # the holder dies: taken over on the next run, at once, if judged
    assert keeper.holds(LEASE, 121.0, every_s=10.0) is bool(looks)


def test_a_holder_id_reads_short_in_logs_and_metrics_and_stays_whole_in_the_store() -> None:
    """A holder id is about 80 characters (host, pid, random part, boot id, pid namespace,
    start time); people and dashboards read `<host>:<pid>:<random>`, which names the
    process; the takeover judgement reads the rest from the store."""
    assert len(OLD) == 70  # "vm" for a host: a real host name makes it longer
    assert holder_label(OLD) == "vm:4242:96e72bf3"
    assert holder_label("vm:4242:96e72bf3") == "vm:4242:96e72bf3"  # an id of the old form
    assert holder_label("A") == "A"
