"""Reading the config file: YAML with duplicate keys refused, validation, and errors that name
the file, the key path (`recipes.mix.partiton`), its line, what is wrong and the fix."""

from __future__ import annotations

import os
import re
import types
import typing
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from bot.config.models.root import Config, CrossFieldProblems, Problem, did_you_mean
from bot.config.models.service import read_slack_secrets
from bot.core.redact import SLACK_TOKEN
from bot.core.yaml_input import (
    MAX_FILE_BYTES,
    BoundedLoader,
    decode_text,
    describe_yaml_error,
    load_yaml,
)

CONFIG_ENV_VAR = "TRAINBOT_CONFIG"
# The store URL from the environment wins over the file's `store.url`, so a database password
# need not sit in the YAML.
STORE_URL_ENV_VAR = "TRAINBOT_STORE_URL"
DEFAULT_CONFIG_PATH = "trainbot.yaml"
# The starter config (bot/starter/trainbot.yaml, shipped in the wheel), written by `trainbot init`.
EXAMPLE_CONFIG = "the starter config of `trainbot init`"



class ConfigError(Exception):
    """The config file is missing or invalid; the message names the file, key path and fix."""



class _UniqueKeyLoader(BoundedLoader):
    """The bounded SafeLoader, also refusing duplicate keys (PyYAML keeps the last one); keys
    merged in with `<<: *anchor` may be overridden, as YAML means."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # construct_mapping flattens it, explicit keys first
        key = loader.construct_object(key_node)
        if not isinstance(key, Hashable):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "found a list or mapping as a key; keys are names", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1}); "
                "remove one of them",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def resolve_config_path(cli_path: str | None, env: Mapping[str, str] = os.environ) -> Path:
    """--config, else $TRAINBOT_CONFIG, else ./trainbot.yaml."""
    return Path(cli_path or env.get(CONFIG_ENV_VAR) or DEFAULT_CONFIG_PATH)


def load_config(path: str | os.PathLike[str], env: Mapping[str, str] = os.environ) -> Config:
    """Read and validate the config at `path`; secrets (and $TRAINBOT_STORE_URL) come from
    `env`. Raises ConfigError."""
    file = Path(path)
    try:
        with file.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(
            f"{file}: config file not found; pass --config PATH, set ${CONFIG_ENV_VAR}, or "
            f"run `trainbot init` for a starter ./{DEFAULT_CONFIG_PATH}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file: {exc.strerror or exc}") from None
    try:
        text = decode_text(data)
    except ValueError as exc:
        raise ConfigError(f"{file}: not a config file: {exc}") from None
    return parse_config(text, source=str(file), env=env)


def parse_config(text: str, *, source: str, env: Mapping[str, str] = os.environ) -> Config:
    """Validate config YAML `text`; `source` names it in errors (a file path). A non-empty
    $TRAINBOT_STORE_URL in `env` replaces the file's `store.url`."""
    try:
        data = load_yaml(text, _UniqueKeyLoader)
    except yaml.YAMLError as exc:
        what = describe_yaml_error(exc)
        # Scanner and parser errors are mostly indentation or quoting; the others say their fix.
        syntax = isinstance(exc, yaml.scanner.ScannerError | yaml.parser.ParserError)
        fix = ("; fix the indentation or quoting there (values containing ': ' or ' #' "
               "need quotes)") if syntax else ""
        raise ConfigError(f"{source}: YAML error {what}{fix}") from None
    if data is None:
        raise ConfigError(f"{source}: the config file is empty; start from {EXAMPLE_CONFIG}")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping (clusters:, recipes:, …), "
            f"not a {type(data).__name__}"
        )
    token_problem = _find_token_in_file(data)
    if token_problem:
        raise ConfigError(f"{source}: {token_problem}")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        lines, typed = _key_lines(text)
        problems = _problems_from(exc, data, typed)
        body = "\n".join(f"  {p.path}{_at_line(lines, p.path)}: {p.message}" for p in problems)
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        raise ConfigError(f"{source}: invalid config ({count}):\n{body}") from None
    config._secrets = read_slack_secrets(config.slack, env)
    config._source = source
    store_url = env.get(STORE_URL_ENV_VAR, "").strip()
    if store_url:
        config.store.url = store_url
        config._store_url_env = STORE_URL_ENV_VAR
    return config


def _problems_from(exc: ValidationError, data: Any,
                   typed: Mapping[str, str] | None = None) -> list[Problem]:
    problems: list[Problem] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, CrossFieldProblems):
            problems.extend(inner.problems)
            continue
        path = ".".join(str(p) for p in loc) or "(top level)"
        problems.append(Problem(path, _explain(err, loc, (typed or {}).get(path))))
    return problems


