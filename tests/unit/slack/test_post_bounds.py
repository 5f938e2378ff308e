"""One Slack post has one overall deadline (the config's slack.post_deadline_s,
bot.core.slack_bounds.POST_DEADLINE_S by default): the poster's attempts, the client's
retries and its 429 waits all stop at it. A keyed post
another process may still be making (a hold prompt's question whose bot died,
bot.services.prompt_follow_up) and a run's root claim wait for the post's worst case, that
deadline and one request: one formula (bot.core.slack_bounds) for both."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import Request

import pytest
from fakes import make_config
from pydantic import ValidationError
from slack_sdk import WebClient
from slack_standin import ConnectProxy, SlackStandIn

from bot.app import build_context
from bot.core import slack_bounds
from bot.core.slack_bounds import CALL_TIMEOUT_S, POST_DEADLINE_S, bot_post_at_most_s, waits_in_time
from bot.core.takeover import post_takeover_s
from bot.net.whole_request import NotConnectedInTime, _shut, open_whole
from bot.services.threads import _claim_root, _root_claim_key
from bot.slack.poster import SlackPoster, SlackPostError, call_fate
from bot.slack.retry import ConnectionDropHandler, make_client
from bot.store import Store

T0 = 1_800_000_000.0


def test_a_posts_takeover_waits_minutes_not_hours() -> None:
    """The bot's poster over the bot's client: a post ends by its 300 s deadline plus one
    request of 30 s; a takeover of its post (and a root's claim) waits that, plus the
    margin: 6.5 minutes. Before, 6244 s (6304 s for the takeover): 4 attempts of 2 calls
    of 6 requests and 5 Retry-After waits of 120 s, over an hour and a half."""
    poster = SlackPoster(make_client("xoxb-test", timeout=CALL_TIMEOUT_S), store=None,
                         deadline_s=POST_DEADLINE_S)
    assert poster.post_at_most_s() == pytest.approx(bot_post_at_most_s(POST_DEADLINE_S)) == 330
    assert post_takeover_s(POST_DEADLINE_S, kept=None) == pytest.approx(390)
    assert post_takeover_s(POST_DEADLINE_S, kept=None) >= poster.post_at_most_s()


def test_a_poster_and_its_client_are_given_their_bounds_by_whoever_makes_them() -> None:
    """A poster is given its deadline (the bot's: slack.post_deadline_s, bot.app
    .build_context) and a client its request timeout (the bot's: CALL_TIMEOUT_S, which the
    post bounds count): neither has a default that would post with bounds the configuration
    did not set. Before, 300 s and 30 s applied to whoever left them out."""
    with pytest.raises(TypeError, match="deadline_s"):
        SlackPoster(make_client("xoxb-test", timeout=CALL_TIMEOUT_S), store=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timeout"):
        make_client("xoxb-test")  # type: ignore[call-arg]


@pytest.mark.parametrize("deadline_s", [45.0, 60.0, 0.0, -1.0, float("nan")])
def test_a_post_deadline_too_short_for_an_upload_is_refused_however_it_is_set(
        deadline_s: float) -> None:
    """A post deadline that leaves no room for an upload's two requests (60 s with the
    bot's 30 s requests) is refused by the rule the config's file is held to, also when a
    loaded config's value is set (validate_assignment) and when a poster is made directly:
    no poster runs with it. Before, both took 45 s, and every slow upload failed unsent."""
    config = make_config()
    with pytest.raises(ValidationError, match="post_deadline_s"):
        config.slack.post_deadline_s = deadline_s
    assert config.slack.post_deadline_s == POST_DEADLINE_S
    with pytest.raises(ValueError, match="must be"):
        SlackPoster(make_client("xoxb-test", timeout=CALL_TIMEOUT_S), store=None,
                    deadline_s=deadline_s)


def test_a_configured_post_deadline_moves_the_root_claim_and_the_takeover(tmp_path: Path
                                                                          ) -> None:
    """slack.post_deadline_s set to 90: the bot's poster (bot.app.build_context) ends a post
    by 90 s, so a run's root claim holds 120 s (the deadline and one request: another try
    joins it after that, not after 330 s) and a post a dead bot began is taken over after
    180 s (the margin more), not 390 s."""
    config = make_config()
    config.slack.post_deadline_s = 90.0
    config.store.url = f"sqlite:///{tmp_path / 'state.db'}"
    ctx = build_context(config, client=make_client("xoxb-test", timeout=CALL_TIMEOUT_S))
    try:
        assert isinstance(ctx.sink, SlackPoster) and ctx.sink.deadline_s == 90.0
        assert ctx.sink.post_at_most_s() == 120.0
        chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        now = ctx.clock()
        assert _claim_root(ctx, chain.id) is not None
        key = _root_claim_key(chain.id)
        assert not ctx.store.command_claims.claim(key, "another", now + 119, 1.0)
        assert ctx.store.command_claims.claim(key, "another", now + 121, 1.0)
        assert post_takeover_s(config.slack.post_deadline_s, kept=None) == 180.0
    finally:
        ctx.clusters.close()
        ctx.store.close()


@pytest.mark.parametrize("retry_after", [0.0, 1.0, 29.5, 60.0, 119.0, 120.0])
@pytest.mark.parametrize("request_s", [0.0, 10.0, 30.0])
def test_the_bound_holds_whatever_slack_answers(retry_after: float, request_s: float
                                                ) -> None:
    """Every request taking up to the client's timeout and answered 429 (any Retry-After),
    the waits and backoffs of every attempt made only while they end before the deadline,
    as the poster and the client make them: the post's last request ends within the bound."""
    deadline = slack_bounds.POST_DEADLINE_S
    now = 0.0
    for attempt in range(slack_bounds.POST_ATTEMPTS):
        backoff = slack_bounds.BACKOFF_S * 2 ** max(attempt - 1, 0) * (1 + slack_bounds.JITTER)
        if attempt:
            if not waits_in_time(now, backoff, deadline):
                break
            now += backoff
        for call in range(2):  # a lookup and a send
            if call and not waits_in_time(now, 0.0, deadline):
                break
            now += request_s
            for _retry in range(slack_bounds.RATE_LIMIT_RETRIES):
                if not waits_in_time(now, retry_after, deadline):
                    break
                now += retry_after + request_s
    assert now <= bot_post_at_most_s(deadline)


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as s:
        yield s


