"""`trainbot approvals [--config PATH]` lists the approval prompts waiting for a person;
`trainbot approvals decide CHOICE --token=TOKEN --as USER` answers one as that approver would by
clicking its button (bot.services.approvals: the same checks, the same audit). With
`trainbot run --no-slack` this is the only way to approve."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from bot.cli import EXIT_FAILED, EXIT_OK, UsageError, add_config_argument, load_config_arg

if TYPE_CHECKING:
    from bot.services.ports import BotContext

NAME = "approvals"
HELP = "List the approval prompts waiting for a person, or decide one (as an approver)."


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    sub = parser.add_subparsers(dest="approvals_command", metavar="ACTION")
    decide = sub.add_parser("decide", help="answer a prompt with one of its choices")
    decide.add_argument("choice", metavar="CHOICE",
                        help="one of the prompt's choices (resubmit, dismiss, …)")
    decide.add_argument("--token", metavar="TOKEN", required=True,
                        help="the prompt's token, from the list; write --token=TOKEN (a "
                             "token may start with '-')")
    decide.add_argument("--as", dest="actor", metavar="USER", required=True,
                        help="the Slack user id of the approver deciding (the config's "
                             "approvers of the recipe); recorded in the audit log")
    add_config_argument(decide)


def run(args: argparse.Namespace) -> int:
    from bot.app import build_context

    config = load_config_arg(args)
    ctx = build_context(config, slack=False)
    try:
        if getattr(args, "approvals_command", None) == "decide":
            return _decide(ctx, args.token, args.choice, args.actor)
        return _list(ctx, as_json=args.json)
    finally:
        ctx.clusters.close()
        ctx.store.close()


def _list(ctx: BotContext, *, as_json: bool) -> int:
    now = time.time()
    rows = [{"token": a.token, "action": a.action, "recipe": a.payload.get("recipe"),
             "job_id": a.target_job, "chain_id": a.chain_id,
             "choices": a.payload.get("choices", []), "expires_in_s": int(a.expires_at - now),
             "summary": a.payload.get("summary")}
            for a in ctx.store.approvals.pending() if a.expires_at > now]
    if as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("no approval waiting")
    from bot.slack.render import format_duration

    for row in rows:
        print(f"{row['token']}  {row['action']} {row['recipe'] or ''} job {row['job_id']} "
              f"(chain {row['chain_id']}), expires in "
              f"{format_duration(row['expires_in_s'], down=True)}: "
              f"{' | '.join(row['choices'])}")
        if row["summary"]:
            print(f"    {row['summary']}")
    if rows:
        print("decide one: trainbot approvals decide CHOICE --token=TOKEN --as APPROVER_ID")
    return EXIT_OK


def _decide(ctx: BotContext, token: str, choice: str, actor: str) -> int:
    from bot.services.approvals import CHOICES, handle_click

    action = next((a for a, c in CHOICES.items() if c == choice), None)
    if action is None:
        raise UsageError(f"no choice {choice!r}; one of {', '.join(CHOICES.values())}")
    result = handle_click(ctx, token, action.value, actor, time.time())
    print(f"{result.status}: {result.update_text or result.ephemeral or ''}".rstrip())
    return EXIT_OK if result.status in ("done", "declined") else EXIT_FAILED
