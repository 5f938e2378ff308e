"""`trainbot doctor [--json]`: check the config, SSH, Slurm, the store and Slack (the tokens,
then the API: auth, scopes, the bot in each recipe's channel), with fixes.

Each check prints PASS or FAIL with what was found; a FAIL also prints the fix (`--json`: one
object with every check). Exit 0 only when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from bot.cli import EXIT_FAILED, EXIT_OK
from bot.config import (
    CONFIG_ENV_VAR,
    EXAMPLE_CONFIG,
    ClusterConfig,
    Config,
    ConfigError,
    SlackConfig,
    load_config,
    resolve_config_path,
)

NAME = "doctor"
HELP = "Check the config, SSH to each cluster, Slurm, the state store and Slack."


@dataclass(frozen=True)
class Check:
    """One doctor check: what was checked, whether it passed, what was found, the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"config file (default: ${CONFIG_ENV_VAR}, else ./trainbot.yaml)",
    )
    parser.add_argument("--json", action="store_true",
                        help="print every check as JSON (name, ok, detail, fix)")


def run(args: argparse.Namespace) -> int:
    path = resolve_config_path(args.config)
    if args.json:
        checks = list(run_checks(path, os.environ))
        ok = all(c.ok for c in checks)
        print(json.dumps({"config": str(path), "ok": ok,
                          "checks": [asdict(c) for c in checks]}, indent=2))
        return EXIT_OK if ok else EXIT_FAILED
    print(f"trainbot doctor: {path}")
    ok = True
    for check in run_checks(path, os.environ):
        ok = ok and check.ok
        print(format_check(check))
        sys.stdout.flush()
    print("all checks passed" if ok else "some checks FAILED; see the fixes above")
    return EXIT_OK if ok else EXIT_FAILED


def format_check(check: Check) -> str:
    line = f"  {'PASS' if check.ok else 'FAIL'}  {check.name}: {check.detail}"
    if not check.ok and check.fix:
        line += f"\n        fix: {check.fix}"
    return line


def run_checks(
    path: os.PathLike[str] | str,
    env: Mapping[str, str],
    *,
    runner_factory: Callable[[ClusterConfig], Any] | None = None,
    slack_client_factory: Callable[[Config], Any] | None = None,
) -> Iterator[Check]:
    """Yield the checks in order; later checks are skipped when the config is unusable (and
    the Slack API ones when the tokens are)."""
    try:
        config = load_config(path, env=env)
    except ConfigError as exc:
        yield Check(
            "config",
            False,
            str(exc),
            f"correct the file (see {EXAMPLE_CONFIG}); the message names the key and line",
        )
        return
    yield Check(
        "config",
        True,
        f"valid ({len(config.clusters)} cluster(s), {len(config.recipes)} recipe(s))",
    )
    yield catalogue_check(config)
    for name, cluster in config.clusters.items():
        yield from _cluster_checks(config, name, cluster, runner_factory)
    yield _store_check(config)
    yield _post_bounds_check(config.slack)
    yield _proxy_check(config.slack, env)
    tokens = _slack_check(config)
    yield tokens
    if tokens.ok:
        yield from slack_api_checks(config, slack_client_factory or _default_slack_client)


def startup_checks(config: Config) -> list[Check]:
    """What `trainbot run` checks before it starts, without the network: the failure
    catalogue and each cluster's SSH settings. `run` refuses with the first failure's words,
    the same words `doctor` prints for it."""
    checks = [catalogue_check(config)]
    for name, cluster in config.clusters.items():
        settings = ssh_settings_check(name, cluster)
        if settings is not None:
            checks.append(settings)
    return checks


def catalogue_check(config: Config) -> Check:
    """The packaged failure catalogue merged with the site's `catalogue.extra` files."""
    from bot.core.catalogue import Catalogue, CatalogueError

    try:
        catalogue = Catalogue.load(config.catalogue.extra)
    except CatalogueError as exc:
        return Check("catalogue", False, str(exc),
                     "fix or remove that file in catalogue.extra (the packaged "
                     "bot/core/catalogue/catalogue.yaml shows the shape)")
    sites = len(config.catalogue.extra)
    return Check("catalogue", True,
                 f"{len(catalogue.classes)} failure classes ({sites} site file(s))")