def test_a_post_slack_keeps_rate_limiting_gives_up_by_its_deadline(
        slack: SlackStandIn, store: Store) -> None:
    """Slack answers every chat.postMessage 429 with Retry-After: 120. The post waits out
    the Retry-Afters that end before its 300 s deadline, then fails (the error of a post
    whose retries ran out, its intent kept for the next try): within 5 minutes, not after
    4 attempts of 5 waits of 2 minutes (40 minutes) as before."""
    clock = [T0]

    def wait(s: float) -> None:  # the client's and the poster's waits, in fake time
        clock[0] += s

    client = make_client(slack.token, base_url=slack.api_url, sleep=wait, timeout=10)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=wait, clock=lambda: clock[0])
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    slack.fail_next("chat.postMessage", status=429, retry_after=120, count=100)
    with pytest.raises(SlackPostError, match="429|ratelimited"):
        poster.post_root(chain.id, "C0TRAINING", [], "mix submitted")
    assert clock[0] - T0 <= slack_bounds.POST_DEADLINE_S
    assert slack.ok_calls("chat.postMessage") == []
    post = store.slack_posts.get(f"chain:{chain.id}:root")
    assert post is not None and not post.posted


def _root_rewrite(poster: SlackPoster, chain_id: int) -> None:
    poster.update_root(chain_id, [], "mix: job 2 RUNNING")


def _home_tab(poster: SlackPoster, chain_id: int) -> None:
    poster.publish_home("U0ALICE", [{"type": "section",
                                     "text": {"type": "mrkdwn", "text": "2 runs"}}])


def _chart(poster: SlackPoster, chain_id: int) -> None:
    poster.upload_file(chain_id, f"chart:{chain_id}:loss", b"\x89PNG loss", "loss.png", "loss")


