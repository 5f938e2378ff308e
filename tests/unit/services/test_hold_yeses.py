"""A yes on a competing job: what it holds (nothing on a no, or when the resumed job
already started), holds from before the hold steps, holds shared by two runs and a
person's `/train hold|release` of a held job (real store, on SQLite and on PostgreSQL:
`store_url`)."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import (
    FakeSlurm,
    make_context,
    recorded,
)
from sqlalchemy import text
from support import store_backends
from support.approval_runs import NOW, competitor_setup, held_then_running
from support.dying import Died

from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.store import Store

# The real store on both backends, an empty fake Slurm and the context over them.
store, slurm, ctx = store_backends.store, store_backends.slurm, store_backends.ctx


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
