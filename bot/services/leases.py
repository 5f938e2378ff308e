"""Which replica runs which scheduled job (a lease per job in the database), and the fence
that refuses a run's side effects once its lease has moved."""

from __future__ import annotations

import functools
import logging
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bot.core.holders import (
    Death,
    Machine,
    format_holder,
    holder_death,
    holder_label,
    pid_to_look_at,
)
from bot.ops.procfs import ProcFS
from bot.services.ports import LeaseLost, LocalProcesses
from bot.store.repos.replicas import LeasesRepo

log = logging.getLogger(__name__)

MIN_LEASE_TTL_S = 30.0


@functools.cache
def process_holder() -> str:
    """This process's holder name, `<hostname>:<pid>:<random>:<boot id>:<pid namespace>:
    <start time>` (bot.core.holders): made once per process, so a restarted replica is a new
    holder. A replica on the same host (boot, pid namespace) proves it dead once its pid is
    gone or reused, and takes its leases over at once (`LeaseKeeper.holds`); elsewhere they
    lapse after their TTL, unless they were released on a clean shutdown."""
    procs = ProcFS()
    return format_holder(socket.gethostname(), os.getpid(), secrets.token_hex(4),
                         procs.machine(), procs.own_start())


class DeadHolders:
    """Whether a holder (of a lease, of a claim in the store) is provably dead, judged from
    this machine's processes (bot.core.holders; `processes`: /proc, bot.ops.procfs.ProcFS):
    the one way the replicas take a dead process's lease or claim over at once."""

    def __init__(self, processes: LocalProcesses) -> None:
        self.processes = processes
        self._here: tuple[Machine | None] | None = None  # this process's machine, once read

    def death(self, holder: str, *, what: str) -> Death | None:
        """Why `holder` (of `what`, named in the log) is provably dead; None when it is not
        proven, or cannot be judged (logged): its hold then lapses after its TTL. /proc is
        read only for a holder that can be judged (a process of this host, boot and pid
        namespace: its pid is looked at on each call, for its death to be seen at once)."""
        try:
            if self._here is None:  # read once: where this process runs does not change
                self._here = (self.processes.machine(),)
            here = self._here[0]
            pid = pid_to_look_at(holder, here)
            return holder_death(holder, here,
                                None if pid is None else self.processes.pid_now(pid))
        except Exception:  # noqa: BLE001 - not judged: the hold lapses after its TTL
            log.exception("%s: could not judge whether holder %s is alive", what,
                          holder_label(holder))
            return None


@functools.cache
def process_judge() -> DeadHolders:
    """This process's judge of holders, from /proc (made once: its machine is read once)."""
    return DeadHolders(ProcFS())


def lease_ttl(every_s: float) -> float:
    """How long a lease on a job run every `every_s` seconds lasts without renewal: three
    runs (one slow or failed run does not hand the job over), at least 30 s."""
    return max(3 * every_s, MIN_LEASE_TTL_S)


@dataclass
class _Held:
    """A lease this replica holds: the epoch it took it under, its TTL, its last renewal and
    how many side effects under it are under way."""

    epoch: int
    ttl_s: float
    renewed_at: float
    in_flight: int = 0


