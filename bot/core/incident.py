"""The facts of a run thread's messages: root, incident, early warning, resolution, completion.

Pure: plain data in, plain data out; no clock reads (callers pass `now`). The facts (numbers,
ids, what to propose) live here; bot.slack.views adds their buttons and progress bar, and the
templates (templates/*.json.j2) their words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.core.models import MEMORY_CLASSES, Action, Diagnosis, DiagnosisMetrics
from bot.core.policy import CheckpointUnknown, host_memory_cause, leak_remedy, suggest_mem
from bot.core.policy import own_fix as own_fix_of
from bot.core.slurm.states import RUNNING_STATES, normalize_state
from bot.core.units import GIB


@dataclass(frozen=True)
class AttemptSummary:
    """One job of a run chain, as the root message's table shows it."""

    job_id: str
    state: str  # RUNNING, FAILED, OUT_OF_MEMORY, COMPLETED, PENDING, …
    last_iter: int | None = None
    from_iter: int | None = None  # where it resumed from (None: from scratch)
    cause: str | None = None  # diagnosis class id, when it ended badly


@dataclass(frozen=True)
class Proposal:
    """What trainbot proposes a person do (a button on the Slack side, bot.slack.views)."""

    kind: str  # resubmit | resubmit_mem | cancel_resume | dismiss
    from_iter: int | None = None  # where a resubmit resumes (None: from scratch)
    mem: str | None = None  # e.g. "1200G", for resubmit_mem
    # the checkpoint it resumes from (None: none), named when its iteration is unknown
    from_checkpoint: str | None = None
    # why the checkpoint is unknown (None: it is known): neither named nor "the start"
    checkpoint_unknown: CheckpointUnknown | None = None


@dataclass(frozen=True)
class ResumePoint:
    """The checkpoint a resume starts from, as a prompt or a submit names it: its name and,
    when its name has one, its iteration (None, None: from the start)."""

    iteration: int | None = None
    checkpoint: str | None = None  # the checkpoint's directory name (`iter_0003000`, `final`)


@dataclass(frozen=True)
class Incident:
    """What happened to one job and what trainbot proposes."""

    recipe: str
    job_id: str
    class_id: str
    title: str  # the catalogue's headline (an English message id)
    hint: str  # the catalogue's advice (an English message id)
    detail: Mapping[str, Any] | None  # this case's figures for the explanation (Diagnosis)
    action: str
    retryable: bool
    evidence: tuple[tuple[int, str], ...]
    metrics: DiagnosisMetrics  # progress and memory figures (bot.slack.views formats them)
    max_rss_bytes: int | None
    mem_limit_bytes: int | None
    last_iter: int | None
    target_iter: int | None
    last_checkpoint_iter: int | None
    lost_iters: int | None
    lost_seconds: float | None
    during_checkpoint_save: bool
    upstream_class: str | None
    upstream_seconds_before: float | None
    secondary: tuple[str, ...]
    proposals: tuple[Proposal, ...]
    state: str | None = None
    exit_code: str | None = None
    # lang -> {"title"/"hint": text} a site catalogue gives itself (else the .po translates)
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    upstream_last_iter: int | None = None  # the iteration progress stopped at, before it
    decided_by: str = "signature"  # what decided the class (Diagnosis.decided_by)
    # a host OOM after a steady leak: what memory can finish the run (LeakRemedy.facts())
    leak: Mapping[str, Any] | None = None
    # a memory failure whose job's limit nobody gave: no --mem is proposed, and it says so
    mem_limit_unknown: bool = False
    mem_whole_node: bool = False  # a host OOM of a job with --mem=0: no --mem gives more
    # a memory failure of a job with --mem=0, of any cause: the class's hint (more --mem) is
    # not said (its host-memory causes are told to cut host memory, the others their own fix)
    whole_node: bool = False
    # a DataLoader worker out of /dev/shm or open files (memory.NOT_HOST_MEMORY), --mem=0 or
    # not: its own fix is said, no --mem proposed, nor the class's hint (more --mem)
    own_fix: bool = False
    node: str | None = None  # the faulty node a resubmit excludes (Diagnosis.node)
    site_title: bool = False  # the site replaced the class's title (Diagnosis.site_title)
    site_hint: bool = False  # the site replaced the class's hint (Diagnosis.site_hint)
    # the DataLoader probe a leak's remedy offers: {button, command, field, recipe}
    probe: Mapping[str, Any] | None = None
    # the checkpoint a resume starts from (None: none): "resume from checkpoint `final`" when
    # its name has no iteration, never "from the start"
    from_checkpoint: str | None = None
    # why the checkpoint is unknown (None: it is known; `CheckpointUnknown`): "resume from the
    # last complete checkpoint (unknown: looking it up failed)", or, `trainbot report`'s, that
    # the bot looks it up when it posts the message; no work lost claimed
    checkpoint_unknown: CheckpointUnknown | None = None
    # the `why` of the thread's head line above the card (the watcher's incident:
    # event.json.j2), None for a card alone (report, diagnose): a head line that says the
    # explanation (_common.j2 HEAD_EXPLAINS: a stop class's hint, a job that never started)
    # leaves the card its title alone
    headed: str | None = None
    # Slurm shows the job still running (`state`): nothing past the last checkpoint is lost
    # yet, so the card says what would be lost if it ended now (`lost_iters`, `lost_seconds`)
    alive: bool = False