def ssh_settings_check(name: str, cluster: ClusterConfig) -> Check | None:
    """A failed check when the cluster's SSH settings cannot be used (its ssh_config file, a
    port, the jump host); None when they can. Reads the ssh_config file, connects nowhere."""
    from bot.cluster.endpoint import resolve_endpoint
    from bot.cluster.errors import ClusterError

    try:
        resolve_endpoint(cluster.ssh_settings())
    except ClusterError as exc:
        return Check(f"ssh settings {name}", False, str(exc),
                     f"fix clusters.{name}.ssh_config's file or clusters.{name}.proxy_jump "
                     "as the message says")
    return None


def _default_runner(cluster: ClusterConfig) -> Any:
    from bot.cluster.ssh import SSHRunner

    return SSHRunner(cluster.ssh_settings())


def _cluster_checks(
    config: Config,
    name: str,
    cluster: ClusterConfig,
    runner_factory: Callable[[ClusterConfig], Any] | None,
) -> Iterator[Check]:
    from bot.cluster.errors import ClusterError, HostKeyRejected

    settings = ssh_settings_check(name, cluster)
    if settings is not None:
        yield settings
        return
    runner = (runner_factory or _default_runner)(cluster)
    where = f"{cluster.user + '@' if cluster.user else ''}{cluster.host}:{cluster.port}"
    try:
        try:
            runner.connect()
            runner.run(["true"], timeout=cluster.connect_timeout + 5)
        except HostKeyRejected as exc:
            yield Check(
                f"ssh {name}",
                False,
                f"host key refused: {exc}",
                "verify the login node's key fingerprint with the cluster admins, then put it "
                f"in {cluster.known_hosts or '~/.ssh/known_hosts'} (clusters.{name}.known_hosts)",
            )
            return
        except ClusterError as exc:
            yield Check(
                f"ssh {name}",
                False,
                f"cannot reach {where}: {exc}",
                f"check clusters.{name} host/port/user/key_file and that "
                f"`ssh -p {cluster.port} {where.rsplit(':', 1)[0]}` works from this machine",
            )
            return
        yield Check(f"ssh {name}", True, f"{where} reachable, host key matches known_hosts; "
                    f"{_ssh_bounds(name, cluster)}")
        yield _slurm_check(name, runner)
        yield slurm_version_check(name, cluster, runner)
        for recipe_name, recipe in config.recipes.items():
            if recipe.cluster == name:
                yield _recipe_check(recipe_name, recipe, runner)
    finally:
        runner.close()


def _ssh_bounds(name: str, cluster: ClusterConfig) -> str:
    """The SSH bounds the bot runs with on cluster `name`, each with the key that sets it."""
    key = f"clusters.{name}"
    return (f"a connection takes at most {cluster.connect_timeout:g} s "
            f"({key}.connect_timeout), a command {cluster.command_timeout:g} s "
            f"({key}.command_timeout), an SFTP reply {cluster.sftp_timeout:g} s "
            f"({key}.sftp_timeout); a command's output is read up to "
            f"{cluster.max_output_mib} MiB ({key}.max_output_mib)")


def _slurm_check(name: str, runner: Any) -> Check:
    from bot.cluster.errors import ClusterError
    from bot.cluster.slurm import SlurmClient

    try:
        info = SlurmClient(runner).probe()
    except (ClusterError, ValueError) as exc:  # ValueError: output we could not parse
        return Check(
            f"slurm {name}",
            False,
            str(exc),
            "check that Slurm's client commands (sbatch, squeue, sacct) are on the login "
            "node's PATH for this user and that slurmctld answers (`squeue` by hand)",
        )
    version = getattr(info, "version", None) or "unknown version"
    json_ok = bool(getattr(info, "json", False) or getattr(info, "has_json", False))
    detail = f"{version}, " + ("--json supported" if json_ok else "no --json: --parsable2")
    return Check(f"slurm {name}", True, detail)


