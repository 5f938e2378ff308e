"""Why a request cannot be done, said in the recipe's language from where it is refused: a
status target that is neither a recipe nor a job, a submit into a run that cannot take it."""

from __future__ import annotations

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, make_context

from bot.core import train_grammar as c
from bot.core.text import render_text
from bot.services import UsageProblem
from bot.services.submit import submit_recipe
from bot.services.train import execute
from bot.slack.render import translator


def test_a_status_target_that_is_no_recipe_nor_job_is_said_in_korean(store) -> None:
    """job_status says it as a sentence; /train status used to pass on only its English."""
    ko = execute(make_context(store, slack_lang="ko"), c.Status("mixx"), actor="U0ALICE",
                 channel="C0TRAIN", now=T0).text
    assert "'mixx'은(는) 레시피도 작업 id도 아닙니다. `status`, `status RECIPE` (레시피: mix)" \
        in ko, ko
    assert "neither" not in ko
    en = execute(make_context(store), c.Status("mixx"), actor="U0ALICE", channel="C0TRAIN",
                 now=T0).text
    assert "'mixx' is neither a recipe nor a job id; use `status`" in en, en


def refused(store, *, chain: str | None, array_task: int | None, **recipe) -> UsageProblem:
    """The UsageProblem of submitting recipe `mix` (`recipe` its fields) into a run:
    `chain` "array" (one of the array kind), "plain" (a plain one), "gone" (an id trainbot
    does not have)."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, **recipe)
    chain_id = 999 if chain == "gone" else None if chain is None else store.chains.create(
        recipe="mix", cluster="dev", job_name="mix", now=T0, kind=chain).id
    with pytest.raises(UsageProblem) as err:
        submit_recipe(ctx.config, "mix", slurm=slurm, sftp=FakeSFTP(), store=store, now=T0,
                      actor="U0ALICE", chain_id=chain_id, array_task=array_task)
    assert slurm.submits() == []
    return err.value


@pytest.mark.parametrize("case, english, korean", [
    ({"chain": "array", "array_task": None, "array": "0-2%2"},
     "recipe 'mix' submits a job array (0-2%2): `/train submit mix` submits the whole array "
     "again, and a failed task is resubmitted alone from its incident (Resubmit) or "
     "automatically",
     "레시피 'mix'은(는) job array(0-2%2)를 제출합니다: `/train submit mix`는 array 전체를 다시 "
     "제출하며, 실패한 task는 그 장애 메시지의 Resubmit 버튼으로 또는 자동으로 따로 재제출됩니다"),
    ({"chain": "plain", "array_task": 1},
     "recipe 'mix' submits no job array (no `array:`); task 1 cannot be resubmitted alone",
     "레시피 'mix'은(는) job array를 제출하지 않습니다(`array:` 없음). task 1만 따로 재제출할 수 "
     "없습니다"),
    ({"chain": "plain", "array_task": 1, "array": "0-2%2"},
     "task 1 of 'mix' is resubmitted into its array's own run, not into another one: use the "
     "Resubmit button of the task's incident",
     "'mix'의 task 1은(는) 다른 실행이 아니라 그 array의 실행으로 재제출됩니다: 그 task 장애 "
     "메시지의 Resubmit 버튼을 쓰세요"),
    ({"chain": "gone", "array_task": None},
     "trainbot has no run 999 of 'mix' any more (removed, or never recorded), so nothing can "
     "be resubmitted into it: start a new run with `/train submit mix`.",
     "trainbot에 'mix'의 실행 999이(가) 더 이상 없어(삭제되었거나 기록된 적이 없음) 그 실행으로는 "
     "재제출할 수 없습니다: `/train submit mix`(으)로 새 실행을 시작하세요."),
], ids=["whole-array-into-its-run", "task-of-a-plain-recipe", "task-into-a-plain-run",
        "run-gone"])
def test_a_submit_into_a_run_that_cannot_take_it_says_why_in_both_languages(
        store, case: dict, english: str, korean: str) -> None:
    err = refused(store, **case)
    assert str(err) == english
    assert render_text(err.args[0], translator("ko").gettext) == korean
