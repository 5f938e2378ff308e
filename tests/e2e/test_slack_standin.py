"""The stand-in answers like Slack's Web API: the SDK talks to it unchanged, and it rejects
what Slack rejects (so tests that pass against it do not pass by accident)."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from support.e2e import CHANNEL


def sec(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def button(text: str = "Go", value: str = "v", action_id: str = "go") -> dict:
    return {"type": "button", "text": {"type": "plain_text", "text": text}, "value": value,
            "action_id": action_id}


@pytest.fixture
def client(slack) -> WebClient:
    return WebClient(token=slack.token, base_url=slack.api_url, retry_handlers=[])


def error_of(client: WebClient, **kwargs) -> str:
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel=CHANNEL, text="t", **kwargs)
    return exc.value.response["error"]


def confirm(**over) -> dict:
    """A confirmation dialog object; `over` replaces (None: drops) its fields."""
    obj = {"title": {"type": "plain_text", "text": "t" * 100},
           "text": {"type": "plain_text", "text": "x" * 300},
           "confirm": {"type": "plain_text", "text": "c" * 30},
           "deny": {"type": "plain_text", "text": "d" * 30}, "style": "danger"}
    obj.update(over)
    return {k: v for k, v in obj.items() if v is not None}


def confirmed(**over) -> list[dict]:
    return [{"type": "actions", "elements": [button() | {"confirm": confirm(**over)}]}]


@pytest.mark.parametrize("blocks", [
    confirmed(title={"type": "plain_text", "text": "t" * 101}),
    confirmed(text={"type": "plain_text", "text": "x" * 301}),
    confirmed(text={"type": "mrkdwn", "text": "x"}),
    confirmed(confirm={"type": "plain_text", "text": "c" * 31}),
    confirmed(deny={"type": "plain_text", "text": "d" * 31}),
    confirmed(deny=None),
    confirmed(title=None),
    confirmed(style="warning"),
    confirmed(color="red"),
], ids=["title-101", "text-301", "text-mrkdwn", "confirm-31", "deny-31", "no-deny",
        "no-title", "bad-style", "unknown-field"])
def test_an_invalid_confirm_dialog_is_rejected(client, blocks):
    assert error_of(client, blocks=blocks) == "invalid_blocks"


def test_a_confirm_dialog_at_slacks_limits_is_accepted(client):
    assert client.chat_postMessage(channel=CHANNEL, text="t", blocks=confirmed())["ok"]


@pytest.mark.parametrize("blocks", [
    [sec("x")] * 51,
    [sec("x" * 3001)],
    [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
    [{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}],
    [{"type": "actions", "elements": [button("b" * 76)]}],
    [{"type": "actions", "elements": [button(value="v" * 2001)]}],
    [{"type": "actions", "elements": [button(action_id="a" * 256)]}],
    [{"type": "actions", "elements": [button(action_id=f"a{i}") for i in range(26)]}],
    [{"type": "actions", "elements": [button(), button()]}],  # duplicate action_id
    [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
    [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}],
    [{"type": "section", "block_id": "b" * 256, "text": {"type": "mrkdwn", "text": "x"}}],
    [sec("a") | {"block_id": "same"}, sec("b") | {"block_id": "same"}],
    [{"type": "sectoin", "text": {"type": "mrkdwn", "text": "x"}}],
    [{"type": "section"}],
    [{"type": "section", "text": {"type": "mrkdwn", "text": ""}}],
], ids=["51-blocks", "section-3001", "header-151", "header-mrkdwn", "button-text-76",
        "button-value-2001", "action-id-256", "26-elements", "dup-action-id", "11-fields",
        "field-2001", "block-id-256", "dup-block-id", "bad-type", "no-text", "empty-text"])
def test_invalid_blocks_are_rejected(client, blocks):
    assert error_of(client, blocks=blocks) == "invalid_blocks"


@pytest.mark.parametrize("blocks", [
    [{"type": "header", "text": {"type": "plain_text", "text": "sweep a&amp;b · job 1"}}],
    [{"type": "actions", "elements": [button("Hold &lt;x&gt;")]}],
    confirmed(title={"type": "plain_text", "text": "Cancel job 1&amp;2?"}),
], ids=["header", "button", "confirm-title"])
def test_plain_text_escaped_for_mrkdwn_is_rejected(client, blocks):
    """plain_text is shown as sent: `&amp;` in a header, a button or a dialog reads
    literally (a value escaped where it must not be)."""
    assert error_of(client, blocks=blocks) == "invalid_blocks"
    as_typed = [{"type": "header", "text": {"type": "plain_text", "text": "<!channel> a&b"}}]
    assert client.chat_postMessage(channel=CHANNEL, text="t", blocks=as_typed)["ok"]


def test_a_red_button_must_ask_first(client):
    """trainbot's danger buttons cancel a job: one without a confirm dialog is refused."""
    red = button() | {"style": "danger"}
    assert error_of(client, blocks=[{"type": "actions", "elements": [red]}]) == \
        "invalid_blocks"
    asks = red | {"confirm": confirm()}
    assert client.chat_postMessage(channel=CHANNEL, text="t", blocks=[
        {"type": "actions", "elements": [asks]}])["ok"]


