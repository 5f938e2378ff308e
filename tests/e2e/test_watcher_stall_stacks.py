"""A stall on the REAL dev cluster, watched by the production watcher (`build_watcher`) with
the Slack stand-in as Slack: the ranks' Python stacks, grouped, naming the stuck rank and its
function, reach the run's thread within 30 s of the stall being raised, the full dump attached,
and the tick never waits for them.

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

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CLUSTER = "dev"
CHANNEL = "C0STALLS"
OWNER = "U0OWNER"
POSTED_WITHIN_S = 30.0
TICK_S = 1.0


def _text(msg: dict[str, Any]) -> str:
    parts = [msg.get("text") or ""] + [f.get("title") or "" for f in msg.get("files") or []]
    return "\n".join(parts)


def _files(messages: list[dict[str, Any]]) -> list[str]:
    return [f.get("name") or "" for m in messages for f in m.get("files") or []]


def test_a_stall_brings_the_grouped_stacks_within_30_s(dev_cluster, slack_bot,
                                                        tmp_path) -> None:
    tag = uuid.uuid4().hex[:6]
    with SlackStandIn() as slack, DemoJobs.open(dev_cluster) as jobs:
        ckpt = jobs.path("ckpt", "stall")
        recipe = {
            "sbatch_script": jobs.path("launch.sbatch"),
            "args": ["--scenario", "stall-then-nccl", "--stall-at", "30", "--stall-until",
                     jobs.path("stall-never-ends"), "--sec-per-iter", "0.1", "--save-every",
                     "20", "--target-iter", "1000", "--rank-procs", "4"],
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
                chain = store.chains.get(result.chain_id)
                raised = stacks_at = None
                longest_tick = 0.0
                deadline = time.monotonic() + 180
                while time.monotonic() < deadline and stacks_at is None:
                    t = time.monotonic()
                    report = watcher.tick(time.time())
                    longest_tick = max(longest_tick, time.monotonic() - t)
                    if raised is None and any(e.kind == "warning" and e.decision is not None
                                              and e.decision.class_id == "hang"
                                              for e in report.events):
                        raised = time.monotonic()
                    if raised is not None:
                        chain = store.chains.get(result.chain_id)
                        texts = [_text(m) for m in slack.replies(CHANNEL, chain.thread_ts)]
                        if any("Python stacks · job" in t for t in texts):
                            stacks_at = time.monotonic()
                            break
                    time.sleep(max(0.0, TICK_S - (time.monotonic() - t)))
                assert raised is not None, "the stall was never raised"
                assert stacks_at is not None, "no stacks posted"
                waited = stacks_at - raised
                print(f"grouped stacks posted {waited:.1f} s after the stall was raised; longest "
                      f"tick {longest_tick:.1f} s")
                assert waited <= POSTED_WITHIN_S
                texts = [_text(m) for m in slack.replies(CHANNEL, chain.thread_ts)]
                [summary] = [t for t in texts if t.startswith("🔎 Python stacks")]
                assert f"Python stacks · job {job}: 3 of 4 ranks in `all_gather` ← `train_step`; " \
                       "the odd ones out: *rank 3* (" in summary
                assert "in `DataLoader._get_data` ← `DataLoader.__next__`." in summary
                deadline = time.monotonic() + 30  # the dump follows its summary, as a file
                while f"stacks-{job}.txt" not in _files(slack.replies(CHANNEL, chain.thread_ts)):
                    assert time.monotonic() < deadline, texts
                    time.sleep(0.5)
            finally:
                if job is not None:
                    ctx.clusters.slurm(CLUSTER).cancel(int(job))
