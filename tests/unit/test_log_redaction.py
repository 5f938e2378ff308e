"""The logs never show a secret: the redacting filter on the log handlers, as `trainbot run`
and the CLI install it."""

from __future__ import annotations

import argparse
import io
import logging
from pathlib import Path

import yaml

from bot.cli import EXIT_USAGE, build_parser, load_config_arg
from bot.cli import run as run_cmd
from bot.core.redact import MARKER, Redactor
from bot.log_redaction import REDACTING_FILTER, install_log_redaction

TOKEN = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"
PLAIN = "plain-but-secret-value"


def logger_writing_to(stream: io.StringIO, name: str) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.propagate = False
    logger.handlers = [logging.StreamHandler(stream)]
    logger.setLevel(logging.INFO)
    return logger


def test_messages_arguments_and_tracebacks_are_redacted() -> None:
    out = io.StringIO()
    logger = logger_writing_to(out, "trainbot.test.redacted")
    install_log_redaction(Redactor([PLAIN]), logger)
    logger.warning("sbatch failed: %s", f"env HF_TOKEN={TOKEN} K={PLAIN} sbatch")
    try:
        raise RuntimeError(f"exited 1: {PLAIN}")
    except RuntimeError:
        logger.exception("tick failed")
    logger.info("a bad format %d", PLAIN)  # formatting fails: still no secret
    text = out.getvalue()
    assert "sbatch failed: env HF_TOKEN=[redacted] K=[redacted] sbatch" in text
    assert "Traceback" in text and f"RuntimeError: exited 1: {MARKER}" in text
    assert TOKEN not in text and PLAIN not in text


def test_installing_again_replaces_the_secrets_everywhere() -> None:
    out = io.StringIO()
    logger = logger_writing_to(out, "trainbot.test.again")
    install_log_redaction(Redactor(["first-secret"]), logger)
    install_log_redaction(Redactor(["second-secret"]), logger)
    logger.warning("first-secret second-secret")
    assert out.getvalue() == f"first-secret {MARKER}\n"
    assert logger.handlers[0].filters == [REDACTING_FILTER]
    assert logging.lastResort is not None
    assert REDACTING_FILTER in logging.lastResort.filters  # no handler configured: still redacted


def config_file(tmp_path: Path) -> Path:
    data = {
        "clusters": {"dev": {"host": "127.0.0.1", "key_file": "/nonexistent"}},
        "recipes": {"mix": {"cluster": "dev", "sbatch_script": "/x.sbatch",
                            "env": {"WANDB_API_KEY": PLAIN}}},
        "store": {"url": f"sqlite:///{tmp_path / 'state.db'}"},
    }
    path = tmp_path / "trainbot.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_trainbot_run_redacts_its_logs_with_the_configs_secrets(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    args = build_parser(only="run").parse_args(["run", "--config", str(config_file(tmp_path))])
    assert run_cmd.run(args) == EXIT_USAGE  # no Slack tokens: it stops after reading the config
    assert all(REDACTING_FILTER in h.filters for h in logging.getLogger().handlers)
    assert REDACTING_FILTER.redactor.redact(f"K={PLAIN}") == f"K={MARKER}"


def test_cli_commands_redact_their_logs_once_they_read_the_config(tmp_path) -> None:
    load_config_arg(argparse.Namespace(config=str(config_file(tmp_path))))
    assert logging.lastResort is not None
    assert REDACTING_FILTER in logging.lastResort.filters
    assert REDACTING_FILTER.redactor.redact(f"K={PLAIN}") == f"K={MARKER}"