def slurm_version_check(name: str, cluster: ClusterConfig, runner: Any) -> Check:
    """The cluster's Slurm release and the parsers trainbot reads it with; FAIL when
    `use_json` is set on a release whose JSON is known wrong, a warning when the release is
    newer than any tested one."""
    from bot.cluster.errors import ClusterError
    from bot.cluster.slurm import SlurmClient

    client = SlurmClient(runner, use_json=cluster.use_json, sacct_json=cluster.use_json)
    try:
        info = client.probe()
    except (ClusterError, ValueError) as exc:
        return Check(f"slurm version {name}", False, str(exc),
                     "check that `sinfo --version` works on the login node for this user")
    parsers = client.parsers
    assert parsers is not None  # set by probe()
    detail = (f"Slurm {info.version.split()[-1]}; reads {parsers.squeue}, {parsers.sacct}, "
              f"{parsers.sstat}")
    if parsers.warning:
        detail += f"; warning: {parsers.warning}"
    if parsers.refusal:
        return Check(f"slurm version {name}", False,
                     f"{detail}; use_json refused: {parsers.refusal}",
                     f"remove clusters.{name}.use_json (the columns are read right on this "
                     "release)")
    return Check(f"slurm version {name}", True, detail)


def _recipe_check(recipe_name: str, recipe: Any, runner: Any) -> Check:
    """The recipe's batch script (or wrapper, if an absolute path) exists on the cluster."""
    from bot.cluster.errors import CommandFailed
    from bot.services.preflight import script_paths_on_cluster

    if recipe.submit_command:
        targets: tuple[str, ...] = (recipe.submit_command[0],)
        if not targets[0].startswith("/"):
            return Check(f"recipe {recipe_name}", True,
                         f"submit command {targets[0]!r} (on PATH)")
    else:
        # where sbatch looks, in its order (preflight reads the same): a relative path under
        # the workdir (--chdir), then in the login shell's home
        targets = script_paths_on_cluster(recipe)
    for target in targets:
        try:
            runner.run(["test", "-r", target], timeout=30)
        except CommandFailed:
            continue
        except Exception as exc:  # noqa: BLE001 - any failure here means "not usable"
            return Check(f"recipe {recipe_name}", False, f"cannot check {target}: {exc}")
        return Check(f"recipe {recipe_name}", True, f"{target} present on the cluster")
    missing = (f"neither {targets[0]} (the workdir, sbatch's --chdir) nor {targets[1]} in the "
               "home exists or is readable on the cluster" if len(targets) == 2 else
               f"{targets[0]} does not exist or is not readable on the cluster")
    return Check(
        f"recipe {recipe_name}",
        False,
        missing,
        f"fix recipes.{recipe_name}."
        f"{'sbatch_script' if recipe.sbatch_script else 'submit_command'} "
        "(it is a path on the cluster, not on this machine)",
    )


def _store_check(config: Config) -> Check:
    from bot.store import Store, display_url

    origin = config.store_url_origin
    url = display_url(config.store.url)
    if origin != "store.url":
        url += f" (from {origin})"
    try:
        with Store.open(config.store.url) as store:
            store.check_writable()
            version = store.schema_version
    except Exception as exc:  # noqa: BLE001 - report any failure with the URL
        return Check(
            "store",
            False,
            f"{url}: {exc}",
            f"set {origin} to a writable location (the folder is created if missing)",
        )
    return Check("store", True, f"{url} writable (schema v{version})")


_TOKEN_PREFIX = {"bot_token": "xoxb-", "app_token": "xapp-"}


