"""Plain data shared across trainbot: what Slurm says about a job, and what trainbot concludes.

Pure: no I/O. Times are float seconds on the caller's clock (epoch seconds for real jobs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any

#: Classes whose action is STOP: never resubmitted, whatever a site's catalogue file says.
STOP_CLASSES = frozenset({"cuda_oom", "compiler_missing", "nan_loss", "silent_exit"})
#: Classes a person must act on before a resubmit can succeed (free the disk, move a broken
#: checkpoint aside): never resubmitted automatically, whatever a site's catalogue file says;
#: their action stays `ask` (or `stop`), and they are never retryable.
ASK_CLASSES = frozenset({"disk_full", "checkpoint_corrupt"})
#: `ask` classes whose usual fix is more host memory: propose "Resubmit with --mem=…".
MEMORY_CLASSES = frozenset({"host_oom", "dataloader_worker_killed"})
#: Classes that end a time-limit chunk of a run: Slurm's TIMEOUT, or the training framework's
#: own planned stop before it (Megatron's `[exiting program at iteration N]`).
TIME_LIMIT_CLASSES = frozenset({"time_limit"})


#: Time-limit chunks in a row a run may resubmit without charging its retry budget, by default
#: (the recipe's `policy.max_free_chunks`); the next one is charged as a retry.
DEFAULT_MAX_FREE_CHUNKS = 50


@dataclass(frozen=True)
class CheckpointMark:
    """A checkpoint as the chunk rule compares them: its `name` (the directory's base name;
    None: no checkpoint, a start from scratch) and its `iteration` (None: its name has none,
    e.g. a pointer naming `final`)."""

    name: str | None = None
    iteration: int | None = None

    @classmethod
    def of(cls, path: str | None, iteration: int | None) -> CheckpointMark:
        """The mark of a checkpoint at `path` (None: none) and `iteration`."""
        return cls(path.rstrip("/").rpartition("/")[2] if path else None, iteration)


def run_target(*, submitted: int | None, configured: int | None,
               logged: int | None) -> int | None:
    """The iteration a run is finished at: the one its submit set (`target_iter=`), else its
    recipe's `target_iter`, else the one its log printed (`iteration 1200/8000`); None:
    unknown. The watcher (its diagnosis, the chunks it counts) and the thread's root, App Home
    and approvals all take a run's target from here."""
    for target in (submitted, configured, logged):
        if target is not None:
            return target
    return None


@dataclass(frozen=True)
class ChunkBounds:
    """How a run's time-limit chunks are counted against its retry budget (`free_chunks`;
    the decision's: bot.core.policy.chunk_progress; an array task's:
    bot.core.arrays.task_retries_used): progress past the run's `target_iter` (`run_target`;
    None: unknown) is none of its own, and at most `max_free_chunks` (its recipe's policy)
    chunks in a row go uncharged."""

    target_iter: int | None = None
    max_free_chunks: int = DEFAULT_MAX_FREE_CHUNKS


#: A run's bounds when nothing sets them: no target known, the default free chunks in a row.
DEFAULT_CHUNK_BOUNDS = ChunkBounds()


def logged_target(attempts: Sequence[Any]) -> int | None:
    """The target iteration the latest of a run's `attempts` (oldest first, each with the
    `logged_target_iter` its log printed: the store's attempt rows) that printed one printed:
    `run_target`'s `logged`."""
    return next((a.logged_target_iter for a in reversed(attempts)
                 if a.logged_target_iter is not None), None)


def chunk_advanced(class_id: str | None, resumed_from: CheckpointMark | None,
                   saved: CheckpointMark, *, target_iter: int | None = None) -> bool:
    """Did an attempt that ended as `class_id`, resumed from `resumed_from` (None: which
    checkpoint is unknown, e.g. a task of a whole-array submit), end at its time limit leaving
    `saved`, a newer complete checkpoint of its own run? Such a chunk is the run going on,
    not a retry: its resubmit spends no retry (bot.core.policy.chunks, free_chunks).

    Its own run's: with both iterations known (a start from scratch is at 0), the saved one
    is past the start and not past the run's `target_iter` (a checkpoint dir another run saves
    into, a jump backwards, are no progress of this one). With an iteration unknown, the saved
    checkpoint's identity changed: another name than the start's (a pointer rewritten in place
    to the same name is no progress: the one lookup gives no mtime to tell). An unknown start
    is no progress: nothing shows the attempt saved what is there."""
    if class_id not in TIME_LIMIT_CLASSES or resumed_from is None \
            or (saved.name is None and saved.iteration is None):
        return False
    if saved.iteration is not None and target_iter is not None and saved.iteration > target_iter:
        return False
    if saved.iteration is not None and (resumed_from.iteration is not None
                                        or resumed_from.name is None):
        return saved.iteration > (resumed_from.iteration or 0)
    return saved.name != resumed_from.name


