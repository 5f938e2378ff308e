"""Competing jobs held after a yes and released once the resumed job no longer needs them:
the hold questions a resubmit asks, a release that fails, times out or whose answer was lost,
and one waiting for a hold still on its way (real store, on SQLite and on PostgreSQL:
`store_url`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from fakes import (
    FakeRunner,
    FakeSlurm,
    homes,
    make_context,
    present,
    recorded,
)
from support import store_backends
from support.approval_runs import NOW, competitor_setup, failed_run, held_then_running
from support.dying import Died, dies_at

from bot.cluster.errors import ChannelClosed, CommandFailed, CommandTimedOut, OutcomeUnknown
from bot.cluster.slurm import SlurmClient
from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.home import publish_home
from bot.services.ports import BotContext
from bot.services.prompt_follow_up import after_click
from bot.store import Store

# The real store on both backends, an empty fake Slurm and the context over them.
store, slurm, ctx = store_backends.store, store_backends.slurm, store_backends.ctx


@pytest.mark.parametrize("from_home", [True, False])
def test_the_resubmit_button_refreshes_each_home_tab_once_and_asks_the_hold_questions_once(
        store: Store, slurm: FakeSlurm, from_home: bool) -> None:
    """A Resubmit ends as every person's submit does (after_person_submit): the run with its
    new job on the Home tab of each viewer who sees it, once; the presser's, when they
    pressed it there, with what the click did; the hold question asked once."""
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
              submit_time=1000.0)
    _, token = failed_run(ctx)
    for user in ("W0LEAD", "U0ALICE", "U0NOBODY"):  # each opened their Home tab lately
        publish_home(ctx, user, NOW)
    homes(ctx).published.clear()
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1, from_home=from_home)
    after_click(ctx, token, result, "W0LEAD", NOW + 1, from_home=from_home)
    assert result.job_id == "88887" and result.holds == [88017]
    [hold] = [p[3] for p in recorded(ctx).posts if p[2].startswith("hold-prompt:")]
    assert hold.endswith("would start before 88887. Hold 88017 until the resumed job starts?")
    assert sorted(homes(ctx).users()) == ["U0ALICE", "W0LEAD"]  # not the outsider's
    tabs = {user: json.dumps(blocks) for user, blocks in homes(ctx).published}
    assert all("88887" in tab for tab in tabs.values())
    assert ("Approved by <@W0LEAD>" in tabs["W0LEAD"]) is from_home  # the click's notice


def test_competitor_held_after_yes_released_once_when_resumed_job_runs(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, hold_token = competitor_setup(ctx, slurm)
    assert slurm.acted("hold") == []  # asking is not holding
    result = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert result.update_text == "Approved by <@U0APPR>: held 88017 until 88887 starts"
    again = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 3, 1)
    assert again.status == "duplicate"
    assert slurm.acted("hold") == [88017]

    assert competitors.release_started(ctx, NOW + 4) == []  # resumed job still pending
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 5) == [88017]
    assert competitors.release_started(ctx, NOW + 6) == []
    assert slurm.acted("release") == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    actions = [(e.action, e.job_id, e.result) for e in reversed(ctx.store.audit.recent(100))]
    assert ("competitor.hold", "88017", "ok") in actions
    assert ("competitor.release", "88017", "ok") in actions


def test_a_hold_whose_answer_was_lost_stays_in_the_ledger_and_is_released(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol hold` took effect but its channel closed before its exit status: the job may
    be held, so trainbot says so and releases it when the resumed job runs, as any hold."""
    _, hold_token = competitor_setup(ctx, slurm)
    slurm.hold_answer_lost = ChannelClosed(["scontrol", "hold", "88017"], "login",
                                           connection_lost=True)
    result = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert present(result.update_text).startswith(
        "Approved by <@U0APPR>: 88017 may or may not be held (connection to login lost while "
        "`scontrol hold 88017` was running; it may have run)")
    assert present(result.update_text).endswith(
        "trainbot releases it when 88887 no longer needs it, as any hold")
    [held] = competitors.held_now(ctx)
    assert held.target_job == "88017"
    slurm.hold_answer_lost = None
    slurm.set(88887, state="RUNNING")
    # Slurm shows 88017 held: its hold landed, so the next tick releases it, not its takeover
    assert competitors.release_started(ctx, NOW + 62) == [88017]
    assert competitors.release_started(ctx, NOW + 10_000) == []
    assert slurm.acted("release") == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    actions = [(e.action, e.job_id, e.result) for e in reversed(ctx.store.audit.recent(100))]
    assert ("competitor.hold", "88017", "unknown") in actions


