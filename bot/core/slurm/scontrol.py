"""scontrol: hold, release, requeue (and the other per-job actions) of one job."""

from __future__ import annotations

from bot.core.slurm.argv import check_job_id

_SCONTROL_ACTIONS = frozenset({"hold", "uhold", "release", "requeue", "requeuehold", "suspend",
                               "resume"})


def scontrol_argv(action: str, job_id: int) -> list[str]:
    """argv of `scontrol <action> <job_id>` for hold / uhold / release / requeue[hold]."""
    if action not in _SCONTROL_ACTIONS:
        raise ValueError(f"scontrol action {action!r} is not one of {sorted(_SCONTROL_ACTIONS)}")
    return ["scontrol", action, str(check_job_id(job_id))]
