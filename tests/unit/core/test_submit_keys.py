"""Submit keys cross when one is the other or lies under it (bot.core.submit_keys)."""

from __future__ import annotations

import pytest

from bot.core.submit_keys import claim_key, crosses, keys_above

NEW, RUN, TASK = claim_key("mix"), claim_key("mix", 7), claim_key("mix", 7, 3)


def test_a_keys_parents_are_above_it_the_top_first() -> None:
    assert (NEW, RUN, TASK) == ("submit:mix/", "submit:mix/run:7/", "submit:mix/run:7/task:3/")
    assert keys_above(TASK) == [NEW, RUN] and keys_above(NEW) == []


@pytest.mark.parametrize(("key", "other", "crossing"), [
    (RUN, RUN, True), (NEW, RUN, True), (NEW, TASK, True), (RUN, TASK, True),
    (RUN, claim_key("mix", 8), False), (TASK, claim_key("mix", 7, 4), False),
    (claim_key("mix", 8), claim_key("mix", 8, 3), True),
    (claim_key("mix", 1), claim_key("mix", 12), False),  # a path, not a prefix of the text
    (NEW, claim_key("mixed"), False), (TASK, claim_key("mixed", 7, 3), False),
])
def test_two_submits_cross_when_one_key_is_the_other_or_under_it_either_way(
        key: str, other: str, crossing: bool) -> None:
    assert crosses(key, other) is crossing and crosses(other, key) is crossing
