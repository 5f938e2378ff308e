"""Approved resubmits spend the chain's retry budget like automatic ones, once; a stalled job's
"Cancel and resume" cancels it and resumes the chain, only after an authorized yes.

The 88154 story (hang -> NCCL watchdog) through the real watcher, ThreadEvents and approvals,
with in-memory Slurm/SFTP and a real SQLite store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import (
    T0,
    AnswerLostSlurm,
    FakeCheckpoints,
    FakeSFTP,
    FakeSlurm,
    homes,
    make_config,
    make_context,
    present,
    recorded,
)

from bot.cluster.errors import ChannelClosed, OutcomeUnknown
from bot.config import Config
from bot.core.catalogue import Catalogue
from bot.core.models import Diagnosis, DiagnosisMetrics
from bot.core.policy import AttemptFacts, ChainHistory, DecisionKind, PolicyParams, decide
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.takeover import (
    RemoteDeadlines,
    cancel_takeover_s,
    settle_takeover_s,
    submit_in_flight_s,
)
from bot.services import ServiceError, lost_submit
from bot.services.after_submit import after_person_submit
from bot.services.approvals import handle_click
from bot.services.approved_choices import charges_budget
from bot.services.cancel_settle import settle_unknown_cancels
from bot.services.home import publish_home
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import recover_submits_in_flight
from bot.services.threads import render, root_view
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.slack.views import ActionId
from bot.store import Store

# the dev cluster's: the default deadlines and post deadline
SETTLE_TAKEOVER_S = settle_takeover_s(RemoteDeadlines(), post_deadline_s=POST_DEADLINE_S)
STORY = Path(__file__).resolve().parents[2] / "fixtures" / "stories" / "88154.log"
LOG = "/scratch/mix/logs/mix-88154.out"


class Story:
    """Job 88154 of chain `chain_id` running under a watcher; `posted` keeps (key, blocks)."""

    def __init__(self, store: Store, *, charged_before: int = 0,
                 slurm: FakeSlurm | None = None, config: Config | None = None,
                 **recipe_over: Any) -> None:
        self.store = store
        self.slurm = slurm or FakeSlurm()
        self.ctx: BotContext = make_context(store, self.slurm, clock=lambda: T0 + 1900,
                                            config=config, **recipe_over)
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        self.chain_id = chain.id
        for k in range(charged_before):  # earlier attempts: the chain spent this many retries
            store.attempts.record(chain_id=chain.id, job_id=str(88000 + k), now=T0,
                                  charge_retry=True)
        store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
        store.watched_jobs.add("dev", "88154", now=T0, chain_id=chain.id)
        recorded(self.ctx).post_root(chain.id, "C0TRAIN", [], "mix")
        self.slurm.add(88154, state="RUNNING", stdout_path=LOG, start_time=T0, name="mix")
        self.lines = STORY.read_bytes().splitlines(keepends=True)
        self.stall = next(i for i, x in enumerate(self.lines) if b"iter: 3470/" in x)
        self.sftp = FakeSFTP()
        self.sftp.append(LOG, b"".join(self.lines[: self.stall + 1]))
        self.posted: list[tuple[str, list]] = []
        real_reply = recorded(self.ctx).post_reply

        def capture(chain_id: int, key: str, blocks: list, text: str) -> str:
            if any(k == key for k, _ in self.posted):  # posted once by key, as by the poster
                return "posted-before"
            self.posted.append((key, blocks))
            return real_reply(chain_id, key, blocks, text)

        recorded(self.ctx).post_reply = capture  # type: ignore[method-assign]
        self.watcher = Watcher("dev", slurm=self.slurm, reader=lambda: self.sftp, store=store,
                               catalogue=Catalogue.load(), sink=ThreadEvents(self.ctx),
                               config=self.ctx.config, checkpoint=FakeCheckpoints(3000))

    def stalled(self) -> dict:
        """Tick into the stall; returns the warning's Cancel-and-resume button."""
        self.watcher.tick(T0)
        self.watcher.tick(T0 + 360)
        key, blocks = self.posted[-1]
        assert ":hang:" in key
        return button(blocks, ActionId.CANCEL_RESUME)

    def died(self) -> dict:
        """The watchdog fires, the job ends FAILED; returns the incident's Resubmit button."""
        self.sftp.clock = T0 + 1805
        self.sftp.append(LOG, b"".join(self.lines[self.stall + 1:]))
        self.slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
        self.watcher.tick(T0 + 1830)
        key, blocks = self.posted[-1]
        assert key == "dev:88154:final"
        return button(blocks, ActionId.RESUBMIT)

    def retries(self) -> int:
        return present(self.store.chains.get(self.chain_id)).retries_used


def button(blocks: list, action_id: str) -> dict:
    found = [e for b in blocks if b.get("type") == "actions" for e in b["elements"]
             if e["action_id"] == action_id]
    assert found, f"no {action_id} button in {blocks}"
    return found[0]


# ------------------------------------------------------------------------------ the budget


def test_approved_resubmit_charges_the_chain_once_and_the_root_shows_it(store: Store) -> None:
    s = Story(store)
    s.stalled()
    resubmit = s.died()
    incident = present(store.incidents.get("dev:88154:final"))
    assert "charged: 1 of 3" in incident.diagnosis["text"]
    assert s.retries() == 0  # proposing is not spending
    result = handle_click(s.ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1900)
    assert result.status == "done", result
    assert s.retries() == 1
    blocks, _ = render(s.ctx, "root", "mix", root_view(s.ctx, s.chain_id))
    assert "retries 1 of 3" in str(blocks)
    # a double click, a Slack retry and the next ticks charge nothing more
    assert handle_click(s.ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1901,
                        retry_num=1).status == "duplicate"
    assert handle_click(s.ctx, resubmit["value"], ActionId.RESUBMIT, "U0APPR",
                        T0 + 1902).status == "duplicate"
    s.watcher.tick(T0 + 1930)
    assert s.retries() == 1 and len(s.slurm.submits()) == 1


