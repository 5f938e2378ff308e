"""Constants of the end-to-end tests (tests/e2e), shared by their conftest.py and the test
modules. A plain module: a test module never imports `conftest`, whose name every conftest.py
without a package shares (`pytest tests/e2e tests/unit/services` would hand it another one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slack_standin import SlackStandIn

CHANNEL = "C0TRAINRUNS"
NOW = 1_732_871_000.0  # the bot's clock in these tests


def refuse(slack: SlackStandIn, refused: str, scope: str = "chat:write", *,
           channel: str) -> None:
    """Slack refuses the bot from now on: in `channel`, which it was removed from (`refused`
    "the bot is out of its channel"), or wherever it needs `scope`, which its token lost."""
    if refused == "the bot is out of its channel":
        slack.outside.add(channel)
    else:
        slack.scopes.discard(scope)


def accept(slack: SlackStandIn, refused: str, scope: str = "chat:write", *,
           channel: str) -> None:
    """Slack takes the bot again after `refuse`: invited back to `channel`, or `scope`
    granted."""
    if refused == "the bot is out of its channel":
        slack.outside.discard(channel)
    else:
        slack.scopes.add(scope)
