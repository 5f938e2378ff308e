"""A file a slow link's answer did not reach this tick (the reader's FAILED read `later`:
bot.core.tail.TailOutcome.unreached) is deferred, not a file that cannot be read: it is logged
as deferred by the slow link, never "cannot be read", and starts no finished job's wait for an
unreadable file; its job is judged once it is read."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, RecordingEventSink
from support.watcher import add_job, make_watcher

from bot.core.slurm.records import JobRecord
from bot.core.tail import FAILED, FileRead, ReadBatch, ReadRequest
from bot.core.text import N_
from bot.store import Store

SLOW = N_("not read: the login node's answer came too slowly (%(bytes)s bytes in %(limit)s s); "
          "read next tick, fewer bytes at a time", bytes=20000, limit="15")


class SlowLink:
    """The fake reader, with a slow link's answer cut before the files of `deferred` (their
    reads FAILED `later`, as ShellTailReader gives them) while `cut` is set."""

    def __init__(self, sftp: FakeSFTP, deferred: set[str]) -> None:
        self.sftp, self.deferred, self.cut = sftp, deferred, True

    def read(self, requests: Sequence[ReadRequest]) -> ReadBatch:
        got = self.sftp.read(requests)
        return ReadBatch([FileRead(FAILED, error=SLOW, later=True)
                          if self.cut and r.path in self.deferred else a
                          for r, a in zip(requests, got.results, strict=True)])


def _progress(t: float, it: int) -> bytes:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)).encode()
    return stamp + (b".000 | INFO | iter: %d/8000 | loss: 0.6 | 4.50 s/iter | rss: 44.0 GiB "
                    b"| cpu: 92%%\n" % it)


def test_files_a_slow_link_cut_off_are_deferred_not_unreadable(
        caplog: pytest.LogCaptureFixture) -> None:
    """A running job's log and a finished job's log, both cut off by a slow link's answer for
    three ticks: neither is logged as a file that cannot be read (a warning per job on every
    slow tick), the finished job's wait for an unreadable file does not start, and it is
    judged once its log is read."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        paths = {}
        for jid in (93000, 93001):
            add_job(store, jid)
            paths[jid] = f"/scratch/mix/logs/mix-{jid}.out"
            sftp.append(paths[jid], b"".join(_progress(T0 + 4.5 * i, 1000 + i)
                                             for i in range(40)))
            slurm.records[jid] = JobRecord(job_id=jid, state="RUNNING",
                                           stdout_path=paths[jid], start_time=T0,
                                           mem_limit_bytes=950 << 30)
        reader = SlowLink(sftp, set(paths.values()))
        watcher = make_watcher(store, slurm, reader, sink)  # type: ignore[arg-type]
        slurm.records[93001] = JobRecord(job_id=93001, state="COMPLETED", exit_code=0,
                                         stdout_path=paths[93001], start_time=T0,
                                         end_time=T0 + 200, mem_limit_bytes=950 << 30)
        caplog.set_level(logging.DEBUG)
        for k in range(3):
            sftp.clock = T0 + 200 + 60 * k
            watcher.tick(T0 + 200 + 60 * k)
        said = [r.getMessage() for r in caplog.records]
        assert not [m for m in said if "cannot be read" in m], said
        assert [m for m in said if "job 93000: its log" in m and "deferred by the slow link" in m]
        assert watcher._jobs[93001].unreadable_since is None
        assert store.watched_jobs.get("dev", "93001") is not None  # not judged unread
        reader.cut = False
        watcher.tick(T0 + 400)
        assert store.watched_jobs.get("dev", "93001") is None  # judged once read


def test_a_file_unreadable_while_its_job_ran_and_deferred_at_its_end_is_not_read_again(
        caplog: pytest.LogCaptureFixture) -> None:
    """A running job's log cannot be read for two ticks (permission denied); the job ends,
    and at that tick a slow link's answer does not reach the log: it was not read, so the
    watcher's log does not say it read again; it says the job ended while the log could not
    be read, deferred at its end."""
    with Store.open("sqlite://") as store:
        slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
        path = "/scratch/mix/logs/mix-93100.out"
        add_job(store, 93100)
        sftp.append(path, b"".join(_progress(T0 + 4.5 * i, 1000 + i) for i in range(40)))
        slurm.records[93100] = JobRecord(job_id=93100, state="RUNNING", stdout_path=path,
                                         start_time=T0, mem_limit_bytes=950 << 30)
        reader = SlowLink(sftp, {path})
        reader.cut = False
        watcher = make_watcher(store, slurm, reader, sink)  # type: ignore[arg-type]
        watcher.tick(T0)
        read = sftp.read
        sftp.read = lambda requests: ReadBatch([  # type: ignore[method-assign]
            FileRead(FAILED, error="Permission denied") for _ in requests])
        caplog.set_level(logging.INFO)
        for t in (60, 120):
            watcher.tick(T0 + t)
        sftp.read = read  # type: ignore[method-assign]
        reader.cut = True
        slurm.records[93100] = JobRecord(job_id=93100, state="COMPLETED", exit_code=0,
                                         stdout_path=path, start_time=T0, end_time=T0 + 150,
                                         mem_limit_bytes=950 << 30)
        watcher.tick(T0 + 180)
        said = [r.getMessage() for r in caplog.records if "93100" in r.getMessage()]
        assert not [m for m in said if "read again after" in m], said
        assert [m for m in said if f"ended while its log {path} could not be read" in m
                and "deferred" in m], said
