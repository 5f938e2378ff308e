"""A hold trainbot keeps of a competing job for several runs, handed from one run's hold to
another's as the first lets go (store.approvals.pass_hold, bot.services.competitors): never to
a hold that may yet end with nothing to release, so the job is never left held with no hold
in the ledger; and none taken out of the ledger by a person's `/train hold` as trainbot lets
go of it is released. Real store, on SQLite and on PostgreSQL (`store_url`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fakes import FakeSlurm, recorded
from support import store_backends
from support.hold_prompts import NOW, hold_for

from bot.cluster.errors import ClusterUnavailable, CommandFailed
from bot.core.train_grammar import parse_command
from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.train import execute

# The real store on both backends and the context over it and `slurm`, the HookedHolds below.
store, ctx = store_backends.store, store_backends.ctx


class HookedHolds(FakeSlurm):
    """FakeSlurm whose next `scontrol hold`s each run a hook (`during_holds`, in order) while
    they are on their way; a hold with a hook lands only as the hook makes it (`land`)."""

    def __init__(self) -> None:
        super().__init__()
        self.during_holds: list[Callable[[], object]] = []

    def hold(self, job_id: int) -> None:
        if not self.during_holds:
            super().hold(job_id)
            return
        self._call("hold", job_id)
        self.during_holds.pop(0)()

    def land(self, job_id: int) -> None:
        self.set(job_id, reason="JobHeldUser", priority=0)


@pytest.fixture
def slurm() -> HookedHolds:
    return HookedHolds()


def two_runs_ask_to_hold_88017(ctx: BotContext, slurm: FakeSlurm) -> tuple[str, str]:
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    return hold_for(ctx, slurm, 88017, 88887), hold_for(ctx, slurm, 88017, 88999)


@pytest.mark.parametrize("b_hold", ["lands_before", "lands_after", "fails"])
def test_a_hold_let_go_while_another_runs_hold_is_on_its_way_is_handed_to_it(
        ctx: BotContext, slurm: HookedHolds, b_hold: str) -> None:
    """A's yes and B's yes both read 88017 waiting and send their holds. A's lands and A's
    job starts while B's `scontrol hold` is on its way: B's hold may already have landed in
    Slurm (`lands_before`) without B having marked it over, so a release now would undo it
    while B's thread says "held". A's hold is handed to B's instead (88017 stays held, for
    B): B's hold landing before or after, or failing (B keeps the hold it was handed), B says
    held, and releases 88017 when 88999 starts. Never released under a thread saying held,
    never held with no hold of trainbot's to release it."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    answers: dict[str, str | None] = {}

    def b_says_yes() -> None:
        answers["b"] = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR",
                                    NOW + 1).update_text

    def as_bs_hold_is_sent() -> None:
        slurm.land(88017)  # A's hold lands (and B's, `lands_before`: one Slurm hold)
        slurm.set(88887, state="RUNNING")
        assert competitors.release_started(ctx, NOW + 1) == []
        if b_hold == "fails":
            raise ClusterUnavailable("ssh: connect to host: Connection refused")
        slurm.land(88017)

    slurm.during_holds = [b_says_yes, as_bs_hold_is_sent]
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert slurm.acted("release") == []
    said = recorded(ctx).texts()
    assert ("88887 no longer needs 88017 held, but trainbot also holds it for 88999, which "
            "still waits: 88017 stays held until 88999 no longer needs it.") in said
    assert not any(text.startswith("Released") for text in said)
    assert answers["b"] == "Approved by <@U0APPR>: held 88017 until 88999 starts"
    assert [a.payload["for_job"] for a in competitors.held_now(ctx)] == ["88999"]
    assert slurm.records[88017].is_held
    slurm.set(88999, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 2) == [88017]
    assert not slurm.records[88017].is_held
    assert "Released 88017: 88999 is running." in recorded(ctx).texts()


