"""The `recipes:` section: what to submit, how to watch it, who may act on it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from bot.config.models._base import (
    _ENV_NAME_RE,
    _OVERRIDE_KEY_RE,
    _SLACK_USER_RE,
    _SLURM_TIME_RE,
    INT_MOST,
    SLURM_OVERRIDE_FIELDS,
    OverrideType,
    _Model,
)
from bot.config.models.policy import RecipePolicy
from bot.core.checkpoints import CompletenessRule
from bot.core.memory_budget import parse_count
from bot.core.slurm.argv import check_option_value
from bot.core.slurm.array_spec import parse_array_spec
from bot.core.slurm.sbatch import (
    RECIPE_OVERRIDABLE_OPTIONS,
    SBATCH_OPTIONS,
    SubmitSpec,
    check_env,
    check_job_name,
    check_log_path,
    check_read_path,
    check_script_path,
    check_srun_path,
    check_workdir,
)
from bot.core.text import N_
from bot.core.units import check_slurm_size, parse_size

# A recipe field that SubmitSpec names otherwise (the rest have SubmitSpec's names).
_SPEC_FIELD = {"log_path": "output"}
# The Slurm options that say where a recipe's job runs (RecipeConfig.placement_flags).
PLACEMENT_OPTIONS = ("partition", "account", "qos", "exclude")


class PreflightConfig(_Model):
    """What `trainbot preflight` needs to estimate a checkpoint save's host memory peak."""

    params: str | None = Field(
        None,
        description="Model parameter count (1.4B, 350M, 1.4e9); default: read from the "
        "latest DCP checkpoint's metadata.",
    )
    ranks_per_node: int | None = Field(
        None, ge=1, description="Training ranks per node; default: the GPUs in gres."
    )
    workers_per_rank: int | None = Field(
        None, ge=0, description="DataLoader num_workers of each rank."
    )
    worker_rss: str | None = Field(
        None,
        description="Host memory of one DataLoader worker (e.g. 2.3G), as measured by "
        "`trainbot probe dataloader`; default: 2 GiB assumed and said so.",
    )
    save_mode: Literal["full_per_rank", "sharded", "rank0"] = Field(
        "full_per_rank",
        description="How a save materialises state on the CPU: every rank gathers the full "
        "state (full_per_rank, job 87870), a DCP sharded state dict (sharded), or rank 0 only.",
    )
    ema: bool = Field(True, description="The run keeps an fp32 EMA copy of the weights.")

    @field_validator("params")
    @classmethod
    def _params(cls, value: str | None) -> str | None:
        if value is not None:
            parse_count(value)
        return value

    @field_validator("worker_rss")
    @classmethod
    def _worker_rss(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)
        return value


class DataLoaderProbeConfig(_Model):
    """How `trainbot probe dataloader` runs for a recipe on its cluster (the "Run DataLoader
    probe" button of a leak incident): one srun task in the recipe's workdir after its
    env_setup, with its env."""

    factory: str = Field(
        description="MODULE:FACTORY of a function returning the run's map-style Dataset, "
        "importable from the recipe's workdir (or `path`), e.g. mydata.datasets:build_train."
    )
    path: list[str] = Field(
        default_factory=list, description="Extra directories on the cluster to import from."
    )
    workers: int = Field(2, ge=1, le=64, description="DataLoader workers the probe starts.")
    samples: int = Field(160, ge=8, le=100_000, description="Samples the probe loads in all.")
    python: str = Field("python3", description="Python of the recipe's env on the node.")
    mem: str | None = Field(
        None, description="Memory of the probe's srun task (--mem, e.g. 8G); default: the "
        "partition's default."
    )
    timeout_s: float = Field(
        900.0, gt=0, le=6 * 3600, description="Deadline of the whole probe (srun included)."
    )

    @field_validator("mem")
    @classmethod
    def _probe_mem(cls, value: str | None) -> str | None:
        if value is not None:
            check_slurm_size(value)  # srun's --mem, as typed
        return value

    @field_validator("python")
    @classmethod
    def _python(cls, value: str) -> str:
        return check_srun_path(value)  # srun's command, quoted: a name on PATH or a path

    @field_validator("path")
    @classmethod
    def _path(cls, value: list[str]) -> list[str]:
        for directory in value:
            check_srun_path(directory)  # the node script's sys.path, as given
        return value

    @field_validator("factory")
    @classmethod
    def _factory(cls, value: str) -> str:
        module, sep, attr = value.partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z_][\w.]*", module) or \
                not re.fullmatch(r"[A-Za-z_][\w.]*", attr):
            raise ValueError(f"{value!r} is not MODULE:FACTORY (e.g. "
                             "mydata.datasets:build_train_dataset)")
        return value


