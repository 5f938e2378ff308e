"""The App Home tab (views.publish): each user's and their team's runs, their state, progress,
last incident and retries, with the open prompts' buttons (the same tokens, so a click is
authorized and decided exactly like one in the thread)."""

from __future__ import annotations

import logging
from typing import Any

from bot.config import Config
from bot.services.ports import BotContext, PostError
from bot.services.threads import render, root_view
from bot.slack.views import action_id_for, progress_bar
from bot.store import Approval

log = logging.getLogger(__name__)

MAX_RUNS = 15  # 6 blocks each at most: well under a view's 100 blocks
RECENT_S = 24 * 3600.0  # runs that ended this recently are still shown
VIEWER_TTL_S = 30 * 24 * 3600.0  # a viewer who has not opened the tab this long: no refresh


def team_recipes(config: Config, user: str) -> list[str]:
    """The recipes whose runs `user` sees: those whose owners, submitters or approvers
    (slack.approvers for a recipe without its own) include them."""
    out = []
    for name, recipe in config.recipes.items():
        people = config.expand_people(
            [*recipe.owners, *recipe.submitters, *(recipe.approvers or config.slack.approvers)])
        if user in people:
            out.append(name)
    return out


def _buttons(approval: Approval) -> list[dict[str, Any]]:
    payload = approval.payload
    styles = {"resubmit": "primary", "hold": "primary", "cancel_resume": "danger",
              "cancel": "danger"}
    return [{"kind": kind, "action_id": action_id_for(kind).value, "value": approval.token,
             "style": styles.get(kind), "from_iter": payload.get("resume_iter"),
             "mem": payload.get("mem"), "exclude": payload.get("exclude"),
             "job_id": approval.target_job,
             "for_job": payload.get("for_job")}
            for kind in payload.get("choices", [])]


def home_view(ctx: BotContext, user: str, now: float, notice: str | None = None
              ) -> dict[str, Any]:
    """The home template's view: the runs of `user`'s team, newest first (active ones and
    those that ended within RECENT_S), each with its open prompts' buttons."""
    recipes = set(team_recipes(ctx.config, user))
    chains = [c for r in recipes for c in ctx.store.chains.for_recipe(r, limit=MAX_RUNS)
              if c.status == "active" or now - c.updated_at <= RECENT_S]
    chains.sort(key=lambda c: c.updated_at, reverse=True)
    runs = []
    for chain in chains[:MAX_RUNS]:
        root = root_view(ctx, chain.id)
        if root is None:
            continue
        finals = [i for i in ctx.store.incidents.for_chain(chain.id) if i.key.endswith(":final")]
        last = finals[-1] if finals else None
        prompts = [{"summary": a.payload.get("summary"), "token": a.token,
                    "buttons": _buttons(a)}
                   for a in ctx.store.approvals.for_chain(chain.id, "pending")
                   if a.expires_at > now]
        runs.append({"chain_id": chain.id, "recipe": chain.recipe, "job_id": root.job_id,
                     "state": root.state, "cluster": chain.cluster,
                     "progress_bar": progress_bar(root.last_iter, root.target_iter),
                     "retries_used": chain.retries_used, "retry_budget": root.retry_budget,
                     "last_incident": ({"class_id": last.class_id, "job_id": last.job_id}
                                       if last else None),
                     "prompts": prompts})
    return {"user": user, "runs": runs, "notice": notice}


def publish_home(ctx: BotContext, user: str, now: float, notice: str | None = None) -> bool:
    """Render and publish `user`'s Home tab (slack.lang) as they open it or click on it, and
    keep them (in the store) among the viewers refreshed when a run changes; False when it
    could not be published."""
    if ctx.home is None:
        return False
    ctx.store.home_viewers.record(user, now, VIEWER_TTL_S)
    return _publish(ctx, user, now, notice)


def _publish(ctx: BotContext, user: str, now: float, notice: str | None = None) -> bool:
    assert ctx.home is not None
    blocks, _ = render(ctx, "home", None, home_view(ctx, user, now, notice))
    try:
        ctx.home.publish_home(user, blocks)
    except PostError as exc:
        log.warning("could not publish the Home tab of %s: %s", user, exc)
        return False
    return True


def refresh_homes(ctx: BotContext, chain_id: int, now: float, *,
                  besides: str | None = None) -> None:
    """A run changed: republish the Home tab of every viewer (of the last VIEWER_TTL_S, any
    replica's) whose team runs it (but `besides`, whose tab was just published). From a
    scheduled run `ctx.home` is fenced: a replica that lost its lease publishes nothing."""
    if ctx.home is None:
        return
    chain = ctx.store.chains.get(chain_id)
    if chain is None:
        return
    for user in ctx.store.home_viewers.since(now - VIEWER_TTL_S):
        if user != besides and chain.recipe in team_recipes(ctx.config, user):
            _publish(ctx, user, now)


__all__ = ["home_view", "publish_home", "refresh_homes", "team_recipes"]
