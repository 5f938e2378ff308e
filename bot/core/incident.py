"""View models of a run thread: root message, incident, early warning, resolution.

Pure: plain data in, plain data out; no clock reads (callers pass `now`). Templates
(templates/<lang>/*.json.j2) turn these into Block Kit; the words live there, the facts
(numbers, ids, what to propose) live here. `to_view()` gives the dict a template sees.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bot.core.actions import action_id_for
from bot.core.models import Action, Diagnosis
from bot.core.policy import suggest_mem

GIB = 1024**3
PROGRESS_BAR_CELLS = 20

# Classes whose usual fix is more host memory: propose "Resubmit with --mem=…".
MEMORY_CLASSES = frozenset({"host_oom", "dataloader_worker_killed"})

# `value_for(kind, params) -> str`: the opaque button value (an approval token). The default
# encodes the params as JSON; the approvals layer passes its own.
ValueFactory = Callable[[str, dict[str, Any]], str]


def default_value(kind: str, params: dict[str, Any]) -> str:
    return json.dumps({"kind": kind, **params}, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class AttemptSummary:
    """One job of a run chain, as the root message's table shows it."""

    job_id: str
    state: str  # RUNNING, FAILED, OUT_OF_MEMORY, COMPLETED, PENDING, …
    last_iter: int | None = None
    from_iter: int | None = None  # where it resumed from (None: from scratch)
    cause: str | None = None  # diagnosis class id, when it ended badly


@dataclass(frozen=True)
class ProposedAction:
    """A button: `kind` picks the words (in the template), `value` is opaque, `action_id`
    is the kind's bot.core.actions.ActionId (a listener exists for it)."""

    kind: str  # resubmit | resubmit_mem | cancel_resume | dismiss
    action_id: str
    value: str
    style: str | None = None  # primary | danger | None
    from_iter: int | None = None
    mem: str | None = None  # e.g. "1200G", for resubmit_mem


@dataclass(frozen=True)
class Metric:
    key: str  # last_iter, sec_per_iter, last_loss, rss_trend, projected_oom, stall, max_rss…
    value: str