def test_approving_past_a_spent_budget_reopens_the_chain_without_overcharging(
        store: Store) -> None:
    s = Story(store, charged_before=3)
    s.stalled()
    resubmit = s.died()
    incident = present(store.incidents.get("dev:88154:final"))
    assert "budget exhausted: 3 of 3" in incident.diagnosis["text"]
    assert present(store.chains.get(s.chain_id)).status == "stopped"
    result = handle_click(s.ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1900)
    assert result.status == "done", result
    assert len(s.slurm.submits()) == 1
    chain = present(store.chains.get(s.chain_id))
    assert (chain.status, chain.retries_used) == ("active", 3)  # watched again, not "4 of 3"
    blocks, _ = render(s.ctx, "root", "mix", root_view(s.ctx, s.chain_id))
    assert "retries 3 of 3" in str(blocks)


def test_a_failed_resubmit_charges_nothing(store: Store) -> None:
    s = Story(store)
    s.stalled()
    resubmit = s.died()

    def refuse(spec: object, *, script: str | None = None) -> int:
        raise ServiceError("sbatch: no")

    s.slurm.submit = refuse  # type: ignore[method-assign]
    result = handle_click(s.ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1900)
    assert result.status == "failed"
    assert s.retries() == 0


@pytest.mark.parametrize("class_id", ["preempted", "node_failure"])
def test_classes_that_do_not_charge_the_budget_stay_uncharged(store: Store,
                                                              class_id: str) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    # as the watcher records a finished job (bot.services.watch.tick.Watcher._finished)
    store.incidents.record("dev:88154:final", class_id=class_id, now=T0, chain_id=chain.id,
                           job_id="88154", state="posted",
                           diagnosis={"kind": "incident", "diagnosis": {
                               "class": class_id, "charges_budget": False}})
    token = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                   now=T0, summary="preempted").token
    assert handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", T0 + 1).status == "done"
    assert present(store.chains.get(chain.id)).retries_used == 0


@pytest.mark.parametrize(("checkpoint", "retries"), [(4000, 0), (2000, 1)],
                         ids=["chunk saved a newer checkpoint", "chunk saved none"])
def test_an_approved_time_limit_chunk_is_charged_only_without_progress(
    store: Store, checkpoint: int, retries: int,
) -> None:
    ctx = make_context(store, FakeSlurm())
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0, start_iter=2000)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    cls = Catalogue.load().get("time_limit")
    d = Diagnosis(class_id="time_limit", action=cls.action, retryable=True,
                  charges_budget=cls.charges_budget, hint=cls.hint,
                  metrics=DiagnosisMetrics(last_iter=4000))
    history = ChainHistory(attempts=(AttemptFacts("88154", 1, start_iter=2000),))
    decision = decide(d, history, PolicyParams(), T0, checkpoint_iter=checkpoint)
    assert decision.kind == DecisionKind.PROPOSE_RESUBMIT  # the recipe resubmits on approval
    # as the watcher records a finished job (bot.services.watch.tick.Watcher._finished)
    store.incidents.record("dev:88154:final", class_id="time_limit", now=T0, chain_id=chain.id,
                           job_id="88154", state="posted",
                           diagnosis={"kind": "incident", "diagnosis": d.to_json(),
                                      "decision": decision.to_json()})
    token = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                   now=T0, summary="time limit").token
    assert handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", T0 + 1).status == "done"
    assert present(store.chains.get(chain.id)).retries_used == retries


def test_without_a_recorded_incident_the_catalogue_class_of_the_cause_decides(
    store: Store,
) -> None:
    ctx = make_context(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    attempt = store.attempts.record(chain_id=chain.id, job_id="88154", now=T0).attempt

    def approval_for(cause: str | None):  # noqa: ANN202
        store.attempts.update(attempt.id, cause=cause)
        token = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                       now=T0, summary="s").token
        return store.approvals.get(token)

    assert charges_budget(ctx, approval_for("node_failure")) is False
    assert charges_budget(ctx, approval_for("time_limit")) is True
    assert charges_budget(ctx, approval_for(None)) is True  # unknown: as unknown_failure


def test_a_click_reads_the_catalogue_the_bot_loaded_at_start_never_the_files(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = make_context(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    store.attempts.update(present(store.attempts.latest(chain.id)).id, cause="node_failure")
    token = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                   now=T0, summary="s").token

    def no_load(*args: object) -> None:
        raise AssertionError("the catalogue is loaded once, at start")

    monkeypatch.setattr(Catalogue, "load", no_load)
    assert charges_budget(ctx, present(store.approvals.get(token))) is False


# ------------------------------------------------------------------------ cancel and resume


def test_cancel_and_resume_a_stalled_job_after_an_authorized_yes(store: Store) -> None:
    s = Story(store)
    cancel_resume = s.stalled()
    # the watcher's lookup for the stall found iter 3000
    assert cancel_resume["text"]["text"] == "Cancel 88154 and resume from iteration 3,000"
    token = cancel_resume["value"]

    refused = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "U0ALICE", T0 + 400)
    assert refused.status == "unauthorized"
    assert s.slurm.acted("cancel") == [] and s.slurm.submits() == []

    result = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401)
    assert result.status == "done", result
    # the recipe keeps no checkpoint the submit finds: it says the prompt said another
    assert result.update_text == (
        "Approved by <@W0LEAD>: cancelled job 88154 and resubmitted it as 88887 from scratch (no "
        "complete checkpoint). "
        "The prompt said iteration 3,000: the newest complete checkpoint changed since "
        "it was posted.")
    assert s.slurm.acted("cancel") == [88154]
    assert len(s.slurm.submits()) == 1 and s.slurm.submits()[0].job_name == "mix"
    old, new = store.attempts.for_chain(s.chain_id)
    assert (old.job_id, old.result, old.cause, old.last_iter) == ("88154", "CANCELLED", "hang",
                                                                  3470)
    assert old.work_lost_iters == 3470  # no checkpoint in this recipe: resumed from the start
    assert new.job_id == "88887"
    assert store.watched_jobs.get("dev", "88154") is None
    assert store.watched_jobs.get("dev", "88887") is not None
    assert present(store.approvals.get(token)).state == "done"
    assert s.retries() == 1  # a hang charges the budget, as its NCCL abort would have
    assert ("reply", s.chain_id, "resolution:88887",
            "mix: resumed as 88887 from scratch (no complete checkpoint)") in recorded(s.ctx).posts

    # the click again, a Slack retry, another approver: nothing more is cancelled or submitted
    for actor, retry in (("W0LEAD", 0), ("W0LEAD", 1), ("U0APPR", 0)):
        again = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, actor, T0 + 402, retry)
        assert again.status == "duplicate"
    assert s.slurm.acted("cancel") == [88154] and len(s.slurm.submits()) == 1
    assert s.retries() == 1

    # the watcher no longer judges the cancelled job: no incident, the chain stays active
    s.slurm.set(88154, state="CANCELLED", end_time=T0 + 402)
    s.watcher.tick(T0 + 420)
    assert store.incidents.get("dev:88154:final") is None
    assert present(store.chains.get(s.chain_id)).status == "active"


