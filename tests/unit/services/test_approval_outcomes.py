"""What a click did reads in the recipe's language: the decided prompt (approve, dismiss, a
declined hold, a failure, cancel and resume) and the replies only the clicker sees. Slurm's own
error text is shown verbatim; job ids and the actor's mention are there in both languages."""

from __future__ import annotations

import pytest
from fakes import FakeRunner, FakeSlurm, make_context
from support.mix_prompt import mix_prompt

from bot.cluster.errors import ClusterError, CommandTimedOut, OutcomeUnknown
from bot.cluster.slurm import SlurmClient
from bot.core.takeover import RemoteDeadlines
from bot.core.text import Text
from bot.services import competitors
from bot.services.approvals import ActionId, ClickResult, handle_click
from bot.services.ports import BotContext
from bot.store import Store

NOW = 1_000_000.0
SBATCH_ERROR = "sbatch: error: Batch job submission failed: Invalid account <root>"


def prompt(ctx: BotContext, *, offer_cancel: bool = False) -> str:
    """Job 88154 of a fresh chain, with its thread and a resubmit (or cancel) prompt."""
    _, made = mix_prompt(ctx, run_at=NOW - 100, now=NOW, summary="88154: NCCL",
                         mem=None if offer_cancel else "1900G", offer_cancel=offer_cancel)
    return made.token


def outcome(result: ClickResult) -> str:
    """The decided prompt's outcome line (also its notification text)."""
    assert result.update_blocks is not None
    [line] = [b for b in result.update_blocks if b.get("block_id") == "outcome"]
    assert line["elements"][0]["text"] == result.update_text
    return str(result.update_text)


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@W0LEAD>님이 승인했습니다: 작업 88887(으)로 재제출했습니다 (완전한 체크포인트가 없어 "
           "처음부터 재개, --mem=1900G)"),
    ("en", "Approved by <@W0LEAD>: resubmitted as 88887 from scratch (no complete checkpoint) "
           "with --mem=1900G"),
])
def test_an_approved_resubmit_says_who_and_the_new_job(store: Store, lang: str,
                                                       want: str) -> None:
    ctx = make_context(store, lang=lang)
    result = handle_click(ctx, prompt(ctx), ActionId.RESUBMIT_MEM, "W0LEAD", NOW + 1)
    assert result.status == "done"
    assert outcome(result) == want


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@W0LEAD>님이 무시했습니다. 아무것도 하지 않았습니다."),
    ("en", "Dismissed by <@W0LEAD>; nothing was done."),
])
def test_a_dismiss_says_who_and_that_nothing_was_done(store: Store, lang: str,
                                                      want: str) -> None:
    ctx = make_context(store, lang=lang)
    result = handle_click(ctx, prompt(ctx), ActionId.DISMISS, "W0LEAD", NOW + 1)
    assert (result.status, outcome(result)) == ("declined", want)


