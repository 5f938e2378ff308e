"""Who may do what per recipe, as bot.core.authz sees it: the config's people, expanded."""

from __future__ import annotations

from bot.config import Config
from bot.core.authz import Decision, People, RecipeAccess, approvers_for, can_control_job
from bot.core.slurm.job_ref import JobIdError, parse_job_ref
from bot.core.text import Mrkdwn
from bot.store import Chain, Store


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


def approvers_now(config: Config, recipe: str | None) -> People:
    """Who may decide a prompt of `recipe` by `config` (the one running now, read at each
    click): its approvers, else slack.approvers, which also decide for a recipe no longer
    configured."""
    access = access_for(config, recipe) if recipe in config.recipes else None
    return approvers_for(access, default_approvers(config))


# --- jobs: who may cancel, hold, release or read one -----------------------------------------


def unwatched_submit_key(job_id: str) -> str:
    """The key of the thread message telling of a lost submit's job that is not recorded
    (bot.services.runs._tell_unwatched)."""
    return f"unwatched-submit:{job_id}"


def run_told_of(store: Store, job_id: str) -> Chain | None:
    """The run whose thread told of job `job_id` (Slurm's raw id), a lost submit's job found
    below a later attempt and not recorded (runs._tell_unwatched); None: no thread told of it."""
    post = store.slack_posts.get(unwatched_submit_key(job_id))
    if post is None or not post.posted or post.chain_id is None:
        return None
    return store.chains.get(post.chain_id)


def run_of_job(store: Store, job_id: str) -> Chain | None:
    """The run (chain) that records job `job_id`: Slurm's raw id of a job or of an array task
    (an attempt's job_id); an array task as people write it (`6200_2`: the attempt shown so);
    or an array's id (`6200`, and `6200_2` of a task not recorded), whose run records only its
    tasks, each under its own raw id (an attempt shown `6200_N`, else the chain of the whole
    array 6200). None: no run records it (not submitted by trainbot, or not an id)."""
    try:
        ref = parse_job_ref(job_id)
    except JobIdError:
        return None
    attempt = (store.attempts.get_by_job(job_id) if ref.array_task is None
               else store.attempts.in_array(ref.job_id, ref.array_task))
    attempt = attempt or store.attempts.in_array(ref.job_id)
    if attempt is not None:
        return store.chains.get(attempt.chain_id)
    return store.chains.of_array(ref.job_id)


def recipe_of_job(store: Store, job_id: str) -> tuple[str | None, bool]:
    """(recipe, told) of job `job_id` (Slurm's raw id, an array's id or `6200_2`: run_of_job):
    the recipe of the run that records it (told False); else, for a lost submit's job a run's
    thread told about (run_told_of), also once someone adopted it with `/train watch` (its
    adopted chain has no recipe), that run's recipe (told True); else (None, False): a job
    trainbot did not submit."""
    chain = run_of_job(store, job_id)
    if chain is not None and chain.recipe:
        return chain.recipe, False
    run = run_told_of(store, job_id)
    if run is not None:
        return run.recipe or None, True
    return None, False


def may_control_job(config: Config, store: Store, user: str, job_id: int | str,
                    verb: str, *, shown: str | None = None) -> Decision:
    """May `user` cancel/hold/release/read job `job_id` (Slurm's raw id; an array's own id)?
    The one check of `/train cancel|hold|release|logs|stacks N` and of the Home tab's controls
    (which run `/train cancel`). The people of the recipe whose run records the job (or, an
    array's id, its tasks: run_of_job); else, for a job its run's thread told about (a lost
    submit's, run_told_of, even once adopted with `/train watch`), that run's recipe's
    people; else (a job trainbot did not submit) slack.approvers. A refusal names the job as
    `shown` (an array task as people write it, `6200_2`), else as `job_id`. A task of a run's
    array that no attempt records yet under its raw id (started since the watcher's last tick)
    is found as `shown` (`6200_2`: the array's run)."""
    recipe, told = recipe_of_job(store, str(job_id))
    if recipe is None and not told and shown is not None and shown != str(job_id):
        recipe, told = recipe_of_job(store, shown)
    access = access_for(config, recipe) if recipe in config.recipes else None
    return can_control_job(access, user, shown or job_id, verb, default_approvers(config),
                           told_by_thread=told)


# --- mentions: whom a thread @-mentions (recipes.<name>.mentions) ----------------------------


def mention(who: str) -> Mrkdwn:
    """A Slack mention of a user id (`<@U…>`) or a user-group id (`<!subteam^S…>`): mrkdwn
    the renderer keeps as it is."""
    return Mrkdwn(f"<!subteam^{who}>" if who.startswith("S") else f"<@{who}>")


def mention_text(people: tuple[str, ...]) -> Mrkdwn:
    """`<@U1> <@U2> ` (with the trailing space) for a head line, "" for nobody."""
    return Mrkdwn("".join(f"{mention(who)} " for who in people))


def _ordered(config: Config, names: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:
        for who in config.slack.groups.get(name, [name]):
            if who not in out:
                out.append(who)
    return tuple(out)


def owners_to_mention(config: Config, recipe: str | None) -> tuple[str, ...]:
    """The recipe's owners, in config order (nobody for a recipe no longer configured)."""
    if recipe is None or recipe not in config.recipes:
        return ()
    return _ordered(config, config.recipe(recipe).owners)


def prompt_people(config: Config, recipe: str | None) -> tuple[str, ...]:
    """Whom a prompt waiting for a decision mentions (and its reminder): `mentions.prompts`
    of the recipe: its owners, its approvers, or nobody."""
    if recipe is None or recipe not in config.recipes:
        return ()
    cfg = config.recipe(recipe)
    if cfg.mentions.prompts == "owners":
        return _ordered(config, cfg.owners)
    if cfg.mentions.prompts == "approvers":
        return _ordered(config, cfg.approvers or config.slack.approvers)
    return ()


def escalation_people(config: Config, recipe: str | None) -> tuple[str, ...]:
    """Whom an unanswered prompt is escalated to: `mentions.escalate_to` (user ids, groups,
    user-group ids), else the recipe's approvers (else slack.approvers)."""
    if recipe is None or recipe not in config.recipes:
        return _ordered(config, config.slack.approvers)
    cfg = config.recipe(recipe)
    return _ordered(config, cfg.mentions.escalate_to or cfg.approvers or config.slack.approvers)
