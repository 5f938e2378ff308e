"""The watcher's ordinary notes (a held job, an early warning without buttons, a job Slurm
does not know, an automatic resubmit …: everything ThreadEvents posts as a plain note) when
Slack refuses them, through the real SlackPoster on the Slack stand-in (tests/slack_standin/)
and the real watcher tick (bot.services.watch.tick.Watcher, its Outbox and ThreadEvents)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, make_context, present
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.e2e import accept, refuse
from support.watcher import catalogue

from bot.core.policy import PolicyParams
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.services.ports import PostDeferred, PostLogged
from bot.services.watch.events import TickReport, WatchEvent
from bot.services.watch.outbox import Outbox
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.slack.poster import SlackPoster
from bot.slack.retry import make_client
from bot.store import Store

PRIVATE = "G0RUNS"  # the run's private channel, the bot later removed from it
HELD = "job 87870 has been held (JobHeldAdmin)"
KEY = "dev:87870:held:1"


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


@pytest.fixture
def client(slack: SlackStandIn) -> WebClient:
    return make_client(slack.token, base_url=slack.api_url, sleep=lambda s: None, timeout=10)


@pytest.fixture
def store() -> Iterator[Store]:
    with Store.open("sqlite://") as s:
        yield s


def held_job(store: Store, client: WebClient) -> tuple[Watcher, SlackPoster, int, str]:
    """Job 87870 of run `mix` on cluster dev, held by an admin, its thread in PRIVATE; the
    watcher (held jobs reported after 10 min) with the production sink on the poster."""
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: T0)
    ctx = make_context(store, FakeSlurm(), sink=poster, charts=False, clock=lambda: T0)
    slurm = ctx.clusters.slurm("dev")
    assert isinstance(slurm, FakeSlurm)
    slurm.add(87870, state="PENDING", reason="JobHeldAdmin", restart_count=1)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="87870", now=T0)
    store.watched_jobs.add("dev", "87870", now=T0, chain_id=chain.id)
    root = poster.post_root(chain.id, PRIVATE, [], "mix")
    sftp = FakeSFTP()
    watcher = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                      catalogue=catalogue(), sink=ThreadEvents(ctx), config=ctx.config,
                      unreachable_ticks=3, policy=PolicyParams(held_report_s=600))
    return watcher, poster, chain.id, root


def held_posts(slack: SlackStandIn) -> list[Any]:
    """The chat.postMessage calls of the held note made so far."""
    return [r for r in slack.calls("chat.postMessage")
            if str(r.params.get("text")).startswith(HELD)]


CHANNEL_GONE = ("is_archived", "channel_not_found")  # answered to the first four tries


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the chat:write scope is missing", *CHANNEL_GONE])
def test_a_held_note_slack_refuses_is_tried_less_and_less_then_posted_once(
        slack: SlackStandIn, client: WebClient, store: Store, caplog: Any,
        refused: str) -> None:
    """Job 87870 is held by an admin; its note is due 10 min on, and Slack refuses it (the
    bot removed from the run's private channel, chat:write lost, the channel archived or
    not found). The note stays unposted (its row `pending`) and is tried at the first tick,
    then after 1, 2, 4 and 8 ticks skipped; a skipped tick calls Slack for nothing of it.
    The failure series is one warning, at its first try, naming the run, the channel and
    Slack's error (the tries after it at debug), and one more when it ends. Slack accepts
    from tick 12 (or after refusing four tries): the next try (tick 19) posts it, once, and
    it is never tried again. Before, the refused note was logged and its row marked
    `posted`: the thread never heard the job was held; then a warning came at every try."""
    watcher, _, chain_id, root = held_job(store, client)
    watcher.tick(T0)  # first seen held
    if refused in CHANNEL_GONE:
        slack.fail_next("chat.postMessage", status=200, error=refused, count=4)
    else:
        refuse(slack, refused, channel=PRIVATE)
    caplog.set_level(logging.DEBUG)
    tried_at: list[int] = []
    warned: list[list[str]] = []
    for i in range(26):
        if i == 12 and refused not in CHANNEL_GONE:
            accept(slack, refused, channel=PRIVATE)
        before = len(held_posts(slack))
        caplog.clear()
        watcher.tick(T0 + 660 + 60 * i)
        if len(held_posts(slack)) > before:
            tried_at.append(i)
            assert len(held_posts(slack)) == before + 1
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        if said:
            warned.append([str(i), *said])
        if i < 19:
            assert present(store.incidents.get(KEY)).state == "pending"
    assert tried_at == [0, 2, 5, 10, 19]  # Slack accepts from 12 on: posted at 19, then never
    assert [w[0] for w in warned] == ["0", "19"]  # the series' first try, and its end
    error = {"the bot is out of its channel": "not_in_channel",
             "the chat:write scope is missing": "missing_scope"}.get(refused, refused)
    [[_, first], [_, end]] = warned  # naming the run, the channel and Slack's error
    assert first.startswith(f"chain {chain_id} (mix): Slack refused the note {KEY}")
    assert PRIVATE in first and root in first and error in first
    assert end == f"chain {chain_id} (mix): the note {KEY} is posted in {PRIVATE} (thread " \
        f"{root}), after 4 failed tries"
    assert [str(m["text"]).startswith(HELD) for m in slack.replies(PRIVATE, root)] == [True]
    assert present(store.incidents.get(KEY)).state == "posted"


def test_a_held_note_rate_limited_past_the_retries_is_tried_at_each_tick_then_posted_once(
        slack: SlackStandIn, client: WebClient, store: Store, caplog: Any) -> None:
    """Slack answers 429 to every chat.postMessage of the held note for three ticks, past the
    client's own waits (1 + 5 sends) and the poster's four attempts: a transient failure, so
    the note is tried again at the next tick, not backed off. One warning names the run, the
    channel and Slack's error at the first try, one says it is posted at the tick Slack
    answers (the tries between at debug); the poster warns once per try of its four
    attempts, not at each. The note is posted once. Before, the first try's note was marked
    posted and never sent; then each try was a warning of the watcher's and four of the
    poster's."""
    watcher, _, chain_id, root = held_job(store, client)
    watcher.tick(T0)
    slack.fail_next("chat.postMessage", status=429, count=3 * 6 * 4)
    caplog.set_level(logging.DEBUG)
    warned: list[list[str]] = []
    for i in range(6):
        caplog.clear()
        watcher.tick(T0 + 660 + 60 * i)
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and r.name == "bot.services.threads"]
        if said:
            warned.append([str(i), *said])
        poster_said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                       and r.name == "bot.slack.poster"]
        assert len(poster_said) == (1 if i < 3 else 0), poster_said  # not one per attempt
    assert [w[0] for w in warned] == ["0", "3"]
    [[_, first], [_, end]] = warned
    assert first.startswith(f"chain {chain_id} (mix): could not post the note {KEY}")
    assert PRIVATE in first and root in first and "ratelimited" in first
    assert end == f"chain {chain_id} (mix): the note {KEY} is posted in {PRIVATE} (thread " \
        f"{root}), after 3 failed tries"
    assert [str(m["text"]).startswith(HELD) for m in slack.replies(PRIVATE, root)] == [True]
    assert len(held_posts(slack)) == 3 * 6 * 4 + 1
    assert present(store.incidents.get(KEY)).state == "posted"


