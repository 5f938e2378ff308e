"""What a template sees: core view models (bot.core.incident) plus their Slack presentation:
buttons with action ids and values, the root's progress bar, an incident's metric cells."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from bot.core.home import prompt_confirm
from bot.core.incident import Incident, Proposal, RootView, WarningView
from bot.core.policy import CheckpointUnknown
from bot.core.units import GIB

PROGRESS_BAR_CELLS = 20


class ActionId(StrEnum):
    """The one list of trainbot's button action ids: proposals, approval prompts, the console
    and the listeners (handlers.actions registers one listener each) all use it."""

    RESUBMIT = "trainbot_resubmit"
    RESUBMIT_MEM = "trainbot_resubmit_mem"
    CANCEL_RESUME = "trainbot_cancel_resume"
    HOLD_COMPETITOR = "trainbot_hold_competitor"
    KEEP_COMPETITOR = "trainbot_keep_competitor"
    CANCEL = "trainbot_cancel"
    DISMISS = "trainbot_dismiss"
    RUN_PROBE = "trainbot_run_probe"


#: The App Home's "Cancel job" on a job trainbot adopted (`/train watch`): its value is the
#: job's raw id (an array's own id), not a prompt's token, so it is not an ActionId; its
#: click runs `/train cancel` (handlers.home).
HOME_CANCEL_JOB = "trainbot_home_cancel_job"
#: The App Home's "Stop watching" on a job or array trainbot adopted; its value is the chain id.
HOME_STOP_WATCHING = "trainbot_home_stop_watching"


#: The button kind a view proposes (bot.core.incident.Proposal.kind, the approval template's
#: `buttons[].kind`) -> the action id its click arrives with.
KIND_ACTIONS: dict[str, ActionId] = {
    "resubmit": ActionId.RESUBMIT,
    "resubmit_mem": ActionId.RESUBMIT_MEM,
    "cancel_resume": ActionId.CANCEL_RESUME,
    "cancel": ActionId.CANCEL,
    "hold": ActionId.HOLD_COMPETITOR,
    "keep": ActionId.KEEP_COMPETITOR,
    "dismiss": ActionId.DISMISS,
    "probe": ActionId.RUN_PROBE,
}


def action_id_for(kind: str) -> ActionId:
    """The action id of a button kind (what the template words it as); a kind without one is a
    bug, not a button nobody listens to: ValueError names the known kinds."""
    try:
        return KIND_ACTIONS[kind]
    except KeyError:
        raise ValueError(f"no action id for button kind {kind!r}; known: "
                         f"{', '.join(sorted(KIND_ACTIONS))} (add it to ActionId)") from None


# `value_for(kind, params) -> str`: the opaque button value. The default encodes the params as
# JSON (`trainbot report`); live prompts carry an approval token (bot.services.approvals).
ValueFactory = Callable[[str, dict[str, Any]], str]


def default_value(kind: str, params: dict[str, Any]) -> str:
    return json.dumps({"kind": kind, **params}, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Button:
    """A proposal as a Slack button: `kind` picks the words (in the template), `value` is
    opaque, `action_id` is the kind's ActionId; `confirm`, on a button that cancels the job,
    what its confirm dialog names (bot.core.home.cancel_confirm)."""

    kind: str  # resubmit | resubmit_mem | cancel_resume | dismiss
    action_id: str
    value: str
    style: str | None = None  # primary | danger | None
    from_iter: int | None = None
    mem: str | None = None  # e.g. "1200G", for resubmit_mem
    confirm: dict[str, Any] | None = None
    from_checkpoint: str | None = None  # the checkpoint it resumes from, named without from_iter
    checkpoint_unknown: CheckpointUnknown | None = None  # why the checkpoint is unknown


def buttons(proposals: Iterable[Proposal], job_id: str,
            value_for: ValueFactory = default_value, *, state: str = "RUNNING"
            ) -> list[Button]:
    """One button per proposal: "Cancel and resume" is red, the first resubmit green; a
    button that cancels the job asks first, naming it and its `state` (the prompts' one
    builder, bot.core.home.prompt_confirm)."""
    out: list[Button] = []
    for p in proposals:
        style = None
        if p.kind == "cancel_resume":
            style = "danger"
        elif p.kind in ("resubmit", "resubmit_mem") and not any(
                b.kind in ("resubmit", "resubmit_mem") for b in out):
            style = "primary"
        params = {"job": job_id, **{k: v for k, v in (("from_iter", p.from_iter),
                                                      ("mem", p.mem)) if v is not None}}
        out.append(Button(p.kind, action_id_for(p.kind).value, value_for(p.kind, params),
                          style, p.from_iter, p.mem,
                          prompt_confirm(p.kind, job_id, state, p.from_iter,
                                         from_checkpoint=p.from_checkpoint,
                                         checkpoint_unknown=p.checkpoint_unknown
                                         ).get("confirm"),
                          p.from_checkpoint, p.checkpoint_unknown))
    return out


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


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:,.0f} GiB" if n_bytes >= 10 * GIB else f"{n_bytes / GIB:,.1f} GiB"


def metric_cells(inc: Incident) -> list[dict[str, Any]]:
    """The incident's figures as the cells of its metrics block: `key` names the label (the
    template words it), `value` is the figure with its unit (a duration in seconds: the
    template's `duration` words it)."""
    m = inc.metrics
    cells: list[tuple[str, Any]] = []
    if m.last_iter is not None:
        target = f" / {m.target_iter:,}" if m.target_iter else ""
        cells.append(("last_iter", f"{m.last_iter:,}{target}"))
    if m.sec_per_iter is not None:
        cells.append(("sec_per_iter", f"{m.sec_per_iter:.2f} s/iter"))
    if m.last_loss is not None:
        cells.append(("last_loss", f"{m.last_loss:.4g}"))
    if inc.max_rss_bytes:
        cells.append(("max_rss", _gib(inc.max_rss_bytes)))
    if inc.mem_limit_bytes:
        cells.append(("mem_limit", _gib(inc.mem_limit_bytes)))
    if m.rss_gib_per_100_iter is not None and abs(m.rss_gib_per_100_iter) >= 0.5:
        cells.append(("rss_trend", f"{m.rss_gib_per_100_iter:+.1f} GiB / 100 iter"))
    if m.projected_oom_iter is not None:
        cells.append(("projected_oom", f"iter {m.projected_oom_iter:,}"))
    if m.stall_seconds is not None:
        cells.append(("stall", m.stall_seconds))  # worded by the template's `duration`
    return [{"key": k, "value": value} for k, value in cells]


def template_context(view: Any) -> dict[str, Any]:
    """The names a template sees: a plain mapping as it is; a core view model's fields plus
    its buttons (`actions`), its metric cells (`metrics`) or its `progress_bar`."""
    if isinstance(view, Mapping):
        return dict(view)
    context = asdict(view)
    if isinstance(view, Incident | WarningView):
        # a warning's job still runs; an incident's state is Slurm's, when known
        state = (view.state if isinstance(view, Incident) else None) or "RUNNING"
        context["actions"] = [asdict(b) for b in buttons(view.proposals, view.job_id,
                                                         state=state)]
    if isinstance(view, Incident):
        context["metrics"] = metric_cells(view)
    if isinstance(view, RootView):
        context["progress_bar"] = progress_bar(view.last_iter, view.target_iter)
    return context


__all__ = ["HOME_CANCEL_JOB", "HOME_STOP_WATCHING", "KIND_ACTIONS", "ActionId", "Button",
           "action_id_for", "buttons", "default_value", "metric_cells", "progress_bar",
           "template_context"]
