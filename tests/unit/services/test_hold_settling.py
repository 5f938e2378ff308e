"""How a hold trainbot keeps of a competing job ends when a person takes the job over or
trainbot lets go of it (bot.services.hold_ledger, bot.services.competitors): a person's
`/train hold|release` of a whole array settles its tasks' holds; a person's `/train hold`
arriving while trainbot's own release of the job is on its way makes the job theirs, but that
release may still land after it and undo it, which the thread is told (with how to hold the
job again); a yes arriving then is told trainbot is releasing the job. Real store, on SQLite
and on PostgreSQL (`store_url`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes import FakeRunner, FakeSlurm, make_context, recorded
from support import store_backends
from support.hold_prompts import NOW, hold_for

from bot.cluster.errors import CommandTimedOut
from bot.cluster.slurm import SlurmClient
from bot.core.train_grammar import parse_command
from bot.services import competitors
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.threads import say_pending_notes
from bot.services.train import execute
from bot.store import Store

# The real store on both backends, an empty fake Slurm and the context over them.
store, slurm, ctx = store_backends.store, store_backends.slurm, store_backends.ctx
ARRAY, TASK = 88010, 88012  # array 88010: task 1 split off as 88012, the rest waiting as 88010


def array_competitor(slurm: FakeSlurm) -> None:
    slurm.add(ARRAY, name="succ", account="root", partition="debug", priority=100,
              array_job_id=ARRAY)  # the pending remainder 88010_[0,2-3]
    slurm.add(TASK, name="succ", account="root", partition="debug", priority=100,
              array_job_id=ARRAY, array_task_id=1)


@pytest.mark.parametrize("verb", ["hold", "release"])
def test_a_persons_hold_or_release_of_a_whole_array_settles_its_tasks_holds(
        ctx: BotContext, slurm: FakeSlurm, verb: str) -> None:
    """trainbot holds task 88010_1 (raw id 88012) for 88887; `/train hold 88010` (every
    waiting task of the array) makes it the person's hold, and `/train release 88010` ends
    trainbot's: either way 88887 starting releases nothing of trainbot's."""
    array_competitor(slurm)
    token = hold_for(ctx, slurm, TASK)
    assert handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1).update_text \
        == "Approved by <@U0APPR>: held 88012 until 88887 starts"
    execute(ctx, parse_command(f"{verb} {ARRAY}"), actor="U0APPR", channel="C0TRAIN",
            now=NOW + 2)
    assert competitors.held_now(ctx) == []
    said = ("<@U0APPR> held 88012 with `/train hold`: it is their hold now, and trainbot no "
            "longer releases it when 88887 starts." if verb == "hold" else
            "<@U0APPR> released 88012 with `/train release`; trainbot's hold of it for 88887 "
            "is over.")
    assert said in recorded(ctx).texts()
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 3) == []
    assert slurm.acted("release") == ([ARRAY] if verb == "release" else [])
    actions = [(e.action, e.job_id, e.result) for e in ctx.store.audit.recent(100)]
    assert ("competitor.release", str(TASK), "by_person") in actions


def test_a_persons_hold_of_a_whole_array_leaves_a_hold_of_another_job_alone(
        ctx: BotContext, slurm: FakeSlurm) -> None:
    """Only the array's own tasks' holds are settled: a hold of another job stays trainbot's
    and is released when the resumed job starts."""
    array_competitor(slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    execute(ctx, parse_command(f"hold {ARRAY}"), actor="U0APPR", channel="C0TRAIN",
            now=NOW + 2)
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]
    slurm.set(88887, state="RUNNING")
    assert competitors.release_started(ctx, NOW + 3) == [88017]


class SlowReleaseSlurm(FakeSlurm):
    """Slurm whose next `scontrol release` is slow: `meanwhile` runs while it is on its way
    (after trainbot sent it, before it lands), once."""

    def __init__(self) -> None:
        super().__init__()
        self.meanwhile: list[Callable[[], object]] = []

    def release(self, job_id: int) -> None:
        while self.meanwhile:
            self.meanwhile.pop(0)()
        super().release(job_id)


@pytest.fixture
def slow(store: Store) -> SlowReleaseSlurm:
    return SlowReleaseSlurm()


def test_a_yes_arriving_during_trainbots_own_release_is_told_trainbot_is_releasing_it(
        store: Store, slow: SlowReleaseSlurm, lang: str) -> None:
    """Run A's hold of 88017 is being released (88887 started, `scontrol release` on its
    way) when run B's yes on 88017 comes in: Slurm still shows 88017 held, by trainbot's
    hold; the yes holds nothing and says that trainbot is releasing it right now, not that
    someone else holds it."""
    ctx = make_context(store, slow, lang=lang)
    slow.add(88017, name="succ", account="root", partition="debug", priority=100)
    token_a = hold_for(ctx, slow, 88017)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    token_b = hold_for(ctx, slow, 88017, for_job=88999)
    slow.set(88887, state="RUNNING")
    answers = []
    slow.meanwhile.append(lambda: answers.append(handle_click(
        ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)))
    assert competitors.release_started(ctx, NOW + 2) == [88017]
    assert answers[0].update_text == (
        "Out of date: trainbot is releasing 88017 right now (88887 no longer needs it), so "
        "it was not held for 88999; if 88999 still needs it, hold it with `/train hold "
        "88017`." if lang == "en" else
        "지난 요청입니다: trainbot이 지금 작업 88017의 보류를 해제하고 있어(작업 88887에 더 이상 "
        "필요하지 않음) 작업 88999을(를) 위해 보류하지 않았습니다. 작업 88999에 아직 필요하면 "
        "`/train hold 88017`로 보류하세요.")
    assert slow.acted("hold") == [88017]
    assert competitors.held_now(ctx) == []


class TimingOutReleaseSlurm(SlowReleaseSlurm):
    """Slurm whose `scontrol release` runs `meanwhile`, then outlives its timeout without
    having landed yet (it may still be running), as the real client raises it."""

    def release(self, job_id: int) -> None:
        self.calls.append(("release", job_id))
        while self.meanwhile:
            self.meanwhile.pop(0)()
        SlurmClient(FakeRunner({"scontrol": CommandTimedOut(
            ["scontrol", "release", str(job_id)], 20)})).release(job_id)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_release_timing_out_after_a_persons_hold_promises_no_retry(
        store: Store, lang: str) -> None:
    """88887 started and trainbot's `scontrol release 88017` is on its way when a person
    holds 88017 with `/train hold` (the job leaves trainbot's holds: theirs now); the release
    then times out and may still land. trainbot never tries it again, so it says no retry:
    it says the late release may still undo the person's hold, and how to hold it again."""
    slurm = TimingOutReleaseSlurm()
    ctx = make_context(store, slurm, lang=lang)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    slurm.meanwhile.append(lambda: execute(ctx, parse_command("hold 88017"), actor="U0APPR",
                                           channel="C0TRAIN", now=NOW + 2))
    assert competitors.release_started(ctx, NOW + 2) == []
    texts = recorded(ctx).texts()
    assert not any("minutes" in t or "분 뒤" in t for t in texts), texts
    assert texts[-1].startswith("trainbot's release of 88017 (`scontrol release 88017` did "
                                "not answer within 20 s" if lang == "en" else
                                "trainbot의 작업 88017 보류 해제(`scontrol release 88017`")
    assert texts[-1].endswith(
        ") may still land after 88017 was held with `/train hold`, and trainbot does not try "
        "it again: if 88017 is no longer held, hold it again with `/train hold 88017`."
        if lang == "en" else
        ")가 `/train hold`로 보류된 뒤에 적용될 수 있으며, trainbot은 해제를 다시 시도하지 "
        "않습니다. 작업 88017이(가) 더 이상 보류되어 있지 않으면 `/train hold 88017`로 다시 "
        "보류하세요.")
    assert competitors.held_now(ctx) == []
    assert competitors.release_started(ctx, NOW + 100_000) == []
    assert slurm.acted("release") == [88017]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_yes_while_trainbots_failed_release_waits_to_retry_is_told_when(
        store: Store, lang: str) -> None:
    """Run A's release of 88017 (88887 started) was refused and waits to be tried again when
    run B's yes on 88017 comes in: the yes is told that the release waits to be tried again
    and in how long, not that trainbot is releasing the job right now."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token_a = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    token_b = hold_for(ctx, slurm, 88017, for_job=88999)
    slurm.set(88887, state="RUNNING")
    works = slurm.release
    slurm.release = SlurmClient(FakeRunner({"scontrol": (  # type: ignore[method-assign]
        1, "", "slurm_suspend error: Access/permission denied\n")})).release
    assert competitors.release_started(ctx, NOW + 2) == []
    slurm.release = works  # type: ignore[method-assign]
    [held_a] = competitors.held_now(ctx)
    wait = competitors.release_takeover_s(ctx, held_a)
    at = NOW + 2 + wait - 200  # the retry is due in 200 s: about 4 minutes
    answer = handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", at)
    assert answer.update_text == (
        "Out of date: trainbot let go of 88017 for 88887, which no longer needs it, but its "
        "release has not gone through yet and is tried again in about 4 minutes; 88017 was "
        "not held for 88999. If 88999 still needs it, hold it with `/train hold 88017`."
        if lang == "en" else
        "지난 요청입니다: 작업 88887에 더 이상 필요하지 않아 trainbot이 작업 88017의 보류를 "
        "놓았지만, 보류 해제가 아직 이루어지지 않아 약 4분 뒤에 다시 시도합니다. 작업 "
        "88017은(는) 작업 88999을(를) 위해 보류하지 않았습니다. 작업 88999에 아직 필요하면 "
        "`/train hold 88017`로 보류하세요.")
    assert slurm.acted("hold") == [88017]
    assert competitors.release_started(ctx, NOW + 2 + wait) == [88017]


class LandingReleaseSlurm(SlowReleaseSlurm):
    """Slurm whose `scontrol release` runs `meanwhile` then lands, and, `timing_out`, then
    outlives its timeout (its end not seen), or, `hold_after`, runs `meanwhile` only after it
    has landed."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def release(self, job_id: int) -> None:
        if self.mode != "hold_after":
            while self.meanwhile:
                self.meanwhile.pop(0)()
        FakeSlurm.release(self, job_id)
        while self.meanwhile:
            self.meanwhile.pop(0)()
        if self.mode == "timing_out":
            SlurmClient(FakeRunner({"scontrol": CommandTimedOut(
                ["scontrol", "release", str(job_id)], 20)})).release(job_id)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("mode", ["ok", "timing_out", "hold_after"])
def test_a_release_landing_after_a_persons_hold_says_it_released_that_hold_too(
        store: Store, lang: str, mode: str) -> None:
    """88887 started and trainbot's `scontrol release 88017` is on its way when a person
    holds 88017 with `/train hold` (theirs now); the release then lands after their hold
    (its end seen, or, timing out, the job read no longer held after it): their hold is gone
    too, which the thread is told, with how to hold the job again. A release landing before
    their hold (the job read held) leaves it standing: nothing more is said."""
    slurm = LandingReleaseSlurm(mode)
    ctx = make_context(store, slurm, lang=lang)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    slurm.meanwhile.append(lambda: execute(ctx, parse_command("hold 88017"), actor="U0APPR",
                                           channel="C0TRAIN", now=NOW + 2))
    assert competitors.release_started(ctx, NOW + 2) == [88017]
    texts = recorded(ctx).texts()
    assert texts[1].startswith("<@U0APPR> held 88017 with `/train hold`" if lang == "en"
                               else "<@U0APPR>")
    if mode == "hold_after":
        assert (rec := slurm.job(88017)) is not None and rec.is_held
        assert len(texts) == 2, texts
    else:
        assert (rec := slurm.job(88017)) is not None and not rec.is_held
        assert texts[-1] == (
            "88017 is no longer held: trainbot's release of it, on its way when 88017 was held "
            "with `/train hold`, went through and released that hold too. To keep it held, "
            "hold it again with `/train hold 88017`." if lang == "en" else
            "작업 88017은(는) 더 이상 보류되어 있지 않습니다: `/train hold`로 보류될 때 진행 "
            "중이던 trainbot의 보류 해제가 적용되어 그 보류도 해제했습니다. 계속 보류하려면 "
            "`/train hold 88017`로 다시 보류하세요.")
    assert competitors.held_now(ctx) == []
    assert competitors.release_started(ctx, NOW + 100_000) == []
    assert slurm.acted("release") == [88017]


def test_a_persons_hold_settling_a_failing_release_after_its_read_promises_no_retry(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """trainbot's `scontrol release 88017` fails, and a person's `/train hold 88017` takes the
    job out of trainbot's holds just after the failure read the row (still approved): the
    failure is marked only while the row is still approved, in one transaction, so it is
    not marked on the settled row and no retry that never comes is promised."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    failed: list[int] = []

    def failing_release(job_id: int) -> None:
        failed.append(job_id)
        SlurmClient(FakeRunner({"scontrol": (
            1, "", "slurm_suspend error: Access/permission denied\n")})).release(job_id)

    monkeypatch.setattr(slurm, "release", failing_release)
    get = store.approvals.get

    def get_then_person_holds(tok: str) -> object:
        row = get(tok)
        if failed and failed.pop():  # the failure's read of the row, then the person's hold
            execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                    now=NOW + 2)
        return row

    monkeypatch.setattr(store.approvals, "get", get_then_person_holds)
    assert competitors.release_started(ctx, NOW + 2) == []
    texts = recorded(ctx).texts()
    assert texts[-1] == ("<@U0APPR> held 88017 with `/train hold`: it is their hold now, and "
                         "trainbot no longer releases it when 88887 starts."), texts
    assert not any("tries again" in t for t in texts), texts
    assert "release_failed_1" not in store.approvals.steps(token)
    assert competitors.held_now(ctx) == []


class SlowHoldSlurm(FakeSlurm):
    """Slurm whose `scontrol hold` lands, then runs `meanwhile` before it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.meanwhile: list[Callable[[], object]] = []

    def hold(self, job_id: int) -> None:
        super().hold(job_id)
        while self.meanwhile:
            self.meanwhile.pop(0)()


def test_a_yes_whose_hold_raced_a_persons_hold_is_not_told_it_released_the_job(
        store: Store) -> None:
    """A yes's `scontrol hold 88017` is on its way when a person holds 88017 with `/train
    hold` (the job theirs: its row done) and 88887 starts: the yes's answer does not read the
    settled row as released by another run ("held 88017, then released it at once"): 88017
    is still held, by the person."""
    slurm = SlowHoldSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)

    def person() -> None:
        execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                now=NOW + 1)
        slurm.set(88887, state="RUNNING")

    slurm.meanwhile.append(person)
    answer = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1).update_text
    assert answer is not None and "released it at once" not in answer, answer
    assert (rec := slurm.job(88017)) is not None and rec.is_held
    assert "<@U0APPR> held 88017 with `/train hold`: it is their hold now, and trainbot no " \
        "longer releases it when 88887 starts." in recorded(ctx).texts()


