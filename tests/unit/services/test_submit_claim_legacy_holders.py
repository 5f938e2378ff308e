"""A rolling upgrade's older trainbot claims every submit of a recipe under one key,
`submit:recipe:<recipe>`, and takes that key over at once from a holder it proves dead (a
process of its own host that is gone, bot.core.holders). The newer trainbot holds that key
for all of its submits of the recipe at once, under one holder that names no process
(NEWER_SUBMITS), as long as any of their claims is held: the submit that took it last dying,
or settling first, never leaves it to the older trainbot while another newer submit of the
recipe is still under way. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.core.holders import Machine, PidNow, ProcStat, format_holder
from bot.core.submit_keys import NEWER_SUBMITS, claim_key
from bot.services.leases import DeadHolders
from bot.services.submit_claim import Refused, claim_submit, release_submit, renew_submit
from bot.store import Store

NOW = 1_000_000.0
OLD = "submit:recipe:mix"
HERE = Machine("vm", "1d1a866c-5458-4c1e-82e8-8b3d99d5a26e", "4026531836")
OLD_HOLDER = format_holder("vm", 900, "01dbeef0", HERE, 9000)  # the older trainbot
A = format_holder("vm", 101, "aaaa0001", HERE, 10100)  # newer submits on the same host
B = format_holder("vm", 102, "bbbb0002", HERE, 10200)
X = format_holder("vm", 103, "cccc0003", HERE, 10300)
STARTS = {900: 9000, 101: 10100, 102: 10200, 103: 10300}


class Processes:
    """The host's processes: the pids in `alive` run, every other one is gone."""

    def __init__(self, alive: set[int]) -> None:
        self.alive = alive

    def machine(self) -> Machine:
        return HERE

    def own_start(self) -> int:
        return 9000

    def pid_now(self, pid: int) -> PidNow:
        return ProcStat("S", STARTS[pid]) if pid in self.alive else "gone"


class OlderTrainbot:
    """An older trainbot's submit of `mix` on the same host: its one plain claim of the
    recipe's key, else that key taken over from a holder it proves dead (take_over), as it
    takes any dead holder's claim over."""

    def __init__(self, store: Store, processes: Processes) -> None:
        self.store, self.judge = store, DeadHolders(processes)

    def submits(self, now: float) -> bool:
        claims = self.store.command_claims
        if claims.claim(OLD, OLD_HOLDER, now, 300.0):
            return True
        other = claims.holder(OLD)
        return other is not None and self.judge.death(other, what=OLD) is not None and \
            claims.take_over(OLD, other, OLD_HOLDER, now, 300.0)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as s:
        yield s


def claim(store: Store, chain_id: int, holder: str, now: float, hold_s: float = 300.0,
          own: object = None) -> object:
    return claim_submit(store, "mix", chain_id, None, holder=holder, own=own,  # type: ignore[arg-type]
                        now=now, hold_s=hold_s, clusters=["dev"])


def test_the_newest_newer_submit_dying_leaves_the_recipe_held_for_the_others(
        store: Store) -> None:
    """A submits run 7, B run 8 (the last to take the recipe's key); B's process dies (its
    claim stands until it lapses): the older trainbot, which proves B dead, still finds the
    recipe held while A's submit is under way, and gets it once every newer claim ended."""
    processes = Processes({900, 101, 102})
    older = OlderTrainbot(store, processes)
    assert claim(store, 7, A, NOW) is None
    assert claim(store, 8, B, NOW + 1) is None
    processes.alive.discard(102)  # B killed in its submit
    assert not older.submits(NOW + 2)
    assert store.command_claims.holder(OLD) == NEWER_SUBMITS
    assert renew_submit(store, claim_key("mix", 7), A, NOW + 3, 300.0)  # A carries on
    assert not older.submits(NOW + 4)
    release_submit(store, claim_key("mix", 7), A)  # A's job recorded
    assert not older.submits(NOW + 5)  # B's claim still stands, until it lapses
    assert older.submits(NOW + 302)


def test_the_newest_newer_submit_settling_first_leaves_no_dead_holder_the_recipe(
        store: Store) -> None:
    """X (since killed, its long claim not lapsed), A and B submit runs 9, 7 and 8; B's row
    in flight settles first. The recipe's key is not handed to a dead X (held longest) that
    the older trainbot takes over: held while A's claim is."""
    processes = Processes({900, 101, 102, 103})
    older = OlderTrainbot(store, processes)
    assert claim(store, 9, X, NOW - 100, hold_s=2000.0) is None
    assert claim(store, 7, A, NOW) is None
    flight = store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=8, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0ALICE", channel="C1", sent_at=NOW + 1,
        holder=B).flight
    assert claim(store, 8, B, NOW + 1, own=flight) is None
    processes.alive.discard(103)  # X killed long ago
    assert store.submits_in_flight.remove(flight.id)  # B's recovery records its job
    assert not older.submits(NOW + 2)
    release_submit(store, claim_key("mix", 7), A)
    release_submit(store, claim_key("mix", 9), X)  # X's claim taken over and ended
    assert older.submits(NOW + 3)  # no newer claim left: the key went with the last


