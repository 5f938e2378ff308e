"""The LOG + sacct-facts arguments shared by `trainbot diagnose`-style commands, and reading
the log into a `LogAnalysis` (streamed, bounded memory).

The flag parsers themselves live in bot.commands.diagnose (parse_state, parse_exit_code,
parse_elapsed, parse_now); this module only wires them for reuse (e.g. `trainbot report`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from bot.cli import UsageError
from bot.commands.diagnose import (
    _positive_int,
    parse_elapsed,
    parse_exit_code,
    parse_now,
    parse_state,
)
from bot.core.catalogue import Catalogue, CatalogueError
from bot.core.diagnose import analyze_file
from bot.core.models import Accounting
from bot.core.units import parse_size


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """LOG|-, --state, --exit-code, --elapsed, --mem-limit, --target-iter, --now, --catalogue."""
    parser.add_argument("log", metavar="LOG|-", help="the job's log file, or - for stdin")
    parser.add_argument("--state", help="sacct State (RUNNING, COMPLETED, OUT_OF_MEMORY, ...)")
    parser.add_argument("--exit-code", metavar="CODE:SIGNAL",
                        help="sacct ExitCode, e.g. 0:0, 1:0, 0:125")
    parser.add_argument("--elapsed", metavar="SECONDS",
                        help="run time in seconds (or sacct's [D-]HH:MM:SS)")
    parser.add_argument("--mem-limit", metavar="SIZE",
                        help="the job's memory limit: 400G, 950GB, 563200M, 1T")
    parser.add_argument("--target-iter", metavar="N", type=_positive_int,
                        help="the iteration training should reach (default: as the log says)")
    parser.add_argument("--now", metavar="TIME",
                        help="judge a running job at this time (ISO UTC or epoch seconds); "
                        "default: the last timestamp in the log")
    parser.add_argument("--catalogue", metavar="YAML", action="append", default=[],
                        help="a site catalogue merged over the packaged one (repeatable)")


@dataclass
class LogInput:
    """What the LOG arguments resolve to."""

    analysis: Any  # bot.core.diagnose.LogAnalysis
    accounting: Accounting
    catalogue: Catalogue
    now: float | None
    target_iter: int | None


def read_log(args: argparse.Namespace) -> LogInput:
    """Parse the flags (UsageError naming the bad one) and stream the log through analysis."""
    state = parse_state(args.state)
    exit_code, signal = parse_exit_code(args.exit_code)
    elapsed = parse_elapsed(args.elapsed)
    now = parse_now(args.now)
    mem_limit = None
    if args.mem_limit is not None:
        try:
            mem_limit = parse_size(args.mem_limit)
        except ValueError as exc:
            raise UsageError(f"--mem-limit: {exc}") from None
    try:
        catalogue = Catalogue.load(extra_paths=args.catalogue)
    except CatalogueError as exc:
        raise UsageError(f"--catalogue: {exc}") from None
    accounting = Accounting(state=state, exit_code=exit_code, signal=signal,
                            elapsed_s=elapsed, mem_limit_bytes=mem_limit)
    try:
        if args.log == "-":
            analysis = analyze_file(sys.stdin.buffer, catalogue)
        else:
            with open(args.log, "rb") as stream:
                analysis = analyze_file(stream, catalogue)
    except OSError as exc:
        raise UsageError(f"cannot read log {args.log!r}: {exc.strerror or exc}") from None
    return LogInput(analysis, accounting, catalogue, now, args.target_iter)
