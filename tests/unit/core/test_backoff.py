"""bot.core.backoff: a try refused again and again is made less and less often."""

from __future__ import annotations

from bot.core.backoff import MAX_SKIPPED, Backoff, Backoffs


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
