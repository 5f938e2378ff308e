"""A click or command the store's close stops after a committed store step a retry meets
(a prompt claimed or dismissed, a submit kept in flight) says so, not "nothing was done"."""
from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from fakes import FakeSlurm, make_context, recorded
from support.bolt_driver import click_body
from support.slack_answers import Answers, Client

from bot.services.prompts import create_resubmit_prompt
from bot.slack.render import render_blocks
from bot.slack.views import ActionId
from bot.store import Store
from handlers.actions import make_run_click
from handlers.fence import ListenerFence

LOG = logging.getLogger("test")
NOW = 1_000_000.0


def world(store: Store) -> tuple[Any, str]:
    ctx = make_context(store, FakeSlurm(), clock=lambda: NOW + 10)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died", resume_iter=3000)
    return ctx, prompt.token


def close_after(store: Store, repo: object, method: str) -> None:
    """`repo.method` (a repository of `store`) closes `store` once it returns: the stop's close
    landing right after the step it committed."""
    original = getattr(repo, method)

    def then_close(*a: Any, **kw: Any) -> Any:
        result = original(*a, **kw)  # committed
        store.close()  # the stop's close lands right after
        return result

    setattr(repo, method, then_close)


def click(ctx: Any, action: ActionId, token: str) -> tuple[Answers, Client]:
    answers, client = Answers(), Client()
    body = click_body(action, token, user="W0LEAD", channel="C0TRAIN", message_ts="1.1",
                      response_url="-")
    make_run_click(ctx, ListenerFence())(body, body["actions"][0], client, answers,
                                         SimpleNamespace(headers={}), LOG)
    return answers, client


@pytest.mark.parametrize("action,repo_method", [(ActionId.RESUBMIT, "claim"),
                                                (ActionId.DISMISS, "refuse")])
def test_a_click_stopped_after_its_claim_or_refusal_says_what_it_left(
        store_url: str, action: ActionId, repo_method: str) -> None:
    store = Store.open(store_url)
    ctx, token = world(store)
    close_after(store, store.approvals, repo_method)
    answers, _ = click(ctx, action, token)
    [answer] = answers.sent
    # the restarted bot, a minute later, as told
    again = Store.open(store_url)
    approval = again.approvals.get(token)
    assert approval is not None
    ctx2 = make_context(again, FakeSlurm(), clock=lambda: NOW + 70)
    click(ctx2, action, token)  # the retry is refused: the prompt was decided
    again.close()
    assert "nothing was done" not in answer["text"], (answer["text"], approval.state)
    said = "claimed the prompt" if repo_method == "claim" else "dismissed the prompt"
    assert said in answer["text"], answer["text"]
    if repo_method == "claim":  # the claim's takeover bound, from its claim
        assert "trainbot gives it back in about 1 h 38 min" in answer["text"]


def test_a_submit_stopped_after_its_row_in_flight_says_nothing_went_to_slurm(
        store_url: str) -> None:
    from support.bolt_driver import slash_body

    from handlers.slash_commands import make_run_train
    store = Store.open(store_url)
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, slack=False, clock=lambda: NOW)
    close_after(store, store.submits_in_flight, "add")
    answers = Answers()
    make_run_train(ctx, ListenerFence())(
        slash_body("submit mix", user="U0ALICE", channel="C0TRAIN", response_url="-"),
        answers, LOG)
    [answer] = answers.sent
    again = Store.open(store_url)
    ctx2 = make_context(again, FakeSlurm(), slack=False, clock=lambda: NOW + 60)
    answers2 = Answers()
    make_run_train(ctx2, ListenerFence())(
        slash_body("submit mix", user="U0ALICE", channel="C0TRAIN", response_url="-"),
        answers2, LOG)
    assert "was sent at" in answers2.sent[0]["text"]  # what its row tells a retry
    again.close()
    assert "nothing was done" not in answer["text"]
    assert "nothing was sent to Slurm" in answer["text"], answer["text"]
    assert "settles that record in about 21 min" in answer["text"]
    assert slurm.calls == [] or "sbatch" not in str(slurm.calls)


