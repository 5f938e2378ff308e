"""The cause of one case that its explanation states before the catalogue's hint: a sum type.

A diagnosis has at most one: the finding that decided it (a leak, a stall, a silent exit),
the cause within its class that the log's lines name when its fix differs from or narrows the
class's hint (a DataLoader worker out of open files, a missing CUDA tool), or how a planned
stop ended the run (Megatron's --exit-interval), or that the job never ran at all (it ended
while it waited in the queue). A requeue carries the cause of the end it followed
(`Requeued.cause`: submitit's time-out that was a preemption), so the one detail states both,
as does a running job's pending verdict (`Signalled.cause`).
`bot.core.diagnose.decide` picks it;
`case_detail` turns it into the diagnosis' `detail`, the plain data the templates word
(templates/_common.j2 `detail_text`, `title_text`) and `trainbot diagnose --json` prints, with
its `kind`. Pure: no file or clock access.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from bot.core.detectors import LeakFinding, SilentExitFinding, StallFinding
from bot.core.diagnose.announced import SubmititPreemption
from bot.core.diagnose.epilogue import EpilogueMemoryKill
from bot.core.diagnose.finish_said import FinishSaid
from bot.core.diagnose.last_epoch import TargetEnding
from bot.core.diagnose.shell_prompt import PromptEnding
from bot.core.models import NeverStarted, UpstreamCause
from bot.core.units import GIB

#: The class id of a running job with nothing to report (not a failure class of the catalogue).
NONE_CLASS = "none"


@dataclass(frozen=True)
class SilentExit:
    """Slurm's COMPLETED 0:0 with the log's reasons to doubt it (`silent_exit`)."""

    finding: SilentExitFinding


@dataclass(frozen=True)
class ShellReturned:
    """In a log without accounting, the shell's prompt came back (`returned`): after the
    training's progress (its last iteration, when the series counts them) or start-up output."""

    ending: PromptEnding
    last_iter: int | None


@dataclass(frozen=True)
class Leak:
    """Host RSS rising towards the limit (`leak`): a memory_leak."""

    finding: LeakFinding


@dataclass(frozen=True)
class Stall:
    """No progress for longer than the threshold (`stall`): a hang."""

    finding: StallFinding


@dataclass(frozen=True)
class Upstream:
    """A hang before the failure that decided the class, e.g. an NCCL abort (`upstream`)."""

    cause: UpstreamCause


@dataclass(frozen=True)
class DiedSaving:
    """A host OOM inside a checkpoint save (`saving`): that checkpoint is partial."""


@dataclass(frozen=True)
class EpilogueMemory:
    """A PBS or Torque job killed by a signal with more memory used than it requested, as its
    epilogue or accounting record states (`epilogue_memory`): the figures a host OOM is read
    from."""

    kill: EpilogueMemoryKill


@dataclass(frozen=True)
class SharedMemory:
    """DataLoader workers out of /dev/shm, not of host RAM (`shm`)."""


@dataclass(frozen=True)
class NcclSharedMemory:
    """NCCL could not create its shared-memory transport's segment in /dev/shm (`nccl_shm`):
    an unknown failure (no DataLoader worker died) whose fix, NCCL's own, is known."""


@dataclass(frozen=True)
class OpenFileLimit:
    """The process reached its open-file limit, errno 24 (`fd_limit`); no worker need have
    died."""


@dataclass(frozen=True)
class NoNinja:
    """torch's C++ extension loader found no ninja (`no_ninja`): an unknown failure whose fix is
    known."""


@dataclass(frozen=True)
class LaunchFailed:
    """slurmstepd could not start the task's program (`launch_failed`: its execve failed):
    `program` (the interpreter a script's #! line names when `interpreter`) and the system's
    `reason` (`No such file or directory`, `Permission denied`). Nothing ran, so a resubmit
    fails the same way until the launcher is fixed. `spool`: the program is Slurm's own copy
    of the batch script in the node's slurmd spool (`.../job00089/slurm_script`), which the
    node lost: the node's fault, not the script's, so a resubmit on another node runs."""

    program: str
    reason: str
    interpreter: bool
    spool: bool = False


@dataclass(frozen=True)
class DataDependentGuard:
    """torch.compile or torch.export could not guard on a value only the data knows
    (`data_dependent_guard`, torch's GuardOnDataDependentSymNode): an unknown failure of the
    model code under tracing whose fix is known (torch._check, mark_unbacked, a graph break)."""


@dataclass(frozen=True)
class MpiMessageSize:
    """An MPI message larger than the MPI library carries in one message (`mpi_message_size`):
    an unknown failure whose fix is known. A limit of its transport or collectives (Open MPI's
    PSM2 transport, IBM Spectrum MPI's collectives: smaller messages, another transport), or,
    `wrapped_count`, a count past a 32-bit int that the library refused whatever the transport
    (Open MPI's MPI_ERR_COUNT, MPICH's negative count: smaller messages, large counts)."""

    wrapped_count: bool


