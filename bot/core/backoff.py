"""How often a try that keeps being refused is made again: at the chances it is given (a
watcher's failed ticks), the first refusal skips 1, then 2, 4, 8 and at most `MAX_SKIPPED`
chances before the next try, so a refusal that lasts costs a try every `MAX_SKIPPED` + 1
chances instead of one at each. Pure: the caller keeps one per thing tried."""

from __future__ import annotations

from dataclasses import dataclass

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


__all__ = ["MAX_SKIPPED", "Backoff"]
