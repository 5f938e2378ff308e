"""A person's submit the bot died in: killed after its sbatch was sent and before the attempt
row recorded the job (or its job could not be looked up when its end was not seen). The
submit is kept in `submits_in_flight` from just before the sbatch until its job is recorded,
so a bot that runs again finds the job by its name and records, watches and announces it, as
the submit would have done; one submit, one job, whatever the crash left."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

import fakes
import pytest
from fakes import (
    AnswerLostSlurm,
    FakeSlurm,
    homes,
    make_config,
    make_context,
    present,
    recorded,
)
from support.dying import Died, dies_at, restarted
from support.in_flight import in_flight, jobs, recover, watched, without_the_claim

from bot.app import build_scheduler
from bot.cluster.errors import CommandFailed, CommandTimedOut
from bot.core import train_grammar as c
from bot.core.policy import Decision, DecisionKind
from bot.core.takeover import RemoteDeadlines, post_takeover_s, submit_in_flight_s
from bot.services import lost_submit
from bot.services import submit as submit_mod
from bot.services.competitors import propose_holds_for_submit
from bot.services.home import home_view, publish_home
from bot.services.ports import BotContext
from bot.services.prompt_follow_up import follow_up_prompts
from bot.services.runs import (
    AutoResubmitter,
    lost_resubmit,
    recover_submits_in_flight,
    submit_and_announce,
)
from bot.services.submit_result import SubmitResult
from bot.services.threads import has_thread
from bot.services.train import execute
from bot.services.watch.events import TickReport
from bot.services.watch.outbox import Outbox
from bot.services.watch.resubmit import AutoResubmits
from bot.services.watch_events import ThreadEvents
from bot.store import Store
from handlers.home import make_cancel_job

NOW = 1_000_000.0
SUBMIT_IN_FLIGHT_S = submit_in_flight_s(RemoteDeadlines())  # the dev cluster's: the defaults
LATER = NOW + SUBMIT_IN_FLIGHT_S + 1  # the submit can no longer be in flight
CHANNEL = "C0TRAIN"
INTENT = "dev:88154:resubmit"  # the watcher's intent row of the automatic resubmit of 88154


@pytest.fixture
def dies_after_sbatch(monkeypatch):
    """The bot dies on the line after sbatch returned the job id, before recording it."""
    monkeypatch.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))


def failed_run(ctx: BotContext) -> int:
    """Run `mix` whose job 88154 failed: a chain with its thread."""
    return fakes.failed_run(ctx, now=NOW, channel=CHANNEL)


def resume_died_after_sbatch(store: Store, **context) -> tuple[AnswerLostSlurm, int]:
    """Run `mix` (job 88154 failed) resumed by Alice, the bot dying right after the resume's
    sbatch (job 90500; the test has `dies_after_sbatch`): the Slurm that has the job and
    answers lookups by name, and the run's chain."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, **context)
    chain = failed_run(ctx)
    with pytest.raises(Died):
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    return slurm, chain


