"""The App Home tab: published for a user when they open it (`app_home_opened`); clicks on its
buttons arrive at handlers.actions like the thread's."""

from __future__ import annotations

from logging import Logger
from typing import Any

from slack_bolt import App

from bot.services.home import publish_home
from bot.services.ports import BotContext


def make_home_opened(services: BotContext):  # noqa: ANN201 - a Bolt listener
    def home_opened(event: dict[str, Any], logger: Logger) -> None:
        if event.get("tab", "home") != "home" or not event.get("user"):
            return  # the Messages tab
        try:
            publish_home(services, str(event["user"]), services.clock())
        except Exception:  # an event listener's error is logged, never raised into Bolt
            logger.exception("publishing the Home tab of %s failed", event.get("user"))

    return home_opened


def register(app: App, services: BotContext) -> None:
    app.event("app_home_opened")(make_home_opened(services))
