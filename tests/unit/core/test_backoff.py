"""bot.core.backoff: a try refused again and again is made less and less often."""

from __future__ import annotations

from bot.core.backoff import MAX_SKIPPED, Backoff, Backoffs, after_try


def test_a_refused_try_is_made_again_after_1_2_4_8_then_at_most_16_chances_skipped() -> None:
    backoff, tried = Backoff(), []
    for chance in range(80):
        if backoff.due():
            tried.append(chance)
            backoff.refused_again()
    assert tried == [0, 2, 5, 10, 19, 36, 53, 70]
    assert MAX_SKIPPED == 16


def test_a_new_backoff_tries_at_once() -> None:
    assert Backoff().due()


def test_backoffs_keep_one_backoff_per_key_until_it_is_taken_or_forgotten() -> None:
    backoffs, tried = Backoffs(), []
    for chance in range(12):
        for key in ("a", "b"):
            if backoffs.due(key):
                tried.append((chance, key))
                if key == "a" or chance < 2:
                    backoffs.refused(key)
                else:
                    backoffs.taken(key)
    assert [c for c, k in tried if k == "a"] == [0, 2, 5, 10]
    assert [c for c, k in tried if k == "b"] == [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    backoffs.forget(lambda key: key == "a")
    assert backoffs.due("a") and backoffs.by_key == {}


def test_after_a_try_a_refusal_backs_off_a_failure_comes_again_a_rejection_ends_it() -> None:
    """`after_try`: refused tries skip 1, 2, 4 … chances; a transient failure between them is
    tried at the next chance and leaves the backoff as it was; taken or rejected (the message
    itself refused: never taken as it is), the key is over and its backoff forgotten."""
    backoffs = Backoffs()
    assert after_try(backoffs, "a", "refused") == 1
    assert after_try(backoffs, "a", "refused") == 2
    assert after_try(backoffs, "a", "failed") == 0
    assert after_try(backoffs, "a", "refused") == 4
    assert after_try(backoffs, "a", "taken") is None and "a" not in backoffs.by_key
    assert after_try(backoffs, "b", "refused") == 1
    assert after_try(backoffs, "b", "rejected") is None and backoffs.by_key == {}
    assert after_try(backoffs, "c", "failed") == 0 and backoffs.by_key == {}
