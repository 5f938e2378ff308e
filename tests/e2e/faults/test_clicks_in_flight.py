"""Fault: a Resubmit or Cancel and resume button pressed while another submit of the same run is
in flight (its sbatch sent, its job not recorded yet).

Through the real Bolt app and the Slack stand-in: the click's submit is refused before its
sbatch (bot.services.submit.RunSubmitInFlight, through submit_recipe), the prompt pressed is
rewritten to say whose submit is in flight and since when, and the run gets the one job of the
submit in flight.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakes import AnswerLostSlurm, FakeClusters, make_config, present
from support.bolt_driver import SyncExecutor
from support.click_world import APPROVER, ClickWorld

from bot.app import build_app
from bot.cluster.errors import CommandFailed, CommandTimedOut
from bot.slack.views import ActionId

NOW = 1_732_871_000.0  # 09:03 UTC


class InFlightSlurm(AnswerLostSlurm):
    """Slurm whose next sbatch runs `during` (a click made while that submit is in flight:
    sent, its job not recorded) before it queues its job."""

    def __init__(self) -> None:
        super().__init__(lost=0, first_id=88887, submitted_at=NOW)
        self.during: Callable[[], object] | None = None
        self.after_cancel: Callable[[], object] | None = None

    def submit(self, spec, *, script=None):  # noqa: ANN001, ANN201 - FakeSlurm.submit's shape
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().submit(spec, script=script)

    def cancel(self, job_id: int) -> None:
        super().cancel(job_id)
        after, self.after_cancel = self.after_cancel, None
        if after is not None:
            after()


class World(ClickWorld):
    slurm: InFlightSlurm

    def jobs(self, chain_id: int) -> list[str]:
        return [a.job_id for a in self.services.store.attempts.for_chain(chain_id)]

    def refusals(self) -> list[str]:
        return [e.actor for e in self.services.store.audit.recent(50)
                if e.action == "submit" and e.result == "refused"
                and "RunSubmitInFlight" in (e.detail or "")]


@pytest.fixture
def slurm() -> InFlightSlurm:
    return InFlightSlurm()


@pytest.fixture(params=["en", "ko"])
def lang(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def world(slack_context, store, slurm: InFlightSlurm, slack_client, urls, slack,
          lang: str) -> World:
    services = slack_context(store, make_config(slack_lang=lang), FakeClusters(slurm))
    app = build_app(services.config, services, client=slack_client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    return World(app, urls, services, slack, slurm, run_at=NOW - 600, prompt_at=NOW - 60)


IN_FLIGHT = {
    "en": "not submitted: <@U0ALICE>'s submit of this run was sent at 09:03 UTC and its job "
          "is not recorded yet, and a run's jobs run one after another. Wait for it: the run's "
          "thread tells which job it is; check the thread before resuming again",
    "ko": "제출하지 않았습니다: 이 실행에 대한 <@U0ALICE>님의 제출이 09:03 UTC에 보내졌고 아직 그 "
          "작업이 기록되지 않았으며, 한 실행의 작업은 차례로 하나씩 실행됩니다. 기다리세요: 실행 "
          "스레드가 어떤 작업인지 알려 줍니다. 다시 재개하기 전에 스레드를 확인하세요",
}
RESUBMIT_REFUSED = {
    "en": "Nothing was resubmitted: " + IN_FLIGHT["en"] + ". This prompt stays as it is: if "
          "that submit queues no job, press its button again.",
    "ko": "재제출하지 않았습니다: " + IN_FLIGHT["ko"] + ". 이 요청은 그대로 남아 있습니다: 그 "
          "제출이 작업을 대기열에 넣지 못하면 버튼을 다시 누르세요.",
}


def test_resubmit_pressed_while_a_resume_of_the_run_is_in_flight_is_refused(
        world: World, lang: str) -> None:
    """88154 died; its incident's Resubmit is pressed by W0LEAD while Alice's `/train resume
    mix` is between its sbatch and its record: the click sends no sbatch and tells the presser
    whose submit is in flight (en, ko); the click leaves the prompt as it was, and once
    Alice's job is recorded the prompt is out of date (superseded as her resume is recorded:
    bot.services.after_submit.supersede_prompts) and a press of it says so. The run has
    Alice's job alone."""
    chain_id = world.run("FAILED")
    token, ts = world.prompt(chain_id, resume_iter=3000)
    posted = world.prompt_text(ts)
    answers: list[list[str]] = []
    world.slurm.during = lambda: answers.append(world.click_texts(ActionId.RESUBMIT, token, ts))
    assert "88887" in world.train("resume mix")  # Alice's job
    assert answers == [[RESUBMIT_REFUSED[lang]]]
    assert world.prompt_text(ts) == posted  # the click left it (this world's post has no
    # post_key to rewrite it by)
    assert present(world.services.store.approvals.get(token)).state == "stale"
    assert len(world.slurm.submits()) == 1 and world.jobs(chain_id) == ["88154", "88887"]
    assert world.refusals() == [APPROVER]
    [again] = world.click_texts(ActionId.RESUBMIT, token, ts)
    assert "88887" in again and "88887" in world.prompt_text(ts)  # out of date, said
    assert len(world.slurm.submits()) == 1


