"""What squeue and sacct say about jobs, as typed records; plus the argv of every Slurm command.

Pure: no I/O, no clock. The cluster adapter (`bot.cluster.slurm`) runs the argv built here
through the SSH runner and hands the text back to the parsers here.

Facts this module is built around (Slurm 22.05 on the dev cluster, newer shapes by hand):
- `squeue --json` ignores every filter and dumps all jobs; callers filter the dict we return.
  In openapi v0.0.38 `job_state` is a string, `exit_code` the raw wait status and
  `standard_output` the unexpanded pattern; v0.0.40+ use lists and `{set, number}` objects.
- sacct's job row and its step rows disagree (`TIMEOUT 0:0` with `.batch CANCELLED 0:15`,
  `OUT_OF_MEMORY 0:125`); `CANCELLED by 1000` is `CANCELLED`; cut columns end in `+`.
- `sacct --json` in 22.05 reports `exit 3` as return_code 0; the parsable path is the one
  that gets exit codes right there (see `parse_sacct_json`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from typing import Any

from bot.core.models import Accounting
from bot.core.units import parse_size

# --------------------------------------------------------------------------------------------
# States and reasons
# --------------------------------------------------------------------------------------------

PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING_STATES = frozenset(
    {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT",
     "RESIZING", "POWER_UP_NODE", "UPDATE_DB"}
)
FINISHED_STATES = frozenset(
    {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
     "PREEMPTED", "TIMEOUT", "REVOKED", "SPECIAL_EXIT"}
)
KNOWN_STATES = PENDING_STATES | RUNNING_STATES | FINISHED_STATES
HELD_REASONS = frozenset({"JobHeldAdmin", "JobHeldUser"})
# Reasons worth recognising when a narrow column cut them (`JobHeldA+`).
KNOWN_REASONS = HELD_REASONS | frozenset(
    {"Resources", "Priority", "BeginTime", "Dependency", "DependencyNeverSatisfied", "None",
     "NonZeroExitCode", "TimeLimit", "ReqNodeNotAvail", "PartitionTimeLimit",
     "QOSMaxJobsPerUserLimit", "AssocGrpCpuLimit", "InvalidAccount", "InvalidQOS",
     "launch failed requeued held", "Prolog", "JobLaunchFailure", "OutOfMemory",
     "SystemFailure", "Reservation"}
)

NO_VAL = 0xFFFFFFFE  # Slurm's "not set" for 32-bit fields
INFINITE = 0xFFFFFFFF
NO_VAL64 = 0xFFFFFFFFFFFFFFFE
INFINITE64 = 0xFFFFFFFFFFFFFFFF
MAX_REAL_SIGNAL = 64  # above this a "signal" is a Slurm pseudo-signal, e.g. 125 = SIG_OOM & 0x7f


class SlurmParseError(ValueError):
    """Slurm printed something this parser does not understand; the message quotes it."""


class SlurmReportedError(SlurmParseError):
    """`--json` output that carries Slurm's own errors and no jobs (e.g. slurmctld down:
    squeue exits 0 with `"errors": [{"error": "Unspecified error", "source":
    "slurm_load_jobs"}]`). It is not an empty answer: the caller must not read "no jobs"."""

    def __init__(self, message: str, errors: list[Any]):
        super().__init__(message)
        self.errors = errors


def normalize_state(text: str | None) -> str | None:
    """First word of a Slurm state, upper-cased, with a cut column (`OUT_OF_ME+`) completed.

    `CANCELLED by 1000` -> `CANCELLED`; `["PENDING", "REQUEUED"]` is handled by callers.
    """
    if text is None:
        return None
    word = text.strip().split(" ", 1)[0].upper() if text.strip() else ""
    if not word:
        return None
    if word.endswith("+"):
        stem = word.rstrip("+")
        matches = sorted(s for s in KNOWN_STATES if s.startswith(stem))
        return matches[0] if len(matches) == 1 else stem
    return word


def _cancelled_by(text: str | None) -> int | None:
    """The uid in `CANCELLED by 1000` (None when absent or cut)."""
    if not text:
        return None
    match = re.match(r"\s*CANCELLED\s+by\s+(\d+)\s*$", text, re.IGNORECASE)
    return int(match[1]) if match else None


def normalize_reason(text: str | None) -> str | None:
    """Pending reason as Slurm names it; a cut `JobHeldA+` is completed, `(null)`/empty -> None.

    Keeps `None` (the string) because Slurm uses it for "no reason" on running jobs.
    """
    if text is None:
        return None
    value = text.strip()
    if value.startswith("(") and value.endswith(")") and value != "(null)":
        value = value[1:-1]  # squeue's default format wraps the reason in parentheses
    if not value or value in {"(null)", "n/a"}:
        return None
    if value.endswith("+"):
        stem = value.rstrip("+")
        matches = sorted(r for r in KNOWN_REASONS if r.startswith(stem))
        return matches[0] if len(matches) == 1 else stem
    return value


# --------------------------------------------------------------------------------------------
# Scalars: durations, sizes, timestamps, exit codes
# --------------------------------------------------------------------------------------------

_DURATION_RE = re.compile(
    r"^(?:(?P<days>\d+)-)?(?:(?P<h>\d+):)??(?:(?P<m>\d+):)?(?P<s>\d+(?:\.\d+)?)$"
)


def parse_duration(text: str | None) -> float | None:
    """Seconds in a Slurm duration: `1-02:03:04`, `02:03:04`, `03:04`, `00:01.234`, `5-00`.

    `UNLIMITED`, `INVALID`, `Partition_Limit`, `NOT_SET` and empty give None. A Slurm
    `[D-]HH` form (`5-00`) is days-hours, as sbatch --time reads it.
    """
    if text is None:
        return None
    value = text.strip()
    if not value or value.upper() in {"UNLIMITED", "INVALID", "PARTITION_LIMIT", "NOT_SET",
                                      "N/A", "NONE"}:
        return None
    days = 0
    if "-" in value:
        day_text, value = value.split("-", 1)
        if not day_text.isdigit():
            raise SlurmParseError(f"{text!r} is not a Slurm duration ([D-]HH:MM:SS)")
        days = int(day_text)
        parts = value.split(":")
        if len(parts) == 1:  # D-HH
            parts = [parts[0], "0", "0"]
        elif len(parts) == 2:  # D-HH:MM
            parts = [*parts, "0"]
    else:
        parts = value.split(":")
    try:
        numbers = [float(p) for p in parts]
    except ValueError as exc:
        raise SlurmParseError(f"{text!r} is not a Slurm duration ([D-]HH:MM:SS)") from exc
    if not 1 <= len(numbers) <= 3 or any(n < 0 for n in numbers):
        raise SlurmParseError(f"{text!r} is not a Slurm duration ([D-]HH:MM:SS)")
    seconds = 0.0
    for n in numbers:
        seconds = seconds * 60 + n
    return days * 86400 + seconds


def format_duration(seconds: float) -> str:
    """Seconds as Slurm's `[D-]HH:MM:SS` (what `--time` accepts)."""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def parse_rss(text: str | None) -> int | None:
    """Bytes in a sacct size (`123456K`, `1.50G`, `0`); a bare number is bytes, as sacct means."""
    if text is None or not text.strip():
        return None
    value = text.strip().rstrip("+")
    try:
        return parse_size(value, default_unit="B")
    except ValueError as exc:
        raise SlurmParseError(f"{text!r} is not a sacct size (e.g. 123456K)") from exc