@dataclass(frozen=True)
class MissingTool:
    """The compiler or CUDA tool that compiler_missing's lines name (`missing_tool`)."""

    tool: str


@dataclass(frozen=True)
class SigtermOnly:
    """In a log without accounting, a launcher's stop on SIGTERM (`launcher`: torchrun,
    deepspeed, lightning) and no other error (`sigterm`): who sent it the log cannot tell."""

    launcher: str


@dataclass(frozen=True)
class RerunElsewhere:
    """Megatron's request to rerun the step on another GPU (`rerun_elsewhere`): the GPU fault's
    verdict is still to come."""


@dataclass(frozen=True)
class ExitInterval:
    """Megatron's --exit-interval stop at `iteration`, after a save (`exit_interval`)."""

    iteration: int


@dataclass(frozen=True)
class SignalStop:
    """A framework's stop and exit 0 on a SIGTERM, in a COMPLETED 0:0 job (`signal_stop`):
    Megatron's save, Lightning's SIGTERMException (`framework`), and who may have sent it."""

    framework: str


@dataclass(frozen=True)
class SubmititPreempted:
    """submitit's time-out verdict for what was a preemption (`submitit_preempted`): the minutes
    it had left, or the SIGTERM it bypassed first."""

    misread: SubmititPreemption


@dataclass(frozen=True)
class EndedEarly:
    """A completed run that ended at `last_iter`, short of the recipe's `target_iter`
    (`ended_early`): the framework's completion line after early stopping or a lowered
    max_steps."""

    last_iter: int
    target_iter: int


@dataclass(frozen=True)
class TargetReached:
    """In a log without accounting, the training progress reached the run's own target and the
    log ended after it with no training and no error (`target_reached`): a finished run
    inferred from where it stopped, which no line of the program says."""

    ending: TargetEnding


@dataclass(frozen=True)
class FinishedInOwnWords:
    """In a log without accounting, the program said its training finished in its own words
    (`Done training.`, `All done!`, `sft done`, `Early stopping`, `Saving final model`, `Process
    finished with exit code 0`: no framework's end line) and the log ended after it with no
    training and no error (`finish_said`)."""

    said: FinishSaid


@dataclass(frozen=True)
class Evaluating:
    """Training completed at `completed_line` and the framework evaluates after it
    (`evaluating`): the progress bar after it is the evaluation's, not training's."""

    completed_line: int


@dataclass(frozen=True)
class Requeued:
    """The job waits to start again (`requeued`) after the run its log shows ended: sacct's
    `state` (PENDING or REQUEUED) says Slurm requeued it (a preemption, a node's failure,
    scontrol requeue), or its `framework` says it requeued the job itself at `line` (Lightning's
    auto-requeue, read without accounting or with sacct's `state`: requeued, pending, running
    again; submitit's, read without accounting or with sacct's `state`: requeued, pending,
    running again, with the time-outs it will still requeue it after, `remaining`); either way
    it starts again by itself and that run's end is no failure to act on. `cause` is that end's
    own cause, which the requeue followed and the explanation states first (submitit's time-out
    verdict that was a preemption, with Slurm's requeue or submitit's own), None when the class
    says it all."""

    state: str | None
    framework: str | None = None
    line: int | None = None
    remaining: int | None = None
    cause: Cause | None = None


@dataclass(frozen=True)
class Signalled:
    """The job still runs (`signalled`: sacct RUNNING) after submitit's verdict on the
    scheduler's signal at `line` (`verdict`: time_limit when it called the job timed out,
    preempted when it called it preempted)
    with no requeue line yet: submitit is saving a checkpoint to requeue the job, or, when it
    said it would not requeue it (`not_requeued_line`), the job is ending. Either way Slurm
    requeues or ends it by itself, so nothing is to be resubmitted while it runs; `cause` is the
    verdict's own (its time-out that was a preemption), stated first."""

    verdict: str
    line: int
    not_requeued_line: int | None = None
    cause: Cause | None = None


@dataclass(frozen=True)
class EndedWaiting:
    """The job ended while it waited in the queue (`never_started`): sacct's `state` (CANCELLED,
    DEADLINE, ...) and what else it says of it (`facts`: who cancelled it, why it was pending).
    It ran nothing and wrote no log, so nothing was lost and no class's remedy fits: a person
    decides whether to submit it again."""

    state: str | None
    facts: NeverStarted


@dataclass(frozen=True)
class Running:
    """A running job with nothing to report (`running`): its progress and a GPU utilisation
    below what an input-bound job shows (None when higher or unmeasured)."""

    last_iter: int | None
    sec_per_iter: float | None
    low_gpu_util_pct: float | None


@dataclass(frozen=True)
class StillAlive:
    """Slurm shows the job alive (`alive`: sacct's `state`, RUNNING, COMPLETING, PENDING,
    REQUEUED, ...) while its log shows a failure whose class's action would submit it again (an
    NCCL timeout in a job still running: likely hung or about to end): a resubmit now would run
    a second copy beside it, so nothing is done until it ends and trainbot judges it then.
    `cause` is the failure's own cause, stated first."""

    state: str
    cause: Cause | None = None


