"""A settle of an approved cancel (bot.services.cancel_settle) marks its step only while the
prompt is still approved by the click it read (`mark_step` with state="approved" and that
claim's decided_by/decided_at): a click that gave the prompt back between the settle's read
and its mark (pending again, nothing cancelled), or gave it back and another click claimed
it again, is not taken over nor settled."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import pytest
from fakes import AnswerLostSlurm, make_context
from support.dying import Died
from support.mix_prompt import mix_prompt

from bot.cluster.errors import ChannelClosed
from bot.services import cancel_settle
from bot.services.approvals import handle_click
from bot.services.cancel_settle import settle_unknown_cancels
from bot.services.ports import BotContext
from bot.slack.views import ActionId
from bot.store import Store

NOW = 1_000_000.0


def stalled_prompt(store: Store) -> tuple[BotContext, AnswerLostSlurm, str]:
    """Run `mix` whose job 88154 stalled, a Cancel and resume prompt on it: (context,
    Slurm, the prompt's token)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    _, prompt = mix_prompt(ctx, run_at=NOW - 1000, now=NOW - 100, running=slurm, watched=True)
    return ctx, slurm, prompt.token


def audited(store: Store, action: str) -> list[str]:
    return [json.loads(e.detail or "{}")["token"] for e in store.audit.recent(50)
            if e.action == action]


def given_back(store: Store, token: str, again: bool, forget: tuple[str, ...] = ()
               ) -> Callable[[], None]:
    """W0LEAD's click gives the prompt back (`release` of its claim, as the click does when
    nothing was cancelled), and, `again`, U0APPR's click claims it again."""
    def give_back() -> None:
        assert store.approvals.release(token, by="W0LEAD", at=NOW, forget=forget)
        if again:
            assert store.approvals.claim(token, "U0APPR", NOW + 900, step="claimed").claimed
    return give_back


@pytest.mark.parametrize("again", [False, True], ids=["given_back", "claimed_again"])
def test_a_click_taken_over_is_not_marked_once_given_back_after_the_settles_read(
        store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        again: bool) -> None:
    """W0LEAD's Cancel and resume seems dead in its scancel (its step is past its takeover);
    the settle reads it approved, then the click gives the prompt back (its scancel not sent)
    and, `claimed_again`, U0APPR claims it: the settle marks no unknown cancel on it."""
    ctx, slurm, token = stalled_prompt(store)

    def dies_in_scancel(job_id: int) -> None:
        raise Died(f"scancel {job_id}")

    monkeypatch.setattr(slurm, "cancel", dies_in_scancel)
    with pytest.raises(Died):
        handle_click(ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", NOW)
    meanwhile = given_back(store, token, again, forget=("cancelling_to_resume",))
    takeover_at = cancel_settle.cancel_takeover_at

    def read_then_given_back(ctx: BotContext, approval: object) -> float | None:
        due = takeover_at(ctx, approval)  # type: ignore[arg-type]
        meanwhile()
        return due

    monkeypatch.setattr(cancel_settle, "cancel_takeover_at", read_then_given_back)
    with caplog.at_level(logging.ERROR):
        settle_unknown_cancels(ctx, NOW + 10_000)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert audited(store, "approval.cancel_taken_over") == []
    assert sorted(store.approvals.steps(token)) == (["claimed"] if again else [])


@pytest.mark.parametrize("again", [False, True], ids=["given_back", "claimed_again"])
def test_an_unknown_cancel_is_not_settled_once_given_back_after_the_settles_read(
        store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        again: bool) -> None:
    """W0LEAD's Cancel and resume did not see its scancel's end (cancel_unknown); the settle
    reads it approved, then its claim is given back and, `claimed_again`, U0APPR claims it:
    the settle marks no cancel_settled on it and settles nothing."""
    ctx, slurm, token = stalled_prompt(store)
    slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                             connection_lost=True)
    assert handle_click(ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", NOW).status == "done"
    slurm.cancel_answer_lost = None
    assert "cancel_unknown" in store.approvals.steps(token)
    meanwhile = given_back(store, token, again)
    bounds_of_run = cancel_settle.step_bounds

    def bounds_then_given_back(*args: object) -> object:
        bounds = bounds_of_run(*args)  # type: ignore[arg-type]
        meanwhile()
        return bounds

    monkeypatch.setattr(cancel_settle, "step_bounds", bounds_then_given_back)
    with caplog.at_level(logging.ERROR):
        settle_unknown_cancels(ctx, NOW + 600)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert "cancel_settled" not in store.approvals.steps(token)
    assert audited(store, "approval.cancel_settled") == []
