"""The config file's schema: pydantic models with a description on every field.

Unknown keys are errors, so a typo never passes silently. Secrets (Slack tokens) are never
fields: `read_slack_secrets` takes them from the environment.
"""

from bot.config.models._base import SLURM_OVERRIDE_FIELDS, OverrideType
from bot.config.models.clusters import ClusterConfig
from bot.config.models.policy import PolicyConfig, RecipePolicy
from bot.config.models.recipes import (
    CheckpointConfig,
    DataLoaderProbeConfig,
    MentionsConfig,
    PreflightConfig,
    RecipeConfig,
)
from bot.config.models.root import Config, CrossFieldProblems, Problem, did_you_mean
from bot.config.models.service import (
    WEBHOOK_SECRET_MIN_CHARS,
    CatalogueConfig,
    ServiceConfig,
    SlackConfig,
    SlackSecrets,
    StoreConfig,
    TemplatesConfig,
    read_slack_secrets,
)

__all__ = [
    "SLURM_OVERRIDE_FIELDS",
    "WEBHOOK_SECRET_MIN_CHARS",
    "CatalogueConfig",
    "CheckpointConfig",
    "ClusterConfig",
    "Config",
    "CrossFieldProblems",
    "DataLoaderProbeConfig",
    "MentionsConfig",
    "OverrideType",
    "PolicyConfig",
    "PreflightConfig",
    "Problem",
    "RecipeConfig",
    "RecipePolicy",
    "ServiceConfig",
    "SlackConfig",
    "SlackSecrets",
    "StoreConfig",
    "TemplatesConfig",
    "did_you_mean",
    "read_slack_secrets",
]
