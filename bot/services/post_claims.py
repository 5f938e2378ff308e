"""Claims of a post in progress: the try of one message of a run's thread (its root, a reply, a
kept note) claimed in the store (its command claims, shared by every replica: exactly one of
several concurrent claims is taken) while it runs, so two tries of the same key (a handler's
and the `prompts` job's, this replica's or another's) do not both post it: a post can take
minutes (Slack's 429 waits, to the thread writer's `post_at_most_s`), and until it ends Slack
has no copy its key would find, so the other try would send its own.

A claim is held as long as one post can take at worst, so a try outlasting it could be joined
by another; one whose holder died lapses by that hold, or is taken over at once when its
holder is provably dead (a bot of this host killed in its try, restarted: `DeadHolders`, as
the leases judge theirs)."""

from __future__ import annotations

import logging

from bot.core.holders import holder_label
from bot.services.leases import process_holder, process_judge
from bot.services.ports import BotContext

log = logging.getLogger(__name__)

# the shortest hold of a post's claim: a sink whose posts have no worst case (the console's,
# `post_at_most_s` 0) still holds it while its try runs
POST_CLAIM_AT_LEAST_S = 30.0


def post_claim_key(key: str) -> str:
    """The claim key of the post `key`."""
    return f"post:{key}"


def claim_post(ctx: BotContext, key: str, what: str, *, posts: int = 1) -> str | None:
    """Claim the try of the post `key` (`what`: how the log names it, e.g. "chain 3: its
    root's") for as long as its `posts` (a kept reply's try may post its run's root, itself
    and its file) can take at worst, each the thread writer's `post_at_most_s`, at least
    POST_CLAIM_AT_LEAST_S, held by this process (`process_holder`); the claim's
    holder, or None when another try, this process's or another's, holds it (one released
    between the claim and the look is claimed again, once). A claim whose holder is provably
    dead is taken over at once (atomically: of several takers one gets it); another live
    try's claim, or one that cannot be judged, stands."""
    assert ctx.sink is not None
    holder, claim, now = process_holder(), post_claim_key(key), ctx.clock()
    hold_s = posts * max(ctx.sink.post_at_most_s(), POST_CLAIM_AT_LEAST_S)
    claims = ctx.store.command_claims
    if claims.claim(claim, holder, now, hold_s):
        return holder
    other = claims.holder(claim)
    if other is None:  # released meanwhile: claimed again, once
        return holder if claims.claim(claim, holder, now, hold_s) else None
    if other == holder:  # this process's other try
        return None
    death = process_judge().death(other, what=claim)
    if death is None or not claims.take_over(claim, other, holder, now, hold_s):
        return None
    log.warning("%s try was claimed by %s, which is dead (%s): tried here (%s) at once, not "
                "when that claim lapses", what, holder_label(other), death.value,
                holder_label(holder))
    return holder


def release_post(ctx: BotContext, key: str, holder: str, what: str) -> None:
    """End `holder`'s claim of the post `key`, its try over (a store blip: logged, the claim
    lapses by its hold)."""
    try:
        ctx.store.command_claims.release(post_claim_key(key), holder)
    except Exception:  # noqa: BLE001 - a store blip: the claim lapses by its hold
        log.warning("%s: could not release its claim (it lapses by its hold)", what,
                    exc_info=True)


__all__ = ["POST_CLAIM_AT_LEAST_S", "claim_post", "post_claim_key", "release_post"]