def _slack_check(config: Config) -> Check:
    slack = config.slack
    secrets = config.slack_secrets
    missing = secrets.missing(slack)
    if missing:
        return Check(
            "slack tokens",
            False,
            f"{', '.join(missing)} not set (mode: {slack.mode})",
            "export "
            + " and ".join(missing)
            + " in the bot's environment (Slack app settings → OAuth & Permissions for the "
            "xoxb- bot token, Basic Information → App-Level Tokens for the xapp- token)",
        )
    for attr, prefix in _TOKEN_PREFIX.items():
        value = getattr(secrets, attr)
        if value is not None and not value.get_secret_value().startswith(prefix):
            env_name = getattr(slack, f"{attr}_env")
            return Check(
                "slack tokens",
                False,
                f"{env_name} does not start with {prefix!r}",
                f"put the {prefix}… token in {env_name} (tokens are easily swapped)",
            )
    return Check("slack tokens", True, f"present for {slack.mode} mode")


def _post_bounds_check(slack: SlackConfig) -> Check:
    """The post deadline the bot runs with (slack.post_deadline_s, validated with the
    config) and what follows from it: how long a post a dead process began is left before
    another run makes it (bot.core.takeover.post_takeover_s). Shown whatever the tokens'
    check says: it is configuration."""
    from bot.core.takeover import post_takeover_s

    return Check("slack posts", True,
                 f"a post, update or chart upload stops at {slack.post_deadline_s:g} s "
                 f"(slack.post_deadline_s); one a stopped bot began is made by another after "
                 f"{post_takeover_s(slack.post_deadline_s, kept=None):g} s")


_PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
"""Where slack_sdk reads a proxy from when none is given, in its order."""


