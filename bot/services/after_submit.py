"""What follows every submit once its job is recorded and announced, one step for all of them:
a person's (`after_person_submit`): `/train submit|resume` (bot.services.train), a prompt's
Resubmit button and an approved Cancel and resume (bot.services.approved_choices, and the
settle that finishes one: bot.services.cancel_settle), and the recovery of a submit the bot
died in (bot.services.runs.recover_submits_in_flight, as bot.app wires it); and the
watcher's automatic resubmit's (`supersede_prompts`, as its `resubmitted` note is published:
bot.services.watch_events).

The open Resubmit prompts of the recipe that the new job carries on (a newer run, or a resume
of their run: bot.services.submit.run_moved_on, the check their click makes) are rewritten
at once to say which job took over, with no buttons (`supersede_prompts`): each is marked
out of date once (ApprovalsRepo.supersede: one caller of every replica), and its post
rewritten through the decided template as any decided prompt's; a rewrite Slack refused is
made again by the `prompts` job (`show_superseded`) until it is taken."""

from __future__ import annotations

import logging

from bot.cluster.errors import said
from bot.services import competitors as comp
from bot.services.approval_outcomes import Outcome, decided, rewrite_post
from bot.services.home import refresh_homes
from bot.services.ports import BotContext, LeaseLost, root_key
from bot.services.prompts import RESUBMIT_ACTION
from bot.services.runs import array_task_of
from bot.services.submit import AUTOMATIC_ACTOR, run_moved_on
from bot.services.submit_result import SubmitResult
from bot.services.threads import render, thread_note
from bot.store import Approval

log = logging.getLogger(__name__)


def after_person_submit(ctx: BotContext, recipe: str, result: SubmitResult, now: float, *,
                        besides: str | None = None) -> list[comp.HoldProposal]:
    """The recipe's prompts the new job carries on rewritten (`supersede_prompts`), the holds
    to propose for the new job (competitors.propose_holds_for_submit: each asked once), then
    the run on the Home tabs of the people who see it (refresh_homes), but `besides`'s: a
    Home tab click's presser, whose tab the click publishes with what it did. The submit is
    done: what these raise (Slurm printing what trainbot cannot read, the store failing) is
    logged and never changes what the submit did nor what its person is told (holds not
    asked are said in the run's thread); only a lost lease goes up, as everywhere."""
    supersede_prompts(ctx, recipe, now)
    try:
        proposals = comp.propose_holds_for_submit(ctx, recipe, result, now)
    except LeaseLost:
        raise
    except Exception as exc:  # noqa: BLE001 - the submit is done, whatever its follow-up raised
        log.warning("job %s is submitted and recorded; looking for the jobs ahead of it "
                    "failed: %s", result.job_id, exc, exc_info=True)
        _say_no_holds_asked(ctx, recipe, result, exc)
        proposals = []
    try:
        refresh_homes(ctx, result.chain_id, now, besides=besides)
    except LeaseLost:
        raise
    except Exception:  # noqa: BLE001 - the tabs are refreshed again at the run's next change
        log.warning("job %s is submitted and recorded; refreshing the Home tabs failed",
                    result.job_id, exc_info=True)
    return proposals


def _say_no_holds_asked(ctx: BotContext, recipe: str, result: SubmitResult,
                        exc: Exception) -> None:
    """Say in the run's thread, once for the job, that no hold is asked about for it."""
    try:
        thread_note(ctx, result.chain_id, f"holds-not-asked:{result.job_id}", render(
            ctx, "train_reply", recipe, {"kind": "holds_not_asked", "job": result.job_id,
                                         "error": said(exc)})[1])
    except LeaseLost:
        raise
    except Exception:  # noqa: BLE001 - the note is best effort; the log has the failure
        log.warning("saying in the thread that job %s's holds were not asked about failed",
                    result.job_id, exc_info=True)


def supersede_prompts(ctx: BotContext, recipe: str | None, now: float) -> None:
    """Every open Resubmit prompt (of `recipe`; None: of every recipe) whose click would now
    be refused because a newer job carries its recipe on (run_moved_on): marked out of date
    with what took over, once, then its post rewritten (`show_superseded`). A failure is
    logged and never undoes the submit that led here; the `prompts` job tries again."""
    try:
        chains: set[int] = set()
        for approval in ctx.store.approvals.pending():
            payload = approval.payload
            if approval.action != RESUBMIT_ACTION or approval.chain_id is None or \
                    "resubmit" not in payload.get("choices", ()) or \
                    (recipe is not None and payload.get("recipe") != recipe):
                continue
            if _supersede(ctx, approval, now):
                chains.add(approval.chain_id)
        show_superseded(ctx)
        for chain_id in sorted(chains):  # their Home tab rows drop the prompt's buttons
            refresh_homes(ctx, chain_id, now)
    except LeaseLost:
        raise
    except Exception:  # noqa: BLE001 - the job is queued; the prompts job tries again
        log.exception("rewriting the prompts %s's new job carries on failed", recipe)


def _supersede(ctx: BotContext, approval: Approval, now: float) -> bool:
    """Mark `approval` out of date when a newer job carries its recipe on (its click would
    be refused): its run's latest attempt is another job, or a newer run is the recipe's."""
    assert approval.chain_id is not None
    recipe, target = str(approval.payload.get("recipe") or ""), str(approval.target_job)
    moved = run_moved_on(ctx.store, approval.chain_id, recipe,
                         array_task_of(ctx, approval.chain_id, target), target)
    if moved is None:
        return False
    took: dict[str, object] = {"job": moved.job, "new_run": moved.new_run}
    current = ctx.store.chains.latest_for_recipe(recipe) if moved.new_run else None
    if current is not None:
        took["chain_id"] = current.id
    if not ctx.store.approvals.supersede(approval.token, AUTOMATIC_ACTOR, took_over=took,
                                         now=now):
        return False  # decided meanwhile, or superseded by another replica
    log.info("prompt %s on job %s is out of date: job %s carries %s on", approval.token,
             target, moved.job, recipe)
    return True


def show_superseded(ctx: BotContext) -> None:
    """Rewrite the post of every superseded prompt not yet shown so (its question and card,
    then which job took over, no buttons), and mark it shown once Slack took the update;
    one Slack refused stays to show, tried again at the next call (the `prompts` job's)."""
    for approval in ctx.store.approvals.superseded_unshown():
        payload = approval.payload
        text, blocks = decided(ctx, payload.get("recipe"), payload,
                               took_over_outcome(ctx, approval))
        if rewrite_post(ctx, approval, payload.get("post_key"), text, blocks):
            ctx.store.approvals.mark_step(approval.token, "superseded_shown",
                                          now=ctx.clock())


def took_over_outcome(ctx: BotContext, approval: Approval) -> Outcome:
    """What a superseded prompt says (its payload's `took_over`): a newer run's job took over,
    its thread in the channel of that run's root once posted (`took_over`), or its run was
    resumed since as that job (`resumed_since`)."""
    payload = approval.payload
    took = payload.get("took_over") or {}
    channel = None
    if took.get("new_run") and took.get("chain_id") is not None:
        root = ctx.store.slack_posts.get(root_key(int(took["chain_id"])))
        channel = root.channel if root is not None and root.posted else None
    return Outcome("stale", AUTOMATIC_ACTOR,
                   "took_over" if took.get("new_run") else "resumed_since",
                   payload.get("recipe"), job_id=approval.target_job,
                   current_job=str(took.get("job") or "?"), channel=channel)
