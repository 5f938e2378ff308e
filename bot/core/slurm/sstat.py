"""sstat: host memory of running steps, one `sstat --allsteps` call for all jobs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from bot.core.slurm.argv import job_ids_arg
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.values import parse_count, parse_rss
from bot.core.text import N_

# Field order of `sstat_argv`; `parse_sstat` expects exactly these columns.
SSTAT_FIELDS: tuple[str, ...] = ("JobID", "MaxRSS", "AveRSS", "MaxRSSNode", "MaxRSSTask", "NTasks")

# sstat's per-job complaints on stderr (22.05 exits 0 anyway). "No steps running": the job is
# known but not running (pending, finished). "couldn't get steps": the controller does not
# know the id, OR did not answer at all (22.05 prints only this line when slurmctld is down).
SSTAT_NO_STEPS_RE = re.compile(r"No steps running for job (\d+)", re.IGNORECASE)
SSTAT_NO_JOB_RE = re.compile(r"couldn't get steps for job (\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class StepMemory:
    """Host memory of one running job, from one `sstat --allsteps` call.

    `max_rss_bytes` is the largest MaxRSS over the job's running steps (MaxRSS itself is the
    largest task RSS of a step, so this is "the biggest process tree Slurm measured"); `step`
    (`batch`, `0`, `extern`) is where it came from, with that step's AveRSS, node, task and
    task count. `total_max_rss_bytes` adds the steps' MaxRSS up: steps are separate process
    trees, so a batch script plus an `srun` step hold at most that much at once.
    """

    job_id: int
    step: str
    max_rss_bytes: int | None
    ave_rss_bytes: int | None = None
    max_rss_node: str | None = None
    max_rss_task: int | None = None
    ntasks: int | None = None
    steps: int = 1
    total_max_rss_bytes: int | None = None


def sstat_argv(job_ids: Iterable[int], fields: Sequence[str] = SSTAT_FIELDS) -> list[str]:
    """argv of ONE sstat call for all `job_ids`: every running step (`--allsteps`; without
    it 22.05 shows only the first srun step and skips a job that has only `.batch`)."""
    return ["sstat", "--noheader", "--parsable2", "--allsteps", f"--jobs={job_ids_arg(job_ids)}",
            "--format=" + ",".join(fields)]


def parse_sstat(text: str, fields: Sequence[str] = SSTAT_FIELDS) -> dict[int, StepMemory]:
    """Memory per job in `sstat --noheader --parsable2 --allsteps` output (see `sstat_argv`).

    Rows are `123.batch|326992K|326992K|vm|0|1`; a job's rows fold into one `StepMemory`
    (largest MaxRSS wins, ties go to the first row). Jobs without rows are absent. A step
    whose MaxRSS is empty (not measured yet) counts as a step but never wins over a measured
    one. A trailing `|` (plain `--parsable`) is tolerated.
    """
    if "JobID" not in fields or "MaxRSS" not in fields:
        raise ValueError("sstat fields must include JobID and MaxRSS")
    steps: dict[int, list[StepMemory]] = {}
    n = len(fields)
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) == n + 1 and parts[-1] == "":
            parts = parts[:-1]
        if len(parts) != n:
            raise SlurmParseError(N_(
                "sstat row has %(got)s '|'-separated fields, expected %(n)s (%(fields)s): "
                "%(line)s", got=len(parts), n=n, fields=",".join(fields), line=repr(line)))
        raw = {f: v.strip() for f, v in zip(fields, parts, strict=True)}
        # `123.batch`, `123_4.0`, `123+1.0` (het component), `123.0+1` (het step)
        match = re.fullmatch(r"(\d+)(?:_\d+)?(?:\+\d+)?\.([\w-]+(?:\+\d+)?)", raw["JobID"])
        if match is None:
            raise SlurmParseError(N_("sstat row has an unreadable JobID %(id)s: %(line)s",
                                     id=repr(raw["JobID"]), line=repr(line)))
        job_id = int(match[1])
        steps.setdefault(job_id, []).append(StepMemory(
            job_id=job_id,
            step=match[2],
            max_rss_bytes=parse_rss(raw.get("MaxRSS")),
            ave_rss_bytes=parse_rss(raw.get("AveRSS")),
            max_rss_node=raw.get("MaxRSSNode") or None,
            max_rss_task=parse_count(raw.get("MaxRSSTask")),
            ntasks=parse_count(raw.get("NTasks")),
        ))
    out: dict[int, StepMemory] = {}
    for job_id, rows in steps.items():
        best = rows[0]
        for row in rows[1:]:
            if row.max_rss_bytes is not None and (
                best.max_rss_bytes is None or row.max_rss_bytes > best.max_rss_bytes
            ):
                best = row
        measured = [r.max_rss_bytes for r in rows if r.max_rss_bytes is not None]
        out[job_id] = replace(best, steps=len(rows),
                              total_max_rss_bytes=sum(measured) if measured else None)
    return out


def sstat_missing(stderr: str) -> tuple[set[int], set[int]]:
    """(ids with no running step, ids sstat could not look up) named on sstat's stderr."""
    return ({int(m) for m in SSTAT_NO_STEPS_RE.findall(stderr)},
            {int(m) for m in SSTAT_NO_JOB_RE.findall(stderr)})
