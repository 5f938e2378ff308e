"""`trainbot init [--dir DIR] [--force]`: write a starter config (trainbot.yaml) and the Slack
app manifest (slack-manifest.yaml), both shipped in the package (bot/starter/)."""

from __future__ import annotations

import argparse
import sys
from importlib.resources import files
from pathlib import Path

from bot.cli import EXIT_OK, EXIT_USAGE
from bot.config import DEFAULT_CONFIG_PATH

NAME = "init"
HELP = "Write a starter trainbot.yaml and the Slack app manifest into this directory."

# file written -> the packaged file it is a copy of
STARTER_FILES = {DEFAULT_CONFIG_PATH: "trainbot.yaml", "slack-manifest.yaml":
                 "slack-manifest.yaml"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", metavar="DIR", default=".",
                        help="where to write the files (default: the current directory)")
    parser.add_argument("--force", action="store_true", help="overwrite files already there")


def starter_text(name: str) -> str:
    """The packaged starter file `name` (a value of STARTER_FILES)."""
    return (files("bot") / "starter" / name).read_text(encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    targets = {folder / written: packaged for written, packaged in STARTER_FILES.items()}
    present = [str(t) for t in targets if t.exists()]
    if present and not args.force:
        print(f"trainbot init: {', '.join(present)} already there; nothing written "
              "(--force overwrites)", file=sys.stderr)
        return EXIT_USAGE
    folder.mkdir(parents=True, exist_ok=True)
    for target, packaged in targets.items():
        target.write_text(starter_text(packaged), encoding="utf-8")
        print(f"wrote {target}")
    config, manifest = targets
    print(f"next: create the Slack app from {manifest} (api.slack.com/apps → From a manifest), "
          f"edit {config} (clusters, recipes, slack.channels), export SLACK_BOT_TOKEN and "
          f"SLACK_APP_TOKEN, then `trainbot doctor --config {config}`")
    return EXIT_OK
