"""A file the batch's bytes did not reach this tick (more files than a bounded batch asks
for: bot.core.tail.read_tails' `skipped`) is unread, not read and found quiet: its job is not
judged on what the file said before (no false hang for a job that prints on), and a log
restored from the store after a restart keeps its warm-up until it is actually read."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from fakes import T0, FakeSFTP, FakeSlurm, RecordingEventSink
from support.watcher import add_job, make_watcher

from bot.cluster.errors import ChannelClosed
from bot.core.slurm.records import JobRecord
from bot.core.tail import ReadBatch, ReadRequest
from bot.store import Store


class Bounded:
    """The fake reader with the batch bound a slow link leaves (ShellTailReader.batch_bytes):
    a few files' minimums per batch."""

    def __init__(self, sftp: FakeSFTP, limit: int | None) -> None:
        self.sftp, self.limit = sftp, limit

    def read(self, requests: Sequence[ReadRequest]) -> ReadBatch:
        return self.sftp.read(requests)

    def batch_bytes(self, files: int) -> int | None:
        return self.limit


def _progress(t: float, it: int) -> bytes:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)).encode()
    return stamp + (b".000 | INFO | iter: %d/8000 | loss: 0.6 | 4.50 s/iter | rss: 44.0 GiB "
                    b"| cpu: 92%%\n" % it)


def _jobs(store: Store, slurm: FakeSlurm, first: int, n: int) -> dict[int, str]:
    paths = {}
    for jid in range(first, first + n):
        add_job(store, jid)
        paths[jid] = f"/scratch/mix/logs/mix-{jid}.out"
        slurm.records[jid] = JobRecord(job_id=jid, state="RUNNING", stdout_path=paths[jid],
                                       start_time=T0, mem_limit_bytes=950 << 30)
    return paths


