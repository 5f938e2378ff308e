"""The submits-in-flight guard's edges: an automatic resubmit's lost job told as trainbot's, a
cancel and resume's row whose approval stays approved, a row whose recipe was taken out of
the config, and the Resubmit and Cancel and resume buttons pressed while a submit is in
flight (bot.services.runs.recover_submits_in_flight, bot.services.submit.RunSubmitInFlight)."""

from __future__ import annotations

from dataclasses import replace

import fakes
import pytest
from fakes import AnswerLostSlurm, make_context, present, recorded
from support.dying import Died, dies_at, restarted
from support.in_flight import in_flight, jobs, recover, watched, without_the_claim
from support.mix_prompt import mix_prompt

from bot.cluster.errors import ChannelClosed
from bot.core import train_grammar as c
from bot.core.policy import Decision, DecisionKind
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.takeover import (
    RemoteDeadlines,
    settle_lead_s,
    settle_takeover_s,
    submit_in_flight_s,
)
from bot.services import submit as submit_mod
from bot.services.approvals import handle_click
from bot.services.cancel_settle import settle_unknown_cancels
from bot.services.ports import BotContext
from bot.services.runs import AutoResubmitter, submit_and_announce
from bot.services.train import execute
from bot.services.watch.outbox import Outbox
from bot.services.watch.resubmit import AutoResubmits
from bot.services.watch_events import ThreadEvents
from bot.slack.views import ActionId
from bot.store import Store

NOW = 1_000_000.0  # 13:46 UTC
SUBMIT_IN_FLIGHT_S = submit_in_flight_s(RemoteDeadlines())  # the dev cluster's: the defaults
SETTLE_TAKEOVER_S = settle_takeover_s(RemoteDeadlines(), post_deadline_s=POST_DEADLINE_S)
LATER = NOW + SUBMIT_IN_FLIGHT_S + 1  # the submit can no longer be in flight
CHANNEL = "C0TRAIN"
INTENT = "dev:88154:resubmit"  # the watcher's intent row of the automatic resubmit of 88154


