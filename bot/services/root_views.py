"""What a run's thread root shows, built from the store and the config: a run's root view
(`root_view`: its attempts, its target, its retry budget), an array's (`array_root_view`: a row
per task), the target and the chunk bounds its run is judged by (`chain_target`,
`task_bounds`), and a prompt's job as the thread names it (`prompt_job`).
bot.services.threads renders and posts them (its `open_thread`, `refresh_root`)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.config import Config
from bot.core.arrays import ArrayRootView, ArrayTask, build_array_root
from bot.core.incident import AttemptSummary, RootView, build_root
from bot.core.models import ChunkBounds, logged_target, run_target
from bot.services.ports import BotContext
from bot.store import Attempt, Chain


def chain_target(config: Config, chain: Chain, attempts: Sequence[Attempt]) -> int | None:
    """The target iteration of `chain`'s run as the watcher judges it (bot.core.models
    .run_target): its submit's `target_iter=`, else its recipe's (when still configured),
    else the one its `attempts` (oldest first: the chain's, or an array task's) last printed."""
    configured = config.recipe(chain.recipe).target_iter \
        if not chain.adopted and chain.recipe in config.recipes else None
    return run_target(submitted=chain.target_iter, configured=configured,
                      logged=logged_target(attempts))


def task_bounds(config: Config, chain: Chain, attempts: Sequence[Attempt]) -> ChunkBounds:
    """How the time-limit chunks of `chain`'s run (an array task's: its `attempts`, oldest
    first) are counted against its budget: within its target (`chain_target`), at most its
    recipe's `max_free_chunks` in a row (the defaults' for a recipe not, or no longer,
    configured)."""
    policy = config.policy_for(chain.recipe) if chain.recipe in config.recipes \
        else config.policy
    return ChunkBounds(target_iter=chain_target(config, chain, attempts),
                       max_free_chunks=policy.max_free_chunks)


def root_view(ctx: BotContext, chain_id: int) -> RootView | None:
    """The root message's view from the chain's attempts in the store; None for an unknown
    chain or one without attempts."""
    chain = ctx.store.chains.get(chain_id)
    attempts = ctx.store.attempts.for_chain(chain_id) if chain is not None else []
    if chain is None or not attempts:
        return None
    configured = not chain.adopted and chain.recipe in ctx.config.recipes
    return build_root(
        recipe=chain.job_name if chain.adopted else chain.recipe,
        attempts=[AttemptSummary(a.shown_id, a.result or a.state, a.last_iter, a.start_iter,
                                 a.cause if a.result else None) for a in attempts],
        target_iter=chain_target(ctx.config, chain, attempts),
        retries_used=chain.retries_used,
        retry_budget=ctx.config.policy_for(chain.recipe).retry_budget if configured else None,
        cluster=chain.cluster,
        adopted=chain.adopted,
    )


def prompt_job(ctx: BotContext, chain_id: int, job_id: str, state: str) -> tuple[str, str]:
    """A prompt's job as its thread names it: the attempt's shown id (`123_4` of an array
    task) and its state (its result once ended); a job that is no attempt of the chain (a
    hold prompt's competitor): `job_id` itself and `state`."""
    attempt = next((a for a in ctx.store.attempts.for_chain(chain_id) if a.job_id == job_id),
                   None)
    if attempt is None:
        return job_id, state
    return attempt.shown_id, attempt.result or attempt.state


def array_root_view(ctx: BotContext, chain_id: int) -> ArrayRootView | None:
    """The root view of an "array" chain: its tasks' rows from the store; tasks are still
    waiting to start while the array's own id is watched and is no task yet."""
    chain = ctx.store.chains.get(chain_id)
    if chain is None or chain.kind != "array" or chain.array_job_id is None:
        return None
    attempts = ctx.store.attempts.for_chain(chain_id)
    array = str(chain.array_job_id)
    waiting = ctx.store.watched_jobs.get(chain.cluster, array) is not None and \
        all(a.job_id != array for a in attempts)
    tasks = [ArrayTask(a.shown_id, a.job_id, a.result or a.state, a.last_iter,
                       a.cause if a.result else None) for a in attempts]
    return build_array_root(array_job_id=chain.array_job_id, name=chain.job_name,
                            tasks=tasks, waiting=waiting, cluster=chain.cluster,
                            recipe=chain.recipe)
