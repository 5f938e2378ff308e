"""Shared fixtures: `dev_cluster`, the real Slurm + sshd brought up by deploy/dev-cluster/up.sh.

Integration tests fail (never skip) when the dev cluster is not up: a skipped integration test
looks green in CI while proving nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from bot.cluster.ssh import SSHSettings

REPO = Path(__file__).resolve().parents[1]
DEV_CLUSTER_SCRIPTS = REPO / "deploy" / "dev-cluster"
NOT_UP = "dev cluster is not up: run deploy/dev-cluster/up.sh"


def dev_cluster_dir() -> Path:
    """Where up.sh keeps connection.json, keys and logs ($DEV_CLUSTER_DIR or /tmp/dev-cluster)."""
    return Path(os.environ.get("DEV_CLUSTER_DIR", "/tmp/dev-cluster"))


@dataclass(frozen=True)
class DevCluster:
    """Connection settings of the dev cluster, as written by up.sh to connection.json."""

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
        )

    def ssh_settings(self) -> SSHSettings:
        """The settings trainbot's own SSH runner needs to reach this cluster."""
        from bot.cluster.ssh import SSHSettings

        return SSHSettings(
            host=self.host,
            port=self.port,
            user=self.user,
            key_file=self.key_file,
            known_hosts=self.known_hosts,
        )

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

    def _script(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(DEV_CLUSTER_SCRIPTS / name), *args],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "DEV_CLUSTER_DIR": self.state_dir},
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


@pytest.fixture(scope="session")
def dev_cluster() -> DevCluster:
    """The running dev cluster; fails (never skips) the test when it is not up."""
    path = dev_cluster_dir() / "connection.json"
    try:
        cluster = DevCluster.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        pytest.fail(f"{NOT_UP} ({path} does not exist)", pytrace=False)
    except (ValueError, KeyError, TypeError) as exc:
        pytest.fail(f"{NOT_UP} ({path} is unreadable: {exc!r})", pytrace=False)
    if not sshd_answers(cluster.host, cluster.port):
        pytest.fail(f"{NOT_UP} (no sshd answers on {cluster.host}:{cluster.port})", pytrace=False)
    return cluster