def test_a_hold_handed_a_job_as_its_own_is_landing_waits_for_its_own_before_a_release(
        ctx: BotContext, slurm: HookedHolds) -> None:
    """A's hold of 88017 is handed to B's (88887 started) while B's `scontrol hold` is on its
    way, then 88999 is cancelled: 88017 held (by the hold B was handed) says nothing of B's
    own hold, which may land after a release sent now. B's release waits for it, and is sent
    by B's yes once it has landed: 88017 ends released, with no hold left in the ledger."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88017, reason="Priority", priority=100)  # as if B's read came before A's hold

    def as_bs_hold_is_sent() -> None:
        slurm.land(88017)  # A's hold
        slurm.set(88887, state="RUNNING")
        assert competitors.release_started(ctx, NOW + 2) == []  # handed to B
        slurm.set(88999, state="CANCELLED")
        assert competitors.release_held_for(ctx, 88999, NOW + 2, "cancelled", "dev") == []
        assert slurm.acted("release") == []
        slurm.land(88017)  # B's hold lands

    slurm.during_holds = [as_bs_hold_is_sent]
    answer = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    assert answer.update_text is not None and "released" in answer.update_text
    assert slurm.acted("release") == [88017]
    assert competitors.held_now(ctx) == []
    assert not slurm.records[88017].is_held


@pytest.mark.parametrize("as_b_is_marked", [competitors.HOLDING_STEP,
                                            competitors.HOLD_ENDED_STEP])
def test_a_hold_let_go_while_another_is_taken_before_its_hold_releases_the_job(
        ctx: BotContext, slurm: HookedHolds, monkeypatch: pytest.MonkeyPatch,
        as_b_is_marked: str) -> None:
    """B's yes is claimed, its hold not sent yet, when 88999 is cancelled: that release takes
    B's `holding` step first and closes B with nothing held. A replica letting go of A's hold
    (88887 started) at any point of that (as B's `holding` or `hold_ended` step is marked)
    never hands the job to B, closed with nothing to release: it releases 88017."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    approvals = ctx.store.approvals
    assert approvals.claim(token_b, "U0APPR", NOW + 2,
                           step=competitors.HOLD_APPROVED_STEP).claimed
    slurm.set(88887, state="RUNNING")
    mark_step = approvals.mark_step
    other_replica: list[list[int]] = []

    def mark_then_let_go_of_a(token: str, step: str, **kw: Any) -> bool | None:
        marked = mark_step(token, step, **kw)
        if token == token_b and step == as_b_is_marked:
            other_replica.append(competitors.release_held_for(
                ctx, 88887, NOW + 3, "running", "dev", "RUNNING"))
        return marked

    monkeypatch.setattr(approvals, "mark_step", mark_then_let_go_of_a)
    assert competitors.release_held_for(ctx, 88999, NOW + 3, "cancelled", "dev") == []
    monkeypatch.undo()
    assert other_replica == [[88017]]
    assert slurm.acted("release") == [88017]
    assert competitors.held_now(ctx) == []
    assert not slurm.records[88017].is_held


@pytest.mark.parametrize("a_lets_go", ["before", "after"])
def test_a_hold_let_go_as_another_runs_failed_hold_is_closed_never_leaves_it_unowned(
        ctx: BotContext, slurm: HookedHolds, monkeypatch: pytest.MonkeyPatch,
        a_lets_go: str) -> None:
    """B's hold failed: a replica lets go of A's hold (88887 started) just before B is closed
    (B's hold still landing: A's is handed to it, and B, closing, keeps it: held for 88999,
    and B says so) or just after (B closed with nothing to release: A's hold is not handed
    to it, and 88017 is released). Either way 88017 is held exactly when a hold of the ledger
    keeps it."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    approvals = ctx.store.approvals
    end_failed_hold = approvals.end_failed_hold
    other_replica: list[list[int]] = []
    answers: dict[str, str | None] = {}

    def a_let_go() -> None:
        slurm.set(88887, state="RUNNING")
        other_replica.append(competitors.release_held_for(
            ctx, 88887, NOW + 2, "running", "dev", "RUNNING"))

    def close_b(token: str, **kw: Any) -> bool:
        if token == token_b and a_lets_go == "before" and "handed_held" not in kw:
            a_let_go()
        closed = end_failed_hold(token, **kw)
        if token == token_b and a_lets_go == "after":
            a_let_go()
        return closed

    def bs_hold_fails() -> None:
        slurm.land(88017)  # A's hold lands
        monkeypatch.setattr(approvals, "end_failed_hold", close_b)
        raise ClusterUnavailable("ssh: connect to host: Connection refused")

    def b_says_yes() -> None:
        answers["b"] = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR",
                                    NOW + 1).update_text

    slurm.during_holds = [b_says_yes, bs_hold_fails]
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    monkeypatch.undo()
    if a_lets_go == "after":
        assert other_replica == [[88017]]
        assert answers["b"] == ("Approved by <@U0APPR>: holding 88017 failed: ssh: connect "
                                "to host: Connection refused")
        assert competitors.held_now(ctx) == []
        assert not slurm.records[88017].is_held
        return
    assert other_replica == [[]]
    assert answers["b"] == "Approved by <@U0APPR>: held 88017 until 88999 starts"
    assert [a.token for a in competitors.held_now(ctx)] == [token_b]
    assert slurm.records[88017].is_held
    slurm.set(88999, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 3) == [88017]
    assert not slurm.records[88017].is_held


def test_a_persons_hold_landing_as_trainbot_lets_go_of_its_hold_is_not_released(
        ctx: BotContext, slurm: HookedHolds, monkeypatch: pytest.MonkeyPatch) -> None:
    """88887 starts; the tick claims the release of trainbot's hold of 88017, and a person's
    `/train hold 88017` takes it out of the ledger before trainbot lets go of it: it is
    theirs, so no `scontrol release` is sent (it would drop their hold)."""
    token_a, _ = two_runs_ask_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")

    def person_holds(name: str, detail: str = "") -> None:
        if name == "hold_release_claimed":
            execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                    now=NOW + 2)

    monkeypatch.setattr(competitors, "crashpoint", person_holds)
    assert competitors.release_started(ctx, NOW + 2) == []
    assert slurm.acted("release") == []
    assert slurm.records[88017].is_held
    assert competitors.held_now(ctx) == []
    said = recorded(ctx).texts()
    assert ("<@U0APPR> held 88017 with `/train hold`: it is their hold now, and trainbot no "
            "longer releases it when 88887 starts.") in said
    assert not any("no longer held" in text or text.startswith("Released") for text in said)


def test_two_runs_sharing_a_hold_whose_jobs_both_started_by_one_tick_both_say_released(
        ctx: BotContext, slurm: HookedHolds) -> None:
    """88887 and 88999 share trainbot's hold of 88017 and both start before one tick: the
    tick's read shows both running, so 88887's hold is not let go to 88999's (its thread
    would say 88999 "still waits"): each says it is released."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1).update_text \
        == "Approved by <@U0APPR>: held 88017 until 88999 starts"
    slurm.set(88887, state="RUNNING")
    slurm.set(88999, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 2) == [88017]
    said = recorded(ctx).texts()
    assert "Released 88017: 88887 is running." in said
    assert "Released 88017: 88999 is running." in said
    assert not any("still waits" in text for text in said)
    assert competitors.held_now(ctx) == []
    assert not slurm.records[88017].is_held


