"""`trainbot run` stops gracefully on SIGTERM (systemd, containers) and SIGINT (Ctrl-C)
(issue 12, item 8): the real command as a subprocess, in HTTP mode on a local port with the
Slack stand-in as its Web API (`slack.api_url`), a SQLite store, and a cluster whose SSH
server accepts the connection and never answers, so the watcher's tick hangs in a remote call.
The signal during that tick ends the process with exit code 0 within the stop's bound
(bot.app.STOP_WITHIN_S, 12 s), its leases released in the store (another replica takes the
jobs over at once, not after the TTL). With a `/train` command's handler under way (stuck
behind the same hung SSH connection), the stop waits for it up to its bound, says it stops
without it, and still ends within STOP_WITHIN_S with exit code 0.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from slack_standin import SlackStandIn
from support.bolt_driver import ResponseUrls, post_signed, slash_body

from bot.app import STOP_WITHIN_S
from bot.store import Store

REPO = Path(__file__).resolve().parents[2]


class SilentSSHPeer:
    """A TCP server on 127.0.0.1 that accepts connections and never says a word (a login node
    hung on a dead filesystem): an SSH client waits for its banner. `connected` is set on the
    first connection."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.connected = threading.Event()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="silent ssh peer").start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conns.append(conn)
            self.connected.set()

    def close(self) -> None:
        self._server.close()
        for conn in self._conns:
            conn.close()


@pytest.fixture
def silent_peer() -> Iterator[SilentSSHPeer]:
    peer = SilentSSHPeer()
    yield peer
    peer.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_config(tmp_path: Path, slack: SlackStandIn, peer: SilentSSHPeer, store_url: str
                 ) -> Path:
    key = tmp_path / "id_ed25519"
    key.write_text("never read: the peer never gets as far as authentication\n")
    config = {
        "clusters": {"alpha": {"host": "127.0.0.1", "port": peer.port, "user": "slurmci",
                               "key_file": str(key),
                               "known_hosts": str(tmp_path / "known_hosts"),
                               "connect_timeout": 120}},
        "recipes": {"mix": {"cluster": "alpha", "sbatch_script": "/home/slurmci/train.sbatch",
                            "owners": ["U0OWNER"], "channel": "training"}},
        "slack": {"mode": "http", "api_url": slack.api_url,
                  "channels": {"training": "C0TRAINRUNS"}},
        "policy": {"tick_s": 1},
        "store": {"url": store_url},
    }
    path = tmp_path / "trainbot.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def wait_for(condition: object, timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    pytest.fail(f"{what} within {timeout_s:g} s; trainbot run's log:\n{log.read_text()}")


def leases_held(store_url: str, names: tuple[str, ...]) -> dict[str, str | None]:
    """Who holds each lease of `names` now, in the store at `store_url` (None: nobody)."""
    with Store.open(store_url) as store:
        return {n: store.leases.holder(n) for n in names}


SIGNING_SECRET = "standin-signing-secret"


def post_slash_command(port: int, text: str, response_url: str) -> str:
    """`/train TEXT` POSTed to trainbot's HTTP endpoint, signed as Slack signs it; the ack."""
    status, ack = post_signed(port, SIGNING_SECRET, slash_body(
        text, user="U0OWNER", channel="C0TRAINRUNS", response_url=response_url))
    assert status == 200, f"{status} {ack}"
    return ack


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("handler", [False, True], ids=["", "handler_in_flight"])
def test_a_signal_during_a_hung_tick_stops_trainbot_run_within_its_bound_releasing_its_leases(
        tmp_path, silent_peer, signum, handler) -> None:
    store_url = f"sqlite:///{tmp_path / 'state.db'}"
    with Store.open(store_url) as store:  # a job to watch: the tick asks Slurm about it
        chain = store.chains.create(recipe="mix", cluster="alpha", job_name="mix", now=1.0)
        store.attempts.record(chain_id=chain.id, job_id="4242", now=1.0)
        store.watched_jobs.add("alpha", "4242", now=1.0, chain_id=chain.id)
    log = tmp_path / "run.log"
    urls = ResponseUrls()
    port = free_port()
    with SlackStandIn() as slack, log.open("w") as out:
        config = write_config(tmp_path, slack, silent_peer, store_url)
        env = {**os.environ, "PYTHONPATH": str(REPO), "SLACK_BOT_TOKEN": slack.token,
               "SLACK_SIGNING_SECRET": SIGNING_SECRET}
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(config),
             "--http-port", str(port)],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(silent_peer.connected.is_set, 60, "the watcher's tick did not reach SSH",
                     log)
            # every repeating job runs at the start, each on its own thread, so another job's
            # lease may be taken a moment after the watcher reached SSH
            wait_for(lambda: all(leases_held(store_url, ("watch:alpha", "holds")).values()),
                     60, "the watcher's and the holds job's leases were not taken", log)
            if handler:  # `/train status` asks Slurm about job 4242: over the hung SSH
                ack = post_slash_command(port, "status", urls.new())
                assert "/train status" in ack, ack
            time.sleep(0.5)  # the tick (and the handler) now wait for the peer's SSH banner
            sent = time.monotonic()
            proc.send_signal(signum)
            code = proc.wait(timeout=STOP_WITHIN_S + 5)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            urls.close()
    text = log.read_text()
    assert code == 0, text
    assert took < STOP_WITHIN_S, f"stopped after {took:.1f} s\n{text}"
    assert f"{signal.Signals(signum).name} received: stopping" in text
    with Store.open(store_url) as store:
        assert store.leases.holder("watch:alpha") is None, text
        assert store.leases.holder("holds") is None, text
    assert "Traceback" not in text, text
    waited = "1 Slack handler(s) still under way; stopping without them"
    assert (waited in text) == handler, text
