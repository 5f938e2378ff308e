"""Benchmark the watcher tick: (a) Slurm commands per tick for 1, 20 and 200 watched jobs;
(b) log bytes read per tick on a 2 GiB log with 1 MiB appended between ticks.

(a) runs the real `SlurmClient` over a runner that counts the commands it is asked to run,
    twice: answering like a Slurm that knows none of the jobs (one squeue + one sacct), and
    with every job RUNNING and a log that prints no RSS, so the watcher also asks sstat for
    memory (one sstat for all of them): at most 3 commands whatever the number of jobs, each
    once (the client's `sinfo --version`, asked once per client, is asked before the tick).
(b) runs the real tail + LogAnalysis on a local 2 GiB *sparse* file (no disk used) through the
    real batched read script run locally, counting the bytes read; a restart (new Watcher
    over the same store) is measured too: it re-reads only the warm-up window before the
    persisted offset.

    .venv/bin/python bench/watcher_tick.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.local_shell import local_reader  # noqa: E402

from bot.cluster.slurm import SlurmClient  # noqa: E402
from bot.cluster.ssh import CommandResult  # noqa: E402
from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.policy import PolicyParams  # noqa: E402
from bot.core.slurm.records import JobRecord  # noqa: E402
from bot.core.slurm.squeue import SQUEUE_FIELDS  # noqa: E402
from bot.core.tail import MISSING, FileRead, ReadBatch  # noqa: E402
from bot.services.watch.tick import Watcher  # noqa: E402
from bot.store import Store  # noqa: E402

GIB, MIB = 1 << 30, 1 << 20


class CountingRunner:
    """Counts commands; with `running`, squeue says every asked job is RUNNING and sstat
    gives each a batch step's MaxRSS (the real 22.05 row shape)."""

    def __init__(self, running: bool = False) -> None:
        self.commands: list[str] = []
        self.running = running

    def run(self, argv, *, stdin=None, timeout=None, check=True, env=None):  # noqa: ANN001
        prog = next(a for a in argv if a != "env" and "=" not in a)
        self.commands.append(prog)
        out = ""
        ids: list[str] = next(
            (a.split("=", 1)[1].split(",") for a in argv if a.startswith("--jobs=")), [])
        if self.running and prog == "squeue":
            out = "".join(_squeue_row(int(i)) for i in ids)
        elif self.running and prog == "sstat":
            out = "".join(f"{i}.batch|326992K|326992K|vm|0|1\n" for i in ids)
        elif prog == "sinfo":  # `sinfo --version`: the release, asked once per client
            out = "slurm 22.05.8\n"
        return CommandResult(tuple(argv), 0, out, "")


def _squeue_row(job_id: int) -> str:
    values = {"JobID": str(job_id), "ArrayJobID": str(job_id), "ArrayTaskID": "N/A",
              "State": "RUNNING", "Reason": "None", "UserName": "u", "Account": "a",
              "Partition": "debug", "QOS": "normal", "StartTime": "1700000000",
              "NodeList": "vm", "WorkDir": "/nonexistent", "STDOUT": "/nonexistent/%j.out",
              "Name": "bench"}
    return "|".join(values.get(f, "") for f in SQUEUE_FIELDS) + "\n"


class NoFiles:
    """A cluster where no log exists yet (the tail waits for it)."""

    def read(self, requests):  # noqa: ANN001
        return ReadBatch([FileRead(MISSING)] * len(requests))


class CountingReader:
    """The real batched read script on local files (tests/support/local_shell.py), counting
    the file bytes handed to the watcher."""

    def __init__(self) -> None:
        self.inner = local_reader()
        self.bytes_read = 0

    def read(self, requests):  # noqa: ANN001
        batch = self.inner.read(requests)
        self.bytes_read += sum(len(r.data) for r in batch.results)
        return batch


class Sink:
    def publish(self, event) -> None:  # noqa: ANN001
        pass


class Records:
    def __init__(self, path: str) -> None:
        self.path = path

    def jobs(self, ids):  # noqa: ANN001
        return {i: JobRecord(job_id=i, state="RUNNING", stdout_path=self.path) for i in ids}


