"""SlackPoster against the stand-in: one thread per chain, no loss and no duplicates under
429 / 5xx / restarts, clear errors."""

from __future__ import annotations

import socket
from http.client import RemoteDisconnected
from urllib.error import HTTPError, URLError

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse
from slack_standin import SlackStandIn
from support.e2e import CHANNEL, NOW

from bot.core import slack_bounds
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.slack.poster import (
    SlackLookupRefused,
    SlackPoster,
    SlackPostError,
    call_fate,
    root_key,
)
from bot.slack.retry import ConnectionDropHandler, make_client


def section(text: str) -> list[dict]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def open_chain(store) -> int:
    return store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0).id


def test_one_root_replies_and_charts_in_one_thread(slack: SlackStandIn, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("mix: job 88016 RUNNING"), "mix running")
    poster.post_reply(chain, "warn:88016:leak", section("RSS is growing"), "leak warning")
    poster.upload_file(chain, "chart:88016:rss", b"\x89PNG fake", "rss.png", "Host RSS, 88016")
    poster.post_reply(chain, "incident:88016", section("host OOM"), "host OOM")
    poster.update_root(chain, section("mix: job 88016 FAILED"), "mix failed")
    # The same calls again (a second watcher tick) send nothing new.
    assert poster.post_root(chain, CHANNEL, section("x"), "x") == root_ts
    poster.post_reply(chain, "warn:88016:leak", section("RSS is growing"), "leak warning")
    poster.upload_file(chain, "chart:88016:rss", b"\x89PNG fake", "rss.png", "Host RSS, 88016")

    roots = slack.root_messages(CHANNEL)
    assert [m["ts"] for m in roots] == [root_ts]
    assert roots[0]["text"] == "mix failed"  # updated in place, not re-posted
    replies = slack.replies(CHANNEL, root_ts)
    assert [r.get("text") for r in replies if "files" not in r] == ["leak warning", "host OOM"]
    assert [f["title"] for r in replies for f in r.get("files", [])] == ["Host RSS, 88016"]
    assert len(slack.ok_calls("chat.postMessage")) == 3
    assert len(slack.ok_calls("files.completeUploadExternal")) == 1
    complete = slack.ok_calls("files.completeUploadExternal")[0].params
    assert complete["channel_id"] == CHANNEL and complete["thread_ts"] == root_ts
    for call in slack.calls("chat.postMessage")[1:]:
        assert call.params["thread_ts"] == root_ts
    assert store.chains.get(chain).thread_ts == root_ts


def test_rate_limit_waits_retry_after_and_posts_once(slack, poster, store, fake_sleep):
    chain = open_chain(store)
    slack.fail_next("chat.postMessage", status=429, count=2, retry_after=7)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.fail_next("files.getUploadURLExternal", status=429, retry_after=3)
    slack.fail_next("chat.update", status=429, retry_after=2)
    poster.upload_file(chain, "chart:1", b"png", "p.png", "Progress")
    poster.update_root(chain, section("root v2"), "root v2")
    assert fake_sleep.waits == [7, 7, 3, 2]
    assert [m["ts"] for m in slack.root_messages(CHANNEL)] == [root_ts]
    assert slack.root_messages(CHANNEL)[0]["text"] == "root v2"
    assert len(slack.replies(CHANNEL, root_ts)) == 1


def test_server_errors_lose_nothing_and_duplicate_nothing(slack, poster, store):
    chain = open_chain(store)
    slack.fail_next("chat.postMessage", status=500, count=2)  # rejected before posting
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    # Slack posted the reply but answered 503: a blind retry would post it twice.
    slack.fail_next("chat.postMessage", status=503, after_processing=True)
    poster.post_reply(chain, "incident:1", section("incident"), "incident")
    slack.fail_next("files.completeUploadExternal", status=500)
    slack.fail_next("upload", status=500)
    poster.upload_file(chain, "chart:rss", b"png-bytes", "rss.png", "RSS")
    slack.fail_next("chat.update", status=502)
    poster.update_root(chain, section("root v2"), "root v2")

    assert len(slack.root_messages(CHANNEL)) == 1
    replies = slack.replies(CHANNEL, root_ts)
    assert [r["text"] for r in replies if "files" not in r] == ["incident"]
    assert sum(len(r.get("files", [])) for r in replies) == 1
    assert slack.root_messages(CHANNEL)[0]["text"] == "root v2"
    assert store.slack_posts.get("incident:1").ts == replies[0]["ts"]