def test_a_row_kept_in_flight_holds_the_recipe_past_its_claim_until_it_settles(
        store: Store) -> None:
    """A's submit of a new run sent its sbatch and its process died (its answer lost): its
    row is kept in flight, its job maybe queued and not recorded. Once its claim lapsed, a
    newer submit is refused by the row, and so is the older trainbot, which would queue a
    second job of the recipe: the recipe's key is held until the row settles, then freed."""
    processes = Processes({900, 101, 102})
    older = OlderTrainbot(store, processes)
    flight = store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=None, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0ALICE", channel="C1", sent_at=NOW,
        holder=A).flight
    assert claim(store, None, A, NOW, own=flight) is None  # type: ignore[arg-type]
    processes.alive.discard(101)  # A's process dies after its sbatch
    later = NOW + 301  # A's claim lapsed
    refused = claim(store, 7, B, later)
    assert isinstance(refused, Refused) and refused.kept  # the row stands against B
    assert not older.submits(later)
    assert store.command_claims.holder(OLD) == NEWER_SUBMITS
    assert not older.submits(later + 86_400.0)  # however long its recovery takes
    assert store.submits_in_flight.remove(flight.id)  # its recovery records (or drops) it
    assert store.command_claims.holder(OLD) is None
    assert older.submits(later + 86_401.0)


def test_the_recipe_stays_held_while_another_row_is_in_flight(store: Store) -> None:
    """Two rows in flight (runs 7 and 8, both claims lapsed): the first settling leaves the
    recipe held for the other; the last frees it. A row without a holder (written before
    schema 23) counts as one in flight too, and its settle recomputes the hold."""
    processes = Processes({900, 101, 102})
    older = OlderTrainbot(store, processes)
    rows = [store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=run, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0ALICE", channel="C1", sent_at=NOW,
        holder=holder).flight for run, holder in ((7, A), (8, None))]
    assert claim(store, 7, A, NOW, own=rows[0]) is None
    processes.alive.discard(101)
    assert not older.submits(NOW + 400)
    assert store.submits_in_flight.remove(rows[0].id)
    assert not older.submits(NOW + 401)  # run 8's row is still in flight
    assert store.submits_in_flight.remove(rows[1].id)
    assert older.submits(NOW + 402)


def test_a_dead_crossing_claim_released_by_a_claim_recomputes_the_recipes_hold(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """X (dead, its claim held long) crosses A's new run; B claims run 8 meanwhile. A ends
    X's claim as release_submit does: the recipe's hold for the older trainbot is recomputed
    without it (until B's hold), not kept until X's would have lapsed, so once B dies too the
    older trainbot is not kept waiting by two dead claims."""
    import bot.services.submit_claim as submit_claim

    processes = Processes({900, 101, 102, 103})
    monkeypatch.setattr(submit_claim, "process_judge", lambda: DeadHolders(processes))
    older = OlderTrainbot(store, processes)
    assert claim(store, 9, X, NOW - 100, hold_s=2000.0) is None
    processes.alive.discard(103)  # X killed in its submit
    claims = store.command_claims
    first = claims.claim_uncrossed

    def b_claims_meanwhile(*args: object, **kw: object) -> list[tuple[str, str]]:
        crossing = first(*args, **kw)  # type: ignore[arg-type]
        monkeypatch.setattr(claims, "claim_uncrossed", first)
        assert claim(store, 8, B, NOW) is None  # before A ends X's claim
        return crossing

    monkeypatch.setattr(claims, "claim_uncrossed", b_claims_meanwhile)
    refused = claim(store, None, A, NOW)  # type: ignore[arg-type]
    assert isinstance(refused, Refused)  # by B's claim
    assert claims.holder(claim_key("mix", 9)) is None  # X's ended
    processes.alive.discard(102)  # B dies too
    assert older.submits(NOW + 301)


def test_a_lost_insert_never_names_the_newer_submits_as_an_older_trainbot(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """An insert that collides (a plain claim taken meanwhile) while the recipe's key is held
    for the newer submits: neither claim_uncrossed nor hold_legacy says NEWER_SUBMITS holds
    it as an older trainbot would; the claim is refused as crossed by a claim of its key."""
    from sqlalchemy.exc import IntegrityError

    import bot.store.repos.replicas as replicas

    assert claim(store, 7, A, NOW) is None
    claims = store.command_claims
    assert claims.holder(OLD) == NEWER_SUBMITS

    def collides(*args: object, **kw: object) -> None:
        raise IntegrityError("INSERT", None, Exception("unique"))

    monkeypatch.setattr(replicas, "sync_legacy", collides)
    crossing = claims.claim_uncrossed(claim_key("mix", 8), ["submit:mix/"], B, NOW + 1, 300.0,
                                      legacy=OLD)
    assert crossing == [(claim_key("mix", 8), "")]
    assert claims.hold_legacy(OLD, "submit:mix/", A, NOW + 1, 300.0) == ""
