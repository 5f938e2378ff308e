"""Where a submitted job starts: the latest complete checkpoint of its recipe (a task's own,
for an array's task), and the environment that tells the job, `TRAINBOT_RESUME_FROM` (the
checkpoint's path, absent when starting from scratch) and `TRAINBOT_RESUME_ITER` (its
iteration, when known)."""

from __future__ import annotations

from bot.config import RecipeConfig
from bot.core.checkpoints import DEFAULT_POINTER, Checkpoint, lookup_stopped
from bot.core.flight_recorder import flight_recorder_env
from bot.core.slurm.array_spec import expand_task_path
from bot.core.text import N_
from bot.services import ServiceError
from bot.services.ports import SFTPCalls

RESUME_ENV = "TRAINBOT_RESUME_FROM"
RESUME_ITER_ENV = "TRAINBOT_RESUME_ITER"
RECIPE_ENV = "TRAINBOT_RECIPE"


def submit_env(recipe_name: str, recipe: RecipeConfig, checkpoint: Checkpoint | None) -> dict:
    """Environment exported to the job: the flight recorder's when the recipe opts in, the
    recipe's env, and where to resume from."""
    env = flight_recorder_env(recipe.nccl_flight_recorder) if recipe.nccl_flight_recorder \
        else {}
    env.update(recipe.env)
    env[RECIPE_ENV] = recipe_name
    if checkpoint is not None:
        env[RESUME_ENV] = checkpoint.path
        if checkpoint.iteration is not None:
            env[RESUME_ITER_ENV] = str(checkpoint.iteration)
    return env


def find_resume_checkpoint(recipe: RecipeConfig, sftp: SFTPCalls, task: int | None = None,
                           *, at_most: int | None = None) -> Checkpoint | None:
    """Latest complete checkpoint of the recipe, or None (no checkpoint dir / none yet);
    with `at_most`, the latest at or below that iteration.

    An array recipe's checkpoints are per task (`%a` in its dir): task `task`'s, and none
    for a whole array's submit (each task starts as its script decides)."""
    if recipe.checkpoint is None:
        return None
    if recipe.array is not None and task is None:
        return None
    from bot.cluster.checkpoints import LookupStopped, find_latest_checkpoint

    ck = recipe.checkpoint
    directory = expand_task_path(ck.dir, task) if task is not None else ck.dir
    try:
        return find_latest_checkpoint(
            sftp, directory, ck.complete_rule, pointer_name=ck.pointer_file or None,
            globs=ck.globs(), at_most=at_most,
        )
    except LookupStopped as exc:
        if exc.bound.symlinks == 0:  # the directory's own listing took the bound
            raise CheckpointLookupStopped(N_(
                "not resumed: %(stopped)s, so the run neither resumes from one nor starts "
                "from scratch. Move the old checkpoints and other files out of the directory, "
                "then resume again",
                stopped=lookup_stopped(directory, exc.decision))) from None
        if exc.bound.symlinks is not None:  # its symlinked checkpoints' stats took it
            raise CheckpointLookupStopped(N_(
                "not resumed: %(stopped)s, so the run neither resumes from one nor starts "
                "from scratch. Replace those symlinks with the directories they point to or "
                "remove the old ones, then resume again",
                stopped=lookup_stopped(directory, exc.decision))) from None
        raise CheckpointLookupStopped(N_(
            "not resumed: %(stopped)s, so the run neither resumes from one nor starts from "
            "scratch. Remove the incomplete checkpoints or write a complete one's name in "
            "%(pointer)s, then resume again",
            stopped=lookup_stopped(directory, exc.decision),
            pointer=ck.pointer_file or DEFAULT_POINTER)) from None


class CheckpointLookupStopped(ServiceError):
    """The resume's checkpoint lookup reached its request bound before a complete checkpoint:
    the submit is refused (resuming an unchecked one or starting afresh would be a guess)."""
