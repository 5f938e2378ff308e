"""The "Run DataLoader probe" button on the dev cluster: an approver's click, then the
scheduler's `probes` job (its side effects fenced by its lease) runs the recipe's probe as a
real srun task — in the recipe's workdir, after its env_setup, with its env — and the result
(each worker's RSS growth, what grows) reaches the run's thread.

The recipe's env is the test's own Python packages (torch, numpy) put on PYTHONPATH by the
env_setup, for the cluster user's system python3: the root-owned venv's interpreter is not
runnable by that user, its site-packages are readable. The Dataset is the fixture decoder
cache of job 88016 (tests/fixtures/probes/decoder_datasets.py), copied into the workdir.
"""

from __future__ import annotations

import posixpath
import sysconfig
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fakes import RecordingMessageSink, present, recorded, writer

from bot.app import build_context
from bot.cluster.ssh import SSHRunner
from bot.config import Config
from bot.services.approvals import handle_click
from bot.services.fencing import fenced_context
from bot.services.leases import LeaseKeeper
from bot.services.probes import create_probe_offer, run_requested_probes
from bot.slack.views import ActionId

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / "tests" / "fixtures" / "probes" / "decoder_datasets.py"
APPROVER = "W0LEAD"
HOSTILE = "a'; echo pwned; '$(id)`"
PROBE_JOBS = "trainbot-dataloader-probe-"


def _scancel_probes(ssh: SSHRunner) -> None:
    """Cancel every probe srun of the cluster user still in the queue."""
    out = ssh.run(["squeue", "--noheader", "--user", present(ssh.settings.user), "--format=%i %j"],
                  check=False)
    ids = [line.split()[0] for line in out.stdout.splitlines()
           if len(line.split()) == 2 and line.split()[1].startswith(PROBE_JOBS)]
    if ids:
        ssh.run(["scancel", *ids], check=False)


@pytest.fixture
def workdir(dev_cluster: Any) -> Iterator[tuple[SSHRunner, str]]:
    with SSHRunner(dev_cluster.ssh_settings()) as ssh:
        run_dir = posixpath.join(dev_cluster.home, f"tb-probe-{uuid.uuid4().hex[:8]}")
        ssh.run(["mkdir", "-p", run_dir])
        ssh.sftp().put(str(DATASETS), posixpath.join(run_dir, DATASETS.name))
        try:
            yield ssh, run_dir
        finally:
            _scancel_probes(ssh)
            ssh.run(["rm", "-rf", run_dir], check=False)


def test_an_approved_probe_runs_on_the_cluster_and_its_result_reaches_the_thread(
        dev_cluster: Any, workdir: tuple[SSHRunner, str], tmp_path: Path) -> None:
    ssh, run_dir = workdir
    packages = sysconfig.get_paths()["purelib"]
    data = dev_cluster.bot_config_data(store_url=f"sqlite:///{tmp_path / 'bot.db'}",
                                       recipes={"mix": {
        "sbatch_script": posixpath.join(run_dir, "train.sbatch"),
        "workdir": run_dir,
        "env_setup": f"export PYTHONPATH={packages}",
        "env": {"TRAINBOT_PROBE_MARK": HOSTILE},
        "approvers": [APPROVER],
        "dataloader_probe": {"factory": "decoder_datasets:leaky", "samples": 80,
                             "mem": "2G", "timeout_s": 180},
    }})
    config = Config.model_validate(data)
    now = time.time()
    # the bot's services as `trainbot run` builds them, its thread posts recorded
    ctx = build_context(config, slack=False)
    store = ctx.store
    ctx = replace(ctx, sink=RecordingMessageSink(store))
    with store, ctx.clusters:  # type: ignore[attr-defined]  # the real sessions: a context
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=now)
        store.attempts.record(chain_id=chain.id, job_id="9001", now=now, state="OUT_OF_MEMORY")
        writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
        button = create_probe_offer(ctx, recipe="mix", chain_id=chain.id, job_id="9001",
                                    now=now)
        assert button is not None and button["action_id"] == ActionId.RUN_PROBE
        click = handle_click(ctx, button["value"], ActionId.RUN_PROBE, APPROVER, now)
        assert click.status == "done"

        keeper = LeaseKeeper(store.leases)
        assert keeper.holds("probes", time.time(), 10.0)
        fenced = fenced_context(ctx, keeper.fence("probes", time.time))
        started = time.monotonic()
        assert run_requested_probes(fenced, time.time()) == 1
        assert time.monotonic() - started < 180

        [(kind, chain_id, key, text)] = [
            p for p in recorded(ctx).posts if p[2].startswith("probe:")]
        assert chain_id == chain.id and key == f"probe:{button['value']}"
        assert "DataLoader probe of mix" in text, text
        assert "decoder_datasets:leaky" in text and "2 workers" in text
        assert "What grows: the DataLoader workers" in text
        assert text.count("MB per sample") >= 2  # each worker's growth, then the verdict
        assert present(store.approvals.get(button["value"])).state == "done"
        assert run_requested_probes(fenced, time.time()) == 0
    _scancel_probes(ssh)
    out = ssh.run(["squeue", "--noheader", "--user", present(ssh.settings.user), "--format=%j"],
                  check=False)
    assert PROBE_JOBS not in out.stdout