UNSEEN = ("Approved by <@W0LEAD>: job 88154 may or may not have been cancelled ({}); nothing "
          "was resubmitted yet. trainbot first looks at the job again in about 60 s: if it was "
          "cancelled, it resumes the run as asked. It says the job was not cancelled only once "
          "the scancel can no longer land, in about 10 min: if the job still runs then, it says "
          "so and offers the cancel again")


def test_cancel_and_resume_whose_scancel_took_effect_unseen_resumes_once_no_incident(
        store: Store) -> None:
    """scancel cancelled the job but its answer was lost: the prompt says the cancel may or
    may not have taken effect; the watcher does not judge the CANCELLED job a failure; the
    next look finds it CANCELLED and resumes the run once, as the click would have."""
    s = Story(store)
    token = s.stalled()["value"]
    lost = ChannelClosed(["scancel", "88154"], "login", connection_lost=True)
    s.slurm.cancel_answer_lost = lost
    result = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401)
    assert result.status == "done", result
    assert result.update_text == UNSEEN.format(
        "connection to login lost while `scancel 88154` was running; it may have run")
    assert s.slurm.acted("cancel") == [88154] and s.slurm.submits() == []
    s.slurm.cancel_answer_lost = None

    s.slurm.set(88154, end_time=T0 + 401)
    s.watcher.tick(T0 + 420)  # its end is the cancel's: no incident, no resubmit proposal
    assert store.incidents.get("dev:88154:final") is None
    settle_unknown_cancels(s.ctx, T0 + 430)  # too soon to judge: the scancel may still be under way
    assert s.slurm.submits() == []

    settle_unknown_cancels(s.ctx, T0 + 470)
    assert len(s.slurm.submits()) == 1
    said = ("Approved by <@W0LEAD>: cancelled job 88154 and resubmitted it as 88887 from "
            "scratch (no complete checkpoint). The prompt said iteration 3,000: the newest "
            "complete checkpoint changed since it was posted.")
    assert said in recorded(s.ctx).texts()  # a note in the thread, and the prompt rewritten
    assert ("update", s.chain_id) in [(p[0], p[1]) for p in recorded(s.ctx).posts if p[3] == said]
    assert ("reply", s.chain_id, "resolution:88887",
            "mix: resumed as 88887 from scratch (no complete checkpoint)") in recorded(s.ctx).posts
    old, new = store.attempts.for_chain(s.chain_id)
    assert (old.result, old.cause, new.job_id) == ("CANCELLED", "hang", "88887")
    assert store.watched_jobs.get("dev", "88154") is None
    assert present(store.approvals.get(token)).state == "done"
    assert s.retries() == 1

    settle_unknown_cancels(s.ctx, T0 + 530)  # settled once
    s.watcher.tick(T0 + 540)
    assert len(s.slurm.submits()) == 1 and s.slurm.acted("cancel") == [88154]
    assert store.incidents.get("dev:88154:final") is None
    assert not any(":final" in p[2] for p in recorded(s.ctx).posts)


def test_an_unseen_cancel_is_judged_after_the_recipes_cancel_settle_s(store: Store) -> None:
    """policy.cancel_settle_s (here the recipe's, 300 s) is how long trainbot waits after a
    cancel whose end was not seen before it asks Slurm and resumes the run, as the prompt
    says."""
    s = Story(store, policy={"cancel_settle_s": 300})
    token = s.stalled()["value"]
    s.slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                               connection_lost=True)
    result = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401)
    assert result.status == "done" and "first looks at the job again in about 5 min: " in \
        present(result.update_text)
    s.slurm.cancel_answer_lost = None
    s.slurm.set(88154, state="CANCELLED", end_time=T0 + 401)
    settle_unknown_cancels(s.ctx, T0 + 470)  # 69 s: the default would judge it, 300 s does not
    assert s.slurm.submits() == [] and present(store.approvals.get(token)).state != "done"
    settle_unknown_cancels(s.ctx, T0 + 702)
    assert len(s.slurm.submits()) == 1 and present(store.approvals.get(token)).state == "done"


CANCEL_TAKEOVER_S = cancel_takeover_s(RemoteDeadlines())
SCANCEL_OVER = T0 + 401 + CANCEL_TAKEOVER_S
"""When a scancel clicked at T0 + 401 whose end was not seen has ended at the latest (its
click's step plus the takeover's bound): a job still running is said not cancelled from then
on, not before (the scancel may still land)."""


class Killed(BaseException):
    """The process killed where it is raised (nothing after it runs, no handler catches it)."""


