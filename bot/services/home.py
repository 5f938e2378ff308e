"""The App Home tab (views.publish): each user's and their team's runs, their state, progress,
last incident and retries (an array recipe's: per task, as its budget is, the tasks that
used any, the most first), with the open prompts' buttons (the same tokens, so a click is
authorized and decided exactly like one in the thread); and the jobs and arrays trainbot
adopted (`/train watch`) that the user adopted or may act on (bot.core.home): state,
progress (an array: its tasks counted by state), last incident, never a resubmit button, and
"Cancel job" only for who may cancel it (the same check as `/train cancel`, which its click
runs). Every Cancel on the tab (a row's; a prompt's Cancel and Cancel and resume) asks first in
Slack's confirm dialog naming the job and its state (an array: how many of its tasks still
run or wait), from one builder (bot.core.home.cancel_confirm). Rows that do not fit in one
view (100 blocks) are counted in an "and N more" line."""

from __future__ import annotations

import logging
from typing import Any

from bot.config import Config
from bot.core.arrays import retries_by_task
from bot.core.authz import can_unwatch
from bot.core.home import (
    MAX_VIEW_JSON,
    UNWATCH,
    adopted_buttons,
    cancel_confirm,
    fit_rows,
    last_incident,
    prompt_confirm,
    sees_adopted,
)
from bot.core.slurm.job_ref import JobIdError, parse_job_ref
from bot.core.train_grammar import JobControl
from bot.services.access import default_approvers, may_control_job
from bot.services.ports import BotContext, PostError, StoreStep
from bot.services.threads import (
    array_root_view,
    prompt_job,
    refresh_root,
    render,
    root_view,
    task_bounds,
    thread_note,
)
from bot.slack.views import HOME_CANCEL_JOB, HOME_STOP_WATCHING, action_id_for, progress_bar
from bot.store import Approval, Chain

log = logging.getLogger(__name__)

MAX_RUNS = 15  # rows shown at most (fewer when their blocks would pass a view's 100)
RECENT_S = 24 * 3600.0  # runs that ended this recently are still shown
VIEWER_TTL_S = 30 * 24 * 3600.0  # a viewer who has not opened the tab this long: no refresh
TASK_RETRIES_SHOWN = 4  # an array recipe's row names this many tasks that used retries


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


def may_control(ctx: BotContext, user: str, job_id: str) -> bool:
    """May `user` cancel job `job_id` (Slurm's raw id; an array's own id), as `/train cancel`,
    which the tab's Cancel runs, decides (access.may_control_job): a job trainbot adopted is
    slack.approvers', a lost submit's job its run's thread told about (adopted or not) its
    run's people's too."""
    return bool(may_control_job(ctx.config, ctx.store, user, job_id, "cancel"))


def sees_chain(ctx: BotContext, chain: Chain, user: str) -> bool:
    """Does `user`'s Home tab list the chain: their team's run, or an adopted job they
    adopted or may act on?"""
    if not chain.adopted:
        return chain.recipe in team_recipes(ctx.config, user)
    return sees_adopted(user, chain.watched_by, may_control(ctx, user, _raw(ctx, chain)))


def _buttons(approval: Approval, job: tuple[str, str], adopted: bool = False,
             control: bool = False) -> list[dict[str, Any]]:
    """A prompt's buttons, naming `job` (the shown id and state of the prompt's job, as its
    thread does); a Cancel's carries its confirm dialog (bot.core.home.prompt_confirm)."""
    payload = approval.payload
    kinds = payload.get("choices", [])
    if adopted:
        kinds = adopted_buttons(kinds, may_control=control)
    styles = {"resubmit": "primary", "hold": "primary", "cancel_resume": "danger",
              "cancel": "danger"}
    return [{"kind": kind, "action_id": action_id_for(kind).value, "value": approval.token,
             "style": styles.get(kind), "from_iter": payload.get("resume_iter"),
             "from_checkpoint": payload.get("resume_checkpoint"),
             "checkpoint_unknown": payload.get("checkpoint_unknown"),
             "mem": payload.get("mem"), "exclude": payload.get("exclude"),
             "job_id": job[0],
             "for_job": payload.get("for_job"),
             **prompt_confirm(kind, *job, from_iter=payload.get("resume_iter"),
                              from_checkpoint=payload.get("resume_checkpoint"),
                              checkpoint_unknown=payload.get("checkpoint_unknown"))}
            for kind in kinds]


