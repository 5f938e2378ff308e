"""`trainbot run [--config PATH]`: the bot (bot.app.run): the Slack app and the scheduler (hold
releases and one watcher tick per configured cluster); runs until stopped. Several replicas
may run on one database: each scheduled job runs in the one replica holding its lease.
`--no-slack` runs the watchers alone, `--webhook` sends their events as JSON,
`--metrics-port` serves /healthz, /readyz and /metrics.
"""

from __future__ import annotations

import argparse
import sys

from bot.cli import EXIT_OK, EXIT_USAGE
from bot.config import CONFIG_ENV_VAR, ConfigError, load_config, resolve_config_path
from bot.log_format import LOG_FORMATS, LOG_LEVELS, configure_logging

NAME = "run"
HELP = "Run the bot: the Slack app (Socket Mode by default) and the scheduler."


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
    parser.add_argument("--log-level", choices=LOG_LEVELS,
                        help="least severe level logged (default: service.log_level, info)")
    parser.add_argument("--log-format", choices=LOG_FORMATS,
                        help="text, or one JSON object a line with cluster, chain, job and "
                             "event_key fields (default: service.log_format, text)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve /healthz, /readyz and /metrics on this port (default: "
                             "service.metrics_port; none: not served)")
    parser.add_argument("--metrics-host", metavar="ADDRESS",
                        help="address of the metrics port (default: service.metrics_host, "
                             "127.0.0.1; 0.0.0.0 in a container)")
    parser.add_argument("--no-slack", action="store_true",
                        help="watch, diagnose and decide without Slack: events go to the log "
                             "(and --webhook); no Slack token needed")
    parser.add_argument("--webhook", metavar="URL",
                        help="POST each watcher event as JSON to URL (default: "
                             "service.webhook_url)")


def run(args: argparse.Namespace) -> int:
    import bot.app
    from bot.cli.doctor import startup_checks
    from bot.core.catalogue import CatalogueError
    from bot.core.redact import Redactor
    from bot.log_redaction import install_log_redaction
    from bot.ops.webhook import JsonWebhook
    from bot.store import StoreError

    configure_logging(args.log_level or "info", args.log_format or "text")
    install_log_redaction(Redactor())  # token shapes, until the config names its secrets
    try:
        config = load_config(resolve_config_path(args.config))
        service = config.service
        configure_logging(args.log_level or service.log_level,
                          args.log_format or service.log_format)
        overrides = {k: v for k, v in (("metrics_host", args.metrics_host),
                                         ("webhook_url", args.webhook)) if v is not None}
        if overrides:
            service = service.model_copy(update=overrides)
            config = config.model_copy(update={"service": service})
        install_log_redaction(config.redactor())  # the webhook URL's secret included
        metrics_port = args.metrics_port or service.metrics_port
        webhook_url = service.webhook_url
        try:
            webhook = JsonWebhook(webhook_url) if webhook_url else None
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        missing = [] if args.no_slack else config.slack_secrets.missing(config.slack)
        if missing:
            raise ConfigError(f"slack.mode={config.slack.mode} needs ${', $'.join(missing)} "
                              "set in the environment (never in the config file)")
        failed = next((c for c in startup_checks(config) if not c.ok), None)
        if failed is not None:
            raise ConfigError(failed.detail)  # in doctor's words
        bot.app.run(config, http_port=args.http_port, slack=not args.no_slack,
                    metrics_port=metrics_port, webhook=webhook)
    except (ConfigError, StoreError, CatalogueError) as exc:
        print(f"trainbot run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
