"""A watched job's files that cannot be read: how long the watcher waits for them, and what it
logs of them (once when it starts, once when it ends; never each tick).

A finished job whose log or sampler file the login node answers for but cannot read
(permission denied, an I/O error, a path that hangs: bot.core.tail.FileReadFailed) is read
again each tick for `unreadable_file_s` from the first such read (a file late on NFS is read
when it comes within it; the first read's time is kept in the store, so a restart does not
start the wait over); then it is judged without it, from Slurm's accounting (and what was
read of the file while it ran): an unreadable log is said in the incident, with why; an
unreadable sampler file leaves the incident without its samples, and says why there is no
RSS chart. A log that does not exist, of a job that ran and ended (deleted, a wrong path, a
path only the job's node has), is waited for alike, and the incident says so; a job not
started yet has no log to read, and one that ended without starting (cancelled while it
waited) none to wait for: it is judged at once, and its incident says it never started. A
sampler file that does not exist when a job that ran has ended is not waited for (a job that
ended before its sampler started has none); the incident says no samples were found.

A running job's unreadable file is only read again next tick (what did read is applied); that
is logged once when it starts and once when it ends: the file reads again, the job ends (its
file read again, or ended while it could not be read: the ended job's wait follows), the job
is requeued (its next run's reads start anew), the job is no longer watched, or the watcher
forgets what it held (Watcher.forget: another replica watched the cluster meanwhile).

A tick whose batched read failed as a whole (the read command's answer unreadable, its
channel closed: JobReads.error) read none of the job's files: a running job is not judged
that tick (`batch`); for a finished job each of its files is a failed read, with the
reader's sentence, waited for `unreadable_file_s` like any unreadable file and then judged
without it (`finished`). The batch is the cluster's, so its ticks whose batched read failed,
in a row, are one series (`tick_read`, `failing_since`) whichever jobs were in it, logged once
for all of them: a warning when it starts, naming its cause and how many jobs' files it kept
from being read, and once when it ends (the files read again, or the watcher forgets what it
held); the ticks between, and each job's own series (its BatchFailures), at debug; a job no
longer followed during it is logged once as such. Once a job's series has lasted
`READ_FAILED_NOTE_TICKS` ticks the tick tells the run's thread, once per thread and cluster
series (bot.services.watch.tick): the jobs of one thread (an array's tasks, a job that started
while reads failed) share its note.

The tick (bot.services.watch.tick) asks this module at each of those moments; the memory
itself is the job's JobWatch (`unreadable_since`, `judged_without_logged`,
`running_unreadable`), the store's watched_jobs.unreadable_since and, for failed batches,
this object's (in memory: a restart starts a series anew).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.core.tail import FileMissing, FileReadFailed
from bot.services.watch.logs import JobReads, JobWatch
from bot.store import Store

log = logging.getLogger(__name__)

# ticks in a row a job's files were not read (its tick's batched read failed) before its
# run's thread is told, once per failure series (10 minutes at a 60-s tick)
READ_FAILED_NOTE_TICKS = 10


@dataclass(frozen=True)
class BatchFailures:
    """A job's tick whose batched read failed: the ticks in a row it has (this one
    included), when the first of them was, and why this one failed (JobReads.error)."""

    ticks: int
    since: float
    error: Exception


def _lasted(since: float, until: float | None) -> float:
    """How long something that began at `since` lasted up to `until` (None: up to its start,
    no time)."""
    return (since if until is None else until) - since


class UnreadableFiles:
    """The unreadable files of one cluster's watched jobs (see module doc): a finished job's
    wait of `unreadable_file_s`, kept in `store`, and the log lines of both waits."""

    def __init__(self, cluster: str, *, store: Store, unreadable_file_s: float) -> None:
        self.cluster = cluster
        self.store = store
        self.unreadable_file_s = unreadable_file_s
        # by job id: its series of ticks in a row whose batched read failed
        self._batches: dict[int, BatchFailures] = {}
        # when the cluster's ticks whose batched read failed, in a row, began (None: the
        # last batch read); in memory like the jobs' series
        self.failing_since: float | None = None
        # the keys of the read_failed notes of that series the outbox took (emitted once
        # each: bot.services.watch.tick)
        self.noted: set[str] = set()

    # ------------------------------------------------------------------ a failed batch

    def tick_read(self, reads: dict[int, JobReads], now: float) -> None:
        """The tick's batched read of the cluster's files (`reads`, by job): the cluster's
        series of failed batches (`failing_since`) begins at its first failed one and ends at
        one that read; a tick that read no file says nothing of it. The series is logged once
        when it begins, a warning naming its cause and how many jobs' files it kept from
        being read, and once when it ends; the ticks between at debug."""
        failed = [r.error for r in reads.values() if r.error is not None]
        if not failed:
            if reads:
                self.series_over(now, "the batched read of the jobs' files read again")
            return
        jobs = f"{len(failed)} job" if len(failed) == 1 else f"{len(failed)} jobs"
        if self.failing_since is None:
            self.failing_since = now
            log.warning("%s: the batched read of the files of %s failed: %s; read again each "
                        "tick, a running job judged once its files read, a finished one "
                        "after %.0f s without them", self.cluster, jobs, failed[0],
                        self.unreadable_file_s)
        else:
            log.debug("%s: the batched read of the files of %s failed again (for %.0f s): %s",
                      self.cluster, jobs, now - self.failing_since, failed[0])

    def series_over(self, until: float | None, why: str) -> None:
        """The cluster's series of failed batches is over (`why`: a batch read, or the
        watcher forgets what it held, up to `until`; None: when it began): logged once as
        over, with how long it lasted, and its start, its notes and its jobs' series
        forgotten."""
        since = self.failing_since
        if since is not None:
            log.info("%s: %s after %.0f s of failed batched reads", self.cluster, why,
                     _lasted(since, until))
        self.failing_since = None
        self.noted.clear()
        # a job's series is one of the cluster's: it ends with it, the job's files read or not
        # (a pending job's series starts anew when it runs again)
        for job_id, over in self._batches.items():
            log.debug("%s: job %s: its series of failed batched reads is over after %.0f s",
                      self.cluster, job_id, _lasted(over.since, until))
        self._batches.clear()

    def batch(self, jw: JobWatch, reads: JobReads, now: float) -> BatchFailures | None:
        """The failure series of the job's batched reads when this tick's failed as a whole
        (JobReads.error: none of its files read; the job is not judged this tick), else
        None. Logged at debug only: the cluster's series is logged once for all its jobs
        (`tick_read`), and ends the job's (`series_over`)."""
        if reads.error is None:
            return None
        last = self._batches.get(jw.job_id)
        failures = (BatchFailures(1, now, reads.error) if last is None
                    else BatchFailures(last.ticks + 1, last.since, reads.error))
        log.debug("%s: job %s: the batched read of its files failed (%d ticks in a row): %s",
                  self.cluster, jw.job_id, failures.ticks, reads.error)
        self._batches[jw.job_id] = failures
        return failures

    def _batch_over(self, jw: JobWatch, until: float | None, why: str) -> None:
        """The job is no longer followed here (`why`): a failure series of its batched reads
        is logged once as ended, and forgotten."""
        over = self._batches.pop(jw.job_id, None)
        if over is not None:
            log.info("%s: job %s %s; the batched read of its files had failed for the last "
                     "%.0f s", self.cluster, jw.job_id, why, _lasted(over.since, until))

    # ------------------------------------------------------------------ a running job

    def running(self, jw: JobWatch, reads: JobReads, now: float) -> bool:
        """Could one of the running job's files not be read this tick (read again next tick)?
        Logged once per file when it starts and once when it reads again, with how long it
        was unread (JobWatch.running_unreadable, in memory: a restart may say it once more;
        the job's end or its unwatching says it too: `ended`, `unwatched`), not each tick it
        goes on. A tick whose read failed as a whole (the connection) read nothing: what was
        unreadable stays so."""
        if reads.error is not None:
            return False
        self._deferred(jw, reads)
        failures = reads.failures
        for kind, failure in failures.items():
            if kind not in jw.running_unreadable:
                log.warning("%s: job %s: its %s cannot be read: %s; read again each tick",
                            self.cluster, jw.job_id, kind, failure)
                jw.running_unreadable[kind] = (failure.path, now)
        # (a file not read this tick, not reached or deferred, is not read again yet)
        for kind in [k for k in jw.running_unreadable
                     if k not in failures and k not in reads.unread]:
            path, since = jw.running_unreadable.pop(kind)
            log.info("%s: job %s: its %s %s read again after %.0f s", self.cluster, jw.job_id,
                     kind, path, now - since)
        return bool(failures)

    def ended(self, jw: JobWatch, reads: JobReads, now: float) -> None:
        """The job has ended: each file of it that could not be read when it last ran
        (JobWatch.running_unreadable) is logged once, as it is at the end, and forgotten:
        read again (with how long it was unread), still unreadable (the ended job's own
        wait, `finished`, follows it from here), or not read at the end (deferred by a slow
        link, not reached by the batch: JobReads.unread), which is no read again. A tick
        whose read failed as a whole (the connection) read nothing: asked again at the next
        tick."""
        if reads.error is not None:
            return
        unread = reads.unread
        for kind, (path, since) in jw.running_unreadable.items():
            if kind in reads.failures:
                log.info("%s: job %s ended while its %s %s could not be read (unread for "
                         "%.0f s)", self.cluster, jw.job_id, kind, path, now - since)
            elif kind in unread:
                log.info("%s: job %s ended while its %s %s could not be read (unread for "
                         "%.0f s); not read at its end either, deferred by the slow link or "
                         "not reached by the batch", self.cluster, jw.job_id, kind, path,
                         now - since)
            else:
                log.info("%s: job %s: its %s %s read again after %.0f s, the job ended",
                         self.cluster, jw.job_id, kind, path, now - since)
        jw.running_unreadable.clear()

    def requeued(self, jw: JobWatch, now: float) -> None:
        """The running job was requeued (PENDING again, or running again from a later start):
        the run whose file could not be read is over. Its next run appends to the same log
        (submitit, Slurm's requeue; the follower reads on from its offset, a file that starts
        over is read from 0) and is read only once it runs, so each file of the run that could
        not be read (JobWatch.running_unreadable) is logged once, with how long, and
        forgotten: the next run's reads start anew (a file that still cannot be read is logged
        when that starts again), and no "unread for" spans the wait in the queue; so is a
        failure series of its batched reads (the next run's starts at one tick)."""
        self._ended(jw, now, "%s: job %s was requeued while its %s %s could not "
                             "be read (unread for %.0f s); its next run's reads "
                             "start anew")
        jw.running_unreadable.clear()
        self._batch_over(jw, now, "was requeued")

    def unwatched(self, jw: JobWatch, now: float) -> None:
        """The job is no longer watched: a file of it that could not be read when it last ran
        is logged once as such, its end never seen."""
        self._ended(jw, now, "%s: job %s is no longer watched; its %s %s could not "
                             "be read for the last %.0f s")
        self._batch_over(jw, now, "is no longer watched")

    def forgotten(self, jw: JobWatch, last_tick_at: float | None) -> None:
        """The watcher forgets what it held (another replica watched the cluster meanwhile):
        a running job's file that could not be read when this replica last ticked (at
        `last_tick_at`) is logged once as such; its end is the other replica's to see."""
        self._ended(
            jw, last_tick_at,
            "%s: job %s is no longer followed from this replica's memory (another replica "
            "watched the cluster meanwhile); its %s %s could not be read for the last %.0f s "
            "this replica watched it")
        self._batch_over(jw, last_tick_at, "is no longer followed from this replica's memory")

    def _ended(self, jw: JobWatch, until: float | None, message: str) -> None:
        """Log `message` (its arguments: the cluster, the job, the file's kind and path, and
        for how long up to `until` it could not be read; None: up to when it was first found
        so) once for each of the running job's files it remembers as unreadable."""
        for kind, (path, since) in jw.running_unreadable.items():
            log.info(message, self.cluster, jw.job_id, kind, path, _lasted(since, until))

    # ------------------------------------------------------------------ a finished job

    def finished(self, jw: JobWatch, reads: JobReads,
                 now: float) -> dict[str, FileReadFailed] | None:
        """Why the finished job's files ("log", "sampler") that cannot be read could not, once
        one has failed for `unreadable_file_s` (the job is then judged without them), or at
        once when only its sampler file is missing; None while they read or may still (read
        again next tick). The wait is logged once when it starts and once when it ends (the
        files read again, or the job judged without them: once for its incident, not again
        each tick its post is retried), not each tick it goes on. A tick whose batched read
        failed as a whole (JobReads.error: the connection, an answer not the read script's)
        is each file's failed read with the reader's sentence, waited for alike: a lasting
        one does not keep the job from being judged (its incident says why its log was not
        read)."""
        self._deferred(jw, reads)
        failures = reads.failures
        # A missing sampler file is not waited for (a job that ended before its sampler
        # started has none): it is judged without it at once.
        waited = {k: f for k, f in failures.items()
                  if not (k == "sampler" and isinstance(f, FileMissing))}
        if not waited:
            if jw.unreadable_since is not None and reads.unread:
                return None  # a file not read this tick (deferred): the wait goes on
            if jw.unreadable_since is not None:
                log.info("%s: job %s: its files read again after %.0f s", self.cluster,
                         jw.job_id, now - jw.unreadable_since)
            self._set_since(jw, None)
            return failures or None
        if jw.unreadable_since is None:
            # a failed batch's cause is the cluster's, warned of once for all its jobs
            # (`tick_read`)
            log.log(logging.INFO if reads.error is not None else logging.WARNING,
                    "%s: job %s ended and its files cannot be read: %s; read again each tick "
                    "for %.0f s, then judged without them", self.cluster, jw.job_id,
                    "; ".join(str(f) for f in waited.values()), self.unreadable_file_s)
            self._set_since(jw, now)
        assert jw.unreadable_since is not None
        if now - jw.unreadable_since < self.unreadable_file_s:
            return None
        if not jw.judged_without_logged:  # once per incident: not again while its post is retried
            log.warning("%s: job %s: judged without its files, unread for %.0f s: %s",
                        self.cluster, jw.job_id, now - jw.unreadable_since,
                        "; ".join(str(f) for f in waited.values()))
            jw.judged_without_logged = True
        return failures

    def _deferred(self, jw: JobWatch, reads: JobReads) -> None:
        """Each of the job's files deferred this tick (JobReads.deferred: a slow link's answer
        cut before it), logged as such at debug: no file that cannot be read, nor a failing
        one (the reader logs the slow answer once for the batch)."""
        for kind, why in reads.deferred.items():
            log.debug("%s: job %s: its %s %s was deferred by the slow link to the next tick: "
                      "%s", self.cluster, jw.job_id, kind, why.path, why.reason)

    def _set_since(self, jw: JobWatch, since: float | None) -> None:
        """When the finished job's files were first found unreadable, kept in the store: a
        restart of the bot (a crash loop too) does not start the `unreadable_file_s` wait
        over."""
        if jw.unreadable_since != since:
            jw.unreadable_since = since
            self.store.watched_jobs.set_unreadable_since(self.cluster, str(jw.job_id), since)
