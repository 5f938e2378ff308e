"""A watcher across a slow link: N running jobs, each with a log and a sampler file on the dev
cluster, a LatencyRelay in front of its sshd (tests/integration/test_watcher_wan.py,
bench/watcher_wan.py)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from typing import Any

from fakes import FakeSlurm, RecordingEventSink

from bot.cluster.ssh import SSHRunner
from bot.config import Config
from bot.config.dev_cluster import dev_cluster_config_data
from bot.core.catalogue import Catalogue
from bot.core.slurm.records import JobRecord
from bot.core.ssh_settings import SSHSettings
from bot.services.ports import TailReader
from bot.services.watch.tick import Watcher
from bot.store import Store
from support.latency_relay import LatencyRelay, relayed_known_hosts

FIRST_JOB = 500_000
RECIPE = "wan"


def relayed_settings(settings: SSHSettings, relay: LatencyRelay, workdir: str) -> SSHSettings:
    """`settings` reaching the same sshd through `relay` (its host key known there too)."""
    known = relayed_known_hosts(settings.known_hosts or "", settings.host, settings.port,
                                relay.port, directory=workdir)
    return replace(settings, port=relay.port, known_hosts=known, command_timeout=300)


@dataclass
class WanJobs:
    """`n` RUNNING jobs whose logs (`job-<id>.out`) and sampler files (`rss-<id>.jsonl`) live in
    `root` on the cluster; `grow()` appends a progress line to each, `grow(sampler=False)` to
    the logs only."""

    runner: SSHRunner
    root: str
    n: int

    @property
    def ids(self) -> list[int]:
        return list(range(FIRST_JOB, FIRST_JOB + self.n))

    def create(self) -> None:
        self._sh('mkdir -p "$1" && cd "$1" && i=0; while [ "$i" -lt "$2" ]; do '
                 'j=$(($3 + i)); : > "job-$j.out"; : > "rss-$j.jsonl"; i=$((i + 1)); done')
        self.grow()

    def grow(self, sampler: bool = True) -> None:
        self._sh('cd "$1" && i=0; while [ "$i" -lt "$2" ]; do j=$(($3 + i)); '
                 'echo "iter $i loss 1.5 s/iter 4.5 rss 40GiB" >> "job-$j.out"; '
                 + ('echo \'{"t": 1, "rss": {"trainer": 1}}\' >> "rss-$j.jsonl"; '
                    if sampler else '') + 'i=$((i + 1)); done')

    def remove(self) -> None:
        self.runner.run(["rm", "-rf", "--", self.root], check=False, timeout=120)

    def _sh(self, script: str) -> None:
        self.runner.run(["sh", "-c", script, "sh", self.root, str(self.n), str(FIRST_JOB)],
                        timeout=300)

    def log(self, job_id: int) -> str:
        return posixpath.join(self.root, f"job-{job_id}.out")


def wan_watcher(jobs: WanJobs, connection: dict[str, Any], store: Store,
                reader: TailReader) -> Watcher:
    """A Watcher of cluster `dev` over `jobs` (squeue and sacct stand-ins: every job RUNNING,
    writing its log; the recipe's sampler file beside it) reading files with `reader`."""
    data = dev_cluster_config_data(
        connection, store_url="sqlite://",
        recipes={RECIPE: {"sbatch_script": posixpath.join(jobs.root, "job.sbatch"),
                          "workdir": jobs.root,
                          "sampler_path": posixpath.join(jobs.root, "rss-%j.jsonl")}})
    slurm = FakeSlurm({i: JobRecord(job_id=i, state="RUNNING", stdout_path=jobs.log(i),
                                    start_time=1.0, name=RECIPE) for i in jobs.ids})
    for i in jobs.ids:
        chain = store.chains.create(recipe=RECIPE, cluster="dev", job_name=RECIPE, now=1.0)
        store.attempts.record(chain_id=chain.id, job_id=str(i), now=1.0)
        store.watched_jobs.add("dev", str(i), now=1.0, chain_id=chain.id)
    return Watcher("dev", slurm=slurm, reader=lambda: reader, store=store,
                   catalogue=Catalogue.load(), sink=RecordingEventSink(),
                   config=Config.model_validate(data))