def _prompts(ctx: BotContext, chain_id: int, now: float, state: str, adopted: bool = False,
             control: bool = False) -> list[dict[str, Any]]:
    """The chain's open prompts with their buttons (an adopted job's: no resubmit); a
    prompt's job is named as its thread does, in its attempt's state (else the row's
    `state`: bot.services.root_views.prompt_job)."""
    prompts = []
    for a in ctx.store.approvals.for_chain(chain_id, "pending"):
        job = prompt_job(ctx, chain_id, str(a.target_job), state)
        buttons = _buttons(a, job, adopted, control) if a.expires_at > now else []
        if buttons:
            prompts.append({"summary": a.payload.get("summary"), "token": a.token,
                            "buttons": buttons})
    return prompts


def _last_incident(ctx: BotContext, chain_id: int) -> dict[str, Any] | None:
    """The chain's last final incident: its class, its job as the thread names it (an array
    task's `123_4`, its attempt's shown id; the incident keeps the raw Slurm id), and why the
    checkpoint its resume starts from is unknown (bot.core.home.last_incident)."""
    finals = [i for i in ctx.store.incidents.for_chain(chain_id) if i.key.endswith(":final")]
    if not finals:
        return None
    last = finals[-1]
    attempt = next((a for a in ctx.store.attempts.for_chain(chain_id)
                    if a.job_id == last.job_id), None)
    decision = last.diagnosis.get("decision")
    return last_incident(last.class_id,
                         attempt.shown_id if attempt is not None else str(last.job_id),
                         decision if isinstance(decision, dict) else None)


def _run_row(ctx: BotContext, chain: Chain, now: float) -> dict[str, Any] | None:
    if chain.is_array:  # an array recipe's: its tasks by state; each task has its own budget
        array = array_root_view(ctx, chain.id)
        if array is None:
            return None
        spent = retries_by_task(ctx.store.attempts.for_chain(chain.id), ctx.catalogue,
                                bounds_of=lambda mine: task_bounds(ctx.config, chain, mine))
        budget = ctx.config.policy_for(chain.recipe).retry_budget \
            if chain.recipe in ctx.config.recipes else None
        return {"chain_id": chain.id, "recipe": chain.recipe, "job_id": str(chain.array_job_id),
                "state": array.state, "cluster": chain.cluster, "adopted": False,
                "array": True, "tasks": [{"state": st, "n": n} for st, n in array.counts],
                "progress_bar": "—", "retries_used": None, "retry_budget": budget,
                "task_retries": [{"task": t, "used": n}
                                 for t, n in spent[:TASK_RETRIES_SHOWN]],
                "more_task_retries": len(spent[TASK_RETRIES_SHOWN:]),
                "last_incident": _last_incident(ctx, chain.id),
                "prompts": _prompts(ctx, chain.id, now, array.state), "buttons": []}
    root = root_view(ctx, chain.id)
    if root is None:
        return None
    return {"chain_id": chain.id, "recipe": chain.recipe, "job_id": root.job_id,
            "state": root.state, "cluster": chain.cluster, "adopted": False, "array": False,
            "tasks": [],
            "progress_bar": progress_bar(root.last_iter, root.target_iter),
            "retries_used": chain.retries_used, "retry_budget": root.retry_budget,
            "last_incident": _last_incident(ctx, chain.id),
            "prompts": _prompts(ctx, chain.id, now, root.state), "buttons": []}


