"""Benchmark: the watcher tick at WAN latency, batched reads vs per-file reads, in one run.

A LatencyRelay (tests/support/latency_relay.py) adds RTT/2 each way in front of the dev
cluster's sshd; N running jobs each write a log and a sampler file there. Every measured tick
follows a remote command that appended one line to every file (outside the timing), so every
file grew. The watcher is the real one (`Watcher.tick`: the log follower, the analyses, the
store) with Slurm's answers stood in (every job RUNNING, no Slurm command sent), reading the
files with:

- the batched reader (bot.cluster.tail.ShellTailReader: one remote command per tick), median
  of `--ticks` ticks (>= 5), plus one tick where nothing changed;
- per-file reads (what the watcher did before: an SFTP stat per file, and open, read, close of
  each file that changed), `--per-file-ticks` ticks (0: skipped).

    flock /tmp/trainbot-cluster.lock .venv/bin/python bench/watcher_wan.py --jobs 200 --rtt-ms 20
    ... --jobs 1000 --rtt-ms 50 --per-file-ticks 0 --json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from conftest import DevCluster, dev_cluster_dir  # noqa: E402
from support.latency_relay import LatencyRelay  # noqa: E402
from support.wan import WanJobs, relayed_settings, wan_watcher  # noqa: E402

from bot.cluster.ssh import SSHRunner  # noqa: E402
from bot.cluster.tail import ShellTailReader  # noqa: E402
from bot.core.tail import MISSING, NEW, READ, SAME, FileRead, ReadBatch  # noqa: E402
from bot.services.watch.events import TickReport  # noqa: E402
from bot.store import Store  # noqa: E402


class PerFileSFTPReader:
    """A TailReader making the per-file SFTP requests the watcher made before batching: a
    stat per file; for a file that changed, an open, one read and a close. Each request is a
    round trip."""

    def __init__(self, sftp) -> None:  # noqa: ANN001
        self.sftp = sftp

    def read(self, requests):  # noqa: ANN001
        results, trips, moved = [], 0, 0
        for req in requests:
            trips += 1
            try:
                st = self.sftp.stat(req.path)
            except FileNotFoundError:
                results.append(FileRead(MISSING))
                continue
            size, mtime = int(st.st_size), int(st.st_mtime)
            if size < req.offset:
                status, start, end = NEW, 0, min(size, req.budget)
            elif size == req.size and mtime == req.mtime:
                results.append(FileRead(SAME, size, mtime))
                continue
            else:
                status, start = READ, req.offset - req.back
                end = req.offset + min(size - req.offset, req.budget)
            with self.sftp.open(req.path, "rb") as f:
                f.seek(start)
                data = f.read(end - start)
            trips += 3
            moved += len(data)
            results.append(FileRead(status, size, mtime, None, start, data))
        return ReadBatch(results, round_trips=trips, bytes_moved=moved)


@dataclasses.dataclass
class Measured:
    reports: list[TickReport]
    turns: list[int]  # round trips the relay carried, per tick
    wire: list[int]  # bytes the relay carried (both ways, SSH's encryption and framing too)

    @property
    def median_s(self) -> float:
        return statistics.median(r.wall_s for r in self.reports)


def measure(watcher, jobs: WanJobs, relay: LatencyRelay, ticks: int,  # noqa: ANN001
            grow: bool = True) -> Measured:
    reports, turns, wire = [], [], []
    for _ in range(ticks):
        if grow:
            jobs.grow()
        t0, up0, down0 = relay.counts()
        report = watcher.tick(time.time())
        t1, up1, down1 = relay.counts()
        turns.append(t1 - t0)
        wire.append(up1 - up0 + down1 - down0)
        if not report.ok:
            raise SystemExit(f"tick failed: {report.error}")
        reports.append(report)
    return Measured(reports, turns, wire)


def run(args: argparse.Namespace) -> dict:
    cluster = DevCluster.from_json(json.loads((dev_cluster_dir() / "connection.json")
                                              .read_text()))
    connection = dataclasses.asdict(cluster)
    out: dict = {"jobs": args.jobs, "rtt_ms": args.rtt_ms}
    with tempfile.TemporaryDirectory() as tmp, \
            LatencyRelay((cluster.host, cluster.port), delay_s=args.rtt_ms / 2000) as relay:
        settings = relayed_settings(cluster.ssh_settings(), relay, tmp)
        with SSHRunner(settings) as runner:
            jobs = WanJobs(runner, f"{cluster.home}/wan-bench-{uuid.uuid4().hex[:8]}",
                           args.jobs)
            jobs.create()
            try:
                store = Store.open(f"sqlite:///{tmp}/batched.db")
                watcher = wan_watcher(jobs, connection, store, ShellTailReader(runner))
                measure(watcher, jobs, relay, 1, grow=False)  # first sight: whole files
                batched = measure(watcher, jobs, relay, args.ticks)
                idle = measure(watcher, jobs, relay, 1, grow=False)
                store.close()
                last = batched.reports[-1]
                out.update(
                    tick_s=round(batched.median_s, 4),
                    tick_s_all=[round(r.wall_s, 4) for r in batched.reports],
                    tick_s_nothing_changed=round(idle.median_s, 4),
                    round_trips=last.read_round_trips,
                    round_trips_on_the_wire=statistics.median(batched.turns),
                    bytes_moved=last.bytes_moved, new_bytes=last.bytes_read,
                    wire_bytes=statistics.median(batched.wire),
                    files=2 * args.jobs)
                out["tick_s_per_file"] = None  # not measured (--per-file-ticks 0)
                if args.per_file_ticks:
                    store = Store.open(f"sqlite:///{tmp}/per-file.db")
                    watcher = wan_watcher(jobs, connection, store,
                                          PerFileSFTPReader(runner.sftp()))
                    measure(watcher, jobs, relay, 1, grow=False)
                    per_file = measure(watcher, jobs, relay, args.per_file_ticks)
                    store.close()
                    last = per_file.reports[-1]
                    out.update(
                        tick_s_per_file=round(per_file.median_s, 4),
                        round_trips_per_file=last.read_round_trips,
                        round_trips_per_file_on_the_wire=statistics.median(per_file.turns),
                        wire_bytes_per_file=statistics.median(per_file.wire),
                        speedup=round(per_file.median_s / batched.median_s, 1))
            finally:
                jobs.remove()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200, help="running jobs (a log and a "
                        "sampler file each)")
    parser.add_argument("--rtt-ms", type=float, default=20.0, help="round-trip time added "
                        "by the relay")
    parser.add_argument("--ticks", type=int, default=5, help="batched ticks measured (>= 5)")
    parser.add_argument("--per-file-ticks", type=int, default=1,
                        help="per-file ticks measured (0: skip the per-file reads)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.ticks < 5:
        parser.error("--ticks must be at least 5 (the median of 5 ticks or more is reported)")
    out = run(args)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{out['jobs']} jobs ({out['files']} files, every one grown by a line), "
          f"RTT {out['rtt_ms']:g} ms")
    print(f"  batched : {out['tick_s']:.3f} s per tick (median of {args.ticks}), "
          f"{out['round_trips']} read round trip(s) "
          f"({out['round_trips_on_the_wire']:g} on the wire), {out['bytes_moved']} bytes "
          f"moved ({out['wire_bytes']:g} on the wire) for {out['new_bytes']} new bytes; "
          f"nothing changed: "
          f"{out['tick_s_nothing_changed']:.3f} s")
    if out["tick_s_per_file"] is not None:
        print(f"  per file: {out['tick_s_per_file']:.3f} s per tick, "
              f"{out['round_trips_per_file']} read round trips "
              f"({out['round_trips_per_file_on_the_wire']:g} on the wire), "
              f"{out['wire_bytes_per_file']:g} bytes on the wire")
        print(f"  per file / batched: {out['speedup']:g}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
