"""The dev cluster itself: sshd is key-only and strict, jobs run as the test user and reach
accounting, hold/release works, and a stopped controller is noticed and brought back."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def sacct_row(dev_cluster, job_id: str, fields: str = "State,User,Account,ExitCode") -> list[str]:
    """The job's allocation row from sacct, [] while accounting has not seen it yet."""
    proc = dev_cluster.ssh(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", fields], check=True)
    lines = proc.stdout.strip().splitlines()
    return lines[0].split("|") if lines else []


def wait_for_state(dev_cluster, job_id: str, state: str, timeout: float = 90) -> list[str]:
    """Poll sacct (it lags slurmctld) until the job reaches `state`; return the row."""
    deadline = time.monotonic() + timeout
    row: list[str] = []
    while time.monotonic() < deadline:
        row = sacct_row(dev_cluster, job_id)
        if row and row[0] == state:
            return row
        time.sleep(1)
    pytest.fail(f"job {job_id} did not reach {state} within {timeout} s; last sacct row {row}")


def sbatch(dev_cluster, *args: str) -> str:
    proc = dev_cluster.ssh(["sbatch", "--parsable", *args])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def test_key_auth_works_as_the_unprivileged_user(dev_cluster):
    proc = dev_cluster.ssh(["id", "-un"], check=True)
    assert proc.stdout.strip() == dev_cluster.user == "slurmci"
    assert dev_cluster.ssh(["id", "-u"], check=True).stdout.strip() != "0"


def test_sshd_offers_no_password_auth(dev_cluster):
    argv = dev_cluster.ssh_argv()
    argv[1:1] = ["-o", "PubkeyAuthentication=no",
                 "-o", "PreferredAuthentications=password,keyboard-interactive"]  # fmt: skip
    proc = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 255
    assert "Permission denied (publickey)" in proc.stderr


def test_sshd_refuses_an_unknown_client_key(dev_cluster, tmp_path: Path):
    other_key = tmp_path / "id_other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other_key)],
                   check=True)  # fmt: skip
    argv = dev_cluster.ssh_argv(key_file=str(other_key))
    proc = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 255
    assert "Permission denied" in proc.stderr


def test_client_refuses_a_host_key_missing_from_known_hosts(dev_cluster, tmp_path: Path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    argv = dev_cluster.ssh_argv(known_hosts=str(empty))
    proc = subprocess.run([*argv, "true"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 255
    assert "Host key verification failed" in proc.stderr


def test_job_runs_as_test_user_and_reaches_accounting(dev_cluster):
    name = unique("devc-whoami")
    out = f"{dev_cluster.home}/{name}.out"
    job_id = sbatch(dev_cluster, "-J", name, "-p", dev_cluster.partition, "-A", "team-b",
                    "-o", out, "--wrap", "id -un")  # fmt: skip

    state, user, account, exit_code = wait_for_state(dev_cluster, job_id, "COMPLETED")

    assert (user, account, exit_code) == ("slurmci", "team-b", "0:0")
    assert dev_cluster.ssh(["cat", out], check=True).stdout.strip() == "slurmci"
    dev_cluster.ssh(["rm", "-f", out])


def test_hold_and_release_a_pending_job(dev_cluster):
    name = unique("devc-hold")
    job_id = sbatch(dev_cluster, "--hold", "-J", name, "-o", "/dev/null", "--wrap", "true")

    reason = dev_cluster.ssh(["squeue", "-h", "-j", job_id, "-o", "%T %r"], check=True)
    assert reason.stdout.split() == ["PENDING", "JobHeldUser"]

    dev_cluster.ssh(["scontrol", "release", job_id], check=True)
    wait_for_state(dev_cluster, job_id, "COMPLETED")


def test_stopped_controller_fails_squeue_and_comes_back(dev_cluster):
    try:
        dev_cluster.stop_daemon("slurmctld")
        down = dev_cluster.ssh(["squeue", "-h"], timeout=120)
        assert down.returncode != 0
        assert "Unable to contact slurm controller" in down.stderr
    finally:
        dev_cluster.start_daemons()
    up = dev_cluster.ssh(["squeue", "-h", "-o", "%i"])
    assert up.returncode == 0, up.stderr
