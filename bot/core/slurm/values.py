"""Slurm's scalar values: durations, sizes, timestamps, exit codes, counts, output paths.

Each parser takes the text Slurm prints and raises `SlurmParseError` quoting it when it is
not that kind of value; "not set" spellings (`UNLIMITED`, `Unknown`, `N/A`, NO_VAL) give None.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo

from bot.core.slurm.errors import SlurmParseError
from bot.core.text import N_
from bot.core.units import parse_size

NO_VAL = 0xFFFFFFFE  # Slurm's "not set" for 32-bit fields
INFINITE = 0xFFFFFFFF
NO_VAL64 = 0xFFFFFFFFFFFFFFFE
INFINITE64 = 0xFFFFFFFFFFFFFFFF
MAX_REAL_SIGNAL = 64  # above this a "signal" is a Slurm pseudo-signal, e.g. 125 = SIG_OOM & 0x7f


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
            raise SlurmParseError(N_("%(value)s is not a Slurm duration ([D-]HH:MM:SS)",
                                     value=repr(text)))
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
        raise SlurmParseError(N_("%(value)s is not a Slurm duration ([D-]HH:MM:SS)",
                                     value=repr(text))) from exc
    if not 1 <= len(numbers) <= 3 or any(n < 0 for n in numbers):
        raise SlurmParseError(N_("%(value)s is not a Slurm duration ([D-]HH:MM:SS)",
                                     value=repr(text)))
    seconds = 0.0
    for n in numbers:
        seconds = seconds * 60 + n
    return days * 86400 + seconds


def parse_sbatch_time(text: str) -> float | None:
    """Seconds of an sbatch `--time` value, rounded up to whole minutes as Slurm keeps it:
    a bare number is minutes (`90`), `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`;
    `UNLIMITED` / `INFINITE` give None."""
    value = text.strip()
    if value.upper() in {"UNLIMITED", "INFINITE"}:
        return None
    seconds = float(value) * 60 if value.isdigit() else parse_duration(value)
    if seconds is None:
        return None
    return float(-(-int(seconds) // 60) * 60)


def format_duration(seconds: float) -> str:
    """Seconds as Slurm's `[D-]HH:MM:SS` (what `--time` accepts)."""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def format_slurm_size(n_bytes: int) -> str:
    """Bytes as Slurm writes a size, in the largest binary unit that is exact: `950G`,
    `1536M`; a size below 1 KiB in bytes (`512`)."""
    for unit, power in (("T", 4), ("G", 3), ("M", 2), ("K", 1)):
        if n_bytes and n_bytes % 1024**power == 0:
            return f"{n_bytes // 1024**power}{unit}"
    return str(n_bytes)


def parse_rss(text: str | None) -> int | None:
    """Bytes in a sacct size (`123456K`, `1.50G`, `0`); a bare number is bytes, as sacct means."""
    if text is None or not text.strip():
        return None
    value = text.strip().rstrip("+")
    try:
        return parse_size(value, default_unit="B")
    except ValueError as exc:
        raise SlurmParseError(N_("%(value)s is not a sacct size (e.g. 123456K)",
                                 value=repr(text))) from exc


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
        raise SlurmParseError(N_("%(value)s is not a Slurm memory request (e.g. 100M)",
                                 value=repr(text))) from exc
    if per_cpu:
        return amount * cpus if cpus else None
    return amount


def parse_tres_mem(text: str | None, nodes: int | None = None) -> int | None:
    """Bytes of memory PER NODE in a TRES string (`billing=1,cpu=64,mem=32G,node=2`).

    A TRES `mem=` is the job's total over its nodes; trainbot means a memory limit per node,
    as Slurm's OOM killer applies it, so the total is divided by `nodes` when given (the
    job's node count: a pending job's requested TRES says `node=1` whatever it asked for),
    else by the string's own `node=`.
    """
    match = re.search(r"(?:^|,)mem=([^,]+)", text or "")
    if match is None:
        return None
    try:
        total = parse_size(match[1], default_unit="M")
    except ValueError:
        return None
    if not nodes:
        node_match = re.search(r"(?:^|,)node=(\d+)", text or "")
        nodes = int(node_match[1]) if node_match else 1
    return total // max(nodes, 1)


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
        raise SlurmParseError(N_("%(value)s is not a Slurm timestamp", value=repr(text))) from exc
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=tz)
    return stamp.timestamp()


