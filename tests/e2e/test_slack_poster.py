"""SlackPoster against the stand-in: one thread per chain, no loss and no duplicates under
429 / 5xx / restarts, clear errors."""

from __future__ import annotations

import pytest
from conftest import CHANNEL
from slack_standin import SlackStandIn

from bot.slack.poster import SlackPoster, SlackPostError
from bot.slack.retry import make_client


def section(text: str) -> list[dict]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def open_chain(store) -> int:
    return store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0).id


def test_one_root_replies_and_charts_in_one_thread(slack: SlackStandIn, poster, store):
    chain = open_chain(store)
    root_ts = poster.post_root(chain, CHANNEL, section("mix: job 88016 RUNNING"), "mix running")
    poster.post_reply(chain, "warn:88016:leak", section("RSS is growing"), "leak warning")
    poster.upload_chart(chain, "chart:88016:rss", b"\x89PNG fake", "rss.png", "Host RSS, 88016")
    poster.post_reply(chain, "incident:88016", section("host OOM"), "host OOM")
    poster.update_root(chain, section("mix: job 88016 FAILED"), "mix failed")
    # The same calls again (a second watcher tick) send nothing new.
    assert poster.post_root(chain, CHANNEL, section("x"), "x") == root_ts
    poster.post_reply(chain, "warn:88016:leak", section("RSS is growing"), "leak warning")
    poster.upload_chart(chain, "chart:88016:rss", b"\x89PNG fake", "rss.png", "Host RSS, 88016")

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
    poster.upload_chart(chain, "chart:1", b"png", "p.png", "Progress")
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
    poster.upload_chart(chain, "chart:rss", b"png-bytes", "rss.png", "RSS")
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
    first = SlackPoster(slack_client, store, sleep=fake_sleep)
    root_ts = first.post_root(chain, CHANNEL, section("root"), "root")

    def crash(*args, **kwargs):
        raise RuntimeError("process killed")

    with monkeypatch.context() as m:
        m.setattr(store.slack_posts, "record_posted", crash)
        with pytest.raises(RuntimeError):
            first.post_reply(chain, "incident:88154", section("NCCL timeout"), "NCCL timeout")
    assert store.slack_posts.get("incident:88154").state == "intent"

    restarted = SlackPoster(slack_client, store, sleep=fake_sleep)
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
    client = make_client("xoxb-wrong", base_url=slack.api_url, sleep=lambda s: None)
    poster = SlackPoster(client, store, sleep=lambda s: None)
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