def _adopted_row(ctx: BotContext, chain: Chain, user: str, now: float) -> dict[str, Any] | None:
    """An adopted job's row (an array's: its tasks counted by state), or None when the user
    does not see it. "Cancel job" (the whole array for an array) while it is watched, for a
    viewer who may cancel it, behind a confirm dialog naming the job and its state (an
    array: how many of its tasks still run or wait)."""
    tasks: list[dict[str, Any]] = []
    if chain.kind == "array":
        array = array_root_view(ctx, chain.id)
        if array is None:
            return None
        tasks = [{"state": state, "n": n} for state, n in array.counts]
        job_id = shown = str(chain.array_job_id)
        state, bar = array.state, "—"
        confirm = cancel_confirm(shown, state, counts=array.counts, waiting=array.waiting)
    else:
        root = root_view(ctx, chain.id)
        attempt = ctx.store.attempts.latest(chain.id)
        if root is None or attempt is None:
            return None
        job_id, shown = attempt.job_id, root.job_id  # raw id; `123_4` of an array task
        state, bar = root.state, progress_bar(root.last_iter, root.target_iter)
        confirm = cancel_confirm(shown, state)
    control = may_control(ctx, user, job_id)
    if not sees_adopted(user, chain.watched_by, control):
        return None
    kinds = [UNWATCH, *adopted_buttons(["cancel"], may_control=control)] \
        if chain.status == "active" else []
    return {"chain_id": chain.id, "recipe": chain.job_name or shown, "job_id": shown,
            "state": state, "cluster": chain.cluster, "adopted": True,
            "array": chain.kind == "array", "tasks": tasks, "progress_bar": bar,
            "retries_used": None, "retry_budget": None,
            "last_incident": _last_incident(ctx, chain.id),
            "prompts": _prompts(ctx, chain.id, now, state, adopted=True, control=control),
            "buttons": [{"kind": k, "job_id": shown,
                         **({"action_id": HOME_STOP_WATCHING, "value": str(chain.id),
                             "style": None} if k == UNWATCH else
                            {"action_id": HOME_CANCEL_JOB, "value": job_id,
                             "style": "danger", "confirm": confirm})} for k in kinds]}


def watched_chain(ctx: BotContext, job_id: int, array_task: int | None = None
                  ) -> Chain | None:
    """The active chain that watches job `job_id`: a whole array of that id (with
    `array_task`, the array the task belongs to), else the chain of an attempt that is job
    `job_id` (its raw id) or, with `array_task`, task `job_id_array_task` (`123_4`); None
    when no active chain does."""
    shown = str(job_id) if array_task is None else f"{job_id}_{array_task}"
    for chain in ctx.store.chains.with_status("active"):
        if chain.kind == "array" and chain.array_job_id == job_id:
            return chain
        for attempt in ctx.store.attempts.for_chain(chain.id):
            if attempt.shown_id == shown or (array_task is None and attempt.job_id == shown):
                return chain
    return None


def stop_watching(ctx: BotContext, chain_id: int, user: str, now: float, *,
                  channel: str | None = None, besides: str | None = None) -> str:
    """Stop watching the adopted job or array of chain `chain_id` for `user` (who adopted it,
    or an approver: bot.core.authz.can_unwatch): its jobs leave the watch list (Slurm is not
    touched), the chain is stopped, its thread says who stopped it; audited either way.
    Returns what to tell the user (in `channel`'s language; without one slack.lang). The
    Home tab's Stop watching and `/train unwatch` both come here; the Home tabs that see the
    chain are refreshed, but `besides`'s (the clicker's, which the caller publishes)."""
    chain = ctx.store.chains.get(chain_id)
    if chain is None or not chain.adopted:
        return _say(ctx, "not_watched", channel, job=str(chain_id))
    shown = _shown(ctx, chain)
    if chain.status != "active":
        return _say(ctx, "not_watched", channel, job=shown)
    decision = can_unwatch(chain.watched_by, user, shown, default_approvers(ctx.config))
    if not decision:
        ctx.store.audit.record(actor=user, action="unwatch", now=now, result="refused",
                               job_id=shown, detail=str(decision.reason))
        return _say(ctx, "refused", channel, reason=decision.reason)
    for watched in ctx.store.watched_jobs.list(chain.cluster):
        if watched.chain_id == chain.id:
            ctx.store.watched_jobs.remove(chain.cluster, watched.job_id)
            ctx.store.tail_offsets.delete_job(watched.job_id)
    ctx.store.chains.set_status(chain.id, "stopped", now=now)
    ctx.steps.noted(StoreStep("unwatched"))  # a retry finds it not watched
    ctx.store.audit.record(actor=user, action="unwatch", now=now, job_id=shown)
    text = _say(ctx, "unwatched", None, job=shown, actor=user)
    thread_note(ctx, chain.id, f"chain:{chain.id}:unwatched", text)
    refresh_root(ctx, chain.id)
    refresh_homes(ctx, chain.id, now, besides=besides)
    return _say(ctx, "unwatched", channel, job=shown, actor=user) if channel else text


