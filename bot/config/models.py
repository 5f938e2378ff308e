"""The config file's schema: pydantic models with a description on every field.

Unknown keys are errors, so a typo never passes silently. Secrets (Slack tokens) are never
fields: `read_slack_secrets` takes them from the environment.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    create_model,
    field_validator,
    model_validator,
)

from bot.core.checkpoints import CompletenessRule
from bot.core.memory_budget import parse_count
from bot.core.policy import DEFAULT_POLICY
from bot.core.redact import Redactor, url_secrets
from bot.core.slurm.sbatch import RECIPE_OVERRIDABLE_OPTIONS, SubmitSpec
from bot.core.units import parse_size

if TYPE_CHECKING:
    from bot.cluster.ssh import SSHSettings

OverrideType = Literal["int", "float", "str", "size", "bool"]

# Recipe fields a `key=value` override may replace (with the type the override must declare):
# the sbatch options of `SubmitSpec` a recipe sets by name, and target_iter. Any other
# overridable key is passed to the job as a literal `key=value` argument.
SLURM_OVERRIDE_FIELDS: dict[str, OverrideType] = {
    **RECIPE_OVERRIDABLE_OPTIONS,
    "target_iter": "int",
}

_SLACK_USER_RE = re.compile(r"^[UW][A-Z0-9]{2,}$")
_SLACK_USERGROUP_RE = re.compile(r"^S[A-Z0-9]{2,}$")
_SLACK_CHANNEL_ID_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")
_OVERRIDE_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Slurm --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (or UNLIMITED/INFINITE).
_SLURM_TIME_RE = re.compile(r"^(\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$")


class _Model(BaseModel):
    # .inf and .nan are never meant: an infinite timeout or threshold is a typo, not a setting
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# --------------------------------------------------------------------------------------------
# clusters


class ClusterConfig(_Model):
    """How trainbot reaches one cluster's login node over SSH."""

    host: str = Field(description="Login node host name or IP, or a Host alias of ssh_config.")
    port: int = Field(22, ge=1, le=65535, description="SSH port of the login node.")
    user: str | None = Field(
        None, description="Remote user name; may be omitted when ssh_config names the User."
    )
    key_file: str | None = Field(
        None, description="Private key file for public-key auth (~ is expanded)."
    )
    use_agent: bool = Field(False, description="Authenticate with keys from the ssh-agent.")
    known_hosts: str | None = Field(
        None,
        description="known_hosts file holding the login node's host key; unknown or changed "
        "keys are refused. Default: ~/.ssh/known_hosts.",
    )
    proxy_jump: str | None = Field(
        None, description="Bastion to jump through, as in ssh -J: [user@]host[:port]."
    )
    ssh_config: str | None = Field(
        None,
        description="OpenSSH client config file (e.g. ~/.ssh/config) in which `host` is a "
        "Host alias; its HostName/User/Port/IdentityFile/ProxyJump are used. A ProxyCommand "
        "is refused (trainbot runs no local command to connect): use ProxyJump.",
    )
    connect_timeout: float = Field(10.0, gt=0, description="Seconds to wait for SSH connect.")
    command_timeout: float = Field(
        60.0, gt=0, description="Default seconds one remote command may run before abandoned."
    )
    sftp_timeout: float = Field(
        15.0, gt=0, description="Seconds one SFTP request (stat, read of a log) may wait for "
        "its answer; a path that does not answer (a hung filesystem) is given up on while the "
        "other reads go on.",
    )
    use_json: bool = Field(
        False,
        description="Read squeue and sacct as --json instead of their columns. Refused, with "
        "the reason in the log and in `trainbot doctor`, on Slurm releases whose JSON is known "
        "wrong (before 23.02: sacct --json reports failed exit codes as 0).",
    )
    per_gpu_mem_cap: str | None = Field(
        None,
        description="The site's admission cap on --mem per GPU (e.g. 244000M); preflight's "
        "checkpoint memory budget says when a save cannot fit under it.",
    )
    mem_floor: str | None = Field(
        None,
        description="The site's memory accounting floor for a job (e.g. 563200M), if any.",
    )
    py_spy: str | None = Field(
        None,
        description="Path of py-spy on the cluster's nodes, when the site installs it; by "
        "default trainbot copies the py-spy of its own wheel (hash-checked) under the bot "
        "user's home (~/.cache/trainbot/), which the nodes must share.",
    )
    stacks_timeout: float = Field(
        25.0, gt=0, le=600,
        description="Seconds a collection of a job's Python stacks (srun + py-spy on every "
        "node) may take before it is given up with a `timed out` line.",
    )
    stacks_native: bool = Field(
        False, description="Dump native (C/C++) frames too (py-spy --native): slower, shows "
        "where NCCL or a C extension waits.",
    )

    @field_validator("per_gpu_mem_cap", "mem_floor")
    @classmethod
    def _sizes(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)
        return value

    @field_validator("proxy_jump")
    @classmethod
    def _proxy_jump(cls, value: str | None) -> str | None:
        if value is not None:
            from bot.cluster.errors import ClusterError
            from bot.cluster.ssh import parse_proxy_jump

            try:
                parse_proxy_jump(value, "")
            except ClusterError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _needs_a_credential(self) -> ClusterConfig:
        if not (self.key_file or self.use_agent or self.ssh_config):
            raise ValueError(
                "no SSH credential: set key_file (a private key path), use_agent: true, "
                "or ssh_config (a file whose Host entry names an IdentityFile)"
            )
        return self

    def ssh_settings(self) -> SSHSettings:
        """The SSH runner's settings for this cluster (paths with ~ expanded)."""
        from bot.cluster.ssh import SSHSettings

        return SSHSettings(
            host=self.host,
            port=self.port,
            user=self.user,
            key_file=_expand(self.key_file),
            known_hosts=_expand(self.known_hosts),
            use_agent=self.use_agent,
            proxy_jump=self.proxy_jump,
            ssh_config=_expand(self.ssh_config),
            connect_timeout=self.connect_timeout,
            command_timeout=self.command_timeout,
            sftp_timeout=self.sftp_timeout,
        )