def parse_req_mem(text: str | None, cpus: int | None = None) -> int | None:
    """Bytes of the memory limit in sacct's ReqMem / squeue's MinMemory.

    `100M` and `100Mn` are per node; `256Mc` is per CPU and multiplied by `cpus` when known
    (None when not: a per-CPU figure is not the job's limit).
    """
    if text is None:
        return None
    value = text.strip()
    if not value or value in {"0", "0n", "0c", "N/A"}:
        return None
    per_cpu = value.endswith("c")
    if value[-1:] in {"c", "n"}:
        value = value[:-1]
    try:
        amount = parse_size(value, default_unit="M")
    except ValueError as exc:
        raise SlurmParseError(f"{text!r} is not a Slurm memory request (e.g. 100M)") from exc
    if per_cpu:
        return amount * cpus if cpus else None
    return amount


def parse_time(text: str | None, tz: tzinfo = UTC) -> float | None:
    """Epoch seconds of a Slurm timestamp: epoch digits (SLURM_TIME_FORMAT=%s) or ISO.

    `Unknown`, `None`, `N/A` and 0 give None. An ISO time without an offset is read in `tz`
    (the cluster's zone; trainbot asks for `%s` so this only matters for hand-run output).
    """
    if text is None:
        return None
    value = text.strip()
    if not value or value in {"Unknown", "None", "N/A", "(null)"}:
        return None
    if re.fullmatch(r"\d+", value):
        number = int(value)
        return float(number) if 0 < number < NO_VAL else None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError as exc:
        raise SlurmParseError(f"{text!r} is not a Slurm timestamp") from exc
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=tz)
    return stamp.timestamp()


def parse_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """`code:signal` as sacct prints ExitCode (`3:0`, `0:9`, `0:125`) -> (code, signal)."""
    if text is None or not text.strip():
        return None, None
    match = re.fullmatch(r"\s*(\d+):(\d+)\s*", text)
    if match is None:
        raise SlurmParseError(f"{text!r} is not an ExitCode (code:signal)")
    return int(match[1]), int(match[2])


def decode_wait_status(status: int) -> tuple[int, int]:
    """(exit code, signal) from a raw wait status, as squeue --json v0.0.38 reports it."""
    signal = status & 0x7F
    if signal:
        return 0, signal
    return (status >> 8) & 0xFF, 0


# --------------------------------------------------------------------------------------------
# Output path patterns
# --------------------------------------------------------------------------------------------

_PATTERN_RE = re.compile(r"%(\d*)([%AaJjNnstux])")


