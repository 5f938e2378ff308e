"""`trainbot run` as an operator runs it in HTTP mode, against the dev cluster: the real
command as a subprocess, Slack's signed requests POSTed to its `/slack/events` endpoint, the
Slack stand-in as its Web API. The other end-to-end tests drive the Bolt app in-process
(`app.dispatch`); this one goes through the request path `trainbot run` itself serves (Bolt's
HTTP adapter, request signatures, lazy listeners on their threads, the per-request Web API
client) — the path where a failure answers every `/train` and every click with a 500.

A person's `/train submit mix` queues the recipe's job on Slurm; the job dies of an NCCL
timeout, the watcher posts its incident with a Resubmit button into the run's thread; the
owner's click on it queues the resumed job; SIGTERM then ends the process with exit code 0.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster_jobs import NCCL_JOB
from slack_standin import SlackStandIn
from support.bolt_driver import ResponseUrls, click_body, post_signed, slash_body

from bot.app import STOP_WITHIN_S
from bot.slack.views import ActionId

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SIGNING_SECRET = "standin-signing-secret"
CHANNEL = "C0TRAINRUNS"
OWNER = "U0OWNER"
# How long the process may take to serve and each step to show; its imports alone took 30 s
# on a loaded machine (load 14 on the 2 cores).
START_WITHIN_S = 120.0
STEP_WITHIN_S = 150.0

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], Any], timeout_s: float, what: str, log: Path) -> Any:
    """`condition()`'s first true value within `timeout_s`; else the test fails with the log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.25)
    pytest.fail(f"{what} within {timeout_s:g} s; trainbot run's log:\n{log.read_text()}")


def serving(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def resubmit_button(slack: SlackStandIn, job_id: str) -> tuple[dict[str, Any], dict] | None:
    """(the message, its Resubmit button) of the incident about `job_id`, once posted."""
    for message in slack.all_messages():
        if job_id not in json.dumps(message.get("blocks") or message.get("text", "")):
            continue
        for block in message.get("blocks") or []:
            for element in block.get("elements", []) if block.get("type") == "actions" else []:
                if element.get("action_id") == ActionId.RESUBMIT:
                    return message, {**element, "block_id": block.get("block_id", "")}
    return None


@pytest.mark.timeout(600)
def test_a_signed_submit_and_a_signed_resubmit_click_queue_jobs_through_trainbot_run(
        dev_cluster, tmp_path) -> None:
    tag = f"tb-run-http-{os.getpid()}-{int(time.time())}"
    work = f"{dev_cluster.home}/{tag}"
    script = f"{work}/train.sbatch"

    def sh(command: str) -> str:
        proc = dev_cluster.ssh(["sh", "-c", command])
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def jobs_named() -> list[str]:
        """The ids of every job called `tag` that squeue or sacct knows (sacct lags)."""
        out = sh(f"squeue -h --name {tag} -o %i; "
                 f"sacct -n -X --parsable2 --name {tag} -o JobID -S now-1hour")
        return sorted({line.strip() for line in out.split() if line.strip()}, key=int)

    sh(f"mkdir -p {shlex.quote(work)} && cat > {shlex.quote(script)} <<'SCRIPT'\n"
       f"{NCCL_JOB}SCRIPT\n")
    store_url = f"sqlite:///{tmp_path / 'state.db'}"
    log, urls, port = tmp_path / "run.log", ResponseUrls(), free_port()
    proc: subprocess.Popen | None = None
    try:
        with SlackStandIn() as slack, log.open("w") as out:
            data = dev_cluster.bot_config_data(
                store_url=store_url, channels={"training": CHANNEL}, approvers=[OWNER],
                recipes={"mix": {"sbatch_script": script, "job_name": tag, "time": "5",
                                 "log_path": f"{work}/%x-%j.out", "owners": [OWNER],
                                 "channel": "training"}})
            data["slack"].update({"mode": "http", "api_url": slack.api_url})
            data["policy"] = {"tick_s": 1}
            config = tmp_path / "trainbot.yaml"
            config.write_text(yaml.safe_dump(data))
            env = {**os.environ, "PYTHONPATH": str(REPO), "SLACK_BOT_TOKEN": slack.token,
                   "SLACK_SIGNING_SECRET": SIGNING_SECRET}
            proc = subprocess.Popen(
                [sys.executable, "-m", "bot", "run", "--config", str(config),
                 "--http-port", str(port)],
                cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
            wait_for(lambda: serving(port), START_WITHIN_S, "trainbot run did not serve", log)

            status, ack = post_signed(port, SIGNING_SECRET, slash_body(
                "submit mix", user=OWNER, channel=CHANNEL, response_url=urls.new()))
            assert status == 200, f"{status} {ack}\n{log.read_text()}"
            [first] = wait_for(jobs_named, STEP_WITHIN_S, f"no job {tag} was queued", log)

            message, button = wait_for(lambda: resubmit_button(slack, first), STEP_WITHIN_S,
                                       f"no incident with a Resubmit button for job {first}",
                                       log)
            click = click_body(ActionId.RESUBMIT, button["value"], user=OWNER,
                               channel=CHANNEL, message_ts=message["ts"],
                               response_url=urls.new(), block_id=button["block_id"])
            status, ack = post_signed(port, SIGNING_SECRET, {"payload": json.dumps(click)})
            assert status == 200, f"{status} {ack}\n{log.read_text()}"
            ids = wait_for(lambda: ids if len(ids := jobs_named()) == 2 else None,
                           STEP_WITHIN_S, f"the click queued no second job {tag}", log)
            assert ids[0] == first, ids

            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=STOP_WITHIN_S + 5)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        urls.close()
        dev_cluster.ssh(["sh", "-c", f"scancel --name {tag}; rm -rf {shlex.quote(work)}"])
    text = log.read_text()
    assert code == 0, text
    assert "Traceback" not in text, text
    # the run's thread names both jobs: the one that died and the one the click queued
    said = json.dumps(slack.all_messages())
    assert first in said and ids[1] in said, said
