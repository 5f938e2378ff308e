"""What the replicas on one database share: leases (one replica runs each scheduled job),
slash-command claims (an invocation delivered again runs once), Home tab viewers and the
workspace's budget of thread roots rewritten for progress alone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, case, delete, func, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError

from bot.core.policy import RootWaiting
from bot.core.submit_keys import NEWER_SUBMITS, recipe_of_top
from bot.store import schema as t
from bot.store.repos.base import _Repo

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
        return self.acquire_or_holder(name, holder, now, ttl_s)[0]

    def acquire_or_holder(self, name: str, holder: str, now: float, ttl_s: float
                          ) -> tuple[int | None, str | None]:
        """`acquire`, and while another holder's lease runs, who that is: (epoch, None) when
        taken, (None, the other holder) when not, read in the transaction that tried to take
        it (a replica skipping a job learns who runs it with no read of its own)."""
        epoch, other = self._take(name, holder, now, ttl_s)
        if other == holder:
            # Ours after all: another call of this holder (an overlapping run of the same job
            # in this process) took it between the UPDATE and the read (PostgreSQL's read
            # committed lets it), so it is renewed now: a holder never stands by for itself.
            epoch, other = self._take(name, holder, now, ttl_s)
        if epoch is not None:
            return epoch, None
        if other is not None:  # another holder's lease runs
            return None, other
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
        return 1, None

    def _take(self, name: str, holder: str, now: float, ttl_s: float
              ) -> tuple[int | None, str | None]:
        """The conditional UPDATE: renew our lease or take a lapsed or released one (a new
        holder: epoch + 1); (the epoch, None) if it did, else (None, the holder whose lease
        runs: None when there is no row, which `acquire` inserts)."""
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
                other = conn.execute(select(lease.c.holder).where(lease.c.name == name)).scalar()
                return None, other or None
            # Read in the transaction that took it: no other replica can move it meanwhile.
            return conn.execute(
                select(lease.c.epoch).where(lease.c.name == name)).scalar_one(), None

    def take_over(self, name: str, dead: str, holder: str, now: float, ttl_s: float
                  ) -> int | None:
        """Take `name` from `dead`, a holder the caller proved dead (bot.core.holders), at once
        whatever its expiry, for `holder` until `now + ttl_s`: one conditional UPDATE on the
        row still naming `dead`, raising the epoch as a takeover after expiry does (a late
        write under `dead`'s epoch is refused). The new epoch; None if `dead` no longer holds
        it (another replica took it over first, or it was released)."""
        if dead in (_RELEASED, holder):
            return None
        lease = t.leases
        with self._engine.begin() as conn:
            result = conn.execute(
                update(lease)
                .where(lease.c.name == name, lease.c.holder == dead)
                .values(holder=holder, acquired_at=now, epoch=lease.c.epoch + 1,
                        expires_at=now + ttl_s)
            )
            if result.rowcount != 1:
                return None
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

    def held_by(self, holder: str) -> list[str]:
        """The names of the leases whose row names `holder` (lapsed ones included), sorted."""
        lease = t.leases
        with self._engine.begin() as conn:
            return list(conn.execute(select(lease.c.name).where(lease.c.holder == holder)
                                     .order_by(lease.c.name)).scalars())

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
    on the database, so an invocation Slack delivers again (a late ack) is carried out once;
    and the tries of a run's root message (bot.services.threads.open_thread), so one try
    at a time posts it.
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

    def take_over(self, key: str, dead: str, holder: str, now: float, ttl_s: float) -> bool:
        """Take `key`'s claim from `dead`, a holder the caller proved dead (bot.core.holders),
        at once whatever its expiry, for `holder` until `now + ttl_s`: one conditional UPDATE
        on the row still naming `dead`, so of several takers exactly one gets it. False if
        `dead` no longer holds it (another took it over first, or it was released)."""
        if dead == holder:
            return False
        claims = t.command_claims
        with self._engine.begin() as conn:
            result = conn.execute(
                update(claims).where(claims.c.key == key, claims.c.holder == dead)
                .values(holder=holder, claimed_at=now, expires_at=now + ttl_s))
        return result.rowcount == 1

    def release(self, key: str, holder: str) -> None:
        """End `holder`'s claim of `key` (nothing when it is another's, or gone): a side
        effect whose try is over, so the next try need not wait for the claim to lapse."""
        claims = t.command_claims
        with self._engine.begin() as conn:
            conn.execute(delete(claims).where(claims.c.key == key, claims.c.holder == holder))

    def renew(self, key: str, holder: str, now: float, ttl_s: float) -> bool:
        """Hold `holder`'s claim of `key` until `now + ttl_s` (lapsed or not: nobody took it
        since); False when `holder` no longer holds it."""
        claims = t.command_claims
        with self._engine.begin() as conn:
            result = conn.execute(
                update(claims).where(claims.c.key == key, claims.c.holder == holder)
                .values(expires_at=now + ttl_s))
        return result.rowcount == 1

    def claim_uncrossed(self, key: str, above: Sequence[str], holder: str, now: float,
                        ttl_s: float, legacy: str | None = None) -> list[tuple[str, str]]:
        """Claim `key` for `holder` until `now + ttl_s` unless another holder's claim not
        lapsed at `now` crosses it (of `key`, of a key beginning with it, or of one of
        `above`, as `held_around`): those claims, (key, holder) each, and nothing claimed;
        [] once claimed. The look and the insert are one transaction, serialised with every
        other claim of the same top key (`above[0]`, else `key`): SQLite's BEGIN IMMEDIATE
        serialises every write transaction, and on PostgreSQL the transaction first takes an
        advisory lock on that key. So of crossing claims taken at the same instant exactly
        one is kept: never both (two jobs of a run), never neither (both refused).
        `legacy`: the recipe's key as an older trainbot claims it (bot.core.submit_keys
        .legacy_key), held too in the same transaction (`sync_legacy`: for every newer
        submit of the recipe), and standing against this claim while an older trainbot holds
        it (`_legacy_stands`): returned as crossing."""
        claims = t.command_claims
        c = claims.c
        top = above[0] if above else key
        try:
            with self._engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": top})
                conn.execute(delete(claims).where(c.expires_at < now))
                crossing = [(row.key, row.holder) for row in conn.execute(
                    select(c.key, c.holder)
                    .where(c.expires_at >= now, c.holder != holder,
                           or_(c.key.startswith(key, autoescape=True), c.key.in_(list(above))))
                    .order_by(c.key)).all()]
                old = _legacy_stands(conn, legacy, top, holder, now) if legacy else None
                if old is not None and legacy is not None:
                    crossing.append((legacy, old))
                if crossing:
                    return crossing
                renewed = conn.execute(update(claims).where(c.key == key, c.holder == holder)
                                       .values(expires_at=now + ttl_s)).rowcount
                if not renewed:
                    conn.execute(insert(claims).values(key=key, holder=holder, claimed_at=now,
                                                       expires_at=now + ttl_s))
                if legacy is not None:
                    sync_legacy(conn, legacy, top, holder)
        except IntegrityError:  # claimed meanwhile by a plain `claim` of the key or `legacy`
            old = self.holder(legacy) if legacy is not None else None
            if legacy is not None and old not in (None, holder, NEWER_SUBMITS):
                return [(legacy, str(old))]  # NEWER_SUBMITS: the newer submits', no older one
            return [(key, self.holder(key) or "")]
        return []

    def hold_legacy(self, legacy: str, top: str, holder: str, now: float,
                    ttl_s: float) -> str | None:
        """Hold `legacy` (an older trainbot's key of the recipe whose new run's key is `top`)
        for the newer submits of the recipe, `holder`'s claim (renewed until `now + ttl_s`)
        among them, as `claim_uncrossed` does (`sync_legacy`): None once held; the holder of
        the older trainbot's claim that stands against it, nothing held. Serialised with the
        recipe's claims (`top`)."""
        claims = t.command_claims
        try:
            with self._engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": top})
                conn.execute(delete(claims).where(claims.c.key == legacy,
                                                  claims.c.expires_at < now))
                old = _legacy_stands(conn, legacy, top, holder, now)
                if old is not None:
                    return old
                sync_legacy(conn, legacy, top, holder)
        except IntegrityError:  # an older trainbot's plain `claim` of it, just now
            old = self.holder(legacy)  # NEWER_SUBMITS names no older trainbot: not said
            return "" if old in (None, NEWER_SUBMITS) else str(old)
        return None

    def release_legacy(self, legacy: str, top: str, holder: str) -> None:
        """`holder`'s claim of the recipe (`top`) ended: `legacy` stays held as long as
        another newer submit's claim of the recipe is, and is deleted with the last
        (`sync_legacy`)."""
        with self._engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": top})
            sync_legacy(conn, legacy, top, holder, ended=True)

    def held_around(self, key: str, above: Sequence[str], now: float) -> list[tuple[str, str]]:
        """The claims not lapsed at `now` of `key`, of a key beginning with it, or of one of
        `above`: (key, holder) each, by key (keys made as paths, a claim of `a/` covering
        `a/b/`: bot.core.submit_keys.crosses, in SQL)."""
        c = t.command_claims.c
        with self._engine.begin() as conn:
            rows = conn.execute(
                select(c.key, c.holder)
                .where(c.expires_at >= now,
                       or_(c.key.startswith(key, autoescape=True), c.key.in_(list(above))))
                .order_by(c.key)).all()
        return [(row.key, row.holder) for row in rows]

    def holder(self, key: str) -> str | None:
        """Who claimed `key` (None if nobody has, or the claim was deleted)."""
        with self._engine.begin() as conn:
            return conn.execute(
                select(t.command_claims.c.holder).where(t.command_claims.c.key == key)
            ).scalar()


