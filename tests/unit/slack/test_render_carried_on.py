"""The prompt of a Cancel and resume whose resubmit another submit made needless, as a person
reads it after the click (templates/decided.json.j2 through approved_choices.carried_on): a run that
trainbot's automatic resubmit carried on, or one resumed by a submitter no audit names."""
from __future__ import annotations

import pytest
from slack_standin import validate_blocks

from bot.services.approved_choices import carried_on
from bot.services.submit import AUTOMATIC_ACTOR, RunMovedOn, RunSubmitInFlight
from bot.slack.render import render_blocks
from bot.store.rows import SubmitInFlight

T0 = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC


def said(lang: str, exc: RunMovedOn | RunSubmitInFlight) -> str:
    """The prompt's text after W0LEAD's Cancel and resume of job 88154 met `exc`."""
    outcome = carried_on(exc, "W0LEAD", "mix", "88154", T0)
    blocks, text = render_blocks("decided", lang, {"summary": "s", "outcome": outcome.to_view()})
    assert validate_blocks(blocks) == []
    return text


@pytest.mark.parametrize(("lang", "by", "text"), [
    ("en", AUTOMATIC_ACTOR,
     "Approved by <@W0LEAD>: cancelled job 88154; nothing was resubmitted: the run was resumed "
     "meanwhile as job 88887 by trainbot's automatic resubmit, which carries it on"),
    ("ko", AUTOMATIC_ACTOR,
     "<@W0LEAD>님이 승인했습니다: 작업 88154을(를) 취소했습니다. 재제출은 하지 않았습니다: "
     "그사이에 trainbot의 자동 재제출로 실행이 작업 88887(으)로 재개되었고, 그 작업이 실행을 "
     "이어 갑니다"),
    ("en", None,
     "Approved by <@W0LEAD>: cancelled job 88154; nothing was resubmitted: the run was resumed "
     "meanwhile as job 88887, which carries it on"),
    ("ko", None,
     "<@W0LEAD>님이 승인했습니다: 작업 88154을(를) 취소했습니다. 재제출은 하지 않았습니다: "
     "그사이에 실행이 작업 88887(으)로 재개되었고, 그 작업이 실행을 이어 갑니다"),
])
def test_a_cancel_and_resume_the_run_moved_on_from_names_who_carries_it(lang, by, text):
    """The run was resumed as 88887 between the click's scancel and its resubmit: by trainbot's
    automatic resubmit (its audit actor), or by nobody the audit names (no "<@None>")."""
    shown = said(lang, RunMovedOn("88154", "88887", by, "PENDING"))
    assert shown == text
    assert "None" not in shown and "<@trainbot>" not in shown


@pytest.mark.parametrize(("lang", "text"), [
    ("en", "Approved by <@W0LEAD>: cancelled job 88154; nothing was resubmitted: trainbot's "
     "automatic resubmit of this run, sent at 20:21 UTC, is in flight and carries the run on. "
     "Nothing else to do: the run's thread tells which job it queued"),
    ("ko", "<@W0LEAD>님이 승인했습니다: 작업 88154을(를) 취소했습니다. 재제출은 하지 않았습니다: "
     "20:21 UTC에 보낸 이 실행에 대한 trainbot의 자동 재제출이 진행 중이며 실행을 이어 갑니다. "
     "더 할 일은 없습니다: 실행 스레드가 어떤 작업이 대기열에 들어갔는지 알려 줍니다"),
])
def test_a_cancel_and_resume_beside_trainbots_automatic_resubmit_in_flight_says_so(lang, text):
    """The click's resubmit was refused by trainbot's automatic resubmit of the run, sent five
    minutes before and its job not recorded yet: the prompt says that one carries the run on
    and when it was sent, not a person's mention."""
    flight = SubmitInFlight(id=1, cluster="dev", recipe="mix", job_name="mix", chain_id=1,
                            array_task=None, resumed_at=None, charge_retry=False,
                            actor=AUTOMATIC_ACTOR, channel=None, sent_at=T0 - 300)
    shown = said(lang, RunSubmitInFlight(flight, T0))
    assert shown == text
    assert "<@trainbot>" not in shown