def hold_prompt(ctx: BotContext, slurm: FakeSlurm) -> str:
    """The resumed job 88887 waits behind the team's 88017: the "Hold 88017?" prompt."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    slurm.add(88887, name="mix", partition="debug", account="root", priority=50,
              submit_time=3000.0)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=100,
              submit_time=1000.0)
    [hold] = competitors.propose_holds(
        ctx, recipe="mix", chain_id=chain.id, job_id=88887, allowed={"U0APPR"}, now=NOW,
        action_ids=(ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR))  # fmt: skip
    return hold.token


@pytest.mark.parametrize(("lang", "question", "want"), [
    ("ko", "작업 88887이(가) 시작될 때까지 작업 88017을(를) 보류할까요?",
     "<@U0APPR>님이 작업 88017을(를) 보류하지 않기로 했습니다. 보류한 작업은 없습니다."),
    ("en", "Hold 88017 until 88887 starts?",
     "<@U0APPR> chose not to hold 88017; nothing was held."),
])
def test_a_declined_hold_asks_its_question_again_and_holds_nothing(
    store: Store, lang: str, question: str, want: str
) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    result = handle_click(ctx, hold_prompt(ctx, slurm), ActionId.KEEP_COMPETITOR, "U0APPR",
                          NOW + 1)
    assert result.update_blocks is not None
    assert result.update_blocks[0]["text"]["text"] == question
    assert outcome(result) == want
    assert slurm.acted("hold") == []


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@U0APPR>님이 승인했습니다: 작업 88887이(가) 시작될 때까지 작업 88017을(를) "
           "보류했습니다"),
    ("en", "Approved by <@U0APPR>: held 88017 until 88887 starts"),
])
def test_an_approved_hold_names_both_jobs(store: Store, lang: str, want: str) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    result = handle_click(ctx, hold_prompt(ctx, slurm), ActionId.HOLD_COMPETITOR, "U0APPR",
                          NOW + 1)
    assert (result.status, outcome(result)) == ("done", want)
    assert slurm.acted("hold") == [88017]


def resumed_job_leaves_during_the_hold(slurm: FakeSlurm, state: str | None) -> None:
    """The resumed job 88887 goes to `state` (None: Slurm no longer knows it) while the
    yes's `scontrol hold` is on its way."""
    hold = slurm.hold

    def hold_as_the_resumed_job_leaves(job_id: int) -> None:
        if state is None:
            del slurm.records[88887]
        else:
            slurm.set(88887, state=state)
        hold(job_id)

    slurm.hold = hold_as_the_resumed_job_leaves  # type: ignore[method-assign]


@pytest.mark.parametrize(("lang", "state", "want"), [
    ("ko", "CANCELLED", "<@U0APPR>님이 승인했습니다: 작업 88017을(를) 보류했다가 바로 "
                        "해제했습니다: 작업 88887이(가) 더 이상 대기열에서 기다리지 않습니다 "
                        "(CANCELLED)"),
    ("en", "CANCELLED", "Approved by <@U0APPR>: held 88017, then released it at once: 88887 no "
                        "longer waits in the queue (CANCELLED)"),
    ("ko", None, "<@U0APPR>님이 승인했습니다: 작업 88017을(를) 보류했다가 바로 해제했습니다: "
                 "작업 88887이(가) Slurm에 더 이상 없습니다"),
    ("en", None, "Approved by <@U0APPR>: held 88017, then released it at once: 88887 is no "
                 "longer known to Slurm"),
])
def test_a_hold_released_in_its_own_click_says_so_not_held_until_it_starts(
    store: Store, lang: str, state: str | None, want: str
) -> None:
    """The resumed job 88887 is cancelled (or leaves Slurm) while the yes's `scontrol hold`
    is on its way: the yes releases 88017 at once, and its prompt says held, then released,
    and why; never "held until 88887 starts"."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    token = hold_prompt(ctx, slurm)
    resumed_job_leaves_during_the_hold(slurm, state)
    result = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert (result.status, outcome(result)) == ("done", want)
    assert slurm.acted("release") == [88017]
    assert not slurm.records[88017].is_held


@pytest.mark.parametrize(("lang", "state", "want"), [
    ("en", "CANCELLED", "Approved by <@U0APPR>: held 88017; 88887 no longer waits in the "
                        "queue (CANCELLED), but 88017 could not be released yet: the thread "
                        "says what trainbot does next"),
    ("ko", "CANCELLED", "<@U0APPR>님이 승인했습니다: 작업 88017을(를) 보류했습니다. 작업 "
                        "88887이(가) 더 이상 대기열에서 기다리지 않지만 (CANCELLED), 작업 "
                        "88017의 보류는 아직 해제하지 못했습니다: trainbot이 다음에 할 일은 "
                        "스레드에 있습니다"),
    ("en", None, "Approved by <@U0APPR>: held 88017; 88887 is no longer known to Slurm, but "
                 "88017 could not be released yet: the thread says what trainbot does next"),
    ("ko", None, "<@U0APPR>님이 승인했습니다: 작업 88017을(를) 보류했습니다. 작업 88887이(가) "
                 "Slurm에 더 이상 없지만, 작업 88017의 보류는 아직 해제하지 못했습니다: "
                 "trainbot이 다음에 할 일은 스레드에 있습니다"),
])
def test_a_hold_whose_release_in_its_own_click_fails_does_not_say_held_until_it_starts(
    store: Store, lang: str, state: str | None, want: str
) -> None:
    """The resumed job 88887 is cancelled (or leaves Slurm) while the yes's `scontrol hold`
    is on its way, and the release the yes then makes is refused: its prompt says 88017 is
    held and not released yet, never "held until 88887 starts" (it never will); the hold
    stays in the ledger, tried again."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    token = hold_prompt(ctx, slurm)
    resumed_job_leaves_during_the_hold(slurm, state)
    slurm.release = SlurmClient(FakeRunner({"scontrol": (  # type: ignore[method-assign]
        1, "", "Access/permission denied for job 88017\n"
               "slurm_suspend error: Access/permission denied\n")})).release
    result = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert (result.status, outcome(result)) == ("done", want)
    assert slurm.records[88017].is_held
    assert [a.target_job for a in competitors.held_now(ctx)] == ["88017"]


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@U0APPR>님이 승인했습니다: 작업 88017이(가) 보류되었는지 알 수 없습니다 (lost). "
           "다른 보류와 마찬가지로, 작업 88887에 더 이상 필요하지 않으면 trainbot이 보류를 "
           "해제합니다"),
    ("en", "Approved by <@U0APPR>: 88017 may or may not be held (lost); trainbot releases it "
           "when 88887 no longer needs it, as any hold"),
])
def test_a_hold_whose_end_was_not_seen_says_the_job_may_be_held(store: Store, lang: str,
                                                                 want: str) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    token = hold_prompt(ctx, slurm)
    slurm.hold_answer_lost = OutcomeUnknown(["scontrol", "hold", "88017"], "lost")
    result = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert (result.status, outcome(result)) == ("done", want)