class CheckpointConfig(_Model):
    """Where a recipe's checkpoints live and how a complete one is recognised."""

    dir: str = Field(
        description="Checkpoint directory on the cluster: absolute, or under the SSH user's "
        "home (relative or `~/...`), which trainbot expands before the lookup and the job's "
        "TRAINBOT_RESUME_FROM.",
    )
    pointer_file: str | None = Field(
        "latest_checkpoint.txt",
        description="File in `dir` naming the latest complete checkpoint (preferred if "
        "present); null when the recipe writes none.",
    )
    glob: str | list[str] = Field(
        "iter_*",
        description="Checkpoint subdirectory pattern(s): iter_* or [iter_*, checkpoint_step_*].",
    )
    complete_rule: str = Field(
        "dcp",
        description="When a checkpoint dir counts as complete: 'dcp' (.metadata present), "
        "'marker:NAME' (file NAME present) or 'any'.",
    )

    @field_validator("complete_rule")
    @classmethod
    def _rule(cls, value: str) -> str:
        CompletenessRule.parse(value)
        return value

    @field_validator("glob")
    @classmethod
    def _glob(cls, value: str | list[str]) -> str | list[str]:
        if not value or (isinstance(value, list) and not all(value)):
            raise ValueError("glob is empty; use a pattern such as iter_*")
        return value

    def globs(self) -> tuple[str, ...]:
        """The checkpoint directory patterns as a tuple."""
        return (self.glob,) if isinstance(self.glob, str) else tuple(self.glob)


class MentionsConfig(_Model):
    """Whom a run's thread @-mentions, and when: few enough mentions that people read them."""

    incidents: Literal["first", "every", "never"] = Field(
        "first", description="Mention the owners on an incident: on the thread's first one "
        "only (first), on every one (every), or never."
    )
    prompts: Literal["owners", "approvers", "none"] = Field(
        "owners", description="Whom a prompt that waits for a decision (resubmit, cancel, "
        "hold) mentions: the recipe's owners, its approvers, or nobody."
    )
    escalate_to: list[str] = Field(
        default_factory=list,
        description="Who an unanswered prompt is escalated to after policy.escalate_after_s: "
        "Slack user ids, slack.groups names or Slack user-group ids (S…, mentioned as "
        "@group); empty = the recipe's approvers.",
    )

    @field_validator("escalate_to")
    @classmethod
    def _escalate_to(cls, value: list[str]) -> list[str]:
        for i, who in enumerate(value):
            if not who or any(ch in who for ch in "<>@!| "):
                raise ValueError(f"escalate_to[{i}] {who!r}: give a user id (U…), a "
                                 "slack.groups name or a user-group id (S…), not a mention")
        return value


