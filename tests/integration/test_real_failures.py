"""The stories of docs/incidents.md, reproduced on the real dev cluster and diagnosed from REAL
output.

Each scenario of deploy/demo/fake_train.py runs as a real Slurm job (sbatch through trainbot's
SSH runner and SlurmClient); the test then reads the log Slurm wrote and the sacct record,
and asserts what trainbot concludes, both through `bot.core.diagnose` (with the short
thresholds a test-speed recipe would set) and through the `trainbot diagnose` CLI with the
flags a user copies from sacct. Nothing here is a fixture written by hand: memory kills come
from Slurm's OverMemoryKill, SIGABRT from os.abort(), COMPLETED 0:0 from the broken launcher.

All first-wave jobs are submitted at once (one CPU each; the node has 4), then the resumes;
the module takes about 80 s on an idle cluster, most of it the one slow healthy run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cluster_jobs import DemoJobs, FinishedJob

from bot.cluster.checkpoints import find_latest_checkpoint, probe_checkpoints
from bot.core.catalogue import Catalogue
from bot.core.diagnose import LogAnalysis
from bot.core.models import Diagnosis

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

# Test-speed recipe thresholds: 0.05 s per iteration instead of 4.5 s.
FAST: dict[str, Any] = {"stall_min_s": 2.0, "stall_factor": 10.0, "save_time_s": 2.0,
                        "min_elapsed_s": 1.0}
STALL_S = 6.0
TARGET = 60
LEAK_MIB = 40
SAVE_EVERY = 20
COMMON = ["--target-iter", str(TARGET), "--save-every", str(SAVE_EVERY), "--seed", "7"]

# label -> (launcher, trainer args, --mem)
SCENARIOS: dict[str, tuple[str, list[str], str]] = {
    # Slow enough (> 60 s) that the CLI's production rule "COMPLETED in under a minute is a
    # silent exit" does not apply: this is the one run judged with default thresholds.
    "healthy": ("launch.sbatch", ["--scenario", "healthy", "--sec-per-iter", "1.05", *COMMON],
                "128M"),
    "save-oom": (
        "launch.sbatch",
        ["--scenario", "save-oom", "--oom-on-save", "2", *COMMON],
        "150M",
    ),
    "stall-then-nccl": (
        "launch.sbatch",
        ["--scenario", "stall-then-nccl", "--stall-at", "30", "--stall-seconds", str(STALL_S),
         *COMMON],
        "128M",
    ),
    "silent-exit": ("launch_silent_exit.sbatch", COMMON, "128M"),
    "compiler-missing": ("launch.sbatch", ["--scenario", "compiler-missing", *COMMON], "128M"),
    "nan": ("launch.sbatch", ["--scenario", "nan", "--nan-at", "25", *COMMON], "128M"),
    "cuda-oom": ("launch.sbatch", ["--scenario", "cuda-oom", "--cuda-oom-at", "12", *COMMON],
                 "128M"),
    # Big enough for the leak detector's 2 GiB minimum growth: ~2.6 GB for a few seconds.
    "leak": (
        "launch.sbatch",
        ["--scenario", "leak", "--leak-mib-per-iter", str(LEAK_MIB), "--target-iter", "400",
         "--save-every", "0", "--megatron-every", "0"],
        "2600M",
    ),
}


@pytest.fixture(scope="module")
def demo(dev_cluster):
    with DemoJobs.open(dev_cluster) as jobs:
        yield jobs


@pytest.fixture(scope="module")
def runs(demo) -> dict[str, FinishedJob]:
    """Every first-wave scenario, submitted together and waited for together."""
    submitted = {
        label: demo.submit(label, args, launcher=launcher, mem=mem)
        for label, (launcher, args, mem) in SCENARIOS.items()
    }
    done = demo.wait(submitted.values(), timeout=150)
    return {label: done[job.job_id] for label, job in submitted.items()}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def diagnose_api(run: FinishedJob, catalogue: Catalogue, **options: Any) -> Diagnosis:
    """bot.core.diagnose over the real log and the real sacct record."""
    analysis = LogAnalysis(catalogue)
    analysis.feed(run.log.encode())
    analysis.finish()
    return analysis.diagnose(run.accounting(), **{**FAST, **options})


def diagnose_cli(run: FinishedJob, tmp_path: Path) -> tuple[int, dict]:
    """`trainbot diagnose LOG --json` with the sacct facts as flags, as a user runs it."""
    log = tmp_path / f"{run.job.name}.out"
    log.write_text(run.log)
    proc = subprocess.run(
        [sys.executable, "-m", "bot", "diagnose", str(log), "--json", *run.cli_flags()],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )
    assert proc.returncode in (0, 1), f"{proc.returncode}: {proc.stderr}\n{run.describe()}"
    return proc.returncode, json.loads(proc.stdout)


def iterations(run: FinishedJob) -> list[int]:
    """Iterations of the `iter=N/T` progress lines, in log order."""
    out = []
    for line in run.log_lines:
        if " iter=" in line:
            out.append(int(line.split(" iter=", 1)[1].split("/", 1)[0]))
    return out


# --- the stories ---------------------------------------------------------------------------


def test_healthy_run_completes_with_complete_checkpoints(runs, demo, catalogue, tmp_path):
    run = runs["healthy"]
    assert (run.record.state, run.record.exit_code, run.record.signal) == ("COMPLETED", 0, 0), (
        run.describe()
    )
    assert iterations(run) == list(range(1, TARGET + 1))
    assert any("Training complete" in line for line in run.log_lines)
    assert any(line.lstrip().startswith("[") and "| lm loss:" in line for line in run.log_lines)

    d = diagnose_api(run, catalogue)
    assert d.class_id == "completed", run.describe()
    assert d.metrics.last_iter == TARGET and d.metrics.target_iter == TARGET
    code, data = diagnose_cli(run, tmp_path)
    assert (code, data["class"]) == (0, "completed"), run.describe()

    names = demo.listdir(run.job.ckpt_dir)
    assert names == ["iter_000000020", "iter_000000040", "iter_000000060",
                     "latest_checkpoint.txt"]
    for name in names[:-1]:
        assert demo.listdir(f"{run.job.ckpt_dir}/{name}") == [".metadata", "__0_0.distcp"]
    latest = find_latest_checkpoint(demo.runner.sftp(), run.job.ckpt_dir)
    assert latest is not None and (latest.iteration, latest.source) == (TARGET, "pointer")


def test_oom_kill_during_checkpoint_save(runs, demo, catalogue, tmp_path):
    run = runs["save-oom"]
    r = run.record
    # OverMemoryKill on the dev cluster: FAILED 0:9, MaxRSS above the limit.
    assert (r.state, r.signal) == ("FAILED", 9), run.describe()
    assert r.max_rss_bytes and r.mem_limit_bytes and r.max_rss_bytes > r.mem_limit_bytes
    assert any("exceeded memory limit" in line for line in run.log_lines), run.describe()
    assert not any("Saved checkpoint at iteration 40" in line for line in run.log_lines)

    d = diagnose_api(run, catalogue)
    assert d.class_id == "host_oom", run.describe()
    assert d.during_checkpoint_save, f"{d}\n{run.describe()}"
    assert d.metrics.last_iter == 40
    code, data = diagnose_cli(run, tmp_path)
    assert (code, data["class"], data["during_checkpoint_save"]) == (1, "host_oom", True)

    # The save at 40 left shards but no .metadata and did not move the pointer.
    assert demo.listdir(f"{run.job.ckpt_dir}/iter_000000040") == ["__0_0.distcp"]
    decision = probe_checkpoints(demo.runner.sftp(), run.job.ckpt_dir)
    assert decision.checkpoint is not None, decision.explain()
    assert decision.checkpoint.iteration == 20, decision.explain()
    assert decision.checkpoint.name == "iter_000000020"
    # Without the pointer file the scan must still skip the partial directory.
    scan = find_latest_checkpoint(demo.runner.sftp(), run.job.ckpt_dir, pointer_name=None)
    assert scan is not None and scan.iteration == 20
    assert any("iter_000000040" in str(s) and ".metadata" in str(s) for s in scan.skipped)


def test_stall_then_nccl_watchdog_is_one_causal_chain(runs, catalogue, tmp_path):
    run = runs["stall-then-nccl"]
    assert run.record.state == "FAILED", run.describe()
    assert iterations(run)[-1] == 30
    assert any("Watchdog caught collective operation timeout" in x for x in run.log_lines)
    assert any("Fatal Python error: Aborted" in x for x in run.log_lines)

    d = diagnose_api(run, catalogue)
    assert d.class_id == "nccl_timeout", run.describe()
    assert d.retryable
    assert d.upstream is not None and d.upstream.class_id == "hang", d
    assert d.upstream.last_iter == 30
    assert d.metrics.stall_seconds == pytest.approx(STALL_S, abs=1.5)
    assert "hang" in d.secondary
    code, data = diagnose_cli(run, tmp_path)
    assert (code, data["class"]) == (1, "nccl_timeout"), run.describe()


def test_silent_exit_launcher_reads_completed_but_is_caught(runs, catalogue, tmp_path):
    run = runs["silent-exit"]
    r = run.record
    assert (r.state, r.exit_code, r.signal) == ("COMPLETED", 0, 0), run.describe()
    assert r.elapsed_s is not None and r.elapsed_s < 30
    assert any("cannot access" in line and "checkpoint_step_" in line for line in run.log_lines)
    assert iterations(run) == []  # the trainer never started

    d = diagnose_api(run, catalogue)
    assert d.class_id == "silent_exit", run.describe()
    assert not d.retryable
    code, data = diagnose_cli(run, tmp_path)
    assert (code, data["class"]) == (1, "silent_exit"), run.describe()
    assert any("checkpoint_step_" in e["text"] for e in data["evidence"])


@pytest.mark.parametrize(
    "label, class_id, exit_code",
    [("compiler-missing", "compiler_missing", 1), ("nan", "nan_loss", 1),
     ("cuda-oom", "cuda_oom", 1)],
)
def test_stop_classes(runs, catalogue, tmp_path, label, class_id, exit_code):
    run = runs[label]
    assert (run.record.state, run.record.exit_code) == ("FAILED", exit_code), run.describe()
    d = diagnose_api(run, catalogue)
    assert d.class_id == class_id, run.describe()
    assert not d.retryable
    code, data = diagnose_cli(run, tmp_path)
    assert (code, data["class"]) == (1, class_id), run.describe()


def test_leak_grows_real_rss_until_slurm_kills_it(runs, catalogue, tmp_path):
    run = runs["leak"]
    r = run.record
    assert (r.state, r.signal) == ("FAILED", 9), run.describe()
    assert r.max_rss_bytes and r.mem_limit_bytes and r.max_rss_bytes > r.mem_limit_bytes
    last_iter = iterations(run)[-1]
    assert 40 < last_iter < 400, run.describe()

    d = diagnose_api(run, catalogue)
    assert d.class_id == "host_oom", run.describe()
    assert not d.during_checkpoint_save
    # The slope of the RSS the trainer printed: LEAK_MIB per iteration.
    expected = LEAK_MIB * 100 / 1024
    assert d.metrics.rss_gib_per_100_iter == pytest.approx(expected, rel=0.2), d.metrics
    assert "memory_leak" in d.secondary, d
    assert d.metrics.projected_oom_iter is not None
    assert abs(d.metrics.projected_oom_iter - last_iter) <= 5, d.metrics
    code, data = diagnose_cli(run, tmp_path)
    assert (code, data["class"]) == (1, "host_oom"), run.describe()
    assert "memory_leak" in data["secondary"]


# --- resuming -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def resumes(runs, demo) -> dict[str, FinishedJob]:
    """Second wave, submitted together: each resumes a first-wave run's checkpoint dir."""
    oom = runs["save-oom"]
    chosen = find_latest_checkpoint(demo.runner.sftp(), oom.job.ckpt_dir)
    assert chosen is not None and chosen.iteration == 20, oom.describe()
    jobs = {
        # trainbot's path: find_latest_checkpoint -> $TRAINBOT_RESUME_FROM
        "after-save-oom": demo.submit(
            "resume-env", ["--scenario", "healthy", *COMMON], ckpt_dir=oom.job.ckpt_dir,
            env={"TRAINBOT_RESUME_FROM": chosen.path},
        ),
        # the launcher alone follows latest_checkpoint.txt
        "pointer": demo.submit(
            "resume-pointer",
            ["--scenario", "healthy", "--target-iter", "75", "--save-every", "0", "--seed", "7"],
            ckpt_dir=runs["healthy"].job.ckpt_dir,
        ),
        # the same recipe args again: the hang was transient, the resumed attempt trains on
        "after-nccl": demo.submit(
            "resume-nccl", SCENARIOS["stall-then-nccl"][1],
            ckpt_dir=runs["stall-then-nccl"].job.ckpt_dir,
        ),
    }
    done = demo.wait(jobs.values(), timeout=150)
    return {label: done[job.job_id] for label, job in jobs.items()}


