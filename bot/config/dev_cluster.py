"""Config files for the dev cluster (tests, `trainbot demo`), from its connection.json."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from bot.config.models.root import Config

DEV_CLUSTER_CONNECTION = "/tmp/dev-cluster/connection.json"


def dev_cluster_config_data(
    connection: Mapping[str, Any],
    *,
    store_url: str,
    recipes: Mapping[str, Mapping[str, Any]] | None = None,
    cluster_name: str = "dev",
) -> dict[str, Any]:
    """Config data (YAML-ready) for the dev cluster described by its connection.json.

    `recipes` are recipe mappings whose `cluster` defaults to the dev cluster and whose
    `partition` defaults to the dev cluster's partition.
    """
    data_recipes: dict[str, Any] = {}
    for name, recipe in (recipes or {}).items():
        merged = {"cluster": cluster_name, **dict(recipe)}
        if connection.get("partition"):
            merged.setdefault("partition", connection["partition"])
        data_recipes[name] = merged
    return {
        "clusters": {
            cluster_name: {
                "host": connection["host"],
                "port": int(connection["port"]),
                "user": connection["user"],
                "key_file": connection["key_file"],
                "known_hosts": connection["known_hosts"],
                "connect_timeout": 10,
                "command_timeout": 60,
            }
        },
        "recipes": data_recipes,
        "store": {"url": store_url},
    }


def write_dev_cluster_config(
    path: str | os.PathLike[str],
    connection: Mapping[str, Any],
    *,
    store_url: str,
    recipes: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """Write a config file for the dev cluster to `path` (validated first); returns the path."""
    data = dev_cluster_config_data(connection, store_url=store_url, recipes=recipes)
    Config.model_validate(data)
    out = Path(path)
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out
