"""The composition root: config → catalogue → store → clusters → Slack client, thread poster,
renderer, charts → services (`BotContext`) → scheduler (hold releases, one watcher per
cluster) and the Bolt app. `trainbot run` only calls `run`.

Listeners live in `handlers/` (each `register(app, services)`), logic in `bot/services/`.
Socket Mode is the default (an outbound WebSocket: no public URL behind a cluster firewall);
HTTP mode needs the signing secret and a public HTTPS endpoint.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from slack_bolt import App, BoltRequest
from slack_sdk import WebClient

from bot.config import Config, ConfigError
from bot.core.holders import holder_label
from bot.core.readiness import STALE_TICKS
from bot.core.slack_bounds import CALL_TIMEOUT_S
from bot.core.slurm.records import JobRecord
from bot.services.leases import LeaseKeeper
from bot.services.ports import BotContext, JsonPoster, ThreadWriter
from bot.services.scheduler import (
    RELEASE_WAIT_S,
    STOP_GRACE_S,
    DaemonThreadExecutor,
    JobScheduler,
    bounded,
)
from bot.services.watch.events import TickReport
from bot.services.watch.tick import Watcher
from bot.slack.retry import request_client
from handlers.fence import ListenerFence

if TYPE_CHECKING:
    from bot.ops.health import HealthServer
    from bot.ops.metrics import ServiceMetrics
    from bot.store import Store

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 2.0  # at most this long for stopping the health server, SSH, the store
# How long a stop waits at most (12 s): the runs under way and the Slack handlers under way
# (STOP_GRACE_S, both counted from the stop's start), the leases' release (RELEASE_WAIT_S),
# then the health server, the SSH connections and the store (CLOSE_WAIT_S each). README,
# docs/deploy.md and the systemd unit state it (tests/unit/deploy/test_packaging.py checks
# they say this figure).
STOP_WITHIN_S = STOP_GRACE_S + RELEASE_WAIT_S + 3 * CLOSE_WAIT_S


def build_context(config: Config, *, client: WebClient | None = None, slack: bool = True,
                  metrics: ServiceMetrics | None = None,
                  threads: Callable[[Store], ThreadWriter] | None = None) -> BotContext:
    """The services of a running bot: the catalogue (the packaged one and the site's
    `catalogue.extra` files, loaded once: a bad file raises CatalogueError here, at start),
    the store, cluster sessions, the Slack thread poster (none without `slack`: what would
    be posted is logged), the renderer and the charts. `threads` builds, on the store, the
    thread writer that takes the poster's place (`trainbot demo`'s console; no Slack client
    is made for it, and no Home tabs are published). The store and the poster redact the
    config's secrets from what they write (`Config.redactor()`). With `metrics`, Slurm
    commands and Slack calls are counted."""
    from bot.charts.series import SeriesCharts
    from bot.cluster.sessions import ClusterSessions
    from bot.core.catalogue import Catalogue
    from bot.slack.poster import SlackPoster
    from bot.slack.render import TemplateRenderer
    from bot.store import Store

    catalogue = Catalogue.load(config.catalogue.extra)
    redactor = config.redactor()
    if slack and threads is None:
        client = client or slack_client(config, metrics=metrics)
    store = Store.open(config.store.url, redactor=redactor)
    clusters: Any = ClusterSessions(config)
    if metrics is not None:
        from bot.ops.metrics import CountingSessions

        clusters = CountingSessions(clusters, metrics)
    poster = SlackPoster(client, store, redactor=redactor,
                         deadline_s=config.slack.post_deadline_s) if client is not None else None
    sink = threads(store) if threads is not None else poster
    return BotContext(config=config, store=store, clusters=clusters,
                      renderer=TemplateRenderer(redactor), catalogue=catalogue, sink=sink,
                      charts=SeriesCharts(catalogue) if sink is not None else None, home=poster)


def slack_client(config: Config, *, metrics: ServiceMetrics | None = None) -> WebClient:
    """The bot's WebClient (429/5xx retries) on `slack.api_url` through `slack.proxy` (unset:
    the environment's; Socket Mode takes it too), from the token in the environment, each
    request within CALL_TIMEOUT_S (what the post bounds count:
    bot.core.slack_bounds.bot_post_at_most_s); with `metrics`, its calls and 429 waits are
    counted."""
    from bot.slack.retry import make_client

    token = config.slack_secrets.bot_token
    if token is None:
        raise ConfigError(f"${config.slack.bot_token_env} is not set: export the xoxb- bot "
                          "token (it is never read from the config file)")
    if metrics is None:
        return make_client(token.get_secret_value(), base_url=config.slack.api_url,
                           timeout=CALL_TIMEOUT_S, proxy=config.slack.proxy)
    return make_client(token.get_secret_value(), base_url=config.slack.api_url,
                       timeout=CALL_TIMEOUT_S, proxy=config.slack.proxy,
                       on_call=lambda method: metrics.slack_calls.labels(method).inc(),
                       on_rate_limit_wait=metrics.rate_limit_waited)


def build_watcher(ctx: BotContext, cluster: str, *, webhook: JsonPoster | None = None
                  ) -> Watcher:
    """The production watcher of one cluster: Slurm and file reads from `ctx.clusters` (asked per
    use: building it never connects, a reconnect gets fresh clients), the context's
    catalogue, events to the run threads (logged when `ctx.sink` is None; a stall's Python
    stacks collected beside the tick) and to `webhook`, automatic resubmits through the same
    submit service as `/train resume`, its roots' progress rewrites counted in the
    workspace's budget in the store (bot.services.watch.chains.ProgressRewriteBudget)."""
    from bot.services.runs import AutoResubmitter
    from bot.services.stacks import Forensics
    from bot.services.watch_events import ThreadEvents, WebhookEvents

    auto = AutoResubmitter(ctx, cluster)
    events: Any = ThreadEvents(ctx, forensics=Forensics(ctx))
    if webhook is not None:
        events = WebhookEvents(events, webhook)
    return Watcher(
        cluster, slurm=_ClusterSlurm(ctx, cluster),
        reader=lambda: ctx.clusters.tail_reader(cluster),
        store=ctx.store, catalogue=ctx.catalogue, sink=events, config=ctx.config,
        checkpoint=auto.checkpoint, resubmit=auto.resubmit, recover=auto.recover,
    )


