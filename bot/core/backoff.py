"""How often a try that keeps being refused is made again: at the chances it is given (a
watcher's failed ticks), the first refusal skips 1, then 2, 4, 8 and at most `MAX_SKIPPED`
chances before the next try, so a refusal that lasts costs a try every `MAX_SKIPPED` + 1
chances instead of one at each. Pure: the caller keeps one per thing tried (`Backoffs`: one
per key, the things a caller tries by key). `after_try` is what a try's fate does to its
key's backoff."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

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


# What became of a try: `taken`; `failed` (a transient failure: a 5xx, a rate limit the
# client's own retries did not outlast, a connection lost); `refused` (the chat said no to
# the post, or to its lookup, in a way the next chance will not change: the bot out of the
# channel, the channel gone or archived, a scope missing); `rejected` (the chat refused the
# message itself, its size or its blocks: the same message will never be taken).
Fate = Literal["taken", "failed", "refused", "rejected"]


def after_try(backoffs: Backoffs, key: str, fate: Fate) -> int | None:
    """What a try of `key` whose fate is `fate` leaves to do: None when it is over (taken,
    or rejected: given up, since sending the same message again cannot change Slack's
    answer; its backoff forgotten either way), else the chances to skip before the next
    try: 0 after a transient failure (its backoff as it was), 1, 2, 4, 8, at most
    `MAX_SKIPPED` after refusals in a row."""
    if fate in ("taken", "rejected"):
        backoffs.taken(key)
        return None
    if fate == "failed":
        return 0
    return backoffs.refused(key)


__all__ = ["MAX_SKIPPED", "Backoff", "Backoffs", "Fate", "after_try"]