# What `scontrol release` of a job that ended prints and exits, the same on 22.05.8 and 24.11.5
# (measured on the dev clusters: tests/integration/test_slurm.py).
RELEASE_FINISHED = (1, "", "Job has already finished for job 88017\n"
                    "slurm_suspend error: Job has already finished\n")


@pytest.mark.parametrize("answer", [
    RELEASE_FINISHED,
    (1, "", "Invalid job id specified for job 88017\n"
            "slurm_suspend error: Invalid job id specified\n"),
], ids=["finished", "purged"])
def test_a_hold_whose_job_ended_meanwhile_is_released_without_a_problem(
    ctx: BotContext, slurm: FakeSlurm, answer: tuple[int, str, str]
) -> None:
    """A hold whose `scontrol hold` end was not seen, of a job that then ended (or left
    accounting): Slurm refuses to release it, as there is no hold left; the thread says it
    was released, never that it could not be."""
    _, hold_token = competitor_setup(ctx, slurm)
    slurm.hold_answer_lost = ChannelClosed(["scontrol", "hold", "88017"], "login",
                                           connection_lost=True)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88017, state="CANCELLED")
    slurm.set(88887, state="RUNNING")
    real = SlurmClient(FakeRunner({"scontrol": answer}))
    slurm.release = real.release  # type: ignore[method-assign]
    [held] = competitors.held_now(ctx)
    due = NOW + 2 + competitors.step_takeover_s(ctx, held, competitors.HOLDING_STEP)
    assert competitors.release_started(ctx, due) == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    assert not any("Could not release" in t for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []


def test_a_release_slurm_refuses_for_another_reason_still_fails() -> None:
    denied = (1, "", "Access/permission denied for job 88017\n"
                     "slurm_suspend error: Access/permission denied\n")
    with pytest.raises(CommandFailed, match="Access/permission denied"):
        SlurmClient(FakeRunner({"scontrol": denied})).release(88017)
    SlurmClient(FakeRunner({"scontrol": RELEASE_FINISHED})).release(88017)  # no error



def test_a_release_whose_process_died_after_its_claim_is_released_by_a_later_tick(
    ctx: BotContext, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot dies between claiming a release and its `scontrol release`: the competitor
    stays in the hold ledger, so a later tick releases it (once), after the claim's takeover
    time, not while the claimer may still be releasing it."""
    held_then_running(ctx, slurm)
    monkeypatch.setattr(competitors, "crashpoint", dies_at("hold_release_claimed"))
    with pytest.raises(Died):
        competitors.release_started(ctx, NOW + 3)
    monkeypatch.setattr(competitors, "crashpoint", lambda name, detail="": None)
    assert slurm.acted("release") == []
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    [held] = competitors.held_now(ctx)
    due = NOW + 3 + competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, due - 1) == []  # its claimer may still be at it
    assert slurm.acted("release") == []
    assert competitors.release_started(ctx, due) == [88017]
    assert competitors.release_started(ctx, due + 10_000) == []
    assert slurm.acted("release") == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


DENIED = (1, "", "Access/permission denied for job 88017\n"
                 "slurm_suspend error: Access/permission denied\n")


def test_a_failed_release_is_said_and_tried_again_up_to_three_times(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol release` fails: the thread says so and that trainbot tries again, once per
    failure; the third failure says how to release the job by hand and ends the hold."""
    held_then_running(ctx, slurm)
    runner = FakeRunner({"scontrol": DENIED})
    slurm.release = SlurmClient(runner).release  # type: ignore[method-assign]
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    minutes = -(-wait // 60)

    def retries_said() -> int:
        return sum(1 for t in recorded(ctx).texts()
                   if t.startswith("Could not release 88017 (") and "permission denied" in t
                   and t.endswith(f"; trainbot tries again in about {minutes:g} minutes."))

    at = NOW + 3
    assert competitors.release_started(ctx, at) == []
    assert competitors.release_started(ctx, at + 1) == []  # not again before it is due
    assert retries_said() == 1
    assert competitors.release_started(ctx, at + wait) == []  # the second attempt
    assert retries_said() == 2
    assert competitors.release_started(ctx, at + 2 * wait) == []  # the third: the last
    assert retries_said() == 2
    assert any(t.startswith("Could not release 88017 (") and
               t.endswith("release it with `/train release 88017`.")
               for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []
    assert competitors.release_started(ctx, at + 3 * wait) == []
    assert [c.argv[-2:] for c in runner.calls] == [["release", "88017"]] * 3


def release_answer_lost(slurm: FakeSlurm, *, took_effect: bool,
                        slurm_down_after: bool = False) -> None:
    """From now on the next `scontrol release`'s connection drops before its answer: it took
    effect or not (`took_effect`); Slurm answers nothing more after it with
    `slurm_down_after`."""
    release = slurm.release

    def lost(job_id: int) -> None:
        if took_effect:
            release(job_id)
        else:
            slurm.calls.append(("release", job_id))
        slurm.release = release  # type: ignore[method-assign]
        slurm.down = slurm_down_after
        raise ChannelClosed(["scontrol", "release", str(job_id)], "login", connection_lost=True)

    slurm.release = lost  # type: ignore[method-assign]


def test_a_release_whose_answer_was_lost_but_took_effect_is_said_released_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The connection drops after `scontrol release` took effect: trainbot reads the job
    again, finds it no longer held and says it was released, never that it could not be, and
    does not release it again."""
    held_then_running(ctx, slurm)
    release_answer_lost(slurm, took_effect=True)
    [held] = competitors.held_now(ctx)
    assert competitors.release_started(ctx, NOW + 3) == [88017]
    assert competitors.release_started(ctx, NOW + 3 + 2 * competitors.release_takeover_s(
        ctx, held)) == []
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held
    texts = recorded(ctx).texts()
    assert texts.count("Released 88017: 88887 is running.") == 1
    assert not any(t.startswith("Could not release") for t in texts)
    assert competitors.held_now(ctx) == []


def test_a_release_whose_answer_was_lost_and_whose_job_cannot_be_read_is_said_unknown(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The connection drops during `scontrol release` and Slurm does not answer the look
    after it: the thread says trainbot does not know whether it released the job and looks
    again, not that it could not; the next try, once due, releases it and says so."""
    held_then_running(ctx, slurm)
    release_answer_lost(slurm, took_effect=False, slurm_down_after=True)
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, NOW + 3) == []
    minutes = -(-wait // 60)
    texts = recorded(ctx).texts()
    assert not any(t.startswith("Could not release") for t in texts)
    [unknown] = [t for t in texts if "may or may not have released 88017" in t]
    assert unknown.startswith("trainbot may or may not have released 88017 (connection to "
                              "login lost while `scontrol release 88017` was running")
    assert unknown.endswith(f"; it looks at it again in about {minutes:g} minutes.")
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    slurm.down = False
    assert competitors.release_started(ctx, NOW + 3 + wait) == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert not slurm.records[88017].is_held


def test_a_release_whose_answer_was_lost_and_that_did_not_take_effect_is_tried_again(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    held_then_running(ctx, slurm)
    release_answer_lost(slurm, took_effect=False)
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, NOW + 3) == []
    texts = recorded(ctx).texts()
    assert not any(t.startswith("Could not release") for t in texts), texts
    [again] = [t for t in texts if t.startswith("88017 was still held")]
    assert again.startswith("88017 was still held when trainbot looked after releasing it "
                            "(connection to login lost")  # still held when read again
    assert again.endswith(f"; trainbot tries again in about {-(-wait // 60):g} minutes.")
    assert competitors.release_started(ctx, NOW + 3 + wait) == [88017]
    assert slurm.acted("release") == [88017, 88017]
    assert not slurm.records[88017].is_held


def release_times_out_once(slurm: FakeSlurm) -> None:
    """The next `scontrol release` outlives its timeout, without effect yet (it may still
    be running), as the real client raises it (OutcomeUnknown); the ones after work."""
    release = slurm.release
    timing_out = SlurmClient(FakeRunner(
        {"scontrol": CommandTimedOut(["scontrol", "release", "88017"], 20)}))

    def release_still_running(job_id: int) -> None:
        slurm.release = release  # type: ignore[method-assign]
        timing_out.release(job_id)

    slurm.release = release_still_running  # type: ignore[method-assign]


def test_a_release_that_timed_out_and_still_holds_when_read_says_it_is_not_known_yet(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol release 88017` outlives its timeout (it may still be running) and the look
    right after finds 88017 still held: the release may land after that look, so the thread
    says trainbot does not know yet whether it released it, never that it could not; once
    the release lands, the next try says it was released, once."""
    held_then_running(ctx, slurm)
    release_times_out_once(slurm)
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, NOW + 3) == []
    texts = recorded(ctx).texts()
    assert not any(t.startswith("Could not release") for t in texts), texts
    [unknown] = [t for t in texts if "may or may not have released 88017" in t]
    assert unknown.startswith("trainbot may or may not have released 88017 (`scontrol "
                              "release 88017` did not answer within 20 s")
    assert unknown.endswith(f"; it looks at it again in about {-(-wait // 60):g} minutes.")
    slurm.set(88017, reason="Priority", priority=1)  # the release lands now
    assert competitors.release_started(ctx, NOW + 3 + wait) == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


def test_a_release_that_failed_once_then_goes_through_is_said_released(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    held_then_running(ctx, slurm)
    works = slurm.release
    slurm.release = SlurmClient(FakeRunner({"scontrol": DENIED})).release  # type: ignore[method-assign]
    assert competitors.release_started(ctx, NOW + 3) == []
    slurm.release = works  # type: ignore[method-assign]
    [held] = competitors.held_now(ctx)
    assert competitors.release_started(ctx, NOW + 3 + competitors.release_takeover_s(ctx, held)) \
        == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    assert competitors.held_now(ctx) == []


def yes_while(ctx: BotContext, slurm: FakeSlurm, state: str,
              release: Callable[[BotContext], list[int]]) -> tuple[list[list[int]], str | None]:
    """A yes on 88017's hold during whose `scontrol hold` the resumed job 88887 goes to
    `state` and another run (a second context on the same store) asks for its release
    (`release`); returns what that release released, and the prompt's text after the yes."""
    _, hold_token = competitor_setup(ctx, slurm)
    other = make_context(ctx.store, slurm)
    hold = slurm.hold
    during: list[list[int]] = []

    def hold_as_the_resumed_job_moves_on(job_id: int) -> None:
        slurm.set(88887, state=state)
        during.append(release(other))
        hold(job_id)

    slurm.hold = hold_as_the_resumed_job_moves_on  # type: ignore[method-assign]
    text = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2).update_text
    return during, text


def test_a_release_waits_for_a_hold_still_being_sent_then_releases_it(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The resumed job starts while the yes's `scontrol hold` is on its way: another tick's
    release waits for the hold to be over instead of "releasing" a job not held yet; the
    yes, its hold over, releases it; the job is not left held."""
    during, text = yes_while(ctx, slurm, "RUNNING",
                             lambda other: competitors.release_started(other, NOW + 3))
    assert during == [[]]
    assert text == ("Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                    "longer waits in the queue (RUNNING)")
    assert slurm.acted("release") == [88017]
    assert competitors.release_started(ctx, NOW + 4) == []
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held


def test_a_cancel_during_the_yes_hold_is_released_by_the_yes_itself(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A person cancels the resumed job while the yes's `scontrol hold` is on its way: the
    cancel's release waits for the hold to be over, and the yes, its hold over, releases the
    competitor at once (not a holds tick later) and says so in the thread, once."""
    during, text = yes_while(ctx, slurm, "CANCELLED", lambda other: competitors.release_held_for(
        other, 88887, NOW + 2, "cancelled", "dev"))
    assert during == [[]]
    assert text == ("Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                    "longer waits in the queue (CANCELLED)")  # not "until 88887 starts"
    assert slurm.acted("release") == [88017]  # before any tick
    assert not slurm.records[88017].is_held
    assert competitors.held_now(ctx) == []
    assert recorded(ctx).texts().count(
        "Released 88017: 88887 ended (CANCELLED) without needing the slot.") == 1
    assert competitors.release_started(ctx, NOW + 3) == []
    assert slurm.acted("release") == [88017]


def yes_whose_release_came_first(ctx: BotContext, slurm: FakeSlurm, *,
                                 slurm_down_after: bool = False) -> str | None:
    """A yes on 88017's hold whose release (another tick: 88887 started) takes the hold
    right after the yes read both jobs (88887 PENDING then), Slurm answering no more after
    it with `slurm_down_after`; returns the prompt's text after the yes. That release
    releases nothing: the hold was never sent."""
    _, hold_token = competitor_setup(ctx, slurm)
    jobs = slurm.jobs

    def read_then_released(ids: Any) -> dict[int, Any]:
        records = jobs(ids)
        slurm.jobs = jobs  # type: ignore[method-assign]
        slurm.set(88887, state="RUNNING")
        assert competitors.release_started(make_context(ctx.store, slurm), NOW + 2) == []
        slurm.down = slurm_down_after
        return records

    slurm.jobs = read_then_released  # type: ignore[method-assign]
    return handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2).update_text


def test_a_yes_whose_release_came_first_holds_nothing(ctx: BotContext, slurm: FakeSlurm
                                                      ) -> None:
    """A release (another tick) takes the hold before the yes's hold is sent: no hold is
    sent after it, so none can outlive the ledger; the yes says what the resumed job is now,
    not the PENDING it was when the yes looked."""
    text = yes_whose_release_came_first(ctx, slurm)
    assert slurm.acted("hold") == []
    assert competitors.held_now(ctx) == []
    assert text == "Approved by <@U0APPR>: job 88887 is already RUNNING; 88017 was not held"


def test_a_yes_whose_release_came_first_and_the_thread_agree(ctx: BotContext,
                                                             slurm: FakeSlurm) -> None:
    """The release took the hold before the yes sent it: the prompt says "88017 was not
    held", and the thread says nothing of a release, nor does trainbot run `scontrol
    release` on a job it never held (that would drop a hold its owner placed); no later tick
    does either."""
    text = yes_whose_release_came_first(ctx, slurm)
    assert text is not None and text.endswith("88017 was not held")
    assert competitors.release_started(ctx, NOW + 100_000) == []
    assert slurm.acted("hold") == [] and slurm.acted("release") == []
    assert not any(t.startswith("Released 88017") for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []


def test_a_yes_whose_release_came_first_names_no_stale_state_when_slurm_stops_answering(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    text = yes_whose_release_came_first(ctx, slurm, slurm_down_after=True)
    assert slurm.acted("hold") == []
    assert text is not None
    assert text.startswith("Approved by <@U0APPR>: job 88887 no longer waits in the queue "
                           "(its state could not be read: ")
    assert text.endswith("); 88017 was not held")
    assert "PENDING" not in text


def test_no_release_is_sent_right_behind_a_hold_whose_end_was_not_seen(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol hold 88017` outlives its timeout (it may still be running) while the resumed
    job starts: no release goes out in the same click, nor from a tick or a cancel before the
    hold can have ended, so a hold landing late is still released, not left with an empty
    ledger; once its `holding` step is old enough the tick releases it, once."""
    _, hold_token = competitor_setup(ctx, slurm)
    argv = ["scontrol", "hold", "88017"]

    def hold_still_running(job_id: int) -> None:
        slurm.calls.append(("hold", job_id))
        slurm.set(88887, state="RUNNING")
        raise OutcomeUnknown.timed_out(argv, CommandTimedOut(argv, 60))

    slurm.hold = hold_still_running  # type: ignore[method-assign]
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert competitors.release_started(ctx, NOW + 62) == []  # the next holds tick
    assert competitors.release_held_for(ctx, 88887, NOW + 63, "cancelled", "dev") == []
    assert slurm.acted("release") == []
    slurm.set(88017, reason="JobHeldUser", priority=0)  # the hold lands now
    [held] = competitors.held_now(ctx)
    due = NOW + 2 + competitors.step_takeover_s(ctx, held, competitors.HOLDING_STEP)
    assert competitors.release_started(ctx, due) == [88017]
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1


@pytest.mark.parametrize("landed", [True, False])
def test_a_hold_whose_process_died_during_it_is_released_once_it_cannot_land_after(
    ctx: BotContext, slurm: FakeSlurm, landed: bool
) -> None:
    """The yes's process dies during its `scontrol hold`: once Slurm shows 88017 held, its
    hold landed and the next tick releases it; while Slurm shows it not held, the hold may
    still land, so no release goes out before the `holding` step's takeover time."""
    _, hold_token = competitor_setup(ctx, slurm)

    def dies(job_id: int) -> None:
        if landed:
            slurm.set(job_id, reason="JobHeldUser", priority=0)
        raise Died("during scontrol hold")

    slurm.hold = dies  # type: ignore[method-assign]
    with pytest.raises(Died):
        handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88887, state="RUNNING")
    [held] = competitors.held_now(ctx)
    due = NOW + 2 + competitors.step_takeover_s(ctx, held, competitors.HOLDING_STEP)
    assert competitors.release_started(ctx, NOW + 62) == ([88017] if landed else [])
    assert competitors.release_started(ctx, due - 1) == []
    assert competitors.release_started(ctx, due) == ([] if landed else [88017])
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held


def test_a_hold_seen_landing_while_its_yes_waits_for_it_is_released_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """88017's hold lands while its yes still waits for `scontrol hold`'s answer, and the
    resumed job starts: a tick that reads 88017 held releases it at once; the yes, its hold
    over, releases nothing more and says it was released; one note in the thread."""
    _, hold_token = competitor_setup(ctx, slurm)
    other = make_context(ctx.store, slurm)
    hold = slurm.hold
    during: list[list[int]] = []

    def hold_landing_before_its_answer(job_id: int) -> None:
        hold(job_id)
        slurm.set(88887, state="RUNNING")
        during.append(competitors.release_started(other, NOW + 3))

    slurm.hold = hold_landing_before_its_answer  # type: ignore[method-assign]
    text = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2).update_text
    assert during == [[88017]]
    assert text == ("Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                    "longer waits in the queue (RUNNING)")
    assert slurm.acted("release") == [88017]
    assert (recorded(ctx).texts() + recorded(other).texts()).count(
        "Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


def test_a_cancel_after_a_failed_release_tries_it_again_at_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A release failed (the retry due in about 13 minutes) and a person cancels the
    resumed job: the cancel releases 88017 at once, not at the retry."""
    held_then_running(ctx, slurm)
    works = slurm.release
    slurm.release = SlurmClient(FakeRunner({"scontrol": DENIED})).release  # type: ignore[method-assign]
    assert competitors.release_started(ctx, NOW + 3) == []
    assert competitors.release_started(ctx, NOW + 63) == []  # a tick waits for the retry
    slurm.release = works  # type: ignore[method-assign]
    assert competitors.release_started(ctx, NOW + 123) == []
    assert competitors.release_held_for(ctx, 88887, NOW + 130, "cancelled", "dev") == [88017]
    assert not slurm.records[88017].is_held
    assert competitors.held_now(ctx) == []
    assert recorded(ctx).texts().count("Released 88017: 88887 was cancelled.") == 1


def test_a_timed_out_release_that_lands_later_is_said_released_at_the_next_tick(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol release` outlives its timeout, the job still held when read; it lands a
    little later: the next tick reads 88017 no longer held and says it was released, not
    about 13 minutes later at the retry."""
    held_then_running(ctx, slurm)
    release_times_out_once(slurm)
    assert competitors.release_started(ctx, NOW + 3) == []
    assert competitors.release_started(ctx, NOW + 63) == []  # still held: the retry waits
    slurm.set(88017, reason="Priority", priority=1)  # the release lands now
    assert competitors.release_started(ctx, NOW + 123) == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []
