"""The submit claim (bot.services.submit_claim) where a submit's job may be queued and is not
recorded, where its checkpoint lookup is slow, where two submits of one process overlap, where
a cancel and resume meets another submit, and whom a refusal names."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from fakes import AnswerLostSlurm, FakeSFTP, FakeSlurm, failed_run, make_context, present
from sqlalchemy import delete
from support.dying import Died, dies_at
from support.mix_prompt import mix_prompt

import bot.services.cancel_settle as cancel_settle
import bot.services.submit as submit_mod
from bot.cluster.errors import OutcomeUnknown
from bot.core import train_grammar as c
from bot.core.train_grammar import parse_command
from bot.services.approvals import ActionId, handle_click
from bot.services.leases import process_holder
from bot.services.submit import submit_recipe
from bot.services.submit_claim import RecipeSubmitUnderWay, claim_key, click_of, submit_holder
from bot.services.train import execute
from bot.store import Store
from bot.store import schema as t

NOW = 1_000_000.0  # 13:46 UTC


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


class Sbatch(FakeSlurm):
    """Slurm whose sbatch calls run `during[n]` (the n-th sbatch, from 0) before they queue;
    the first's answer is lost (OutcomeUnknown) after it queued with `lost`."""

    def __init__(self, lost: bool = False) -> None:
        super().__init__(first_id=90500)
        self.during: dict[int, Callable[[], object]] = {}
        self.lost = lost
        self.sent = 0
        self._lock = threading.Lock()

    def submit(self, spec, *, script: str | None = None) -> int:
        with self._lock:
            n, self.sent = self.sent, self.sent + 1
        if n in self.during:
            self.during[n]()
        with self._lock:
            job = super().submit(spec, script=script)
        if self.lost and n == 0:
            raise OutcomeUnknown(["sbatch"], "its channel closed first")
        return job


def cli_submit(ctx, slurm: FakeSlurm, now: float, **kw) -> object:
    """`trainbot submit mix` (no row in flight: its claim alone stands for it)."""
    return submit_recipe(ctx.config, "mix", slurm=slurm, sftp=FakeSFTP(), store=ctx.store,
                         now=now, actor="cli", clock=ctx.clock, **kw)


# -- 1. a submit whose job may be queued and is not recorded keeps its claim ------------------

def test_a_resubmit_whose_sbatch_answer_was_lost_keeps_the_run_claimed(store: Store) -> None:
    """The watcher's resubmit of `mix`'s run is queued but its sbatch's answer is lost: its job
    is not recorded, so its claim is kept (it lapses by its hold) and a `/train submit mix`
    right after is refused naming it (it was released, and a second job queued)."""
    slurm = Sbatch(lost=True)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain_id, _ = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False)
    with pytest.raises(OutcomeUnknown):
        submit_recipe(ctx.config, "mix", slurm=slurm, sftp=FakeSFTP(), store=store, now=NOW,
                      actor="trainbot", chain_id=chain_id, intent="auto:1", charge_retry=True)
    reply = execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN",
                    now=NOW + 5)
    assert len(slurm.submits()) == 1 and store.command_claims.holder(claim_key(
        "mix", chain_id)) is not None
    assert reply.text == (
        "`submit` failed: not submitted: trainbot's automatic resubmit of mix's run of job "
        "88154 was sent at 13:46 UTC and its job is not recorded yet; two jobs of a recipe side "
        "by side would write the same checkpoints. That run's thread tells which job it is")


def test_a_submit_the_process_stopped_in_after_its_sbatch_keeps_its_claim(
        store: Store, monkeypatch) -> None:
    """`trainbot submit mix` (no row in flight) stops right after its sbatch returned, before
    its job is recorded: its claim stands (it was released on the way out), and the next
    `trainbot submit mix` is refused before its sbatch."""
    slurm = Sbatch()
    ctx = make_context(store, slurm, clock=lambda: NOW)
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        cli_submit(ctx, slurm, NOW)
    assert store.command_claims.holder(claim_key("mix")) is not None
    with pytest.raises(RecipeSubmitUnderWay):
        cli_submit(ctx, slurm, NOW + 5)
    assert len(slurm.submits()) == 1


