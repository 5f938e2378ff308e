"""Whether each cluster is watched: its last successful tick ended less than `STALE_TICKS`
ticks ago, and what /readyz says about it (pure: the caller gives the times, how long the
ticks took and the lease holders).

A tick's length is the longer of the cluster's interval and what its recent successful ticks
took: the watcher runs one tick of a cluster at a time, so ticks that take longer than the
interval follow each other back to back, and a cluster whose every tick succeeds is watched
however long they take. Counted in intervals alone, a cluster whose ticks took 3 intervals
(a slow login node, a loaded host, 1-second ticks) was never ready, and one that ticked late
once flapped to not ready."""

from __future__ import annotations

from collections.abc import Mapping

STALE_TICKS = 3


def stale_clusters(*, now: float, started_at: float, every_s: Mapping[str, float],
                   last_ok: Mapping[str, float], held_elsewhere: frozenset[str] = frozenset(),
                   took_s: Mapping[str, float] | None = None) -> dict[str, float]:
    """Cluster -> seconds since its last successful tick ended (`last_ok`; since the start,
    before its first) for each cluster watched here whose last success is `STALE_TICKS`
    ticks old or older, a tick being the longer of its interval (`every_s`) and what its
    recent successful ticks took (`took_s`, the longest of them; none before the first);
    clusters another replica watches (`held_elsewhere`) are that replica's to report."""
    took_s = took_s or {}
    stale = {}
    for cluster, interval in every_s.items():
        if cluster in held_elsewhere:
            continue
        age = now - last_ok.get(cluster, started_at)
        if age >= STALE_TICKS * max(interval, took_s.get(cluster, 0.0)):
            stale[cluster] = age
    return stale


def readiness(*, now: float, started_at: float, every_s: Mapping[str, float],
              last_ok: Mapping[str, float], held_elsewhere: Mapping[str, str | None],
              took_s: Mapping[str, float] | None = None) -> tuple[bool, str]:
    """/readyz's answer: (ready, text). Ready unless a cluster watched here is stale; a
    replica whose clusters another replica holds (`held_elsewhere`: cluster -> that holder,
    None if unknown) is ready as a standby. The text's first line is `ok`, `ok (standby)` or
    what is stale; then which clusters this replica watches and which another replica holds."""
    stale = stale_clusters(now=now, started_at=started_at, every_s=every_s, last_ok=last_ok,
                           held_elsewhere=frozenset(held_elsewhere), took_s=took_s)
    here = sorted(c for c in every_s if c not in held_elsewhere)
    elsewhere = sorted(c for c in every_s if c in held_elsewhere)
    if stale:
        head = "; ".join(f"cluster {c}: no successful tick for {age:.0f} s (>= {STALE_TICKS} "
                         "ticks)" for c, age in sorted(stale.items()))
    else:
        head = "ok" if here or not elsewhere else "ok (standby)"
    lines = [head, f"watched here: {', '.join(here) or 'none'}"]
    if elsewhere:
        lines.append("watched by another replica: " + ", ".join(
            f"{c} ({held_elsewhere[c]})" if held_elsewhere[c] else c for c in elsewhere))
    return not stale, "\n".join(lines)
