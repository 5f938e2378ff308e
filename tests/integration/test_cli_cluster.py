"""`trainbot doctor`, `submit` and `status` against the real dev cluster, through sshd.

Each test writes its own config (from the dev cluster's connection.json) into a tmp dir and
runs the real CLI in a subprocess, as a user would.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import paramiko
import pytest
import yaml
from slack_standin import SlackStandIn

from bot.config.dev_cluster import write_dev_cluster_config

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TOKENS = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_APP_TOKEN": "xapp-test-token"}


def trainbot(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 120):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "TRAINBOT_"))}
    env.update(env_extra or {})
    return subprocess.run(
        # As the installed `trainbot` script runs: import `bot.cli` and call its main.
        [sys.executable, "-c", "import sys; from bot.cli import main; sys.exit(main())", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def connection(dev_cluster, **changes) -> dict:
    return {**dataclasses.asdict(dev_cluster), **changes}


@pytest.fixture
def tag() -> str:
    return f"tbcli-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def remote_dir(dev_cluster, tag):
    """A scratch folder in the test user's home, removed afterwards."""
    path = f"{dev_cluster.home}/{tag}"
    dev_cluster.ssh(["mkdir", "-p", path], check=True)
    yield path
    dev_cluster.ssh(["rm", "-rf", path])


def put(dev_cluster, path: str, text: str) -> None:
    dev_cluster.ssh(["tee", path], input=text, check=True)


def test_doctor_passes_every_check_against_the_dev_cluster(dev_cluster, tmp_path, remote_dir):
    """Against the dev cluster and the Slack stand-in (doctor checks Slack for real)."""
    script = f"{remote_dir}/job.sbatch"
    put(dev_cluster, script, "#!/bin/bash\ntrue\n")
    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml",
        connection(dev_cluster),
        store_url=f"sqlite:///{tmp_path}/state/trainbot.db",
        recipes={"hello": {"sbatch_script": script}},
    )
    with SlackStandIn() as slack:
        data = yaml.safe_load(config.read_text())
        data["recipes"]["hello"]["channel"] = "training"
        data["slack"] = {"api_url": slack.api_url, "channels": {"training": "C0TRAINRUNS"}}
        config.write_text(yaml.safe_dump(data))
        proc = trainbot("doctor", "--config", str(config),
                        env_extra={**TOKENS, "SLACK_BOT_TOKEN": slack.token})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for name in ("config", "ssh dev", "slurm dev", "recipe hello", "store", "slack tokens",
                 "slack auth", "slack scopes", "slack channel C0TRAINRUNS"):
        assert re.search(rf"^\s+PASS\s+{name}:", out, re.MULTILINE), out
    assert "FAIL" not in out
    assert "22.05" in out and "--json supported" in out
    assert "all checks passed" in out


# What `trainbot doctor` says of each dev cluster's Slurm when the config asks for --json.
DOCTOR_USE_JSON = {
    "22.05": ("FAIL", "use_json refused: Slurm 22.05's sacct --json reports"),
    "24.11": ("PASS", "reads squeue --json (v0.0.42), sacct --json (v0.0.42), sstat --parsable2"),
}


def test_doctor_names_the_slurm_release_and_its_parsers(slurm_cluster, tmp_path):
    import yaml

    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml", connection(slurm_cluster),
        store_url=f"sqlite:///{tmp_path}/state/trainbot.db")
    proc = trainbot("doctor", "--config", str(config), env_extra=TOKENS)
    release = slurm_cluster.release
    assert re.search(rf"^\s+PASS\s+slurm version dev: Slurm {release}\.\d+; reads squeue "
                     r"--Format \(columns\), sacct --parsable2, sstat --parsable2$",
                     proc.stdout, re.MULTILINE), proc.stdout
    data = yaml.safe_load(config.read_text())
    data["clusters"]["dev"]["use_json"] = True
    config.write_text(yaml.safe_dump(data))
    proc = trainbot("doctor", "--config", str(config), env_extra=TOKENS)
    verdict, words = DOCTOR_USE_JSON[release]
    line = next(x for x in proc.stdout.splitlines() if "slurm version dev:" in x)
    assert line.split()[0] == verdict and words in line, proc.stdout


def test_doctor_reads_config_path_from_env_and_reports_missing_tokens(dev_cluster, tmp_path):
    config = write_dev_cluster_config(
        tmp_path / "x.yaml", connection(dev_cluster), store_url=f"sqlite:///{tmp_path}/s.db"
    )
    proc = trainbot("doctor", env_extra={"TRAINBOT_CONFIG": str(config)})
    assert proc.returncode == 1
    assert re.search(r"PASS\s+ssh dev", proc.stdout)
    assert re.search(r"FAIL\s+slack tokens: SLACK_BOT_TOKEN, SLACK_APP_TOKEN not set", proc.stdout)
    assert "fix: export SLACK_BOT_TOKEN" in proc.stdout


