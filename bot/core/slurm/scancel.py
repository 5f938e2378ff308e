"""scancel: cancel one job, or send it a signal."""

from __future__ import annotations

import re

from bot.core.slurm.argv import check_job_id

SCANCEL_STOPPED = frozenset({124, 137})
"""The exit statuses of `timeout` when it stopped the scancel it ran (SIGTERM: 124; SIGKILL,
after `-k`: 128+9): the scancel may or may not have reached slurmctld by then. They are not
`timeout`'s alone: scancel's own exit status is Slurm's error number mod 256, and
ESLURM_JOB_SIGNAL_FAILED (2172) exits 124, ESLURM_INVALID_SLUID (2185) 137; `scancel_status`
tells the two apart."""

SCANCEL_EXITED = "scancel exited"
"""What a bounded scancel's shell prints on stdout once scancel has exited by itself, then
its exit status: `scancel exited 0`."""

_REPORTING = f'trap "exit 143" TERM; scancel "$@"; s=$?; echo "{SCANCEL_EXITED} $s"; exit $s'
"""The shell a bounded scancel runs in (`scancel_argv`), its words its positional
parameters, never part of the script. `timeout` signals the whole process group it started
(this shell and scancel; it runs no --foreground). The shell's trap holds its own SIGTERM
until scancel has ended (POSIX: a trap waits for the foreground command), then exits without
the line: so the line is printed only when scancel ended by itself, a scancel that outlives
its SIGTERM still has this shell, `timeout`'s child, alive for `timeout` to send the SIGKILL
(`timeout` sends it only while its child runs), and the shell has reaped scancel when it
exits. scancel itself gets SIGTERM's default action (a caught signal's trap is not
inherited)."""


def scancel_argv(job_id: int, *, signal: str | None = None,
                 limits: tuple[float, float] | None = None) -> list[str]:
    """argv of `scancel <job_id>` (optionally `--signal=NAME`, which signals, not cancels).

    `limits` (term_s, kill_s: bot.core.takeover.scancel_limits): the scancel runs under
    coreutils `timeout -k KILL TERM`, so the login node ends it (SIGTERM after term_s, SIGKILL
    kill_s later) even when the channel that started it dropped; it then exits 124 (137 when
    it took the SIGKILL), SCANCEL_STOPPED. It runs in a shell that reports scancel's own exit
    status on stdout (SCANCEL_EXITED), so that a scancel that failed by itself with one of
    those statuses is not read as stopped (`scancel_status`). Every word is a number or a
    fixed name, sent as one argv word each; the shell's script is fixed, the words its
    positional parameters.

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
    return ["timeout", "-k", f"{kill_s:g}", f"{term_s:g}", "/bin/sh", "-c", _REPORTING, *argv]


def scancel_status(exit_code: int, stdout: str) -> int | None:
    """scancel's own exit status, from a bounded scancel's (`scancel_argv` with `limits`)
    `exit_code` and `stdout`: the one its shell reported on stdout's last line
    (SCANCEL_EXITED), also when `timeout` stopped the shell just after; None when there is no
    such line and `timeout` says it stopped the command (SCANCEL_STOPPED): scancel's end was
    not seen. Otherwise `exit_code` (what could not start it: 125 `timeout` failed, 126 or
    127 no shell)."""
    lines = stdout.splitlines()
    reported = re.fullmatch(rf"{SCANCEL_EXITED} ([0-9]+)", lines[-1]) if lines else None
    if reported:
        return int(reported.group(1))
    return None if exit_code in SCANCEL_STOPPED else exit_code
