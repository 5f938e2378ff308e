"""A rolling upgrade: an older trainbot claims every submit of a recipe under one key,
`submit:recipe:<recipe>`, and looks at that key alone; a newer one claims path keys
(bot.core.submit_keys). The newer one holds the older key too (claim_uncrossed's `legacy`,
release_submit, renew_submit, a row's settle) and is refused while an older trainbot holds
it, so the two never both submit; two newer submits that do not cross still go side by side.
On SQLite and PostgreSQL (the claims' SQL is the store's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.core.submit_keys import NEWER_SUBMITS, claim_key, legacy_key, top_key
from bot.services.submit_claim import claim_submit, release_submit, renew_submit
from bot.store import Store, SubmitInFlight

NOW = 1_000_000.0
OLD = "submit:recipe:mix"  # an older trainbot's key of every submit of `mix`
OLD_HOLDER = "an-older-trainbot"  # cannot be judged dead: it stands until released or lapsed


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as s:
        yield s


def claim(store: Store, chain_id: int | None, holder: str, now: float = NOW,
          hold_s: float = 300.0, own: SubmitInFlight | None = None) -> object:
    return claim_submit(store, "mix", chain_id, None, holder=holder, own=own, now=now,
                        hold_s=hold_s, clusters=["dev"])


def old_claims(store: Store, now: float = NOW) -> bool:
    """An older trainbot's submit of `mix` (bot.services.submit_claim before the path keys:
    one plain claim of its one key)."""
    return store.command_claims.claim(OLD, OLD_HOLDER, now, 300.0)


def test_the_older_key_is_the_recipes_whichever_run() -> None:
    for key in (claim_key("mix"), claim_key("mix", 7), claim_key("mix", 7, 2)):
        assert legacy_key(key) == OLD and top_key(key) == "submit:mix/"


def test_a_newer_submit_is_refused_while_an_older_trainbot_holds_the_recipe(
        store: Store) -> None:
    assert old_claims(store)
    for chain_id in (None, 7):
        refused = claim(store, chain_id, "new-1")
        assert refused is not None and refused.other is None  # type: ignore[attr-defined]
    assert store.command_claims.held_around("submit:mix/", [], NOW) == []
    store.command_claims.release(OLD, OLD_HOLDER)
    assert claim(store, 7, "new-1") is None


def test_an_older_trainbot_is_refused_while_newer_submits_are_under_way(store: Store) -> None:
    """Two newer submits of two runs go side by side; an older trainbot's claim of the recipe
    fails while either is under way (the older key held for both at once, NEWER_SUBMITS, as long
    as either claim is), and succeeds once both ended."""
    assert claim(store, 7, "new-1") is None
    assert not old_claims(store)
    assert claim(store, 8, "new-2") is None  # another run: not crossing
    assert not old_claims(store)
    release_submit(store, claim_key("mix", 7), "new-1")
    assert not old_claims(store, NOW + 1)
    assert store.command_claims.holder(OLD) == NEWER_SUBMITS  # held for new-2's submit
    release_submit(store, claim_key("mix", 8), "new-2")
    assert old_claims(store, NOW + 2)


def test_a_renewed_claim_is_lost_once_an_older_trainbot_took_the_recipe(store: Store) -> None:
    """A cancel and resume's claim outlasted its hold during its scancel; an older trainbot
    took the recipe's key meanwhile: renewing it is refused (lost) and claiming it again is
    refused, naming no submit of its own."""
    assert claim(store, 7, "click", hold_s=30.0) is None
    assert old_claims(store, NOW + 60)  # the newer hold lapsed: taken by the older trainbot
    assert not renew_submit(store, claim_key("mix", 7), "click", NOW + 61, 300.0)
    refused = claim(store, 7, "click", now=NOW + 62)
    assert refused is not None and refused.other is None  # type: ignore[attr-defined]


def test_a_rows_settle_ends_its_hold_of_the_older_key(store: Store) -> None:
    """A resume's row in flight sent under `new-1`: its recovery's settle (remove) ends its
    claim and its hold of the older key, so an older trainbot may submit at once."""
    flight = store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=None, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0ALICE", channel="C1", sent_at=NOW,
        holder="new-1").flight
    assert claim(store, None, "new-1", own=flight) is None
    assert not old_claims(store)
    assert store.submits_in_flight.remove(flight.id)
    assert old_claims(store, NOW + 1)
