"""Who may do what per recipe, as bot.core.authz sees it: the config's people, expanded."""

from __future__ import annotations

from bot.config import Config
from bot.core.authz import People, RecipeAccess, approvers_for


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