def _settle_killed(s: Story, *, after_sbatch: bool) -> str:
    """A cancel and resume whose scancel's end was not seen, then its settle killed in the
    resubmit's sbatch (after Slurm queued the job, or before it was sent); its token."""
    token = s.stalled()["value"]
    s.slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                               connection_lost=True)
    assert handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401).status == "done"
    s.slurm.cancel_answer_lost = None
    real_submit = s.slurm.submit

    def killed_submit(spec, *, script=None):
        if after_sbatch:
            real_submit(spec, script=script)
        raise Killed

    s.slurm.submit = killed_submit  # type: ignore[method-assign]
    with pytest.raises(Killed):
        settle_unknown_cancels(s.ctx, T0 + 470)
    del s.slurm.submit
    return token


@pytest.mark.parametrize("after_sbatch", [True, False])
def test_a_settle_killed_in_its_resubmit_is_taken_over_once_and_leaves_one_job(
        store: Store, after_sbatch: bool) -> None:
    """The process settling an unseen cancel dies in the resubmit: the approval stays
    approved; once its settle is SETTLE_TAKEOVER_S old one run takes it over, finds the job
    the dead sbatch queued by the run's job name (or that none was) and records one job."""
    s = Story(store, slurm=(lost := AnswerLostSlurm(first_id=88887, lost=0)))
    token = _settle_killed(s, after_sbatch=after_sbatch)
    assert present(store.approvals.get(token)).state == "approved"
    assert len(s.slurm.submits()) == (1 if after_sbatch else 0)
    settle_unknown_cancels(s.ctx, T0 + 470 + 60)  # the dead settle's step is still its lease
    assert len(s.slurm.submits()) == (1 if after_sbatch else 0)

    later = T0 + 470 + SETTLE_TAKEOVER_S
    settle_unknown_cancels(s.ctx, later)
    settle_unknown_cancels(s.ctx, later)  # taken over once
    assert len(s.slurm.submits()) == 1 and lost.queued("mix") == [88887]
    old, new = store.attempts.for_chain(s.chain_id)
    assert (old.result, new.job_id) == ("CANCELLED", "88887")
    assert old.ended_at == T0 + 470  # as the dead settle recorded it, not the takeover's time
    # the job its sbatch left was submitted then, not when the takeover found it
    assert new.submitted_at == (T0 + 470 if after_sbatch else later)
    assert store.watched_jobs.get("dev", "88887") is not None
    assert present(store.approvals.get(token)).state == "done"
    said = ("Approved by <@W0LEAD>: cancelled job 88154 and resubmitted it as 88887 from "
            "scratch (no complete checkpoint). The prompt said iteration 3,000: the newest "
            "complete checkpoint changed since it was posted.")
    assert said in recorded(s.ctx).texts()
    assert s.retries() == 1
    settle_unknown_cancels(s.ctx, later + 2 * SETTLE_TAKEOVER_S)
    assert len(s.slurm.submits()) == 1


@pytest.mark.parametrize("interrupted", ["recovery", "settle"])
def test_a_lost_resume_found_by_the_recovery_and_the_settle_at_once_is_one_attempt(
        store: Store, monkeypatch, interrupted: str) -> None:
    """After a long outage both the recovery of the submits in flight (the settle's resubmit
    kept its row) and the settle's takeover are due for the job the dead sbatch left, 88887:
    the recovery runs first, or runs whole between the settle's lookup and its record. The
    recovery leaves the row to the settle, whose approval is still approved: 88887 is one
    attempt of the run, charged once, in the ledger once, the thread tells it once, and each
    viewer's Home tab is published once."""
    s = Story(store, slurm=AnswerLostSlurm(first_id=88887, lost=0, submitted_at=T0 + 470))
    token = _settle_killed(s, after_sbatch=True)
    for user in ("W0LEAD", "U0ALICE", "U0NOBODY"):  # each opened their Home tab lately
        publish_home(s.ctx, user, T0 + 400)
    homes(s.ctx).published.clear()
    later = T0 + 470 + max(SETTLE_TAKEOVER_S, submit_in_flight_s(RemoteDeadlines()))

    def recovery() -> None:  # the scheduler's `submits` job, as bot.app wires it
        recover_submits_in_flight(s.ctx, later, after_submit=after_person_submit)

    def settle() -> None:
        settle_unknown_cancels(s.ctx, later)

    real_lookup = lost_submit.find_unrecorded_submit
    between = [recovery] if interrupted == "settle" else []

    def lookup_then_the_other_path(*args: Any, **kwargs: Any) -> str | None:
        found = real_lookup(*args, **kwargs)
        if between:
            between.pop()()  # runs whole, finding the job this lookup found
        return found

    monkeypatch.setattr(lost_submit, "find_unrecorded_submit", lookup_then_the_other_path)
    if interrupted == "recovery":  # it runs first, whole: the row is the settle's, left alone
        recovery()
        assert len(store.submits_in_flight.sent_before("dev", float("inf"))) == 1
    settle()
    assert between == []  # the race happened
    monkeypatch.undo()
    recovery()
    settle()

    assert [a.job_id for a in store.attempts.for_chain(s.chain_id)] == ["88154", "88887"]
    assert s.retries() == 1 and len(s.slurm.submits()) == 1
    assert store.watched_jobs.get("dev", "88887") is not None
    assert store.submits_in_flight.sent_before("dev", float("inf")) == []
    assert present(store.approvals.get(token)).state == "done"
    assert [p[2] for p in recorded(s.ctx).posts if p[0] == "reply" and "88887" in p[3]
            and "resumed as" in p[3]] == ["resolution:88887"]
    assert len([e for e in store.audit.recent(100)
                if e.job_id == "88887" and e.action == "submit" and e.result == "ok"]) == 1
    settle_unknown_cancels(s.ctx, later + 60)  # the settle said, its tabs refreshed by then
    assert sorted(homes(s.ctx).users()) == ["U0ALICE", "W0LEAD"]  # once each, not the outsider's
    assert all("88887" in json.dumps(blocks) for _, blocks in homes(s.ctx).published)


