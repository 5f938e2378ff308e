"""A cancel whose scancel's end was not seen is said "not cancelled" only once the scancel
itself has ended at the latest (bot.services.cancel_steps.scancel_over_at: its click's step plus
the takeover's bound, 584 s with the default deadlines). Before, the settle concluded at
policy.cancel_settle_s (60 s) after the click: a scancel still running on the login node (a
slow slurmctld, a jump host) that landed after that look left the thread saying the job was
not cancelled, offering the cancel again, while Slurm showed it CANCELLED."""

from __future__ import annotations

import pytest
from fakes import AnswerLostSlurm, make_context, present, recorded

from bot.cluster.errors import OutcomeUnknown
from bot.core.takeover import RemoteDeadlines, cancel_takeover_s
from bot.services.approvals import handle_click
from bot.services.cancel_settle import settle_unknown_cancels
from bot.services.cancel_steps import cancel_takeover_at, scancel_over_at
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.slack.views import ActionId
from bot.store import Store

NOW = 1_000_000.0
OVER = NOW + cancel_takeover_s(RemoteDeadlines())  # the click's scancel has ended by then
NOT_CANCELLED = "job 88154 was not cancelled"
LOST = OutcomeUnknown(["scancel", "88154"], "`scancel 88154` did not answer within 60 s: the "
                      "Slurm controller is overloaded or down; it may or may not have taken "
                      "effect")


def clicked(store: Store, choice: str) -> tuple[BotContext, AnswerLostSlurm, int, str]:
    """Job 88154 of run `mix` RUNNING, a prompt on it; W0LEAD clicks `choice` at NOW and its
    scancel's end is not seen (it outlived its deadline; not yet taken effect). (context,
    Slurm, chain id, token)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 1000)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 1000)
    store.watched_jobs.add("dev", "88154", now=NOW - 1000, chain_id=chain.id)
    slurm.add(88154, name="mix", state="RUNNING", partition="debug", account="root")
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    token = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                   now=NOW - 100, summary="88154: stalled",
                                   offer_cancel=True).token
    slurm.cancel_lost = LOST
    assert handle_click(ctx, token, choice, "W0LEAD", NOW).status == "done"
    slurm.cancel_lost = None
    return ctx, slurm, chain.id, token


@pytest.mark.parametrize("choice", [ActionId.CANCEL_RESUME, ActionId.CANCEL])
def test_a_scancel_that_lands_after_the_settle_wait_is_never_said_not_taken(
        store: Store, choice: str) -> None:
    """The scancel outlived its deadline at the click; Slurm still shows the job RUNNING at
    the settle's first look (60 s) and later, then CANCELLED (the scancel landed at 200 s).
    Nothing says "not cancelled" meanwhile and no cancel is offered again; the next look says
    it was cancelled (a cancel and resume resumes the run once). Before, the look at 60 s
    said "not cancelled" and offered the cancel again, and the job then ended CANCELLED."""
    ctx, slurm, chain_id, token = clicked(store, choice)
    assert scancel_over_at(ctx, present(store.approvals.get(token))) == OVER == NOW + 584
    assert cancel_takeover_at(ctx, present(store.approvals.get(token))) is None  # end unseen

    for at in (NOW + 60, NOW + 120):  # still RUNNING: the scancel may still land
        settle_unknown_cancels(ctx, at)
    slurm.set(88154, state="CANCELLED", end_time=NOW + 200)  # it did
    settle_unknown_cancels(ctx, NOW + 260)

    texts = [p[3] for p in recorded(ctx).posts]
    assert not any(NOT_CANCELLED in t for t in texts), texts
    assert not any(p[2] == f"cancel-again:{token}" for p in recorded(ctx).posts)
    assert present(store.approvals.get(token)).state == "done"
    note = [p[3] for p in recorded(ctx).posts if p[2] == f"cancel-settled:{token}"]
    assert len(note) == 1 and note[0].startswith("Approved by <@W0LEAD>: cancelled job 88154")
    assert len(slurm.submits()) == (1 if choice == ActionId.CANCEL_RESUME else 0)
    assert slurm.acted("cancel") == [88154]


def test_a_job_still_running_when_the_scancel_has_ended_is_said_not_cancelled_then(
        store: Store) -> None:
    """The scancel never took effect: the job is said not cancelled, and the cancel offered
    again, at the first look once the scancel has ended at the latest (OVER), not before; once."""
    ctx, slurm, chain_id, token = clicked(store, ActionId.CANCEL_RESUME)
    settle_unknown_cancels(ctx, OVER - 1)
    assert present(store.approvals.get(token)).state == "approved"
    assert not any(NOT_CANCELLED in p[3] for p in recorded(ctx).posts)

    settle_unknown_cancels(ctx, OVER)
    settle_unknown_cancels(ctx, OVER + 60)
    notes = [p[3] for p in recorded(ctx).posts if p[2] == f"cancel-settled:{token}"]
    assert len(notes) == 1 and NOT_CANCELLED in notes[0]
    assert [p[2] for p in recorded(ctx).posts].count(f"cancel-again:{token}") == 1
    assert slurm.submits() == [] and store.watched_jobs.get("dev", "88154") is not None
