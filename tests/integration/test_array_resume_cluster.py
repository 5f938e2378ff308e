"""An array recipe on each real dev cluster (Slurm 22.05 and 24.11): `array: "0-2"` submits
three tasks in one thread; task 1 stalls and dies of an NCCL timeout (resumable), the watcher
resubmits only that task (`sbatch --array=1`, same job name) from task 1's own checkpoint
(`%a` in the recipe's checkpoint dir), and the root's row for task 1 shows the retry, then
its completion."""

from __future__ import annotations

import json
import posixpath
import time
import uuid

import pytest
from cluster_jobs import DemoJobs
from slack_standin import SlackStandIn

from bot.app import build_watcher
from bot.config import Config
from bot.services.runs import submit_and_announce

pytestmark = pytest.mark.integration

CHANNEL = "C0ARRAY"
OWNER = "U0OWNER"
DEADLINE_S = 240.0

# Each task trains in its own checkpoint dir; task 1 plays a stall ending in an NCCL timeout
# once (fake_train's marker in that dir), so its resubmit trains on to the end.
ARRAY_SCRIPT = """#!/bin/bash
#SBATCH --cpus-per-task=1
set -euo pipefail
export TRAINBOT_CKPT_DIR="$ARRAY_CKPT_ROOT/task_${SLURM_ARRAY_TASK_ID}"
scenario=healthy
if [[ "$SLURM_ARRAY_TASK_ID" == 1 ]]; then scenario=stall-then-nccl; fi
exec bash "$TRAINBOT_DEMO_DIR/launch.sbatch" --scenario "$scenario" --target-iter 24 \\
    --sec-per-iter 0.3 --save-every 6 --save-seconds 0.3 --stall-at 14 --stall-seconds 8 \\
    --log-every 1
"""


def test_a_failed_task_of_an_array_recipe_is_resubmitted_alone(slurm_cluster, slack_bot,
                                                               tmp_path):
    tag = uuid.uuid4().hex[:6]
    name = f"tb-arr-{tag}"
    with SlackStandIn() as slack, DemoJobs.open(slurm_cluster) as jobs:
        script = jobs.path("array.sbatch")
        with jobs.runner.sftp().open(script, "w") as f:
            f.write(ARRAY_SCRIPT)
        recipe = {
            "sbatch_script": script, "array": "0-2", "job_name": name,
            "mem": "256M", "time": "5", "workdir": jobs.root,
            "log_path": posixpath.join(jobs.root, "logs", "%x-%A_%a.out"),
            "env": {"TRAINBOT_DEMO_DIR": jobs.root, "ARRAY_CKPT_ROOT": jobs.path("ckpt")},
            "checkpoint": {"dir": jobs.path("ckpt", "task_%a"), "complete_rule": "dcp"},
            "target_iter": 24, "owners": [OWNER], "approvers": [OWNER],
            "policy": {"auto_resubmit": True, "backoff_s": 0, "tick_s": 1, "stall_min_s": 4,
                       "save_time_s": 2, "retry_budget": 2},
        }
        config = Config.model_validate(slurm_cluster.bot_config_data(
            store_url=f"sqlite:///{tmp_path / 'bot.db'}", recipes={"sweep": recipe},
            channels={"runs": CHANNEL}, approvers=[OWNER]))
        with slack_bot(config, slack, charts=False) as ctx:
            store, runner = ctx.store, ctx.clusters.runner("dev")
            try:
                result = submit_and_announce(ctx, "sweep", actor=OWNER, now=time.time())
                array = result.job_id
                chain_id = result.chain_id
                watcher = build_watcher(ctx, "dev")
                started = time.monotonic()
                while time.monotonic() - started < DEADLINE_S:
                    watcher.tick(time.time())
                    if store.chains.get(chain_id).status != "active":
                        break
                    time.sleep(1.0)
                attempts = {a.shown_id: a for a in store.attempts.for_chain(chain_id)}
                seen = [(k, a.state, a.cause, a.checkpoint_path) for k, a in attempts.items()]
                assert store.chains.get(chain_id).status == "completed", seen

                retried = [a for k, a in attempts.items() if not k.startswith(f"{array}_")]
                assert sorted(k for k in attempts if k.startswith(f"{array}_")) == [
                    f"{array}_0", f"{array}_1", f"{array}_2"], seen
                assert attempts[f"{array}_1"].cause == "nccl_timeout", seen
                [again] = retried  # only task 1 came back
                assert again.shown_id == f"{again.job_id}_1" and again.result == "COMPLETED", seen
                assert again.checkpoint_path is not None and \
                    again.checkpoint_path.startswith(jobs.path("ckpt", "task_1", "iter_")), seen
                assert again.start_iter == 12, seen
                # Slurm says: a one-task array of task 1 under the same name
                acct = runner.run(["sacct", "-X", "-n", "-P", "-j", again.job_id,
                                   "-o", "JobID,JobName"]).stdout.split()
                assert acct == [f"{again.job_id}_1|{name}"], acct
                log = runner.run(["cat", jobs.path("logs", f"{name}-{again.job_id}_1.out")]).stdout
                assert f"trainbot chose {again.checkpoint_path}" in log, log[-2000:]

                [root] = slack.root_messages(CHANNEL)
                shown = json.dumps(root["blocks"], ensure_ascii=False)
                assert f"array {array} · COMPLETED" in shown, shown
                assert f"{again.job_id}_1 #2" in shown and f"{array}_1 " not in shown, shown
                texts = [m["text"] for m in slack.replies(CHANNEL, root["ts"])]
                assert any(f"job array {array} (tasks 0-2)" in t for t in texts), texts
                assert any(f"{array}_1" in t and "nccl_timeout" in t for t in texts), texts
                # the resubmit's ✅ line says which task it replaced
                assert any(t.startswith(f"✅ Completed · job {again.job_id}_1 (was {array}_1):")
                           for t in texts), texts
            finally:
                runner.run(["scancel", f"--name={name}"], check=False)
