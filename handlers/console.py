"""The terminal's inbound side for `trainbot demo`: approval prompts shown by a ConsoleSink
are answered at a `[y/N]` prompt (or with `--yes`), through the same approval service the
Slack buttons use (`handle_click`: the button's value is the token, its action id the choice).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from bot.services.approvals import ClickResult, handle_click
from bot.services.ports import BotContext
from bot.slack.console import (
    CANCEL_ACTIONS,
    DISMISS_ACTION,
    RESUBMIT_ACTIONS,
    ConsolePrompt,
    ConsoleSink,
)


def ask_yes_no(question: str, *, assume_yes: bool, out: TextIO,
               read: Callable[[], str] | None = None) -> bool:
    """`question [y/N] `: True only for y/yes. `assume_yes` answers yes without reading;
    end of input (no terminal) counts as no."""
    print(f"  │ ❓ {question} [y/N] ", end="", file=out, flush=True)
    if assume_yes:
        print("y (--yes)", file=out, flush=True)
        return True
    try:
        answer = (read or sys.stdin.readline)()
    except (EOFError, KeyboardInterrupt):
        answer = ""
    if not answer:
        print("(no input: no)", file=out, flush=True)
        return False
    if read is not None or not sys.stdin.isatty():  # a terminal echoes it; a pipe does not
        print(answer.strip(), file=out, flush=True)
    return answer.strip().lower() in ("y", "yes")


@dataclass
class ConsoleApprovals:
    """Answers resubmit prompts shown by a `ConsoleSink` through `handle_click`.

    Only a finished job's resubmit prompt is asked (`[y/N]`; yes clicks Resubmit, no clicks
    Dismiss). Prompts about a RUNNING job (they offer Cancel: a stall) and competitor holds
    ("Hold <job>") are shown but left unanswered with a note: the console never cancels or
    holds a job by itself, so a stall plays out to the watchdog abort.
    `on_done(prompt, result)` is called after an accepted Resubmit.
    """

    ctx: BotContext
    sink: ConsoleSink
    actor: str
    assume_yes: bool = False
    read: Callable[[], str] | None = None
    on_done: Callable[[ConsolePrompt, ClickResult], None] | None = None
    answered: list[tuple[ConsolePrompt, ClickResult]] = field(default_factory=list)

    def answer_pending(self, now: float) -> list[ClickResult]:
        """Ask about every prompt shown since the last call; returns the click results."""
        results = []
        for prompt in self.sink.take_prompts():
            resubmit = prompt.button(*RESUBMIT_ACTIONS)
            if resubmit is None or prompt.button(*CANCEL_ACTIONS) is not None:
                labels = ", ".join(b.label for b in prompt.buttons)
                self.sink.say(f"  │ (console: left unanswered — it never cancels or holds a "
                              f"job by itself; in Slack a person may click {labels})")
                continue
            yes = ask_yes_no(f"{resubmit.label}?", assume_yes=self.assume_yes,
                             out=self.sink.out, read=self.read)
            action = resubmit.action_id if yes else DISMISS_ACTION
            result = handle_click(self.ctx, resubmit.value, action, self.actor, now)
            self.sink.update_message(prompt.key, result.update_blocks,
                                     result.update_text or result.ephemeral)
            if result.ephemeral and result.status not in ("done", "declined"):
                self.sink.say(f"  │ ({self.sink._names(result.ephemeral)})")
            self.answered.append((prompt, result))
            results.append(result)
            if result.status == "done" and self.on_done is not None:
                self.on_done(prompt, result)
        return results
