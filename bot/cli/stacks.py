"""`trainbot stacks JOB`: which rank of a running job is stuck, and where (py-spy on every
node through srun, stacks grouped; bot.services.stacks)."""

from __future__ import annotations

import argparse
import json
import sys

from bot.cli import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_config_argument,
    load_config_arg,
)

NAME = "stacks"
HELP = "Dump the Python stacks of a running job's ranks on every node, grouped (py-spy)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the Slurm job id of a running job, or "
                        "an array task as 123_4")
    parser.add_argument("--cluster", help="cluster name from the config (default: the one "
                        "watching the job, else the only configured cluster)")
    parser.add_argument("--summary", action="store_true",
                        help="print only the grouped summary, not every rank's stack")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_config_argument(parser)


def _cluster(config: object, args: argparse.Namespace) -> str:
    clusters = list(config.clusters)  # type: ignore[attr-defined]
    if args.cluster is not None:
        if args.cluster not in clusters:
            raise UsageError(f"unknown cluster {args.cluster!r}; configured: "
                             f"{', '.join(clusters) or 'none'}")
        return str(args.cluster)
    try:
        from bot.store import Store

        with Store.open(config.store.url) as store:  # type: ignore[attr-defined]
            for name in clusters:
                if store.watched_jobs.get(name, args.job) is not None:
                    return name
    except Exception:  # noqa: BLE001 - no readable store: fall back to the only cluster
        pass
    if len(clusters) != 1:
        raise UsageError(f"job {args.job} is not watched here: say which cluster with "
                         f"--cluster ({', '.join(clusters)})")
    return clusters[0]


def _task_id(tasks: dict, task: int, shown: str, cluster: str) -> str:
    """The raw job id of array task `shown`, which must have started."""
    for rec in tasks.values():
        if rec.array_task_id == task:
            return str(rec.job_id)
    raise UsageError(f"Slurm on {cluster} knows no started task {shown}")


def _placing(cluster: str, path: str) -> None:
    print(f"trainbot stacks: placing trainbot's py-spy on cluster {cluster!r} (about 8 MB, "
          "once per version); the collection follows", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from bot.cluster.errors import ClusterUnavailable, HostKeyRejected
    from bot.cluster.sessions import ClusterSessions
    from bot.core.slurm.job_ref import JobIdError, parse_job_ref
    from bot.services.stacks import StackCollector
    from bot.slack.render import render_blocks

    try:
        ref = parse_job_ref(args.job)
    except JobIdError as exc:
        raise UsageError(f"JOB: {exc}") from None
    config = load_config_arg(args)
    cluster = _cluster(config, args)
    with ClusterSessions(config) as sessions:
        try:
            job = str(ref.job_id) if ref.array_task is None else \
                _task_id(sessions.slurm(cluster).array_tasks(ref.job_id), ref.array_task,
                         ref.display, cluster)
            # said only when a copy is placed, not when the one there is only checked
            collector = StackCollector(config, sessions, wait_for_placement=True,
                                       on_copy=_placing)
            report = collector.collect(cluster, job)
        except (ClusterUnavailable, HostKeyRejected) as exc:
            print(f"trainbot stacks: cluster {cluster!r} unreachable: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_view(), indent=2))
    else:
        _blocks, text = render_blocks("stacks", config.slack.lang, report.to_view())
        print(text)
        if report.dump and not args.summary:
            print()
            print(report.dump, end="")
    return EXIT_OK if report.problem is None else EXIT_FAILED
