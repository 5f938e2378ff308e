"""The App Home tab: published for a user when they open it (`app_home_opened`); clicks on its
prompts' buttons arrive at handlers.actions like the thread's. An adopted job's "Cancel"
(HOME_CANCEL_JOB, the job's raw id as its value) runs `/train cancel JOBID` as the clicker (an
array task as its row names it, `6200_2`: bot.services.home.cancel_command), authorized and
audited like the command; its "Stop watching" (HOME_STOP_WATCHING, the chain
id) is `bot.services.home.stop_watching`, as `/train unwatch` is; the tab says what either did."""

from __future__ import annotations

from collections.abc import Callable
from logging import Logger
from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot.core.slurm.job_ref import is_job_id
from bot.services.approvals import click_reply
from bot.services.home import cancel_command, publish_home, stop_watching
from bot.services.ports import BotContext
from bot.services.train import execute
from bot.slack.views import HOME_CANCEL_JOB, HOME_STOP_WATCHING
from handlers.fence import ListenerFence, SideEffects, stopped_by_close


def make_home_opened(services: BotContext,
                     fence: ListenerFence | None = None):  # noqa: ANN201 - a Bolt listener
    """Publishes the tab as it is opened; not while the bot is stopping (`fence`): the tab
    then shows what it showed last."""
    fence = fence or ListenerFence()

    def home_opened(event: dict[str, Any], logger: Logger) -> None:
        if event.get("tab", "home") != "home" or not event.get("user"):
            return  # the Messages tab
        with fence.admitted() as admitted:
            if not admitted:
                return
            try:
                publish_home(services, str(event["user"]), services.clock())
            except Exception as exc:  # an event listener's error is logged, never raised into Bolt
                if stopped_by_close(exc):
                    logger.info("the Home tab of %s not published: trainbot is stopping",
                                event.get("user"))
                else:
                    logger.exception("publishing the Home tab of %s failed", event.get("user"))

    return home_opened


def _id_click(services: BotContext, what: str, subject: str,
              act: Callable[[BotContext, str, int, float], str],
              fence: ListenerFence | None):  # noqa: ANN202 - a Bolt listener
    """A Home tab button whose value is an id (of a `subject`: a job, a chain): `act(ctx,
    user, id, now)` does `what` the button says and tells what it did, which the republished
    tab shows. A value that is no id (a forged click; `0`, no job's or chain's id: is_job_id,
    the rule `/train` takes job ids by) is logged and ignored. A click `fence`
    refuses (the bot is stopping) does nothing; the clicker is told, in a direct message,
    that trainbot is restarting; so too, with what it had started, a click the store's close
    stopped (handlers.fence.stopped_by_close)."""
    fence = fence or ListenerFence()

    def click(body: dict[str, Any], action: dict[str, Any], logger: Logger,
              client: WebClient | None = None) -> None:
        user, value = body["user"]["id"], str(action.get("value") or "")
        now = services.clock()
        if not is_job_id(value):
            logger.warning("Home tab %s by %s with a forged value %r", what, user, value)
            return
        with fence.admitted() as admitted:
            if not admitted:
                logger.info("Home tab %s by %s refused: trainbot is stopping", what, user)
                if client is not None:  # (Bolt always passes it)
                    client.chat_postMessage(channel=user,
                                            text=click_reply(services, None, "restarting"))
                return
            effects = SideEffects()
            ctx = effects.context(services)
            try:
                publish_home(ctx, user, now, notice=act(ctx, user, int(value), now))
            except Exception as exc:  # lazy listeners' errors never reach @app.error: log them here
                if not stopped_by_close(exc):
                    logger.exception("Home tab %s of %s %s by %s failed", what, subject, value,
                                     user)
                    return
                logger.warning("Home tab %s of %s %s by %s stopped by the store's close "
                               "(trainbot is stopping) after starting %s", what, subject,
                               value, user, effects.started_now() or "nothing")
                if client is not None:
                    client.chat_postMessage(channel=user, text=click_reply(
                        services, None, "stopping", started=effects.started_now(),
                        steps=effects.left(services.clock())))

    return click


def make_cancel_job(services: BotContext,
                    fence: ListenerFence | None = None):  # noqa: ANN201 - a Bolt listener
    def cancel(ctx: BotContext, user: str, job: int, now: float) -> str:
        return execute(ctx, cancel_command(ctx, job), actor=user, channel=None, now=now).text

    return _id_click(services, "cancel", "job", cancel, fence)


def make_stop_watching(services: BotContext,
                       fence: ListenerFence | None = None):  # noqa: ANN201 - a Bolt listener
    def stop(ctx: BotContext, user: str, chain: int, now: float) -> str:
        return stop_watching(ctx, chain, user, now, besides=user)

    return _id_click(services, "stop-watching", "chain", stop, fence)


def _ack(ack: Ack) -> None:
    ack()


def register(app: App, services: BotContext, fence: ListenerFence | None = None) -> None:
    app.event("app_home_opened")(make_home_opened(services, fence))
    app.action(HOME_CANCEL_JOB)(ack=_ack, lazy=[make_cancel_job(services, fence)])
    app.action(HOME_STOP_WATCHING)(ack=_ack, lazy=[make_stop_watching(services, fence)])
