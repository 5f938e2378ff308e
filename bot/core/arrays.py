"""Job arrays (pure): which tasks of a watched array started (`new_array_tasks`), the array's
thread root with one row per task (state, progress, outcome) within Slack's limits however
many tasks it has (`build_array_root`), each task's retry budget (`task_retries_used`), and
what cancelling, holding or releasing a whole array did to which of its tasks
(`array_control`, `task_range`), and whether the store's record settles that a job is no
array's (`recorded_plain`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from bot.core.models import DEFAULT_CHUNK_BOUNDS, CheckpointMark, ChunkBounds, free_chunks
from bot.core.slurm.job_ref import array_task_in
from bot.core.slurm.records import JobRecord
from bot.core.slurm.states import (
    FINISHED_STATES,
    PAUSED_STATES,
    PENDING_STATES,
    RUNNING_STATES,
    ended_unstarted,
)

#: Rows shown at most; the other tasks are counted by state in one line. 40 rows of about
#: 60 characters stay well inside a section's 3,000 characters.
MAX_TASK_ROWS = 40



class ArrayChain(Protocol):
    """A watched job's chain as `new_array_tasks` reads it (the store's chains row is one):
    `array_job_id` is the whole array's id when `is_array`."""

    @property
    def id(self) -> int: ...

    @property
    def is_array(self) -> bool: ...

    @property
    def array_job_id(self) -> int | None: ...


ChainT = TypeVar("ChainT", bound=ArrayChain)


def new_array_tasks(watched: Iterable[tuple[str, ChainT | None]], records: Collection[JobRecord],
                    attempt_jobs: Callable[[int], Collection[str]]
                    ) -> list[tuple[ChainT, JobRecord]]:
    """The tasks of the watched arrays that started and are no attempt of their chain yet, as
    (chain, record): `watched` is each watched job's id with its chain (None: none),
    `records` what squeue and sacct said, `attempt_jobs(chain_id)` the job ids of a chain's
    attempts (asked only of an array with tasks among `records`). A record is a task of an
    array when its `array_job_id` is the array's or that of a watched job of the array's
    chain (a task's resubmit is a one-task array of its own). Arrays in the order their jobs
    are watched, each one's tasks in task order."""
    arrays: dict[int, tuple[ChainT, set[int]]] = {}
    for job_id, chain in watched:
        if chain is not None and chain.is_array and chain.array_job_id is not None:
            arrays.setdefault(chain.id, (chain, {chain.array_job_id}))[1].add(int(job_id))
    started: list[tuple[ChainT, JobRecord]] = []
    for chain, array_ids in arrays.values():
        tasks = [r for r in records
                 if r.array_job_id in array_ids and r.array_task_id is not None]
        if not tasks:
            continue
        known = attempt_jobs(chain.id)
        started.extend((chain, r) for r in sorted(tasks, key=lambda r: r.array_task_id or 0)
                       if str(r.job_id) not in known)
    return started


@dataclass(frozen=True)
class ArrayTask:
    """One started task as the store has it: `display_id` `123_4`, its raw `job_id`."""

    display_id: str
    job_id: str
    state: str
    last_iter: int | None = None
    cause: str | None = None
    attempt: int = 1  # 2 once the task was resubmitted (`140_4` for `123_4`), …

    @property
    def task(self) -> int:
        task = array_task_in(self.display_id)
        return -1 if task is None else task


@dataclass(frozen=True)
class ArrayRootView:
    """The array thread's first message: counts by state, the rows shown, the rest counted."""

    array_job_id: int
    name: str
    cluster: str | None
    state: str  # the array's overall state (see `array_state`)
    counts: tuple[tuple[str, int], ...]  # (state, tasks), most frequent first
    rows: tuple[ArrayTask, ...]
    hidden: tuple[tuple[str, int], ...]  # (state, tasks) of the tasks without a row
    started: int
    waiting: bool  # tasks that have not started yet remain (the array's pending remainder)
    recipe: str | None = None  # the array recipe trainbot submitted it from; None: adopted


def _rank(task: ArrayTask) -> int:
    """Which tasks keep a row when there are too many: failures, then running, pending,
    completed last (the ones nobody needs to look at)."""
    if task.state == "COMPLETED" and task.cause in (None, "completed"):
        return 3
    if task.state in FINISHED_STATES:
        return 0
    if task.state in RUNNING_STATES:
        return 1
    return 2


def array_state(tasks: Sequence[ArrayTask], waiting: bool) -> str:
    """RUNNING while a task runs; while none runs but one is stopped (SIGSTOP) or suspended,
    STOPPED (or SUSPENDED, when none is stopped): not RUNNING, as its processes do not run;
    PENDING while only waiting ones remain, and once every task ended: COMPLETED when all
    completed, else FAILED."""
    if any(t.state in RUNNING_STATES and t.state not in PAUSED_STATES for t in tasks):
        return "RUNNING"
    paused = {t.state for t in tasks if t.state in PAUSED_STATES}
    if paused:
        return "STOPPED" if "STOPPED" in paused else "SUSPENDED"
    if waiting or any(t.state in PENDING_STATES for t in tasks):
        return "PENDING"
    if tasks and all(t.state == "COMPLETED" and t.cause in (None, "completed") for t in tasks):
        return "COMPLETED"
    return "FAILED" if tasks else "PENDING"


