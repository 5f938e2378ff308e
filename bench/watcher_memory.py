"""Benchmark (d): the bot's RSS after many watcher ticks over 200 running jobs, vs after 100.

Each tick appends 2 progress lines (with RSS) to each job's log in an in-memory stand-in of
the cluster's files; Slurm is a stand-in answering RUNNING for all; the store is a real SQLite file.
Per-job state must stay bounded (LogAnalysis downsamples, SamplerSeries too, incident and
tail rows are per job), so RSS stops growing once every job's series holds its cap of samples
(1,024 per job: ~500 ticks at 2 lines per tick) and stays there however many ticks follow.

    .venv/bin/python bench/watcher_memory.py [--jobs 200] [--ticks 2000] [--churn N]

With `--churn N` one job ends every N ticks (COMPLETED: the watcher reads its rest, diagnoses
it, reports it and unwatches it) and a new one starts in its place, so per-job state must
also be released when jobs go, as on a real cluster.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.policy import PolicyParams  # noqa: E402
from bot.core.slurm.records import JobRecord  # noqa: E402
from bot.core.tail import MISSING, NEW, READ, SAME, FileRead, ReadBatch  # noqa: E402
from bot.services.watch.tick import Watcher  # noqa: E402
from bot.store import Store  # noqa: E402

T0 = 1_800_000_000.0


class MemSFTP:
    """Log files kept as their last `keep`..2×`keep` bytes only (the watcher reads new bytes
    by offset, plus a 64-byte anchor before it), so the stand-in's own memory reaches its
    ceiling (2×`keep` per log: 6.4 MiB for 200 logs) within the first ticks and RSS growth
    after that is the bot's. `held()` is what it holds, reported next to RSS."""

    def __init__(self, keep: int = 16 << 10) -> None:
        self.files: dict[str, bytearray] = {}
        self.base: dict[str, int] = {}  # file offset of files[path][0]
        self.mtime: dict[str, int] = {}
        self.keep = keep

    def append(self, path: str, data: bytes, now: float) -> None:
        buf = self.files.setdefault(path, bytearray())
        self.base.setdefault(path, 0)
        buf.extend(data)
        if len(buf) > 2 * self.keep:
            cut = len(buf) - self.keep
            del buf[:cut]
            self.base[path] += cut
        self.mtime[path] = int(now)

    def remove(self, path: str) -> None:
        for table in (self.files, self.base, self.mtime):
            table.pop(path, None)

    def held(self) -> int:
        return sum(len(buf) for buf in self.files.values())

    def size(self, path: str) -> int:
        return self.base[path] + len(self.files[path])

    def read(self, requests):  # noqa: ANN001
        """The batched reader's answers (bot.core.tail), over the tails kept."""
        out = []
        for req in requests:
            if req.path not in self.files:
                out.append(FileRead(MISSING))
                continue
            size, mtime = self.size(req.path), self.mtime[req.path]
            if size < req.offset:
                out.append(FileRead(NEW, size, mtime, 1, 0, self._slice(req.path, 0, min(
                    size, req.budget))))
            elif size == req.size and mtime == req.mtime:
                out.append(FileRead(SAME, size, mtime, 1))
            else:
                start = req.offset - req.back
                end = req.offset + min(size - req.offset, req.budget)
                out.append(FileRead(READ, size, mtime, 1, start,
                                    self._slice(req.path, start, end)))
        return ReadBatch(out)

    def _slice(self, path: str, start: int, end: int) -> bytes:
        base = self.base[path]
        if start < base:
            raise OSError(f"stand-in keeps only the tail of {path}")
        return bytes(self.files[path][start - base:end - base])


class Slurm:
    """RUNNING for every job of `logs`, COMPLETED (ended at `ended[id]`) once it is ended."""

    def __init__(self, logs: dict[int, str]) -> None:
        self.logs = logs
        self.ended: dict[int, float] = {}

    def jobs(self, ids):  # noqa: ANN001
        out = {}
        for i in ids:
            if i in self.ended:
                out[i] = JobRecord(job_id=i, state="COMPLETED", exit_code=0, signal=0,
                                   stdout_path=self.logs[i], mem_limit_bytes=950 << 30,
                                   start_time=T0, end_time=self.ended[i])
            else:
                out[i] = JobRecord(job_id=i, state="RUNNING", stdout_path=self.logs[i],
                                   mem_limit_bytes=950 << 30, start_time=T0)
        return out


class Sink:
    def __init__(self) -> None:
        self.n = 0

    def publish(self, event) -> None:  # noqa: ANN001
        self.n += 1


def line(t: float, it: int) -> bytes:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
    return (f"{stamp}.000 | INFO | iter: {it}/10000000 | loss: 0.61 | 4.50 s/iter | "
            f"rss: {45 + (it % 7) * 0.1:.1f} GiB | cpu: 92%\n").encode()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--ticks", type=int, default=2000)
    ap.add_argument("--lines", type=int, default=2, help="lines appended per job per tick")
    ap.add_argument("--churn", type=int, default=0, metavar="N",
                    help="every N ticks the oldest job ends (COMPLETED: diagnosed, reported, "
                         "unwatched) and a new one starts; 0: the same jobs run throughout")
    args = ap.parse_args()
    proc = psutil.Process()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{tmp}/state.db")
        logs: dict[int, str] = {}
        sftp, sink = MemSFTP(), Sink()
        slurm = Slurm(logs)

        def start(job: int, now: float) -> None:
            chain = store.chains.create(recipe="r", cluster="dev", job_name="r", now=now)
            store.attempts.record(chain_id=chain.id, job_id=str(job), now=now)
            store.watched_jobs.add("dev", str(job), now=now, chain_id=chain.id)
            logs[job] = f"/logs/{job}.out"

        for j in range(args.jobs):
            start(10_000 + j, T0)
        next_job = 10_000 + args.jobs
        w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                    catalogue=Catalogue.load(), sink=sink, policy=PolicyParams())
        rss = {}
        t_start = time.perf_counter()
        it = written = 1
        for k in range(1, args.ticks + 1):
            now = T0 + 4.5 * args.lines * k
            for job in [j for j in slurm.ended if store.watched_jobs.get("dev", str(j)) is None]:
                sftp.remove(logs.pop(job))  # judged and unwatched: gone from the stand-ins
                del slurm.ended[job]
            if args.churn and k % args.churn == 0:
                slurm.ended[min(j for j in logs if j not in slurm.ended)] = now
                start(next_job, now)
                next_job += 1
            chunk = b"".join(line(now - 4.5 * (args.lines - 1 - i), it + i)
                             for i in range(args.lines))
            for job, path in logs.items():
                if job not in slurm.ended:
                    sftp.append(path, chunk, now)
                    written += len(chunk)
            it += args.lines
            w.tick(now)
            if k in (100, args.ticks) or k % 500 == 0:
                gc.collect()
                rss[k] = proc.memory_info().rss
                running = len(logs) - len(slurm.ended)
                print(f"after {k:>6} ticks: RSS {rss[k] / 2**20:7.1f} MiB "
                      f"({running} jobs running, {next_job - 10_000 - running} ended; "
                      f"{written / 2**20:6.1f} MiB of log written, "
                      f"{sftp.held() / 2**20:4.1f} MiB held by the stand-in), "
                      f"{(time.perf_counter() - t_start) / k * 1000:.0f} ms/tick, "
                      f"{sink.n} events", flush=True)
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
