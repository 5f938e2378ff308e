"""`trainbot checkpoint verify DIR [--pointer FILE] [--json]`: is a DCP checkpoint safe to resume?

Exit 0 valid, 1 invalid (missing/truncated shard, unreadable metadata, missing pointer),
2 bad usage (DIR is not a directory, the pointer is not a text file, torch is not installed).
"""

from __future__ import annotations

import argparse
import json

from bot.cli import EXIT_FAILED, EXIT_OK, UsageError, progress
from bot.probes.report import print_findings

NAME = "checkpoint"
HELP = "Inspect training checkpoints (verify a torch.distributed.checkpoint directory)."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="checkpoint_command", metavar="ACTION", required=True)
    verify = sub.add_parser(
        "verify",
        help="Check a DCP checkpoint: metadata readable, every shard present and complete, "
        "pointer file valid.",
    )
    verify.add_argument("directory", metavar="DIR", help="the checkpoint directory")
    verify.add_argument(
        "--pointer",
        metavar="FILE",
        help="pointer file that should name DIR (e.g. latest_checkpoint.txt)",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from bot.probes.checkpoint_verify import PointerNotText, TorchMissing, verify_checkpoint

    try:
        with progress.bar(enabled=progress.wanted(args), desc="storage files",
                          unit="file") as bar:
            report = verify_checkpoint(args.directory, pointer=args.pointer,
                                       on_file=bar.update)
    except FileNotFoundError as exc:
        raise UsageError(f"{exc}; give the checkpoint directory (DIR)") from exc
    except PointerNotText as exc:
        raise UsageError(f"--pointer {exc}") from None
    except TorchMissing as exc:
        raise UsageError(f"checkpoint verify needs torch: {exc}") from None
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        verdict = "VALID" if report.valid else "INVALID"
        print(f"checkpoint {report.directory}: {verdict}")
        if report.param_count:
            print(
                f"  {report.param_count:,} parameters, {report.storage_files} storage file(s), "
                f"{report.storage_bytes:,} bytes"
            )
        print_findings(report.findings)
    return EXIT_OK if report.valid else EXIT_FAILED