def test_limits_themselves_are_accepted(client, slack):
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": "h" * 150}},
              sec("x" * 2900),
              {"type": "actions", "elements": [button("b" * 75, "v", f"a{i}")
                                               for i in range(25)]}]
    blocks += [{"type": "divider"}] * 47
    assert len(blocks) == 50
    assert client.chat_postMessage(channel=CHANNEL, text="t", blocks=blocks)["ok"]


def test_too_long_payload_is_rejected_as_slack_does(client):
    assert error_of(client, blocks=[sec("x" * 2900)] * 5) == "msg_blocks_too_long"


def test_thread_and_update_targets_must_exist(client, slack):
    assert error_of(client, thread_ts="1732871234.000100") == "thread_not_found"
    root = client.chat_postMessage(channel=CHANNEL, text="root")
    assert root["ts"].count(".") == 1 and len(root["ts"].split(".")[1]) == 6
    reply = client.chat_postMessage(channel=CHANNEL, text="r", thread_ts=root["ts"])
    # Replying to a reply is not a thread root.
    assert error_of(client, thread_ts=reply["ts"]) == "thread_not_found"
    with pytest.raises(SlackApiError) as exc:
        client.chat_update(channel=CHANNEL, ts="1.000001", text="x")
    assert exc.value.response["error"] == "message_not_found"
    assert client.chat_update(channel=CHANNEL, ts=root["ts"], text="new")["ok"]
    assert slack.root_messages(CHANNEL)[0]["text"] == "new"
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="not-a-channel", text="x")
    assert exc.value.response["error"] == "channel_not_found"


def test_auth_errors(slack):
    with pytest.raises(SlackApiError) as exc:
        WebClient(token="xoxb-nope", base_url=slack.api_url).chat_postMessage(
            channel=CHANNEL, text="x")
    assert exc.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as exc:
        WebClient(base_url=slack.api_url).auth_test()
    assert exc.value.response["error"] == "not_authed"
    assert slack.root_messages(CHANNEL) == []


def test_injected_429_and_500(client, slack):
    slack.fail_next("chat.postMessage", status=429, retry_after=30)
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel=CHANNEL, text="x")
    assert exc.value.response.status_code == 429
    assert exc.value.response.headers["Retry-After"] == "30"
    slack.fail_next("chat.postMessage", status=500, count=2)
    for _ in range(2):
        with pytest.raises(SlackApiError):
            client.chat_postMessage(channel=CHANNEL, text="x")
    assert client.chat_postMessage(channel=CHANNEL, text="x")["ok"]
    assert len(slack.root_messages(CHANNEL)) == 1
    assert [r.status for r in slack.calls("chat.postMessage")] == [429, 500, 500, 200]