@dataclass(frozen=True)
class Incident:
    """What happened to one job and what trainbot proposes."""

    recipe: str
    job_id: str
    class_id: str
    title: str  # the catalogue's English headline (templates may translate by class_id)
    explanation: str  # the diagnosis' hint with this case's numbers, in English
    action: str
    retryable: bool
    evidence: tuple[tuple[int, str], ...]
    metrics: tuple[Metric, ...]
    last_iter: int | None
    target_iter: int | None
    last_checkpoint_iter: int | None
    lost_iters: int | None
    lost_seconds: float | None
    during_checkpoint_save: bool
    upstream_class: str | None
    upstream_seconds_before: float | None
    upstream_note: str
    secondary: tuple[str, ...]
    actions: tuple[ProposedAction, ...]
    state: str | None = None
    exit_code: str | None = None
    # lang -> `explanation` in that language (a template without its language shows English)
    translated_explanations: dict[str, str] = field(default_factory=dict)
    upstream_last_iter: int | None = None  # the iteration progress stopped at, before it

    def to_view(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RootView:
    """The thread's first message, rewritten in place as the chain moves on."""

    recipe: str
    job_id: str
    state: str
    last_iter: int | None
    target_iter: int | None
    progress_bar: str
    attempts: tuple[AttemptSummary, ...]
    retries_used: int = 0
    retry_budget: int | None = None
    cluster: str | None = None

    def to_view(self) -> dict[str, Any]:
        return asdict(self)


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
    actions: tuple[ProposedAction, ...] = ()

    def to_view(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ResolutionView:
    """The chain recovered: `old_job_id` resumed as `new_job_id` from `from_iter`."""

    recipe: str
    old_job_id: str
    new_job_id: str
    from_iter: int | None
    lost_iters: int | None = None
    lost_seconds: float | None = None
    actor: str | None = None  # who approved ("auto" for an automatic retry)
    held_jobs: tuple[str, ...] = field(default_factory=tuple)
    mem: str | None = None

    def to_view(self) -> dict[str, Any]:
        return asdict(self)


# --- builders ----------------------------------------------------------------------------


def progress_bar(last_iter: int | None, target_iter: int | None,
                 cells: int = PROGRESS_BAR_CELLS) -> str:
    """`▓▓▓▓▓▓▓▓░░░░░░░░░░░░ 43% · 3,470 / 8,000` (or just the iteration without a target)."""
    if last_iter is None:
        return "—"
    if not target_iter:
        return f"iter {last_iter:,}"
    frac = max(0.0, min(1.0, last_iter / target_iter))
    full = int(math.floor(frac * cells))
    bar = "▓" * full + "░" * (cells - full)
    return f"{bar} {int(frac * 100)}% · {last_iter:,} / {target_iter:,}"


def build_root(
    *,
    recipe: str,
    attempts: Sequence[AttemptSummary],
    target_iter: int | None,
    retries_used: int = 0,
    retry_budget: int | None = None,
    cluster: str | None = None,
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
        progress_bar=progress_bar(last_iter, target_iter),
        attempts=tuple(attempts),
        retries_used=retries_used,
        retry_budget=retry_budget,
        cluster=cluster,
    )


def _default_mem(diagnosis: Diagnosis, limit_bytes: int | None,
                 max_rss_bytes: int | None) -> str | None:
    """The `--mem` to propose when the caller has none: the policy's rule with its default
    parameters (bot.core.policy.suggest_mem; the watcher passes the recipe's own value)."""
    size = suggest_mem(limit_bytes, max_rss_bytes,
                       during_save=diagnosis.during_checkpoint_save)
    return size[1] if size is not None else None


def _fmt_gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:,.0f} GiB" if n_bytes >= 10 * GIB else f"{n_bytes / GIB:,.1f} GiB"


def _metrics(d: Diagnosis, max_rss_bytes: int | None, limit_bytes: int | None) -> list[Metric]:
    m = d.metrics
    out: list[Metric] = []
    if m.last_iter is not None:
        target = f" / {m.target_iter:,}" if m.target_iter else ""
        out.append(Metric("last_iter", f"{m.last_iter:,}{target}"))
    if m.sec_per_iter is not None:
        out.append(Metric("sec_per_iter", f"{m.sec_per_iter:.2f} s/iter"))
    if m.last_loss is not None:
        out.append(Metric("last_loss", f"{m.last_loss:.4g}"))
    if max_rss_bytes:
        out.append(Metric("max_rss", _fmt_gib(max_rss_bytes)))
    if limit_bytes:
        out.append(Metric("mem_limit", _fmt_gib(limit_bytes)))
    if m.rss_gib_per_100_iter is not None and abs(m.rss_gib_per_100_iter) >= 0.5:
        out.append(Metric("rss_trend", f"{m.rss_gib_per_100_iter:+.1f} GiB / 100 iter"))
    if m.projected_oom_iter is not None:
        out.append(Metric("projected_oom", f"iter {m.projected_oom_iter:,}"))
    if m.stall_seconds is not None:
        out.append(Metric("stall", f"{m.stall_seconds / 60:,.0f} min"))
    return out


def build_incident(
    diagnosis: Diagnosis,
    *,
    recipe: str,
    job_id: str,
    last_checkpoint_iter: int | None,
    now: float,
    title: str | None = None,
    last_checkpoint_time: float | None = None,
    failed_at: float | None = None,
    state: str | None = None,
    exit_code: str | None = None,
    mem_limit_bytes: int | None = None,
    max_rss_bytes: int | None = None,
    value_for: ValueFactory = default_value,
    max_evidence: int | None = None,
    suggested_mem: str | None = None,
) -> Incident:
    """The incident view: the diagnosis plus work lost since the last checkpoint and the
    proposed actions as data.

    Work lost: iterations past `last_checkpoint_iter`; wall time from the checkpoint's save
    (`last_checkpoint_time`) to the failure (`failed_at`, default `now`), else the lost
    iterations × s/iter.
    """
    m = diagnosis.metrics
    last_iter = m.last_iter
    lost_iters: int | None = None
    lost_seconds: float | None = None
    if last_iter is not None:
        lost_iters = max(0, last_iter - (last_checkpoint_iter or 0))
        end = failed_at if failed_at is not None else now
        if last_checkpoint_time is not None and end >= last_checkpoint_time:
            lost_seconds = end - last_checkpoint_time
        elif m.sec_per_iter:
            lost_seconds = lost_iters * m.sec_per_iter
    if diagnosis.class_id == "completed" or diagnosis.action == Action.NONE:
        lost_iters, lost_seconds = None, None

    actions = _propose(diagnosis, job_id=job_id, from_iter=last_checkpoint_iter,
                       mem=suggested_mem or _default_mem(diagnosis, mem_limit_bytes,
                                                         max_rss_bytes),
                       value_for=value_for)
    evidence = tuple((e.line, e.text) for e in diagnosis.evidence)
    if max_evidence is not None:
        evidence = evidence[-max_evidence:]
    up = diagnosis.upstream
    return Incident(
        recipe=recipe,
        job_id=job_id,
        class_id=diagnosis.class_id,
        title=title or diagnosis.class_id.replace("_", " "),
        explanation=diagnosis.hint,
        action=str(diagnosis.action),
        retryable=diagnosis.retryable,
        evidence=evidence,
        metrics=tuple(_metrics(diagnosis, max_rss_bytes, mem_limit_bytes)),
        last_iter=last_iter,
        target_iter=m.target_iter,
        last_checkpoint_iter=last_checkpoint_iter,
        lost_iters=lost_iters,
        lost_seconds=lost_seconds,
        during_checkpoint_save=diagnosis.during_checkpoint_save,
        upstream_class=up.class_id if up else None,
        upstream_seconds_before=up.seconds_before_failure if up else None,
        upstream_note=up.note if up else "",
        secondary=tuple(c for c in diagnosis.secondary if not up or c != up.class_id),
        actions=tuple(actions),
        state=state,
        exit_code=exit_code,
        translated_explanations=dict(diagnosis.translated_hints),
        upstream_last_iter=up.last_iter if up else None,
    )


def _button(kind: str, job_id: str, value_for: ValueFactory, style: str | None = None,
            **params: Any) -> ProposedAction:
    value = value_for(kind, {"job": job_id, **{k: v for k, v in params.items() if v is not None}})
    return ProposedAction(kind=kind, action_id=action_id_for(kind).value, value=value, style=style,
                          from_iter=params.get("from_iter"), mem=params.get("mem"))


def _propose(d: Diagnosis, *, job_id: str, from_iter: int | None, mem: str | None,
             value_for: ValueFactory) -> list[ProposedAction]:
    if d.action == Action.NONE or d.class_id == "completed":
        return []
    out: list[ProposedAction] = []
    if d.class_id == "hang":
        out.append(_button("cancel_resume", job_id, value_for, "danger", from_iter=from_iter))
    elif d.action == Action.RESUBMIT:
        out.append(_button("resubmit", job_id, value_for, "primary", from_iter=from_iter))
    elif d.action == Action.ASK:
        if d.class_id in MEMORY_CLASSES and mem:
            out.append(_button("resubmit_mem", job_id, value_for, "primary",
                               from_iter=from_iter, mem=mem))
        out.append(_button("resubmit", job_id, value_for,
                           None if out else "primary", from_iter=from_iter))
    out.append(_button("dismiss", job_id, value_for))
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
    value_for: ValueFactory = default_value,
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
    actions: tuple[ProposedAction, ...] = ()
    if kind == "stall":
        actions = (
            _button("cancel_resume", job_id, value_for, "danger", from_iter=last_checkpoint_iter),
            _button("dismiss", job_id, value_for),
        )
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
        actions=actions,
    )


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
) -> ResolutionView:
    """"resumed as 88887 from iter 3000" with what it cost and who approved."""
    return ResolutionView(recipe=recipe, old_job_id=old_job_id, new_job_id=new_job_id,
                          from_iter=from_iter, lost_iters=lost_iters, lost_seconds=lost_seconds,
                          actor=actor, held_jobs=tuple(held_jobs), mem=mem)