def submit_died_after_sbatch(store: Store, **context) -> AnswerLostSlurm:
    """Alice's /train submit mix, the bot dying right after its sbatch (job 90500; the test
    has `dies_after_sbatch`): the Slurm that has the job and answers lookups by name."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    with pytest.raises(Died):
        execute(make_context(store, slurm, **context), c.Submit("mix"), actor="U0ALICE",
                channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    return slurm


def test_a_resume_the_bot_died_in_after_sbatch_is_recorded_by_the_next_bot(
        store: Store, dies_after_sbatch) -> None:
    slurm, chain = resume_died_after_sbatch(store)
    # what the crash left: the job in Slurm, no attempt records it, the submit in flight
    assert slurm.acted("submit") and 90500 in slurm.records
    assert jobs(store, chain) == ["88154"] and watched(store) == [] and in_flight(store) == ["mix"]

    ctx = make_context(store, slurm)  # the bot, started again over the same store
    recover(ctx, NOW + 60)  # may still be in flight in another replica
    assert jobs(store, chain) == ["88154"] and in_flight(store) == ["mix"]
    recover(ctx, LATER)
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == ["90500"]
    assert in_flight(store) == [] and list(slurm.records) == [90500]
    # told in the run's thread as the resume would have been; the ledger names who asked
    assert [t for t in recorded(ctx).texts() if "90500" in t] == [
        "mix: resumed as 90500 from scratch (no complete checkpoint)"]
    [audit] = [e for e in store.audit.recent(50) if e.job_id == "90500"]
    assert audit.actor == "U0ALICE" and '"found_after_lost_submit": true' in present(audit.detail)
    # once: nothing left to look up, nothing recorded twice
    recover(ctx, LATER + 60)
    assert jobs(store, chain) == ["88154", "90500"] and len(slurm.acted("submit")) == 1


def test_a_bot_started_again_records_the_lost_resume_at_its_start_not_a_tick_later(
        store: Store, dies_after_sbatch) -> None:
    """The scheduler's `submits` job, as `trainbot run` starts it, looks the lost resume up
    at the start: with an hourly policy tick the job is recorded, watched and told at once."""
    slurm, chain = resume_died_after_sbatch(store)
    config = make_config()
    config.policy.tick_s = 3600
    ctx = make_context(store, slurm, config=config)
    scheduler = build_scheduler(ctx, clock=lambda: LATER)
    scheduler.start()
    try:
        deadline = time.monotonic() + 30  # a hang guard: the next tick is an hour away
        while not any("90500" in t for t in recorded(ctx).texts()) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        scheduler.stop()
    assert [t for t in recorded(ctx).texts() if "90500" in t] == [
        "mix: resumed as 90500 from scratch (no complete checkpoint)"], "it waited for a tick"
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == ["90500"]
    assert in_flight(store) == []


def test_a_recovered_job_is_shown_once_on_the_home_tabs_of_who_sees_the_run(
        store: Store, dies_after_sbatch) -> None:
    slurm, chain = resume_died_after_sbatch(store)
    ctx = make_context(store, slurm)
    for user in ("U0ALICE", "U0NOBODY"):  # both opened their Home tab lately
        publish_home(ctx, user, LATER - 60)
    homes(ctx).published.clear()
    recover(ctx, LATER)
    assert jobs(store, chain) == ["88154", "90500"]
    assert homes(ctx).users() == ["U0ALICE"]  # a submitter of mix; not the outsider
    [(_, blocks)] = homes(ctx).published
    assert "90500" in json.dumps(blocks)
    recover(ctx, LATER + 60)  # nothing left to recover: nothing published again
    assert homes(ctx).users() == ["U0ALICE"]


def test_a_new_run_the_bot_died_in_starts_its_chain_and_thread_with_the_job(
        store: Store, dies_after_sbatch) -> None:
    slurm = submit_died_after_sbatch(store)
    assert store.chains.for_recipe("mix") == []
    ctx = make_context(store, slurm)
    recover(ctx, LATER)
    [chain] = store.chains.for_recipe("mix")
    assert jobs(store, chain.id) == ["90500"] and watched(store) == ["90500"]
    assert has_thread(ctx, chain.id)  # its thread opened in the recipe's channel
    assert any("90500" in t for t in recorded(ctx).texts())
    assert in_flight(store) == []


def test_a_submit_the_bot_died_in_before_its_sbatch_left_is_forgotten(store: Store) -> None:
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW, submit_error=Died("before sbatch"))
    ctx = make_context(store, slurm)
    chain = failed_run(ctx)
    with pytest.raises(Died):
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    assert in_flight(store) == ["mix"]
    slurm.submit_error = None
    recover(make_context(store, slurm), LATER)
    # no job of that name since: nothing was queued, nothing is recorded or submitted
    assert in_flight(store) == [] and jobs(store, chain) == ["88154"] and watched(store) == []
    assert slurm.records.keys() == set()


def test_a_lost_submit_whose_lookup_failed_is_recorded_once_slurm_answers(
        store: Store) -> None:
    slurm = AnswerLostSlurm(submitted_at=NOW)
    slurm.lookup_error = CommandTimedOut(["squeue"], 5)
    ctx = make_context(store, slurm)
    chain = failed_run(ctx)
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.job_id is None and jobs(store, chain) == ["88154"]
    assert in_flight(store) == ["mix"]  # the job may exist: looked for again
    recover(ctx, LATER)  # Slurm still not answering: kept
    assert in_flight(store) == ["mix"] and jobs(store, chain) == ["88154"]
    slurm.lookup_error = None
    recover(ctx, LATER + 60)
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == ["90500"]
    assert in_flight(store) == [] and slurm.queued("mix") == [90500]


@pytest.mark.parametrize("outcome", ["submitted", "refused"])
def test_a_submit_whose_end_is_known_leaves_nothing_in_flight(store: Store, outcome) -> None:
    if outcome == "refused":
        slurm: FakeSlurm = FakeSlurm(submit_error=CommandFailed(
            ["sbatch"], 1, "sbatch: error: invalid partition specified: gpu"))
    else:
        slurm = FakeSlurm(submitted_at=NOW)
    ctx = make_context(store, slurm)
    execute(ctx, c.Submit("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert in_flight(store) == []


def test_a_whole_arrays_submit_the_bot_died_in_watches_the_array_as_its_submit_would(
        store: Store, dies_after_sbatch) -> None:
    slurm = submit_died_after_sbatch(store, array="0-2%2")
    ctx = make_context(store, slurm, array="0-2%2")
    recover(ctx, LATER)
    [chain] = store.chains.for_recipe("mix")
    # the array is watched under its id; its tasks become attempt rows as they start
    assert chain.kind == "array" and chain.array_job_id == 90500
    assert jobs(store, chain.id) == [] and watched(store) == ["90500"]
    assert in_flight(store) == []
    assert "*mix*: job array 90500 (tasks 0-2%2) submitted by <@U0ALICE> (name `mix`), each " \
        "task finding its own checkpoint; each task's row is in this thread's first message" \
        in recorded(ctx).texts()
    [audit] = [e for e in store.audit.recent(50) if e.job_id == "90500"]
    assert audit.actor == "U0ALICE" and '"found_after_lost_submit": true' in present(audit.detail)


def lost_below_a_later_attempt(store: Store, monkeypatch, lang: str = "en"
                               ) -> tuple[BotContext, AnswerLostSlurm, int]:
    """Run `mix` resumed by Alice, the bot dying after its sbatch (job 90500), resumed again
    by hand (90501) before the next bot recovered the first: (context, Slurm, the run's
    chain) once the recovery found 90500 below 90501."""
    slurm, chain = resume_died_after_sbatch(store, slack_lang=lang)
    # the next bot is up; seeing nothing in the thread, Alice resumes the run again: refused
    # while the first is in flight, but a trainbot before that refusal sent it (its submit
    # without the submit in flight, as it was not refused)
    monkeypatch.setattr(submit_mod, "crashpoint", lambda name, detail="": None)
    ctx = make_context(store, slurm, slack_lang=lang)
    refused = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW + 120)
    assert refused.text == REFUSED_PERSON[lang] and list(slurm.records) == [90500]
    with monkeypatch.context() as m:
        without_the_claim(m)
        submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW + 120, chain_id=chain,
                            channel=CHANNEL)
    assert jobs(store, chain) == ["88154", "90501"] and watched(store) == ["90501"]
    recover(ctx, LATER)
    return ctx, slurm, chain


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_resume_the_bot_died_in_then_made_again_by_hand_says_its_job_is_not_watched(
        store: Store, dies_after_sbatch, monkeypatch, lang: str) -> None:
    ctx, slurm, chain = lost_below_a_later_attempt(store, monkeypatch, lang)
    # 90500 is found below 90501: the run's jobs run one after another, so it is not its
    # attempt; the thread says it is queued and how to cancel it, and nothing is done to it
    assert jobs(store, chain) == ["88154", "90501"] and watched(store) == ["90501"]
    assert in_flight(store) == [] and slurm.queued("mix") == [90500, 90501]
    assert not slurm.acted("cancel")
    [note] = [t for t in recorded(ctx).texts() if t.startswith("*mix*: ")]
    assert note == {
        "en": "*mix*: job 90500 was also queued under the run's name `mix`, by <@U0ALICE>'s "
              "submit that trainbot died in before recording it. Job 90501 was submitted into "
              "the run after it, and a run's jobs run one after another, so trainbot does not "
              "watch 90500. If it is not wanted, cancel it: `/train cancel 90500`",
        "ko": "*mix*: 작업 90500도 실행 이름 `mix`(으)로 대기열에 올라 있습니다. <@U0ALICE>님의 "
              "제출 도중 trainbot이 이를 기록하기 전에 종료되었습니다. 그 뒤에 작업 90501이(가) 이 "
              "실행에 제출되었고, 한 실행의 작업은 차례로 하나씩 실행되므로 trainbot은 90500을(를) "
              "감시하지 않습니다. 필요 없다면 취소하세요: `/train cancel 90500`",
    }[lang]
    [audit] = [e for e in store.audit.recent(50) if e.job_id == "90500" and e.action == "submit"]
    assert audit.actor == "U0ALICE" and audit.result == "not_recorded"
    recover(ctx, LATER + 60)  # told once
    assert [t for t in recorded(ctx).texts() if t.startswith("*mix*: ")] == [note]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_runs_people_may_cancel_the_job_its_thread_told_about_and_nobody_else(
        store: Store, dies_after_sbatch, monkeypatch, lang: str) -> None:
    ctx, slurm, _chain = lost_below_a_later_attempt(store, monkeypatch, lang)
    refused = execute(ctx, c.JobControl("cancel", 90500), actor="U0NOBODY", channel=CHANNEL,
                      now=LATER + 60)
    assert refused.text == {
        "en": "Refused: job 90500 is not recorded by trainbot; mix's thread told about it as a "
              "submit of that run, so only <@U0OWNER>, group robots or group leads can cancel "
              "it.",
        "ko": "거부됨: 작업 90500은(는) trainbot이 기록하지 않은 작업이며, mix의 스레드가 "
              "이 실행의 제출로 알린 작업입니다. 취소 권한은 <@U0OWNER>, robots 그룹 또는 "
              "leads 그룹에게만 있습니다.",
    }[lang], refused.text
    assert not slurm.acted("cancel")
    # Alice, a submitter of mix (not one of slack.approvers), cancels it as the thread says
    done = execute(ctx, c.JobControl("cancel", 90500), actor="U0ALICE", channel=CHANNEL,
                   now=LATER + 120)
    assert slurm.acted("cancel") == [90500], done.text
    assert slurm.queued("mix") == [90501]
    assert ("U0ALICE", "command.cancel", "ok") in [(e.actor, e.action, e.result)
                                           for e in store.audit.recent(50)
                                           if e.job_id == "90500"]


def test_the_home_tab_offers_the_cancel_of_the_job_its_thread_told_about_to_the_runs_people(
        store: Store, dies_after_sbatch, monkeypatch) -> None:
    _ctx, slurm, _chain = lost_below_a_later_attempt(store, monkeypatch)
    ctx = make_context(store, slurm, clock=lambda: LATER + 60)
    adopted = fakes.adopt(ctx, 90500, actor="U0OWNER", now=LATER + 30)  # watched by mix's owner

    def row(user: str) -> list[dict]:
        return [r for r in home_view(ctx, user, LATER + 60)["runs"] if r["chain_id"] == adopted]

    # Alice, a submitter of mix who did not adopt it, sees it and may cancel it, as
    # `/train cancel 90500` lets her; the stranger sees nothing of it
    [alices] = row("U0ALICE")
    assert [(b["kind"], b["value"]) for b in alices["buttons"]] == [
        ("unwatch", str(adopted)), ("cancel", "90500")]
    assert row("U0NOBODY") == []
    # a click the stranger forged is refused with the sentence the slash command gives
    click = make_cancel_job(ctx)
    click(body={"user": {"id": "U0NOBODY"}}, action={"value": "90500"},
          logger=logging.getLogger("test"))
    [(user, blocks)] = homes(ctx).published
    assert user == "U0NOBODY" and not slurm.acted("cancel")
    refused = execute(ctx, c.JobControl("cancel", 90500), actor="U0NOBODY", channel=None,
                      now=LATER + 60).text
    assert refused == ("Refused: job 90500 is not recorded by trainbot; mix's thread told about "
                       "it as a submit of that run, so only <@U0OWNER>, group robots or group "
                       "leads can cancel it.")
    assert f"👉 {refused}" in json.dumps(blocks, ensure_ascii=False)
    click(body={"user": {"id": "U0ALICE"}}, action={"value": "90500"},
          logger=logging.getLogger("test"))
    assert slurm.acted("cancel") == [90500] and slurm.queued("mix") == [90501]


def test_the_job_its_thread_told_about_keeps_its_runs_recipe_once_adopted(
        store: Store, dies_after_sbatch, monkeypatch) -> None:
    """Adopted with `/train watch`, the lost submit's job has a chain of its own with no
    recipe; a command on it still answers in its run's recipe's language (mix in Korean,
    slack.lang English; from Home or a DM: no channel to go by) and audits that recipe."""
    _ctx, slurm, _chain = lost_below_a_later_attempt(store, monkeypatch)
    ctx = make_context(store, slurm, lang="ko")
    fakes.adopt(ctx, 90500, actor="U0OWNER", now=LATER + 30)
    done = execute(ctx, c.JobControl("cancel", 90500), actor="U0ALICE", channel=None,
                   now=LATER + 60)
    assert done.text == "<@U0ALICE>님이 작업 90500을(를) 취소했습니다."
    assert slurm.acted("cancel") == [90500]
    assert [e.recipe for e in store.audit.recent(50) if e.job_id == "90500"
            and e.action == "command.cancel"] == ["mix"]


def test_a_job_no_thread_told_about_is_still_the_approvers_alone(store: Store) -> None:
    ctx = make_context(store, AnswerLostSlurm(lost=0, submitted_at=NOW))
    refused = execute(ctx, c.JobControl("cancel", 90500), actor="U0ALICE", channel=CHANNEL,
                      now=NOW)
    assert refused.text == ("Refused: job 90500 was not submitted by trainbot; only group "
                            "leads can cancel it.")


def test_a_new_run_the_bot_died_in_then_submitted_again_by_hand_is_watched_as_its_own_run(
        store: Store, dies_after_sbatch, monkeypatch) -> None:
    slurm = submit_died_after_sbatch(store)
    monkeypatch.setattr(submit_mod, "crashpoint", lambda name, detail="": None)
    ctx = make_context(store, slurm)
    # its job may be queued: a second new run is refused while the first is in flight
    refused = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW + 120)
    assert "not submitted: <@U0ALICE>'s submit of a new run of mix was sent at " in \
        refused.text and list(slurm.records) == [90500]
    with monkeypatch.context() as m:  # as a trainbot before the submit claim sent it
        without_the_claim(m)
        execute(ctx, c.Submit("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW + 120)
    [second] = store.chains.for_recipe("mix")
    recover(ctx, LATER)
    # each /train submit starts a run: the lost one's job 90500 is its own, recorded and watched
    first = next(ch for ch in store.chains.for_recipe("mix") if ch.id != second.id)
    assert jobs(store, first.id) == ["90500"] and jobs(store, second.id) == ["90501"]
    assert sorted(watched(store)) == ["90500", "90501"] and in_flight(store) == []
    assert has_thread(ctx, first.id) and any("job 90500 submitted by <@U0ALICE>" in t
                                             for t in recorded(ctx).texts())
    # the lost job is recorded as sent before the hand's: /train resume mix means the latter
    assert store.attempts.for_chain(first.id)[0].submitted_at == NOW
    assert present(store.chains.latest_for_recipe("mix")).id == second.id


HOLD_ASK = ("Job 88017 (succ) of the same team is pending on the same partition and would start "
            "before 90500. Hold 88017 until the resumed job starts?")


def holds_asked(ctx: BotContext) -> list[str]:
    return [t for t in recorded(ctx).texts() if "Hold 88017" in t]


def test_a_resume_the_bot_died_in_asks_to_hold_its_competitors_once_it_is_recorded(
        store: Store, dies_after_sbatch) -> None:
    slurm, chain = resume_died_after_sbatch(store)
    # the team's job that would take the freed slot before the resumed one
    slurm.add(88017, name="succ", partition="debug", account="root", priority=200)
    ctx = make_context(store, slurm)
    recover(ctx, LATER)
    assert jobs(store, chain) == ["88154", "90500"]
    # asked as after any person's resume: the same question, one approval
    assert holds_asked(ctx) == [HOLD_ASK]
    [hold] = [e for e in store.audit.recent(50) if e.action == "competitor.propose_hold"]
    assert hold.job_id == "88017"
    # another replica's recovery, or this one's next run: nothing left, nothing asked again
    recover(make_context(store, slurm), LATER + 60)
    recover(ctx, LATER + 120)
    assert holds_asked(ctx) == [HOLD_ASK] and not slurm.acted("hold")
    assert jobs(store, chain) == ["88154", "90500"]


def test_a_recovery_the_bot_died_in_before_recording_the_job_asks_once_the_next_time(
        store: Store, dies_after_sbatch, monkeypatch) -> None:
    slurm, chain = resume_died_after_sbatch(store)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=200)
    # the recovering bot dies too, once its lookup found the job and before it recorded it
    real = lost_submit.record_found_submit
    monkeypatch.setattr("bot.services.runs.record_found_submit",
                        lambda *a, **kw: (_ for _ in ()).throw(Died("recording")))
    with pytest.raises(Died):
        recover(make_context(store, slurm), LATER)
    restarted(store)  # the dead bot's claim is taken over by the next
    assert jobs(store, chain) == ["88154"] and in_flight(store) == ["mix"]
    monkeypatch.setattr("bot.services.runs.record_found_submit", real)
    ctx = make_context(store, slurm)
    recover(ctx, LATER + 60)
    recover(ctx, LATER + 120)
    assert jobs(store, chain) == ["88154", "90500"] and holds_asked(ctx) == [HOLD_ASK]
    assert len(slurm.acted("submit")) == 1


def test_holds_proposed_twice_for_one_submitted_job_ask_once(store: Store) -> None:
    """The post-submit step run again for the same job (a settle taken over that found the
    resubmit its dead run left, a recovery retried): the question already asked is not
    asked again, and its proposals are the ones made."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    chain = failed_run(ctx)
    slurm.add(90500, name="mix", partition="debug", account="root", priority=100)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=200)
    store.attempts.record(chain_id=chain, job_id="90500", now=NOW)
    result = SubmitResult(job_id="90500", chain_id=chain, attempt_no=1, job_name="mix",
                          checkpoint=None)
    [first] = propose_holds_for_submit(ctx, "mix", result, NOW)
    [again] = propose_holds_for_submit(ctx, "mix", result, NOW + 60)
    assert again == first
    assert holds_asked(ctx) == [HOLD_ASK]
    assert [a.target_job for a in store.approvals.for_chain(chain)
            if a.action == "hold_competitor"] == ["88017"]