@pytest.mark.parametrize(("method", "call"), [
    ("chat.update", _root_rewrite),
    ("views.publish", _home_tab),
    ("files.getUploadURLExternal", _chart),
    ("files.completeUploadExternal", _chart),
])
def test_an_update_a_home_tab_or_a_chart_slack_keeps_rate_limiting_stops_at_the_deadline(
        slack: SlackStandIn, store: Store, method: str, call: Any) -> None:
    """A poster's deadline of 25 s (its client's requests 10 s at most), Slack answering every
    `method` 429 with Retry-After: 8. A root's rewrite (chat.update), a Home tab
    (views.publish) and a chart's upload (its URL, or its completion) wait out the
    Retry-Afters that end before the deadline, then fail: within 25 s. Before, they had no
    overall deadline: 5 waits of 8 s for an update or a Home tab, and 4 attempts of those
    for a chart (over 2.5 minutes)."""
    clock = [T0]

    def wait(s: float) -> None:  # the client's and the poster's waits, in fake time
        clock[0] += s

    client = make_client(slack.token, base_url=slack.api_url, sleep=wait, timeout=10)
    poster = SlackPoster(client, store, sleep=wait, clock=lambda: clock[0], deadline_s=25.0)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    poster.post_root(chain.id, "C0TRAINING", [], "mix: job 1 PENDING")
    slack.fail_next(method, status=429, retry_after=8, count=1000)
    with pytest.raises(SlackPostError, match="429|ratelimited|deadline"):
        call(poster, chain.id)
    assert clock[0] - T0 < 25.0
    assert len(slack.calls(method)) >= 2  # a Retry-After within the deadline was waited out
    assert slack.ok_calls(method) == []


@pytest.mark.parametrize(("url_takes_s", "sent"), [(10.0, True), (20.0, False)])
def test_a_charts_bytes_are_sent_only_while_their_request_ends_before_the_deadline(
        slack: SlackStandIn, store: Store, url_takes_s: float, sent: bool) -> None:
    """A poster's deadline of 25 s, one request at most 10 s: a chart's upload URL that
    takes 10 s leaves 15 s, and the bytes are sent and the chart shared; one that takes 20 s
    leaves 5 s, less than the bytes' request may take, and the upload fails there, nothing
    more sent: it ends within one request after its deadline, as a post. Before, the bytes
    were sent while the deadline had not passed, and could end 10 s past it (the completion,
    started before it, another 10 s: two requests past the deadline)."""
    clock = [T0]

    def wait(s: float) -> None:
        clock[0] += s

    client = make_client(slack.token, base_url=slack.api_url, sleep=wait, timeout=10)
    poster = SlackPoster(client, store, sleep=wait, clock=lambda: clock[0], deadline_s=25.0)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    poster.post_root(chain.id, "C0TRAINING", [], "mix: job 1 PENDING")
    ask_url = client.files_getUploadURLExternal

    def slow_url(**kwargs: Any) -> Any:  # the URL's request takes `url_takes_s`
        clock[0] += url_takes_s
        return ask_url(**kwargs)

    client.files_getUploadURLExternal = slow_url  # type: ignore[method-assign]
    if sent:
        _chart(poster, chain.id)
        assert len(slack.ok_calls("upload")) == 1
        assert len(slack.ok_calls("files.completeUploadExternal")) == 1
        return
    with pytest.raises(SlackPostError, match="less than one request"):
        _chart(poster, chain.id)
    assert slack.calls("upload") == [] and slack.calls("files.completeUploadExternal") == []
    assert len(slack.calls("files.getUploadURLExternal")) == 1
    assert clock[0] - T0 <= 20.0 + 10.0


@pytest.fixture(params=[False, True], ids=["http", "https"])
def any_slack(request: pytest.FixtureRequest) -> Iterator[SlackStandIn]:
    """The stand-in over plain HTTP and over HTTPS, as Slack is."""
    with SlackStandIn(tls=request.param) as server:
        yield server