def test_a_settle_killed_after_recording_its_outcome_says_it_at_the_next_run_once(
        store: Store) -> None:
    """The process settling an unseen cancel and resume dies after it recorded the outcome
    (resubmitted, approval done) and before the thread note and the prompt's rewrite: the
    next run says it, once, and resubmits nothing more."""
    s = Story(store, slurm=AnswerLostSlurm(first_id=88887, lost=0))
    token = s.stalled()["value"]
    s.slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                               connection_lost=True)
    assert handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401).status == "done"
    s.slurm.cancel_answer_lost = None

    post_reply = recorded(s.ctx).post_reply

    def killed_at_the_note(chain_id: int, key: str, *args: Any) -> Any:
        if key.startswith("cancel-settled:"):  # the first thing said
            raise Killed
        return post_reply(chain_id, key, *args)

    recorded(s.ctx).post_reply = killed_at_the_note  # type: ignore[method-assign, assignment]
    with pytest.raises(Killed):
        settle_unknown_cancels(s.ctx, T0 + 470)
    del recorded(s.ctx).post_reply
    said = ("Approved by <@W0LEAD>: cancelled job 88154 and resubmitted it as 88887 from "
            "scratch (no complete checkpoint). The prompt said iteration 3,000: the newest "
            "complete checkpoint changed since it was posted.")
    assert present(store.approvals.get(token)).state == "done"
    assert said not in recorded(s.ctx).texts()

    settle_unknown_cancels(s.ctx, T0 + 530)  # the next run: no takeover wait, nothing to redo
    assert ("reply", s.chain_id, f"cancel-settled:{token}", said) in recorded(s.ctx).posts
    assert ("update", s.chain_id) in [(p[0], p[1]) for p in recorded(s.ctx).posts if p[3] == said]
    settle_unknown_cancels(s.ctx, T0 + 590)
    settle_unknown_cancels(s.ctx, T0 + 470 + 2 * SETTLE_TAKEOVER_S)
    assert recorded(s.ctx).texts().count(said) == 2  # the note and the rewrite, once each
    assert len(s.slurm.submits()) == 1 and s.retries() == 1


@pytest.mark.parametrize("choice", [ActionId.CANCEL_RESUME, ActionId.CANCEL])
def test_a_settle_killed_before_it_offered_the_cancel_again_offers_it_at_the_next_run(
        store: Store, choice: str) -> None:
    """The cancel did not take effect; the process dies after the thread note and before the
    new prompt went out: the next run offers the cancel again, once, and notes nothing twice."""
    s = Story(store)
    token = s.stalled()["value"]
    s.slurm.cancel_lost = ChannelClosed(["scancel", "88154"], "login", connection_lost=True)
    assert handle_click(s.ctx, token, choice, "W0LEAD", T0 + 401).status == "done"
    s.slurm.cancel_lost = None
    capture = recorded(s.ctx).post_reply

    def killed_offer(chain_id: int, key: str, blocks: list, text: str) -> str:
        if key.startswith("cancel-again:"):
            raise Killed
        return capture(chain_id, key, blocks, text)

    recorded(s.ctx).post_reply = killed_offer  # type: ignore[method-assign]
    with pytest.raises(Killed):
        settle_unknown_cancels(s.ctx, SCANCEL_OVER)
    recorded(s.ctx).post_reply = capture  # type: ignore[method-assign]
    assert [k for k, _ in s.posted][-1] == f"cancel-settled:{token}"

    settle_unknown_cancels(s.ctx, SCANCEL_OVER + 60)
    settle_unknown_cancels(s.ctx, SCANCEL_OVER + 120)
    keys = [k for k, _ in s.posted]
    assert keys.count(f"cancel-again:{token}") == 1
    assert keys.count(f"cancel-settled:{token}") == 1
    again = button(s.posted[-1][1], choice)
    pending = [a for a in store.approvals.for_chain(s.chain_id, "pending")]
    assert [a.token for a in pending] == [again["value"]]  # one new prompt, the one posted
    done = handle_click(s.ctx, again["value"], choice, "W0LEAD", SCANCEL_OVER + 130)
    assert done.status == "done", done
    assert s.slurm.acted("cancel") == [88154, 88154]


def test_cancel_and_resume_whose_scancel_did_not_take_effect_says_so_and_asks_again(
        store: Store) -> None:
    s = Story(store)
    token = s.stalled()["value"]
    what = ("`scancel 88154` did not answer within 30 s: the Slurm controller is overloaded "
            "or down; it may or may not have taken effect")
    s.slurm.cancel_lost = OutcomeUnknown(["scancel", "88154"], what)
    result = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401)
    assert result.update_text == UNSEEN.format(what)
    s.slurm.cancel_lost = None
    assert store.watched_jobs.get("dev", "88154") is not None  # still watched

    settle_unknown_cancels(s.ctx, SCANCEL_OVER)
    said = ("Approved by <@W0LEAD>, but it failed: job 88154 was not cancelled: Slurm still "
            "shows it RUNNING after the cancel whose end trainbot did not see; nothing was "
            "resubmitted. The cancel is offered again below")
    assert said in recorded(s.ctx).texts()
    assert s.slurm.submits() == [] and s.slurm.acted("cancel") == [88154]
    key, blocks = s.posted[-1]
    assert key == f"cancel-again:{token}"
    again = button(blocks, ActionId.CANCEL_RESUME)
    assert again["value"] != token
    settle_unknown_cancels(s.ctx, SCANCEL_OVER + 60)  # offered once
    assert [k for k, _ in s.posted].count(key) == 1

    done = handle_click(s.ctx, again["value"], ActionId.CANCEL_RESUME, "W0LEAD", SCANCEL_OVER + 130)
    assert done.status == "done", done
    assert s.slurm.acted("cancel") == [88154, 88154] and len(s.slurm.submits()) == 1


ONLY_UNSEEN = ("Approved by <@W0LEAD>: job 88154 may or may not have been cancelled (connection "
               "to login lost while `scancel 88154` was running; it may have run). trainbot "
               "first looks at the job again in about 60 s and, once it has ended, says here "
               "whether it was cancelled. It says the job was not cancelled only once the "
               "scancel can no longer land, in about 10 min: if the job still runs then, it says "
               "so and offers the cancel again")


