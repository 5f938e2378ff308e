"""Slack action ids of trainbot's buttons: the one list the view models, the templates' views,
the console and the listeners (handlers.actions registers one per member) all use.

Pure (no Slack import), so bot.core.incident can name its buttons without the services layer.
A button's `kind` (what the template words it as) maps to its action id through
`action_id_for`; a kind without an action id is a bug, not a button nobody listens to.
"""

from __future__ import annotations

from enum import StrEnum


class ActionId(StrEnum):
    """Slack action ids of trainbot's buttons (handlers.actions registers one listener each)."""

    RESUBMIT = "trainbot_resubmit"
    RESUBMIT_MEM = "trainbot_resubmit_mem"
    CANCEL_RESUME = "trainbot_cancel_resume"
    HOLD_COMPETITOR = "trainbot_hold_competitor"
    KEEP_COMPETITOR = "trainbot_keep_competitor"
    CANCEL = "trainbot_cancel"
    DISMISS = "trainbot_dismiss"


#: The button kind a view model proposes (bot.core.incident.ProposedAction.kind, the approval
#: template's `buttons[].kind`) -> the action id its click arrives with.
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


__all__ = ["KIND_ACTIONS", "ActionId", "action_id_for"]