class Died(BaseException):
    """The bot's process stopping (not an error anything catches)."""


def test_a_release_whose_bot_stops_before_its_post_is_said_after_all(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """88887 started and trainbot's `scontrol release 88017` went through, its row done (out
    of the hold ledger), when the bot stops as it posts "Released": the reply was kept for
    the thread with the row done, in one transaction, so the `prompts` job of the bot
    started again says it, once; no release is sent again."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    sink = recorded(ctx)
    post_reply = sink.post_reply

    def dies_posting(chain_id: int, key: str, blocks: list, text: str) -> str:
        if key == f"hold-release:{token}":
            raise Died()
        return post_reply(chain_id, key, blocks, text)

    monkeypatch.setattr(sink, "post_reply", dies_posting)
    with pytest.raises(Died):
        competitors.release_started(ctx, NOW + 2)
    monkeypatch.setattr(sink, "post_reply", post_reply)
    assert competitors.held_now(ctx) == []
    later = make_context(store, slurm)  # the bot started again
    assert competitors.release_started(later, NOW + 100_000) == []
    say_pending_notes(later)
    say_pending_notes(later)
    assert recorded(ctx).texts()[1:] + recorded(later).texts() == [
        "Released 88017: 88887 is running."]
    assert slurm.acted("release") == [88017]


def test_a_persons_hold_settling_a_last_release_timing_out_after_its_read_is_warned_of(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """trainbot's last `scontrol release 88017` (two failed before) outlives its timeout,
    and a person's `/train hold 88017` takes the job out of trainbot's holds just after the
    failure read the row (still approved): the row is taken out of the ledger in a write that
    finds it settled, so the thread is warned that the release may still land after their
    hold, not told (under the key their text has) that the release failed."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    for failure in ("release_failed_1", "release_failed_2"):
        store.approvals.mark_step(token, failure, now=NOW + 1)
    slurm.set(88887, state="RUNNING")
    failed: list[int] = []

    def release_timing_out(job_id: int) -> None:
        failed.append(job_id)
        SlurmClient(FakeRunner({"scontrol": CommandTimedOut(
            ["scontrol", "release", str(job_id)], 20)})).release(job_id)

    monkeypatch.setattr(slurm, "release", release_timing_out)
    get = store.approvals.get

    def get_then_person_holds(tok: str) -> object:
        row = get(tok)
        if failed and failed.pop():  # the failure's read of the row, then the person's hold
            execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                    now=NOW + 2)
        return row

    monkeypatch.setattr(store.approvals, "get", get_then_person_holds)
    assert competitors.release_started(ctx, NOW + 2) == []
    texts = recorded(ctx).texts()
    assert texts[-2] == ("<@U0APPR> held 88017 with `/train hold`: it is their hold now, and "
                         "trainbot no longer releases it when 88887 starts."), texts
    assert texts[-1].startswith("trainbot's release of 88017 (") and texts[-1].endswith(
        ") may still land after 88017 was held with `/train hold`, and trainbot does not try "
        "it again: if 88017 is no longer held, hold it again with `/train hold 88017`."), texts
    assert competitors.held_now(ctx) == []
    assert "held_by_person" in store.approvals.steps(token)