# -- 2. the claim's hold counts from when it is taken; each submit its own holder -------------

def test_a_claim_taken_after_a_slow_checkpoint_lookup_holds_from_then(
        store: Store, monkeypatch) -> None:
    """The first `trainbot submit mix`'s checkpoint lookup takes 20 minutes (longer than the
    claim's hold): its claim counts its hold from when it is taken, so a second one at its
    sbatch is refused (it counted from the command, was lapsed at once, and both queued)."""
    clock = [NOW]
    slurm = Sbatch()
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    real = submit_mod.find_resume_checkpoint

    def slow_lookup(*args, **kwargs):
        clock[0] += 1200
        return real(*args, **kwargs)

    monkeypatch.setattr(submit_mod, "find_resume_checkpoint", slow_lookup)
    second: list[object] = []

    def during() -> None:
        monkeypatch.setattr(submit_mod, "find_resume_checkpoint", real)
        try:
            second.append(cli_submit(ctx, slurm, clock[0]))
        except RecipeSubmitUnderWay as exc:
            second.append(exc)

    slurm.during[0] = during
    cli_submit(ctx, slurm, NOW)
    assert len(slurm.submits()) == 1 and isinstance(second[0], RecipeSubmitUnderWay)


def test_one_submit_ending_does_not_end_another_submits_claim_of_the_same_process(
        store: Store) -> None:
    """Three `trainbot submit mix` in one process: the first's sbatch outlasts its claim's
    hold, the second takes the claim over and is at its sbatch when the first ends; the third
    is refused (the first's end released the claim, the second's too: one holder per process,
    and the third queued beside the second)."""
    clock = [NOW]
    slurm = Sbatch()
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    at_sbatch, go = threading.Event(), threading.Event()
    second: list[object] = []

    def second_submit() -> None:
        second.append(cli_submit(ctx, slurm, clock[0]))

    def first_outlasts_its_hold() -> None:
        clock[0] += 3600
        threading.Thread(target=second_submit).start()
        assert at_sbatch.wait(30)

    def second_at_sbatch() -> None:
        at_sbatch.set()
        assert go.wait(30)

    slurm.during = {0: first_outlasts_its_hold, 1: second_at_sbatch}
    cli_submit(ctx, slurm, NOW)
    try:
        with pytest.raises(RecipeSubmitUnderWay):
            cli_submit(ctx, slurm, clock[0] + 1)
    finally:
        go.set()
    for _ in range(300):
        if second:
            break
        threading.Event().wait(0.1)
    assert len(slurm.submits()) == 2 and len(second) == 1


# -- 3. a cancel and resume is refused before its scancel --------------------------------------

def test_a_cancel_and_resume_while_a_new_run_is_submitted_cancels_nothing(
        store: Store) -> None:
    """Cancel and resume of the stalled 88154 pressed while another replica's submit of a new
    run of `mix` holds its claim: refused before the scancel (88154 runs on, the prompt stays);
    it was cancelled, then its resubmit refused, and nothing resumed the run."""
    slurm = FakeSlurm(first_id=90500)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    _, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    store.command_claims.claim(claim_key("mix"), "other-replica:4242:ab:-:-:-", NOW, 300)
    click = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW + 1)
    assert click.status == "busy"
    assert click.ephemeral == (
        "Nothing was cancelled or resubmitted: not submitted: another submit of mix is under "
        "way and its job is not recorded yet; two jobs of a recipe side by side would write "
        "the same checkpoints. `/train status mix` shows its job once it is queued. This "
        "prompt stays as it is: if that submit queues no job, press its button again.")
    assert slurm.acted("cancel") == [] and slurm.records[88154].state == "RUNNING"
    assert present(store.approvals.get(prompt.token)).state == "pending"


def test_a_cancel_and_resume_after_a_slow_squeue_holds_the_run_through_its_scancel(
        store: Store, monkeypatch) -> None:
    """Cancel and resume of the stalled 88154: its squeue takes an hour (longer than the
    claim's hold) and during its scancel `trainbot submit mix` of a new run is made: refused
    (the click's claim counts its hold from when it is taken), and the click resumes the run
    (it counted from the click, was lapsed at once: the new run queued, 88154 was cancelled
    and nothing resumed it)."""
    clock = [NOW]
    slurm = Sbatch()
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    chain_id, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    job, cancel = slurm.job, slurm.cancel
    typed: list[object] = []

    def slow_squeue(job_id: int):
        clock[0] += 3600
        return job(job_id)

    def submit_during_scancel(job_id: int) -> None:
        cancel(job_id)
        try:
            typed.append(cli_submit(ctx, slurm, clock[0]))
        except RecipeSubmitUnderWay as exc:
            typed.append(exc)

    monkeypatch.setattr(slurm, "job", slow_squeue)
    monkeypatch.setattr(slurm, "cancel", submit_during_scancel)
    click = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW)
    assert click.status == "done" and click.job_id == "90500"
    assert len(typed) == 1 and isinstance(typed[0], RecipeSubmitUnderWay)
    assert len(slurm.submits()) == 1
    assert [a.job_id for a in store.attempts.for_chain(chain_id)] == ["88154", "90500"]


def test_a_cancel_and_resume_whose_claim_is_taken_before_its_scancel_cancels_nothing(
        store: Store, monkeypatch) -> None:
    """Cancel and resume of the stalled 88154: after it claimed the run's resubmit and before
    its scancel, its store writes stall an hour and `trainbot submit mix` of a new run takes
    the recipe (its sbatch's answer lost: it keeps its claim). No scancel is sent, 88154 is
    watched again and the prompt stays (its scancel was sent, and the run not resumed)."""
    clock = [NOW]
    slurm = Sbatch(lost=True)
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    _, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    remove = store.watched_jobs.remove

    def stalled_then_taken(cluster: str, job: str) -> None:
        remove(cluster, job)
        clock[0] += 3600
        with pytest.raises(OutcomeUnknown):
            cli_submit(ctx, slurm, clock[0])

    monkeypatch.setattr(store.watched_jobs, "remove", stalled_then_taken)
    click = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW)
    assert click.status == "busy"
    assert click.ephemeral is not None and click.ephemeral.startswith(
        "Nothing was cancelled or resubmitted: not submitted: another submit of mix is under "
        "way")
    assert slurm.acted("cancel") == [] and slurm.records[88154].state == "RUNNING"
    assert [w.job_id for w in store.watched_jobs.list("dev")] == ["88154"]
    assert present(store.approvals.get(prompt.token)).state == "pending"
    assert store.approvals.steps(prompt.token) == {}


def test_a_cancel_and_resume_whose_claim_is_lost_releases_the_prompt_once(
        store: Store, monkeypatch) -> None:
    """As above, and a click on another replica claims the prompt right after it is released:
    that claim is kept (the prompt was released a second time, the other click's claim and
    its step wiped while it acted, and a third click accepted)."""
    clock = [NOW]
    slurm = Sbatch(lost=True)
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    _, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    remove, release = store.watched_jobs.remove, store.approvals.release
    other: list[object] = []

    def stalled_then_taken(cluster: str, job: str) -> None:
        remove(cluster, job)
        clock[0] += 3600
        with pytest.raises(OutcomeUnknown):
            cli_submit(ctx, slurm, clock[0])

    def released_then_claimed(token: str, **kw) -> bool:
        done = release(token, **kw)
        if done and not other:  # another replica's click lands right here
            other.append(store.approvals.claim(token, "U0BOB", NOW + 1, step="claimed"))
        return done

    monkeypatch.setattr(store.watched_jobs, "remove", stalled_then_taken)
    monkeypatch.setattr(store.approvals, "release", released_then_claimed)
    click = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW)
    assert click.status == "busy" and slurm.acted("cancel") == []
    assert other and getattr(other[0], "claimed", False)
    after = present(store.approvals.get(prompt.token))
    assert (after.state, after.decided_by) == ("approved", "U0BOB")
    assert list(store.approvals.steps(prompt.token)) == ["claimed"]
    assert not store.approvals.claim(prompt.token, "U0CAROL", NOW + 2, step="claimed").claimed


def test_a_cancel_and_resume_whose_cancel_the_settle_took_over_leaves_it_to_the_settle(
        store: Store, monkeypatch) -> None:
    """As above, and the click stalls past its cancel's takeover: another replica's settle
    marks it `cancel_unknown` before the click finds its claim lost. The prompt stays
    approved, the settle's (released, it went back to pending keeping `cancel_unknown`, and
    the next press's live click was settled as an unknown cancel: resubmitted by the settle,
    with a false failure); the clicker is told the settle carries it on."""
    clock = [NOW]
    slurm = Sbatch(lost=True)
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    _, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    remove = store.watched_jobs.remove

    def stalled_taken_over_then_taken(cluster: str, job: str) -> None:
        remove(cluster, job)
        clock[0] += 3600
        # another replica's settle takes the cancel over (its settle comes at its next run)
        cancel_settle._cancel_unseen(ctx, present(store.approvals.get(prompt.token)), clock[0])
        with pytest.raises(OutcomeUnknown):
            cli_submit(ctx, slurm, clock[0])

    monkeypatch.setattr(store.watched_jobs, "remove", stalled_taken_over_then_taken)
    click = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW)
    monkeypatch.setattr(store.watched_jobs, "remove", remove)
    assert click.status == "busy" and slurm.acted("cancel") == []
    assert click.ephemeral is not None and "took its cancel of job 88154 over" in click.ephemeral
    assert "press its button again" not in click.ephemeral
    after = present(store.approvals.get(prompt.token))
    assert (after.state, after.decided_by) == ("approved", "U0APPR")
    assert "cancel_unknown" in store.approvals.steps(prompt.token)
    assert not store.approvals.claim(prompt.token, "U0APPR", clock[0], step="claimed").claimed
    clock[0] += 3600  # the settle finds 88154 still running: nothing cancelled or resubmitted
    cancel_settle.settle_unknown_cancels(ctx, clock[0])
    assert present(store.approvals.get(prompt.token)).state == "done"
    assert slurm.acted("cancel") == [] and len(slurm.submits()) == 1
    assert [w.job_id for w in store.watched_jobs.list("dev")] == ["88154"]


def test_a_cancel_and_resume_whose_claim_lapses_in_its_scancel_says_so(
        store: Store, monkeypatch) -> None:
    """Cancel and resume of the stalled 88154: its scancel takes an hour (longer than the
    claim's hold) and meanwhile `trainbot submit mix` of a new run takes the recipe (its
    sbatch's answer lost: it keeps its claim). 88154 is cancelled once, nothing is
    resubmitted, and the prompt says the scancel outlasted the click's hold and another
    submit took the run (it said only that another submit was under way)."""
    clock = [NOW]
    slurm = Sbatch(lost=True)
    ctx = make_context(store, slurm, clock=lambda: clock[0])
    _, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    cancel = slurm.cancel

    def slow_scancel(job_id: int) -> None:
        cancel(job_id)
        clock[0] += 3600
        with pytest.raises(OutcomeUnknown):
            cli_submit(ctx, slurm, clock[0])

    monkeypatch.setattr(slurm, "cancel", slow_scancel)
    click = handle_click(ctx, prompt.token, ActionId.CANCEL_RESUME, "U0APPR", NOW)
    assert click.status == "failed"
    assert slurm.acted("cancel") == [88154] and len(slurm.submits()) == 1
    assert click.update_text == (
        "Approved by <@U0APPR>, but it failed: cancelled job 88154, but the resubmit failed: "
        "the scancel outlasted this click's hold on the run, and another submit took the run "
        "meanwhile (not submitted: another submit of mix is under way and its job is not "
        "recorded yet; two jobs of a recipe side by side would write the same checkpoints. "
        "`/train status mix` shows its job once it is queued). `/train resume mix` tries "
        "again")


# -- 4. the refusal names the submit that holds the claim ---------------------------------------

def test_a_refusal_names_the_submit_holding_the_claim_not_the_newest_in_flight(
        store: Store) -> None:
    """Alice's `/train submit mix` (a new run) holds the claim at its sbatch; the approver's
    Resubmit of 88154 has just put its row in flight (sent a minute later) and has not
    claimed yet; `trainbot submit mix` is refused naming Alice's new run, which holds the
    claim, not the approver's resubmit, the newest in flight."""
    slurm = Sbatch()
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain_id, _ = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False)
    refused: list[str] = []

    def during() -> None:
        store.submits_in_flight.add(
            cluster="dev", recipe="mix", job_name="mix", chain_id=chain_id, array_task=None,
            resumed_at=None, charge_retry=False, actor="U0APPR", channel="C0TRAIN",
            sent_at=NOW + 60)
        with pytest.raises(RecipeSubmitUnderWay) as exc:
            cli_submit(ctx, slurm, NOW + 61)
        refused.append(str(exc.value))

    slurm.during[0] = during
    reply = execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN",
                    now=NOW)
    assert reply.job_id == "90500" and len(slurm.submits()) == 1
    assert refused == [
        "not submitted: <@U0ALICE>'s submit of a new run of mix was sent at 13:46 UTC and its "
        "job is not recorded yet; two jobs of a recipe side by side would write the same "
        "checkpoints. The new run's thread tells which job it is"]


def test_of_two_crossing_claims_taken_at_once_by_two_replicas_exactly_one_is_kept(
        replica_stores) -> None:
    """A `/train submit` of a new run (`submit:mix/`) and a Resubmit of run 1
    (`submit:mix/run:1/`) on two replicas at the same instant, many times: every time one is
    kept and the other refused. Claiming, then looking at the others in a second
    transaction, refused both on PostgreSQL most of the time (each saw the other's claim):
    nothing was queued, and each refusal named a submit never sent."""
    from bot.services.submit_claim import claim_submit, release_submit, submit_holder

    rounds, barrier = 40, threading.Barrier(2, timeout=60)
    kept: list[list[bool]] = [[False, False] for _ in range(rounds)]
    errors: list[BaseException] = []

    def replica(index: int, store: Store) -> None:
        chain = None if index == 0 else 1
        try:
            for n in range(rounds):
                holder = submit_holder()
                barrier.wait()
                refused = claim_submit(store, "mix", chain, None, holder=holder, own=None,
                                       now=NOW + n, hold_s=300, clusters=["dev"])
                kept[n][index] = refused is None
                barrier.wait()  # both decided
                release_submit(store, claim_key("mix", chain), holder)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=replica, args=(i, s)) for i, s in enumerate(replica_stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    assert [n for n, pair in enumerate(kept) if sum(pair) != 1] == []


# -- 5. a submit kept in flight stands against every submit crossing it --------------------------

@pytest.fixture
def any_store(store_url):
    """The store on SQLite and on the dev cluster's PostgreSQL (`store_url`)."""
    with Store.open(store_url) as s:
        yield s


def kept(ctx, slurm: AnswerLostSlurm, command, actor: str) -> None:
    """`command` typed by `actor` at NOW: its sbatch's answer is lost and its job is not in
    Slurm (yet) when looked up by name, so its row in flight is kept until its recovery at
    14:07 UTC (an overloaded controller may still queue it)."""
    reply = execute(ctx, command, actor=actor, channel="C0TRAIN", now=NOW)
    assert "14:07 UTC" in reply.text, reply.text
    assert len(ctx.store.submits_in_flight.of_recipe("mix")) == 1


def later(store: Store, how: str) -> float:
    """When the crossing submit comes: once the kept submit's claim has lapsed (its hold is
    its sbatch's and lookup's bounds), or at once after a restart (its claim, held by the dead
    bot, taken over by the next)."""
    if how == "restarted":
        with store.engine.begin() as conn:
            conn.execute(delete(t.command_claims)
                         .where(t.command_claims.c.key.startswith("submit:")))
        return NOW + 5
    assert store.command_claims.held_around(claim_key("mix"), [], NOW + 900) == []
    return NOW + 900


RESUME_KEPT = (
    "`submit` failed: not submitted: <@U0OWNER>'s resubmit of mix's run of job 88154 was sent at "
    "13:46 UTC and its job is not recorded yet; two jobs of a recipe side by side would write "
    "the same checkpoints. That run's thread tells which job it is. If its job is not recorded "
    "by 14:07 UTC, trainbot looks it up by its name then and records it if it is queued; until "
    "then no submit that would run beside it is sent")


@pytest.mark.parametrize("how", ["claim_lapsed", "restarted"])
def test_a_new_run_while_a_resume_is_kept_in_flight_is_refused_naming_it(
        any_store: Store, how: str) -> None:
    """The owner's `/train resume mix` lost its sbatch's answer and its job is not in Slurm
    yet: its row in flight is kept until its recovery looks it up. Alice's `/train submit
    mix` (a new run, whose key is above the resume's) once the resume's claim has lapsed, or
    right after a restart, is refused naming the owner's resume and when it is looked up
    (the row stood only against a submit of its own key: a second job of mix was queued,
    beside the resume's once the controller took it in)."""
    slurm = AnswerLostSlurm(queue=False)
    ctx = make_context(any_store, slurm, clock=lambda: NOW)
    failed_run(ctx, now=NOW, channel="C0TRAIN")
    kept(ctx, slurm, c.Resume("mix"), "U0OWNER")
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN",
                    now=later(any_store, how))
    assert reply.text == RESUME_KEPT
    assert len(slurm.submits()) == 1 and slurm.land() == [90500]


def test_a_resume_while_a_new_run_is_kept_in_flight_is_refused_naming_it_in_korean(
        any_store: Store) -> None:
    """Alice's `/train submit mix` (a new run) lost its sbatch's answer and is kept in flight;
    the owner's `/train resume mix` of the older run (below the new run's key) once its claim
    has lapsed is refused naming Alice's new run and when it is looked up, in Korean."""
    slurm = AnswerLostSlurm(queue=False)
    ctx = make_context(any_store, slurm, clock=lambda: NOW, slack_lang="ko")
    failed_run(ctx, now=NOW, channel="C0TRAIN")
    kept(ctx, slurm, c.Submit("mix"), "U0ALICE")
    reply = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel="C0TRAIN",
                    now=later(any_store, "claim_lapsed"))
    assert ("제출하지 않았습니다: <@U0ALICE>님의 mix 새 실행 제출이 13:46 UTC에 "
            "보내졌고 아직 그 작업이 기록되지 않았습니다. 한 레시피의 작업 두 개가 "
            "나란히 실행되면 같은 체크포인트에 쓰게 됩니다. 어떤 작업인지는 새 "
            "실행의 스레드가 알려 줍니다. 14:07 UTC까지 그 작업이 기록되지 않으면 "
            "trainbot이 그때 이름으로 찾아보고, 대기열에 있으면 기록합니다. "
            "그때까지 그 옆에서 실행될 제출은 보내지 않습니다") in reply.text, reply.text
    assert len(slurm.submits()) == 1


