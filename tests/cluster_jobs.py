"""Run the demo training jobs (deploy/demo/) on the dev cluster and collect what they left.

For integration tests (and anything else that needs REAL Slurm output): copy the demo files
into a fresh directory of the test user's home over SFTP, submit scenarios through trainbot's
own `SlurmClient`, wait for all of them with one squeue + one sacct per poll (bounded), and
fetch each job's log, its accounting record and its checkpoint directory.

    with DemoJobs.open(dev_cluster) as jobs:
        job = jobs.submit("healthy", ["--scenario", "healthy", "--target-iter", "60"])
        done = jobs.wait([job])[job.job_id]
        done.record.state, done.log, done.cli_flags()
"""

from __future__ import annotations

import posixpath
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import CommandResult, SSHRunner
from bot.core.models import Accounting
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.takeover import RemoteDeadlines

if TYPE_CHECKING:
    from conftest import DevCluster

REPO = Path(__file__).resolve().parents[1]
DEMO_SRC = REPO / "deploy" / "demo"
DEMO_FILES = ("fake_train.py", "launch.sbatch", "launch_silent_exit.sbatch")
# Real PyTorch programs failing by real mechanisms (run with the job venv of job-env.sh).
TORCH_SRC = REPO / "tests" / "fixtures" / "jobs"
TORCH_FILES = ("torch_fail.py", "torch_job.sbatch")


@dataclass(frozen=True)
class DemoJob:
    """One submitted scenario: where its log and checkpoints live on the cluster."""

    job_id: int
    label: str
    name: str
    log_path: str
    ckpt_dir: str
    mem: str
    submitted_at: float


@dataclass
class FinishedJob:
    """A job that ended: its merged Slurm record, its log text and how long we waited."""

    job: DemoJob
    record: JobRecord
    log: str
    waited_s: float
    log_lines: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.log_lines = self.log.splitlines()

    def accounting(self) -> Accounting:
        """The facts `bot.core.diagnose` takes, straight from the sacct record."""
        return self.record.accounting()

    def cli_flags(self) -> list[str]:
        """`trainbot diagnose` flags as a user would copy them from sacct."""
        r = self.record
        flags = ["--state", str(r.state)]
        if r.exit_code is not None:
            flags += ["--exit-code", f"{r.exit_code}:{r.signal or 0}"]
        if r.elapsed_s is not None:
            flags += ["--elapsed", f"{r.elapsed_s:g}"]
        if r.mem_limit_bytes:
            flags += ["--mem-limit", f"{r.mem_limit_bytes // 1024**2}M"]
        return flags

    def describe(self) -> str:
        """Everything needed to understand a failed assertion about this job."""
        r = self.record
        tail = "\n".join(self.log_lines[-25:])
        return (
            f"job {r.job_id} {self.job.label} ({self.job.name}): state={r.state} "
            f"exit={r.exit_code}:{r.signal} elapsed={r.elapsed_s} maxrss={r.max_rss_bytes} "
            f"mem_limit={r.mem_limit_bytes}\n--- log tail ({self.job.log_path}) ---\n{tail}"
        )