def test_doctor_fails_clearly_with_a_wrong_host_key(dev_cluster, tmp_path):
    wrong = paramiko.Ed25519Key.from_private_key_file(dev_cluster.key_file)  # not the host key
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(
        f"[{dev_cluster.host}]:{dev_cluster.port} {wrong.get_name()} {wrong.get_base64()}\n"
    )
    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml",
        connection(dev_cluster, known_hosts=str(known_hosts)),
        store_url=f"sqlite:///{tmp_path}/s.db",
    )
    proc = trainbot("doctor", "--config", str(config), env_extra=TOKENS)
    assert proc.returncode == 1, proc.stdout
    assert re.search(r"FAIL\s+ssh dev: host key refused: .*CHANGED", proc.stdout), proc.stdout
    assert "fix: verify the login node's key fingerprint" in proc.stdout
    assert str(known_hosts) in proc.stdout
    assert "slurm dev" not in proc.stdout  # nothing was run on an untrusted host


def test_doctor_fails_with_an_empty_known_hosts(dev_cluster, tmp_path):
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml",
        connection(dev_cluster, known_hosts=str(known_hosts)),
        store_url=f"sqlite:///{tmp_path}/s.db",
    )
    proc = trainbot("doctor", "--config", str(config), env_extra=TOKENS)
    assert proc.returncode == 1
    assert re.search(r"FAIL\s+ssh dev: host key refused: .*is not in", proc.stdout), proc.stdout


def test_doctor_reports_a_typo_in_the_config(tmp_path):
    config = tmp_path / "trainbot.yaml"
    config.write_text("clusters:\n  dev:\n    host: h\n    key_file: k\n    prot: 22\n")
    proc = trainbot("doctor", "--config", str(config), env_extra=TOKENS)
    assert proc.returncode == 1
    assert "clusters.dev.prot" in proc.stdout and "did you mean 'port'?" in proc.stdout


def test_submit_resumes_from_checkpoint_and_status_shows_the_job(
    dev_cluster, tmp_path, remote_dir, tag
):
    script = f"{remote_dir}/train.sbatch"
    put(
        dev_cluster,
        script,
        "#!/bin/bash\n"
        'echo "resume=${TRAINBOT_RESUME_FROM:-none} iter=${TRAINBOT_RESUME_ITER:-none}"\n'
        'for a in "$@"; do echo "arg=[$a]"; done\n'
        "sleep 2\n",
    )
    ckpt = f"{remote_dir}/ckpt"
    dev_cluster.ssh(["mkdir", "-p", f"{ckpt}/iter_000000020", f"{ckpt}/iter_000000030"], check=True)
    put(dev_cluster, f"{ckpt}/iter_000000020/.metadata", "meta")  # complete
    # iter 30 is partial (no .metadata): it must be skipped, like the reports' 76 GB one.
    put(dev_cluster, f"{ckpt}/iter_000000030/shard0", "x")
    hostile = "a'; touch /tmp/pwned-" + tag + " #$(id)"
    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml",
        connection(dev_cluster),
        store_url=f"sqlite:///{tmp_path}/state/trainbot.db",
        recipes={
            "mix": {
                "sbatch_script": script,
                "args": ["--steps", "10"],
                "job_name": tag,
                "time": "5",
                "mem": "100M",
                "log_path": f"{remote_dir}/%x-%j.out",
                "checkpoint": {"dir": ckpt},
                "overridable": {"note": "str", "time": "str"},
            }
        },
    )
    proc = trainbot("submit", "mix", f"note={hostile}", "time=3", "--config", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    match = re.search(r"submitted mix as job (\d+) .*attempt 1\); resuming from iteration "
                      r"20 \(`(\S+)`\)", proc.stdout)
    assert match, proc.stdout
    job_id, resumed = match[1], match[2]
    assert resumed == f"{ckpt}/iter_000000020"

    deadline = time.monotonic() + 90
    while True:
        status = trainbot("status", job_id, "--config", str(config))
        assert status.returncode == 0, status.stdout + status.stderr
        row = next(line for line in status.stdout.splitlines() if line.strip().startswith(job_id))
        if "COMPLETED" in row or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert re.search(rf"^\s+{job_id}\s+mix\s+1\s+COMPLETED\s+0:0", row), status.stdout

    log = dev_cluster.ssh(["cat", f"{remote_dir}/{tag}-{job_id}.out"], check=True).stdout
    assert f"resume={ckpt}/iter_000000020 iter=20" in log
    assert log.count("arg=[") == 3 and f"arg=[note={hostile}]" in log
    assert dev_cluster.ssh(["test", "-e", f"/tmp/pwned-{tag}"]).returncode == 1

    by_recipe = trainbot("status", "mix", "--config", str(config))
    assert by_recipe.returncode == 0 and f"{job_id}" in by_recipe.stdout
    assert "retries used 0" in by_recipe.stdout
    watched = trainbot("status", "--config", str(config))
    assert job_id in watched.stdout and "watched jobs" in watched.stdout


def test_submit_refuses_a_disallowed_override(dev_cluster, tmp_path):
    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml",
        connection(dev_cluster),
        store_url=f"sqlite:///{tmp_path}/s.db",
        recipes={"mix": {"sbatch_script": "/nonexistent.sbatch", "overridable": {"mem": "size"}}},
    )
    proc = trainbot("submit", "mix", "memory=1G", "--config", str(config))
    assert proc.returncode == 2
    assert "does not allow overriding 'memory' — did you mean 'mem'?" in proc.stderr


