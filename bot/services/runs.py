"""What the Slack-facing services share: their adapters, who-may-what per recipe, and
"submit a recipe's run and say so in its thread" (used by `/train submit|resume` and by an
approved Resubmit button alike).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bot.config import Config, OverrideType
from bot.core.authz import People, RecipeAccess
from bot.services import UsageProblem
from bot.services.submit import SubmitResult, submit_recipe
from bot.store import Store

log = logging.getLogger(__name__)

MAX_SECTION = 3000


@dataclass
class BotContext:
    """The adapters every Slack-facing service uses.

    `clusters` has `slurm(name)`, `runner(name)` and `sftp(name)` (bot.services.clusters.
    ClusterSessions); `sink` posts run threads (bot.slack.poster.SlackPoster) and may be None
    (then nothing is posted to threads, e.g. from the CLI). Handlers read `clock()` once per
    request and pass it down as `now`.
    """

    config: Config
    store: Store
    clusters: Any
    sink: Any = None
    clock: Callable[[], float] = time.time


# --------------------------------------------------------------------------------------------
# people


def default_approvers(config: Config) -> People:
    """slack.approvers, expanded through slack.groups."""
    return People.of(config.slack.approvers, config.slack.groups)


def access_for(config: Config, recipe: str) -> RecipeAccess:
    """The authz view of one recipe (its people and its channel id)."""
    cfg = config.recipe(recipe)
    groups = config.slack.groups
    return RecipeAccess(
        recipe=recipe,
        submitters=People.of(cfg.submitters, groups),
        owners=People.of(cfg.owners, groups),
        approvers=People.of(cfg.approvers or config.slack.approvers, groups),
        channel=config.channel_id_for(recipe) if cfg.channel else None,
    )


# --------------------------------------------------------------------------------------------
# Block Kit pieces (small builders; every text cut to Slack's limits)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(text, MAX_SECTION)}}


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": cut(text, 2000)}]}


def button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": cut(text, 75)},
        "action_id": action_id,
        "value": value,
    }
    if style:
        out["style"] = style
    return out


def actions(block_id: str, buttons: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "actions", "block_id": cut(block_id, 255), "elements": buttons[:25]}


def code(text: str, limit: int = MAX_SECTION - 8) -> str:
    """Text in a code block; the *end* is kept when cut (the last log lines matter)."""
    text = text.replace("```", "ˋˋˋ")
    if len(text) > limit:
        text = "…" + text[-(limit - 1):]
    return f"```{text}```"


# --------------------------------------------------------------------------------------------
# threads and submits


def thread_note(ctx: BotContext, chain_id: int | None, key: str, text: str) -> bool:
    """Post `text` once (by key) in the chain's thread; False when there is no thread."""
    if ctx.sink is None or chain_id is None:
        return False
    from bot.slack.poster import root_key

    root = ctx.store.slack_posts.get(root_key(chain_id))
    if root is None or not root.posted:
        return False
    return post_safely(ctx, "reply", chain_id, key, [section(text)], text) is not None


def post_safely(ctx: BotContext, kind: str, chain_id: int, key_or_channel: str,
                blocks: list[dict[str, Any]], text: str) -> str | None:
    """Post a thread root or reply; a Slack failure is logged, never undoes the action that
    was already taken on the cluster (the post is retried by its key next time)."""
    from bot.slack.poster import SlackPostError

    try:
        if kind == "root":
            return ctx.sink.post_root(chain_id, key_or_channel, blocks, text)
        return ctx.sink.post_reply(chain_id, key_or_channel, blocks, text)
    except SlackPostError as exc:
        log.warning("chain %s: could not post %s %s: %s", chain_id, kind, key_or_channel, exc)
        return None


class LazySFTP:
    """Opens the cluster's SFTP channel only when the checkpoint lookup needs it."""

    def __init__(self, clusters: Any, cluster: str):
        self._clusters = clusters
        self._cluster = cluster
        self._sftp: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._sftp is None:
            self._sftp = self._clusters.sftp(self._cluster)
        return getattr(self._sftp, name)


def describe_start(result: SubmitResult) -> str:
    ck = result.checkpoint
    if ck is None:
        return "starting fresh (no complete checkpoint)"
    it = f" (iter {ck.iteration})" if ck.iteration is not None else ""
    return f"resuming from `{ck.path}`{it}"


def submit_and_announce(
    ctx: BotContext,
    recipe: str,
    *,
    actor: str,
    now: float,
    overrides: Mapping[str, str] | None = None,
    chain_id: int | None = None,
    extra_overridable: Mapping[str, OverrideType] | None = None,
    channel: str | None = None,
) -> SubmitResult:
    """Submit (or resubmit into `chain_id`) and open / continue the run's thread.

    `extra_overridable` widens the recipe's overridable keys for this one submit: an approver
    approving "Resubmit with --mem=…" may change what a plain submitter may not.
    """
    config = ctx.config
    if extra_overridable:
        config = _widen(config, recipe, extra_overridable)
    cluster = config.recipe(recipe).cluster
    result = submit_recipe(
        config,
        recipe,
        overrides=dict(overrides or {}),
        slurm=ctx.clusters.slurm(cluster),
        sftp=LazySFTP(ctx.clusters, cluster),
        store=ctx.store,
        now=now,
        actor=actor,
        chain_id=chain_id,
    )
    _announce(ctx, recipe, result, actor, channel)
    return result


def _widen(config: Config, recipe: str, extra: Mapping[str, OverrideType]) -> Config:
    widened = config.model_copy(deep=True)
    cfg = widened.recipes[recipe]
    cfg.overridable = {**cfg.overridable, **extra}
    return widened


def _announce(
    ctx: BotContext, recipe: str, result: SubmitResult, actor: str, channel: str | None
) -> None:
    if ctx.sink is None:
        return
    from bot.slack.poster import root_key

    over = ", ".join(f"{k}={v}" for k, v in result.overrides.items())
    text = (
        f"*{recipe}*: job {result.job_id} submitted by <@{actor}> "
        f"(attempt {result.attempt_no}, name `{result.job_name}`), {describe_start(result)}"
        + (f"; overrides: {over}" if over else "")
    )
    root = ctx.store.slack_posts.get(root_key(result.chain_id))
    if root is not None and root.posted:
        key = f"chain:{result.chain_id}:attempt:{result.attempt_no}:submitted"
        post_safely(ctx, "reply", result.chain_id, key, [section(text)], text)
        return
    target = ctx.config.channel_id_for(recipe) or channel
    if target is None:
        log.warning("no channel for %s's thread: set recipes.%s.channel", recipe, recipe)
        return
    blocks = [
        section(f"*{recipe}* — run chain {result.chain_id}"),
        section(text),
        context("Progress, warnings and incidents of this run are posted in this thread."),
    ]
    post_safely(ctx, "root", result.chain_id, target, blocks, f"{recipe}: job {result.job_id}")


def require_recipe(config: Config, recipe: str) -> None:
    """UsageProblem naming the known recipes when `recipe` is not configured."""
    try:
        config.recipe(recipe)
    except KeyError as exc:
        raise UsageProblem(str(exc.args[0])) from None