def test_restart_after_crash_between_post_and_record_does_not_post_twice(
    slack, slack_client, store, fake_sleep, monkeypatch
):
    chain = open_chain(store)
    first = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep)
    root_ts = first.post_root(chain, CHANNEL, section("root"), "root")

    def crash(*args, **kwargs):
        raise RuntimeError("process killed")

    with monkeypatch.context() as m:
        m.setattr(store.slack_posts, "record_posted", crash)
        with pytest.raises(RuntimeError):
            first.post_reply(chain, "incident:88154", section("NCCL timeout"), "NCCL timeout")
    assert store.slack_posts.get("incident:88154").state == "intent"

    restarted = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep)
    ts = restarted.post_reply(chain, "incident:88154", section("NCCL timeout"), "NCCL timeout")
    replies = slack.replies(CHANNEL, root_ts)
    assert [r["ts"] for r in replies] == [ts]
    assert store.slack_posts.get("incident:88154").posted


def test_restart_with_intent_that_never_reached_slack_posts_it(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    store.slack_posts.record_intent("resolution:1", channel=CHANNEL, kind="reply",
                                    chain_id=chain, thread_ts=root_ts)
    poster.post_reply(chain, "resolution:1", section("resumed"), "resumed")
    assert [r["text"] for r in slack.replies(CHANNEL, root_ts)] == ["resumed"]


def test_bad_token_error_names_the_fix(slack, store):
    client = make_client("xoxb-wrong", base_url=slack.api_url, sleep=lambda s: None,
                         timeout=10)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None)
    with pytest.raises(SlackPostError) as err:
        poster.post_root(open_chain(store), CHANNEL, section("root"), "root")
    assert err.value.error == "invalid_auth"
    assert "SLACK_BOT_TOKEN" in str(err.value)
    assert slack.root_messages(CHANNEL) == []


def test_rejected_blocks_surface_slack_error(slack, poster, store):
    chain = open_chain(store)
    bad = [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]
    with pytest.raises(SlackPostError, match="invalid_blocks"):
        poster.post_root(chain, CHANNEL, bad, "root")


def test_reply_before_root_is_refused(poster, store):
    with pytest.raises(SlackPostError, match="post_root first"):
        poster.post_reply(open_chain(store), "k", section("x"), "x")


# --- dropped connections: the request reached Slack, the answer did not come back ------------

def thread_messages(slack: SlackStandIn, root_ts: str) -> list[dict]:
    return [r for r in slack.replies(CHANNEL, root_ts) if "files" not in r]


def thread_files(slack: SlackStandIn, root_ts: str) -> list[str]:
    return [f["id"] for r in slack.replies(CHANNEL, root_ts) for f in r.get("files", [])]


def test_a_post_whose_answer_is_lost_is_posted_once(slack, poster, store):
    chain = open_chain(store)
    slack.drop_next("chat.postMessage")  # Slack posts the root; the answer is lost
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("chat.postMessage", count=3)  # as many as the client could send
    ts = poster.post_reply(chain, "incident:88154", section("NCCL timeout"), "NCCL timeout")

    assert [m["ts"] for m in slack.root_messages(CHANNEL)] == [root_ts]
    assert [m["ts"] for m in thread_messages(slack, root_ts)] == [ts]
    assert len(slack.calls("chat.postMessage")) == 2  # never re-sent: reconciled by its key
    assert store.slack_posts.get("incident:88154").ts == ts
    assert store.chains.get(chain).thread_ts == root_ts


