"""scancel: cancel one job, or send it a signal."""

from __future__ import annotations

import re

from bot.core.slurm.argv import check_job_id


def scancel_argv(job_id: int, *, signal: str | None = None) -> list[str]:
    """argv of `scancel <job_id>` (optionally `--signal=NAME`, which signals, not cancels)."""
    argv = ["scancel"]
    if signal is not None:
        if not re.fullmatch(r"[A-Z0-9]+", signal):
            raise ValueError(f"signal {signal!r} must be a name like TERM or USR1")
        argv.append(f"--signal={signal}")
    return [*argv, str(check_job_id(job_id))]
