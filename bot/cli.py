"""The `trainbot` command line: discovers the subcommands in `bot.commands` and runs one.

Exit codes shared by every subcommand: 0 success / all checks pass, 1 a check failed or a
failure was found, 2 bad usage, unreadable input or an unreachable cluster.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from bot import __version__, commands

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input from the user; the message says what was wrong and the right form."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainbot",
        description="Watch, diagnose and resume ML training jobs on Slurm, from Slack.",
    )
    parser.add_argument("--version", action="version", version=f"trainbot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"trainbot {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
