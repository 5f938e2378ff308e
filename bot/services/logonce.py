"""Log lines said at warning once per key, at info after that, for a process's life."""

from __future__ import annotations

import logging
import threading


class OnceLog:
    """Which warnings were said already, by key: a state a loop meets again and again (a
    recovery that keeps a row every tick) warns once and says it at info after that. Shared
    by a context and its fenced copies (bot.services.ports.BotContext.once); safe across
    threads (of two saying one key at once, one warns)."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def warn_once(self, logger: logging.Logger, key: str, message: str, *args: object,
                  later: int = logging.INFO) -> None:
        """`logger.warning(message, *args)` the first time `key` is said, at `later` (info, or
        debug for a state nothing changes until someone does) after."""
        with self._lock:
            first = key not in self._said
            self._said.add(key)
        logger.log(logging.WARNING if first else later, message, *args)
