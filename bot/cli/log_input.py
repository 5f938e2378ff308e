"""The LOG + sacct-facts arguments shared by `trainbot diagnose` and `trainbot report`: each
flag read with the Slurm parsers of `bot.core.slurm` (a bad one is a UsageError naming the flag
and the right form), then the log streamed through analysis (bounded memory).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from bot.cli import UsageError, size_flag
from bot.cli import progress as cli_progress
from bot.core.catalogue import Catalogue, CatalogueError
from bot.core.diagnose import LogAnalysis, analyze_file
from bot.core.line_time import iso_time
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from bot.core.slurm.states import KNOWN_STATES, normalize_state
from bot.core.slurm.values import parse_duration, parse_exit_code


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """LOG|-, --state, --exit-code, --elapsed, --mem-limit, --sacct, --target-iter, --now,
    --catalogue, --metric-regex."""
    parser.add_argument("log", metavar="LOG|-", help="the job's log file, or - for stdin")
    parser.add_argument("--state", help="sacct State (RUNNING, COMPLETED, OUT_OF_MEMORY, ...)")
    parser.add_argument("--exit-code", metavar="CODE:SIGNAL",
                        help="sacct ExitCode as it prints it, e.g. 0:0, 1:0, 0:125 (a code "
                             "under 128 may stand for itself or 128 more: sacct prints 137 "
                             "as 9)")
    parser.add_argument("--elapsed", metavar="SECONDS",
                        help="run time in seconds (or sacct's [D-]HH:MM:SS)")
    parser.add_argument("--mem-limit", metavar="SIZE",
                        help="the job's memory limit: 400G, 950GB, 563200M, 1T")
    parser.add_argument("--sacct", metavar="FILE",
                        help="the job's saved `sacct --json -j JOB` (or `sacct --parsable2 "
                        "-j JOB` with its header): state, exit code, elapsed, MaxRSS and the "
                        "memory limit (AllocTRES / ReqTRES / ReqMem) for what no flag gives")
    parser.add_argument("--target-iter", metavar="N", type=_positive_int,
                        help="the iteration training should reach (default: as the log says)")
    parser.add_argument("--now", metavar="TIME",
                        help="judge a running job at this time: an ISO time, UTC unless it "
                        "gives its offset (2025-05-14T14:14:00-05:00), or epoch seconds; "
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


def state_flag(text: str | None) -> str | None:
    """`--state` as sacct prints State: `CANCELLED by 0` -> CANCELLED, a cut `OUT_OF_ME+`
    completed."""
    if text is None:
        return None
    state = normalize_state(text)
    if state not in KNOWN_STATES:
        raise UsageError(
            f"--state {text!r} is not a sacct state; use one of {', '.join(sorted(KNOWN_STATES))}"
        )
    return state


def exit_code_flag(text: str | None) -> tuple[int | None, int | None]:
    """`--exit-code` as sacct prints ExitCode, `CODE:SIGNAL` (e.g. `0:0`, `1:0`, `0:125`): a
    code under 128 may be that status or 128 more (`9:0` is how `sacct -P` prints a shell's
    137), so the accounting it gives is marked `exit_code_mod_128`."""
    if text is None:
        return None, None
    try:
        code, signal = parse_exit_code(text)
    except SlurmParseError:
        code = signal = None
    if code is None:
        raise UsageError(f"--exit-code {text!r} must be CODE:SIGNAL as sacct prints it, e.g. 1:0")
    return code, signal


def elapsed_flag(text: str | None) -> float | None:
    """`--elapsed`: seconds, or a Slurm duration as sacct prints Elapsed (`[D-]HH:MM:SS`)."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except SlurmParseError:
        seconds = None
    if seconds is None or not math.isfinite(seconds):
        raise UsageError(f"--elapsed {text!r} must be seconds (e.g. 10) or [D-]HH:MM:SS")
    return seconds


