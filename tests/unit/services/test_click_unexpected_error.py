"""A claimed click whose choice raises something no step expects (here: sending the job
raises a bare ValueError, as SubmitSpec's check of a value nothing checked before would)
never leaves its prompt stuck: nothing reached the cluster → the claim is released, the
clicker is told what failed and may press again; the scancel was sent → the prompt says the
click failed, and why."""

from __future__ import annotations

import pytest
from fakes import FakeSlurm, make_context
from support.mix_prompt import mix_prompt

from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.store import Store

NOW = 1_000_000.0
REFUSED = "environment variable 'PATH' would change how sbatch runs on the login node"


@pytest.fixture(autouse=True)
def send_job_raises(monkeypatch):
    """Sending the job raises what no step expects (the config loader now refuses the recipe
    values SubmitSpec would, so none is left to provoke it)."""
    def send_job(*args, **kwargs):
        raise ValueError(REFUSED)
    monkeypatch.setattr("bot.services.submit.send_job", send_job)


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


def _ctx(store: Store, slurm: FakeSlurm) -> BotContext:
    return make_context(store, slurm)


def test_a_resubmit_that_raises_before_its_sbatch_leaves_the_prompt_usable(store) -> None:
    slurm = FakeSlurm()
    ctx = _ctx(store, slurm)
    _, prompt = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False,
                           resume_iter=3000)
    first = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW + 1)
    assert first.status == "failed"
    assert first.update_text is None  # the prompt's buttons stay
    assert first.ephemeral is not None
    assert "Nothing was done" in first.ephemeral and "ValueError" in first.ephemeral
    assert "'PATH'" in first.ephemeral and "press its button again" in first.ephemeral
    assert slurm.submits() == []
    again = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW + 2)
    assert again.ephemeral is not None and "Already decided" not in again.ephemeral
    assert "Nothing was done" in again.ephemeral  # tried again, and said again
    assert [e.result for e in store.audit.recent(10) if e.action == "approval.click"] \
        == ["released", "released"]


@pytest.mark.parametrize("step", ["reminded", "escalated"])
def test_a_followed_up_prompt_whose_resubmit_raises_before_its_sbatch_stays_usable(
        store, step) -> None:
    """The follow-up's own steps (a reminder, an escalation) say nothing reached the cluster."""
    slurm = FakeSlurm()
    ctx = _ctx(store, slurm)
    _, prompt = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False,
                           resume_iter=3000)
    assert store.approvals.mark_step(prompt.token, step, now=NOW + 0.5)
    first = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW + 1)
    assert first.status == "failed"
    assert first.update_text is None  # the prompt's buttons stay
    assert first.ephemeral is not None and "Nothing was done" in first.ephemeral
    assert slurm.submits() == []
    again = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW + 2)
    assert again.ephemeral is not None and "Already decided" not in again.ephemeral
    assert "Nothing was done" in again.ephemeral


def test_the_clicker_is_told_in_the_recipes_language(tmp_path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'ko.db'}") as store:
        ctx = make_context(store, FakeSlurm(), slack_lang="ko")
        _, prompt = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False)
        result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW + 1)
        assert result.ephemeral is not None
        assert "아무것도 하지 않았습니다" in result.ephemeral and "ValueError" in result.ephemeral


def test_a_cancel_and_resume_that_raises_after_its_scancel_says_it_failed(store) -> None:
    slurm = FakeSlurm()
    ctx = _ctx(store, slurm)
    _, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    result = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW + 1)
    assert slurm.acted("cancel") == [88154]
    assert slurm.submits() == []
    assert result.status == "failed"
    assert result.update_text is not None
    assert "it failed" in result.update_text and "'PATH'" in result.update_text
    # decided: pressing again does not cancel or submit anything a second time
    again = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW + 2)
    assert again.status == "duplicate"
    assert slurm.acted("cancel") == [88154] and slurm.submits() == []
