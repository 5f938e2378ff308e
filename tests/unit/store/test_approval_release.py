"""ApprovalsRepo.release: a claim given back only while it is still the releaser's.

Every test runs on SQLite and on PostgreSQL (the dev cluster's, see tests/conftest.py).
"""

from __future__ import annotations

import pytest
from fakes import present

from bot.store import Store


@pytest.fixture
def store(store_url):
    s = Store.open(store_url)
    yield s
    s.close()


def _claimed(store: Store, actor: str, now: float) -> str:
    token = store.approvals.create(action="cancel", payload={}, allowed=["U1", "U2"],
                                   expires_at=10_000.0, now=0.0, target_job="88154")
    assert store.approvals.claim(token, actor, now, step="claimed").claimed
    return token


def test_a_release_by_its_claimer_gives_the_prompt_back(store: Store) -> None:
    token = _claimed(store, "U1", 100.25)
    store.approvals.mark_step(token, "cancelling_to_resume", now=100.5)
    assert store.approvals.release(token, by="U1", at=100.25, forget=("cancelling_to_resume",))
    after = present(store.approvals.get(token))
    assert (after.state, after.decided_by, after.decided_at) == ("pending", None, None)
    assert store.approvals.steps(token) == {}


def test_a_release_keeps_a_claim_made_since_by_another_click(store: Store) -> None:
    """Click 1's claim is given back (released), click 2 claims the prompt: click 1 releasing
    again (or late) leaves click 2's claim and its step as they are."""
    token = _claimed(store, "U1", 100.25)
    assert store.approvals.release(token, by="U1", at=100.25)
    assert store.approvals.claim(token, "U2", 101.0, step="claimed").claimed
    assert not store.approvals.release(token, by="U1", at=100.25)
    assert not store.approvals.claim(token, "U1", 102.0, step="claimed").claimed
    # the same person's later click on another replica is another claim too
    assert store.approvals.release(token, by="U2", at=101.0)
    assert store.approvals.claim(token, "U2", 103.0, step="claimed").claimed
    assert not store.approvals.release(token, by="U2", at=101.0)
    after = present(store.approvals.get(token))
    assert (after.state, after.decided_by, after.decided_at) == ("approved", "U2", 103.0)
    assert list(store.approvals.steps(token)) == ["claimed"]


def test_a_release_leaves_a_claim_whose_cancel_a_settle_took_over(store: Store) -> None:
    """A settle marked the claim's cancel `cancel_unknown` (its click seemed dead): the click
    releasing it, unless that step is marked, leaves it approved with its steps."""
    token = _claimed(store, "U1", 100.25)
    store.approvals.mark_step(token, "cancelling_to_resume", now=100.5)
    store.approvals.mark_step(token, "cancel_unknown", now=900.0)
    assert not store.approvals.release(token, by="U1", at=100.25,
                                       forget=("cancelling_to_resume",),
                                       unless=("cancel_unknown", "cancel_settled"))
    assert present(store.approvals.get(token)).state == "approved"
    assert set(store.approvals.steps(token)) == {"claimed", "cancelling_to_resume",
                                                 "cancel_unknown"}


def test_a_settles_mark_after_a_release_marks_nothing(store: Store) -> None:
    """A settle read the prompt approved (its click's claim), then the click released it
    (pending again, its cancel not sent): the settle's mark, made on the state it read
    (`state="approved"`), marks nothing, so no settle goes on with a prompt given back and
    claimed again meanwhile; while still approved it marks, once."""
    token = _claimed(store, "U1", 100.25)
    read = present(store.approvals.get(token))
    assert read.state == "approved"
    assert store.approvals.release(token, by="U1", at=100.25)
    assert not store.approvals.mark_step(token, "cancel_settled", now=900.0, state="approved")
    assert not store.approvals.mark_step(token, "cancel_unknown", now=900.0, state="approved")
    assert store.approvals.steps(token) == {}
    assert store.approvals.claim(token, "U2", 901.0, step="claimed").claimed
    assert store.approvals.mark_step(token, "cancel_settled", now=902.0, state="approved")
    assert not store.approvals.mark_step(token, "cancel_settled", now=903.0, state="approved")
    assert store.approvals.steps(token) == {"claimed": 901.0, "cancel_settled": 902.0}
    assert not store.approvals.mark_step("no-such-token", "cancel_settled", now=904.0,
                                         state="approved")


def test_a_mark_on_a_claim_marks_nothing_once_another_click_claimed_it_again(
        store: Store) -> None:
    """A settle read U1's claim (approved at 100.25); U1's click gave it back and U2's
    claimed it again: the settle's mark on the claim it read (`state="approved"`, `by`, `at`)
    marks nothing (None: not that claim), told apart from a step marked before (False); a
    mark on U2's claim marks, once. `by` and `at` go with `state` only."""
    token = _claimed(store, "U1", 100.25)
    assert store.approvals.release(token, by="U1", at=100.25)
    assert store.approvals.mark_step(token, "cancel_settled", now=900.0, state="approved",
                                     by="U1", at=100.25) is None
    assert store.approvals.claim(token, "U2", 901.0, step="claimed").claimed
    for by, at in (("U1", 100.25), ("U1", 901.0), ("U2", 100.25)):
        assert store.approvals.mark_step(token, "cancel_settled", now=902.0,
                                         state="approved", by=by, at=at) is None
    assert store.approvals.steps(token) == {"claimed": 901.0}
    assert store.approvals.mark_step(token, "cancel_settled", now=903.0, state="approved",
                                     by="U2", at=901.0) is True
    assert store.approvals.mark_step(token, "cancel_settled", now=904.0, state="approved",
                                     by="U2", at=901.0) is False
    with pytest.raises(ValueError):
        store.approvals.mark_step(token, "cancel_announced", now=905.0, by="U2")
    assert store.approvals.steps(token) == {"claimed": 901.0, "cancel_settled": 903.0}
