"""scancel: cancel one job, or send it a signal."""

from __future__ import annotations

import re

from bot.core.slurm.argv import check_job_id


def scancel_argv(job_id: int, *, signal: str | None = None) -> list[str]:
    """argv of `scancel <job_id>` (optionally `--signal=NAME`, which signals, not cancels).

    trainbot sends no signal itself. One who does to an array's task (`A_N`) while other
    tasks of it wait: slurmctld signals the task, then answers "Job can not be altered now"
    (ESLURM_TRANSITION_STATE_NO_UPDATE, its job_str_signal, for any signal but SIGKILL), and
    scancel retries 10 times over ~95 s, signalling again each time, and exits 228: a
    delivered signal, to be read back in squeue (STOPPED after SIGSTOP), not a failure."""
    argv = ["scancel"]
    if signal is not None:
        if not re.fullmatch(r"[A-Z0-9]+", signal):
            raise ValueError(f"signal {signal!r} must be a name like TERM or USR1")
        argv.append(f"--signal={signal}")
    return [*argv, str(check_job_id(job_id))]