def test_a_plain_cancel_whose_scancel_took_effect_unseen_is_settled_once_and_said(
        store: Store) -> None:
    """A Cancel (no resume) whose scancel's answer was lost: the prompt says it may or may
    not have cancelled the job; after the settle wait trainbot asks Slurm once, finds it
    CANCELLED and says so in the thread; nothing is resubmitted, and the job's end is then
    the watcher's to judge, as after a cancel it saw."""
    s = Story(store)
    token = s.stalled()["value"]
    s.slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                               connection_lost=True)
    result = handle_click(s.ctx, token, ActionId.CANCEL, "W0LEAD", T0 + 401)
    assert (result.status, result.update_text) == ("done", ONLY_UNSEEN)
    s.slurm.cancel_answer_lost = None
    assert present(store.approvals.get(token)).state == "approved"

    s.slurm.set(88154, end_time=T0 + 401)
    s.watcher.tick(T0 + 420)  # its end may be the cancel's: left to the settle
    assert store.incidents.get("dev:88154:final") is None
    settle_unknown_cancels(s.ctx, T0 + 430)  # too soon: the scancel may still be under way
    assert present(store.approvals.get(token)).state == "approved"

    settle_unknown_cancels(s.ctx, T0 + 470)
    said = "Approved by <@W0LEAD>: cancelled job 88154"
    assert ("reply", s.chain_id, f"cancel-settled:{token}", said) in recorded(s.ctx).posts
    assert ("update", s.chain_id) in [(p[0], p[1]) for p in recorded(s.ctx).posts if p[3] == said]
    assert present(store.approvals.get(token)).state == "done"
    settle_unknown_cancels(s.ctx, T0 + 530)  # settled once
    settle_unknown_cancels(s.ctx, T0 + 470 + 2 * SETTLE_TAKEOVER_S)
    assert recorded(s.ctx).texts().count(said) == 2  # the note and the prompt's rewrite
    assert s.slurm.submits() == [] and s.slurm.acted("cancel") == [88154]
    assert s.retries() == 0
    s.watcher.tick(T0 + 540)  # settled: the watcher judges its end, as after a seen cancel
    assert store.incidents.get("dev:88154:final") is not None


def test_a_plain_cancel_whose_scancel_did_not_take_effect_says_so_and_offers_it_again(
        store: Store) -> None:
    s = Story(store)
    token = s.stalled()["value"]
    s.slurm.cancel_lost = ChannelClosed(["scancel", "88154"], "login", connection_lost=True)
    result = handle_click(s.ctx, token, ActionId.CANCEL, "W0LEAD", T0 + 401)
    assert result.update_text == ONLY_UNSEEN
    s.slurm.cancel_lost = None

    settle_unknown_cancels(s.ctx, SCANCEL_OVER)
    said = ("Approved by <@W0LEAD>, but it failed: job 88154 was not cancelled: Slurm still "
            "shows it RUNNING after the cancel whose end trainbot did not see; nothing was "
            "resubmitted. The cancel is offered again below")
    assert ("reply", s.chain_id, f"cancel-settled:{token}", said) in recorded(s.ctx).posts
    key, blocks = s.posted[-1]
    assert key == f"cancel-again:{token}"
    again = button(blocks, ActionId.CANCEL)
    assert again["value"] != token
    settle_unknown_cancels(s.ctx, SCANCEL_OVER + 60)  # offered once
    assert [k for k, _ in s.posted].count(key) == 1

    done = handle_click(s.ctx, again["value"], ActionId.CANCEL, "W0LEAD", SCANCEL_OVER + 130)
    assert (done.status, done.update_text) == ("done", "Approved by <@W0LEAD>: cancelled job "
                                                       "88154")
    assert s.slurm.acted("cancel") == [88154, 88154] and s.slurm.submits() == []


def test_cancel_and_resume_of_a_job_that_already_ended_does_nothing(store: Store) -> None:
    s = Story(store)
    token = s.stalled()["value"]
    s.died()  # the watchdog fired before anyone clicked
    result = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 1900)
    assert result.status == "failed"
    assert "job 88154 is no longer running (FAILED); nothing was cancelled" in \
        present(result.update_text)
    assert s.slurm.acted("cancel") == [] and s.slurm.submits() == []
    assert s.retries() == 0


def test_cancel_and_resume_is_not_a_choice_of_a_finished_jobs_prompt(store: Store) -> None:
    s = Story(store)
    s.stalled()
    resubmit = s.died()
    result = handle_click(s.ctx, resubmit["value"], ActionId.CANCEL_RESUME, "W0LEAD", T0 + 1900)
    assert result.status == "unknown"
    assert s.slurm.acted("cancel") == [] and s.slurm.submits() == []


# ------------------------------------------- a cancel and resume whose click's process died

RESUMED = ("Approved by <@W0LEAD>: cancelled job 88154 and resubmitted it as 88887 from "
           "scratch (no complete checkpoint). The prompt said iteration 3,000: the newest "
           "complete checkpoint changed since it was posted.")