def test_a_tasks_submit_while_its_whole_run_is_kept_in_flight_is_refused(
        any_store: Store) -> None:
    """A submit of a run kept in flight, its claim long lapsed: a resubmit of one task of that
    run (below it) is refused by the row, and so is a new run (above it); another run's
    (beside it) goes."""
    from bot.services.submit_claim import claim_submit, submit_holder

    run, other = (any_store.chains.create(recipe="mix", cluster="dev", job_name="mix",
                                          now=NOW - 100).id for _ in range(2))
    bob = any_store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=run, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0OWNER", channel="C0TRAIN",
        sent_at=NOW).flight
    for chain, task in [(run, 3), (None, None)]:
        refused = claim_submit(any_store, "mix", chain, task, holder=submit_holder(),
                               own=None, now=NOW + 900, hold_s=300, clusters=["dev"])
        assert refused is not None and refused.other == bob and refused.kept
    assert claim_submit(any_store, "mix", other, None, holder=submit_holder(), own=None,
                        now=NOW + 900, hold_s=300, clusters=["dev"]) is None


def kept_on_old(store: Store, chain_id: int | None) -> int:
    """A submit of mix into run `chain_id` (a new run: None) kept in flight on cluster `old`,
    since taken out of the config (mix moved to `dev`): its claim long lapsed."""
    return store.submits_in_flight.add(
        cluster="old", recipe="mix", job_name="mix", chain_id=chain_id, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0OWNER", channel="C0TRAIN",
        sent_at=NOW - 60).flight.id


def test_a_row_kept_on_a_cluster_no_longer_configured_refuses_its_own_key_alone(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """Its recovery visits the configured clusters only, so a row kept on `old` stays until
    `old` is configured again (warned of once): a kept resume of an old run refused every
    new run of mix meanwhile, a kept new run every resubmit of mix's runs (the watcher's
    too), for ever. Such a row stands against its own key alone, and a submit of that key is
    told the row is on a cluster no longer configured."""
    from bot.services.runs import recover_submits_in_flight
    from bot.services.submit_claim import claim_submit, submit_holder

    slurm = FakeSlurm()
    ctx = make_context(store, slurm, clock=lambda: NOW)
    run = failed_run(ctx, now=NOW, channel="C0TRAIN")
    old = store.chains.create(recipe="mix", cluster="old", job_name="mix", now=NOW - 100).id
    kept_on_old(store, old)
    new_run = kept_on_old(store, None)
    later = NOW + 30 * 86_400.0
    with caplog.at_level("DEBUG", logger="bot.services.runs"):
        for tick in range(2):
            recover_submits_in_flight(ctx, later + tick, after_submit=lambda *a, **k: None)
    assert len(store.submits_in_flight.of_recipe("mix")) == 2
    gone = [r for r in caplog.records if "cluster old, which is no longer configured" in
            r.getMessage()]
    # warned of once per row, then at debug only: not at info on every recovery tick
    assert [r.levelname for r in gone] == ["WARNING", "WARNING", "DEBUG", "DEBUG"]
    assert "it refuses every new run of mix" in gone[1].getMessage()
    # a resubmit of mix's run on dev, the watcher's or a person's, and the old run's other
    # tasks go; a resume of the old run, or a new run, is refused by its row
    for chain in (run, store.chains.create(recipe="mix", cluster="dev", job_name="mix",
                                           now=later).id):
        assert claim_submit(store, "mix", chain, None, holder=submit_holder(), own=None,
                            now=later, hold_s=300, clusters=ctx.config.clusters) is None
    assert claim_submit(store, "mix", old, 2, holder=submit_holder(), own=None, now=later,
                        hold_s=300, clusters=ctx.config.clusters) is None
    refused = claim_submit(store, "mix", old, None, holder=submit_holder(), own=None,
                           now=later, hold_s=300, clusters=ctx.config.clusters)
    assert refused is not None and refused.other is not None and refused.other.chain_id == old
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN", now=later)
    assert reply.text == (
        "`submit` failed: not submitted: <@U0OWNER>'s submit of a new run of mix was sent at "
        "1970-01-12 13:45 UTC and its job is not recorded yet; two jobs of a recipe side by "
        "side would write the same checkpoints. The new run's thread tells which job it is. It "
        "was sent to cluster `old`, which is no longer configured: trainbot looks its job up "
        "only once that cluster is configured again"), reply.text
    assert slurm.submits() == []
    # once the kept new run is gone (and the claims above lapsed), a new run goes beside the
    # old run's kept resume
    assert store.submits_in_flight.remove(new_run)
    assert claim_submit(store, "mix", None, None, holder=submit_holder(), own=None,
                        now=later + 900, hold_s=300, clusters=ctx.config.clusters) is None


def test_click_of_reads_the_holders_the_previous_version_wrote_as_a_submits_own() -> None:
    """Claims a previous trainbot wrote stay a submit's own (no click named): its 6-part
    holder with `rand.hex`, its 3-part `host:pid:rand.hex`, and a plain submit holder; a Cancel
    and resume's holder names its approval token."""
    old = process_holder().split(":")
    assert len(old) == 6
    old[2] += ".deadbeef"
    assert click_of(":".join(old)) is None
    assert click_of("host:123:abcd.beef") is None
    assert click_of(submit_holder()) is None
    assert click_of(submit_holder("ldxHK5qd-c3KO_vjuSkmIaiw")) == "ldxHK5qd-c3KO_vjuSkmIaiw"
    assert click_of("host:123:abcd.beef@tok") == "tok"
    assert click_of("host:123:abcd.beef@") is None


def cancel_and_resume_kept(store: Store, chain_id: int, *, sent_at: float) -> str:
    """The lead's Cancel and resume of mix's run, approved (its settle has not recorded its
    end), whose resubmit is kept in flight since `sent_at`: its claim long lapsed. Its
    approval's token."""
    from bot.services.submit_deadlines import approval_intent

    token = store.approvals.create(action="cancel_resume", payload={"cluster": "dev"},
                                   allowed=["U0LEAD"], expires_at=NOW + 86_400.0,
                                   now=NOW - 60, target_job="88154", chain_id=chain_id)
    assert store.approvals.claim(token, "U0LEAD", NOW - 50, step="claimed").claimed
    store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=chain_id, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0LEAD", channel="C0TRAIN",
        sent_at=sent_at, intent=approval_intent(token))
    return token


def test_a_refusal_by_a_kept_cancel_and_resume_says_when_its_settle_leaves_it(
        any_store: Store) -> None:
    """A Cancel and resume's resubmit kept in flight, its approval still approved, is left to
    its settle for the settle's lead (settle_lead_s: 7079 s with the default deadlines), not
    the plain in-flight bound: a new run refused by it is told 15:44 UTC (NOW + 7079 s), not
    14:07 UTC, when recovery would not look it up yet."""
    from bot.core.takeover import RemoteDeadlines, settle_lead_s

    ctx = make_context(any_store, FakeSlurm(), clock=lambda: NOW + 900)
    run = failed_run(ctx, now=NOW, channel="C0TRAIN")
    cancel_and_resume_kept(any_store, run, sent_at=NOW)
    assert settle_lead_s(RemoteDeadlines(),
                         post_deadline_s=ctx.config.slack.post_deadline_s) == 7079.0
    reply = execute(ctx, c.Submit("mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW + 900)
    assert reply.text == (
        "`submit` failed: not submitted: <@U0LEAD>'s resubmit of mix's run of job 88154 was "
        "sent at 13:46 UTC and its job is not recorded yet; two jobs of a recipe side by side "
        "would write the same checkpoints. That run's thread tells which job it is. If its job "
        "is not recorded by 15:44 UTC, trainbot looks it up by its name then and records it "
        "if it is queued; until then no submit that would run beside it is sent"), reply.text
