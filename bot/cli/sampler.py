"""`trainbot sampler --out FILE [--interval S] [--pid PID]`: per-role RSS/CPU of a job's tree.

Start it in the background from a batch script: `trainbot sampler --out $LOGDIR/rss.jsonl &`.
It samples its parent's tree (the batch script and everything below it) unless --pid names
another root, appends one JSON line per sample, and exits by itself when the root is gone.
`python -m bot.probes.sampler` takes the same options and starts lighter (it skips the CLI's other
commands): prefer it inside jobs.
"""

from __future__ import annotations

import argparse
import os
import sys

from bot.cli import EXIT_OK, EXIT_USAGE, UsageError

NAME = "sampler"
HELP = (
    "Record a job's process-tree RSS and CPU by role (trainer / DataLoader worker / other) "
    "as JSON lines; run it in the background from the batch script."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="JSON-lines file to append to (created if missing)")
    parser.add_argument("--interval", type=float, default=10.0, metavar="S",
                        help="seconds between samples (default 10; at least 0.1)")
    parser.add_argument("--pid", type=int, default=None, metavar="PID",
                        help="root of the tree to sample (default: the sampler's parent)")
    parser.add_argument("--count", type=int, default=None, metavar="N",
                        help="stop after N samples (default: until the root exits)")


def run(args: argparse.Namespace) -> int:
    from bot.probes.sampler import main_loop

    if args.interval < 0.1:
        raise UsageError(f"--interval {args.interval}: use at least 0.1 seconds")
    if args.count is not None and args.count < 1:
        raise UsageError(f"--count {args.count}: use a positive number of samples")
    if args.pid is not None and args.pid <= 0:
        raise UsageError(f"--pid {args.pid}: not a process id")
    parent = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(parent):
        raise UsageError(f"--out {args.out}: directory {parent} does not exist")
    try:
        rc = main_loop(args.out, interval_s=args.interval, root_pid=args.pid,
                       max_samples=args.count)
    except OSError as exc:
        print(f"trainbot sampler: cannot write {args.out}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if rc == 0 else rc
