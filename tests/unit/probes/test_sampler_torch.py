"""`trainbot sampler` on a real process tree: a Python trainer with a persistent torch
DataLoader (2 workers) whose workers leak memory. Local only (no cluster), ~10 s."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.procs import exited

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sampler" / "leaky_loader.py"
ROOT = Path(__file__).resolve().parents[3]
MIB = 1024 * 1024
# `trainbot …` without relying on the console script being installed.
TRAINBOT = [sys.executable, "-c",
            "import sys; from bot.cli import main; sys.exit(main(sys.argv[1:]))"]


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _wait(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.mark.timeout(90)
def test_sampler_reports_leaking_dataloader_workers_separately(tmp_path):
    trainer = subprocess.Popen(
        [sys.executable, str(FIXTURE), "--workers", "2", "--seconds", "40",
         "--mib-per-sample", "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    sampler = None
    try:
        assert trainer.stdout is not None
        assert trainer.stdout.readline().strip() == "ready"
        out = tmp_path / "rss.jsonl"
        sampler = subprocess.Popen(
            [*TRAINBOT, "sampler", "--out", str(out), "--interval", "0.5",
             "--pid", str(trainer.pid)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stderr=subprocess.PIPE,
            text=True,
        )
        # Line 0 has no CPU yet for new processes. How fast the workers leak depends on the
        # machine's load, so wait (within the trainer's 40 s) for the growth, not a line count.
        def worker_growth() -> int:
            lines = _lines(out)
            return lines[-1]["rss"]["worker"] - lines[1]["rss"]["worker"] if len(lines) >= 8 else 0

        try:
            _wait(lambda: worker_growth() > 20 * MIB, 35, "8 sampler lines and 20 MiB of growth")
        except AssertionError:
            pass  # the assertions below say what was seen
        lines = _lines(out)
        assert len(lines) >= 8, f"only {len(lines)} sampler lines"
        first, last = lines[1], lines[-1]
        # Roles: one trainer (the python parent), two DataLoader workers, nothing else.
        assert last["n"] == {"trainer": 1, "worker": 2, "other": 0}
        workers = [p for p in last["per_process"] if p["role"] == "worker"]
        assert {p["name"] for p in workers} == {"pt_data_worker"}
        assert all(p["ppid"] == trainer.pid for p in workers)
        # Worker RSS is reported on its own and grows (1 MiB per sample, ~10 samples/s idle).
        growth = last["rss"]["worker"] - first["rss"]["worker"]
        assert growth > 20 * MIB, f"worker RSS grew only {growth / MIB:.1f} MiB"
        trainer_growth = last["rss"]["trainer"] - first["rss"]["trainer"]
        assert trainer_growth < growth / 2
        # CPU is measured between samples (process objects reused); one 0.5 s interval can
        # read 0 on a loaded machine (clock-tick granularity), the run as a whole cannot.
        assert any(line["cpu"]["trainer"] > 0 for line in lines[1:])
        # The sampler exits quietly on its own once the job's tree is gone.
        trainer.terminate()
        trainer.wait(timeout=20)
        rc = sampler.wait(timeout=20)
        assert rc == 0, sampler.stderr.read() if sampler.stderr else ""
    finally:
        for proc in (sampler, trainer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("launch", ["trainbot sampler", "python -m bot.probes.sampler"])
def test_sampler_stops_on_sigterm_and_survives_root_of_shell(tmp_path, launch):
    """Started as a batch script would start it (`trainbot sampler --out F &` with the script
    as parent), SIGTERM ends it with exit 0 and every line it wrote is complete JSON."""
    out = tmp_path / "rss.jsonl"
    script = tmp_path / "job.sh"
    cmd = ([*TRAINBOT, "sampler"] if launch == "trainbot sampler"
           else [sys.executable, "-m", "bot.probes.sampler"])
    script.write_text(
        "#!/bin/bash\n"
        f"{shlex.join(cmd)} --out {out} --interval 0.2 &\n"
        "echo $! > " + str(tmp_path / "sampler.pid") + "\n"
        "sleep 30\n"
    )
    job = subprocess.Popen(["bash", str(script)], cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        _wait(lambda: len(_lines(out)) >= 3, 30, "3 sampler lines")
        pid = int((tmp_path / "sampler.pid").read_text())
        lines = _lines(out)
        # Default root is the parent: the batch script (bash) and its `sleep` are `other`.
        names = {p["name"] for p in lines[-1]["per_process"]}
        assert {"bash", "sleep"} <= names
        os.kill(pid, 15)
        _wait(lambda: exited(pid), 10, "sampler exit")
        assert all(isinstance(x, dict) for x in _lines(out))
    finally:
        job.kill()
        job.wait()