def expand_output_pattern(
    pattern: str,
    *,
    job_id: int,
    name: str | None = None,
    user: str | None = None,
    node: str | None = None,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
    workdir: str | None = None,
) -> str:
    """Expand sbatch's `-o` filename pattern the way slurmstepd does for the batch step.

    `%x` name, `%j`/`%J` job id, `%u` user, `%A` array master id (the job id outside arrays),
    `%a` array index (4294967294 outside arrays, as Slurm writes it), `%N` first node,
    `%n`/`%t` 0, `%s` `batch`, `%%` a percent; `%5j` zero-pads. A field whose value is not
    known yet (`%N` while pending) stays as written. A pattern with a backslash is literal
    (Slurm's rule). Relative paths are joined to `workdir`.
    """
    if "\\" in pattern:
        path = pattern.replace("\\", "")
    else:
        values: dict[str, str | None] = {
            "%": "%",
            "A": str(array_job_id if array_job_id else job_id),
            "a": str(array_task_id if array_task_id is not None else NO_VAL),
            "J": str(job_id),
            "j": str(job_id),
            "N": node.split(",")[0] if node else None,
            "n": "0",
            "s": "batch",
            "t": "0",
            "u": user,
            "x": name,
        }

        def _sub(match: re.Match[str]) -> str:
            width, key = match[1], match[2]
            value = values[key]
            if value is None or key == "%":
                return match[0] if value is None else "%"
            if width and value.isdigit():
                return value.zfill(int(width))
            return value

        path = _PATTERN_RE.sub(_sub, pattern)
    if workdir and not path.startswith("/"):
        path = workdir.rstrip("/") + "/" + path
    return path


def default_stdout(job_id: int, workdir: str | None, array_task_id: int | None = None,
                   array_job_id: int | None = None) -> str | None:
    """Where sbatch writes output when no `-o` was given: `<workdir>/slurm-%j.out`."""
    if not workdir:
        return None
    if array_task_id is not None and array_job_id:
        return f"{workdir.rstrip('/')}/slurm-{array_job_id}_{array_task_id}.out"
    return f"{workdir.rstrip('/')}/slurm-{job_id}.out"


# --------------------------------------------------------------------------------------------
# The record
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobRecord:
    """Everything trainbot knows about one Slurm job after one squeue + one sacct call.

    `state` is the first word (`CANCELLED by 0` -> `CANCELLED`, uid in `cancelled_by`);
    `exit_code`/`signal` come from sacct's `code:signal`, corrected from the steps where the
    job row hides the cause (see `parse_sacct_parsable`). Times are epoch seconds. `source`
    says which command(s) knew the job: `squeue`, `sacct` or `squeue+sacct`.
    """

    job_id: int
    name: str | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    qos: str | None = None
    state: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    elapsed_s: float | None = None
    node: str | None = None
    max_rss_bytes: int | None = None
    mem_limit_bytes: int | None = None
    stdout_path: str | None = None
    submit_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    restart_count: int = 0
    time_limit_s: float | None = None
    priority: int | None = None
    workdir: str | None = None
    cancelled_by: int | None = None
    step_states: tuple[tuple[str, str], ...] = ()  # (step, state), e.g. ("batch", "CANCELLED")
    source: str = ""

    @property
    def is_pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def is_running(self) -> bool:
        return self.state in RUNNING_STATES

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def is_held(self) -> bool:
        """Held by a user or an admin: it will not start until someone releases it."""
        return self.state == "REQUEUE_HOLD" or (self.is_pending and self.reason in HELD_REASONS)

    def accounting(self) -> Accounting:
        """The subset diagnosis needs (bot.core.models.Accounting)."""
        return Accounting(
            state=self.state,
            exit_code=self.exit_code,
            signal=self.signal,
            elapsed_s=self.elapsed_s,
            mem_limit_bytes=self.mem_limit_bytes,
            max_rss_bytes=self.max_rss_bytes,
        )


@dataclass(frozen=True)
class SlurmInfo:
    """What the cluster's Slurm can do: its version and whether `--json` output works."""

    version: str
    has_json: bool

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.version)


def parse_version(text: str) -> tuple[int, ...]:
    """(22, 5, 8) from `slurm 22.05.8` / `slurm-wlm 22.05.8` / `22.05.8-4+deb12u3`."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise SlurmParseError(f"{text.strip()!r} does not contain a Slurm version (e.g. 22.05.8)")
    return tuple(int(g) for g in match.groups() if g is not None)


# --------------------------------------------------------------------------------------------
# JSON helpers (v0.0.38 plain values, v0.0.40+ {set, infinite, number} objects)
# --------------------------------------------------------------------------------------------


def _num(value: Any) -> int | float | None:
    """A number from either schema; unset, infinite, NO_VAL and INFINITE give None."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        if value in (NO_VAL, INFINITE, NO_VAL64, INFINITE64) or value < 0:
            return None
        return value
    if isinstance(value, str) and re.fullmatch(r"\d+", value):
        return _num(int(value))
    return None


def _epoch(value: Any) -> float | None:
    number = _num(value)
    return float(number) if number else None  # 0 means "not yet"


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):  # v0.0.40 flags-style lists
        value = value[0] if value else None
        return _str(value)
    text = str(value)
    return text if text and text != "(null)" else None


def _json_state(value: Any) -> str | None:
    """`job_state` is `"PENDING"` in v0.0.38 and `["PENDING", "REQUEUED"]` later."""
    if isinstance(value, list):
        base = [normalize_state(v) for v in value if isinstance(v, str)]
        base = [b for b in base if b]
        # The first entry is the base state; flags such as REQUEUED/COMPLETING follow.
        return base[0] if base else None
    return normalize_state(value) if isinstance(value, str) else None


