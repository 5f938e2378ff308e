"""`trainbot init` writes the packaged starter config and Slack manifest; the config it writes
is valid, and nothing already there is overwritten without --force."""

from __future__ import annotations

from bot.cli import main
from bot.cli.init import STARTER_FILES, starter_text
from bot.config import load_config

TOKENS = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test"}


def test_init_writes_a_valid_starter_config_and_the_manifest(tmp_path, capsys) -> None:
    assert main(["init", "--dir", str(tmp_path)]) == 0
    for written, packaged in STARTER_FILES.items():
        assert (tmp_path / written).read_text() == starter_text(packaged)
    config = load_config(tmp_path / "trainbot.yaml", env=TOKENS)
    assert config.clusters and config.recipes
    out = capsys.readouterr().out
    assert "slack-manifest.yaml" in out and "trainbot doctor --config" in out


def test_init_overwrites_nothing_without_force(tmp_path, capsys) -> None:
    (tmp_path / "trainbot.yaml").write_text("mine\n")
    assert main(["init", "--dir", str(tmp_path)]) == 2
    assert "already there" in capsys.readouterr().err
    assert (tmp_path / "trainbot.yaml").read_text() == "mine\n"
    assert not (tmp_path / "slack-manifest.yaml").exists()
    assert main(["init", "--dir", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "trainbot.yaml").read_text() == starter_text("trainbot.yaml")


def test_a_missing_config_points_at_init(tmp_path, capsys) -> None:
    assert main(["status", "--config", str(tmp_path / "nowhere.yaml")]) == 2
    assert "trainbot init" in capsys.readouterr().err