def free_chunks(attempts: Sequence[tuple[str | None, CheckpointMark | None]], *,
                bounds: ChunkBounds = DEFAULT_CHUNK_BOUNDS) -> list[bool]:
    """Which resubmits of a run were free chunks: for each of its `attempts` (oldest first,
    as (cause, the checkpoint it resumed from)) but the latest, whether it was a time-limit
    chunk the next one resumed past (`chunk_advanced`, within the run's target) within the
    cap: at most the `bounds`' `max_free_chunks` of them in a row, the next one is charged as
    a retry (a checkpoint that keeps moving for another reason cannot resubmit forever)."""
    out: list[bool] = []
    in_a_row = 0
    for (cause, start), (_, resumed) in zip(attempts, attempts[1:], strict=False):
        free = resumed is not None and in_a_row < bounds.max_free_chunks \
            and chunk_advanced(cause, start, resumed, target_iter=bounds.target_iter)
        in_a_row = in_a_row + 1 if free else 0
        out.append(free)
    return out


def free_chunks_in_a_row(flags: Sequence[bool]) -> int:
    """The free chunks that ended a run's resubmits so far (`free_chunks`' answer)."""
    n = 0
    for free in reversed(flags):
        if not free:
            break
        n += 1
    return n


class Action(StrEnum):
    """What trainbot proposes for a failure class (docs/failures.md, "default action")."""

    RESUBMIT = "resubmit"  # resume from the last complete checkpoint; may be automatic
    ASK = "ask"  # propose a fix and wait for a person
    STOP = "stop"  # explain; never retried automatically
    NONE = "none"  # nothing to do (completed, running fine, or a warning only)


# What decided a diagnosis (Diagnosis.decided_by): how far a person may trust it.
SIGNATURE = "signature"  # a decisive catalogue line (or a completion marker)
HINT = "hint"  # only how the log ends: a traceback, a native abort, the error's own words
ACCOUNTING = "accounting"  # only Slurm's State / exit code: the log does not say why
DETECTOR = "detector"  # a measured trend: stalled progress, growing memory, too little work
PROGRESS = "progress"  # the log's progress lines (running, or the target reached)


@dataclass(frozen=True)
class NeverStarted:
    """A job that ended while it waited in the queue (cancelled while pending, its deadline
    passed: bot.core.slurm.records.JobRecord.never_started), so it ran nothing and wrote no
    log; what sacct says of it beside its State: the uid that cancelled it (`CANCELLED by
    1000`) and the reason it was pending (`Priority`, `BeginTime`), each None when unknown."""

    cancelled_by: int | None = None
    pending_reason: str | None = None