class ThenSlurm(SlowReleaseSlurm):
    """Slurm whose slow `scontrol release` (`meanwhile` while on its way) lands, then
    `then` happens to the job (it starts, ends, leaves Slurm's records); `landed`: how many
    calls Slurm had had when it landed."""

    def __init__(self, then: Callable[[FakeSlurm, int], None]) -> None:
        super().__init__()
        self.then, self.landed = then, -1

    def release(self, job_id: int) -> None:
        super().release(job_id)
        self.landed = len(self.calls)
        self.then(self, job_id)


AFTER_HOLD = {
    "running": (lambda s, j: s.set(j, state="RUNNING"),
                "88017 is running, so it is no longer held: trainbot's release of it was on "
                "its way when 88017 was held with `/train hold`, and went through.",
                "작업 88017은(는) 실행 중이므로 더 이상 보류되어 있지 않습니다: `/train hold`로 "
                "보류될 때 진행 중이던 trainbot의 보류 해제가 적용되었습니다."),
    "gone": (lambda s, j: s.records.pop(j),
             "Slurm no longer knows 88017: trainbot's release of it was on its way when 88017 "
             "was held with `/train hold`, and went through; there is no job left to hold.",
             "Slurm이 더 이상 작업 88017을(를) 알지 못합니다: `/train hold`로 보류될 때 진행 "
             "중이던 trainbot의 보류 해제가 적용되었으며, 보류할 작업이 남아 있지 않습니다."),
    "ended": (lambda s, j: s.set(j, state="COMPLETED"),
              "Slurm shows 88017 COMPLETED, not waiting to run: trainbot's release of it was "
              "on its way when 88017 was held with `/train hold`, and went through.",
              "Slurm에서 작업 88017은(는) COMPLETED 상태이며 실행을 기다리고 있지 않습니다: "
              "`/train hold`로 보류될 때 진행 중이던 trainbot의 보류 해제가 적용되었습니다."),
}


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("after", sorted(AFTER_HOLD))
def test_a_release_landing_after_a_persons_hold_says_only_what_slurm_shows_of_the_job(
        store: Store, lang: str, after: str) -> None:
    """trainbot's `scontrol release 88017` is on its way when a person holds 88017 with
    `/train hold`; it lands, and Slurm then shows 88017 running, no longer knows it, or
    shows it ended: the thread is told that, not that 88017 waits unheld to be held again."""
    then, en, ko = AFTER_HOLD[after]
    slurm = ThenSlurm(then)
    ctx = make_context(store, slurm, lang=lang)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    slurm.meanwhile.append(lambda: execute(ctx, parse_command("hold 88017"), actor="U0APPR",
                                           channel="C0TRAIN", now=NOW + 2))
    assert competitors.release_started(ctx, NOW + 2) == [88017]
    assert recorded(ctx).texts()[-1] == (en if lang == "en" else ko)
    assert competitors.held_now(ctx) == []