def _progress(n: int, start_iter: int, t0: float) -> bytes:
    lines = []
    for k in range(n):
        t = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t0 + 4.5 * k))
        lines.append(f"{t}.104 | INFO | iter: {start_iter + k}/900000 | loss: 0.61 | "
                     f"4.50 s/iter | rss: 45.0 GiB | cpu: 92%\n")
    return "".join(lines).encode()


def bench_commands(tmp: str, running: bool) -> dict[int, list[str]]:
    out = {}
    files = NoFiles()
    for n in (1, 20, 200):
        store = Store.open(f"sqlite:///{tmp}/cmds{n}{running}.db")
        for i in range(n):
            store.watched_jobs.add("dev", str(5000 + i), now=0)
        runner = CountingRunner(running)
        slurm = SlurmClient(runner, use_json=False)  # type: ignore[arg-type]  # commands only
        slurm.slurm_release()  # `sinfo --version`: asked once per client, not per tick
        runner.commands.clear()
        w = Watcher("dev", slurm=slurm, reader=lambda: files, store=store,
                    catalogue=Catalogue.load(), sink=Sink(), policy=PolicyParams())
        w.tick(1000.0)
        out[n] = runner.commands
        store.close()
    return out


def bench_bytes(tmp: str) -> dict[str, Any]:
    log = Path(tmp) / "big.log"
    t0 = time.time() - 3600
    with open(log, "wb") as f:
        f.write(b"# header\n")
        f.seek(2 * GIB - 4 * MIB)  # a sparse hole: a 2 GiB file that costs no disk
        f.write(b"\n" + _progress(int(4 * MIB / 100), 1, t0))
    store = Store.open(f"sqlite:///{tmp}/bytes.db")
    store.watched_jobs.add("dev", "7", now=0)
    reader = CountingReader()
    size = log.stat().st_size
    # First sight of a job already 2 GiB in: start at the end is NOT what the watcher does
    # (it reads from 0 in `max_bytes_per_job` steps); here the offset is seeded at the end,
    # as after the job's earlier ticks, to measure the steady state.
    store.tail_offsets.put("7", str(log), offset=size, size=size, line_no=10 ** 6)
    w = Watcher("dev", slurm=Records(str(log)), reader=lambda: reader, store=store,
                catalogue=Catalogue.load(), sink=Sink(), policy=PolicyParams(),
                warmup_bytes=8 * MIB)
    w.tick(time.time())  # restart: warm-up window only
    warm = reader.bytes_read
    per_tick = []
    tick_s = []
    it = 100_000
    for _ in range(5):
        appended = _progress(1, it, t0 + 10)
        chunk = appended * (MIB // len(appended))
        with open(log, "ab") as f:
            f.write(chunk)
        it += 1
        before = reader.bytes_read
        c0 = time.perf_counter()
        w.tick(time.time())
        tick_s.append(time.perf_counter() - c0)
        per_tick.append((reader.bytes_read - before, len(chunk)))
    store.close()
    return {"log_bytes": size, "warmup_read": warm, "per_tick": per_tick,
            "tick_s": sorted(tick_s)[len(tick_s) // 2]}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for running, label in ((False, "unknown to Slurm"), (True, "running, RSS from sstat")):
            for n, c in bench_commands(tmp, running).items():
                print(f"(a) {n:>3} watched jobs ({label}): {len(c)} Slurm commands per tick "
                      f"({', '.join(c)})")
                assert len(c) <= 3 and len(set(c)) == len(c), c
        b = bench_bytes(tmp)
    print(f"(b) log of {b['log_bytes'] / GIB:.2f} GiB; restart warm-up read "
          f"{b['warmup_read'] / MIB:.2f} MiB once")
    for read, appended in b["per_tick"]:
        print(f"    appended {appended / MIB:.2f} MiB -> read {read / MIB:.4f} MiB "
              f"(+{read - appended} bytes)")
    print(f"    median tick (1 job, 1 MiB of new lines): {b['tick_s'] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