class _ClusterSlurm:
    """`jobs` on the cluster's Slurm client, fetched per call (see build_watcher)."""

    def __init__(self, ctx: BotContext, cluster: str) -> None:
        self._ctx, self._cluster = ctx, cluster

    def jobs(self, ids: Iterable[int]) -> dict[int, JobRecord]:
        return self._ctx.clusters.slurm(self._cluster).jobs(ids)


def tick_interval(config: Config, cluster: str) -> float:
    """Seconds between a cluster's watcher ticks: the policy's `tick_s`, or the shortest a
    recipe on that cluster asks for (a recipe with short thresholds needs ticks as short)."""
    seconds = [config.policy_for(name).tick_s for name, recipe in config.recipes.items()
               if recipe.cluster == cluster]
    return min([config.policy.tick_s, *seconds])


def schedule_prompts(scheduler: JobScheduler, ctx: BotContext) -> None:
    """The `prompts` job on `scheduler`, every policy tick under its lease, its side effects
    fenced by it: the approved cancels whose end was not seen settled first
    (bot.services.cancel_settle), the claimed clicks whose process died before their next
    step taken over (bot.services.claim_takeover), then the unanswered prompts reminded,
    escalated, expired
    (bot.services.prompt_follow_up.follow_up_prompts), and the thread notes said outside
    the watcher that a thread has not got yet tried again once their backoff allows
    (bot.services.threads.say_pending_notes). A settle's thread note Slack refuses backs off
    across the runs (one Backoffs kept here). build_scheduler's, and the crash tests'
    (tests/crash_driver.py --job prompts)."""
    from bot.core.backoff import Backoffs
    from bot.services.cancel_settle import settle_unknown_cancels
    from bot.services.claim_takeover import take_over_claims
    from bot.services.fencing import fenced_context
    from bot.services.prompt_follow_up import follow_up_prompts
    from bot.services.threads import say_pending_notes

    prompts = fenced_context(ctx, scheduler.fence("prompts"))
    refused = Backoffs()  # the settles' thread notes Slack refused, across the job's runs

    def prompts_tick(now: float) -> None:  # the cancels settled first, then the prompts
        settle_unknown_cancels(prompts, now, refused)
        take_over_claims(prompts, now)  # released claims are pending again for the follow-up
        follow_up_prompts(prompts, now)
        say_pending_notes(prompts)

    scheduler.run_repeating("prompts", prompts_tick, every_s=ctx.config.policy.tick_s)