def _explain(err: Any, loc: tuple[Any, ...], typed: str | None = None) -> str:
    """What is wrong at `loc` and the fix; `typed` is the value's text in the file when it is
    an unquoted scalar YAML read as a number or a boolean."""
    kind = err["type"]
    value = err.get("input")
    if kind == "string_type" and isinstance(value, int | float):  # bool is an int
        return _unquoted(value, loc, typed)
    if kind == "extra_forbidden":
        key = str(loc[-1])
        if re.search(r"token|secret|password", key, re.IGNORECASE):
            return (
                f"unknown key {key!r}: secrets are never read from the file; export them in "
                "the environment (slack.bot_token_env / app_token_env / signing_secret_env "
                "name the variables)"
            )
        allowed = _allowed_keys(loc[:-1])
        hint = did_you_mean(key, allowed)
        if hint:
            return f"unknown key {key!r}{hint}"
        listing = f"; allowed here: {', '.join(sorted(allowed))}" if allowed else ""
        return f"unknown key {key!r}; remove or rename it{listing}"
    if kind == "missing":
        return f"required key is missing; add it (see {EXAMPLE_CONFIG})"
    msg = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    if kind.endswith("_type") or kind.endswith("_parsing") or kind == "literal_error":
        msg = f"{msg} (got {err.get('input')!r})"
    return msg


def _unquoted(value: float, loc: tuple[Any, ...], typed: str | None) -> str:
    """A text field given an unquoted number or yes/no: YAML 1.1 reads `4:00:00` as 14400 (base
    60), `90` as a number, `yes` as true. What was typed is said (a sexagesimal number cannot
    be turned back into it), with the quoted form to write."""
    what = "a boolean" if isinstance(value, bool) else "a number"
    key = loc[-1] if loc else ""
    if typed is None:  # behind an alias: not found in the file
        return (f"YAML reads this unquoted value as {what} ({value!r}), but it is text here; "
                f"write it in quotes as you mean it, e.g. {key}: \"4:00:00\"")
    quoted = f'"{typed}"' if isinstance(key, int) else f'{key}: "{typed}"'
    return (f"YAML reads the unquoted {typed} as {what}, but it is text here; write it in "
            f"quotes, e.g. {quoted}")


def _unwrap(annotation: Any) -> Any:
    """Strip Optional/Union-with-None from an annotation."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model found at `loc` (walking dict values and list items)."""
    current: Any = Config
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return []
            current = field.annotation
            continue
        origin = typing.get_origin(current)
        if origin in (dict, list):
            current = typing.get_args(current)[-1]
            continue
        return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []



# The tags YAML 1.1 gives an unquoted scalar that is not text
_NOT_TEXT_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"}


def _key_lines(text: str) -> tuple[dict[str, int], dict[str, str]]:
    """1-based line of each key path in the YAML text, and the text as typed of each unquoted
    scalar YAML reads as a number or boolean (best effort, for error messages)."""
    out: dict[str, int] = {}
    typed: dict[str, str] = {}
    loader = BoundedLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError:
        return out, typed
    finally:
        loader.dispose()

    def walk(node: yaml.Node, prefix: str) -> None:
        if isinstance(node, yaml.ScalarNode) and node.tag in _NOT_TEXT_TAGS and prefix:
            typed[prefix] = node.value
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
                out[path] = key_node.start_mark.line + 1
                walk(value_node, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                path = f"{prefix}.{i}"
                out[path] = item.start_mark.line + 1
                walk(item, path)

    if root is not None:
        walk(root, "")
    return out, typed


def _at_line(lines: dict[str, int], path: str) -> str:
    while path:
        if path in lines:
            return f" (line {lines[path]})"
        path = path.rpartition(".")[0]
    return ""


def _find_token_in_file(data: Any, path: str = "") -> str | None:
    """A message if a Slack token was pasted into the file (it must live in the environment)."""
    if isinstance(data, dict):
        for key, value in data.items():
            found = _find_token_in_file(value, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found = _find_token_in_file(value, f"{path}.{i}")
            if found:
                return found
    elif isinstance(data, str) and SLACK_TOKEN.search(data):
        return (
            f"{path}: looks like a Slack token; secrets are never read from the file — remove "
            "it, revoke it if the file was shared, and export it as SLACK_BOT_TOKEN / "
            "SLACK_APP_TOKEN instead"
        )
    return None
