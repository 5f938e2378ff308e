"""What the Slurm parsers raise when Slurm's output is not what they can read."""

from __future__ import annotations

from typing import Any


class SlurmParseError(ValueError):
    """Slurm printed something this parser does not understand; the message quotes it."""


class SlurmReportedError(SlurmParseError):
    """`--json` output that carries Slurm's own errors and no jobs (e.g. slurmctld down:
    squeue exits 0 with `"errors": [{"error": "Unspecified error", "source":
    "slurm_load_jobs"}]`). It is not an empty answer: the caller must not read "no jobs"."""

    def __init__(self, message: str, errors: list[Any]):
        super().__init__(message)
        self.errors = errors