@dataclass(frozen=True)
class RootView:
    """The thread's first message, rewritten in place as the chain moves on."""

    recipe: str
    job_id: str
    state: str
    last_iter: int | None
    target_iter: int | None
    attempts: tuple[AttemptSummary, ...]
    retries_used: int = 0
    retry_budget: int | None = None
    cluster: str | None = None
    adopted: bool = False  # submitted outside trainbot: `recipe` is then the job's name


@dataclass(frozen=True)
class WarningView:
    """An early warning while the job runs: `kind` is leak, stall or slow."""

    kind: str
    recipe: str
    job_id: str
    last_iter: int | None
    rss_now_gib: float | None = None
    limit_gib: float | None = None
    slope_gib_per_100_iter: float | None = None
    projected_oom_iter: int | None = None
    iters_to_oom: int | None = None
    seconds_to_oom: float | None = None
    stalled_seconds: float | None = None
    stalled_since: float | None = None  # log time of the last progress line
    sec_per_iter: float | None = None
    proposals: tuple[Proposal, ...] = ()


@dataclass(frozen=True)
class ResolutionView:
    """The chain recovered: `old_job_id` resumed as `new_job_id` from `from_iter`, or from the
    checkpoint named `from_checkpoint` when its iteration is unknown (neither: from the start).
    `prompt_iter`, else `prompt_checkpoint`: where the clicked prompt said it would resume
    (its iteration, else the checkpoint's name), when it resumed from another checkpoint (the
    newest complete one changed since the prompt was posted; bot.core.incident.prompt_changed)."""

    recipe: str
    old_job_id: str
    new_job_id: str
    from_iter: int | None
    lost_iters: int | None = None
    lost_seconds: float | None = None
    actor: str | None = None  # who approved ("auto" for an automatic retry)
    held_jobs: tuple[str, ...] = field(default_factory=tuple)
    mem: str | None = None
    prompt_iter: int | None = None
    from_checkpoint: str | None = None
    prompt_checkpoint: str | None = None
    left_out: str | None = None  # the nodes the run left out (--exclude): its attempt's


@dataclass(frozen=True)
class CompletionView:
    """The run finished: one line, the iteration it reached, how long it took, in how many
    attempts (a COMPLETED job is a resolution, never an incident)."""

    recipe: str
    job_id: str
    last_iter: int | None
    target_iter: int | None
    elapsed_s: float | None  # from the chain's first submit to the end of this job
    attempts: int
    retries_used: int = 0
    replaced: tuple[str, ...] = ()  # a resubmitted array task: the task's earlier ids (123_4)


# --- builders ----------------------------------------------------------------------------


def build_root(
    *,
    recipe: str,
    attempts: Sequence[AttemptSummary],
    target_iter: int | None,
    retries_used: int = 0,
    retry_budget: int | None = None,
    cluster: str | None = None,
    adopted: bool = False,
) -> RootView:
    """The root view from the chain's attempts (oldest first; the last is the current job)."""
    if not attempts:
        raise ValueError(f"run chain of recipe {recipe!r} has no attempts to show")
    current = attempts[-1]
    last_iter = max((a.last_iter for a in attempts if a.last_iter is not None), default=None)
    return RootView(
        recipe=recipe,
        job_id=current.job_id,
        state=current.state,
        last_iter=last_iter,
        target_iter=target_iter,
        attempts=tuple(attempts),
        retries_used=retries_used,
        retry_budget=retry_budget,
        cluster=cluster,
        adopted=adopted,
    )