def latest_per_task(tasks: Sequence[ArrayTask]) -> list[ArrayTask]:
    """One entry per task: its latest attempt (the last given), numbered by how many it had;
    a task resubmitted as `140_4` is the row of `123_4`."""
    latest: dict[int | str, ArrayTask] = {}
    count: Counter[int | str] = Counter()
    for t in tasks:
        key: int | str = t.task if t.task >= 0 else t.display_id
        count[key] += 1
        latest[key] = t
    return [replace(t, attempt=count[k]) for k, t in latest.items()]


def build_array_root(*, array_job_id: int, name: str, tasks: Sequence[ArrayTask],
                     waiting: bool, cluster: str | None = None, recipe: str | None = None,
                     max_rows: int = MAX_TASK_ROWS) -> ArrayRootView:
    """The root view of array `array_job_id` from its started tasks' attempts, oldest first
    (a resubmitted task's latest attempt is its row). Up to `max_rows` rows, in task order;
    beyond that the tasks that failed, run or wait keep their rows before completed ones,
    and the rest are counted by state."""
    ordered = sorted(latest_per_task(tasks), key=lambda t: t.task)
    kept = set(sorted(range(len(ordered)), key=lambda i: (_rank(ordered[i]), i))[:max_rows])
    rows = tuple(t for i, t in enumerate(ordered) if i in kept)
    hidden = Counter(t.state for i, t in enumerate(ordered) if i not in kept)
    counts = Counter(t.state for t in ordered)
    return ArrayRootView(
        array_job_id=array_job_id, name=name, cluster=cluster,
        state=array_state(ordered, waiting),
        counts=tuple(counts.most_common()), rows=rows,
        hidden=tuple(hidden.most_common()), started=len(ordered), waiting=waiting,
        recipe=recipe or None,
    )


def task_retries_used(attempts: Sequence[tuple[str | None, CheckpointMark | None]],
                      catalogue: Any, *, bounds: ChunkBounds = DEFAULT_CHUNK_BOUNDS) -> int:
    """The retries a task of an array trainbot submitted has spent, from its attempts oldest
    first as (cause, the checkpoint it resumed from; None: unknown) through the latest: each
    attempt before the latest was resubmitted, and spent a retry when its cause charges the
    budget (the catalogue's `charges_budget`; an unknown or missing cause charges), unless it
    was a free time-limit chunk (bot.core.models.free_chunks: the next attempt resumed past
    its own start, within the run's `bounds`: its target, at most its free chunks in a row).
    Each task has its own budget."""
    def charges(cause: str | None) -> bool:
        if cause is None:
            return True
        try:
            return bool(catalogue.get(cause).charges_budget)
        except KeyError:
            return True

    free = free_chunks(attempts, bounds=bounds)
    return sum(1 for (cause, _), was_free in zip(attempts, free, strict=False)
               if charges(cause) and not was_free)


def task_attempts(rows: Sequence[Any]) -> list[tuple[str | None, CheckpointMark | None]]:
    """One task's attempt rows (oldest first, each with `cause`, `start_iter` and
    `checkpoint_path`: the store's attempts) as `task_retries_used` reads them. The first came
    from the whole array's submit, which names no checkpoint: where it resumed from is
    unknown; each resubmit of the task resumed from the checkpoint it records. An attempt
    that ended while it waited in the queue (bot.core.slurm.states.ended_unstarted) is left
    out: it ran nothing, so its resubmit spent no retry."""
    return [(a.cause, CheckpointMark.of(a.checkpoint_path, a.start_iter) if n else None)
            for n, a in enumerate(rows)
            if not ended_unstarted(getattr(a, "result", None), getattr(a, "started_at", None),
                                   getattr(a, "last_iter", None))]


def task_retries_through(rows: Sequence[Any], job_id: str, catalogue: Any, *,
                         bounds: ChunkBounds = DEFAULT_CHUNK_BOUNDS) -> int:
    """`task_retries_used` of one task's attempt rows (`task_attempts`) through the row of job
    `job_id` (all of them when none is its): the retries the task had spent when that job
    ended."""
    through = next((n for n, a in enumerate(rows, start=1) if a.job_id == job_id), len(rows))
    return task_retries_used(task_attempts(rows[:through]), catalogue, bounds=bounds)