def build_scheduler(ctx: BotContext, *, leases: LeaseKeeper | None = None,
                    clock: Callable[[], float] = time.time,
                    ticks: TickHealth | None = None,
                    webhook: JsonPoster | None = None) -> JobScheduler:
    """The bot's jobs: `holds` (release held competitors once their resumed job runs) and
    `prompts` (settle approved cancels whose end was not seen, then remind, escalate, expire
    unanswered prompts: schedule_prompts) and `submits` (a person's submit
    the bot died in, found by its job name: bot.services.runs.recover_submits_in_flight;
    at its first run and whenever it takes the lease over, the runs whose root message the
    bot (or another replica) died posting announced:
    bot.services.runs.announce_unposted_roots) every
    policy tick, `probes` (run
    the DataLoader probes people asked for, bot.services.probes) every few seconds, and
    `watch:<cluster>` for each configured cluster every `tick_interval` (the watchers of
    every replica share one budget of roots rewritten for progress alone, in the store: they
    post into one workspace, bot.services.watch.chains.ProgressRewriteBudget);
    each runs only while `leases` (default: this process's) holds the lease named after it,
    with its side effects fenced by that lease (bot.services.fencing). `ticks` times each
    tick and keeps each cluster's last success (/metrics, /readyz)."""
    from bot.services.after_submit import after_person_submit
    from bot.services.competitors import release_started
    from bot.services.fencing import fenced_context
    from bot.services.probes import PROBES_EVERY_S, run_requested_probes
    from bot.services.runs import announce_unposted_roots, recover_submits_in_flight

    scheduler = JobScheduler(leases or LeaseKeeper(ctx.store.leases), clock=clock)
    holds = fenced_context(ctx, scheduler.fence("holds"))
    scheduler.run_repeating("holds", lambda now: release_started(holds, now),
                            every_s=ctx.config.policy.tick_s)
    schedule_prompts(scheduler, ctx)
    submits = fenced_context(ctx, scheduler.fence("submits"))
    # the unposted roots, at the first run of each hold of the `submits` lease: a replica
    # taking the job over (back) announces the roots a dead holder left
    announced: list[bool] = []

    def recover_submits(now: float) -> None:
        if not announced:
            announce_unposted_roots(submits)
            announced.append(True)
        recover_submits_in_flight(submits, now, after_submit=after_person_submit)

    scheduler.run_repeating("submits", recover_submits, every_s=ctx.config.policy.tick_s,
                            on_regained=announced.clear)
    probes = fenced_context(ctx, scheduler.fence("probes"))
    scheduler.run_repeating("probes", lambda now: run_requested_probes(probes, now),
                            every_s=PROBES_EVERY_S)
    for name in ctx.config.clusters:
        job_id = f"watch:{name}"
        watcher = build_watcher(fenced_context(ctx, scheduler.fence(job_id)), name,
                                webhook=webhook)
        tick = watcher.tick if ticks is None else ticks.observed(name, watcher.tick)
        scheduler.run_repeating(job_id, _logged_as(tick, cluster=name),
                                every_s=tick_interval(ctx.config, name),
                                on_regained=watcher.forget)
    return scheduler


def _logged_as(callback: Callable[[float], Any], **fields: object
               ) -> Callable[[float], Any]:
    """`callback`, its log lines carrying `fields` (bot.log_format.log_fields)."""
    from bot.log_format import log_fields

    def run(now: float) -> Any:
        with log_fields(**fields):
            return callback(now)

    return run


