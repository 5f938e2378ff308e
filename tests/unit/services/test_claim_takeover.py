"""A claimed click whose process died before its choice's first recorded step (a resubmit's
checkpoint lookup before its row in flight, a Cancel's squeue before `cancelling`) is taken
over by the `prompts` job (bot.services.claim_takeover) once its claim's step is older than
its bound: nothing sent → the prompt is pending again, usable, and the thread says the earlier
click was not carried out, once, by one replica; a resubmit whose sbatch went out → its job
recorded by the submits' recovery, the approval done and the prompt rewritten, no second job.
Before, such an approval stayed `approved` for good: "Already decided", "busy" for every
later prompt about the job, the run never resubmitted."""

from __future__ import annotations

import pytest
from fakes import AnswerLostSlurm, FakeSlurm, make_context, present, recorded
from support.dying import Died, dies_at

import bot.services.submit as submit_mod
from bot.core.takeover import RemoteDeadlines, settle_takeover_s
from bot.services.after_submit import after_person_submit
from bot.services.approvals import handle_click
from bot.services.claim_takeover import claim_takeover_s, take_over_claims
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import recover_submits_in_flight
from bot.services.threads import post_safely
from bot.slack.views import ActionId
from bot.store import Store

NOW = 1_000_000.0
RELEASED = "was not carried out"


def story(store: Store, *, running: bool = False) -> tuple[BotContext, FakeSlurm, int, str]:
    """Job 88154 of run `mix`, a prompt on it (Resubmit; with `running`, a stall prompt:
    also Cancel and resume, Cancel). (context, Slurm, chain id, token)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW + 10)  # answers the lookup by name
    if running:
        slurm.add(88154, name="mix", state="RUNNING")
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    store.watched_jobs.add("dev", "88154", now=NOW - 100, chain_id=chain.id)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died", resume_iter=3000,
                                    mem=None if running else "1900G", offer_cancel=running,
                                    post_key="prompt:88154")
    post_safely(ctx, "reply", chain.id, "prompt:88154", prompt.blocks, prompt.text)
    return ctx, slurm, chain.id, prompt.token


def bound(ctx: BotContext, token: str) -> float:
    return claim_takeover_s(ctx, present(ctx.store.approvals.get(token)), "claimed")


def dies_in_lookup(ctx: BotContext, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def lookup(*_a: object, **_k: object) -> None:
        raise Died("killed during the checkpoint lookup")
    with monkeypatch.context() as m:
        m.setattr(submit_mod, "find_resume_checkpoint", lookup)
        with pytest.raises(Died):
            handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 10)


def notes(ctx: BotContext) -> list[str]:
    return [p[3] for p in recorded(ctx).posts if p[2].startswith("claim-released:")]


def test_the_bound_is_the_settles_at_the_clickers_bounds(store: Store,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    ctx, _slurm, _chain, token = story(store)
    dies_in_lookup(ctx, token, monkeypatch)
    assert store.approvals.bounds_of(token, "claimed") is not None  # kept with the claim
    assert bound(ctx, token) >= settle_takeover_s(RemoteDeadlines(), post_deadline_s=
                                                  ctx.config.slack.post_deadline_s)


def test_a_resubmit_click_dead_before_its_sbatch_is_released_and_can_be_pressed_again(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, slurm, _chain, token = story(store)
    dies_in_lookup(ctx, token, monkeypatch)
    assert present(store.approvals.get(token)).state == "approved"
    due = NOW + 10 + bound(ctx, token)

    take_over_claims(ctx, due - 1)  # the click may still be at work
    assert present(store.approvals.get(token)).state == "approved"
    assert notes(ctx) == []

    take_over_claims(ctx, due)
    take_over_claims(ctx, due + 60)  # said once
    assert present(store.approvals.get(token)).state == "pending"
    said = notes(ctx)
    assert len(said) == 1 and "<@W0LEAD>" in said[0] and RELEASED in said[0], said
    assert slurm.submits() == []

    again = handle_click(ctx, token, ActionId.RESUBMIT_MEM, "U0APPR", due + 120)
    assert again.status == "done", again.ephemeral
    assert len(slurm.submits()) == 1


def test_a_cancel_click_dead_before_its_scancel_is_released_and_frees_the_job(
        store: Store) -> None:
    ctx, slurm, chain_id, token = story(store, running=True)

    def squeue(_job: int) -> None:
        raise Died("killed during the squeue before the scancel")
    real, slurm.job = slurm.job, squeue  # type: ignore[method-assign,assignment]
    with pytest.raises(Died):
        handle_click(ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", NOW + 10)
    slurm.job = real  # type: ignore[method-assign]
    assert store.approvals.steps(token).keys() == {"claimed"}

    take_over_claims(ctx, NOW + 10 + bound(ctx, token))
    assert present(store.approvals.get(token)).state == "pending"
    assert store.approvals.steps(token) == {}  # the claim's step went with it
    assert len(notes(ctx)) == 1

    later = NOW + 86400
    other = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain_id, job_id="88154",
                                   now=later, summary="88154 stalled again",
                                   resume_iter=3000, offer_cancel=True).token
    assert handle_click(ctx, other, ActionId.CANCEL, "U0APPR", later + 5).status == "done"
    assert slurm.acted("cancel") == [88154]


def test_a_resubmit_whose_sbatch_went_out_is_finished_not_released(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its process died just after sbatch: its row in flight keeps the claim (the submits'
    recovery records the job); then the approval is done and the prompt says resubmitted,
    with no second job and no "not carried out"."""
    ctx, slurm, chain_id, token = story(store)
    with monkeypatch.context() as m:
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        with pytest.raises(Died):
            handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 10)
    assert len(slurm.submits()) == 1
    late = NOW + 10 + bound(ctx, token)

    take_over_claims(ctx, late)  # its row in flight: left to the submits' recovery
    assert present(store.approvals.get(token)).state == "approved"
    recover_submits_in_flight(ctx, late + 3600, after_submit=after_person_submit)
    take_over_claims(ctx, late + 3600)

    assert present(store.approvals.get(token)).state == "done"
    assert notes(ctx) == []
    assert len(slurm.submits()) == 1
    latest = store.attempts.for_chain(chain_id)[-1]
    assert latest.job_id != "88154"
    updates = [p[3] for p in recorded(ctx).posts if p[0] == "update"]
    assert any(latest.job_id in u for u in updates), updates
    assert handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", late + 3700).status \
        == "duplicate"


