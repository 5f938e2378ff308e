"""Button clicks on approval prompts (in a thread or on the Home tab): ack at once, then accept
the click (once) and act.

Action ids are `ActionId` members (bot.slack.views, the one list every button is built
from: one listener each here, so no button goes unheard); the button value is the prompt's
opaque token. A Slack redelivery carries `X-Slack-Retry-Num` (Bolt maps Socket Mode's
`retry_attempt` to it); the claim in the store makes any repeat a no-op either way.
"""

from __future__ import annotations

from logging import Logger
from typing import Any

from slack_bolt import Ack, App, BoltRequest, Respond
from slack_sdk import WebClient

from bot.core.redact import Redactor
from bot.services.approvals import ClickResult, click_reply, handle_click
from bot.services.home import publish_home
from bot.services.ports import BotContext
from bot.services.prompt_follow_up import after_click
from bot.slack.views import ActionId
from handlers.fence import ListenerFence, SideEffects, stopped_by_close

__all__ = ["ActionId", "register"]


def ack_click(ack: Ack) -> None:
    ack()


def retry_num(request: BoltRequest) -> int:
    """X-Slack-Retry-Num of the delivery (0 for the first)."""
    values = request.headers.get("x-slack-retry-num") or ["0"]
    try:
        return int(values[0])
    except (TypeError, ValueError):
        return 0


def make_run_click(services: BotContext, fence: ListenerFence | None = None):  # noqa: ANN201 - a Bolt listener
    """The lazy listener, bound to the bot's services; a click `fence` refuses (the bot is
    stopping) does nothing and tells the clicker trainbot is restarting."""
    fence = fence or ListenerFence()

    def run_click(body: dict[str, Any], action: dict[str, Any], client: WebClient,
                  respond: Respond, request: BoltRequest, logger: Logger) -> None:
        with fence.admitted() as admitted:
            if admitted:
                click(body, action, client, respond, request, logger)
            else:
                restarting(body, client, respond, logger)

    def restarting(body: dict[str, Any], client: WebClient, respond: Respond,
                   logger: Logger) -> None:
        logger.info("a click by %s refused: trainbot is stopping", body["user"]["id"])
        tell(body, client, respond, click_reply(services, None, "restarting"))

    def click(body: dict[str, Any], action: dict[str, Any], client: WebClient,
              respond: Respond, request: BoltRequest, logger: Logger) -> None:
        token, user = str(action.get("value") or ""), body["user"]["id"]
        from_home = (body.get("view") or {}).get("type") == "home"
        now = services.clock()
        effects = SideEffects()
        try:
            result = handle_click(effects.context(services), token,
                                  str(action.get("action_id")), user, now, retry_num(request),
                                  from_home=from_home)
        except Exception as exc:  # lazy listeners' errors never reach @app.error: report them here
            if stopped_by_close(exc):  # trainbot is stopping: no Home tab to publish from it
                logger.warning("click %s by %s stopped by the store's close (trainbot is "
                               "stopping) after starting %s", action.get("action_id"), user,
                               effects.started_now() or "nothing")
                tell(body, client, respond, click_reply(
                    services, None, "stopping", channel=(body.get("channel") or {}).get("id"),
                    started=effects.started_now(), steps=effects.left(services.clock())))
                return
            logger.exception("click %s by %s failed", action.get("action_id"),
                             body.get("user", {}).get("id"))
            failed = click_reply(services, None, "internal_error")
            if from_home:
                publish_home(services, user, now, notice=failed)
            else:
                respond(text=failed, response_type="ephemeral", replace_original=False)
            return
        if not from_home:  # a Home tab click has no message to update, no response_url
            show(result, body, client, respond, services.config.redactor())
        try:
            after_click(services, token, result, user, now, from_home=from_home)
        except Exception:  # the click itself is done; a Home tab refresh is best effort
            logger.exception("refreshing the Home tabs after %s failed", token)

    return run_click


def tell(body: dict[str, Any], client: WebClient, respond: Respond, text: str) -> None:
    """`text` to the clicker alone: ephemeral, or in a direct message from the Home tab (no
    response_url there)."""
    if (body.get("view") or {}).get("type") == "home":
        client.chat_postMessage(channel=body["user"]["id"], text=text)
    else:
        respond(text=text, response_type="ephemeral", replace_original=False)


def show(result: ClickResult, body: dict[str, Any], client: WebClient, respond: Respond,
         redactor: Redactor) -> None:
    """Update the prompt message and/or tell the clicker, the texts redacted (a failure's
    outcome quotes the cluster's error, which may quote a secret). The rewritten prompt comes
    from the renderer, which redacted it before cutting it to Slack's limits: redacting it
    again here changes nothing, so it is sent within them."""
    container = body.get("container") or {}
    channel = (body.get("channel") or {}).get("id") or container.get("channel_id")
    ts = container.get("message_ts") or (body.get("message") or {}).get("ts")
    if result.update_text is not None and channel and ts:  # (a click always names both)
        client.chat_update(channel=channel, ts=ts, text=redactor.redact(result.update_text),
                           blocks=redactor.redact_data(result.update_blocks))
    if result.ephemeral:
        respond(text=redactor.redact(result.ephemeral), response_type="ephemeral",
                replace_original=False)


def register(app: App, services: BotContext, fence: ListenerFence | None = None) -> None:
    """One listener per ActionId."""
    run_click = make_run_click(services, fence)
    for action_id in ActionId:
        app.action(action_id.value)(ack=ack_click, lazy=[run_click])