def _killed_in_the_resume(s: Story, where: str) -> str:
    """A cancel and resume clicked: its scancel took effect, then the process was killed at
    `where` in the rest of the click (the resubmit, its announcement, its hold question's
    lookup, the hold prompt recorded and its question not posted, the approval's end); its
    token. 88017, an older job of the team's, is pending on the
    partition: the resubmit's hold question asks about it."""
    s.slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
                submit_time=1000.0)
    token = s.stalled()["value"]
    real_submit, capture = s.slurm.submit, recorded(s.ctx).post_reply
    real_competitors, real_done = s.slurm.pending_competitors, s.store.approvals.mark_done

    def killed_submit(spec, *, script=None):
        if where == "sbatch_queued":
            real_submit(spec, script=script)
        raise Killed

    def killed_post(chain_id: int, key: str, blocks: list, text: str) -> str:
        if key.startswith("resolution:" if where == "announced" else "hold-prompt:"):
            raise Killed
        return capture(chain_id, key, blocks, text)

    def killed(*_args: Any, **_kw: Any) -> Any:
        raise Killed

    if where in ("sbatch_sent", "sbatch_queued"):
        s.slurm.submit = killed_submit  # type: ignore[method-assign]
    elif where in ("announced", "hold_asked"):
        recorded(s.ctx).post_reply = killed_post  # type: ignore[method-assign]
    elif where == "holds":
        s.slurm.pending_competitors = killed  # type: ignore[method-assign]
    else:
        s.store.approvals.mark_done = killed  # type: ignore[method-assign]
    with pytest.raises(Killed):
        handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", T0 + 401)
    s.slurm.submit, recorded(s.ctx).post_reply = real_submit, capture  # type: ignore[method-assign]
    s.slurm.pending_competitors = real_competitors  # type: ignore[method-assign]
    s.store.approvals.mark_done = real_done  # type: ignore[method-assign]
    assert s.slurm.acted("cancel") == [88154]
    s.slurm.set(88154, state="CANCELLED", end_time=T0 + 401)
    return token


@pytest.mark.parametrize("where", ["sbatch_sent", "sbatch_queued", "announced", "holds",
                                   "hold_asked", "done"])
def test_a_cancel_and_resume_whose_process_died_after_the_cancel_is_finished_once(
        store: Store, where: str) -> None:
    """The click's scancel took effect, then its process died before the approval's end: in
    the resubmit's sbatch (before it was sent, or after Slurm queued the job), after the job
    was recorded and before its announcement, before its hold question, between the hold
    prompt's record and its question's post, or after it. Once the click's step is
    SETTLE_TAKEOVER_S old one run finishes it: the thread hears of the resumed job once, its
    hold question is asked once (nothing held without it), the prompt is rewritten once to
    say what was done, and no second job is submitted."""
    s = Story(store, slurm=(lost := AnswerLostSlurm(first_id=88887, lost=0)))
    token = _killed_in_the_resume(s, where)
    queued = 0 if where == "sbatch_sent" else 1
    assert len(s.slurm.submits()) == queued
    assert present(store.approvals.get(token)).state == "approved"
    if where == "hold_asked":  # the prompt is recorded, its question never went out
        [hold] = [a for a in store.approvals.for_chain(s.chain_id)
                  if a.action == "hold_competitor"]
        assert hold.state == "pending" and hold.target_job == "88017"
        assert not any(p[2].startswith("hold-prompt:") for p in recorded(s.ctx).posts)
    settle_unknown_cancels(s.ctx, T0 + 401 + 60)  # the click's step is still its lease
    assert len(s.slurm.submits()) == queued and RESUMED not in recorded(s.ctx).texts()

    later = T0 + 401 + SETTLE_TAKEOVER_S
    for at in (later, later + 60, later + 2 * SETTLE_TAKEOVER_S):
        settle_unknown_cancels(s.ctx, at)
    assert len(s.slurm.submits()) == 1 and lost.queued("mix") == [88887]
    assert present(store.approvals.get(token)).state == "done"
    rewrites = [p for p in recorded(s.ctx).posts if p[0] == "update" and p[3] == RESUMED]
    assert len(rewrites) == 1
    assert [p[2] for p in recorded(s.ctx).posts if p[3] == RESUMED and p[0] == "reply"] == \
        [f"cancel-settled:{token}"]
    assert [p[3] for p in recorded(s.ctx).posts if p[2] == "resolution:88887"] == \
        ["mix: resumed as 88887 from scratch (no complete checkpoint)"]
    holds = [p[3] for p in recorded(s.ctx).posts if p[2].startswith("hold-prompt:")]
    assert len(holds) == 1 and holds[0].endswith("Hold 88017 until the resumed job starts?")
    assert len([a for a in store.approvals.for_chain(s.chain_id)
                if a.action == "hold_competitor"]) == 1
    assert s.slurm.acted("hold") == []  # held only once someone says yes to the question
    old, new = store.attempts.for_chain(s.chain_id)
    assert (old.result, old.cause, new.job_id) == ("CANCELLED", "hang", "88887")
    assert store.watched_jobs.get("dev", "88887") is not None
    assert s.retries() == 1


@pytest.mark.parametrize("unseen", ["scancel_answer_lost", "process_died_in_sbatch",
                                    "scancel_not_taken"])
def test_a_settled_cancel_and_resume_refreshes_each_home_tab_once(
        store: Store, unseen: str) -> None:
    """A cancel and resume the settle finishes (its scancel's answer lost, or the click's
    process killed in the resubmit's sbatch) republishes the Home tab of each viewer who sees
    the run once, showing the resumed job; one whose scancel did not take effect, once, with
    the cancel offered again. An outsider's tab is not published."""
    s = Story(store, slurm=AnswerLostSlurm(first_id=88887, lost=0))
    if unseen == "process_died_in_sbatch":
        _killed_in_the_resume(s, "sbatch_sent")
        later = T0 + 401 + SETTLE_TAKEOVER_S
        runs = [later, later + 60, later + 2 * SETTLE_TAKEOVER_S]
    else:
        token = s.stalled()["value"]
        if unseen == "scancel_answer_lost":
            s.slurm.cancel_answer_lost = ChannelClosed(["scancel", "88154"], "login",
                                                       connection_lost=True)
        else:
            s.slurm.cancel_lost = OutcomeUnknown(["scancel", "88154"], "no answer")
        assert handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD",
                            T0 + 401).status == "done"
        s.slurm.cancel_answer_lost = s.slurm.cancel_lost = None
        if unseen == "scancel_answer_lost":
            s.slurm.set(88154, end_time=T0 + 401)
        runs = [T0 + 470, T0 + 530, T0 + 590]
        if unseen == "scancel_not_taken":  # said once the scancel has ended at the latest
            runs = [SCANCEL_OVER, SCANCEL_OVER + 60, SCANCEL_OVER + 120]
    assert s.slurm.submits() == []
    for user in ("W0LEAD", "U0ALICE", "U0NOBODY"):  # each opened their Home tab lately
        publish_home(s.ctx, user, T0 + 400)
    homes(s.ctx).published.clear()
    for at in runs:
        settle_unknown_cancels(s.ctx, at)
    resumed = unseen != "scancel_not_taken"
    assert len(s.slurm.submits()) == (1 if resumed else 0)
    assert sorted(homes(s.ctx).users()) == ["U0ALICE", "W0LEAD"]  # once each, not the outsider's
    assert all(("88887" in json.dumps(blocks)) is resumed for _, blocks in homes(s.ctx).published)