def _default_mem(diagnosis: Diagnosis, limit_bytes: int | None,
                 max_rss_bytes: int | None, policy: Any = None) -> str | None:
    """The `--mem` to propose when the caller has none: the policy's rule
    (bot.core.policy.suggest_mem; the watcher passes the recipe's own value). None when the
    site's cap leaves no more than the job had (the policy's `mem_at_cap`)."""
    size = suggest_mem(limit_bytes, max_rss_bytes,
                       during_save=diagnosis.during_checkpoint_save, policy=policy)
    if size is None or size[0] <= max(limit_bytes or 0, max_rss_bytes or 0):
        return None
    return size[1]


def build_incident(
    diagnosis: Diagnosis,
    *,
    recipe: str,
    job_id: str,
    last_checkpoint_iter: int | None,
    now: float,
    last_checkpoint_time: float | None = None,
    failed_at: float | None = None,
    state: str | None = None,
    exit_code: str | None = None,
    mem_limit_bytes: int | None = None,
    whole_node_mem: bool = False,
    max_rss_bytes: int | None = None,
    max_evidence: int | None = None,
    suggested_mem: str | None = None,
    mem_policy: Any = None,
    probe: Mapping[str, Any] | None = None,
    from_checkpoint: str | None = None,
    checkpoint_unknown: CheckpointUnknown | None = None,
) -> Incident:
    """The incident view: the diagnosis plus work lost since the last checkpoint and the
    proposed actions as data; `probe` is the DataLoader probe a leak's remedy offers
    (bot.services.probes.probe_offer); `mem_policy` the recipe's policy (its site cap on
    `--mem`, `max_mem`; None: the defaults, no cap); `from_checkpoint` the name of the
    checkpoint a resume starts from (None: none), which the proposals name when its
    iteration (`last_checkpoint_iter`) is unknown; `checkpoint_unknown`: why none is known
    (neither given: not looked up, or the lookup failed), so the proposals name none and
    claim no start either. `whole_node_mem`: the job asked for --mem=0 (JobRecord's; its
    `mem_limit_bytes` is then the node's memory, or 0): no --mem is proposed.

    Work lost: iterations past `last_checkpoint_iter`; wall time from the checkpoint's save
    (`last_checkpoint_time`) to the failure (`failed_at`, default `now`), else the lost
    iterations × s/iter. Unknown when the checkpoint's iteration is (`from_checkpoint` only,
    or `checkpoint_unknown`); a leak's memory arithmetic then counts from iteration 0, the
    worst case, and says so (policy.LeakRemedy.start_known). A job Slurm shows still running
    (`state`, `alive`) has lost nothing yet: the same figures are what it would lose if it
    ended now, whatever its action (a failure read in a running job proposes nothing: it is
    at risk all the same); none for a run that completed or has nothing to report.
    """
    m = diagnosis.metrics
    last_iter = m.last_iter
    lost_iters: int | None = None
    lost_seconds: float | None = None
    unknown_start = last_checkpoint_iter is None and (from_checkpoint or checkpoint_unknown)
    if last_iter is not None and not unknown_start:
        lost_iters = max(0, last_iter - (last_checkpoint_iter or 0))
        end = failed_at if failed_at is not None else now
        if last_checkpoint_time is not None and end >= last_checkpoint_time:
            lost_seconds = end - last_checkpoint_time
        elif m.sec_per_iter:
            lost_seconds = lost_iters * m.sec_per_iter
    alive = normalize_state(state) in RUNNING_STATES
    if diagnosis.class_id in ("completed", "none") or (diagnosis.action == Action.NONE
                                                        and not alive):
        lost_iters, lost_seconds = None, None

    whole_node = whole_node_mem or mem_limit_bytes == 0
    remedy = (leak_remedy(diagnosis, resume_iter=last_checkpoint_iter,
                          limit_bytes=mem_limit_bytes, max_rss_bytes=max_rss_bytes,
                          policy=mem_policy, start_unknown=bool(unknown_start),
                          whole_node=whole_node)
              if diagnosis.class_id in MEMORY_CLASSES else None)
    # a DataLoader worker out of /dev/shm or open files: its own fix, never a --mem; unless
    # host memory ran out all the same (a leak, MaxRSS at the limit), which then is said alone
    own_fix = diagnosis.class_id in MEMORY_CLASSES and own_fix_of(
        diagnosis, limit_bytes=mem_limit_bytes, max_rss_bytes=max_rss_bytes,
        leak=remedy is not None)
    detail = diagnosis.detail
    if (diagnosis.class_id in MEMORY_CLASSES and not own_fix
            and not host_memory_cause(diagnosis)):
        detail = None  # no "ran out of shared memory, not host RAM" beside host memory's case
    mem = suggested_mem or (None if whole_node or own_fix else _default_mem(
        diagnosis, mem_limit_bytes, max_rss_bytes, mem_policy))
    if remedy is not None:
        # no --mem can finish a hopeless leak, none is known to when the limit is unknown;
        # otherwise the --mem that reaches the target
        mem = (suggested_mem or f"{remedy.need_gib}G") if remedy.proposes_mem else None
    if own_fix:
        mem = None
    if last_checkpoint_iter is not None or from_checkpoint:
        checkpoint_unknown = None
    proposals = _propose(diagnosis, from_iter=last_checkpoint_iter, mem=mem,
                         from_checkpoint=from_checkpoint, checkpoint_unknown=checkpoint_unknown)
    if remedy is not None and not remedy.proposes_mem and probe and probe.get("button"):
        proposals.insert(len(proposals) - 1, Proposal("probe"))  # before Dismiss
    evidence = tuple((e.line, e.text) for e in diagnosis.evidence)
    if max_evidence is not None:
        evidence = evidence[-max_evidence:]
    up = diagnosis.upstream
    return Incident(
        recipe=recipe,
        job_id=job_id,
        class_id=diagnosis.class_id,
        title=diagnosis.title or diagnosis.class_id.replace("_", " "),
        hint=diagnosis.hint,
        detail=detail,
        action=str(diagnosis.action),
        retryable=diagnosis.retryable,
        evidence=evidence,
        metrics=m,
        max_rss_bytes=max_rss_bytes,
        mem_limit_bytes=mem_limit_bytes,
        last_iter=last_iter,
        target_iter=m.target_iter,
        last_checkpoint_iter=last_checkpoint_iter,
        lost_iters=lost_iters,
        lost_seconds=lost_seconds,
        during_checkpoint_save=diagnosis.during_checkpoint_save,
        upstream_class=up.class_id if up else None,
        upstream_seconds_before=up.seconds_before_failure if up else None,
        secondary=tuple(c for c in diagnosis.secondary if not up or c != up.class_id),
        proposals=tuple(proposals),
        state=state,
        exit_code=exit_code,
        translations=diagnosis.translations,
        upstream_last_iter=up.last_iter if up else None,
        decided_by=diagnosis.decided_by,
        leak=remedy.facts() if remedy is not None and not own_fix else None,
        mem_limit_unknown=(diagnosis.class_id in MEMORY_CLASSES and remedy is None
                           and mem is None and mem_limit_bytes is None
                           and diagnosis.action == Action.ASK),
        mem_whole_node=(diagnosis.class_id in MEMORY_CLASSES and remedy is None
                        and mem is None and whole_node and not own_fix),
        whole_node=diagnosis.class_id in MEMORY_CLASSES and whole_node,
        own_fix=own_fix,
        node=diagnosis.node,
        site_title=diagnosis.site_title,
        site_hint=diagnosis.site_hint,
        probe=probe,
        from_checkpoint=from_checkpoint,
        checkpoint_unknown=checkpoint_unknown,
        alive=alive,
    )


