"""Which rank is stuck, and where: a running job's Python stacks on every node, grouped, for
`trainbot stacks`, `/train stacks` and the thread of a stalled run (beside the watcher's tick,
with a deadline, never delaying it); after an NCCL timeout, what the ranks' flight-recorder
dumps say.

`StackCollector.collect` finds py-spy on the cluster (the site's path, or trainbot's own
copy placed by bot.cluster.pyspy: once per cluster and bot, in the background, begun
ahead of need by `Forensics.prepare`; a collection waits for it at most half its deadline),
runs bot.probes.stacks through srun and returns a
bot.core.stacks.StackReport; every failure is a report with its cause, never an exception
(but ClusterUnavailable and LeaseLost). `post_stacks` puts the summary (templates/stacks) and
the full dump (a file) in a run's thread. `Forensics` runs collect + post in the background
when the watcher raises a stall, and reads the flight-recorder dumps (`read_flight_recorder`)
when a job of a recipe with `nccl_flight_recorder` died of an NCCL timeout.
"""

from __future__ import annotations

import datetime as dt
import logging
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, wait
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.cluster.errors import ClusterError, ClusterUnavailable, said
from bot.cluster.pyspy import PySpyUnavailable, place_pyspy
from bot.config import Config
from bot.core.flight_recorder import (
    MAX_DUMP_BYTES,
    DumpRefused,
    FlightRecorderSummary,
    dump_too_large,
    load_dump,
    rank_of_file,
    rank_trace,
    summarize_dumps,
)
from bot.core.stacks import (
    FAILED,
    JOB_ENDED,
    NO_PROCESSES,
    PERMISSION_DENIED,
    PYSPY_ABSENT,
    PYSPY_NOT_PLACED,
    PYSPY_UNSEEN,
    TIMED_OUT,
    ProcessFailure,
    StackReport,
)
from bot.core.text import N_
from bot.probes.stacks import collect_stacks
from bot.services.fencing import read_only
from bot.services.ports import SFTP, BotContext, ClusterSessions, LeaseLost
from bot.services.pyspy_placements import PySpyPlacements
from bot.services.threads import Attachment, has_thread, post_or_keep, render

if TYPE_CHECKING:
    from bot.core.sampler_series import SamplerSeries
    from bot.core.slurm.records import JobRecord

log = logging.getLogger(__name__)


# Running to Slurm, but on the way out: the job's processes are being killed.
ENDING_STATES = frozenset({"COMPLETING", "SIGNALING", "STAGE_OUT"})


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# The share of a collection's deadline (the cluster's `stacks_timeout`) that waiting for
# trainbot's py-spy to be placed may take; srun has the rest.
PLACEMENT_SHARE = 0.5


class PlacementTimedOut(Exception):
    """Placing py-spy outlasted the collection's wait for it (it goes on in the background)."""


