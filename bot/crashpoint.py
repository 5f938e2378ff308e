"""Crash hooks for the crash-safety test: a no-op unless TRAINBOT_CRASH_AT is set."""

from __future__ import annotations

import os
import signal

ENV = "TRAINBOT_CRASH_AT"


def crashpoint(name: str, detail: str = "") -> None:
    """SIGKILL this process if TRAINBOT_CRASH_AT is `name`, or `name:TEXT` with TEXT in `detail`
    (a no-op unless set)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, text = wanted.partition(":")
    if point == name and text in detail:
        os.kill(os.getpid(), signal.SIGKILL)
