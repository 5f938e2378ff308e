"""Checks shared by the argv builders: job ids, one-line option values, epoch timestamps."""

from __future__ import annotations

from collections.abc import Iterable

# Asking Slurm for epoch timestamps avoids guessing the cluster's time zone.
TIME_FORMAT_ENV = ("env", "SLURM_TIME_FORMAT=%s")


def job_ids_arg(job_ids: Iterable[int]) -> str:
    """`1,2,3` for a `--jobs=` option: checked, deduplicated, sorted; ValueError when empty."""
    ids = sorted({check_job_id(j) for j in job_ids})
    if not ids:
        raise ValueError("no job ids given")
    return ",".join(str(j) for j in ids)


def check_job_id(job_id: int) -> int:
    """`job_id` when it is a positive int; ValueError naming it otherwise."""
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise ValueError(f"job id must be a positive integer, got {job_id!r}")
    return job_id


def check_option_value(option: str, value: str) -> str:
    """`value` as text when it is one non-empty line; ValueError naming `option` otherwise."""
    text = str(value)
    if not text or "\n" in text or "\x00" in text:
        raise ValueError(f"sbatch {option}: value {text!r} must be non-empty and on one line")
    return text
