"""Log following: only the new bytes of each running job's log (and sampler file), by offset.

Offsets live in the store (`tail_offsets`), written at most every `persist_every_s` for a busy
log: after a crash the watcher re-reads at most that much (event keys make it harmless).

Restart: the in-memory analysis is rebuilt from the persisted offset after re-reading a
bounded window (`warmup_bytes`) before it, so a job that is silent right now (a hang) is still
judged against its last progress line.

Log clock vs wall clock: log timestamps are parsed as written (no time zone). The follower
keeps `skew = last log time - the file's mtime` (when that line was written; the read time if
SFTP gives no mtime) and the watcher judges a running job at `now + skew` on the log's clock,
so a silent log ages with the wall clock — also right after a restart, from the persisted
mtime.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.cluster.tail import TailState, read_new_lines
from bot.config import RecipeConfig
from bot.core.diagnose import LogAnalysis
from bot.core.models import Diagnosis
from bot.core.sampler_series import SamplerSeries
from bot.core.slurm.records import JobRecord
from bot.core.slurm.values import expand_output_pattern
from bot.services.ports import SFTP
from bot.services.watch.events import TickReport
from bot.store import Attempt, Store


@dataclass
class JobWatch:
    """What the watcher keeps of one watched job between ticks (in memory only)."""

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
    attempt: Attempt | None = None  # the store's attempt row as last read / written
    diagnosis: Diagnosis | None = None  # the last full diagnosis of the running job
    judged_at: float = 0.0
    attempt_written_at: float | None = None
    rss_step: str | None = None  # the sstat step whose MaxRSS was last fed to the analysis


class LogFollower:
    """Reads a cluster's job logs through SFTP into each job's analysis and sampler series.

    `sftp` returns the cluster's SFTP client (asked lazily, per read); `recipe_cfg` maps a
    recipe name to its config (None: unknown); `new_analysis` makes a fresh LogAnalysis for
    a recipe (a log that restarted, after a requeue or rotation, is analysed anew).
    """

    def __init__(self, *, sftp: Callable[[], SFTP], store: Store,
                 recipe_cfg: Callable[[str | None], RecipeConfig | None],
                 new_analysis: Callable[[str | None], LogAnalysis],
                 max_bytes_per_job: int, warmup_bytes: int, persist_every_s: float) -> None:
        self._sftp = sftp
        self.store = store
        self._recipe_cfg = recipe_cfg
        self._new_analysis = new_analysis
        self.max_bytes_per_job = max_bytes_per_job
        self.warmup_bytes = warmup_bytes
        self.persist_every_s = persist_every_s

    def read(self, jw: JobWatch, record: JobRecord, now: float, report: TickReport,
              drain: bool = False) -> bool:
        """Read new log (and sampler) lines; True when unread log bytes remain."""
        path = self.log_path(jw, record)
        more = False
        if path is not None:
            before = jw.log.offset if jw.log is not None else None
            jw.log, more = self._tail(jw, path, jw.log, jw.analysis, report, drain, now)
            last = jw.analysis.series.last_time
            if last is not None and (jw.skew is None or jw.log.offset != before):
                # The file's mtime is when its last line was written (cluster clock, synced
                # with ours by NTP); without it, when we read it.
                written = jw.log.mtime if jw.log.mtime is not None else now
                jw.skew = last - written
        sampler_path = self.sampler_path(jw, record)
        if sampler_path is not None:
            jw.sampler_tail, _ = self._tail(jw, sampler_path, jw.sampler_tail, jw.sampler,
                                            report, drain, now)
        return more

    def _tail(self, jw: JobWatch, path: str, state: TailState | None,
              target: LogAnalysis | SamplerSeries,
              report: TickReport, drain: bool, now: float) -> tuple[TailState, bool]:
        """Read up to `max_bytes_per_job` new bytes of `path` into `target`; persist the
        offset. Returns the new state and whether unread bytes remain."""
        # Asked for each time: the factory (ClusterSessions) caches the channel and
        # reopens it after a reconnect; a copy kept here would go stale.
        sftp = _CountingSFTP(self._sftp(), report)
        restored = state is None or state.path != path
        if restored:
            state = self._restore(jw, sftp, path, target)
        start_state = None if restored else state
        budget = self.max_bytes_per_job
        more = False
        while True:
            chunk = read_new_lines(sftp, state, max_bytes=budget)
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
            budget -= chunk.bytes_read
            if not (drain and chunk.more and chunk.bytes_read and budget > 0):
                more = chunk.more
                break
        last = jw.persisted_at.get(path)
        due = last is None or now - last >= self.persist_every_s
        if state != start_state and due:  # an idle log costs no write; a busy one, few
            jw.persisted_at[path] = now
            self.store.tail_offsets.put(
                str(jw.job_id), path, offset=state.offset, size=state.size,
                line_no=state.line_no,
                signature=json.dumps({"anchor": state.anchor, "mtime": state.mtime,
                                      "inode": state.inode}),
            )
        return state, more

    def _restore(self, jw: JobWatch, sftp: SFTP, path: str,
                 target: LogAnalysis | SamplerSeries) -> TailState:
        """The persisted tail state, with the analysis warmed up on the bytes before it."""
        saved = self.store.tail_offsets.get(str(jw.job_id), path)
        if saved is None or saved.offset <= 0:
            return TailState(path=path)
        try:
            sig = json.loads(saved.inode_or_signature or "{}")
        except ValueError:
            sig = {}
        state = TailState(path=path, offset=saved.offset, size=saved.size,
                          line_no=saved.line_no, anchor=sig.get("anchor", ""),
                          mtime=sig.get("mtime"), inode=sig.get("inode"))
        start = max(0, saved.offset - self.warmup_bytes)
        try:
            with sftp.open(path, "rb") as f:
                f.seek(start)
                window = f.read(saved.offset - start)
        except OSError:
            return state
        if start > 0:
            cut = window.find(b"\n") + 1
            window = window[cut:] if cut else b""
        if isinstance(target, LogAnalysis):
            target.lines = max(0, saved.line_no - window.count(b"\n"))
            target.feed(window)
        else:
            target.feed_lines(window.decode("utf-8", "replace").splitlines())
        return state

    def log_path(self, jw: JobWatch, record: JobRecord) -> str | None:
        if record.stdout_path:
            return record.stdout_path
        cfg = self._recipe_cfg(jw.recipe)
        if cfg is None or not cfg.log_path:
            return None
        return expand_output_pattern(cfg.log_path, job_id=record.job_id,
                                     name=record.name or cfg.job_name or jw.recipe,
                                     user=record.user, workdir=record.workdir or cfg.workdir)

    def sampler_path(self, jw: JobWatch, record: JobRecord) -> str | None:
        cfg = self._recipe_cfg(jw.recipe)
        if cfg is None or not getattr(cfg, "sampler_path", None):
            return None
        return expand_output_pattern(cfg.sampler_path, job_id=record.job_id,
                                     name=record.name or cfg.job_name or jw.recipe,
                                     user=record.user, workdir=record.workdir or cfg.workdir)


class _CountingSFTP:
    """An SFTP client counting its requests (stat, open, each read, close) and the bytes read
    into the tick's report: each is one round trip to the login node."""

    def __init__(self, inner: SFTP, report: TickReport) -> None:
        self._inner, self._report = inner, report

    def _count(self, n_bytes: int = 0) -> None:
        self._report.round_trips += 1
        self._report.read_round_trips += 1
        self._report.bytes_moved += n_bytes

    def stat(self, path: str) -> Any:
        self._count()
        return self._inner.stat(path)

    def open(self, filename: str, mode: str = "r", bufsize: int = -1) -> Any:
        self._count()
        return _CountingFile(self._inner.open(filename, mode, bufsize), self._count)


class _CountingFile:
    def __init__(self, inner: Any, count: Callable[..., None]) -> None:
        self._inner, self._count = inner, count

    def __enter__(self) -> _CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def seek(self, offset: int, whence: int = 0) -> Any:
        return self._inner.seek(offset, whence)

    def read(self, n: int = -1) -> bytes:
        data = self._inner.read(n)
        self._count(len(data))
        return data

    def close(self) -> None:
        self._count()
        self._inner.close()