def test_a_post_lost_before_slack_performed_it_is_sent_again(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("chat.postMessage", processed=False)
    ts = poster.post_reply(chain, "incident:1", section("incident"), "incident")
    assert [m["ts"] for m in thread_messages(slack, root_ts)] == [ts]
    assert [c.status for c in slack.calls("chat.postMessage")] == [200, 0, 200]
    assert len(slack.calls("conversations.replies")) == 1  # looked it up before re-sending


def test_a_post_of_unknown_fate_is_not_resent_while_it_cannot_be_looked_up(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("chat.postMessage")
    slack.fail_next("conversations.replies", status=403)  # e.g. the history scope is missing
    with pytest.raises(SlackPostError, match="not sent again"):
        poster.post_reply(chain, "incident:1", section("incident"), "incident")
    assert len(thread_messages(slack, root_ts)) == 1
    assert store.slack_posts.get("incident:1").state == "intent"
    # The next attempt (a later tick, a restart) reconciles first and finds it.
    ts = poster.post_reply(chain, "incident:1", section("incident"), "incident")
    assert [m["ts"] for m in thread_messages(slack, root_ts)] == [ts]
    assert len(slack.calls("chat.postMessage")) == 2


def long_thread(slack: SlackStandIn, root_ts: str, replies: int) -> None:
    """`replies` messages in the thread (log lines posted by others), straight into the
    stand-in."""
    for i in range(replies):
        with slack._lock:
            assert slack.handle("chat.postMessage", {"channel": CHANNEL, "thread_ts": root_ts,
                                                     "text": f"log line {i}"})["ok"]


def keyed(slack: SlackStandIn, root_ts: str, key: str) -> list[str]:
    """The ts of the thread's messages posted under `key`."""
    return [m["ts"] for m in slack.replies(CHANNEL, root_ts)
            if ((m.get("metadata") or {}).get("event_payload") or {}).get("key") == key]


def test_a_lost_post_past_the_threads_first_page_is_found_not_posted_twice(
        slack, poster, store):
    """A thread of 251 messages, then a post whose answer is lost: the lookup reads the thread
    page by page (200 messages a page, the next by Slack's cursor) and finds it on the second.
    Before, it read the first 200 only, did not find it and posted it again."""
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    long_thread(slack, root_ts, 250)
    slack.drop_next("chat.postMessage")  # Slack posts it; the answer is lost
    ts = poster.post_reply(chain, "incident:1", section("NCCL timeout"), "NCCL timeout")

    assert keyed(slack, root_ts, "incident:1") == [ts]
    assert len(slack.calls("chat.postMessage")) == 2  # the root, the lost one: never re-sent
    pages = slack.calls("conversations.replies")
    assert [(c.params.get("limit"), bool(c.params.get("cursor"))) for c in pages] == \
        [("200", False), ("200", True)]
    assert pages[0].response["has_more"] is True
    assert pages[1].params["cursor"] == pages[0].response["response_metadata"]["next_cursor"]
    assert store.slack_posts.get("incident:1").ts == ts


def test_a_thread_not_read_to_its_end_before_the_deadline_sends_nothing_again(
        slack, slack_client, store, fake_sleep, monkeypatch):
    """Each page of the lookup takes 200 s: its third would start past the post's 300 s
    deadline, so the thread is not read to its end; what was not read may hold the post, so
    it is not sent again (the intent stays for the next attempt)."""
    clock = [NOW]
    poster = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep,
                         clock=lambda: clock[0])
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    long_thread(slack, root_ts, 450)
    replies = slack_client.conversations_replies

    def slow(**kwargs):
        clock[0] += 200
        return replies(**kwargs)

    monkeypatch.setattr(slack_client, "conversations_replies", slow)
    slack.drop_next("chat.postMessage")
    with pytest.raises(SlackPostError, match="not to its end"):
        poster.post_reply(chain, "incident:1", section("incident"), "incident")
    assert len(keyed(slack, root_ts, "incident:1")) == 1
    assert len(slack.calls("chat.postMessage")) == 2
    assert len(slack.calls("conversations.replies")) == 2
    assert store.slack_posts.get("incident:1").state == "intent"


def test_a_thread_too_long_to_read_whole_is_a_refused_lookup(slack, poster, store,
                                                              monkeypatch):
    """A thread of more than LOOKUP_MAX_PAGES pages is never read whole: its post of unknown
    fate is not sent again, and the lookup says asking again will not tell."""
    monkeypatch.setattr(slack_bounds, "LOOKUP_MAX_PAGES", 2)
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    long_thread(slack, root_ts, 450)
    slack.drop_next("chat.postMessage")
    with pytest.raises(SlackLookupRefused, match="not read whole"):
        poster.post_reply(chain, "incident:1", section("incident"), "incident")
    assert len(keyed(slack, root_ts, "incident:1")) == 1
    assert len(slack.calls("conversations.replies")) == 2
    assert store.slack_posts.get("incident:1").state == "intent"


def busy_channel_once_the_root_is_lost(slack: SlackStandIn, slack_client, monkeypatch,
                                       chatter: int) -> None:
    """Before the first channel lookup, `chatter` messages by others follow whatever was
    posted (the lost root), straight into the stand-in."""
    history = slack_client.conversations_history

    def busy(**kwargs):
        if not slack.calls("conversations.history"):
            for i in range(chatter):
                with slack._lock:
                    assert slack.handle("chat.postMessage",
                                        {"channel": CHANNEL, "text": f"chatter {i}"})["ok"]
        return history(**kwargs)

    monkeypatch.setattr(slack_client, "conversations_history", busy)


def keyed_roots(slack: SlackStandIn, key: str) -> list[str]:
    return [m["ts"] for m in slack.root_messages(CHANNEL)
            if ((m.get("metadata") or {}).get("event_payload") or {}).get("key") == key]


def test_a_lost_root_past_the_channels_first_page_is_found_not_posted_twice(
        slack, slack_client, poster, store, monkeypatch):
    """A root whose answer is lost, then 250 messages by others in the channel: the lookup
    reads the channel newest first, page by page by Slack's cursor, and finds the root on
    the second page. Before, it read the latest 100 only and posted a second root."""
    chain = open_chain(store)
    busy_channel_once_the_root_is_lost(slack, slack_client, monkeypatch, 250)
    slack.drop_next("chat.postMessage")  # Slack posts the root; the answer is lost
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")

    assert keyed_roots(slack, root_key(chain)) == [root_ts]
    assert len(slack.calls("chat.postMessage")) == 1
    pages = slack.calls("conversations.history")
    assert [(c.params.get("limit"), bool(c.params.get("cursor"))) for c in pages] == \
        [("200", False), ("200", True)]
    assert pages[1].params["cursor"] == pages[0].response["response_metadata"]["next_cursor"]
    assert store.chains.get(chain).thread_ts == root_ts


def test_a_channel_not_read_back_to_a_lost_root_gets_no_second_root(
        slack, slack_client, poster, store, monkeypatch):
    """The same busy channel with one page the most a lookup reads: the root is not on it,
    and what was not read may hold it, so no second root is posted."""
    monkeypatch.setattr(slack_bounds, "LOOKUP_MAX_PAGES", 1)
    chain = open_chain(store)
    busy_channel_once_the_root_is_lost(slack, slack_client, monkeypatch, 250)
    slack.drop_next("chat.postMessage")
    with pytest.raises(SlackLookupRefused, match="the channel .* not read whole"):
        poster.post_root(chain, CHANNEL, section("root"), "root")
    assert len(keyed_roots(slack, root_key(chain))) == 1
    assert len(slack.calls("chat.postMessage")) == 1
    assert store.slack_posts.get(root_key(chain)).state == "intent"


def chatter_in(slack: SlackStandIn, messages: int) -> None:
    """`messages` messages by others in the channel, straight into the stand-in."""
    for i in range(messages):
        with slack._lock:
            assert slack.handle("chat.postMessage",
                                {"channel": CHANNEL, "text": f"chatter {i}"})["ok"]


def busy_channel_before(slack: SlackStandIn, at: float) -> None:
    """More messages than a lookup may read (LOOKUP_MAX_PAGES pages), all an hour and more
    before `at` on Slack's clock."""
    start = at - 3600
    slack.clock = lambda: start
    chatter_in(slack, slack_bounds.LOOKUP_MAX_PAGES * slack_bounds.LOOKUP_PAGE + 1)


def test_a_root_never_created_in_a_busy_channel_is_posted_after_one_page(
        slack, slack_client, store, fake_sleep):
    """A channel of more messages than a lookup reads, all older than the root's intent; the
    root's send is lost before Slack performed it. The lookup reads the channel only since
    the intent (less the clock-skew margin): one page, no root there, so it is posted, once.
    Before, it read the channel back to its start, past LOOKUP_MAX_PAGES pages, was refused,
    and the root was never posted (every later try reading those 50 pages again)."""
    clock = [NOW]
    poster = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep,
                         clock=lambda: clock[0])
    chain = open_chain(store)
    busy_channel_before(slack, NOW)
    slack.clock = lambda: clock[0]
    slack.drop_next("chat.postMessage", processed=False)  # lost before Slack made it
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")

    assert keyed_roots(slack, root_key(chain)) == [root_ts]
    assert [c.status for c in slack.calls("chat.postMessage")] == [0, 200]
    pages = slack.calls("conversations.history")
    assert [c.params.get("oldest") for c in pages] == \
        [f"{NOW - slack_bounds.LOOKUP_CLOCK_SKEW_S:.6f}"]
    assert store.chains.get(chain).thread_ts == root_ts