def _expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None


# --------------------------------------------------------------------------------------------
# policy


class PolicyConfig(_Model):
    """Watcher and retry policy; the defaults for every recipe (a recipe may override any).
    The defaults of the fields the core policy reads are its defaults (DEFAULT_POLICY)."""

    retry_budget: int = Field(
        DEFAULT_POLICY.retry_budget,
        ge=0,
        description="Resubmits charged to one run chain before a human must decide.",
    )
    auto_resubmit: bool = Field(
        DEFAULT_POLICY.auto_resubmit,
        description="Resubmit retryable failures at once (true) or propose with a button.",
    )
    backoff_s: float = Field(
        DEFAULT_POLICY.backoff_s,
        ge=0,
        description="Seconds to wait between a failure and its automatic resubmit.",
    )
    stall_min_s: float = Field(
        DEFAULT_POLICY.stall_min_s,
        gt=0,
        description="Never call a job stalled before this many seconds w/o progress.",
    )
    stall_factor: float = Field(
        DEFAULT_POLICY.stall_factor,
        gt=1,
        description="Stalled when no progress for this many times the step time.",
    )
    save_time_s: float = Field(
        DEFAULT_POLICY.save_time_s,
        ge=0,
        description="Seconds a checkpoint save may take; silence this long after a save "
        "started is not a stall.",
    )
    leak_warn_margin: float = Field(
        DEFAULT_POLICY.leak_warn_margin,
        ge=0,
        lt=1,
        description="Headroom fraction: warn when RSS is projected to reach "
        "limit x (1 - margin) before the target iteration.",
    )
    leak_min_samples: int = Field(
        DEFAULT_POLICY.leak_min_samples,
        ge=3,
        description="RSS samples needed before a leak is reported.",
    )
    gpu_util_warn_pct: float = Field(
        DEFAULT_POLICY.gpu_util_warn_pct,
        ge=0,
        le=100,
        description="Note (not an incident) when GPU util stays below this.",
    )
    tick_s: float = Field(60.0, gt=0, description="Seconds between watcher ticks.")
    unreachable_ticks: int = Field(
        3, ge=1, description="Failed ticks in a row before one 'cluster unreachable' notice."
    )
    approval_expiry_s: float = Field(
        24 * 3600.0, gt=0, description="Seconds an approval button stays valid."
    )
    remind_after_s: float = Field(
        2 * 3600.0, ge=0, description="Seconds an unanswered prompt waits before one reminder "
        "in its thread (mentioning whom the prompt mentioned); 0: no reminder."
    )
    escalate_after_s: float = Field(
        6 * 3600.0, ge=0, description="Seconds an unanswered prompt waits before it is "
        "escalated once to the recipe's `mentions.escalate_to` (default: its approvers); "
        "0: no escalation. Both come before approval_expiry_s."
    )


