"""`trainbot preflight RECIPE`: launcher lint, worker toolchain and checkpoint memory budget.

Exit 0 when no check fails (warnings allowed), 1 when one fails, 2 for bad usage, a bad config
or an unreachable cluster.
"""

from __future__ import annotations

import argparse
import json
import sys

from bot.cli import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    WORDS_ANYWHERE,
    UsageError,
    add_config_argument,
    load_config_arg,
    recipe_and_overrides,
    size_flag,
)

NAME = "preflight"
HELP = ("Check a recipe before it holds GPUs: launcher lint, worker toolchain (srun), "
        "checkpoint-save memory budget.")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", metavar="RECIPE", help="recipe name from the config")
    parser.add_argument("overrides", metavar="KEY=VALUE", nargs="*",
                        help="the overrides the run will get, as for `submit` (keys the "
                             "recipe's `overridable:` lists), anywhere among the flags: checked "
                             "with them applied")
    parser.set_defaults(**{WORDS_ANYWHERE: "overrides"})
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--script", metavar="PATH",
                        help="lint this local launcher instead of the recipe's sbatch_script")
    mem = parser.add_argument_group(
        "checkpoint memory budget (each flag overrides the recipe's `preflight:` section)"
    )
    mem.add_argument("--params", help="model parameter count (1.4e9, 1.4B, 350M); default: "
                     "read from the recipe's latest DCP checkpoint")
    mem.add_argument("--ranks", type=int, help="ranks per node (default: GPUs in the gres)")
    mem.add_argument("--workers", type=int, help="DataLoader num_workers per rank")
    mem.add_argument("--worker-rss", help="RSS per DataLoader worker, e.g. 2.3G "
                     "(measure with `trainbot probe dataloader`)")
    mem.add_argument("--mem", help="--mem to check against (default: the recipe's mem)")
    mem.add_argument("--per-gpu-cap", help="site admission cap per GPU, e.g. 244000M")
    mem.add_argument("--site-floor", help="site accounting floor for the job, e.g. 563200M")
    mem.add_argument("--save-mode", choices=["full_per_rank", "sharded", "rank0"],
                     help="how the save materialises state on the CPU (default: the recipe's, "
                     "else every rank gathers the full state, as in job 87870)")
    mem.add_argument("--no-ema", action="store_true", help="the run keeps no EMA copy")
    tool = parser.add_argument_group("worker toolchain")
    tool.add_argument("--no-toolchain", action="store_true", help="skip the srun probe")
    tool.add_argument("--env-setup", metavar="SNIPPET",
                      help="shell lines that activate the training env on the node "
                      "(e.g. 'source ~/miniforge3/bin/activate wm')")
    tool.add_argument("--python", default="python3", help="python on the node (default python3)")
    tool.add_argument("--timeout", type=float, default=600.0,
                      help="seconds to wait for the srun probe (queue time included)")


def _options(args: argparse.Namespace):  # -> PreflightOptions
    from bot.core.memory_budget import SaveMode, parse_count
    from bot.services.preflight import PreflightOptions

    try:
        params = parse_count(args.params) if args.params else None
    except ValueError as exc:
        raise UsageError(f"--params: {exc}") from None
    for flag, value in (("--ranks", args.ranks), ("--workers", args.workers)):
        if value is not None and value < (1 if flag == "--ranks" else 0):
            raise UsageError(f"{flag} must be a positive number")
    return PreflightOptions(
        script_path=args.script, params=params, ranks_per_node=args.ranks,
        workers_per_rank=args.workers,
        worker_rss_bytes=size_flag("--worker-rss", args.worker_rss),
        mem_bytes=size_flag("--mem", args.mem),
        per_gpu_cap_bytes=size_flag("--per-gpu-cap", args.per_gpu_cap),
        site_floor_bytes=size_flag("--site-floor", args.site_floor),
        save_mode=SaveMode(args.save_mode) if args.save_mode else None,
        ema=False if args.no_ema else None,
        toolchain=not args.no_toolchain, env_setup=args.env_setup, python=args.python,
        toolchain_timeout=args.timeout, recipe_overrides=args.overrides,
    )


def run(args: argparse.Namespace) -> int:
    from bot.cluster.errors import ClusterUnavailable, CommandTimedOut, HostKeyRejected
    from bot.cluster.sessions import ClusterSessions
    from bot.probes.report import print_findings
    from bot.services.preflight import PreflightUsageError, run_preflight

    args.recipe, args.overrides = recipe_and_overrides(args)
    options = _options(args)
    config = load_config_arg(args, recipe=args.recipe)
    cluster = config.recipes[args.recipe].cluster
    with ClusterSessions(config) as sessions:
        try:
            report = run_preflight(config, args.recipe, sessions.runner(cluster), options)
        except PreflightUsageError as exc:
            raise UsageError(str(exc)) from None
        except CommandTimedOut as exc:
            # reached, but a command outlived its bound: most often the toolchain probe's
            # srun, which waits in the queue within --timeout
            print(f"trainbot preflight: on cluster {cluster!r}, {exc}", file=sys.stderr)
            if exc.argv[:1] == ["srun"]:
                print(f"the toolchain probe's srun waits in the queue within --timeout "
                      f"({args.timeout:g} s): give it longer (--timeout), a less busy "
                      "partition (partition=...), or skip it (--no-toolchain)",
                      file=sys.stderr)
            return EXIT_USAGE
        except (ClusterUnavailable, HostKeyRejected) as exc:
            print(f"trainbot preflight: cluster {cluster!r} unreachable: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        verdict = {"pass": "PASS", "warn": "PASS with warnings", "fail": "FAIL"}[report.level]
        print(f"preflight {args.recipe}: {verdict}")
        for name, findings in report.sections.items():
            print(f"{name}:")
            print_findings(findings)
    return EXIT_FAILED if report.level == "fail" else EXIT_OK
