"""`trainbot diagnose LOG|-`: why did this job die (or what is about to go wrong)?

Reads the log as a stream (large chunks, bounded memory), adds the sacct facts given as
flags, and prints ONE diagnosis: a class id of docs/failures.md, the action, evidence lines,
the secondary classes and progress/memory metrics. Exit 0 when the class is `completed` or
`none` (running fine), 1 when it found a failure or a warning, 2 on bad flags or an
unreadable log.

`--json` prints one object: `class`, `title` (the headline the thread shows: the catalogue's,
a site file's own, or the narrower cause's, e.g. a missing ptxas; null for `none`), `retryable`,
`action`, `charges_budget`, `evidence` ([{line, text}]), `hint` (the explanation as the thread
words it: this case's figures, then the catalogue's hint), `detail` (those figures as data,
with their `kind`), `secondary`, `metrics`, `upstream`, `during_checkpoint_save`,
`decided_by`, `leak_fit` and `node` (bot.core.models.Diagnosis.to_json).

`--lang` (default en) words the title and the explanation (`hint`) in a message language, as a
thread in that language does (templates/locale), in the summary and in the JSON alike, and the
summary's line saying what decided the diagnosis (the incident's confidence line); the
summary's own labels, the class ids and the evidence lines stay as they are.

"Now" for a running job: an offline log is judged at its own last timestamp (the latest
time printed in it), so a log copied hours later does not look hung; pass `--now` (an ISO
time, UTC unless it gives its offset as `2025-05-14T14:14:00-05:00`, or epoch seconds) to
judge it at another moment, e.g. the wall clock when the job is still running.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from bot.cli import EXIT_FAILED, EXIT_OK
from bot.cli.log_input import add_log_arguments, read_log_arguments
from bot.core.catalogue import Catalogue
from bot.core.diagnose import NONE_CLASS
from bot.core.models import Diagnosis

NAME = "diagnose"
HELP = "Diagnose a training log with its sacct state: failure class, evidence, metrics."

def configure(parser: argparse.ArgumentParser) -> None:
    from bot.slack.render import languages

    add_log_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--lang", choices=languages(), default="en",
                        help="language of the title and the explanation (default en)")


def run(args: argparse.Namespace) -> int:
    log = read_log_arguments(args)
    diagnosis = log.analysis.diagnose(log.accounting, now=log.now, target_iter=log.target_iter)
    if args.json:
        from bot.slack.render import explain, explain_title

        facts = diagnosis.to_json()
        # "title" and "hint" as a person reads them in the thread: the headline, and this
        # case's figures then the hint; a running job with nothing to report has no title
        title = explain_title(diagnosis, args.lang) if diagnosis.title else None
        print(json.dumps({"class": facts["class"], "title": title, **facts,
                          "hint": explain(diagnosis, args.lang)}, indent=2,
                         ensure_ascii=False))
    else:
        print(render_summary(diagnosis, log.catalogue, log_name=args.log, lang=args.lang))
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


def render_summary(d: Diagnosis, catalogue: Catalogue, *, log_name: str = "",
                   lang: str = "en") -> str:
    """The short human summary printed without --json: its title and explanation in `lang`."""
    from bot.slack.render import explain, explain_decided, explain_title, format_duration

    cls = catalogue.classes.get(d.class_id)
    title = explain_title(d, lang) if cls is not None else "running, nothing to report"
    lines = [f"{log_name}: {d.class_id} - {title}" if log_name else f"{d.class_id} - {title}"]
    budget = "counts against" if d.charges_budget else "does not count against"
    retry = "retryable" if d.retryable else "not retried automatically"
    lines.append(f"action: {d.action} ({retry}; {budget} the retry budget)")
    decided = explain_decided(d, lang)  # the incident's confidence line
    if decided:
        lines.append(decided)
    if d.upstream is not None:
        u = d.upstream
        lines.append(
            f"upstream cause: {u.class_id} - no progress after iteration {u.last_iter} from "
            f"{format_log_time(u.started_at)}, {format_duration(u.seconds_before_failure or 0)} "
            "before "
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
        progress.append(f"stalled {format_duration(m.stall_seconds)}")
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
    lines.append(f"hint: {explain(d, lang)}")
    return "\n".join(lines)