class StackCollector:
    """Collects stacks on the configured clusters through `clusters`; trainbot's py-spy is
    placed once per cluster and `placements` (the bot's: its context's, BotContext.pyspy,
    shared by the watcher's forensics and `/train stacks`), ahead of need when the watcher
    first polls a cluster with jobs (`prepare`). A collection, placement included, keeps to
    the cluster's `stacks_timeout`: it waits for a placement under way at most
    PLACEMENT_SHARE of it and says so when py-spy is not there by then."""

    def __init__(self, config: Config, clusters: ClusterSessions,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic, *,
                 placements: PySpyPlacements | None = None,
                 wait_for_placement: bool = False,
                 on_copy: Callable[[str, str], None] | None = None) -> None:
        self.config, self.clusters, self.clock = config, clusters, clock
        self.monotonic = monotonic
        # a one-shot command's (`trainbot stacks`): no later collection would use a
        # placement left under way, so it waits for it (each of its steps has its own bound)
        # and the collection keeps its whole stacks_timeout
        self.wait_for_placement = wait_for_placement
        # the process's (the bot's context's, BotContext.pyspy), else this collector's own
        self._placements = placements if placements is not None else \
            PySpyPlacements(monotonic=monotonic)
        # told (cluster, path) when a placement it begins copies py-spy (not when the copy
        # there is only checked): `trainbot stacks` says the collection waits for the copy
        self.on_copy = on_copy

    def prepare(self, cluster: str) -> Future[str] | None:
        """Begin placing trainbot's py-spy on `cluster` unless the site configured its own
        (None then); its future (see PySpyPlacements.start)."""
        if self.config.clusters[cluster].py_spy:
            return None
        def copying(path: str) -> None:
            self._placements.copying(cluster)
            if self.on_copy is not None:
                self.on_copy(cluster, path)

        return self._placements.start(cluster, lambda: place_pyspy(
            read_only(self.clusters.runner(cluster)), self.clusters.sftp(cluster),
            on_copy=copying))

    def ready_path(self, cluster: str) -> str | None:
        """py-spy's path on `cluster` when known without waiting: the configured one, or
        trainbot's copy placed earlier."""
        return self.config.clusters[cluster].py_spy or self._placements.placed(cluster)

    def pyspy_path(self, cluster: str, wait_s: float | None = None) -> str:
        """py-spy's path on `cluster`: the configured one, else trainbot's verified copy,
        waiting at most `wait_s` for its placement (raises PlacementTimedOut,
        PySpyUnavailable, ClusterError)."""
        known = self.ready_path(cluster)
        if known:
            return known
        future = self.prepare(cluster)
        assert future is not None
        wait([future], timeout=wait_s)
        if not future.done():
            raise PlacementTimedOut(cluster)
        return future.result()

    def collect(self, cluster: str, job_id: str, *,
                trainer_pids: Mapping[str, Iterable[int]] | None = None) -> StackReport:
        """The job's stacks now, or why not (see module doc), within the cluster's
        `stacks_timeout`, placing py-spy included."""
        cfg = self.config.clusters[cluster]
        collected_at = _utc(self.clock())
        timeout_s = cfg.stacks_timeout
        began = self.monotonic()
        pyspy = self.ready_path(cluster)
        try:
            if not pyspy:
                started = self.monotonic()
                wait_s = None if self.wait_for_placement else \
                    cfg.stacks_timeout * PLACEMENT_SHARE
                try:
                    pyspy = self.pyspy_path(cluster, wait_s)
                except PlacementTimedOut:
                    return StackReport(job_id, None, ProcessFailure(
                        "", None, None, PYSPY_NOT_PLACED, N_(
                            "py-spy could not be placed within %(seconds)s s: copying "
                            "trainbot's py-spy to the cluster is still under way; the next "
                            "collection uses it once it is there.",
                            seconds=f"{wait_s:g}")))
                if wait_s is not None:
                    timeout_s = cfg.stacks_timeout - (self.monotonic() - started)
        except PySpyUnavailable as exc:
            return StackReport(job_id, None, ProcessFailure("", None, None, PYSPY_ABSENT,
                                                            said(exc)))
        except ClusterUnavailable:
            raise
        except (ClusterError, OSError) as exc:
            return StackReport(job_id, None, ProcessFailure(
                "", None, None, PYSPY_ABSENT, N_(
                "could not place py-spy on the cluster: %(error)s", error=said(exc))))
        try:
            report = collect_stacks(read_only(self.clusters.runner(cluster)), job_id, pyspy,
                                    timeout_s=timeout_s, collected_at=collected_at,
                                    native=cfg.stacks_native, trainer_pids=trainer_pids)
        except ClusterUnavailable:
            raise
        except ClusterError as exc:
            report = StackReport(job_id, None, ProcessFailure("", None, None, FAILED,
                                                              said(exc)))
        if not cfg.py_spy:
            report = self._checked_copy(cluster, pyspy, report, None if
                                        self.wait_for_placement else began + cfg.stacks_timeout)
        return self._ended_meanwhile(cluster, report)

    def _checked_copy(self, cluster: str, pyspy: str, report: StackReport,
                      deadline: float | None = None) -> StackReport:
        """The report of a collection that ran trainbot's own copy `pyspy`: found absent on
        the nodes, it is checked on the login node (placed again when gone:
        PySpyPlacements.forget), in this collection when no check is known yet (`_checked_now`,
        until `deadline`); a copy intact there that the nodes miss is said so at once
        (`pyspy_unseen`), and remembered a while, not checked at every collection."""
        if report.problem is None or report.problem.cause in (NO_PROCESSES, PERMISSION_DENIED):
            self._placements.found(cluster, pyspy)  # the nodes found it (checked first)
        elif report.problem.cause == PYSPY_ABSENT:
            if self._placements.forget(cluster, pyspy) or \
                    self._checked_now(cluster, pyspy, deadline):  # only the site's py_spy helps
                return replace(report, problem=replace(report.problem, cause=PYSPY_UNSEEN,
                                                       detail=N_(
                    "trainbot's copy %(path)s is on the login node, but the nodes do not find "
                    "it or cannot run it: a home not shared with the nodes, or mounted "
                    "noexec", path=pyspy)))
        else:  # timed out, failed, the job ended: nothing said of the copy
            self._placements.settled(cluster, pyspy)
        return report

    def _checked_now(self, cluster: str, pyspy: str, deadline: float | None) -> bool:
        """A miss of `pyspy` that `forget` could not explain (the first after a start, a
        one-shot command's): the copy is checked on the login node now (sha256 only; gone, it
        is placed again), waiting until `deadline` (None: a one-shot command's, as long as the
        placement takes). True when it is there intact, so the nodes do not see it."""
        if self._placements.placed(cluster) is not None:
            return False  # kept: another path placed since, or a check not due
        future = self.prepare(cluster)
        if future is None:
            return False
        wait([future], timeout=None if deadline is None else
             max(0.0, deadline - self.monotonic()))
        if not future.done() or future.exception() is not None or future.result() != pyspy:
            return False
        return self._placements.unseen_after_check(cluster, pyspy)

    def _ended_meanwhile(self, cluster: str, report: StackReport) -> StackReport:
        """A collection that failed without a clear cause (srun's task terminated, a
        timeout, no process left) while the job ended: say the job ended, as Slurm says."""
        problem = report.problem
        if problem is None or problem.cause not in (FAILED, TIMED_OUT, NO_PROCESSES):
            return report
        try:
            record = self.clusters.slurm(cluster).job(int(report.job_id))
        except ClusterError:
            return report
        if record is not None and record.is_running and record.state not in ENDING_STATES:
            return report
        state = record.state if record is not None else "unknown to Slurm"
        return replace(report, problem=ProcessFailure(
            problem.host, None, None, JOB_ENDED, f"job {report.job_id} is {state}"))


