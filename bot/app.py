"""Compose the running bot: config → store → clusters → Slack app (+ the scheduler in run.py).

`build_app` only wires: listeners live in `handlers/` (each `register(app, services)`), logic
in `bot/services/`. Socket Mode is the default (an outbound WebSocket: no public URL behind a
cluster firewall); HTTP mode needs the signing secret and a public HTTPS endpoint.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from bot.config import Config, ConfigError
from bot.services.runs import BotContext

log = logging.getLogger(__name__)


def build_context(config: Config, client: WebClient | None = None) -> BotContext:
    """The services of a running bot: store, cluster sessions and the thread poster (these
    two redact the config's secrets from what they write: `Config.redactor()`)."""
    from bot.services.clusters import ClusterSessions
    from bot.slack.poster import SlackPoster
    from bot.store import Store

    redactor = config.redactor()
    store = Store.open(config.store.url, redactor=redactor)
    client = client or slack_client(config)
    return BotContext(config=config, store=store, clusters=ClusterSessions(config),
                      sink=SlackPoster(client, store, redactor=redactor))


def slack_client(config: Config) -> WebClient:
    """The bot's WebClient (429/5xx retries), from the token in the environment."""
    from bot.slack.retry import make_client

    token = config.slack_secrets.bot_token
    if token is None:
        raise ConfigError(f"${config.slack.bot_token_env} is not set: export the xoxb- bot "
                          "token (it is never read from the config file)")
    return make_client(token.get_secret_value())


def build_app(
    config: Config,
    services: BotContext,
    *,
    client: WebClient | None = None,
    listener_executor: Executor | None = None,
    token_verification_enabled: bool = True,
) -> App:
    """The Bolt app with trainbot's listeners and one error handler.

    `client` defaults to the services' poster client; tests pass one pointed at the Slack
    stand-in and may pass a synchronous `listener_executor` so lazy listeners finish inside
    `app.dispatch`.
    """
    import handlers.actions
    import handlers.slash_commands

    if client is None:
        client = getattr(services.sink, "client", None) or slack_client(config)
    secret = config.slack_secrets.signing_secret
    kwargs: dict[str, Any] = {}
    if listener_executor is not None:
        kwargs["listener_executor"] = listener_executor
    app = App(
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

    handlers.slash_commands.register(app, services)
    handlers.actions.register(app, services)
    return app


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
        SocketModeHandler(app, app_token.get_secret_value()).start()
    else:
        app.start(port=http_port)
