"""The resubmit policy: what trainbot does about a diagnosis, given the run chain's history.

Pure: no I/O, no clock reads (callers pass `now`). Inputs are plain data; the output is a
`Decision` the watcher carries out (store intent first, then post / submit).

Rules (docs/failures.md, docs/incidents.md):
- `resubmit` classes (nccl_timeout, dataloader_timeout, time_limit, preempted, node_failure)
  are proposed with a button, or resubmitted at once when the recipe says `auto_resubmit`
  and the class is retryable, unless only how the log ended named it (`decided_by` hint: no
  decisive line, no accounting), which is offered; both wait for the backoff (`not_before`).
- `ask` classes are proposed, never automatic; host_oom and dataloader_worker_killed propose
  `--mem` sized from the limit and MaxRSS; a finished job whose class is memory_leak only warns.
- STOP classes (cuda_oom, compiler_missing, nan_loss, silent_exit) never resubmit.
- Budget (default 3 charged resubmits per chain); `preempted` / `node_failure` carry
  `charges_budget: false` in the catalogue and are not charged. Exhausted -> stop, ask a human.
- Time-limit chunks (`chunks`): a time_limit (Slurm's TIMEOUT, Megatron's --exit-interval /
  --exit-duration-in-mins stop) whose attempt left a newer complete checkpoint than the one it
  resumed from is the run going on: resubmitted as any time limit, but not charged. One that
  left none newer is charged, so a run timing out before its first save stops at its budget;
  the stop at the target iteration is `completed`, never one more chunk. The progress must be
  the run's own (not past its target; a checkpoint named without an iteration: another name),
  from a known start, and at most `max_free_chunks` in a row are free: the next is charged.
- No progress: a retry whose last iteration is not above the previous attempt's stops the
  chain and asks a human (only for charged classes: a preemption is not the job's fault).
  The previous attempt is the latest that ran: one Slurm ended in the queue is skipped.
- Running jobs: early warnings (`early_warnings`): leak projection once per chain unless it
  worsens by a margin, stall with CPU corroboration and an offer to cancel and resume, low
  GPU utilisation as a note. `held_report` flags a requeued job stuck in JobHeldAdmin.

`Decision.facts` is what threads show, as data: `why` names the sentence (worded by
templates/event.json.j2 in the thread's language), the other keys are its figures not already
on the Decision (see `decide` and `early_warnings`). An early warning's facts are complete on
their own, so a warning re-posted from the store renders from them alone. `Decision.reason`
says the same in English for the log and the store.

Modules: `decision` (Decision, its kinds and offers, a resume point in words), `chain`
(the chain history read: which attempt rows it is, which are an array task's own, when a
chain of side-by-side jobs has ended, what a progress write changes in a row), `params`
(PolicyParams and their defaults),
`retry` (`decide`, the budget, the backoff), `chunks` (a time-limit chunk's progress),
`memory` (the --mem arithmetic after a host OOM and a leak), `early` (early warnings for a
running job), `held` (admin-held jobs). Callers import the names below from this package.
"""

from bot.core.policy.chain import (
    AttemptFacts,
    AttemptRow,
    ChainHistory,
    PastWarning,
    RootWaiting,
    attempt_progress,
    free_rewrite_slots,
    own_history,
    parallel_chain_end,
    root_rewrite_due,
    roots_due,
    roots_to_rewrite,
    run_history,
    run_latest,
    run_rows,
    task_history,
    task_rows,
)
from bot.core.policy.chunks import ChunkProgress, chunk_progress, chunk_start_unknown
from bot.core.policy.decision import (
    OFFER_CANCEL_RESUME,
    OFFER_DISMISS,
    OFFER_RESUBMIT,
    OFFER_RESUBMIT_MEM,
    CheckpointUnknown,
    Decision,
    DecisionKind,
    checkpoint_unknown_of,
    resume_start,
)
from bot.core.policy.early import (
    CpuEvidence,
    early_warnings,
    leak_warning_due,
    stall_resume_point,
    stall_without_recipe,
)
from bot.core.policy.held import HeldReport, held_report
from bot.core.policy.memory import (
    LeakRemedy,
    host_memory_cause,
    leak_remedy,
    own_fix,
    suggest_mem,
    whole_node_mem,
)
from bot.core.policy.params import DEFAULT_POLICY, PolicyParams, params_from
from bot.core.policy.retry import RUNNING_CLASSES, approval_charged, backoff_delay, decide

__all__ = [
    "DEFAULT_POLICY",
    "OFFER_CANCEL_RESUME",
    "OFFER_DISMISS",
    "OFFER_RESUBMIT",
    "OFFER_RESUBMIT_MEM",
    "RUNNING_CLASSES",
    "AttemptFacts",
    "AttemptRow",
    "ChainHistory",
    "CheckpointUnknown",
    "ChunkProgress",
    "CpuEvidence",
    "Decision",
    "DecisionKind",
    "HeldReport",
    "LeakRemedy",
    "PastWarning",
    "PolicyParams",
    "RootWaiting",
    "approval_charged",
    "attempt_progress",
    "backoff_delay",
    "checkpoint_unknown_of",
    "chunk_progress",
    "chunk_start_unknown",
    "decide",
    "early_warnings",
    "free_rewrite_slots",
    "held_report",
    "host_memory_cause",
    "leak_remedy",
    "leak_warning_due",
    "own_fix",
    "own_history",
    "parallel_chain_end",
    "params_from",
    "resume_start",
    "root_rewrite_due",
    "roots_due",
    "roots_to_rewrite",
    "run_history",
    "run_latest",
    "run_rows",
    "stall_resume_point",
    "stall_without_recipe",
    "suggest_mem",
    "task_history",
    "task_rows",
    "whole_node_mem",
]