class TickHealth:
    """Times each watcher tick and counts what it did (bot.ops.metrics), and keeps, for
    /readyz (bot.core.readiness), when each cluster's last successful tick started
    (`last_ok`, the tick's `now`) and ended (`ok_ended`: its `now` plus the time it took, by
    `timer`), and how long its last `STALE_TICKS` successful ticks took (`took_s`)."""

    def __init__(self, metrics: ServiceMetrics, *, clock: Callable[[], float] = time.time,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self.metrics, self.clock, self.timer = metrics, clock, timer
        self.started_at = clock()
        self.last_ok: dict[str, float] = {}
        self.ok_ended: dict[str, float] = {}
        self._took: dict[str, deque[float]] = {}

    @property
    def took_s(self) -> dict[str, float]:
        """Cluster -> the longest of its last `STALE_TICKS` successful ticks, in seconds."""
        return {cluster: max(took) for cluster, took in self._took.items()}

    def observed(self, cluster: str, tick: Callable[[float], TickReport]
                 ) -> Callable[[float], TickReport]:
        m = self.metrics

        def run(now: float) -> TickReport:
            started = self.timer()
            try:
                report = tick(now)
            except BaseException:
                m.ticks.labels(cluster, "failed").inc()
                raise
            finally:
                took = self.timer() - started
                m.tick_seconds.labels(cluster).observe(took)
            m.ticks.labels(cluster, "ok" if report.ok else "failed").inc()
            if report.ok:
                self.last_ok[cluster] = now
                self.ok_ended[cluster] = now + took
                self._took.setdefault(cluster, deque(maxlen=STALE_TICKS)).append(took)
                m.last_ok_tick.labels(cluster).set(now)
            m.log_bytes.labels(cluster).inc(report.bytes_read)
            m.round_trips.labels(cluster).inc(report.round_trips)
            m.bytes_moved.labels(cluster).inc(report.bytes_moved)
            if report.resubmits_failed:
                m.resubmits.labels(cluster, "failed").inc(report.resubmits_failed)
            for event in report.events:
                if event.kind == "incident" and event.diagnosis is not None:
                    m.incidents.labels(cluster, event.diagnosis.class_id).inc()
                elif event.kind == "resubmitted":
                    m.resubmits.labels(cluster, "submitted").inc()
            return report

        return run


def build_app(
    config: Config,
    services: BotContext,
    *,
    client: WebClient | None = None,
    listener_executor: Executor | None = None,
    token_verification_enabled: bool = True,
    fence: ListenerFence | None = None,
) -> App:
    """The Bolt app with trainbot's listeners and one error handler.

    `client` defaults to the services' poster client; tests pass one pointed at the Slack
    stand-in and may pass a synchronous `listener_executor` so lazy listeners finish inside
    `app.dispatch`. `fence` (handlers.fence) counts the listeners' work and, once the bot
    stops, refuses new work.
    """
    import handlers.actions
    import handlers.home
    import handlers.slash_commands

    if client is None:
        client = getattr(services.sink, "client", None) or slack_client(config)
    secret = config.slack_secrets.signing_secret
    kwargs: dict[str, Any] = {}
    if listener_executor is not None:
        kwargs["listener_executor"] = listener_executor
    app = _BotApp(
        client=client,
        signing_secret=secret.get_secret_value() if secret else "",
        # Socket Mode requests are not signed; HTTP requests are always verified.
        request_verification_enabled=config.slack.mode == "http",
        token_verification_enabled=token_verification_enabled,
        process_before_response=False,
        **kwargs,
    )

    @app.error
    def on_error(error: Exception, body: dict[str, Any], logger: logging.Logger) -> None:
        """Errors raised in acks and middleware (lazy listeners report their own)."""
        kind = body.get("type") or ("slash_command" if "command" in body else "unknown")
        user = (body.get("user") or {}).get("id") or body.get("user_id")
        logger.error("unhandled %s from %s: %s", kind, user, error, exc_info=error)

    handlers.slash_commands.register(app, services, fence)
    handlers.actions.register(app, services, fence)
    handlers.home.register(app, services, fence)
    return app


class _BotApp(App):
    """Bolt's App giving each request's handlers a client of the app's client's class
    (bot.slack.retry.request_client): their Web API calls counted in the bot's metrics and
    each request bounded as a whole, as the poster's are. slack_bolt makes a plain WebClient
    per request in `_init_context`, which has no factory to ask for another."""

    def _init_context(self, req: BoltRequest) -> None:
        super()._init_context(req)
        req.context["client"] = request_client(self._client, req.context.client)


def start(app: App, config: Config, *, http_port: int = 3000) -> None:
    """Serve until stopped: Socket Mode with the xapp- token, or HTTP on `http_port`."""
    missing = config.slack_secrets.missing(config.slack)
    if missing:
        raise ConfigError(f"slack.mode={config.slack.mode} needs ${', $'.join(missing)} in "
                          "the environment")
    if config.slack.mode == "socket":
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        app_token = config.slack_secrets.app_token
        assert app_token is not None
        handler = SocketModeHandler(app, app_token.get_secret_value())
        try:
            handler.start()
        finally:
            handler.close()
    else:
        app.start(port=http_port)  # its server closes its socket on the way out


class StopRequested(BaseException):
    """SIGTERM or SIGINT, raised in the main thread to end serving (a BaseException, like
    KeyboardInterrupt: no `except Exception` on the way swallows it)."""


class _StopSignals:
    """While in effect, SIGTERM (systemd, containers) and SIGINT (Ctrl-C) raise StopRequested
    in the main thread, once: after the first, or once `shutting_down` is set, a signal is
    only logged, so the shutdown itself is never interrupted (it is bounded anyway)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.shutting_down = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.shutting_down:
            log.info("%s received; already stopping", name)
            return
        self.shutting_down = True
        log.info("%s received: stopping", name)
        raise StopRequested(name)


def _health_server(services: BotContext, scheduler: JobScheduler, ticks: TickHealth,
                   host: str, port: int) -> HealthServer:
    """/healthz: the scheduler runs; /readyz: the store answers and every cluster watched
    here ended a successful tick within its last 3 ticks (each the longer of its interval and
    its recent ticks' time), listing those another replica watches (bot.core.readiness);
    /metrics."""
    from bot.core.readiness import readiness
    from bot.ops.health import HealthServer

    config, store = services.config, services.store

    def alive() -> tuple[bool, str]:
        return (True, "ok") if scheduler.running else (False, "the scheduler is not running")

    def ready() -> tuple[bool, str]:
        try:
            store.schema_version  # noqa: B018 - a read: is the store reachable?
        except Exception as exc:  # noqa: BLE001 - any failure: not ready
            return False, f"store unreachable: {exc}"
        every = {name: tick_interval(config, name) for name in config.clusters}
        elsewhere = {n: (h and holder_label(h)) for n in config.clusters
                     if scheduler.leases.held_elsewhere(f"watch:{n}")
                     for h in [store.leases.holder(f"watch:{n}")]}
        return readiness(now=ticks.clock(), started_at=ticks.started_at, every_s=every,
                         last_ok=ticks.ok_ended, took_s=ticks.took_s, held_elsewhere=elsewhere)

    ticks.metrics.watch_store(
        pending_approvals=lambda: sum(1 for a in store.approvals.pending()
                                      if a.expires_at > ticks.clock()),
        lease_holders=lambda: [(job.id, holder) for job in scheduler.jobs()
                               if (holder := store.leases.holder(job.id)) is not None])
    try:
        return HealthServer(host, port, ticks.metrics.registry, alive=alive, ready=ready)
    except OSError as exc:  # taken, or not ours to bind
        raise ConfigError(f"metrics port: cannot listen on {host}:{port}: {exc.strerror or exc}"
                          ) from None


def _wait_for_stop() -> None:
    """Without Slack the main thread only waits for SIGTERM / SIGINT (StopRequested)."""
    while True:
        time.sleep(1.0)  # a signal interrupts it


def run(config: Config, *, http_port: int = 3000, slack: bool = True,
        metrics_port: int | None = None, webhook: JsonPoster | None = None) -> None:
    """The bot, built from `config` and served until stopped by SIGTERM or SIGINT (Ctrl-C).
    Without `slack`, the watchers run alone and what they would post is logged; `webhook`
    gets each watcher event as JSON; `metrics_port` (on `service.metrics_host`) serves
    /healthz, /readyz and /metrics. At a stop, within STOP_WITHIN_S: no new
    Slack request or scheduled run is taken and no side effect started (a Slack request
    already received is answered that trainbot is restarting), the runs under way end at
    their next step, the Slack handlers under way are waited for (STOP_GRACE_S from the
    stop's start), this replica's leases are released (another replica takes the jobs over at
    once), the health server, SSH connections (none is opened again: a handler still under
    way gets a ClusterError) and the store are closed.
    Raises StoreError or CatalogueError (with what is wrong) before anything starts."""
    from bot.ops.metrics import ServiceMetrics

    metrics = ServiceMetrics()
    services = build_context(config, slack=slack, metrics=metrics)
    ticks = TickHealth(metrics)
    health = None
    fence = ListenerFence()
    try:
        app = build_app(config, services, listener_executor=DaemonThreadExecutor(),
                        fence=fence) if slack else None
        scheduler = build_scheduler(services, ticks=ticks, webhook=webhook)
        if metrics_port is not None:
            health = _health_server(services, scheduler, ticks, config.service.metrics_host,
                                    metrics_port)
    except BaseException:
        services.clusters.close()
        services.store.close()
        raise
    with _StopSignals() as signals:
        scheduler.start()
        if health is not None:
            health.start()
        try:
            if app is not None:
                start(app, config, http_port=http_port)
            else:
                log.info("running without Slack: events go to the log%s",
                         " and the webhook" if webhook is not None else "")
                _wait_for_stop()
        except (StopRequested, KeyboardInterrupt):
            pass
        finally:
            signals.shutting_down = True
            stopped_at = time.monotonic()
            fence.refuse()
            scheduler.stop(grace_s=STOP_GRACE_S)
            # the handlers ran alongside the runs: their wait ends STOP_GRACE_S after the
            # stop's start (at once when the runs' wait and the release took that long)
            fence.wait(STOP_GRACE_S - (time.monotonic() - stopped_at))
            if health is not None:
                bounded("stopping the health server", health.stop, CLOSE_WAIT_S)
            bounded("closing the SSH connections", services.clusters.close, CLOSE_WAIT_S)
            bounded("closing the store", services.store.close, CLOSE_WAIT_S)
            log.info("stopped")
