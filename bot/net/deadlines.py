"""One thread that keeps every deadline of the process's network waits: each Slack or webhook
request's (bot.net.whole_request), each SSH connection's connect (bot.cluster.dial), each SSH
request paramiko waits on without a timeout (bot.cluster.channels.within) and the commands
in flight on each SSH connection (bot.cluster.in_flight). A wait says what to do when
its time is up (`at`: shut its sockets down, close its connection) and takes it back once it
is over (`Deadline.cancel`). A timer thread per wait would be one more thread per request or
connect in flight (a chart upload beside a post beside a Home tab refresh, each of several
replicas' ticks, each cluster's reconnect); here they are all one daemon thread, started at the
first deadline, sleeping until the earliest is due.

What is due runs on that thread, one after another: it must be quick and must not block (a
socket's shutdown is), or every later deadline waits for it. An action that raises is
logged; the thread goes on.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

_COMPACT_AT = 64
"""How many deadlines taken back may wait in the heap (each until its own time would have
come) before the heap is rebuilt without them, when they are also half of it: requests that
end well within their timeout (nearly all) do not pile up there."""


class Deadline:
    """One action due at a monotonic time, until taken back (`cancel`)."""

    __slots__ = ("_watcher", "action", "cancelled", "when")

    def __init__(self, watcher: _Watcher, when: float, action: Callable[[], None]) -> None:
        self._watcher = watcher
        self.when = when
        self.action = action
        self.cancelled = False

    def cancel(self) -> None:
        """Take the action back: it does not run, unless it is running already (the request
        ending as its time comes: the action itself must allow for that)."""
        self._watcher.cancel(self)


class _Watcher:
    """The heap of deadlines and the thread that runs each when due."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._changed = threading.Condition(threading.Lock())  # guards everything below
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._cancelled = 0
        self._thread: threading.Thread | None = None

    def at(self, when: float, action: Callable[[], None]) -> Deadline:
        deadline = Deadline(self, when, action)
        with self._changed:
            heapq.heappush(self._heap, (when, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():  # first, or after a fork
                self._thread = threading.Thread(target=self._keep_time, name=self._name,
                                                daemon=True)
                self._thread.start()
            elif self._heap[0][2] is deadline:  # sooner than the thread sleeps until
                self._changed.notify()
        return deadline

    def cancel(self, deadline: Deadline) -> None:
        with self._changed:
            if deadline.cancelled:
                return
            deadline.cancelled = True
            self._cancelled += 1
            if self._cancelled >= _COMPACT_AT and 2 * self._cancelled >= len(self._heap):
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def pending(self) -> int:
        """How many entries the heap holds (those taken back and not yet dropped included)."""
        with self._changed:
            return len(self._heap)

    def keeps_time_here(self) -> bool:
        """Whether the calling thread is the one running what is due."""
        return threading.current_thread() is self._thread

    def _next_due(self) -> Deadline:
        """Wait for the earliest deadline not taken back to be due; take it off the heap."""
        with self._changed:
            while True:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                    self._cancelled -= 1
                if not self._heap:
                    self._changed.wait()
                    continue
                left = self._heap[0][0] - time.monotonic()
                if left > 0:  # a wait past TIMEOUT_MAX raises OverflowError: wake and look again
                    self._changed.wait(min(left, threading.TIMEOUT_MAX))
                    continue
                deadline = heapq.heappop(self._heap)[2]
                deadline.cancelled = True  # done: a cancel after it changes nothing
                return deadline

    def _keep_time(self) -> None:
        while True:
            deadline = self._next_due()
            try:
                deadline.action()
            except Exception:  # noqa: BLE001 - one action's failure stops no other deadline
                log.exception("an action due at a deadline failed")


_watcher = _Watcher("deadlines")


def at(when: float, action: Callable[[], None]) -> Deadline:
    """Run `action` (quick, not blocking) on the deadlines' thread at the monotonic time
    `when`, unless it is taken back before (`Deadline.cancel`)."""
    return _watcher.at(when, action)


def pending() -> int:
    """How many deadlines the thread holds (those taken back, not yet dropped, included)."""
    return _watcher.pending()


def on_deadlines_thread() -> bool:
    """Whether the caller is an action running at its deadline (on the deadlines' thread):
    one waiting there for another action to end would wait for itself."""
    return _watcher.keeps_time_here()