class DemoJobs:
    """A per-test-module workspace on the cluster: demo files, logs, checkpoint dirs.

    Every job name is unique (`tb-<label>-<hex>`); `close()` cancels jobs still alive and
    removes the workspace, so the shared cluster is left as it was found.
    """

    #: What `_install` copies into the workspace: these files of this directory.
    source: Path = DEMO_SRC
    files: tuple[str, ...] = DEMO_FILES

    def __init__(self, runner: SSHRunner, home: str, *, partition: str | None = None,
                 keep: bool = False) -> None:
        self.runner = runner
        self.slurm = SlurmClient(runner, timeout=60)
        self.partition = partition
        self.keep = keep
        self.tag = uuid.uuid4().hex[:8]
        self.root = posixpath.join(home, f"trainbot-it-{self.tag}")
        self.submitted: list[DemoJob] = []
        self._install()

    @classmethod
    def open(cls, cluster: DevCluster, **kwargs: Any) -> DemoJobs:
        """Connect with trainbot's SSH runner to the dev cluster and install the demo files."""
        runner = SSHRunner(cluster.ssh_settings())
        try:
            return cls(runner, cluster.home, partition=cluster.partition, **kwargs)
        except BaseException:
            runner.close()
            raise

    def __enter__(self) -> DemoJobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- workspace ----

    def _install(self) -> None:
        sftp = self.runner.sftp()
        for sub in ("", "logs", "ckpt"):
            sftp.mkdir(posixpath.join(self.root, sub) if sub else self.root)
        for name in self.files:
            target = posixpath.join(self.root, name)
            sftp.put(str(self.source / name), target)
            sftp.chmod(target, 0o755)

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def close(self) -> None:
        """Cancel what is still queued or running, remove the workspace, disconnect."""
        try:
            alive = [j.job_id for j in self.submitted]
            if alive:
                records = self.slurm.jobs(alive)
                for job_id, rec in records.items():
                    if not rec.is_finished:
                        self.slurm.cancel(job_id)
            if not self.keep:
                self.runner.run(["rm", "-rf", "--", self.root], check=False, timeout=60)
        finally:
            self.runner.close()

    # ---- jobs ----

    def submit(
        self,
        label: str,
        args: Sequence[str],
        *,
        launcher: str = "launch.sbatch",
        mem: str = "128M",
        time_limit: str = "5",
        ckpt_dir: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> DemoJob:
        """Submit `launcher` with the trainer `args`; one CPU, `mem`, its own checkpoint dir.

        `ckpt_dir` defaults to `<workspace>/ckpt/<label>`; pass another job's to resume it.
        """
        name = f"tb-{label}-{uuid.uuid4().hex[:6]}"
        ckpt = ckpt_dir or self.path("ckpt", label)
        log_path = self.path("logs", f"{name}.out")
        job_env = {"TRAINBOT_DEMO_DIR": self.root, "TRAINBOT_CKPT_DIR": ckpt, **(env or {})}
        job_id = self.slurm.submit(
            SubmitSpec(
                script_path=self.path(launcher),
                args=tuple(args),
                job_name=name,
                partition=self.partition,
                mem=mem,
                time=time_limit,
                output=log_path,
                workdir=self.root,
                env=job_env,
                extra=("--cpus-per-task=1",),
            )
        )
        job = DemoJob(job_id, label, name, log_path, ckpt, mem, time.monotonic())
        self.submitted.append(job)
        return job

    def wait(
        self, jobs: Iterable[DemoJob], *, timeout: float = 150.0, poll_s: float = 1.0
    ) -> dict[int, FinishedJob]:
        """Poll until every job has ended and sacct agrees twice in a row; fetch the logs.

        One squeue + one sacct per poll for all jobs. Raises TimeoutError naming the jobs that
        had not finished, with their last known state, after `timeout` seconds.
        """
        pending = {j.job_id: j for j in jobs}
        deadline = time.monotonic() + timeout
        last: dict[int, JobRecord] = {}
        stable: dict[int, tuple] = {}
        done: dict[int, FinishedJob] = {}
        while pending:
            records = self.slurm.jobs(pending)
            for job_id, job in list(pending.items()):
                rec = records.get(job_id)
                if rec is None:
                    continue
                last[job_id] = rec
                if not (rec.is_finished and "sacct" in rec.source and rec.elapsed_s is not None):
                    continue
                # slurmdbd may lag the controller by a moment: accept an outcome seen twice.
                key = (rec.state, rec.exit_code, rec.signal, rec.elapsed_s, rec.max_rss_bytes)
                if stable.get(job_id) == key:
                    done[job_id] = FinishedJob(
                        job, rec, self.read_text(job.log_path),
                        time.monotonic() - job.submitted_at,
                    )
                    del pending[job_id]
                else:
                    stable[job_id] = key
            if not pending:
                break
            if time.monotonic() > deadline:
                states = ", ".join(
                    f"{j.label} {jid}: {last[jid].state if jid in last else 'unknown'}"
                    + (f" ({last[jid].reason})" if jid in last and last[jid].reason else "")
                    for jid, j in pending.items()
                )
                raise TimeoutError(
                    f"demo jobs not finished after {timeout:.0f} s: {states} (the shared "
                    "node has 4 CPUs; check squeue for other engineers' jobs)"
                )
            time.sleep(poll_s)
        return done

    def read_text(self, path: str) -> str:
        """A file on the cluster as text ('' if it does not exist)."""
        try:
            with self.runner.sftp().open(path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(self.runner.sftp().listdir(path))
        except FileNotFoundError:
            return []

    def mtime(self, path: str) -> float | None:
        """When the file on the cluster was last written (None if it does not exist); the
        watcher ages a silent log by it."""
        try:
            return self.runner.sftp().stat(path).st_mtime
        except FileNotFoundError:
            return None


class TorchJobs(DemoJobs):
    """DemoJobs for the real PyTorch programs of tests/fixtures/jobs (torch_job.sbatch runs
    torch_fail.py with the cluster's job venv, /opt/trainbot-jobenv)."""

    source = TORCH_SRC
    files = TORCH_FILES


__all__ = ["DEMO_FILES", "DEMO_SRC", "TORCH_FILES", "TORCH_SRC", "DemoJob", "DemoJobs",
           "FinishedJob", "TorchJobs"]


# A job that trains a few iterations, then dies of the NCCL watchdog's timeout with the exit
# code of its abort: its incident proposes a resubmit.
NCCL_JOB = r"""#!/bin/bash
for i in $(seq 1 8); do
  echo "$(date -u '+%Y-%m-%d %H:%M:%S').000 | INFO | iter: $i/100 | loss: 0.9$i | 0.50 s/iter"
  sleep 0.5
done
echo "[rank1]:[E$(date -u +%m%d) $(date -u +%H:%M:%S).000 ProcessGroupNCCL.cpp:616] [Rank 1] \
Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, \
NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out."
exit 134
"""


SLURM_PROGRAMS = frozenset({"squeue", "sacct", "sstat", "sbatch", "scontrol", "scancel", "sinfo"})


class CommandLineWatch:
    """Every process's command line (what `ps` shows: /proc/PID/cmdline), read every 20 ms
    while the `with` block runs; the dev cluster's login node is this machine."""

    def __init__(self) -> None:
        self.seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._scan, daemon=True)

    def __enter__(self) -> CommandLineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _scan(self) -> None:
        while not self._stop.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    self.seen.add(cmdline.read_bytes())
                except OSError:
                    continue
            self._stop.wait(0.02)

    def containing(self, text: str) -> list[bytes]:
        """The command lines seen that hold `text`."""
        return [c for c in self.seen if text.encode() in c]


class CountingRunner:
    """The real SSH runner, recording every argv it ran (to count Slurm calls per poll)."""

    def __init__(self, inner: SSHRunner):
        self.inner = inner
        self.calls: list[list[str]] = []

    def run(self, argv: Sequence[str], **kwargs) -> CommandResult:
        self.calls.append(list(argv))
        return self.inner.run(argv, **kwargs)

    def sftp(self):
        return self.inner.sftp()

    def deadlines(self) -> RemoteDeadlines:
        return self.inner.deadlines()

    def close(self) -> None:
        """Nothing: whoever opened the inner runner closes it."""

    def programs(self) -> list[str]:
        """The Slurm program of each call, in order (`env … sbatch` counts as sbatch)."""
        return [next((a for a in argv if a in SLURM_PROGRAMS), argv[0]) for argv in self.calls]

    def counts(self) -> Counter[str]:
        return Counter(self.programs())
