"""sbatch: `SubmitSpec`, the one list of sbatch keywords trainbot uses, its argv, and the job id
that `sbatch --parsable` prints; for a site submit wrapper, the same options as sbatch's input
environment variables, and which of them the submitted job did not get."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from bot.core.slurm.argv import check_option_value
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.records import JobRecord
from bot.core.slurm.values import format_duration, format_slurm_size, parse_sbatch_time
from bot.core.text import N_
from bot.core.units import parse_size

_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables that would change how `sbatch` itself runs on the login node, not just the job.
_ENV_KEYS_FORBIDDEN = re.compile(r"^(SBATCH_|SLURM_|PATH$|LD_|SALLOC_|SRUN_)")


def _option(flag: str, *, override: Literal["str", "size"] | None = None,
            input_env: str | None = None) -> Any:
    """A field passed as `flag=value`; `override` is the type a recipe's `key=value` override
    of it declares (`str`, `size`), None when a recipe override cannot replace it;
    `input_env` is the sbatch input environment variable that sets the same option (every
    overridable option has one: that is how a site submit wrapper receives it)."""
    return field(default=None,
                 metadata={"sbatch": flag, "override": override, "input_env": input_env})


@dataclass(frozen=True)
class SubmitSpec:
    """One `sbatch` call: the job name, the script and its arguments, and every option.

    The recipe (`RecipeConfig.submit_spec`) and its overrides produce it, `sbatch_argv`
    consumes it; a new sbatch keyword is one `_option` field here (plus, when a recipe sets
    it, the recipe field of the same name). `script_path` None means the script comes on
    stdin. `env` joins the login environment the job inherits (see `check_env`). Checked
    on construction: a ValueError names the value that cannot be passed safely.
    """

    job_name: str
    script_path: str | None = None
    args: tuple[str, ...] = ()
    partition: str | None = _option("--partition", override="str", input_env="SBATCH_PARTITION")
    account: str | None = _option("--account", override="str", input_env="SBATCH_ACCOUNT")
    qos: str | None = _option("--qos", override="str", input_env="SBATCH_QOS")
    gres: str | None = _option("--gres", override="str", input_env="SBATCH_GRES")
    mem: str | None = _option("--mem", override="size", input_env="SBATCH_MEM_PER_NODE")
    time: str | None = _option("--time", override="str", input_env="SBATCH_TIMELIMIT")
    exclude: str | None = _option("--exclude", override="str", input_env="SBATCH_EXCLUDE")
    array: str | None = _option("--array", input_env="SBATCH_ARRAY_INX")  # see array_spec
    output: str | None = _option("--output", input_env="SBATCH_OUTPUT")
    error: str | None = _option("--error", input_env="SBATCH_ERROR")
    workdir: str | None = _option("--chdir")
    begin: str | None = _option("--begin")
    env: Mapping[str, str] = field(default_factory=dict)
    hold: bool = False
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_job_name(self.job_name)
        object.__setattr__(self, "args", tuple(str(a) for a in self.args))
        object.__setattr__(self, "extra", tuple(str(e) for e in self.extra))
        object.__setattr__(self, "env", dict(self.env))
        check_env(self.env)
        for name, flag in SBATCH_OPTIONS.items():
            value = getattr(self, name)
            if value is not None:
                check_option_value(flag, value)
        for item in self.extra:
            if not item.startswith("-"):
                raise ValueError(
                    f"extra sbatch option {item!r} must start with '-' (write --opt=value)"
                )
        if self.script_path is not None:
            check_script_path(self.script_path)
        if self.workdir is not None:
            check_workdir(self.workdir)
        for path in {self.output, self.error} - {None}:
            check_log_path(str(path))


# field name -> sbatch option, in the order they are written.
SBATCH_OPTIONS: dict[str, str] = {
    f.name: f.metadata["sbatch"] for f in fields(SubmitSpec) if "sbatch" in f.metadata
}
# Options a recipe sets under the same name and a `key=value` override may replace, with the
# type the override declares.
RECIPE_OVERRIDABLE_OPTIONS: dict[str, Literal["str", "size"]] = {
    f.name: f.metadata["override"] for f in fields(SubmitSpec) if f.metadata.get("override")
}
# field name -> sbatch's input environment variable for it (`man sbatch`, INPUT ENVIRONMENT
# VARIABLES; all present in Slurm 22.05).
SBATCH_INPUT_ENV: dict[str, str] = {
    f.name: f.metadata["input_env"] for f in fields(SubmitSpec) if f.metadata.get("input_env")
}


_JOB_NAME_REFUSED = re.compile(r"[,\x00-\x1f\x7f]")


def check_job_name(name: str) -> str:
    """`name` when Slurm lists can name it: `squeue --name=` and `sacct --name=` (the lost
    submit's lookup) read a comma as a list of names, a control character splits their
    lines. ValueError saying the fix otherwise."""
    if not name or _JOB_NAME_REFUSED.search(name):
        raise ValueError(f"job name {name!r} must be non-empty, without commas or control "
                         "characters (newline, tab, …)")
    return name


def check_script_path(path: str) -> str:
    """`path` when sbatch can take it as its script (after the options); ValueError saying
    the fix otherwise."""
    if not path or path.startswith("-"):
        raise ValueError(f"script path {path!r} must not be empty or start with '-' (use ./)")
    if path.startswith("~"):
        # sbatch gets its argv quoted: no shell expands the tilde, and sbatch opens the file
        # by that literal name ("Unable to open file ~/train.sbatch").
        raise ValueError(f"script path {path!r} starts with '~', which sbatch does not expand: "
                         "give the absolute path (/home/<user>/...) or a path relative to the "
                         "recipe's workdir")
    return path


def check_workdir(path: str) -> str:
    """`path` when sbatch's `--chdir` (and a probe's `srun --chdir`) can take it; ValueError
    saying the fix otherwise. The option goes quoted, never through a shell: `~/x` is taken by
    that literal name, not as the home's x."""
    if path.startswith("~"):
        raise ValueError(f"workdir {path!r} starts with '~', which sbatch does not expand: "
                         "give the absolute path (/home/<user>/...)")
    return path


