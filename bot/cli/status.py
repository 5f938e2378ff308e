"""`trainbot status [RECIPE|JOBID|JOBID_TASK]`: trainbot's jobs as store and Slurm see them."""

from __future__ import annotations

import argparse

from bot.cli import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_config_argument,
    load_config_arg,
    open_store,
)

NAME = "status"
HELP = "Show watched jobs, a recipe's latest run chain, or one job (Slurm state merged in)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="RECIPE|JOBID", nargs="?",
        help="a recipe name, a Slurm job id, or an array task as 123_4"
    )
    add_config_argument(parser)


def run(args: argparse.Namespace) -> int:
    from bot.cluster.sessions import ClusterSessions
    from bot.services import UsageProblem
    from bot.services.status import job_status

    config = load_config_arg(args)
    with open_store(config) as store, ClusterSessions(config) as sessions:
        try:
            report = job_status(config, args.target, store=store, slurm_for=sessions.slurm)
        except UsageProblem as exc:
            raise UsageError(str(exc)) from None
    print(format_report(report))
    if report.unreachable and not any(r.record for r in report.rows):
        return EXIT_USAGE
    if args.target is not None and not report.rows:
        return EXIT_FAILED  # the job or recipe run asked about was not found
    return EXIT_OK


def format_report(report: object) -> str:
    """The report as a plain-text table (the Slack side renders its own blocks)."""
    from bot.core.slurm.values import format_duration

    lines = [f"{report.title}:"]  # type: ignore[attr-defined]
    for cluster, error in report.unreachable.items():  # type: ignore[attr-defined]
        lines.append(f"  cluster {cluster} unreachable (its states are the last stored): {error}")
    header = ("JOB", "RECIPE", "#", "STATE", "REASON/EXIT", "ELAPSED", "NODE", "ITER", "CAUSE")
    table = [header]
    for row in report.rows:  # type: ignore[attr-defined]
        rec = row.record
        attempt = row.attempt
        detail = ""
        if rec is not None:
            if rec.is_pending or rec.is_held:
                detail = rec.reason or ""
            elif rec.exit_code is not None:
                detail = f"{rec.exit_code}:{rec.signal or 0}"
        elapsed = format_duration(rec.elapsed_s) if rec is not None and rec.elapsed_s else ""
        iters = ""
        if attempt is not None and (attempt.start_iter or attempt.last_iter):
            iters = f"{attempt.start_iter or 0}→{attempt.last_iter or '?'}"
        table.append(
            (
                row.label,
                row.recipe or "-",
                str(attempt.attempt_no) if attempt else "-",
                row.state,
                detail,
                elapsed,
                (rec.node or "") if rec is not None else "",
                iters,
                (attempt.cause or "") if attempt else "",
            )
        )
    if len(table) > 1:
        widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
        for r in table:
            lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    if report.note:  # type: ignore[attr-defined]
        lines.append(f"  {report.note}")  # type: ignore[attr-defined]
    for job, text in report.unsaid:  # type: ignore[attr-defined]
        lines.append(f"  never said in the thread of job {job} (Slack did not take it): {text}")
    for job, text in report.waiting:  # type: ignore[attr-defined]
        lines.append(f"  not yet said in the thread of job {job} (it has not opened; said "
                     f"when it opens): {text}")
    return "\n".join(line.rstrip() for line in lines)