class LeaseKeeper:
    """One replica's leases on its scheduled jobs: the single place that decides whether a
    job runs here, and under which epoch. Logs at info when this replica gains or loses a job
    (or first sees another replica running it), at debug on each skipped run."""

    def __init__(self, repo: LeasesRepo, holder: str | None = None, *,
                 renew_every_s: float | None = None,
                 processes: LocalProcesses | None = None):
        self.repo = repo
        self.holder = holder or process_holder()
        self.label = holder_label(self.holder)  # in log lines; the store has the whole id
        self.renew_every_s = renew_every_s  # during a side effect; default: a third of the TTL
        self.judge = DeadHolders(processes) if processes is not None else process_judge()
        self._seen: dict[str, bool] = {}  # lease name -> held at its last check
        self._held: dict[str, _Held] = {}  # the leases held now
        self._stopping = False
        # leases `release_all` left to their side effects under way (released when the last
        # one ends: `done_acting`)
        self._left_busy: dict[str, _Held] = {}
        self._lock = threading.Lock()  # jobs run on a thread pool; shutdown on the main thread

    def holds(self, name: str, now: float, every_s: float) -> bool:
        """Take or renew lease `name` at `now` for a job run every `every_s` seconds; True
        when this replica holds it (run the job), False while another replica does (skip).
        A lease whose holder is provably dead (a process of this host that is gone: a
        replica killed and restarted, bot.core.holders) is taken over at once, under a new
        epoch as a lapsed one is, and logged (at warning); a holder that cannot be judged
        keeps it until it lapses. A lease taken once the keeper is stopping (`stop` came
        during the take) is released at once, and False."""
        if self._stopping:
            return False
        ttl = lease_ttl(every_s)
        epoch, other = self.repo.acquire_or_holder(name, self.holder, now, ttl)
        dead: tuple[str, Death] | None = None
        if epoch is None:
            dead = self._dead_holder(name, other)
            if dead is not None:
                epoch = self.repo.take_over(name, dead[0], self.holder, now, ttl)
        held = epoch is not None
        with self._lock:
            if not (held and self._stopping):
                self._record(name, held, epoch, ttl, now, other, dead)
                return held
            # Stopped during the take, maybe after `release_all`: the job does not run, and
            # the lease is given back unless a side effect is under way under it (released
            # when that ends: `_ended`).
            give_back = not self._busy(name)
            if give_back:
                self._seen[name] = False
                self._held.pop(name, None)
        if give_back:
            self._give_back(name, epoch)
        return False

    def _busy(self, name: str) -> bool:
        """A side effect is under way under lease `name`: one `release_all` left it to has
        not ended yet (lock held)."""
        held = self._held.get(name)
        return (held is not None and held.in_flight > 0) or name in self._left_busy

    def _record(self, name: str, held: bool, epoch: int | None, ttl: float, now: float,
                other: str | None, dead: tuple[str, Death] | None) -> None:
        """Log and keep a check's result (lock held)."""
        if held and dead is not None:
            log.warning("%s: taken over from replica %s, which is dead (%s): this replica "
                        "(%s) runs it now, at once instead of after the lease's TTL "
                        "(epoch %d)", name, holder_label(dead[0]), dead[1].value,
                        self.label, epoch)
        elif self._seen.get(name) != held:
            if held:
                log.info("%s: this replica (%s) runs it now", name, self.label)
            else:
                log.info("%s: run by replica %s; this one (%s) stands by", name,
                         other and holder_label(other), self.label)
        elif not held:
            log.debug("%s: skipped, another replica holds the lease", name)
        self._seen[name] = held
        if epoch is None:
            self._held.pop(name, None)
        else:
            self._held[name] = _Held(epoch, ttl, now)

    def _give_back(self, name: str, epoch: int | None) -> None:
        """Release lease `name`, which the store gave this holder after the keeper began
        stopping (a run that passed `holds`' stopping check just before `stop`, its take
        stalled past the stop's grace and `release_all`), so that no clean stop leaves a lease
        of this holder to lapse after its TTL, whatever the interleaving: a take the store made
        before `stop` is `release_all`'s to release, one after it is released here (both
        release only this holder's row)."""
        try:
            self.repo.release(name, self.holder)
        except Exception:  # noqa: BLE001 - shutting down; the lease lapses after its TTL
            log.exception("%s: could not release the lease taken while stopping", name)
            return
        log.info("%s: taken while this replica (%s) was stopping (epoch %s): released at once",
                 name, self.label, epoch)

    def _dead_holder(self, name: str, holder: str | None) -> tuple[str, Death] | None:
        """`holder`, whose lease `name` runs, and why it is dead, when it is provably dead
        (`DeadHolders.death`: a skipped run's only reads are the holder, read by the take it
        tried, and /proc only for a holder that can be judged)."""
        if holder is None or holder == self.holder:
            return None
        death = self.judge.death(holder, what=name)
        return None if death is None else (holder, death)

    def held_elsewhere(self, name: str) -> bool:
        """Another replica held lease `name` at its last check here."""
        return self._seen.get(name) is False

    def renew(self, name: str, now: float, *, acting: bool = False) -> bool:
        """Extend lease `name` in the database under the epoch this replica took it with: True
        while it is still ours; False once another replica took it over or it was released,
        and from then on without asking the database. With `acting`, a side effect starts
        under it (end it with `done_acting`); none starts once the keeper is stopping. A
        lease `release_all` left to a side effect under way is renewed (not `acting`) until
        that side effect ends. A renewal that raises (the database) starts no side effect."""
        with self._lock:
            held = self._held.get(name)
            if held is None and not acting:
                held = self._left_busy.get(name)
            if held is None or (acting and self._stopping):
                return False
            if acting:
                held.in_flight += 1
        try:
            renewed = self.repo.renew(name, self.holder, held.epoch, now, held.ttl_s)
        except BaseException:
            if acting:
                self._ended(name, held)
            raise
        if renewed:
            held.renewed_at = now
            return True
        if acting:
            self._ended(name, held)
        with self._lock:
            if self._held.get(name) is held:
                del self._held[name]
                self._seen[name] = False
        now_held = self.repo.holder(name)
        log.warning("%s: this replica (%s) lost the lease (epoch %d) during a run; holder "
                    "now: %s", name, self.label, held.epoch,
                    holder_label(now_held) if now_held else "none (released)")
        return False

    def renew_interval(self, name: str) -> float:
        """Seconds between the background renewals of lease `name` during a side effect."""
        if self.renew_every_s is not None:
            return self.renew_every_s
        with self._lock:
            held = self._held.get(name)
        return (held.ttl_s if held is not None else MIN_LEASE_TTL_S) / 3

    def done_acting(self, name: str) -> None:
        """A side effect started by `renew(name, …, acting=True)` has ended."""
        with self._lock:
            held = self._held.get(name) or self._left_busy.get(name)
        if held is not None:
            self._ended(name, held)

    def _ended(self, name: str, held: _Held) -> None:
        """One side effect under lease `name` (`held`) has ended, or did not start. The last
        one under a lease `release_all` left to them releases it (this holder's row only),
        so another replica takes the job over on its next run instead of after the TTL; it
        is not renewed from then on, and a late take after the stop gives it back (`holds`)."""
        with self._lock:
            held.in_flight -= 1
            last = held.in_flight <= 0 and self._left_busy.get(name) is held
            if last:
                del self._left_busy[name]
        if not last:
            return
        try:
            self.repo.release(name, self.holder)
        except Exception:  # noqa: BLE001 - shutting down; the lease lapses after its TTL
            log.exception("%s: could not release the lease after its side effects ended", name)
            return
        log.info("%s: its side effects under way at the stop have ended: released", name)

    def renew_due(self, name: str, now: float) -> bool:
        """`renew` if a tenth of the TTL passed since the last renewal (cheap to call often);
        False once the lease is known lost, or the keeper is stopping (the run should end)."""
        with self._lock:
            held = self._held.get(name)
        if held is None or self._stopping:
            return False
        return now - held.renewed_at < held.ttl_s / 10 or self.renew(name, now)

    def fence(self, name: str, clock: Callable[[], float]) -> LeaseFence:
        """The fence of the job run under lease `name`, reading time from `clock`."""
        return LeaseFence(self, name, clock)

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stop(self) -> None:
        """Shutting down: no job is taken and no side effect starts from now on (fences raise
        LeaseLost); `release_all` then gives the leases up."""
        with self._lock:
            self._stopping = True

    def release_all(self) -> None:
        """Release every lease this replica holds (clean shutdown), so another replica takes
        the jobs over on its next run instead of after the TTL; a run still going is refused
        its next side effect. The leases are those the store names this holder for, with
        those this keeper saw itself take: two overlapping checks of one lease may record
        their results here in the other order than the store took them (a check that found
        another replica's lease last, after one that took it over), and the store's word
        wins. A lease with a side effect still under way is not released now (the other
        replica must not act before it has ended): it is renewed while the side effect runs
        and released when the last one ends (`done_acting`), or lapses after its TTL if the
        process ends first. A failure is logged: the leases then lapse on their own."""
        with self._lock:
            seen = [n for n, held in self._seen.items() if held]
            busy = {n: h.in_flight for n, h in self._held.items() if h.in_flight > 0}
            self._left_busy.update({n: self._held[n] for n in busy})
            for name in seen:
                self._seen[name] = False
            self._held.clear()  # refused from now on, even before the database says so
        try:
            stored = self.repo.held_by(self.holder)
        except Exception:  # noqa: BLE001 - shutting down: release those seen taken here
            log.exception("could not read which leases this replica (%s) holds", self.label)
            stored = []
        for name in sorted(set(seen) | set(stored)):
            if name in busy:
                log.warning("%s: not released yet, %d side effect(s) still under way: "
                            "released when they end (another replica takes it over then, or "
                            "when it lapses)", name, busy[name])
                continue
            try:
                self.repo.release(name, self.holder)
            except Exception:  # noqa: BLE001 - shutting down; the lease lapses after its TTL
                log.exception("%s: could not release the lease", name)


