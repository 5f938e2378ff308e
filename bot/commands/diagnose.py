"""`trainbot diagnose LOG|-`: why did this job die (or what is about to go wrong)?

Reads the log as a stream (large chunks, bounded memory), adds the sacct facts given as
flags, and prints ONE diagnosis: a class id from FAILURES.md, the action, evidence lines,
the secondary classes and progress/memory metrics. Exit 0 when the class is `completed` or
`none` (running fine), 1 when it found a failure or a warning, 2 on bad flags or an
unreadable log.

"Now" for a running job: an offline log is judged at its own last timestamp (the latest
time printed in it), so a log copied hours later does not look hung; pass `--now` (ISO
time or epoch seconds, UTC, the log's clock) to judge it at another moment, e.g. the wall
clock when the job is still running.
"""

from __future__ import annotations

import argparse
import calendar
import json
import re
import sys
from datetime import UTC, datetime

from bot.cli import EXIT_FAILED, EXIT_OK, UsageError
from bot.core.catalogue import Catalogue, CatalogueError
from bot.core.diagnose import NONE_CLASS, analyze_file
from bot.core.metrics import MetricSeries
from bot.core.models import Accounting, Diagnosis
from bot.core.units import parse_size

NAME = "diagnose"
HELP = "Diagnose a training log with its sacct state: failure class, evidence, metrics."

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


def configure(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--json", action="store_true", help="print one JSON object")


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


def run(args: argparse.Namespace) -> int:
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
    try:
        if args.log == "-":
            analysis = analyze_file(sys.stdin.buffer, catalogue, extra_patterns=extra)
        else:
            with open(args.log, "rb") as stream:
                analysis = analyze_file(stream, catalogue, extra_patterns=extra)
    except OSError as exc:
        raise UsageError(f"cannot read log {args.log!r}: {exc.strerror or exc}") from None
    diagnosis = analysis.diagnose(accounting, now=now, target_iter=args.target_iter)
    if args.json:
        print(json.dumps(diagnosis.to_json(), indent=2))
    else:
        print(render_summary(diagnosis, catalogue, log_name=args.log))
    return EXIT_OK if diagnosis.class_id in ("completed", NONE_CLASS) else EXIT_FAILED


def format_log_time(t: float | None) -> str:
    """A log time for humans: ISO (UTC) for epoch times, HH:MM:SS for date-less logs."""
    if t is None:
        return "?"
    if t > 10 * 86400:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")
    day, sod = divmod(int(t), 86400)
    hms = f"{sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}"
    return hms if day == 0 else f"day {day + 1} {hms}"


def render_summary(d: Diagnosis, catalogue: Catalogue, *, log_name: str = "") -> str:
    """The short human summary printed without --json."""
    cls = catalogue.classes.get(d.class_id)
    title = cls.title if cls is not None else "running, nothing to report"
    lines = [f"{log_name}: {d.class_id} - {title}" if log_name else f"{d.class_id} - {title}"]
    budget = "counts against" if d.charges_budget else "does not count against"
    retry = "retryable" if d.retryable else "not retried automatically"
    lines.append(f"action: {d.action} ({retry}; {budget} the retry budget)")
    if d.upstream is not None:
        u = d.upstream
        lines.append(
            f"upstream cause: {u.class_id} - no progress after iteration {u.last_iter} from "
            f"{format_log_time(u.started_at)}, {u.seconds_before_failure or 0:.0f} s before "
            "the failure"
        )
    if d.during_checkpoint_save:
        lines.append("died while saving a checkpoint: that checkpoint is partial")
    m = d.metrics
    progress = []
    if m.last_iter is not None:
        progress.append(f"iteration {m.last_iter}" + (f"/{m.target_iter}" if m.target_iter
                                                      else ""))
    if m.sec_per_iter is not None:
        progress.append(f"{m.sec_per_iter:.2f} s/iter")
    if m.last_loss is not None:
        progress.append(f"loss {m.last_loss:.4g}")
    if m.stall_seconds is not None:
        progress.append(f"stalled {m.stall_seconds:.0f} s")
    if progress:
        lines.append("progress: " + ", ".join(progress))
    if m.rss_gib_per_100_iter is not None:
        mem = f"memory: host RSS {m.rss_gib_per_100_iter:+.2f} GiB per 100 iterations"
        if m.projected_oom_iter is not None:
            mem += f", projected to reach the limit near iteration {m.projected_oom_iter}"
        lines.append(mem)
    if d.secondary:
        lines.append("also seen: " + ", ".join(d.secondary))
    if d.evidence:
        lines.append("evidence:")
        lines += [f"  {e.line}: {e.text[:200]}" for e in d.evidence]
    lines.append(f"hint: {d.hint}")
    return "\n".join(lines)



