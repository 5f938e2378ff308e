"""`trainbot run [--config PATH]`: start the Slack app and the scheduler; runs until stopped."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from bot.cli import EXIT_OK, EXIT_USAGE
from bot.config import CONFIG_ENV_VAR, ConfigError, load_config, resolve_config_path

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
                    clock: Callable[[], float] = time.time) -> Any:
    """A UTC BackgroundScheduler (coalesce, max_instances=1) with trainbot's periodic jobs.

    `holds` releases held competitors once their resumed job runs. `watch` is the watcher tick
    and is registered only when a tick function is given.
    """
    from apscheduler.schedulers.background import BackgroundScheduler

    from bot.services.competitors import release_started

    scheduler = BackgroundScheduler(
        timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1}
    )
    every = services.config.policy.tick_s

    def guarded(name: str, fn: Callable[[Any, float], Any]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn(services, clock())
            except Exception:  # a failed tick is reported, and the next one still runs
                log.exception("scheduled job %s failed", name)

        return run

    scheduler.add_job(guarded("holds", release_started), "interval", seconds=every, id="holds",
                      replace_existing=True)
    if tick is not None:
        scheduler.add_job(guarded("watch", tick), "interval", seconds=every, id="watch",
                          replace_existing=True)
    return scheduler


def run(args: argparse.Namespace, tick: Tick | None = None) -> int:
    from bot.app import build_app, build_context, start
    from bot.store import StoreError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    try:
        config = load_config(resolve_config_path(args.config))
        missing = config.slack_secrets.missing(config.slack)
        if missing:
            raise ConfigError(f"slack.mode={config.slack.mode} needs ${', $'.join(missing)} "
                              "set in the environment (never in the config file)")
        services = build_context(config)
    except (ConfigError, StoreError) as exc:
        print(f"trainbot run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    app = build_app(config, services)
    scheduler = build_scheduler(services, tick=tick)
    scheduler.start()
    try:
        start(app, config, http_port=args.http_port)
    except KeyboardInterrupt:
        pass
    finally:
        scheduler.shutdown(wait=False)
        services.clusters.close()
        services.store.close()
    return EXIT_OK
