"""Approval clicks are accepted once (real store, on SQLite and on PostgreSQL: `store_url`);
competitors held only after a yes."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fakes import (
    FakeRunner,
    FakeSlurm,
    homes,
    make_config,
    make_context,
    present,
    recorded,
)
from sqlalchemy import text
from support import store_backends
from support.dying import Died, dies_at
from support.mix_prompt import mix_prompt

from bot.cluster.errors import ChannelClosed, CommandFailed, CommandTimedOut, OutcomeUnknown
from bot.cluster.slurm import SlurmClient
from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.home import publish_home
from bot.services.ports import BotContext
from bot.services.prompt_follow_up import after_click
from bot.services.prompts import create_resubmit_prompt
from bot.store import Store

NOW = 1_000_000.0
# The real store on both backends, an empty fake Slurm and the context over them.
store, slurm, ctx = store_backends.store, store_backends.slurm, store_backends.ctx


def failed_run(ctx: BotContext) -> tuple[int, str]:
    """A chain whose job 88154 died (NCCL timeout), with its thread open."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain.id, job_id="88154", now=NOW,
        summary="88154 died: NCCL watchdog timeout", resume_iter=3000, mem="1900G",
    )  # fmt: skip
    return chain.id, prompt.token


def audit_results(ctx: BotContext) -> list[str]:
    return [e.result for e in reversed(ctx.store.audit.recent(100))
            if e.action == "approval.click"]


def test_prompt_buttons_carry_only_the_opaque_token(ctx: BotContext) -> None:
    _, token = failed_run(ctx)
    prompt_blocks = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=1, job_id="88154", now=NOW, summary="s", resume_iter=3000,
        mem="1900G",
    ).blocks  # fmt: skip
    buttons = prompt_blocks[1]["elements"]
    assert [b["action_id"] for b in buttons] == [
        ActionId.RESUBMIT, ActionId.RESUBMIT_MEM, ActionId.DISMISS]
    assert buttons[0]["text"]["text"] == "Resubmit from iteration 3,000"
    assert buttons[1]["text"]["text"] == "Resubmit with --mem=1900G"
    assert len({b["value"] for b in buttons}) == 1 and "88154" not in buttons[0]["value"]


def test_the_same_prompt_published_again_reuses_its_open_token(ctx: BotContext,
                                                              slurm: FakeSlurm) -> None:
    """A crash between a prompt's intent and its post publishes it again: one question, one
    token, so whichever copy Slack shows decides it, once."""
    chain_id, token = failed_run(ctx)
    again = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain_id, job_id="88154", now=NOW + 5,
        summary="88154 died: NCCL watchdog timeout", resume_iter=3000, mem="1900G",
    ).token  # fmt: skip
    assert again == token
    assert len(ctx.store.approvals.for_chain(chain_id, "pending")) == 1
    other = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain_id, job_id="88155",
                                   now=NOW + 5, summary="88155 died", resume_iter=3000)
    assert other.token != token  # another job: another question
    assert handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 10).status == "done"
    after = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain_id, job_id="88154", now=NOW + 20,
        summary="88154 died: NCCL watchdog timeout", resume_iter=3000, mem="1900G",
    ).token  # fmt: skip
    assert after != token  # a decided question is not reopened under its old token


def test_a_running_jobs_prompt_offers_cancel_and_resume_not_a_second_copy(
    ctx: BotContext,
) -> None:
    chain_id, stall = mix_prompt(ctx, run_at=NOW - 100, now=NOW, summary="stalled")
    buttons = stall.blocks[1]["elements"]
    assert [b["action_id"] for b in buttons] == [
        ActionId.CANCEL_RESUME, ActionId.CANCEL, ActionId.DISMISS]
    assert [b["text"]["text"] for b in buttons] == [
        "Cancel 88154 and resume from scratch", "Cancel 88154", "Dismiss"]
    with pytest.raises(ValueError, match="cannot offer --mem"):
        create_resubmit_prompt(ctx, recipe="mix", chain_id=chain_id, job_id="88154", now=NOW,
                               summary="stalled", mem="1900G", offer_cancel=True)


def test_authorized_click_resubmits_once_and_updates_the_message(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    chain_id, token = failed_run(ctx)
    ctx.store.attempts.update(present(ctx.store.attempts.get_by_job("88154")).id,
                              work_lost_iters=120)
    replies = keep_replies(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert result.status == "done"
    # the button said iter 3000; no checkpoint is found at the click: it says so, as the thread
    assert result.update_text == (
        "Approved by <@W0LEAD>: resubmitted as 88887 from scratch (no complete checkpoint). The "
        "prompt said iteration 3,000: the newest complete checkpoint changed since it was "
        "posted.")
    assert len(slurm.submits()) == 1
    assert [a.job_id for a in ctx.store.attempts.for_chain(chain_id)] == ["88154", "88887"]
    assert present(ctx.store.approvals.get(token)).state == "done"
    assert present(ctx.store.approvals.get(token)).decided_by == "W0LEAD"
    # the new attempt is announced in the run's thread, once, as the resolution template
    assert ("reply", chain_id, "resolution:88887",
            "mix: resumed as 88887 from scratch (no complete checkpoint)") in recorded(ctx).posts
    said = str(replies["resolution:88887"])
    assert "Resumed as *88887* (was 88154) from scratch (no complete checkpoint)" in said
    assert "Lost 120 iterations" in said and "Approved by <@W0LEAD>" in said

    again = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 2)
    retried = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 3, retry_num=1)
    other = handle_click(ctx, token, ActionId.DISMISS, "U0APPR", NOW + 4)
    for r in (again, retried, other):
        assert r.status == "duplicate"
        assert r.update_text is None
        assert r.ephemeral == "Already decided by <@W0LEAD>; nothing was done again."
    assert len(slurm.submits()) == 1
    assert audit_results(ctx) == ["ok", "duplicate", "duplicate", "duplicate"]
    retry_entry = [e for e in ctx.store.audit.recent(100) if e.action == "approval.click"][1]
    assert '"retry_num": 1' in present(retry_entry.detail)


def keep_replies(ctx: BotContext) -> dict[str, list]:
    """The blocks of each thread reply posted from now on, by key."""
    replies: dict[str, list] = {}
    real_reply = recorded(ctx).post_reply

    def keep_blocks(chain: int, key: str, blocks: list, text: str) -> str:
        replies[key] = blocks
        return real_reply(chain, key, blocks, text)

    recorded(ctx).post_reply = keep_blocks  # type: ignore[method-assign, assignment]
    return replies


# the newest complete checkpoint at the click: the prompt said 3000 (failed_run)
CHANGED = {"en": "✅ Resumed as *88887* (was 88154) from iteration 2,000, with --mem=1900G. The "
           "prompt said iteration 3,000: the newest complete checkpoint changed since "
           "it was posted.",
           "ko": "✅ *88887*(으)로 iteration 2,000부터 재개했습니다 (이전: 88154), "
           "--mem=1900G. 프롬프트는 iteration 3,000부터 재개한다고 했습니다: "
           "프롬프트를 게시한 뒤 가장 최근의 완전한 체크포인트가 바뀌었습니다."}


@pytest.mark.parametrize(("lang", "newest", "said"), [
    ("en", 2000, CHANGED["en"]),
    ("ko", 2000, CHANGED["ko"]),
    ("en", 3000, "✅ Resumed as *88887* (was 88154) from iteration 3,000, with --mem=1900G."),
])
def test_a_resubmit_from_another_checkpoint_than_the_button_said_says_so(
    store: Store, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, lang: str, newest: int,
    said: str,
) -> None:
    """The checkpoint is looked up again at the click (a corrupt one moved aside since the
    prompt was posted): the resolution names the iteration the prompt's button said, only
    when the job resumed from another."""
    import bot.cluster.checkpoints as checkpoints
    from bot.core.checkpoints import Checkpoint

    monkeypatch.setattr(checkpoints, "find_latest_checkpoint", lambda *a, **k: Checkpoint(
        f"/ck/mix/iter_{newest:09d}", newest, "pointer"))
    ctx = make_context(store, slurm, checkpoint={"dir": "/ck/mix"}, lang=lang)
    _, token = failed_run(ctx)
    replies = keep_replies(ctx)
    assert handle_click(ctx, token, ActionId.RESUBMIT_MEM, "W0LEAD", NOW + 1).status == "done"
    assert slurm.submits()[0].env["TRAINBOT_RESUME_ITER"] == str(newest)
    assert replies["resolution:88887"][0]["text"]["text"] == said