@dataclass(frozen=True)
class Accounting:
    """The Slurm facts diagnosis needs about one job (from sacct/squeue, or CLI flags).

    `state` is the first word of sacct's State (`CANCELLED by 0` -> `CANCELLED`);
    `never_started` is set when the job ended without starting (None: it ran, or unknown).
    `exit_code_mod_128`: `exit_code` is as `sacct --parsable2` prints it, which takes 128 off
    an exit status >= 128 (Slurm's sacct print.c), so a shell's 137 (128 + SIGKILL) reads 9;
    `sacct --json` and squeue give the status itself (False). Compare exit codes through
    `exit_code_candidates`.
    """

    state: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    elapsed_s: float | None = None
    mem_limit_bytes: int | None = None
    max_rss_bytes: int | None = None
    # the job asked for --mem=0, all of each node's memory: its `mem_limit_bytes`, when
    # known, is what the node had (sacct gives the allocation), and no --mem gives it more
    whole_node_mem: bool = False
    never_started: NeverStarted | None = None
    exit_code_mod_128: bool = False

    @property
    def says_how_it_ended(self) -> bool:
        """Slurm gave a state, an exit code or a signal (`--exit-code` alone leaves `state`
        None): something besides the log says how the job ended."""
        return not (self.state is None and self.exit_code is None and self.signal is None)

    def as_ended(self) -> Accounting:
        """These facts with the State Slurm gives a job that ended with its exit code and
        signal when only those were given (`trainbot diagnose --exit-code 0:0`, no `--state`):
        COMPLETED for 0:0, FAILED for any other code or signal, as slurmctld sets a batch job's
        state from its exit status. An exit status is the status of a job that ended, as the
        watcher's sacct always says it with a State: the two read a log alike (was: the exit
        code alone was ignored, and a log that ends in progress read `none`, still running)."""
        if self.state is not None or (self.exit_code is None and self.signal is None):
            return self
        ok = not self.exit_code and not self.signal
        return replace(self, state="COMPLETED" if ok else "FAILED")

    @property
    def exit_code_candidates(self) -> tuple[int, ...]:
        """The exit statuses `exit_code` may stand for: itself, and N + 128 too when sacct
        printed it modulo 128 (9 -> 9 or 137); () when unknown. Any but the first is a hint,
        never a deciding fact."""
        if self.exit_code is None:
            return ()
        if self.exit_code_mod_128 and 0 <= self.exit_code < 128:
            return (self.exit_code, self.exit_code + 128)
        return (self.exit_code,)

    def exit_code_reading(self, status: int) -> str:
        """How `status`, one of `exit_code_candidates`, is read: `exit code 137`, or `exit code
        9 (sacct prints 137 as 9)` when it is only what the printed code may stand for."""
        if status == self.exit_code:
            return f"exit code {status}"
        return f"exit code {self.exit_code} (sacct prints {status} as {self.exit_code})"

    @property
    def is_running(self) -> bool:
        """Started and not ended: STOPPED too (squeue's state of a job sent SIGSTOP, sacct
        still says RUNNING), which read as ended (an unknown failure) before."""
        return self.state in {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED"}


@dataclass(frozen=True)
class Evidence:
    """One log line that supports a diagnosis; `line` is 1-based in the file read."""

    line: int
    text: str


@dataclass(frozen=True)
class DiagnosisMetrics:
    """Progress and memory facts reported with every diagnosis (null where unknown)."""

    last_iter: int | None = None
    target_iter: int | None = None
    sec_per_iter: float | None = None
    last_loss: float | None = None
    rss_gib_per_100_iter: float | None = None
    projected_oom_iter: int | None = None
    stall_seconds: float | None = None


@dataclass(frozen=True)
class UpstreamCause:
    """What led to the failure, e.g. the hang that preceded an NCCL watchdog abort."""

    class_id: str
    started_at: float | None = None  # log time the cause began (stall: last progress)
    last_iter: int | None = None
    seconds_before_failure: float | None = None


@dataclass(frozen=True)
class Diagnosis:
    """trainbot's conclusion about one job: a class id of docs/failures.md and its support.

    Facts, no sentences: `title` and `hint` are the catalogue's texts (English message ids,
    translated when rendered; `translations` holds those a site catalogue gives itself, lang ->
    {"title"/"hint": text}); `detail` is this case's figures that the explanation states
    before the hint, with `kind`: leak | stall | upstream | saving | running | requeued
    | signalled | alive | evaluating
    | silent_exit | returned | epilogue_memory | shm | nccl_shm | fd_limit | no_ninja
    | launch_failed | data_dependent_guard | mpi_message_size | missing_tool
    | exit_interval | sigterm | rerun_elsewhere | signal_stop | submitit_preempted
    | ended_early | target_reached | finish_said | never_started
    (bot.core.diagnose.cause.case_detail), or None."""

    class_id: str
    action: Action
    retryable: bool
    charges_budget: bool
    hint: str
    evidence: tuple[Evidence, ...] = ()
    secondary: tuple[str, ...] = ()
    metrics: DiagnosisMetrics = field(default_factory=DiagnosisMetrics)
    upstream: UpstreamCause | None = None
    during_checkpoint_save: bool = False
    title: str = ""
    detail: Mapping[str, Any] | None = None
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: what decided it: signature | hint | accounting | detector | progress
    #: (bot.core.diagnose; the thread says it, so a person knows when to look closer)
    decided_by: str = SIGNATURE
    #: a host OOM after a steady RSS trend: {slope_gib_per_100_iter, start_iter, start_gib}
    #: (the fitted RSS line, its value at the run's first measured iteration); else None
    leak_fit: Mapping[str, Any] | None = None
    #: the node a gpu_failure / node_failure / nccl_timeout happened on, when the log names it
    node: str | None = None
    #: a site catalogue replaced the class's English title: it is shown (as are the site's
    #: `title_<lang>`) where the detail's cause would show its own (templates `title_text`)
    site_title: bool = False
    #: a site catalogue replaced the class's English hint: it is stated (as are the site's
    #: `hint_<lang>`) after a cause's own fix too (templates `explanation`)
    site_hint: bool = False

    def to_json(self) -> dict[str, Any]:
        """The `trainbot diagnose --json` object (keys are an interface: keep them stable)."""
        return {
            "class": self.class_id,
            "retryable": self.retryable,
            "action": str(self.action),
            "charges_budget": self.charges_budget,
            "evidence": [asdict(e) for e in self.evidence],
            "hint": self.hint,
            "detail": dict(self.detail) if self.detail is not None else None,
            "secondary": list(self.secondary),
            "metrics": asdict(self.metrics),
            "upstream": asdict(self.upstream) if self.upstream else None,
            "during_checkpoint_save": self.during_checkpoint_save,
            "decided_by": self.decided_by,
            "leak_fit": dict(self.leak_fit) if self.leak_fit is not None else None,
            "node": self.node,
        }


# Classes that end or mark a run without a failure: no ✕ on a progress chart.
QUIET_CLASSES = frozenset({"completed", "none", "memory_leak"})


@dataclass(frozen=True)
class AttemptTrace:
    """An earlier attempt of a chain as its progress chart draws it: (time, iteration) points,
    the times of its checkpoint saves, and where it failed (time, class id), if it did."""

    job_id: str
    points: tuple[tuple[float, float], ...]
    saves: tuple[float, ...] = ()
    failure: tuple[float, str] | None = None
