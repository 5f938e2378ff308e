"""Cluster health as the watcher sees it: ticks whose one Slurm call failed are counted, and a
cluster that stays unreachable is announced ONCE (after `unreachable_ticks` failures in a row),
and ONCE again when it answers (never per-job alarms).

The unreachable notice is recorded before it is posted (bot.services.watch.outbox). One whose
post failed is posted at a later failed tick as it was recorded (its tick count, since and error,
that error's sentence in each thread's language), and so is one a restart left: the outage dates
from it, so its "answers again" note follows. One the cluster answered before it could be posted
is dropped: an outage over is not announced. A notice some threads got and Slack refused in
others has been said (its "answers again" note follows in the threads that have it): it is
posted again at each failed tick for the threads left (those that have it get nothing twice;
one whose lookup Slack refuses, less and less often: bot.services.watch_events.ThreadEvents),
and dropped when the cluster answers. A notice recorded before the outage's start was
stored with it (no `down_since`) dates the outage from its key (`cluster:C:down:START`), and
says its English text. A bot that starts (or takes the cluster over from another replica) knows from
the store an outage told before it: the cluster's latest notice said in a thread (posted, or in
some threads, or left `pending` by a bot that stopped between posting it and marking it or by
a post whose answer was lost, when a thread has it or may have it: the threads' posts telling,
an intent looked up in its thread, bot.services.watch.outbox and ThreadEvents.said_in_a_thread)
with no "answers again" note recorded for it; so does a bot whose own notice's publish failed,
at its next tick. That outage is announced: it is not told again while the cluster stays
down, and its "answers again" note follows when it answers, in every thread that has or may
have the notice, once (one whose notice Slack refused, or that never got it, never heard the
outage, and hears nothing of its end: bot.services.watch_events.ThreadEvents). The "answers
again" note is recorded the same way; one whose post failed (in any of its threads), or that
a restart left, is posted at the next tick, failed or not (it is still true), as it was
recorded (the start of the outage it ends), before any notice of a new outage.

While a cluster is unreachable the watcher keeps the last known state of its jobs and judges
none of them (bot.services.watch.tick); this module only counts and tells.
"""

from __future__ import annotations

import datetime as _dt
import logging

from bot.cluster.errors import said
from bot.services.watch.events import TickReport, WatchEvent
from bot.services.watch.outbox import PARTLY_POSTED, Outbox
from bot.services.watch.said import back_said, unreachable_said

log = logging.getLogger(__name__)

