"""The `policy:` section and a recipe's overrides of it."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, create_model, field_validator

from bot.config.models._base import _Model
from bot.core.policy import DEFAULT_POLICY
from bot.core.units import check_slurm_size, parse_size


def _check_max_mem(cls: type, value: str | None) -> str | None:
    """`max_mem` (of `policy:` or a recipe's) is a size Slurm takes (it bounds the --mem
    trainbot proposes) above zero; ValueError naming the accepted forms, or the whole form
    to write (`1536G` for `1.5T`), otherwise."""
    if value is not None and parse_size(check_slurm_size(value)) <= 0:
        raise ValueError(f"{value!r} is no memory; give the site's cap, e.g. 512G")
    return value


class PolicyConfig(_Model):
    """Watcher and retry policy; the defaults for every recipe (a recipe may override any).
    The defaults of the fields the core policy reads are its defaults (DEFAULT_POLICY)."""

    retry_budget: int = Field(
        DEFAULT_POLICY.retry_budget,
        ge=0,
        description="Resubmits charged to one run chain before a human must decide.",
    )
    max_free_chunks: int = Field(
        DEFAULT_POLICY.max_free_chunks,
        ge=0,
        description="Time-limit chunks in a row resubmitted without charging the retry "
        "budget (each saved a newer checkpoint of its own run); the next one is charged as "
        "a retry and its thread says why. 0: every chunk is charged.",
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
    max_mem: str | None = Field(
        None,
        description="The largest --mem the site admits, a Slurm size (512G, 2T; a bare "
        "number is MiB). After a host OOM a `Resubmit with --mem=` button is offered only "
        "when the memory needed is at most this and at most twice the job's current limit; "
        "above it the incident names the cap and how far the largest allowed --mem gets. "
        "Unset: only the twice-the-limit bound.",
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
    cancel_settle_s: float = Field(
        60.0, gt=0, description="Seconds after an approved cancel whose scancel's end was not "
        "seen (its SSH channel closed, or it outlived its timeout) before trainbot asks Slurm "
        "whether the job was cancelled and finishes the click. A job still running then is "
        "said not cancelled only once the scancel's own bound since the click has passed (it "
        "may still be running on the login node): asked again until then."
    )

    @field_validator("max_mem")
    @classmethod
    def _max_mem(cls, value: str | None) -> str | None:
        return _check_max_mem(cls, value)

    @property
    def mem_cap_bytes(self) -> int | None:
        """`max_mem` in bytes, as the core policy reads it (PolicyParams.mem_cap_bytes)."""
        return parse_size(self.max_mem) if self.max_mem is not None else None


def _bounded(annotation: Any, bounds: list[Any]) -> Any:
    """A field's type with its bounds (ge=0, lt=1, ...) attached."""
    return Annotated[(annotation, *bounds)] if bounds else annotation


# Same fields, all optional: what a recipe may override. Built from PolicyConfig, bounds and
# checks included, so the two never drift apart.
RecipePolicy: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "RecipePolicy",
    __base__=_Model,
    __doc__="Per-recipe overrides of the policy defaults; unset fields use `policy:`.",
    __validators__={"_max_mem": field_validator("max_mem")(classmethod(_check_max_mem))},
    **{
        name: (_bounded(info.annotation, info.metadata) | None,
               Field(None, description=info.description))
        for name, info in PolicyConfig.model_fields.items()
    },
)
