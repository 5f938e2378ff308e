"""`trainbot sampler --out FILE [--interval S] [--pid PID] [--count N]`: per-role RSS/CPU of a
job's tree.

Start it in the background from a batch script: `trainbot sampler --out $LOGDIR/rss.jsonl &`.
It samples its parent's tree (the batch script and everything below it) unless --pid names
another root, appends one JSON line per sample, and exits by itself when the root is gone.
`python -m bot.probes.sampler` takes the same options (one definition, in bot.probes.sampler)
and starts lighter (it skips the CLI): prefer it inside jobs.
"""

from __future__ import annotations

import argparse

from bot.probes import sampler

NAME = "sampler"
HELP = sampler.HELP


def configure(parser: argparse.ArgumentParser) -> None:
    sampler.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return sampler.run_command(args, prog=f"trainbot {NAME}")
