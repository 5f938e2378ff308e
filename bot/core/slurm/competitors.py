"""Which pending jobs would take a freed slot first: the competitor filter over squeue records."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.slurm.records import JobRecord


def filter_competitors(
    records: Iterable[JobRecord],
    *,
    user: str | None = None,
    account: str | None = None,
    partition: str | None = None,
    qos: str | None = None,
    exclude: Iterable[int] = (),
) -> list[JobRecord]:
    """Pending jobs matching every given filter, highest priority first, then oldest.

    A job whose partition list names several partitions (`debug,gpu`) matches any of them.
    """
    excluded = set(exclude)
    chosen = []
    for record in records:
        if not record.is_pending or record.job_id in excluded:
            continue
        if user is not None and record.user != user:
            continue
        if account is not None and record.account != account:
            continue
        if partition is not None and partition not in (record.partition or "").split(","):
            continue
        if qos is not None and record.qos != qos:
            continue
        chosen.append(record)
    return sorted(
        chosen,
        key=lambda r: (-(r.priority or 0), r.submit_time or float("inf"), r.job_id),
    )
