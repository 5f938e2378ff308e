"""The whole configuration (`Config`) and its cross-field checks."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, field_validator, model_validator

from bot.config.models._base import _SLACK_USER_RE, _SLACK_USERGROUP_RE, _Model
from bot.config.models.clusters import ClusterConfig
from bot.config.models.policy import PolicyConfig
from bot.config.models.recipes import RecipeConfig
from bot.config.models.service import (
    WEBHOOK_SECRET_MIN_CHARS,
    CatalogueConfig,
    ServiceConfig,
    SlackConfig,
    SlackSecrets,
    StoreConfig,
    TemplatesConfig,
)
from bot.core.redact import Redactor, url_secrets
from bot.core.train_grammar import RECIPE_NAME_RE


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the file: the key path and what is wrong there."""

    path: str
    message: str


class CrossFieldProblems(ValueError):
    """Several cross-field problems, each with its own key path (unwrapped by parse_config)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in problems))


def _prompt_timing_problems(path: str, policy: PolicyConfig) -> list[Problem]:
    """A prompt reminds, then escalates, then expires: in that order, or not at all."""
    steps = [(name, getattr(policy, name)) for name in
             ("remind_after_s", "escalate_after_s", "approval_expiry_s")]
    steps = [(name, value) for name, value in steps if value]  # 0: that step is off
    return [Problem(f"{path}.{later}", f"{later} ({b:g} s) must be longer than {earlier} "
                    f"({a:g} s): a prompt reminds, then escalates, then expires")
            for (earlier, a), (later, b) in zip(steps, steps[1:], strict=False) if b <= a]


class Config(_Model):
    """The whole trainbot configuration."""

    clusters: dict[str, ClusterConfig] = Field(
        description="Clusters by name; recipes refer to these names."
    )
    recipes: dict[str, RecipeConfig] = Field(
        default_factory=dict, description="Training recipes by name (`/train submit NAME`)."
    )
    slack: SlackConfig = Field(default_factory=SlackConfig, description="Slack settings.")
    policy: PolicyConfig = Field(default_factory=PolicyConfig, description="Policy defaults.")
    store: StoreConfig = Field(default_factory=StoreConfig, description="State store.")
    catalogue: CatalogueConfig = Field(
        default_factory=CatalogueConfig, description="Failure catalogue extensions."
    )
    templates: TemplatesConfig = Field(
        default_factory=TemplatesConfig, description="Message templates."
    )
    service: ServiceConfig = Field(
        default_factory=ServiceConfig, description="Health, metrics, logs and webhook."
    )

    _secrets: SlackSecrets = PrivateAttr(default_factory=SlackSecrets)
    _source: str | None = PrivateAttr(default=None)
    _store_url_env: str | None = PrivateAttr(default=None)

    @field_validator("recipes")
    @classmethod
    def _recipe_names(cls, value: dict[str, RecipeConfig]) -> dict[str, RecipeConfig]:
        for name in value:
            if not RECIPE_NAME_RE.match(name):
                raise ValueError(
                    f"recipe name {name!r} cannot be given to `/train`: use letters, digits, "
                    "'_', '.', '-', starting with a letter or digit, at most 64 characters")
        return value

    @model_validator(mode="after")
    def _cross_check(self) -> Config:
        problems: list[Problem] = []
        if not self.clusters:
            problems.append(Problem("clusters", "no cluster defined; add at least one"))
        groups = self.slack.groups
        channels = self.slack.channels

        def check_people(path: str, people: list[str]) -> None:
            for person in people:
                if _SLACK_USER_RE.match(person) or person in groups:
                    continue
                hint = did_you_mean(person, groups)
                problems.append(
                    Problem(
                        path,
                        f"{person!r} is neither a Slack user id (U…/W…) nor a group under "
                        f"slack.groups{hint}",
                    )
                )

        if self.slack.default_channel is not None and self.slack.default_channel not in channels:
            problems.append(
                Problem(
                    "slack.default_channel",
                    f"channel {self.slack.default_channel!r} is not under slack.channels"
                    f"{did_you_mean(self.slack.default_channel, channels)}",
                )
            )
        check_people("slack.approvers", self.slack.approvers)
        from bot.slack.render import languages  # a language is a message catalogue

        known = languages(self.templates.dir)
        langs = [("slack.lang", self.slack.lang)] + [
            (f"recipes.{name}.lang", r.lang) for name, r in self.recipes.items() if r.lang]
        for path, lang in langs:
            if lang not in known:
                problems.append(Problem(path, f"language {lang!r} has no message catalogue "
                                              f"(templates/locale/{lang}/LC_MESSAGES/"
                                              f"messages.po); use one of {', '.join(known)}"))
        for name, recipe in self.recipes.items():
            if recipe.cluster not in self.clusters:
                problems.append(
                    Problem(
                        f"recipes.{name}.cluster",
                        f"cluster {recipe.cluster!r} is not defined under clusters "
                        f"(defined: {', '.join(sorted(self.clusters)) or 'none'})"
                        f"{did_you_mean(recipe.cluster, self.clusters)}",
                    )
                )
            if recipe.channel is not None and recipe.channel not in channels:
                problems.append(
                    Problem(
                        f"recipes.{name}.channel",
                        f"channel {recipe.channel!r} is not under slack.channels"
                        f"{did_you_mean(recipe.channel, channels)}",
                    )
                )
            check_people(f"recipes.{name}.submitters", recipe.submitters)
            check_people(f"recipes.{name}.approvers", recipe.approvers)
            check_people(f"recipes.{name}.mentions.escalate_to",
                         [p for p in recipe.mentions.escalate_to
                          if not _SLACK_USERGROUP_RE.match(p)])
            problems += _prompt_timing_problems(
                f"recipes.{name}.policy",
                self.policy.model_copy(update=recipe.policy.model_dump(exclude_none=True)))
            if recipe.job_name is None:
                recipe.job_name = name
        problems += _prompt_timing_problems("policy", self.policy)
        if problems:
            raise CrossFieldProblems(problems)
        return self

    # ---- lookups used by the services

    @property
    def slack_secrets(self) -> SlackSecrets:
        """Secrets read from the environment by load_config (empty for a bare Config)."""
        return self._secrets

    def secret_values(self) -> list[str]:
        """Every secret value the bot knows: the recipes' `env` values (all of them: a token is
        passed to jobs that way), the Slack secrets, the store URL's password and the webhook
        URL's path and query when long enough to be one (chat webhooks carry their secret
        there; a short path such as `/events` is not)."""
        values = [value for recipe in self.recipes.values() for value in recipe.env.values()]
        values += [s.get_secret_value() for s in (self._secrets.bot_token,
                   self._secrets.app_token, self._secrets.signing_secret) if s is not None]
        if self.service.webhook_url:
            hook = urlsplit(self.service.webhook_url)
            values += [part for part in (hook.path.strip("/"), hook.query)
                       if len(part) >= WEBHOOK_SECRET_MIN_CHARS]
        return values + url_secrets(self.store.url)

    def redactor(self) -> Redactor:
        """Masks `secret_values()` and token-shaped strings in error texts (bot.core.redact)."""
        return Redactor(self.secret_values())

    @property
    def store_url_origin(self) -> str:
        """Where `store.url` came from: `$TRAINBOT_STORE_URL` or `store.url` (the file's, or
        the default)."""
        return f"${self._store_url_env}" if self._store_url_env else "store.url"

    @property
    def source(self) -> str | None:
        """The file this config was loaded from, if any."""
        return self._source

    def recipe(self, name: str) -> RecipeConfig:
        """The recipe called `name`; KeyError naming the known recipes otherwise."""
        try:
            return self.recipes[name]
        except KeyError:
            known = ", ".join(sorted(self.recipes)) or "none"
            raise KeyError(
                f"no recipe {name!r} (known: {known}){did_you_mean(name, self.recipes)}"
            ) from None

    def cluster_for(self, recipe_name: str) -> ClusterConfig:
        return self.clusters[self.recipe(recipe_name).cluster]

    def policy_for(self, recipe_name: str) -> PolicyConfig:
        """The policy defaults with the recipe's overrides applied."""
        overrides = self.recipe(recipe_name).policy.model_dump(exclude_none=True)
        return self.policy.model_copy(update=overrides)

    def channel_id_for(self, recipe_name: str) -> str | None:
        """Slack channel id for a recipe's threads (its channel, else the default)."""
        name = self.recipe(recipe_name).channel or self.slack.default_channel
        return self.slack.channels.get(name) if name else None

    def lang_for(self, recipe_name: str) -> str:
        return self.recipe(recipe_name).lang or self.slack.lang

    def expand_people(self, people: list[str]) -> set[str]:
        """User ids named by a list of user ids and group names."""
        out: set[str] = set()
        for person in people:
            out.update(self.slack.groups.get(person, [person]))
        return out

    def approvers_for(self, recipe_name: str) -> set[str]:
        """User ids who may approve actions on a recipe's jobs."""
        return self.expand_people(self.recipe(recipe_name).approvers or self.slack.approvers)

    def submitters_for(self, recipe_name: str) -> set[str] | None:
        """User ids who may submit/resume the recipe; None means anyone (in its channel when
        it has one, else anywhere)."""
        people = self.recipe(recipe_name).submitters
        return self.expand_people(people) if people else None


def did_you_mean(word: str, choices: Any) -> str:
    """` — did you mean 'x'?` for the choice closest to a misspelt `word`, else ""."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" — did you mean {close[0]!r}?" if close else ""
