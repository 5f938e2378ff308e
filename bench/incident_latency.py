"""Benchmark (c): time from a failure line written on the cluster to the incident arriving at
the Slack stand-in, p50/p95 over N runs (default 20), on the dev cluster.

Real jobs (a few at a time, 1 CPU / 64M each) print progress lines and wait for a trigger file;
the bench touches the trigger over SSH at a random phase of the tick, the job writes its
`date +%s.%N` to a side file, prints an NCCL watchdog abort and exits 134. The production
watcher (bot.app.build_watcher: one squeue + one sacct per tick, SFTP tail, diagnose,
ThreadEvents -> SlackPoster) runs under the bot's scheduler (bot.services.scheduler, coalesced)
every `--tick` seconds against a Slack stand-in in this process; a poller notes (every 5 ms)
when the job's `…:final` incident message arrives. The dev cluster runs on this host, so the
job's clock and ours are the same clock (the offset is measured and printed).

    .venv/bin/python bench/incident_latency.py [--runs 20] [--tick 1] [--batch 4]
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from slack_standin import SlackStandIn  # noqa: E402

from bot.app import build_context, build_watcher  # noqa: E402
from bot.config import Config  # noqa: E402
from bot.config.dev_cluster import dev_cluster_config_data  # noqa: E402
from bot.core.slack_bounds import CALL_TIMEOUT_S  # noqa: E402
from bot.core.slurm.sbatch import SubmitSpec  # noqa: E402
from bot.services.fencing import fenced_context  # noqa: E402
from bot.services.leases import LeaseKeeper  # noqa: E402
from bot.services.scheduler import JobScheduler  # noqa: E402
from bot.slack.poster import METADATA_EVENT  # noqa: E402
from bot.slack.retry import make_client  # noqa: E402

CHANNEL = "CBENCH01"
RECIPE = "latency"

JOB = r"""#!/bin/bash
for i in $(seq 1 5); do
  echo "$(date -u '+%Y-%m-%d %H:%M:%S').000 | INFO | iter: $i/100 | loss: 0.9$i | 0.20 s/iter"
  sleep 0.2
