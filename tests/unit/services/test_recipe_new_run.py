"""After a failure someone starts the recipe again (`/train submit mix`: a new run, its own
chain, the same job name and checkpoint dir). The old run's prompts and its automatic
resubmit no longer carry the recipe on: a Resubmit click, a Cancel and resume's resubmit and
a due automatic resubmit queue nothing beside the new run's job, and say why."""

from __future__ import annotations

import time

import pytest
from fakes import T0, FakeResubmit, FakeSFTP, FakeSlurm, make_context, present, recorded
from support.mix_prompt import mix_prompt
from support.watcher import timed_out

from bot.core.train_grammar import parse_command
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.services.train import execute
from bot.services.watch_events import ThreadEvents
from bot.store import Store


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


def _new_run(ctx: BotContext, now: float) -> str:
    reply = execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN",
                    now=now)
    assert reply.job_id is not None
    return str(reply.job_id)


def test_an_old_runs_resubmit_is_out_of_date_once_a_new_run_is_submitted(store) -> None:
    now = time.time()
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88154, state="FAILED", name="mix")
    _, prompt = mix_prompt(ctx, now=now, summary="88154 died", offer_cancel=False,
                           resume_iter=3000)
    new_job = _new_run(ctx, now + 10)
    result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", now + 20)
    assert [s.job_name for s in slurm.submits()] == ["mix"]  # the new run's alone
    assert result.status == "stale"
    # its post was rewritten as the new run was submitted (after_submit.supersede_prompts):
    # a click from a view not refreshed yet is told the same
    assert result.ephemeral == result.update_text == (
        f"Out of date: a newer run of mix took over as job {new_job} (its own thread, in "
        "<#C0TRAIN>); these buttons no longer apply: nothing was resubmitted.")
    again = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", now + 30)
    assert again.status == "stale" and len(slurm.submits()) == 1


def test_the_out_of_date_resubmit_says_so_in_korean(tmp_path) -> None:
    now = time.time()
    with Store.open(f"sqlite:///{tmp_path / 'ko.db'}") as store:
        slurm = FakeSlurm()
        ctx = make_context(store, slurm, slack_lang="ko")
        _, prompt = mix_prompt(ctx, now=now, summary="88154 died", offer_cancel=False)
        new_job = _new_run(ctx, now + 10)
        result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", now + 20)
        assert result.update_text is not None and len(slurm.submits()) == 1
        assert "새로운 실행이 작업" in result.update_text and new_job in result.update_text


def test_the_new_runs_own_resubmit_still_works(store) -> None:
    now = time.time()
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    mix_prompt(ctx, now=now, summary="88154 died", offer_cancel=False)
    new_job = _new_run(ctx, now + 10)
    attempt = present(store.attempts.get_by_job(new_job, "dev"))
    its_prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=attempt.chain_id,
                                        job_id=new_job, now=now + 20, summary="died")
    result = handle_click(ctx, its_prompt.token, ActionId.RESUBMIT, "U0APPR", now + 30)
    assert result.status == "done"
    assert len(slurm.submits()) == 2


def test_an_old_runs_cancel_and_resume_cancels_and_resubmits_nothing(store) -> None:
    now = time.time()
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    _, prompt = mix_prompt(ctx, now=now, running=slurm, watched=True)
    new_job = _new_run(ctx, now + 10)
    result = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", now + 20)
    assert slurm.acted("cancel") == [88154]  # the stalled copy stops
    assert len(slurm.submits()) == 1  # and no third one starts
    assert result.update_text is not None
    assert (f"cancelled job 88154; nothing was resubmitted: a new run of mix was started "
            f"since as job {new_job}, which carries it on") in result.update_text


def test_an_old_runs_due_automatic_resubmit_is_dropped_and_said(store) -> None:
    ctx = make_context(store, FakeSlurm())
    resubmit = FakeResubmit(store)
    watcher, chain = timed_out((store, FakeSlurm(), FakeSFTP(), ThreadEvents(ctx)), resubmit)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "auto")
    watcher.tick(T0 + 1310)  # TIMEOUT: resubmit due after its 60-s backoff
    new = store.chains.create(recipe="auto", cluster="dev", job_name="auto", now=T0 + 1320)
    store.attempts.record(chain_id=new.id, job_id="88400", now=T0 + 1320)
    for t in (1380, 1440, 1500):
        watcher.tick(T0 + t)
    assert resubmit.calls == []
    notes = [text for text in recorded(ctx).texts() if "not resubmitted automatically" in text]
    assert notes == ["job 88300 was not resubmitted automatically: a new run of auto was "
                     "started since as job 88400, which carries it on; a second copy beside "
                     "it would write the same checkpoints"]
    assert present(store.incidents.get("dev:88300:resubmit")).state == "dropped"


def test_without_a_new_run_the_due_automatic_resubmit_is_made(store) -> None:
    ctx = make_context(store, FakeSlurm())
    resubmit = FakeResubmit(store)
    watcher, chain = timed_out((store, FakeSlurm(), FakeSFTP(), ThreadEvents(ctx)), resubmit)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "auto")
    for t in (1310, 1380, 1440):
        watcher.tick(T0 + t)
    assert resubmit.calls == [("auto", chain.id, 1200)]