# How long `legacy_key` is held while a submit of its recipe is kept in flight
# (`sync_legacy`): no clock reaches it; the row's settle ends it.
IN_FLIGHT_UNTIL = 1.0e15


def _legacy_stands(conn: Connection, legacy: str, top: str, holder: str,
                   now: float) -> str | None:
    """The holder of `legacy`'s claim not lapsed at `now` when an older trainbot holds it
    (another holder than `holder` and NEWER_SUBMITS that holds no claim of a path key of the
    recipe, `top` or one under it: a newer trainbot's hold of `legacy` stands against no
    newer submit, whose path keys say whether they cross); None: free, or a newer one's."""
    c = t.command_claims.c
    other = conn.execute(select(c.holder).where(c.key == legacy,
                                                c.expires_at >= now)).scalar()
    if other is None or other in (holder, NEWER_SUBMITS):
        return None
    return None if _holds_path_key(conn, other, top, now) else str(other)


def _holds_path_key(conn: Connection, holder: str, top: str, now: float | None) -> bool:
    """Does `holder` hold a claim of the recipe's path keys (`top` or one under it), not
    lapsed at `now` (None: any)?"""
    c = t.command_claims.c
    query = select(c.key).where(c.holder == holder, c.key.startswith(top, autoescape=True))
    if now is not None:
        query = query.where(c.expires_at >= now)
    return conn.execute(query.limit(1)).first() is not None


