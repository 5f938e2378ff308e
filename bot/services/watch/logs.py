"""Log following: only the new bytes of each running job's log (and sampler file), by offset,
every file of a tick in one batched read.

Offsets live in the store (`tail_offsets`), written at most every `persist_every_s` for a busy
log: after a crash the watcher re-reads at most that much (event keys make it harmless).

Restart: the in-memory analysis is rebuilt from the persisted offset after re-reading a
bounded window (`warmup_bytes`) before it, so a job that is silent right now (a hang) is still
judged against its last progress line.

Log clock vs wall clock: log timestamps are parsed as written (no time zone). The follower
keeps `skew = last log time - the file's mtime` (when that line was written; the read time if
SFTP gives no mtime) and the watcher judges a running job at `now + skew` on the log's clock,
so a silent log ages with the wall clock — also right after a restart: the skew is kept with
the offset (else computed from the persisted mtime), as the file's mtime then may be a later
redraw's of its unfinished last line. An unfinished last line (a progress bar redrawn after
carriage returns) is not fed; it is told to the series as of the file's mtime on that clock
(`MetricSeries.unfinished_line`: its bar's count moving is activity), and the bar as last
seen is kept with the log's offset, written at once when a read finds it frozen (unchanged for
`persist_every_s` / 2): after a restart the first read compares with it (a bar frozen before
the restart is no activity for being seen again, though it froze after the offset's last
throttled write). A restart sooner after the freeze finds a count the store did not keep,
drawn after the offset's last write; the store has that write's size and mtime, the read the
line's draws since and the file's mtime now, so it is dated by `count_drawn_at`, never
before it was drawn: a count first drawn since that write, at the file's mtime, its last write
(a bar that moved on while the bot was down is activity at the restart's read, however long
it was down; a bar frozen then and not redrawn since, tqdm's or mmcv's without an update, is
dated at its freeze: its stall is warned as without the restart); one already drawn then, at
that write's mtime. Residual: a frozen bar redrawn since (a refresh at the frozen count) is
dated at its last redraw, so its stall is warned later than without the restart, by at most
the time from the freeze to the restart's read; never earlier (a date earlier than the draw
would warn a hang that was not and collect every rank's stacks).
Once the job has ended and its log is read to its end, that line is its last line and is fed
once (bot.core.tail.take_last_line); so is the sampler file's (the last sample before an OOM
kill written without its newline).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.cluster.errors import ClusterError, said
from bot.config import RecipeConfig
from bot.core.diagnose import LogAnalysis
from bot.core.metrics import UnfinishedBar, count_drawn_at
from bot.core.models import Diagnosis
from bot.core.sampler_series import SamplerSeries
from bot.core.slurm.records import JobRecord
from bot.core.slurm.values import expand_output_pattern
from bot.core.tail import (
    FileRead,
    FileReadFailed,
    ReadRequest,
    TailItem,
    TailOutcome,
    TailState,
    askable_path,
    idle_paths,
    read_tails,
    unread_for,
)
from bot.core.text import N_, Text
from bot.services.ports import TailReader
from bot.services.watch.events import TickReport
from bot.services.watch.recipes import CheckpointLookup
from bot.store import Attempt, Store


@dataclass
class JobWatch:
    """What the watcher keeps of one watched job between ticks (in memory; `held_since` and
    `unreadable_since` are also in the store)."""

    job_id: int
    chain_id: int | None
    recipe: str | None
    analysis: LogAnalysis
    log: TailState | None = None
    sampler: SamplerSeries = field(default_factory=SamplerSeries)
    sampler_tail: TailState | None = None
    skew: float | None = None
    held_since: float | None = None
    record: JobRecord | None = None
    persisted_at: dict[str, float] = field(default_factory=dict)  # tail offsets, by path
    # the bar kept with the log's offset in the store, as last written (or restored)
    persisted_bar: UnfinishedBar | None = None
    attempt: Attempt | None = None  # the store's attempt row as last read / written
    diagnosis: Diagnosis | None = None  # the last full diagnosis of the running job
    judged_at: float = 0.0
    attempt_written_at: float | None = None
    rss_step: str | None = None  # the sstat step whose MaxRSS was last fed to the analysis
    # the checkpoint looked up for a stall warning's prompt, by the warning's key
    stall_lookup: tuple[str, CheckpointLookup] | None = None
    # the keys of its stall warnings whose end (progress past them) was told: `stall_over`
    stalls_over: set[str] = field(default_factory=set)
    # the finished job's one checkpoint lookup, kept while its incident's post is retried
    final_lookup: CheckpointLookup | None = None
    # when Slurm says the run being followed started (epoch): a later one is a requeue's
    run_started_at: float | None = None
    # when a file of the finished job (its log, its sampler file) was first found unreadable
    # (a read that FAILED, a log that does not exist), wall time, kept in the store
    # (watched_jobs.unreadable_since); None while they read (bot.services.watch.unreadable)
    unreadable_since: float | None = None
    # the finished job was logged as judged without its files: its incident's (key
    # CLUSTER:JOB:final) post may be retried, the line is not written again
    judged_without_logged: bool = False
    # the running job's files that could not be read when last read, by kind ("log",
    # "sampler"): the path and when it was first found so (UnreadableFiles.running;
    # forgotten, once logged, when the job ends or is no longer watched)
    running_unreadable: dict[str, tuple[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class FollowedFile:
    """One file of a job read this tick: the log or the sampler file, and the state its read
    started from (`restored`: from the store, after a restart or a new path; then `skew` and
    `bar` are what the store kept with a log's offset: its clock's skew, the bar last seen on
    its unfinished last line)."""

    kind: str  # "log" | "sampler"
    path: str
    start: TailState
    restored: bool
    skew: float | None = None
    bar: UnfinishedBar | None = None


@dataclass
class JobReads:
    """What a tick read of one job's files, to be applied to the job (`LogFollower.apply`),
    or the error that kept them from being read."""

    files: list[tuple[FollowedFile, TailOutcome]] = field(default_factory=list)
    error: Exception | None = None

    @property
    def failures(self) -> dict[str, FileReadFailed]:
        """Why each of the job's files ("log", "sampler") that could not be read this tick
        could not (the login node answered for it, and its read FAILED: permission denied, an
        I/O error, a path that hangs; or a finished job's file does not exist: FileMissing);
        empty when every file asked for was read. A file deferred (`deferred`) is none: its
        read failed for want of the link's time, not for the file."""
        return {f.kind: o.error for f, o in self.files
                if isinstance(o.error, FileReadFailed) and not o.unreached}

    @property
    def deferred(self) -> dict[str, FileReadFailed]:
        """Why each of the job's files the batch asked for was not read for want of the
        link's time (a slow link's answer did not reach it, or other paths of the batch hung:
        TailOutcome.unreached with its FAILED read): the reader's sentence. Read first next
        tick, as a file the batch did not reach (`unread`)."""
        return {f.kind: o.error for f, o in self.files
                if isinstance(o.error, FileReadFailed) and o.unreached}

    @property
    def unread(self) -> list[str]:
        """The job's files ("log", "sampler") the tick's batch did not reach (more files than
        its bytes: TailOutcome.skipped; or deferred, a slow link's answer cut before them:
        read first next tick): nothing of them is known this tick, so the job is not judged
        on what they said before."""
        return [f.kind for f, o in self.files
                if o.skipped and o.error is None or o.error is not None and o.unreached]


def unaskable(job_id: int, kind: str, path: str) -> Text:
    """Why the job's file (`kind`: "log", "sampler") at `path` is not read: the path cannot
    be a file's (bot.core.tail.askable_path: empty, a NUL byte), and where it came from to be
    corrected."""
    shown = repr(path)  # a NUL byte shown as \x00, an empty path as ''
    if kind == "log":
        return N_("the log path of job %(job)s, %(path)s, is empty or holds a NUL byte, so no "
                  "file can be read there: correct the job's --output (Slurm's StdOut) or the "
                  "recipe's log_path; the log is not read until then.", job=job_id, path=shown)
    return N_("the sampler file path of job %(job)s, %(path)s, is empty or holds a NUL byte, "
              "so no file can be read there: correct the recipe's sampler_path; the samples "
              "are not read until then.", job=job_id, path=shown)


class LogFollower:
    """Reads a cluster's job logs and sampler files into each job's analysis and sampler
    series: every file of the tick in one batch (`read`, bot.core.tail.read_tails over the
    cluster's TailReader: one round trip, two when a file must be read again from 0 or a
    finished job's log has more), then applied job by job (`apply`).

    `reader` returns the cluster's TailReader (asked lazily, per tick); `recipe_cfg` maps a
    recipe name to its config (None: unknown); `new_analysis` makes a fresh LogAnalysis for
    a recipe (a log that restarted, after a requeue or rotation, is analysed anew).
    """

    def __init__(self, *, reader: Callable[[], TailReader], store: Store,
                 recipe_cfg: Callable[[str | None], RecipeConfig | None],
                 new_analysis: Callable[[str | None], LogAnalysis],
                 max_bytes_per_job: int, warmup_bytes: int, persist_every_s: float) -> None:
        self._reader = reader
        self.store = store
        self._recipe_cfg = recipe_cfg
        self._new_analysis = new_analysis
        self.max_bytes_per_job = max_bytes_per_job
        self.warmup_bytes = warmup_bytes
        self.persist_every_s = persist_every_s
        self._behind: dict[str, int] = {}  # path -> ticks in a row its read failed
        self._idle: frozenset[str] = frozenset()  # paths found unchanged last tick

    def read(self, jobs: list[tuple[JobWatch, JobRecord, bool]],
             report: TickReport) -> dict[int, JobReads]:
        """Read the new bytes of every (job, record, drain) given, in one batch; nothing is
        applied yet. A failed batch (connection lost, an answer not the read script's) is
        every job's error (JobReads.error), each of its files a FileReadFailed with its
        sentence; a file whose path cannot be asked for (empty, a NUL byte: `unaskable`) is
        its job's alone (a FileReadFailed, never sent, so the others read); a file of a job
        that ran and ended which does not exist is its error (FileMissing), where a job not
        started yet has empty files, and one that ended without starting
        (JobRecord.never_started) none to read."""
        planned: list[tuple[int, FollowedFile, TailOutcome | None]] = []
        items: list[TailItem] = []
        owners: list[int] = []  # each item's job: its files are read together (read_tails)
        for jw, record, drain in jobs:
            if record.never_started:
                continue  # it ran nothing, so wrote nothing: a file at its path is not its own
            # a job that ran and ended has written its files: a missing one is its error
            # (a log is waited for; a sampler file is not: UnreadableFiles.finished)
            ended = record.is_finished
            for kind, path, state in (("log", self.log_path(jw, record), jw.log),
                                      ("sampler", self.sampler_path(jw, record),
                                       jw.sampler_tail)):
                if path is None:
                    continue
                followed = (self._saved(jw, kind, path) if state is None or state.path != path
                            else FollowedFile(kind, path, state, restored=False))
                state = followed.start
                if not askable_path(path):  # its job's error; the batch reads the others
                    planned.append((jw.job_id, followed, TailOutcome(
                        state, error=FileReadFailed(path, unaskable(jw.job_id, kind, path)))))
                    continue
                window = min(state.offset, self.warmup_bytes) if followed.restored else 0
                planned.append((jw.job_id, followed, None))
                # its writer has ended with it: an unfinished last line is its last line
                items.append(TailItem(state, self.max_bytes_per_job, drain, window,
                                      must_exist=ended, last_line=ended))
                owners.append(jw.job_id)
        # a file restored with its size and mtime known is idle until read otherwise (a
        # slow link that does not reach it from the first tick keeps it so: idle_paths)
        idle = self._idle | {f.path for _, f, refused in planned
                             if f.restored and refused is None and f.start.mtime is not None}
        reads = {jw.job_id: JobReads() for jw, _, _ in jobs}
        if not items:
            for job_id, followed, refused in planned:
                reads[job_id].files.append((followed, refused or TailOutcome(followed.start)))
            return reads

        def batch(requests: list[ReadRequest]) -> list[FileRead]:
            answer = self._reader().read(requests)
            report.round_trips += answer.round_trips
            report.read_round_trips += answer.round_trips
            report.bytes_moved += answer.bytes_moved
            return answer.results

        try:
            # the files share what one batch may ask (below the output cap, and what a slow
            # link carries in time), so a backlog moves on every tick; the files not read
            # last tick go first, so a slow link's cut falls on others each time
            outcomes = read_tails(items, batch,
                                  batch_bytes=getattr(self._reader(), "batch_bytes", None),
                                  behind=self._behind, idle=idle, groups=owners)
            self._behind = unread_for(self._behind, outcomes)
            self._idle = idle_paths(outcomes, idle)
        except (ClusterError, OSError) as exc:
            # nothing was read: each file asked keeps its place and is idle as it was (one
            # restored with its stat, as it came); files no longer asked are forgotten
            asked = {item.state.path for item in items}
            self._behind = {p: n for p, n in self._behind.items() if p in asked}
            self._idle = frozenset(idle & asked)
            # every job's error, and each file asked for a failed read saying why (a
            # finished job waits for it as for an unreadable file: UnreadableFiles.finished)
            for r in reads.values():
                r.error = exc
            for job_id, followed, refused in planned:
                reads[job_id].files.append((followed, refused or TailOutcome(
                    followed.start, error=FileReadFailed(followed.path, said(exc)))))
            return reads
        read = iter(outcomes)
        for job_id, followed, refused in planned:
            reads[job_id].files.append((followed, refused or next(read)))
        return reads

    def apply(self, jw: JobWatch, reads: JobReads, now: float, report: TickReport, *,
              without_unreadable: bool = False) -> bool:
        """Feed what was read of the job into its analysis and sampler series and persist the
        offsets; True when unread log bytes remain, or a file the batch did not reach
        (JobReads.unread: left as it was, a restored one still to be warmed up when read).
        Raises the error that kept a file from being read (the job is then not judged this
        tick; a failed batch's is each file's FileReadFailed); `without_unreadable`: a file
        whose read failed (FileReadFailed) is left as it is instead (a finished job judged
        without it)."""
        more = False
        unreached = False
        for followed, outcome in reads.files:
            if outcome.skipped and outcome.error is None or \
                    outcome.error is not None and outcome.unreached:
                unreached = True  # not read this tick (not reached, or deferred): left as it was
                continue
            if outcome.error is not None:
                if without_unreadable and isinstance(outcome.error, FileReadFailed):
                    continue
                raise outcome.error
            if followed.kind == "log":
                before = followed.start.offset
                jw.log = self._apply(jw, followed, outcome, jw.analysis, report, now)
                more = outcome.more
                last = jw.analysis.series.last_time
                # The file's mtime is when its last bytes were written (cluster clock, synced
                # with ours by NTP); without it, when we read it.
                written = jw.log.mtime if jw.log.mtime is not None else now
                if last is not None and (jw.skew is None or jw.log.offset != before):
                    jw.skew = last - written
                unfinished = outcome.chunks[-1].unfinished if outcome.chunks else b""
                series = jw.analysis.series
                unchanged = False
                if unfinished and jw.skew is not None:  # a bar redrawn on the last line?
                    seen = series.unfinished_bar
                    drawn = written
                    if followed.restored and followed.start.mtime is not None:
                        # a count the store did not keep: drawn by the offset's last write
                        # when its first draw was there then, else dated at the file's mtime
                        # (never before it was drawn: a bar that moved on while the bot was
                        # down is an advance at this read; one frozen and not redrawn since,
                        # at its freeze)
                        drawn = count_drawn_at(unfinished, jw.log.size, (
                            followed.start.size, followed.start.mtime), written)
                    series.unfinished_line(jw.log.line_no + 1, unfinished, drawn + jw.skew)
                    # the bar on this unfinished line, at the count the last read saw
                    unchanged = (series.unfinished_bar is not None
                                 and series.unfinished_bar == seen
                                 and seen.line_no == jw.log.line_no + 1)
                self._persist(jw, followed, jw.log, now, jw.skew, series.unfinished_bar,
                              unchanged=unchanged)
            else:
                jw.sampler_tail = self._apply(jw, followed, outcome, jw.sampler, report, now)
                self._persist(jw, followed, jw.sampler_tail, now)
        return more or unreached

    def _apply(self, jw: JobWatch, followed: FollowedFile, outcome: TailOutcome,
               target: LogAnalysis | SamplerSeries, report: TickReport,
               now: float) -> TailState:
        """Feed one file's chunks into `target`. The new state."""
        state = followed.start
        if followed.restored:
            target = self._warm_up(jw, state, outcome.window, target)
            if isinstance(target, LogAnalysis):
                # as the store kept them: the log clock's skew (so a log whose last line is
                # unfinished, its mtime moved by redraws, keeps the skew its last complete line
                # gave), and the bar last seen (this read's draw is compared with it)
                jw.skew = followed.skew
                jw.persisted_bar = followed.bar
                if followed.bar is not None:
                    target.series.unfinished_bar = followed.bar
        for chunk in outcome.chunks:
            if chunk.restarted and state.offset:  # a new file (requeue, rotation): start over
                if isinstance(target, LogAnalysis):
                    target = jw.analysis = self._new_analysis(jw.recipe)
                    jw.skew, jw.diagnosis = None, None
                else:
                    target = jw.sampler = SamplerSeries()
            if chunk.lines:
                if isinstance(target, LogAnalysis):
                    target.feed(("\n".join(chunk.lines) + "\n").encode("utf-8"))
                else:
                    target.feed_lines(chunk.lines)
            report.bytes_read += chunk.bytes_read
            state = chunk.state
        return state

    def _persist(self, jw: JobWatch, followed: FollowedFile, state: TailState, now: float,
                 skew: float | None = None, bar: UnfinishedBar | None = None, *,
                 unchanged: bool = False) -> None:
        """Keep a file's tail state in the store (with a log's clock skew and the bar last
        seen on its unfinished last line), at most every `persist_every_s` while it
        changes; and at once when this read found the log's bar `unchanged` (still drawn at
        the count the last read saw) for `persist_every_s` / 2 on the log's clock (frozen: a
        bar stepping more slowly than the tick is seen unchanged for less) at a count the
        store does not have: a restart then compares its first read with the count it froze
        at, not one of up to `persist_every_s` before, so it takes no frozen bar for an
        advance (one write per freeze)."""
        start_state = None if followed.restored else followed.start
        last = jw.persisted_at.get(followed.path)
        due = last is None or now - last >= self.persist_every_s
        unsaved_freeze = (unchanged and bar is not None and skew is not None
                          and bar != jw.persisted_bar
                          and now + skew - bar.advanced_at >= self.persist_every_s / 2)
        # an idle log costs no write; a busy one, few
        if (state != start_state and due) or unsaved_freeze:
            jw.persisted_at[followed.path] = now
            if followed.kind == "log":
                jw.persisted_bar = bar
            self.store.tail_offsets.put(
                str(jw.job_id), followed.path, offset=state.offset, size=state.size,
                line_no=state.line_no,
                signature=json.dumps({"anchor": state.anchor, "mtime": state.mtime,
                                      "inode": state.inode,
                                      "unterminated": state.unterminated, "skew": skew,
                                      "bar": bar.to_json() if bar is not None else None}),
            )

    def _saved(self, jw: JobWatch, kind: str, path: str) -> FollowedFile:
        """The job's file at `path` as the store kept it: its tail state (from 0 when none)
        and, for a log, its clock's skew and the bar last seen on its unfinished last line."""
        saved = self.store.tail_offsets.get(str(jw.job_id), path)
        if saved is None or saved.offset <= 0:
            return FollowedFile(kind, path, TailState(path=path), restored=True)
        try:
            sig = json.loads(saved.inode_or_signature or "{}")
        except ValueError:
            sig = {}
        state = TailState(path=path, offset=saved.offset, size=saved.size,
                          line_no=saved.line_no, anchor=sig.get("anchor", ""),
                          mtime=sig.get("mtime"), inode=sig.get("inode"),
                          unterminated=bool(sig.get("unterminated", False)))
        skew = sig.get("skew")
        return FollowedFile(kind, path, state, restored=True,
                            skew=float(skew) if isinstance(skew, int | float) else None,
                            bar=UnfinishedBar.from_json(sig.get("bar")))

    def _warm_up(self, jw: JobWatch, state: TailState, window: bytes,
                 target: LogAnalysis | SamplerSeries) -> LogAnalysis | SamplerSeries:
        """After a restart: the analysis rebuilt from the bytes just before the persisted
        offset (a silent job is still judged against its last progress line)."""
        if not window:
            return target
        if state.unterminated:  # it ends with the last line taken without its newline
            window += b"\n"
        if len(window) < state.offset:  # the window starts inside a line: skip to the next
            cut = window.find(b"\n") + 1
            window = window[cut:] if cut else b""
        if isinstance(target, LogAnalysis):
            target.lines = max(0, state.line_no - window.count(b"\n"))
            target.feed(window)
        else:
            target.feed_lines(window.decode("utf-8", "replace").splitlines())
        return target

    def log_path(self, jw: JobWatch, record: JobRecord) -> str | None:
        """Where the job's log is: as Slurm says (squeue; sacct from 23.02 on); once
        squeue forgot a finished job (MinJobAge) and sacct does not say (22.05), the path it
        was followed at (in memory, else its stored offset: after a restart); else the
        recipe's `log_path` pattern (`%A_%a` of an array task too)."""
        if record.stdout_path:
            return record.stdout_path
        if jw.log is not None:
            return jw.log.path
        sampler = self.sampler_path(jw, record)
        followed = [p for p in self.store.tail_offsets.paths(str(jw.job_id)) if p != sampler]
        if followed:
            return followed[0]
        cfg = self._recipe_cfg(jw.recipe)
        if cfg is None or not cfg.log_path:
            return None
        return self._expand(cfg.log_path, cfg, jw, record)

    def sampler_path(self, jw: JobWatch, record: JobRecord) -> str | None:
        """Where the job's sampler file is: the recipe's `sampler_path` pattern, expanded as
        its `log_path` is."""
        cfg = self._recipe_cfg(jw.recipe)
        pattern = getattr(cfg, "sampler_path", None) if cfg is not None else None
        if cfg is None or not pattern:
            return None
        return self._expand(pattern, cfg, jw, record)

    @staticmethod
    def _expand(pattern: str, cfg: RecipeConfig, jw: JobWatch, record: JobRecord) -> str:
        """A recipe's file pattern for this job, as sbatch's `--output` is expanded for its
        batch step (every field: an array task's `%A_%a`, its node's `%N`). `%N` is the
        batch host's short name, which accounting gives as its node's name: the same unless
        the site names its nodes apart from their hosts (NodeHostname)."""
        return expand_output_pattern(pattern, job_id=record.job_id,
                                     name=record.name or cfg.job_name or jw.recipe,
                                     user=record.user, node=record.node,
                                     array_job_id=record.array_job_id,
                                     array_task_id=record.array_task_id,
                                     workdir=record.workdir or cfg.workdir)