def _load_json(text: str, command: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        head = text.strip()[:200]
        raise SlurmParseError(f"{command} --json printed something that is not JSON: {head!r}")\
            from exc
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise SlurmParseError(f"{command} --json output has no 'jobs' list")
    errors = [e for e in data.get("errors") or [] if e]
    if errors and not data["jobs"]:
        raise SlurmReportedError(f"{command} --json reported errors: {errors!r}", errors)
    return data


# --------------------------------------------------------------------------------------------
# squeue
# --------------------------------------------------------------------------------------------


def parse_squeue_json(text: str, version: str | None = None) -> dict[int, JobRecord]:
    """All jobs in `squeue --json` output (v0.0.38 of 22.05, v0.0.39-v0.0.42 of later Slurm).

    squeue --json ignores filters, so this returns every job; the caller picks its ids.
    `version` (Slurm's) only sharpens error messages: the shape is recognised per field.
    """
    data = _load_json(text, f"squeue (Slurm {version})" if version else "squeue")
    records: dict[int, JobRecord] = {}
    for job in data["jobs"]:
        record = _squeue_json_job(job)
        if record is not None:
            records[record.job_id] = record
    return records


def _json_exit(value: Any) -> tuple[int | None, int | None]:
    """Exit code and signal from squeue's `exit_code`: raw wait status or a v0.0.39+ object."""
    if isinstance(value, dict):
        code = _num(value.get("return_code"))
        signal_obj = value.get("signal") or {}
        signal = _num(signal_obj.get("id") if "id" in signal_obj else signal_obj.get("signal_id"))
        return (int(code) if code is not None else None, int(signal) if signal else 0)
    number = _num(value)
    if number is None:
        return None, None
    return decode_wait_status(int(number))


def _squeue_json_job(job: Mapping[str, Any]) -> JobRecord | None:
    job_id = _num(job.get("job_id"))
    if job_id is None:
        return None
    job_id = int(job_id)
    state = _json_state(job.get("job_state"))
    name = _str(job.get("name"))
    user = _str(job.get("user_name"))
    node = _str(job.get("nodes")) or _str(job.get("batch_host"))
    array_job = _num(job.get("array_job_id"))
    array_task = _num(job.get("array_task_id"))
    workdir = _str(job.get("current_working_directory"))
    pattern = _str(job.get("standard_output"))
    if pattern:
        stdout = expand_output_pattern(
            pattern, job_id=job_id, name=name, user=user, node=node,
            array_job_id=int(array_job) if array_job else None,
            array_task_id=int(array_task) if array_task is not None else None, workdir=workdir)
    else:
        stdout = default_stdout(job_id, workdir)
    exit_code, signal = _json_exit(job.get("exit_code"))
    finished = state in FINISHED_STATES
    started = state in RUNNING_STATES or finished
    start = _epoch(job.get("start_time")) if started else None
    end = _epoch(job.get("end_time")) if finished else None
    limit_min = _num(job.get("time_limit"))
    cpus = _num(job.get("cpus"))
    mem_node = _num(job.get("memory_per_node"))
    mem_cpu = _num(job.get("memory_per_cpu"))
    mem_limit = None
    if mem_node:
        mem_limit = int(mem_node) * 1024**2
    elif mem_cpu and cpus:
        mem_limit = int(mem_cpu) * int(cpus) * 1024**2
    return JobRecord(
        job_id=job_id,
        name=name,
        user=user,
        account=_str(job.get("account")),
        partition=_str(job.get("partition")),
        qos=_str(job.get("qos")),
        state=state,
        reason=normalize_reason(_str(job.get("state_reason"))),
        exit_code=exit_code if finished else None,
        signal=signal if finished else None,
        elapsed_s=(end or 0) - start if start and end else None,
        node=node if started else None,
        mem_limit_bytes=mem_limit,
        stdout_path=stdout,
        submit_time=_epoch(job.get("submit_time")),
        start_time=start,
        end_time=end,
        restart_count=int(_num(job.get("restart_cnt")) or 0),
        time_limit_s=float(limit_min) * 60 if limit_min is not None else None,
        priority=int(p) if (p := _num(job.get("priority"))) is not None else None,
        workdir=workdir,
        source="squeue",
    )


# squeue -O (long format) fields, each written `Field:0|` by the argv builder: width 0 means
# "never cut" and `|` is printed after the field. Name is last so a `|` inside a name lands
# in the name and nowhere else.
SQUEUE_FIELDS: tuple[str, ...] = (
    "JobID", "ArrayJobID", "ArrayTaskID", "State", "Reason", "UserName", "Account", "Partition",
    "QOS", "PriorityLong", "SubmitTime", "StartTime", "EndTime", "TimeLimit", "TimeUsed",
    "NodeList", "MinMemory", "NumCPUs", "RestartCnt", "exit_code", "WorkDir", "STDOUT", "Name",
)
SQUEUE_SEPARATOR = "|"


def _split_rows(text: str, n_fields: int, sep: str = SQUEUE_SEPARATOR) -> list[list[str]]:
    """Rows of `sep`-separated output whose last field (a job name) may hold `sep` or newlines.

    A physical line that does not start like a row (`<digits>` then a separator) continues the
    previous row's last field, so a name with a newline stays one row.
    """
    rows: list[list[str]] = []
    row_start = re.compile(r"^\d+(?:_\d+|_\[[^\]]*\])?(?:\+\d+)?(?:\.[\w-]+)?" + re.escape(sep))
    for line in text.splitlines():
        if not line.strip() and not rows:
            continue
        if rows and not row_start.match(line):
            rows[-1][-1] += "\n" + line
            continue
        parts = line.split(sep)
        if len(parts) > n_fields:  # separator inside the last (name) field
            parts = [*parts[: n_fields - 1], sep.join(parts[n_fields - 1 :])]
        rows.append(parts)
    for row in rows:
        if len(row) < n_fields:
            raise SlurmParseError(
                f"expected {n_fields} '{sep}'-separated fields, got {len(row)}: {sep.join(row)!r}"
            )
    return rows


def parse_squeue_parsable(text: str, fields: Sequence[str] = SQUEUE_FIELDS) -> dict[int, JobRecord]:
    """Jobs in `squeue --noheader -O <fields>` output built by `squeue_argv(json=False)`.

    A trailing separator (the suffix of the last field) is tolerated.
    """
    out: dict[int, JobRecord] = {}
    n = len(fields)
    cleaned = "\n".join(
        line[:-1] if line.endswith(SQUEUE_SEPARATOR) else line for line in text.splitlines()
    )
    for parts in _split_rows(cleaned, n):
        row = {f: v.strip() if f != "Name" else v for f, v in zip(fields, parts, strict=True)}
        record = _squeue_row(row)
        out[record.job_id] = record
    return out


def _opt_int(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip()
    if not re.fullmatch(r"\d+", value):
        return None
    number = int(value)
    return None if number in (NO_VAL, INFINITE, NO_VAL64, INFINITE64) else number


def _squeue_row(row: Mapping[str, str]) -> JobRecord:
    job_id = _opt_int(row.get("JobID", "").split("_")[0])
    if job_id is None:
        raise SlurmParseError(f"squeue row has no numeric JobID: {dict(row)!r}")
    # JobID prints `123_4` for array elements; the raw id of the element is not in -O, but
    # ArrayJobID/ArrayTaskID are. Outside arrays ArrayJobID == JobID and ArrayTaskID is N/A.
    array_task = _opt_int(row.get("ArrayTaskID"))
    array_job = _opt_int(row.get("ArrayJobID"))
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
        if pattern else default_stdout(job_id, workdir)
    )
    start = parse_time(row.get("StartTime")) if started else None
    end = parse_time(row.get("EndTime")) if finished else None
    cpus = _opt_int(row.get("NumCPUs"))
    status = _opt_int(row.get("exit_code"))  # raw wait status, as in squeue --json v0.0.38
    exit_code, signal = decode_wait_status(status) if status is not None and finished else (
        None, None)
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
        mem_limit_bytes=parse_req_mem(row.get("MinMemory"), cpus=cpus),
        stdout_path=stdout,
        submit_time=parse_time(row.get("SubmitTime")),
        start_time=start,
        end_time=end,
        restart_count=_opt_int(row.get("RestartCnt")) or 0,
        time_limit_s=parse_duration(row.get("TimeLimit")),
        priority=_opt_int(row.get("PriorityLong")),
        workdir=workdir,
        source="squeue",
    )


