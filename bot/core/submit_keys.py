"""What a submit of a recipe stands against, as a path: `submit:<recipe>/` for a new run,
`…/run:<chain>/` for a resubmit of that run, `…/run:<chain>/task:<n>/` for one task of an
array run's. Every submit of a run writes that run's checkpoints (a task of an array run its
own) under the recipe's job name, so two submits cross when one key is the other or lies
under it (own, above, below): a new run crosses every submit of its recipe, a whole array's
each of its tasks', and two tasks' (or two runs') do not. The one rule for the submit claims
(bot.services.submit_claim, CommandClaimsRepo.claim_uncrossed) and the submits kept in flight.

An older trainbot (before the keys were paths) claimed every submit of a recipe under one key,
`submit:recipe:<recipe>` (`legacy_key`), and looks at that key alone: during a rolling
upgrade the submits of both stand against each other only if a newer one holds that key too
(bot.services.submit_claim).
"""

from __future__ import annotations


def claim_key(recipe: str, chain_id: int | None = None, array_task: int | None = None) -> str:
    """The key of a submit of `recipe`: of a new run (no `chain_id`), of run `chain_id`, or
    of task `array_task` of that run alone."""
    key = f"submit:{recipe}/"
    if chain_id is not None:
        key += f"run:{chain_id}/"
        if array_task is not None:
            key += f"task:{array_task}/"
    return key


def keys_above(key: str) -> list[str]:
    """The keys that cover `key` (its parents, the top first: `a/` and `a/b/` for `a/b/c/`)."""
    parts = key.split("/")[:-1]
    return ["/".join(parts[:n]) + "/" for n in range(1, len(parts))]


def crosses(key: str, other: str) -> bool:
    """Do submits of `key` and `other` cross: `other` is `key`, lies under it (begins with
    it) or above it (`keys_above`)? Symmetric; the store's claim_uncrossed asks it in SQL."""
    return other.startswith(key) or other in keys_above(key)


def top_key(key: str) -> str:
    """The key of a new run of `key`'s recipe (`submit:<recipe>/`), which every submit of the
    recipe crosses."""
    return key.split("/", 1)[0] + "/"


def recipe_of_top(top: str) -> str:
    """The recipe whose new run's key (`top_key`) is `top`: `mix` of `submit:mix/`."""
    return top.removeprefix("submit:").removesuffix("/")


def legacy_key(key: str) -> str:
    """The key an older trainbot claims every submit of `key`'s recipe under (its one key per
    recipe, before the keys were paths): `submit:recipe:<recipe>`."""
    return "submit:recipe:" + key.split("/", 1)[0].removeprefix("submit:")


# The holder under which the newer trainbot holds `legacy_key` for all of its submits of the
# recipe at once, as long as any of their claims is held or a submit of the recipe is kept in
# flight (CommandClaimsRepo.sync_legacy): it names no process, so an older trainbot never
# judges it dead and takes the key over while one of those submits is under way; it stands
# until released or lapsed.
NEWER_SUBMITS = "newer-trainbot-submits"