@pytest.fixture
def proxy_from_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[ConnectProxy]:
    """A proxy the environment names (HTTPS_PROXY, as an institution's network sets it),
    no other proxy setting in the way."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        yield proxy


def _hostport(slack: SlackStandIn) -> str:
    return slack.url.split("://", 1)[1]


@pytest.fixture(params=[False, True], ids=["direct", "proxy"])
def route(request: pytest.FixtureRequest) -> Iterator[ConnectProxy | None]:
    """Slack reached directly, or through a proxy the environment names."""
    if not request.param:
        yield None
        return
    yield request.getfixturevalue("proxy_from_env")


def test_a_post_whose_answer_trickles_is_cut_at_one_requests_timeout(
        any_slack: SlackStandIn, route: ConnectProxy | None, store: Store) -> None:
    """Slack takes a root message and sends its answer one byte every 0.05 s (each byte well
    within the client's 1 s socket timeout; the whole answer about 15 s), directly or through
    a proxy (HTTPS_PROXY; over HTTPS its CONNECT tunnel). The request is cut when its 1 s is
    up, as a whole, and the poster's next attempt finds the message by its key: posted once,
    within about one request. Before, each byte restarted the socket's timeout and the post
    waited for the whole trickle, so one request could outlast the post's worst case (its
    deadline, then one request); over HTTPS it still did, the connection left open at the
    timeout (the socket shut down had handed its descriptor to the TLS socket); behind a
    proxy it still did, the client making slack_sdk's own request, bounded per read only."""
    slack = any_slack
    client = make_client(slack.token, base_url=slack.api_url, sleep=lambda s: None, timeout=1,
                         ssl_context=slack.client_ssl)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    slack.trickle_next("chat.postMessage", every_s=0.05)
    started = time.monotonic()
    ts = poster.post_root(chain.id, "C0TRAINING", [], "mix submitted")
    assert time.monotonic() - started < 1 + 1.5  # one request, its lookup and some slack
    assert [m["ts"] for m in slack.root_messages("C0TRAINING")] == [ts]
    assert len(slack.calls("chat.postMessage")) == 1  # found by its key, not sent again
    if route is not None:
        assert set(route.routed) == {_hostport(slack)} and route.routed


def test_a_charts_bytes_whose_answer_trickles_are_cut_at_one_requests_timeout(
        any_slack: SlackStandIn, store: Store) -> None:
    """The upload URL of a chart's bytes (files.slack.com's, HTTPS in Slack) answers one
    byte every 0.1 s (the whole answer about 10 s). The bytes' request is cut when the
    client's 1 s is up and sent again: the chart is shared once, within about two requests.
    Before, the upload waited for the whole trickle (over HTTPS, still after the request
    was bounded as a whole)."""
    slack = any_slack
    client = make_client(slack.token, base_url=slack.api_url, sleep=lambda s: None, timeout=1,
                         ssl_context=slack.client_ssl)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    poster.post_root(chain.id, "C0TRAINING", [], "mix: job 1 PENDING")
    slack.trickle_next("upload", every_s=0.1)
    started = time.monotonic()
    _chart(poster, chain.id)
    assert time.monotonic() - started < 1 + 1.5
    assert len(slack.ok_calls("files.completeUploadExternal")) == 1


def test_posts_and_a_charts_bytes_go_through_the_proxy_the_environment_names(
        any_slack: SlackStandIn, proxy_from_env: ConnectProxy, store: Store) -> None:
    """Behind a proxy (HTTPS_PROXY), a root, a reply and a chart reach Slack through it
    (over HTTPS, its CONNECT tunnel), each posted once."""
    slack = any_slack
    client = make_client(slack.token, base_url=slack.api_url, sleep=lambda s: None, timeout=5,
                         ssl_context=slack.client_ssl)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    ts = poster.post_root(chain.id, "C0TRAINING", [], "mix submitted")
    poster.post_reply(chain.id, "running", [], "mix: job 1 RUNNING")
    _chart(poster, chain.id)
    assert [m["ts"] for m in slack.root_messages("C0TRAINING")] == [ts]
    assert [r["text"] for r in slack.replies("C0TRAINING", ts)][0] == "mix: job 1 RUNNING"
    assert len(slack.ok_calls("files.completeUploadExternal")) == 1
    assert len(slack.calls("upload")) == 1
    assert proxy_from_env.routed == [_hostport(slack)] * len(slack.requests)