NOTICE = "cluster_unreachable"
BACK = "cluster_back"


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
        self._told_read = False  # the store asked, since start, for an outage told before
        self._unposted_checked = False  # the store's unposted notices looked at since start
        self._back_unposted = True  # a back note may wait in the store (one failed, a restart)
        self._notice_unposted = False  # the outage's notice was said, a thread may lack it

    def failed(self, now: float, exc: Exception, report: TickReport) -> TickReport:
        """A tick whose Slurm call failed: counted, the report marked failed, and after
        `unreachable_ticks` of them in a row the one "cluster unreachable" event."""
        self._read_told_outage()
        self._post_unposted_back(now, report)
        self._failed += 1
        if self._down_since is None:
            self._down_since = now
        log.warning("%s: tick failed (%d in a row), keeping the last known state: %s",
                    self.cluster, self._failed, exc)
        report.ok = False
        report.error = str(exc)
        if self._failed >= self.unreachable_ticks and not self._down_notified:
            self._down_notified = self._notice_unposted = self._announce(now, exc, report)
            # not posted: whether a thread may have it after all (its answer lost) is asked
            # of the store at the next tick, answering or not
            self._told_read = self._down_notified
        elif self._notice_unposted:  # said, and Slack refused it in a thread: that one again
            self._notice_unposted = self._post_stored(NOTICE, now, report)
        return report

    def _announce(self, now: float, exc: Exception, report: TickReport) -> bool:
        """Post the outage's one unreachable notice: the one recorded and never posted (its
        post failed, or the bot restarted before it), as it was recorded, the outage dating
        from it; else a new one. False: not posted, the next failed tick tries again."""
        assert self._down_since is not None
        stored = self.outbox.unposted(NOTICE)
        self._unposted_checked = True
        if stored:
            first, *later = stored
            for inc in later:  # the same outage recorded again after a restart: one notice
                self.outbox.drop(inc)
            since = _outage_start(first.diagnosis.get("down_since"), first.key)
            if since is not None:
                self._down_since = min(self._down_since, since)
            return self.outbox.emit(self.outbox.stored_event(first), NOTICE, now, report)
        began, error = _utc(self._down_since), said(exc)
        told = unreachable_said(self.cluster, self._failed, began, error)
        return self.outbox.emit(WatchEvent(NOTICE,
                                           f"cluster:{self.cluster}:down:{int(self._down_since)}",
                                           self.cluster, str(told),
                                           facts={"ticks": self._failed, "error": error,
                                                  "since": began, "said": told}),
                                NOTICE, now, report, extra={"down_since": self._down_since})

    def ok(self, now: float, report: TickReport) -> None:
        """A tick the cluster answered: the "back" event if its outage was announced, and the
        counters start over."""
        self._read_told_outage()
        self._post_unposted_back(now, report)
        if self._down_notified and self._down_since is not None:
            began = _utc(self._down_since)
            told = back_said(self.cluster, began)
            self.outbox.emit(
                WatchEvent(BACK, self._back_key(self._down_since), self.cluster, str(told),
                           facts={"since": began, "said": told}),
                BACK, now, report, extra={"down_since": self._down_since})
            self._back_unposted = True  # a thread may lack it: asked at the next tick
        if self._failed or not self._unposted_checked:
            for inc in self.outbox.unposted(NOTICE):  # the outage ended before it was told
                self.outbox.drop(inc)  # (in every thread: the others get the back note)
            self._unposted_checked = True
        self._failed, self._down_since, self._down_notified = 0, None, False
        self._notice_unposted = False

    def _read_told_outage(self) -> None:
        """Once since start (or `forget`): an outage a bot before this one told (the cluster's
        latest notice a thread has, no "answers again" note recorded for it) is this one's
        outage, announced: dated from the notice, its notice posted again for the threads
        left (said in some only), and its "answers again" note sent when the cluster answers."""
        if self._told_read:
            return
        self._told_read = True
        told = self.outbox.last_said(NOTICE)
        if told is None:
            return
        since = _outage_start(told.diagnosis.get("down_since"), told.key)
        if since is None or self.outbox.recorded(self._back_key(since)):
            return
        log.info("%s: the outage told since %s has no 'answers again' note yet: it is sent "
                 "when the cluster answers", self.cluster, _utc(since))
        self._down_since = since if self._down_since is None else min(self._down_since, since)
        self._down_notified = True
        self._notice_unposted = told.state == PARTLY_POSTED

    def _back_key(self, since: float) -> str:
        """The key of the "answers again" note of the outage that started at `since`."""
        return f"cluster:{self.cluster}:back:{int(since)}"

    def _post_unposted_back(self, now: float, report: TickReport) -> None:
        """Post the "answers again" notes recorded and never posted (their post failed, or
        the bot stopped before it), as they were recorded, oldest first; the store is asked
        only while one may be there."""
        if self._back_unposted:
            self._back_unposted = self._post_stored(BACK, now, report)

    def _post_stored(self, class_id: str, now: float, report: TickReport) -> bool:
        """Publish this cluster's `class_id` events recorded and not posted in every thread,
        as they were recorded, oldest first; True while one may be left (not posted, or in
        some threads only)."""
        stored = self.outbox.unposted(class_id)
        for inc in stored:
            self.outbox.emit(self.outbox.stored_event(inc), class_id, now, report)
        return bool(stored) and bool(self.outbox.unposted(class_id))

    def forget(self) -> None:
        """No outage known: the counters as after a restart (the store's unposted notices
        are looked at again: another replica may have left one)."""
        self._failed, self._down_since, self._down_notified = 0, None, False
        self._told_read = False
        self._unposted_checked = False
        self._back_unposted = True
        self._notice_unposted = False


def notice_key_of(back_key: str) -> str:
    """The key of the unreachable notice of the outage whose "answers again" note is
    `back_key` (`cluster:C:back:START` -> `cluster:C:down:START`)."""
    head, _, start = back_key.rpartition(":back:")
    return f"{head}:down:{start}"


def _outage_start(stored: object, key: str) -> float | None:
    """When the outage of a stored unreachable notice started: its `down_since`; one recorded
    before that was stored has it in its key only (`cluster:C:down:START`, whole seconds)."""
    if isinstance(stored, int | float):
        return float(stored)
    start = key.rsplit(":", 1)[-1]
    return float(start) if start.isdigit() else None


def _utc(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


__all__ = ["BACK", "NOTICE", "ClusterHealth", "notice_key_of"]