@pytest.mark.parametrize("slack_behind_s", [0.0, 240.0])
def test_a_lost_root_in_a_busy_channel_is_found_since_its_intent(
        slack, slack_client, store, fake_sleep, monkeypatch, slack_behind_s):
    """The same busy channel; Slack makes the root but its answer is lost, then others post
    more. The lookup, from the intent less the margin, finds it on its first page: also when
    this host's clock runs ahead of Slack's by less than the margin (Slack's ts of the root
    then reads older than the intent)."""
    clock = [NOW]
    poster = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep,
                         clock=lambda: clock[0])
    chain = open_chain(store)
    busy_channel_before(slack, NOW)
    slack.clock = lambda: clock[0] - slack_behind_s
    history = slack_client.conversations_history

    def after_the_root(**kwargs):  # others post once the root is made
        if not slack.calls("conversations.history"):
            chatter_in(slack, 30)
        return history(**kwargs)

    monkeypatch.setattr(slack_client, "conversations_history", after_the_root)
    slack.drop_next("chat.postMessage")  # Slack posts the root; the answer is lost
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")

    assert float(root_ts) < NOW + 1 - slack_behind_s
    assert keyed_roots(slack, root_key(chain)) == [root_ts]
    assert len(slack.calls("chat.postMessage")) == 1
    pages = slack.calls("conversations.history")
    assert [c.params.get("oldest") for c in pages] == \
        [f"{NOW - slack_bounds.LOOKUP_CLOCK_SKEW_S:.6f}"]
    assert len(pages[0].response["messages"]) == 31
    assert store.chains.get(chain).thread_ts == root_ts


