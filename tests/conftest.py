"""Shared fixtures: `dev_cluster`, the real Slurm + sshd brought up by deploy/dev-cluster/up.sh;
`slurm_cluster`, each of the two dev clusters in turn (Slurm 22.05 and, from
deploy/dev-cluster/slurm-24.11/up.sh, Slurm 24.11); `store_url`, an empty store database on
SQLite and on up.sh's PostgreSQL; `slack_bot`, the bot's services on a config whose threads
go to the Slack stand-in (tests/slack_standin/).

Integration tests fail (never skip) when the dev cluster is not up: a skipped integration test
looks green in CI while proving nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import HealthCheck, settings
from sqlalchemy import create_engine, make_url
from sqlalchemy.exc import OperationalError

if TYPE_CHECKING:
    from slack_sdk import WebClient
    from slack_standin import SlackStandIn

    from bot.config import Config
    from bot.core.ssh_settings import SSHSettings
    from bot.services.ports import BotContext
    from bot.store import Store

# Property tests judge behaviour, never speed: the machines that run the suite are shared
# and loaded, so Hypothesis's wall-clock deadline and its "too slow" health check are off.
settings.register_profile("trainbot", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("trainbot")

REPO = Path(__file__).resolve().parents[1]
DEV_CLUSTER_SCRIPTS = REPO / "deploy" / "dev-cluster"
PG_NOT_UP = "the dev cluster's PostgreSQL is not up: run deploy/dev-cluster/up.sh"


def dev_cluster_dir() -> Path:
    """Where up.sh keeps connection.json, keys and logs ($DEV_CLUSTER_DIR or /tmp/dev-cluster)."""
    return Path(os.environ.get("DEV_CLUSTER_DIR", "/tmp/dev-cluster"))


# Slurm release -> (the env var naming its state dir, its default, its scripts under
# deploy/dev-cluster/). `slurm_cluster` runs a test on each.
SLURM_CLUSTERS: dict[str, tuple[str, str, str]] = {
    "22.05": ("DEV_CLUSTER_DIR", "/tmp/dev-cluster", ""),
    "24.11": ("DEV_CLUSTER_2411_DIR", "/tmp/dev-cluster-2411", "slurm-24.11"),
}


@dataclass(frozen=True)
class DevUser:
    """A further account on the dev cluster's sshd, with its own key (connection.json)."""

    user: str
    key_file: str
    known_hosts: str
    home: str
    shell: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DevUser:
        return cls(data["user"], data["key_file"], data["known_hosts"], data["home"],
                   data["shell"])


