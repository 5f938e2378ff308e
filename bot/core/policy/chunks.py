"""Time-limit chunks: a run split into wall-clock chunks (Megatron's --exit-interval or
--exit-duration-in-mins, or a job that reaches Slurm's --time on purpose and resumes) ends each
chunk as `time_limit`. A chunk that saved a newer complete checkpoint than the one it resumed
from made progress: its resubmit is the run going on, not a retry, and spends no retry
(`chunk_progress`). One that saved none charges as any time limit does, so a run that times
out before its first save still stops at its budget. The run's end is no chunk: a stop at or
past its target iteration is diagnosed `completed`. The rule itself is
bot.core.models.chunk_advanced, which an array task's budget counts by too
(bot.core.arrays.task_retries_used)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.models import chunk_advanced
from bot.core.policy.chain import ChainHistory


@dataclass(frozen=True)
class ChunkProgress:
    """A time-limit chunk that advanced the run: it resumed from the checkpoint at
    `from_iter` (None: from scratch) and ended with the newest complete one at `to_iter`."""

    from_iter: int | None
    to_iter: int


def chunk_progress(class_id: str, history: ChainHistory,
                   checkpoint_iter: int | None) -> ChunkProgress | None:
    """The progress of the attempt being decided (the last of `history`, its `start_iter` the
    checkpoint it resumed from) when it ended at its time limit and the newest complete
    checkpoint, `checkpoint_iter`, is past that one; None otherwise (another class, no
    checkpoint, or none newer than its start: less than one checkpoint of progress)."""
    start = history.attempts[-1].start_iter if history.attempts else None
    if not history.attempts or checkpoint_iter is None \
            or not chunk_advanced(class_id, start, checkpoint_iter):
        return None
    return ChunkProgress(from_iter=start, to_iter=checkpoint_iter)