def test_a_host_no_proxy_names_is_reached_directly(
        any_slack: SlackStandIn, proxy_from_env: ConnectProxy, store: Store,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Slack host NO_PROXY names is reached without the proxy, as slack_sdk reaches it."""
    slack = any_slack
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    client = make_client(slack.token, base_url=slack.api_url, sleep=lambda s: None, timeout=5,
                         ssl_context=slack.client_ssl)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    ts = poster.post_root(chain.id, "C0TRAINING", [], "mix submitted")
    assert [m["ts"] for m in slack.root_messages("C0TRAINING")] == [ts]
    assert proxy_from_env.routed == []


def test_a_request_that_cannot_be_cut_at_its_timeout_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    """A connection the timer cannot shut down (here: its socket closed, no descriptor) is
    a request that may run past its bound: an error in the log, not a silent pass (as the
    shutdown over HTTPS failed unseen)."""
    sock = socket.socket()
    sock.close()
    with caplog.at_level(logging.ERROR, logger="bot.net.whole_request"):
        _shut(sock)
    assert "could not cut a Slack request at its timeout" in caplog.text


def _unreachable() -> tuple[socket.socket, list[socket.socket]]:
    """A loopback listener whose accept queue is full: a SYN to it is dropped, a connect
    hangs until its timeout (a firewall that drops packets, an unroutable Slack address).
    Its listener, then the connections that fill its queue (to close)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fill = []
    for _ in range(3):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(listener.getsockname())
        except BlockingIOError:
            pass
        fill.append(s)
    time.sleep(0.2)
    return listener, fill


@pytest.fixture
def unreachable_slack() -> Iterator[str]:
    """The Web API's URL at an address that drops SYNs."""
    listener, fill = _unreachable()
    host, port = listener.getsockname()
    yield f"http://{host}:{port}/api/"
    for s in [*fill, listener]:
        s.close()


@pytest.fixture
def three_unreachable_addresses(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """slack.test resolves to three addresses (slack.com has several), each dropping SYNs."""
    holes = [_unreachable() for _ in range(3)]
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *a: Any, **k: Any) -> Any:
        if host == "slack.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", listener.getsockname())
                    for listener, _ in holes]
        return real(host, port, *a, **k)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    yield
    for listener, fill in holes:
        for s in [*fill, listener]:
            s.close()


def test_a_host_whose_addresses_all_drop_connections_fails_within_one_requests_timeout(
        three_unreachable_addresses: None) -> None:
    """Each address tried with what is left of the request's time, not the whole timeout
    each (3 addresses: 3 x the timeout); failed as a request Slack never saw."""
    started = time.monotonic()
    with pytest.raises(URLError) as failed:
        open_whole(Request("http://slack.test:80/api/chat.update", data=b"x"),
                   timeout_s=1, context=None, proxy=None)
    assert time.monotonic() - started < 1.5
    assert call_fate(failed.value) == "not_sent"


def test_a_host_whose_lookup_hangs_fails_within_one_requests_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def stalls(host: Any, *a: Any, **k: Any) -> Any:
        if host == "slack.test":
            time.sleep(3)  # a resolver's timeouts times its attempts
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        return real(host, *a, **k)

    monkeypatch.setattr(socket, "getaddrinfo", stalls)
    started = time.monotonic()
    with pytest.raises(URLError) as failed:
        open_whole(Request("http://slack.test/api/x", data=b"x"), timeout_s=1, context=None,
                   proxy=None)
    assert time.monotonic() - started < 1.5
    assert isinstance(failed.value.reason, NotConnectedInTime)
    assert call_fate(failed.value) == "not_sent"


def _connection_retries(client: WebClient) -> int:
    drop = client.retry_handlers[0]
    assert isinstance(drop, ConnectionDropHandler)
    with pytest.raises(URLError):
        client.chat_update(channel="C1", ts="1.0", text="x")
    return len(drop.waits)


