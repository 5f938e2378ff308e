"""Where a job trainbot submitted ran: its recipe as its sbatch got it, the placement
overrides its submit applied (partition, account, qos: its audit row's `overrides`) and the
--exclude it had: the recipe's own list and the nodes its attempt row records its run left out
after node faults (bot.services.runs.exclusion). A step run beside that job (the DataLoader probe's
srun, its command offered to run by hand) is placed from it (`RecipeConfig.placement_flags`),
not from the base recipe, so it never lands on a node the job's sbatch left out."""

from __future__ import annotations

import json
from typing import Any

from bot.config import Config, RecipeConfig
from bot.config.models.recipes import PLACEMENT_OPTIONS
from bot.core.nodes import excluding
from bot.services.overrides import OverrideError, apply_overrides
from bot.store import Store

SUBMITS_LOOKED_AT = 20  # audit rows of the job read for its submit's


def job_recipe(config: Config, store: Store, recipe_name: str,
               job_id: str | None) -> RecipeConfig:
    """Recipe `recipe_name` as job `job_id`'s sbatch got it (module doc), through the submit's
    own apply_overrides; the base recipe when trainbot recorded no submit of that job (an
    adopted job, none given). Raises KeyError for a recipe the config does not have."""
    recipe = config.recipe(recipe_name)
    if not job_id:
        return recipe
    overrides: dict[str, Any] = {}
    submit = next((e for e in store.audit.recent(SUBMITS_LOOKED_AT, job_id=job_id)
                   if e.action == "submit" and e.result == "ok"), None)
    if submit is not None and submit.detail:
        try:
            detail = json.loads(submit.detail)
        except ValueError:
            detail = None
        applied = detail.get("overrides") if isinstance(detail, dict) else None
        if isinstance(applied, dict):
            overrides = {k: v for k, v in applied.items()
                         if k in PLACEMENT_OPTIONS and isinstance(v, str)}
    attempt = store.attempts.get_by_job(job_id, recipe.cluster)
    if attempt is not None and attempt.excluded_nodes:  # none before schema 10
        # the nodes its run left out, after the --exclude its submit had (the recipe's own)
        overrides["exclude"] = excluding(overrides.get("exclude") or recipe.exclude,
                                         attempt.excluded_nodes)
    if not overrides:
        return recipe
    try:
        return apply_overrides(recipe, overrides)
    except OverrideError:  # a value the recipe no longer takes: where the recipe runs now
        return recipe
