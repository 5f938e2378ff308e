"""Reading Slurm's `--json` output: v0.0.38 plain values and v0.0.40+ `{set, infinite, number}`
objects and flag lists, through one set of helpers shared by the squeue and sacct parsers."""

from __future__ import annotations

import json
import re
from typing import Any

from bot.core.slurm.errors import SlurmParseError, SlurmReportedError
from bot.core.slurm.states import normalize_state
from bot.core.slurm.values import INFINITE, INFINITE64, NO_VAL, NO_VAL64


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


def json_state(value: Any) -> str | None:
    """`job_state` is `"PENDING"` in v0.0.38 and `["PENDING", "REQUEUED"]` later."""
    if isinstance(value, list):
        base = [normalize_state(v) for v in value if isinstance(v, str)]
        base = [b for b in base if b]
        # The first entry is the base state; flags such as REQUEUED/COMPLETING follow.
        return base[0] if base else None
    return normalize_state(value) if isinstance(value, str) else None


def load_json(text: str, command: str) -> dict[str, Any]:
    """The document with its `jobs` list; SlurmReportedError when Slurm reports errors only."""
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
