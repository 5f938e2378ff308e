"""trainbot's py-spy placements per cluster, held by the bot's context (no adapter: the
ports name it; the placing itself is bot.cluster.pyspy.place_pyspy)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future

log = logging.getLogger(__name__)


class PySpyPlacements:
    """trainbot's py-spy placed on the clusters (the paths placed, and the placement under way
    per cluster name), owned by the bot's context (bot.services.ports.BotContext.pyspy: one per
    process) or a command's collector: one placement at a time per cluster, whichever
    collector, watcher or command asks, in the background, so a collection waits for it only
    as long as its deadline allows. A failed placement is logged and forgotten: the next ask
    tries again (bot.cluster.pyspy.place_pyspy is idempotent: sha256-checked, moved into
    place atomically).
    `placed`: paths known placed already, by cluster."""

    def __init__(self, placed: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._paths: dict[str, str] = dict(placed or {})
        self._under_way: dict[str, Future[str]] = {}

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

    def forget(self, cluster: str, path: str) -> None:
        """`path` is no longer there on `cluster` (a collection found it absent: a cache
        cleanup, a quota purge): the next ask places py-spy again. A path placed since, a
        different one, is kept."""
        with self._lock:
            if self._paths.get(cluster) == path:
                del self._paths[cluster]
                log.warning("%s: trainbot's py-spy %s is gone; placing it again on the next "
                            "collection", cluster, path)

    def _place(self, cluster: str, place: Callable[[], str], future: Future[str]) -> None:
        try:
            path = place()
        except BaseException as exc:  # noqa: BLE001 - handed to the future
            log.warning("%s: placing py-spy failed: %s", cluster, exc)
            with self._lock:
                self._under_way.pop(cluster, None)
            future.set_exception(exc)
            return
        with self._lock:
            self._paths[cluster] = path
            self._under_way.pop(cluster, None)
        future.set_result(path)