def test_a_cancel_and_resume_whose_commands_take_their_full_deadlines_is_not_taken_over(
        store: Store) -> None:
    """On a cluster whose commands may take 300 s, a cancel and resume's click whose every
    Slurm command runs to its deadline is still going long past the 600 s the takeover used
    to be; the runs made meanwhile (one after each command) take nothing over, as the
    takeover is counted from the cluster's deadlines: one job is submitted, its hold question
    asked once, and the click says what it did."""
    config = make_config()
    config.clusters["dev"] = config.clusters["dev"].model_copy(update={"command_timeout": 300})
    s = Story(store, slurm=AnswerLostSlurm(first_id=88887, lost=0), config=config)
    s.slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
                submit_time=1000.0)
    token = s.stalled()["value"]
    per_command = RemoteDeadlines(command_s=300).command_at_most_s
    clicked = now = T0 + 401
    real_call = s.slurm._call
    meanwhile: list[float] = []

    def slow_call(verb: str, arg: Any) -> None:
        nonlocal now
        real_call(verb, arg)
        now += per_command
        if not meanwhile:  # another run of the settle, while the click waits on Slurm
            meanwhile.append(now)
            settle_unknown_cancels(s.ctx, now)
            meanwhile.pop()

    s.slurm._call = slow_call  # type: ignore[method-assign]
    result = handle_click(s.ctx, token, ActionId.CANCEL_RESUME, "W0LEAD", clicked)
    assert now - clicked > 600
    assert result.status == "done" and result.update_text == RESUMED
    assert len(s.slurm.submits()) == 1 and present(store.approvals.get(token)).state == "done"
    assert len([p for p in recorded(s.ctx).posts if p[2].startswith("hold-prompt:")]) == 1
    assert not any(p[2] == f"cancel-settled:{token}" for p in recorded(s.ctx).posts)


# ------------------------------------------- a cancel whose click's process died in its scancel



@pytest.mark.parametrize("choice", [ActionId.CANCEL_RESUME, ActionId.CANCEL])
@pytest.mark.parametrize("took_effect", [True, False])
def test_a_cancel_whose_process_died_in_its_scancel_is_settled_once(
        store: Store, choice: str, took_effect: bool) -> None:
    """The click's process dies in its scancel (a cancel and resume's job already off the
    watch list), the scancel sent and taking effect or not sent at all: the approval stays
    approved with no outcome. Once the click's step is CANCEL_TAKEOVER_S old, the next settle
    finds the job CANCELLED and finishes the cancel as the click would have (a cancel and
    resume resumes the run once), or finds it still running, says so and offers it again, the
    job watched all along; one note in the thread, one scancel, at most one job submitted."""
    s = Story(store, slurm=(lost := AnswerLostSlurm(first_id=88887, lost=0)))
    token = s.stalled()["value"]
    real_cancel = s.slurm.cancel

    def killed_cancel(job_id: int) -> None:
        if took_effect:
            real_cancel(job_id)
        raise Killed

    s.slurm.cancel = killed_cancel  # type: ignore[method-assign]
    with pytest.raises(Killed):
        handle_click(s.ctx, token, choice, "W0LEAD", T0 + 401)
    del s.slurm.cancel
    resume = choice == ActionId.CANCEL_RESUME
    assert present(store.approvals.get(token)).state == "approved"
    assert (store.watched_jobs.get("dev", "88154") is None) == resume
    if took_effect:
        s.slurm.set(88154, end_time=T0 + 401)
    settle_unknown_cancels(s.ctx, T0 + 401 + 60)  # the click's step is still its lease
    assert present(store.approvals.get(token)).state == "approved"
    assert not any(p[2] == f"cancel-settled:{token}" for p in recorded(s.ctx).posts)

    later = T0 + 401 + CANCEL_TAKEOVER_S
    for at in (later, later + 60, later + 2 * SETTLE_TAKEOVER_S):
        settle_unknown_cancels(s.ctx, at)
    assert s.slurm.acted("cancel") == ([88154] if took_effect else [])
    assert present(store.approvals.get(token)).state == "done"
    if not took_effect:
        said = ("Approved by <@W0LEAD>, but it failed: job 88154 was not cancelled: Slurm "
                "still shows it RUNNING after the cancel whose end trainbot did not see; "
                "nothing was resubmitted. The cancel is offered again below")
        assert [k for k, _ in s.posted].count(f"cancel-again:{token}") == 1
        assert store.watched_jobs.get("dev", "88154") is not None  # watched all along
    elif resume:
        said = RESUMED
        assert len(s.slurm.submits()) == 1 and lost.queued("mix") == [88887]
        assert [p[3] for p in recorded(s.ctx).posts if p[2] == "resolution:88887"] == \
            ["mix: resumed as 88887 from scratch (no complete checkpoint)"]
        old, new = store.attempts.for_chain(s.chain_id)
        assert (old.result, old.cause, new.job_id) == ("CANCELLED", "hang", "88887")
        assert store.watched_jobs.get("dev", "88154") is None
        assert s.retries() == 1
    else:
        said = "Approved by <@W0LEAD>: cancelled job 88154"
    if not (took_effect and resume):
        assert s.slurm.submits() == [] and s.retries() == 0
    assert [p[2] for p in recorded(s.ctx).posts if p[0] == "reply" and p[3] == said] == \
        [f"cancel-settled:{token}"]
    assert len([p for p in recorded(s.ctx).posts if p[0] == "update" and p[3] == said]) == 1
