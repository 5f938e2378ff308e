"""Crash hooks for the crash-safety test: `crashpoint(name, detail)` kills the process with
SIGKILL right there when the environment variable TRAINBOT_CRASH_AT is `name` or
`name:TEXT` with TEXT in `detail` (e.g. `intent_recorded::final` for the first incident's
intent); when the variable is unset (always, in production) it does nothing.
tests/integration/test_crash_safety.py uses it to kill the bot between an intent and its
effect."""

from __future__ import annotations

import os
import signal

ENV = "TRAINBOT_CRASH_AT"


def crashpoint(name: str, detail: str = "") -> None:
    """SIGKILL this process if TRAINBOT_CRASH_AT selects this point (a no-op unless set)."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, text = wanted.partition(":")
    if point == name and text in detail:
        os.kill(os.getpid(), signal.SIGKILL)
