"""The App Home's rows of adopted jobs (bot.core.home, pure): who sees them, which buttons
they carry, and how many rows fit in one view."""

from __future__ import annotations

import pytest

from bot.core.home import (
    FIXED_BLOCKS,
    MAX_VIEW_BLOCKS,
    adopted_buttons,
    fit_rows,
    row_blocks,
    sees_adopted,
)


@pytest.mark.parametrize(("user", "watched_by", "may_control", "sees"), [
    ("U0BOB", "U0BOB", False, True),  # adopted it
    ("U0APPR", "U0BOB", True, True),  # may act on it (an approver)
    ("U0ALICE", "U0BOB", False, False),  # neither
    ("U0ALICE", None, False, False),  # adopted before trainbot recorded who
])
def test_an_adopted_job_shows_to_its_adopter_and_to_who_may_act_on_it(user, watched_by,
                                                                       may_control, sees):
    assert sees_adopted(user, watched_by, may_control) is sees


def test_an_adopted_job_never_gets_a_resubmit_and_cancel_only_with_authorization():
    kinds = ["resubmit", "resubmit_mem", "cancel_resume", "cancel", "dismiss", "probe"]
    assert adopted_buttons(kinds, may_control=True) == ["cancel", "dismiss", "probe"]
    assert adopted_buttons(kinds, may_control=False) == ["dismiss", "probe"]


def _row(prompts: int = 0, summary: bool = True, buttons: bool = False) -> dict:
    return {"prompts": [{"summary": "s" if summary else None}] * prompts,
            "buttons": [{"kind": "cancel"}] if buttons else []}


def test_a_rows_blocks_are_counted_as_the_template_renders_them():
    assert row_blocks(_row()) == 2  # divider + section
    assert row_blocks(_row(prompts=2)) == 6  # + summary and actions per prompt
    assert row_blocks(_row(prompts=1, summary=False, buttons=True)) == 4


def test_rows_are_capped_at_max_rows_and_at_a_views_100_blocks():
    assert fit_rows([_row()] * 40, max_rows=15) == 15
    budget = MAX_VIEW_BLOCKS - FIXED_BLOCKS
    heavy = [_row(prompts=3, buttons=True)] * 15  # 9 blocks each
    assert fit_rows(heavy, max_rows=15) == budget // 9
    assert fit_rows([], max_rows=15) == 0