def test_a_reply_lost_in_a_long_thread_is_looked_up_since_its_intent(
        slack, slack_client, store, fake_sleep, monkeypatch):
    """A thread longer than a lookup reads (LOOKUP_MAX_PAGES pages), all of it an hour and
    more before the reply's intent; the reply's send is lost before Slack performed it. The
    lookup reads the thread's replies only since the intent (less the clock-skew margin):
    one page, holding the root alone, so the reply is posted, once. Before, the thread was
    read whole, past LOOKUP_MAX_PAGES pages, the lookup refused and the reply never posted."""
    monkeypatch.setattr(slack_bounds, "LOOKUP_MAX_PAGES", 2)
    clock = [NOW]
    poster = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep,
                         clock=lambda: clock[0])
    chain = open_chain(store)
    slack.clock = lambda: NOW - 7200
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    long_thread(slack, root_ts, 2 * slack_bounds.LOOKUP_PAGE + 1)
    slack.clock = lambda: clock[0]
    slack.drop_next("chat.postMessage", processed=False)  # lost before Slack made it
    ts = poster.post_reply(chain, "incident:1", section("incident"), "incident")

    assert keyed(slack, root_ts, "incident:1") == [ts]
    pages = slack.calls("conversations.replies")
    assert [c.params.get("oldest") for c in pages] == \
        [f"{NOW - slack_bounds.LOOKUP_CLOCK_SKEW_S:.6f}"]
    assert [m["ts"] for m in pages[0].response["messages"]] == [root_ts]
    assert store.slack_posts.get("incident:1").ts == ts


