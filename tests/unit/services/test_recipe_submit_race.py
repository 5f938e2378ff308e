"""A Resubmit click on an older run of `mix` and a `/train submit mix` (a new run) at the same
instant: each passed the checks that look for the other's recorded job (neither was recorded
yet) and both queued, two copies writing the same checkpoints. A submit of a recipe now holds
the recipe's claim in the store (bot.services.submit_claim) from before its sbatch until its
job is recorded: one goes through, the other is refused naming the one under way."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from fakes import FakeSlurm, make_context, present
from support.mix_prompt import mix_prompt

from bot.core.train_grammar import parse_command
from bot.services.approvals import ActionId, handle_click
from bot.services.train import execute
from bot.store import Store

NOW = 1_000_000.0  # 13:46 UTC


class SbatchDuring(FakeSlurm):
    """Slurm whose first sbatch runs `during` (another submit, made while this one is in
    flight) before it queues its job; `slow_s`: each sbatch takes that long."""

    def __init__(self, slow_s: float = 0.0) -> None:
        super().__init__(first_id=90500)
        self.during: Callable[[], object] | None = None
        self.slow_s = slow_s
        self._lock = threading.Lock()

    def submit(self, spec, *, script: str | None = None) -> int:
        during, self.during = self.during, None
        if during is not None:
            during()
        time.sleep(self.slow_s)
        with self._lock:
            return super().submit(spec, script=script)


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


NEW_RUN_UNDER_WAY = {
    "en": "Nothing was resubmitted: not submitted: <@U0ALICE>'s submit of a new run of mix was "
          "sent at 13:46 UTC and its job is not recorded yet; two jobs of a recipe side by "
          "side would write the same checkpoints. The new run's thread tells which job it is. "
          "This prompt stays as it is: if that submit queues no job, press its button again.",
    "ko": "재제출하지 않았습니다: 제출하지 않았습니다: <@U0ALICE>님의 mix 새 실행 제출이 13:46 "
          "UTC에 보내졌고 아직 그 작업이 기록되지 않았습니다. 한 레시피의 작업 두 개가 나란히 "
          "실행되면 같은 체크포인트에 쓰게 됩니다. 어떤 작업인지는 새 실행의 스레드가 알려 "
          "줍니다. 이 요청은 그대로 남아 있습니다: 그 제출이 작업을 대기열에 넣지 못하면 버튼을 "
          "다시 누르세요.",
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_resubmit_click_while_a_new_run_is_submitted_is_refused_naming_it(
        store: Store, lang: str) -> None:
    """Alice's `/train submit mix` is at its sbatch when the approver presses Resubmit on the
    old run's incident: the click queues nothing and says whose new run is under way; the
    click leaves the prompt, which is out of date once the new run's job is recorded
    (after_submit.supersede_prompts): pressed again, it says so."""
    slurm = SbatchDuring()
    ctx = make_context(store, slurm, clock=lambda: NOW, slack_lang=lang)
    _, prompt = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False)
    clicks = []
    slurm.during = lambda: clicks.append(handle_click(ctx, prompt.token, ActionId.RESUBMIT,
                                                      "U0APPR", NOW + 1))
    reply = execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN",
                    now=NOW)
    assert reply.job_id == "90500"
    [click] = clicks
    assert click.status == "busy" and click.ephemeral == NEW_RUN_UNDER_WAY[lang]
    assert len(slurm.submits()) == 1
    assert present(store.approvals.get(prompt.token)).state == "stale"
    again = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW + 2)
    assert again.status == "stale" and len(slurm.submits()) == 1


def test_a_new_run_submitted_while_a_resubmit_click_is_at_its_sbatch_is_refused_naming_it(
        store: Store) -> None:
    """The approver's Resubmit of the old run's job 88154 is at its sbatch when Alice types
    `/train submit mix`: her submit queues nothing and says which run's resubmit is under
    way and whose."""
    slurm = SbatchDuring()
    ctx = make_context(store, slurm, clock=lambda: NOW)
    _, prompt = mix_prompt(ctx, now=NOW, summary="88154 died", offer_cancel=False)
    replies = []
    slurm.during = lambda: replies.append(execute(ctx, parse_command("submit mix"),
                                                  actor="U0ALICE", channel="C0TRAIN",
                                                  now=NOW + 1))
    click = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", NOW)
    assert click.status == "done" and click.job_id == "90500"
    assert [r.text for r in replies] == [
        "`submit` failed: not submitted: <@U0APPR>'s resubmit of mix's run of job 88154 was "
        "sent at 13:46 UTC and its job is not recorded yet; two jobs of a recipe side by side "
        "would write the same checkpoints. That run's thread tells which job it is"]
    assert len(slurm.submits()) == 1 and store.submits_in_flight.of_recipe("mix") == []


def test_a_click_and_a_new_submit_racing_on_two_replicas_queue_one_job(tmp_path) -> None:
    """Two replicas (each its own store connection) at once: one presses Resubmit on the old
    run, the other runs `/train submit mix`; each sbatch takes a while. One job is queued,
    the other submit is refused before its sbatch, naming the one under way."""
    url = f"sqlite:///{tmp_path / 'replicas.db'}"
    slurm = SbatchDuring(slow_s=0.5)
    with Store.open(url) as first:
        _, prompt = mix_prompt(make_context(first, slurm), now=time.time(),
                               summary="88154 died", offer_cancel=False)
    start = threading.Barrier(2)
    said: dict[str, str] = {}

    def click() -> None:
        with Store.open(url) as store:
            ctx = make_context(store, slurm)
            start.wait()
            result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "U0APPR", time.time())
            said["click"] = result.status + ": " + str(result.ephemeral or result.update_text)

    def submit() -> None:
        with Store.open(url) as store:
            ctx = make_context(store, slurm)
            start.wait()
            reply = execute(ctx, parse_command("submit mix"), actor="U0ALICE",
                            channel="C0TRAIN", now=time.time())
            said["submit"] = reply.text

    threads = [threading.Thread(target=click), threading.Thread(target=submit)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(slurm.submits()) == 1, said
    refused = [text for text in said.values() if "not submitted" in text]
    assert len(refused) == 1, said
    assert "run of mix was sent at" in refused[0] or "run of job 88154 was sent at" in \
        refused[0], said
