"""How often a try that keeps being refused is made again: at the chances it is given (a
watcher's failed ticks), the first refusal skips 1, then 2, 4, 8 and at most `MAX_SKIPPED`
chances before the next try, so a refusal that lasts costs a try every `MAX_SKIPPED` + 1
chances instead of one at each. Pure: the caller keeps one per thing tried (`Backoffs`: one
per key, the things a caller tries by key)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

MAX_SKIPPED = 16  # chances skipped at most between two tries (8.5 min at a 30-s tick)


@dataclass
class Backoff:
    """One thing's refusals in a row and the chances to skip before its next try."""

    refused: int = 0
    skip: int = 0

    def due(self) -> bool:
        """Whether this chance is a try (True), or one skipped (counted off)."""
        if self.skip > 0:
            self.skip -= 1
            return False
        return True

    def refused_again(self) -> int:
        """The try was refused once more: the chances to skip before the next one."""
        self.refused += 1
        self.skip = min(2 ** (self.refused - 1), MAX_SKIPPED)
        return self.skip


@dataclass
class Backoffs:
    """The things tried by key, each its own Backoff once refused: one not refused is due at
    every chance; a refused one is tried again after 1, 2, 4, 8, at most `MAX_SKIPPED`
    chances skipped, until it is taken (`taken`: its backoff forgotten)."""

    by_key: dict[str, Backoff] = field(default_factory=dict)

    def due(self, key: str) -> bool:
        """Whether this chance of `key` is a try (a skipped one is counted off)."""
        backoff = self.by_key.get(key)
        return backoff is None or backoff.due()

    def refused(self, key: str) -> int:
        """The try of `key` was refused: the chances to skip before its next one."""
        return self.by_key.setdefault(key, Backoff()).refused_again()

    def taken(self, key: str) -> None:
        """The try of `key` went through: its next chance is a try."""
        self.by_key.pop(key, None)

    def forget(self, which: Callable[[str], bool]) -> None:
        """Forget the backoffs of the keys `which` picks (their things are over)."""
        for key in [k for k in self.by_key if which(k)]:
            del self.by_key[key]


__all__ = ["MAX_SKIPPED", "Backoff", "Backoffs"]
