"""A cancel's scancel ends on the real login node within its run bound, whatever its channel does.

The fault: a scancel that hangs on the login node (a `scancel` first on PATH that records its
pid, sleeps, then, were it still alive, would write a marker and exec the real scancel: the
late landing of a scancel whose answer trainbot gave up on). SlurmClient.cancel runs it as
`timeout -k KILL TERM scancel JOB` (bot.core.takeover.scancel_limits), so the login node stops
it at the client's bound, also when trainbot's SSH connection dropped under it: the job is
not cancelled long after the click said its end was not seen. Before, a plain `scancel JOB`
kept running there after the drop and cancelled the job seconds later.
"""

from __future__ import annotations

import shlex
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from bot.cluster.errors import ChannelClosed, CommandFailed, OutcomeUnknown, brief_command
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import CommandResult, SSHRunner
from bot.core.slurm.sbatch import SubmitSpec

pytestmark = pytest.mark.integration

# the shell a bounded scancel runs in, which reports scancel's own exit status
REPORTING = ["/bin/sh", "-c",
             'trap "exit 143" TERM; scancel "$@"; s=$?; echo "scancel exited $s"; exit $s']
HANG_S = 20  # how long the hanging scancel sleeps before it would land
BOUND_S = 8.0  # the client's command bound: `timeout -k 2 6 scancel …`