def _propose(d: Diagnosis, *, from_iter: int | None, mem: str | None,
             from_checkpoint: str | None,
             checkpoint_unknown: CheckpointUnknown | None) -> list[Proposal]:
    if d.action == Action.NONE or d.class_id == "completed":
        return []
    out: list[Proposal] = []
    start: dict[str, Any] = {"from_iter": from_iter, "from_checkpoint": from_checkpoint,
                             "checkpoint_unknown": checkpoint_unknown}
    if d.class_id == "hang":
        out.append(Proposal("cancel_resume", **start))
    elif d.action == Action.RESUBMIT:
        out.append(Proposal("resubmit", **start))
    elif d.action == Action.ASK:
        if d.class_id in MEMORY_CLASSES and mem:
            out.append(Proposal("resubmit_mem", mem=mem, **start))
        out.append(Proposal("resubmit", **start))
    out.append(Proposal("dismiss"))
    return out


def build_warning(
    *,
    kind: str,
    recipe: str,
    job_id: str,
    last_iter: int | None,
    now: float,
    rss_now_bytes: int | None = None,
    limit_bytes: int | None = None,
    slope_gib_per_100_iter: float | None = None,
    projected_oom_iter: int | None = None,
    sec_per_iter: float | None = None,
    stalled_since: float | None = None,
    last_checkpoint_iter: int | None = None,
) -> WarningView:
    """An early warning: `leak` (projection to the memory limit) or `stall` (no progress)."""
    if kind not in ("leak", "stall", "slow"):
        raise ValueError(f"warning kind must be leak, stall or slow, not {kind!r}")
    iters_to_oom = seconds_to_oom = None
    if projected_oom_iter is not None and last_iter is not None:
        iters_to_oom = max(0, projected_oom_iter - last_iter)
        if sec_per_iter:
            seconds_to_oom = iters_to_oom * sec_per_iter
    stalled_seconds = now - stalled_since if stalled_since is not None else None
    proposals: tuple[Proposal, ...] = ()
    if kind == "stall":
        proposals = (Proposal("cancel_resume", from_iter=last_checkpoint_iter),
                     Proposal("dismiss"))
    return WarningView(
        kind=kind,
        recipe=recipe,
        job_id=job_id,
        last_iter=last_iter,
        rss_now_gib=round(rss_now_bytes / GIB, 1) if rss_now_bytes is not None else None,
        limit_gib=round(limit_bytes / GIB, 1) if limit_bytes is not None else None,
        slope_gib_per_100_iter=(round(slope_gib_per_100_iter, 1)
                                if slope_gib_per_100_iter is not None else None),
        projected_oom_iter=projected_oom_iter,
        iters_to_oom=iters_to_oom,
        seconds_to_oom=seconds_to_oom,
        stalled_seconds=stalled_seconds,
        stalled_since=stalled_since,
        sec_per_iter=sec_per_iter,
        proposals=proposals,
    )


