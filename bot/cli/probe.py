"""`trainbot probe dataloader MODULE:FACTORY`: measure DataLoader worker memory growth.

Runs on the login node (or inside `srun`): builds the Dataset from the factory, iterates a real
DataLoader with persistent workers and reports the slope in MB per sample per worker, the
projection for the run, and a verdict. Exit 0 no leak, 1 leak, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from bot.cli import EXIT_FAILED, EXIT_OK, UsageError, progress

NAME = "probe"
HELP = "Probes that catch failures before a run: DataLoader worker memory leaks."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="probe_command", metavar="PROBE", required=True)
    dl = sub.add_parser(
        "dataloader",
        help="Iterate the Dataset through a real DataLoader and measure worker memory growth.",
    )
    dl.add_argument(
        "factory",
        metavar="MODULE:FACTORY",
        help="a function returning the Dataset, importable from cwd or PYTHONPATH",
    )
    dl.add_argument("--workers", type=int, default=2, help="DataLoader workers (default 2)")
    dl.add_argument(
        "--samples", type=int, default=160, help="samples to load in total (default 160)"
    )
    dl.add_argument(
        "--run-workers",
        type=int,
        help="workers the real run uses on one node (e.g. 40), for the projection",
    )
    dl.add_argument(
        "--run-samples",
        type=int,
        help="samples the real run loads across those workers (iterations × batch per node)",
    )
    dl.add_argument(
        "--threshold-mb",
        type=float,
        default=1.0,
        help="leak if memory grows more than this many MB per sample per worker",
    )
    dl.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="DIR",
        help="extra directory to import the module from (repeatable)",
    )
    dl.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from bot.probes.dataloader import ProbeUsageError, load_factory, probe_dataloader

    if args.samples < 1 or args.workers < 1:
        raise UsageError("--samples and --workers must be at least 1")
    if (args.run_workers is None) != (args.run_samples is None):
        raise UsageError("give --run-workers and --run-samples together (or neither)")
    try:
        factory = load_factory(args.factory, args.path)
        with progress.bar(enabled=progress.wanted(args), total=args.samples, desc="samples",
                          unit="sample") as bar:
            verdict = probe_dataloader(
                factory,
                workers=args.workers,
                samples=args.samples,
                threshold_mb=args.threshold_mb,
                run_workers=args.run_workers,
                run_samples=args.run_samples,
                on_sample=bar.update,
            )
    except ProbeUsageError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        out = asdict(verdict)
        out["worker_slopes_mb"] = {str(k): v for k, v in verdict.worker_slopes_mb.items()}
        out["factory"] = args.factory
        out["workers"] = args.workers
        print(json.dumps(out, indent=2))
    else:
        print(f"dataloader probe {args.factory} ({args.workers} workers, {args.samples} samples)")
        print(f"  {verdict.message}")
        if verdict.leaking:
            print(
                "  fix: bound the per-worker cache (LRU / close decoders after use), or "
                "lower num_workers; re-run this probe to confirm the slope is flat"
            )
    return EXIT_FAILED if verdict.leaking or not verdict.conclusive else EXIT_OK
