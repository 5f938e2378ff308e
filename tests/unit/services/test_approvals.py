"""Approval clicks are accepted once (real store, on SQLite and on PostgreSQL: `store_url`):
who may click, what a resubmit says of its checkpoint, and the nodes a resubmit leaves out.
The holds of competing jobs after a yes: test_hold_releases.py, test_hold_yeses.py."""

from __future__ import annotations

import threading

import pytest
from fakes import (
    FakeSlurm,
    make_config,
    make_context,
    present,
    recorded,
)
from support import store_backends
from support.approval_runs import NOW, failed_run
from support.mix_prompt import mix_prompt

from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.store import Store

# The real store on both backends, an empty fake Slurm and the context over them.
store, slurm, ctx = store_backends.store, store_backends.slurm, store_backends.ctx


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