def test_files_upload_v2_three_steps_into_a_thread(client, slack):
    root = client.chat_postMessage(channel=CHANNEL, text="root")
    resp = client.files_upload_v2(channel=CHANNEL, thread_ts=root["ts"], content=b"\x89PNG..",
                                  filename="rss.png", title="RSS", initial_comment="chart")
    assert resp["file"]["title"] == "RSS"
    get_url = slack.calls("files.getUploadURLExternal")[0]
    assert get_url.params["filename"] == "rss.png" and get_url.params["length"] == "6"
    assert slack.calls("upload")[0].body == b"\x89PNG.."
    complete = slack.calls("files.completeUploadExternal")[0].params
    assert complete["channel_id"] == CHANNEL and complete["thread_ts"] == root["ts"]
    [reply] = slack.replies(CHANNEL, root["ts"])
    assert reply["files"][0]["id"] == resp["file"]["id"] and reply["text"] == "chart"


def test_complete_without_upload_or_with_unknown_thread_fails(client, slack):
    url = client.files_getUploadURLExternal(filename="a.png", length=3)
    with pytest.raises(SlackApiError) as exc:
        client.files_completeUploadExternal(files=[{"id": url["file_id"], "title": "a"}],
                                            channel_id=CHANNEL)
    assert exc.value.response["error"] == "file_upload_not_complete"
    with pytest.raises(SlackApiError) as exc:
        client.files_upload_v2(channel=CHANNEL, thread_ts="1.000001", content=b"abc",
                               filename="a.png", title="a")
    assert exc.value.response["error"] == "thread_not_found"


def test_metadata_is_returned_only_when_asked(client):
    client.chat_postMessage(channel=CHANNEL, text="x",
                            metadata={"event_type": "trainbot_post",
                                      "event_payload": {"key": "k"}})
    plain = client.conversations_history(channel=CHANNEL)["messages"][0]
    assert "metadata" not in plain
    full = client.conversations_history(channel=CHANNEL, include_all_metadata=True)
    assert full["messages"][0]["metadata"]["event_payload"] == {"key": "k"}


def test_replies_are_paged_by_limit_and_cursor_as_slack_pages_them(client):
    root = client.chat_postMessage(channel=CHANNEL, text="root")["ts"]
    sent = [client.chat_postMessage(channel=CHANNEL, thread_ts=root, text=f"r{i}")["ts"]
            for i in range(4)]
    first = client.conversations_replies(channel=CHANNEL, ts=root, limit=2)
    assert [m["ts"] for m in first["messages"]] == [root, sent[0]]
    assert first["has_more"] is True
    cursor = first["response_metadata"]["next_cursor"]
    second = client.conversations_replies(channel=CHANNEL, ts=root, limit=2, cursor=cursor)
    assert [m["ts"] for m in second["messages"]] == sent[1:3]
    last = client.conversations_replies(channel=CHANNEL, ts=root, limit=2,
                                        cursor=second["response_metadata"]["next_cursor"])
    assert [m["ts"] for m in last["messages"]] == sent[3:]
    assert (last["has_more"], last["response_metadata"]["next_cursor"]) == (False, "")
    whole = client.conversations_replies(channel=CHANNEL, ts=root)  # default: up to 1000
    assert [m["ts"] for m in whole["messages"]] == [root, *sent]
    assert whole["has_more"] is False


def test_channel_history_is_paged_newest_first_by_limit_and_cursor(client):
    sent = [client.chat_postMessage(channel=CHANNEL, text=f"m{i}")["ts"] for i in range(5)]
    newest_first = sent[::-1]
    first = client.conversations_history(channel=CHANNEL, limit=2)
    assert [m["ts"] for m in first["messages"]] == newest_first[:2]
    assert first["has_more"] is True
    second = client.conversations_history(
        channel=CHANNEL, limit=2, cursor=first["response_metadata"]["next_cursor"])
    assert [m["ts"] for m in second["messages"]] == newest_first[2:4]
    last = client.conversations_history(
        channel=CHANNEL, limit=2, cursor=second["response_metadata"]["next_cursor"])
    assert [m["ts"] for m in last["messages"]] == newest_first[4:]
    assert (last["has_more"], last["response_metadata"]["next_cursor"]) == (False, "")
    assert len(client.conversations_history(channel=CHANNEL, limit=5000)["messages"]) == 5


