"""The LOG + sacct-facts arguments shared by `trainbot diagnose` and `trainbot report`, their
parsers (each error names the flag and the right form), and reading the log into a
`LogAnalysis` (streamed, bounded memory).
"""

from __future__ import annotations

import argparse
import calendar
import re
import sys
from dataclasses import dataclass

from bot.cli import UsageError
from bot.core.catalogue import Catalogue, CatalogueError
from bot.core.diagnose import LogAnalysis, analyze_file
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting
from bot.core.units import parse_size

# sacct job states (Slurm 20-25), as printed in the State column.
SACCT_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "CONFIGURING", "DEADLINE", "FAILED",
    "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "REQUEUED", "REQUEUE_FED",
    "REQUEUE_HOLD", "RESIZING", "REVOKED", "RUNNING", "SIGNALING", "SPECIAL_EXIT",
    "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT",
})
_EXIT_RE = re.compile(r"^(\d+):(\d+)$")
_ELAPSED_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")
_ISO_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z?$")




def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """LOG|-, --state, --exit-code, --elapsed, --mem-limit, --target-iter, --now, --catalogue,
    --metric-regex."""
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
    parser.add_argument("--metric-regex", metavar="REGEX", action="append", default=[],
                        help="a recipe's own metric line regex with named groups (iteration, "
                        "target_iter, loss, rss, gpu_mem, gpu_util, sec_per_iter, time)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive iteration number")
    return value


def parse_state(text: str | None) -> str | None:
    """sacct's State: first word (`CANCELLED by 0` -> CANCELLED), `+` truncation dropped."""
    if text is None:
        return None
    words = text.strip().split()
    state = words[0].rstrip("+").upper() if words else ""
    if state not in SACCT_STATES:
        raise UsageError(
            f"--state {text!r} is not a sacct state; use one of {', '.join(sorted(SACCT_STATES))}"
        )
    return state


def parse_exit_code(text: str | None) -> tuple[int | None, int | None]:
    """sacct's ExitCode `CODE:SIGNAL` (e.g. `0:0`, `1:0`, `0:125`)."""
    if text is None:
        return None, None
    m = _EXIT_RE.match(text.strip())
    if m is None:
        raise UsageError(f"--exit-code {text!r} must be CODE:SIGNAL as sacct prints it, e.g. 1:0")
    return int(m.group(1)), int(m.group(2))


def parse_elapsed(text: str | None) -> float | None:
    """Seconds, or sacct's Elapsed `[D-][HH:]MM:SS`."""
    if text is None:
        return None
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        m = _ELAPSED_RE.match(text)
        if m is None:
            raise UsageError(
                f"--elapsed {text!r} must be seconds (e.g. 10) or [D-]HH:MM:SS"
            ) from None
        days, hours, minutes, seconds = m.groups()
        value = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60
        value += float(seconds)
    if value < 0:
        raise UsageError(f"--elapsed {text!r} cannot be negative")
    return value


def parse_now(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    m = _ISO_RE.match(text.strip())
    if m is None:
        raise UsageError(f"--now {text!r} must be an ISO time (2025-05-14T19:14:00) or epoch "
                         "seconds")
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    return calendar.timegm((y, mo, d, hh, mm, ss)) + frac


@dataclass
class LogInput:
    """What the LOG arguments resolve to."""

    analysis: LogAnalysis
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
    extra = []
    for pattern in args.metric_regex:
        try:
            extra.append(re.compile(pattern))
        except re.error as exc:
            raise UsageError(f"--metric-regex {pattern!r}: {exc}") from None
    try:
        MetricSeries(extra_patterns=extra)
    except ValueError as exc:
        raise UsageError(f"--metric-regex: {exc}") from None
    accounting = Accounting(state=state, exit_code=exit_code, signal=signal,
                            elapsed_s=elapsed, mem_limit_bytes=mem_limit)
    try:
        if args.log == "-":
            analysis = analyze_file(sys.stdin.buffer, catalogue, extra_patterns=extra)
        else:
            with open(args.log, "rb") as stream:
                analysis = analyze_file(stream, catalogue, extra_patterns=extra)
    except OSError as exc:
        raise UsageError(f"cannot read log {args.log!r}: {exc.strerror or exc}") from None
    return LogInput(analysis, accounting, catalogue, now, args.target_iter)
