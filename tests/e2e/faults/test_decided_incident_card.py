"""An incident's figures in its thread, before and after a person decides: through the
watcher's sink (ThreadEvents), the real Bolt app and the Slack stand-in.

The incident message is the head line, the card (its work lost, its figures) and the approval
buttons; a click rewrites it (chat.update) as the decided prompt. Each figure is said once
before the click, in the card (the head line leaves it to the card), and is still there, once,
after it: the decided message keeps the card between the question and the outcome. Before,
the head line repeated the iterations lost and a host OOM's limit and MaxRSS; leaving them to
the card alone (1d4e879, reverted in 979ca42) lost them at the click, whose rewrite was the
head line and the outcome only.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from fakes import FakeClusters, FakeSlurm, make_config
from slack_bolt import App
from slack_standin import validate_blocks
from support.bolt_driver import SyncExecutor
from support.click_world import CH, ClickWorld

from bot.app import build_app
from bot.core.catalogue import Catalogue
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics
from bot.core.policy import AttemptFacts, ChainHistory, PolicyParams, decide
from bot.core.slurm.records import JobRecord
from bot.core.units import GIB
from bot.services.ports import BotContext
from bot.services.watch.events import WatchEvent
from bot.services.watch_events import ThreadEvents
from bot.slack.views import ActionId

NOW = 1_732_871_000.0


@pytest.fixture
def slurm() -> FakeSlurm:
    return FakeSlurm()


@pytest.fixture(params=["en", "ko"])
def lang(request) -> str:
    return str(request.param)


@pytest.fixture
def services(slack_context, store, slurm: FakeSlurm, lang: str) -> BotContext:
    return slack_context(store, make_config(lang=lang), FakeClusters(slurm), charts=False)


@pytest.fixture
def app(services: BotContext, slack_client) -> App:
    return build_app(services.config, services, client=slack_client,
                     listener_executor=SyncExecutor(), token_verification_enabled=False)


@pytest.fixture
def world(app, urls, services, slack, slurm) -> ClickWorld:
    return ClickWorld(app, urls, services, slack, slurm, run_at=NOW, prompt_at=NOW)


# each figure, however it is written (the card's "950 GiB", the head line's "950.0 GiB"),
# in each language; the card says each, the head line none
FIGURES = {
    "en": {"lost": r"\b400 iterations", "limit": r"\b950(\.0)? GiB", "max_rss": r"\b940(\.0)? GiB"},
    "ko": {"lost": r"\b400 iteration", "limit": r"\b950(\.0)? GiB", "max_rss": r"\b940(\.0)? GiB"},
}
OUTCOME = {
    ActionId.RESUBMIT_MEM: {"en": "Approved by <@W0LEAD>: resubmitted as ",
                            "ko": "<@W0LEAD>님이 승인했습니다"},
    ActionId.DISMISS: {"en": "Dismissed by <@W0LEAD>; nothing was done.",
                       "ko": "<@W0LEAD>님이 무시했습니다"},
}


def host_oom_incident(world: ClickWorld) -> tuple[str, dict[str, Any]]:
    """Job 88154 died of host OOM at iteration 3400 (limit 950 GiB, MaxRSS 940 GiB), its last
    checkpoint at 3000: the watcher's incident in its thread, a resubmit with more --mem
    offered. (The approval's token, the message as Slack holds it.)"""
    chain = world.run("OUT_OF_MEMORY")
    cls = Catalogue.load().classes["host_oom"]
    d = Diagnosis(class_id="host_oom", action=cls.action, retryable=cls.retryable,
                  charges_budget=cls.charges_budget, hint=cls.hint, title=cls.title,
                  metrics=DiagnosisMetrics(last_iter=3400, target_iter=8000))
    acct = Accounting(state="OUT_OF_MEMORY", exit_code=0, signal=9,
                      mem_limit_bytes=950 * GIB, max_rss_bytes=940 * GIB)
    dec = decide(d, ChainHistory(attempts=(AttemptFacts("88154", 1, last_iter=3400),)),
                 PolicyParams(backoff_s=60), NOW, checkpoint_iter=3000, accounting=acct)
    record = JobRecord(job_id=88154, state="OUT_OF_MEMORY", exit_code=0, signal=9,
                       mem_limit_bytes=950 * GIB, max_rss_bytes=940 * GIB)
    ThreadEvents(world.services).publish(WatchEvent(
        "incident", "dev:88154:final", "dev", "job 88154 OUT_OF_MEMORY: host_oom", chain,
        "88154", "mix", diagnosis=d, decision=dec, record=record))
    [approval] = world.services.store.approvals.for_chain(chain, "pending")
    return approval.token, copy.deepcopy(incident_message(world))  # Slack's rewrites it


def incident_message(world: ClickWorld, ts: str | None = None) -> dict[str, Any]:
    """The incident in the thread (its first reply), or the thread's message `ts`."""
    [root] = world.slack.root_messages(CH)
    replies = [m for m in world.slack.replies(CH, root["ts"]) if not m.get("files")]
    return replies[0] if ts is None else next(m for m in replies if m["ts"] == ts)


def said(message: dict[str, Any]) -> str:
    """Every word the message shows: each block's text, fields and elements' texts."""
    out = []
    for b in message["blocks"]:
        if isinstance(b.get("text"), dict):
            out.append(b["text"]["text"])
        out += [f["text"] for f in b.get("fields", ())]
        out += [e["text"] for e in b.get("elements", ())
                if isinstance(e.get("text"), str)]
    return "\n".join(out)


@pytest.mark.parametrize("action", [ActionId.RESUBMIT_MEM, ActionId.DISMISS])
def test_each_figure_is_said_once_before_the_click_and_still_there_after_it(world, lang,
                                                                             action):
    token, before = host_oom_incident(world)
    figures = FIGURES[lang]
    head = before["blocks"][0]["text"]["text"]
    assert "--mem=" in head  # the head line proposes the --mem
    for name, figure in figures.items():
        assert not re.search(figure, head), (name, head)
        assert len(re.findall(figure, said(before))) == 1, (name, said(before))
    assert any(b.get("type") == "actions" for b in before["blocks"])

    world.click(action, token, before["ts"])
    after = incident_message(world, before["ts"])
    assert after["ts"] == before["ts"] and validate_blocks(after["blocks"]) == []
    assert not any(b.get("type") == "actions" for b in after["blocks"])  # decided
    assert after["blocks"][0]["text"] == before["blocks"][0]["text"]  # the question
    assert OUTCOME[action][lang] in said(after)
    for name, figure in figures.items():
        assert len(re.findall(figure, said(after))) == 1, (name, said(after))
    # the card as it was posted, between the question and the outcome
    card = [b for b in before["blocks"][1:] if b.get("type") != "actions"]
    assert after["blocks"][1:-1] == card
    assert after["blocks"][-1]["block_id"] == "outcome"