@pytest.mark.parametrize(("marked_s", "deadline_s", "takeover_s"), [
    (300.0, 300.0, 390.0), (90.0, 90.0, 180.0), (600.0, 300.0, 690.0), (90.0, 300.0, 390.0)])
def test_a_hold_question_the_bot_died_before_posting_is_asked_once_by_the_follow_up(
        store: Store, marked_s: float, deadline_s: float, takeover_s: float) -> None:
    """A person's resume recorded its job and its hold prompt, then the bot died before the
    prompt's question was posted (no run asks about that job again): the prompts' follow-up
    asks it, once, when the post's own deadline has passed, with one request and the margin:
    the longer of the deadline the recording bot ran with (`marked_s`, kept with the prompt)
    and the follow-up's (`deadline_s`): the default 300 s (390 s), 90 s (180 s); a prompt
    recorded at 600 s is not asked by a bot configured 300 s before 690 s (before, at 390 s,
    while the first bot could still be posting it). Nothing is held meanwhile, and no
    reminder is made of a question nobody saw."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm)
    ctx.config.slack.post_deadline_s = marked_s
    chain = failed_run(ctx)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=200)
    real_reply = recorded(ctx).post_reply

    def died_posting(chain_id: int, key: str, blocks: list, text: str) -> str:
        if key.startswith("hold-prompt:"):
            raise Died(key)
        return real_reply(chain_id, key, blocks, text)

    recorded(ctx).post_reply = died_posting  # type: ignore[method-assign]
    with pytest.raises(Died):
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    [hold] = [a for a in store.approvals.for_chain(chain) if a.action == "hold_competitor"]
    assert hold.state == "pending" and holds_asked(ctx) == []

    ctx = make_context(store, slurm)  # the bot, started again over the same store
    ctx.config.slack.post_deadline_s = deadline_s
    assert takeover_s == post_takeover_s(deadline_s, kept=marked_s + 30) == \
        max(marked_s, deadline_s) + 90
    follow_up_prompts(ctx, NOW + takeover_s - 1)  # the dead post may still be under way
    assert holds_asked(ctx) == []
    for at in (NOW + takeover_s, NOW + takeover_s + 60, NOW + 3600):
        follow_up_prompts(ctx, at)
    assert holds_asked(ctx) == [HOLD_ASK] and not slurm.acted("hold")
    assert [p[2] for p in recorded(ctx).posts if "Hold 88017" in p[3]] == \
        [f"hold-prompt:{hold.token}"]


def resubmit_intent(ctx: BotContext, chain: int, state: str = "submitting") -> Decision:
    """The watcher's intent row INTENT of the automatic resubmit of 88154 into `chain`, in
    `state` (`submitting`: its sbatch may have been sent): its decision."""
    decision = Decision(DecisionKind.RESUBMIT_NOW, "hang", "hang", charged=True)
    watcher(ctx).record_due(chain, "88154", "mix", decision, NOW - 60)
    ctx.store.incidents.set_state(INTENT, state)
    return decision


def watcher(ctx: BotContext) -> AutoResubmits:
    """The watcher's automatic resubmits of cluster dev, as bot.app wires them."""
    auto = AutoResubmitter(ctx, "dev")
    return AutoResubmits("dev", store=ctx.store,
                         outbox=Outbox("dev", store=ctx.store, sink=ThreadEvents(ctx)),
                         resubmit=auto.resubmit, recover=auto.recover)