def parse_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """`code:signal` as sacct prints ExitCode (`3:0`, `0:9`, `0:125`) -> (code, signal)."""
    if text is None or not text.strip():
        return None, None
    match = re.fullmatch(r"\s*(\d+):(\d+)\s*", text)
    if match is None:
        raise SlurmParseError(N_("%(value)s is not an ExitCode (code:signal)", value=repr(text)))
    return int(match[1]), int(match[2])


def parse_squeue_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """squeue's `exit_code` column: a raw wait status on 22.05 (`768`, `9`), `code:signal`
    from 23.02 on (`3:0`, `0:15`). Exact, unlike `sacct -P`'s ExitCode, which prints a status
    of 128 or more less 128: a batch shell's `exit 137` reads `35072` on 22.05 and `137:0` on
    24.11 here (`9:0` in sacct -P), so squeue's records are never `exit_code_mod_128`.
    squeue has no `-o` letter for it (`%k` is the comment)."""
    if text is None or not text.strip():
        return None, None
    value = text.strip()
    if ":" in value:
        return parse_exit_code(value)
    status = parse_count(value)
    return decode_wait_status(status) if status is not None else (None, None)


def decode_wait_status(status: int) -> tuple[int, int]:
    """(exit code, signal) from a raw wait status, as squeue --json v0.0.38 reports it."""
    signal = status & 0x7F
    if signal:
        return 0, signal
    return (status >> 8) & 0xFF, 0


def parse_count(text: str | None) -> int | None:
    """A whole number Slurm printed; empty, non-numeric, NO_VAL and INFINITE give None."""
    if text is None:
        return None
    value = text.strip()
    if not re.fullmatch(r"\d+", value):
        return None
    number = int(value)
    return None if number in (NO_VAL, INFINITE, NO_VAL64, INFINITE64) else number


# Output path patterns (sbatch -o)

_PATTERN_RE = re.compile(r"%(\d*)([%AaJjNnstux])")
_NUMERIC_FIELDS = frozenset("AaJjnst")  # a width zero-pads these; a name, user or node as is


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
    `%a` array index (4294967294 outside arrays, as Slurm writes it), `%N` first node (the
    node's name: slurmstepd writes its host's short name, the same unless NodeHostname differs),
    `%n`/`%t` 0, `%s` `batch`, `%%` a percent; `%5j` zero-pads a number (not `%x`, `%u`,
    `%N`, as Slurm ignores a width there). A field whose value is not
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
            "N": first_node(node),
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
            if width and key in _NUMERIC_FIELDS and value.isdigit():
                return value.zfill(int(width))
            return value

        path = _PATTERN_RE.sub(_sub, pattern)
    if workdir and not path.startswith("/"):
        path = workdir.rstrip("/") + "/" + path
    return path


def first_node(nodelist: str | None) -> str | None:
    """The first host of a Slurm hostlist (`vm`, `gpu[03-05,9],cpu1` -> `gpu03`); None for
    none (`None assigned` while pending)."""
    text = (nodelist or "").strip()
    if not text or text.startswith("None") or text == "(null)":
        return None
    match = re.match(r"([^,\[]*)(?:\[(\d+))?", text)
    assert match is not None  # the pattern matches any text
    return match[1] + (match[2] or "")


def default_stdout(job_id: int, workdir: str | None, array_task_id: int | None = None,
                   array_job_id: int | None = None) -> str | None:
    """Where sbatch writes output when no `-o` was given: `<workdir>/slurm-%j.out`."""
    if not workdir:
        return None
    if array_task_id is not None and array_job_id:
        return f"{workdir.rstrip('/')}/slurm-{array_job_id}_{array_task_id}.out"
    return f"{workdir.rstrip('/')}/slurm-{job_id}.out"
