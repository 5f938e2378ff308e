"""The fence around the Slack listeners' work at a stop.

Bolt runs the lazy listeners (the `/train` work, button clicks) on daemon threads, which the
interpreter kills wherever they are when `trainbot run` exits. At a stop (bot.app.run) the
fence first refuses new work: a listener admitted after that does nothing and tells the person
that trainbot is restarting. Then the stop waits, for a bounded time, for the work already
admitted to end, before it closes the SSH connections (after which no session is opened again:
bot.cluster.sessions.ClusterSessions.close) and the store.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


class ListenerFence:
    """Counts the listener work under way; `stop()` refuses new work and waits for it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._stopping = False
        self._in_flight = 0

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @contextmanager
    def admitted(self) -> Iterator[bool]:
        """True (and counted as under way until the block ends) unless the bot is stopping:
        then False, and the listener does nothing but say that trainbot is restarting."""
        with self._changed:
            admitted = not self._stopping
            if admitted:
                self._in_flight += 1
        try:
            yield admitted
        finally:
            if admitted:
                with self._changed:
                    self._in_flight -= 1
                    self._changed.notify_all()

    def refuse(self) -> None:
        """From now on, no listener work is admitted."""
        with self._changed:
            self._stopping = True

    def wait(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the work admitted before `refuse()` to end. True if it
        all ended; else logged (the process ends without it: its SSH sessions are closed and
        none is opened again)."""
        with self._changed:
            ended = self._changed.wait_for(lambda: self._in_flight == 0,
                                           timeout=max(0.0, timeout_s))
            left = self._in_flight
        if not ended:
            log.warning("%d Slack handler(s) still under way; stopping without them (no new "
                        "SSH session is opened for them)", left)
        return ended