def test_a_release_landing_after_a_persons_release_neither_says_nor_reads_more(
        store: Store) -> None:
    """trainbot's `scontrol release 88017` is on its way when a person releases 88017 with
    `/train release` (trainbot's hold of it is over): it lands, and nothing more is said,
    nor is Slurm asked about 88017 after it."""
    slurm = ThenSlurm(lambda s, j: None)
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    slurm.meanwhile.append(lambda: execute(ctx, parse_command("release 88017"),
                                           actor="U0APPR", channel="C0TRAIN", now=NOW + 2))
    assert competitors.release_started(ctx, NOW + 2) == [88017]
    assert recorded(ctx).texts()[-1] == ("<@U0APPR> released 88017 with `/train release`; "
                                         "trainbot's hold of it for 88887 is over.")
    assert slurm.landed > 0
    assert [call for call in slurm.calls[slurm.landed:] if call == ("job", 88017)] == []
    assert "released_by_person" in store.approvals.steps(token)


@pytest.mark.parametrize("claim", ["first", "retry"])
def test_a_persons_hold_after_the_tick_listed_the_hold_is_not_released(
        store: Store, monkeypatch: pytest.MonkeyPatch, claim: str) -> None:
    """The holds tick lists trainbot's hold of 88017 (88887 started) and, before it claims
    the release (its first, or the retry of a release that failed), a person's `/train hold
    88017` takes the job out of trainbot's holds: the claim re-checks the row in its own
    write, finds it no longer trainbot's, and no `scontrol release` is sent: 88017 stays
    held, by the person, and the thread has only their text."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    at = NOW + 2
    if claim == "retry":  # an earlier release failed: its retry is due now
        store.approvals.mark_step(token, competitors.RELEASING_STEP, now=NOW + 1)
        store.approvals.mark_step(token, "release_failed_1", now=NOW + 1)
        at = NOW + 1 + competitors.release_takeover_s(ctx, competitors.held_now(ctx)[0])
    slurm.set(88887, state="RUNNING")
    hold_over = competitors.hold_over

    def then_person_holds(ctx_: BotContext, approval: object, now: float) -> bool:
        over = hold_over(ctx_, approval, now)  # type: ignore[arg-type]
        execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN", now=now)
        return over

    monkeypatch.setattr(competitors, "hold_over", then_person_holds)
    assert competitors.release_started(ctx, at) == []
    assert slurm.acted("release") == []
    assert (rec := slurm.job(88017)) is not None and rec.is_held
    assert recorded(ctx).texts()[1:] == [
        "<@U0APPR> held 88017 with `/train hold`: it is their hold now, and trainbot no "
        "longer releases it when 88887 starts."]
    assert competitors.held_now(ctx) == []


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("resumed", ["RUNNING", "PENDING"])
def test_a_yes_whose_hold_raced_a_persons_hold_is_told_the_job_is_theirs(
        store: Store, lang: str, resumed: str) -> None:
    """A yes's `scontrol hold 88017` is on its way when a person holds 88017 with `/train
    hold` (the job theirs: out of trainbot's holds), 88887 starting meanwhile or still
    waiting: the yes is told the truth, that the job is the person's hold now and trainbot
    leaves it alone; not that it could not be released yet (no retry ever comes), nor that
    it is held until 88887 starts (trainbot no longer releases it then)."""
    slurm = SlowHoldSlurm()
    ctx = make_context(store, slurm, lang=lang)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)

    def person() -> None:
        execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                now=NOW + 1)
        slurm.set(88887, state=resumed)

    slurm.meanwhile.append(person)
    answer = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1).update_text
    assert answer == (
        "Approved by <@U0APPR>: held 88017, but a person held it meanwhile with `/train "
        "hold`: it is their hold now, and trainbot leaves it alone" if lang == "en" else
        "<@U0APPR>님이 승인했습니다: 작업 88017을(를) 보류했지만, 그사이 다른 사람이 "
        "`/train hold`로 보류했습니다: 이제 그분의 보류이며, trainbot은 이 작업을 그대로 "
        "둡니다")
    assert slurm.acted("release") == []
    assert (rec := slurm.job(88017)) is not None and rec.is_held
    assert competitors.held_now(ctx) == []