def _shown(ctx: BotContext, chain: Chain) -> str:
    """The id people read for an adopted chain: its array's id, else its job's (`123_4`)."""
    if chain.array_job_id is not None:
        return str(chain.array_job_id)
    attempt = ctx.store.attempts.latest(chain.id)
    return attempt.shown_id if attempt is not None else str(chain.id)


def cancel_command(ctx: BotContext, job_id: int) -> JobControl:
    """The `/train cancel` a Home tab's Cancel runs for job `job_id` (the button's value, Slurm's
    raw id; an array's own id): the job as its row names it, an array task as its attempt
    records it (`display_id`: 6200_2, not its raw 6203), so the refusal or the line saying
    it was cancelled names the job as the tab showed it; a job with no such record, by its
    id."""
    attempt = ctx.store.attempts.get_by_job(str(job_id))
    try:
        ref = parse_job_ref(attempt.display_id) if attempt and attempt.display_id else None
    except JobIdError:
        ref = None
    if ref is None or ref.array_task is None:
        return JobControl("cancel", job_id)
    return JobControl("cancel", ref.job_id, ref.array_task)


def _raw(ctx: BotContext, chain: Chain) -> str:
    """The Slurm id an adopted chain's Cancel acts on: its array's id, else its job's raw id."""
    if chain.array_job_id is not None:
        return str(chain.array_job_id)
    attempt = ctx.store.attempts.latest(chain.id)
    return attempt.job_id if attempt is not None else ""


def _say(ctx: BotContext, kind: str, channel: str | None = None, /, **values: Any) -> str:
    """A one-line answer (templates/train_reply.json.j2) in `channel`'s language (the
    recipes posting there; without one, slack.lang)."""
    return render(ctx, "train_reply", None, {"kind": kind, **values}, channel=channel)[1]


def _recent(chain: Chain, now: float) -> bool:
    return chain.status == "active" or now - chain.updated_at <= RECENT_S


def home_view(ctx: BotContext, user: str, now: float, notice: str | None = None
              ) -> dict[str, Any]:
    """The home template's view: the runs of `user`'s team and the adopted jobs they see,
    newest first (active ones and those that ended within RECENT_S), each with its open
    prompts' buttons; as many as fit in one view, the rest counted in `more`."""
    recipes = set(team_recipes(ctx.config, user))
    chains = [c for r in recipes for c in ctx.store.chains.for_recipe(r, limit=MAX_RUNS * 4)
              if not c.adopted and _recent(c, now)]
    chains += [c for c in ctx.store.chains.adopted(limit=MAX_RUNS * 4) if _recent(c, now)]
    chains.sort(key=lambda c: (c.updated_at, c.id), reverse=True)
    runs = []
    for chain in chains:
        row = _adopted_row(ctx, chain, user, now) if chain.adopted else \
            _run_row(ctx, chain, now)
        if row is not None:
            runs.append(row)
    shown = fit_rows(runs, MAX_RUNS)
    return {"user": user, "runs": runs[:shown], "more": len(runs) - shown, "notice": notice}


def render_home(ctx: BotContext, view: dict[str, Any]) -> list[dict[str, Any]]:
    """The Home tab's blocks from its view (`home_view`), in slack.lang, trimmed to what a
    view holds (MAX_VIEW_JSON), not a message's size."""
    return render(ctx, "home", None, view, max_json=MAX_VIEW_JSON)[0]


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
    blocks = render_home(ctx, home_view(ctx, user, now, notice))
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
        if user != besides and sees_chain(ctx, chain, user):
            _publish(ctx, user, now)


__all__ = ["home_view", "may_control", "publish_home", "refresh_homes", "render_home", "sees_chain",
           "stop_watching", "team_recipes", "watched_chain"]
