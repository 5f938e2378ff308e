"""bot.core.backoff: a try refused again and again is made less and less often."""

from __future__ import annotations

from bot.core.backoff import MAX_SKIPPED, THREADLESS_TRIES, AfterTry, Backoff, Backoffs, after_try


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
                after_try(backoffs, key, "refused" if key == "a" or chance < 2 else "taken")
    assert [c for c, k in tried if k == "a"] == [0, 2, 5, 10]
    assert [c for c, k in tried if k == "b"] == [0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    backoffs.forget(lambda key: key == "a")
    assert backoffs.due("a") and backoffs.by_key == {}


def test_after_a_try_a_refusal_backs_off_a_failure_comes_again_a_rejection_ends_it() -> None:
    """`after_try`: refused tries are tried again after 1, 2, 4 … chances skipped; a transient
    failure between them at the next chance, the backoff as it was; taken, the key is posted
    and its backoff forgotten; rejected (the message itself refused: never taken as it is),
    given up at once, never tried again. The tries in a row not taken make one failure
    series: the first is the one warned of, and a post after it is a recovery."""
    backoffs = Backoffs()
    assert after_try(backoffs, "a", "refused") == AfterTry("later", 1, failed=1)
    assert after_try(backoffs, "a", "refused") == AfterTry("later", 2, failed=2)
    assert after_try(backoffs, "a", "failed") == AfterTry("later", 0, failed=3)
    assert after_try(backoffs, "a", "refused") == AfterTry("later", 4, failed=4)
    assert [after_try(backoffs, "a", "refused").first_failure] == [False]
    posted = after_try(backoffs, "a", "taken")
    assert posted == AfterTry("posted", failed=5) and posted.recovered
    assert "a" not in backoffs.by_key
    assert not after_try(backoffs, "a", "taken").recovered  # taken at once: nothing to say
    assert after_try(backoffs, "b", "refused").first_failure
    assert after_try(backoffs, "b", "rejected").outcome == "given_up"
    assert backoffs.by_key == {}
    assert after_try(backoffs, "c", "rejected") == AfterTry("given_up", failed=1)
    assert after_try(backoffs, "d", "failed") == AfterTry("later", 0, failed=1)
    assert backoffs.due("d")  # a transient failure: the next chance is a try


def test_a_note_with_no_thread_waits_with_a_backoff_then_is_given_up() -> None:
    """A try with no thread (its run's root message not posted) is tried again less and
    less often, like a refusal; still no thread at the `THREADLESS_TRIES`th try, it is
    given up; the root posted before that, the next try posts it."""
    backoffs, tried, outcomes = Backoffs(), [], []
    for chance in range(100):
        if "given_up" not in outcomes and backoffs.due("n"):
            tried.append(chance)
            outcomes.append(after_try(backoffs, "n", "threadless").outcome)
    assert THREADLESS_TRIES == 8
    assert tried == [0, 2, 5, 10, 19, 36, 53, 70]
    assert outcomes == ["later"] * 7 + ["given_up"] and backoffs.by_key == {}
    for _ in range(3):
        after_try(backoffs, "m", "threadless")
    assert after_try(backoffs, "m", "taken") == AfterTry("posted", failed=3)


def test_a_note_whose_runs_root_slack_refused_is_given_up_at_once() -> None:
    """The run's root message refused (tried again for the note, and refused again): its
    thread will not come by itself, so the note is given up at its first try, not after
    `THREADLESS_TRIES`; one that waited for its thread first is given up as well, its
    series' tries counted."""
    backoffs = Backoffs()
    assert after_try(backoffs, "n", "root_refused") == AfterTry("given_up", failed=1)
    assert backoffs.by_key == {}
    after_try(backoffs, "m", "threadless")
    assert after_try(backoffs, "m", "root_refused") == AfterTry("given_up", failed=2)
    assert backoffs.by_key == {}
