"""Approval prompts: the question a person is asked, stored behind one opaque token.

A prompt (an incident's "Resubmit / Resubmit with --mem / Dismiss", a stalled job's "Cancel
and resume / Cancel / Dismiss") is one approval row: its action, target job, expiry and who
could approve it when it was made (a record: a click is authorized by the config running
then, bot.services.approvals). Every button of the prompt carries the same token as its
value; the button's action id (bot.slack.views.ActionId) says which choice; its Cancels ask
first in Slack's confirm dialog, as the Home tab's do (one builder:
bot.core.home.cancel_confirm). Clicks are answered by bot.services.approvals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bot.core.home import prompt_confirm
from bot.core.policy import CheckpointUnknown
from bot.services.access import approvers_now
from bot.services.ports import Blocks, BotContext
from bot.services.root_views import prompt_job
from bot.services.threads import render
from bot.slack.views import action_id_for

RESUBMIT_ACTION = "resubmit"


@dataclass(frozen=True)
class Prompt:
    """A posted-or-to-post approval prompt."""

    token: str
    text: str
    blocks: Blocks


def create_resubmit_prompt(
    ctx: BotContext,
    *,
    recipe: str,
    chain_id: int,
    job_id: str,
    now: float,
    summary: str,
    resume_iter: int | None = None,
    resume_checkpoint: str | None = None,
    checkpoint_unknown: CheckpointUnknown | None = None,
    mem: str | None = None,
    exclude: str | None = None,
    offer_cancel: bool = False,
    post_key: str | None = None,
    card: Blocks | None = None,
) -> Prompt:
    """Store an approval and build its buttons; the caller posts the blocks.

    A finished job's prompt: Resubmit from iteration N, Resubmit with --mem=… (when `mem`),
    Dismiss. `offer_cancel`: the job still runs (a stall): Cancel and resume (from the latest
    complete checkpoint), Cancel, Dismiss — no plain Resubmit, which would start a second copy
    beside the running one. `post_key`: the thread post that will carry it (stored, so its
    expiry can rewrite it: bot.services.prompt_follow_up.follow_up_prompts). `exclude`: the node a
    GPU or node fault happened on; every resubmit choice leaves it out (--exclude) and says so.
    `card`: the incident card's blocks the prompt's message shows between its question and its
    buttons (stored, so the message rewritten once it is decided, or expires, keeps them:
    bot.services.approval_outcomes.decided).
    `resume_checkpoint`: the name of the checkpoint a resume starts from (the watcher's
    decision's), which the buttons name when its iteration (`resume_iter`) is unknown;
    `checkpoint_unknown`: neither is known because looking the checkpoint up failed (a
    Cancel and resume's dialog says so, as the prompt does, not "from scratch").
    The buttons name the job as the thread does (an array task's `123_4`, its attempt's shown
    id), and Cancel and Cancel and resume ask first in Slack's confirm dialog naming it and its
    state (its attempt's; a job offered Cancel still runs).
    """
    if offer_cancel and (mem or exclude):
        raise ValueError("a running job's prompt (offer_cancel) cannot offer --mem or "
                         "--exclude: they are proposed for a finished job's resubmit")
    if offer_cancel:
        choices = ["cancel_resume", "cancel", "dismiss"]
    else:
        choices = ["resubmit", "resubmit_mem", "dismiss"] if mem else ["resubmit", "dismiss"]
    payload = {
        "choices": choices,
        "recipe": recipe,
        "cluster": ctx.config.recipe(recipe).cluster,
        "mem": mem,
        **({"exclude": exclude} if exclude else {}),
        "resume_iter": resume_iter,
        **({"resume_checkpoint": resume_checkpoint} if resume_checkpoint else {}),
        **({"checkpoint_unknown": checkpoint_unknown} if checkpoint_unknown else {}),
        "summary": summary,
        **({"post_key": post_key} if post_key else {}),
        **({"card": card} if card else {}),
    }
    token = _open_prompt(ctx, chain_id, str(job_id), payload, now) or ctx.store.approvals.create(
        action=RESUBMIT_ACTION,
        payload=payload,
        allowed=approvers_now(ctx.config, recipe).users,
        expires_at=now + ctx.config.policy_for(recipe).approval_expiry_s,
        now=now,
        target_job=str(job_id),
        chain_id=chain_id,
    )
    shown, state = prompt_job(ctx, chain_id, str(job_id), "RUNNING")
    blocks, text = render(ctx, "approval", recipe, approval_view(
        token, summary, job_id=shown, state=state, resume_iter=resume_iter, mem=mem,
        exclude=exclude, choices=choices, resume_checkpoint=resume_checkpoint,
        checkpoint_unknown=checkpoint_unknown))
    return Prompt(token, text, blocks)


def _open_prompt(ctx: BotContext, chain_id: int, job_id: str, payload: dict[str, Any],
                 now: float) -> str | None:
    """The token of the same question still open for this job, if any: a prompt published
    again (after a crash between its intent and its post) asks it once, under one token, so
    any copy of it in Slack decides it. Its card is not compared: the same question with the
    card drawn again is the same question."""
    asked = {k: v for k, v in payload.items() if k != "card"}
    for approval in ctx.store.approvals.for_chain(chain_id, "pending"):
        if (approval.action == RESUBMIT_ACTION and approval.target_job == job_id
                and approval.expires_at > now
                and {k: v for k, v in approval.payload.items() if k != "card"} == asked):
            return approval.token
    return None


def approval_view(token: str, summary: str, *, job_id: str, state: str,
                  resume_iter: int | None, mem: str | None, choices: Iterable[str],
                  exclude: str | None = None,
                  resume_checkpoint: str | None = None,
                  checkpoint_unknown: CheckpointUnknown | None = None) -> dict[str, Any]:
    """The approval template's view: the question and one button per choice, each with the
    same opaque token (the action id says which choice; the words are the template's); a
    Cancel's confirm dialog names `job_id` (as the thread shows it) and its `state`; a resume
    names `resume_checkpoint` when its iteration (`resume_iter`) is unknown, and Cancel and
    resume's dialog, as the prompt, that the checkpoint is unknown (`checkpoint_unknown`)."""
    styles = {"resubmit": "primary", "cancel_resume": "danger", "cancel": "danger"}
    buttons = [{"kind": kind, "action_id": action_id_for(kind).value, "value": token,
                "style": styles.get(kind), "from_iter": resume_iter,
                "from_checkpoint": resume_checkpoint, "checkpoint_unknown": checkpoint_unknown,
                "mem": mem,
                "exclude": exclude, "job_id": job_id,
                **prompt_confirm(kind, job_id, state, resume_iter,
                                 from_checkpoint=resume_checkpoint,
                                 checkpoint_unknown=checkpoint_unknown)} for kind in choices]
    return {"summary": summary, "block_id": f"approve:{token}", "buttons": buttons}