@pytest.mark.parametrize("sent", [True, False])
def test_an_automatic_resubmit_the_bot_died_in_is_recovered_once_as_sent_when_it_was(
        store: Store, monkeypatch, sent: bool) -> None:
    """The watcher's automatic resubmit keeps its submit in flight as a person's does: the
    bot dies after its sbatch returned and before the job was recorded (or before the sbatch
    left); the next bot's recovery of the resubmit (its intent row's, AutoResubmitter.recover)
    records the job it left as submitted when the sbatch was sent, not when it was found, and
    the thread is told once; none left, it is submitted once. The `submits` job leaves it to
    that recovery: nothing is recorded twice."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW,
                            submit_error=None if sent else Died("before sbatch"))
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)
    decision = resubmit_intent(ctx, chain)
    with monkeypatch.context() as m, pytest.raises(Died):
        if sent:  # dies on the line after sbatch returned the job id, before recording it
            m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT)
    restarted(store)  # the dead bot's claim is taken over by the next
    assert jobs(store, chain) == ["88154"] and in_flight(store) == ["mix"]
    assert list(slurm.records) == ([90500] if sent else [])
    slurm.submit_error = None

    ctx = make_context(store, slurm, clock=lambda: LATER)  # started again, much later
    recover(ctx, LATER)  # the submits job: the watcher's resubmit is its own recovery's
    assert jobs(store, chain) == ["88154"]
    auto = AutoResubmitter(ctx, "dev")
    left = auto.recover("mix", chain, "88154", decision, intent=INTENT)
    if not sent:
        assert left is None and in_flight(store) == []  # nothing queued: submit it, once
        assert auto.resubmit("mix", chain, decision, intent=INTENT) == "90500"
    else:
        assert left == "90500"
    new = present(store.attempts.latest(chain))
    assert (new.job_id, new.submitted_at) == ("90500", NOW if sent else LATER)
    assert watched(store) == ["90500"] and in_flight(store) == []
    assert present(store.chains.get(chain)).retries_used == 1
    assert [t for t in recorded(ctx).texts() if "90500" in t] == [
        "mix: resumed as 90500 from scratch (no complete checkpoint)"]
    recover(ctx, LATER + SUBMIT_IN_FLIGHT_S)
    assert jobs(store, chain) == ["88154", "90500"] and len(slurm.records) == 1


def test_a_resume_while_an_automatic_resubmit_the_bot_died_in_is_in_flight_is_refused(
        store: Store, monkeypatch) -> None:
    """The bot dies after the watcher's automatic resubmit's sbatch (job 90500); Alice's
    /train resume of the same run, before the next bot recovered it, is refused with no
    sbatch: the automatic resubmit's recovery records its job, the one job of the run."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)
    decision = resubmit_intent(ctx, chain)
    monkeypatch.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
    with pytest.raises(Died):
        AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT)
    restarted(store)  # the dead bot's claim is taken over by the next
    refused = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW + 60)
    assert refused.text == REFUSED_AUTOMATIC["en"]
    assert list(slurm.records) == [90500] and jobs(store, chain) == ["88154"]
    [audit] = [e for e in store.audit.recent(50) if e.action == "submit"
               and e.actor == "U0ALICE"]
    assert audit.result == "refused" and "RunSubmitInFlight" in present(audit.detail)

    ctx = make_context(store, slurm, clock=lambda: LATER)  # started again
    assert AutoResubmitter(ctx, "dev").recover("mix", chain, "88154", decision,
                                               intent=INTENT) == "90500"
    recover(ctx, LATER)
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []
    assert watched(store) == ["90500"] and len(slurm.records) == 1


