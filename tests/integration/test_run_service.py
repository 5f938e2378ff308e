"""`trainbot run --no-slack --metrics-port P --webhook URL` against the dev cluster, as an
operator runs it: /healthz and /readyz answer 200, /metrics has the tick histogram, a job
that fails on the real Slurm reaches the webhook as JSON and the log as a JSON line with its
fields, and SIGTERM ends the process with exit code 0 within 10 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from support.webhook_receiver import Receiver

from bot.cluster.ssh import SSHRunner
from bot.store import Store

REPO = Path(__file__).resolve().parents[2]
STOP_WITHIN_S = 10.0
# How long the process may take to serve, and its first tick to end. A few seconds on a quiet
# machine; on a loaded one (load 14 on the 2 cores) its imports alone took 30 s.
START_WITHIN_S = 120.0

pytestmark = pytest.mark.integration


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def wait_for(condition, timeout_s: float, what: str, log: Path) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"{what} within {timeout_s:g} s; trainbot run's log:\n{log.read_text()}")


def test_run_without_slack_serves_health_and_metrics_sends_events_and_stops_on_sigterm(
        dev_cluster, tmp_path) -> None:
    tag = f"tb-run-service-{os.getpid()}-{int(time.time())}"
    out = f"{dev_cluster.home}/{tag}.out"
    with SSHRunner(dev_cluster.ssh_settings()) as ssh:  # a job that fails on the real Slurm
        job_id = ssh.run(["sbatch", "--parsable", "--partition", dev_cluster.partition,
                          "--job-name", tag, "--output", out,
                          "--wrap", "echo starting; exit 3"]).stdout.strip().split(";")[0]
    store_url = f"sqlite:///{tmp_path / 'state.db'}"
    with Store.open(store_url) as store:
        chain = store.chains.create(recipe="mix", cluster="dev", job_name=tag, now=time.time())
        store.attempts.record(chain_id=chain.id, job_id=job_id, now=time.time())
        store.watched_jobs.add("dev", job_id, now=time.time(), chain_id=chain.id)
    data = dev_cluster.bot_config_data(
        store_url=store_url, recipes={"mix": {"sbatch_script": f"{dev_cluster.home}/train.sbatch"}})
    data["policy"] = {"tick_s": 1}
    data["service"] = {"log_format": "json"}
    config = tmp_path / "trainbot.yaml"
    config.write_text(yaml.safe_dump(data))
    port, receiver, log = free_port(), Receiver(), tmp_path / "run.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(config), "--no-slack",
             "--metrics-port", str(port), "--webhook", receiver.url],
            cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)}, stdout=sink,
            stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: get(port, "/healthz")[0] == 200, START_WITHIN_S,
                 "/healthz did not answer", log)
        # the receiver also gets the run's `progress` bodies, which name no one job
        wait_for(lambda: any(b.get("job_id") == job_id for b in receiver.bodies), 90,
                 f"job {job_id}'s incident did not reach the webhook", log)
        # The incident is sent during the first tick of dev; the replica is ready once a tick
        # has ended well, which on a loaded host (the first tick opens the SSH connection)
        # can be after the 3 s of 3 one-second ticks: then /readyz says 503 until it ends.
        ready, deadline = (200, "ok\nwatched here: dev\n"), time.monotonic() + START_WITHIN_S
        while (readyz := get(port, "/readyz")) != ready and time.monotonic() < deadline:
            time.sleep(0.2)
        assert readyz == ready, log.read_text()
        # the incident is sent during a tick; the tick's duration is observed when it ends
        tick_bucket = 'trainbot_tick_duration_seconds_bucket{cluster="dev",le="+Inf"}'
        wait_for(lambda: tick_bucket in get(port, "/metrics")[1], 30,
                 "/metrics has no tick duration", log)
        code, metrics = get(port, "/metrics")
        assert code == 200
        assert 'trainbot_slurm_commands_total{cluster="dev",kind="jobs",result="ok"}' in metrics
        assert 'trainbot_lease_holder{holder=' in metrics
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        exit_code = proc.wait(timeout=STOP_WITHIN_S + 5)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        receiver.close()
    text = log.read_text()
    assert exit_code == 0, text
    assert took < STOP_WITHIN_S, f"stopped after {took:.1f} s\n{text}"
    (event,) = [b for b in receiver.bodies if b.get("job_id") == job_id]
    assert event["kind"] == "incident" and event["chain_id"] == chain.id
    assert event["diagnosis"]["class"]
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    told = [d for d in lines if d.get("event_key") == event["key"]]
    assert told and told[0]["cluster"] == "dev" and told[0]["job"] == job_id, text
    assert "Traceback" not in text, text