def test_a_chart_whose_completion_answer_is_lost_is_shared_once(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("files.completeUploadExternal", count=3)
    file_id = poster.upload_file(chain, "chart:rss", b"png-bytes", "rss.png", "RSS")
    assert thread_files(slack, root_ts) == [file_id]
    assert len(slack.calls("files.completeUploadExternal")) == 1
    assert len(slack.calls("files.getUploadURLExternal")) == 1
    assert store.slack_posts.get("chart:rss").ts == file_id


def test_a_chart_completion_lost_unperformed_completes_the_same_file(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("files.completeUploadExternal", processed=False)
    file_id = poster.upload_file(chain, "chart:rss", b"png-bytes", "rss.png", "RSS")
    assert thread_files(slack, root_ts) == [file_id]
    # Looked up, then completed again with the same file id: never a second upload.
    assert [c.status for c in slack.calls("files.completeUploadExternal")] == [0, 200]
    assert len(slack.calls("files.getUploadURLExternal")) == 1
    assert len(slack.calls("upload")) == 1


def test_a_lost_upload_of_the_bytes_starts_a_new_upload(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("upload", processed=False)  # nothing is visible before the completion
    file_id = poster.upload_file(chain, "chart:rss", b"png-bytes", "rss.png", "RSS")
    assert thread_files(slack, root_ts) == [file_id]
    assert len(slack.ok_calls("files.completeUploadExternal")) == 1


def test_restart_after_a_completion_whose_fate_was_never_recorded(
    slack, slack_client, store, fake_sleep, monkeypatch
):
    chain = open_chain(store)
    first = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep)
    root_ts = first.post_root(chain, CHANNEL, section("root"), "root")
    with monkeypatch.context() as m:
        m.setattr(store.slack_posts, "record_posted",
                  lambda *a, **k: (_ for _ in ()).throw(RuntimeError("process killed")))
        with pytest.raises(RuntimeError):
            first.upload_file(chain, "chart:rss", b"png", "rss.png", "RSS")
    [file_id] = thread_files(slack, root_ts)
    assert store.slack_posts.get("chart:rss").state == "intent"

    restarted = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep)
    assert restarted.upload_file(chain, "chart:rss", b"png", "rss.png", "RSS") == file_id
    assert thread_files(slack, root_ts) == [file_id]
    assert len(slack.calls("files.getUploadURLExternal")) == 1


def test_an_update_whose_answer_is_lost_is_sent_again(slack, poster, store, fake_sleep):
    chain = open_chain(store)
    poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.drop_next("chat.update")  # chat.update with the same content is idempotent
    poster.update_root(chain, section("root v2"), "root v2")
    assert slack.root_messages(CHANNEL)[0]["text"] == "root v2"
    assert [c.status for c in slack.calls("chat.update")] == [0, 200]
    assert fake_sleep.waits  # the wait went through the injected sleep


@pytest.mark.parametrize("error", ["internal_error", "fatal_error"])
def test_a_post_slack_may_have_performed_before_its_error_is_posted_once(
    slack, poster, store, error
):
    # Slack answers 200 ok:false internal_error / fatal_error, and documents that "some
    # aspect of the operation" may have succeeded: here it did, so a blind retry (or a later
    # chance with the intent forgotten) would post the root or the reply twice.
    chain = open_chain(store)
    slack.fail_next("chat.postMessage", status=200, error=error, after_processing=True)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    slack.fail_next("chat.postMessage", status=200, error=error, after_processing=True)
    ts = poster.post_reply(chain, "incident:1", section("incident"), "incident")

    assert [m["ts"] for m in slack.root_messages(CHANNEL)] == [root_ts]
    assert [m["ts"] for m in thread_messages(slack, root_ts)] == [ts]
    assert len(slack.calls("chat.postMessage")) == 2  # each looked up, never re-sent
    assert store.slack_posts.get(root_key(chain)).ts == root_ts
    assert store.chains.get(chain).thread_ts == root_ts
    # the next chance (a later tick) finds both recorded: nothing is sent again
    assert poster.post_reply(chain, "incident:1", section("incident"), "incident") == ts
    assert len(slack.calls("chat.postMessage")) == 2


def api_error(status: int, error: str) -> SlackApiError:
    resp = SlackResponse(client=None, http_verb="POST", api_url="chat.postMessage", req_args={},
                         data={"ok": False, "error": error}, headers={}, status_code=status)
    return SlackApiError(error, resp)


@pytest.mark.parametrize(("exc", "fate"), [
    (RemoteDisconnected("Remote end closed connection without response"), "unknown"),
    (ConnectionResetError(104, "reset"), "unknown"),
    (TimeoutError("timed out"), "unknown"),
    (URLError(TimeoutError("timed out")), "unknown"),
    (api_error(503, "service_unavailable"), "unknown"),
    (api_error(200, "internal_error"), "unknown"),  # Slack may have performed it
    (api_error(200, "fatal_error"), "unknown"),
    (URLError(ConnectionRefusedError(111, "refused")), "not_sent"),
    (URLError(socket.gaierror(-2, "Name or service not known")), "not_sent"),
    (api_error(429, "ratelimited"), "not_sent"),
    (api_error(200, "channel_not_found"), "refused"),
    (HTTPError("https://files.slack.com/upload/v1/x", 400, "bad",
               None, None), "refused"),  # type: ignore[arg-type]  # no headers, as urllib may
], ids=lambda v: type(v).__name__ if isinstance(v, Exception) else v)
def test_what_a_failed_call_may_have_done(exc, fate):
    assert call_fate(exc) == fate


def test_a_connection_never_made_is_sent_again_without_a_lookup(store, fake_sleep):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = make_client("xoxb-t", base_url=f"http://127.0.0.1:{port}/api/", sleep=fake_sleep,
                         timeout=10)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=fake_sleep)
    chain = open_chain(store)
    with pytest.raises(SlackPostError, match="chat.postMessage failed") as err:
        poster.post_root(chain, CHANNEL, section("root"), "root")
    assert err.value.error == "URLError" and "not sent again" not in str(err.value)
    # The client re-sent each attempt twice itself: the request provably never left.
    drops = client.retry_handlers[0]
    assert isinstance(drops, ConnectionDropHandler)
    assert len(drops.waits) == 2 * poster.max_attempts
    assert store.slack_posts.get(root_key(chain)).state == "intent"


def test_a_reply_is_rewritten_in_place_once_and_only_when_posted(slack, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("root"), "root")
    ts = poster.post_reply(chain, "dev:88154:final", section("Resubmit?"), "resubmit?")
    poster.update_reply(chain, "dev:88154:final", section("⌛ expired"), "expired")
    poster.update_reply(chain, "dev:88154:final", section("⌛ expired"), "expired")  # unchanged
    poster.update_reply(chain, "never-posted", section("x"), "x")
    [update] = slack.ok_calls("chat.update")
    assert (update.params["channel"], update.params["ts"]) == (CHANNEL, ts)
    assert [r.get("text") for r in slack.replies(CHANNEL, root_ts)] == ["expired"]