def dies_posting(ctx: BotContext, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """The bot's process stops (`Died`) as it posts the reply `key` to its thread."""
    sink = recorded(ctx)
    post_reply = sink.post_reply

    def post(chain_id: int, key_: str, blocks: list, text: str) -> str:
        if key_ == key:
            raise Died()
        return post_reply(chain_id, key_, blocks, text)

    monkeypatch.setattr(sink, "post_reply", post)


def said_after_restart(store: Store, slurm: FakeSlurm, ctx: BotContext,
                       monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bot started again after it stopped posting in `ctx`: what its `prompts` job
    (two runs) says in the thread, after what `ctx` said before it stopped."""
    monkeypatch.undo()
    later = make_context(store, slurm)
    say_pending_notes(later)
    say_pending_notes(later)
    return recorded(ctx).texts() + recorded(later).texts()


def test_a_hold_let_go_to_another_runs_hold_is_said_after_a_stop_before_its_post(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs A (88887) and B (88999) share trainbot's hold of 88017; 88887 starts and A lets
    go of it (done, B's hold keeps it held) when the bot stops as it posts "still held for
    88999": that reply was kept with A's row done, in one transaction, so the bot started
    again says it, once; 88017 is not released."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token_a = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token_a, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    token_b = hold_for(ctx, slurm, 88017, for_job=88999)
    handle_click(ctx, token_b, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    dies_posting(ctx, monkeypatch, f"hold-release:{token_a}")
    with pytest.raises(Died):
        competitors.release_started(ctx, NOW + 2)
    said = [t for t in said_after_restart(store, slurm, ctx, monkeypatch) if "88999" in t]
    assert len(said) == 1 and said[0].startswith("88887 no longer needs 88017 held"), said
    assert [a.token for a in competitors.held_now(ctx)] == [token_b]
    assert slurm.acted("release") == []


def test_a_persons_hold_settling_a_hold_is_said_after_a_stop_before_its_post(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person's `/train hold 88017` takes it out of trainbot's holds when the bot stops as
    it posts their text to the thread: it was kept with the row done, in one transaction, so
    the bot started again says it, once."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    dies_posting(ctx, monkeypatch, f"hold-release:{token}")
    with pytest.raises(Died):
        execute(ctx, parse_command("hold 88017"), actor="U0APPR", channel="C0TRAIN",
                now=NOW + 2)
    said = said_after_restart(store, slurm, ctx, monkeypatch)
    assert said.count("<@U0APPR> held 88017 with `/train hold`: it is their hold now, and "
                      "trainbot no longer releases it when 88887 starts.") == 1, said
    assert competitors.held_now(ctx) == []


def test_a_failed_release_retry_is_said_after_a_stop_before_its_post(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """trainbot's `scontrol release 88017` is refused (88887 started) and the bot stops as
    it posts that it tries again in N minutes: that reply was kept with the failure's step,
    in one transaction, so the bot started again says it, once."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    monkeypatch.setattr(slurm, "release", SlurmClient(FakeRunner({"scontrol": (
        1, "", "slurm_suspend error: Access/permission denied\n")})).release)
    dies_posting(ctx, monkeypatch, f"hold-release:{token}:failed:1")
    with pytest.raises(Died):
        competitors.release_started(ctx, NOW + 2)
    said = [t for t in said_after_restart(store, slurm, ctx, monkeypatch) if "again" in t]
    assert len(said) == 1 and "minutes" in said[0], said
    assert "release_failed_1" in store.approvals.steps(token)
    assert [a.token for a in competitors.held_now(ctx)] == [token]