def automatic_resubmit_died_after_sbatch(store: Store, monkeypatch, **context
                                         ) -> tuple[BotContext, AnswerLostSlurm, int]:
    """Run `mix` (job 88154 failed): the watcher's automatic resubmit, the bot dying right
    after its sbatch queued 90500; its intent row then dropped by another path, so nothing
    but the recovery of the submits in flight leads its row. (context, Slurm, chain)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW, **context)
    chain = fakes.failed_run(ctx, now=NOW, channel=CHANNEL)
    decision = Decision(DecisionKind.RESUBMIT_NOW, "hang", "hang", charged=True)
    auto = AutoResubmitter(ctx, "dev")
    AutoResubmits("dev", store=store, outbox=Outbox("dev", store=store, sink=ThreadEvents(ctx)),
                  resubmit=auto.resubmit, recover=auto.recover).record_due(
        chain, "88154", "mix", decision, NOW - 60)
    store.incidents.set_state(INTENT, "submitting")
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        auto.resubmit("mix", chain, decision, intent=INTENT)
    restarted(store)  # the dead bot's claim is taken over by the next
    store.incidents.set_state(INTENT, "dropped")
    return ctx, slurm, chain


# ------------------------------------------------------- an automatic resubmit's job not watched


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_automatic_resubmits_job_found_below_a_later_one_is_told_as_trainbots(
        store: Store, monkeypatch, lang: str) -> None:
    """The bot died after the watcher's automatic resubmit's sbatch queued 90500 (its intent
    dropped since); a trainbot that did not refuse sent Alice's resume (90501) before the
    recovery found 90500: the thread says 90500 is queued and not watched, as trainbot's
    automatic resubmit's, never as a person's `<@trainbot>`."""
    ctx, slurm, chain = automatic_resubmit_died_after_sbatch(store, monkeypatch, slack_lang=lang)
    with monkeypatch.context() as m:
        without_the_claim(m)
        submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW + 120, chain_id=chain,
                            channel=CHANNEL)
    recover(ctx, LATER)
    assert jobs(store, chain) == ["88154", "90501"] and watched(store) == ["90501"]
    assert in_flight(store) == [] and slurm.queued("mix") == [90500, 90501]
    [note] = [t for t in recorded(ctx).texts() if "90500" in t]
    assert note == {
        "en": "*mix*: job 90500 was also queued under the run's name `mix`, by trainbot's "
              "automatic resubmit, which trainbot died in before recording it. Job 90501 was "
              "submitted into the run after it, and a run's jobs run one after another, so "
              "trainbot does not watch 90500. If it is not wanted, cancel it: "
              "`/train cancel 90500`",
        "ko": "*mix*: 작업 90500도 실행 이름 `mix`(으)로 대기열에 올라 있습니다. trainbot의 자동 "
              "재제출 도중 trainbot이 이를 기록하기 전에 종료되었습니다. 그 뒤에 작업 90501이(가) "
              "이 실행에 제출되었고, 한 실행의 작업은 차례로 하나씩 실행되므로 trainbot은 "
              "90500을(를) 감시하지 않습니다. 필요 없다면 취소하세요: `/train cancel 90500`",
    }[lang]
    assert "<@trainbot>" not in note
    [audit] = [e for e in store.audit.recent(50) if e.job_id == "90500" and e.action == "submit"]
    assert audit.actor == "trainbot" and audit.result == "not_recorded"


# ------------------------------------------- a cancel and resume's row whose settle never ends


def cancel_and_resume_died_after_sbatch(store: Store, monkeypatch
                                        ) -> tuple[BotContext, AnswerLostSlurm, int, str]:
    """Run `mix` whose job 88154 stalled: W0LEAD's Cancel and resume, its scancel's end not
    seen; its settle finds 88154 cancelled and dies right after its resubmit's sbatch queued
    90500. (context, Slurm, chain, the prompt's token)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain, prompt = mix_prompt(ctx, run_at=NOW - 1000, now=NOW - 100, running=slurm,
                               watched=True)
    slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                             connection_lost=True)
    assert handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "W0LEAD",
                        NOW - 90).status == "done"
    slurm.cancel_answer_lost = None
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        settle_unknown_cancels(ctx, NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    assert slurm.queued("mix") == [90500] and in_flight(store) == ["mix"]
    return ctx, slurm, chain, prompt.token


def test_a_cancel_and_resume_row_whose_settle_cannot_finish_is_looked_up_after_a_bound(
        store: Store, monkeypatch) -> None:
    """The settle of W0LEAD's cancel and resume died after its resubmit queued 90500, and
    Slurm has forgotten the cancelled 88154 since (no accounting kept it), so no settle ever
    takes it over and the approval stays approved. The recovery of the submits in flight
    leaves its row to the settle for the cluster's settle_lead_s, then looks it up by the
    run's name as a person's: 90500 is the run's job, recorded and told once, and the run is
    no longer refused for ever."""
    ctx, slurm, chain, token = cancel_and_resume_died_after_sbatch(store, monkeypatch)
    del slurm.records[88154]
    bound = NOW + settle_lead_s(RemoteDeadlines(), post_deadline_s=POST_DEADLINE_S)
    for at in (LATER, NOW + SETTLE_TAKEOVER_S + 60, bound - 1):
        settle_unknown_cancels(ctx, at)  # Slurm does not know 88154: nothing settles it
        recover(ctx, at)  # the settle's, while it may still lead it
    assert present(store.approvals.get(token)).state == "approved" and in_flight(store) == ["mix"]
    refused = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=bound - 1)
    assert refused.text.startswith("`resume` failed: not submitted: <@W0LEAD>'s submit of "
                                   "this run was sent at 13:46 UTC")

    recover(ctx, bound)
    recover(ctx, bound + 60)
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == ["90500"]
    assert in_flight(store) == [] and len(slurm.submits()) == 1
    assert [t for t in recorded(ctx).texts() if "90500" in t] == [
        "mix: resumed as 90500 from scratch (no complete checkpoint)"]
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=bound + 60)
    assert reply.text.startswith("mix is still PENDING as job 90500; cancel it first ")
    assert len(slurm.submits()) == 1


# ------------------------------------------------- a row whose recipe was taken out of the config