def test_jobs_printing_on_are_not_warned_hung_when_the_batch_reaches_few_logs_a_tick() -> None:
    """24 jobs printing a line every 4.5 s, batches of 16 KiB (three logs' minimums): each
    log is read one tick in eight, and its job is judged only then, never on lines minutes
    old (it was warned `hang`, with a Cancel-and-resume offer)."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        paths = _jobs(store, slurm, 90000, 24)
        watcher = make_watcher(store, slurm, Bounded(sftp, 16 << 10), sink)  # type: ignore[arg-type]
        it = dict.fromkeys(paths, 0)
        for k in range(12):
            now = T0 + 60 * k
            sftp.clock = now
            for jid, path in paths.items():
                lines = b""
                while T0 + it[jid] * 4.5 <= now:
                    lines += _progress(T0 + it[jid] * 4.5, 1000 + it[jid])
                    it[jid] += 1
                sftp.append(path, lines)
            watcher.tick(now)
        assert [(e.kind, e.job_id) for e in sink.events] == []
        assert all(watcher._jobs[jid].log is not None for jid in paths)  # every log read


def test_a_restored_log_the_batch_does_not_reach_keeps_its_warm_up() -> None:
    """After a restart on a slow link, a log the first tick's batch does not reach is read on
    a later tick with its warm-up window: its job is judged against its last progress line
    (it was taken as read and empty: no progress line, ever)."""
    with Store.open("sqlite://") as store:
        slurm, sftp = FakeSlurm(), FakeSFTP()
        paths = _jobs(store, slurm, 91000, 8)
        for path in paths.values():
            sftp.append(path, b"".join(_progress(T0 + 4.5 * i, 1000 + i) for i in range(60)))
        make_watcher(store, slurm, Bounded(sftp, None),  # type: ignore[arg-type]
                     RecordingEventSink()).tick(T0 + 300)
        restarted = make_watcher(store, slurm, Bounded(sftp, 16 << 10),  # type: ignore[arg-type]
                                 RecordingEventSink())
        for now in (T0 + 330, T0 + 390, T0 + 450):
            restarted.tick(now)
        assert {jid: restarted._jobs[jid].analysis.series.last_iteration
                for jid in paths} == dict.fromkeys(paths, 1059)


def test_idle_logs_cost_almost_nothing_so_every_printing_log_is_read_each_tick() -> None:
    """30 jobs, 24 of them quiet (their logs unchanged tick after tick), 6 printing a line
    every 4.5 s, batches of 28 KiB (six logs' minimums): the quiet logs are charged almost
    nothing of the batch, so each printing log is read to its end every tick (the quiet ones
    took their minimums too: six logs a tick, a printing log read one tick in five)."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        paths = _jobs(store, slurm, 92000, 30)
        printing = list(paths)[-6:]
        for path in paths.values():
            sftp.append(path, _progress(T0, 1000))
        reader = Bounded(sftp, None)  # every log read, the quiet ones then found unchanged
        watcher = make_watcher(store, slurm, reader, sink)  # type: ignore[arg-type]
        it = dict.fromkeys(paths, 1)
        behind = []
        for k in range(10):
            now = T0 + 60 * k
            sftp.clock = now
            for jid in printing:
                lines = b""
                while T0 + it[jid] * 4.5 <= now:
                    lines += _progress(T0 + it[jid] * 4.5, 1000 + it[jid])
                    it[jid] += 1
                sftp.append(paths[jid], lines)
            reader.limit = None if k < 2 else 28 << 10
            watcher.tick(now)
            behind += [jid for jid in printing
                       if watcher._jobs[jid].analysis.series.last_iteration != 999 + it[jid]]
        assert behind == []


def test_idle_logs_settle_when_the_link_is_slow_from_the_first_tick() -> None:
    """As above, but the batch is bounded from the first tick (the bot started while the link
    is slow), then the bot restarts on the same slow link: a log first read to its end is
    idle until it is seen printing, a quiet log the batch does not reach stays idle, and a
    log restored with its size and mtime is idle once its warm-up finds them unchanged; so
    within a few ticks every printing log is read to its end each tick (the quiet logs
    lost their idle status each time the batch skipped them: none settled)."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        paths = _jobs(store, slurm, 92000, 30)
        printing = list(paths)[-6:]
        for path in paths.values():
            sftp.append(path, _progress(T0, 1000))
        reader = Bounded(sftp, 28 << 10)
        it = dict.fromkeys(paths, 1)
        per_tick = []
        for run in range(2):
            watcher = make_watcher(store, slurm, reader, sink)  # type: ignore[arg-type]
            for k in range(12):
                now = T0 + 60 * (12 * run + k)
                sftp.clock = now
                for jid in printing:
                    lines = b""
                    while T0 + it[jid] * 4.5 <= now:
                        lines += _progress(T0 + it[jid] * 4.5, 1000 + it[jid])
                        it[jid] += 1
                    sftp.append(paths[jid], lines)
                watcher.tick(now)
                per_tick.append(sum(watcher._jobs[jid].analysis.series.last_iteration
                                    == 999 + it[jid] for jid in printing))
        assert per_tick[6:12] == [6] * 6 and per_tick[-4:] == [6] * 4, per_tick


class _SamplerConfig:
    """A recipe with a sampler file beside each job's log (bot.config.Config's two calls)."""

    def __init__(self) -> None:
        self._recipe = SimpleNamespace(log_path=None, job_name=None, workdir=None,
                                       target_iter=8000, metric_regexes=[],
                                       sampler_path="/scratch/mix/logs/rss-%j.jsonl")

    def recipe(self, name: str | None) -> SimpleNamespace:
        return self._recipe

    def policy_for(self, name: str | None) -> None:
        return None


def test_a_jobs_log_and_sampler_file_are_read_on_the_same_tick_on_a_slow_link() -> None:
    """Two jobs, each a log and a sampler file that write every tick, a batch bound that
    reaches three files: a job's files go by the one unread longest, so each job has both
    read on the same tick every other tick and is judged (the files unread one tick went
    first the next, so one job's log was read one tick and its sampler file the next, and
    it was never judged)."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        paths = _jobs(store, slurm, 92100, 2)
        reader = Bounded(sftp, 3 * 4160 + 100)  # three files' minimums
        watcher = make_watcher(store, slurm, reader, sink,  # type: ignore[arg-type]
                               config=_SamplerConfig(), policy=None)
        judged: list[tuple[int, int]] = []  # (tick, job)
        running = watcher._running

        def judge(jw: Any, *args: Any, **kw: Any) -> Any:
            judged.append((k, jw.job_id))
            return running(jw, *args, **kw)

        watcher._running = judge  # type: ignore[method-assign]
        for k in range(8):
            now = T0 + 60 * k
            sftp.clock = now
            for jid, path in paths.items():
                sftp.append(path, b"".join(_progress(now, 1000 + 20 * k + n) for n in range(20)))
                sftp.append(f"/scratch/mix/logs/rss-{jid}.jsonl", b"".join(
                    (json.dumps({"v": 1, "t": now + n, "rss": {"trainer": 40 << 30},
                                 "cpu": {"trainer": 90}}) + "\n").encode() * 1
                    for n in range(40)))
            watcher.tick(now)
        later = [job for tick, job in judged if tick >= 3]  # the link's cut settled
        assert later.count(92100) >= 2 and later.count(92101) >= 2, judged


def test_a_failed_batch_keeps_the_idle_files_asked_and_forgets_the_others() -> None:
    """Two quiet jobs' logs are idle; one job is no longer watched and the next tick's batch
    fails (the connection): nothing was read, so the log still followed stays idle and the
    other is forgotten (the follower kept the idle paths of the tick before the failed one,
    a log no longer followed among them, until a batch read again)."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        paths = _jobs(store, slurm, 92200, 2)
        for path in paths.values():
            sftp.append(path, _progress(T0, 1000))
        watcher = make_watcher(store, slurm, Bounded(sftp, None), sink)  # type: ignore[arg-type]
        for k in range(2):
            sftp.clock = T0 + 60 * k
            watcher.tick(T0 + 60 * k)
        assert watcher.logs._idle == set(paths.values())
        store.watched_jobs.remove("dev", "92201")

        def lost(requests: Sequence[ReadRequest]) -> ReadBatch:
            raise ChannelClosed(["/bin/sh", "-c", "..."], "login1", connection_lost=True)

        sftp.read = lost  # type: ignore[method-assign]
        watcher.tick(T0 + 120)
        assert watcher.logs._idle == {paths[92200]}
