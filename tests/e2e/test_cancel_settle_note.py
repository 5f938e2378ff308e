"""The note a settled cancel leaves in its run's thread (bot.services.cancel_settle: a cancel
whose scancel's end was lost, settled later from what Slurm says), through the real
SlackPoster on the Slack stand-in, run by the scheduler's `prompts` job as `trainbot run`
schedules it (bot.app.schedule_prompts), when Slack refuses the note itself."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fakes import AnswerLostSlurm, make_context, present
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.e2e import NOW, accept, refuse

from bot.app import schedule_prompts
from bot.cluster.errors import OutcomeUnknown
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.takeover import RemoteDeadlines, cancel_takeover_s
from bot.services.approvals import handle_click
from bot.services.leases import LeaseKeeper
from bot.services.prompts import create_resubmit_prompt
from bot.services.scheduler import JobScheduler
from bot.slack.poster import SlackPoster
from bot.slack.views import ActionId
from bot.store import Store

PRIVATE = "G0RUNS"  # the run's private channel, the bot later removed from it
NOTE = "Approved by <@W0LEAD>: cancelled job 88154"
LOST = OutcomeUnknown(["scancel", "88154"], "`scancel 88154` did not answer within 60 s")


def note_posts(slack: SlackStandIn) -> list[Any]:
    """The chat.postMessage calls of the settle's note made so far."""
    return [r for r in slack.calls("chat.postMessage")
            if str(r.params.get("text")).startswith(NOTE)]


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the chat:write scope is missing"])
def test_a_settled_cancels_note_slack_refuses_is_tried_less_and_less_then_posted_once(
        slack: SlackStandIn, slack_client: WebClient, store: Store, caplog: Any,
        refused: str) -> None:
    """W0LEAD clicks Cancel and the scancel's end is lost; Slurm then shows the job
    CANCELLED. Slack refuses the post (the bot removed from the run's private channel, or
    chat:write lost) when the `prompts` job settles it: the cancel is settled once (one
    audit row, the approval done) at the first run, and its note tried there, then after 1,
    2, 4 and 8 runs skipped, one warning at the series' first try naming the run, the
    channel and Slack's error (the tries after it at debug); a skipped run calls Slack for
    nothing of it. Slack accepts from run 12: the next try (run 19) posts it, once, one
    warning saying so, and the settle is said (never tried after); the prompt is rewritten
    once the note is in, once. Before, the note was sent, refused and warned of at every
    run (and the prompt's rewrite with it: two warnings)."""
    clock = [NOW]
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    poster = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: clock[0])
    ctx = make_context(store, slurm, sink=poster, charts=False, clock=lambda: clock[0])
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 1000)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 1000)
    store.watched_jobs.add("dev", "88154", now=NOW - 1000, chain_id=chain.id)
    slurm.add(88154, name="mix", state="RUNNING", partition="debug", account="root")
    root = poster.post_root(chain.id, PRIVATE, [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW - 100, summary="88154: stalled",
                                    offer_cancel=True, post_key="prompt:88154")
    asked = poster.post_reply(chain.id, "prompt:88154", prompt.blocks, prompt.text)
    token = prompt.token
    slurm.cancel_lost = LOST
    assert handle_click(ctx, token, ActionId.CANCEL, "W0LEAD", NOW).status == "done"
    slurm.cancel_lost = None
    slurm.set(88154, state="CANCELLED", end_time=NOW + 10)
    refuse(slack, refused, channel=PRIVATE)

    scheduler = JobScheduler(LeaseKeeper(store.leases), clock=lambda: clock[0])
    schedule_prompts(scheduler, ctx)
    [job] = scheduler.jobs()
    caplog.set_level(logging.DEBUG)
    tried_at: list[int] = []
    warned: list[list[str]] = []
    for i in range(26):
        if i == 12:
            accept(slack, refused, channel=PRIVATE)
        clock[0] = NOW + cancel_takeover_s(RemoteDeadlines()) + 60 + 30 * i
        before = len(note_posts(slack))
        caplog.clear()
        job.func()  # one run of the `prompts` job
        if len(note_posts(slack)) > before:
            tried_at.append(i)
            assert len(note_posts(slack)) == before + 1
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        if said:
            warned.append([str(i), *said])
    assert tried_at == [0, 2, 5, 10, 19]  # Slack accepts from 12 on: posted at 19, then never
    assert [w[0] for w in warned] == ["0", "19"]  # the series' first try, and its end
    error = "not_in_channel" if refused == "the bot is out of its channel" else "missing_scope"
    [[_, first], [_, end]] = warned  # naming the run, the channel and Slack's error
    assert first.startswith(f"chain {chain.id} (mix): Slack refused the settled cancel's "
                            f"note cancel-settled:{token}")
    assert PRIVATE in first and error in first
    assert end == f"chain {chain.id} (mix): the settled cancel's note cancel-settled:{token} " \
        f"is posted in {PRIVATE} (thread {root}), after 4 failed tries"
    thread = slack.replies(PRIVATE, root)
    assert [m["ts"] == asked for m in thread if str(m.get("text")).startswith(NOTE)
            ] == [True, False]  # the prompt rewritten, then the note once
    rewrites = [r for r in slack.calls("chat.update") if r.params.get("channel") == PRIVATE]
    assert len(rewrites) == 1 and str(rewrites[0].params.get("text")).startswith(NOTE)
    approval = present(store.approvals.get(token))
    assert approval.state == "done" and "cancel_announced" in store.approvals.steps(token)
    settled = [e for e in store.audit.recent(100) if e.action == "approval.cancel_settled"]
    assert len(settled) == 1 and settled[0].result == "took_effect"  # decided once
    assert slurm.acted("cancel") == [88154]
