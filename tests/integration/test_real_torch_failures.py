"""The watcher's view: REAL PyTorch programs failing in real ways as real Slurm jobs, diagnosed
from the real log and the real sacct record (and the clock, for a hang).

Each scenario of tests/fixtures/jobs/torch_fail.py is a tiny torch 2.13 training loop on CPU,
run by torch_job.sbatch with the dev cluster's job venv (/opt/trainbot-jobenv, made by
deploy/dev-cluster/job-env.sh). The failure messages are torch's, gloo's, the shell's and
Slurm's own: the program prints only its progress lines. Unlike test_real_failures.py (whose
fake trainer prints the failure messages itself), nothing here decides what the log says.

Every job is submitted at once (one CPU each; the node has 4), the long ones first: the time
limit (Slurm ends it after its minute) and the hang, which is judged while RUNNING at the clock
the watcher uses (the log's last time plus the seconds since the file last grew) and then
cancelled. The module takes about 80 s on an idle cluster, most of it the time-limited job
(Slurm ends it ~70 s after it started).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from cluster_jobs import DemoJob, FinishedJob, TorchJobs

from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import ACCOUNTING, DETECTOR, SIGNATURE, Diagnosis
from bot.core.slurm.records import JobRecord

pytestmark = pytest.mark.integration

JOBENV = "/opt/trainbot-jobenv"
# Test-speed recipe thresholds (as test_real_failures.py's): ~0.1 s per iteration here.
FAST: dict[str, Any] = {"stall_min_s": 2.0, "stall_factor": 10.0, "save_time_s": 2.0,
                        "min_elapsed_s": 1.0}
HANG_IDLE_S = 8.0  # how long the hang's log has been silent when the watcher judges it
FAIL_AT = 10  # torch_fail.py's iteration where a failing scenario's mechanism starts

# label -> (torch_fail.py args, --mem, --time in minutes); submitted in this order.
SCENARIOS: dict[str, tuple[list[str], str, str]] = {
    "time-limit": (["time-limit", "--iters", "100000", "--sec-per-iter", "0.5"], "1G", "1"),
    "hang": (["hang"], "2G", "5"),
    "collective-timeout": (["collective-timeout"], "2G", "5"),
    "compiler-missing": (["compiler-missing"], "2G", "5"),
    "worker-killed": (["worker-killed"], "1500M", "5"),
    "loader-timeout": (["loader-timeout"], "1500M", "5"),
    "host-oom": (["host-oom", "--iters", "1000"], "400M", "5"),
    "nan": (["nan"], "1G", "5"),
    "segfault": (["segfault"], "1G", "5"),
    "completed": (["completed", "--iters", "30"], "1G", "5"),
}


@dataclass(frozen=True)
class RunningView:
    """What the watcher had of a running job when it judged it."""

    record: JobRecord
    log: str
    idle_s: float
    diagnosis: Diagnosis


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


@pytest.fixture(scope="module")
def torch_jobs(dev_cluster):
    with TorchJobs.open(dev_cluster) as jobs:
        python = f"{JOBENV}/bin/python"
        if not jobs.runner.run(["test", "-x", python], check=False, timeout=30).ok:
            pytest.fail(f"no {python} for the cluster's jobs: run deploy/dev-cluster/job-env.sh "
                        "(deploy/run-tests.sh does)")
        yield jobs


@pytest.fixture(scope="module")
def submitted(torch_jobs) -> dict[str, DemoJob]:
    return {
        label: torch_jobs.submit(label, args, launcher="torch_job.sbatch", mem=mem,
                                 time_limit=minutes)
        for label, (args, mem, minutes) in SCENARIOS.items()
    }


@pytest.fixture(scope="module")
def hang(torch_jobs, submitted, catalogue) -> RunningView:
    """The hang judged as the watcher judges a running job, then cancelled."""
    job = submitted["hang"]
    try:
        return watch_until_silent(torch_jobs, job, catalogue, timeout=120)
    finally:
        torch_jobs.slurm.cancel(job.job_id)


@pytest.fixture(scope="module")
def runs(torch_jobs, submitted, hang) -> dict[str, FinishedJob]:
    """Every other scenario, waited for together (after the hang freed its CPU)."""
    jobs = {label: job for label, job in submitted.items() if label != "hang"}
    done = torch_jobs.wait(jobs.values(), timeout=240)
    return {label: done[job.job_id] for label, job in jobs.items()}


def watch_until_silent(jobs: TorchJobs, job: DemoJob, catalogue: Catalogue, *,
                       timeout: float) -> RunningView:
    """Poll the RUNNING job's log until it has made progress and then been silent for
    HANG_IDLE_S; diagnose it at the watcher's clock: the log's last time plus the wall seconds
    since the file last grew (LogAnalysis.log_now, the follower's skew)."""
    deadline = time.monotonic() + timeout
    while True:
        record = jobs.slurm.jobs([job.job_id]).get(job.job_id)
        log = jobs.read_text(job.log_path)
        mtime = jobs.mtime(job.log_path)
        if record is not None and record.state == "RUNNING" and mtime is not None \
                and f"iter {FAIL_AT - 1}/" in log:
            idle = time.time() - mtime
            if idle >= HANG_IDLE_S:
                analysis = LogAnalysis(catalogue)
                analysis.feed(log.encode())  # not finished: the job still runs
                diagnosis = analysis.diagnose(record.accounting(), now=analysis.log_now(idle),
                                              **FAST)
                return RunningView(record, log, idle, diagnosis)
        if time.monotonic() > deadline:
            state = record.state if record else "unknown"
            raise TimeoutError(f"hang job {job.job_id} ({state}) never went silent:\n{log}")
        time.sleep(1.0)


def diagnose(run: FinishedJob, catalogue: Catalogue) -> Diagnosis:
    """bot.core.diagnose over the real log and the real sacct record."""
    analysis = LogAnalysis(catalogue)
    analysis.feed(run.log.encode())
    analysis.finish()
    return analysis.diagnose(run.accounting(), **FAST)


def evidence_text(d: Diagnosis) -> str:
    return "\n".join(e.text for e in d.evidence)


def last_iteration(log: str) -> int:
    its = [int(line.split(" iter ", 1)[1].split("/", 1)[0])
           for line in log.splitlines() if " train: iter " in line]
    return its[-1] if its else 0


# --- failures torch names ------------------------------------------------------------------

# label -> (class, torch's (or gloo's, Inductor's) own line that must decide it)
TORCH_SAYS = {
    "worker-killed": ("dataloader_worker_killed", "is killed by signal: Killed."),
    "loader-timeout": ("dataloader_timeout", "DataLoader timed out after 2 seconds"),
    "collective-timeout": ("nccl_timeout", "Timed out waiting 5000ms for recv operation"),
    "nan": ("nan_loss", "returned nan values in its 0th output"),
    "compiler-missing": ("compiler_missing", "InvalidCxxCompiler: No working C++ compiler"),
}


@pytest.mark.parametrize("label", list(TORCH_SAYS))
def test_torch_error_decides_the_class(runs, catalogue, label):
    run = runs[label]
    class_id, line = TORCH_SAYS[label]
    assert (run.record.state, run.record.exit_code) == ("FAILED", 1), run.describe()
    d = diagnose(run, catalogue)
    assert (d.class_id, d.decided_by) == (class_id, SIGNATURE), f"{d}\n{run.describe()}"
    assert line in evidence_text(d), f"{d.evidence}\n{run.describe()}"


def test_nan_run_printed_progress_until_it_diverged(runs, catalogue):
    run = runs["nan"]
    d = diagnose(run, catalogue)
    assert d.class_id == "nan_loss" and not d.retryable
    assert d.metrics.last_iter is not None and d.metrics.last_iter < FAIL_AT, d.metrics


def test_collective_timeout_is_retryable_from_its_checkpoint(runs, catalogue):
    """The rank that waited raised gloo's timeout; torchrun's ChildFailedError around it is
    only the wrapper."""
    run = runs["collective-timeout"]
    assert "ChildFailedError" in run.log
    d = diagnose(run, catalogue)
    assert d.class_id == "nccl_timeout" and d.retryable, d
    assert d.metrics.last_iter == FAIL_AT - 1, d.metrics


# --- failures Slurm names ------------------------------------------------------------------


def test_host_oom_killed_by_slurm(runs, catalogue):
    run = runs["host-oom"]
    r = run.record
    # OverMemoryKill on the dev cluster (no cgroup): FAILED 0:9, MaxRSS above --mem.
    assert (r.state, r.signal) == ("FAILED", 9), run.describe()
    assert r.max_rss_bytes and r.mem_limit_bytes and r.max_rss_bytes > r.mem_limit_bytes
    # the leak's first step is FAIL_AT's (before its log line): Slurm's memory poll may kill
    # the job right after it, or some steps later
    assert FAIL_AT <= last_iteration(run.log) < 1000, run.describe()
    d = diagnose(run, catalogue)
    assert (d.class_id, d.decided_by) == ("host_oom", SIGNATURE), f"{d}\n{run.describe()}"
    assert "exceeded memory limit" in evidence_text(d), d.evidence


def test_time_limit_ends_the_run(runs, catalogue):
    run = runs["time-limit"]
    assert run.record.state == "TIMEOUT", run.describe()
    assert last_iteration(run.log) > 60, run.describe()  # 0.5 s an iteration for its minute
    d = diagnose(run, catalogue)
    # slurmstepd's own `*** JOB N ON vm CANCELLED AT ... DUE TO TIME LIMIT ***` decides it.
    assert (d.class_id, d.decided_by) == ("time_limit", SIGNATURE), f"{d}\n{run.describe()}"
    assert "DUE TO TIME LIMIT" in evidence_text(d), d.evidence
    assert d.retryable, d


def test_segfault_in_native_code_is_an_unknown_failure(runs, catalogue):
    """A SIGSEGV in native code with no Python traceback names no cause trainbot knows (not
    the DataLoader, not a GPU): the user needs the last lines and a look, not a guess and not
    an automatic resubmit. The shell's report of the signal is the only trace of it."""
    run = runs["segfault"]
    # The batch shell exits 139 (128 + SIGSEGV) after reporting it; sacct shows it as
    # `FAILED 11:0` on the dev cluster's Slurm 22.05.
    assert run.record.state == "FAILED" and run.record.exit_code in (11, 139), run.describe()
    assert "Segmentation fault" in run.log
    assert "Traceback" not in run.log
    d = diagnose(run, catalogue)
    # The incident says "Decided only by Slurm accounting (the log does not say why): look
    # closer", with the log's last lines, the shell's report among them, as its evidence.
    assert (d.class_id, d.decided_by) == ("unknown_failure", ACCOUNTING), f"{d}\n{run.describe()}"
    assert "Segmentation fault" in evidence_text(d), d.evidence
    assert not d.retryable, d
    assert d.metrics.last_iter == FAIL_AT - 1, d.metrics


def test_completed_run(runs, catalogue):
    run = runs["completed"]
    assert (run.record.state, run.record.exit_code, run.record.signal) == ("COMPLETED", 0, 0)
    d = diagnose(run, catalogue)
    # the log's end marker that agrees with sacct's COMPLETED 0:0 decides: `trainbot report`
    # says "Decided by a decisive log line", never "look closer"
    assert (d.class_id, d.decided_by) == ("completed", SIGNATURE), f"{d}\n{run.describe()}"
    assert "Training complete" in evidence_text(d), d.evidence
    assert d.metrics.last_iter == d.metrics.target_iter == 30, d.metrics


# --- the running hang ----------------------------------------------------------------------


def test_hang_is_seen_while_the_job_runs(hang):
    """Rank 1 stopped for good at FAIL_AT; rank 0 waits in its all_reduce (30 min timeout):
    the job is RUNNING, nothing in its log is an error, only the clock says it is stuck."""
    assert hang.record.state == "RUNNING"
    assert "Error" not in hang.log and "Traceback" not in hang.log
    d = hang.diagnosis
    assert (d.class_id, d.decided_by) == ("hang", DETECTOR), d
    assert d.metrics.last_iter == FAIL_AT - 1, d.metrics
    assert d.metrics.stall_seconds is not None
    assert d.metrics.stall_seconds >= HANG_IDLE_S - 1, d.metrics


def test_every_real_failure_is_diagnosed_right(runs, hang, catalogue):
    """The watcher's-view figure (bench/README.md): each real job's class from log + sacct."""
    expected = {
        **{label: class_id for label, (class_id, _) in TORCH_SAYS.items()},
        "host-oom": "host_oom", "time-limit": "time_limit", "segfault": "unknown_failure",
        "completed": "completed",
    }
    got = {label: diagnose(run, catalogue).class_id for label, run in runs.items()}
    got["hang"], expected["hang"] = hang.diagnosis.class_id, "hang"
    assert got == expected