def test_resubmit_refused_by_a_submit_in_flight_works_again_once_that_submit_fails(
        world: World, lang: str) -> None:
    """As above, but Alice's sbatch fails (nothing queued, her in-flight row removed): the
    prompt W0LEAD pressed is still there, and pressing Resubmit again resubmits the run."""
    chain_id = world.run("FAILED")
    token, ts = world.prompt(chain_id, resume_iter=3000)
    answers: list[list[str]] = []

    def press_then_fail() -> None:
        answers.append(world.click_texts(ActionId.RESUBMIT, token, ts))
        raise CommandFailed(["sbatch"], 1, "sbatch: error: Batch job submission failed")

    world.slurm.during = press_then_fail
    assert "88887" not in world.train("resume mix")  # Alice's failed
    assert answers == [[RESUBMIT_REFUSED[lang]]]
    assert world.slurm.submits() == [] and world.jobs(chain_id) == ["88154"]
    assert world.click_texts(ActionId.RESUBMIT, token, ts) == []
    assert len(world.slurm.submits()) == 1 and world.jobs(chain_id) == ["88154", "88887"]
    assert "88887" in world.prompt_text(ts)
    assert present(world.services.store.approvals.get(token)).state == "done"


RESUBMIT_MOVED_ON = {
    "en": "Out of date: job 88887 is now the latest (PENDING); nothing was done.",
    "ko": "지난 요청입니다: 이제 최신 작업은 88887입니다 (PENDING). 아무것도 하지 않았습니다.",
}


def test_resubmit_pressed_as_a_resume_of_the_run_is_recorded_sends_no_second_job(
        world: World, lang: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """88154 died; W0LEAD presses its incident's Resubmit. Right after the click claims the
    prompt (88154 still the run's latest attempt) and before its submit, Alice's `/train
    resume mix` goes through and is recorded (88887, its in-flight row gone): the click's
    submit sees the run's latest attempt is no longer 88154 and sends no sbatch, and the
    prompt says it is out of date, naming Alice's job (en, ko). The run has 88154 and 88887
    alone."""
    chain_id = world.run("FAILED")
    token, ts = world.prompt(chain_id, resume_iter=3000)
    approvals = world.services.store.approvals
    claim = approvals.claim
    alice: list[str] = []

    def claim_then_alice_resumes(*args: object, **kwargs: object) -> object:
        claimed = claim(*args, **kwargs)  # type: ignore[arg-type]
        alice.append(world.train("resume mix"))
        return claimed

    monkeypatch.setattr(approvals, "claim", claim_then_alice_resumes)
    answer = world.click_texts(ActionId.RESUBMIT, token, ts)
    assert len(alice) == 1 and "88887" in alice[0]
    assert answer == [RESUBMIT_MOVED_ON[lang]]
    assert world.prompt_text(ts) == RESUBMIT_MOVED_ON[lang]
    assert len(world.slurm.submits()) == 1  # Alice's alone: the click sent none
    assert world.jobs(chain_id) == ["88154", "88887"]
    assert world.services.store.submits_in_flight.sent_before("dev", float("inf")) == []
    assert present(approvals.get(token)).state == "done"


CLICK_HOLDS = {
    "en": "`resume` failed: not submitted: <@W0LEAD> pressed Cancel and resume on mix's job "
          "88154 at 09:03 UTC: it cancels that job and resubmits its run, and that resubmit's "
          "job is not recorded yet; two jobs of a recipe side by side would write the same "
          "checkpoints. That run's thread tells which job it is",
    "ko": "`resume` 실패: 제출하지 않았습니다: <@W0LEAD>님이 09:03 UTC에 mix의 작업 88154에 "
          "대해 `취소 후 재개`를 눌렀습니다: 그 작업을 취소하고 실행을 재제출하며, 그 재제출의 "
          "작업은 아직 기록되지 않았습니다. 한 레시피의 작업 두 개가 나란히 실행되면 같은 "
          "체크포인트에 쓰게 됩니다. 어떤 작업인지는 그 실행의 스레드가 알려 줍니다",
}


@pytest.mark.parametrize("answer_lost", [False, True], ids=["recorded", "answer_lost"])
def test_a_resume_typed_between_a_cancel_and_resumes_scancel_and_its_resubmit_is_refused(
        world: World, lang: str, answer_lost: bool) -> None:
    """88154 stalled; W0LEAD presses its Cancel and resume, which claims the run's resubmit
    before its scancel (bot.services.submit_claim). The moment the scancel took effect Alice
    runs `/train resume mix`: her resume is refused before its sbatch (the click's resubmit
    holds the run), naming the click (en, ko: it said "another submit of mix is under way",
    the click keeping no row in flight until its resubmit), and the click's resubmit queues
    the run's one job, 88887 (`answer_lost`: its sbatch's answer lost and the lookup by name
    failing, it is kept in flight as the click's, not Alice's). Either way one sbatch is
    sent, the click's."""
    chain_id = world.run("RUNNING")
    token, ts = world.prompt(chain_id, offer_cancel=True)
    alice: list[str] = []

    def alice_resumes() -> None:
        if answer_lost:
            world.slurm.lost = 1
            world.slurm.lookup_error = CommandTimedOut(["squeue"], 5)
        alice.append(world.train("resume mix"))

    world.slurm.after_cancel = alice_resumes
    world.click_texts(ActionId.CANCEL_RESUME, token, ts)
    assert world.slurm.acted("cancel") == [88154]
    assert alice == [CLICK_HOLDS[lang]]  # the click named (it keeps no row in flight yet)
    assert len(world.slurm.submits()) == 1  # the click's alone: Alice's sent none
    if answer_lost:
        assert world.jobs(chain_id) == ["88154"]
        assert [f.actor for f in world.services.store.submits_in_flight.sent_before(
            "dev", float("inf"))] == [APPROVER]
    else:
        assert world.jobs(chain_id) == ["88154", "88887"]
        assert "88887" in world.prompt_text(ts)
        assert world.services.store.submits_in_flight.sent_before("dev", float("inf")) == []
        assert present(world.services.store.approvals.get(token)).state == "done"
    assert present(world.services.store.attempts.get_by_job("88154", "dev")).result == "CANCELLED"