def test_a_probe_click_stopped_after_its_claim_says_the_probe_runs(store_url: str) -> None:
    from bot.services.probes import create_probe_offer

    store = Store.open(store_url)
    ctx = make_context(store, FakeSlurm(), clock=lambda: NOW + 10,
                       dataloader_probe={"factory": "mydata.datasets:build_train"})
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 50)
    store.attempts.record(chain_id=chain.id, job_id="88155", now=NOW - 50)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    offer = create_probe_offer(ctx, recipe="mix", chain_id=chain.id, job_id="88155", now=NOW)
    assert offer is not None
    close_after(store, store.approvals, "claim")
    answers, _ = click(ctx, ActionId.RUN_PROBE, offer["value"])
    [answer] = answers.sent
    assert "nothing was done" not in answer["text"]
    assert "queued the DataLoader probe" in answer["text"], answer["text"]


def test_a_home_stop_watching_stopped_after_it_says_the_job_is_not_watched(
        store_url: str) -> None:
    from fakes import adopt

    from handlers.home import make_stop_watching

    store = Store.open(store_url)
    slurm = FakeSlurm()
    slurm.add(4242, name="eval-run", state="RUNNING", user="bob")
    ctx = make_context(store, slurm, clock=lambda: NOW, slack_lang="ko")
    chain_id = adopt(ctx, 4242, actor="W0LEAD", now=NOW)
    close_after(store, store.chains, "set_status")
    client = Client()
    make_stop_watching(ctx, ListenerFence())(body={"user": {"id": "W0LEAD"}},
                                             action={"value": str(chain_id)}, logger=LOG,
                                             client=client)
    [dm] = client.posted
    assert dm["text"] == (
        ":warning: trainbot이 종료 또는 재시작 중이어서 이 클릭을 도중에, 클러스터에 아무것도 "
        "보내기 전에 멈췄습니다. 그 전에 작업 감시를 중단했습니다: 그 결정은 유지되지만, 실행 "
        "스레드에는 그 사실이 나오지 않을 수 있습니다."), dm["text"]


def test_a_thread_click_stopped_by_the_close_answers_in_its_channels_language(
        store_url: str) -> None:
    store = Store.open(store_url)
    ctx = make_context(store, FakeSlurm(), clock=lambda: NOW, lang="ko")  # slack.lang: en
    store.close()
    answers, _ = click(ctx, ActionId.RESUBMIT, "some-token")
    [answer] = answers.sent
    assert answer["text"].startswith(":hourglass_flowing_sand: trainbot이"), answer["text"]


