"""What the configuration says about a watched job's recipe: its RecipeConfig, its policy (the
thresholds the judgement uses), its target iteration, and its latest complete checkpoint (for
an array recipe's task: the task's own), looked up once per finished job and once per stall
warning, within a deadline: a lookup that fails or is late is told as unknown (never as "none"),
and the incident or the stall's prompt is posted without waiting longer. A lookup given up is
told so (bot.services.ports.Abandon): the production one then closes the cluster's lookup
channel it holds (the next lookup opens a fresh one), so nothing it still does touches the
cluster's other SFTP use (bot.services.runs.AutoResubmitter).

A job with no recipe (an adopted one) or a recipe removed from the config gets the defaults:
the config's global policy, no target; its checkpoint is unknown (no recipe names its
checkpoint dir; a removed recipe's lookup fails), never "none": a resume from it is never said
to start from scratch, nor its leak's memory counted from iteration 0 as if it were known.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from bot.config import Config, PolicyConfig, RecipeConfig
from bot.core.checkpoints import Checkpoint
from bot.core.policy import CheckpointUnknown, PolicyParams, params_from
from bot.services.ports import Abandon

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointLookup:
    """A lookup of a recipe's latest complete checkpoint: `checkpoint` (None: there is none),
    or, when `unknown` says why, which one is unknown: "lookup_failed" (it raised or missed its
    deadline) or "no_recipe" (a job with no recipe: nowhere to look)."""

    checkpoint: Checkpoint | None
    unknown: CheckpointUnknown | None = None

    @property
    def failed(self) -> bool:
        """The lookup raised or missed its deadline."""
        return self.unknown == "lookup_failed"


class RecipeSettings:
    """One cluster's recipe lookups. `config` may be None (tests pass `policy` instead);
    `policy`, when given, is every recipe's policy; `checkpoint(recipe, task=N | None,
    abandon=Abandon)` is the recipe's latest complete checkpoint or None (default: none
    known), looked up by `checkpoint_within`."""

    def __init__(self, cluster: str, *, config: Config | None,
                 policy: PolicyConfig | PolicyParams | None,
                 checkpoint: Callable[..., Checkpoint | None] | None) -> None:
        self.cluster = cluster
        self.config = config
        self._policy = policy
        self._checkpoint = checkpoint or (lambda recipe, task=None, abandon=None: None)

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

    def checkpoint_within(self, recipe: str | None, task: int | None = None, *,
                          deadline_s: float) -> CheckpointLookup:
        """The recipe's latest complete checkpoint (of an array's task `task`: its own, `%a` in
        the recipe's checkpoint dir): its name and, when the name has one, its iteration;
        given up after `deadline_s` seconds, and the lookup told so (`Abandon`: its answer is
        dropped, the lookup channel it holds closed): a lookup that fails or is late is `failed`
        (logged), never an exception, never a wait past it. A job with no recipe (`recipe`
        None: one trainbot did not submit) has no checkpoint dir trainbot knows: unknown
        ("no_recipe"), not looked up."""
        if recipe is None:
            return CheckpointLookup(None, unknown="no_recipe")
        future: Future[Checkpoint | None] = Future()
        abandon = Abandon()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self._checkpoint(recipe, task=task, abandon=abandon))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting tick
                future.set_exception(exc)

        threading.Thread(target=run, name=f"checkpoint-lookup-{recipe}", daemon=True).start()
        try:
            return CheckpointLookup(future.result(timeout=deadline_s))
        except FutureTimeout:
            abandon.abandon()
            log.warning("%s: looking up %s's checkpoints took longer than %g s; given up",
                        self.cluster, recipe, deadline_s)
        except Exception as exc:  # noqa: BLE001 - the post goes on, saying it is unknown
            log.warning("%s: cannot look up %s's checkpoints: %s", self.cluster, recipe, exc)
        return CheckpointLookup(None, unknown="lookup_failed")


__all__ = ["CheckpointLookup", "RecipeSettings"]