def test_a_connect_timeout_of_an_idempotent_call_is_retried_as_slack_sdk_retries_it(
        unreachable_slack: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connect that times out is a URLError on slack_sdk's own request path, which
    ConnectionDropHandler re-sends for idempotent methods (chat.update, the poster's
    lookups): the bounded request fails the same way, not with a bare TimeoutError."""
    sdks = make_client("xoxb-x", base_url=unreachable_slack, timeout=1, sleep=lambda s: None)
    monkeypatch.setattr(type(sdks), "_perform_urllib_http_request_internal",
                        WebClient._perform_urllib_http_request_internal)
    sdk_retries = _connection_retries(sdks)
    monkeypatch.undo()
    ours = make_client("xoxb-x", base_url=unreachable_slack, timeout=1, sleep=lambda s: None)
    assert sdk_retries == 2
    assert _connection_retries(ours) == sdk_retries


@pytest.fixture
def time_passes_as_the_answer_is_handed_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each answer's body, once read, is handed back 1.2 s later: a request of 1 s is due
    after its last byte came, before it is over."""
    from bot.net import whole_request

    read = whole_request.HTTPResponse.read

    def read_then_fire(self: Any, *a: Any, **k: Any) -> bytes:
        body = read(self, *a, **k)
        time.sleep(1.2)
        return body

    monkeypatch.setattr(whole_request.HTTPResponse, "read", read_then_fire)


@pytest.mark.usefixtures("time_passes_as_the_answer_is_handed_back")
def test_an_answer_read_whole_is_returned_though_the_timer_fires_as_it_ends(
        slack: SlackStandIn) -> None:
    """The timer firing after the last byte came (before the request is over) does not
    turn a whole answer into a timeout: Slack performed the call and said so."""
    status, _, body = open_whole(Request(slack.api_url + "auth.test", data=b"x"),
                                 timeout_s=1, context=slack.client_ssl, proxy=None)
    assert status == 200 and b'"ok"' in body


@pytest.mark.usefixtures("time_passes_as_the_answer_is_handed_back")
def test_an_answer_without_a_length_read_whole_is_returned_though_its_deadline_passes_as_it_ends(
        any_slack: SlackStandIn) -> None:
    """An answer with no declared length (no Content-Length: its body ends where Slack, or a
    proxy, closes the connection) whose end came before the request's 1 s passed, the time
    passing as it is handed back: Slack's answer, returned whole. Before, only an answer
    whose length was declared was; this one failed as a timeout, though it was whole."""
    slack = any_slack
    slack.unframed_next("auth.test")
    signed = {"Authorization": f"Bearer {slack.token}"}
    status, headers, body = open_whole(
        Request(slack.api_url + "auth.test", data=b"x", headers=signed), timeout_s=1,
        context=slack.client_ssl, proxy=None)
    assert status == 200 and b'"ok": true' in body
    assert headers.get("Content-Length") is None


def test_an_answer_without_a_length_cut_by_its_deadline_is_a_timeout(
        any_slack: SlackStandIn) -> None:
    """The same answer trickling in (one byte every 0.05 s) is cut when the request's 1 s is
    up: what was read ends where the connection was shut down, not where Slack's answer
    ends, so it is no answer (TimeoutError: Slack may have performed the call)."""
    slack = any_slack
    slack.unframed_next("auth.test", trickle_s=0.05)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        open_whole(Request(slack.api_url + "auth.test", data=b"x"), timeout_s=1,
                   context=slack.client_ssl, proxy=None)
    assert time.monotonic() - started < 1 + 0.5


def test_an_answer_whose_headers_are_cut_is_a_lost_answer_not_an_empty_one(
        any_slack: SlackStandIn, store: Store) -> None:
    """Slack performs a call, then the connection ends in the answer's headers, after
    `Content-Length: 0` and before their end. A lost answer, as a dropped connection's: an
    update is sent again by the client, a root post is looked up by its key, each in Slack
    once. Before, the cut headers were read as all of them and the empty body as the answer:
    the update and the post failed as refused (slack_sdk: "non-JSON response"), the post
    not looked up and its thread never recorded."""
    slack = any_slack
    client = make_client(slack.token, base_url=slack.api_url, sleep=lambda s: None, timeout=5,
                         ssl_context=slack.client_ssl)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    slack.cut_headers_next("chat.postMessage")
    ts = poster.post_root(chain.id, "C0TRAINING", [], "mix submitted")
    assert [m["ts"] for m in slack.root_messages("C0TRAINING")] == [ts]
    assert len(slack.calls("chat.postMessage")) == 1  # found by its key, not sent again
    slack.cut_headers_next("chat.update")
    client.chat_update(channel="C0TRAINING", ts=ts, text="mix: job 1 RUNNING")
    assert len(slack.calls("chat.update")) == 2
    assert slack.root_messages("C0TRAINING")[0]["text"] == "mix: job 1 RUNNING"
