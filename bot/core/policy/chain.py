"""What the policy reads about a run chain: its attempts and the early warnings already posted
(from the store), and the rules over a chain's attempt rows: which of them are the history a
finished job is judged against (`run_history`, `task_history`, `own_history`), which are one
run's (`run_rows`, `run_latest`: an array task's, or the whole chain's) and a job's array task's
(`task_rows`), when a chain whose jobs run side by side has ended
(`parallel_chain_end`), and what a progress write changes in a row (`attempt_progress`). The
rows come in as `AttemptRow`s (the store's attempts rows are); bot.services.watch.chains
reads them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from bot.core.arrays import task_retries_through
from bot.core.models import DEFAULT_CHUNK_BOUNDS, CheckpointMark, ChunkBounds
from bot.core.slurm.states import ended_unstarted


@dataclass(frozen=True)
class AttemptFacts:
    """One attempt of a run chain as the policy needs it (from the store's attempts table).

    `last_iter` is the highest iteration the attempt logged (None: none logged); it resumed
    from the checkpoint `start_checkpoint` (its path; None: none, from scratch) at
    `start_iter` (None: none, or its name has none), unless `start_known` is False: trainbot
    did not choose it (a task of a whole-array submit, a job it did not submit). `ran` is
    False for an attempt that ended while it waited in the queue (its row's
    bot.core.slurm.states.ended_unstarted)."""

    job_id: str
    attempt_no: int
    last_iter: int | None = None
    start_iter: int | None = None
    class_id: str | None = None
    ended_at: float | None = None
    start_checkpoint: str | None = None
    start_known: bool = True
    ran: bool = True

    @property
    def start(self) -> CheckpointMark | None:
        """The checkpoint it resumed from as the chunk rule compares them (None: unknown)."""
        return CheckpointMark.of(self.start_checkpoint, self.start_iter) \
            if self.start_known else None


@dataclass(frozen=True)
class PastWarning:
    """An early warning already posted in this chain (from the store's incidents)."""

    class_id: str  # memory_leak | hang | low_gpu_util
    at: float
    projected_oom_iter: int | None = None
    stall_started_at: float | None = None
    job_id: str | None = None
    key: str | None = None  # its outbox key (a stall's prompt is posted under it)
    last_iter: int | None = None  # the job's last iteration its diagnosis saw (a stall's)


@dataclass(frozen=True)
class ChainHistory:
    """The run chain so far. `attempts` is oldest first and ENDS with the attempt being
    decided about; `retries_used` is the charged resubmits so far (chains.retries_used)."""

    attempts: tuple[AttemptFacts, ...] = ()
    retries_used: int = 0
    warnings: tuple[PastWarning, ...] = ()

    @property
    def resubmits_so_far(self) -> int:
        """The earlier attempts (all but the last) that ran: the resubmits the backoff
        doubles for. One that ended while it waited in the queue ran nothing and crashed
        nothing, so it is no step of a crash loop."""
        return sum(1 for a in self.attempts[:-1] if a.ran)


class AttemptRow(Protocol):
    """An attempt of a chain as the chain rules below read it (the store's attempts row is
    one): `array_task` is the array task it ran (None: not an array's task), `result` its
    final Slurm state, `cause` its diagnosis class (None while it runs), `started_at` when it
    started (None: not seen to start) and `checkpoint_path` the checkpoint it resumed from
    (None: none)."""

    @property
    def job_id(self) -> str: ...
    @property
    def attempt_no(self) -> int: ...
    @property
    def last_iter(self) -> int | None: ...
    @property
    def start_iter(self) -> int | None: ...
    @property
    def checkpoint_path(self) -> str | None: ...
    @property
    def ended_at(self) -> float | None: ...
    @property
    def result(self) -> str | None: ...
    @property
    def started_at(self) -> float | None: ...
    @property
    def cause(self) -> str | None: ...
    @property
    def array_task(self) -> int | None: ...


class TaskRow(Protocol):
    """An attempt row as `run_rows` and `task_rows` read it: its job and the array task it
    ran (None: it names none)."""

    @property
    def job_id(self) -> str: ...
    @property
    def array_task(self) -> int | None: ...


RowT = TypeVar("RowT", bound=TaskRow)


def run_rows(rows: Sequence[RowT], task: int | None) -> list[RowT]:
    """The attempt rows of one run among a chain's `rows`, in their order: array task
    `task`'s (its first attempt and its one-task resubmits; the array's other tasks run side
    by side, no attempt of it), or with `task` None all of them (a chain whose attempts ran
    one after another)."""
    if task is None:
        return list(rows)
    return [a for a in rows if a.array_task == task]


def run_latest(rows: Sequence[RowT], task: int | None) -> RowT | None:
    """The latest attempt of that run (`run_rows`'s last; None: it has none)."""
    mine = run_rows(rows, task)
    return mine[-1] if mine else None


def task_rows(rows: Sequence[RowT], job_id: str) -> list[RowT]:
    """The rows of job `job_id`'s array task among a chain's `rows`, in their order: every
    attempt of the task its row ran (`run_rows`: its first one and the task's one-task
    resubmits), its own row among them; the other tasks' are left out (they run side by side,
    no attempt of this one). A row naming no task is only itself; a job with no row has none."""
    task = next((a.array_task for a in rows if a.job_id == job_id), None)
    if task is None:
        return [a for a in rows if a.job_id == job_id]
    return run_rows(rows, task)


def _facts(row: AttemptRow, attempt_no: int, current_job: str | None,
           current_last_iter: int | None, *, start_known: bool = True) -> AttemptFacts:
    """`row` as the policy reads it; the job being judged at `current_last_iter` (when
    known: its row holds the last iteration persisted, which may lag)."""
    last = row.last_iter
    if row.job_id == current_job and current_last_iter is not None:
        last = current_last_iter
    return AttemptFacts(row.job_id, attempt_no, last_iter=last, start_iter=row.start_iter,
                        class_id=row.cause, ended_at=row.ended_at,
                        start_checkpoint=row.checkpoint_path, start_known=start_known,
                        ran=not ended_unstarted(row.result, row.started_at, row.last_iter))


def own_history(current_job: str | None, current_last_iter: int | None) -> ChainHistory:
    """The history of a job judged on its own (no chain, or an adopted job's or array's:
    its jobs run side by side, not one after another): itself, no retries, no warnings; the
    checkpoint it resumed from is unknown (trainbot did not submit it)."""
    if current_job is None:
        return ChainHistory()
    return ChainHistory(attempts=(AttemptFacts(current_job, 1, last_iter=current_last_iter,
                                               start_known=False),))


def run_history(rows: Sequence[AttemptRow], *, current_job: str | None,
                current_last_iter: int | None, retries_used: int,
                warnings: Sequence[PastWarning] = ()) -> ChainHistory:
    """The history of a chain trainbot ran one attempt after another: every attempt row
    (oldest first, each its own `attempt_no`), the current job's at `current_last_iter`, and
    the chain's retries used."""
    return ChainHistory(
        attempts=tuple(_facts(a, a.attempt_no, current_job, current_last_iter) for a in rows),
        retries_used=retries_used, warnings=tuple(warnings))


def task_history(rows: Sequence[AttemptRow], *, current_job: str,
                 current_last_iter: int | None, catalogue: Any,
                 warnings: Sequence[PastWarning] = (),
                 bounds: ChunkBounds = DEFAULT_CHUNK_BOUNDS) -> ChainHistory:
    """The history of a task of an array trainbot submitted, judged on its own: the rows of
    the current job's task (`task_rows`: its earlier attempts are that task's one-task
    resubmits; a row naming no task is only itself), numbered 1.. oldest first, and the
    retries of the task's own budget its other attempts spent
    (bot.core.arrays.task_retries_through, its chunks counted within the run's `bounds`).
    A job with no row yet is its own first attempt. A
    task's first attempt came from the whole array's submit, which names no checkpoint: where
    it resumed from is unknown."""
    mine = task_rows(rows, current_job)
    facts = [_facts(a, n, current_job, current_last_iter, start_known=n > 1)
             for n, a in enumerate(mine, start=1)]
    if not facts:
        facts = [AttemptFacts(current_job, 1, last_iter=current_last_iter, start_known=False)]
    used = task_retries_through(mine, current_job, catalogue, bounds=bounds)
    return ChainHistory(attempts=tuple(facts), retries_used=used, warnings=tuple(warnings))


def parallel_chain_end(read_rows: Callable[[], Sequence[AttemptRow]], *, jobs_watched: bool,
                       resubmit_pending: bool) -> str | None:
    """How a chain whose jobs run side by side (an adopted job's, an array's) has ended:
    None while any of its jobs is watched or a resubmit of a task is pending (waiting out
    its backoff, or left `submitting` by a crash after sbatch: its job is to come);
    "completed" when the latest attempt of every task (of a job that is no array's task:
    every attempt) completed and was diagnosed so, else "stopped" (no attempt at all, one
    that failed, vanished or was cancelled). The attempt rows are read (`read_rows`) only
    once the chain may have ended: a large array asks this at each task's end."""
    if jobs_watched or resubmit_pending:
        return None
    latest: dict[int | str, AttemptRow] = {}
    for a in read_rows():
        latest[a.array_task if a.array_task is not None else a.job_id] = a
    done = bool(latest) and all(a.result == "COMPLETED" and a.cause in (None, "completed")
                                for a in latest.values())
    return "completed" if done else "stopped"


def root_rewrite_due(*, state_changed: bool, rewritten_at: float | None, now: float,
                     min_interval_s: float) -> bool:
    """Whether a thread's root is rewritten (chat.update) at the end of the tick at `now`:
    at once when a row it shows changed state (a job started, failed, ended); for progress
    alone (an iteration written to a row) only when its last rewrite, at `rewritten_at`
    (None: none yet), is `min_interval_s` old, else the progress waits for a later tick.
    chat.update is rate-limited per workspace and shared by every run: an array whose
    tasks write their progress on different ticks costs at most one rewrite per interval."""
    return state_changed or rewritten_at is None or now - rewritten_at >= min_interval_s


RootWaiting = tuple[float, int]
"""A root due for its progress alone: (its last rewrite, -inf: none yet; its chain's id). These
sort the most overdue first: never rewritten, then the oldest rewrite, the lower id on a tie."""


def roots_due(*, progressed: Iterable[int], rewritten_at: Mapping[int, float | None],
              now: float, min_interval_s: float) -> list[RootWaiting]:
    """The roots of `progressed` chains (progress alone) due at `now` by `root_rewrite_due`
    (their last rewrite in `rewritten_at`, missing or None: none yet), most overdue first."""
    return sorted(
        (float("-inf") if (at := rewritten_at.get(chain_id)) is None else at, chain_id)
        for chain_id in set(progressed)
        if root_rewrite_due(state_changed=False, rewritten_at=rewritten_at.get(chain_id),
                            now=now, min_interval_s=min_interval_s))


REWRITE_SLOT_REST_S = 60.0
"""How long a slot of the workspace's budget of progress rewrites rests after it let a root be
rewritten (`free_rewrite_slots`): the budget is counted a minute."""


def free_rewrite_slots(granted_at: Mapping[int, float], *, budget: int,
                       now: float) -> list[int]:
    """The slots of a budget of `budget` progress rewrites a minute (0 .. budget - 1) that may
    let a root be rewritten at `now`, lowest first: never used, or last used (`granted_at`, by
    slot) a minute or more before. Each rewrite takes a free slot for a minute, so however
    the rewrites of several replicas fall, no 60 seconds hold more than `budget` of them (a
    slot a replica whose clock runs ahead used "in the future" rests until it is a minute
    old here)."""
    return [slot for slot in range(max(0, budget))
            if slot not in granted_at or now - granted_at[slot] >= REWRITE_SLOT_REST_S]


def roots_to_rewrite(*, restated: Iterable[int], due: Iterable[RootWaiting],
                     progress_budget: int,
                     waiting_elsewhere: Iterable[RootWaiting] = ()) -> list[int]:
    """The chains whose roots are rewritten at the end of a tick, in that order: every one
    whose row changed state (`restated`), never held back; then of those `due` for progress
    alone (`roots_due`), the ones among the `progress_budget` most overdue of `due` and
    `waiting_elsewhere` (roots due on the workspace's other clusters, which their own ticks
    rewrite: the budget left is theirs first when they wait longer). The rest stay pending
    and come first at a later tick. After a long downtime every progressing root is due at
    once: the budget spreads their rewrites (chat.update, rate-limited per workspace) over
    ticks instead of one burst that incidents would queue behind, and roots rewritten on
    different ticks stay apart at later intervals."""
    state = sorted(set(restated))
    mine = {chain_id for _, chain_id in due} - set(state)
    ranked = sorted({*((at, c) for at, c in due if c in mine), *waiting_elsewhere})
    return state + [c for _, c in ranked[:max(0, progress_budget)] if c in mine]


def attempt_progress(row: AttemptRow, fields: Mapping[str, Any], *, now: float,
                     written_at: float | None, persist_every_s: float,
                     force: bool = False) -> dict[str, Any]:
    """What a progress write changes in an attempt `row` (written last at `written_at`):
    the `fields` given (None: not known, left as it is) that differ from the row's, its last
    iteration never below the row's (a log read again from an earlier offset); nothing when
    only the last iteration changed less than `persist_every_s` after the last write, unless
    `force` (the job's end). A change of state is written at once."""
    values = {k: v for k, v in fields.items() if v is not None}
    if values.get("last_iter") is not None and row.last_iter is not None:
        values["last_iter"] = max(values["last_iter"], row.last_iter)
    changed = {k: v for k, v in values.items() if getattr(row, k) != v}
    recent = written_at is not None and now - written_at < persist_every_s
    if set(changed) == {"last_iter"} and recent and not force:
        return {}
    return changed
