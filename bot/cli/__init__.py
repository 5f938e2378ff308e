"""The `trainbot` command line: discovers the subcommands (one module of this package each) and
runs one.

Every subcommand module defines ``NAME`` (the subcommand), ``HELP`` (one line),
``configure(parser)`` (adds its arguments) and ``run(args) -> int`` (the exit code); adding a
command is adding a module. Exit codes shared by every subcommand: 0 success / all checks pass,
1 a check failed or a failure was found, 2 bad usage, unreadable input or an unreachable cluster.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot import __version__

if TYPE_CHECKING:
    from bot.config import Config
    from bot.store import Store

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

# Modules of this package that are shared helpers, not subcommands.
HELPER_MODULES = frozenset({"log_input", "progress"})

#: A subcommand whose `nargs="*"` positional words may also come after its flags
#: (`preflight RECIPE --json steps=500`, `submit RECIPE --config F mem=950G`) names that
#: positional with `parser.set_defaults(**{WORDS_ANYWHERE: "overrides"})`; its `run` sorts
#: them with recipe_and_overrides.
WORDS_ANYWHERE = "words_anywhere"


class UsageError(Exception):
    """Bad input from the user; the message says what was wrong and the right form."""


def recipe_and_overrides(args: argparse.Namespace) -> tuple[str, tuple[str, ...]]:
    """RECIPE and the KEY=VALUE overrides of a command that takes them anywhere among its flags
    (positionals `recipe` and `overrides`, the latter WORDS_ANYWHERE), in whatever order they
    came: the recipe is the one word with no `=`."""
    words = [args.recipe, *args.overrides]
    names = [w for w in words if "=" not in w]
    if not names:
        raise UsageError("no RECIPE given: every word is a KEY=VALUE override")
    if len(names) > 1:
        raise UsageError(_not_an_override(args, names[1], names[0]))
    return names[0], tuple(w for w in words if "=" in w)


def _not_an_override(args: argparse.Namespace, word: str, recipe: str) -> str:
    """The usage error for a `word` among the overrides that has no `=`. Its example is an
    override `recipe` takes (from its `overridable:` in the config); a recipe that takes none,
    or a config that cannot be read, gets no example."""
    from bot.services.overrides import override_example

    try:
        example = override_example(load_config_arg(args, recipe=recipe).recipes[recipe])
    except UsageError:
        example = None
    write = f"write KEY=VALUE, e.g. {example}" if example else "write KEY=VALUE"
    return f"{word!r} is not an override ({write}); the recipe is {recipe!r}"


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """`--config PATH`, for every command that reads the bot's config file."""
    from bot.config import CONFIG_ENV_VAR

    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"config file (default: ${CONFIG_ENV_VAR}, else ./trainbot.yaml)",
    )


def load_config_arg(args: argparse.Namespace, recipe: str | None = None) -> Config:
    """The config named by `--config` (or its defaults), and `recipe` checked to be in it;
    a bad file or an unknown recipe is a UsageError that names the file, the key and the fix.
    From here on the process's logs are redacted with the config's secrets."""
    from bot.config import ConfigError, load_config, resolve_config_path
    from bot.log_redaction import install_log_redaction

    try:
        config = load_config(resolve_config_path(args.config))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    install_log_redaction(config.redactor())
    if recipe is not None:
        try:
            config.recipe(recipe)
        except KeyError as exc:
            raise UsageError(f"{exc.args[0]} in {config.source}") from None
    return config


def open_store(config: Config) -> Store:
    """The store at the config's `store.url` (a context manager: use it in `with`); one that
    cannot be opened is a UsageError that says why."""
    from bot.store import Store, StoreError

    try:
        return Store.open(config.store.url)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def size_flag(flag: str, text: str | None) -> int | None:
    """Bytes of a size flag's Slurm-style value (`400G`, `563200M`), None when the flag is not
    given; a value that is not a size is a UsageError naming `flag` and the accepted form."""
    from bot.core.units import parse_size

    if text is None:
        return None
    try:
        return parse_size(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def command_names() -> list[str]:
    """The subcommands: one module of this package each, named as the command."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in HELPER_MODULES)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `only` that one: a command imports only its own
    module (and what it needs), so `trainbot sampler` in a batch script starts fast."""
    parser = argparse.ArgumentParser(
        prog="trainbot",
        description="Watch, diagnose and resume ML training jobs on Slurm, from Slack.",
    )
    parser.add_argument("--version", action="version", version=f"trainbot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in command_names() if only is None else [only]:
        module = importlib.import_module(f"{__name__}.{name}")
        sub = subparsers.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from bot.core.redact import Redactor
    from bot.log_redaction import install_log_redaction

    install_log_redaction(Redactor())  # token shapes; a command's config adds its secrets
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else None
    parser = build_parser(only=first if first in command_names() else None)
    args, rest = parser.parse_known_args(argv)
    words_field = getattr(args, WORDS_ANYWHERE, None)
    if words_field is not None:  # argparse leaves the words after a flag unrecognised
        words = [w for w in rest if not w.startswith("-")]
        setattr(args, words_field, [*(getattr(args, words_field) or []), *words])
        rest = [w for w in rest if w.startswith("-")]
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return int(args.run(args))
    except UsageError as exc:
        print(f"trainbot {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