class SubmitThenClose(FakeSlurm):
    """Slurm queues the job; the store's close lands before the click records it."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def submit(self, spec: Any, *, script: str | None = None) -> int:  # noqa: ANN401
        job_id = super().submit(spec, script=script)
        self.store.close()
        return job_id


@pytest.mark.parametrize("lang,said", [
    ("en", (":warning: trainbot is shutting down or restarting, so it stopped this click part "
            "way, after it had started `sbatch`. Nothing more of it is done. It had claimed the "
            "prompt: within about 1 h 38 min trainbot settles what the click started and says "
            "in the run's thread what came of it; only if nothing did are the prompt's buttons "
            "usable again. It had recorded its submit as on its way: within about 21 min "
            "trainbot looks its job up in Slurm, and records it or says that nothing was "
            "queued. Check what it did (`/train status`, the run's thread) before you click "
            "again.")),
    ("ko", (":warning: trainbot이 종료되거나 다시 시작하는 중이라 이 클릭을 `sbatch`을(를) 시작한 "
            "뒤 중간에 멈췄습니다. 나머지는 하지 않습니다. 그 전에 요청을 선점했습니다: trainbot이 "
            "약 1시간 38분 안에 클릭이 시작한 일을 정리하고 그 결과를 실행 스레드에 알립니다. 아무 "
            "결과도 없을 때에만 요청의 버튼을 다시 쓸 수 있습니다. 그 전에 제출을 진행 중으로 "
            "기록했습니다: trainbot이 약 21분 안에 Slurm에서 그 작업을 찾아 기록하거나, 대기열에 "
            "들어간 것이 없다고 알립니다. 다시 클릭하기 전에 무엇이 되었는지 확인하세요 "
            "(`/train status`, 실행의 스레드).")),
])
def test_a_resubmit_click_stopped_after_its_sbatch_says_it_and_the_claim(
        store: Store, lang: str, said: str) -> None:
    """Before, only the sbatch was said (check what it did), not the claimed prompt a retry
    meets as decided, nor when trainbot settles it."""
    slurm = SubmitThenClose(store)
    ctx = make_context(store, slurm, clock=lambda: NOW + 10, slack_lang=lang)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died", resume_iter=3000)
    answers, _ = click(ctx, ActionId.RESUBMIT, prompt.token)
    [answer] = answers.sent
    assert slurm.acted("submit"), "the sbatch went out"
    assert answer["text"] == said, answer["text"]


def test_a_cancel_and_resumes_resubmit_stopped_after_its_row_says_its_settles_lead(
        store_url: str) -> None:
    """A Cancel and resume's resubmit (its approval approved) stopped by the close right after
    its row in flight is kept: the row is settled once its settle's lead has passed
    (settle_lead_s, 7079 s with the default deadlines: about 1 h 58 min), not the plain
    in-flight bound (about 21 min), so the stop's reply tells that wait."""
    from bot.services.runs import submit_and_announce
    from bot.services.submit_deadlines import approval_intent
    from bot.services.train import say
    from handlers.fence import SideEffects, stopped_by_close

    store = Store.open(store_url)
    ctx = make_context(store, FakeSlurm(), clock=lambda: NOW)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    token = store.approvals.create(action="cancel_resume", payload={"cluster": "dev"},
                                   allowed=["W0LEAD"], expires_at=NOW + 86_400.0,
                                   now=NOW - 60, target_job="88154", chain_id=chain.id)
    assert store.approvals.claim(token, "W0LEAD", NOW - 50, step="claimed").claimed
    close_after(store, store.submits_in_flight, "add")
    effects = SideEffects()
    with pytest.raises(Exception) as stopped:
        submit_and_announce(effects.context(ctx), "mix", actor="W0LEAD", now=NOW,
                            chain_id=chain.id, reconcile_unknown=True,
                            intent=approval_intent(token), after_job="88154")
    assert stopped_by_close(stopped.value)
    assert effects.started == []
    assert effects.left(NOW) == [{"kind": "in_flight", "wait_s": 7079.0}]
    text = say(ctx, None, "stopping", started=effects.started, steps=effects.left(NOW))
    assert "trainbot settles that record in about 1 h 58 min" in text, text


def test_a_click_stopped_after_undoing_its_claim_and_row_does_not_say_to_wait_for_them(
        store_url: str) -> None:
    """A Resubmit click claims its prompt and keeps its resubmit's row in flight, then is
    refused by another submit of mix holding its claim: the row is removed and the prompt's
    claim released again. The stop's close landing right after that release says nothing
    of a claimed prompt given back in about 1 h 38 min nor of a record settled in about
    21 min: both are gone, and the click can be pressed again at once."""
    from bot.services.submit_claim import claim_submit, submit_holder

    store = Store.open(store_url)
    ctx, token = world(store)
    assert claim_submit(store, "mix", None, None, holder=submit_holder(), own=None, now=NOW,
                        hold_s=3600.0, clusters=["dev"]) is None  # a new run's, under way
    close_after(store, store.approvals, "release")
    answers, _ = click(ctx, ActionId.RESUBMIT, token)
    [answer] = answers.sent
    again = Store.open(store_url)
    approval = again.approvals.get(token)
    flights = again.submits_in_flight.of_recipe("mix")
    again.close()
    assert approval is not None and approval.state == "pending" and flights == []
    assert "claimed the prompt" not in answer["text"], answer["text"]
    assert "settles that record" not in answer["text"], answer["text"]
    assert "nothing was done" in answer["text"], answer["text"]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("started", [[], ["sbatch"]])
