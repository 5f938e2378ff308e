"""A GPU fault on the dev cluster's two-node partition: the job dies of an uncorrectable ECC
error on one node, the watcher diagnoses `gpu_failure` on that node, and the resubmit, the
automatic one and the one a person approves (`trainbot approvals decide`), leaves that node
out (`sbatch --exclude`) and really runs on the other node: said by Slurm (ExcNodeList,
NodeList), recorded in the new attempt's row and said in the thread."""

from __future__ import annotations

import posixpath
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster_jobs import DemoJobs
from slack_standin import SlackStandIn

from bot.app import build_watcher
from bot.cli import main
from bot.config import Config
from bot.services.ports import BotContext
from bot.services.runs import submit_and_announce
from bot.store import Attempt

pytestmark = pytest.mark.integration

CLUSTER = "dev"
CHANNEL = "C0GPUFAULT"
OWNER = "U0OWNER"
DEADLINE_S = 180.0


@dataclass
class Run:
    """One recipe on the two-node partition, its bot context, the Slack stand-in."""

    ctx: BotContext
    slack: SlackStandIn
    config_path: Path
    nodes: tuple[str, str]

    def slurm_text(self, *argv: str) -> str:
        return self.ctx.clusters.runner(CLUSTER).run(list(argv)).stdout

    def job_fields(self, job_id: str) -> dict[str, str]:
        """`scontrol show job`'s Key=Value fields (NodeList, ExcNodeList, Partition, …)."""
        text = self.slurm_text("scontrol", "show", "job", "-o", job_id)
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def thread(self) -> str:
        return "\n".join(str(m) for m in self.slack.all_messages())


@pytest.fixture
def gpu_fault_run(dev_cluster, slack_bot, tmp_path, request) -> Iterator[Run]:
    """A recipe whose job faults its GPU once (`--scenario gpu-ecc`), in the dev cluster's
    two-node partition; `request.param` is its policy. Every job of the chain is cancelled
    afterwards."""
    assert dev_cluster.pair_partition and dev_cluster.second_node, (
        "the dev cluster has no second node: run deploy/dev-cluster/up.sh")
    tag = uuid.uuid4().hex[:6]
    with SlackStandIn() as slack, DemoJobs.open(dev_cluster) as jobs:
        ckpt = jobs.path("ckpt", "gpufault")
        recipe = {
            "sbatch_script": jobs.path("launch.sbatch"),
            "args": ["--scenario", "gpu-ecc", "--gpu-fault-at", "6", "--target-iter", "100000",
                     "--sec-per-iter", "0.1", "--save-every", "3"],
            "partition": dev_cluster.pair_partition,
            "mem": "128M", "time": "5",
            "job_name": f"tb-gpufault-{tag}",
            "workdir": jobs.root,
            "log_path": posixpath.join(jobs.root, "logs", "%x-%j.out"),
            "env": {"TRAINBOT_DEMO_DIR": jobs.root, "TRAINBOT_CKPT_DIR": ckpt},
            "checkpoint": {"dir": ckpt, "complete_rule": "dcp"},
            "owners": [OWNER], "approvers": [OWNER],
            "policy": {"backoff_s": 0, "tick_s": 1, "retry_budget": 3, **request.param},
        }
        data = dev_cluster.bot_config_data(
            store_url=f"sqlite:///{tmp_path / 'bot.db'}", recipes={"gpufault": recipe},
            cluster_name=CLUSTER, channels={"runs": CHANNEL}, approvers=[OWNER])
        config_path = tmp_path / "trainbot.yaml"
        config_path.write_text(yaml.safe_dump(data))
        with slack_bot(Config.model_validate(data), slack) as ctx:
            try:
                yield Run(ctx, slack, config_path, (dev_cluster.node, dev_cluster.second_node))
            finally:
                slurm = ctx.clusters.slurm(CLUSTER)
                for chain in ctx.store.chains.for_recipe("gpufault"):
                    for a in ctx.store.attempts.for_chain(chain.id):
                        rec = slurm.jobs([int(a.job_id)]).get(int(a.job_id))
                        if rec is not None and not rec.is_finished:
                            slurm.cancel(int(a.job_id))