def sync_legacy(conn: Connection, legacy: str, top: str, holder: str, *,
                ended: bool = False) -> None:
    """Hold `legacy` (in `conn`'s transaction, serialised with the recipe's claims) for every
    newer trainbot's submit of the recipe (a claim of `top` or a key under it) at once: under
    NEWER_SUBMITS, from the earliest of their claims until the latest of their holds, as long
    as any is held; deleted with the last. While a submit of the recipe is kept in flight
    (`submits_in_flight`: its job may be queued and not recorded, also once its claim lapsed,
    its replica dead after the sbatch), until IN_FLIGHT_UNTIL: the row's settle (its
    SubmitsInFlightRepo.remove) recomputes it. One holder for all, which names no process: an
    older trainbot never judges it dead, so it cannot take the key over while any of them is
    under way because the one that held it last died or settled. `holder`: the newer submit
    whose claim was just taken, renewed or ended (a hold of `legacy` under its own name, or
    another newer holder's, becomes NEWER_SUBMITS); an older trainbot's hold is left alone
    (the callers that take `legacy` asked `_legacy_stands` first). `ended`: `holder`'s claim
    (or row in flight) ended; nothing is taken then, only kept or deleted."""
    claims = t.command_claims
    c = claims.c
    row = conn.execute(select(c.holder).where(c.key == legacy)).first()
    if row is None and ended:
        return
    if row is not None and row.holder not in (NEWER_SUBMITS, holder) and \
            not _holds_path_key(conn, row.holder, top, None):
        return
    since, until = conn.execute(select(func.min(c.claimed_at), func.max(c.expires_at))
                                .where(c.key.startswith(top, autoescape=True))).one()
    flights = t.submits_in_flight.c
    sent = conn.execute(select(func.min(flights.sent_at))
                        .where(flights.recipe == recipe_of_top(top))).scalar()
    if sent is not None:  # kept in flight: held until its settle
        since, until = (sent if since is None else min(since, sent)), IN_FLIGHT_UNTIL
    if until is None:
        if row is not None:
            conn.execute(delete(claims).where(c.key == legacy))
    elif row is None:
        conn.execute(insert(claims).values(key=legacy, holder=NEWER_SUBMITS, claimed_at=since,
                                           expires_at=until))
    else:
        conn.execute(update(claims).where(c.key == legacy)
                     .values(holder=NEWER_SUBMITS, expires_at=until))


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