# --------------------------------------------------------------------------------------------
# sacct
# --------------------------------------------------------------------------------------------

SACCT_FIELDS: tuple[str, ...] = (
    "JobIDRaw", "JobID", "State", "ExitCode", "Reason", "User", "Account", "Partition", "QOS",
    "ElapsedRaw", "NodeList", "MaxRSS", "ReqTRES", "AllocTRES", "AllocCPUS", "Submit", "Start",
    "End", "TimelimitRaw", "WorkDir", "JobName",
)


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
    current and the others count as restarts.
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
            raise SlurmParseError("sacct output must list JobName last (names may hold '|')")
    if not lines:
        return {}
    rows = []
    for parts in _split_rows("\n".join(lines), len(fields), sep="|"):
        raw = dict(zip(fields, parts, strict=True))
        rows.append(_sacct_parsable_row(raw))
    return _assemble_sacct(rows)


def _sacct_parsable_row(raw: Mapping[str, str]) -> _SacctRow:
    id_text = (raw.get("JobIDRaw") or raw.get("JobID") or "").strip()
    match = re.fullmatch(r"(\d+)(?:_[^.]*)?(?:\+\d+)?(?:\.(.+))?\+?", id_text)
    if match is None:
        raise SlurmParseError(f"sacct row has an unreadable JobID {id_text!r}")
    code, signal = parse_exit_code(raw.get("ExitCode"))
    cpus = _opt_int(raw.get("AllocCPUS"))
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
        "mem_limit_bytes": (
            _tres_text_mem(raw.get("AllocTRES"))
            or _tres_text_mem(raw.get("ReqTRES"))
            or _lenient_req_mem(raw.get("ReqMem"), cpus)
        ),
        "submit_time": parse_time(raw.get("Submit")),
        "start_time": parse_time(raw.get("Start")),
        "end_time": parse_time(raw.get("End")),
        "time_limit_s": (float(t) * 60 if (t := _opt_int(raw.get("TimelimitRaw"))) is not None
                         else parse_duration(raw.get("Timelimit"))),
        "workdir": raw.get("WorkDir") or None,
    }
    return _SacctRow(
        job_id=int(match[1]),
        step=match[2],
        state_text=raw.get("State"),
        exit_code=code,
        signal=signal,
        max_rss=parse_rss(raw.get("MaxRSS")),
        fields=fields,
    )


def _tres_text_mem(text: str | None) -> int | None:
    """Bytes of `mem=` in a TRES string (`billing=1,cpu=1,mem=100M,node=1`)."""
    match = re.search(r"(?:^|,)mem=([^,]+)", text or "")
    if match is None:
        return None
    try:
        return parse_size(match[1], default_unit="M")
    except ValueError:
        return None


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
        cancelled_by=_cancelled_by(job.state_text),
        step_states=tuple((s.step or "", normalize_state(s.state_text) or "") for s in steps),
        source="sacct",
    )