def test_two_replicas_release_once_and_never_a_claim_made_again(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replica A releases the dead claim; a person presses again (claimed anew) before
    replica B, which read the old claim, gets to it: B leaves the new claim alone, and the
    thread says "not carried out" once."""
    ctx, slurm, _chain, token = story(store)
    replica_b = make_context(store, slurm, clock=lambda: NOW, sink=recorded(ctx))
    dies_in_lookup(ctx, token, monkeypatch)
    due = NOW + 10 + bound(ctx, token)
    seen_by_b = store.approvals.approved_in_steps(["claimed"])
    assert [a.token for a in seen_by_b] == [token]

    take_over_claims(ctx, due)  # replica A
    claimed_again = {}

    def dies_again(*_a: object, **_k: object) -> None:
        claimed_again.update(store.approvals.steps(token))
        raise Died("the new click is still in its lookup")
    with monkeypatch.context() as m:
        m.setattr(submit_mod, "find_resume_checkpoint", dies_again)
        with pytest.raises(Died):
            handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", due + 1)
    assert "claimed" in claimed_again

    from bot.services import claim_takeover
    for approval in seen_by_b:  # replica B, with what it read before A's release
        claim_takeover._take_over(replica_b, approval, due + 2)
    take_over_claims(replica_b, due + 2)
    after = present(store.approvals.get(token))
    assert after.state == "approved" and after.decided_by == "U0APPR"
    assert len(notes(ctx)) == 1


def test_two_replicas_at_once_release_and_say_it_once(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, slurm, _chain, token = story(store)
    replica_b = make_context(store, slurm, clock=lambda: NOW, sink=recorded(ctx))
    dies_in_lookup(ctx, token, monkeypatch)
    due = NOW + 10 + bound(ctx, token)
    seen = store.approvals.approved_in_steps(["claimed"])

    from bot.services import claim_takeover
    for approval in seen:  # both read it approved, then each takes it over
        claim_takeover._take_over(ctx, approval, due)
        claim_takeover._take_over(replica_b, approval, due)
    assert present(store.approvals.get(token)).state == "pending"
    assert len(notes(ctx)) == 1
    taken = [r for r in store.audit.recent(50) if r.action == "approval.claim_taken_over"]
    assert len(taken) == 1


def test_a_hold_yes_dead_before_its_hold_is_released_and_said(store: Store) -> None:
    """A yes whose process died in its squeue (before `holding`) held nothing: its prompt is
    pending again and the thread says so; pressed again, the hold goes out once."""
    ctx, slurm, _chain, token = story(store)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
              submit_time=1000.0)
    assert handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1).holds == [88017]
    hold = next(p[2] for p in recorded(ctx).posts if p[2].startswith("hold-prompt:"))
    hold_token = hold.removeprefix("hold-prompt:")

    def squeue(_ids: object) -> None:
        raise Died("killed during the squeue before the hold")
    real, slurm.jobs = slurm.jobs, squeue  # type: ignore[method-assign,assignment]
    with pytest.raises(Died):
        handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.jobs = real  # type: ignore[method-assign]
    due = NOW + 2 + claim_takeover_s(ctx, present(store.approvals.get(hold_token)),
                                     "hold_approved")

    take_over_claims(ctx, due)
    assert present(store.approvals.get(hold_token)).state == "pending"
    assert len(notes(ctx)) == 1 and "<@U0APPR>" in notes(ctx)[0]
    assert slurm.acted("hold") == []
    assert handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR",
                        due + 1).status == "done"
    assert slurm.acted("hold") == [88017]


def test_a_click_on_a_claimed_prompt_names_when_its_claim_is_given_back(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """W0LEAD's Resubmit died in its checkpoint lookup, after its claim. A minute later
    U0APPR clicks the same prompt ("already decided") and another prompt about the job
    ("busy"): each reply says when trainbot gives the claim back if that click died, the
    claim's bound kept with its step counted from its time, and the takeover comes exactly
    then. Before, neither reply named that wait (about 97 minutes)."""
    ctx, _slurm, chain_id, token = story(store)
    other = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain_id, job_id="88154",
                                   now=NOW, summary="88154 died again", resume_iter=3000,
                                   post_key="prompt:88154:again").token
    dies_in_lookup(ctx, token, monkeypatch)
    due = NOW + 10 + bound(ctx, token)
    assert bound(ctx, token) == 5840.0
    after = ("If that click stopped before it sent anything to the cluster, trainbot gives "
             "its prompt back in about 1 h 37 min (its buttons work again) and says so in "
             "the run's thread.")
    again = handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", NOW + 70)
    assert (again.status, again.ephemeral) == (
        "duplicate", f"Already decided by <@W0LEAD>; nothing was done again. {after}")
    busy = handle_click(ctx, other, ActionId.RESUBMIT, "U0APPR", NOW + 70)
    assert (busy.status, busy.ephemeral) == (
        "busy", "Out of date: <@W0LEAD> is already acting on job 88154 from another prompt; "
        f"nothing was done. {after}")

    take_over_claims(ctx, due - 1)
    assert present(store.approvals.get(token)).state == "approved"
    take_over_claims(ctx, due)
    assert present(store.approvals.get(token)).state == "pending"


def test_the_claim_wait_is_said_in_korean(store: Store, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    ctx, _slurm, _chain, token = story(store)
    ctx.config.slack.lang = "ko"
    dies_in_lookup(ctx, token, monkeypatch)
    again = handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", NOW + 70)
    assert again.status == "duplicate"
    assert "그 프롬프트를 되돌리고" in str(again.ephemeral), again.ephemeral
