"""Send a recipe's job to Slurm: sbatch its script, or run the site's submit command
(`submit_command`), which gets the recipe's Slurm options (partition, account, qos, gres, mem,
time, overrides applied, and log_path as `SBATCH_OUTPUT` and `SBATCH_ERROR`) as sbatch's input
environment variables (`SBATCH_PARTITION`, …, `SBATCH_MEM_PER_NODE`, `SBATCH_TIMELIMIT`) and
must print the job id; then which overridden options that command's job did not get (a
wrapper may set its own on sbatch's command line), so that one is never reported as applied."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.cluster.errors import (
    ClusterError,
    CommandTimedOut,
    OutcomeUnknown,
    OutputTooLarge,
    submit_advice,
)
from bot.config import RecipeConfig
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.sbatch import (
    RECIPE_OVERRIDABLE_OPTIONS,
    options_not_applied,
    sbatch_input_env,
)
from bot.core.text import N_, Text
from bot.services.ports import Slurm

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NotApplied:
    """An override the submitted job did not get (a site wrapper set its own): what was
    asked and what the job has, as Slurm writes it."""

    key: str
    requested: str
    actual: str


def describe_not_applied(items: Sequence[NotApplied]) -> Text | str:
    """The sentence for overrides a wrapper's job did not get ('' when none): `trainbot
    submit` (its `str()`) and `/train submit` replies (translated by the renderer)."""
    if not items:
        return ""
    pairs = [N_("%(key)s=%(requested)s (the job has %(actual)s)", key=n.key,
                requested=n.requested, actual=n.actual) for n in items]
    return N_("The site's submit command did not apply %(pairs)s.", pairs=pairs)


def send_job(slurm: Slurm, recipe: RecipeConfig, job_name: str, env: dict[str, str]) -> str:
    """sbatch the recipe's script, or run its site wrapper; returns the job id as text."""
    if recipe.sbatch_script is not None:
        job_id = slurm.submit(recipe.submit_spec(job_name=job_name, env=env))
        return str(job_id)
    # A site wrapper gets the args and the environment (job name, resume point and the
    # recipe's Slurm options as sbatch's input variables) and must print the job id. An end
    # of it trainbot did not see (a timeout, a channel closed first, a flood of output cut)
    # may have left a job, as sbatch's does (SlurmClient.submit): an OutcomeUnknown saying to
    # look the name up.
    assert recipe.submit_command is not None
    env = {**env, **sbatch_input_env(recipe.sbatch_options()), "TRAINBOT_JOB_NAME": job_name}
    argv = [*recipe.submit_command, *recipe.args]
    try:
        result = slurm.runner.run(argv, env=env, check=True)
    except CommandTimedOut as exc:
        raise OutcomeUnknown.timed_out(argv, exc, advice=submit_advice(job_name)) from exc
    except OutcomeUnknown as exc:
        raise exc.advised(submit_advice(job_name)) from exc
    except OutputTooLarge as exc:
        raise OutcomeUnknown.flooded(exc, advice=submit_advice(job_name)) from exc
    return parse_job_id(result.stdout, argv, job_name)


def wrapper_not_applied(slurm: Any, recipe: RecipeConfig, job_id: str,
                         typed: Mapping[str, Any]) -> dict[str, str]:
    """Overridden Slurm options a site wrapper's job did not get: key -> the job's value.

    Asked only when a wrapper submitted with such overrides (sbatch itself always applies
    its options). A job Slurm cannot show yet, or a Slurm that does not answer, leaves them
    unchecked: the submit stands either way."""
    requested = {k: v for k, v in typed.items() if k in RECIPE_OVERRIDABLE_OPTIONS}
    if recipe.submit_command is None or not requested:
        return {}
    try:
        job = slurm.job(int(job_id))
    except (ClusterError, SlurmParseError) as exc:
        log.warning("job %s: cannot check the overrides the submit command applied: %s",
                    job_id, exc)
        return {}
    return options_not_applied(requested, job) if job is not None else {}


_SUBMITTED_RE = re.compile(r"Submitted batch job (\d+)")
_BARE_ID_RE = re.compile(r"^\s*(\d+)(?:;\S+)?\s*$", re.MULTILINE)


def parse_job_id(stdout: str, argv: Sequence[str], job_name: str) -> str:
    """The job id the submit wrapper `argv` printed (`Submitted batch job N` or a bare `N`)
    for the job `job_name`. None there, after an exit 0: an OutcomeUnknown (the job may well
    be queued; its caller looks it up by name) that says to make the wrapper print the id."""
    match = _SUBMITTED_RE.search(stdout) or _BARE_ID_RE.search(stdout)
    if match is None:
        raise OutcomeUnknown(argv, N_(
            "the site's submit command %(command)r exited 0 but printed no job id (expected "
            "'Submitted batch job N' or a bare number): %(out)s; make it print the job id",
            command=argv[0], out=repr(stdout.strip()[-200:])), advice=submit_advice(job_name))
    return match[1]