def test_channel_history_gives_100_messages_unless_asked_for_more(client, slack):
    for i in range(150):
        with slack._lock:
            slack.handle("chat.postMessage", {"channel": CHANNEL, "text": f"m{i}"})
    default = client.conversations_history(channel=CHANNEL)
    assert (len(default["messages"]), default["has_more"]) == (100, True)
    assert len(client.conversations_history(channel=CHANNEL, limit=999)["messages"]) == 150


def test_a_message_ts_is_its_time_on_slacks_clock(client, slack):
    """Slack's ts form (seconds, six decimals) of the stand-in's clock, each later than the
    last even when the clock has not moved."""
    slack.clock = lambda: 1_800_000_000.25
    one = client.chat_postMessage(channel=CHANNEL, text="one")["ts"]
    two = client.chat_postMessage(channel=CHANNEL, text="two")["ts"]
    assert (one, two) == ("1800000000.250000", "1800000000.250001")


def test_channel_history_between_oldest_and_latest(client, slack):
    """`oldest` and `latest` bound the history, the bounds themselves in with `inclusive`
    only; a bound that is not a ts is refused as Slack refuses it."""
    sent = []
    for t in (100.0, 200.0, 300.0):
        slack.clock = lambda t=t: t
        sent.append(client.chat_postMessage(channel=CHANNEL, text=f"at {t}")["ts"])

    def history(**bounds) -> list[str]:
        return [m["ts"] for m in client.conversations_history(channel=CHANNEL,
                                                              **bounds)["messages"]]

    assert history(oldest="100.000000") == sent[:0:-1]
    assert history(oldest="100", inclusive=True) == sent[::-1]
    assert history(oldest="100", latest="300") == [sent[1]]
    assert history(oldest="100", latest="300", inclusive=True) == sent[::-1]
    assert history(latest="200.5") == sent[1::-1]
    assert history(oldest="300") == []
    for name in ("oldest", "latest"):
        with pytest.raises(SlackApiError) as exc:
            client.conversations_history(channel=CHANNEL, **{name: "yesterday"})
        assert exc.value.response["error"] == f"invalid_ts_{name}"


def test_thread_replies_between_oldest_and_latest_after_their_root(client, slack):
    """`oldest` and `latest` bound a thread's replies as the history's messages; its root,
    the message `ts` names, comes first whatever the bounds, as Slack's replies start with
    the thread's parent."""
    slack.clock = lambda: 100.0
    root = client.chat_postMessage(channel=CHANNEL, text="root")["ts"]
    sent = []
    for t in (200.0, 300.0, 400.0):
        slack.clock = lambda t=t: t
        sent.append(client.chat_postMessage(channel=CHANNEL, thread_ts=root,
                                            text=f"at {t}")["ts"])

    def replies(**bounds) -> list[str]:
        return [m["ts"] for m in client.conversations_replies(channel=CHANNEL, ts=root,
                                                              **bounds)["messages"]]

    assert replies() == [root, *sent]
    assert replies(oldest="200.000000") == [root, *sent[1:]]
    assert replies(oldest="200", inclusive=True) == [root, *sent]
    assert replies(oldest="200", latest="400") == [root, sent[1]]
    assert replies(latest="300.5") == [root, *sent[:2]]
    assert replies(oldest="400") == [root]
    assert replies(oldest="300", limit=1) == [root]  # the root is on the first page
    for name in ("oldest", "latest"):
        with pytest.raises(SlackApiError) as exc:
            client.conversations_replies(channel=CHANNEL, ts=root, **{name: "yesterday"})
        assert exc.value.response["error"] == f"invalid_ts_{name}"