# Same fields, all optional: what a recipe may override. Built from PolicyConfig so the two
# never drift apart.
RecipePolicy: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "RecipePolicy",
    __config__=ConfigDict(extra="forbid"),
    __doc__="Per-recipe overrides of the policy defaults; unset fields use `policy:`.",
    **{
        name: (info.annotation | None, Field(None, description=info.description))
        for name, info in PolicyConfig.model_fields.items()
    },
)


# --------------------------------------------------------------------------------------------
# recipes


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


class CheckpointConfig(_Model):
    """Where a recipe's checkpoints live and how a complete one is recognised."""

    dir: str = Field(description="Checkpoint directory on the cluster.")
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
        "SBATCH_ACCOUNT, SBATCH_QOS, SBATCH_GRES, SBATCH_MEM_PER_NODE, SBATCH_TIMELIMIT; an "
        "overridden option its job did not get is reported as not applied.",
    )
    args: list[str] = Field(default_factory=list, description="Arguments for the script.")
    partition: str | None = Field(None, description="Slurm partition (--partition).")
    account: str | None = Field(None, description="Slurm account (--account).")
    qos: str | None = Field(None, description="Slurm QOS (--qos).")
    gres: str | None = Field(None, description="Generic resources, e.g. gpu:4 (--gres).")
    mem: str | None = Field(None, description="Memory per node as Slurm writes it (--mem 400G).")
    time: str | None = Field(None, description="Time limit as Slurm writes it (--time 2-00:00:00).")
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
        description="JSON-lines file written by `trainbot sampler` in the job (%x/%j "
        "expanded), tailed like the log for per-role RSS.",
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
    target_iter: int | None = Field(
        None, ge=1, description="Iteration at which the run is finished."
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
        description="Slack user ids or slack.groups names who may submit/resume; empty = "
        "anyone in the recipe's channel.",
    )
    approvers: list[str] = Field(
        default_factory=list,
        description="Slack user ids or group names who may approve actions; empty = "
        "slack.approvers.",
    )
    policy: RecipePolicy = Field(  # type: ignore[valid-type]
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
        return self

    @field_validator("mem")
    @classmethod
    def _mem(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)
        return value

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_TIME_RE.match(value):
            raise ValueError(
                f"{value!r} is not a Slurm time limit; use minutes, HH:MM:SS or D-HH:MM:SS "
                "(e.g. 90, 04:00:00, 2-00:00:00)"
            )
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
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"env key {name!r} is not a valid variable name")
        return value

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

    def submit_spec(self, *, job_name: str, env: Mapping[str, str]) -> SubmitSpec:
        """The sbatch call of this recipe's `sbatch_script` under `job_name`, with `env`."""
        options = {name: getattr(self, name) for name in RECIPE_OVERRIDABLE_OPTIONS}
        return SubmitSpec(job_name=job_name, script_path=self.sbatch_script, args=tuple(self.args),
                          output=self.log_path, workdir=self.workdir, env=env, **options)


# --------------------------------------------------------------------------------------------
# slack, store, catalogue, templates