def test_submit_of_a_missing_script_fails_with_sbatch_error(dev_cluster, tmp_path, tag):
    config = write_dev_cluster_config(
        tmp_path / "trainbot.yaml",
        connection(dev_cluster),
        store_url=f"sqlite:///{tmp_path}/s.db",
        recipes={"mix": {"sbatch_script": f"/nonexistent/{tag}.sbatch"}},
    )
    proc = trainbot("submit", "mix", "--config", str(config))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "submit failed" in proc.stderr and "sbatch" in proc.stderr


def test_submit_of_an_array_recipe_submits_the_whole_array(slurm_cluster, tmp_path, tag):
    """`trainbot submit` of a recipe with `array:` on each dev cluster (Slurm 22.05, 24.11):
    one `sbatch --array=0-2` under the recipe's job name, no TRAINBOT_RESUME_FROM (each task
    finds its own checkpoint), and what it prints holds: the array's id and tasks, that each
    task finds its own checkpoint, and `trainbot status ID` lists its tasks."""
    remote = f"{slurm_cluster.home}/{tag}"
    slurm_cluster.ssh(["mkdir", "-p", remote], check=True)
    try:
        script = f"{remote}/array.sbatch"
        put(slurm_cluster, script,
            "#!/bin/bash\n"
            'echo "task=$SLURM_ARRAY_TASK_ID of=$SLURM_ARRAY_JOB_ID '
            'resume=${TRAINBOT_RESUME_FROM:-none}"\n'
            "sleep 1\n")
        config = write_dev_cluster_config(
            tmp_path / "trainbot.yaml",
            connection(slurm_cluster),
            store_url=f"sqlite:///{tmp_path}/state/trainbot.db",
            recipes={"sweep": {"sbatch_script": script, "array": "0-2", "job_name": tag,
                               "time": "3", "mem": "100M",
                               "log_path": f"{remote}/%x-%A_%a.out",
                               "checkpoint": {"dir": f"{remote}/ckpt/task_%a"}}},
        )
        proc = trainbot("submit", "sweep", "--config", str(config))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        match = re.fullmatch(
            rf"submitted sweep as job array (\d+) \(tasks 0-2, name {tag}, chain 1\); each "
            r"task finding its own checkpoint; `trainbot status (\d+)` lists the tasks\n",
            proc.stdout)
        assert match and match[1] == match[2], proc.stdout
        assert proc.stderr == "", proc.stderr
        array = match[1]

        deadline = time.monotonic() + 90
        while True:
            acct = slurm_cluster.ssh(["sacct", "-X", "-n", "-P", "-j", array,
                                      "-o", "JobID,JobName,State"], check=True).stdout.split()
            if (len(acct) == 3 and all(r.endswith("|COMPLETED") for r in acct)) or \
                    time.monotonic() > deadline:
                break
            time.sleep(2)
        assert sorted(acct) == [f"{array}_{n}|{tag}|COMPLETED" for n in range(3)], acct
        for n in range(3):
            log = slurm_cluster.ssh(["cat", f"{remote}/{tag}-{array}_{n}.out"],
                                    check=True).stdout
            assert f"task={n} of={array} resume=none" in log, log

        status = trainbot("status", array, "--config", str(config))
        assert status.returncode == 0, status.stdout + status.stderr
        for n in range(3):
            assert f"{array}_{n}" in status.stdout, status.stdout
    finally:
        slurm_cluster.ssh(["scancel", f"--name={tag}"])
        slurm_cluster.ssh(["rm", "-rf", remote])