def test_a_yes_finding_the_job_held_as_another_runs_hold_is_on_its_way_sends_its_own(
        ctx: BotContext, slurm: HookedHolds) -> None:
    """A's `scontrol hold 88017` is on its way when an admin holds 88017 and B says yes: B's
    read shows it held, but A's hold has not landed (it may yet fail), so B does not share
    it: B sends its own. Both are refused (the admin's hold): neither run holds 88017, and
    neither thread says it is held, so trainbot never releases the admin's hold."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    answers: dict[str, str | None] = {}
    refused = CommandFailed(["scontrol", "hold", "88017"], 1,
                            "slurm_suspend error: Access/permission denied")

    def admin_holds_then_b_says_yes() -> None:
        slurm.land(88017)  # the admin's hold
        answers["b"] = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR",
                                    NOW + 1).update_text
        raise refused  # A's hold

    def bs_hold_refused() -> None:
        raise refused

    slurm.during_holds = [admin_holds_then_b_says_yes, bs_hold_refused]
    answer_a = handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert slurm.acted("hold") == [88017, 88017]
    assert answers["b"] is not None and "failed" in answers["b"]
    assert answer_a.update_text is not None and "failed" in answer_a.update_text
    assert competitors.held_now(ctx) == []
    assert slurm.records[88017].is_held


def test_a_hold_let_go_as_another_yes_marks_its_hold_sent_is_handed_to_it(
        ctx: BotContext, slurm: HookedHolds, monkeypatch: pytest.MonkeyPatch) -> None:
    """A's hold landed; B's yes read 88017 waiting before it and marks its hold sent. A
    replica lets go of A's hold (88887 started) right after that write: B's hold is already
    one that may land (`hold_landing` is marked with `holding`), so A's is handed to it, not
    released: no `scontrol release` can reach Slurm after B's hold and leave 88017 unheld
    while B's thread says held."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88017, reason="Priority", priority=100)  # as if B's read came before A's hold
    approvals, late_releases = ctx.store.approvals, list[int]()
    mark_step, release = approvals.mark_step, slurm.release

    def mark_then_let_go_of_a(token: str, step: str, **kw: Any) -> bool | None:
        marked = mark_step(token, step, **kw)
        if token == token_b and step == competitors.HOLDING_STEP:
            slurm.land(88017)  # A's hold
            slurm.set(88887, state="RUNNING")
            monkeypatch.setattr(slurm, "release", late_releases.append)
            competitors.release_started(ctx, NOW + 2)
        return marked

    def bs_hold_lands() -> None:
        slurm.land(88017)
        for job_id in late_releases:  # a release on its way reaches Slurm after B's hold
            release(job_id)

    monkeypatch.setattr(approvals, "mark_step", mark_then_let_go_of_a)
    slurm.during_holds = [bs_hold_lands]
    answer = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    monkeypatch.undo()
    assert late_releases == []
    assert answer.update_text == "Approved by <@U0APPR>: held 88017 until 88999 starts"
    assert [a.token for a in competitors.held_now(ctx)] == [token_b]
    assert slurm.records[88017].is_held


