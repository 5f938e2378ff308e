"""A run's thread driven as Slack drives the bot: the real Bolt app over the Slack stand-in and
the fake clusters, with a person's `/train` command and a button click on a prompt in the
thread (the click-fault tests, tests/e2e/faults).

The run is recipe mix's chain of job 88154 in channel C0TRAIN; its prompts are
`create_resubmit_prompt`'s, pressed by W0LEAD (an approver) unless a test says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fakes import FakeSlurm
from slack_bolt import App
from slack_standin import SlackStandIn

from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.slack.views import ActionId
from support.bolt_driver import ResponseUrls, ack_text, click_body, dispatch, slash_body

CH = "C0TRAIN"
APPROVER = "W0LEAD"


@dataclass
class ClickWorld:
    app: App
    urls: ResponseUrls
    services: BotContext
    slack: SlackStandIn
    slurm: FakeSlurm
    run_at: float  # when the run's job 88154 was recorded
    prompt_at: float  # when a prompt about it was posted

    def train(self, text: str, user: str = "U0ALICE") -> str:
        """`/train <text>` typed by `user` in the channel: the command's one reply."""
        url = self.urls.new()
        ack_text(dispatch(self.app, slash_body(text, user=user, channel=CH, response_url=url)))
        [reply] = self.urls.of(url)
        return str(reply["text"])

    def click(self, action: ActionId, token: str, ts: str, user: str = APPROVER
              ) -> list[dict[str, Any]]:
        """`user` presses `action` of prompt `token` (message `ts`): what the click answered
        the presser (its response_url messages; the ack itself is empty)."""
        url = self.urls.new()
        body = click_body(action, token, user=user, channel=CH, message_ts=ts, response_url=url)
        assert ack_text(dispatch(self.app, body)) == ""
        return self.urls.of(url)

    def click_texts(self, action: ActionId, token: str, ts: str, user: str = APPROVER
                    ) -> list[str]:
        """The texts of `click`'s answers."""
        return [str(a["text"]) for a in self.click(action, token, ts, user)]

    def run(self, state: str = "FAILED") -> int:
        """Chain of job 88154 (in Slurm: `state`), with its thread open."""
        store = self.services.store
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=self.run_at)
        store.attempts.record(chain_id=chain.id, job_id="88154", now=self.run_at, state=state)
        self.slurm.add(88154, name="mix", state=state, partition="debug", account="root")
        assert self.services.sink is not None
        self.services.sink.post_root(chain.id, CH, [{"type": "section", "text": {
            "type": "mrkdwn", "text": "mix"}}], "mix")
        return chain.id

    def prompt(self, chain_id: int, **kwargs: object) -> tuple[str, str]:
        """An approval prompt about job 88154 posted in the thread: (token, message ts)."""
        prompt = create_resubmit_prompt(self.services, recipe="mix", chain_id=chain_id,
                                        job_id="88154", now=self.prompt_at,
                                        summary="88154: NCCL timeout",
                                        **kwargs)  # type: ignore[arg-type]
        assert self.services.sink is not None
        ts = self.services.sink.post_reply(chain_id, f"prompt:{prompt.token}", prompt.blocks,
                                           prompt.text)
        return prompt.token, ts

    def prompt_text(self, ts: str) -> str:
        """The text of message `ts` as Slack holds it now (a prompt rewritten by a click)."""
        [message] = [m for m in self.slack.all_messages() if m["ts"] == ts]
        return str(message["text"])
