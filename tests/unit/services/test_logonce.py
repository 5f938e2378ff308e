"""A warning a loop meets again and again is said once at warning, then at info
(bot.services.logonce.OnceLog, the context's `once`)."""

from __future__ import annotations

import logging
import threading

from bot.services.logonce import OnceLog

log = logging.getLogger("test.logonce")


def _said(caplog) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == log.name]


def test_a_key_warns_once_then_says_it_at_info_and_another_key_warns(caplog) -> None:
    caplog.set_level(logging.INFO, logger=log.name)
    once = OnceLog()
    for _ in range(3):
        once.warn_once(log, "row:7", "row %d kept: %s", 7, "recipe removed")
    once.warn_once(log, "row:8", "row %d kept: %s", 8, "recipe removed")
    assert _said(caplog) == [("WARNING", "row 7 kept: recipe removed"),
                             ("INFO", "row 7 kept: recipe removed"),
                             ("INFO", "row 7 kept: recipe removed"),
                             ("WARNING", "row 8 kept: recipe removed")]


def test_of_threads_saying_one_key_at_once_one_warns(caplog) -> None:
    """The context's threads (the scheduler's jobs, Slack's handlers) may meet one state at
    the same moment: one of them warns, the others say it at info."""
    caplog.set_level(logging.INFO, logger=log.name)
    once = OnceLog()
    start = threading.Barrier(8)

    def say() -> None:
        start.wait(5)
        once.warn_once(log, "row:7", "row 7 kept")

    threads = [threading.Thread(target=say) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(level for level, _ in _said(caplog)) == ["INFO"] * 7 + ["WARNING"]
