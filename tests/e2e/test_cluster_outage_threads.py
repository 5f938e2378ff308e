"""A cluster's outage notice and its "answers again" note in the run threads, through the
real SlackPoster on the Slack stand-in, when the notice's post may be in Slack with its ts
never stored: the bot killed between Slack taking it and recording it (the poster's
`slack_accepted` crash point), or Slack's answer lost and the lookup failing. A thread gets
the notice at most once and, when it may have it, the "answers again" note once."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import pytest
from fakes import make_context, present
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.e2e import CHANNEL, NOW
from support.e2e import accept as accept_in
from support.e2e import refuse as refuse_in

import bot.slack.poster as poster_module
from bot.cluster.errors import ClusterUnavailable, CommandTimedOut
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.services.watch.events import TickReport
from bot.services.watch.health import ClusterHealth
from bot.services.watch.outbox import Outbox
from bot.services.watch_events import ThreadEvents
from bot.slack.poster import SlackPoster
from bot.store import Store

NOTICE = "cluster dev unreachable for 3 ticks (since 1970-01-12 13:46:40 UTC)"
BACK = "cluster dev answers again (unreachable since 1970-01-12 13:46:40 UTC)"
TIMED_OUT = CommandTimedOut(["squeue", "--me"], 20)


class Killed(BaseException):
    """The bot's process killed (SIGKILL) where it stands: nothing after it runs."""


def bot(store: Store, client: WebClient) -> ClusterHealth:
    """A bot's cluster health for `dev` (a new process: its own poster, thread writer,
    outbox and counters over `store`), its threads on the stand-in."""
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: NOW)
    ctx = make_context(store, sink=poster, charts=False)
    return ClusterHealth("dev", outbox=Outbox("dev", store=store, sink=ThreadEvents(ctx)),
                         unreachable_ticks=3)


def open_threads(store: Store, client: WebClient, n: int) -> list[str]:
    """`n` active runs on cluster dev with their threads; their roots' ts."""
    return threads_in(store, client, *[CHANNEL] * n)


def threads_in(store: Store, client: WebClient, *channels: str) -> list[str]:
    """An active run on cluster dev with its thread in each of `channels`; their roots' ts."""
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: NOW)
    roots = []
    for where in channels:
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
        roots.append(poster.post_root(chain.id, where, [], "mix"))
    return roots


def said(slack: SlackStandIn, root: str, start: str) -> int:
    """How many messages of the thread `root` (in CHANNEL) start with `start`."""
    return said_in(slack, CHANNEL, root, start)


def killed_at_slack_accepted(key_part: str):
    def crashpoint(name: str, detail: str = "") -> None:
        if name == "slack_accepted" and key_part in detail:
            raise Killed(f"{name} {detail}")
    return crashpoint


def killed_as_slack_takes_the_notice(store: Store, client: WebClient, monkeypatch: Any) -> None:
    """A bot's cluster dev times out three ticks running; Slack takes the outage notice of
    the first thread and the bot is killed there, before storing its ts (the post's row an
    intent, the notice's `pending`): no other thread is sent it."""
    with monkeypatch.context() as m:
        m.setattr(poster_module, "crashpoint", killed_at_slack_accepted("cluster:dev:down:"))
        dying = bot(store, client)
        for i in range(2):
            dying.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
        with pytest.raises(Killed):
            dying.failed(1_000_120.0, TIMED_OUT, TickReport(ok=True))