def test_resume_from_last_complete_checkpoint_after_save_oom(runs, resumes, demo, catalogue):
    oom_dir = runs["save-oom"].job.ckpt_dir
    run = resumes["after-save-oom"]
    assert run.record.state == "COMPLETED", run.describe()
    assert iterations(run)[0] == 21 and iterations(run)[-1] == TARGET
    assert any(f"Loaded checkpoint from {oom_dir}/iter_000000020 (iteration 20)" in x
               for x in run.log_lines), run.describe()
    assert diagnose_api(run, catalogue).class_id == "completed", run.describe()
    # The partial save at 40 was redone: now complete, and the pointer names the final one.
    assert demo.listdir(f"{oom_dir}/iter_000000040") == [".metadata", "__0_0.distcp"]
    latest = find_latest_checkpoint(demo.runner.sftp(), oom_dir)
    assert latest is not None and latest.iteration == TARGET


def test_launcher_resumes_from_pointer_by_itself(resumes):
    run = resumes["pointer"]
    assert run.record.state == "COMPLETED", run.describe()
    assert iterations(run) == list(range(61, 76))
    assert any("latest_checkpoint.txt ->" in line for line in run.log_lines)


def test_resubmit_after_nccl_timeout_resumes_and_completes(runs, resumes, catalogue):
    """Story 3's resubmit: from the last checkpoint (20) before the hang (30); 10 iterations
    of work were lost, and the same arguments do not hang again."""
    run = resumes["after-nccl"]
    assert run.record.state == "COMPLETED", run.describe()
    assert iterations(run)[0] == 21 and iterations(run)[-1] == TARGET
    assert not any("Watchdog" in line for line in run.log_lines)
    assert diagnose_api(run, catalogue).class_id == "completed", run.describe()
