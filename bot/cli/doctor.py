"""`trainbot doctor`: check the config, SSH, Slurm, the store and Slack tokens, with fixes.

Each check prints PASS or FAIL with what was found; a FAIL also prints the fix. Exit 0 only
when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bot.cli import EXIT_FAILED, EXIT_OK
from bot.config import (
    CONFIG_ENV_VAR,
    EXAMPLE_CONFIG,
    ClusterConfig,
    Config,
    ConfigError,
    load_config,
    resolve_config_path,
)

NAME = "doctor"
HELP = "Check the config, SSH to each cluster, Slurm, the state store and Slack tokens."


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


def run(args: argparse.Namespace) -> int:
    path = resolve_config_path(args.config)
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
) -> Iterator[Check]:
    """Yield the checks in order; later checks are skipped when the config is unusable."""
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
    yield _slack_check(config)


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
    from bot.cluster.errors import ClusterError
    from bot.cluster.ssh import resolve_endpoint

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
        yield Check(f"ssh {name}", True, f"{where} reachable, host key matches known_hosts")
        yield _slurm_check(name, runner)
        for recipe_name, recipe in config.recipes.items():
            if recipe.cluster == name:
                yield _recipe_check(recipe_name, recipe, runner)
    finally:
        runner.close()


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


def _recipe_check(recipe_name: str, recipe: Any, runner: Any) -> Check:
    """The recipe's batch script (or wrapper, if an absolute path) exists on the cluster."""
    target = recipe.sbatch_script or recipe.submit_command[0]
    if recipe.submit_command and not target.startswith("/"):
        return Check(f"recipe {recipe_name}", True, f"submit command {target!r} (on PATH)")
    try:
        runner.run(["test", "-r", target], timeout=30)
    except Exception as exc:  # noqa: BLE001 - any failure here means "not usable"
        from bot.cluster.errors import CommandFailed

        if isinstance(exc, CommandFailed):
            return Check(
                f"recipe {recipe_name}",
                False,
                f"{target} does not exist or is not readable on the cluster",
                f"fix recipes.{recipe_name}."
                f"{'sbatch_script' if recipe.sbatch_script else 'submit_command'} "
                "(it is a path on the cluster, not on this machine)",
            )
        return Check(f"recipe {recipe_name}", False, f"cannot check {target}: {exc}")
    return Check(f"recipe {recipe_name}", True, f"{target} present on the cluster")


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