@pytest.mark.parametrize(("error", "lang", "want"), [
    (SBATCH_ERROR, "ko", "<@W0LEAD>님이 승인했지만 실패했습니다: sbatch: error: Batch job "
                         "submission failed: Invalid account &lt;root&gt;"),
    (SBATCH_ERROR, "en", "Approved by <@W0LEAD>, but it failed: sbatch: error: Batch job "
                         "submission failed: Invalid account &lt;root&gt;"),
    (CommandTimedOut(["sbatch", "job.sh"], 20).text, "ko",
     "<@W0LEAD>님이 승인했지만 실패했습니다: `sbatch job.sh`이(가) 20초 안에 끝나지 않았습니다"),
    (CommandTimedOut(["sbatch", "job.sh"], 20).text, "en",
     "Approved by <@W0LEAD>, but it failed: `sbatch job.sh` did not finish within 20 s"),
], ids=["slurms-ko", "slurms-en", "trainbots-ko", "trainbots-en"])
def test_a_failed_resubmit_shows_slurms_error_verbatim_and_trainbots_in_the_recipes_language(
    store: Store, error: Text | str, lang: str, want: str
) -> None:
    """Slurm's own error text (an `sbatch: error:` line) is shown as it came; trainbot's own
    sentence (a command that outlived its timeout) is said in the recipe's language."""
    ctx = make_context(store, FakeSlurm(submit_error=ClusterError(error)), lang=lang)
    result = handle_click(ctx, prompt(ctx), ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert (result.status, outcome(result)) == ("failed", want)


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@W0LEAD>님이 승인했습니다: 작업 88154을(를) 취소하고 작업 88887(으)로 다시 "
           "제출했습니다 (완전한 체크포인트가 없어 처음부터 재개)"),
    ("en", "Approved by <@W0LEAD>: cancelled job 88154 and resubmitted it as 88887 from "
           "scratch (no complete checkpoint)"),
])
def test_cancel_and_resume_names_the_cancelled_and_the_new_job(store: Store, lang: str,
                                                               want: str) -> None:
    slurm = FakeSlurm()
    slurm.add(88154, state="RUNNING", name="mix")
    ctx = make_context(store, slurm, lang=lang)
    result = handle_click(ctx, prompt(ctx, offer_cancel=True), ActionId.CANCEL_RESUME, "W0LEAD",
                          NOW + 1)
    assert (result.status, outcome(result)) == ("done", want)
    assert slurm.acted("cancel") == [88154]


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@W0LEAD>님이 승인했지만 실패했습니다: 작업 88154은(는) 취소했지만 재제출에 "
           f"실패했습니다: {SBATCH_ERROR.replace('<', '&lt;').replace('>', '&gt;')}. "
           "`/train resume mix`로 다시 시도하세요."),
    ("en", "Approved by <@W0LEAD>, but it failed: cancelled job 88154, but the resubmit failed: "
           f"{SBATCH_ERROR.replace('<', '&lt;').replace('>', '&gt;')}. `/train resume mix` "
           "tries again"),
])
def test_cancel_and_resume_whose_resubmit_fails_says_the_job_was_cancelled(
    store: Store, lang: str, want: str
) -> None:
    slurm = FakeSlurm(submit_error=ClusterError(SBATCH_ERROR))
    slurm.add(88154, state="RUNNING", name="mix")
    ctx = make_context(store, slurm, lang=lang)
    result = handle_click(ctx, prompt(ctx, offer_cancel=True), ActionId.CANCEL_RESUME, "W0LEAD",
                          NOW + 1)
    assert (result.status, outcome(result)) == ("failed", want)


