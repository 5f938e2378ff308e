"""The bot's process dying at a crash point (bot.crashpoint), for the crash tests that run in
one process: `Died` ends the code where it stands, as SIGKILL or the OOM killer would, and is a
BaseException so no `except Exception` of the bot's catches it."""

from __future__ import annotations

from collections.abc import Callable


class Died(BaseException):
    """The bot's process ending where it stands (SIGKILL, OOM): nothing after it runs."""


def dies_at(point: str) -> Callable[..., None]:
    """A crashpoint hook (monkeypatched over a module's `crashpoint`) that ends the bot (Died)
    at crash point `point` and lets every other point pass."""
    def crashpoint(name: str, detail: str = "") -> None:
        if name == point:
            raise Died(detail)
    return crashpoint
