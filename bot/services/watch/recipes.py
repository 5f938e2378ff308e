"""What the configuration says about a watched job's recipe: its RecipeConfig, its policy (the
thresholds the judgement uses), its target iteration, and its latest complete checkpoint (for
an array recipe's task: the task's own), looked up once per finished job.

A job with no recipe (an adopted one) or a recipe removed from the config gets the defaults:
the config's global policy, no target, no checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.cluster.errors import ClusterError
from bot.config import Config, PolicyConfig, RecipeConfig
from bot.core.checkpoints import Checkpoint
from bot.core.policy import PolicyParams, params_from

log = logging.getLogger(__name__)


class RecipeSettings:
    """One cluster's recipe lookups. `config` may be None (tests pass `policy` instead);
    `policy`, when given, is every recipe's policy; `checkpoint(recipe[, task=N])` is the
    recipe's latest complete checkpoint or None (default: none known)."""

    def __init__(self, cluster: str, *, config: Config | None,
                 policy: PolicyConfig | PolicyParams | None,
                 checkpoint: Callable[..., Checkpoint | None] | None) -> None:
        self.cluster = cluster
        self.config = config
        self._policy = policy
        self._checkpoint = checkpoint or (lambda recipe, task=None: None)

    def cfg(self, recipe: str | None) -> RecipeConfig | None:
        if self.config is None or recipe is None:
            return None
        try:
            return self.config.recipe(recipe)
        except Exception:  # noqa: BLE001 - a recipe removed from the config
            return None

    def policy(self, recipe: str | None) -> PolicyConfig | PolicyParams | None:
        if self._policy is not None:
            return self._policy
        if self.config is not None and recipe is not None and self.cfg(recipe):
            return self.config.policy_for(recipe)
        return getattr(self.config, "policy", None)

    def params(self, recipe: str | None) -> PolicyParams:
        return params_from(self.policy(recipe))

    def target(self, recipe: str | None) -> int | None:
        cfg = self.cfg(recipe)
        return getattr(cfg, "target_iter", None)

    def checkpoint(self, recipe: str | None, task: int | None = None) -> Checkpoint | None:
        """The recipe's latest complete checkpoint (of an array's task `task`: its own, `%a`
        in the recipe's checkpoint dir): its name and, when the name has one, its iteration.
        None: none, or it cannot be looked up (logged)."""
        if recipe is None:
            return None
        try:
            if task is not None:
                return self._checkpoint(recipe, task=task)
            return self._checkpoint(recipe)
        except (ClusterError, OSError) as exc:
            log.warning("%s: cannot look up %s's checkpoints: %s", self.cluster, recipe, exc)
            return None


__all__ = ["RecipeSettings"]
