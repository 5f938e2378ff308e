"""The `slack:`, `store:`, `catalogue:`, `templates:` and `service:` sections, and the Slack
secrets read from the environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from bot.config.models._base import _SLACK_CHANNEL_ID_RE, _SLACK_USER_RE, _Model
from bot.core.slack_bounds import CALL_TIMEOUT_S, POST_DEADLINE_S, post_deadline_refusal


class SlackConfig(_Model):
    """Slack channels, people and where the tokens come from (never the tokens themselves).
    A value set on a loaded config is validated as the file's are (validate_assignment)."""

    model_config = ConfigDict(validate_assignment=True)

    mode: Literal["socket", "http"] = Field(
        "socket", description="Socket Mode (no public URL) or HTTP events (needs signing secret)."
    )
    channels: dict[str, str] = Field(
        default_factory=dict, description="Channel names used in this file → Slack channel ids."
    )
    default_channel: str | None = Field(
        None, description="Channel name for recipes that do not name one."
    )
    lang: str = Field("en", description="Default language of messages (en, or one with a "
                      "message catalogue: templates/locale/<lang>/LC_MESSAGES/messages.po).")
    approvers: list[str] = Field(
        default_factory=list, description="Default approvers: Slack user ids or group names."
    )
    groups: dict[str, list[str]] = Field(
        default_factory=dict, description="Named groups of Slack user ids (e.g. a team)."
    )
    bot_token_env: str = Field(
        "SLACK_BOT_TOKEN", description="Environment variable holding the xoxb- bot token."
    )
    app_token_env: str = Field(
        "SLACK_APP_TOKEN",
        description="Environment variable holding the xapp- app token (Socket Mode).",
    )
    signing_secret_env: str = Field(
        "SLACK_SIGNING_SECRET",
        description="Environment variable holding the signing secret (HTTP mode).",
    )
    api_url: str = Field(
        "https://slack.com/api/",
        description="Slack Web API base URL: https://slack-gov.com/api/ for GovSlack; plain "
                    "http only to this machine (a stand-in in tests).",
    )
    proxy: str | None = Field(
        None,
        description="The HTTP proxy Slack is reached through (http://host:port): the Web "
                    "API, chart uploads and Socket Mode's connection. No password here "
                    "(secrets come from the environment): a proxy that needs one goes in "
                    "HTTPS_PROXY. Unset: HTTPS_PROXY, https_proxy, HTTP_PROXY or http_proxy, "
                    "as slack_sdk reads them.",
    )
    post_deadline_s: float = Field(
        POST_DEADLINE_S,
        description="Seconds one Slack post, update, Home tab or chart upload may take in all: "
                    "its attempts, the client's retries and 429 waits stop at it. A run's "
                    "root claim and the takeover of a post a dead bot began wait this, one "
                    "request's timeout (30 s) and a margin. More than 60 s: an upload's URL "
                    "request and its bytes (30 s each at most) are both sent before it.",
    )

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        url = urlsplit(value)
        local = url.hostname in ("localhost", "127.0.0.1", "::1")
        if not url.hostname or not (url.scheme == "https" or (url.scheme == "http" and local)):
            raise ValueError(f"api_url: {value!r} must be an https:// URL (the bot token is "
                             "sent to it; plain http only to localhost), e.g. "
                             "https://slack.com/api/")
        return value if value.endswith("/") else value + "/"

    @field_validator("proxy")
    @classmethod
    def _proxy(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = proxy_url_problem(value)
        if problem is not None:
            raise ValueError(f"proxy: {problem}; give the proxy's URL as http://host:port")
        if urlsplit(value.strip()).password is not None:
            raise ValueError("proxy: it carries a password, and secrets come only from the "
                             "environment: set HTTPS_PROXY (http://user:password@host:port) "
                             "instead and leave slack.proxy unset, or give http://host:port")
        return value.strip()  # as checked: slack_sdk parses its port, which a blank breaks

    @field_validator("post_deadline_s")
    @classmethod
    def _post_deadline(cls, value: float) -> float:
        # NaN and infinity: refused by the model (allow_inf_nan)
        refusal = post_deadline_refusal(value, CALL_TIMEOUT_S)
        if refusal is not None:
            raise ValueError(f"post_deadline_s: {refusal}; default {POST_DEADLINE_S:g}")
        return value

    @field_validator("channels")
    @classmethod
    def _channel_ids(cls, value: dict[str, str]) -> dict[str, str]:
        for name, cid in value.items():
            if not _SLACK_CHANNEL_ID_RE.match(cid):
                raise ValueError(
                    f"channels.{name}: {cid!r} is not a Slack channel id; use the id "
                    "(C… or G…, from the channel's details), not its name"
                )
        return value

    @field_validator("groups")
    @classmethod
    def _group_members(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, members in value.items():
            for user in members:
                if not _SLACK_USER_RE.match(user):
                    raise ValueError(f"groups.{name}: {user!r} is not a Slack user id (U… or W…)")
        return value


def proxy_url_problem(value: str) -> str | None:
    """What keeps `value` from being an HTTP proxy's URL as slack_sdk uses one (urllib's
    proxy for the Web API, Socket Mode's CONNECT tunnel): None when nothing does. Never
    repeats the URL (its password)."""
    url = urlsplit(value.strip())
    if url.scheme != "http":
        return (f"its scheme is {url.scheme!r}, not http (an https:// proxy is reached without "
                "TLS by slack_sdk all the same)" if url.scheme else "it has no http:// scheme")
    if not url.hostname:
        return "it names no host"
    try:
        url.port  # noqa: B018 - parsing it is the check
    except ValueError:
        return "its port is not a number from 0 to 65535"
    if url.path not in ("", "/") or url.query or url.fragment:
        return "it has a path or query (a proxy's URL is its scheme, host and port)"
    return None


class SlackSecrets(BaseModel):
    """Slack secrets read from the environment at load time; None where the variable is unset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bot_token: SecretStr | None = Field(None, description="xoxb- bot token.")
    app_token: SecretStr | None = Field(None, description="xapp- app-level token.")
    signing_secret: SecretStr | None = Field(None, description="Request signing secret.")

    def missing(self, slack: SlackConfig) -> list[str]:
        """Names of environment variables the configured mode needs but that are unset."""
        need = [("bot_token", slack.bot_token_env)]
        if slack.mode == "socket":
            need.append(("app_token", slack.app_token_env))
        else:
            need.append(("signing_secret", slack.signing_secret_env))
        return [env for attr, env in need if getattr(self, attr) is None]


def read_slack_secrets(slack: SlackConfig, env: Mapping[str, str]) -> SlackSecrets:
    """Read the Slack secrets from `env` (os.environ in production, a dict in tests)."""

    def get(name: str) -> SecretStr | None:
        value = env.get(name, "").strip()
        return SecretStr(value) if value else None

    return SlackSecrets(
        bot_token=get(slack.bot_token_env),
        app_token=get(slack.app_token_env),
        signing_secret=get(slack.signing_secret_env),
    )


class StoreConfig(_Model):
    """Where trainbot keeps its state."""

    url: str = Field(
        "sqlite:///~/.local/state/trainbot/trainbot.db",
        description="SQLAlchemy URL; SQLite file by default (~ expanded), PostgreSQL for HA. "
        "$TRAINBOT_STORE_URL, when set, is used instead (keeps a password out of this file).",
    )


class CatalogueConfig(_Model):
    """Extra failure catalogue files merged over the built-in one."""

    extra: list[str] = Field(
        default_factory=list, description="Paths of extra catalogue YAML files."
    )


class TemplatesConfig(_Model):
    """Message template location."""

    dir: str | None = Field(
        None, description="Folder whose templates override the shipped ones (same names)."
    )


WEBHOOK_SECRET_MIN_CHARS = 16  # a webhook URL's path or query this long is taken as a secret


class ServiceConfig(_Model):
    """How `trainbot run` reports on itself (its command-line options override these)."""

    metrics_port: int | None = Field(
        None, ge=1, le=65535, description="Port of /healthz, /readyz and /metrics; none: "
        "not served.")
    metrics_host: str = Field(
        "127.0.0.1", description="Address the metrics port listens on (0.0.0.0 in a container "
        "whose orchestrator probes it).")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Least severe log level written.")
    log_format: Literal["text", "json"] = Field(
        "text", description="Log lines as text or one JSON object each (for a log pipeline).")
    webhook_url: str | None = Field(
        None, description="With `run --no-slack`: each watcher event is POSTed as JSON here.")
