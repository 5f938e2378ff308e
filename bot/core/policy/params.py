"""The policy's settings (`PolicyParams`), their defaults (`DEFAULT_POLICY`, also the config's
and the detectors') and `params_from`, which reads them from a PolicyConfig or a mapping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.core.models import DEFAULT_MAX_FREE_CHUNKS, ChunkBounds


@dataclass(frozen=True)
class PolicyParams:
    """The policy settings decide() and the detectors read; built from bot.config.PolicyConfig
    (or anything with the same attribute names) by `params_from`; missing names take these
    defaults, which are also the config's defaults."""

    retry_budget: int = 3
    max_free_chunks: int = DEFAULT_MAX_FREE_CHUNKS  # time-limit chunks in a row not charged
    auto_resubmit: bool = False
    backoff_s: float = 60.0
    backoff_max_s: float = 3600.0
    leak_rewarn_margin: float = 0.1  # re-warn when the projected OOM iteration moves 10 % earlier
    gpu_util_warn_pct: float = 60.0
    cpu_drop_ratio: float = 0.5  # CPU after / before at or below this corroborates a stall
    mem_growth: float = 1.5  # host_oom: suggested --mem = max(limit, MaxRSS) x this ...
    mem_growth_save: float = 2.0  # ... or this when it died saving a checkpoint
    mem_cap_bytes: int | None = None  # largest --mem the site admits (None: unknown)
    held_report_s: float = 600.0  # report a JobHeldAdmin job after this long
    # Detector thresholds the watcher passes to diagnose() (same names as PolicyConfig).
    stall_min_s: float = 300.0
    stall_factor: float = 10.0
    save_time_s: float = 600.0
    leak_min_samples: int = 6  # RSS samples a leak finding needs
    leak_warn_margin: float = 0.1  # warn when RSS will reach limit x (1 - this) before target

    def chunk_bounds(self, target_iter: int | None) -> ChunkBounds:
        """How a run with these settings counts its time-limit chunks: within its
        `target_iter` (None: unknown), at most `max_free_chunks` free in a row."""
        return ChunkBounds(target_iter=target_iter, max_free_chunks=self.max_free_chunks)


#: The defaults of every policy setting: of the config, of diagnose() and of the detectors.
DEFAULT_POLICY = PolicyParams()


def params_from(policy: Any) -> PolicyParams:
    """PolicyParams from a PolicyConfig (pydantic) / mapping / PolicyParams: same names."""
    if isinstance(policy, PolicyParams):
        return policy
    if policy is None:
        return PolicyParams()
    get = policy.get if isinstance(policy, dict) else (lambda k, d: getattr(policy, k, d))
    values = {}
    for name in PolicyParams.__dataclass_fields__:
        value = get(name, None)
        if value is not None:
            values[name] = value
    return PolicyParams(**values)
