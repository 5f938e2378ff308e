"""How often a try that keeps being refused is made again: at the chances it is given (a
watcher's failed ticks), the first refusal skips 1, then 2, 4, 8 and at most `MAX_SKIPPED`
chances before the next try, so a refusal that lasts costs a try every `MAX_SKIPPED` + 1
chances instead of one at each. Pure: the caller keeps one per thing tried (`Backoffs`: one
per key, the things a caller tries by key). `after_try` is what a post's try leaves to do
(posted, later, given up), for every kind of thread note: the one place that decides it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

MAX_SKIPPED = 16  # chances skipped at most between two tries (8.5 min at a 30-s tick)
# tries of a post whose thread is not there (its run's root message never posted, or failing
# at each try) before it is given up: at 0, 2, 5, 10, 19, 36, 53 and 70 chances (35 min at a
# 30-s tick)
THREADLESS_TRIES = 8
# An automatic resubmit that failed (bot.services.watch.resubmit) is tried again after 1, 2,
# 4, 8 minutes; its `RESUBMIT_TRIES`th failed try (about 15 min after the first) is its last:
# trainbot stops and says so in the run's thread. One sbatch refused is its last at once.
RESUBMIT_TRIES = 5
RESUBMIT_RETRY_FIRST_S = 60.0
RESUBMIT_RETRY_MAX_S = 900.0


@dataclass
class Backoff:
    """One thing's refusals in a row and the chances to skip before its next try; `failed`:
    its tries in a row not taken, whatever the reason (a failure series); `threadless`: those
    of them made with no thread to post in."""

    refused: int = 0
    skip: int = 0
    failed: int = 0
    threadless: int = 0

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
# message itself, its size or its blocks: the same message will never be taken);
# `threadless` (not sent: its run's thread is not there, its root message never posted or
# its try failed for now: a 5xx, a rate limit outlasting the client's retries);
# `root_refused` (not sent: the chat refused its run's root message, tried again for it: the
# thread will not come by itself, so waiting for it would only hold the run back);
# `channelless` (not sent: its run's root message was never posted and the run has no
# channel to post it in: the same).
Fate = Literal["taken", "failed", "refused", "rejected", "threadless", "root_refused",
               "channelless"]
# the fates whose post is given up at their first try: no later try can change them
GIVEN_UP_AT_ONCE: tuple[Fate, ...] = ("rejected", "root_refused", "channelless")


@dataclass(frozen=True)
class AfterTry:
    """What a try leaves to do: `posted`; `later` (tried again once `skip` chances have been
    skipped: 0 after a transient failure, else 1, 2, 4, 8, at most `MAX_SKIPPED`); or
    `given_up` (never tried again: the message itself rejected, its run's root message
    refused or without a channel to go to, or still no thread after `THREADLESS_TRIES`
    tries). `failed`: the tries in a row not taken, this one included (posted: those before
    it), so a failure series is warned of once, at its first try (`first_failure`), and
    once more when it ends (`recovered`, or given up)."""

    outcome: Literal["posted", "later", "given_up"]
    skip: int = 0
    failed: int = 0

    @property
    def first_failure(self) -> bool:
        return self.outcome == "later" and self.failed == 1

    @property
    def recovered(self) -> bool:
        return self.outcome == "posted" and self.failed > 0


def after_try(backoffs: Backoffs, key: str, fate: Fate) -> AfterTry:
    """What a try of `key` whose fate is `fate` leaves to do (AfterTry), its backoff in
    `backoffs` moved on: forgotten once it is over (taken; rejected, since sending the same
    message again cannot change the chat's answer; root_refused and channelless, since its
    thread will not come by itself; threadless for the `THREADLESS_TRIES`th time); kept as
    it was after a transient failure (tried at the next chance); grown after a refusal, or a
    try with no thread (the root may be posted meanwhile)."""
    backoff = backoffs.by_key.get(key)
    if fate == "taken":
        backoffs.taken(key)
        return AfterTry("posted", failed=backoff.failed if backoff is not None else 0)
    backoff = backoffs.by_key.setdefault(key, Backoff())
    backoff.failed += 1
    if fate == "threadless":
        backoff.threadless += 1
    if fate in GIVEN_UP_AT_ONCE or backoff.threadless >= THREADLESS_TRIES:
        backoffs.taken(key)
        return AfterTry("given_up", failed=backoff.failed)
    if fate == "failed":
        return AfterTry("later", 0, backoff.failed)
    return AfterTry("later", backoff.refused_again(), backoff.failed)


def resubmit_retry_in_s(failures: int) -> float:
    """How long after its `failures`th failed try an automatic resubmit is tried again."""
    return min(RESUBMIT_RETRY_FIRST_S * 2 ** (failures - 1), RESUBMIT_RETRY_MAX_S)


__all__ = ["MAX_SKIPPED", "RESUBMIT_TRIES", "THREADLESS_TRIES", "AfterTry", "Backoff",
           "Backoffs", "Fate", "after_try", "resubmit_retry_in_s"]