def retries_by_task(rows: Sequence[Any], catalogue: Any, *,
                    bounds_of: Callable[[Sequence[Any]], ChunkBounds] | None = None,
                    ) -> list[tuple[int, int]]:
    """(task, retries used) of each task of an array trainbot submitted that spent any, the
    most spent first (then by task): from its attempt rows, oldest first (each with
    `array_task` and what `task_attempts` reads). A task's retries are counted as its budget
    counts them (task_retries_used, within its run's bounds: `bounds_of` its rows, else the
    defaults), so a free resubmit (a node failure, a time-limit chunk that saved a
    checkpoint) is none."""
    by_task: dict[int, list[Any]] = {}
    for a in rows:
        if a.array_task is not None:
            by_task.setdefault(a.array_task, []).append(a)
    used = [(task, task_retries_used(task_attempts(mine), catalogue,
                                     bounds=bounds_of(mine) if bounds_of else DEFAULT_CHUNK_BOUNDS))
            for task, mine in by_task.items()]
    return sorted(((t, n) for t, n in used if n), key=lambda tn: (-tn[1], tn[0]))


#: Runs of task ids a task list names at most (`6101_[0-3,5,7-9,…]`): a section stays short
#: however scattered the tasks of a large array are.
MAX_TASK_RUNS = 20


def task_range(array_job_id: int, tasks: Iterable[int]) -> str:
    """Tasks of an array as Slurm's listings write them: `6101_2`, `6101_[0-3]`,
    `6101_[0-1,5]`; past MAX_TASK_RUNS runs of consecutive ids the rest is `…`."""
    ids = sorted(set(tasks))
    if len(ids) == 1:
        return f"{array_job_id}_{ids[0]}"
    runs: list[str] = []
    start = prev = ids[0] if ids else 0
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    shown = runs[:MAX_TASK_RUNS] + (["…"] if len(runs) > MAX_TASK_RUNS else [])
    return f"{array_job_id}_[{','.join(shown)}]"


@dataclass(frozen=True)
class ArrayControl:
    """An array's tasks as `scancel ARRAY`, `scontrol hold ARRAY` or `scontrol release
    ARRAY` found them, from their records just before it (as task ranges, `task_range`;
    None: no such task): those running (`running`: a cancel stops them, a hold or release
    leaves them running), those waiting (`waiting`: started before and requeued, or split
    off pending), whether tasks not started yet (the array's pending remainder, no task id
    of their own) are there (`not_started`) (a cancel cancels, a hold holds, a release
    releases both), those that had already ended, which none of them touches (`ended`),
    those suspended (`suspended`: `scontrol suspend`; a cancel cancels them, a hold does not
    reach them and a release does not resume them, so they stay suspended), and those
    stopped (`stopped`: Slurm's STOPPED, a task that started and whose processes were sent
    SIGSTOP, `scancel --signal=STOP`, keeping its allocation; a cancel ends it as it ends a
    running task, a hold only keeps waiting tasks from starting and a release does not
    continue it, which only SIGCONT does, so it stays stopped)."""

    running: str | None
    waiting: str | None
    not_started: bool
    ended: str | None
    suspended: str | None = None
    stopped: str | None = None


def array_control(array_job_id: int, records: Iterable[JobRecord]) -> ArrayControl:
    """`ArrayControl` from the array's records (bot.services.ports.Slurm.array_tasks) read
    before `scancel ARRAY` (which cancels every task of it still running or waiting) or
    `scontrol hold|release ARRAY` (which hold or release every task of it still waiting)."""
    running, waiting, ended, suspended, stopped = [], [], [], [], []
    not_started = False
    for rec in records:
        if rec.array_job_id != array_job_id:
            continue
        if rec.array_task_id is None:  # the pending remainder `123_[5-9]`
            not_started = not_started or not rec.is_finished
        elif rec.state == "SUSPENDED":  # neither running nor waiting: it waits to be resumed
            suspended.append(rec.array_task_id)
        elif rec.state == "STOPPED":  # started, its processes sent SIGSTOP: they do not run
            stopped.append(rec.array_task_id)
        elif rec.state in RUNNING_STATES:
            running.append(rec.array_task_id)
        elif rec.state in FINISHED_STATES:
            ended.append(rec.array_task_id)
        else:
            waiting.append(rec.array_task_id)

    def shown(ids: list[int]) -> str | None:
        return task_range(array_job_id, ids) if ids else None
    return ArrayControl(shown(running), shown(waiting), not_started, shown(ended),
                        shown(suspended), shown(stopped))


def recorded_plain(chain_kind: str | None, array_task: int | None) -> bool:
    """Whether the store's record of a job (its attempt's array task, its chain's kind; None:
    no chain) settles that it is a job of no array, so that controlling it needs no look at
    its array tasks. Only an adopted job's does: `/train watch` asked Slurm, which listed it
    as no array's (an array's id is adopted as an "array" chain). A recipe's run ("run") is
    recorded as it was submitted, and its batch script may ask for an array itself
    (`#SBATCH --array=0-3`, `-a`; or its site wrapper may pass `--array`): only Slurm knows
    then. An array task's attempt is a task, never a whole array."""
    return chain_kind == "adopted" and array_task is None