def timed_out(*argv: str) -> OutcomeUnknown:
    """trainbot's own sentence (a Text): a command that outlived its 20 s timeout."""
    return OutcomeUnknown.timed_out(list(argv), CommandTimedOut(list(argv), 20))


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@U0APPR>님이 승인했습니다: 작업 88017이(가) 보류되었는지 알 수 없습니다 "
           "(`scontrol hold 88017`이(가) 20초 안에 끝나지 않았습니다. 적용되었는지 알 수 "
           "없습니다). "),
    ("en", "Approved by <@U0APPR>: 88017 may or may not be held (`scontrol hold 88017` did not "
           "finish within 20 s; it may or may not have taken effect); trainbot releases it"),
])
def test_a_hold_whose_error_is_trainbots_sentence_says_it_in_the_recipes_language(
    store: Store, lang: str, want: str
) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    token = hold_prompt(ctx, slurm)
    slurm.hold_answer_lost = timed_out("scontrol", "hold", "88017")
    result = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert result.status == "done" and outcome(result).startswith(want), outcome(result)


@pytest.mark.parametrize(("lang", "settle_s", "want"), [
    ("ko", 300, "<@W0LEAD>님이 승인했습니다: 작업 88154이(가) 취소되었는지 알 수 없습니다 "
                "(`scancel 88154`이(가) 20초 안에 끝나지 않았습니다. 적용되었는지 알 수 "
                "없습니다). 아직 아무것도 재제출하지 않았습니다. trainbot이 약 5분 뒤 작업을 "
                "처음 다시 확인합니다: 취소되었으면 요청대로 실행을 재개합니다. 취소되지 않았다는 "
                "판단은 scancel이 더는 적용될 수 없는 약 10분 뒤에야 내립니다: 그때도 작업이 실행 "
                "중이면 그렇게 알리고 취소를 다시 제안합니다"),
    ("en", 30, "Approved by <@W0LEAD>: job 88154 may or may not have been cancelled (`scancel "
               "88154` did not finish within 20 s; it may or may not have taken effect); "
               "nothing was resubmitted yet. trainbot first looks at the job again in about "
               "30 s: if it was cancelled, it resumes the run as asked. It says the job was not "
               "cancelled only once the scancel can no longer land, in about 10 min: if the job "
               "still runs then, it says so and offers the cancel again"),
])
def test_a_cancel_whose_end_was_not_seen_says_why_and_when_in_the_recipes_language(
    store: Store, lang: str, settle_s: int, want: str
) -> None:
    """The prompt says when trainbot first looks again (the recipe's policy.cancel_settle_s)
    and when it may conclude "not cancelled": once the scancel can no longer land
    (scancel_over_at, 584 s after the click with the default deadlines). Before, it said the
    first look would say the job still runs, which only comes 10 minutes later."""
    slurm = FakeSlurm()
    slurm.add(88154, state="RUNNING", name="mix")
    slurm.cancel_answer_lost = timed_out("scancel", "88154")
    ctx = make_context(store, slurm, lang=lang, policy={"cancel_settle_s": settle_s})
    result = handle_click(ctx, prompt(ctx, offer_cancel=True), ActionId.CANCEL_RESUME, "W0LEAD",
                          NOW + 1)
    assert result.status == "done" and outcome(result) == want, outcome(result)


