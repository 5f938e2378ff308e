"""What a submit returns: the Slurm job it queued, its run and where it resumes.

Made by bot.services.submit.submit_recipe, and by bot.services.lost_submit for a job a submit
whose answer was lost left on the cluster; read by the replies, the run's thread and the
competitor prompts that follow a submit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.core.checkpoints import Checkpoint
from bot.services.send_job import NotApplied


@dataclass(frozen=True)
class SubmitResult:
    """What was submitted: the Slurm job, its chain and the checkpoint it resumes from.

    `overrides` are the ones the job got (as typed); `not_applied` the ones it did not."""

    job_id: str
    chain_id: int
    attempt_no: int
    job_name: str
    checkpoint: Checkpoint | None
    overrides: dict[str, Any] = field(default_factory=dict)
    not_applied: tuple[NotApplied, ...] = ()
    display_id: str | None = None  # `140_4`: task 4 resubmitted as the one-task array 140
    array: str | None = None  # the --array spec it was submitted with
