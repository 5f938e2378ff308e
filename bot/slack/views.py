"""What a template sees: core view models (bot.core.incident) plus their Slack presentation —
buttons with action ids and values, and the root's progress bar.

`ActionId` is the one list of trainbot's button action ids: the view models' proposals, the
approval prompts, the console and the listeners (handlers.actions registers one per member)
all use it. A proposal's `kind` (what the template words it as) maps to its action id through
`action_id_for`; a kind without an action id is a bug, not a button nobody listens to.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from bot.core.incident import Incident, Proposal, RootView, WarningView

PROGRESS_BAR_CELLS = 20


class ActionId(StrEnum):
    """Slack action ids of trainbot's buttons (handlers.actions registers one listener each)."""

    RESUBMIT = "trainbot_resubmit"
    RESUBMIT_MEM = "trainbot_resubmit_mem"
    CANCEL_RESUME = "trainbot_cancel_resume"
    HOLD_COMPETITOR = "trainbot_hold_competitor"
    KEEP_COMPETITOR = "trainbot_keep_competitor"
    CANCEL = "trainbot_cancel"
    DISMISS = "trainbot_dismiss"


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
}


def action_id_for(kind: str) -> ActionId:
    """The action id of a button kind; ValueError names the known kinds."""
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
    opaque, `action_id` is the kind's ActionId."""

    kind: str  # resubmit | resubmit_mem | cancel_resume | dismiss
    action_id: str
    value: str
    style: str | None = None  # primary | danger | None
    from_iter: int | None = None
    mem: str | None = None  # e.g. "1200G", for resubmit_mem


def buttons(proposals: Iterable[Proposal], job_id: str,
            value_for: ValueFactory = default_value) -> list[Button]:
    """One button per proposal: "Cancel and resume" is red, the first resubmit green."""
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
                          style, p.from_iter, p.mem))
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


def template_context(view: Any) -> dict[str, Any]:
    """The names a template sees: a plain mapping as it is; a core view model's fields plus
    its buttons (`actions`) or its `progress_bar`."""
    if isinstance(view, Mapping):
        return dict(view)
    context = asdict(view)
    if isinstance(view, Incident | WarningView):
        context["actions"] = [asdict(b) for b in buttons(view.proposals, view.job_id)]
    if isinstance(view, RootView):
        context["progress_bar"] = progress_bar(view.last_iter, view.target_iter)
    return context


__all__ = ["KIND_ACTIONS", "ActionId", "Button", "action_id_for", "buttons", "default_value",
           "progress_bar", "template_context"]
