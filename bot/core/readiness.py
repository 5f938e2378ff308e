"""Whether each cluster is watched: its last successful tick younger than `STALE_TICKS` ticks
(pure: the caller gives the times)."""

from __future__ import annotations

from collections.abc import Mapping

STALE_TICKS = 3


def stale_clusters(*, now: float, started_at: float, every_s: Mapping[str, float],
                   last_ok: Mapping[str, float], held_elsewhere: frozenset[str] = frozenset(),
                   ) -> dict[str, float]:
    """Cluster -> seconds since its last successful tick (or since the start, before its
    first) for each cluster watched here whose last success is `STALE_TICKS` ticks old or
    older; clusters another replica watches (`held_elsewhere`) are that replica's to report."""
    stale = {}
    for cluster, interval in every_s.items():
        if cluster in held_elsewhere:
            continue
        age = now - last_ok.get(cluster, started_at)
        if age >= STALE_TICKS * interval:
            stale[cluster] = age
    return stale
