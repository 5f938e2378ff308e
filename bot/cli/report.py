"""`trainbot report LOG --out DIR`: what the bot would post about a log, offline, no Slack.

Writes message.json (the Block Kit payload exactly as chat.postMessage would send it:
{"blocks", "text"}), message.txt (a readable rendering) and the charts the log has data for:
rss.png, progress.png, loss.png. Exit 0 when written, 2 on bad flags or an unreadable log.
It reaches no cluster: a resume starts from the checkpoint the log's own save lines number,
else the message says the checkpoint is unknown (not looked up), never "from the start", and a
leak's memory arithmetic counts from iteration 0, saying it is the worst case, beside the need
from the last iteration the log reached (no checkpoint is later): the best case.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.cli import EXIT_OK, UsageError, load_config_arg
from bot.cli.log_input import LogInput, add_log_arguments, read_log_arguments
from bot.core.detectors import leak_trend
from bot.core.diagnose import NONE_CLASS
from bot.core.incident import (
    AttemptSummary,
    build_incident,
    build_root,
    build_warning,
)
from bot.core.models import Diagnosis
from bot.services.probes import probe_offer

NAME = "report"
HELP = "Render what trainbot would post about a log (Block Kit JSON, text, charts) to a folder."



def configure(parser: argparse.ArgumentParser) -> None:
    from bot.slack.render import languages

    add_log_arguments(parser)
    parser.add_argument("--lang", choices=languages(), default="en",
                        help="message language (default en)")
    parser.add_argument("--out", metavar="DIR", required=True,
                        help="folder to write message.json, message.txt and the PNGs into")
    parser.add_argument("--job-id", help="job id to show (default: the log's file name)")
    parser.add_argument("--recipe", default="offline", help="recipe name to show (with "
                        "--config: the recipe whose values a leak's DataLoader probe offer uses)")
    parser.add_argument("--config", metavar="PATH",
                        help="the bot's config file: a leak's DataLoader probe offer shows "
                        "--recipe's workdir, env setup and factory, and a --mem proposal "
                        "keeps under its policy.max_mem (default: none read)")
    parser.add_argument("--templates", metavar="DIR",
                        help="a site template folder (DIR/<name>.json.j2 wins per file)")


@dataclass
class Report:
    """What `report` renders: a template, its view, and chart PNGs by file name."""

    template: str
    view: Any
    diagnosis: Diagnosis
    charts: dict[str, bytes] = field(default_factory=dict)


def _last_checkpoint(series: Any, failed_line: int | None) -> tuple[int | None, float | None]:
    """The last save that finished (not one the job died in), as the log's own save lines
    number it: (iteration, end time); (None, None) when no save finished or the last one's
    lines name no iteration (then an earlier numbered save is not the newest checkpoint)."""
    last = None
    for w in series.save_windows():
        if w.end_line is None:
            continue
        if failed_line is not None and w.contains_line(failed_line):
            continue
        last = w
    if last is None or last.iteration is None:
        return None, None
    return last.iteration, last.end_time


def build_report(inp: LogInput, *, job_id: str, recipe: str, charts: bool = True,
                 lang: str = "en", probe: dict[str, Any] | None = None,
                 policy: Any = None) -> Report:
    """Diagnose the analysed log and build the message view and chart data (no I/O); the
    charts' words in `lang`; `probe` is the DataLoader probe a leak's remedy offers
    (bot.services.probes.probe_offer); `policy` the recipe's (its site cap on --mem).

    Offline, no cluster: the checkpoint a resume starts from is the one the log's own save
    lines number; when they number none, the message says the checkpoint is unknown (not
    looked up), never "from the start" (the watcher, which looks the checkpoint directory
    up, may find one: a pointer naming `final`, an earlier attempt's); a leak's memory
    arithmetic then counts from iteration 0, the worst case, and says so, with the need from
    the last iteration the log reached (policy.LeakRemedy.start_known)."""
    analysis, acct = inp.analysis, inp.accounting
    diagnosis = analysis.diagnose(acct, now=inp.now, target_iter=inp.target_iter)
    series = analysis.series
    now = inp.now if inp.now is not None else (series.last_time or 0.0)
    failed_line = diagnosis.evidence[-1].line if diagnosis.evidence else None
    ckpt_iter, ckpt_time = _last_checkpoint(series, failed_line)
    exit_code = (f"{acct.exit_code}:{acct.signal or 0}" if acct.exit_code is not None else None)
    m = diagnosis.metrics
    trend = leak_trend(series, acct.mem_limit_bytes)
    if diagnosis.class_id == "memory_leak":
        f = trend.finding if trend else None
        view: Any = build_warning(
            kind="leak", recipe=recipe, job_id=job_id, last_iter=m.last_iter, now=now,
            rss_now_bytes=f.rss_now_bytes if f else None, limit_bytes=acct.mem_limit_bytes,
            slope_gib_per_100_iter=m.rss_gib_per_100_iter,
            projected_oom_iter=m.projected_oom_iter, sec_per_iter=m.sec_per_iter,
        )
        template = "warning"
    elif diagnosis.class_id == NONE_CLASS:
        view = build_root(
            recipe=recipe,
            attempts=[AttemptSummary(job_id, acct.state or "RUNNING", m.last_iter)],
            target_iter=m.target_iter,
        )
        template = "root"
    else:
        view = build_incident(
            diagnosis, recipe=recipe, job_id=job_id, last_checkpoint_iter=ckpt_iter, now=now,
            last_checkpoint_time=ckpt_time, failed_at=series.last_time,
            state=acct.state, exit_code=exit_code, mem_limit_bytes=acct.mem_limit_bytes,
            whole_node_mem=acct.whole_node_mem, max_rss_bytes=acct.max_rss_bytes,
            mem_policy=policy, probe=probe,
            checkpoint_unknown="not_looked_up" if ckpt_iter is None else None,
        )
        template = "incident"
    report = Report(template, view, diagnosis)
    if charts:
        from bot.charts.series import cause_names, charts_for  # matplotlib: when drawing
        from bot.slack.render import translator

        report.charts = charts_for(series, diagnosis, job_id=job_id,
                                   mem_limit_bytes=acct.mem_limit_bytes,
                                   gettext=translator(lang).gettext,
                                   cause_name=cause_names(analysis.catalogue, lang))
    return report


def run(args: argparse.Namespace) -> int:
    from bot.services.ports import RenderError
    from bot.slack.render import blocks_to_text, render_blocks

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {str(out)!r} is a file; give a folder (it is created if missing)")
    if args.templates and not Path(args.templates).is_dir():
        raise UsageError(f"--templates {args.templates!r} is not a folder")
    # Everything that can fail on the input runs before --out is touched: a failed report
    # leaves no folder behind.
    config = load_config_arg(args, args.recipe) if args.config else None
    inp = read_log_arguments(args)
    job_id = args.job_id or (Path(args.log).name.split(".")[0] if args.log != "-" else "stdin")
    report = build_report(inp, job_id=job_id, recipe=args.recipe, lang=args.lang,
                          probe=probe_offer(config, args.recipe),
                          policy=config.policy_for(args.recipe) if config else None)
    try:
        blocks, text = render_blocks(report.template, args.lang, report.view,
                                     override_dir=args.templates)
    except RenderError as exc:
        raise UsageError(str(exc)) from None
    body = blocks_to_text(blocks, text)
    if report.charts:
        body += "\ncharts: " + ", ".join(sorted(report.charts)) + "\n"
    files = {
        "message.json": (json.dumps({"blocks": blocks, "text": text}, indent=2,
                                    ensure_ascii=False) + "\n").encode("utf-8"),
        "message.txt": body.encode("utf-8"),
        **report.charts,
    }
    _write_folder(out, files)
    written = ["message.json", "message.txt", *sorted(report.charts)]
    print(f"{report.diagnosis.class_id}: wrote {', '.join(written)} to {out}")
    return EXIT_OK


def _write_folder(out: Path, files: dict[str, bytes]) -> None:
    """Write `files` into `out`, creating it; a folder this call created is removed again if
    a write fails."""
    missing = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {str(out)!r}: cannot create it: {exc.strerror or exc}") from None
    try:
        for name, data in files.items():
            (out / name).write_bytes(data)
    except OSError as exc:
        if missing:
            shutil.rmtree(missing[-1], ignore_errors=True)
        raise UsageError(f"--out {str(out)!r}: cannot write {name}: {exc.strerror or exc}"
                         ) from None