class RecipeConfig(_Model):
    """One named training run that can be submitted, watched and resumed."""

    cluster: str = Field(description="Name of the cluster (under `clusters:`) to run on.")
    sbatch_script: str | None = Field(
        None, description="Batch script path on the cluster, submitted with sbatch."
    )
    submit_command: list[str] | None = Field(
        None,
        description="Site submit wrapper as an argv list (never a shell string); it must "
        "print the Slurm job id. It gets `args`, and the recipe's partition, account, qos, "
        "gres, mem and time (overrides applied) as sbatch's input variables SBATCH_PARTITION, "
        "SBATCH_ACCOUNT, SBATCH_QOS, SBATCH_GRES, SBATCH_MEM_PER_NODE, SBATCH_TIMELIMIT, and "
        "log_path as SBATCH_OUTPUT and SBATCH_ERROR (stdout and stderr both in the watched "
        "log, over the script's own #SBATCH --output/--error, unless the wrapper passes its "
        "own on sbatch's command line); an overridden option its job did not get is reported "
        "as not applied. These variables stay in the job's environment (sbatch's --export=ALL): "
        "an sbatch the job runs itself (submitting its next job) gets them too, its output "
        "going to log_path, unless it runs without them (env -u SBATCH_OUTPUT ...).",
    )
    args: list[str] = Field(default_factory=list, description="Arguments for the script.")
    partition: str | None = Field(None, description="Slurm partition (--partition).")
    account: str | None = Field(None, description="Slurm account (--account).")
    qos: str | None = Field(None, description="Slurm QOS (--qos).")
    gres: str | None = Field(None, description="Generic resources, e.g. gpu:4 (--gres).")
    mem: str | None = Field(None, description="Memory per node as Slurm writes it (--mem 400G).")
    time: str | None = Field(None, description="Time limit as Slurm writes it (--time 2-00:00:00).")
    exclude: str | None = Field(None, description="Nodes to leave out (--exclude); a resubmit "
                                "after a GPU or node fault adds the faulty node itself.")
    array: str | None = Field(
        None,
        description="Submit a job array (sbatch --array), in Slurm's grammar: 0-15, 0-15:2, "
        "1,3,5-7, with %N to run at most N tasks at once (0-15%4). The thread is the whole "
        "array's, a row per task; a task that fails with a resumable cause is resubmitted "
        "alone (--array=N, same job name) from its own checkpoint, so `checkpoint.dir` must "
        "hold %a (the task id, e.g. /ckpt/sweep/task_%a) — the job writes there with "
        "$SLURM_ARRAY_TASK_ID. Its log_path takes %A (array id) and %a.",
    )
    job_name: str | None = Field(
        None, description="Slurm job name, kept across resubmits. Default: the recipe name."
    )
    workdir: str | None = Field(None, description="Working directory on the cluster (--chdir).")
    env_setup: str | None = Field(
        None,
        description="Shell snippet that activates the job's environment (e.g. `source "
        "~/venv/bin/activate`); preflight runs its worker probe after it, as the job would.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment variables exported to the job. Their values count as secrets: "
        "redacted from every error text (those shorter than 4 characters excepted).",
    )
    log_path: str | None = Field(
        None, description="Job stdout path on the cluster; %x = job name, %j = job id."
    )
    sampler_path: str | None = Field(
        None,
        description="JSON-lines file written by `trainbot sampler` in the job (its %x, %j, "
        "%A, %a, %N, %u expanded as log_path's are), tailed like the log for per-role RSS.",
    )
    nccl_flight_recorder: str | None = Field(
        None,
        description="A directory the login node can read (a shared filesystem) for PyTorch's "
        "NCCL flight-recorder dumps: the job gets TORCH_NCCL_TRACE_BUFFER_SIZE=2000, "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1 and TORCH_NCCL_DEBUG_INFO_TEMP_FILE=<dir>/nccl_trace_rank_ "
        "(the recipe's `env` wins), and after an NCCL timeout the thread says the last "
        "collective each rank reached and which fell behind.",
    )
    checkpoint: CheckpointConfig | None = Field(
        None, description="Checkpoint location; without it resubmits start from scratch."
    )
    dataloader_probe: DataLoaderProbeConfig | None = Field(
        None,
        description="The run's DataLoader factory: a leak incident then offers a \"Run "
        "DataLoader probe\" button that measures worker memory per sample on the cluster.",
    )
    target_iter: int | None = Field(
        None, ge=1, le=INT_MOST, description="Iteration at which the run is finished."
    )
    preflight: PreflightConfig = Field(
        default_factory=PreflightConfig,
        description="Model facts for preflight's checkpoint memory budget.",
    )
    owners: list[str] = Field(
        default_factory=list, description="Slack user ids (U…/W…) paged on incidents."
    )
    mentions: MentionsConfig = Field(
        default_factory=MentionsConfig,
        description="When the thread mentions the owners, and whom prompts mention and "
        "escalate to.",
    )
    lang: str | None = Field(
        None, description="Language of this recipe's messages (en, or one with a message "
        "catalogue: templates/locale/<lang>/LC_MESSAGES/messages.po); default slack.lang."
    )
    channel: str | None = Field(
        None, description="Channel name (under slack.channels) for this recipe's threads."
    )
    overridable: dict[str, OverrideType] = Field(
        default_factory=dict,
        description="Keys allowed in `/train submit RECIPE key=value` and their types "
        "(int|float|str|size|bool). partition/account/qos/gres/mem/time/target_iter replace "
        "the recipe field; any other key is appended to the job's args as key=value.",
    )
    submitters: list[str] = Field(
        default_factory=list,
        description="Slack user ids or slack.groups names who may submit/resume (as may "
        "the owners and approvers); empty = anyone: in the recipe's `channel` when it has "
        "one, else in any channel or DM.",
    )
    approvers: list[str] = Field(
        default_factory=list,
        description="Slack user ids or group names who may approve actions; empty = "
        "slack.approvers.",
    )
    policy: RecipePolicy = Field(
        default_factory=RecipePolicy, description="Overrides of the policy defaults."
    )
    metric_regexes: list[str] = Field(
        default_factory=list,
        description="Extra regexes for metric lines, with named groups (iter, loss, "
        "rss_gib, sec_per_iter, …).",
    )

    @model_validator(mode="after")
    def _one_submit_way(self) -> RecipeConfig:
        if (self.sbatch_script is None) == (self.submit_command is None):
            raise ValueError(
                "set exactly one of sbatch_script (a script path on the cluster) or "
                "submit_command (the site wrapper as an argv list)"
            )
        if self.submit_command is not None and not self.submit_command:
            raise ValueError("submit_command is empty; give the wrapper as an argv list")
        if self.array is not None and self.checkpoint is not None \
                and "%a" not in self.checkpoint.dir:
            raise ValueError(
                f"array: the tasks of an array each resume from their own checkpoints, but "
                f"checkpoint.dir {self.checkpoint.dir!r} has no %a (the task id); write e.g. "
                f"{self.checkpoint.dir.rstrip('/')}/task_%a and save there with "
                "$SLURM_ARRAY_TASK_ID")
        return self

    @field_validator("array")
    @classmethod
    def _array(cls, value: str | None) -> str | None:
        if value is not None:
            parse_array_spec(value)
        return value

    @field_validator("mem")
    @classmethod
    def _mem(cls, value: str | None) -> str | None:
        if value is not None:
            check_slurm_size(value)  # sbatch's --mem, as typed; a Text: an override says it
        return value

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_TIME_RE.match(value):
            # a sentence (Text): an override's refusal says it in the recipe's language
            raise ValueError(N_(
                "%(value)r is not a Slurm time limit; use minutes, HH:MM:SS or D-HH:MM:SS "
                "(e.g. 90, 04:00:00, 2-00:00:00)", value=value))
        return value

    @field_validator("owners")
    @classmethod
    def _owners(cls, value: list[str]) -> list[str]:
        for i, user in enumerate(value):
            if not _SLACK_USER_RE.match(user):
                raise ValueError(
                    f"owners[{i}] {user!r} is not a Slack user id; use the member id "
                    "(U… or W…, from the user's profile → Copy member ID)"
                )
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        """An sbatch_script recipe's env goes through SubmitSpec's own check (refused here,
        not at the first submit); a submit_command recipe's goes to the site wrapper, which
        only needs variable names (SBATCH_*, PATH, LD_* are its own business)."""
        if info.data.get("submit_command") is None:
            check_env(value)
            return value
        for name in value:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"env key {name!r} is not a valid variable name")
        return value

    @field_validator("partition", "account", "qos", "gres", "time", "exclude", "workdir",
                     "log_path")
    @classmethod
    def _sbatch_option(cls, value: str | None, info: ValidationInfo) -> str | None:
        """SubmitSpec's check of the sbatch option the field becomes (one line, not empty)."""
        if value is not None:
            name = info.field_name or ""
            check_option_value(SBATCH_OPTIONS[_SPEC_FIELD.get(name, name)], value)
            if name == "workdir":
                check_workdir(value)
            elif name == "log_path":
                check_log_path(value)
        return value

    @field_validator("sampler_path")
    @classmethod
    def _sampler_path(cls, value: str | None) -> str | None:
        # the watcher reads it over SFTP; the job is told it as written
        return None if value is None else check_read_path(
            "sampler_path", value, "SFTP (the watcher's read of the samples)")

    @field_validator("nccl_flight_recorder")
    @classmethod
    def _nccl_flight_recorder(cls, value: str | None) -> str | None:
        # the job gets it in TORCH_NCCL_DEBUG_INFO_TEMP_FILE; trainbot lists it over SFTP
        return None if value is None else check_read_path(
            "nccl_flight_recorder", value,
            "PyTorch (TORCH_NCCL_DEBUG_INFO_TEMP_FILE) or SFTP (trainbot's read of the dumps)")

    @field_validator("job_name")
    @classmethod
    def _job_name(cls, value: str | None) -> str | None:
        return None if value is None else check_job_name(value)

    @field_validator("sbatch_script")
    @classmethod
    def _sbatch_script(cls, value: str | None) -> str | None:
        return None if value is None else check_script_path(value)

    @field_validator("overridable")
    @classmethod
    def _overridable(cls, value: dict[str, str]) -> dict[str, str]:
        for key, kind in value.items():
            if not _OVERRIDE_KEY_RE.match(key):
                raise ValueError(
                    f"override key {key!r} must be letters, digits, '_', '.', '-' "
                    "starting with a letter or '_'"
                )
            want = SLURM_OVERRIDE_FIELDS.get(key)
            if want is not None and kind != want:
                raise ValueError(f"override {key!r} replaces the recipe field; its type is {want}")
        return value

    @field_validator("metric_regexes")
    @classmethod
    def _regexes(cls, value: list[str]) -> list[str]:
        for i, pattern in enumerate(value):
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"metric_regexes[{i}] {pattern!r} does not compile: {exc}"
                ) from exc
            if not compiled.groupindex:
                raise ValueError(
                    f"metric_regexes[{i}] {pattern!r} has no named group; name what it "
                    "captures, e.g. (?P<iter>\\d+)"
                )
        return value

    def compiled_metric_regexes(self) -> list[re.Pattern[str]]:
        """The recipe's metric regexes, compiled (they were checked at load)."""
        return [re.compile(p) for p in self.metric_regexes]

    def sbatch_options(self) -> dict[str, str | None]:
        """This recipe's Slurm options as SubmitSpec fields (None: unset), overrides applied:
        its overridable options, `array`, and `output` and `error` both at `log_path` (the
        same pattern, so an array's %A/%a expand alike). A script's own `#SBATCH --error=…`
        would otherwise keep stderr (tracebacks, slurmstepd's CANCELLED / TIME LIMIT lines)
        out of the log trainbot watches; slurmstepd opens one file for the two when their
        names are equal, so lines keep their order and `--open-mode` applies to it once
        (Slurm 22.05 and 24.11). sbatch gets them on its command line (`submit_spec`), a site
        wrapper as sbatch's input variables (bot.services.send_job), which outrank the
        script's `#SBATCH` lines too."""
        options: dict[str, str | None] = {
            name: getattr(self, name) for name in RECIPE_OVERRIDABLE_OPTIONS}
        return {**options, "array": self.array, "output": self.log_path,
                "error": self.log_path}

    def placement_flags(self) -> list[str]:
        """Where this recipe's job runs, as the options its submit gives sbatch
        (`sbatch_options`: partition, account, qos, exclude, those set), `--opt=value`: a
        step run beside the job (the DataLoader probe's srun, its command run by hand) gets
        them so it runs where the job does, not in the cluster's defaults."""
        options = self.sbatch_options()
        return [f"{SBATCH_OPTIONS[name]}={options[name]}" for name in PLACEMENT_OPTIONS
                if options[name]]

    def submit_spec(self, *, job_name: str, env: Mapping[str, str]) -> SubmitSpec:
        """The sbatch call of this recipe's `sbatch_script` under `job_name`, with `env` and
        its Slurm options (`sbatch_options`: stdout and stderr both to `log_path`)."""
        options: dict[str, Any] = self.sbatch_options()  # SubmitSpec's option fields
        return SubmitSpec(job_name=job_name, script_path=self.sbatch_script, args=tuple(self.args),
                          workdir=self.workdir, env=env, **options)