@pytest.mark.parametrize("kind", ["claimed", "refused", "probe_queued", "unwatched",
                                  "in_flight"])
def test_a_train_commands_stop_reply_never_speaks_of_a_click_or_a_prompt(
        kind: str, started: list[str], lang: str) -> None:
    """A /train command leaves a submit's row in flight or a run unwatched, never a prompt's
    claim, dismissal or queued probe (a click's: click_reply.json.j2). Before, train_reply
    had those branches too, which told a command's author what "the click" started."""
    _, text = render_blocks("train_reply", lang, {
        "kind": "stopping", "started": started, "steps": [{"kind": kind, "wait_s": 60.0}]})
    for word in ("click", "prompt", "클릭", "프롬프트"):
        assert word not in text, text


class CancelThenClose(FakeSlurm):
    """Slurm cancels the job; the store's close lands as the scancel returns (`at="cancel"`),
    or once the click's resubmit has kept its row in flight (`at="row"`)."""

    def __init__(self, store: Store, at: str) -> None:
        super().__init__()
        self.store, self.at = store, at

    def cancel(self, job_id: int) -> None:
        super().cancel(job_id)
        if self.at == "cancel":
            self.store.close()


@pytest.mark.parametrize("lang,said", [
    ("en", ("Its scancel was sent, so its job may be cancelled: trainbot then resubmits the "
            "run, and if that resubmit's job is not recorded, it looks the job up in Slurm "
            "within about 1 h 58 min and records it or says in the run's thread that nothing "
            "was queued.")),
    ("ko", ("그 전에 scancel을 보냈으므로 작업이 취소되었을 수 있습니다: 그러면 trainbot이 실행을 "
            "다시 제출하고, 그 재제출의 작업이 기록되지 않으면 약 1시간 58분 안에 Slurm에서 그 "
            "작업을 찾아 기록하거나, 대기열에 들어간 것이 없다고 실행 스레드에 알립니다.")),
])
@pytest.mark.parametrize("at", ["cancel", "row"])
def test_a_cancel_and_resume_click_stopped_after_its_scancel_says_when_its_resubmit_settles(
        store: Store, lang: str, said: str, at: str) -> None:
    """W0LEAD's Cancel and resume on 88154; the store's close lands as its scancel returns:
    the reply names the scancel and, as it would for the resubmit's row in flight, when that
    resubmit is settled at the latest (in_flight_settled_at, its settle leading: settle_lead_s,
    7079 s with the default deadlines), the claimed prompt's wait as long. Before, only the
    scancel and the claim's 1 h 38 min were said. Closed once the row is kept (`row`), the
    row's own sentence says it, not this one."""
    from support.mix_prompt import mix_prompt

    slurm = CancelThenClose(store, at)
    ctx = make_context(store, slurm, clock=lambda: NOW + 10, slack_lang=lang)
    _, prompt = mix_prompt(ctx, now=NOW, run_at=NOW - 100, running=slurm, watched=True)
    if at == "row":
        close_after(store, store.submits_in_flight, "add")
    answers, _ = click(ctx, ActionId.CANCEL_RESUME, prompt.token)
    [answer] = answers.sent
    assert slurm.acted("cancel") == [88154]
    assert "`scancel 88154`" in answer["text"], answer["text"]
    assert (said in answer["text"]) == (at == "cancel"), answer["text"]
    assert ("1 h 38 min" in answer["text"] or "1시간 38분" in answer["text"]) is False