def test_a_plain_cancel_whose_end_was_not_seen_says_it_is_looked_at_again_in_korean(
    store: Store
) -> None:
    slurm = FakeSlurm()
    slurm.add(88154, state="RUNNING", name="mix")
    slurm.cancel_lost = timed_out("scancel", "88154")
    ctx = make_context(store, slurm, lang="ko", policy={"cancel_settle_s": 120})
    result = handle_click(ctx, prompt(ctx, offer_cancel=True), ActionId.CANCEL, "W0LEAD", NOW + 1)
    assert (result.status, outcome(result)) == ("done", (
        "<@W0LEAD>님이 승인했습니다: 작업 88154이(가) 취소되었는지 알 수 없습니다 "
        "(`scancel 88154`이(가) 20초 안에 끝나지 않았습니다. 적용되었는지 알 수 없습니다). "
        "trainbot이 약 2분 뒤 작업을 처음 다시 확인하고, 작업이 끝났으면 취소되었는지 여기에 "
        "알립니다. 취소되지 않았다는 판단은 scancel이 더는 적용될 수 없는 약 10분 뒤에야 "
        "내립니다: 그때도 작업이 실행 중이면 그렇게 알리고 취소를 다시 제안합니다"))


def test_an_unseen_cancel_through_a_jump_host_names_its_clicks_longer_scancel_bound(
    store: Store
) -> None:
    """The time the prompt names for "not cancelled" is the click's scancel_over_at, at the
    bounds its runner kept with its step: through a jump host 231 s a command, 4 × 231 + 60 =
    984 s, not the config's 584 s; the first look is still the recipe's
    policy.cancel_settle_s. The 983 s left at the reply (16 min 23 s) are said as 17 min,
    rounded up: never a time before the scancel can no longer land (before, "16 min")."""
    slurm = FakeSlurm()
    slurm.runner = FakeRunner(deadlines=RemoteDeadlines(jump=True))
    slurm.add(88154, state="RUNNING", name="mix")
    slurm.cancel_lost = timed_out("scancel", "88154")
    ctx = make_context(store, slurm, policy={"cancel_settle_s": 90})
    result = handle_click(ctx, prompt(ctx, offer_cancel=True), ActionId.CANCEL, "W0LEAD", NOW + 1)
    assert (result.status, outcome(result)) == ("done", (
        "Approved by <@W0LEAD>: job 88154 may or may not have been cancelled (`scancel 88154` "
        "did not finish within 20 s; it may or may not have taken effect). trainbot first "
        "looks at the job again in about 90 s and, once it has ended, says here whether it "
        "was cancelled. It says the job was not cancelled only once the scancel can no longer "
        "land, in about 17 min: if the job still runs then, it says so and offers the cancel "
        "again"))


