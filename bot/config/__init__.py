"""trainbot's configuration: one YAML file, validated by pydantic at start."""

from bot.config.loading import (
    CONFIG_ENV_VAR,
    DEFAULT_CONFIG_PATH,
    EXAMPLE_CONFIG,
    STORE_URL_ENV_VAR,
    ConfigError,
    load_config,
    parse_config,
    resolve_config_path,
)
from bot.config.models._base import INT_MOST, SLURM_OVERRIDE_FIELDS, OverrideType
from bot.config.models.clusters import ClusterConfig
from bot.config.models.policy import PolicyConfig, RecipePolicy
from bot.config.models.recipes import (
    CheckpointConfig,
    DataLoaderProbeConfig,
    PreflightConfig,
    RecipeConfig,
)
from bot.config.models.root import Config
from bot.config.models.service import (
    CatalogueConfig,
    ServiceConfig,
    SlackConfig,
    SlackSecrets,
    StoreConfig,
    TemplatesConfig,
    read_slack_secrets,
)

__all__ = [
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_PATH",
    "EXAMPLE_CONFIG",
    "SLURM_OVERRIDE_FIELDS",
    "INT_MOST",
    "STORE_URL_ENV_VAR",
    "CatalogueConfig",
    "CheckpointConfig",
    "DataLoaderProbeConfig",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "OverrideType",
    "PolicyConfig",
    "PreflightConfig",
    "RecipeConfig",
    "RecipePolicy",
    "ServiceConfig",
    "SlackConfig",
    "SlackSecrets",
    "StoreConfig",
    "TemplatesConfig",
    "load_config",
    "parse_config",
    "read_slack_secrets",
    "resolve_config_path",
]
