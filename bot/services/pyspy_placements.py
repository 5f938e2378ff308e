"""trainbot's py-spy placements per cluster, held by the bot's context (no adapter: the
ports name it; the placing itself is bot.cluster.pyspy.place_pyspy)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future

log = logging.getLogger(__name__)

# How long the nodes' missing a copy that is intact on the login node is remembered: that
# long, a collection that finds py-spy absent neither forgets the placement nor checks the
# copy again (nor warns); then it is checked once more.
UNSEEN_REMEMBERED_S = 3600.0
# How long after its recheck a copy found intact on the login node counts as intact for the
# nodes' next miss (that collection's, whose deadline is shorter): later, or once that
# collection ended another way (timed out, failed, the job ended), the mark is dropped.
INTACT_FRESH_S = 600.0
# While a miss is remembered, a collection the nodes miss it in checks the copy again
# (sha256 only) at most this often, so a copy gone meanwhile is placed again.
UNSEEN_RECHECK_S = 300.0


class PySpyPlacements:
    """trainbot's py-spy placed on the clusters (the paths placed, and the placement under way
    per cluster name), owned by the bot's context (bot.services.ports.BotContext.pyspy: one per
    process) or a command's collector: one placement at a time per cluster, whichever
    collector, watcher or command asks, in the background, so a collection waits for it only
    as long as its deadline allows. A failed placement is logged and forgotten: the next ask
    tries again (bot.cluster.pyspy.place_pyspy is idempotent: sha256-checked, moved into
    place atomically).
    `placed`: paths known placed already, by cluster.

    A copy the nodes find absent (`forget`) is checked again by the next placement: gone
    from the login node too (a cache cleanup, a quota purge), it is copied again (warned);
    there and intact, the nodes do not see it or cannot run it (a home not shared with
    them, mounted noexec), and when they miss it again that is remembered for
    UNSEEN_REMEMBERED_S (warned once per copy for the process's life): meanwhile a
    collection keeps its path and says why, and a miss checks the copy again at most every
    UNSEEN_RECHECK_S (sha256 only; placed again, and the miss forgotten, when gone). The
    recheck's "intact" counts only for the next miss within INTACT_FRESH_S; any other
    outcome of that collection (`settled`) drops it. A placement that checked or copied the
    copy counts so too (a one-shot command's first collection, a bot's first after its
    start); a miss `forget` cannot explain the collector checks at once (`unseen_after_check`),
    so its first report says why already."""

    def __init__(self, placed: Mapping[str, str] | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._monotonic = monotonic
        self._paths: dict[str, str] = dict(placed or {})
        self._under_way: dict[str, Future[str]] = {}
        self._copying: set[str] = set()  # clusters whose placement under way copies
        self._rechecking: dict[str, str] = {}  # the path the nodes missed, checked next
        self._intact: dict[str, tuple[str, float]] = {}  # that check found it intact: when
        # nodes miss it: path, until when, when its copy is checked again at the earliest
        self._unseen: dict[str, tuple[str, float, float]] = {}
        self._warned: set[tuple[str, str]] = set()

    def untouched(self) -> bool:
        """Nothing placed nor under way, and on the process's monotonic clock: a default one,
        which a context with its own clock replaces (bot.services.ports.BotContext)."""
        with self._lock:
            return self._monotonic is time.monotonic and not self._paths \
                and not self._under_way

    def start(self, cluster: str, place: Callable[[], str]) -> Future[str]:
        """The placement of `cluster`'s py-spy: done when placed, else the one under way, else
        `place()` begun on a daemon thread."""
        with self._lock:
            if cluster in self._paths:
                done: Future[str] = Future()
                done.set_result(self._paths[cluster])
                return done
            future = self._under_way.get(cluster)
            if future is not None:
                return future
            future = self._under_way[cluster] = Future()
        threading.Thread(target=self._place, args=(cluster, place, future),
                         name=f"py-spy placement {cluster}", daemon=True).start()
        return future

    def placed(self, cluster: str) -> str | None:
        with self._lock:
            return self._paths.get(cluster)

    def copying(self, cluster: str) -> None:
        """The placement under way on `cluster` copies py-spy (none was there intact)."""
        with self._lock:
            self._copying.add(cluster)

    def forget(self, cluster: str, path: str) -> bool:
        """The nodes found `path` absent on `cluster` (a collection said so): the next ask
        places py-spy again, checking the copy (class doc). A path placed since, a different
        one, is kept. True when the nodes are known not to see the copy, which is intact
        on the login node: the path is kept then, not checked again for a while."""
        with self._lock:
            now = self._monotonic()
            unseen = self._unseen.get(cluster)
            if unseen is not None and unseen[0] == path and now < unseen[1]:
                if now >= unseen[2] and self._paths.get(cluster) == path:
                    del self._paths[cluster]  # the next ask checks the copy (gone: placed)
                    self._rechecking[cluster] = path
                    self._unseen[cluster] = (path, unseen[1], now + UNSEEN_RECHECK_S)
                return True
            self._unseen.pop(cluster, None)
            if self._unseen_if_intact(cluster, path, now):
                return True
            if self._paths.get(cluster) == path:
                del self._paths[cluster]
                self._rechecking[cluster] = path
                log.info("%s: trainbot's py-spy %s not found on the nodes; checking it on the "
                         "next collection", cluster, path)
            return False

    def unseen_after_check(self, cluster: str, path: str) -> bool:
        """After a miss `forget` could not explain, the copy was checked on the login node
        (the placement it began): True, remembered and warned as `forget` does, when that
        check found `path` there intact, also for a collection that missed it beside the one
        this check made known (their first misses overlapped: both joined the placement);
        False when it was gone (copied again) or is not known checked."""
        with self._lock:
            now = self._monotonic()
            unseen = self._unseen.get(cluster)
            if unseen is not None and unseen[0] == path and now < unseen[1]:
                return True
            return self._unseen_if_intact(cluster, path, now)

    def _unseen_if_intact(self, cluster: str, path: str, now: float) -> bool:
        """The nodes missed `path`, checked (or copied) intact on the login node within
        INTACT_FRESH_S: they do not see it; remembered for UNSEEN_REMEMBERED_S, warned once.
        Holds the lock."""
        intact = self._intact.pop(cluster, None)
        if intact is None or intact[0] != path or now - intact[1] >= INTACT_FRESH_S \
                or self._paths.get(cluster) != path:
            return False
        self._unseen[cluster] = (path, now + UNSEEN_REMEMBERED_S, now + UNSEEN_RECHECK_S)
        first = (cluster, path) not in self._warned
        self._warned.add((cluster, path))
        log.log(logging.WARNING if first else logging.INFO,
                "%s: trainbot's py-spy %s is on the login node, but the nodes do not find it "
                "or cannot run it (a home not shared with the nodes, or mounted noexec): set "
                "the cluster's py_spy to a py-spy the nodes can run; not checked again for %d "
                "minutes", cluster, path, UNSEEN_REMEMBERED_S // 60)
        return True

    def found(self, cluster: str, path: str) -> None:
        """A collection ran `path` on `cluster`'s nodes: a miss remembered is over."""
        with self._lock:
            self._drop_intact(cluster, path)
            if self._unseen.get(cluster, ("",))[0] == path:
                del self._unseen[cluster]

    def settled(self, cluster: str, path: str) -> None:
        """A collection that ran `path` ended neither running it nor finding it absent (timed
        out, failed, the job ended): its recheck's "intact" no longer counts (class doc)."""
        with self._lock:
            self._drop_intact(cluster, path)

    def _drop_intact(self, cluster: str, path: str) -> None:
        if self._intact.get(cluster, ("",))[0] == path:
            del self._intact[cluster]

    def _place(self, cluster: str, place: Callable[[], str], future: Future[str]) -> None:
        try:
            path = place()
        except BaseException as exc:  # noqa: BLE001 - handed to the future
            log.warning("%s: placing py-spy failed: %s", cluster, exc)
            with self._lock:
                self._under_way.pop(cluster, None)
                self._copying.discard(cluster)
            future.set_exception(exc)
            return
        with self._lock:
            self._paths[cluster] = path
            self._under_way.pop(cluster, None)
            copied = cluster in self._copying
            self._copying.discard(cluster)
            if self._rechecking.pop(cluster, None) == path and copied:
                log.warning("%s: trainbot's py-spy %s was gone; placed it again", cluster,
                            path)
                if self._unseen.get(cluster, ("",))[0] == path:
                    del self._unseen[cluster]  # the copy the nodes missed is new
            else:
                # checked intact, or first copied, on the login node just now: the nodes'
                # next miss is theirs (a one-shot command's, a bot's first collection)
                self._intact[cluster] = (path, self._monotonic())
        future.set_result(path)
