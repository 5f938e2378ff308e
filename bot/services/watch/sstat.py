"""Host memory from sstat for the running jobs whose RSS has no better source (the log prints
none and the sampler has written nothing): ONE `slurm.memory(ids)` call (one sstat) a tick for
all of them, each job's MaxRSS fed to its analysis as a sample at its current iteration (leak
fit, RSS chart), and a leak warning built on it says "RSS from sstat". A failed sstat costs
only that tick's samples.
"""

from __future__ import annotations

import logging

from bot.cluster.errors import ClusterError
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sstat import StepMemory
from bot.services.ports import SlurmJobs
from bot.services.watch.events import TickReport
from bot.services.watch.logs import JobWatch

log = logging.getLogger(__name__)


def needs_sstat(jw: JobWatch | None) -> bool:
    """Host RSS has no better source: the log printed none, the sampler wrote nothing
    (a job not seen before may turn out to print RSS: the sample is then dropped)."""
    return jw is None or not (jw.analysis.series.log_rss_seen or jw.sampler.points)


def read_memory(slurm: SlurmJobs, cluster: str, records: dict[int, JobRecord],
                jobs: dict[int, JobWatch], report: TickReport) -> dict[int, StepMemory]:
    """ONE `slurm.memory` (sstat) call for every running job that needs it (`jobs`: what the
    watcher keeps of the jobs it saw before). A failure (controller gone between squeue and
    sstat, an odd answer) is logged and costs only this tick's RSS samples: the jobs are
    still judged from their logs. A Slurm client without `memory` makes no call."""
    memory = getattr(slurm, "memory", None)
    if memory is None:
        return {}
    ids = sorted(job_id for job_id, record in records.items()
                 if record.is_running and needs_sstat(jobs.get(job_id)))
    if not ids:
        return {}
    report.slurm_calls += 1
    report.round_trips += 1  # sstat
    try:
        return memory(ids)
    except (ClusterError, SlurmParseError) as exc:
        log.warning("%s: sstat for %d running job(s) failed, no RSS samples this tick: %s",
                    cluster, len(ids), exc)
        return {}


def add_sstat_sample(jw: JobWatch, memory: StepMemory | None) -> None:
    """The job's sstat MaxRSS as a sample at its current iteration. No time: progress
    charts and timings read (time, iteration) from samples, and this one is no progress."""
    if memory is None or memory.max_rss_bytes is None or not needs_sstat(jw):
        return
    if jw.analysis.add_rss(memory.max_rss_bytes, source="sstat"):
        jw.rss_step = memory.step


def rss_note(jw: JobWatch) -> str:
    """Where a leak warning's RSS came from, when it is not the log itself."""
    series = jw.analysis.series
    if series.external_rss_source == "sstat" and needs_sstat(jw):
        step = f" (MaxRSS of step {jw.rss_step})" if jw.rss_step else ""
        return f"; RSS from sstat{step}"
    return ""


__all__ = ["add_sstat_sample", "needs_sstat", "read_memory", "rss_note"]
