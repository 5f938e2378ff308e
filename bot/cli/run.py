"""`trainbot run [--config PATH]`: start the Slack app and the scheduler (hold releases and one
watcher tick per configured cluster); runs until stopped. Several replicas may run on one
database: each scheduled job runs in the one replica holding its lease (bot.services.leases).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot.cli import EXIT_OK, EXIT_USAGE
from bot.config import CONFIG_ENV_VAR, ConfigError, load_config, resolve_config_path

if TYPE_CHECKING:
    from bot.services.leases import LeaseKeeper

NAME = "run"
HELP = "Run the bot: the Slack app (Socket Mode by default) and the scheduler."

log = logging.getLogger(__name__)

Tick = Callable[[Any, float], None]  # (services, now) -> None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"config file (default: ${CONFIG_ENV_VAR}, else ./trainbot.yaml)",
    )
    parser.add_argument(
        "--http-port", type=int, default=3000, metavar="PORT",
        help="port for slack.mode=http (ignored in Socket Mode)",
    )  # fmt: skip


def build_scheduler(services: Any, *, tick: Tick | None = None,
                    clock: Callable[[], float] = time.time, watch: bool = False,
                    catalogue: Any = None, leases: LeaseKeeper | None = None) -> Any:
    """A UTC BackgroundScheduler (coalesce, max_instances=1) with trainbot's periodic jobs.

    `holds` releases held competitors once their resumed job runs. `watch` is a custom tick
    function's job, registered only when `tick` is given. With `watch=True` every configured
    cluster gets its production watcher (`add_watchers`), `watch:<cluster>`. Each job runs
    only while `leases` (default: this process's) holds the lease named after its id.
    """
    from apscheduler.schedulers.background import BackgroundScheduler

    from bot.services.competitors import release_started
    from bot.services.leases import LeaseKeeper

    scheduler = BackgroundScheduler(
        timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1}
    )
    every = services.config.policy.tick_s
    leases = leases or LeaseKeeper(services.store.leases)

    def guarded(name: str, fn: Callable[[Any, float], Any]) -> Callable[[], None]:
        def run() -> None:
            try:
                now = clock()
                if leases.holds(name, now, every):
                    fn(services, now)
            except Exception:  # a failed tick is reported, and the next one still runs
                log.exception("scheduled job %s failed", name)

        return run

    scheduler.add_job(guarded("holds", release_started), "interval", seconds=every, id="holds",
                      replace_existing=True)
    if tick is not None:
        scheduler.add_job(guarded("watch", tick), "interval", seconds=every, id="watch",
                          replace_existing=True)
    if watch:
        add_watchers(scheduler, services, catalogue=catalogue, clock=clock, leases=leases)
    return scheduler


def tick_interval(config: Any, cluster: str) -> float:
    """Seconds between a cluster's watcher ticks: the policy's `tick_s`, or the shortest a
    recipe on that cluster asks for (a recipe with short thresholds needs ticks as short)."""
    seconds = [config.policy_for(name).tick_s for name, recipe in config.recipes.items()
               if recipe.cluster == cluster]
    return min([config.policy.tick_s, *seconds])


def add_watchers(scheduler: Any, services: Any, *, catalogue: Any = None,
                 clock: Callable[[], float] | None = None,
                 leases: LeaseKeeper | None = None) -> list[Any]:
    """One watcher job (`watch:<cluster>`, coalesced, one instance at a time) per configured
    cluster, every `tick_interval`, ticking only while `leases` (default: this process's)
    holds the job's lease. The catalogue defaults to the packaged one extended by
    the config's `catalogue.extra` site files (a bad file raises CatalogueError at startup,
    not on the first tick)."""
    from bot.core.catalogue import Catalogue
    from bot.services.leases import LeaseKeeper
    from bot.services.watch.tick import schedule_ticks
    from bot.services.watch_events import build_watcher

    config = services.config
    if catalogue is None:
        catalogue = Catalogue.load(config.catalogue.extra)
    leases = leases or LeaseKeeper(services.store.leases)
    return [
        schedule_ticks(scheduler, build_watcher(services, name, catalogue),
                       seconds=tick_interval(config, name), clock=clock, leases=leases)
        for name in config.clusters
    ]


def run(args: argparse.Namespace, tick: Tick | None = None) -> int:
    from bot.app import build_app, build_context, start
    from bot.cli.doctor import startup_checks
    from bot.core.catalogue import Catalogue, CatalogueError
    from bot.core.redact import Redactor
    from bot.log_redaction import install_log_redaction
    from bot.services.leases import LeaseKeeper
    from bot.store import StoreError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    install_log_redaction(Redactor())
    try:
        config = load_config(resolve_config_path(args.config))
        install_log_redaction(config.redactor())
        missing = config.slack_secrets.missing(config.slack)
        if missing:
            raise ConfigError(f"slack.mode={config.slack.mode} needs ${', $'.join(missing)} "
                              "set in the environment (never in the config file)")
        failed = next((c for c in startup_checks(config) if not c.ok), None)
        if failed is not None:
            raise ConfigError(failed.detail)  # in doctor's words
        catalogue = Catalogue.load(config.catalogue.extra)
        services = build_context(config)
    except (ConfigError, StoreError, CatalogueError) as exc:
        print(f"trainbot run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    app = build_app(config, services)
    leases = LeaseKeeper(services.store.leases)
    scheduler = build_scheduler(services, tick=tick, watch=True, catalogue=catalogue,
                                leases=leases)
    scheduler.start()
    try:
        start(app, config, http_port=args.http_port)
    except KeyboardInterrupt:
        pass
    finally:
        scheduler.shutdown(wait=False)
        leases.release_all()  # the other replicas take the jobs over on their next tick
        services.clusters.close()
        services.store.close()
    return EXIT_OK
