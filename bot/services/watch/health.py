"""Cluster health as the watcher sees it: ticks whose one Slurm call failed are counted, and a
cluster that stays unreachable is announced ONCE (after `unreachable_ticks` failures in a row),
and ONCE again when it answers (never per-job alarms).

While a cluster is unreachable the watcher keeps the last known state of its jobs and judges
none of them (bot.services.watch.tick); this module only counts and tells.
"""

from __future__ import annotations

import datetime as _dt
import logging

from bot.cluster.errors import said
from bot.services.watch.events import TickReport, WatchEvent
from bot.services.watch.outbox import Outbox

log = logging.getLogger(__name__)


class ClusterHealth:
    """The outage counters of one cluster: failed ticks in a row, since when, and whether the
    outage was announced (events go out through the watcher's outbox)."""

    def __init__(self, cluster: str, *, outbox: Outbox, unreachable_ticks: int) -> None:
        self.cluster = cluster
        self.outbox = outbox
        self.unreachable_ticks = unreachable_ticks
        self._failed = 0
        self._down_since: float | None = None
        self._down_notified = False

    def failed(self, now: float, exc: Exception, report: TickReport) -> TickReport:
        """A tick whose Slurm call failed: counted, the report marked failed, and after
        `unreachable_ticks` of them in a row the one "cluster unreachable" event."""
        self._failed += 1
        if self._down_since is None:
            self._down_since = now
        log.warning("%s: tick failed (%d in a row), keeping the last known state: %s",
                    self.cluster, self._failed, exc)
        report.ok = False
        report.error = str(exc)
        if self._failed >= self.unreachable_ticks and not self._down_notified:
            text = (f"cluster {self.cluster} unreachable for {self._failed} ticks "
                    f"(since {_utc(self._down_since)}): {exc}. Jobs are not being judged; "
                    "nothing is concluded about them until it answers again.")
            self.outbox.emit(WatchEvent("cluster_unreachable",
                                  f"cluster:{self.cluster}:down:{int(self._down_since)}",
                                  self.cluster, text,
                                  facts={"ticks": self._failed, "error": said(exc),
                                         "since": _utc(self._down_since)}),
                       "cluster_unreachable", now, report)
            self._down_notified = True
        return report

    def ok(self, now: float, report: TickReport) -> None:
        """A tick the cluster answered: the "back" event if its outage was announced, and the
        counters start over."""
        if self._down_notified and self._down_since is not None:
            text = (f"cluster {self.cluster} answers again (unreachable since "
                    f"{_utc(self._down_since)}); watching resumes.")
            self.outbox.emit(WatchEvent("cluster_back",
                                  f"cluster:{self.cluster}:back:{int(self._down_since)}",
                                  self.cluster, text, facts={"since": _utc(self._down_since)}),
                       "cluster_back", now, report)
        self.forget()

    def forget(self) -> None:
        """No outage known: the counters as after a restart."""
        self._failed = 0
        self._down_since = None
        self._down_notified = False


def _utc(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__ = ["ClusterHealth"]