#: The one cause a case's explanation states (None: it states the hint alone).
Cause: TypeAlias = (
    SilentExit | ShellReturned | Leak | Stall | Upstream | DiedSaving | EpilogueMemory
    | SharedMemory
    | NcclSharedMemory | OpenFileLimit | NoNinja | LaunchFailed | DataDependentGuard
    | MpiMessageSize
    | MissingTool | SigtermOnly | RerunElsewhere
    | ExitInterval | SignalStop | SubmititPreempted | EndedEarly | TargetReached
    | FinishedInOwnWords | Evaluating
    | Requeued
    | Signalled | EndedWaiting | Running | StillAlive
)


def case_detail(cause: Cause | None) -> dict[str, Any] | None:
    """The cause as the diagnosis' `detail`: the figures the explanation states before the
    catalogue's hint, with the `kind` the templates switch on; None when there is no cause."""
    match cause:
        case None:
            return None
        case SilentExit(finding):
            return {"kind": "silent_exit", "reasons": finding.reasons()}
        case ShellReturned(ending, last_iter):
            return {"kind": "returned", "line": ending.lines[0][0],
                    "progress": ending.after_progress, "last_iter": last_iter}
        case Leak(leak):
            return {"kind": "leak", "slope_gib_per_100_iter": leak.slope_gib_per_100_iter,
                    "rss_now_gib": leak.rss_now_bytes / GIB,
                    "limit_gib": leak.limit_bytes / GIB if leak.limit_bytes else None,
                    "projected_oom_iter": leak.projected_oom_iter}
        case Stall(stall):
            return {"kind": "stall", "last_iter": stall.last_iter, "stalled_s": stall.stalled_s,
                    "threshold_s": stall.threshold_s,
                    "open_save_line": stall.open_save.start_line if stall.open_save else None}
        case Upstream(upstream):
            return {"kind": "upstream", "last_iter": upstream.last_iter,
                    "seconds_before_failure": upstream.seconds_before_failure}
        case DiedSaving():
            return {"kind": "saving"}
        case EpilogueMemory(kill):
            return {"kind": "epilogue_memory", "exit_status": kill.exit_status,
                    "used_gib": kill.used_bytes / GIB, "requested_gib": kill.requested_bytes / GIB}
        case SharedMemory():
            return {"kind": "shm"}
        case NcclSharedMemory():
            return {"kind": "nccl_shm"}
        case OpenFileLimit():
            return {"kind": "fd_limit"}
        case NoNinja():
            return {"kind": "no_ninja"}
        case LaunchFailed(program, reason, interpreter, spool):
            return {"kind": "launch_failed", "program": program, "reason": reason,
                    "interpreter": interpreter, "spool": spool}
        case DataDependentGuard():
            return {"kind": "data_dependent_guard"}
        case MpiMessageSize(wrapped_count):
            return {"kind": "mpi_message_size", "wrapped_count": wrapped_count}
        case MissingTool(tool):
            return {"kind": "missing_tool", "tool": tool}
        case SigtermOnly(launcher):
            return {"kind": "sigterm", "launcher": launcher}
        case RerunElsewhere():
            return {"kind": "rerun_elsewhere"}
        case ExitInterval(iteration):
            return {"kind": "exit_interval", "iteration": iteration}
        case SignalStop(framework):
            return {"kind": "signal_stop", "framework": framework}
        case SubmititPreempted(misread):
            return {"kind": "submitit_preempted", "minutes_left": misread.minutes_left,
                    "limit_min": misread.limit_min, "bypassed_line": misread.bypassed_line}
        case EndedEarly(last_iter, target_iter):
            return {"kind": "ended_early", "last_iter": last_iter, "target_iter": target_iter}
        case TargetReached(ending):
            return {"kind": "target_reached", "line": ending.line, "done": ending.done,
                    "total": ending.total}
        case FinishedInOwnWords(said):
            return {"kind": "finish_said", "line": said.line}
        case Evaluating(completed_line):
            return {"kind": "evaluating", "line": completed_line}
        case Requeued(state, framework, line, remaining, cause):
            return {"kind": "requeued", "state": state, "framework": framework, "line": line,
                    "remaining": remaining, "cause": case_detail(cause)}
        case Signalled(verdict, line, not_requeued_line, cause):
            return {"kind": "signalled", "framework": "submitit", "verdict": verdict,
                    "line": line, "not_requeued_line": not_requeued_line,
                    "cause": case_detail(cause)}
        case StillAlive(state, cause):
            return {"kind": "alive", "state": state, "cause": case_detail(cause)}
        case EndedWaiting(state, facts):
            return {"kind": "never_started", "state": state, "cancelled_by": facts.cancelled_by,
                    "pending_reason": facts.pending_reason}
        case Running(last_iter, sec_per_iter, low_gpu_util_pct):
            return {"kind": "running", "last_iter": last_iter, "sec_per_iter": sec_per_iter,
                    "low_gpu_util_pct": low_gpu_util_pct}