@pytest.mark.parametrize("next_tick", ["answers", "still down"])
def test_a_notice_slack_took_as_the_bot_was_killed_is_said_once_and_its_end_once(
        slack: SlackStandIn, slack_client: WebClient, store: Store, monkeypatch: Any,
        next_tick: str) -> None:
    """Slack takes the first thread's notice and the bot is killed before storing its ts
    (the post's row an intent, the notice's `pending`); the second thread's was never sent.
    The next bot looks the intent up in the thread (conversations.replies, the key in the
    message's metadata), finds it, and takes the outage as told: answering, the first thread
    hears once that it is over (the second, never told, nothing) and the notice is posted
    nowhere again; still down, the second thread gets the notice, the first nothing twice,
    and both hear the end once. Before, the intent did not count: the notice was dropped,
    and the thread that had it never heard the outage ended."""
    first, second = open_threads(store, slack_client, 2)
    killed_as_slack_takes_the_notice(store, slack_client, monkeypatch)
    assert (said(slack, first, NOTICE), said(slack, second, NOTICE)) == (1, 0)
    restarted = bot(store, slack_client)
    if next_tick == "still down":
        for i in range(4):
            restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                             TickReport(ok=True))
    restarted.ok(1_004_000.0, TickReport(ok=True))
    restarted.ok(1_004_060.0, TickReport(ok=True))
    bot(store, slack_client).ok(1_004_120.0, TickReport(ok=True))  # and another restart
    told_second = 1 if next_tick == "still down" else 0
    assert (said(slack, first, NOTICE), said(slack, second, NOTICE)) == (1, told_second)
    assert (said(slack, first, BACK), said(slack, second, BACK)) == (1, told_second)
    assert slack.calls("conversations.replies")  # the intent was looked up, not sent again


@pytest.mark.parametrize("lookup", ["finds it", "fails"])
def test_a_notice_whose_answer_was_lost_is_followed_by_its_end_once(
        slack: SlackStandIn, slack_client: WebClient, store: Store, lookup: str) -> None:
    """Slack posts the notice and answers 503, and the lookup that would find it fails: its
    publish fails, and the notice may be in the thread. The cluster answers at the next
    tick: the bot looks it up again; found (or the lookup failing again: it may be there),
    the thread hears once that the outage is over, and the notice is not posted twice.
    Before, the notice was dropped and the thread never heard the outage ended."""
    [root] = open_threads(store, slack_client, 1)
    health = bot(store, slack_client)
    for i in range(2):
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    slack.fail_next("chat.postMessage", status=503, after_processing=True)
    slack.fail_next("conversations.replies", status=403)
    health.failed(1_000_120.0, TIMED_OUT, TickReport(ok=True))
    assert said(slack, root, NOTICE) == 1
    assert present(store.incidents.get("cluster:dev:down:1000000")).state == "pending"  # not posted
    if lookup == "fails":
        slack.fail_next("conversations.replies", status=403)
    health.ok(1_000_180.0, TickReport(ok=True))
    health.ok(1_000_240.0, TickReport(ok=True))
    assert (said(slack, root, NOTICE), said(slack, root, BACK)) == (1, 1)


PRIVATE = "G0RUNS"  # a private channel the bot is later removed from