def sampler_hint(record: JobRecord | None,
                 sampler: SamplerSeries | None) -> dict[str, tuple[int, ...]] | None:
    """The trainer PIDs the sampler saw, by node: only for a one-node job (the sampler runs
    on the batch host; its lines do not name it)."""
    if record is None or sampler is None or not record.node or not sampler.trainer_pids:
        return None
    if any(c in record.node for c in "[],"):
        return None
    return {record.node: sampler.trainer_pids}


def dump_key(key: str) -> str:
    """The key of the full dump's file shared after the stacks post `key`."""
    return f"{key}:dump"


def post_stacks(ctx: BotContext, chain_id: int | None, key: str, report: StackReport,
                recipe: str | None = None) -> bool:
    """The summary (or the one line saying why there is none) under `key` in the chain's
    thread, and the full dump as a file (`key:dump`, titled in the recipe's language:
    templates/file_title); True once reported: posted, or, when
    the post failed, kept for the thread with the dump (bot.services.threads.post_or_keep:
    the `prompts` job posts it later, then the file), so they are not collected again; False
    when there is no thread. The post says the file follows; kept without it (too long to
    keep) it says so instead, and a failed upload is followed by one line in the thread
    saying the file could not be shared and how to collect the stacks again."""
    if not has_thread(ctx, chain_id):
        return False
    assert chain_id is not None and ctx.sink is not None
    view = report.to_view()
    blocks, text = render(ctx, "stacks", recipe, {**view, "file_in": "post"})
    dump = Attachment(dump_key(key), report.dump, f"stacks-{report.job_id}.txt", render(
        ctx, "file_title", recipe, {"kind": "stacks", "job_id": report.job_id})[1],
        unshared=render(ctx, "stacks", recipe, {**view, "unshared": True})[1]
    ) if report.dump else None
    post_or_keep(ctx, chain_id, key, blocks, text, attachment=dump, unkept=render(
        ctx, "stacks", recipe, {**view, "file_in": "dropped"}))
    return True  # posted, or kept (posted with its file by the `prompts` job)


