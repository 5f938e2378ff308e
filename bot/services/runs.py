"""What the Slack-facing services share: their adapters, who-may-what per recipe, and
"submit a recipe's run and say so in its thread" (used by `/train submit|resume`, by an
approved Resubmit button and by the watcher's automatic retries alike).

Thread messages are rendered from templates (`render`: templates/<name>.json.j2 in the
recipe's language, the site's `templates.dir` first) and posted through the `MessageSink`
(`ctx.sink`: bot.slack.poster.SlackPoster, or the console): the root (`root`, rewritten in
place as attempts change), the first job's `submitted` note, a resumed job's `resolution`,
and plain `note`s. Approval prompts use `approval` / `hold_prompt` / `decided`; the watcher's
own sentences, `event` (bot.services.watch_events).
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
# messages: every Block Kit message of a run thread comes from a template


def lang_of(config: Config, recipe: str | None) -> str:
    """The recipe's message language (slack.lang for a recipe no longer configured)."""
    if recipe is not None and recipe in config.recipes:
        return config.lang_for(recipe)
    return config.slack.lang


def render(ctx: BotContext, name: str, recipe: str | None,
           view: Any) -> tuple[list[dict[str, Any]], str]:
    """`render_blocks(name, …)` in the recipe's language, with the site's template folder.

    A site template that fails (a typo in `templates.dir`) is logged and the shipped one is
    used, so a broken override never loses a message or blocks an approval.
    """
    from bot.slack.render import RenderError, render_blocks

    lang = lang_of(ctx.config, recipe)
    override = ctx.config.templates.dir
    if override:
        try:
            return render_blocks(name, lang, view, override_dir=override)
        except RenderError as exc:
            log.warning("site template %s/%s failed (%s); using the shipped one", lang, name, exc)
    return render_blocks(name, lang, view)


# Small text helpers: `section` wraps an already rendered sentence (the head line watch_events
# puts above an incident's blocks); `code` / `cut` shape ephemeral replies (commands).


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(text, MAX_SECTION)}}


def code(text: str, limit: int = MAX_SECTION - 8) -> str:
    """Text in a code block; the *end* is kept when cut (the last log lines matter)."""
    text = text.replace("```", "ˋˋˋ")
    if len(text) > limit:
        text = "…" + text[-(limit - 1):]
    return f"```{text}```"


# --------------------------------------------------------------------------------------------
# threads and submits


def _chain_recipe(ctx: BotContext, chain_id: int) -> str | None:
    chain = ctx.store.chains.get(chain_id)
    return chain.recipe if chain is not None else None


def has_thread(ctx: BotContext, chain_id: int | None) -> bool:
    """Is the chain's root message posted (so replies can go under it)?"""
    if ctx.sink is None or chain_id is None:
        return False
    from bot.slack.poster import root_key

    root = ctx.store.slack_posts.get(root_key(chain_id))
    return root is not None and root.posted


def thread_message(ctx: BotContext, chain_id: int | None, key: str, template: str,
                   view: Any) -> bool:
    """Post `template` rendered with `view` once (by key) in the chain's thread, in its
    recipe's language; False when there is no thread."""
    if not has_thread(ctx, chain_id):
        return False
    assert chain_id is not None
    blocks, fallback = render(ctx, template, _chain_recipe(ctx, chain_id), view)
    return post_safely(ctx, "reply", chain_id, key, blocks, fallback) is not None


def thread_note(ctx: BotContext, chain_id: int | None, key: str, text: str) -> bool:
    """Post `text` (trainbot's mrkdwn, already in the thread's language) once (by key) in the
    chain's thread, through the note template; False when there is no thread."""
    return thread_message(ctx, chain_id, key, "note", {"text": text})


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


def root_view(ctx: BotContext, chain_id: int) -> Any:
    """The root message's view (bot.core.incident.RootView) from the chain's attempts in the
    store; None for an unknown chain or one without attempts."""
    from bot.core.incident import AttemptSummary, build_root

    chain = ctx.store.chains.get(chain_id)
    attempts = ctx.store.attempts.for_chain(chain_id) if chain is not None else []
    if chain is None or not attempts:
        return None
    configured = chain.recipe in ctx.config.recipes
    return build_root(
        recipe=chain.recipe,
        attempts=[AttemptSummary(a.job_id, a.result or a.state, a.last_iter, a.start_iter,
                                 a.cause if a.result else None) for a in attempts],
        target_iter=ctx.config.recipe(chain.recipe).target_iter if configured else None,
        retries_used=chain.retries_used,
        retry_budget=ctx.config.policy_for(chain.recipe).retry_budget if configured else None,
        cluster=chain.cluster,
    )


def open_thread(ctx: BotContext, chain_id: int, channel: str | None) -> bool:
    """Post the chain's root message (the root template) into `channel` unless it is
    already there; True when the thread exists afterwards."""
    if ctx.sink is None:
        return False
    if has_thread(ctx, chain_id):
        return True
    view = root_view(ctx, chain_id)
    if view is None or channel is None:
        return False
    blocks, text = render(ctx, "root", view.recipe, view)
    return post_safely(ctx, "root", chain_id, channel, blocks, text) is not None