done
for _ in $(seq 1 1800); do [ -e "$DIR/trigger-$SLURM_JOB_ID" ] && break; sleep 0.05; done
date +%s.%N > "$DIR/written-$SLURM_JOB_ID"
echo "[rank1]:[E$(date -u +%m%d) $(date -u +%H:%M:%S).000 ProcessGroupNCCL.cpp:616] [Rank 1] \
Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, \
NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out."
exit 134
"""


class Arrivals:
    """Notes the wall time each keyed message first appears at the stand-in."""

    def __init__(self, slack: SlackStandIn) -> None:
        self.slack = slack
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            for m in self.slack.all_messages():
                meta = m.get("metadata") or {}
                if meta.get("event_type") == METADATA_EVENT:
                    self.seen.setdefault(meta["event_payload"]["key"], now)
            time.sleep(0.005)

    def __enter__(self) -> Arrivals:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, int(round(q / 100 * len(ordered) + 0.4999)))
    return ordered[min(rank, len(ordered)) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--tick", type=float, default=1.0, help="watcher tick interval (s)")
    ap.add_argument("--batch", type=int, default=4, help="jobs running at once")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--connection", default=os.environ.get(
        "DEV_CLUSTER_CONNECTION", "/tmp/dev-cluster/connection.json"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    connection = json.loads(Path(args.connection).read_text())
    tag = uuid.uuid4().hex[:8]
    base = posixpath.join(connection["home"], f"latency-{tag}")
    tmp = Path(tempfile.mkdtemp(prefix="trainbot-latency-"))
    data = dev_cluster_config_data(connection, store_url=f"sqlite:///{tmp / 'bot.db'}", recipes={
        RECIPE: {"sbatch_script": posixpath.join(base, "job.sh"), "job_name": f"lat-{tag}",
                 "channel": "bench", "policy": {"tick_s": args.tick}}})
    data["slack"] = {"channels": {"bench": CHANNEL}}
    config = Config.model_validate(data)
    with SlackStandIn() as slack, Arrivals(slack) as arrivals:
        # the bot's services as `trainbot run` builds them, posting to the stand-in
        ctx = build_context(config, client=make_client(slack.token, base_url=slack.api_url,
                                                           timeout=CALL_TIMEOUT_S))
        store, clusters, poster = ctx.store, ctx.clusters, ctx.sink
        assert poster is not None
        runner = clusters.runner("dev")
        slurm = clusters.slurm("dev")
        runner.run(["mkdir", "-p", base])
        sftp = clusters.sftp("dev")
        offset = float(runner.run(["date", "+%s.%N"]).stdout) - time.time()
        latencies: list[float] = []
        submitted: list[int] = []
        scheduler = JobScheduler(LeaseKeeper(store.leases))
        # as `trainbot run` wires it: the watcher's side effects fenced by its lease
        watcher = build_watcher(fenced_context(ctx, scheduler.fence("watch:dev")), "dev")
        scheduler.run_repeating("watch:dev", watcher.tick, every_s=args.tick,
                                on_regained=watcher.forget)
        scheduler.start()
        try:
            while len(latencies) < args.runs:
                n = min(args.batch, args.runs - len(latencies))
                jobs = []
                for _ in range(n):
                    job_id = slurm.submit(SubmitSpec(
                        job_name=f"lat-{tag}", partition=connection.get("partition"),
                        output=posixpath.join(base, "%j.out"), mem="64M", time="5",
                        env={"DIR": base}, extra=("--cpus-per-task=1",)), script=JOB)
                    submitted.append(job_id)
                    chain = store.chains.create(recipe=RECIPE, cluster="dev",
                                                job_name=f"lat-{tag}", now=time.time())
                    store.attempts.record(chain_id=chain.id, job_id=str(job_id), now=time.time())
                    poster.post_root(chain.id, CHANNEL, [], f"run {job_id}")
                    store.watched_jobs.add("dev", str(job_id), now=time.time(),
                                           chain_id=chain.id)
                    jobs.append(job_id)
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:  # all running (and printing) first
                    recs = slurm.jobs(jobs)
                    if all(j in recs and recs[j].is_running for j in jobs):
                        break
                    time.sleep(0.5)
                else:
                    raise SystemExit(f"jobs {jobs} did not start within 300 s (squeue)")
                time.sleep(2.0)
                for job_id in jobs:
                    time.sleep(rng.uniform(0, args.tick))  # a random phase of the tick
                    runner.run(["touch", posixpath.join(base, f"trigger-{job_id}")])
                    key = f"dev:{job_id}:final"
                    wait_until = time.monotonic() + 120
                    while key not in arrivals.seen and time.monotonic() < wait_until:
                        time.sleep(0.01)
                    if key not in arrivals.seen:
                        raise SystemExit(f"no incident for job {job_id} within 120 s")
                    with sftp.open(posixpath.join(base, f"written-{job_id}")) as f:
                        written = float(f.read().decode()) - offset
                    latencies.append(arrivals.seen[key] - written)
                    print(f"job {job_id}: {latencies[-1]:.2f} s", flush=True)
        finally:
            scheduler.stop()
            for job_id in submitted:
                runner.run(["scancel", str(job_id)], check=False)
            runner.run(["rm", "-rf", base], check=False)
            clusters.close()
            store.close()
    print(f"\nincident latency over {len(latencies)} runs, tick {args.tick:g} s "
          f"(cluster clock offset {offset * 1000:+.1f} ms, corrected):")
    print(f"  p50 {percentile(latencies, 50):.2f} s   p95 {percentile(latencies, 95):.2f} s   "
          f"min {min(latencies):.2f} s   max {max(latencies):.2f} s   "
          f"mean {statistics.mean(latencies):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