def test_a_hold_seen_over_as_the_job_started_hands_nothing_to_a_hold_still_landing(
        ctx: BotContext, slurm: HookedHolds) -> None:
    """A's and B's yeses both read 88017 waiting and send their holds; 88017 starts before
    either lands, and so does 88887: the tick finds A's hold over (88017 no longer waits), so
    A holds nothing and hands nothing to B's hold on its way. Both holds are refused (no
    longer pending), Slurm then unreachable: B, handed nothing, needs no read to say it
    failed; neither thread says 88017 is held, and no hold of it is left."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    answers: dict[str, str | None] = {}
    refused = CommandFailed(["scontrol", "hold", "88017"], 1,
                            "Job is no longer pending execution")

    def b_says_yes() -> None:
        answers["b"] = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR",
                                    NOW + 1).update_text
        raise refused  # A's hold

    def as_bs_hold_is_sent() -> None:
        slurm.set(88017, state="RUNNING", reason="None")
        slurm.set(88887, state="RUNNING")
        competitors.release_started(ctx, NOW + 1)
        slurm.down = True
        raise refused

    slurm.during_holds = [b_says_yes, as_bs_hold_is_sent]
    answer_a = handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.down = False
    assert answers["b"] == ("Approved by <@U0APPR>: holding 88017 failed: `scontrol hold "
                            "88017` exited 1: Job is no longer pending execution")
    assert answer_a.update_text is not None and "held 88017" not in answer_a.update_text
    assert not any("held" in text for text in recorded(ctx).texts())
    assert competitors.held_now(ctx) == []


@pytest.mark.parametrize("read", ["not_held", "fails"])
def test_a_failed_hold_handed_a_hold_keeps_it_only_while_slurm_shows_the_job_held(
        ctx: BotContext, slurm: HookedHolds, read: str) -> None:
    """A's hold landed and is handed to B's, on its way (88887 started); a person's `/train
    release 88017` then ends A's hold (B's not landed: not theirs to settle), and B's hold
    fails. B reads 88017 again: not held, B is closed as failed, not "held" with nobody
    holding the job; the read failing, B keeps the job among trainbot's holds and says it
    could not tell, and releases it when 88999 starts."""
    token_a, token_b = two_runs_ask_to_hold_88017(ctx, slurm)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88017, reason="Priority", priority=100)  # as if B's read came before A's hold

    def as_bs_hold_is_sent() -> None:
        slurm.land(88017)  # A's hold
        slurm.set(88887, state="RUNNING")
        assert competitors.release_started(ctx, NOW + 2) == []  # handed to B
        execute(ctx, parse_command("release 88017"), actor="U0APPR", channel="C0TRAIN",
                now=NOW + 2)
        assert not slurm.records[88017].is_held
        slurm.down = read == "fails"
        raise ClusterUnavailable("ssh: connect to host: Connection refused")

    slurm.during_holds = [as_bs_hold_is_sent]
    answer = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.down = False
    if read == "not_held":
        assert answer.update_text == ("Approved by <@U0APPR>: holding 88017 failed: ssh: "
                                      "connect to host: Connection refused")
        assert competitors.held_now(ctx) == []
        return
    assert answer.update_text == (
        "Approved by <@U0APPR>: holding 88017 failed (ssh: connect to host: Connection "
        "refused), but another run's hold of 88017 was passed to this one meanwhile, and "
        "whether 88017 is still held could not be read: trainbot keeps it among its holds "
        "and releases it when 88999 no longer needs it, as any hold")
    assert [a.token for a in competitors.held_now(ctx)] == [token_b]
    slurm.set(88999, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 3) == [88017]
    assert competitors.held_now(ctx) == []