def _sdk_env_proxy(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The variable slack_sdk takes its proxy from and the proxy (None: none), by its rule
    (slack_sdk.proxy_env_variable_loader): the first of _PROXY_ENV that is not empty, and
    no proxy if that one is blank (the variables after it are not read)."""
    name = next((n for n in _PROXY_ENV if env.get(n)), None)
    if name is None or not env[name].strip():
        return name, None
    return name, env[name]


def _urllib_env_proxy(env: Mapping[str, str], scheme: str) -> str | None:
    """The proxy urllib's own opener takes from `env` for a `scheme` URL (as
    urllib.request.getproxies_environment: any spelling of <scheme>_proxy that is not
    empty, a lowercase-suffixed name winning, an empty one of those unsetting it)."""
    key, found = f"{scheme}_proxy", None
    for name, value in env.items():
        if value and name.lower() == key:
            found = value
    for name, value in env.items():
        if name.endswith("_proxy") and name.lower() == key:
            found = value or None
    return found


def _proxy_check(slack: SlackConfig, env: Mapping[str, str]) -> Check:
    """The proxy Slack is reached through, its password masked: slack.proxy, else the one
    slack_sdk takes from `env` (_sdk_env_proxy; the Web API leaves NO_PROXY's hosts out;
    Socket Mode's connection does not read NO_PROXY). With no proxy there, the Web API's
    requests go through urllib's opener, which reads the environment its own way: a blank
    HTTPS_PROXY leaves slack_sdk without a proxy but is urllib's, and fails every request.
    Configuration: shown whatever the tokens' check says."""
    from bot.config.models.service import proxy_url_problem
    from bot.store import display_url

    if slack.proxy:
        return Check("slack proxy", True, f"through {display_url(slack.proxy)} (slack.proxy): "
                     "the Web API, chart uploads and Socket Mode")
    name, proxy = _sdk_env_proxy(env)
    if proxy is None:
        blank = f"${name} is blank, which slack_sdk reads as no proxy" if name else ""
        web = _urllib_env_proxy(env, urlsplit(slack.api_url).scheme)
        if name is not None and web is not None:
            shown = display_url(web) if web.strip() else "a blank one, which fails each request"
            return Check("slack proxy", False,
                         f"none for Socket Mode ({blank}, the variables after it unread), "
                         f"but the Web API and chart uploads take urllib's proxy from the "
                         f"environment: {shown}",
                         f"unset ${name}, or set it (or slack.proxy) to the proxy's "
                         "http://host:port URL")
        return Check("slack proxy", True, "none: Slack is reached directly"
                     + (f" ({blank})" if blank else " (set slack.proxy or HTTPS_PROXY to go "
                                                    "through one)"))
    assert name is not None
    problem = proxy_url_problem(proxy)
    shown = f"through {display_url(proxy)} (${name}): the Web API and chart uploads "\
            "(but NO_PROXY's hosts) and Socket Mode"
    if problem is not None:
        return Check("slack proxy", False, f"{shown}; but {problem}",
                     f"set ${name} (or slack.proxy) to the proxy's http://host:port URL")
    return Check("slack proxy", True, shown)


def _default_slack_client(config: Config) -> Any:
    from bot.slack.retry import make_client

    token = config.slack_secrets.bot_token
    assert token is not None  # the token check passed
    return make_client(token.get_secret_value(), base_url=config.slack.api_url,
                       rate_limit_retries=1, server_error_retries=1, timeout=15,
                       proxy=config.slack.proxy)


def slack_api_checks(config: Config, client_factory: Callable[[Config], Any]
                     ) -> Iterator[Check]:
    """Slack for real: `auth.test` (the token works), the scopes it was granted (its
    `x-oauth-scopes` header) against those the code calls (bot.slack.scopes), and the bot's
    membership in each recipe's channel (`conversations.history` answers `not_in_channel`)."""
    from slack_sdk.errors import SlackApiError

    from bot.slack.scopes import missing_scopes

    client = client_factory(config)
    try:
        auth = client.auth_test()
    except SlackApiError as exc:
        yield Check("slack auth", False, f"auth.test: {exc.response.get('error')}",
                    f"export the app's current xoxb- token in {config.slack.bot_token_env} "
                    "(OAuth & Permissions; reinstalling the app issues a new one)")
        return
    except Exception as exc:  # noqa: BLE001 - network, TLS, proxy: say what happened
        yield Check("slack auth", False, f"cannot reach {config.slack.api_url}: {exc}",
                    "check this machine's outbound HTTPS to Slack (proxy, firewall) and "
                    "slack.api_url")
        return
    yield Check("slack auth", True, f"bot @{auth.get('user')} in workspace {auth.get('team')}")
    header = next((v for k, v in (auth.headers or {}).items()
                   if k.lower() == "x-oauth-scopes"), None)
    if isinstance(header, list):
        header = ",".join(header)
    granted = {x.strip() for x in (header or "").split(",") if x.strip()}
    required, optional = missing_scopes(granted)
    if required:
        yield Check("slack scopes", False, f"missing {', '.join(sorted(required))}",
                    "add them under OAuth & Permissions → Bot Token Scopes (or recreate the "
                    "app from the manifest `trainbot init` writes) and reinstall the app")
    else:
        note = f"; optional not granted: {', '.join(sorted(optional))}" if optional else ""
        yield Check("slack scopes", True, f"{len(granted)} granted, every one needed{note}")
    channels: dict[str, list[str]] = {}
    for recipe in config.recipes:
        channel = config.channel_id_for(recipe)
        if channel is not None:
            channels.setdefault(channel, []).append(recipe)
    for channel, recipes in sorted(channels.items()):
        yield _membership_check(client, channel, recipes)


def _membership_check(client: Any, channel: str, recipes: list[str]) -> Check:
    from slack_sdk.errors import SlackApiError

    name = f"slack channel {channel}"
    used_by = f"recipe(s) {', '.join(recipes)}"
    try:
        client.conversations_history(channel=channel, limit=1)
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error == "not_in_channel":
            return Check(name, False, f"the bot is not a member ({used_by} post there)",
                         f"invite it: `/invite @{_BOT_NAME}` in that channel")
        if error == "channel_not_found":
            return Check(name, False, f"no such channel visible to the bot ({used_by})",
                         "check the id under slack.channels (the channel's details show it); "
                         f"a private channel needs the bot invited: `/invite @{_BOT_NAME}`")
        return Check(name, False, f"conversations.history: {error} ({used_by})")
    except Exception as exc:  # noqa: BLE001
        return Check(name, False, f"cannot check: {exc}")
    return Check(name, True, f"the bot is a member ({used_by})")


_BOT_NAME = "trainbot"  # the manifest's bot display name