@pytest.mark.parametrize("actor", ["U0ALICE", "trainbot"])
def test_a_submit_in_flight_whose_recipe_was_removed_keeps_its_queued_job_the_runs(
        store: Store, monkeypatch, caplog, actor: str) -> None:
    """A submit of run mix (Alice's resume, or the watcher's automatic resubmit) died right
    after its sbatch queued 90500, and mix was taken out of the config before the next bot.
    The recovery looks 90500 up by the run's name and keeps the row (saying why in the log)
    rather than forgetting it; once mix is back, 90500 is recorded as the run's job and a
    resume is told the run is pending as 90500: one sbatch, one job."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = fakes.failed_run(ctx, now=NOW, channel=CHANNEL)
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        if actor == "trainbot":
            decision = Decision(DecisionKind.RESUBMIT_NOW, "hang", "hang", charged=True)
            AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT)
        else:
            execute(ctx, c.Resume("mix"), actor=actor, channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    without_mix = ctx.config.model_copy(deep=True)
    del without_mix.recipes["mix"]
    gone = make_context(store, slurm, config=without_mix, clock=lambda: LATER)
    kept = ("its job 90500 is on the cluster, but recipe mix is no longer configured; kept "
            "until it is, then recorded as the run's")
    with caplog.at_level("INFO", "bot.services.runs"):
        recover(gone, LATER)
        recover(gone, LATER + SUBMIT_IN_FLIGHT_S)
        # the scheduler's fenced copy of the context (the next tick's) shares what was said
        recover(replace(gone), LATER + 2 * SUBMIT_IN_FLIGHT_S)
    assert in_flight(store) == ["mix"] and jobs(store, chain) == ["88154"]
    # every lookup keeps the row and says why; a warning the first time only
    assert [r.levelname for r in caplog.records if kept in r.getMessage()] == [
        "WARNING", "INFO", "INFO"]

    back = LATER + 2 * SUBMIT_IN_FLIGHT_S + 60
    ctx = make_context(store, slurm, clock=lambda: back)  # mix is back (a restart)
    recover(ctx, back)
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == ["90500"]
    assert in_flight(store) == []
    reply = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel=CHANNEL, now=back + 60)
    assert reply.text.startswith("mix is still PENDING as job 90500; cancel it first ")
    assert list(slurm.records) == [90500] and len(slurm.submits()) == 1


def test_a_kept_row_of_a_removed_recipe_is_looked_up_once_per_in_flight_window(
        store: Store, monkeypatch, caplog) -> None:
    """Alice's resume of mix died after its sbatch queued 90500, and mix was taken out of the
    config. The recovery (the scheduler's `submits` job, every policy tick) keeps the row for
    90500 and looks it up in Slurm (squeue / sacct by the run's name) once per the cluster's
    in_flight_s (13 minutes with the default deadlines), not at every run, through the
    scheduler's fenced copies of the context too; once 90500 is gone from Slurm, the next
    lookup forgets the row. Before, every run looked it up: a recipe gone for good cost a
    lookup each minute for as long as its row was kept."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    fakes.failed_run(ctx, now=NOW, channel=CHANNEL)
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    without_mix = ctx.config.model_copy(deep=True)
    del without_mix.recipes["mix"]
    gone = make_context(store, slurm, config=without_mix, clock=lambda: LATER)

    def lookups() -> int:  # Slurm commands: squeue / sacct by name, squeue of what they found
        return len(slurm.runner.calls) + len(slurm.acted("jobs"))

    recover(gone, LATER)
    once = lookups()
    assert once > 0 and in_flight(store) == ["mix"]
    for at in range(int(LATER) + 60, int(LATER + SUBMIT_IN_FLIGHT_S), 60):  # each policy tick
        recover(replace(gone), float(at))
    assert lookups() == once  # no command while the window lasts
    recover(replace(gone), LATER + SUBMIT_IN_FLIGHT_S)
    assert lookups() == 2 * once and in_flight(store) == ["mix"]

    slurm.set(90500, state="CANCELLED")  # the job left the queue: no job of the run's name
    recover(gone, LATER + SUBMIT_IN_FLIGHT_S + 60)
    assert in_flight(store) == ["mix"] and lookups() == 2 * once  # not looked up yet
    with caplog.at_level("INFO", "bot.services.runs"):
        recover(gone, LATER + 2 * SUBMIT_IN_FLIGHT_S)
    assert in_flight(store) == [] and lookups() == 3 * once
    assert any("no longer configured and no job of that name was queued since; forgotten"
               in r.getMessage() for r in caplog.records)
    recover(gone, LATER + 3 * SUBMIT_IN_FLIGHT_S)
    assert lookups() == 3 * once  # forgotten: nothing left to look up
