"""bot.core.backoff: a try refused again and again is made less and less often."""

from __future__ import annotations

from bot.core.backoff import MAX_SKIPPED, Backoff


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
