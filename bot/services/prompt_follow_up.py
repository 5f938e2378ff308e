"""What follows a prompt besides its click's decision: an unanswered prompt's reminder,
escalation and expiry (`follow_up_prompts`, the scheduler's `prompts` job), and the prompt's
post rewritten and the Home tabs refreshed after a click (`after_click`) or an expiry
(`rewrite_prompt`, also for a cancel settled later: bot.services.cancel_settle).

The click itself (who may, once per prompt, what it did) is bot.services.approvals'.
"""

from __future__ import annotations

import logging
import re

from bot.services import competitors as comp
from bot.services.access import escalation_people, mention, prompt_people
from bot.services.after_submit import supersede_prompts
from bot.services.approval_outcomes import decided, expired_outcome, rewrite_post
from bot.services.approvals import ClickResult
from bot.services.approved_choices import policy_of
from bot.services.home import publish_home, refresh_homes
from bot.services.ports import Blocks, BotContext, LeaseLost
from bot.services.probes import PROBE_ACTION
from bot.services.threads import post_safely, render
from bot.store import Approval

log = logging.getLogger(__name__)

_MENTION = re.compile(r"^(?:<[@!][^>]*>\s*)+")


def follow_up_prompts(ctx: BotContext, now: float) -> None:
    """Every pending prompt of a run chain, once `now` passes its times (the recipe's policy):
    a hold prompt whose question never went out (its process died between the prompt's
    record and its post, or Slack refused it) → its question, once it is
    bot.core.takeover.post_takeover_s old (the longer of the configured
    slack.post_deadline_s's and the one its process kept with it, one request and the
    margin), and no reminder before it; `remind_after_s` → one
    reminder in its thread mentioning the prompt's people (the recipe's
    `mentions.prompts`); `escalate_after_s` → one escalation mentioning `mentions.escalate_to`
    (default: the approvers); `expires_at` → the prompt rewritten to say it expired and what
    happens now. Each step is recorded in the approval's row (`mark_step`, `expire`: true for
    one caller), so a replica taking the job over repeats none; the posts are keyed, so a
    crash between a post and its record posts nothing twice. Run by the scheduler's `prompts`
    job (bot.app.build_scheduler) under its lease, after
    bot.services.cancel_settle.settle_unknown_cancels. First, the open Resubmit prompts a
    newer job carries on are rewritten, and those whose rewrite Slack refused are tried again
    (bot.services.after_submit.supersede_prompts: a prompt whose incident was posted after
    its recipe's new submit too)."""
    supersede_prompts(ctx, None, now)
    for approval in ctx.store.approvals.pending():
        if approval.chain_id is None:
            continue
        try:
            _follow_up(ctx, approval, now)
        except LeaseLost:
            raise  # another replica runs the job now
        except Exception:  # noqa: BLE001 - one prompt's failure never stops the others
            log.exception("following up prompt %s failed", approval.token)


def _follow_up(ctx: BotContext, approval: Approval, now: float) -> None:
    if approval.action == PROBE_ACTION:  # an offer, not a question: expires unannounced
        if approval.expires_at <= now:
            ctx.store.approvals.expire(approval.token, now=now)
        return
    recipe = approval.payload.get("recipe")
    chain_id = approval.chain_id
    assert chain_id is not None
    policy = policy_of(ctx, recipe)
    if approval.expires_at <= now:
        if ctx.store.approvals.expire(approval.token, now=now):
            _show_expired(ctx, approval, recipe)
        return
    age = now - approval.created_at
    if approval.action == comp.HOLD_ACTION and not comp.asked(ctx, approval):
        # its process died (or Slack refused it) before its question went out: asked here,
        # once the post's own deadline has passed (its keyed post is made once), not reminded
        comp.ask_when_due(ctx, approval, now)
        return
    step: str | None = None
    if policy.escalate_after_s and age >= policy.escalate_after_s:
        step = "escalated"
    elif policy.remind_after_s and age >= policy.remind_after_s:
        step = "reminded"
    if step is None or step in ctx.store.approvals.steps(approval.token):
        return
    people = (escalation_people if step == "escalated" else prompt_people)(ctx.config, recipe)
    view = {"kind": step, "mentions": [mention(p) for p in people],
            "question": _question(approval), "age_s": age, "expires_at": approval.expires_at}
    blocks, text = render(ctx, "prompt_follow_up", recipe, view)
    key = f"prompt-{step}:{approval.token}"
    if post_safely(ctx, "reply", chain_id, key, blocks, text) is not None:
        ctx.store.approvals.mark_step(approval.token, step, now=now)
        ctx.store.audit.record(actor="trainbot", action=f"approval.{step}", now=now,
                               recipe=recipe, job_id=approval.target_job, result="posted",
                               detail={"token": approval.token, "mentioned": list(people)})


def _question(approval: Approval) -> str:
    """What the prompt asks, without its mentions (a reminder mentions whom it chooses)."""
    summary = approval.payload.get("summary")
    if summary:
        return _MENTION.sub("", str(summary))
    return ""


def _show_expired(ctx: BotContext, approval: Approval, recipe: str | None) -> None:
    """Rewrite the expired prompt: its question, then that it expired and what happens now."""
    text, blocks = decided(ctx, recipe, approval.payload,
                            expired_outcome(approval))
    rewrite_prompt(ctx, approval, text, blocks)
    if approval.chain_id is not None:
        refresh_homes(ctx, approval.chain_id, ctx.clock())


def rewrite_prompt(ctx: BotContext, approval: Approval, text: str, blocks: Blocks) -> None:
    """Rewrite the thread post that carries `approval`'s buttons (nothing when unknown)."""
    key = (comp.hold_prompt_key(approval.token) if approval.action == comp.HOLD_ACTION
           else approval.payload.get("post_key"))
    rewrite_post(ctx, approval, key, text, blocks)


def after_click(ctx: BotContext, token: str, result: ClickResult, user: str, now: float, *,
                from_home: bool) -> None:
    """After a click was decided (`handle_click`): every Home tab showing the run is
    refreshed; a click made on the Home tab also rewrites the prompt in the thread (a thread
    click rewrites it through Slack's own message update) and tells the clicker on their
    Home tab what happened (a Home tab has no ephemeral replies)."""
    approval = ctx.store.approvals.get(token)
    if from_home:
        if approval is not None and result.update_text is not None and result.update_blocks:
            rewrite_prompt(ctx, approval, result.update_text, result.update_blocks)
        publish_home(ctx, user, now, notice=result.update_text or result.ephemeral)
    if approval is not None and approval.chain_id is not None and not result.homes_refreshed:
        refresh_homes(ctx, approval.chain_id, now, besides=user if from_home else None)
