"""An approved cancel's steps are taken over only after the longer of their marker's own bounds
and the current config's: the run that marks `cancelling` / `cancelling_to_resume` (the
click), `cancel_settled` (a settle) or `cancel_resuming` keeps one remote command's and one
checkpoint lookup's worst case with the step (prompt_steps.command_at_most_s and
lookup_at_most_s, bot.services.submit_deadlines.step_bounds). Before, the takeover counted
the current config's deadlines alone: a click that went through a jump host (its SSH runner's
cached ProxyJump, since taken out of the config) was taken over after 584 s while it could
still be in its scancel, and a settle whose runner had a longer SFTP timeout after 5840 s
while it could still be in its checkpoint lookup."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fakes import AnswerLostSlurm, FakeRunner, make_context
from support.dying import Died, dies_at
from support.in_flight import in_flight, recover
from support.mix_prompt import mix_prompt

from bot.cluster.errors import ChannelClosed
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.takeover import (
    SLACK_CALLS,
    RemoteDeadlines,
    StepBounds,
    cancel_takeover_s,
    own_bounds,
    settle_lead_s,
    settle_takeover_s,
)
from bot.services import cancel_settle
from bot.services import submit as submit_mod
from bot.services.approvals import handle_click
from bot.services.cancel_settle import settle_unknown_cancels
from bot.services.cancel_steps import cancel_takeover_at
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.slack.views import ActionId
from bot.store import Store

NOW = 1_000_000.0
DIRECT = RemoteDeadlines()  # the config's now: no jump host, the default timeouts
JUMP = RemoteDeadlines(jump=True)  # the click's runner: through a jump host (231 s a command)
SLOW_SFTP = RemoteDeadlines(sftp_s=60.0)  # the settle's runner: 60 s an SFTP request


def stalled_prompt(store: Store, runner: RemoteDeadlines) -> tuple[BotContext, AnswerLostSlurm,
                                                                    str]:
    """Run `mix` whose job 88154 stalled, a Cancel and resume prompt on it; the bot's SSH
    runner counts its calls at `runner` (its cached endpoint), the config at DIRECT.
    (context, Slurm, the prompt's token)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    slurm.runner = FakeRunner(slurm.runner.answers, deadlines=runner)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    _, prompt = mix_prompt(ctx, run_at=NOW - 1000, now=NOW - 100, running=slurm, watched=True)
    return ctx, slurm, prompt.token


def settle_died(ctx: BotContext, slurm: AnswerLostSlurm, token: str,
                monkeypatch: pytest.MonkeyPatch, module: object, point: str) -> float:
    """W0LEAD's Cancel and resume at NOW, its scancel's end not seen; the settle 600 s later
    (its runner `slurm.runner`'s) dies at `module`'s crashpoint `point`. The settle's time."""
    slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                             connection_lost=True)
    assert handle_click(ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", NOW).status == "done"
    slurm.cancel_answer_lost = None
    settle_at = NOW + 600
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(module, "crashpoint", dies_at(point))
        settle_unknown_cancels(ctx, settle_at)
    return settle_at


def taken_over(store: Store, action: str) -> list[str]:
    """The tokens of the audit rows `action` (a cancel taken over, a settle)."""
    return [json.loads(e.detail or "{}")["token"] for e in store.audit.recent(50)
            if e.action == action]


def test_a_click_through_a_jump_host_is_not_taken_over_in_its_scancel(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """W0LEAD's Cancel and resume goes through the runner's cached jump host (231 s a
    command); its process dies in the scancel. The config names no jump host (131 s a
    command: 584 s to take the click over). The cancel is not taken over at 585 s, while the
    click's own commands may still be running, but after the click's 984 s; then it is settled
    once. Before, it was taken over at 585 s."""
    ctx, slurm, token = stalled_prompt(store, JUMP)

    def dies_in_scancel(job_id: int) -> None:
        raise Died(f"scancel {job_id}")

    monkeypatch.setattr(slurm, "cancel", dies_in_scancel)
    with pytest.raises(Died):
        handle_click(ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", NOW)
    assert store.approvals.bounds_of(token, "cancelling_to_resume") == \
        own_bounds(DIRECT, JUMP, POST_DEADLINE_S) == \
        StepBounds(231.0, JUMP.lookup_at_most_s, 330.0)
    jumped = own_bounds(DIRECT, JUMP, POST_DEADLINE_S)
    assert (cancel_takeover_s(DIRECT), cancel_takeover_s(DIRECT, jumped)) == \
        (584.0, 984.0)

    settle_unknown_cancels(ctx, NOW + 585)
    assert sorted(store.approvals.steps(token)) == ["cancelling_to_resume", "claimed"]
    assert taken_over(store, "approval.cancel_taken_over") == []

    settle_unknown_cancels(ctx, NOW + 983)  # 4 commands at 231 s, plus the margin: 984 s
    assert taken_over(store, "approval.cancel_taken_over") == []
    settle_unknown_cancels(ctx, NOW + 985)
    assert "cancel_unknown" in store.approvals.steps(token)
    assert taken_over(store, "approval.cancel_taken_over") == [token]


def test_a_click_on_a_cancel_another_replica_is_in_names_the_wait_its_takeover_keeps(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """W0LEAD's Cancel and resume went through the runner's cached jump host (its step keeps
    231 s a command: taken over 984 s after it, not the config's 584 s) and is still in its
    scancel (or its process died there). U0APPR clicks the same prompt 100 s later, and a
    Resubmit prompt of the same job: each reply names the wait the takeover keeps, 884 s
    (15 min; the config's bound would say 8 min), and the takeover comes exactly then.
    Before, neither reply said when trainbot would look at the job again."""
    ctx, slurm, token = stalled_prompt(store, JUMP)
    chain = store.chains.latest_for_recipe("mix")
    assert chain is not None
    other = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                   now=NOW - 50, summary="88154: stalled", mem="900G").token

    def dies_in_scancel(job_id: int) -> None:
        raise Died(f"scancel {job_id}")

    monkeypatch.setattr(slurm, "cancel", dies_in_scancel)
    with pytest.raises(Died):
        handle_click(ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", NOW)
    after = ("If that cancel does not finish, trainbot looks at job 88154 again in about "
             "15 min and says in the run's thread whether it was cancelled.")
    again = handle_click(ctx, token, ActionId.CANCEL_RESUME, "U0APPR", NOW + 100)
    assert (again.status, again.ephemeral) == (
        "duplicate", f"Already decided by <@W0LEAD>; nothing was done again. {after}")
    busy = handle_click(ctx, other, ActionId.RESUBMIT_MEM, "U0APPR", NOW + 100)
    assert (busy.status, busy.ephemeral) == (
        "busy", "Out of date: <@W0LEAD> is already acting on job 88154 from another prompt; "
        f"nothing was done. {after}")
    approval = store.approvals.get(token)
    assert approval is not None
    assert cancel_takeover_at(ctx, approval) == NOW + 984.0 == NOW + 100 + 884.0

    settle_unknown_cancels(ctx, NOW + 100 + 883)
    assert taken_over(store, "approval.cancel_taken_over") == []
    settle_unknown_cancels(ctx, NOW + 100 + 884)
    assert taken_over(store, "approval.cancel_taken_over") == [token]
    # taken over: no click is told to wait for that cancel any more
    late = handle_click(ctx, token, ActionId.CANCEL_RESUME, "U0APPR", NOW + 900)
    assert late.ephemeral == "Already decided by <@W0LEAD>; nothing was done again."


def test_a_cancel_step_marked_before_its_bounds_were_kept_is_taken_over_at_the_configs(
        store: Store) -> None:
    """A `cancelling_to_resume` step a trainbot before this one marked (no bounds kept) is
    taken over after the current config's 584 s, as before."""
    ctx, slurm, token = stalled_prompt(store, JUMP)
    assert store.approvals.claim(token, actor="W0LEAD", now=NOW).claimed
    store.approvals.mark_step(token, "cancelling_to_resume", now=NOW)
    assert store.approvals.bounds_of(token, "cancelling_to_resume") is None
    settle_unknown_cancels(ctx, NOW + 583)
    assert taken_over(store, "approval.cancel_taken_over") == []
    settle_unknown_cancels(ctx, NOW + 585)
    assert taken_over(store, "approval.cancel_taken_over") == [token]


def test_a_settle_with_a_longer_sftp_timeout_is_not_taken_over_in_its_lookup(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Cancel and resume whose scancel's end was not seen is settled by a run whose SSH
    runner allows 60 s an SFTP request (the config: 15 s); it dies right after claiming the
    settle. Another run, at the config's deadlines, does not take it over at the config's
    5840 s (the first may still be in the resume's checkpoint lookup, 80 requests at 60 s),
    only once the settler's own lookup bound has passed; the settle is then done once. Before,
    it was taken over at 5841 s."""
    ctx, slurm, token = stalled_prompt(store, SLOW_SFTP)
    settle_at = settle_died(ctx, slurm, token, monkeypatch, cancel_settle, "cancel_settle_claimed")
    marked = store.approvals.bounds_of(token, "cancel_settled")
    assert marked == own_bounds(DIRECT, SLOW_SFTP, POST_DEADLINE_S)
    assert marked is not None and marked.lookup_at_most_s == 201.0 + 80 * 60.0
    slurm.runner = FakeRunner(slurm.runner.answers)  # the other run: the config's deadlines
    approval = store.approvals.get(token)
    assert approval is not None
    bound = cancel_settle.takeover_s(ctx, approval, settle_at, "cancel_settled")
    assert bound == settle_takeover_s(DIRECT, marked=marked,
                                      post_deadline_s=POST_DEADLINE_S) == 9530.0
    assert settle_takeover_s(DIRECT, post_deadline_s=POST_DEADLINE_S) == 5840.0

    settle_unknown_cancels(ctx, settle_at + 5841)
    assert taken_over(store, "approval.cancel_settled") == []
    assert store.approvals.steps(token)["cancel_settled"] == settle_at

    settle_unknown_cancels(ctx, settle_at + bound + 1)
    assert taken_over(store, "approval.cancel_settled") == [token]
    assert store.approvals.steps(token)["cancel_settled"] == settle_at + bound + 1
    # the taker keeps its own bounds with the step: the config's now
    assert store.approvals.bounds_of(token, "cancel_settled") == \
        own_bounds(DIRECT, None, POST_DEADLINE_S)



def test_a_settle_marked_under_a_longer_post_deadline_is_not_taken_over_at_a_shorter_one(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A settle marked by a run configured with slack.post_deadline_s 600 (each Slack call
    at most 630 s) dies right after claiming it. Another replica, configured 300 s, does not
    take it over at its own 5840 s (the margin, commands, lookup and 6 calls of 330 s) but
    at 7640 s, each call at the marker's 630 s; taken over, the step keeps the taker's.
    Before, the step kept no post bound: the 300 s replica took it over at 5841 s, while the
    settle could still be in its posts."""
    ctx, slurm, token = stalled_prompt(store, DIRECT)
    ctx.config.slack.post_deadline_s = 600.0  # the marker's
    settle_at = settle_died(ctx, slurm, token, monkeypatch, cancel_settle, "cancel_settle_claimed")
    marked = store.approvals.bounds_of(token, "cancel_settled")
    assert marked is not None and marked.post_at_most_s == 630.0
    ctx.config.slack.post_deadline_s = 300.0  # the other replica's
    approval = store.approvals.get(token)
    assert approval is not None
    bound = cancel_settle.takeover_s(ctx, approval, settle_at, "cancel_settled")
    assert bound == 5840.0 + SLACK_CALLS * (630.0 - 330.0) == 7640.0

    settle_unknown_cancels(ctx, settle_at + 5841)
    settle_unknown_cancels(ctx, settle_at + 7639)
    assert taken_over(store, "approval.cancel_settled") == []
    assert store.approvals.steps(token)["cancel_settled"] == settle_at
    settle_unknown_cancels(ctx, settle_at + 7641)
    assert taken_over(store, "approval.cancel_settled") == [token]
    assert store.approvals.bounds_of(token, "cancel_settled") == \
        own_bounds(DIRECT, None, 300.0)

def test_a_settle_step_marked_before_its_bounds_were_kept_counts_the_configs_lookup(
        store: Store) -> None:
    ctx, slurm, token = stalled_prompt(store, SLOW_SFTP)
    store.approvals.mark_step(token, "cancel_settled", now=NOW)
    approval = store.approvals.get(token)
    assert approval is not None
    assert cancel_settle.takeover_s(ctx, approval, NOW, "cancel_settled") == 5840.0


def test_a_settles_takeover_counts_its_slack_calls_at_the_configured_post_deadline(
        store: Store) -> None:
    """A settle's step is taken over once its SLACK_CALLS Slack calls could each have taken
    the poster's worst case at the configured slack.post_deadline_s (its deadline and one
    request), as a post's takeover counts one: 90 s a post takes 1260 s off the default's
    5840 s. Before, each call was counted at one request's 30 s whatever the deadline (a
    settle still in a post Slack kept rate limiting could be taken over)."""
    ctx, slurm, token = stalled_prompt(store, SLOW_SFTP)
    store.approvals.mark_step(token, "cancel_settled", now=NOW)
    approval = store.approvals.get(token)
    assert approval is not None
    ctx.config.slack.post_deadline_s = 90.0
    assert cancel_settle.takeover_s(ctx, approval, NOW, "cancel_settled") == \
        5840.0 - SLACK_CALLS * (300.0 - 90.0) == 4580.0


def test_the_step_bounds_are_the_runners_own_when_longer_else_the_configs() -> None:
    assert own_bounds(DIRECT, None, POST_DEADLINE_S) == StepBounds(131.0, 1311.0, 330.0)
    assert own_bounds(DIRECT, replace(DIRECT, command_s=0.0, sftp_s=0.0), POST_DEADLINE_S) == \
        StepBounds(131.0, 1311.0, 330.0)
    assert own_bounds(DIRECT, JUMP, POST_DEADLINE_S) == \
        StepBounds(231.0, JUMP.lookup_at_most_s, 330.0)


def test_a_settles_resubmit_is_left_to_it_for_its_markers_lead(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The settle (its runner at 60 s an SFTP request) died right after its resubmit's sbatch
    queued 90500, and Slurm has forgotten the cancelled 88154, so no settle takes it over. The
    recovery of the submits in flight leaves the row to the settle for the settle's own lead
    (its takeover at its kept bounds, then the submit's window: 10769 s), not the config's
    7079 s, then looks 90500 up as a person's: one job. Before, it was looked up at 7080 s."""
    ctx, slurm, token = stalled_prompt(store, SLOW_SFTP)
    settle_at = settle_died(ctx, slurm, token, monkeypatch, submit_mod, "sbatch_returned")
    assert slurm.queued("mix") == [90500] and in_flight(store) == ["mix"]
    del slurm.records[88154]
    marked = store.approvals.bounds_of(token, "cancel_settled")
    assert settle_lead_s(DIRECT, post_deadline_s=POST_DEADLINE_S) == 7079.0
    assert settle_lead_s(DIRECT, 131.0, marked, post_deadline_s=POST_DEADLINE_S) == 9530.0 + 1239.0

    recover(ctx, settle_at + 7080)
    assert in_flight(store) == ["mix"]  # the settle's still
    recover(ctx, settle_at + 10770)
    assert in_flight(store) == [] and len(slurm.submits()) == 1
