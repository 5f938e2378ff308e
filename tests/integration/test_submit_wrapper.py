"""A recipe with a site submit wrapper (`submit_command`) on the real dev cluster: its Slurm
options and `/train submit` overrides reach the sbatch the wrapper runs as sbatch's input
environment variables, and an override the wrapper overrules itself is reported as not
applied, with what the job got; its log_path takes the job's stdout and stderr both, over the
script's own `#SBATCH --output` / `--error`.

Each test works in its own directory under the test user's home with a unique job name; every
job it starts is cancelled afterwards.
"""

from __future__ import annotations

import posixpath
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.cluster.sessions import ClusterSessions
from bot.config import Config
from bot.services.send_job import NotApplied
from bot.services.submit import submit_recipe
from bot.store import Store

pytestmark = pytest.mark.integration

ACCOUNT = "team-b"  # not the test user's default account (root)

JOB_SCRIPT = """#!/bin/sh
sleep 120
"""

# Site wrappers: one submits the job script as it is (the options come from sbatch's
# environment), one also forces its own --mem on sbatch's command line.
PLAIN_WRAPPER = """#!/bin/sh
exec sbatch --parsable --job-name="$TRAINBOT_JOB_NAME" --output=/dev/null "{script}"
"""
FORCING_WRAPPER = """#!/bin/sh
exec sbatch --parsable --job-name="$TRAINBOT_JOB_NAME" --output=/dev/null --mem=200M "{script}"
"""
# A wrapper that leaves the output files to sbatch's environment, and a script naming its own.
LOGGED_WRAPPER = """#!/bin/sh
exec sbatch --parsable --job-name="$TRAINBOT_JOB_NAME" "{work}/own_files.sh"
"""
OWN_FILES_SCRIPT = """#!/bin/sh
#SBATCH --output={work}/own-%j.out
#SBATCH --error={work}/own-%j.err
echo "iter: 4/100 | loss: 0.94"
echo "torch.OutOfMemoryError: CUDA out of memory." >&2
exit 1
"""
WRAPPERS = {"plain": PLAIN_WRAPPER, "forcing": FORCING_WRAPPER, "logged": LOGGED_WRAPPER}


@dataclass
class Env:
    cluster: Any
    config: Config
    sessions: ClusterSessions
    store: Store
    tag: str
    work: str

    def scontrol(self, job_id: str) -> dict[str, str]:
        """`scontrol show job` as key=value pairs (independent of trainbot's parsers)."""
        proc = self.cluster.ssh(["scontrol", "show", "job", "--oneliner", job_id])
        assert proc.returncode == 0, proc.stderr
        return dict(word.split("=", 1) for word in proc.stdout.split() if "=" in word)


def write(cluster: Any, path: str, text: str, mode: str) -> None:
    proc = cluster.ssh(["sh", "-c", 'cat > "$1" && chmod "$2" "$1"', "sh", path, mode],
                       input=text)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def env(slurm_cluster: Any, tmp_path: Path) -> Iterator[Env]:
    tag = uuid.uuid4().hex[:10]
    work = posixpath.join(slurm_cluster.home, f"wrapper-{tag}")
    assert slurm_cluster.ssh(["mkdir", "-p", work]).returncode == 0
    write(slurm_cluster, f"{work}/job.sh", JOB_SCRIPT, "755")
    write(slurm_cluster, f"{work}/own_files.sh", OWN_FILES_SCRIPT.format(work=work), "755")
    for name, text in WRAPPERS.items():
        write(slurm_cluster, f"{work}/{name}.sh",
              text.format(script=f"{work}/job.sh", work=work), "755")
    overridable = {"account": "str", "mem": "size", "time": "str"}
    recipes = {
        name: {"submit_command": [f"{work}/{name}.sh"], "job_name": f"{name}-{tag}",
               "workdir": work, "time": "10", "overridable": overridable}
        for name in WRAPPERS
    }  # fmt: skip
    recipes["logged"]["log_path"] = f"{work}/%x-%j.log"
    config = Config.model_validate(slurm_cluster.bot_config_data(
        store_url=f"sqlite:///{tmp_path / 'state.db'}", recipes=recipes))
    store = Store.open(config.store.url)
    sessions = ClusterSessions(config)
    try:
        yield Env(slurm_cluster, config, sessions, store, tag, work)
    finally:
        for name in WRAPPERS:
            slurm_cluster.ssh(["scancel", "--name", f"{name}-{tag}"])
        sessions.close()
        store.close()
        slurm_cluster.ssh(["rm", "-rf", work])


def submit(env: Env, recipe: str, overrides: list[str]) -> Any:
    return submit_recipe(env.config, recipe, overrides=overrides,
                         slurm=env.sessions.slurm("dev"),
                         sftp=None,  # type: ignore[arg-type]  # a recipe without checkpoints
                         store=env.store,
                         now=1.0, actor="U0ALICE")


def test_overrides_reach_the_sbatch_a_wrapper_runs(env: Env) -> None:
    result = submit(env, "plain", [f"account={ACCOUNT}", "mem=100M", "time=5"])
    job = env.scontrol(result.job_id)
    assert (job["Account"], job["MinMemoryNode"], job["TimeLimit"]) == (ACCOUNT, "100M",
                                                                         "00:05:00")
    assert job["Partition"] == env.config.recipe("plain").partition  # the recipe's own option
    assert result.not_applied == ()
    assert result.overrides == {"account": ACCOUNT, "mem": "100M", "time": "5"}


def test_an_override_the_wrapper_overrules_is_reported_not_applied(env: Env) -> None:
    result = submit(env, "forcing", [f"account={ACCOUNT}", "mem=100M"])
    job = env.scontrol(result.job_id)
    assert (job["Account"], job["MinMemoryNode"]) == (ACCOUNT, "200M")
    assert result.not_applied == (NotApplied("mem", "100M", "200M"),)
    assert result.overrides == {"account": ACCOUNT}


def test_a_wrappers_job_writes_stdout_and_stderr_to_the_recipes_log_path(env: Env) -> None:
    """The wrapper runs a script that names its own --output and --error files: the job's
    stdout and stderr both land in the recipe's log_path (sbatch's SBATCH_OUTPUT and
    SBATCH_ERROR outrank the script's lines), in order, and the script's files stay
    unwritten. Before, the wrapper's job wrote its traceback where the script said."""
    result = submit(env, "logged", [])
    job = env.scontrol(result.job_id)
    log = f"{env.work}/logged-{env.tag}-{result.job_id}.log"
    assert (job["StdOut"], job["StdErr"]) == (log, log)
    deadline = time.monotonic() + 90
    text = ""
    while "CUDA out of memory" not in text and time.monotonic() < deadline:
        time.sleep(1)
        text = env.cluster.ssh(["cat", log]).stdout
    assert text.index("iter: 4/100") < text.index("torch.OutOfMemoryError: CUDA out of memory")
    own = env.cluster.ssh(["ls", env.work]).stdout.split()
    assert not [name for name in own if name.startswith("own-")], own
