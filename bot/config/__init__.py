"""trainbot's configuration: one YAML file, validated by pydantic at start.

The public surface is here: the schema (`bot.config.models`) and `load_config` with its
`ConfigError` (`bot.config.loading`). A bad file fails with a `ConfigError` naming the file,
the key path, what is wrong and the fix. Secrets come only from the environment.
Config files for the dev cluster: `bot.config.dev_cluster`.
"""

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
from bot.config.models import (
    SLURM_OVERRIDE_FIELDS,
    CatalogueConfig,
    CheckpointConfig,
    ClusterConfig,
    Config,
    OverrideType,
    PolicyConfig,
    PreflightConfig,
    RecipeConfig,
    RecipePolicy,
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
    "STORE_URL_ENV_VAR",
    "CatalogueConfig",
    "CheckpointConfig",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "OverrideType",
    "PolicyConfig",
    "PreflightConfig",
    "RecipeConfig",
    "RecipePolicy",
    "SlackConfig",
    "SlackSecrets",
    "StoreConfig",
    "TemplatesConfig",
    "load_config",
    "parse_config",
    "read_slack_secrets",
    "resolve_config_path",
]