@pytest.mark.parametrize("resumed", ["PENDING", "RUNNING"])
@pytest.mark.parametrize("verb", ["hold", "release"])
def test_a_persons_command_landing_as_the_yes_reads_the_resumed_job_is_what_it_answers(
        ctx: BotContext, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, verb: str,
        resumed: str) -> None:
    """The yes's hold landed; as it reads 88887 (waiting still, or started), a person's
    `/train hold|release 88017` takes the job out of trainbot's holds: the yes answers that
    (their hold, left alone; or their release, trainbot's hold over), not "held until 88887
    starts" (trainbot no longer releases it, or it is not held) nor "could not be released
    yet" (no retry comes)."""
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    read, persons = slurm.job, list[str]()

    def person_during_the_read(job_id: int) -> object:
        if job_id == 88887 and not persons:
            persons.append(verb)
            execute(ctx, parse_command(f"{verb} 88017"), actor="U0APPR", channel="C0TRAIN",
                    now=NOW + 1)
            slurm.set(88887, state=resumed)
        return read(job_id)

    monkeypatch.setattr(slurm, "job", person_during_the_read)
    answer = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1).update_text
    assert answer == ("Approved by <@U0APPR>: held 88017, but a person held it meanwhile with "
                      "`/train hold`: it is their hold now, and trainbot leaves it alone"
                      if verb == "hold" else
                      "Approved by <@U0APPR>: held 88017, but a person released it meanwhile "
                      "with `/train release`: trainbot's hold of it is over")
    assert competitors.held_now(ctx) == []
    assert slurm.records[88017].is_held == (verb == "hold")
    assert slurm.acted("release") == ([88017] if verb == "release" else [])  # theirs alone