def parse_sacct_json(text: str) -> dict[int, JobRecord]:
    """Jobs in `sacct --json` output (dbv0.0.38 of 22.05; v0.0.39+ shapes as well).

    Caveat (22.05.8): a non-zero exit shows `exit_code.return_code = 0` with state FAILED.
    When the job is FAILED but every exit code reads 0:0 the exit code is reported as None
    (unknown) rather than a misleading 0; the parsable path has the right number.
    """
    data = _load_json(text, "sacct")
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


def _json_sacct_exit(value: Any) -> tuple[int | None, int | None]:
    if not isinstance(value, dict):
        return None, None
    code = _num(value.get("return_code"))
    signal_obj = value.get("signal") or {}
    raw_signal = signal_obj.get("signal_id", signal_obj.get("id"))
    signal = _num(raw_signal)
    return (int(code) if code is not None else 0, int(signal) if signal else 0)


def _tres_mem(tres_list: Any) -> int | None:
    """Bytes of the `mem` entry in a TRES list (`[{"type": "mem", "count": 123}]`)."""
    if not isinstance(tres_list, list):
        return None
    for item in tres_list:
        if isinstance(item, dict) and item.get("type") == "mem":
            count = _num(item.get("count"))
            return int(count) if count is not None else None
    return None


def _sacct_json_rows(job: Mapping[str, Any]) -> list[_SacctRow]:
    job_id = _num(job.get("job_id"))
    if job_id is None:
        return []
    state_obj = job.get("state") or {}
    current = state_obj.get("current") if isinstance(state_obj, dict) else state_obj
    state_text = current[0] if isinstance(current, list) and current else current
    times = job.get("time") or {}
    required = job.get("required") or {}
    mem_per_node = _num(required.get("memory_per_node", required.get("memory")))
    mem_per_cpu = _num(required.get("memory_per_cpu"))
    cpus = _num(required.get("CPUs", required.get("cpus")))
    mem_limit = None
    if mem_per_node:
        mem_limit = int(mem_per_node) * 1024**2
    elif mem_per_cpu and cpus:
        mem_limit = int(mem_per_cpu) * int(cpus) * 1024**2
    if mem_limit is None:
        mem_limit = _tres_mem((job.get("tres") or {}).get("allocated"))
    limit = _num(times.get("limit"))
    elapsed = _num(times.get("elapsed"))
    code, signal = _json_sacct_exit(job.get("exit_code"))
    association = job.get("association") or {}
    fields = {
        "name": _str(job.get("name")),
        "user": _str(job.get("user")) or _str(association.get("user")),
        "account": _str(job.get("account")) or _str(association.get("account")),
        "partition": _str(job.get("partition")),
        "qos": _str(job.get("qos")),
        "reason": normalize_reason(_str(state_obj.get("reason")) if isinstance(state_obj, dict)
                                   else None),
        "elapsed_s": float(elapsed) if elapsed is not None else None,
        "node": _str(job.get("nodes")),
        "mem_limit_bytes": mem_limit,
        "submit_time": _epoch(times.get("submission")),
        "start_time": _epoch(times.get("start")),
        "end_time": _epoch(times.get("end")),
        "time_limit_s": float(limit) * 60 if limit is not None else None,
        "workdir": _str(job.get("working_directory")),
    }
    rows = [_SacctRow(int(job_id), None, _str(state_text), code, signal, None, fields)]
    for step in job.get("steps") or []:
        rows.append(_sacct_json_step(int(job_id), step))
    return rows


def _sacct_json_step(job_id: int, step: Mapping[str, Any]) -> _SacctRow:
    ident = step.get("step") or {}
    name = None
    if isinstance(ident, dict):
        raw_id = ident.get("id")
        if isinstance(raw_id, str | int) and str(raw_id):
            # v0.0.38: "batch" / "0"; v0.0.39+: "123.batch". `name` is the command, not the id.
            name = str(raw_id).split(".", 1)[-1]
        elif isinstance(raw_id, dict):
            name = _str(raw_id.get("step_id"))
        name = name or _str(ident.get("name"))
    state_val = step.get("state")
    state_text = state_val[0] if isinstance(state_val, list) and state_val else state_val
    code, signal = _json_sacct_exit(step.get("exit_code"))
    tres = step.get("tres") or {}
    requested = tres.get("requested") or {}
    rss = _tres_mem(requested.get("max"))
    return _SacctRow(job_id, name or "?", _str(state_text), code, signal, rss,
                     {"mem_limit_bytes": None})


