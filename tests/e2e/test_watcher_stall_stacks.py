"""A stall on the REAL dev cluster, watched by the production watcher (`build_watcher`) with
the Slack stand-in as Slack: the run's thread gets the stall warning, then the ranks' Python
stacks, grouped, naming the stuck rank and its function, then the full dump attached.

How soon the stacks follow the warning is not timed here (speed is measured in bench/, and
the promise of 30 s is what the bot schedules: tests/unit/services/test_stacks_service.py,
test_a_stalls_stacks_are_due_within_30_s_of_its_warning); DEADLINE_S is a guard against a
story that never comes, generous for a loaded machine.

The job is the demo trainer (deploy/demo/fake_train.py) as four rank processes, stalling at
iteration 30 until the test cancels it (its --stall-until file is never created), so its
ranks are still there however slow the machine: rank 3 in its data loader, the others in
`all_gather`.
"""

from __future__ import annotations

import posixpath
import time
import uuid
from typing import Any

import pytest
from cluster_jobs import DemoJobs
from slack_standin import SlackStandIn

from bot.app import build_watcher
from bot.config import Config
from bot.services.runs import submit_and_announce

CLUSTER = "dev"
CHANNEL = "C0STALLS"
OWNER = "U0OWNER"
TICK_S = 1.0
DEADLINE_S = 240.0  # from the submit: the stacks' dump is in the thread by then, or the test fails
STALL_AT = 30

pytestmark = [pytest.mark.integration, pytest.mark.timeout(DEADLINE_S + 120)]


def _text(msg: dict[str, Any]) -> str:
    parts = [msg.get("text") or ""] + [f.get("title") or "" for f in msg.get("files") or []]
    return "\n".join(parts)


def _files(messages: list[dict[str, Any]]) -> list[str]:
    return [f.get("name") or "" for m in messages for f in m.get("files") or []]


def _at(texts: list[str], needle: str) -> int:
    """The index of the one message holding `needle`."""
    found = [k for k, t in enumerate(texts) if needle in t]
    assert len(found) == 1, (needle, texts)
    return found[0]


def test_a_stall_brings_the_warning_then_the_grouped_stacks_to_the_runs_thread(
        dev_cluster, slack_bot, tmp_path) -> None:
    tag = uuid.uuid4().hex[:6]
    with SlackStandIn() as slack, DemoJobs.open(dev_cluster) as jobs:
        ckpt = jobs.path("ckpt", "stall")
        recipe = {
            "sbatch_script": jobs.path("launch.sbatch"),
            "args": ["--scenario", "stall-then-nccl", "--stall-at", str(STALL_AT),
                     "--stall-until", jobs.path("stall-never-ends"), "--sec-per-iter", "0.1",
                     "--save-every", "20", "--target-iter", "1000", "--rank-procs", "4"],
            "mem": "256M", "time": "5", "job_name": f"tb-stacks-{tag}",
            "workdir": jobs.root, "log_path": posixpath.join(jobs.root, "logs", "%x-%j.out"),
            "env": {"TRAINBOT_DEMO_DIR": jobs.root, "TRAINBOT_CKPT_DIR": ckpt},
            "checkpoint": {"dir": ckpt, "complete_rule": "dcp"},
            "owners": [OWNER], "approvers": [OWNER],
            "policy": {"stall_min_s": 10, "save_time_s": 5, "tick_s": TICK_S, "backoff_s": 0},
        }
        config = Config.model_validate(dev_cluster.bot_config_data(
            store_url=f"sqlite:///{tmp_path / 'bot.db'}", recipes={"stall": recipe},
            cluster_name=CLUSTER, channels={"runs": CHANNEL}, approvers=[OWNER]))
        with slack_bot(config, slack) as ctx:
            store = ctx.store
            job = None
            try:
                watcher = build_watcher(ctx, CLUSTER)
                result = submit_and_announce(ctx, "stall", actor=OWNER, now=time.time())
                job = result.job_id
                dump = f"stacks-{job}.txt"
                raised = False
                deadline = time.monotonic() + DEADLINE_S
                while True:
                    t = time.monotonic()
                    report = watcher.tick(time.time())
                    raised = raised or any(e.kind == "warning" and e.decision is not None
                                           and e.decision.class_id == "hang"
                                           for e in report.events)
                    chain = store.chains.get(result.chain_id)
                    thread = slack.replies(CHANNEL, chain.thread_ts)
                    if raised and dump in _files(thread):
                        break
                    if time.monotonic() > deadline:
                        pytest.fail(
                            f"{DEADLINE_S:g} s after the submit, "
                            f"{'the stacks' if raised else 'the stall warning'} of job {job} "
                            "not in the run's thread; the thread:\n"
                            + "\n---\n".join(_text(m) for m in thread))
                    time.sleep(max(0.0, TICK_S - (time.monotonic() - t)))
                texts = [_text(m) for m in thread]
                warning = _at(texts, f"no training progress since iteration {STALL_AT}")
                summary = _at(texts, f"🔎 Python stacks · job {job}:")
                [attached] = [k for k, m in enumerate(thread) if dump in _files([m])]
                assert warning < summary < attached, texts
                assert f"Python stacks · job {job}: 3 of 4 ranks in `all_gather` ← " \
                       "`train_step`; the odd ones out: *rank 3* (" in texts[summary]
                assert "in `DataLoader._get_data` ← `DataLoader.__next__`." in texts[summary]
                assert "Every rank's full stack follows in a file." in texts[summary]
                [data] = [f["data"] for f in slack.files.values() if f["name"] == dump]
                for rank in range(4):
                    assert f"=== rank {rank} (pid ".encode() in data, data[:2000]
            finally:
                if job is not None:
                    ctx.clusters.slurm(CLUSTER).cancel(int(job))