class LeaseFence:
    """The lease a scheduled job runs under, as seen from inside the run. Each side effect
    runs inside `acting(what)`, which first renews the lease in the database under this
    replica's epoch, or raises `LeaseLost`, and keeps renewing it while the side effect is
    under way; `heartbeat()` around reads renews it at most every tenth of the TTL, so a run
    that makes progress keeps its job however long it takes."""

    def __init__(self, keeper: LeaseKeeper, name: str, clock: Callable[[], float]) -> None:
        self.keeper = keeper
        self.name = name
        self.clock = clock

    @contextmanager
    def acting(self, what: str, *, read: bool = False) -> Iterator[None]:
        """Around side effect `what` (e.g. "sbatch"): LeaseLost, and the side effect is not
        made, when another replica took the lease over, it was released or this replica is
        stopping. A command its caller says only reads (`read`) is fenced all the same: the
        lease is kept renewed through it."""
        if not self.keeper.renew(self.name, self.clock(), acting=True):
            self._lost(what)
        done = threading.Event()
        threading.Thread(target=self._keep_renewed, args=(done, what), daemon=True,
                         name=f"trainbot lease {self.name}").start()
        try:
            yield
        finally:
            done.set()
            self.keeper.done_acting(self.name)

    def _keep_renewed(self, done: threading.Event, what: str) -> None:
        """Renew the lease every `renew_interval` until the side effect is `done`."""
        while not done.wait(self.keeper.renew_interval(self.name)):
            try:
                if not self.keeper.renew(self.name, self.clock()):
                    return
            except Exception:  # noqa: BLE001 - the database may be back on the next try
                log.exception("%s: renewing the lease during %s failed", self.name, what)

    def heartbeat(self, what: str = "the next step") -> None:
        """Renew the lease if it is due (see class doc); LeaseLost when it moved."""
        if not self.keeper.renew_due(self.name, self.clock()):
            self._lost(what)

    def _lost(self, what: str) -> None:
        why = ("this replica is stopping" if self.keeper.stopping else
               "this replica no longer holds the lease (another replica runs the job now)")
        log.warning("%s: %s refused: %s", self.name, what, why)
        raise LeaseLost(f"{self.name}: {what} refused: {why}")
