"""What a Slack listener answers with, recorded: `Answers`, a Bolt `respond`, and `Client`, a
WebClient's chat.postMessage and chat.update. Shared by the tests that call a listener made by
handlers/ directly (test_listener_fence.py, test_store_steps_at_close.py)."""

from __future__ import annotations

from typing import Any


class Answers:
    """A `respond` that records what it was given."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def __call__(self, **kw: Any) -> None:
        self.sent.append(kw)


class Client:
    """A WebClient that records chat.postMessage and chat.update."""

    def __init__(self) -> None:
        self.posted: list[dict[str, Any]] = []

    def chat_postMessage(self, **kw: Any) -> None:  # noqa: N802 - the Web API's name
        self.posted.append(kw)

    def chat_update(self, **kw: Any) -> None:
        self.posted.append(kw)
