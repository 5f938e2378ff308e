"""Every button trainbot can render has a listener: no click goes unhandled.

Buttons are collected from what the templates actually render — every story × message × language
of the golden tests (tests/unit/slack/test_render_golden.py: incidents, the stall warning…) and the
prompts the services post (resubmit, --mem, a stalled job's cancel-and-resume, competitor holds)
— and each action id found is clicked through the real Bolt app: a 404 would mean Slack's click
reaches no listener.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeSlurm, make_context, writer
from support.bolt_driver import ResponseUrls, SyncExecutor, click_body, dispatch

from bot.app import build_app
from bot.services.approvals import handle_click
from bot.services.prompts import create_resubmit_prompt
from bot.slack.render import render_blocks
from bot.slack.views import ActionId
from bot.store import Store

GOLDEN_TESTS = Path(__file__).resolve().parents[1] / "unit" / "slack" / "test_render_golden.py"
LANGS = ("en", "ko")
NOW = 1_732_871_000.0


def _golden_module() -> Any:
    spec = importlib.util.spec_from_file_location("render_golden_stories", GOLDEN_TESTS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _buttons(blocks: list[dict[str, Any]], where: str) -> Iterator[tuple[str, str]]:
    for block in blocks:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("type") == "button":
                yield element["action_id"], where


def story_buttons() -> list[tuple[str, str]]:
    """(action id, where) of every button in every story × template × language."""
    golden = _golden_module()
    found: list[tuple[str, str]] = []
    for template, lang, story in golden.CASES:
        blocks, _ = render_blocks(template, lang, golden.story_views(story)[template])
        found += _buttons(blocks, f"{template}.{lang}.{story}")
    return found


def prompt_buttons(store: Store, lang: str) -> list[tuple[str, str]]:
    """(action id, where) of every prompt the approvals service posts, in `lang`."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    shown: list[tuple[str, list]] = []
    real_reply = writer(ctx).post_reply

    def keep(chain_id: int, key: str, blocks: list, text: str) -> str:
        shown.append((key, blocks))
        return real_reply(chain_id, key, blocks, text)

    writer(ctx).post_reply = keep  # type: ignore[method-assign]
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    found: list[tuple[str, str]] = []
    for kwargs in ({"resume_iter": 3000}, {"resume_iter": None, "mem": "1900G"},
                   {"offer_cancel": True}):
        prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                        now=NOW, summary="s", **kwargs)
        found += _buttons(prompt.blocks, f"approval.{lang}.{sorted(kwargs)}")
    # an approved resubmit asks about the competitor that would take the slot
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
              submit_time=1000.0)
    resubmit = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                      now=NOW, summary="s", resume_iter=3000)
    assert handle_click(ctx, resubmit.token, ActionId.RESUBMIT, "W0LEAD", NOW + 2).status \
        == "done"
    holds = [blocks for key, blocks in shown if key.startswith("hold-prompt:")]
    assert holds, "no competitor hold prompt was posted"
    for blocks in holds:
        found += _buttons(blocks, f"hold_prompt.{lang}")
    return found


@pytest.fixture
def app(store: Store, slack_client) -> Any:  # noqa: ANN001
    ctx = make_context(store, slack=False)
    return build_app(ctx.config, ctx, client=slack_client, listener_executor=SyncExecutor(),
                     token_verification_enabled=False)


def test_every_rendered_button_reaches_a_listener(app: Any, tmp_path: Path) -> None:
    found = story_buttons()
    for lang in LANGS:
        with Store.open(f"sqlite:///{tmp_path / f'prompts-{lang}.db'}") as prompts:
            found += prompt_buttons(prompts, lang)
    ids = {action_id for action_id, _ in found}
    # what the stories and prompts cover (a story or prompt that stopped rendering its
    # buttons would make this test prove less)
    assert {ActionId.RESUBMIT, ActionId.RESUBMIT_MEM, ActionId.CANCEL_RESUME, ActionId.CANCEL,
            ActionId.DISMISS, ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR} <= ids
    unknown = sorted({(a, where) for a, where in found if a not in set(ActionId)})
    assert not unknown, f"buttons whose action id is not an ActionId: {unknown}"
    urls = ResponseUrls()
    try:
        for action_id in sorted(ids):
            body = click_body(action_id, "forged-token", user="W0LEAD", channel="C0TRAIN",
                              message_ts="1.1", response_url=urls.new())
            response = dispatch(app, body)
            where = sorted(w for a, w in found if a == action_id)[:3]
            assert response.status == 200, f"no listener for {action_id} (rendered in {where})"
    finally:
        urls.close()
