"""Benchmark (d): the bot's RSS after many watcher ticks over 200 running jobs, vs after 100.

Each tick appends 2 progress lines (with RSS) to each job's log in an in-memory SFTP
stand-in; Slurm is a stand-in answering RUNNING for all; the store is a real SQLite file.
Per-job state must stay bounded (LogAnalysis downsamples, SamplerSeries too, incident and
tail rows are per job), so RSS after N ticks should match RSS after 100.

    .venv/bin/python bench/watcher_memory.py [--jobs 200] [--ticks 2000]
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.policy import PolicyParams  # noqa: E402
from bot.core.slurm_records import JobRecord  # noqa: E402
from bot.services.watcher import Watcher  # noqa: E402
from bot.store import Store  # noqa: E402

T0 = 1_800_000_000.0


@dataclass
class _Stat:
    st_size: int
    st_mtime: int


class MemSFTP:
    """Log files kept as their last `keep` bytes only (reads are at the tail by offset), so
    the stand-in's own memory stays flat and RSS growth is the bot's."""

    def __init__(self, keep: int = 256 << 10) -> None:
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

    def size(self, path: str) -> int:
        return self.base[path] + len(self.files[path])

    def stat(self, path):  # noqa: ANN001
        return _Stat(self.size(path), self.mtime[path])

    def open(self, path, mode="rb", bufsize=-1):  # noqa: ANN001
        buf, base = self.files[path], self.base[path]

        class _F(io.RawIOBase):
            pos = 0

            def seek(self, p, whence=0):  # noqa: ANN001
                if p < base:
                    raise OSError(f"stand-in keeps only the tail of {path}")
                self.pos = p

            def read(self, n=-1):  # noqa: ANN001
                a = self.pos - base
                data = bytes(buf[a: a + n if n >= 0 else None])
                self.pos += len(data)
                return data

        return _F()


class Slurm:
    def __init__(self, logs: dict[int, str]) -> None:
        self.logs = logs

    def jobs(self, ids):  # noqa: ANN001
        return {i: JobRecord(job_id=i, state="RUNNING", stdout_path=self.logs[i],
                             mem_limit_bytes=950 << 30) for i in ids}


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
    args = ap.parse_args()
    proc = psutil.Process()
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{tmp}/state.db")
        logs = {}
        for j in range(args.jobs):
            job = 10_000 + j
            chain = store.chains.create(recipe="r", cluster="dev", job_name="r", now=T0)
            store.attempts.add(chain_id=chain.id, job_id=str(job), now=T0)
            store.watched_jobs.add("dev", str(job), now=T0, chain_id=chain.id)
            logs[job] = f"/logs/{job}.out"
        sftp, sink = MemSFTP(), Sink()
        w = Watcher("dev", slurm=Slurm(logs), sftp=lambda: sftp, store=store,
                    catalogue=Catalogue.load(), sink=sink, policy=PolicyParams())
        rss = {}
        t_start = time.perf_counter()
        it = 1
        for k in range(1, args.ticks + 1):
            now = T0 + 4.5 * args.lines * k
            chunk = b"".join(line(now - 4.5 * (args.lines - 1 - i), it + i)
                             for i in range(args.lines))
            for path in logs.values():
                sftp.append(path, chunk, now)
            it += args.lines
            w.tick(now)
            if k in (100, args.ticks) or k % 500 == 0:
                gc.collect()
                rss[k] = proc.memory_info().rss
                logs_bytes = sum(sftp.size(p) for p in logs.values())
                print(f"after {k:>6} ticks: RSS {rss[k] / 2**20:7.1f} MiB "
                      f"(logs: {logs_bytes / 2**20:6.1f} MiB written, tails kept), "
                      f"{(time.perf_counter() - t_start) / k * 1000:.0f} ms/tick, "
                      f"{sink.n} events", flush=True)
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