def watch_until(run: Run, chain_id: int, done: Any) -> list[Attempt]:
    """Tick the watcher every second until `done(attempts)`, within DEADLINE_S."""
    watcher = build_watcher(run.ctx, CLUSTER)
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE_S:
        watcher.tick(time.time())
        attempts = run.ctx.store.attempts.for_chain(chain_id)
        if done(attempts):
            return attempts
        time.sleep(1.0)
    attempts = run.ctx.store.attempts.for_chain(chain_id)
    pytest.fail(f"not done within {DEADLINE_S} s: "
                f"{[(a.job_id, a.state, a.cause) for a in attempts]}")


def runs_elsewhere(run: Run, faulty: Attempt, resubmitted: Attempt) -> str:
    """The resubmitted job left the faulty node out and ran on the other one: its node."""
    node = run.job_fields(faulty.job_id)["NodeList"]
    assert node in run.nodes and faulty.excluded_nodes is None
    assert resubmitted.excluded_nodes == node  # recorded in the attempt row
    other = next(n for n in run.nodes if n != node)
    deadline = time.monotonic() + 60
    fields = run.job_fields(resubmitted.job_id)
    while fields.get("JobState") == "PENDING" and time.monotonic() < deadline:
        time.sleep(1.0)
        fields = run.job_fields(resubmitted.job_id)
    assert fields["ExcNodeList"] == node, fields
    assert (fields["JobState"], fields["NodeList"]) in (
        ("RUNNING", other), ("COMPLETED", other)), fields
    sacct = run.slurm_text("sacct", "-n", "-X", "-P", "-j", resubmitted.job_id,
                           "-o", "NodeList")
    assert sacct.split() in ([], [other]), sacct  # accounting agrees (once it has the row)
    return node


@pytest.mark.parametrize("gpu_fault_run", [{"auto_resubmit": True}], indirect=True)
def test_an_automatic_resubmit_after_a_gpu_fault_runs_on_the_other_node(gpu_fault_run) -> None:
    run = gpu_fault_run
    chain_id = submit_and_announce(run.ctx, "gpufault", actor=OWNER, now=time.time()).chain_id
    first, second, *_ = watch_until(run, chain_id, lambda attempts: len(attempts) >= 2)
    assert first.cause == "gpu_failure"
    node = runs_elsewhere(run, first, second)
    thread = run.thread()
    assert f"--exclude={node}" in thread  # the incident says which node and why
    assert f"On node *{node}*" in thread


@pytest.mark.parametrize("gpu_fault_run", [{"auto_resubmit": False}], indirect=True)
def test_an_approved_resubmit_after_a_gpu_fault_runs_on_the_other_node(gpu_fault_run,
                                                                       capsys) -> None:
    run = gpu_fault_run
    store = run.ctx.store
    chain_id = submit_and_announce(run.ctx, "gpufault", actor=OWNER, now=time.time()).chain_id

    def prompted(attempts: list[Attempt]) -> bool:
        return any(a.action == "resubmit" for a in store.approvals.for_chain(chain_id,
                                                                             "pending"))

    [first] = watch_until(run, chain_id, prompted)
    assert first.cause == "gpu_failure"
    node = run.job_fields(first.job_id)["NodeList"]
    assert f"Resubmit without {node}" in run.thread()  # the prompt's button names the node
    [approval] = store.approvals.for_chain(chain_id, "pending")
    assert approval.payload["exclude"] == node
    assert main(["approvals", "decide", "resubmit", f"--token={approval.token}", "--as", OWNER,
                 "--config", str(run.config_path)]) == 0
    decided = capsys.readouterr().out
    assert decided.startswith("done:") and f"without node {node} (--exclude)" in decided
    first, second = store.attempts.for_chain(chain_id)
    assert runs_elsewhere(run, first, second) == node