def check_log_path(path: str) -> str:
    """`path` when sbatch's `--output`/`--error` (a site wrapper's SBATCH_OUTPUT/SBATCH_ERROR)
    can take it; ValueError saying the fix otherwise. They go quoted, never through a shell:
    `~/logs/x.out` is a directory named `~` under the job's working directory, which
    slurmstepd cannot open, and where the watcher never looks."""
    if path.startswith("~"):
        raise ValueError(f"log_path {path!r} starts with '~', which sbatch does not expand (its "
                         "--output and --error, or SBATCH_OUTPUT and SBATCH_ERROR): give the "
                         "absolute path (/home/<user>/...) or a path relative to the recipe's "
                         "workdir")
    return path


def check_srun_path(path: str) -> str:
    """`path` when a probe's srun command line can take it as a file (its python, an import
    directory); ValueError saying the fix otherwise: srun gets it quoted, and neither srun
    nor the `exec "$@"` after env_setup expands `~`."""
    if path.startswith("~"):
        raise ValueError(f"{path!r} starts with '~', which srun does not expand: give the "
                         "absolute path (/home/<user>/...)")
    return path


def check_read_path(field: str, path: str, reader: str) -> str:
    """`path` when trainbot and the job can use it on the cluster as written: `field` names
    the recipe's key, `reader` what takes the path without a shell (the login node's SFTP, the
    job's environment). ValueError saying the fix otherwise: neither expands `~`, so
    `~/ckpt` is a directory literally named `~`, never the home's ckpt."""
    if path.startswith("~"):
        raise ValueError(f"{field} {path!r} starts with '~', which {reader} does not expand: "
                         "give the absolute path (/home/<user>/...)")
    return path


def check_env(env: Mapping[str, str]) -> None:
    """Check the job's extra environment; raises ValueError naming the key (never the value).

    Keys must be shell identifiers; values may hold anything but NUL (commas, quotes and
    newlines included: the SSH runner exports them on the login node from its stdin, never
    through `--export`, whose comma-separated syntax cannot quote them, nor on a command
    line, where `ps` would show them). Keys that would steer sbatch itself (SBATCH_*,
    SLURM_*, PATH, LD_*) are refused: put those in the script.
    """
    for key, value in env.items():
        if not _ENV_KEY_RE.match(key):
            raise ValueError(
                f"environment variable name {key!r} is not valid: use letters, digits and _ "
                "and do not start with a digit"
            )
        if _ENV_KEYS_FORBIDDEN.match(key):
            raise ValueError(
                f"environment variable {key!r} would change how sbatch runs on the login node; "
                "set it inside the job script instead"
            )
        if "\x00" in str(value):
            raise ValueError(f"environment variable {key!r} holds a NUL byte")