@pytest.mark.parametrize("channel", ["still refuses", "the bot is back in it"])
def test_a_thread_whose_channel_refused_the_notice_hears_nothing_of_the_outage_ending(
        slack: SlackStandIn, slack_client: WebClient, store: Store, channel: str) -> None:
    """The first run's thread is in a private channel the bot was removed from: Slack refuses
    its outage notice (not_in_channel, for good: no retry helps), the second thread gets it.
    The cluster answers: the second thread hears once that the outage is over; the first,
    which never heard of the outage, hears nothing of its end, whether the bot is still out
    of its channel or was invited back meanwhile; the note is recorded said, not tried again
    at every tick. Before, the first thread was sent the "answers again" note too: posted
    there once the bot was back (an outage's end with no outage), refused at every tick while
    it was not."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    slack.outside.add(PRIVATE)
    health = bot(store, slack_client)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    assert (said_in(slack, PRIVATE, first, NOTICE), said(slack, second, NOTICE)) == (0, 1)
    if channel == "the bot is back in it":
        slack.outside.discard(PRIVATE)
    for i in range(3):
        health.ok(1_000_180.0 + 60 * i, TickReport(ok=True))
    bot(store, slack_client).ok(1_000_360.0, TickReport(ok=True))  # and a restart
    assert (said_in(slack, PRIVATE, first, BACK), said(slack, second, BACK)) == (0, 1)
    assert said_in(slack, PRIVATE, first, NOTICE) == 0  # an outage over is not announced
    tried = [r for r in slack.calls("chat.postMessage")
             if r.params.get("channel") == PRIVATE and str(r.params.get("text")).startswith(BACK)]
    assert tried == []  # not sent there at all
    assert present(store.incidents.get("cluster:dev:back:1000000")).state == "posted"


def said_in(slack: SlackStandIn, channel: str, root: str, start: str) -> int:
    """How many messages of the thread `root` in `channel` start with `start`."""
    return sum(1 for m in slack.replies(channel, root) if str(m.get("text")).startswith(start))


# Slack refuses the bot from now on, in PRIVATE (`refused` "the bot is out of its channel")
# or wherever it needs the scope its token lost; `accept` ends it (support.e2e)
refuse = partial(refuse_in, channel=PRIVATE)
accept = partial(accept_in, channel=PRIVATE)


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the history scope is missing"])
def test_a_notice_left_by_a_killed_bot_where_lookups_are_refused_has_its_end_tried_once(
        slack: SlackStandIn, slack_client: WebClient, store: Store, caplog: Any,
        monkeypatch: Any, refused: str) -> None:
    """Slack takes the first thread's notice (a private channel) and the bot is killed before
    storing its ts; then Slack refuses every lookup there: the bot was removed from the
    channel (its posts refused too: not_in_channel), or its token lacks groups:history (posts
    still go). The thread may have the notice, so the "answers again" note is tried there
    once, when the cluster answers, and the notice's intent is dropped (logged); the second
    thread, told while the cluster stayed down, hears the end once, and the end is recorded
    posted. Before, the refused lookup counted as "may have it" at every tick: the note was
    sent to the channel that refuses it at each tick and its end was never fully posted."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    killed_as_slack_takes_the_notice(store, slack_client, monkeypatch)
    assert said_in(slack, PRIVATE, first, NOTICE) == 1
    refuse(slack, refused, "groups:history")
    restarted = bot(store, slack_client)
    for i in range(2):
        restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                         TickReport(ok=True))
    assert said(slack, second, NOTICE) == 1
    caplog.set_level(logging.WARNING, logger="bot.services.watch_events")
    for i in range(4):
        restarted.ok(1_004_000.0 + 60 * i, TickReport(ok=True))
    bot(store, slack_client).ok(1_004_300.0, TickReport(ok=True))  # and a restart
    tried = [r for r in slack.calls("chat.postMessage")
             if r.params.get("channel") == PRIVATE and str(r.params.get("text")).startswith(BACK)]
    assert len(tried) == 1
    assert said(slack, second, BACK) == 1
    assert said_in(slack, PRIVATE, first, BACK) == (
        0 if refused == "the bot is out of its channel" else 1)
    assert said_in(slack, PRIVATE, first, NOTICE) == 1  # not posted twice
    assert present(store.incidents.get("cluster:dev:back:1000000")).state == "posted"
    dropped = [r.getMessage() for r in caplog.records
               if "its lookup was refused" in r.getMessage()]
    assert len(dropped) == 1 and "its intent dropped" in dropped[0]


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the history scope is missing"])
def test_a_notice_whose_lookup_slack_refuses_is_tried_there_less_and_less_while_down(
        slack: SlackStandIn, slack_client: WebClient, store: Store, caplog: Any,
        monkeypatch: Any, refused: str) -> None:
    """Slack takes the first thread's notice (a private channel) and the bot is killed before
    storing its ts; then Slack refuses every lookup there, and the cluster stays down. The
    notice may be in that thread, so it is not sent again: its lookup is tried at the first
    failed tick, then after 1, 2, 4, 8 and 16 ticks skipped (refused each time, one warning
    at the first, the tries after it at debug; a skipped tick calls Slack for nothing and
    warns of nothing). Once the lookups answer again (the bot back in the channel, the scope
    granted), the next try finds the notice: it is recorded posted and not tried again, one
    warning saying so; the cluster answers and both threads hear the end once. Before, the
    lookup was made, refused and warned of at every failed tick."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    killed_as_slack_takes_the_notice(store, slack_client, monkeypatch)
    refuse(slack, refused, "groups:history")
    caplog.set_level(logging.DEBUG)
    restarted = bot(store, slack_client)
    tried_at, warned_at = [], []

    def tick(i: int) -> None:
        before = len(lookups_in(slack, PRIVATE))
        caplog.clear()
        restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                         TickReport(ok=True))
        if len(lookups_in(slack, PRIVATE)) > before:
            tried_at.append(i)
        if any(r.levelno >= logging.WARNING and "cluster:dev:down:" in r.getMessage()
               for r in caplog.records):
            warned_at.append(i)
            told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                    and r.name == "bot.services.threads"]
            assert len(told) == 1 and ("Slack refused to look it up" if i == 0 else
                                       f"is posted in {PRIVATE}") in told[0], told

    for i in range(36):
        tick(i)
    assert tried_at == [0, 2, 5, 10, 19]  # then every 17th tick: the next at 36
    assert warned_at == [0]  # the series' first try
    assert said(slack, second, NOTICE) == 1
    assert present(store.incidents.get("cluster:dev:down:1000000")).state == "partly_posted"
    accept(slack, refused, "groups:history")
    for i in range(36, 40):
        tick(i)
    assert tried_at == [0, 2, 5, 10, 19, 36]  # found there at 36: not looked up again
    assert warned_at == [0, 36]  # and the series' end
    assert present(store.slack_posts.get("cluster:dev:down:1000000:chain:1")).posted
    assert present(store.incidents.get("cluster:dev:down:1000000")).state == "posted"
    for i in range(3):
        restarted.ok(1_006_000.0 + 60 * i, TickReport(ok=True))
    assert (said_in(slack, PRIVATE, first, NOTICE), said(slack, second, NOTICE)) == (1, 1)
    assert (said_in(slack, PRIVATE, first, BACK), said(slack, second, BACK)) == (1, 1)
    assert present(store.incidents.get("cluster:dev:back:1000000")).state == "posted"


def lookups_in(slack: SlackStandIn, channel: str) -> list[Any]:
    """The conversations.replies calls made in `channel` so far."""
    return [r for r in slack.calls("conversations.replies") if r.params.get("channel") == channel]


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the chat:write scope is missing"])
def test_a_notice_slack_refuses_to_post_is_tried_there_less_and_less_while_down(
        slack: SlackStandIn, slack_client: WebClient, store: Store, caplog: Any,
        refused: str) -> None:
    """The cluster stays down and Slack refuses the outage notice's chat.postMessage in the
    first thread (a private channel the bot was removed from: not_in_channel), or in every
    thread (the token lost chat:write: missing_scope). Asking again at the next tick will not
    change that: the refused thread is tried at the failed tick that decides the notice, then
    after 1, 2, 4, 8 and 16 ticks skipped (a skipped tick calls Slack for nothing and warns
    of nothing), one warning from the threads at the first try of the series (the tries
    after it at debug). Once Slack takes it (the bot back in the channel, the scope
    granted), the next try posts it: once, and never again, and one warning says so; the
    cluster answers and each thread hears the end once. Before, the post was sent, refused
    and warned of at every failed tick."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    refuse(slack, refused)
    caplog.set_level(logging.DEBUG)
    health = bot(store, slack_client)
    tried_at: list[int] = []
    warned_at: list[int] = []

    def tick(i: int) -> None:
        before = len(notice_posts_in(slack, PRIVATE))
        caplog.clear()
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
        if len(notice_posts_in(slack, PRIVATE)) > before:
            tried_at.append(i)
            assert len(notice_posts_in(slack, PRIVATE)) == before + 1
        told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and r.name == "bot.services.threads"
                and "cluster:dev:down:1000000:chain:1" in r.getMessage()]
        if any(r.levelno >= logging.WARNING and "cluster:dev:down:" in r.getMessage()
               for r in caplog.records):
            warned_at.append(i)
            assert len(told) == 1, told
            assert ("Slack refused the notice" if i == 2 else
                    f"is posted in {PRIVATE} (thread {first}), after 5 failed tries") \
                in told[0], told

    for i in range(25):  # the 3rd failed tick (2) decides the notice
        tick(i)
    assert tried_at == [2, 4, 7, 12, 21]  # then every 17th tick: the next at 38
    assert warned_at == [2]  # the series' first try
    assert said_in(slack, PRIVATE, first, NOTICE) == 0
    assert said(slack, second, NOTICE) == (1 if refused == "the bot is out of its channel"
                                           else 0)
    accept(slack, refused)
    for i in range(25, 42):
        tick(i)
    assert tried_at == [2, 4, 7, 12, 21, 38]  # posted at 38: not tried again
    assert warned_at == [2, 38]  # and the series' end
    assert (said_in(slack, PRIVATE, first, NOTICE), said(slack, second, NOTICE)) == (1, 1)
    assert len(notice_posts_in(slack, CHANNEL)) == (
        1 if refused == "the bot is out of its channel" else 6)  # its own backoff
    assert present(store.incidents.get("cluster:dev:down:1000000")).state == "posted"
    for i in range(3):
        health.ok(1_003_000.0 + 60 * i, TickReport(ok=True))
    assert (said_in(slack, PRIVATE, first, BACK), said(slack, second, BACK)) == (1, 1)
    assert (said_in(slack, PRIVATE, first, NOTICE), said(slack, second, NOTICE)) == (1, 1)


