"""sacct: the argv of one call for all jobs, and its `--parsable2` and JSON output as records."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.core.slurm.argv import TIME_FORMAT_ENV, job_ids_arg
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.job_ref import split_array_id
from bot.core.slurm.json_fields import json_epoch, json_exit, json_number, json_text, load_json
from bot.core.slurm.parsable import split_rows
from bot.core.slurm.records import JobRecord
from bot.core.slurm.states import (
    FINISHED_STATES,
    RUNNING_STATES,
    cancelled_by,
    normalize_reason,
    normalize_state,
)
from bot.core.slurm.values import (
    MAX_REAL_SIGNAL,
    expand_output_pattern,
    parse_count,
    parse_duration,
    parse_exit_code,
    parse_req_mem,
    parse_rss,
    parse_time,
    parse_tres_mem,
)
from bot.core.slurm.version import FIRST_SACCT_OUTPUT_FIELDS
from bot.core.text import N_

SACCT_FIELDS: tuple[str, ...] = (
    "JobIDRaw", "JobID", "State", "ExitCode", "Reason", "User", "Account", "Partition", "QOS",
    "ElapsedRaw", "NodeList", "NNodes", "MaxRSS", "ReqTRES", "AllocTRES", "AllocCPUS", "Submit",
    "Start", "End", "TimelimitRaw", "WorkDir", "JobName",
)
# The output file patterns (as sbatch got them, `%j` unexpanded): sacct has these fields from
# 23.02 on; 22.05 refuses the whole call (`Invalid field requested: "StdOut"`).
SACCT_OUTPUT_FIELDS: tuple[str, ...] = ("StdOut", "StdErr")


def sacct_fields(release: tuple[int, ...] | None) -> tuple[str, ...]:
    """The `--format` fields for this Slurm release: the output patterns too where sacct has
    them (23.02+); an unknown release gets none (asking would fail the call on 22.05)."""
    if release is None or release[:2] < FIRST_SACCT_OUTPUT_FIELDS:
        return SACCT_FIELDS
    return (*SACCT_FIELDS[:-1], *SACCT_OUTPUT_FIELDS, SACCT_FIELDS[-1])


def sacct_argv(job_ids: Iterable[int], *, json: bool = False,
               fields: Sequence[str] = SACCT_FIELDS) -> list[str]:
    """argv of one sacct call for all `job_ids`, with `-D` so requeued attempts show."""
    ids = job_ids_arg(job_ids)
    if json:
        return ["sacct", "--json", "--duplicates", f"--jobs={ids}"]
    if fields[-1] != "JobName" and "JobName" in fields:
        raise ValueError("JobName must be the last sacct field (names may contain '|')")
    return [*TIME_FORMAT_ENV, "sacct", "--parsable2", "--duplicates", f"--jobs={ids}",
            "--format=" + ",".join(fields)]


@dataclass(frozen=True)
class _SacctRow:
    """One sacct line: the job (step == None) or one of its steps (`batch`, `extern`, `0`)."""

    job_id: int
    step: str | None
    state_text: str | None
    exit_code: int | None
    signal: int | None
    max_rss: int | None
    fields: Mapping[str, Any]


def parse_sacct_parsable(text: str, fields: Sequence[str] | None = None) -> dict[int, JobRecord]:
    """Jobs in `sacct --parsable2 -D` output (job, `.batch`, `.extern` and step rows).

    With a header line (what `sacct_argv` asks for) fields are found by name; without one
    pass `fields`. A job that was requeued has one job row per attempt (`-D`); the last is
    current and the others count as restarts. Each exit code is marked `exit_code_mod_128`:
    sacct prints an exit status of 128 or more less 128 (a shell's 137 as `9:0`).
    """
    lines = text.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if fields is None:
        if not lines:
            return {}
        fields = tuple(lines[0].split("|"))
        lines = lines[1:]
        if "JobName" in fields[:-1]:
            raise SlurmParseError(N_("sacct output must list JobName last (names may hold '|')"))
    if not lines:
        return {}
    rows = []
    for parts in split_rows("\n".join(lines), len(fields), "|"):
        raw = dict(zip(fields, parts, strict=True))
        rows.append(_sacct_parsable_row(raw))
    # sacct's print.c prints an exit status >= 128 less 128 (137 as `9:0`; --json says 137)
    return {job_id: replace(record, exit_code_mod_128=record.exit_code is not None)
            for job_id, record in _assemble_sacct(rows).items()}


def _sacct_parsable_row(raw: Mapping[str, str]) -> _SacctRow:
    id_text = (raw.get("JobIDRaw") or raw.get("JobID") or "").strip()
    # `123`, `123_4`, `123+1` (het component), `123.batch`, `123.0+1` (het step), `2681683_42+`
    match = re.fullmatch(r"(\d+)(?:_[^.]*)?(?:\+\d+)?(?:\.(.+))?\+?", id_text)
    if match is None:
        raise SlurmParseError(N_("sacct row has an unreadable JobID %(id)s", id=repr(id_text)))
    code, signal = parse_exit_code(raw.get("ExitCode"))
    job_id = int(match[1])
    cpus = parse_count(raw.get("AllocCPUS"))
    nodes = parse_count(raw.get("NNodes"))
    elapsed = raw.get("ElapsedRaw")
    fields: dict[str, Any] = {
        "name": raw.get("JobName"),
        "user": raw.get("User") or None,
        "account": raw.get("Account") or None,
        "partition": raw.get("Partition") or None,
        "qos": raw.get("QOS") or None,
        "reason": normalize_reason(raw.get("Reason")),
        "elapsed_s": float(elapsed) if elapsed and elapsed.strip().isdigit()
        else parse_duration(raw.get("Elapsed")),
        "node": raw.get("NodeList") or None,
        # Per node: AllocTRES/ReqTRES `mem=` is the job's total over its nodes.
        "mem_limit_bytes": (
            parse_tres_mem(raw.get("AllocTRES"), nodes=nodes)
            or parse_tres_mem(raw.get("ReqTRES"), nodes=nodes)
            or _lenient_req_mem(raw.get("ReqMem"), cpus)
            or None  # a requested 0 (--mem=0, --mem-per-gpu) is no limit
        ),
        "submit_time": parse_time(raw.get("Submit")),
        "start_time": parse_time(raw.get("Start")),
        "end_time": parse_time(raw.get("End")),
        "time_limit_s": (float(t) * 60 if (t := parse_count(raw.get("TimelimitRaw"))) is not None
                         else parse_duration(raw.get("Timelimit"))),
        "workdir": raw.get("WorkDir") or None,
        **_array_fields(raw.get("JobID")),
    }
    fields["stdout_path"] = _output_path(raw.get("StdOut"), job_id, fields)
    fields["stderr_path"] = _output_path(raw.get("StdErr"), job_id, fields)
    return _SacctRow(
        job_id=job_id,
        step=match[2],
        state_text=raw.get("State"),
        exit_code=code,
        signal=signal,
        max_rss=parse_rss(raw.get("MaxRSS")),
        fields=fields,
    )


def _array_fields(job_id_text: str | None) -> dict[str, int | None]:
    """Array job and task of sacct's JobID (`123_4`, `123_[5-9%2]` for a pending remainder);
    JobIDRaw is the task's own id, so only JobID says which array task a row is."""
    array_job, task = split_array_id(job_id_text) or (None, None)
    return {"array_job_id": array_job, "array_task_id": task}


def _lenient_req_mem(text: str | None, cpus: int | None) -> int | None:
    """ReqMem, or None when sacct prints something odd there (seen: `16?` while a job starts)."""
    try:
        return parse_req_mem(text, cpus=cpus)
    except SlurmParseError:
        return None


def _assemble_sacct(rows: Iterable[_SacctRow]) -> dict[int, JobRecord]:
    """Group rows into attempts (one per job row), keep the last attempt, fold its steps in."""
    attempts: dict[int, list[tuple[_SacctRow, list[_SacctRow]]]] = {}
    for row in rows:
        if row.step is None:
            attempts.setdefault(row.job_id, []).append((row, []))
        elif row.job_id in attempts:
            attempts[row.job_id][-1][1].append(row)
        # a step whose job row is missing (sacct lag) is dropped: nothing to attach it to
    # The current attempt is the latest submitted (requeue resubmits); ties keep output order.
    return {
        job_id: _sacct_record(sorted(history, key=lambda a: a[0].fields.get("submit_time") or 0))
        for job_id, history in attempts.items()
    }


def _step_exit(state: str | None, job: _SacctRow, steps: Sequence[_SacctRow]) -> tuple[
        int | None, int | None]:
    """The job row's code:signal, unless it hides the cause and a step has a real one.

    `TIMEOUT 0:0` with `.batch CANCELLED 0:15` -> signal 15; `OUT_OF_MEMORY 0:125` (125 is
    Slurm's SIG_OOM, not a signal) with a step `0:9` -> 9. A clean COMPLETED 0:0 is trusted.
    """
    code, signal = job.exit_code, job.signal
    hides = (code == 0 and signal == 0) or (signal is not None and signal > MAX_REAL_SIGNAL)
    if state == "COMPLETED" or not hides:
        return code, signal
    ordered = sorted(
        (s for s in steps if s.step != "extern"),
        key=lambda s: (s.step != "batch", s.step or ""),
    )
    for step in ordered:
        real_signal = step.signal is not None and 0 < step.signal <= MAX_REAL_SIGNAL
        if step.exit_code or real_signal:
            return step.exit_code, step.signal
    return code, signal


def _sacct_record(history: Sequence[tuple[_SacctRow, list[_SacctRow]]]) -> JobRecord:
    job, steps = history[-1]
    state = normalize_state(job.state_text)
    code, signal = _step_exit(state, job, steps)
    rss_values = [s.max_rss for s in steps if s.max_rss is not None]
    if job.max_rss is not None:
        rss_values.append(job.max_rss)
    f = job.fields
    mem_limit = f["mem_limit_bytes"]
    if mem_limit is None:
        mem_limit = next((s.fields["mem_limit_bytes"] for s in steps
                          if s.fields["mem_limit_bytes"] is not None), None)
    finished = state in FINISHED_STATES
    started = finished or state in RUNNING_STATES
    requeues = len(history) - 1  # every earlier job row is an attempt that was requeued
    return JobRecord(
        job_id=job.job_id,
        name=f["name"],
        user=f["user"],
        account=f["account"],
        partition=f["partition"],
        qos=f["qos"],
        state=state,
        reason=f["reason"],
        exit_code=code if finished else None,
        signal=signal if finished else None,
        elapsed_s=f["elapsed_s"] if started else None,
        node=f["node"] if started and f["node"] != "None assigned" else None,
        max_rss_bytes=max(rss_values) if rss_values else None,
        mem_limit_bytes=mem_limit,
        submit_time=f["submit_time"],
        start_time=f["start_time"] if started else None,
        end_time=f["end_time"] if finished else None,
        restart_count=requeues,
        time_limit_s=f["time_limit_s"],
        workdir=f["workdir"],
        array_job_id=f.get("array_job_id"),
        array_task_id=f.get("array_task_id"),
        stdout_path=f.get("stdout_path"),
        stderr_path=f.get("stderr_path"),
        cancelled_by=cancelled_by(job.state_text),
        step_states=tuple((s.step or "", normalize_state(s.state_text) or "") for s in steps),
        source="sacct",
    )


def parse_sacct_json(text: str) -> dict[int, JobRecord]:
    """Jobs in `sacct --json` output (dbv0.0.38 of 22.05; v0.0.39+ shapes as well).

    Caveat (22.05.8): a non-zero exit shows `exit_code.return_code = 0` with state FAILED.
    When the job is FAILED but every exit code reads 0:0 the exit code is reported as None
    (unknown) rather than a misleading 0; the parsable path has the right number.
    """
    data = load_json(text, "sacct")
    rows: list[_SacctRow] = []
    for job in data["jobs"]:
        rows.extend(_sacct_json_rows(job))
    records = _assemble_sacct(rows)
    fixed = {}
    for job_id, record in records.items():
        if record.state == "FAILED" and record.exit_code == 0 and not record.signal:
            record = replace(record, exit_code=None, signal=None)
        fixed[job_id] = record
    return fixed


def _tres_count(tres_list: Any, kind: str) -> int | None:
    """The count of the `kind` entry in a TRES list (`[{"type": "mem", "count": 123}]`).

    Units are Slurm's: an allocation's `mem` is MiB, a usage's (`tres.requested.max`) bytes.
    """
    if not isinstance(tres_list, list):
        return None
    for item in tres_list:
        if isinstance(item, dict) and item.get("type") == kind:
            count = json_number(item.get("count"))
            return int(count) if count is not None else None
    return None


MEM_PER_CPU_FLAG = 1 << 63  # dbv0.0.38 `required.memory` is per CPU when this bit is set


def _json_mem_limit(job: Mapping[str, Any]) -> int | None:
    """Bytes of the job's memory limit per node from sacct --json: the allocated TRES `mem`
    (MiB, the total over the job's nodes), else what it required: per node, or per CPU x
    its CPUs (spread over its nodes)."""
    allocated = (job.get("tres") or {}).get("allocated")
    nodes = (_tres_count(allocated, "node") or json_number(job.get("allocation_nodes"))
             or 1)
    total_mib = _tres_count(allocated, "mem")
    if total_mib:
        return total_mib * 1024**2 // int(nodes)
    required = job.get("required") or {}
    cpus = json_number(required.get("CPUs", required.get("cpus")))
    per_node = json_number(required.get("memory_per_node"))
    per_cpu = json_number(required.get("memory_per_cpu"))
    legacy = json_number(required.get("memory"))  # dbv0.0.38
    if legacy and int(legacy) & MEM_PER_CPU_FLAG:
        per_cpu = int(legacy) & ~MEM_PER_CPU_FLAG
    elif legacy and not per_node:
        per_node = legacy
    if per_node:
        return int(per_node) * 1024**2
    if per_cpu and cpus:
        return int(per_cpu) * int(cpus) * 1024**2 // int(nodes)
    return None


def _json_array_fields(array: Any) -> dict[str, int | None]:
    """Array job and task of a sacct --json job (`array.job_id` 0 outside arrays; no
    `task_id` for a pending remainder, whose range is in `array.task`)."""
    if not isinstance(array, dict):
        return {"array_job_id": None, "array_task_id": None}
    array_job = json_number(array.get("job_id"))
    task = json_number(array.get("task_id"))
    if not array_job or (task is None and not json_text(array.get("task"))):
        return {"array_job_id": None, "array_task_id": None}
    return {"array_job_id": int(array_job), "array_task_id": int(task) if task is not None
            else None}


def _sacct_json_rows(job: Mapping[str, Any]) -> list[_SacctRow]:
    job_id = json_number(job.get("job_id"))
    if job_id is None:
        return []
    state_obj = job.get("state") or {}
    current = state_obj.get("current") if isinstance(state_obj, dict) else state_obj
    state_text = current[0] if isinstance(current, list) and current else current
    times = job.get("time") or {}
    mem_limit = _json_mem_limit(job)
    limit = json_number(times.get("limit"))
    elapsed = json_number(times.get("elapsed"))
    code, signal = json_exit(job.get("exit_code"))
    association = job.get("association") or {}
    fields = {
        "name": json_text(job.get("name")),
        "user": json_text(job.get("user")) or json_text(association.get("user")),
        "account": json_text(job.get("account")) or json_text(association.get("account")),
        "partition": json_text(job.get("partition")),
        "qos": json_text(job.get("qos")),
        "reason": normalize_reason(json_text(state_obj.get("reason")) if isinstance(state_obj, dict)
                                   else None),
        "elapsed_s": float(elapsed) if elapsed is not None else None,
        "node": json_text(job.get("nodes")),
        "mem_limit_bytes": mem_limit,
        "submit_time": json_epoch(times.get("submission")),
        "start_time": json_epoch(times.get("start")),
        "end_time": json_epoch(times.get("end")),
        "time_limit_s": float(limit) * 60 if limit is not None else None,
        "workdir": json_text(job.get("working_directory")),
        **_json_array_fields(job.get("array")),
    }
    fields["stdout_path"] = _json_output(job, "stdout", int(job_id), fields)
    fields["stderr_path"] = _json_output(job, "stderr", int(job_id), fields)
    rows = [_SacctRow(int(job_id), None, json_text(state_text), code, signal, None, fields)]
    for step in job.get("steps") or []:
        rows.append(_sacct_json_step(int(job_id), step))
    return rows


def _json_output(job: Mapping[str, Any], key: str, job_id: int,
                 fields: Mapping[str, Any]) -> str | None:
    """The job's output (`key` "stdout") or error file as sacct's JSON gives it from 23.02 on
    (`stdout_expanded`, else the `stdout` pattern expanded like slurmstepd); None where it
    gives none (22.05): then the watcher uses the path it followed the job's log at while
    squeue knew it."""
    expanded = json_text(job.get(f"{key}_expanded"))
    if expanded:
        return expanded
    return _output_path(json_text(job.get(key)), job_id, fields)


def _output_path(pattern: str | None, job_id: int, fields: Mapping[str, Any]) -> str | None:
    """An output pattern sacct printed (`/home/u/%x-%j.out`: StdOut, StdErr, the JSON's
    `stdout`) expanded like slurmstepd does for the batch step, with the job's row; None for
    none (a step's row, 22.05)."""
    if not pattern or not pattern.strip():
        return None
    return expand_output_pattern(pattern.strip(), job_id=job_id, name=fields["name"],
                                 user=fields["user"], node=fields["node"],
                                 array_job_id=fields["array_job_id"],
                                 array_task_id=fields["array_task_id"],
                                 workdir=fields["workdir"])


def _sacct_json_step(job_id: int, step: Mapping[str, Any]) -> _SacctRow:
    ident = step.get("step") or {}
    name = None
    if isinstance(ident, dict):
        raw_id = ident.get("id")
        if isinstance(raw_id, str | int) and str(raw_id):
            # v0.0.38: "batch" / "0"; v0.0.39+: "123.batch". `name` is the command, not the id.
            name = str(raw_id).split(".", 1)[-1]
        elif isinstance(raw_id, dict):
            name = json_text(raw_id.get("step_id"))
        name = name or json_text(ident.get("name"))
    state_val = step.get("state")
    state_text = state_val[0] if isinstance(state_val, list) and state_val else state_val
    code, signal = json_exit(step.get("exit_code"))
    tres = step.get("tres") or {}
    requested = tres.get("requested") or {}
    rss = _tres_count(requested.get("max"), "mem")  # usage: bytes
    return _SacctRow(job_id, name or "?", json_text(state_text), code, signal, rss,
                     {"mem_limit_bytes": None})


def sacct_ids_by_name_argv(job_name: str, *, user: str | None = None,
                           since: str = "now-7days") -> list[str]:
    """argv of `sacct` listing only the raw ids of the jobs named `job_name` submitted `since`
    (`JobIDRaw`: one per array task; `JobID` would print `123_4`)."""
    user_args = [f"--user={user}"] if user else []
    return ["sacct", "-X", "-n", "-P", f"--name={job_name}", *user_args, "-S", since,
            "-o", "JobIDRaw"]