def refresh_root(ctx: BotContext, chain_id: int) -> bool:
    """Rewrite the root in place (chat.update) from the store: new job, state, attempts.

    The sink skips an unchanged root. Sinks that can only post (test recorders) are left
    alone. False when there is no thread or Slack refused the update (retried next time).
    """
    update = getattr(ctx.sink, "update_root", None)
    if update is None or not has_thread(ctx, chain_id):
        return False
    view = root_view(ctx, chain_id)
    if view is None:
        return False
    from bot.slack.poster import SlackPostError

    blocks, text = render(ctx, "root", view.recipe, view)
    try:
        update(chain_id, blocks, text)
    except SlackPostError as exc:
        log.warning("chain %s: could not update the root message: %s", chain_id, exc)
        return False
    return True


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
    charge_retry: bool = False,
    before_announce: Callable[[SubmitResult], None] | None = None,
) -> SubmitResult:
    """Submit (or resubmit into `chain_id`) and open / continue the run's thread.

    `extra_overridable` widens the recipe's overridable keys for this one submit: an approver
    approving "Resubmit with --mem=…" may change what a plain submitter may not.
    `charge_retry`: count this resubmit against the chain's retry budget, recorded with the
    attempt (submit_recipe), so the root the thread is told with already shows it; the caller
    decides (bot.services.approvals.charges_budget, or the policy's `Decision.charged`).
    `before_announce(result)` runs after the submit is recorded and before the thread is
    told (bookkeeping the thread's messages read, e.g. the work a cancelled attempt lost).
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
        charge_retry=charge_retry,
    )
    if before_announce is not None:
        before_announce(result)
    from bot.slack.render import RenderError

    try:
        announce_submit(ctx, recipe, result, actor, channel)
    except RenderError as exc:  # a template bug must not hide a job that was submitted
        log.error("chain %s: job %s submitted but not announced: %s", result.chain_id,
                  result.job_id, exc)
    return result


def _widen(config: Config, recipe: str, extra: Mapping[str, OverrideType]) -> Config:
    widened = config.model_copy(deep=True)
    cfg = widened.recipes[recipe]
    cfg.overridable = {**cfg.overridable, **extra}
    return widened


def announce_submit(
    ctx: BotContext, recipe: str, result: SubmitResult, actor: str, channel: str | None
) -> None:
    """Open or continue the run's thread: the root (posted, or rewritten for the new job),
    then the first job's "submitted" note or a resumed job's resolution."""
    if ctx.sink is None:
        return
    chain_id = result.chain_id
    if has_thread(ctx, chain_id):
        refresh_root(ctx, chain_id)
    else:
        target = ctx.config.channel_id_for(recipe) or channel
        if target is None:
            log.warning("no channel for %s's thread: set recipes.%s.channel", recipe, recipe)
            return
        if not open_thread(ctx, chain_id, target):
            return
    attempts = ctx.store.attempts.for_chain(chain_id)
    previous = next((a for a in reversed(attempts) if a.attempt_no < result.attempt_no), None)
    if previous is None:
        key = f"chain:{chain_id}:attempt:{result.attempt_no}:submitted"
        blocks, text = render(ctx, "submitted", recipe, submitted_view(recipe, result, actor))
    else:
        key = f"resolution:{result.job_id}"
        blocks, text = render(ctx, "resolution", recipe,
                              resolution_view(recipe, result, actor, previous))
    post_safely(ctx, "reply", chain_id, key, blocks, text)


AUTOMATIC_ACTOR = "trainbot"


def submitted_view(recipe: str, result: SubmitResult, actor: str) -> dict[str, Any]:
    """What the `submitted` template shows: who, which attempt, where it resumes from, the
    overrides the job got and those a site submit wrapper did not apply."""
    ck = result.checkpoint
    return {
        "recipe": recipe,
        "job_id": str(result.job_id),
        "attempt_no": result.attempt_no,
        "job_name": result.job_name,
        "actor": actor,
        "automatic": actor == AUTOMATIC_ACTOR,
        "checkpoint_path": ck.path if ck is not None else None,
        "checkpoint_iter": ck.iteration if ck is not None else None,
        "overrides": [[str(k), _literal(v)] for k, v in result.overrides.items()],
        "not_applied": [[n.key, n.requested, n.actual] for n in result.not_applied],
    }


def resolution_view(recipe: str, result: SubmitResult, actor: str, previous: Any) -> Any:
    """"Resumed as N from iter K (was M)": the resolution template's view."""
    from bot.core.incident import build_resolution

    ck = result.checkpoint
    mem = result.overrides.get("mem")
    return build_resolution(
        recipe=recipe,
        old_job_id=str(previous.job_id),
        new_job_id=str(result.job_id),
        from_iter=ck.iteration if ck is not None else None,
        lost_iters=previous.work_lost_iters,
        lost_seconds=previous.work_lost_s,
        actor="auto" if actor == AUTOMATIC_ACTOR else actor,
        mem=str(mem) if mem is not None else None,
    )


def _literal(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def require_recipe(config: Config, recipe: str) -> None:
    """UsageProblem naming the known recipes when `recipe` is not configured."""
    try:
        config.recipe(recipe)
    except KeyError as exc:
        raise UsageProblem(str(exc.args[0])) from None
