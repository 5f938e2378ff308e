"""The Home tab's "Last incident" (bot.core.home.last_incident): why the checkpoint its
resume starts from is unknown, only when its decision resumes the run."""

from __future__ import annotations

import pytest

from bot.core.home import last_incident
from bot.core.policy import Decision, DecisionKind

FAILED = {"checkpoint_lookup": "failed"}


@pytest.mark.parametrize(("decision", "unknown"), [
    (Decision(DecisionKind.PROPOSE_RESUBMIT, "r", "c", offers=("resubmit",), facts=FAILED),
     "lookup_failed"),
    (Decision(DecisionKind.ASK_HUMAN, "r", "c", offers=("resubmit", "dismiss"), facts=FAILED),
     "lookup_failed"),
    (Decision(DecisionKind.PROPOSE_RESUBMIT, "r", "c", offers=("resubmit",)), None),
    # not resumed: where a resume would start is nothing to say
    (Decision(DecisionKind.STOP, "r", "c", offers=("dismiss",), facts=FAILED), None),
    (None, None),  # a row stored without its decision
])
def test_last_incident_says_why_its_resume_checkpoint_is_unknown(decision, unknown):
    row = last_incident("c", "123_4", decision.to_json() if decision else None)
    assert row == {"class_id": "c", "job_id": "123_4", "checkpoint_unknown": unknown,
                   "never_started": False}
