"""An approved cancel's steps, and the times counted from them.

A Cancel's click (bot.services.approved_choices) marks CANCELLING_STEP before its job leaves
the watch list and its scancel is sent, UNKNOWN_CANCEL_STEP when the scancel's end was not
seen, and, for a cancel and resume whose scancel was seen, RESUMING_STEP from its resubmit on.
From them: `cancel_takeover_at`, when a cancel left in its scancel (its click's process dead
in it) is taken over as one whose end was not seen (bot.services.cancel_settle; the replies
that name its wait, bot.services.approvals), and `scancel_over_at`, when its click's scancel
has ended at the latest: a settle concludes "not cancelled" only after it.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.takeover import cancel_takeover_s
from bot.services.ports import BotContext
from bot.services.submit_deadlines import RESUMING_STEP, SETTLED_STEP, cluster_deadlines
from bot.store import Approval

CLAIMED_STEP = "claimed"
"""Marked with the claim of every acting choice but a hold's yes (which marks
bot.services.competitors.HOLD_APPROVED_STEP), in the claim's transaction, with the
clicker's bounds: its time is the click's lease until its next recorded step (a Cancel's
CANCELLING_STEP, a resubmit's row in flight or its job). A claim left alone past
bot.services.claim_takeover's bound is a click whose process died: taken over there."""

UNKNOWN_CANCEL_STEP = {True: "cancel_unknown", False: "cancel_only_unknown"}
"""The step an approved cancel whose scancel's end was not seen is left in, by what it was to
do after the cancel: resume the run (Cancel and resume: True) or nothing more (Cancel)."""

CANCELLING_STEP = {True: "cancelling_to_resume", False: "cancelling"}
"""The step of an approved cancel from its click, marked before its job leaves the watch list
and its scancel is sent, by what it was to do after the cancel (as UNKNOWN_CANCEL_STEP's): its
time is the click's lease on the scancel. One with no step after it (the scancel's end not
seen, the resume begun) nor an end, once bot.core.takeover.cancel_takeover_s old (at the
longer of the click's bounds, kept with the step, and the current config's), is a click
whose process died in its scancel: bot.services.cancel_settle settles it as a cancel whose
end was not seen (`cancel_takeover_at` says when)."""


ANNOUNCED_STEP = "cancel_announced"
"""The step of a settled cancel once all of what became of it was said (bot.services.
cancel_settle)."""

CANCEL_STEPS = frozenset((*CANCELLING_STEP.values(), *UNKNOWN_CANCEL_STEP.values(),
                          RESUMING_STEP, SETTLED_STEP, ANNOUNCED_STEP))
"""Every step an approved cancel goes through, all from CANCELLING_STEP on (marked just before
its scancel is sent): an approval in one of them may have sent its scancel. The prompt
follow-up's steps ("reminded", "escalated") and a hold's are not among them."""

def cancel_takeover_at(ctx: BotContext, approval: Approval) -> float | None:
    """When `approval`'s cancel, left in its CANCELLING_STEP with no step after it (its
    click's scancel under way, or its process dead in it), is taken over as one whose end was
    not seen (bot.services.cancel_settle): `scancel_over_at`. None when it is in no such
    step. The takeover and the replies that name its wait both count it here."""
    steps = ctx.store.approvals.steps(approval.token)
    if any(s in steps for s in (*UNKNOWN_CANCEL_STEP.values(), RESUMING_STEP)):
        return None  # the click saw its scancel's end (or not) and went on
    return _scancel_over_at(ctx, approval, steps)


def scancel_over_at(ctx: BotContext, approval: Approval) -> float | None:
    """When `approval`'s click's scancel has ended at the latest, wherever it is now: its
    CANCELLING_STEP's time (marked before the scancel was sent) plus cancel_takeover_s at the
    longer of the bounds its click kept with the step and the current config's, the time its
    takeover comes (`cancel_takeover_at`). A settle concludes "not cancelled" only after it
    (bot.services.cancel_settle): a scancel whose end was not seen may still be running on the
    login node until then. None when the approval has no such step (not a cancel)."""
    return _scancel_over_at(ctx, approval, ctx.store.approvals.steps(approval.token))


def _scancel_over_at(ctx: BotContext, approval: Approval,
                     steps: Mapping[str, float]) -> float | None:
    marked = CANCELLING_STEP[CANCELLING_STEP[True] in steps]
    if marked not in steps:
        return None  # not cancelling
    deadlines = cluster_deadlines(ctx.config, approval.payload.get("cluster", ""))
    return steps[marked] + cancel_takeover_s(deadlines,
                                             ctx.store.approvals.bounds_of(approval.token,
                                                                           marked))
