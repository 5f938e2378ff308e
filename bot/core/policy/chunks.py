"""Time-limit chunks: a run split into wall-clock chunks (Megatron's --exit-interval or
--exit-duration-in-mins, or a job that reaches Slurm's --time on purpose and resumes) ends each
chunk as `time_limit`. A chunk that saved a newer complete checkpoint of its own run than the
one it resumed from made progress: its resubmit is the run going on, not a retry, and spends
no retry (`chunk_progress`). One that saved none charges as any time limit does, so a run that
times out before its first save still stops at its budget. The run's end is no chunk: a stop
at or past its target iteration is diagnosed `completed`.

Bounds: the progress must be the run's own (past its start, not past its target; a
checkpoint without an iteration in its name counts when its name changed), its start must be
known (a whole-array submit's task, a job trainbot did not submit: charged, and the thread
says why: `chunk_start_unknown`), and at most `max_free_chunks` (policy) chunks in a row go
free: the next one is charged as a retry and the thread says so, so a checkpoint that keeps
moving for another reason cannot resubmit forever. The rules are bot.core.models
.chunk_advanced and free_chunks, which an array task's budget counts by too
(bot.core.arrays.task_retries_used)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.models import (
    TIME_LIMIT_CLASSES,
    CheckpointMark,
    ChunkBounds,
    chunk_advanced,
    free_chunks,
    free_chunks_in_a_row,
)
from bot.core.policy.chain import ChainHistory


@dataclass(frozen=True)
class ChunkProgress:
    """A time-limit chunk that advanced the run: it resumed from `start` (its name None: from
    scratch; its iteration None: its name has none) and ended with the newest complete
    checkpoint `saved`. `in_a_row` free chunks came right before it; `capped`: that is the
    policy's `max_free_chunks`, so this one is charged as a retry."""

    start: CheckpointMark
    saved: CheckpointMark
    in_a_row: int = 0
    capped: bool = False

    @property
    def from_iter(self) -> int | None:
        return self.start.iteration

    @property
    def to_iter(self) -> int | None:
        return self.saved.iteration


def chunk_progress(class_id: str, history: ChainHistory, saved: CheckpointMark, *,
                   bounds: ChunkBounds) -> ChunkProgress | None:
    """The progress of the attempt being decided (the last of `history`, its `start` the
    checkpoint it resumed from) when it ended at its time limit and the newest complete
    checkpoint, `saved`, is a newer one of its run (bot.core.models.chunk_advanced, within
    the run's `bounds`: its target); None otherwise (another class, no checkpoint, none
    newer, an unknown start). Capped when the chunks before it were the `bounds`'
    `max_free_chunks` free ones in a row."""
    if not history.attempts:
        return None
    start = history.attempts[-1].start
    if start is None or not chunk_advanced(class_id, start, saved,
                                           target_iter=bounds.target_iter):
        return None
    before = free_chunks([(a.class_id, a.start) for a in history.attempts], bounds=bounds)
    in_a_row = free_chunks_in_a_row(before)
    return ChunkProgress(start=start, saved=saved, in_a_row=in_a_row,
                         capped=in_a_row >= bounds.max_free_chunks)


def chunk_start_unknown(class_id: str, history: ChainHistory, saved: CheckpointMark) -> bool:
    """Did the attempt being decided (the last of `history`) end at its time limit leaving a
    complete checkpoint, `saved`, while where it started is unknown (a whole-array submit's
    task, a job trainbot did not submit)? It may have been a chunk, but nothing shows it saved
    that checkpoint itself: it is charged, and its thread says why."""
    return (class_id in TIME_LIMIT_CLASSES and bool(history.attempts)
            and history.attempts[-1].start is None
            and (saved.name is not None or saved.iteration is not None))