def test_a_korean_recipes_clicker_is_answered_in_korean(store: Store) -> None:
    ctx = make_context(store, lang="ko")
    token = prompt(ctx)
    refused = handle_click(ctx, token, ActionId.RESUBMIT, "U0ALICE", NOW + 1)
    assert refused.ephemeral == ("거부됨: <@U0APPR> 또는 <@W0LEAD>님만 승인할 수 있습니다. "
                                 "아무것도 하지 않았습니다.")
    assert handle_click(ctx, token, ActionId.DISMISS, "W0LEAD", NOW + 2).status == "declined"
    again = handle_click(ctx, token, ActionId.RESUBMIT, "U0APPR", NOW + 3)
    assert again.ephemeral == ("이미 <@W0LEAD>님이 결정한 요청입니다. 다시 실행하지 "
                               "않았습니다.")
    late = handle_click(ctx, prompt(ctx), ActionId.RESUBMIT, "W0LEAD", NOW + 10 ** 7)
    assert late.status == "expired"
    assert late.ephemeral == late.update_text == (
        "⌛ 응답 없이 이 요청이 만료되었습니다. 아무것도 재제출하지 않았고 작업 88154은(는) 끝난 "
        "상태 그대로입니다. `/train resume mix`로 마지막 완전한 체크포인트에서 재개할 수 있습니다.")
    unknown = handle_click(ctx, "no-such-token", ActionId.RESUBMIT, "W0LEAD", NOW)
    assert unknown.ephemeral == ("This button is not (or no longer) known to trainbot; nothing "
                                 "was done.")  # no recipe to go by: slack.lang (en)


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "<@W0LEAD>님이 승인했습니다: 작업 777(으)로 재제출했습니다 (완전한 체크포인트가 "
           "없어 처음부터 재개); 사이트 제출 명령이 다음을 "
           "적용하지 않았습니다: mem=1900G (작업의 실제 값: 950G)"),
    ("en", "Approved by <@W0LEAD>: resubmitted as 777 from scratch (no complete checkpoint); the "
           "site's submit command did not apply "
           "mem=1900G (the job has 950G)"),
])
def test_a_resubmit_with_mem_a_site_wrapper_ignored_says_so(store: Store, lang: str,
                                                            want: str) -> None:
    slurm = FakeSlurm(runner=FakeRunner(default=(0, "Submitted batch job 777\n", "")))
    slurm.add(777, name="mix", mem_limit_bytes=950 * 1024**3)
    ctx = make_context(store, slurm, lang=lang, sbatch_script=None,
                       submit_command=["/opt/site/submit"])
    result = handle_click(ctx, prompt(ctx), ActionId.RESUBMIT_MEM, "W0LEAD", NOW + 1)
    assert (result.status, outcome(result)) == ("done", want)
    assert slurm.runner.calls[0].env["SBATCH_MEM_PER_NODE"] == "1900G"


@pytest.mark.parametrize(("lang", "want"), [
    ("en", "Out of date: 88017 is already held (JobHeldUser), by someone else's hold; trainbot "
           "did not hold it and does not release it for 88887."),
    ("ko", "지난 요청입니다: 작업 88017은(는) 이미 다른 사람의 보류로 보류되어 있습니다 "
           "(JobHeldUser). trainbot은 이 작업을 보류하지 않았으며, 작업 88887 때문에 보류를 "
           "해제하지도 않습니다."),
])
def test_a_yes_on_a_competitor_held_by_its_owner_says_it_was_not_held(
    store: Store, lang: str, want: str
) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    token = hold_prompt(ctx, slurm)
    slurm.set(88017, reason="JobHeldUser", priority=0)  # its owner held it meanwhile
    result = handle_click(ctx, token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 1)
    assert (result.status, outcome(result)) == ("stale", want)
    assert slurm.acted("hold") == []