@pytest.mark.parametrize("error", ["invalid_blocks", "msg_too_long"])
def test_a_note_slack_refuses_for_itself_is_given_up_once_and_never_sent_again(
        slack: SlackStandIn, client: WebClient, store: Store, caplog: Any,
        error: str) -> None:
    """A note Slack refuses for what it is (invalid_blocks, msg_too_long: only a bug of
    trainbot's renderer, which fits a note to Slack's limits, builds one) will never be
    taken: it is given up at its first try, one warning naming the run, the channel, Slack's
    error and carrying the note's words, its row `dropped`; emitted again (the watcher's
    next ticks) it is not sent again (Slack would take it now: it is not), and the publisher
    is told it is done with (True). Backed off instead, it would be a warning every few
    minutes for good; marked posted, as before, the log did not say it was lost for good."""
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: T0)
    ctx = make_context(store, FakeSlurm(), sink=poster, charts=False, clock=lambda: T0)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    root = poster.post_root(chain.id, PRIVATE, [], "mix")
    outbox = Outbox("dev", store=store, sink=ThreadEvents(ctx))
    words = "job 87870: trainbot could not read back its decision to resubmit"
    slack.fail_next("chat.postMessage", status=200, error=error)
    event = WatchEvent("note", "dev:87870:resubmit:ask", "dev", words, chain.id, "87870", "mix",
                       text_only=True)
    caplog.set_level(logging.DEBUG)
    done = [outbox.emit(event, "resubmit_ask", T0 + 60 * i, TickReport(ok=True))
            for i in range(4)]
    assert done == [True] * 4
    sent = [r for r in slack.calls("chat.postMessage") if r.params.get("thread_ts") == root]
    assert [r.response.get("error") for r in sent] == [error]  # tried once
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, said
    assert said[0].startswith(f"chain {chain.id} (mix): Slack refused the note "
                              "dev:87870:resubmit:ask itself")
    assert PRIVATE in said[0] and error in said[0] and said[0].endswith(words)
    assert slack.replies(PRIVATE, root) == []
    assert present(store.incidents.get("dev:87870:resubmit:ask")).state == "dropped"


@pytest.mark.parametrize("run_key", [False, True], ids=["job's note", "run's note"])
def test_a_refused_notes_backoff_is_forgotten_when_its_run_ends(
        slack: SlackStandIn, client: WebClient, store: Store, run_key: bool) -> None:
    """The backoff a refused note leaves lasts while its run does: once the run has ended
    (the watcher tells the sink `chain_changed`), it is forgotten (a bot watching for months
    keeps none of its ended runs'), so that key would be tried at once again; a note keyed
    by its job's id, or by its run (`dev:chain:ID:…`, as the read_failed note is)."""
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: T0)
    ctx = make_context(store, FakeSlurm(), sink=poster, charts=False, clock=lambda: T0)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="87870", now=T0)
    poster.post_root(chain.id, PRIVATE, [], "mix")
    events = ThreadEvents(ctx)
    key = f"dev:chain:{chain.id}:read_failed:{T0}" if run_key else KEY
    note = WatchEvent("held", key, "dev", HELD, chain.id, "87870", "mix", text_only=True)
    slack.fail_next("chat.postMessage", status=200, error="is_archived", count=3)
    with pytest.raises(PostLogged):
        events.publish(note)  # refused: skips the next chance
    with pytest.raises(PostDeferred):
        events.publish(note)
    events.chain_changed(chain.id)  # still active: kept
    with pytest.raises(PostLogged):
        events.publish(note)  # refused again: skips the next two
    store.chains.set_status(chain.id, "stopped", now=T0 + 60)
    events.chain_changed(chain.id)
    with pytest.raises(PostLogged):
        events.publish(note)  # forgotten: tried at once
    assert len(held_posts(slack)) == 3
