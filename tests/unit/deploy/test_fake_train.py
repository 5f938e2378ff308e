"""deploy/demo: the fake trainer and the launchers, run locally (no Slurm) in a temp dir.

What the dev-cluster tests (tests/integration/test_real_failures.py) do not cover: the seed
makes runs repeatable, `key=value` arguments work as trainbot's overrides send them, a
partial checkpoint is refused on resume, save-oom never allocates without a known limit, and
the two launchers' `set -euo pipefail` behaviour with no checkpoint yet.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from support.procs import exited

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "demo"
FAST = ["--sec-per-iter", "0.001", "--save-seconds", "0"]


def train(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SLURM_", "TRAINBOT_"))}
    return subprocess.run(
        [sys.executable, str(DEMO / "fake_train.py"), "--ckpt-dir", str(tmp_path / "ck"),
         *FAST, *args],
        capture_output=True, text=True, timeout=60, env={**clean, **(env or {})},
    )


def losses(text: str) -> list[str]:
    return re.findall(r" iter=\d+/\d+ loss=(\S+)", text)


def test_same_seed_same_log_and_key_value_arguments(tmp_path):
    a = train(tmp_path / "a", "--seed", "3", "target_iter=12", "save_every=5")
    b = train(tmp_path / "b", "seed=3", "--target-iter", "12", "--save-every", "5")
    c = train(tmp_path / "c", "seed=4", "target_iter=12", "save_every=5")
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert len(losses(a.stdout)) == 12
    assert losses(a.stdout) == losses(b.stdout) != losses(c.stdout)
    assert "Training complete: reached iteration 12/12" in a.stdout
    ck = tmp_path / "a" / "ck"
    assert sorted(p.name for p in ck.iterdir()) == [
        "iter_000000005", "iter_000000010", "iter_000000012", "latest_checkpoint.txt"]
    assert (ck / "latest_checkpoint.txt").read_text().strip() == str(ck / "iter_000000012")


def test_resume_refuses_a_checkpoint_without_metadata(tmp_path):
    partial = tmp_path / "ck" / "iter_000000010"
    partial.mkdir(parents=True)
    (partial / "__0_0.distcp").write_bytes(b"x" * 100)
    proc = train(tmp_path, "target_iter=20", env={"TRAINBOT_RESUME_FROM": str(partial)})
    assert proc.returncode == 1
    assert "FileNotFoundError" in proc.stderr and ".metadata" in proc.stderr
    assert losses(proc.stdout) == []


def test_resume_continues_after_the_checkpoint_iteration(tmp_path):
    first = train(tmp_path, "target_iter=10", "save_every=4")
    assert first.returncode == 0, first.stderr
    again = train(tmp_path, "target_iter=14", "save_every=0")  # follows the pointer (10)
    assert again.returncode == 0, again.stderr
    assert re.findall(r" iter=(\d+)/", again.stdout) == ["11", "12", "13", "14"]
    assert losses(again.stdout) == losses(train(tmp_path / "x", "target_iter=14").stdout)[10:]


def test_save_oom_needs_a_known_memory_limit(tmp_path):
    proc = train(tmp_path, "--scenario", "save-oom", "target_iter=6", "save_every=3")
    assert proc.returncode == 1
    assert "needs the job's memory limit" in proc.stderr
    assert not (tmp_path / "ck" / "iter_000000003" / ".metadata").exists()


def test_unknown_scenario_is_a_usage_error(tmp_path):
    proc = train(tmp_path, "--scenario", "healthy,oops")
    assert proc.returncode == 2
    assert "unknown scenario oops" in proc.stderr and "stall-then-nccl" in proc.stderr


def test_launchers_with_no_checkpoint_yet(tmp_path):
    demo = tmp_path / "demo"
    demo.mkdir()
    shutil.copy(DEMO / "fake_train.py", demo)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TRAINBOT_"))}
    env.update(TRAINBOT_DEMO_DIR=str(demo), TRAINBOT_CKPT_DIR=str(tmp_path / "ck"))
    args = ["target_iter=3", "sec_per_iter=0.001", "save_every=0"]

    broken = subprocess.run(["bash", str(DEMO / "launch_silent_exit.sbatch"), *args],
                            capture_output=True, text=True, timeout=60, env=env)
    assert broken.returncode == 0  # what Slurm records as COMPLETED 0:0
    assert "checkpoint_step_" in broken.stderr and "[trainer]" not in broken.stdout

    fixed = subprocess.run(["bash", str(DEMO / "launch.sbatch"), *args],
                           capture_output=True, text=True, timeout=60, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert "no checkpoint yet: starting from scratch" in fixed.stdout
    assert "Training complete: reached iteration 3/3" in fixed.stdout


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(kv.decode().split("=", 1) for kv in raw if b"=" in kv)


def test_rank_procs_stall_with_one_rank_in_its_data_loader(tmp_path):
    """--rank-procs 3: rank 0 (RANK in its own environment) and two peer ranks; in the stall
    the --nccl-rank peer waits in DataLoader._get_data, the others in all_gather; the peers end
    with rank 0."""
    from bot.cluster.pyspy import local_pyspy

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TRAINBOT_",
                                                                      "RANK"))}
    proc = subprocess.Popen(
        [sys.executable, str(DEMO / "fake_train.py"), "--ckpt-dir", str(tmp_path / "ck"),
         "--scenario", "stall-then-nccl", "--stall-at", "3", "--stall-seconds", "20",
         "--sec-per-iter", "0.05", "--rank-procs", "3", "--nccl-rank", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean)
    try:
        stall_file = tmp_path / "ck" / f".fake_train_stall.{proc.pid}"
        for _ in range(200):  # until the stall has begun
            if stall_file.exists():
                break
            time.sleep(0.05)
        assert stall_file.exists()
        peers = [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
                 .read_text().split()]
        assert _environ(proc.pid)["RANK"] == "0"
        assert sorted(_environ(p)["RANK"] for p in peers) == ["1", "2"]
        pyspy = str(local_pyspy().path)
        for _ in range(20):
            stacks = {_environ(p)["RANK"]: subprocess.run(
                [pyspy, "dump", "--pid", str(p)], capture_output=True, text=True).stdout
                for p in [proc.pid, *peers]}
            if "DataLoader._get_data" in stacks["2"] and "all_gather" in stacks["1"]:
                break
            time.sleep(0.2)
        assert "DataLoader._get_data" in stacks["2"] and "DataLoader.__next__" in stacks["2"]
        assert "all_gather" in stacks["0"] and "all_gather" in stacks["1"]
    finally:
        proc.kill()
        proc.wait()
    for _ in range(50):  # the peers notice rank 0 is gone
        if all(exited(p) for p in peers):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"peer ranks {peers} outlived rank 0")


def test_stall_until_a_file_lasts_until_the_file_exists(tmp_path):
    """--stall-until: the stall outlasts --stall-seconds while the file is absent (a slow bot
    still finds the job stalled) and the watchdog abort follows once the file exists."""
    release = tmp_path / "release"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "TRAINBOT_"))}
    proc = subprocess.Popen(
        [sys.executable, str(DEMO / "fake_train.py"), "--ckpt-dir", str(tmp_path / "ck"),
         *FAST, "--scenario", "stall-then-nccl", "--stall-at", "3", "--stall-seconds", "0.2",
         "--target-iter", "10", "--stall-until", str(release)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean)
    try:
        marker = tmp_path / "ck" / ".fake_train_stalled"
        for _ in range(400):  # until the stall has begun
            if marker.exists():
                break
            time.sleep(0.05)
        assert marker.exists()
        time.sleep(1.0)  # five times --stall-seconds
        assert proc.poll() is None, "the stall ended without its file"
        release.touch()
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -6  # SIGABRT: the watchdog abort
    assert "Watchdog caught collective operation timeout" in out + err
    assert "Timeout(ms)=200)" in out + err  # the watchdog's timeout is still --stall-seconds
    assert "iter=4/" not in out
