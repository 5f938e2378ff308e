"""A second sshd for the SSH tests (a bastion, a login node whose authentication stalls):
its own host key, a free loopback port, the config lines the test gives, started in the
foreground and stopped by its pid at the end."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def keygen(path: Path) -> str:
    """A new ed25519 key at `path` (no passphrase); its public key's base64 part."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().split()[1]


def sshd_answers(port: int) -> bool:
    """An SSH server on 127.0.0.1:`port` sends its banner."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.settimeout(1)
            return sock.recv(8).startswith(b"SSH-")
    except OSError:
        return False


@contextmanager
def loopback_sshd(tmp_path: Path, name: str, config: str) -> Iterator[tuple[int, str, Path]]:
    """An sshd on a free 127.0.0.1 port with a new host key and `config` (sshd_config lines
    besides Port, ListenAddress, HostKey and PidFile), answering within 10 s: (its port, its
    host key's public part, its log file). Stopped by its pid at the end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    host_key = tmp_path / f"{name}_host_key"
    pub = keygen(host_key)
    cfg = tmp_path / f"{name}_sshd_config"
    cfg.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n"
                   f"PidFile {tmp_path / f'{name}.pid'}\n{config}")
    log = tmp_path / f"{name}_sshd.log"
    proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-f", str(cfg), "-E", str(log)])
    try:
        deadline = time.monotonic() + 10
        while not sshd_answers(port):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"{name} sshd did not start"
            time.sleep(0.1)
        yield port, pub, log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def bastion_sshd(dev_cluster: Any, tmp_path: Path) -> Iterator[tuple[int, str, Path]]:
    """A second sshd on a free loopback port that allows TCP forwarding: a bastion, letting
    the dev cluster's test user in with the same key: (its port, a known_hosts file with the
    dev cluster's hosts and it, its log file). Stopped by its pid at the end."""
    with loopback_sshd(tmp_path, "jump", (
        f"AuthorizedKeysFile {Path(dev_cluster.key_file).parent / 'authorized_keys'}\n"
        f"AllowUsers {dev_cluster.user}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "AllowTcpForwarding yes\nPermitOpen any\nUseDNS no\n"
    )) as (port, pub, log):
        known = tmp_path / "known_hosts"
        known.write_text(
            Path(dev_cluster.known_hosts).read_text() + f"[127.0.0.1]:{port} ssh-ed25519 {pub}\n"
        )
        yield port, str(known), log