def sacct_flag(path: str, log: str) -> Accounting:
    """`--sacct FILE`: the accounting of the one job in a saved sacct output (JSON or
    `--parsable2` with its header, any Slurm version bot.core.slurm reads); with several
    jobs, the one the log's file name starts with (`88016.log`)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"--sacct {path!r}: cannot read it: {exc.strerror or exc}") from None
    try:
        records = (parse_sacct_json(text) if text.lstrip().startswith("{")
                   else parse_sacct_parsable(text))
    except (SlurmParseError, ValueError) as exc:
        raise UsageError(f"--sacct {path!r}: not sacct --json or --parsable2 output: {exc}"
                         ) from None
    if not records:
        raise UsageError(f"--sacct {path!r} lists no job")
    if len(records) == 1:
        return next(iter(records.values())).accounting()
    named = re.match(r"\d+", os.path.basename(log)) if log != "-" else None
    if named is not None and int(named[0]) in records:
        return records[int(named[0])].accounting()
    ids = ", ".join(str(i) for i in sorted(records))
    raise UsageError(f"--sacct {path!r} lists jobs {ids}: save one job (`sacct --json -j JOB`) "
                     "or name the log after its job id (JOB.log)")


def with_sacct(flags: Accounting, sacct: Accounting) -> Accounting:
    """The flags' accounting, each fact no flag gave taken from sacct (the exit code with
    whether sacct printed it modulo 128)."""
    values = {name: getattr(sacct, name) if getattr(flags, name) is None
              else getattr(flags, name) for name in Accounting.__dataclass_fields__}
    values["exit_code_mod_128"] = (sacct.exit_code_mod_128 if flags.exit_code is None
                                   else flags.exit_code_mod_128)
    return Accounting(**values)


def now_flag(text: str | None) -> float | None:
    """`--now`: epoch seconds, or an ISO time, at its offset from UTC if it gives one, as a log
    time's is read (bot.core.line_time.iso_time)."""
    if text is None:
        return None
    seconds: float | None
    try:
        seconds = float(text)
    except ValueError:
        seconds = iso_time(text.strip())
    if seconds is None or not math.isfinite(seconds):
        raise UsageError(f"--now {text!r} must be an ISO time, in UTC unless it gives its offset "
                         "(2025-05-14T19:14:00, 2025-05-14T14:14:00-05:00), or epoch seconds")
    return seconds


def catalogue_flag(paths: Sequence[str]) -> Catalogue:
    """The packaged catalogue with the `--catalogue` files merged over it."""
    try:
        return Catalogue.load(extra_paths=list(paths))
    except CatalogueError as exc:
        raise UsageError(f"--catalogue: {exc}") from None


def metric_regex_flag(patterns: Sequence[str]) -> list[re.Pattern[str]]:
    """The `--metric-regex` patterns, compiled and checked to name metric groups."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise UsageError(f"--metric-regex {pattern!r}: {exc}") from None
    try:
        MetricSeries(extra_patterns=compiled)
    except ValueError as exc:
        raise UsageError(f"--metric-regex: {exc}") from None
    return compiled


@dataclass
class LogInput:
    """What the LOG arguments resolve to."""

    analysis: LogAnalysis
    accounting: Accounting
    catalogue: Catalogue
    now: float | None
    target_iter: int | None


def read_log_arguments(args: argparse.Namespace) -> LogInput:
    """The arguments of `add_log_arguments` as values (UsageError naming a bad flag), then
    `read_log`."""
    state = state_flag(args.state)
    exit_code, signal = exit_code_flag(args.exit_code)
    elapsed = elapsed_flag(args.elapsed)
    now = now_flag(args.now)
    # as sacct --parsable2 prints it, 128 off a status of 128 or more (a hint, never deciding)
    accounting = Accounting(state=state, exit_code=exit_code, signal=signal, elapsed_s=elapsed,
                            mem_limit_bytes=size_flag("--mem-limit", args.mem_limit),
                            exit_code_mod_128=exit_code is not None)
    if args.sacct is not None:
        accounting = with_sacct(accounting, sacct_flag(args.sacct, args.log))
    # an exit status with no State: the job ended, with the State Slurm gives it (the report's too)
    return read_log(args.log, accounting.as_ended(), catalogue=catalogue_flag(args.catalogue),
                    metric_patterns=metric_regex_flag(args.metric_regex), now=now,
                    target_iter=args.target_iter, progress=cli_progress.wanted(args))


def read_log(
    log: str,
    accounting: Accounting,
    *,
    catalogue: Catalogue,
    metric_patterns: Sequence[re.Pattern[str]] = (),
    now: float | None = None,
    target_iter: int | None = None,
    progress: bool = False,
) -> LogInput:
    """Stream `log` (a path, or `-` for stdin) through analysis; UsageError when unreadable.
    With `progress`, a file over `progress.BIG_LOG_BYTES` is read under a progress bar."""
    try:
        if log == "-":
            analysis = analyze_file(sys.stdin.buffer, catalogue, extra_patterns=metric_patterns)
        else:
            with open(log, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                with cli_progress.bar(enabled=progress and size > cli_progress.BIG_LOG_BYTES,
                                      total=size, desc=os.path.basename(log), unit="B") as bar:
                    analysis = analyze_file(cli_progress.ReadProgress(stream, bar), catalogue,
                                            extra_patterns=metric_patterns)
    except OSError as exc:
        raise UsageError(f"cannot read log {log!r}: {exc.strerror or exc}") from None
    return LogInput(analysis, accounting, catalogue, now, target_iter)
