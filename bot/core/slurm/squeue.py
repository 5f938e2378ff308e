"""squeue: the argv of one call, and its JSON and `-O` (parsable) output as `JobRecord`s."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bot.core.slurm.argv import TIME_FORMAT_ENV, check_option_value, job_ids_arg
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.json_fields import (
    json_epoch,
    json_exit,
    json_number,
    json_state,
    json_text,
    load_json,
)
from bot.core.slurm.parsable import split_rows
from bot.core.slurm.records import JobRecord
from bot.core.slurm.states import FINISHED_STATES, RUNNING_STATES, normalize_reason, normalize_state
from bot.core.slurm.values import (
    default_stdout,
    expand_output_pattern,
    parse_count,
    parse_duration,
    parse_req_mem,
    parse_squeue_exit_code,
    parse_time,
    parse_tres_mem,
)
from bot.core.text import N_

# squeue -O (long format) fields, each written `Field:0|` by the argv builder: width 0 means
# "never cut" and `|` is printed after the field. Name is last so a `|` inside a name lands
# in the name and nowhere else.
SQUEUE_FIELDS: tuple[str, ...] = (
    "JobID", "ArrayJobID", "ArrayTaskID", "State", "Reason", "UserName", "Account", "Partition",
    "QOS", "PriorityLong", "SubmitTime", "StartTime", "EndTime", "TimeLimit", "TimeUsed",
    "NodeList", "MinMemory", "NumCPUs", "NumNodes", "tres-alloc", "RestartCnt", "exit_code",
    "WorkDir", "STDOUT", "Name",
)
SQUEUE_SEPARATOR = "|"


def squeue_argv(
    *,
    json: bool,
    job_ids: Iterable[int] = (),
    user: str | None = None,
    account: str | None = None,
    partition: str | None = None,
    qos: str | None = None,
    states: str = "all",
    fields: Sequence[str] = SQUEUE_FIELDS,
) -> list[str]:
    """argv of one squeue call. With `json` the caller filters (22.05's squeue --json ignores
    every filter and dumps every job, finished ones included); `--states=all` makes 23.02+,
    which honour the state filter, list finished jobs too. Otherwise `--noheader -O
    Field:0|,…` (width 0: never cut)."""
    if json:
        return ["squeue", "--all", "--states=all", "--json"]
    argv = [*TIME_FORMAT_ENV, "squeue", "--all", "--noheader", f"--states={states}"]
    ids = list(job_ids)
    if ids:
        argv.append(f"--jobs={job_ids_arg(ids)}")
    for option, value in (("--user", user), ("--account", account),
                          ("--partition", partition), ("--qos", qos)):
        if value is not None:
            argv.append(f"{option}={check_option_value(option, value)}")
    argv.append("--Format=" + ",".join(f"{f}:0{SQUEUE_SEPARATOR}" for f in fields))
    return argv


def parse_squeue_json(text: str, version: str | None = None) -> dict[int, JobRecord]:
    """All jobs in `squeue --json` output (v0.0.38 of 22.05, v0.0.39-v0.0.42 of later Slurm).

    squeue --json ignores filters, so this returns every job; the caller picks its ids.
    `version` (Slurm's) only sharpens error messages: the shape is recognised per field.
    """
    data = load_json(text, f"squeue (Slurm {version})" if version else "squeue")
    records: dict[int, JobRecord] = {}
    for job in data["jobs"]:
        record = _squeue_json_job(job)
        if record is not None:
            records[record.job_id] = record
    return records


def _squeue_json_job(job: Mapping[str, Any]) -> JobRecord | None:
    job_id = json_number(job.get("job_id"))
    if job_id is None:
        return None
    job_id = int(job_id)
    state = json_state(job.get("job_state"))
    name = json_text(job.get("name"))
    user = json_text(job.get("user_name"))
    node = json_text(job.get("nodes")) or json_text(job.get("batch_host"))
    array_job = json_number(job.get("array_job_id"))
    array_task = json_number(job.get("array_task_id"))
    workdir = json_text(job.get("current_working_directory"))
    array_job_id = int(array_job) if array_job else None
    array_task_id = int(array_task) if array_task is not None else None
    # 25.05 (v0.0.43) adds `stdout_expanded` and leaves `standard_output` empty for the default.
    pattern = json_text(job.get("stdout_expanded")) or json_text(job.get("standard_output"))
    stdout: str | None
    if pattern:
        stdout = expand_output_pattern(
            pattern, job_id=job_id, name=name, user=user, node=node,
            array_job_id=array_job_id, array_task_id=array_task_id, workdir=workdir)
    else:
        stdout = default_stdout(job_id, workdir, array_task_id, array_job_id)
    # exact (22.05: the raw wait status, 35072 for a shell's 137; 24.11: return_code 137),
    # unlike sacct -P's: never exit_code_mod_128 (values.parse_squeue_exit_code)
    exit_code, signal = json_exit(job.get("exit_code"))
    finished = state in FINISHED_STATES
    started = state in RUNNING_STATES or finished
    start = json_epoch(job.get("start_time")) if started else None
    end = json_epoch(job.get("end_time")) if finished else None
    limit_min = json_number(job.get("time_limit"))
    node_count = json_number(job.get("node_count"))
    # The TRES strings hold the job's real total (per-CPU memory x the CPUs it counts, not
    # `cpus`, which includes hyperthreads); `memory_per_node` is only the fallback.
    mem_limit = parse_tres_mem(json_text(job.get("tres_alloc_str"))
                               or json_text(job.get("tres_req_str")),
                               nodes=int(node_count) if node_count else None)
    if not mem_limit and (mem_node := json_number(job.get("memory_per_node"))):
        mem_limit = int(mem_node) * 1024**2
    return JobRecord(
        job_id=job_id,
        name=name,
        user=user,
        account=json_text(job.get("account")),
        partition=json_text(job.get("partition")),
        qos=json_text(job.get("qos")),
        state=state,
        reason=normalize_reason(json_text(job.get("state_reason"))),
        exit_code=exit_code if finished else None,
        signal=signal if finished else None,
        elapsed_s=(end or 0) - start if start and end else None,
        node=node if started else None,
        mem_limit_bytes=mem_limit or None,  # a requested 0 is no limit
        stdout_path=stdout,
        submit_time=json_epoch(job.get("submit_time")),
        start_time=start,
        end_time=end,
        restart_count=int(json_number(job.get("restart_cnt")) or 0),
        time_limit_s=float(limit_min) * 60 if limit_min is not None else None,
        priority=int(p) if (p := json_number(job.get("priority"))) is not None else None,
        workdir=workdir,
        # an array's pending remainder has no task id, only `array_task_string` (`5-9`)
        array_job_id=array_job_id if array_task_id is not None
        or json_text(job.get("array_task_string")) else None,
        array_task_id=array_task_id,
        source="squeue",
    )


def parse_squeue_parsable(text: str, fields: Sequence[str] = SQUEUE_FIELDS) -> dict[int, JobRecord]:
    """Jobs in `squeue --noheader -O <fields>` output built by `squeue_argv(json=False)`.

    A trailing separator (the suffix of the last field) is tolerated.
    """
    out: dict[int, JobRecord] = {}
    n = len(fields)
    cleaned = "\n".join(
        line[:-1] if line.endswith(SQUEUE_SEPARATOR) else line for line in text.splitlines()
    )
    for parts in split_rows(cleaned, n, SQUEUE_SEPARATOR):
        row = {f: v.strip() if f != "Name" else v for f, v in zip(fields, parts, strict=True)}
        record = _squeue_row(row)
        out[record.job_id] = record
    return out


def _squeue_row(row: Mapping[str, str]) -> JobRecord:
    # -O JobID is the raw id, unique per array task (`JobArrayID` would print `123_4`).
    # Outside arrays ArrayJobID == JobID and ArrayTaskID is N/A; an array's pending
    # remainder prints its task range there (`5-9%2`), which is no one task.
    job_id = parse_count(row.get("JobID"))
    if job_id is None:
        raise SlurmParseError(N_("squeue row has no numeric JobID: %(row)s", row=repr(dict(row))))
    array_task = parse_count(row.get("ArrayTaskID"))
    array_job = parse_count(row.get("ArrayJobID"))
    is_array = array_task is not None or _is_task_range(row.get("ArrayTaskID"))
    state = normalize_state(row.get("State"))
    finished = state in FINISHED_STATES
    started = finished or state in RUNNING_STATES
    name = row.get("Name")
    user = row.get("UserName") or None
    node = (row.get("NodeList") or None) if started else None
    workdir = row.get("WorkDir") or None
    pattern = row.get("STDOUT") or None
    stdout = (
        expand_output_pattern(pattern, job_id=job_id, name=name, user=user, node=node,
                              array_job_id=array_job, array_task_id=array_task, workdir=workdir)
        if pattern else default_stdout(job_id, workdir, array_task, array_job)
    )
    start = parse_time(row.get("StartTime")) if started else None
    end = parse_time(row.get("EndTime")) if finished else None
    exit_code, signal = (parse_squeue_exit_code(row.get("exit_code")) if finished
                         else (None, None))
    # MinMemory drops the per-CPU marker (`--mem-per-cpu=512M` on 64 CPUs prints 512M): the
    # TRES string has the job's real total, divided per node; MinMemory is the fallback.
    mem_limit = parse_tres_mem(row.get("tres-alloc"), nodes=parse_count(row.get("NumNodes")))
    if not mem_limit:  # 0: what a pending --mem=0 or --mem-per-gpu job asked, not a limit
        mem_limit = parse_req_mem(row.get("MinMemory")) or None
    return JobRecord(
        job_id=job_id,
        name=name,
        user=user,
        account=row.get("Account") or None,
        partition=row.get("Partition") or None,
        qos=row.get("QOS") or None,
        state=state,
        reason=normalize_reason(row.get("Reason")),
        exit_code=exit_code,
        signal=signal,
        elapsed_s=parse_duration(row.get("TimeUsed")) if started else None,
        node=node,
        mem_limit_bytes=mem_limit,
        stdout_path=stdout,
        submit_time=parse_time(row.get("SubmitTime")),
        start_time=start,
        end_time=end,
        restart_count=parse_count(row.get("RestartCnt")) or 0,
        time_limit_s=parse_duration(row.get("TimeLimit")),
        priority=parse_count(row.get("PriorityLong")),
        workdir=workdir,
        array_job_id=array_job if is_array else None,
        array_task_id=array_task,
        source="squeue",
    )


def _is_task_range(text: str | None) -> bool:
    """True for squeue's ArrayTaskID of a pending remainder: `5-9`, `1,3,7-9%2`."""
    return text is not None and re.fullmatch(r"[0-9][0-9,\-:%]*", text.strip()) is not None


def squeue_ids_by_name_argv(job_name: str, *, user: str | None = None) -> list[str]:
    """argv of `squeue` listing only the raw ids of the queued/running jobs named `job_name`
    (`%A`: one per array task; `%i` would print `123_4`)."""
    user_args = [f"--user={user}"] if user else []
    return ["squeue", "-h", f"--name={job_name}", *user_args, "-o", "%A"]
