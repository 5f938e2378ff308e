"""Reading Slurm's `--json` output: v0.0.38 plain values and v0.0.40+ `{set, infinite, number}`
objects and flag lists, through one set of helpers shared by the squeue and sacct parsers."""

from __future__ import annotations

import json
import re
from typing import Any

from bot.core.slurm.errors import SlurmParseError, SlurmReportedError
from bot.core.slurm.states import HELD_STATES, normalize_state
from bot.core.slurm.values import INFINITE, INFINITE64, NO_VAL, NO_VAL64, decode_wait_status
from bot.core.text import N_


def json_number(value: Any) -> int | float | None:
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
        return json_number(int(value))
    return None


def json_epoch(value: Any) -> float | None:
    """Epoch seconds of a JSON time field; 0 (Slurm's "not yet") gives None."""
    number = json_number(value)
    return float(number) if number else None


def json_text(value: Any) -> str | None:
    """A string field; the first entry of a v0.0.40 list, `(null)` and empty give None."""
    if value is None:
        return None
    if isinstance(value, list):  # v0.0.40 flags-style lists
        value = value[0] if value else None
        return json_text(value)
    text = str(value)
    return text if text and text != "(null)" else None


#: Flags squeue's own listing names before STOPPED (Slurm's job_state_string): a stopped job
#: that is also completing, for one, is listed COMPLETING.
_BEFORE_STOPPED = frozenset({"COMPLETING", "STAGE_OUT", "CONFIGURING", "EXPEDITING", "RESIZING",
                             "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT"})


def json_state(value: Any) -> str | None:
    """`job_state` is `"PENDING"` in v0.0.38 and `["PENDING", "REQUEUED"]` later.

    The first entry is the base state; flags such as REQUEUED/COMPLETING follow and are
    dropped, except a hold flag (`["PENDING", "REQUEUE_HOLD"]` is REQUEUE_HOLD, as squeue
    prints it: a held job must not read as merely pending) and STOPPED (`["RUNNING",
    "STOPPED"]`, a job whose processes were sent SIGSTOP, is STOPPED, as squeue prints it
    and as v0.0.38 gives it: a stopped job must not read as running).
    """
    if isinstance(value, list):
        names = [normalize_state(v) for v in value if isinstance(v, str)]
        names = [n for n in names if n]
        held = [n for n in names[1:] if n in HELD_STATES]
        if held:
            return held[0]
        if "STOPPED" in names[1:] and not _BEFORE_STOPPED.intersection(names):
            return "STOPPED"
        return names[0] if names else None
    return normalize_state(value) if isinstance(value, str) else None


def json_exit(value: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) of an `exit_code` field, in each schema: a raw wait status, plain
    (squeue v0.0.38) or wrapped in `{set, infinite, number}` (v0.0.39); `{status, return_code}`
    (sacct dbv0.0.38/v0.0.39, signal as `{signal_id}`); v0.0.40+ `{status, return_code:
    {number}, signal: {id: {number}}}`. An object with no return code set reads code 0."""
    if isinstance(value, dict) and "number" in value and "return_code" not in value:
        value = json_number(value)
    if isinstance(value, dict):
        code = json_number(value.get("return_code"))
        signal_obj = value.get("signal") or {}
        raw_signal = signal_obj.get("id", signal_obj.get("signal_id"))
        signal = json_number(raw_signal)
        return (int(code) if code is not None else 0, int(signal) if signal else 0)
    number = json_number(value)
    if number is None:
        return None, None
    return decode_wait_status(int(number))


def load_json(text: str, command: str) -> dict[str, Any]:
    """The document with its `jobs` list; SlurmReportedError when Slurm reports errors only."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        head = text.strip()[:200]
        raise SlurmParseError(N_("%(command)s --json printed something that is not JSON: "
                                 "%(start)s", command=command, start=repr(head))) from exc
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise SlurmParseError(N_("%(command)s --json printed no 'jobs' list", command=command))
    errors = [e for e in data.get("errors") or [] if e]
    if errors and not data["jobs"]:
        raise SlurmReportedError(N_("%(command)s --json reported errors: %(errors)s",
                                    command=command, errors=repr(errors)), errors)
    return data