# the refusals of a second submit into a run whose first is in flight (sent at NOW: 13:46 UTC)
REFUSED_AUTOMATIC = {
    "en": "`resume` failed: not submitted: trainbot's automatic resubmit of this run was sent "
          "at 13:46 UTC and its job is not recorded yet, and a run's jobs run one after "
          "another. Wait for it: the run's thread tells which job it is; check the thread "
          "before resuming again",
    "ko": "`resume` 실패: 제출하지 않았습니다: 이 실행에 대한 trainbot의 자동 재제출이 13:46 UTC에 "
          "보내졌고 아직 그 작업이 기록되지 않았으며, 한 실행의 작업은 차례로 하나씩 실행됩니다. "
          "기다리세요: 실행 스레드가 어떤 작업인지 알려 줍니다. 다시 재개하기 전에 스레드를 "
          "확인하세요",
}
REFUSED_PERSON = {
    "en": "`resume` failed: not submitted: <@U0ALICE>'s submit of this run was sent at 13:46 "
          "UTC and its job is not recorded yet, and a run's jobs run one after another. Wait "
          "for it: the run's thread tells which job it is; check the thread before resuming "
          "again",
    "ko": "`resume` 실패: 제출하지 않았습니다: 이 실행에 대한 <@U0ALICE>님의 제출이 13:46 UTC에 "
          "보내졌고 아직 그 작업이 기록되지 않았으며, 한 실행의 작업은 차례로 하나씩 실행됩니다. "
          "기다리세요: 실행 스레드가 어떤 작업인지 알려 줍니다. 다시 재개하기 전에 스레드를 "
          "확인하세요",
}