def prompt_changed(said: ResumePoint | None, resumed: ResumePoint) -> ResumePoint | None:
    """Where the approved prompt `said` the run would resume, as it would be told, when it
    `resumed` from another checkpoint: the newest complete checkpoint changed between the
    prompt and the click. Checkpoints are the same when their iterations are and, where both
    names are known, their names are (a prompt stored without the name is compared by its
    iteration). The prompt's iteration is told when that differs, else its checkpoint's name
    (`final` → iter 4000 says `final`; iter 4000 → `final` says iter 4000). None when it
    resumed there, or the prompt named no checkpoint (its buttons made no claim)."""
    if said is None or (said.iteration is None and not said.checkpoint):
        return None
    same_iter = said.iteration == resumed.iteration
    if same_iter and (not said.checkpoint or said.checkpoint == resumed.checkpoint):
        return None
    if said.iteration is not None and not same_iter:
        return ResumePoint(said.iteration, None)
    return ResumePoint(None, said.checkpoint)


def build_resolution(
    *,
    recipe: str,
    old_job_id: str,
    new_job_id: str,
    from_iter: int | None,
    lost_iters: int | None = None,
    lost_seconds: float | None = None,
    actor: str | None = None,
    held_jobs: Sequence[str] = (),
    mem: str | None = None,
    prompt: ResumePoint | None = None,
    from_checkpoint: str | None = None,
    left_out: str | None = None,
) -> ResolutionView:
    """"Resumed as 88887 (was 88154) from iteration 3,000" with what it cost and who
    approved. `prompt`: where an approved prompt's button said it would resume (None: no
    prompt); the view keeps it only when the job resumed from another checkpoint
    (`prompt_changed`). `from_checkpoint`: the name of the checkpoint it resumed from; the
    line names it when it has no iteration number (a pointer file naming `final`), so it
    never says "from scratch" then. `left_out`: the nodes the new job's submit left out beyond
    its recipe's own --exclude (its attempt's excluded_nodes), said with it."""
    said = prompt_changed(prompt, ResumePoint(from_iter, from_checkpoint))
    return ResolutionView(recipe=recipe, old_job_id=old_job_id, new_job_id=new_job_id,
                          from_iter=from_iter, lost_iters=lost_iters, lost_seconds=lost_seconds,
                          actor=actor, held_jobs=tuple(held_jobs), mem=mem,
                          prompt_iter=said.iteration if said else None,
                          prompt_checkpoint=said.checkpoint if said else None,
                          from_checkpoint=from_checkpoint if from_iter is None else None,
                          left_out=left_out or None)


def build_completion(*, recipe: str, job_id: str, last_iter: int | None,
                     target_iter: int | None, started_at: float | None, ended_at: float,
                     attempts: int, retries_used: int = 0,
                     replaced: tuple[str, ...] = ()) -> CompletionView:
    """"reached iteration 8,000 / 8,000 in 18 h 30 min, in 3 attempts"; a resubmitted array
    task's job is told with the ids it replaced, oldest first ("140_4 (was 123_4)")."""
    elapsed = ended_at - started_at if started_at is not None and ended_at >= started_at \
        else None
    return CompletionView(recipe=recipe, job_id=job_id, last_iter=last_iter,
                          target_iter=target_iter, elapsed_s=elapsed,
                          attempts=max(1, attempts), retries_used=retries_used,
                          replaced=tuple(replaced))
