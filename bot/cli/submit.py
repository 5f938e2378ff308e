"""`trainbot submit RECIPE [key=value …]`: submit a recipe, resuming from its last checkpoint.
The overrides may come anywhere among the flags (`submit --config F RECIPE mem=950G --config F
steps=500`)."""

from __future__ import annotations

import argparse
import getpass
import sys
import time
from typing import TYPE_CHECKING, cast

from bot.cli import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    WORDS_ANYWHERE,
    UsageError,
    add_config_argument,
    load_config_arg,
    open_store,
    recipe_and_overrides,
)

if TYPE_CHECKING:
    from bot.services.ports import SFTP

NAME = "submit"
HELP = "Submit a recipe from the config (resuming from its latest complete checkpoint)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", metavar="RECIPE", help="recipe name from the config")
    parser.add_argument(
        "overrides",
        metavar="KEY=VALUE",
        nargs="*",
        help="overrides allowed by the recipe's `overridable:`, anywhere among the flags",
    )
    parser.set_defaults(**{WORDS_ANYWHERE: "overrides"})
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    from bot.cluster.errors import ClusterError, ClusterUnavailable, HostKeyRejected
    from bot.cluster.sessions import ClusterSessions
    from bot.services import UsageProblem
    from bot.services.send_job import describe_not_applied
    from bot.services.submit import describe_start, submit_recipe

    args.recipe, args.overrides = recipe_and_overrides(args)
    config = load_config_arg(args, recipe=args.recipe)
    cluster = config.recipes[args.recipe].cluster
    actor = f"cli:{getpass.getuser()}"
    with open_store(config) as store, ClusterSessions(config) as sessions:
        try:
            result = submit_recipe(
                config,
                args.recipe,
                overrides=args.overrides,
                slurm=sessions.slurm(cluster),
                sftp=cast("SFTP", _LazySFTP(sessions, cluster)),  # SFTP's calls, on first use
                store=store,
                now=time.time(),
                actor=actor,
            )
        except UsageProblem as exc:
            raise UsageError(str(exc)) from None
        except (ClusterUnavailable, HostKeyRejected) as exc:
            print(f"trainbot submit: cluster {cluster!r} unreachable: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except ClusterError as exc:
            print(f"trainbot submit: {args.recipe}: submit failed: {exc}", file=sys.stderr)
            return EXIT_FAILED
    whole_array = result.array is not None and result.attempt_no == 0
    start = str(describe_start(result, config.recipes[args.recipe]))
    if whole_array:
        start += f"; `trainbot status {result.job_id}` lists the tasks"
    what = "job array" if result.attempt_no == 0 else "job"
    tasks = f"tasks {result.array}, " if whole_array else ""
    attempt = "" if result.attempt_no == 0 else f", attempt {result.attempt_no}"
    print(
        f"submitted {args.recipe} as {what} {result.job_id} ({tasks}name {result.job_name}, "
        f"chain {result.chain_id}{attempt}); {start}"
    )
    missed = describe_not_applied(result.not_applied)
    if missed:
        print(f"warning: {missed}", file=sys.stderr)
    return EXIT_OK


class _LazySFTP:
    """Opens the cluster's SFTP channel only if the recipe needs a checkpoint lookup."""

    def __init__(self, sessions: object, cluster: str):
        self._sessions = sessions
        self._cluster = cluster
        self._sftp: object | None = None

    def __getattr__(self, name: str) -> object:
        if self._sftp is None:
            self._sftp = self._sessions.sftp(self._cluster)  # type: ignore[attr-defined]
        return getattr(self._sftp, name)