class _PathFirst:
    """`inner`, with `path` (the hanging scancel's directory first) as every command's PATH."""

    def __init__(self, inner: SSHRunner, path: str) -> None:
        self.inner = inner
        self.path = path

    def run(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:
        kwargs["env"] = {**(kwargs.get("env") or {}), "PATH": self.path}
        return self.inner.run(argv, **kwargs)

    def sftp(self) -> Any:
        return self.inner.sftp()

    def deadlines(self) -> Any:
        return self.inner.deadlines()

    def close(self) -> None:
        self.inner.close()


@contextmanager
def _hanging_scancel(runner: SSHRunner, home: str, hang_s: int) -> Iterator[tuple[str, str]]:
    """(its directory, the PATH that puts it first) for the user `runner` logs in as; removed
    afterwards, its process ended by its pid if it is still there."""
    real = runner.run(["sh", "-c", "command -v scancel"]).stdout.strip()
    assert real, "no scancel on the login node's PATH"
    with _scancel_first(runner, home, lambda where: (
            f"#!/bin/sh\necho $$ > {shlex.quote(where)}/pid\nsleep {hang_s}\n"
            f"echo landed > {shlex.quote(where)}/late\nexec {shlex.quote(real)} \"$@\"\n")
    ) as placed:
        yield placed


@contextmanager
def _scancel_first(runner: SSHRunner, home: str,
                   script: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    """A `scancel` made of `script(its directory)`, first on PATH: (its directory, that PATH),
    for the user `runner` logs in as; removed afterwards, its process ended by the pid it
    wrote in its directory if it is still there."""
    where = f"{home}/it-scancel-{uuid.uuid4().hex[:8]}"
    runner.run(["sh", "-c", 'mkdir -p "$1" && cat > "$1/scancel" && chmod 755 "$1/scancel"',
                "sh", where], stdin=script(where))
    path = f"{where}:" + runner.run(["sh", "-c", "echo $PATH"]).stdout.strip()
    try:
        yield where, path
    finally:
        runner.run(["sh", "-c", 'p=$(cat "$1/pid" 2>/dev/null) && kill -9 "$p"; rm -rf "$1"',
                    "sh", where], check=False)


def _read(runner: SSHRunner, path: str) -> str | None:
    got = runner.run(["cat", path], check=False)
    return got.stdout.strip() if got.exit_code == 0 else None


def _alive(runner: SSHRunner, pid: str) -> bool:
    """Whether `pid` still runs there (a zombie, dead and not yet reaped, does not)."""
    return runner.run(["sh", "-c", 's=$(ps -o stat= -p "$1") && case "$s" in Z*) exit 1;; esac',
                       "sh", pid], check=False).exit_code == 0


def _wait_for_pid(runner: SSHRunner, where: str) -> str:
    deadline = time.monotonic() + 30
    while (pid := _read(runner, f"{where}/pid")) is None:
        assert time.monotonic() < deadline, "the hanging scancel never started"
        time.sleep(0.2)
    return pid


def test_a_scancel_whose_connection_dropped_is_ended_on_the_login_node_and_never_lands(
        slurm_cluster) -> None:
    """The cancel's SSH connection drops while its scancel hangs: the click gets a
    ChannelClosed (its end not seen), and the login node still ends the scancel at its bound
    (6 s, then SIGKILL 2 s later): by the time the hang is over, nothing landed and the job
    is still queued. Before, the orphaned scancel slept on and cancelled the job."""
    with SSHRunner(slurm_cluster.ssh_settings()) as ssh, \
            _hanging_scancel(ssh, slurm_cluster.home, HANG_S) as (where, path):
        job_id = SlurmClient(ssh, use_json=False, timeout=60).submit(
            SubmitSpec(job_name=f"it-hung-scancel-{uuid.uuid4().hex[:8]}", output="/dev/null"),
            script="#!/bin/bash\nsleep 300\n")
        try:
            dropping = SSHRunner(slurm_cluster.ssh_settings())
            client = SlurmClient(_PathFirst(dropping, path), use_json=False, timeout=BOUND_S)
            ended: list[Exception] = []

            def cancel() -> None:
                try:
                    client.cancel(job_id)
                except Exception as exc:  # noqa: BLE001 - handed to the test's thread
                    ended.append(exc)

            clicking = threading.Thread(target=cancel, daemon=True)
            clicking.start()
            pid = _wait_for_pid(ssh, where)
            started = time.monotonic()
            dropping.close()  # the connection drops under the scancel
            clicking.join(30)
            assert not clicking.is_alive()
            time.sleep(max(0.0, started + BOUND_S + 2 - time.monotonic()))
            outlived = _alive(ssh, pid)
            time.sleep(max(0.0, started + HANG_S + 3 - time.monotonic()))
            assert _read(ssh, f"{where}/late") is None, "the orphaned scancel landed late"
            state = ssh.run(["squeue", "--noheader", f"--jobs={job_id}", "--format=%T"])
            assert state.stdout.strip() in {"PENDING", "RUNNING"}
            assert not outlived, "the scancel outlived its bound on the login node"
            [lost] = ended
            assert isinstance(lost, ChannelClosed) and isinstance(lost, OutcomeUnknown)
            assert lost.argv == ["timeout", "-k", "2", "6", *REPORTING, "scancel", str(job_id)]
        finally:
            ssh.run(["scancel", str(job_id)], check=False)


def test_a_hung_scancel_under_a_tcsh_login_is_stopped_at_its_bound_and_said(
        dev_cluster) -> None:
    """The same bound under a tcsh login shell (the dev cluster's slurmtcsh): the login node
    stops the scancel at 3 s (`timeout -k 1 3`), within the client's 4 s, and the cancel is an
    OutcomeUnknown saying so (it may have reached slurmctld), not a timeout of trainbot's own
    nor a failure; the scancel is gone and never lands."""
    if dev_cluster.tcsh_user is None:
        pytest.fail("connection.json names no tcsh_user: run deploy/dev-cluster/up.sh",
                    pytrace=False)
    user = dev_cluster.tcsh_user
    with SSHRunner(dev_cluster.ssh_settings(user)) as ssh, \
            _hanging_scancel(ssh, user.home, 6) as (where, path):
        client = SlurmClient(_PathFirst(ssh, path), use_json=False, timeout=4)
        began = time.monotonic()
        with pytest.raises(OutcomeUnknown) as stopped:
            client.cancel(987654)
        assert time.monotonic() - began < 4
        assert str(stopped.value) == (
            f"`{brief_command(['timeout', '-k', '1', '3', *REPORTING, 'scancel', '987654'])}` did "
            "not end within its 4 s on the login node, which stopped it (exit 124); it may or "
            "may not have taken effect")
        pid = _wait_for_pid(ssh, where)
        assert not _alive(ssh, pid)
        time.sleep(max(0.0, began + 6 + 2 - time.monotonic()))
        assert _read(ssh, f"{where}/late") is None


@pytest.mark.parametrize("code", [124, 137])
def test_a_scancel_that_fails_by_itself_with_a_status_of_timeouts_is_its_failure(
        dev_cluster, code: int) -> None:
    """scancel's own exit status is Slurm's error number mod 256: ESLURM_JOB_SIGNAL_FAILED
    (2172) exits 124, ESLURM_INVALID_SLUID (2185) 137, what `timeout` exits when it stops the
    scancel. A scancel first on PATH that fails at once so, under the real `timeout` and
    shell of the login node: the cancel is scancel's failure (CommandFailed, its status and
    error), at once, not an OutcomeUnknown. Before, it read as a scancel the login node
    stopped, "may or may not have taken effect"."""
    error = "scancel: error: Kill job error on job id 987654: Job signal failed"
    with SSHRunner(dev_cluster.ssh_settings()) as ssh, _scancel_first(
            ssh, dev_cluster.home,
            lambda _where: f"#!/bin/sh\necho {shlex.quote(error)} >&2\nexit {code}\n"
    ) as (_where, path):
        client = SlurmClient(_PathFirst(ssh, path), use_json=False, timeout=BOUND_S)
        began = time.monotonic()
        with pytest.raises(CommandFailed) as failed:
            client.cancel(987654)
        assert time.monotonic() - began < BOUND_S / 2
    assert not isinstance(failed.value, OutcomeUnknown)
    assert failed.value.exit_code == code
    assert failed.value.stderr.strip() == error


def test_a_scancel_that_outlives_its_sigterm_is_killed_at_its_bound(dev_cluster) -> None:
    """A scancel that ignores SIGTERM (and its children with it): the shell that reports
    scancel's status holds its own SIGTERM until scancel has ended, so `timeout`'s child is
    still running when the SIGKILL is due, and `timeout` sends it: the scancel is gone by its
    bound (3 s, then SIGKILL 1 s later), the cancel's end not seen. Were the shell to die at
    the SIGTERM, `timeout` would exit then and send no SIGKILL: the scancel would run on."""
    with SSHRunner(dev_cluster.ssh_settings()) as ssh, _scancel_first(
            ssh, dev_cluster.home, lambda where: (
                f"#!/bin/sh\necho $$ > {shlex.quote(where)}/pid\ntrap '' TERM\nsleep 8\n"
                f"echo landed > {shlex.quote(where)}/late\n")) as (where, path):
        client = SlurmClient(_PathFirst(ssh, path), use_json=False, timeout=4)
        began = time.monotonic()
        with pytest.raises(OutcomeUnknown):
            client.cancel(987654)
        pid = _wait_for_pid(ssh, where)
        assert time.monotonic() - began < 6
        assert not _alive(ssh, pid)
        time.sleep(max(0.0, began + 8 + 2 - time.monotonic()))
        assert _read(ssh, f"{where}/late") is None