# --------------------------------------------------------------------------------------------
# sstat (memory of running steps)
# --------------------------------------------------------------------------------------------

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
    return ["sstat", "--noheader", "--parsable2", "--allsteps", f"--jobs={_job_ids_arg(job_ids)}",
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
            raise SlurmParseError(
                f"sstat row has {len(parts)} '|'-separated fields, expected {n} "
                f"({','.join(fields)}): {line!r}"
            )
        raw = {f: v.strip() for f, v in zip(fields, parts, strict=True)}
        match = re.fullmatch(r"(\d+)(?:_\d+)?(?:\+\d+)?\.([\w-]+)", raw["JobID"])
        if match is None:
            raise SlurmParseError(f"sstat row has an unreadable JobID {raw['JobID']!r}: {line!r}")
        job_id = int(match[1])
        steps.setdefault(job_id, []).append(StepMemory(
            job_id=job_id,
            step=match[2],
            max_rss_bytes=parse_rss(raw.get("MaxRSS")),
            ave_rss_bytes=parse_rss(raw.get("AveRSS")),
            max_rss_node=raw.get("MaxRSSNode") or None,
            max_rss_task=_opt_int(raw.get("MaxRSSTask")),
            ntasks=_opt_int(raw.get("NTasks")),
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


# --------------------------------------------------------------------------------------------
# Merge
# --------------------------------------------------------------------------------------------


def merge_records(
    squeue_records: Mapping[int, JobRecord], sacct_records: Mapping[int, JobRecord]
) -> dict[int, JobRecord]:
    """One record per job known to either side.

    squeue (the controller) is authoritative for what it knows live: name, user, account,
    partition, QOS, state and reason, node, stdout path (sacct lags: for a moment a finished
    job reads `JobName=allocation`, `QOS=Unknown`). Once both sides say the job is finished,
    sacct is authoritative for the outcome, because it has the steps: state, exit code,
    signal, elapsed, start/end. MaxRSS and step states only sacct has. A job only one side
    knows is reported as that side has it.
    """
    merged: dict[int, JobRecord] = {}
    for job_id in sorted(set(squeue_records) | set(sacct_records)):
        live = squeue_records.get(job_id)
        acct = sacct_records.get(job_id)
        if live is None or acct is None:
            merged[job_id] = live or acct  # type: ignore[assignment]
            continue
        values = {}
        for name in JobRecord.__dataclass_fields__:
            mine = getattr(live, name)
            values[name] = mine if mine not in (None, "", ()) else getattr(acct, name)
        if live.is_finished and acct.is_finished:
            for name in ("state", "exit_code", "signal", "elapsed_s", "start_time", "end_time"):
                theirs = getattr(acct, name)
                values[name] = theirs if theirs is not None else getattr(live, name)
        elif not live.is_finished:
            # Alive (or back to pending after a requeue): an earlier attempt's outcome is void.
            values["exit_code"] = live.exit_code
            values["signal"] = live.signal
            values["end_time"] = live.end_time
            values["elapsed_s"] = acct.elapsed_s if live.is_running else live.elapsed_s
        values["max_rss_bytes"] = acct.max_rss_bytes
        values["restart_count"] = max(live.restart_count, acct.restart_count)
        values["cancelled_by"] = acct.cancelled_by
        values["step_states"] = acct.step_states
        values["source"] = "squeue+sacct"
        merged[job_id] = JobRecord(**values)
    return merged


# --------------------------------------------------------------------------------------------
# argv builders
# --------------------------------------------------------------------------------------------

# Asking Slurm for epoch timestamps avoids guessing the cluster's time zone.
TIME_FORMAT_ENV = ("env", "SLURM_TIME_FORMAT=%s")

_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables that would change how `sbatch` itself runs on the login node, not just the job.
_ENV_KEYS_FORBIDDEN = re.compile(r"^(SBATCH_|SLURM_|PATH$|LD_|SALLOC_|SRUN_)")


def _job_ids_arg(job_ids: Iterable[int]) -> str:
    ids = sorted({_check_job_id(j) for j in job_ids})
    if not ids:
        raise ValueError("no job ids given")
    return ",".join(str(j) for j in ids)


def _check_job_id(job_id: int) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise ValueError(f"job id must be a positive integer, got {job_id!r}")
    return job_id


def _check_option_value(option: str, value: str) -> str:
    text = str(value)
    if not text or "\n" in text or "\x00" in text:
        raise ValueError(f"sbatch {option}: value {text!r} must be non-empty and on one line")
    return text


def check_env(env: Mapping[str, str]) -> list[str]:
    """`K=V` strings for the job's environment, validated; raises ValueError naming the key.

    Keys must be shell identifiers; values may hold anything but NUL (commas, quotes and
    newlines included: they travel as separate argv words to `env`, never through
    `--export`, whose comma-separated syntax cannot quote them). Keys that would steer
    sbatch itself (SBATCH_*, SLURM_*, PATH, LD_*) are refused: put those in the script.
    """
    items = []
    for key, value in env.items():
        if not _ENV_KEY_RE.match(key):
            raise ValueError(
                f"environment variable name {key!r} is not valid: use letters, digits and _ "
                "and do not start with a digit"
            )
        if _ENV_KEYS_FORBIDDEN.match(key):
            raise ValueError(
                f"environment variable {key!r} would change how sbatch runs on the login node; "
                "set it inside the job script instead"
            )
        text = str(value)
        if "\x00" in text:
            raise ValueError(f"environment variable {key!r} holds a NUL byte")
        items.append(f"{key}={text}")
    return items


def sbatch_argv(
    *,
    job_name: str,
    script_path: str | None = None,
    args: Sequence[str] = (),
    partition: str | None = None,
    account: str | None = None,
    qos: str | None = None,
    gres: str | None = None,
    mem: str | None = None,
    time: str | None = None,
    output: str | None = None,
    error: str | None = None,
    workdir: str | None = None,
    env: Mapping[str, str] | None = None,
    hold: bool = False,
    begin: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """argv of `sbatch --parsable …`: options as `--opt=value` (a value can never become an
    option), the script path (or the script on stdin when None) and its arguments after it.

    The job environment is the login shell's plus `env`, passed as `env K=V sbatch
    --export=ALL` (see `check_env` for why not `--export=ALL,K=V`).
    """
    if not job_name or "\x00" in job_name:
        raise ValueError("job_name must be a non-empty string")
    argv: list[str] = []
    if env:
        argv += ["env", *check_env(env)]
    argv += ["sbatch", "--parsable", f"--job-name={job_name}"]
    for option, value in (
        ("--partition", partition), ("--account", account), ("--qos", qos), ("--gres", gres),
        ("--mem", mem), ("--time", time), ("--output", output), ("--error", error),
        ("--chdir", workdir), ("--begin", begin),
    ):
        if value is not None:
            argv.append(f"{option}={_check_option_value(option, value)}")
    if env:
        argv.append("--export=ALL")
    if hold:
        argv.append("--hold")
    for item in extra:
        if not str(item).startswith("-"):
            raise ValueError(
                f"extra sbatch option {item!r} must start with '-' (write --opt=value)"
            )
        argv.append(str(item))
    if script_path is not None:
        if not script_path or script_path.startswith("-"):
            raise ValueError(
                f"script path {script_path!r} must not be empty or start with '-' (use ./)"
            )
        argv.append(script_path)
        argv += [str(a) for a in args]
    elif args:
        # sbatch takes script arguments only after a script file; stdin is that file.
        argv.append("/dev/stdin")
        argv += [str(a) for a in args]
    return argv


def parse_sbatch_output(text: str) -> int:
    """The job id from `sbatch --parsable` (`123` or `123;cluster`)."""
    for line in text.splitlines():
        match = re.fullmatch(r"\s*(\d+)(?:;\S+)?\s*", line)
        if match:
            return int(match[1])
    raise SlurmParseError(f"sbatch --parsable printed no job id: {text.strip()[:200]!r}")


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
    """argv of one squeue call. With `json` filters are pointless (squeue ignores them) and
    the caller filters; otherwise `--noheader -O Field:0|,…` (width 0: never cut)."""
    if json:
        return ["squeue", "--all", "--json"]
    argv = [*TIME_FORMAT_ENV, "squeue", "--all", "--noheader", f"--states={states}"]
    ids = list(job_ids)
    if ids:
        argv.append(f"--jobs={_job_ids_arg(ids)}")
    for option, value in (("--user", user), ("--account", account),
                          ("--partition", partition), ("--qos", qos)):
        if value is not None:
            argv.append(f"{option}={_check_option_value(option, value)}")
    argv.append("--Format=" + ",".join(f"{f}:0{SQUEUE_SEPARATOR}" for f in fields))
    return argv


def sacct_argv(job_ids: Iterable[int], *, json: bool = False,
               fields: Sequence[str] = SACCT_FIELDS) -> list[str]:
    """argv of one sacct call for all `job_ids`, with `-D` so requeued attempts show."""
    ids = _job_ids_arg(job_ids)
    if json:
        return ["sacct", "--json", "--duplicates", f"--jobs={ids}"]
    if fields[-1] != "JobName" and "JobName" in fields:
        raise ValueError("JobName must be the last sacct field (names may contain '|')")
    return [*TIME_FORMAT_ENV, "sacct", "--parsable2", "--duplicates", f"--jobs={ids}",
            "--format=" + ",".join(fields)]


_SCONTROL_ACTIONS = frozenset({"hold", "uhold", "release", "requeue", "requeuehold", "suspend",
                               "resume"})


def scontrol_argv(action: str, job_id: int) -> list[str]:
    """argv of `scontrol <action> <job_id>` for hold / uhold / release / requeue[hold]."""
    if action not in _SCONTROL_ACTIONS:
        raise ValueError(f"scontrol action {action!r} is not one of {sorted(_SCONTROL_ACTIONS)}")
    return ["scontrol", action, str(_check_job_id(job_id))]


def scancel_argv(job_id: int, *, signal: str | None = None) -> list[str]:
    """argv of `scancel <job_id>` (optionally `--signal=NAME`, which signals, not cancels)."""
    argv = ["scancel"]
    if signal is not None:
        if not re.fullmatch(r"[A-Z0-9]+", signal):
            raise ValueError(f"signal {signal!r} must be a name like TERM or USR1")
        argv.append(f"--signal={signal}")
    return [*argv, str(_check_job_id(job_id))]


def sinfo_version_argv() -> list[str]:
    return ["sinfo", "--version"]


def filter_competitors(
    records: Iterable[JobRecord],
    *,
    user: str | None = None,
    account: str | None = None,
    partition: str | None = None,
    qos: str | None = None,
    exclude: Iterable[int] = (),
) -> list[JobRecord]:
    """Pending jobs matching every given filter, highest priority first, then oldest.

    A job whose partition list names several partitions (`debug,gpu`) matches any of them.
    """
    excluded = set(exclude)
    chosen = []
    for record in records:
        if not record.is_pending or record.job_id in excluded:
            continue
        if user is not None and record.user != user:
            continue
        if account is not None and record.account != account:
            continue
        if partition is not None and partition not in (record.partition or "").split(","):
            continue
        if qos is not None and record.qos != qos:
            continue
        chosen.append(record)
    return sorted(
        chosen,
        key=lambda r: (-(r.priority or 0), r.submit_time or float("inf"), r.job_id),
    )