class SbatchInFlight(FakeSlurm):
    """Slurm whose first sbatch runs `during` (another submit of the run, made while this
    one is in flight: sent, its job not recorded yet) before it queues its job."""

    def __init__(self) -> None:
        super().__init__(first_id=90500)
        self.during: Callable[[], object] | None = None

    def submit(self, spec, *, script: str | None = None) -> int:
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().submit(spec, script=script)


def posts_of_new_job(ctx: BotContext) -> list[str]:
    """What the run's thread says of job 90500 (its resolution: resumed as 90500)."""
    return [t for t in recorded(ctx).texts() if "90500" in t]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_persons_resume_while_the_automatic_resubmit_is_in_flight_is_refused(
        store: Store, lang: str) -> None:
    """The watcher's automatic resubmit of run mix is between its sbatch and its record when
    Alice resumes the run: her resume is refused (in the recipe's language) and sends
    nothing; the run has one new job, one attempt, one post."""
    slurm = SbatchInFlight()
    ctx = make_context(store, slurm, clock=lambda: NOW, lang=lang)
    chain = failed_run(ctx)
    replies = []
    slurm.during = lambda: replies.append(execute(ctx, c.Resume("mix"), actor="U0ALICE",
                                                  channel=CHANNEL, now=NOW + 1))
    decision = Decision(DecisionKind.RESUBMIT_NOW, "hang", "hang", charged=True)
    assert AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT) \
        == "90500"
    assert [r.text for r in replies] == [REFUSED_AUTOMATIC[lang]]
    assert len(slurm.submits()) == 1 and jobs(store, chain) == ["88154", "90500"]
    assert len(posts_of_new_job(ctx)) == 1 and in_flight(store) == []
    assert present(store.chains.get(chain)).retries_used == 1


def test_the_automatic_resubmit_while_a_persons_resume_is_in_flight_stands_down(
        store: Store, caplog) -> None:
    """Alice's /train resume is between its sbatch and its record when the watcher's
    automatic resubmit of the same run comes due: it sends nothing and stays due; once her
    job is recorded, the next tick drops it. One new job, one attempt, one post, no charge."""
    slurm = SbatchInFlight()
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)
    auto = AutoResubmitter(ctx, "dev")
    resubmits = AutoResubmits("dev", store=store, outbox=Outbox("dev", store=store,
                                                                  sink=ThreadEvents(ctx)),
                              resubmit=auto.resubmit, recover=auto.recover)
    decision = Decision(DecisionKind.RESUBMIT_NOW, "hang", "hang", charged=True)
    resubmits.record_due(chain, "88154", "mix", decision, NOW - 60)
    slurm.during = lambda: resubmits.run_due(NOW, TickReport(ok=True))
    with caplog.at_level(logging.WARNING, "bot.services.runs"):
        reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.job_id == "90500"
    assert "not resubmitted automatically: U0ALICE's submit of the run, sent at 1000000, " \
        "is in flight" in caplog.text
    assert present(store.incidents.get(INTENT)).state == "due"
    resubmits.run_due(NOW + 60, TickReport(ok=True))  # the next tick: the run went on
    assert present(store.incidents.get(INTENT)).state == "dropped"
    assert len(slurm.submits()) == 1 and jobs(store, chain) == ["88154", "90500"]
    assert len(posts_of_new_job(ctx)) == 1 and present(store.chains.get(chain)).retries_used == 0


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_two_people_resuming_a_run_at_once_make_one_job(store: Store, lang: str) -> None:
    """Alice's /train resume is between its sbatch and its record when the owner resumes the same
    run (or presses its Resubmit button): theirs is refused, naming hers; one job."""
    slurm = SbatchInFlight()
    ctx = make_context(store, slurm, clock=lambda: NOW, lang=lang)
    chain = failed_run(ctx)
    replies = []
    slurm.during = lambda: replies.append(execute(ctx, c.Resume("mix"), actor="U0OWNER",
                                                  channel=CHANNEL, now=NOW + 1))
    first = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert first.job_id == "90500"
    assert [r.text for r in replies] == [REFUSED_PERSON[lang]]
    assert len(slurm.submits()) == 1 and jobs(store, chain) == ["88154", "90500"]
    assert len(posts_of_new_job(ctx)) == 1 and in_flight(store) == []


