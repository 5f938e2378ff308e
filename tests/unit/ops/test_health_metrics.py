"""`trainbot run --metrics-port`: /healthz, /readyz and /metrics (bot.ops.health), what the
metrics count (bot.ops.metrics, bot.app.TickHealth), and when a cluster makes the replica not
ready (bot.core.readiness)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from fakes import T0, FakeClusters, FakeSFTP, FakeSlurm, RecordingEventSink, make_context
from prometheus_client import generate_latest
from slack_standin import SlackStandIn
from support.watcher import LOG, add_job, make_watcher

from bot.app import TickHealth, _health_server, build_scheduler
from bot.cluster.errors import ClusterUnavailable
from bot.core.readiness import readiness, stale_clusters
from bot.core.slurm.records import JobRecord
from bot.ops.health import HealthServer
from bot.ops.metrics import CountingSessions, CountingSlurm, ServiceMetrics
from bot.services.leases import LeaseKeeper
from bot.services.ports import ClusterSessions
from bot.slack.retry import make_client
from bot.store import Store


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(metrics: ServiceMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_probes_answer_200_or_503_with_what_is_wrong_and_metrics_in_prometheus_text() -> None:
    metrics = ServiceMetrics()
    metrics.tick_seconds.labels("alpha").observe(0.3)
    state = {"ready": (False, "cluster alpha: no successful tick for 90 s")}
    server = HealthServer("127.0.0.1", 0, metrics.registry, alive=lambda: (True, "ok"),
                          ready=lambda: state["ready"])
    server.start()
    try:
        assert get(server.port, "/healthz") == (200, "ok\n")
        assert get(server.port, "/readyz") == (503, "cluster alpha: no successful tick for 90 s\n")
        state["ready"] = (True, "ok")
        assert get(server.port, "/readyz") == (200, "ok\n")
        code, text = get(server.port, "/metrics")
        assert code == 200
        assert 'trainbot_tick_duration_seconds_bucket{cluster="alpha",le="0.5"} 1.0' in text
        assert get(server.port, "/nothing")[0] == 404
    finally:
        server.stop()


def test_a_probe_that_raises_is_an_unhealthy_answer() -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("database gone")

    server = HealthServer("127.0.0.1", 0, ServiceMetrics().registry, alive=broken,
                          ready=broken)
    server.start()
    try:
        assert get(server.port, "/healthz") == (503, "probe failed: database gone\n")
    finally:
        server.stop()


def test_a_cluster_is_stale_after_three_ticks_without_success_unless_watched_elsewhere() -> None:
    every = {"alpha": 60.0, "beta": 10.0}
    assert stale_clusters(now=100.0, started_at=0.0, every_s=every, last_ok={}) == {
        "beta": 100.0}  # alpha's first 3 ticks are not over yet
    assert stale_clusters(now=200.0, started_at=0.0, every_s=every,
                          last_ok={"alpha": 150.0, "beta": 195.0}) == {}
    assert stale_clusters(now=400.0, started_at=0.0, every_s=every,
                          last_ok={"alpha": 220.0, "beta": 395.0}) == {"alpha": 180.0}
    assert stale_clusters(now=400.0, started_at=0.0, every_s=every, last_ok={},
                          held_elsewhere=frozenset(every)) == {}


def test_a_tick_counts_as_long_as_the_cluster_s_recent_ticks_took_when_longer_than_its_interval(
) -> None:
    every = {"alpha": 1.0}
    # ticks of 5 s at 1-s intervals, back to back: ready 4 s after one ended, as long as
    # the next may take (it may take up to 3 ticks of 5 s) ...
    assert stale_clusters(now=104.0, started_at=0.0, every_s=every, last_ok={"alpha": 100.0},
                          took_s={"alpha": 5.0}) == {}
    assert stale_clusters(now=114.9, started_at=0.0, every_s=every, last_ok={"alpha": 100.0},
                          took_s={"alpha": 5.0}) == {}
    # ... but not longer: a tick hung since then is still found out
    assert stale_clusters(now=115.0, started_at=0.0, every_s=every, last_ok={"alpha": 100.0},
                          took_s={"alpha": 5.0}) == {"alpha": 15.0}
    # ticks shorter than the interval: the interval counts, as before
    assert stale_clusters(now=103.0, started_at=0.0, every_s=every, last_ok={"alpha": 100.0},
                          took_s={"alpha": 0.2}) == {"alpha": 3.0}


def test_readyz_stays_ready_while_the_watcher_ticks_a_slow_cluster_back_to_back(
        tmp_path) -> None:
    """Cluster dev ticks every 60 s but each tick takes 200 s (a slow login node; on a loaded
    host, 5 s at 1-s ticks): its ticks follow each other and every one succeeds, so /readyz
    says ok at the end of a tick and during the next; only when no tick has ended for 3 of
    its ticks (600 s) is it stale. Counted from the ticks' starts in 60-s intervals, it was
    503 ("no successful tick for 200 s") after every tick."""
    clock, mono = [T0], [0.0]

    def timer() -> float:  # each tick takes 200 s: its end is read 200 s after its start
        mono[0] += 200.0
        return mono[0]

    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    ctx = make_context(store, sftp=FakeSFTP(), slack=False)
    ticks = TickHealth(ServiceMetrics(), clock=lambda: clock[0], timer=timer)
    scheduler = build_scheduler(ctx, leases=LeaseKeeper(store.leases, holder="A"),
                                clock=lambda: clock[0], ticks=ticks)
    watch = {job.id: job for job in scheduler.jobs()}["watch:dev"].func
    server = _health_server(ctx, scheduler, ticks, "127.0.0.1", 0)
    server.start()
    answers = {}
    try:
        watch()  # the tick of T0, ended at T0 + 200
        for at in (200, 239):
            clock[0] = T0 + at
            answers[at] = get(server.port, "/readyz")[0]
        clock[0] = T0 + 240
        watch()  # the next, ended at T0 + 440
        for at in (440, 640, 1039):
            clock[0] = T0 + at
            answers[at] = get(server.port, "/readyz")[0]
        clock[0] = T0 + 1040  # no tick has ended for 600 s
        answers[1040] = get(server.port, "/readyz")  # type: ignore[assignment]  # with its body
    finally:
        server.stop()
        store.close()
    assert ticks.ok_ended == {"dev": T0 + 440} and ticks.took_s == {"dev": 200.0}
    assert answers == {200: 200, 239: 200, 440: 200, 640: 200, 1039: 200, 1040: (
        503, "cluster dev: no successful tick for 600 s (>= 3 ticks)\nwatched here: dev\n")}


def test_tick_health_times_ticks_keeps_the_last_success_and_counts_incidents(tmp_path) -> None:
    metrics = ServiceMetrics()
    ticks = TickHealth(metrics, clock=lambda: T0)
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
    add_job(store, 108687, recipe="launcher")
    sftp.append(LOG, b"[launcher] starting\n")
    slurm.records[108687] = JobRecord(job_id=108687, state="COMPLETED", exit_code=0, signal=0,
                                      elapsed_s=10, stdout_path=LOG, start_time=T0,
                                      end_time=T0 + 10)
    tick = ticks.observed("dev", make_watcher(store, slurm, sftp, sink).tick)
    tick(T0 + 30)
    assert sample(metrics, "trainbot_tick_duration_seconds_count", cluster="dev") == 1
    assert sample(metrics, "trainbot_ticks_total", cluster="dev", result="ok") == 1
    assert ticks.last_ok == {"dev": T0 + 30}
    assert sample(metrics, "trainbot_incidents_total", cluster="dev",
                  class_id="silent_exit") == 1
    assert sample(metrics, "trainbot_log_bytes_read_total", cluster="dev") == len(
        b"[launcher] starting\n")
    # jobs, a read
    assert (sample(metrics, "trainbot_ssh_round_trips_total", cluster="dev") or 0) >= 2
    assert (sample(metrics, "trainbot_ssh_bytes_moved_total", cluster="dev") or 0) > 0
    add_job(store, 7)
    slurm.down = True
    tick(T0 + 90)
    store.close()
    assert sample(metrics, "trainbot_ticks_total", cluster="dev", result="failed") == 1
    assert ticks.last_ok == {"dev": T0 + 30}  # a failed tick is no success
    assert sample(metrics, "trainbot_tick_duration_seconds_count", cluster="dev") == 2


def test_slurm_commands_are_counted_by_kind_and_result() -> None:
    metrics = ServiceMetrics()
    fake = FakeSlurm()
    slurm = CountingSlurm(fake, "dev", metrics)
    slurm.jobs([1])
    fake.down = True
    with pytest.raises(ClusterUnavailable):
        slurm.hold(4242)
    assert sample(metrics, "trainbot_slurm_commands_total", cluster="dev", kind="jobs",
                  result="ok") == 1
    assert sample(metrics, "trainbot_slurm_commands_total", cluster="dev", kind="hold",
                  result="error") == 1


def test_counting_sessions_offer_every_cluster_port_and_read_logs_through_the_inner_one(
) -> None:
    sftp = FakeSFTP()
    sessions = CountingSessions(FakeClusters(FakeSlurm(), sftp=sftp), ServiceMetrics())
    port = [name for name in vars(ClusterSessions) if not name.startswith("_")]
    assert "tail_reader" in port
    assert [name for name in port if not callable(getattr(sessions, name, None))] == []
    assert sessions.tail_reader("dev") is sftp  # the watcher's batched reads (metrics on)


HOLDER = "host-a:4242:96e72bf3:1d1a866c-5458-4c1e-82e8-8b3d99d5a26e:4026531836:29026"


def test_store_gauges_are_read_at_each_scrape() -> None:
    metrics = ServiceMetrics()
    pending = [2]
    metrics.watch_store(pending_approvals=lambda: pending[0],
                        lease_holders=lambda: [("watch:alpha", HOLDER)])
    assert sample(metrics, "trainbot_approvals_pending") == 2
    pending[0] = 0
    assert sample(metrics, "trainbot_approvals_pending") == 0
    # the holder id's short form (host:pid:random), not its ~80 characters
    assert sample(metrics, "trainbot_lease_holder", lease="watch:alpha",
                  holder="host-a:4242:96e72bf3") == 1
    assert HOLDER not in generate_latest(metrics.registry).decode()
    text = generate_latest(metrics.registry).decode()
    assert "trainbot_slack_rate_limit_waits_total 0.0" in text


def test_slack_calls_and_429_waits_are_counted() -> None:
    metrics = ServiceMetrics()
    waited: list[float] = []
    with SlackStandIn() as slack:
        client = make_client(slack.token, base_url=slack.api_url, sleep=waited.append, timeout=10,
                             on_call=lambda m: metrics.slack_calls.labels(m).inc(),
                             on_rate_limit_wait=metrics.rate_limit_waited)
        slack.fail_next("chat.postMessage", status=429, retry_after=3)
        client.chat_postMessage(channel="C0TRAIN", text="hello")
    assert waited == [3.0]
    assert sample(metrics, "trainbot_slack_api_calls_total", method="chat.postMessage") == 1
    assert sample(metrics, "trainbot_slack_rate_limit_waits_total") == 1
    assert sample(metrics, "trainbot_slack_rate_limit_wait_seconds_total") == 3


def test_a_lazy_listener_s_copy_of_its_request_waits_out_429s_into_the_same_metrics() -> None:
    """slack_bolt gives each request a WebClient with the app's client's retry handlers and
    deep-copies the request for a lazy listener (`/train`, a click): the copy of the 429
    handler is the handler itself, so copying does not fail on the metrics' locks (a 500 for
    every command and click of trainbot run) and its waits count where /metrics reads."""
    import copy

    from slack_bolt import BoltContext, BoltRequest
    from slack_sdk import WebClient

    metrics = ServiceMetrics()
    waited: list[float] = []
    with SlackStandIn() as slack:
        app_client = make_client(slack.token, base_url=slack.api_url, sleep=waited.append,
                                 timeout=10, on_call=lambda m: metrics.slack_calls.labels(m).inc(),
                                 on_rate_limit_wait=metrics.rate_limit_waited)
        per_request = WebClient(token=slack.token, base_url=slack.api_url,  # as slack_bolt's
                                retry_handlers=app_client.retry_handlers.copy())
        request = BoltRequest(body={"command": "/train"}, mode="socket_mode",
                              context=BoltContext({"client": per_request}))
        copied = copy.deepcopy(request.to_copyable())  # as its ThreadListenerRunner
        slack.fail_next("chat.postMessage", status=429, retry_after=2)
        copied.context.client.chat_postMessage(channel="C0TRAIN", text="hello")
    assert waited == [2.0]
    assert sample(metrics, "trainbot_slack_rate_limit_wait_seconds_total") == 2


def test_automatic_resubmits_are_counted_by_outcome(tmp_path) -> None:
    from fakes import FakeResubmit
    from support.watcher import timed_out

    metrics = ServiceMetrics()
    ticks = TickHealth(metrics, clock=lambda: T0)
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    env = (store, FakeSlurm(), FakeSFTP(), RecordingEventSink())
    resub = FakeResubmit(store, fail_first=1)
    w, _chain = timed_out(env, resub)
    tick = ticks.observed("dev", w.tick)
    for t in (1310, 1380, 1440):
        tick(T0 + t)
    store.close()
    assert sample(metrics, "trainbot_resubmits_total", cluster="dev", outcome="failed") == 1
    assert sample(metrics, "trainbot_resubmits_total", cluster="dev", outcome="submitted") == 1


def test_readiness_lists_the_clusters_watched_here_and_those_another_replica_holds() -> None:
    every = {"alpha": 60.0, "beta": 10.0}
    assert readiness(now=200.0, started_at=0.0, every_s=every,
                     last_ok={"alpha": 150.0, "beta": 195.0}, held_elsewhere={}) == (
        True, "ok\nwatched here: alpha, beta")
    assert readiness(now=200.0, started_at=0.0, every_s=every, last_ok={"alpha": 150.0},
                     held_elsewhere={"beta": "host-b:7:cd"}) == (
        True, "ok\nwatched here: alpha\nwatched by another replica: beta (host-b:7:cd)")
    # Every cluster held by another replica: ready, as a standby (nothing of its own is stale).
    assert readiness(now=400.0, started_at=0.0, every_s=every, last_ok={},
                     held_elsewhere={"alpha": "host-b:7:cd", "beta": None}) == (
        True, "ok (standby)\nwatched here: none\nwatched by another replica: "
              "alpha (host-b:7:cd), beta")
    assert readiness(now=400.0, started_at=0.0, every_s=every, last_ok={"alpha": 220.0},
                     held_elsewhere={"beta": "host-b:7:cd"}) == (
        False, "cluster alpha: no successful tick for 180 s (>= 3 ticks)\n"
               "watched here: alpha\nwatched by another replica: beta (host-b:7:cd)")


def test_readyz_of_a_standby_replica_names_the_replica_that_watches_its_cluster(
        tmp_path) -> None:
    """Two replicas on one store: A ticks cluster dev, B stands by; both are ready, and each
    /readyz says who watches dev, by the short form of its holder id (host:pid:random)."""
    url, answers = f"sqlite:///{tmp_path / 'state.db'}", {}
    for name in ("A", "B"):
        store = Store.open(url)
        ctx = make_context(store, sftp=FakeSFTP(), slack=False)
        ticks = TickHealth(ServiceMetrics(), clock=lambda: T0)
        holder = HOLDER.replace("host-a", f"host-{name.lower()}")
        scheduler = build_scheduler(ctx, leases=LeaseKeeper(store.leases, holder=holder),
                                    clock=lambda: T0, ticks=ticks)
        {job.id: job for job in scheduler.jobs()}["watch:dev"].func()
        server = _health_server(ctx, scheduler, ticks, "127.0.0.1", 0)
        server.start()
        try:
            answers[name] = get(server.port, "/readyz")
        finally:
            server.stop()
            store.close()
    assert answers == {"A": (200, "ok\nwatched here: dev\n"),
                       "B": (200, "ok (standby)\nwatched here: none\n"
                                  "watched by another replica: dev (host-a:4242:96e72bf3)\n")}


def test_a_handlers_web_api_calls_are_counted(tmp_path) -> None:
    """A click's handler updates its prompt (chat.update) with the client Bolt gives it for
    the request: a client of the bot's class (bot.app._BotApp), so the call counts in
    trainbot_slack_api_calls_total, through the lazy listener's copy of the request. Bolt's
    own per-request client is a plain WebClient: the call went uncounted."""
    from fakes import writer
    from support.bolt_driver import ResponseUrls, SyncExecutor, click_body, dispatch

    from bot.app import build_app
    from bot.services.prompts import create_resubmit_prompt
    from bot.slack.views import ActionId

    metrics = ServiceMetrics()
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    ctx = make_context(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=T0, summary="88154 died", resume_iter=3000)
    urls = ResponseUrls()
    with SlackStandIn() as slack:
        client = make_client(slack.token, base_url=slack.api_url, timeout=10,
                             on_call=lambda m: metrics.slack_calls.labels(m).inc())
        shown = client.chat_postMessage(channel="C0TRAIN", text="prompt")["ts"]
        app = build_app(ctx.config, ctx, client=client, listener_executor=SyncExecutor(),
                        token_verification_enabled=False)
        try:
            body = click_body(ActionId.DISMISS, prompt.token, user="W0LEAD", channel="C0TRAIN",
                              message_ts=shown, response_url=urls.new())
            assert dispatch(app, body).status == 200
        finally:
            urls.close()
        assert [c.response["ok"] for c in slack.calls("chat.update")] == [True]
    assert sample(metrics, "trainbot_slack_api_calls_total", method="chat.update") == 1
    assert sample(metrics, "trainbot_slack_api_calls_total", method="chat.postMessage") == 1