def notice_posts_in(slack: SlackStandIn, channel: str) -> list[Any]:
    """The chat.postMessage calls of the outage notice made in `channel` so far (refused or
    not)."""
    return [r for r in slack.calls("chat.postMessage") if r.params.get("channel") == channel
            and str(r.params.get("text")).startswith(NOTICE)]


def warnings_of_the_try(caplog: Any) -> list[str]:
    """The warnings logged since `caplog` was cleared, but the watcher's "tick failed"."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
            and "tick failed" not in r.getMessage()]


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the chat:write scope is missing"])
def test_a_refused_try_of_the_notice_is_one_warning_per_thread_naming_run_channel_error(
        slack: SlackStandIn, slack_client: WebClient, store: Store, caplog: Any,
        refused: str) -> None:
    """Slack refuses the outage notice in the first thread (the bot out of its private
    channel: not_in_channel) or in both (no chat:write: missing_scope). The first refused
    try in a thread is one warning, from the threads, naming the run (chain and job name),
    the channel and Slack's error; the tries after it in the same series are debug, as is
    the outbox's "publishing … failed" / "reached some threads only", and a tick whose
    threads were skipped warns of nothing. Before, each refused try was warned of twice (the
    threads' and the outbox's)."""
    threads_in(store, slack_client, PRIVATE, CHANNEL)
    if refused == "the bot is out of its channel":
        slack.outside.add(PRIVATE)
        expected = [(PRIVATE, "chain 1 (mix)", "not_in_channel")]
    else:
        slack.scopes.discard("chat:write")
        expected = [(PRIVATE, "chain 1 (mix)", "missing_scope"),
                    (CHANNEL, "chain 2 (mix)", "missing_scope")]
    caplog.set_level(logging.DEBUG)
    health = bot(store, slack_client)
    warned: dict[int, list[str]] = {}
    for i in range(5):
        caplog.clear()
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
        if warnings_of_the_try(caplog):
            warned[i] = warnings_of_the_try(caplog)
    assert sorted(warned) == [2]  # the notice's tries: at the 3rd failed tick, then 1 skipped
    for said_then in warned.values():
        assert len(said_then) == len(expected), said_then
        for text, (channel, run, error) in zip(said_then, expected, strict=True):
            assert text.startswith(f"{run}: Slack refused the notice") and channel in text \
                and error in text, text
    published = [r.getMessage() for r in caplog.records if r.name == "bot.services.watch.outbox"]
    assert published and all(r.levelno == logging.DEBUG for r in caplog.records
                             if r.name == "bot.services.watch.outbox")


def thread_texts(slack: SlackStandIn, channel: str, root: str) -> list[str]:
    """The thread `root`'s replies as they read: NOTICE, BACK (of the outage since
    1_000_000) or their text."""
    return [next((w for w in (NOTICE, BACK) if str(m.get("text")).startswith(w)),
                 str(m.get("text"))) for m in slack.replies(channel, root)]


def back_posts_in(slack: SlackStandIn, channel: str) -> list[Any]:
    """The chat.postMessage calls of the "answers again" note made in `channel` so far."""
    return [r for r in slack.calls("chat.postMessage") if r.params.get("channel") == channel
            and str(r.params.get("text")).startswith(BACK)]


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the chat:write scope is missing"])
def test_an_answers_again_note_slack_refuses_is_tried_less_and_less_then_posted_once(
        slack: SlackStandIn, slack_client: WebClient, store: Store, caplog: Any,
        refused: str) -> None:
    """Both threads got the outage notice; then the bot is removed from the first thread's
    private channel (not_in_channel) or the token loses chat:write (every thread refuses),
    and the cluster answers. The "answers again" note is tried there at the tick the cluster
    answers, then after 1, 2, 4 and 8 ticks skipped (one warning at the series' first try
    naming the run, the channel and Slack's error, the tries after it at debug; a skipped
    tick calls Slack for nothing); Slack accepts again, and the next try posts it: once,
    never tried after, one warning saying so, the thread reading notice then end. Before, it
    was sent, refused and warned of (twice) at every tick."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    health = bot(store, slack_client)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    refuse(slack, refused)
    caplog.set_level(logging.DEBUG)
    tried_at: list[int] = []
    warned_at: list[int] = []
    warned: list[list[str]] = []
    for i in range(26):
        if i == 12:
            accept(slack, refused)
        before = len(back_posts_in(slack, PRIVATE))
        caplog.clear()
        health.ok(1_000_180.0 + 60 * i, TickReport(ok=True))
        if len(back_posts_in(slack, PRIVATE)) > before:
            tried_at.append(i)
            assert len(back_posts_in(slack, PRIVATE)) == before + 1
        if warnings_of_the_try(caplog):
            warned_at.append(i)
            warned.append(warnings_of_the_try(caplog))
    assert tried_at == [0, 2, 5, 10, 19]  # Slack accepts from 12 on: posted at 19, then never
    assert warned_at == [0, 19]  # the series' first try, and its end
    for said_then in warned:  # one per refused thread, the first thread's naming it all
        assert len(said_then) == (1 if refused == "the bot is out of its channel" else 2)
    said_first, said_end = warned[0][0], warned[1][0]
    assert said_first.startswith("chain 1 (mix): Slack refused the 'answers again' note")
    assert PRIVATE in said_first and ("not_in_channel" if refused == "the bot is out "
                                      "of its channel" else "missing_scope") in said_first
    assert said_end.startswith("chain 1 (mix): the 'answers again' note") and \
        f"is posted in {PRIVATE} (thread {first}), after 4 failed tries" in said_end
    assert thread_texts(slack, PRIVATE, first) == [NOTICE, BACK]
    assert thread_texts(slack, CHANNEL, second) == [NOTICE, BACK]
    assert len(back_posts_in(slack, CHANNEL)) == (
        1 if refused == "the bot is out of its channel" else 5)  # its own backoff
    assert present(store.incidents.get("cluster:dev:back:1000000")).state == "posted"


