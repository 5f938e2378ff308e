"""Approval buttons: an opaque token in the store behind each prompt, accepted exactly once.

A prompt (an incident's "Resubmit / Resubmit with --mem / Cancel / Dismiss", or a competitor's
"Hold / No") is one approval row: its action, target job, allowed approvers (bound when the
prompt is made) and expiry. Every button of the prompt carries the same token as its value; the
button's action id says which choice. `handle_click` accepts one click per prompt: a double
click, a Slack retry or a replay after expiry changes nothing, an unauthorized click is refused
(and told so). Every click is audited, whatever its outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from bot.cluster.errors import ClusterError
from bot.services import ServiceError
from bot.services import competitors as comp
from bot.services.runs import (
    BotContext,
    access_for,
    default_approvers,
    render,
    submit_and_announce,
)

log = logging.getLogger(__name__)

RESUBMIT_ACTION = "resubmit"


class ActionId(StrEnum):
    """Slack action ids of trainbot's buttons (handlers.actions registers one listener each)."""

    RESUBMIT = "trainbot_resubmit"
    RESUBMIT_MEM = "trainbot_resubmit_mem"
    HOLD_COMPETITOR = "trainbot_hold_competitor"
    KEEP_COMPETITOR = "trainbot_keep_competitor"
    CANCEL = "trainbot_cancel"
    DISMISS = "trainbot_dismiss"


# choice name stored in the approval's payload <-> the button's action id
CHOICES: dict[ActionId, str] = {
    ActionId.RESUBMIT: "resubmit",
    ActionId.RESUBMIT_MEM: "resubmit_mem",
    ActionId.HOLD_COMPETITOR: "hold",
    ActionId.KEEP_COMPETITOR: "keep",
    ActionId.CANCEL: "cancel",
    ActionId.DISMISS: "dismiss",
}
_NEGATIVE = {"dismiss", "keep"}

ClickStatus = Literal[
    "done", "failed", "declined", "unauthorized", "expired", "duplicate", "unknown"
]


@dataclass(frozen=True)
class Prompt:
    """A posted-or-to-post approval prompt."""

    token: str
    text: str
    blocks: list[dict[str, Any]]


@dataclass(frozen=True)
class ClickResult:
    """What a click did. `update_*` replace the prompt message (None: leave it as is);
    `ephemeral` is shown to the clicker only."""

    status: ClickStatus
    update_text: str | None = None
    update_blocks: list[dict[str, Any]] | None = None
    ephemeral: str | None = None
    job_id: str | None = None
    holds: list[int] = field(default_factory=list)


def mention_list(users: Iterable[str]) -> str:
    users = sorted(users)
    if not users:
        return "nobody (set slack.approvers)"
    parts = [f"<@{u}>" for u in users]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def approvers_of(ctx: BotContext, recipe: str) -> set[str]:
    """User ids allowed to approve the recipe's prompts (recipe approvers, else slack's)."""
    access = access_for(ctx.config, recipe)
    return set(access.approvers.users) or set(default_approvers(ctx.config).users)


def create_resubmit_prompt(
    ctx: BotContext,
    *,
    recipe: str,
    chain_id: int,
    job_id: str,
    now: float,
    summary: str,
    resume_iter: int | None = None,
    mem: str | None = None,
    offer_cancel: bool = False,
) -> Prompt:
    """Store an approval and build the incident's buttons: Resubmit (from iter N), Resubmit
    with --mem=…, Cancel (a still-running job), Dismiss. The caller posts the blocks."""
    choices = ["resubmit", "dismiss"]
    if mem:
        choices.insert(1, "resubmit_mem")
    if offer_cancel:
        choices.insert(-1, "cancel")
    token = ctx.store.approvals.create(
        action=RESUBMIT_ACTION,
        payload={
            "choices": choices,
            "recipe": recipe,
            "cluster": ctx.config.recipe(recipe).cluster,
            "mem": mem,
            "resume_iter": resume_iter,
            "summary": summary,
        },
        allowed=approvers_of(ctx, recipe),
        expires_at=now + ctx.config.policy_for(recipe).approval_expiry_s,
        now=now,
        target_job=str(job_id),
        chain_id=chain_id,
    )
    blocks, text = render(ctx, "approval", recipe, approval_view(
        token, summary, job_id=str(job_id), resume_iter=resume_iter, mem=mem,
        offer_cancel=offer_cancel))
    return Prompt(token, text, blocks)


def approval_view(token: str, summary: str, *, job_id: str, resume_iter: int | None,
                  mem: str | None, offer_cancel: bool) -> dict[str, Any]:
    """The approval template's view: the question and one button per choice, each with the
    same opaque token (the action id says which choice; the words are the template's)."""

    def choice(kind: str, action_id: ActionId, style: str | None = None) -> dict[str, Any]:
        return {"kind": kind, "action_id": str(action_id), "value": token, "style": style,
                "from_iter": resume_iter, "mem": mem, "job_id": job_id}

    buttons = [choice("resubmit", ActionId.RESUBMIT, "primary")]
    if mem:
        buttons.append(choice("resubmit_mem", ActionId.RESUBMIT_MEM))
    if offer_cancel:
        buttons.append(choice("cancel", ActionId.CANCEL, "danger"))
    buttons.append(choice("dismiss", ActionId.DISMISS))
    return {"summary": summary, "block_id": f"approve:{token}", "buttons": buttons}


