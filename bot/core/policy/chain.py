"""What the policy reads about a run chain: its attempts and the early warnings already posted
(from the store)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttemptFacts:
    """One attempt of a run chain as the policy needs it (from the store's attempts table).

    `last_iter` is the highest iteration the attempt logged (None: none logged)."""

    job_id: str
    attempt_no: int
    last_iter: int | None = None
    start_iter: int | None = None
    class_id: str | None = None
    ended_at: float | None = None


@dataclass(frozen=True)
class PastWarning:
    """An early warning already posted in this chain (from the store's incidents)."""

    class_id: str  # memory_leak | hang | low_gpu_util
    at: float
    projected_oom_iter: int | None = None
    stall_started_at: float | None = None
    job_id: str | None = None


@dataclass(frozen=True)
class ChainHistory:
    """The run chain so far. `attempts` is oldest first and ENDS with the attempt being
    decided about; `retries_used` is the charged resubmits so far (chains.retries_used)."""

    attempts: tuple[AttemptFacts, ...] = ()
    retries_used: int = 0
    warnings: tuple[PastWarning, ...] = ()

    @property
    def resubmits_so_far(self) -> int:
        return max(0, len(self.attempts) - 1)
