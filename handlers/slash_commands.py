"""`/train …`: ack at once (parse errors and help answered in the ack), do the work after.

The ack never touches SSH or the store, so it is always inside Slack's 3 s; the lazy listener
parses again (cheap, pure), runs the command through `bot.services.train.execute` and answers
with `respond` (the response_url: works in DMs and channels the bot is not in).
"""

from __future__ import annotations

from logging import Logger
from typing import Any

from slack_bolt import Ack, App, Respond

from bot.core.redact import Redactor
from bot.core.train_grammar import CommandError, Help, parse_command, verb_of
from bot.services.ports import BotContext
from bot.services.train import (
    Reply,
    command_error_text,
    execute,
    first_delivery,
    help_text,
    say,
)
from handlers.fence import ListenerFence, SideEffects, stopped_by_close

COMMAND = "/train"


def make_ack_train(services: BotContext):  # noqa: ANN201 - a Bolt listener
    """The ack listener, bound to the bot's services (their config and renderer: the error or
    the help text is in the channel's language)."""

    def ack_train(ack: Ack, command: dict[str, Any]) -> None:
        """Answer within 3 s: the error or the help text right away, else a short 'working'."""
        channel = command.get("channel_id")
        try:
            cmd = parse_command(command.get("text") or "")
        except CommandError as exc:
            ack(text=command_error_text(services, exc, channel))
            return
        if isinstance(cmd, Help):
            ack(text=help_text(services, cmd, channel))
            return
        ack(text=f":hourglass_flowing_sand: `/train {verb_of(cmd)}` …")

    return ack_train


def make_run_train(services: BotContext, fence: ListenerFence | None = None):  # noqa: ANN201 - a Bolt listener
    """The lazy listener, bound to the bot's services. A redelivered command (Socket Mode
    `retry_attempt`, `X-Slack-Retry-Num`) is acked again but carried out by one replica only,
    and only it answers. A command `fence` refuses (the bot is stopping) is not carried out:
    its answer says trainbot is restarting."""
    fence = fence or ListenerFence()

    def run_train(command: dict[str, Any], respond: Respond, logger: Logger) -> None:
        with fence.admitted() as admitted:
            if admitted:
                train(command, respond, logger)
                return
        try:
            cmd = parse_command(command.get("text") or "")
        except CommandError:
            return  # already answered in the ack
        if isinstance(cmd, Help):
            return
        logger.info("/train %r from %s refused: trainbot is stopping", command.get("text"),
                    command.get("user_id"))
        send(respond, Reply(say(services, None, "restarting", channel=command.get("channel_id"))),
             services.config.redactor())

    def train(command: dict[str, Any], respond: Respond, logger: Logger) -> None:
        try:
            cmd = parse_command(command.get("text") or "")
        except CommandError:
            return  # already answered in the ack
        if isinstance(cmd, Help):
            return
        effects = SideEffects()
        try:
            now = services.clock()
            if not first_delivery(services, command.get("trigger_id"), now):
                logger.info("ignoring a redelivery of /train %r: already being handled",
                            command.get("text"))
                return
            reply = execute(effects.context(services), cmd, actor=command["user_id"],
                            channel=command.get("channel_id"), now=now)
        except Exception as exc:  # lazy listeners' errors never reach @app.error: report them here
            if stopped_by_close(exc):  # trainbot is stopping: the store refuses from now on
                logger.warning("/train %r from %s stopped by the store's close (trainbot is "
                               "stopping) after starting %s", command.get("text"),
                               command.get("user_id"), effects.started_now() or "nothing")
                reply = Reply(say(services, None, "stopping", channel=command.get("channel_id"),
                                  started=effects.started_now(), reads=bool(effects.reads),
                                  steps=effects.left(services.clock())))
            else:
                logger.exception("/train %r from %s failed", command.get("text"),
                                 command.get("user_id"))
                reply = Reply(say(services, None, "internal_error",
                                  channel=command.get("channel_id")))
        send(respond, reply, services.config.redactor())

    return run_train


def send(respond: Respond, reply: Reply, redactor: Redactor) -> None:
    """The reply through the response_url, its texts redacted (an error may quote a secret)."""
    respond(
        text=redactor.redact(reply.text),
        blocks=redactor.redact_data(reply.blocks),
        response_type="ephemeral" if reply.ephemeral else "in_channel",
        replace_original=False,
    )


def register(app: App, services: BotContext, fence: ListenerFence | None = None) -> None:
    """Register `/train` on the app."""
    app.command(COMMAND)(ack=make_ack_train(services), lazy=[make_run_train(services, fence)])