def _decided(ctx: BotContext, recipe: str | None, summary: str,
             outcome: str) -> tuple[str, list[dict[str, Any]]]:
    """The prompt after its decision (the `decided` template): (text, blocks)."""
    blocks, text = render(ctx, "decided", recipe, {"summary": summary, "outcome": outcome})
    return text, blocks


def handle_click(
    ctx: BotContext,
    token: str,
    action_id: str,
    actor: str,
    now: float,
    retry_num: int = 0,
) -> ClickResult:
    """Accept one click (once per prompt), carry out the choice, say what happened."""
    store = ctx.store
    detail: dict[str, Any] = {"token": token, "action_id": action_id, "retry_num": retry_num}

    def audit(result: str, job: str | None = None, recipe: str | None = None, **more: Any):
        store.audit.record(actor=actor, action="approval.click", now=now, result=result,
                           job_id=job, recipe=recipe, detail={**detail, **more})

    approval = store.approvals.get(token)
    try:
        choice = CHOICES[ActionId(action_id)]
    except ValueError:
        choice = None
    if approval is None or choice is None or choice not in approval.payload.get("choices", []):
        audit("unknown")
        return ClickResult("unknown", ephemeral="This button is not (or no longer) known to "
                                                "trainbot; nothing was done.")
    payload = approval.payload
    recipe, target = payload.get("recipe"), approval.target_job
    summary = payload.get("summary") or _hold_summary(approval)
    if actor not in approval.allowed:
        audit("unauthorized", target, recipe)
        return ClickResult(
            "unauthorized",
            ephemeral=f"Refused: only {mention_list(approval.allowed)} can approve this. "
            "Nothing was done.",
        )
    decide = store.approvals.refuse if choice in _NEGATIVE else store.approvals.claim
    claim = decide(token, actor, now)
    if not claim.claimed:
        if claim.reason == "expired":
            audit("expired", target, recipe)
            outcome = "This request expired; nothing was done."
            return ClickResult("expired", *_decided(ctx, recipe, summary, outcome),
                               ephemeral=outcome)
        done = claim.approval
        by = f" by <@{done.decided_by}>" if done and done.decided_by else ""
        audit("duplicate", target, recipe, state=done.state if done else None)
        return ClickResult("duplicate", ephemeral=f"Already decided{by}; nothing was done again.")

    if choice == "dismiss":
        audit("dismissed", target, recipe)
        outcome = f"Dismissed by <@{actor}>; nothing was done."
        return ClickResult("declined", *_decided(ctx, recipe, summary, outcome))
    if choice == "keep":
        audit("declined", target, recipe)
        outcome = f"<@{actor}> chose not to hold {target}; nothing was held."
        return ClickResult("declined", *_decided(ctx, recipe, summary, outcome))
    try:
        result = _perform(ctx, approval, choice, actor, now)
    except (ServiceError, ClusterError) as exc:
        audit("failed", target, recipe, choice=choice, error=str(exc))
        outcome = f"Approved by <@{actor}>, but it failed: {exc}"
        return ClickResult("failed", *_decided(ctx, recipe, summary, outcome))
    audit("ok", result.job_id or target, recipe, choice=choice)
    outcome = f"Approved by <@{actor}>: {result.text}"
    return ClickResult("done", *_decided(ctx, recipe, summary, outcome),
                       job_id=result.job_id, holds=result.holds)


@dataclass
class _Performed:
    text: str
    job_id: str | None = None
    holds: list[int] = field(default_factory=list)


def _perform(ctx: BotContext, approval: Any, choice: str, actor: str, now: float) -> _Performed:
    payload = approval.payload
    if choice == "hold":
        return _Performed(comp.apply_hold(ctx, approval, actor, now), approval.target_job)
    recipe = payload["recipe"]
    if choice == "cancel":
        ctx.clusters.slurm(payload["cluster"]).cancel(int(approval.target_job))
        ctx.store.approvals.mark_done(approval.token, now=now)
        return _Performed(f"cancelled job {approval.target_job}", approval.target_job)
    overrides: dict[str, str] = {}
    extra = None
    if choice == "resubmit_mem":
        overrides, extra = {"mem": str(payload["mem"])}, {"mem": "size"}
    result = submit_and_announce(
        ctx, recipe, actor=actor, now=now, overrides=overrides, chain_id=approval.chain_id,
        extra_overridable=extra,
    )  # fmt: skip
    ctx.store.approvals.mark_done(approval.token, now=now)
    proposals = comp.propose_holds(
        ctx, recipe=recipe, chain_id=result.chain_id, job_id=int(result.job_id),
        allowed=approval.allowed, now=now,
        action_ids=(ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR),
    )  # fmt: skip
    ck = result.checkpoint
    start = f" from iter {ck.iteration}" if ck is not None and ck.iteration is not None else ""
    mem = f" with --mem={overrides['mem']}" if overrides else ""
    return _Performed(f"resubmitted as {result.job_id}{start}{mem}", result.job_id,
                      [p.competitor for p in proposals])


def _hold_summary(approval: Any) -> str:
    p = approval.payload
    return f"Hold {approval.target_job} until {p.get('for_job')} starts?"