def test_a_failed_releases_kept_retry_note_is_not_posted_after_released(
        ctx: BotContext, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed release's "tries again in N minutes" is kept for the thread, its post failing
    (a Slack 5xx); the retry goes through and says "Released" at once: the kept note, no
    longer true, is never posted after it by the `prompts` job (nor left as unsaid)."""
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    refused = SlurmClient(FakeRunner({"scontrol": (
        1, "", "slurm_suspend error: Access/permission denied\n")})).release
    monkeypatch.setattr(slurm, "release", refused)
    recorded(ctx).fail_next = 1
    assert competitors.release_started(ctx, NOW + 2) == []
    monkeypatch.undo()
    retry_at = NOW + 3 + competitors.release_takeover_s(ctx, competitors.held_now(ctx)[0])
    assert competitors.release_started(ctx, retry_at) == [88017]
    say_pending_notes(ctx)
    say_pending_notes(ctx)
    said = recorded(ctx).texts()
    assert said[-1] == "Released 88017: 88887 is running."
    assert not any("tries again" in text for text in said)
    note = ctx.store.incidents.get(f"hold-release:{token}:failed:1")
    assert note is not None and note.state == "outdated"


@pytest.mark.parametrize("release", ["lands", "times_out"])
def test_a_release_after_a_persons_hold_is_said_after_a_stop_before_its_post(
        store: Store, monkeypatch: pytest.MonkeyPatch, release: str) -> None:
    """trainbot's `scontrol release 88017` is on its way when a person holds 88017 with
    `/train hold`; the release lands after it (`lands`: the job read no longer held) or times
    out (may still land), and the bot stops as it posts that it may have undone their hold:
    that reply was kept with its step, in one transaction, so the bot started again says
    it, once."""
    slurm: SlowReleaseSlurm = (LandingReleaseSlurm("ok") if release == "lands"
                               else TimingOutReleaseSlurm())
    ctx = make_context(store, slurm)
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100)
    token = hold_for(ctx, slurm, 88017)
    handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    slurm.set(88887, state="RUNNING")
    slurm.meanwhile.append(lambda: execute(ctx, parse_command("hold 88017"), actor="U0APPR",
                                           channel="C0TRAIN", now=NOW + 2))
    dies_posting(ctx, monkeypatch, f"hold-release:{token}:after-hold")
    with pytest.raises(Died):
        competitors.release_started(ctx, NOW + 2)
    said = [t for t in said_after_restart(store, slurm, ctx, monkeypatch)
            if "hold it again with `/train hold 88017`" in t]
    assert len(said) == 1, said
    assert competitors.held_now(ctx) == []
    assert slurm.acted("release") == [88017]