@pytest.mark.parametrize("method", ["conversations_replies", "conversations_history"])
@pytest.mark.parametrize(("args", "error"), [
    ({"limit": 0}, "invalid_arguments"),
    ({"limit": "many"}, "invalid_arguments"),
    ({"cursor": "not a cursor"}, "invalid_cursor"),
    ({"cursor": "cmVwbGllczpDMDpYOjE="}, "invalid_cursor"),  # base64, another thread's
])
def test_a_bad_limit_or_cursor_is_refused(client, method, args, error):
    root = client.chat_postMessage(channel=CHANNEL, text="root")["ts"]
    where = {"ts": root} if method == "conversations_replies" else {}
    with pytest.raises(SlackApiError) as exc:
        getattr(client, method)(channel=CHANNEL, **where, **args)
    assert exc.value.response["error"] == error


def test_a_replies_cursor_is_not_a_history_cursor(client):
    root = client.chat_postMessage(channel=CHANNEL, text="root")["ts"]
    for _ in range(2):
        client.chat_postMessage(channel=CHANNEL, thread_ts=root, text="r")
    cursor = client.conversations_replies(channel=CHANNEL, ts=root,
                                          limit=1)["response_metadata"]["next_cursor"]
    with pytest.raises(SlackApiError) as exc:
        client.conversations_history(channel=CHANNEL, limit=1, cursor=cursor)
    assert exc.value.response["error"] == "invalid_cursor"


def test_a_cursor_of_another_thread_is_refused(client):
    one = client.chat_postMessage(channel=CHANNEL, text="one")["ts"]
    two = client.chat_postMessage(channel=CHANNEL, text="two")["ts"]
    for ts in (one, one, two, two):
        client.chat_postMessage(channel=CHANNEL, thread_ts=ts, text="r")
    cursor = client.conversations_replies(channel=CHANNEL, ts=one,
                                          limit=1)["response_metadata"]["next_cursor"]
    with pytest.raises(SlackApiError) as exc:
        client.conversations_replies(channel=CHANNEL, ts=two, limit=1, cursor=cursor)
    assert exc.value.response["error"] == "invalid_cursor"


def test_ephemeral_needs_a_user(client):
    assert client.chat_postEphemeral(channel=CHANNEL, user="U1", text="x")["ok"]


def test_granted_scopes_are_in_every_answer_and_a_missing_one_is_refused(client, slack):
    answer = client.auth_test()
    assert set(answer.headers["x-oauth-scopes"].split(",")) == slack.scopes
    slack.scopes.discard("chat:write")
    with pytest.raises(SlackApiError) as err:
        client.chat_postMessage(channel="C0TRAIN", text="hi")
    assert err.value.response["error"] == "missing_scope"
    assert err.value.response["needed"] == "chat:write"
    slack.scopes.discard("groups:history")
    assert client.conversations_history(channel="C0TRAIN")["ok"]
    with pytest.raises(SlackApiError, match="missing_scope"):
        client.conversations_history(channel="G0PRIVATE")


def test_a_channel_the_bot_was_not_invited_to(client, slack):
    slack.outside |= {"C0PUBLIC", "G0PRIVATE"}
    with pytest.raises(SlackApiError, match="not_in_channel"):
        client.conversations_history(channel="C0PUBLIC")
    assert client.chat_postMessage(channel="C0PUBLIC", text="hi")["ok"]  # chat:write.public
    with pytest.raises(SlackApiError, match="not_in_channel"):
        client.chat_postMessage(channel="G0PRIVATE", text="hi")
    slack.scopes.discard("chat:write.public")
    with pytest.raises(SlackApiError, match="not_in_channel"):
        client.chat_postMessage(channel="C0PUBLIC", text="hi")