def test_a_new_outage_is_told_in_a_thread_only_after_the_refused_end_of_the_last(
        slack: SlackStandIn, slack_client: WebClient, store: Store) -> None:
    """The first thread's "answers again" note is refused (the bot out of its private
    channel) and backs off; the cluster goes down again meanwhile. The second thread hears
    the new outage; the first gets no new notice while the last outage's end is refused
    there, and once the bot is back in the channel, it gets that end first, then the new
    notice: each once, in order. Without the wait, the new notice could come first and the
    old end after it, read as the new outage's."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    health = bot(store, slack_client)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    slack.outside.add(PRIVATE)
    health.ok(1_000_180.0, TickReport(ok=True))  # the end refused in the first thread
    for i in range(4):  # a new outage from 1_000_240: its notice at the 3rd failed tick
        health.failed(1_000_240.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    *said, again = thread_texts(slack, CHANNEL, second)
    assert said == [NOTICE, BACK]
    assert again.startswith("cluster dev unreachable for 3 ticks (since 1970-01-12 13:50:40")
    assert thread_texts(slack, PRIVATE, first) == [NOTICE]
    slack.outside.discard(PRIVATE)
    for i in range(4, 30):
        health.failed(1_000_240.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    assert thread_texts(slack, PRIVATE, first) == [NOTICE, BACK, again]
    assert len([r for r in slack.calls("chat.postMessage") if r.params.get("channel") == PRIVATE
                and r.params.get("text") == again]) == 1  # not tried before the end there
    for i in range(3):
        health.ok(1_010_000.0 + 60 * i, TickReport(ok=True))
    ends = [t for t in thread_texts(slack, CHANNEL, second)[3:]
            if t.startswith("cluster dev answers again (unreachable since 1970-01-12 13:50:40")]
    assert len(ends) == 1
    assert thread_texts(slack, PRIVATE, first) == [NOTICE, BACK, again, ends[0]]
    assert thread_texts(slack, CHANNEL, second) == [NOTICE, BACK, again, ends[0]]


@pytest.mark.parametrize("refused", ["the bot is out of its channel",
                                     "the chat:write scope is missing"])
def test_a_notice_refused_until_its_outage_ended_is_never_posted_after_the_end(
        slack: SlackStandIn, slack_client: WebClient, store: Store, refused: str) -> None:
    """The first thread's notice is refused (the bot out of its private channel), or every
    thread's (chat:write missing), and backs off through several tries; the cluster answers
    before Slack takes it: the second thread, if told, hears the end, a thread never told
    nothing. Slack accepts again, ticks go on (a failed tick or two, short of a new notice;
    a restart): the obsolete notice is dropped, never sent after the end, and nothing of that
    outage reaches a thread that was not told; a new outage is told with its own notice,
    dated from its start. Decided so: a notice after its outage's end would read as a new
    outage, or as one going on."""
    first, second = threads_in(store, slack_client, PRIVATE, CHANNEL)
    refuse(slack, refused)
    health = bot(store, slack_client)
    for i in range(12):  # the notice tried in the first thread at ticks 2, 4, 7
        health.failed(1_000_000.0 + 60 * i, TIMED_OUT, TickReport(ok=True))
    assert len(notice_posts_in(slack, PRIVATE)) == 3
    health.ok(1_000_720.0, TickReport(ok=True))  # while the first thread's try is skipped
    ended_at = len(slack.calls("chat.postMessage"))
    accept(slack, refused)
    now = 1_000_780.0
    for kind in ["ok", "failed", "failed", "ok", "restart", "ok", "failed", "ok"] * 3:
        if kind == "restart":
            health = bot(store, slack_client)
        elif kind == "ok":
            health.ok(now, TickReport(ok=True))
        else:
            health.failed(now, TIMED_OUT, TickReport(ok=True))
        now += 60
    assert thread_texts(slack, PRIVATE, first) == []
    told = refused == "the bot is out of its channel"
    assert thread_texts(slack, CHANNEL, second) == ([NOTICE, BACK] if told else [])
    assert slack.calls("chat.postMessage")[ended_at:] == []  # not tried anywhere after
    back = store.incidents.get("cluster:dev:back:1000000")
    assert (back.state if back else None) == ("posted" if told else None)
    for i in range(3):  # a new outage: its own notice, dated from its start, not the old one
        health.failed(now + 60 * i, TIMED_OUT, TickReport(ok=True))
    [new] = thread_texts(slack, PRIVATE, first)
    assert new.startswith("cluster dev unreachable for 3 ticks (since 1970-01-12 14:23:40")
    assert now == 1_002_220.0  # 14:23:40 UTC
    assert thread_texts(slack, CHANNEL, second) == ([NOTICE, BACK, new] if told else [new])