def test_a_resubmit_in_flight_written_before_intents_is_recorded_as_sent_when_it_was(
        tmp_path) -> None:
    """A trainbot before schema 18 died in a cancel and resume's resubmit (approved by
    W0LEAD; its sbatch queued 90500) while Alice's /train resume of the run was in flight
    too: two rows without an intent. After the upgrade the settle's recovery of its resubmit
    (lost_resubmit, the approver's) records 90500 as submitted when its row was sent, not
    when it was found, and forgets that row alone."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    with Store.open(url, target_version=17) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
        with old.engine.begin() as conn:  # what a v17 trainbot wrote
            conn.exec_driver_sql(
                "INSERT INTO attempts (chain_id, job_id, attempt_no, state, submitted_at)"
                f" VALUES ({chain.id}, '88154', 1, 'PENDING', {NOW - 100})")
            for actor, sent_at in (("W0LEAD", NOW), ("U0ALICE", NOW + 5)):
                conn.exec_driver_sql(
                    "INSERT INTO submits_in_flight (cluster, recipe, job_name, chain_id,"
                    " charge_retry, actor, channel, sent_at) VALUES ('dev', 'mix', 'mix',"
                    f" {chain.id}, true, '{actor}', NULL, {sent_at})")
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    slurm.add(90500, name="mix", submit_time=NOW)
    with Store.open(url) as store:
        ctx = make_context(store, slurm, clock=lambda: LATER)
        left = lost_resubmit(ctx, "dev", "mix", chain.id, "88154", intent="approval:tok",
                             actor="W0LEAD", now=LATER, resumed_at=None, charged=True,
                             array_task=None)
        assert left is not None and left.job_id == "90500"
        new = present(store.attempts.latest(chain.id))
        assert (new.job_id, new.submitted_at) == ("90500", NOW)
        assert [(f.actor, f.intent) for f in store.submits_in_flight.sent_before(
            "dev", float("inf"))] == [("U0ALICE", None)]


@pytest.mark.parametrize("intent", ["gone", "dropped", "done", "due"])
def test_an_automatic_resubmit_in_flight_nothing_leads_is_forgotten_and_the_run_resumed_once(
        store: Store, monkeypatch, intent: str) -> None:
    """The bot dies in the watcher's automatic resubmit of run mix before its sbatch left,
    and its intent row no longer leads a recovery of it (gone, dropped or done by another
    path, or back to due: the watcher's own resubmit is then refused by its row too). Alice's
    resume is refused while the row may still be in flight; once it cannot be, the submits
    job finds no job of the run's name and forgets it, and her resume sends the run's one job."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW, submit_error=Died("before sbatch"))
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)
    decision = resubmit_intent(ctx, chain)
    with pytest.raises(Died):
        AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT)
    restarted(store)  # the dead bot's claim is taken over by the next
    slurm.submit_error = None
    if intent == "gone":
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM incidents WHERE key = '{INTENT}'")
    else:
        store.incidents.set_state(INTENT, intent)
    if intent == "due":  # the watcher's next tick: refused by its own row, sends nothing
        watcher(ctx).run_due(NOW + 60, TickReport(ok=True))
        assert present(store.incidents.get(INTENT)).state == "due"
    refused = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW + 60)
    assert refused.text == REFUSED_AUTOMATIC["en"] and list(slurm.records) == []
    recover(ctx, NOW + 60)  # it may still be in flight
    assert in_flight(store) == ["mix"]

    recover(ctx, LATER)
    assert in_flight(store) == [] and jobs(store, chain) == ["88154"]
    assert [t for t in recorded(ctx).texts() if "queued no job" in t] == [NOT_QUEUED_AUTOMATIC]
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=LATER)
    assert reply.job_id == "90500" and list(slurm.records) == [90500]
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []
    if intent == "due":  # the run went on: the watcher drops its resubmit, sends nothing
        watcher(ctx).run_due(LATER + 60, TickReport(ok=True))
        assert present(store.incidents.get(INTENT)).state == "dropped"
        assert list(slurm.records) == [90500]


def test_an_automatic_resubmit_nothing_leads_whose_job_queued_is_recorded_once(
        store: Store, monkeypatch) -> None:
    """The bot dies after the watcher's automatic resubmit's sbatch queued 90500, and its
    intent row was dropped by another path: the submits job finds 90500 by the run's name
    and records it as the run's job, told once, with no person's follow-up; the run keeps
    that one job (a resume is then told it is pending)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)
    decision = resubmit_intent(ctx, chain)
    monkeypatch.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
    with pytest.raises(Died):
        AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT)
    restarted(store)  # the dead bot's claim is taken over by the next
    store.incidents.set_state(INTENT, "dropped")
    followed_up: list[object] = []
    ctx = make_context(store, slurm, clock=lambda: LATER)
    recover_submits_in_flight(ctx, LATER, after_submit=lambda *a: followed_up.append(a))
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == ["90500"]
    assert in_flight(store) == [] and followed_up == [] and len(slurm.records) == 1
    assert [t for t in recorded(ctx).texts() if "90500" in t] == [
        "mix: resumed as 90500 from scratch (no complete checkpoint)"]
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=LATER)
    assert reply.text.startswith("mix is still PENDING as job 90500; cancel it first ")
    assert len(slurm.records) == 1 and jobs(store, chain) == ["88154", "90500"]


NOT_QUEUED_AUTOMATIC = (
    "trainbot's automatic resubmit of this run, sent at 13:46 UTC, queued no job: Slurm has "
    "no job of the run's name since, so trainbot forgot it. The run can be resumed again.")
NOT_QUEUED_PERSON = {
    "en": "<@U0ALICE>'s submit of this run, sent at 13:46 UTC, queued no job: Slurm has no "
          "job of the run's name since, so trainbot forgot it. The run can be resumed again.",
    "ko": "13:46 UTC에 보낸 이 실행에 대한 <@U0ALICE>님의 제출은 작업을 대기열에 올리지 "
          "않았습니다: 그 뒤로 Slurm에 이 실행 이름의 작업이 없어 trainbot이 이를 잊었습니다. "
          "이 실행을 다시 재개할 수 있습니다.",
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_persons_submit_in_flight_past_its_window_with_no_job_lets_the_run_resume(
        store: Store, lang: str) -> None:
    """Alice's resume died before its sbatch left; the owner's resume is refused while hers
    may be in flight, and once it cannot be (no job of the run's name since) the submits job
    forgets it, says so in the run's thread once, and the owner's resume sends the run's one
    job."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW, submit_error=Died("before sbatch"))
    ctx = make_context(store, slurm, slack_lang=lang)
    chain = failed_run(ctx)
    with pytest.raises(Died):
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    slurm.submit_error = None
    refused = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel=CHANNEL, now=NOW + 60)
    assert refused.text == REFUSED_PERSON[lang] and list(slurm.records) == []
    recover(ctx, LATER)
    recover(ctx, LATER + 60)  # told once
    assert [t for t in recorded(ctx).texts() if "13:46 UTC" in t] == [NOT_QUEUED_PERSON[lang]]
    reply = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel=CHANNEL, now=LATER)
    assert reply.job_id == "90500" and list(slurm.records) == [90500]
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []


@pytest.mark.parametrize("actor", ["U0ALICE", "trainbot"])
def test_a_submit_in_flight_of_a_recipe_no_longer_configured_lets_the_run_resume_once_back(
        store: Store, monkeypatch, actor: str) -> None:
    """A submit of run mix (Alice's resume, or the watcher's automatic resubmit whose intent
    still says submitting) died before its sbatch left, and mix was taken out of the config
    before the next bot: the submits job forgets the row (its recipe's watcher cannot recover
    it), so once mix is configured again the run is resumed with one sbatch."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW, submit_error=Died("before sbatch"))
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)
    with pytest.raises(Died):
        if actor == "trainbot":
            decision = resubmit_intent(ctx, chain)
            AutoResubmitter(ctx, "dev").resubmit("mix", chain, decision, intent=INTENT)
        else:
            execute(ctx, c.Resume("mix"), actor=actor, channel=CHANNEL, now=NOW)
    restarted(store)  # the dead bot's claim is taken over by the next
    slurm.submit_error = None
    without_mix = ctx.config.model_copy(deep=True)
    del without_mix.recipes["mix"]
    recover(make_context(store, slurm, config=without_mix, clock=lambda: LATER), LATER)
    assert in_flight(store) == []
    ctx = make_context(store, slurm, clock=lambda: LATER)  # mix is back
    reply = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel=CHANNEL, now=LATER)
    assert reply.job_id == "90500" and list(slurm.records) == [90500]
    assert jobs(store, chain) == ["88154", "90500"]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_refusal_says_the_date_of_a_submit_in_flight_sent_on_an_earlier_day(
        store: Store, lang: str) -> None:
    """Alice's resume was sent at 13:46 UTC and Slurm has not answered its lookup since: the
    owner's resume the next day is refused, saying the day it was sent; the same day says
    the time alone."""
    slurm = AnswerLostSlurm(submitted_at=NOW)
    slurm.lookup_error = CommandTimedOut(["squeue"], 5)
    ctx = make_context(store, slurm, slack_lang=lang)
    failed_run(ctx)
    execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    recover(ctx, LATER)  # still not answering: kept, the run's one job may be queued
    refused = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel=CHANNEL,
                      now=NOW + 86_400)
    assert refused.text == REFUSED_PERSON[lang].replace("13:46 UTC", "1970-01-12 13:46 UTC")
    same_day = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel=CHANNEL, now=LATER)
    assert same_day.text == REFUSED_PERSON[lang]
    assert list(slurm.records) == [90500]


def test_a_resume_whose_checkpoint_lookup_outlasted_the_window_is_kept_as_sent_after_it(
        store: Store) -> None:
    """The resume's checkpoint lookup took longer than the in-flight window: its row in
    flight says when its sbatch was sent (after the lookup), not when the command came, so
    the recovery that runs while that sbatch is on its way leaves it alone (no "queued no
    job" note, the run's other submits still refused) and the job is recorded once."""
    times = iter([NOW, NOW + SUBMIT_IN_FLIGHT_S + 60])  # the submit's start, after its lookup
    clock = [NOW]

    def ticking() -> float:
        clock[0] = next(times, clock[0])
        return clock[0]

    slurm = SbatchInFlight()
    ctx = make_context(store, slurm, clock=ticking)
    chain = failed_run(ctx)
    slurm.during = lambda: recover_submits_in_flight(ctx, clock[0],
                                                     after_submit=lambda *_: None)
    reply = execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    assert reply.job_id == "90500", reply.text
    assert not any("queued no job" in t for t in recorded(ctx).texts())
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []
    [attempt] = [a for a in store.attempts.for_chain(chain) if a.job_id == "90500"]
    assert attempt.submitted_at == NOW + SUBMIT_IN_FLIGHT_S + 60


def test_a_resume_that_died_after_recording_its_job_is_watched_and_announced_by_the_recovery(
        store: Store, monkeypatch) -> None:
    """The bot died after its resume's attempt was recorded and before the job was watched
    and the submit's row forgotten: the recovery does not look the job up by name (which
    leaves recorded jobs out, and would say the submit queued no job) but goes on with the
    attempt recorded since the submit was sent: watched, announced, its row forgotten."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = failed_run(ctx)

    def dies(*_args, **_kw) -> bool:
        raise Died("between the attempt's record and the watch")

    with monkeypatch.context() as m:
        m.setattr(store.watched_jobs, "add", dies)
        with pytest.raises(Died):
            execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
        restarted(store)  # the dead bot's claim is taken over by the next
    assert jobs(store, chain) == ["88154", "90500"] and watched(store) == []
    recover(ctx, LATER)
    assert watched(store) == ["90500"] and in_flight(store) == []
    assert not any("queued no job" in t for t in recorded(ctx).texts())
    assert len(posts_of_new_job(ctx)) == 1 and len(slurm.submits()) == 1
    recover(ctx, LATER + 60)  # nothing left to do
    assert len(posts_of_new_job(ctx)) == 1 and jobs(store, chain) == ["88154", "90500"]


def test_a_recovery_that_died_after_recording_the_job_it_found_goes_on_with_it(
        store: Store, monkeypatch, dies_after_sbatch) -> None:
    """A recovery found the dead resume's job by name and recorded it, then died before
    forgetting the submit's row: the next one goes on with that attempt (announced once,
    watched) instead of saying the submit queued no job."""
    slurm, chain = resume_died_after_sbatch(store)
    ctx = make_context(store, slurm, clock=lambda: LATER)

    def dies(_flight_id: int) -> bool:
        raise Died("between the record and the row's removal")

    with monkeypatch.context() as m:
        m.setattr(store.submits_in_flight, "remove", dies)
        with pytest.raises(Died):
            recover(ctx, LATER)
        restarted(store)  # the dead bot's claim is taken over by the next
    assert jobs(store, chain) == ["88154", "90500"] and len(in_flight(store)) == 1
    recover(ctx, LATER + 60)
    assert watched(store) == ["90500"] and in_flight(store) == []
    assert not any("queued no job" in t for t in recorded(ctx).texts())
    assert len(posts_of_new_job(ctx)) == 1