def test_cancel_and_resume_from_another_checkpoint_than_the_button_said_says_so(
    store: Store, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bot.cluster.checkpoints as checkpoints
    from bot.core.checkpoints import Checkpoint

    monkeypatch.setattr(checkpoints, "find_latest_checkpoint", lambda *a, **k: Checkpoint(
        "/ck/mix/iter_000002000", 2000, "pointer"))
    ctx = make_context(store, slurm, checkpoint={"dir": "/ck/mix"})
    _, prompt = mix_prompt(ctx, run_at=NOW - 100, now=NOW, summary="stalled", resume_iter=3000,
                           running=slurm)
    assert prompt.blocks[1]["elements"][0]["text"]["text"] == \
        "Cancel 88154 and resume from iteration 3,000"
    replies = keep_replies(ctx)
    assert handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "W0LEAD",
                        NOW + 1).status == "done"
    said = replies["resolution:88887"][0]["text"]["text"]
    assert ("(was 88154) from iteration 2,000. The prompt said iteration 3,000: the "
            "newest complete "
            "checkpoint changed since it was posted.") in said


def test_a_resubmit_from_a_checkpoint_of_unknown_iteration_names_it(
    store: Store, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pointer file naming a checkpoint with no iteration in its name: the resolution names
    that checkpoint, not "from the start", and says the prompt's iteration (3000) was another
    checkpoint."""
    import bot.cluster.checkpoints as checkpoints
    from bot.core.checkpoints import Checkpoint

    monkeypatch.setattr(checkpoints, "find_latest_checkpoint", lambda *a, **k: Checkpoint(
        "/ck/mix/final", None, "pointer"))
    ctx = make_context(store, slurm, checkpoint={"dir": "/ck/mix"})
    _, token = failed_run(ctx)
    replies = keep_replies(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT_MEM, "W0LEAD", NOW + 1)
    assert result.status == "done"
    said = replies["resolution:88887"][0]["text"]["text"]
    assert "(was 88154) from checkpoint `final`" in said
    assert "from the start" not in said
    assert said.endswith("The prompt said iteration 3,000: the newest complete checkpoint changed "
                         "since it was posted.")
    assert result.update_text == (
        "Approved by <@W0LEAD>: resubmitted as 88887 from checkpoint `final` with --mem=1900G. "
        "The prompt said iteration 3,000: the newest complete checkpoint changed since "
        "it was posted.")


@pytest.mark.parametrize(("said", "found", "note"), [
    # the prompt named `final` (no iteration); at the click a numbered one is newer
    ((None, "final"), ("iter_000004000", 4000),
     "The prompt said checkpoint `final`: the newest complete checkpoint changed since it was "
     "posted."),
    # the prompt named iter 4000; at the click a pointer names `final`
    ((4000, "iter_000004000"), ("final", None),
     "The prompt said iteration 4,000: the newest complete checkpoint changed since it "
     "was posted."),
    # the same checkpoint at the click: nothing to say
    ((None, "final"), ("final", None), None),
    ((4000, "iter_000004000"), ("iter_000004000", 4000), None),
])
def test_a_resume_from_another_checkpoint_than_the_prompt_named_says_so_by_name_or_iteration(
    store: Store, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch,
    said: tuple, found: tuple, note: str | None,
) -> None:
    """The prompt's checkpoint and the one found at the click are compared by name and
    iteration: a checkpoint without an iteration is told by its name, in both directions, in
    the resolution line and in the rewritten prompt."""
    import bot.cluster.checkpoints as checkpoints
    from bot.core.checkpoints import Checkpoint

    monkeypatch.setattr(checkpoints, "find_latest_checkpoint", lambda *a, **k: Checkpoint(
        f"/ck/mix/{found[0]}", found[1], "pointer"))
    ctx = make_context(store, slurm, checkpoint={"dir": "/ck/mix"})
    chain_id, _ = failed_run(ctx)
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain_id, job_id="88154",
                                    now=NOW, summary="88154 died", resume_iter=said[0],
                                    resume_checkpoint=said[1])
    replies = keep_replies(ctx)
    result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    line = replies["resolution:88887"][0]["text"]["text"]
    if note is None:
        assert "The prompt said" not in line
        assert "The prompt said" not in present(result.update_text)
    else:
        assert line.endswith(note) and present(result.update_text).endswith(note)


def test_a_resubmit_from_another_checkpoint_than_the_button_said_says_so_in_the_prompt(
    store: Store, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The prompt said iteration 3000; at the click the newest complete checkpoint is iter 2000:
    the prompt, rewritten, says so as the resolution line does."""
    import bot.cluster.checkpoints as checkpoints
    from bot.core.checkpoints import Checkpoint

    monkeypatch.setattr(checkpoints, "find_latest_checkpoint", lambda *a, **k: Checkpoint(
        "/ck/mix/iter_000002000", 2000, "pointer"))
    ctx = make_context(store, slurm, checkpoint={"dir": "/ck/mix"})
    _, token = failed_run(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert result.update_text == (
        "Approved by <@W0LEAD>: resubmitted as 88887 from iteration 2,000. The prompt "
        "said iteration "
        "3,000: the newest complete checkpoint changed since it was posted.")


def test_concurrent_clicks_submit_once(ctx: BotContext, slurm: FakeSlurm) -> None:
    _, token = failed_run(ctx)
    results = []
    barrier = threading.Barrier(4)

    def click(user: str) -> None:
        barrier.wait()
        results.append(handle_click(ctx, token, ActionId.RESUBMIT, user, NOW + 1).status)

    threads = [threading.Thread(target=click, args=(u,)) for u in ("W0LEAD", "U0APPR") * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["done", "duplicate", "duplicate", "duplicate"]
    assert len(slurm.submits()) == 1


def test_unauthorized_click_is_refused_and_leaves_the_prompt_open(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, token = failed_run(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "U0ALICE", NOW + 1)
    assert result.status == "unauthorized"
    assert result.ephemeral == ("Refused: only <@U0APPR> or <@W0LEAD> can approve this. "
                                "Nothing was done.")
    assert result.update_text is None
    assert slurm.submits() == []
    assert present(ctx.store.approvals.get(token)).state == "pending"
    assert handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", NOW + 2).status == "done"
    assert audit_results(ctx) == ["unauthorized", "ok"]


@pytest.mark.parametrize("action", [ActionId.RESUBMIT, ActionId.RESUBMIT_MEM, ActionId.DISMISS])
def test_someone_removed_from_the_approvers_after_the_prompt_is_refused(
    ctx: BotContext, slurm: FakeSlurm, action: ActionId
) -> None:
    """Who may approve is decided at the click, by the config running now (here: restarted
    with U0APPR taken off the recipe's approvers), not by the list when it was posted."""
    _, token = failed_run(ctx)
    assert "U0APPR" in present(ctx.store.approvals.get(token)).allowed  # could approve when posted
    ctx.config = make_config(approvers=["W0LEAD"])
    result = handle_click(ctx, token, action, "U0APPR", NOW + 1)
    assert (result.status, result.update_text) == ("unauthorized", None)
    assert result.ephemeral == "Refused: only <@W0LEAD> can approve this. Nothing was done."
    assert slurm.calls == [] and present(ctx.store.approvals.get(token)).state == "pending"
    assert audit_results(ctx) == ["unauthorized"]
    assert handle_click(ctx, token, action, "W0LEAD", NOW + 2).status in ("done", "declined")


def test_someone_added_to_the_approvers_after_the_prompt_may_approve(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, token = failed_run(ctx)
    assert "U0NEW" not in present(ctx.store.approvals.get(token)).allowed
    ctx.config = make_config(approvers=["leads", "U0NEW"])
    assert handle_click(ctx, token, ActionId.RESUBMIT, "U0NEW", NOW + 1).status == "done"
    assert len(slurm.submits()) == 1


def test_a_hold_prompt_is_authorized_by_the_current_approvers(ctx: BotContext,
                                                              slurm: FakeSlurm) -> None:
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    slurm.add(88887, name="mix", partition="debug", account="root", priority=50)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=100)
    [hold] = competitors.propose_holds(
        ctx, recipe="mix", chain_id=chain.id, job_id=88887, allowed={"U0APPR"}, now=NOW,
        action_ids=(ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR))  # fmt: skip
    ctx.config = make_config(approvers=["W0LEAD"])
    refused = handle_click(ctx, hold.token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert refused.status == "unauthorized" and slurm.acted("hold") == []
    assert handle_click(ctx, hold.token, ActionId.HOLD_COMPETITOR, "W0LEAD",
                        NOW + 2).status == "done"
    assert slurm.acted("hold") == [88017]


def test_a_prompt_of_a_recipe_no_longer_configured_is_for_slack_approvers(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, token = failed_run(ctx)
    config = make_config(approvers=["U0ALICE"])
    config.slack.approvers = ["W0LEAD"]
    del config.recipes["mix"]
    ctx.config = config
    result = handle_click(ctx, token, ActionId.DISMISS, "U0ALICE", NOW + 1)
    assert result.ephemeral == "Refused: only <@W0LEAD> can approve this. Nothing was done."
    assert handle_click(ctx, token, ActionId.DISMISS, "W0LEAD", NOW + 2).status == "declined"


def test_expired_click_does_nothing_and_says_so(ctx: BotContext, slurm: FakeSlurm) -> None:
    _, token = failed_run(ctx)
    late = NOW + ctx.config.policy.approval_expiry_s + 1
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", late)
    assert result.status == "expired"
    assert result.update_text == (
        "⌛ This prompt expired unanswered; nothing was resubmitted: job 88154 stays as it ended. "
        "`/train resume mix` resumes the run from its last complete checkpoint.")
    assert slurm.submits() == []
    assert present(ctx.store.approvals.get(token)).state == "expired"
    assert handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", late + 1).status == "expired"
    assert audit_results(ctx) == ["expired", "expired"]


def test_resubmit_with_more_memory_even_if_users_may_not_override_mem(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    assert "mem" not in ctx.config.recipe("mix").overridable
    _, token = failed_run(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT_MEM, "W0LEAD", NOW + 1)
    assert result.status == "done", result
    assert present(result.update_text).startswith(
        "Approved by <@W0LEAD>: resubmitted as 88887 from scratch (no complete checkpoint) with "
        "--mem=1900G.")
    assert slurm.submits()[0].mem == "1900G"
    assert "mem" not in ctx.config.recipe("mix").overridable  # not widened for later


def test_dismiss_then_resubmit_does_nothing(ctx: BotContext, slurm: FakeSlurm) -> None:
    _, token = failed_run(ctx)
    result = handle_click(ctx, token, ActionId.DISMISS, "W0LEAD", NOW + 1)
    assert result.status == "declined"
    assert result.update_text == "Dismissed by <@W0LEAD>; nothing was done."
    assert handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", NOW + 2).status == "duplicate"
    assert slurm.submits() == []


def test_unknown_token_or_foreign_action(ctx: BotContext) -> None:
    _, token = failed_run(ctx)
    assert handle_click(ctx, "forged", ActionId.RESUBMIT, "W0LEAD", NOW).status == "unknown"
    # a hold button's action id on a resubmit prompt is not one of its choices
    assert handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "W0LEAD", NOW).status == "unknown"
    assert handle_click(ctx, token, "trainbot_rm_rf", "W0LEAD", NOW).status == "unknown"
    assert present(ctx.store.approvals.get(token)).state == "pending"


def test_cancel_choice_cancels_the_target(ctx: BotContext, slurm: FakeSlurm) -> None:
    _, stall = mix_prompt(ctx, now=NOW, summary="88154 hangs", running=slurm)
    result = handle_click(ctx, stall.token, ActionId.CANCEL, "W0LEAD", NOW + 1)
    assert result.update_text == "Approved by <@W0LEAD>: cancelled job 88154"
    assert slurm.acted("cancel") == [88154]


# ---------------------------------------------------------------------------------- competitors


def competitor_setup(ctx: BotContext, slurm: FakeSlurm) -> tuple[int, str]:
    """88017 (same account, same partition, older) would start before the resubmit."""
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
              submit_time=1000.0)
    slurm.add(77777, name="other-team", account="team-b", partition="debug", priority=900)
    chain_id, token = failed_run(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert result.holds == [88017]  # the other team's job is not ours to hold
    hold_posts = [p for p in recorded(ctx).posts if p[2].startswith("hold-prompt:")]
    assert len(hold_posts) == 1
    assert hold_posts[0][3].endswith("Hold 88017 until the resumed job starts?")
    hold_token = hold_posts[0][2].removeprefix("hold-prompt:")
    return chain_id, hold_token


@pytest.mark.parametrize("from_home", [True, False])
def test_the_resubmit_button_refreshes_each_home_tab_once_and_asks_the_hold_questions_once(
        store: Store, slurm: FakeSlurm, from_home: bool) -> None:
    """A Resubmit ends as every person's submit does (after_person_submit): the run with its
    new job on the Home tab of each viewer who sees it, once; the presser's, when they
    pressed it there, with what the click did; the hold question asked once."""
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
              submit_time=1000.0)
    _, token = failed_run(ctx)
    for user in ("W0LEAD", "U0ALICE", "U0NOBODY"):  # each opened their Home tab lately
        publish_home(ctx, user, NOW)
    homes(ctx).published.clear()
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1, from_home=from_home)
    after_click(ctx, token, result, "W0LEAD", NOW + 1, from_home=from_home)
    assert result.job_id == "88887" and result.holds == [88017]
    [hold] = [p[3] for p in recorded(ctx).posts if p[2].startswith("hold-prompt:")]
    assert hold.endswith("would start before 88887. Hold 88017 until the resumed job starts?")
    assert sorted(homes(ctx).users()) == ["U0ALICE", "W0LEAD"]  # not the outsider's
    tabs = {user: json.dumps(blocks) for user, blocks in homes(ctx).published}
    assert all("88887" in tab for tab in tabs.values())
    assert ("Approved by <@W0LEAD>" in tabs["W0LEAD"]) is from_home  # the click's notice


def test_competitor_held_after_yes_released_once_when_resumed_job_runs(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, hold_token = competitor_setup(ctx, slurm)
    assert slurm.acted("hold") == []  # asking is not holding
    result = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert result.update_text == "Approved by <@U0APPR>: held 88017 until 88887 starts"
    again = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 3, 1)
    assert again.status == "duplicate"
    assert slurm.acted("hold") == [88017]

    assert competitors.release_started(ctx, NOW + 4) == []  # resumed job still pending
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 5) == [88017]
    assert competitors.release_started(ctx, NOW + 6) == []
    assert slurm.acted("release") == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    actions = [(e.action, e.job_id, e.result) for e in reversed(ctx.store.audit.recent(100))]
    assert ("competitor.hold", "88017", "ok") in actions
    assert ("competitor.release", "88017", "ok") in actions


def test_a_hold_whose_answer_was_lost_stays_in_the_ledger_and_is_released(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol hold` took effect but its channel closed before its exit status: the job may
    be held, so trainbot says so and releases it when the resumed job runs, as any hold."""
    _, hold_token = competitor_setup(ctx, slurm)
    slurm.hold_answer_lost = ChannelClosed(["scontrol", "hold", "88017"], "login",
                                           connection_lost=True)
    result = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert present(result.update_text).startswith(
        "Approved by <@U0APPR>: 88017 may or may not be held (connection to login lost while "
        "`scontrol hold 88017` was running; it may have run)")
    assert present(result.update_text).endswith(
        "trainbot releases it when 88887 no longer needs it, as any hold")
    [held] = competitors.held_now(ctx)
    assert held.target_job == "88017"
    slurm.hold_answer_lost = None
    slurm.set(88887, state="RUNNING")
    # Slurm shows 88017 held: its hold landed, so the next tick releases it, not its takeover
    assert competitors.release_started(ctx, NOW + 62) == [88017]
    assert competitors.release_started(ctx, NOW + 10_000) == []
    assert slurm.acted("release") == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    actions = [(e.action, e.job_id, e.result) for e in reversed(ctx.store.audit.recent(100))]
    assert ("competitor.hold", "88017", "unknown") in actions


# What `scontrol release` of a job that ended prints and exits, the same on 22.05.8 and 24.11.5
# (measured on the dev clusters: tests/integration/test_slurm.py).
RELEASE_FINISHED = (1, "", "Job has already finished for job 88017\n"
                    "slurm_suspend error: Job has already finished\n")


@pytest.mark.parametrize("answer", [
    RELEASE_FINISHED,
    (1, "", "Invalid job id specified for job 88017\n"
            "slurm_suspend error: Invalid job id specified\n"),
], ids=["finished", "purged"])
def test_a_hold_whose_job_ended_meanwhile_is_released_without_a_problem(
    ctx: BotContext, slurm: FakeSlurm, answer: tuple[int, str, str]
) -> None:
    """A hold whose `scontrol hold` end was not seen, of a job that then ended (or left
    accounting): Slurm refuses to release it, as there is no hold left; the thread says it
    was released, never that it could not be."""
    _, hold_token = competitor_setup(ctx, slurm)
    slurm.hold_answer_lost = ChannelClosed(["scontrol", "hold", "88017"], "login",
                                           connection_lost=True)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88017, state="CANCELLED")
    slurm.set(88887, state="RUNNING")
    real = SlurmClient(FakeRunner({"scontrol": answer}))
    slurm.release = real.release  # type: ignore[method-assign]
    [held] = competitors.held_now(ctx)
    due = NOW + 2 + competitors.step_takeover_s(ctx, held, competitors.HOLDING_STEP)
    assert competitors.release_started(ctx, due) == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    assert not any("Could not release" in t for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []


def test_a_release_slurm_refuses_for_another_reason_still_fails() -> None:
    denied = (1, "", "Access/permission denied for job 88017\n"
                     "slurm_suspend error: Access/permission denied\n")
    with pytest.raises(CommandFailed, match="Access/permission denied"):
        SlurmClient(FakeRunner({"scontrol": denied})).release(88017)
    SlurmClient(FakeRunner({"scontrol": RELEASE_FINISHED})).release(88017)  # no error


def held_then_running(ctx: BotContext, slurm: FakeSlurm) -> None:
    """88017 held (a yes at NOW + 2) for the resubmitted 88887, which runs now."""
    _, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88887, state="RUNNING")


def test_a_release_whose_process_died_after_its_claim_is_released_by_a_later_tick(
    ctx: BotContext, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot dies between claiming a release and its `scontrol release`: the competitor
    stays in the hold ledger, so a later tick releases it (once), after the claim's takeover
    time, not while the claimer may still be releasing it."""
    held_then_running(ctx, slurm)
    monkeypatch.setattr(competitors, "crashpoint", dies_at("hold_release_claimed"))
    with pytest.raises(Died):
        competitors.release_started(ctx, NOW + 3)
    monkeypatch.setattr(competitors, "crashpoint", lambda name, detail="": None)
    assert slurm.acted("release") == []
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    [held] = competitors.held_now(ctx)
    due = NOW + 3 + competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, due - 1) == []  # its claimer may still be at it
    assert slurm.acted("release") == []
    assert competitors.release_started(ctx, due) == [88017]
    assert competitors.release_started(ctx, due + 10_000) == []
    assert slurm.acted("release") == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


DENIED = (1, "", "Access/permission denied for job 88017\n"
                 "slurm_suspend error: Access/permission denied\n")


def test_a_failed_release_is_said_and_tried_again_up_to_three_times(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol release` fails: the thread says so and that trainbot tries again, once per
    failure; the third failure says how to release the job by hand and ends the hold."""
    held_then_running(ctx, slurm)
    runner = FakeRunner({"scontrol": DENIED})
    slurm.release = SlurmClient(runner).release  # type: ignore[method-assign]
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    minutes = -(-wait // 60)

    def retries_said() -> int:
        return sum(1 for t in recorded(ctx).texts()
                   if t.startswith("Could not release 88017 (") and "permission denied" in t
                   and t.endswith(f"; trainbot tries again in about {minutes:g} minutes."))

    at = NOW + 3
    assert competitors.release_started(ctx, at) == []
    assert competitors.release_started(ctx, at + 1) == []  # not again before it is due
    assert retries_said() == 1
    assert competitors.release_started(ctx, at + wait) == []  # the second attempt
    assert retries_said() == 2
    assert competitors.release_started(ctx, at + 2 * wait) == []  # the third: the last
    assert retries_said() == 2
    assert any(t.startswith("Could not release 88017 (") and
               t.endswith("release it with `/train release 88017`.")
               for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []
    assert competitors.release_started(ctx, at + 3 * wait) == []
    assert [c.argv[-2:] for c in runner.calls] == [["release", "88017"]] * 3


def release_answer_lost(slurm: FakeSlurm, *, took_effect: bool,
                        slurm_down_after: bool = False) -> None:
    """From now on the next `scontrol release`'s connection drops before its answer: it took
    effect or not (`took_effect`); Slurm answers nothing more after it with
    `slurm_down_after`."""
    release = slurm.release

    def lost(job_id: int) -> None:
        if took_effect:
            release(job_id)
        else:
            slurm.calls.append(("release", job_id))
        slurm.release = release  # type: ignore[method-assign]
        slurm.down = slurm_down_after
        raise ChannelClosed(["scontrol", "release", str(job_id)], "login", connection_lost=True)

    slurm.release = lost  # type: ignore[method-assign]


def test_a_release_whose_answer_was_lost_but_took_effect_is_said_released_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The connection drops after `scontrol release` took effect: trainbot reads the job
    again, finds it no longer held and says it was released, never that it could not be, and
    does not release it again."""
    held_then_running(ctx, slurm)
    release_answer_lost(slurm, took_effect=True)
    [held] = competitors.held_now(ctx)
    assert competitors.release_started(ctx, NOW + 3) == [88017]
    assert competitors.release_started(ctx, NOW + 3 + 2 * competitors.release_takeover_s(
        ctx, held)) == []
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held
    texts = recorded(ctx).texts()
    assert texts.count("Released 88017: 88887 is running.") == 1
    assert not any(t.startswith("Could not release") for t in texts)
    assert competitors.held_now(ctx) == []


def test_a_release_whose_answer_was_lost_and_whose_job_cannot_be_read_is_said_unknown(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The connection drops during `scontrol release` and Slurm does not answer the look
    after it: the thread says trainbot does not know whether it released the job and looks
    again, not that it could not; the next try, once due, releases it and says so."""
    held_then_running(ctx, slurm)
    release_answer_lost(slurm, took_effect=False, slurm_down_after=True)
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, NOW + 3) == []
    minutes = -(-wait // 60)
    texts = recorded(ctx).texts()
    assert not any(t.startswith("Could not release") for t in texts)
    [unknown] = [t for t in texts if "may or may not have released 88017" in t]
    assert unknown.startswith("trainbot may or may not have released 88017 (connection to "
                              "login lost while `scontrol release 88017` was running")
    assert unknown.endswith(f"; it looks at it again in about {minutes:g} minutes.")
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    slurm.down = False
    assert competitors.release_started(ctx, NOW + 3 + wait) == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert not slurm.records[88017].is_held


def test_a_release_whose_answer_was_lost_and_that_did_not_take_effect_is_tried_again(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    held_then_running(ctx, slurm)
    release_answer_lost(slurm, took_effect=False)
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, NOW + 3) == []
    texts = recorded(ctx).texts()
    assert not any(t.startswith("Could not release") for t in texts), texts
    [again] = [t for t in texts if t.startswith("88017 was still held")]
    assert again.startswith("88017 was still held when trainbot looked after releasing it "
                            "(connection to login lost")  # still held when read again
    assert again.endswith(f"; trainbot tries again in about {-(-wait // 60):g} minutes.")
    assert competitors.release_started(ctx, NOW + 3 + wait) == [88017]
    assert slurm.acted("release") == [88017, 88017]
    assert not slurm.records[88017].is_held


def release_times_out_once(slurm: FakeSlurm) -> None:
    """The next `scontrol release` outlives its timeout, without effect yet (it may still
    be running), as the real client raises it (OutcomeUnknown); the ones after work."""
    release = slurm.release
    timing_out = SlurmClient(FakeRunner(
        {"scontrol": CommandTimedOut(["scontrol", "release", "88017"], 20)}))

    def release_still_running(job_id: int) -> None:
        slurm.release = release  # type: ignore[method-assign]
        timing_out.release(job_id)

    slurm.release = release_still_running  # type: ignore[method-assign]


def test_a_release_that_timed_out_and_still_holds_when_read_says_it_is_not_known_yet(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol release 88017` outlives its timeout (it may still be running) and the look
    right after finds 88017 still held: the release may land after that look, so the thread
    says trainbot does not know yet whether it released it, never that it could not; once
    the release lands, the next try says it was released, once."""
    held_then_running(ctx, slurm)
    release_times_out_once(slurm)
    [held] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held)
    assert competitors.release_started(ctx, NOW + 3) == []
    texts = recorded(ctx).texts()
    assert not any(t.startswith("Could not release") for t in texts), texts
    [unknown] = [t for t in texts if "may or may not have released 88017" in t]
    assert unknown.startswith("trainbot may or may not have released 88017 (`scontrol "
                              "release 88017` did not answer within 20 s")
    assert unknown.endswith(f"; it looks at it again in about {-(-wait // 60):g} minutes.")
    slurm.set(88017, reason="Priority", priority=1)  # the release lands now
    assert competitors.release_started(ctx, NOW + 3 + wait) == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


def test_a_release_that_failed_once_then_goes_through_is_said_released(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    held_then_running(ctx, slurm)
    works = slurm.release
    slurm.release = SlurmClient(FakeRunner({"scontrol": DENIED})).release  # type: ignore[method-assign]
    assert competitors.release_started(ctx, NOW + 3) == []
    slurm.release = works  # type: ignore[method-assign]
    [held] = competitors.held_now(ctx)
    assert competitors.release_started(ctx, NOW + 3 + competitors.release_takeover_s(ctx, held)) \
        == [88017]
    assert "Released 88017: 88887 is running." in recorded(ctx).texts()
    assert competitors.held_now(ctx) == []


def yes_while(ctx: BotContext, slurm: FakeSlurm, state: str,
              release: Callable[[BotContext], list[int]]) -> tuple[list[list[int]], str | None]:
    """A yes on 88017's hold during whose `scontrol hold` the resumed job 88887 goes to
    `state` and another run (a second context on the same store) asks for its release
    (`release`); returns what that release released, and the prompt's text after the yes."""
    _, hold_token = competitor_setup(ctx, slurm)
    other = make_context(ctx.store, slurm)
    hold = slurm.hold
    during: list[list[int]] = []

    def hold_as_the_resumed_job_moves_on(job_id: int) -> None:
        slurm.set(88887, state=state)
        during.append(release(other))
        hold(job_id)

    slurm.hold = hold_as_the_resumed_job_moves_on  # type: ignore[method-assign]
    text = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2).update_text
    return during, text


def test_a_release_waits_for_a_hold_still_being_sent_then_releases_it(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The resumed job starts while the yes's `scontrol hold` is on its way: another tick's
    release waits for the hold to be over instead of "releasing" a job not held yet; the
    yes, its hold over, releases it; the job is not left held."""
    during, text = yes_while(ctx, slurm, "RUNNING",
                             lambda other: competitors.release_started(other, NOW + 3))
    assert during == [[]]
    assert text == ("Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                    "longer waits in the queue (RUNNING)")
    assert slurm.acted("release") == [88017]
    assert competitors.release_started(ctx, NOW + 4) == []
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held


def test_a_cancel_during_the_yes_hold_is_released_by_the_yes_itself(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A person cancels the resumed job while the yes's `scontrol hold` is on its way: the
    cancel's release waits for the hold to be over, and the yes, its hold over, releases the
    competitor at once (not a holds tick later) and says so in the thread, once."""
    during, text = yes_while(ctx, slurm, "CANCELLED", lambda other: competitors.release_held_for(
        other, 88887, NOW + 2, "cancelled", "dev"))
    assert during == [[]]
    assert text == ("Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                    "longer waits in the queue (CANCELLED)")  # not "until 88887 starts"
    assert slurm.acted("release") == [88017]  # before any tick
    assert not slurm.records[88017].is_held
    assert competitors.held_now(ctx) == []
    assert recorded(ctx).texts().count(
        "Released 88017: 88887 ended (CANCELLED) without needing the slot.") == 1
    assert competitors.release_started(ctx, NOW + 3) == []
    assert slurm.acted("release") == [88017]


def yes_whose_release_came_first(ctx: BotContext, slurm: FakeSlurm, *,
                                 slurm_down_after: bool = False) -> str | None:
    """A yes on 88017's hold whose release (another tick: 88887 started) takes the hold
    right after the yes read both jobs (88887 PENDING then), Slurm answering no more after
    it with `slurm_down_after`; returns the prompt's text after the yes. That release
    releases nothing: the hold was never sent."""
    _, hold_token = competitor_setup(ctx, slurm)
    jobs = slurm.jobs

    def read_then_released(ids: Any) -> dict[int, Any]:
        records = jobs(ids)
        slurm.jobs = jobs  # type: ignore[method-assign]
        slurm.set(88887, state="RUNNING")
        assert competitors.release_started(make_context(ctx.store, slurm), NOW + 2) == []
        slurm.down = slurm_down_after
        return records

    slurm.jobs = read_then_released  # type: ignore[method-assign]
    return handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2).update_text


def test_a_yes_whose_release_came_first_holds_nothing(ctx: BotContext, slurm: FakeSlurm
                                                      ) -> None:
    """A release (another tick) takes the hold before the yes's hold is sent: no hold is
    sent after it, so none can outlive the ledger; the yes says what the resumed job is now,
    not the PENDING it was when the yes looked."""
    text = yes_whose_release_came_first(ctx, slurm)
    assert slurm.acted("hold") == []
    assert competitors.held_now(ctx) == []
    assert text == "Approved by <@U0APPR>: job 88887 is already RUNNING; 88017 was not held"


def test_a_yes_whose_release_came_first_and_the_thread_agree(ctx: BotContext,
                                                             slurm: FakeSlurm) -> None:
    """The release took the hold before the yes sent it: the prompt says "88017 was not
    held", and the thread says nothing of a release, nor does trainbot run `scontrol
    release` on a job it never held (that would drop a hold its owner placed); no later tick
    does either."""
    text = yes_whose_release_came_first(ctx, slurm)
    assert text is not None and text.endswith("88017 was not held")
    assert competitors.release_started(ctx, NOW + 100_000) == []
    assert slurm.acted("hold") == [] and slurm.acted("release") == []
    assert not any(t.startswith("Released 88017") for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []


def test_a_yes_whose_release_came_first_names_no_stale_state_when_slurm_stops_answering(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    text = yes_whose_release_came_first(ctx, slurm, slurm_down_after=True)
    assert slurm.acted("hold") == []
    assert text is not None
    assert text.startswith("Approved by <@U0APPR>: job 88887 no longer waits in the queue "
                           "(its state could not be read: ")
    assert text.endswith("); 88017 was not held")
    assert "PENDING" not in text


def test_no_release_is_sent_right_behind_a_hold_whose_end_was_not_seen(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol hold 88017` outlives its timeout (it may still be running) while the resumed
    job starts: no release goes out in the same click, nor from a tick or a cancel before the
    hold can have ended, so a hold landing late is still released, not left with an empty
    ledger; once its `holding` step is old enough the tick releases it, once."""
    _, hold_token = competitor_setup(ctx, slurm)
    argv = ["scontrol", "hold", "88017"]

    def hold_still_running(job_id: int) -> None:
        slurm.calls.append(("hold", job_id))
        slurm.set(88887, state="RUNNING")
        raise OutcomeUnknown.timed_out(argv, CommandTimedOut(argv, 60))

    slurm.hold = hold_still_running  # type: ignore[method-assign]
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert competitors.release_started(ctx, NOW + 62) == []  # the next holds tick
    assert competitors.release_held_for(ctx, 88887, NOW + 63, "cancelled", "dev") == []
    assert slurm.acted("release") == []
    slurm.set(88017, reason="JobHeldUser", priority=0)  # the hold lands now
    [held] = competitors.held_now(ctx)
    due = NOW + 2 + competitors.step_takeover_s(ctx, held, competitors.HOLDING_STEP)
    assert competitors.release_started(ctx, due) == [88017]
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1


@pytest.mark.parametrize("landed", [True, False])
def test_a_hold_whose_process_died_during_it_is_released_once_it_cannot_land_after(
    ctx: BotContext, slurm: FakeSlurm, landed: bool
) -> None:
    """The yes's process dies during its `scontrol hold`: once Slurm shows 88017 held, its
    hold landed and the next tick releases it; while Slurm shows it not held, the hold may
    still land, so no release goes out before the `holding` step's takeover time."""
    _, hold_token = competitor_setup(ctx, slurm)

    def dies(job_id: int) -> None:
        if landed:
            slurm.set(job_id, reason="JobHeldUser", priority=0)
        raise Died("during scontrol hold")

    slurm.hold = dies  # type: ignore[method-assign]
    with pytest.raises(Died):
        handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88887, state="RUNNING")
    [held] = competitors.held_now(ctx)
    due = NOW + 2 + competitors.step_takeover_s(ctx, held, competitors.HOLDING_STEP)
    assert competitors.release_started(ctx, NOW + 62) == ([88017] if landed else [])
    assert competitors.release_started(ctx, due - 1) == []
    assert competitors.release_started(ctx, due) == ([] if landed else [88017])
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held


def test_a_hold_seen_landing_while_its_yes_waits_for_it_is_released_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """88017's hold lands while its yes still waits for `scontrol hold`'s answer, and the
    resumed job starts: a tick that reads 88017 held releases it at once; the yes, its hold
    over, releases nothing more and says it was released; one note in the thread."""
    _, hold_token = competitor_setup(ctx, slurm)
    other = make_context(ctx.store, slurm)
    hold = slurm.hold
    during: list[list[int]] = []

    def hold_landing_before_its_answer(job_id: int) -> None:
        hold(job_id)
        slurm.set(88887, state="RUNNING")
        during.append(competitors.release_started(other, NOW + 3))

    slurm.hold = hold_landing_before_its_answer  # type: ignore[method-assign]
    text = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2).update_text
    assert during == [[88017]]
    assert text == ("Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                    "longer waits in the queue (RUNNING)")
    assert slurm.acted("release") == [88017]
    assert (recorded(ctx).texts() + recorded(other).texts()).count(
        "Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


def test_a_cancel_after_a_failed_release_tries_it_again_at_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A release failed (the retry due in about 13 minutes) and a person cancels the
    resumed job: the cancel releases 88017 at once, not at the retry."""
    held_then_running(ctx, slurm)
    works = slurm.release
    slurm.release = SlurmClient(FakeRunner({"scontrol": DENIED})).release  # type: ignore[method-assign]
    assert competitors.release_started(ctx, NOW + 3) == []
    assert competitors.release_started(ctx, NOW + 63) == []  # a tick waits for the retry
    slurm.release = works  # type: ignore[method-assign]
    assert competitors.release_started(ctx, NOW + 123) == []
    assert competitors.release_held_for(ctx, 88887, NOW + 130, "cancelled", "dev") == [88017]
    assert not slurm.records[88017].is_held
    assert competitors.held_now(ctx) == []
    assert recorded(ctx).texts().count("Released 88017: 88887 was cancelled.") == 1


def test_a_timed_out_release_that_lands_later_is_said_released_at_the_next_tick(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`scontrol release` outlives its timeout, the job still held when read; it lands a
    little later: the next tick reads 88017 no longer held and says it was released, not
    about 13 minutes later at the retry."""
    held_then_running(ctx, slurm)
    release_times_out_once(slurm)
    assert competitors.release_started(ctx, NOW + 3) == []
    assert competitors.release_started(ctx, NOW + 63) == []  # still held: the retry waits
    slurm.set(88017, reason="Priority", priority=1)  # the release lands now
    assert competitors.release_started(ctx, NOW + 123) == [88017]
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


def test_no_means_nothing_held(ctx: BotContext, slurm: FakeSlurm) -> None:
    _, hold_token = competitor_setup(ctx, slurm)
    result = handle_click(ctx, hold_token, ActionId.KEEP_COMPETITOR, "U0APPR", NOW + 2)
    assert result.update_text == "<@U0APPR> chose not to hold 88017; nothing was held."
    assert handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "W0LEAD", NOW + 3).status \
        == "duplicate"
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 4) == []
    assert slurm.acted("hold") == [] and slurm.acted("release") == []


def test_hold_not_placed_when_resumed_job_already_started(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, hold_token = competitor_setup(ctx, slurm)
    slurm.set(88887, state="RUNNING")
    result = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert result.update_text == ("Approved by <@U0APPR>: job 88887 is already RUNNING; "
                                  "88017 was not held")
    assert slurm.acted("hold") == []


def test_held_competitor_released_when_resumed_job_fails_before_running(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88887, state="FAILED")
    assert competitors.release_started(ctx, NOW + 3) == [88017]
    assert "Released 88017: 88887 ended (FAILED) without needing the slot." in recorded(ctx).texts()


def test_a_korean_recipes_release_note_is_korean(store: Store, slurm: FakeSlurm) -> None:
    ctx = make_context(store, slurm, lang="ko")
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    token = ctx.store.approvals.create(
        chain_id=chain.id, action=competitors.HOLD_ACTION, target_job="88017",
        payload={"cluster": "dev", "for_job": "88887", "recipe": "mix"}, allowed=["U0APPR"],
        now=NOW, expires_at=NOW + 3600)
    assert ctx.store.approvals.claim(token, "U0APPR", now=NOW).claimed
    for step in (competitors.HOLDING_STEP, competitors.HOLD_ENDED_STEP):  # as apply_hold
        assert ctx.store.approvals.mark_step(token, step, now=NOW)
    slurm.add(88017, reason="JobHeldUser", priority=0)
    slurm.add(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 1) == [88017]
    texts = recorded(ctx).texts()
    assert "작업 88017의 보류를 해제했습니다: 작업 88887이(가) 실행 중입니다." in texts


def test_ahead_of_ignores_held_and_lower_priority_jobs() -> None:
    slurm = FakeSlurm()
    mine = slurm.add(1, priority=100, submit_time=50.0)
    older = slurm.add(2, priority=100, submit_time=10.0)
    newer = slurm.add(3, priority=100, submit_time=90.0)
    higher = slurm.add(4, priority=500, submit_time=99.0)
    held = slurm.add(5, priority=0, reason="JobHeldUser")
    lower = slurm.add(6, priority=10, submit_time=1.0)
    got = competitors.ahead_of(mine, [older, newer, higher, held, lower])
    assert [j.job_id for j in got] == [2, 4]


def test_cancelling_the_resumed_job_releases_its_held_competitor(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    from bot.core.train_grammar import parse_command
    from bot.services.train import execute

    _, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    reply = execute(ctx, parse_command("cancel 88887"), actor="U0OWNER", channel="C0TRAIN",
                    now=NOW + 3)
    assert reply.text == "Job 88887 cancelled by <@U0OWNER>."
    assert slurm.acted("release") == [88017]
    assert "Released 88017: 88887 was cancelled." in recorded(ctx).texts()
    assert competitors.release_started(ctx, NOW + 4) == []


def test_hold_released_even_if_the_chain_was_closed_meanwhile(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    chain_id, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    ctx.store.chains.set_status(chain_id, "finished", now=NOW + 3)
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 4) == [88017]


def test_hold_found_through_the_ledger_however_old_its_chain(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The hold ledger is queried directly: a hold of a closed chain buried under many newer
    runs of its recipe is still released (a scan of each recipe's recent chains missed it)."""
    chain_id, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    ctx.store.chains.set_status(chain_id, "failed", now=NOW + 3)
    for i in range(25):
        later = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix",
                                        now=NOW + 10 + i)
        ctx.store.chains.set_status(later.id, "finished", now=NOW + 10 + i)
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 50) == [88017]
    assert competitors.held_now(ctx) == []
    assert slurm.acted("release") == [88017]


def gpu_fault_prompt(ctx: BotContext) -> tuple[int, str, list]:
    """A chain whose job 88154 died of a GPU fault on gpu-b12: the prompt leaves it out."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain.id, job_id="88154", now=NOW, resume_iter=3000,
        summary="gpu_failure: proposing to resubmit on another node (--exclude=gpu-b12)",
        mem="1900G", exclude="gpu-b12")
    return chain.id, prompt.token, prompt.blocks[1]["elements"]


def test_a_gpu_fault_prompt_says_which_node_each_resubmit_leaves_out(ctx: BotContext) -> None:
    _, _, buttons = gpu_fault_prompt(ctx)
    assert [b["text"]["text"] for b in buttons] == [
        "Resubmit without gpu-b12 from iteration 3,000",
        "Resubmit with --mem=1900G without gpu-b12", "Dismiss"]
    assert all(len(b["text"]["text"]) <= 75 for b in buttons)  # Slack's button limit
    with pytest.raises(ValueError, match="--exclude"):
        create_resubmit_prompt(ctx, recipe="mix", chain_id=1, job_id="88154", now=NOW,
                               summary="stalled", exclude="gpu-b12", offer_cancel=True)


@pytest.mark.parametrize(("choice", "mem"), [(ActionId.RESUBMIT, None),
                                             (ActionId.RESUBMIT_MEM, "1900G")])
def test_an_approved_resubmit_after_a_gpu_fault_excludes_the_node(
    ctx: BotContext, slurm: FakeSlurm, choice: ActionId, mem: str | None
) -> None:
    chain_id, token, _ = gpu_fault_prompt(ctx)
    result = handle_click(ctx, token, choice, "W0LEAD", NOW + 1)
    assert result.status == "done", result
    [spec] = slurm.submits()
    assert (spec.exclude, spec.mem) == ("gpu-b12", mem)
    new = ctx.store.attempts.for_chain(chain_id)[-1]
    assert (new.job_id, new.excluded_nodes) == ("88887", "gpu-b12")  # the attempt row
    assert "without node gpu-b12 (--exclude)" in present(result.update_text)
    assert "exclude" not in ctx.config.recipe("mix").overridable  # not widened for later


def test_an_approved_resubmit_keeps_the_recipes_own_exclusions(store: Store,
                                                              slurm: FakeSlurm) -> None:
    ctx = make_context(store, slurm, exclude="bad-n1")
    chain_id, token, _ = gpu_fault_prompt(ctx)
    assert handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1).status == "done"
    assert slurm.submits()[0].exclude == "bad-n1,gpu-b12"
    # the attempt records only the node trainbot left out, not the recipe's own
    assert ctx.store.attempts.for_chain(chain_id)[-1].excluded_nodes == "gpu-b12"


def test_a_recipes_bracketed_exclude_is_read_as_a_hostlist(store: Store,
                                                           slurm: FakeSlurm) -> None:
    """`gpu[01,03]` is two nodes, not `gpu[01` and `03]`: an attempt that stored it with a
    faulty node is read whole, and the resubmit's --exclude names each node once."""
    ctx = make_context(store, slurm, exclude="gpu[01,03]")
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 300)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88100", now=NOW - 300,
                              excluded_nodes="gpu[01,03],gpu05")
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain.id, job_id="88100", now=NOW, resume_iter=3000,
        summary="gpu_failure", exclude="gpu03")
    assert handle_click(ctx, prompt.token, ActionId.RESUBMIT, "W0LEAD", NOW + 1).status == "done"
    assert slurm.submits()[-1].exclude == "gpu[01,03],gpu05"


def test_the_nodes_a_run_left_out_stay_out_of_its_later_resubmits(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A second node fault leaves out both faulty nodes (the first is not brought back), and a
    later --mem resubmit of the run, after no node fault, still leaves them out."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 300)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88100", now=NOW - 300)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100,
                              excluded_nodes="gpu-a07")  # after a fault on gpu-a07
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain.id, job_id="88154", now=NOW, resume_iter=3000,
        summary="gpu_failure", exclude="gpu-b12")
    assert handle_click(ctx, prompt.token, ActionId.RESUBMIT, "W0LEAD", NOW + 1).status == "done"
    assert slurm.submits()[-1].exclude == "gpu-a07,gpu-b12"
    assert ctx.store.attempts.for_chain(chain.id)[-1].excluded_nodes == "gpu-a07,gpu-b12"
    oom = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88887",
                                 now=NOW + 10, resume_iter=3000, summary="oom", mem="1900G")
    assert handle_click(ctx, oom.token, ActionId.RESUBMIT_MEM, "W0LEAD",
                        NOW + 11).status == "done"
    assert (slurm.submits()[-1].exclude, slurm.submits()[-1].mem) == ("gpu-a07,gpu-b12",
                                                                       "1900G")


def test_a_korean_recipes_gpu_fault_prompt_names_the_node_in_korean(store: Store) -> None:
    ctx = make_context(store, lang="ko")
    _, token, buttons = gpu_fault_prompt(ctx)
    assert buttons[0]["text"]["text"] == "gpu-b12 빼고 iteration 3,000부터 재제출"
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert "(노드 gpu-b12 제외, --exclude)" in present(result.update_text)


def test_a_hold_approved_before_holds_had_steps_is_released_once(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A hold approved and placed by a bot from before the `holding` step (its row has no
    prompt steps): the resumed job running, the next tick releases it, once, and says so,
    however soon after its yes (right after an upgrade, a young yes is still such a row)."""
    held_then_running(ctx, slurm)
    [held] = competitors.held_now(ctx)
    with ctx.store.engine.begin() as conn:  # as that bot left it: approved, no steps
        conn.execute(text("DELETE FROM prompt_steps WHERE token = :token"),
                     {"token": held.token})
    assert ctx.store.approvals.steps(held.token) == {}
    assert competitors.release_started(ctx, NOW + 3) == [88017]  # a second after its yes
    assert competitors.release_started(ctx, NOW + 10_000) == []
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held
    assert recorded(ctx).texts().count("Released 88017: 88887 is running.") == 1
    assert competitors.held_now(ctx) == []


def test_a_yes_whose_process_died_before_its_hold_releases_nothing_however_late(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """A yes claimed, whose process died before its `holding` step (nothing held): a tick
    long after, the resumed job running, finds the yes's claim marked with it and
    releases nothing (a `scontrol release` would drop a hold 88017's owner placed)."""
    _, hold_token = competitor_setup(ctx, slurm)

    def dies(ids: Any) -> dict[int, Any]:
        raise Died("before the yes's holding step")

    slurm.jobs = dies  # type: ignore[method-assign]
    with pytest.raises(Died):
        handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    del slurm.jobs
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    slurm.set(88017, reason="JobHeldUser", priority=0)  # its owner holds it
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 100_000) == []
    assert slurm.acted("hold") == [] and slurm.acted("release") == []
    assert slurm.records[88017].is_held
    assert not any(t.startswith("Released 88017") for t in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []


def test_a_yes_on_a_competitor_its_owner_held_meanwhile_holds_and_releases_nothing(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """The owner held 88017 themselves while the prompt was open (Slurm shows it PENDING,
    JobHeldUser; `scontrol hold` of a held job succeeds): the yes neither holds it nor puts
    it in the hold ledger, and says so, so trainbot never releases the owner's hold."""
    _, hold_token = competitor_setup(ctx, slurm)
    slurm.set(88017, reason="JobHeldUser", priority=0)
    result = handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert result.update_text == (
        "Out of date: 88017 is already held (JobHeldUser), by someone else's hold; trainbot "
        "did not hold it and does not release it for 88887.")
    assert slurm.acted("hold") == []
    assert competitors.held_now(ctx) == []
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 3) == []
    assert slurm.acted("release") == []
    assert slurm.records[88017].is_held
    actions = [(e.action, e.job_id, e.result) for e in ctx.store.audit.recent(100)]
    assert ("competitor.hold", "88017", "skipped") in actions


def second_run_asks_to_hold_88017(ctx: BotContext, slurm: FakeSlurm) -> str:
    """Another run of the team, its resumed job 88999 pending, asks to hold 88017 too: the
    prompt's token."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88999", now=NOW)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    slurm.add(88999, name="mix", account="root", partition="debug", priority=50)
    return ctx.store.approvals.create(
        chain_id=chain.id, action=competitors.HOLD_ACTION, target_job="88017",
        payload={"cluster": "dev", "for_job": "88999", "recipe": "mix",
                 "choices": ["hold", "keep"]},
        allowed=["U0APPR"], now=NOW, expires_at=NOW + 3600)


def test_a_competitor_held_for_two_runs_is_released_only_when_the_last_one_lets_go(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """Runs A (88887) and B (88999) both hold 88017: B's yes shares A's hold (88017 shows
    held, by trainbot's hold for A); A's job starting leaves 88017 held for B, said in A's
    thread; B's job starting releases it."""
    _, token_a = competitor_setup(ctx, slurm)
    token_b = second_run_asks_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    result = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 3)
    assert result.update_text == "Approved by <@U0APPR>: held 88017 until 88999 starts"
    assert slurm.acted("hold") == [88017]  # B's yes sends none: the hold is out already
    assert sorted(a.payload["for_job"] for a in competitors.held_now(ctx)) == ["88887", "88999"]

    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 4) == []
    assert slurm.acted("release") == []
    assert slurm.records[88017].is_held
    assert [a.payload["for_job"] for a in competitors.held_now(ctx)] == ["88999"]
    assert ("88887 no longer needs 88017 held, but trainbot also holds it for 88999, which "
            "still waits: 88017 stays held until 88999 no longer needs it."
            ) in recorded(ctx).texts()

    slurm.set(88999, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 5) == [88017]
    assert slurm.acted("release") == [88017]
    assert competitors.held_now(ctx) == []
    results = [(e.action, e.result) for e in ctx.store.audit.recent(100)
               if e.action == "competitor.release"]
    assert sorted(results) == [("competitor.release", "kept"), ("competitor.release", "ok")]


def test_two_holds_of_one_competitor_let_go_at_once_never_leave_it_held_unreleased(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """Both resumed jobs start and two replicas let go of the two holds at once: each claims
    its release ("releasing") before it decides, so neither counts the other's hold as still
    out, and both release 88017 (a release of a released job is harmless); one that decides
    before the other's claim is kept for it, and that other then releases. Never both kept,
    which would leave 88017 held with no hold in the ledger."""
    _, token_a = competitor_setup(ctx, slurm)
    token_b = second_run_asks_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 3)
    approvals = ctx.store.approvals
    for token in (token_a, token_b):
        assert approvals.mark_step(token, competitors.RELEASING_STEP, now=NOW + 4)
    assert approvals.pass_hold(token_a, now=NOW + 4).outcome == "last"
    assert approvals.pass_hold(token_b, now=NOW + 4).outcome == "last"
    assert len(competitors.held_now(ctx)) == 2  # both release it


def test_a_hold_let_go_first_is_kept_for_the_other_and_a_yes_never_joins_a_hold_let_go(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    _, token_a = competitor_setup(ctx, slurm)
    token_b = second_run_asks_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 3)
    approvals = ctx.store.approvals
    assert approvals.mark_step(token_a, competitors.RELEASING_STEP, now=NOW + 4)
    kept = approvals.pass_hold(token_a, now=NOW + 4)
    assert kept.outcome == "kept" and kept.kept_by is not None and kept.kept_by.token == token_b
    assert approvals.mark_step(token_b, competitors.RELEASING_STEP, now=NOW + 5)
    assert approvals.pass_hold(token_b, now=NOW + 5).outcome == "last"  # it releases
    # a third run's yes while B's release is claimed: 88017 shows held, but by no hold
    # trainbot keeps out, so the yes neither joins it nor holds it
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    slurm.add(88555, name="mix", account="root", partition="debug", priority=50)
    token_c = approvals.create(
        chain_id=chain.id, action=competitors.HOLD_ACTION, target_job="88017",
        payload={"cluster": "dev", "for_job": "88555", "recipe": "mix"},
        allowed=["U0APPR"], now=NOW, expires_at=NOW + 3600)
    assert approvals.claim(token_c, "U0APPR", NOW + 6, step="hold_approved").claimed
    assert approvals.join_hold(token_c, now=NOW + 6) is None
    # on another cluster, the same job id is another job: no hold of it is shared
    other = approvals.create(
        chain_id=chain.id, action=competitors.HOLD_ACTION, target_job="88017",
        payload={"cluster": "prod", "for_job": "88555", "recipe": "mix"},
        allowed=["U0APPR"], now=NOW, expires_at=NOW + 3600)
    assert approvals.claim(other, "U0APPR", NOW + 6, step="hold_approved").claimed
    assert approvals.join_hold(other, now=NOW + 6) is None


def test_a_persons_train_hold_of_a_competitor_trainbot_holds_is_theirs_and_kept(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`/train hold 88017` of a competitor trainbot holds for 88887: it leaves the hold
    ledger (recorded, said in the run's thread), so 88887 starting releases nothing."""
    from bot.core.train_grammar import parse_command
    from bot.services.train import execute

    _, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    reply = execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                    now=NOW + 3)
    assert reply.text == "Job 88017 held by <@U0APPR>."
    assert slurm.acted("hold") == [88017, 88017]
    assert competitors.held_now(ctx) == []
    assert ("<@U0APPR> held 88017 with `/train hold`: it is their hold now, and trainbot no "
            "longer releases it when 88887 starts.") in recorded(ctx).texts()
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 4) == []
    assert slurm.acted("release") == []
    assert slurm.records[88017].is_held
    actions = [(e.action, e.actor, e.result) for e in ctx.store.audit.recent(100)]
    assert ("competitor.release", "U0APPR", "by_person") in actions


def test_a_persons_train_release_of_a_competitor_trainbot_holds_settles_its_hold(
    ctx: BotContext, slurm: FakeSlurm
) -> None:
    """`/train release 88017`: trainbot's hold of it is over, said once; no release of its
    own follows when 88887 starts (nor a hold of 88017 the person's release let go of
    kept in the ledger)."""
    from bot.core.train_grammar import parse_command
    from bot.services.train import execute

    _, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    execute(ctx, parse_command("release 88017"), actor="U0APPR", channel="C0TRAIN",
            now=NOW + 3)
    assert slurm.acted("release") == [88017]
    assert competitors.held_now(ctx) == []
    assert ("<@U0APPR> released 88017 with `/train release`; trainbot's hold of it for 88887 "
            "is over.") in recorded(ctx).texts()
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 4) == []
    assert slurm.acted("release") == [88017]
