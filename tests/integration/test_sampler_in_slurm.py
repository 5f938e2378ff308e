"""`python -m bot.probes.sampler` inside real Slurm jobs on the dev cluster, as a recipe runs it.

The batch script (tests/fixtures/sampler/sampled_job.sbatch) starts the sampler in the
background, then a trainer that forks two DataLoader-like workers named `pt_data_worker` whose
caches grow (tests/fixtures/sampler/named_workers.py; the cluster's python3 has no torch). The
sampler runs on the cluster user's system python3 (Debian's python3-psutil, installed by
deploy/dev-cluster/up.sh) with only the sampler's modules of the `bot` package copied next to
the job: its imports must stay that light. A second job points the sampler at a read-only
directory. While the first job runs, the real watcher (squeue/sacct and SFTP through sshd, a
recipe whose `sampler_path` names the file) tails the sampler file like the log.

What is asserted is what the bot reads: the JSON lines parsed with bot.core.sampler_series,
the sacct record of each job, and the watcher's incident. About 35 s on an idle cluster.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cluster_jobs import DemoJobs, FinishedJob
from fakes import RecordingEventSink, present

from bot.cluster.tail import ShellTailReader
from bot.config import Config
from bot.core.catalogue import Catalogue
from bot.core.sampler_series import SamplerSeries, parse_line, role_growth
from bot.probes.sampler import DEFAULT_INTERVAL_S
from bot.services.watch.events import WatchEvent
from bot.services.watch.tick import Watcher
from bot.store import Store

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "sampler"
# Everything `python -m bot.probes.sampler` imports from the project: the job gets these, no more.
SAMPLER_MODULES = ("bot/__init__.py", "bot/probes/__init__.py", "bot/probes/sampler.py",
                   "bot/core/__init__.py", "bot/core/sampler_series.py")
MIB = 1024 * 1024
WORKERS = 2
WORKER_NAME = "pt_data_worker"  # as named_workers.py and PyTorch's DataLoader name them
ITERS = 100
STEP_S = 0.25  # 100 iterations: ~25 s of training
MIB_PER_ITEM = 1.0  # each loaded item grows its worker's cache: ~100 MiB over the run
RECIPE = "sampled"


@dataclass
class SampledRuns:
    sampled: FinishedJob
    lines: list[str]  # the sampler's JSON lines, as the job left them
    readonly: FinishedJob
    readonly_files: list[str]
    events: list[WatchEvent]
    elastic: FinishedJob  # torchrun restarting its trainer once (elastic_job.sbatch)
    elastic_lines: list[str]


def _install(jobs: DemoJobs) -> None:
    """The batch script, the trainer and the sampler's modules into the job's workspace."""
    sftp = jobs.runner.sftp()
    for name in ("sampled_job.sbatch", "named_workers.py", "elastic_job.sbatch",
                 "elastic_trainer.py"):
        sftp.put(str(FIXTURES / name), jobs.path(name))
        sftp.chmod(jobs.path(name), 0o755)
    jobs.runner.run(["mkdir", "-p", jobs.path("pkg", "bot", "core"),
                     jobs.path("pkg", "bot", "probes")])
    for rel in SAMPLER_MODULES:
        sftp.put(str(REPO / rel), jobs.path("pkg", rel))
    sftp.mkdir(jobs.path("readonly"))
    sftp.chmod(jobs.path("readonly"), 0o555)


def _watcher(jobs: DemoJobs, dev_cluster: Any, store: Store, sink: RecordingEventSink) -> Watcher:
    data = dev_cluster.bot_config_data(
        store_url="sqlite://",
        recipes={RECIPE: {"sbatch_script": jobs.path("sampled_job.sbatch"),
                          "workdir": jobs.root, "target_iter": ITERS,
                          "sampler_path": jobs.path("logs", "rss-%j.jsonl")}},
    )
    reader = ShellTailReader(jobs.runner)
    return Watcher("dev", slurm=jobs.slurm, reader=lambda: reader, store=store,
                   catalogue=Catalogue.load(), sink=sink, config=Config.model_validate(data))


@pytest.fixture(scope="module")
def runs(dev_cluster, tmp_path_factory) -> SampledRuns:
    """Both jobs submitted together; the watcher ticks every 2 s until the sampled one ends."""
    with DemoJobs.open(dev_cluster) as jobs:
        _install(jobs)
        trainer_args = ["--workers", str(WORKERS), "--iters", str(ITERS), "--step", str(STEP_S),
                        "--mib-per-item", str(MIB_PER_ITEM)]
        sampled = jobs.submit("sampled", trainer_args, launcher="sampled_job.sbatch",
                              mem="512M", env={"TRAINBOT_SAMPLER_DIR": jobs.path("logs")})
        readonly = jobs.submit("sampler-readonly", ["--iters", "8", "--step", "0.5"],
                               launcher="sampled_job.sbatch", mem="512M",
                               env={"TRAINBOT_SAMPLER_DIR": jobs.path("readonly")})
        elastic = jobs.submit("sampler-elastic", ["--steps", "8"],
                              launcher="elastic_job.sbatch", mem="1G",
                              env={"TRAINBOT_SAMPLER_DIR": jobs.path("logs")})
        store = Store.open(f"sqlite:///{tmp_path_factory.mktemp('sampler') / 'state.db'}")
        try:
            now = time.time()
            chain = store.chains.create(recipe=RECIPE, cluster="dev", job_name=sampled.name,
                                        now=now)
            store.attempts.record(chain_id=chain.id, job_id=str(sampled.job_id), now=now)
            store.watched_jobs.add("dev", str(sampled.job_id), now=now, chain_id=chain.id)
            sink = RecordingEventSink()
            watcher = _watcher(jobs, dev_cluster, store, sink)
            deadline = time.monotonic() + 150
            while store.watched_jobs.list("dev") and time.monotonic() < deadline:
                watcher.tick(time.time())
                time.sleep(2)
            done = jobs.wait([sampled, readonly, elastic], timeout=150)
        finally:
            store.close()
        text = jobs.read_text(jobs.path("logs", f"rss-{sampled.job_id}.jsonl"))
        elastic_text = jobs.read_text(jobs.path("logs", f"rss-{elastic.job_id}.jsonl"))
        return SampledRuns(done[sampled.job_id], text.splitlines(), done[readonly.job_id],
                           jobs.listdir(jobs.path("readonly")), sink.events,
                           done[elastic.job_id], elastic_text.splitlines())


def _records(runs: SampledRuns) -> list[dict]:
    """The complete lines (the last one may be cut by Slurm killing the sampler at job end)."""
    if not runs.lines:  # e.g. an import the cluster's python3 lacks: a traceback in the log
        other = "\n".join(x for x in runs.sampled.log_lines if "| INFO |" not in x)
        raise AssertionError(f"the sampler wrote nothing; the job's log besides iterations:\n"
                             f"{other}\n{runs.sampled.describe()}")
    return [json.loads(x) for x in runs.lines if parse_line(x) is not None]


def _training(records: list[dict]) -> list[dict]:
    """Samples taken while the trainer and all its workers were up, from the first in which
    every worker had named itself: a worker is `python3` between its fork and its
    PR_SET_NAME, and a sample can fall in that gap (the sampler tells it by its parent then).
    Every later sample must keep the names: a sampler that never reports them leaves none."""
    up = [r for r in records if r["n"]["worker"] == WORKERS]
    for i, r in enumerate(up):
        names = [p["name"] for p in r["per_process"] if p["role"] == "worker"]
        if names == [WORKER_NAME] * WORKERS:
            return up[i:]
    return []


def test_jobs_end_completed_with_the_sampler_beside_them(runs):
    job = runs.sampled
    assert (job.record.state, job.record.exit_code, job.record.signal) == ("COMPLETED", 0, 0), \
        job.describe()
    assert f"iter: {ITERS}/{ITERS}" in job.log and "[trainer] done" in job.log, job.describe()
    # The sampler wrote its lines, no sample failed, and it said nothing in the job's log.
    assert not [x for x in job.log_lines if "sampler:" in x], job.describe()
    assert not [r for r in _records(runs) if r.get("errors")]


def test_a_sampler_that_cannot_write_does_not_fail_the_job(runs):
    job = runs.readonly
    assert (job.record.state, job.record.exit_code, job.record.signal) == ("COMPLETED", 0, 0), \
        job.describe()
    assert "bot.probes.sampler: cannot write" in job.log, job.describe()  # it did try, and gave up
    assert "iter: 8/8" in job.log and "[trainer] done" in job.log, job.describe()
    assert runs.readonly_files == []


def test_trainer_and_dataloader_workers_are_told_apart(runs):
    records = _records(runs)
    training = _training(records)
    # ~25 one-second samples while training; a few before the workers start (or name
    # themselves) are allowed.
    assert len(training) >= 15, [r["n"] for r in records]
    for r in training:
        # the batch script and the sampler itself are `other`
        assert r["n"] == {"trainer": 1, "worker": WORKERS, "other": 2}, r
        by_role: dict[str, list[dict]] = {}
        for p in r["per_process"]:
            by_role.setdefault(p["role"], []).append(p)
        [trainer] = by_role["trainer"]
        assert trainer["name"] == "python3"
        assert [(w["name"], w["ppid"]) for w in by_role["worker"]] == \
            [(WORKER_NAME, trainer["pid"])] * WORKERS


def test_worker_rss_grows_and_the_trainer_rss_does_not(runs):
    series = SamplerSeries()
    series.feed_lines(json.dumps(r) for r in _training(_records(runs)))
    worker_start, worker_end = present(role_growth(series, "worker"))
    trainer_start, trainer_end = present(role_growth(series, "trainer"))
    # ~2 MiB/s of cache per worker for ~20 s between the medians: ~80 MiB.
    assert worker_end - worker_start >= 40 * MIB, (worker_start, worker_end)
    assert abs(trainer_end - trainer_start) < 16 * MIB, (trainer_start, trainer_end)
    # The trainer holds its 32 MiB "model", the workers do not (forked before it existed).
    assert trainer_start > 32 * MIB


def test_sampler_costs_well_under_one_percent_of_a_core(runs):
    """The sampler's own CPU time (utime + stime of its process, which it records in every
    line as `sampler_cpu_s`) over the wall time between its first and last line, i.e. its
    steady state after start-up. The job samples every 1 s, ten times as often as a recipe's
    default (DEFAULT_INTERVAL_S), so at the default the share is about a tenth of this."""
    records = _records(runs)
    assert len(records) >= 20
    first, last = records[0], records[-1]
    cpu_s = last["sampler_cpu_s"] - first["sampler_cpu_s"]
    share = 100 * cpu_s / (last["t"] - first["t"])
    assert share < 1.0, (
        f"{cpu_s:.2f} s CPU over {last['t'] - first['t']:.0f} s at 1 s intervals: {share:.2f} %"
        f" of a core (at the default {DEFAULT_INTERVAL_S:g} s interval about a tenth of that)")


def test_watcher_reads_the_real_sampler_file_and_sees_the_workers_grow(runs):
    incidents = [e for e in runs.events if e.kind == "incident"]
    assert [e.job_id for e in incidents] == [str(runs.sampled.job.job_id)], runs.events
    [incident] = incidents
    assert incident.record.state == "COMPLETED"
    sampler = incident.sampler
    assert sampler is not None and sampler.bad_lines == 0
    assert max(p.n["worker"] for p in sampler.points) == WORKERS
    assert max(p.n["trainer"] for p in sampler.points) == 1
    # What the early warnings and the RSS chart get: the workers' line, separately.
    start, end = present(role_growth(sampler, "worker"))
    assert end - start >= 40 * MIB, (start, end)


def test_torchruns_restarted_trainer_starts_the_samplers_next_run(runs):
    """torchrun (--max-restarts=1) kills its failed trainer and starts a new one inside the
    same batch script: the sampler writes the next trainer generation from the new trainer's
    first sample, and the series the leak fit and the growth read starts there, where the
    memory started again, not at the first attempt's start."""
    job = runs.elastic
    assert (job.record.state, job.record.exit_code) == ("COMPLETED", 0), job.describe()
    assert "attempt 0 fails" in job.log and "[trainer] done" in job.log, job.describe()
    records = [json.loads(x) for x in runs.elastic_lines if parse_line(x) is not None]
    with_trainer = [r for r in records if r["n"]["trainer"] == 1]
    gens = [r["gen"] for r in with_trainer]
    assert gens == sorted(gens) and set(gens) == {0, 1}, gens  # one restart, seen once
    # torchrun is the launcher (`other`), never a trainer: the trainer is its child
    assert all(p["name"] != "torchrun" for r in with_trainer for p in r["per_process"]
               if p["role"] == "trainer"), with_trainer[0]["per_process"]
    series = SamplerSeries()
    series.feed_lines(runs.elastic_lines)
    first_of_1 = next(r for r in with_trainer if r["gen"] == 1)
    assert series.run_start == first_of_1["t"]
    # the first attempt held ≥ 64 MiB of cache before it failed (its peak: a sample taken as
    # torchrun reaps it reads the exiting trainer's RSS as 0); the new trainer starts again
    peak_of_0 = max(r["rss"]["trainer"] for r in with_trainer if r["gen"] == 0)
    assert peak_of_0 - series.last_run()[0].rss["trainer"] >= 48 * MIB, \
        (peak_of_0, series.last_run()[0].rss)
