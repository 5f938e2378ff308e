"""The store's rows as frozen dataclasses, one per table the repositories read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from bot.core.slurm.job_ref import array_task_in


@dataclass(frozen=True)
class Chain:
    """A recipe run: attempts (job ids) sharing one Slack thread and one retry ledger.

    `kind` "run" is a recipe's run; "adopted" a job watched without trainbot submitting it
    (`recipe` is "" then: no recipe resubmits it), "array" a whole job array so watched
    (`array_job_id`; one attempt row per task, in parallel rather than one after another):
    adopted when `recipe` is "", else submitted from an array recipe, whose failed tasks
    are resubmitted one at a time (each its own one-task array)."""

    id: int
    recipe: str
    cluster: str
    job_name: str
    channel: str | None
    thread_ts: str | None
    status: str
    created_at: float
    updated_at: float
    retries_used: int
    kind: str = "run"
    array_job_id: int | None = None
    watched_by: str | None = None  # the Slack user who adopted it (`/train watch`)
    target_iter: int | None = None  # the run's target its submit set (`target_iter=`)

    @property
    def adopted(self) -> bool:
        """Watched without trainbot submitting it: no recipe, nothing resubmitted."""
        return self.kind == "adopted" or (self.kind == "array" and not self.recipe)

    @property
    def is_array(self) -> bool:
        """A whole job array's chain: its attempts are tasks run side by side."""
        return self.kind == "array"

    @property
    def parallel(self) -> bool:
        """Its attempts do not follow one another (an adopted job or an array's tasks): each
        is its own history, and the chain ends once none of its jobs is watched."""
        return self.kind != "run"


@dataclass(frozen=True)
class Attempt:
    """One Slurm job of a chain, with its progress, result and the work it lost."""

    id: int
    chain_id: int
    job_id: str
    attempt_no: int
    state: str
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    start_iter: int | None
    last_iter: int | None
    result: str | None
    cause: str | None
    work_lost_iters: int | None
    work_lost_s: float | None
    checkpoint_path: str | None
    # the nodes this job's submit left out beyond its recipe's own --exclude (a hostlist)
    excluded_nodes: str | None = None
    display_id: str | None = None  # `123_4` of an array task (job_id is its raw id)
    logged_target_iter: int | None = None  # the target iteration its log printed (`/8000`)
    # the --mem trainbot submitted the job with ('' when it passed none: Slurm's default, or
    # the script's own #SBATCH --mem); None when not recorded: an attempt recorded before
    # schema 24, a whole array's task as it starts, a lost submit found by its name
    submit_mem: str | None = None

    @property
    def shown_id(self) -> str:
        """The id people read: `123_4` for an array task, else the job id."""
        return self.display_id or self.job_id

    @property
    def array_task(self) -> int | None:
        """The array task this attempt ran (4 of `123_4`, and of its resubmit `140_4`)."""
        return array_task_in(self.display_id)


@dataclass(frozen=True)
class TailOffset:
    """Where the log tail of a job's file stopped, and how to recognise the same file."""

    job_id: str
    path: str
    offset: int
    inode_or_signature: str | None
    size: int
    line_no: int
    updated_at: float


@dataclass(frozen=True)
class Incident:
    """A diagnosed failure or warning; `key` makes recording it idempotent."""

    id: int
    key: str
    chain_id: int | None
    job_id: str | None
    class_id: str
    diagnosis_json: str
    created_at: float
    state: str

    @property
    def diagnosis(self) -> dict[str, Any]:
        return json.loads(self.diagnosis_json)


ApprovalState = Literal["pending", "approved", "refused", "expired", "stale", "done"]


@dataclass(frozen=True)
class Approval:
    """A proposed action waiting for (or given) a human yes, bound to its target and expiry."""

    id: str
    action: str
    payload_json: str
    target_job: str | None
    chain_id: int | None
    allowed_json: str
    expires_at: float
    state: str
    decided_by: str | None
    decided_at: float | None
    created_at: float

    @property
    def token(self) -> str:
        return self.id

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.payload_json)

    @property
    def allowed(self) -> list[str]:
        return json.loads(self.allowed_json)


@dataclass(frozen=True)
class ClaimResult:
    """Outcome of one click: `claimed` is True for exactly one caller per approval.

    `reason`: 'claimed', 'unknown' (no such token), 'expired', 'decided' (already
    approved/refused/done by someone: see `approval.decided_by`), 'stale' (the chain moved
    on: `latest` is its latest attempt now) or 'busy' (`other`, another approval of the
    chain, is acting on the same job right now).
    """

    claimed: bool
    reason: Literal["claimed", "unknown", "expired", "decided", "stale", "busy"]
    approval: Approval | None
    latest: Attempt | None = None
    other: Approval | None = None


@dataclass(frozen=True)
class HoldPass:
    """What `ApprovalsRepo.pass_hold` did with a hold let go of: `outcome` "kept" (done
    without a release: `kept_by`, another run's hold, keeps the job held), "last" (nothing
    changed: the last hold of the job, which releases it) or "gone" (nothing changed: no
    longer approved, taken out of the hold ledger after its release was claimed, by a
    person's `/train hold|release`: nothing of trainbot's to release)."""

    outcome: Literal["kept", "last", "gone"]
    kept_by: Approval | None = None


@dataclass(frozen=True)
class SlackPost:
    """A Slack message trainbot intends to post or has posted, by idempotency key. `ts` is
    Slack's ts (a chart's file id); on a chart's intent, the uploaded file whose completion
    was asked for (`SlackPostsRepo.record_file`)."""

    key: str
    chain_id: int | None
    channel: str
    kind: str
    ts: str | None
    thread_ts: str | None
    state: str
    payload_hash: str | None
    updated_at: float

    @property
    def posted(self) -> bool:
        return self.state == "posted"

    @property
    def refused(self) -> bool:
        """A run's root message the chat refused (`SlackPostsRepo.record_refused`)."""
        return self.state == "refused"


@dataclass(frozen=True)
class AuditEntry:
    """Who did what to which job, when, and how it ended."""

    id: int
    at: float
    actor: str
    action: str
    job_id: str | None
    recipe: str | None
    result: str
    detail: str | None


@dataclass(frozen=True)
class SubmitInFlight:
    """A person's submit whose job no attempt row records yet: its sbatch was sent at
    `sent_at` (trainbot's clock) and the bot may have died before it could record the job."""

    id: int
    cluster: str
    recipe: str
    job_name: str
    chain_id: int | None
    array_task: int | None
    resumed_at: int | None
    charge_retry: bool
    actor: str
    channel: str | None
    sent_at: float
    intent: str | None = None  # the key of what it carries out (schema 18): submit_recipe
    # one remote command's worst case as its sender counted it when it sent (schema 19;
    # RemoteDeadlines.command_at_most_s); None: a row written before, or by a caller not giving it
    command_at_most_s: float | None = None
    # the holder of the submit claim it was sent under (schema 23; bot.services.submit_claim
    # .submit_holder), ended when the row is forgotten; None: a row written before
    holder: str | None = None


@dataclass(frozen=True)
class WatchedJob:
    """A job the watcher polls; `adopted` when it was submitted outside trainbot."""

    cluster: str
    job_id: str
    chain_id: int | None
    adopted: bool
    added_at: float
    held_since: float | None = None  # when the watcher first saw it held (JobHeldAdmin)
    # when the watcher first failed to read its ended job's log or sampler file
    unreadable_since: float | None = None
