"""scancel: cancel one job, or send it a signal."""

from __future__ import annotations

import re

from bot.core.slurm.argv import check_job_id

SCANCEL_STOPPED = frozenset({124, 137})
"""The exit statuses of `timeout` when it stopped the scancel it ran (SIGTERM: 124; SIGKILL,
after `-k`: 128+9): the scancel may or may not have reached slurmctld by then."""


def scancel_argv(job_id: int, *, signal: str | None = None,
                 limits: tuple[float, float] | None = None) -> list[str]:
    """argv of `scancel <job_id>` (optionally `--signal=NAME`, which signals, not cancels).

    `limits` (term_s, kill_s: bot.core.takeover.scancel_limits): the scancel runs under
    coreutils `timeout -k KILL TERM`, so the login node ends it (SIGTERM after term_s, SIGKILL
    kill_s later) even when the channel that started it dropped; it then exits 124 (137 when
    it took the SIGKILL), SCANCEL_STOPPED. Every word is a number or a fixed name, sent as one
    argv word each (never a shell string).

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
    argv.append(str(check_job_id(job_id)))
    if limits is None:
        return argv
    term_s, kill_s = limits
    if not (term_s > 0 and kill_s > 0):  # `timeout 0` would mean no limit at all
        raise ValueError(f"a scancel's limits must be positive, not {limits!r}")
    return ["timeout", "-k", f"{kill_s:g}", f"{term_s:g}", *argv]