def sbatch_argv(spec: SubmitSpec) -> list[str]:
    """argv of `sbatch --parsable …`: options as `--opt=value` (a value can never become an
    option), the script path (or the script on stdin when None) and its arguments after it.

    The job environment is the login shell's plus `spec.env`, which is not in this argv: the
    caller runs it with `spec.env` as the runner's environment (exported on the login node,
    see `check_env`), and `--export=ALL` hands it to the job.
    """
    argv = ["sbatch", "--parsable", f"--job-name={spec.job_name}"]
    for name, flag in SBATCH_OPTIONS.items():
        value = getattr(spec, name)
        if value is not None:
            argv.append(f"{flag}={value}")
    if spec.env:
        argv.append("--export=ALL")
    if spec.hold:
        argv.append("--hold")
    argv += spec.extra
    if spec.script_path is not None:
        argv.append(spec.script_path)
        argv += spec.args
    elif spec.args:
        # sbatch takes script arguments only after a script file; stdin is that file.
        argv.append("/dev/stdin")
        argv += spec.args
    return argv


def parse_sbatch_output(text: str) -> int:
    """The job id from `sbatch --parsable` (`123` or `123;cluster`)."""
    for line in text.splitlines():
        match = re.fullmatch(r"\s*(\d+)(?:;\S+)?\s*", line)
        if match:
            return int(match[1])
    raise SlurmParseError(N_("sbatch --parsable printed no job id: %(out)s",
                             out=repr(text.strip()[:200])))


# sbatch refusing a job for now, for reasons that pass by themselves (its submit refused as
# the controller's messages say, src/common/slurm_errno.c: a limit on jobs submitted, which
# jobs ending lift, named by its pending reason on a line of its own
# (QOSMaxSubmitJobPerUserLimit, AssocGrpSubmitJobsLimit...); the controller's own job count
# or rate limit; a partition inactive or drained; or sbatch's own words for a controller too
# busy to take it). Any other refusal (an account, a partition or a QOS that is not there,
# a size or time over its limit) is the same at each try: so is ESLURM_ACCOUNTING_POLICY's
# one sentence said alone ("Job violates accounting/QOS policy (job submit limit, user's
# size and/or time limits)"), which names the submit limit among others for every
# accounting refusal.
SBATCH_REFUSED_FOR_NOW_RE = re.compile(
    r"MaxSubmitJob|SubmitJobsLimit|MaxJobCount limit reached|"
    r"Rate limit exceeded|temporarily unable to accept job|Resource temporarily unavailable|"
    r"try again later|partition configuration not available now|"
    r"Required partition not available \(inactive or drain\)|"
    r"I/O error writing script/environment to file",
    re.IGNORECASE)


def sbatch_refused_for_now(stderr: str) -> bool:
    """Does sbatch's `stderr` refuse its job for a reason that passes by itself (a submit
    limit, a busy controller), so the same submit may be taken later?"""
    return SBATCH_REFUSED_FOR_NOW_RE.search(stderr) is not None


def sbatch_input_env(options: Mapping[str, Any]) -> dict[str, str]:
    """sbatch's input environment variables for `options` (field name -> value; None: unset):
    how a site submit wrapper that runs sbatch gets a recipe's Slurm options without knowing
    about them. sbatch reads them as its own options, below its command line (a wrapper's
    own `--mem` wins) and above the script's `#SBATCH` lines. KeyError for an option that has
    no input variable."""
    env = {}
    for name, value in options.items():
        if value is not None:
            variable = SBATCH_INPUT_ENV[name]
            env[variable] = check_option_value(variable, value)
    return env


def options_not_applied(requested: Mapping[str, Any], job: JobRecord) -> dict[str, str]:
    """Requested sbatch options (field name -> value as given) the submitted job does not
    have: name -> the job's own value, as Slurm writes it.

    Compared where the job's record shows the option: partition (one of a list), account
    and QOS (Slurm lower-cases them), mem (bytes per node), time (whole minutes, as Slurm
    rounds). gres, and an option whose value the record lacks, cannot be compared and are
    not reported; nor are mem 0 (Slurm: all of each node's memory, which the record shows as
    the node's size) and time 0 (Slurm: no limit, which the record shows as the partition's
    maximum or UNLIMITED), whatever the job's record says is what they asked for."""
    differ: dict[str, str] = {}
    for name, value in requested.items():
        text = str(value)
        if name == "partition" and job.partition:
            if job.partition not in text.split(",") and job.partition != text:
                differ[name] = job.partition
        elif name in ("account", "qos") and getattr(job, name):
            if getattr(job, name).casefold() != text.casefold():
                differ[name] = getattr(job, name)
        elif name == "mem" and job.mem_limit_bytes is not None:
            want_bytes = parse_size(text)
            if want_bytes != 0 and want_bytes != job.mem_limit_bytes:
                differ[name] = format_slurm_size(job.mem_limit_bytes)
        elif name == "time" and job.time_limit_s is not None:
            want = parse_sbatch_time(text)
            if want and want != job.time_limit_s:
                differ[name] = format_duration(job.time_limit_s)
    return differ
