"""A job held by an admin (JobHeldAdmin / REQUEUE_HOLD): report it after a while instead of
waiting for it forever."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.core.policy.params import params_from


@dataclass(frozen=True)
class HeldReport:
    """A job held by an admin (e.g. requeued after a failure): say so, don't wait forever."""

    job_id: int
    reason: str
    held_s: float
    key: str = field(default="")


def held_report(record: Any, held_since: float | None, now: float, *, policy: Any = None
                ) -> HeldReport | None:
    """Report `record` (a bot.core.slurm.records.JobRecord) when it has been held by an admin
    (`JobHeldAdmin`, or `REQUEUE_HOLD` from a requeue) for `held_report_s` or longer.

    A user hold (`JobHeldUser`) is not reported: trainbot places those itself on competing
    jobs. `held_since` is when the watcher first saw it held (None: just now).
    """
    p = params_from(policy)
    admin = record.state == "REQUEUE_HOLD" or (
        record.state in ("PENDING", "REQUEUED") and record.reason == "JobHeldAdmin"
    )
    if not admin:
        return None
    since = held_since if held_since is not None else now
    held = max(0.0, now - since)
    if held < p.held_report_s:
        return None
    why = record.reason or record.state
    return HeldReport(
        job_id=record.job_id,
        reason=why,
        held_s=held,
        key=f"held:{record.job_id}:{int(since)}",
    )