class ProgressRewritesRepo(_Repo):
    """The Slack workspace's budget of thread roots rewritten for progress alone, shared by
    every replica on the database (bot.services.watch.chains.ProgressRewriteBudget): its
    slots, each of which lets one root be rewritten and then rests a minute
    (bot.core.policy.free_rewrite_slots), and the roots each cluster's last tick left
    waiting for one, so another cluster's tick, on any replica, leaves them the budget when
    they wait longer."""

    def slots(self) -> dict[int, float]:
        """When each slot last let a root be rewritten, by slot (a slot never used: none)."""
        slots = t.progress_rewrite_slots
        with self._engine.begin() as conn:
            return {slot: at for slot, at in
                    conn.execute(select(slots.c.slot, slots.c.granted_at)).all()}

    def take(self, slot: int, *, seen: float | None, chain_id: int, now: float) -> bool:
        """Let `chain_id`'s root be rewritten at `now` in `slot` if the slot is still as it
        was read (last used at `seen`; None: never): one conditional UPDATE, or one INSERT
        for a slot never used, so of the replicas taking one slot at once exactly one does
        (on SQLite and PostgreSQL alike). False: another replica took it first."""
        slots = t.progress_rewrite_slots
        if seen is None:
            try:
                with self._engine.begin() as conn:
                    conn.execute(insert(slots).values(slot=slot, granted_at=now,
                                                      chain_id=chain_id))
            except IntegrityError:  # another replica used it first
                return False
            return True
        with self._engine.begin() as conn:
            result = conn.execute(update(slots)
                                  .where(slots.c.slot == slot, slots.c.granted_at == seen)
                                  .values(granted_at=now, chain_id=chain_id))
        return result.rowcount == 1

    def waiting(self, *, other_than: str, noted_since: float) -> list[RootWaiting]:
        """The roots the last ticks of clusters other than `other_than` left waiting, noted
        at or after `noted_since` (a cluster whose ticks stopped holds none back for long),
        as (last rewrite, -inf: never; chain id)."""
        roots = t.roots_waiting
        with self._engine.begin() as conn:
            rows = conn.execute(select(roots.c.rewritten_at, roots.c.chain_id)
                                .where(roots.c.cluster != other_than,
                                       roots.c.noted_at >= noted_since)).all()
        return [(float("-inf") if at is None else at, chain_id) for at, chain_id in rows]

    def note_waiting(self, cluster: str, roots: Iterable[RootWaiting], *, now: float,
                     noted_since: float) -> None:
        """`cluster`'s tick at `now` left `roots` waiting, in place of what its last tick
        left; rows noted before `noted_since` (of clusters whose ticks stopped) go too."""
        table = t.roots_waiting
        rows = [dict(chain_id=chain_id, cluster=cluster, noted_at=now,
                     rewritten_at=None if at == float("-inf") else at) for at, chain_id in roots]
        try:
            with self._engine.begin() as conn:
                conn.execute(delete(table).where(or_(
                    table.c.cluster == cluster, table.c.noted_at < noted_since,
                    table.c.chain_id.in_([r["chain_id"] for r in rows]))))
                if rows:
                    conn.execute(insert(table), rows)
        except IntegrityError:  # another replica noted one at once (a lease moving): theirs
            pass