class Forensics:
    """Collect and post a stalled job's stacks, or a dead job's flight-recorder summary, in
    the background (at most `workers` at a time), so the watcher's tick never waits for srun,
    py-spy or SFTP. Each collection has the cluster's `stacks_timeout`; a collection that
    fails posts its one line."""

    def __init__(self, ctx: BotContext, collector: StackCollector | None = None, *,
                 workers: int = 2) -> None:
        self.ctx = ctx
        self.collector = collector or StackCollector(ctx.config, ctx.clusters, ctx.clock,
                                                     placements=ctx.pyspy)
        self._slots = threading.BoundedSemaphore(workers)
        self._pending: set[Future[bool]] = set()

    def prepare(self, cluster: str) -> None:
        """Begin placing trainbot's py-spy on `cluster` ahead of a stall's collection (the
        watcher's first poll of the cluster with jobs), so that collection need not."""
        self.collector.prepare(cluster)

    def stacks(self, cluster: str, job_id: str, chain_id: int | None, recipe: str | None,
               key: str, *, record: JobRecord | None = None,
               sampler: SamplerSeries | None = None) -> Future[bool]:
        """Begin collecting the stacks; the future says whether the thread got its post."""
        hint = sampler_hint(record, sampler)
        return self._submit(self._run, cluster, job_id, chain_id, recipe, key, hint)

    def flight_recorder(self, cluster: str, job_id: str, chain_id: int | None, recipe: str,
                        key: str, *, started_at: float | None) -> Future[bool]:
        """Begin reading the job's flight-recorder dumps (its recipe's directory)."""
        return self._submit(self._run_flight_recorder, cluster, job_id, chain_id, recipe, key,
                            started_at)

    def _submit(self, fn: Callable[..., bool], *args: object) -> Future[bool]:
        """Run `fn(*args)` on a daemon thread once one of the `workers` slots is free: a
        collection under way never holds the process when it stops."""
        future: Future[bool] = Future()
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

        def run() -> None:
            with self._slots:
                if not future.set_running_or_notify_cancel():
                    return
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - handed to the future
                    future.set_exception(exc)

        threading.Thread(target=run, name="forensics", daemon=True).start()
        return future

    def _run_flight_recorder(self, cluster: str, job_id: str, chain_id: int | None,
                             recipe: str, key: str, started_at: float | None) -> bool:
        directory = self.ctx.config.recipe(recipe).nccl_flight_recorder
        if directory is None or not has_thread(self.ctx, chain_id):
            return False
        assert chain_id is not None
        try:
            summary = read_flight_recorder(self.ctx.clusters.sftp(cluster), directory,
                                           since=started_at)
            view = {"job_id": job_id, "dir": directory, "error": None,
                    "summary": summary.to_view() if summary is not None else None}
        except LeaseLost:
            raise
        except (ClusterError, OSError) as exc:
            view = {"job_id": job_id, "dir": directory, "error": said(exc), "summary": None}
        try:
            blocks, text = render(self.ctx, "flight_recorder", recipe, view)
            post_or_keep(self.ctx, chain_id, key, blocks, text)
            return True  # posted, or kept (posted by the `prompts` job): not read again
        except LeaseLost as exc:
            log.info("%s: not posting the flight recorder: %s", key, exc)
        except Exception:  # noqa: BLE001 - a background reader must never die silently
            log.exception("%s: posting the flight recorder of job %s failed", key, job_id)
        return False

    def _run(self, cluster: str, job_id: str, chain_id: int | None, recipe: str | None,
             key: str, hint: dict[str, tuple[int, ...]] | None) -> bool:
        try:
            try:
                report = self.collector.collect(cluster, job_id, trainer_pids=hint)
            except ClusterError as exc:  # unreachable: said in the thread like any failure
                report = StackReport(job_id, None, ProcessFailure("", None, None, FAILED,
                                                                  said(exc)))
            return post_stacks(self.ctx, chain_id, key, report, recipe)
        except LeaseLost as exc:
            log.info("%s: not posting stacks: %s", key, exc)
        except Exception:  # noqa: BLE001 - a background collection must never die silently
            log.exception("%s: collecting the stacks of job %s failed", key, job_id)
        return False

    def wait(self, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) for the collections under way; True when all ended."""
        _done, not_done = wait(list(self._pending), timeout=timeout_s)
        return not not_done

    def close(self) -> None:
        """Cancel the collections not started yet (those under way end by their deadline)."""
        for future in list(self._pending):
            future.cancel()

MAX_DUMPS = 1024


def read_flight_recorder(sftp: SFTP, directory: str, *,
                         since: float | None) -> FlightRecorderSummary | None:
    """The ranks' dumps in `directory` written since the job started (older ones are another
    job's), summarized; None when there is none. A dump that cannot be read is named in the
    summary (`unread`), never unpickled as anything but plain data."""
    traces, unread = [], []
    for attr in sftp.listdir_attr(directory)[:MAX_DUMPS]:
        rank = rank_of_file(attr.filename)
        if rank is None:
            continue
        if since is not None and (attr.st_mtime or 0) < since - 60:
            continue
        if (attr.st_size or 0) > MAX_DUMP_BYTES:
            unread.append((rank, dump_too_large(attr.st_size or 0)))
            continue
        try:
            with sftp.open(posixpath.join(directory, attr.filename), "rb") as f:
                data = f.read(MAX_DUMP_BYTES + 1)
            traces.append(rank_trace(rank, load_dump(data)))
        except DumpRefused as exc:
            unread.append((rank, said(exc)))
    if not traces and not unread:
        return None
    return summarize_dumps(traces, unread)