class SlackConfig(_Model):
    """Slack channels, people and where the tokens come from (never the tokens themselves)."""

    mode: Literal["socket", "http"] = Field(
        "socket", description="Socket Mode (no public URL) or HTTP events (needs signing secret)."
    )
    channels: dict[str, str] = Field(
        default_factory=dict, description="Channel names used in this file → Slack channel ids."
    )
    default_channel: str | None = Field(
        None, description="Channel name for recipes that do not name one."
    )
    lang: str = Field("en", description="Default language of messages (en, or one with a "
                      "message catalogue: templates/locale/<lang>/LC_MESSAGES/messages.po).")
    approvers: list[str] = Field(
        default_factory=list, description="Default approvers: Slack user ids or group names."
    )
    groups: dict[str, list[str]] = Field(
        default_factory=dict, description="Named groups of Slack user ids (e.g. a team)."
    )
    bot_token_env: str = Field(
        "SLACK_BOT_TOKEN", description="Environment variable holding the xoxb- bot token."
    )
    app_token_env: str = Field(
        "SLACK_APP_TOKEN",
        description="Environment variable holding the xapp- app token (Socket Mode).",
    )
    signing_secret_env: str = Field(
        "SLACK_SIGNING_SECRET",
        description="Environment variable holding the signing secret (HTTP mode).",
    )
    api_url: str = Field(
        "https://slack.com/api/",
        description="Slack Web API base URL: https://slack-gov.com/api/ for GovSlack; plain "
                    "http only to this machine (a stand-in in tests).",
    )

    @field_validator("api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        url = urlsplit(value)
        local = url.hostname in ("localhost", "127.0.0.1", "::1")
        if not url.hostname or not (url.scheme == "https" or (url.scheme == "http" and local)):
            raise ValueError(f"api_url: {value!r} must be an https:// URL (the bot token is "
                             "sent to it; plain http only to localhost), e.g. "
                             "https://slack.com/api/")
        return value if value.endswith("/") else value + "/"

    @field_validator("channels")
    @classmethod
    def _channel_ids(cls, value: dict[str, str]) -> dict[str, str]:
        for name, cid in value.items():
            if not _SLACK_CHANNEL_ID_RE.match(cid):
                raise ValueError(
                    f"channels.{name}: {cid!r} is not a Slack channel id; use the id "
                    "(C… or G…, from the channel's details), not its name"
                )
        return value

    @field_validator("groups")
    @classmethod
    def _group_members(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, members in value.items():
            for user in members:
                if not _SLACK_USER_RE.match(user):
                    raise ValueError(f"groups.{name}: {user!r} is not a Slack user id (U… or W…)")
        return value


class SlackSecrets(BaseModel):
    """Slack secrets read from the environment at load time; None where the variable is unset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bot_token: SecretStr | None = Field(None, description="xoxb- bot token.")
    app_token: SecretStr | None = Field(None, description="xapp- app-level token.")
    signing_secret: SecretStr | None = Field(None, description="Request signing secret.")

    def missing(self, slack: SlackConfig) -> list[str]:
        """Names of environment variables the configured mode needs but that are unset."""
        need = [("bot_token", slack.bot_token_env)]
        if slack.mode == "socket":
            need.append(("app_token", slack.app_token_env))
        else:
            need.append(("signing_secret", slack.signing_secret_env))
        return [env for attr, env in need if getattr(self, attr) is None]


def read_slack_secrets(slack: SlackConfig, env: Mapping[str, str]) -> SlackSecrets:
    """Read the Slack secrets from `env` (os.environ in production, a dict in tests)."""

    def get(name: str) -> SecretStr | None:
        value = env.get(name, "").strip()
        return SecretStr(value) if value else None

    return SlackSecrets(
        bot_token=get(slack.bot_token_env),
        app_token=get(slack.app_token_env),
        signing_secret=get(slack.signing_secret_env),
    )


class StoreConfig(_Model):
    """Where trainbot keeps its state."""

    url: str = Field(
        "sqlite:///~/.local/state/trainbot/trainbot.db",
        description="SQLAlchemy URL; SQLite file by default (~ expanded), PostgreSQL for HA. "
        "$TRAINBOT_STORE_URL, when set, is used instead (keeps a password out of this file).",
    )


class CatalogueConfig(_Model):
    """Extra failure catalogue files merged over the built-in one."""

    extra: list[str] = Field(
        default_factory=list, description="Paths of extra catalogue YAML files."
    )


class TemplatesConfig(_Model):
    """Message template location."""

    dir: str | None = Field(
        None, description="Folder whose templates override the shipped ones (same names)."
    )


WEBHOOK_SECRET_MIN_CHARS = 16  # a webhook URL's path or query this long is taken as a secret


class ServiceConfig(_Model):
    """How `trainbot run` reports on itself (its command-line options override these)."""

    metrics_port: int | None = Field(
        None, ge=1, le=65535, description="Port of /healthz, /readyz and /metrics; none: "
        "not served.")
    metrics_host: str = Field(
        "127.0.0.1", description="Address the metrics port listens on (0.0.0.0 in a container "
        "whose orchestrator probes it).")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Least severe log level written.")
    log_format: Literal["text", "json"] = Field(
        "text", description="Log lines as text or one JSON object each (for a log pipeline).")
    webhook_url: str | None = Field(
        None, description="With `run --no-slack`: each watcher event is POSTed as JSON here.")


# --------------------------------------------------------------------------------------------
# root


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the file: the key path and what is wrong there."""

    path: str
    message: str


class CrossFieldProblems(ValueError):
    """Several cross-field problems, each with its own key path (unwrapped by parse_config)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in problems))


def _prompt_timing_problems(path: str, policy: PolicyConfig) -> list[Problem]:
    """A prompt reminds, then escalates, then expires: in that order, or not at all."""
    steps = [(name, getattr(policy, name)) for name in
             ("remind_after_s", "escalate_after_s", "approval_expiry_s")]
    steps = [(name, value) for name, value in steps if value]  # 0: that step is off
    return [Problem(f"{path}.{later}", f"{later} ({b:g} s) must be longer than {earlier} "
                    f"({a:g} s): a prompt reminds, then escalates, then expires")
            for (earlier, a), (later, b) in zip(steps, steps[1:], strict=False) if b <= a]


class Config(_Model):
    """The whole trainbot configuration."""

    clusters: dict[str, ClusterConfig] = Field(
        description="Clusters by name; recipes refer to these names."
    )
    recipes: dict[str, RecipeConfig] = Field(
        default_factory=dict, description="Training recipes by name (`/train submit NAME`)."
    )
    slack: SlackConfig = Field(default_factory=SlackConfig, description="Slack settings.")
    policy: PolicyConfig = Field(default_factory=PolicyConfig, description="Policy defaults.")
    store: StoreConfig = Field(default_factory=StoreConfig, description="State store.")
    catalogue: CatalogueConfig = Field(
        default_factory=CatalogueConfig, description="Failure catalogue extensions."
    )
    templates: TemplatesConfig = Field(
        default_factory=TemplatesConfig, description="Message templates."
    )
    service: ServiceConfig = Field(
        default_factory=ServiceConfig, description="Health, metrics, logs and webhook."
    )

    _secrets: SlackSecrets = PrivateAttr(default_factory=SlackSecrets)
    _source: str | None = PrivateAttr(default=None)
    _store_url_env: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _cross_check(self) -> Config:
        problems: list[Problem] = []
        if not self.clusters:
            problems.append(Problem("clusters", "no cluster defined; add at least one"))
        groups = self.slack.groups
        channels = self.slack.channels

        def check_people(path: str, people: list[str]) -> None:
            for person in people:
                if _SLACK_USER_RE.match(person) or person in groups:
                    continue
                hint = did_you_mean(person, groups)
                problems.append(
                    Problem(
                        path,
                        f"{person!r} is neither a Slack user id (U…/W…) nor a group under "
                        f"slack.groups{hint}",
                    )
                )

        if self.slack.default_channel is not None and self.slack.default_channel not in channels:
            problems.append(
                Problem(
                    "slack.default_channel",
                    f"channel {self.slack.default_channel!r} is not under slack.channels"
                    f"{did_you_mean(self.slack.default_channel, channels)}",
                )
            )
        check_people("slack.approvers", self.slack.approvers)
        from bot.slack.render import languages  # a language is a message catalogue

        known = languages(self.templates.dir)
        langs = [("slack.lang", self.slack.lang)] + [
            (f"recipes.{name}.lang", r.lang) for name, r in self.recipes.items() if r.lang]
        for path, lang in langs:
            if lang not in known:
                problems.append(Problem(path, f"language {lang!r} has no message catalogue "
                                              f"(templates/locale/{lang}/LC_MESSAGES/"
                                              f"messages.po); use one of {', '.join(known)}"))
        for name, recipe in self.recipes.items():
            if recipe.cluster not in self.clusters:
                problems.append(
                    Problem(
                        f"recipes.{name}.cluster",
                        f"cluster {recipe.cluster!r} is not defined under clusters "
                        f"(defined: {', '.join(sorted(self.clusters)) or 'none'})"
                        f"{did_you_mean(recipe.cluster, self.clusters)}",
                    )
                )
            if recipe.channel is not None and recipe.channel not in channels:
                problems.append(
                    Problem(
                        f"recipes.{name}.channel",
                        f"channel {recipe.channel!r} is not under slack.channels"
                        f"{did_you_mean(recipe.channel, channels)}",
                    )
                )
            check_people(f"recipes.{name}.submitters", recipe.submitters)
            check_people(f"recipes.{name}.approvers", recipe.approvers)
            check_people(f"recipes.{name}.mentions.escalate_to",
                         [p for p in recipe.mentions.escalate_to
                          if not _SLACK_USERGROUP_RE.match(p)])
            problems += _prompt_timing_problems(
                f"recipes.{name}.policy",
                self.policy.model_copy(update=recipe.policy.model_dump(exclude_none=True)))
            if recipe.job_name is None:
                recipe.job_name = name
        problems += _prompt_timing_problems("policy", self.policy)
        if problems:
            raise CrossFieldProblems(problems)
        return self

    # ---- lookups used by the services

    @property
    def slack_secrets(self) -> SlackSecrets:
        """Secrets read from the environment by load_config (empty for a bare Config)."""
        return self._secrets

    def secret_values(self) -> list[str]:
        """Every secret value the bot knows: the recipes' `env` values (all of them: a token is
        passed to jobs that way), the Slack secrets, the store URL's password and the webhook
        URL's path and query when long enough to be one (chat webhooks carry their secret
        there; a short path such as `/events` is not)."""
        values = [value for recipe in self.recipes.values() for value in recipe.env.values()]
        values += [s.get_secret_value() for s in (self._secrets.bot_token,
                   self._secrets.app_token, self._secrets.signing_secret) if s is not None]
        if self.service.webhook_url:
            hook = urlsplit(self.service.webhook_url)
            values += [part for part in (hook.path.strip("/"), hook.query)
                       if len(part) >= WEBHOOK_SECRET_MIN_CHARS]
        return values + url_secrets(self.store.url)

    def redactor(self) -> Redactor:
        """Masks `secret_values()` and token-shaped strings in error texts (bot.core.redact)."""
        return Redactor(self.secret_values())

    @property
    def store_url_origin(self) -> str:
        """Where `store.url` came from: `$TRAINBOT_STORE_URL` or `store.url` (the file's, or
        the default)."""
        return f"${self._store_url_env}" if self._store_url_env else "store.url"

    @property
    def source(self) -> str | None:
        """The file this config was loaded from, if any."""
        return self._source

    def recipe(self, name: str) -> RecipeConfig:
        """The recipe called `name`; KeyError naming the known recipes otherwise."""
        try:
            return self.recipes[name]
        except KeyError:
            known = ", ".join(sorted(self.recipes)) or "none"
            raise KeyError(
                f"no recipe {name!r} (known: {known}){did_you_mean(name, self.recipes)}"
            ) from None

    def cluster_for(self, recipe_name: str) -> ClusterConfig:
        return self.clusters[self.recipe(recipe_name).cluster]

    def policy_for(self, recipe_name: str) -> PolicyConfig:
        """The policy defaults with the recipe's overrides applied."""
        overrides = self.recipe(recipe_name).policy.model_dump(exclude_none=True)
        return self.policy.model_copy(update=overrides)

    def channel_id_for(self, recipe_name: str) -> str | None:
        """Slack channel id for a recipe's threads (its channel, else the default)."""
        name = self.recipe(recipe_name).channel or self.slack.default_channel
        return self.slack.channels.get(name) if name else None

    def lang_for(self, recipe_name: str) -> str:
        return self.recipe(recipe_name).lang or self.slack.lang

    def expand_people(self, people: list[str]) -> set[str]:
        """User ids named by a list of user ids and group names."""
        out: set[str] = set()
        for person in people:
            out.update(self.slack.groups.get(person, [person]))
        return out

    def approvers_for(self, recipe_name: str) -> set[str]:
        """User ids who may approve actions on a recipe's jobs."""
        return self.expand_people(self.recipe(recipe_name).approvers or self.slack.approvers)

    def submitters_for(self, recipe_name: str) -> set[str] | None:
        """User ids who may submit/resume the recipe; None means anyone in its channel."""
        people = self.recipe(recipe_name).submitters
        return self.expand_people(people) if people else None


def did_you_mean(word: str, choices: Any) -> str:
    """` — did you mean 'x'?` for the choice closest to a misspelt `word`, else ""."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" — did you mean {close[0]!r}?" if close else ""