@dataclass(frozen=True)
class DevCluster:
    """Connection settings of the dev cluster, as written by up.sh to connection.json.

    `tcsh_user` is the account whose login shell is tcsh (None in a connection.json written
    before up.sh made it; the tests that need it then fail, saying to run up.sh).
    `pair_partition` / `second_node`: the extra partition holding `node` and a second node (the
    22.05 cluster's; None where there is none).
    """

    host: str
    port: int
    user: str
    key_file: str
    known_hosts: str
    partition: str
    cluster_name: str
    home: str
    state_dir: str
    accounts: tuple[str, ...]
    tcsh_user: DevUser | None = None
    node: str = "vm"  # the Slurm node's name (the 22.05 cluster's is the host name)
    release: str = "22.05"  # the Slurm release, as SLURM_CLUSTERS names it
    pair_partition: str | None = None
    second_node: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DevCluster:
        """Build from the parsed connection.json; a missing field raises KeyError naming it."""
        return cls(
            host=data["host"],
            port=int(data["port"]),
            user=data["user"],
            key_file=data["key_file"],
            known_hosts=data["known_hosts"],
            partition=data["partition"],
            cluster_name=data["cluster_name"],
            home=data["home"],
            state_dir=data["state_dir"],
            accounts=tuple(data.get("accounts", ["root"])),
            tcsh_user=DevUser.from_json(data["tcsh_user"]) if "tcsh_user" in data else None,
            node=data.get("node", "vm"),
            pair_partition=data.get("pair_partition"),
            second_node=data.get("second_node"),
        )

    def ssh_settings(self, as_user: DevUser | None = None) -> SSHSettings:
        """The settings trainbot's own SSH runner needs to reach this cluster (as the test
        user, or as `as_user`)."""
        from bot.core.ssh_settings import SSHSettings

        return SSHSettings(
            host=self.host,
            port=self.port,
            user=as_user.user if as_user else self.user,
            key_file=as_user.key_file if as_user else self.key_file,
            known_hosts=as_user.known_hosts if as_user else self.known_hosts,
        )

    def bot_config_data(
        self,
        *,
        store_url: str,
        recipes: Mapping[str, Mapping[str, Any]] | None = None,
        cluster_name: str = "dev",
        channels: Mapping[str, str] | None = None,
        approvers: Sequence[str] = (),
        groups: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, Any]:
        """Config data (YAML-ready) for a bot on this cluster, built as `trainbot demo` builds
        its own (bot.config.dev_cluster): the cluster as `cluster_name`, the store at
        `store_url`, `recipes` defaulting to this cluster and its partition.

        With `channels` (config name -> Slack channel id) it has a `slack` section whose
        default channel is the first of them, with the default `approvers` and the `groups`
        (group name -> members) given.
        """
        from bot.config.dev_cluster import dev_cluster_config_data

        connection = {"host": self.host, "port": self.port, "user": self.user,
                      "key_file": self.key_file, "known_hosts": self.known_hosts,
                      "partition": self.partition}
        data = dev_cluster_config_data(connection, store_url=store_url, recipes=recipes,
                                       cluster_name=cluster_name)
        if channels:
            slack: dict[str, Any] = {"channels": dict(channels),
                                     "default_channel": next(iter(channels))}
            if approvers:
                slack["approvers"] = list(approvers)
            if groups:
                slack["groups"] = {name: list(members) for name, members in groups.items()}
            data["slack"] = slack
        return data

    def ssh_argv(self, *, known_hosts: str | None = None, key_file: str | None = None) -> list[str]:
        """`ssh` argv up to and including the destination; host key checking is strict."""
        return [
            "ssh",
            "-F", "/dev/null",  # no user config: with ssh the first -o for an option wins
            "-p", str(self.port),
            "-i", key_file or self.key_file,
            "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={known_hosts or self.known_hosts}",
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "ConnectTimeout=10",
            f"{self.user}@{self.host}",
        ]  # fmt: skip

    def ssh(
        self,
        cmd_argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float = 120,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run argv on the cluster as the test user through the real `ssh` binary.

        For test setup and assertions, independent of trainbot's own SSH code. The argv is
        quoted with shlex.join, so each element arrives as one literal argument.
        """
        return subprocess.run(
            [*self.ssh_argv(), shlex.join(cmd_argv)],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    @property
    def release_tuple(self) -> tuple[int, int]:
        major, minor = self.release.split(".")
        return int(major), int(minor)

    def _script(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        dir_env, _default, scripts = SLURM_CLUSTERS[self.release]
        proc = subprocess.run(
            [str(DEV_CLUSTER_SCRIPTS / scripts / name), *args],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, dir_env: self.state_dir},
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"deploy/dev-cluster/{name} {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def stop_daemon(self, name: str) -> None:
        """Stop one daemon (munged, mariadbd, slurmdbd, slurmctld, slurmd, sshd) by pid file.

        Other engineers share this cluster: always call start_daemons() in a `finally`.
        """
        self._script("down.sh", name)

    def start_daemons(self) -> None:
        """Start every daemon that is not running (up.sh), and wait until the cluster works."""
        self._script("up.sh")


def sshd_answers(host: str, port: int, timeout: float = 5.0) -> bool:
    """True if something on host:port speaks SSH (sends an `SSH-` banner)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(16).startswith(b"SSH-")
    except OSError:
        return False


def _running_cluster(release: str) -> DevCluster:
    """The dev cluster of that Slurm release; fails (never skips) the test when it is not up."""
    dir_env, default, scripts = SLURM_CLUSTERS[release]
    up = DEV_CLUSTER_SCRIPTS / scripts / "up.sh"
    not_up = f"the Slurm {release} dev cluster is not up: run {up.relative_to(REPO)}"
    path = Path(os.environ.get(dir_env, default)) / "connection.json"
    try:
        cluster = DevCluster.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        pytest.fail(f"{not_up} ({path} does not exist)", pytrace=False)
    except (ValueError, KeyError, TypeError) as exc:
        pytest.fail(f"{not_up} ({path} is unreadable: {exc!r})", pytrace=False)
    if not sshd_answers(cluster.host, cluster.port):
        pytest.fail(f"{not_up} (no sshd answers on {cluster.host}:{cluster.port})", pytrace=False)
    return replace(cluster, release=release)


@pytest.fixture(scope="session")
def dev_cluster() -> DevCluster:
    """The running Slurm 22.05 dev cluster (the one with the tcsh user and PostgreSQL)."""
    return _running_cluster("22.05")


@pytest.fixture(scope="session", params=sorted(SLURM_CLUSTERS))
def slurm_cluster(request: pytest.FixtureRequest) -> DevCluster:
    """Each dev cluster in turn, Slurm 22.05 then 24.11: the test runs on both (select one
    with `-k 22.05` / `-k 24.11`)."""
    return _running_cluster(request.param)


@contextmanager
def _slack_backed_bot(config: Config, slack: SlackStandIn, *, charts: bool = True,
                      client: WebClient | None = None) -> Iterator[BotContext]:
    """The services of a bot on `config` as bot.app.build_context wires them (its store, its
    clusters' sessions, the catalogue, the thread poster), posting to the stand-in `slack`
    through `client` (by default one retrying as the bot's does); without the Home tab, and
    without charts unless `charts`. Its store and cluster sessions are closed on leaving."""
    from bot.app import build_context
    from bot.slack.retry import make_client

    client = client or make_client(slack.token, base_url=slack.api_url, timeout=10)
    ctx = build_context(config, client=client)
    ctx = replace(ctx, home=None, charts=ctx.charts if charts else None)
    try:
        yield ctx
    finally:
        ctx.clusters.close()
        ctx.store.close()


@pytest.fixture(scope="session")
def slack_bot() -> Callable[..., AbstractContextManager[BotContext]]:
    """`with slack_bot(config, slack) as ctx:` a bot's services on `config` whose threads go
    to the Slack stand-in `slack` (`_slack_backed_bot`), for tests against a dev cluster."""
    return _slack_backed_bot


class CrashDriver:
    """tests/crash_driver.py (the production services and watcher) as a process of its own,
    which the crash tests SIGKILL or let SIGKILL itself: `configure(data)` writes the bot's
    config file (`config_path`), `start(...)` starts a run of the driver on it."""

    def __init__(self, tmp_path: Path) -> None:
        self.config_path = tmp_path / "config.yaml"

    def configure(self, data: dict[str, Any]) -> Config:
        """The config of `data` (its file written for the driver's runs)."""
        from bot.config import Config

        self.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
        return Config.model_validate(data)

    def start(self, slack: SlackStandIn, log: Path, *, crash_at: str | None, tick: float,
              args: Sequence[str] = ()) -> subprocess.Popen:
        """A run of the driver posting to `slack`, ticking every `tick` s (`args`: more of its
        options, e.g. `--until-idle`, or `--train TEXT` instead of ticking), SIGKILLing
        itself at `crash_at` (TRAINBOT_CRASH_AT; None: never); its output appended to `log`
        after a line naming the run."""
        env = {k: v for k, v in os.environ.items() if k != "TRAINBOT_CRASH_AT"}
        env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
        if crash_at:
            env["TRAINBOT_CRASH_AT"] = crash_at
        with log.open("a") as out:
            out.write(f"\n===== start (TRAINBOT_CRASH_AT={crash_at}) =====\n")
            out.flush()
            return subprocess.Popen(
                [sys.executable, str(REPO / "tests" / "crash_driver.py"), "--config",
                 str(self.config_path), "--slack-url", slack.api_url, "--token", slack.token,
                 "--tick", str(tick), *args], cwd=REPO, env=env, stdout=out,
                stderr=subprocess.STDOUT)


@pytest.fixture
def crash_driver(tmp_path: Path) -> CrashDriver:
    """The crash tests' bot process (CrashDriver), its config file in `tmp_path`."""
    return CrashDriver(tmp_path)


@pytest.fixture(scope="session")
def dev_postgres_url() -> str:
    """URL of the dev cluster's PostgreSQL (role `trainbot`, which may create databases), from
    connection.json; fails (never skips) the test when it is not up or psycopg is missing."""
    path = dev_cluster_dir() / "connection.json"
    try:
        url = json.loads(path.read_text())["postgres_url"]
    except FileNotFoundError:
        pytest.fail(f"{PG_NOT_UP} ({path} does not exist)", pytrace=False)
    except (ValueError, KeyError, TypeError) as exc:
        pytest.fail(f"{PG_NOT_UP} ({path} has no postgres_url: {exc!r})", pytrace=False)
    try:
        engine = create_engine(url)
    except ImportError as exc:
        pytest.fail(f"no PostgreSQL driver ({exc}): run deploy/venv.sh, which installs "
                    "trainbot's `postgres` extra", pytrace=False)
    refused = None
    try:
        with engine.connect():
            pass
    except OperationalError as exc:
        refused = exc.orig
    finally:
        engine.dispose()
    if refused is not None:  # failed outside the except: no chained tracebacks in the report
        pytest.fail(f"{PG_NOT_UP} (cannot connect to {url}: {refused})", pytrace=False)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A `Store.open` URL on an empty database, once per backend: a SQLite file in tmp_path,
    and a new database on the dev cluster's PostgreSQL (`postgres_store_url`), so tests share
    nothing."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return request.getfixturevalue("postgres_store_url")


@pytest.fixture
def replica_stores(store_url: str) -> Iterator[tuple[Store, Store]]:
    """Two bot replicas' stores on one database (`store_url`): each its own `Store.open`
    handle, with its own engine and connections, as two `trainbot run` processes have."""
    from bot.store import Store

    with Store.open(store_url) as a, Store.open(store_url) as b:
        yield a, b


@pytest.fixture
def postgres_store_url(dev_postgres_url: str) -> Iterator[str]:
    """A new, empty database on the dev cluster's PostgreSQL, dropped (with any connection a
    test left open) after the test."""
    server = make_url(dev_postgres_url)
    name = f"trainbot_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture(autouse=True)
def _no_log_redaction_left_behind() -> Iterator[None]:
    """`trainbot run` and the CLI install a redacting filter on the root logger's handlers
    (bot.log_redaction), whose redactor becomes the process's (bot.core.redact); tests that
    call them must not leave it (or its secrets) to the next."""
    yield
    import logging

    from bot.core.redact import Redactor, set_process_redactor
    from bot.log_redaction import REDACTING_FILTER

    REDACTING_FILTER.redactor = Redactor()
    set_process_redactor(Redactor())
    for handler in [*logging.getLogger().handlers, logging.lastResort]:
        if handler is not None:
            handler.removeFilter(REDACTING_FILTER)
        if handler is not None and getattr(handler, "_trainbot_handler", False):
            # bot.log_format.configure_logging's
            logging.getLogger().removeHandler(handler)
