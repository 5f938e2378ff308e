"""What follows every person's submit once its job is recorded and announced, one step for
all of them: `/train submit|resume` (bot.services.train), a prompt's Resubmit button and an
approved Cancel and resume (bot.services.approved_choices, and the settle that finishes one:
bot.services.cancel_settle), and the recovery of a submit the bot died in
(bot.services.runs.recover_submits_in_flight, as bot.app wires it)."""

from __future__ import annotations

from bot.services import competitors as comp
from bot.services.home import refresh_homes
from bot.services.ports import BotContext
from bot.services.submit_result import SubmitResult


def after_person_submit(ctx: BotContext, recipe: str, result: SubmitResult, now: float, *,
                        besides: str | None = None) -> list[comp.HoldProposal]:
    """The holds to propose for the new job (competitors.propose_holds_for_submit: each
    asked once), then the run on the Home tabs of the people who see it (refresh_homes), but
    `besides`'s: a Home tab click's presser, whose tab the click publishes with what it did."""
    proposals = comp.propose_holds_for_submit(ctx, recipe, result, now)
    refresh_homes(ctx, result.chain_id, now, besides=besides)
    return proposals
