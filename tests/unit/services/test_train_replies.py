"""`/train` replies come from templates/train_reply.json.j2 through the one renderer: the
English a person reads, and the recipe's language (Korean) from the Babel catalogue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import pytest
from fakes import FakeSlurm, make_context, recorded

from bot.cluster.errors import ClusterError, ClusterUnavailable
from bot.core.train_grammar import JobControl, Logs, Watch, parse_command
from bot.services.train import execute, say
from bot.store import Store

NOW = 1_732_871_000.0
Verb = Literal["cancel", "hold", "release"]  # JobControl's


@pytest.mark.parametrize(("lang", "kind", "values", "text"), [
    ("en", "controlled", {"verb": "cancel", "job": "6100_2", "raw": 6103, "actor": "U1"},
     "Job 6100_2 (job 6103) cancelled by <@U1>."),
    ("ko", "controlled", {"verb": "cancel", "job": "6100_2", "raw": 6103, "actor": "U1"},
     "<@U1>님이 작업 6100_2 (작업 6103)을(를) 취소했습니다."),
    ("en", "watching_array", {"job": "6100", "name": "sweep", "tasks": 2, "waiting": True,
                              "cluster": "dev"},
     "Watching array 6100 (sweep: 2 task(s) started, more waiting to start) on dev, one "
     "thread with a row per task."),
    ("ko", "watching_array", {"job": "6100", "name": None, "tasks": 0, "waiting": False,
                              "cluster": "dev"},
     "dev의 array 6100 (이름 없음: task 0개 시작됨)을(를) 감시합니다. "
     "스레드 하나에 task마다 한 줄씩."),
    ("ko", "usage", {"problem": "no such job", "usage": "/train logs JOBID|JOBID_TASK"},
     "no such job\n사용법: `/train logs JOBID|JOBID_TASK`"),
    ("ko", "refused", {"reason": "only group leads can cancel it"},
     "거부됨: only group leads can cancel it."),
    ("en", "submitted", {"recipe": "mix", "job": "88887", "attempt": 2,
                         "start": "from iteration 3000", "asked": "88017", "missed": ""},
     "mix: submitted job 88887 (attempt 2), from iteration 3000. Asked in the thread whether "
     "to hold 88017."),
    ("ko", "log_tail", {"lines": 5, "path": "/x.out", "text": "", "empty": True},
     "`/x.out`의 마지막 5줄:\n```(비어 있음)```"),
    ("ko", "never_run", {"recipe": "mix"}, "mix은(는) 아직 trainbot으로 실행된 적이 없습니다."),
])
def test_a_reply_in_the_recipes_language(store, lang, kind, values, text) -> None:
    ctx = make_context(store, lang=lang)
    assert say(ctx, "mix", kind, **values) == text


def test_commands_answer_through_the_template_in_the_recipes_language(store) -> None:
    slurm = FakeSlurm()
    slurm.add(6103, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=2)
    ctx = make_context(store, slurm)
    en = execute(ctx, JobControl("hold", 6100, 2), actor="W0LEAD", channel=None, now=NOW)
    assert en.text == "Job 6100_2 (job 6103) held by <@W0LEAD>."
    watched = execute(ctx, Watch(6100, 2), actor="W0LEAD", channel=None, now=NOW)
    assert watched.text == "Watching job 6100_2 (sweep, RUNNING, its own id 6103) on dev."
    again = execute(ctx, Watch(6100, 2), actor="W0LEAD", channel=None, now=NOW)
    assert again.text == "Job 6100_2 is already watched."


@pytest.mark.parametrize(("lang", "reply", "note"), [
    ("en", "mix: submitted job array 6100 (tasks 0-2%2), each task finding its own checkpoint; "
           "one thread with a row per task.",
     "*mix*: job array 6100 (tasks 0-2%2) submitted by <@U0ALICE> (name `sweep`), each task "
     "finding its own checkpoint; each task's row is in this thread's first message"),
    ("ko", "mix: job array 6100 (task 0-2%2)을(를) 제출했습니다 (각 task가 자신의 체크포인트를 "
           "찾음). 스레드 하나에 task마다 행이 있습니다.",
     "*mix*: job array 6100 (task 0-2%2) 제출 — <@U0ALICE> (이름 `sweep`), 각 task가 자신의 "
     "체크포인트를 찾음; task마다의 행은 이 스레드의 첫 메시지에 있습니다"),
])
def test_an_array_submit_says_where_its_tasks_start_as_trainbot_submit_does(
        store, lang: str, reply: str, note: str) -> None:
    """A whole array's reply and thread note say where its tasks start in
    bot.services.submit.describe_start's phrase, the one `trainbot submit` prints."""
    from bot.services.runs import submitted_view
    from bot.services.submit import describe_start
    from bot.services.submit_result import SubmitResult
    from bot.services.threads import render

    ctx = make_context(store, lang=lang)
    recipe = ctx.config.recipe("mix")
    result = SubmitResult(job_id="6100", chain_id=1, attempt_no=0, job_name="sweep",
                          checkpoint=None, array="0-2%2")
    start = describe_start(result, recipe)
    assert str(start) == "each task finding its own checkpoint"  # `trainbot submit`'s words
    assert say(ctx, "mix", "submitted", recipe="mix", job="6100", attempt=0, start=start,
               array="0-2%2", asked="", missed="") == reply
    assert render(ctx, "submitted", "mix",
                  submitted_view("mix", result, "U0ALICE", recipe))[1] == note


@pytest.mark.parametrize(("lang", "reply", "note"), [
    ("en", "mix: submitted job 88887 (attempt 1), resuming from iteration 3,000 "
           "(`/ck/mix/iter_000003000`).",
     "*mix*: job 88887 submitted by <@U0ALICE> (attempt 1, name `wm-mix`), resuming from "
     "iteration 3,000 (`/ck/mix/iter_000003000`)"),
    ("ko", "mix: 작업 88887 제출됨 (시도 1), iteration 3,000부터 재개 (`/ck/mix/iter_000003000`).",
     "*mix*: 작업 88887 제출 — <@U0ALICE> (시도 1, 이름 `wm-mix`), iteration 3,000부터 재개 "
     "(`/ck/mix/iter_000003000`)"),
])
def test_a_submit_says_where_it_resumes_as_every_resume_does(store, lang: str, reply: str,
                                                             note: str) -> None:
    """A submit that resumes from a checkpoint says so in bot.core.policy.resume_start's
    words (`from iteration 3,000`, the Korean `iteration 3,000부터`), its path after them, in
    the `/train` reply, the thread note and `trainbot submit` alike."""
    from bot.core.checkpoints import Checkpoint
    from bot.services.runs import submitted_view
    from bot.services.submit import describe_start
    from bot.services.submit_result import SubmitResult
    from bot.services.threads import render

    ctx = make_context(store, lang=lang)
    recipe = ctx.config.recipe("mix")
    result = SubmitResult(job_id="88887", chain_id=1, attempt_no=1, job_name="wm-mix",
                          checkpoint=Checkpoint(path="/ck/mix/iter_000003000", iteration=3000,
                                                source="pointer"))
    start = describe_start(result, recipe)
    assert str(start) == "resuming from iteration 3,000 (`/ck/mix/iter_000003000`)"
    assert say(ctx, "mix", "submitted", recipe="mix", job="88887", attempt=1, start=start,
               array=None, asked="", missed="") == reply
    assert render(ctx, "submitted", "mix",
                  submitted_view("mix", result, "U0ALICE", recipe))[1] == note


@pytest.mark.parametrize(("lang", "status", "text"), [
    ("en", "active", "Array 6200 is already watched, in the thread of recipe mix's run."),
    ("ko", "active", "array 6200은(는) 레시피 mix 실행의 스레드에서 이미 감시하고 있습니다."),
    ("en", "stopped", "Array 6200 is a run of recipe mix that trainbot submitted and no longer "
                      "watches: that run's thread tells of it."),
    ("ko", "stopped", "array 6200은(는) trainbot이 제출한 레시피 mix의 실행이며 지금은 감시하지 "
                      "않습니다: 그 실행의 스레드를 보세요."),
])
def test_watching_an_array_a_recipes_run_records_points_to_that_run(store, lang, status,
                                                                    text) -> None:
    """`/train watch 6200` of the array recipe mix's run submitted, which records its started
    tasks (6200_1 as 6201, 6200_2 as 6203) and watches them: the reply says it is watched in
    that run's thread (or, the run no longer active, that its thread tells of it) and nothing
    is adopted: no new chain, no new watched job. Before, the array was adopted as a new
    array chain with a thread of its own beside the run's."""
    slurm = FakeSlurm()
    slurm.add(6200, name="sweep", state="PENDING", array_job_id=6200)
    slurm.add(6201, name="sweep", state="RUNNING", array_job_id=6200, array_task_id=1)
    slurm.add(6203, name="sweep", state="RUNNING", array_job_id=6200, array_task_id=2)
    ctx = make_context(store, slurm, lang=lang)
    run = store.chains.create(recipe="mix", cluster="dev", job_name="sweep", now=1,
                              kind="array", array_job_id=6200)
    for job, task in (("6201", 1), ("6203", 2)):
        store.attempts.record(chain_id=run.id, job_id=job, now=2, state="RUNNING",
                              display_id=f"6200_{task}")
    if status == "active":
        store.watched_jobs.add("dev", "6200", now=2, chain_id=run.id)
    else:
        store.chains.set_status(run.id, status, now=3)
    watched = [(w.job_id, w.chain_id) for w in store.watched_jobs.list()]
    reply = execute(ctx, Watch(6200), actor="U0OWNER", channel="C0TRAIN", now=NOW)
    assert reply.text == text
    assert reply.chain_id == run.id
    assert [ch.id for st in ("active", "stopped", "completed")
            for ch in store.chains.with_status(st)] == [run.id]
    assert [(w.job_id, w.chain_id) for w in store.watched_jobs.list()] == watched
    [entry] = store.audit.recent(1)
    assert (entry.action, entry.result, entry.job_id, entry.recipe) == (
        "command.watch", "unchanged", "6200", "mix")


def _array_6101(store: Store) -> FakeSlurm:
    """Recipe mix's run of array 6101 (tasks 0-3): 6101_0 (raw 6102) completed, 6101_1 and
    6101_2 (6103, 6104) running, 6101_3 not started yet (the pending remainder, which keeps
    the array's own id 6101 in Slurm's listings, `6101_[3]`)."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="sweep", now=1,
                                kind="array", array_job_id=6101)
    slurm = FakeSlurm()
    slurm.add(6101, name="sweep", state="PENDING", array_job_id=6101)
    for raw, task, state in ((6102, 0, "COMPLETED"), (6103, 1, "RUNNING"),
                             (6104, 2, "RUNNING")):
        slurm.add(raw, name="sweep", state=state, array_job_id=6101, array_task_id=task)
        store.attempts.record(chain_id=chain.id, job_id=str(raw), now=2, state=state,
                              display_id=f"6101_{task}")
    return slurm


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "Array 6101 cancelled by <@W0LEAD>: running 6101_[1-2] stopped; the tasks not "
           "started yet cancelled; 6101_0 already ended (left as they were)."),
    ("ko", "<@W0LEAD>님이 array 6101을(를) 취소했습니다: 실행 중이던 6101_[1-2] 중지; 아직 "
           "시작하지 않은 task 취소; 6101_0은(는) 이미 끝남 (그대로 둠)."),
])
def test_cancelling_an_arrays_own_id_says_what_happened_to_which_tasks(
        store, lang: str, said: str) -> None:
    """`/train cancel 6101`, 6101 an array's own id: `scancel 6101` cancels every task of it
    still running or waiting (tests/integration/test_slurm_arrays.py shows it on Slurm), and
    the reply, posted in the channel, says so task by task as people see them, from the
    tasks' records read just before the cancel. Before, it read "Job 6101 cancelled by
    <@W0LEAD>.", as if one job was, and named none of the tasks that stopped."""
    slurm = _array_6101(store)
    ctx = make_context(store, slurm, lang=lang)
    reply = execute(ctx, JobControl("cancel", 6101), actor="W0LEAD", channel=None, now=NOW)
    assert (reply.text, reply.ephemeral) == (said, False)
    assert slurm.acted("cancel") == [6101]  # one scancel, of the array
    [entry] = store.audit.recent(1)
    assert (entry.action, entry.result, entry.job_id) == ("command.cancel", "ok", "6101")
    # one task, by its array id: the task alone, named as typed, its raw id after it
    task = execute(ctx, JobControl("cancel", 6101, 1), actor="W0LEAD", channel=None, now=NOW)
    assert task.text == {"en": "Job 6101_1 (job 6103) cancelled by <@W0LEAD>.",
                         "ko": "<@W0LEAD>님이 작업 6101_1 (작업 6103)을(를) 취소했습니다."}[lang]
    assert slurm.acted("cancel") == [6101, 6103]


def test_a_single_jobs_cancel_reply_is_unchanged(store) -> None:
    slurm = FakeSlurm()
    slurm.add(88017, name="mix", state="RUNNING")
    ctx = make_context(store, slurm)
    reply = execute(ctx, JobControl("cancel", 88017), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == "Job 88017 cancelled by <@W0LEAD>."
    assert slurm.acted("cancel") == [88017]


@pytest.mark.parametrize(("verb", "lang", "said"), [
    ("hold", "en", "Array 6101 held by <@W0LEAD>: waiting 6101_4 and the tasks not started yet "
                   "held; running 6101_[1-2] left running (a hold stops no task that runs); "
                   "6101_0 already ended (left as they were)."),
    ("hold", "ko", "<@W0LEAD>님이 array 6101을(를) 보류했습니다: 대기 중이던 6101_4와(과) 아직 "
                   "시작하지 않은 task 보류; 실행 중인 6101_[1-2]은(는) 계속 실행 (보류는 실행 "
                   "중인 task를 멈추지 않음); 6101_0은(는) 이미 끝남 (그대로 둠)."),
    ("release", "en", "Array 6101 released by <@W0LEAD>: waiting 6101_4 and the tasks not "
                      "started yet released; running 6101_[1-2] left running; 6101_0 already "
                      "ended (left as they were)."),
    ("release", "ko", "<@W0LEAD>님이 array 6101의 보류를 해제했습니다: 대기 중이던 6101_4와(과) "
                      "아직 시작하지 않은 task 보류 해제; 실행 중인 6101_[1-2]은(는) 계속 실행; "
                      "6101_0은(는) 이미 끝남 (그대로 둠)."),
])
def test_holding_or_releasing_an_arrays_own_id_says_which_tasks_it_touched(
        store, verb: Verb, lang: str, said: str) -> None:
    """`/train hold|release 6101`, 6101 an array's own id: `scontrol hold|release 6101` acts
    on every task of it still waiting (here 6101_4, requeued, and the pending remainder) and
    leaves the running ones running; the reply says so task by task, from the tasks' records
    read just before it, and the audit keeps the same facts. Before, it read "Job 6101 held
    by <@W0LEAD>.", as if one job was, and did not say the running tasks go on."""
    import json

    slurm = _array_6101(store)
    slurm.add(6105, name="sweep", state="PENDING", array_job_id=6101, array_task_id=4)
    chain = store.chains.of_array(6101)
    assert chain is not None
    store.attempts.record(chain_id=chain.id, job_id="6105", now=3, state="PENDING",
                          display_id="6101_4")  # requeued: waits again
    ctx = make_context(store, slurm, lang=lang)
    reply = execute(ctx, JobControl(verb, 6101), actor="W0LEAD", channel=None, now=NOW)
    assert (reply.text, reply.ephemeral) == (said, False)
    assert slurm.acted(verb) == [6101]  # one scontrol, of the array
    [entry] = store.audit.recent(1)
    assert (entry.action, entry.result, entry.job_id) == (f"command.{verb}", "ok", "6101")
    assert json.loads(entry.detail) == {"running": "6101_[1-2]", "waiting": "6101_4",
                                        "not_started": True, "ended": "6101_0",
                                        "suspended": None, "stopped": None}
    # one task, by its array id: the task alone, as before
    task = execute(ctx, JobControl(verb, 6101, 4), actor="W0LEAD", channel=None, now=NOW)
    assert task.text == {
        ("hold", "en"): "Job 6101_4 (job 6105) held by <@W0LEAD>.",
        ("hold", "ko"): "<@W0LEAD>님이 작업 6101_4 (작업 6105)을(를) 보류했습니다.",
        ("release", "en"): "Job 6101_4 (job 6105) released by <@W0LEAD>.",
        ("release", "ko"): "<@W0LEAD>님이 작업 6101_4 (작업 6105)의 보류를 해제했습니다.",
    }[verb, lang]
    assert slurm.acted(verb) == [6101, 6105]


@pytest.mark.parametrize(("verb", "said"), [
    ("hold", "Array 6101 held by <@W0LEAD>: no task was waiting, none held; running 6101_[1-3] "
             "left running (a hold stops no task that runs); 6101_0 already ended (left as "
             "they were)."),
    ("release", "Array 6101 released by <@W0LEAD>: no task was waiting, none released; "
                "running 6101_[1-3] left running; 6101_0 already ended (left as they were)."),
])
def test_holding_an_array_with_no_task_waiting_says_none_was(store, verb: Verb,
                                                             said: str) -> None:
    """Every task started: Slurm's hold or release of the array touches none of them, and
    the reply says so rather than that the array was held."""
    slurm = _array_6101(store)
    # the last task started: it keeps the array's own id, and no task waits
    slurm.set(6101, state="RUNNING", array_task_id=3)
    ctx = make_context(store, slurm)
    reply = execute(ctx, JobControl(verb, 6101), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == said
    assert slurm.acted(verb) == [6101]


@pytest.mark.parametrize(("verb", "error", "said"), [
    ("cancel", ClusterError("squeue: error: Invalid user for SlurmUser"),
     "Job 6101 cancelled by <@W0LEAD>."),
    ("hold", ClusterUnavailable("ssh: connect to host login1 port 22: Connection refused"),
     "Job 6101 held by <@W0LEAD>."),
    ("release", ClusterUnavailable("ssh: connect to host login1 port 22: Connection refused"),
     "Job 6101 released by <@W0LEAD>."),
], ids=["cancel", "hold", "release"])
def test_an_array_whose_tasks_cannot_be_read_is_controlled_all_the_same(
        store, verb: Verb, error: Exception, said: str) -> None:
    """The tasks' read before the cancel, hold or release fails (the cluster errs, or is
    unreachable): the array is cancelled, held or released once all the same, and the reply
    names its id alone, as before."""

    class TasksFail(FakeSlurm):
        def array_tasks(self, array_job_id: int):
            self._call("array_tasks", array_job_id)
            raise error

    slurm = TasksFail()
    slurm.records = _array_6101(store).records
    ctx = make_context(store, slurm)
    reply = execute(ctx, JobControl(verb, 6101), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == said
    assert slurm.acted("array_tasks") == [6101] and slurm.acted(verb) == [6101]


@pytest.mark.parametrize(("verb", "said"), [("hold", "Job 88017 held by <@W0LEAD>."),
                                            ("release", "Job 88017 released by <@W0LEAD>.")])
def test_a_single_jobs_hold_and_release_replies_are_unchanged(store, verb: Verb,
                                                              said: str) -> None:
    slurm = FakeSlurm()
    slurm.add(88017, name="mix", state="PENDING")
    ctx = make_context(store, slurm)
    assert execute(ctx, JobControl(verb, 88017), actor="W0LEAD", channel=None,
                   now=NOW).text == said
    assert slurm.acted(verb) == [88017]


def _control_array_with_task_2(store, state: str, verb: Verb, lang: str, said: str) -> dict:
    """`/train <verb> 6101` while Slurm lists 6101_2 in `state`: the reply is `said` and the
    action reached Slurm once, for the array's own id; the audit entry's detail, returned."""
    import json

    slurm = _array_6101(store)
    slurm.set(6104, state=state)
    ctx = make_context(store, slurm, lang=lang)
    reply = execute(ctx, JobControl(verb, 6101), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == said
    assert slurm.acted(verb) == [6101]
    [entry] = store.audit.recent(1)
    return json.loads(entry.detail)


@pytest.mark.parametrize(("verb", "lang", "said"), [
    ("cancel", "en", "Array 6101 cancelled by <@W0LEAD>: running 6101_1 stopped; the tasks not "
                     "started yet cancelled; suspended 6101_2 cancelled; 6101_0 already ended "
                     "(left as they were)."),
    ("cancel", "ko", "<@W0LEAD>님이 array 6101을(를) 취소했습니다: 실행 중이던 6101_1 중지; 아직 "
                     "시작하지 않은 task 취소; 일시 중단된 6101_2 취소; 6101_0은(는) 이미 끝남 "
                     "(그대로 둠)."),
    ("hold", "en", "Array 6101 held by <@W0LEAD>: the tasks not started yet held; running "
                   "6101_1 left running (a hold stops no task that runs); suspended 6101_2 left "
                   "suspended (a hold does not reach a suspended task); 6101_0 already ended "
                   "(left as they were)."),
    ("hold", "ko", "<@W0LEAD>님이 array 6101을(를) 보류했습니다: 아직 시작하지 않은 task 보류; "
                   "실행 중인 6101_1은(는) 계속 실행 (보류는 실행 중인 task를 멈추지 않음); 일시 "
                   "중단된 6101_2은(는) 계속 일시 중단 (보류는 일시 중단된 task에 미치지 않음); "
                   "6101_0은(는) 이미 끝남 (그대로 둠)."),
    ("release", "en", "Array 6101 released by <@W0LEAD>: the tasks not started yet released; "
                      "running 6101_1 left running; suspended 6101_2 left suspended (a release "
                      "does not resume it); 6101_0 already ended (left as they were)."),
    ("release", "ko", "<@W0LEAD>님이 array 6101의 보류를 해제했습니다: 아직 시작하지 않은 task "
                      "보류 해제; 실행 중인 6101_1은(는) 계속 실행; 일시 중단된 6101_2은(는) 계속 "
                      "일시 중단 (보류 해제는 task를 재개하지 않음); 6101_0은(는) 이미 끝남 "
                      "(그대로 둠)."),
])
def test_a_suspended_task_of_an_array_is_named_as_suspended(store, verb: Verb, lang: str,
                                                            said: str) -> None:
    """`/train cancel|hold|release 6101` while 6101_2 is suspended (`scontrol suspend`):
    scancel cancels it, a hold does not reach it and a release does not resume it, and the
    reply says so rather than naming it among the running tasks ("running 6101_[1-2]
    stopped" / "left running"), as it did; the audit keeps it apart too."""
    assert _control_array_with_task_2(store, "SUSPENDED", verb, lang, said) == {
        "running": "6101_1", "waiting": None, "not_started": True, "ended": "6101_0",
        "suspended": "6101_2", "stopped": None}


@pytest.mark.parametrize(("verb", "lang", "said"), [
    ("cancel", "en", "Array 6101 cancelled by <@W0LEAD>: running 6101_1 stopped; the tasks not "
                     "started yet cancelled; 6101_2, stopped by SIGSTOP, cancelled; 6101_0 "
                     "already ended (left as they were)."),
    ("cancel", "ko", "<@W0LEAD>님이 array 6101을(를) 취소했습니다: 실행 중이던 6101_1 중지; 아직 "
                     "시작하지 않은 task 취소; SIGSTOP으로 멈춘 6101_2 취소; 6101_0은(는) 이미 "
                     "끝남 (그대로 둠)."),
    ("hold", "en", "Array 6101 held by <@W0LEAD>: the tasks not started yet held; running "
                   "6101_1 left running (a hold stops no task that runs); 6101_2, stopped by "
                   "SIGSTOP, left stopped (a hold only keeps waiting tasks from starting); "
                   "6101_0 already ended (left as they were)."),
    ("hold", "ko", "<@W0LEAD>님이 array 6101을(를) 보류했습니다: 아직 시작하지 않은 task 보류; "
                   "실행 중인 6101_1은(는) 계속 실행 (보류는 실행 중인 task를 멈추지 않음); "
                   "SIGSTOP으로 멈춘 6101_2은(는) 멈춘 채로 둠 (보류는 대기 중인 task가 시작하지 "
                   "못하게 할 뿐임); 6101_0은(는) 이미 끝남 (그대로 둠)."),
    ("release", "en", "Array 6101 released by <@W0LEAD>: the tasks not started yet released; "
                      "running 6101_1 left running; 6101_2, stopped by SIGSTOP, left stopped (a "
                      "release does not continue it; SIGCONT does: `scancel --signal=CONT`); "
                      "6101_0 already ended (left as they were)."),
    ("release", "ko", "<@W0LEAD>님이 array 6101의 보류를 해제했습니다: 아직 시작하지 않은 task "
                      "보류 해제; 실행 중인 6101_1은(는) 계속 실행; SIGSTOP으로 멈춘 6101_2은(는) "
                      "멈춘 채로 둠 (보류 해제는 task를 다시 실행하지 않음; SIGCONT가 함: `scancel "
                      "--signal=CONT`); 6101_0은(는) 이미 끝남 (그대로 둠)."),
])
def test_a_stopped_task_of_an_array_is_named_as_stopped(store, verb: Verb, lang: str,
                                                        said: str) -> None:
    """`/train cancel|hold|release 6101` while Slurm lists 6101_2 STOPPED (its processes sent
    SIGSTOP, `scancel --signal=STOP 6101_2`; it keeps its allocation and runs nothing):
    scancel ends it, a hold leaves it stopped (it keeps only waiting tasks from starting)
    and so does a release (only SIGCONT continues it); the reply says so rather than naming
    it among the running tasks ("running 6101_[1-2] stopped" / "left running"), as it did;
    the audit keeps it apart too."""
    assert _control_array_with_task_2(store, "STOPPED", verb, lang, said) == {
        "running": "6101_1", "waiting": None, "not_started": True, "ended": "6101_0",
        "suspended": None, "stopped": "6101_2"}


# ---- what a control asks Slurm: a real SlurmClient over the recording FakeRunner ------------

def _client_over(rows: dict[int, list[tuple[int, str, str]]]):  # noqa: ANN202
    """A SlurmClient (22.05, parsable) over a FakeRunner that answers squeue and sacct for each
    id in `rows` with its jobs as (raw id, `%A_%a` or its own id, state), and the actions
    with success; (client, runner)."""
    from fakes import FakeRunner

    from bot.cluster.slurm import SlurmClient
    from bot.core.slurm.sacct import SACCT_FIELDS
    from bot.core.slurm.squeue import SQUEUE_FIELDS, SQUEUE_SEPARATOR

    def asked(argv: list[str]) -> list[tuple[int, str, str]]:
        ids = next(a.split("=", 1)[1] for a in argv if a.startswith("--jobs="))
        return rows.get(int(ids), [])

    def squeue(argv: list[str]) -> tuple[int, str, str]:
        lines = []
        for raw, shown, state in asked(argv):
            if state in ("COMPLETED", "CANCELLED"):
                continue  # long gone from the controller
            array, _, task = shown.partition("_")  # the remainder `6101_[3-4]` lists as 3-4
            row = {"JobID": str(raw), "ArrayJobID": array,
                   "ArrayTaskID": task.strip("[]") or "N/A",
                   "Name": "sweep", "UserName": "slurmci", "State": state}
            lines.append(SQUEUE_SEPARATOR.join(row.get(f, "") for f in SQUEUE_FIELDS)
                         + SQUEUE_SEPARATOR)
        return 0, "".join(f"{line}\n" for line in lines), ""

    def sacct(argv: list[str]) -> tuple[int, str, str]:
        lines = ["|".join(SACCT_FIELDS)]
        for raw, shown, state in asked(argv):
            values = {"JobIDRaw": str(raw), "JobID": shown, "State": state, "ExitCode": "0:0",
                      "User": "slurmci", "JobName": "sweep"}
            lines.append("|".join(values.get(f, "") for f in SACCT_FIELDS))
        return 0, "\n".join(lines) + "\n", ""

    runner = FakeRunner({"sinfo": (0, "slurm 22.05.8\n", ""), "squeue": squeue, "sacct": sacct,
                         "scancel": (0, "", ""), "scontrol": (0, "", "")})
    return SlurmClient(runner, use_json=False), runner


_ARRAY_6101 = [(6102, "6101_0", "COMPLETED"), (6103, "6101_1", "RUNNING"),
               (6104, "6101_2", "RUNNING"), (6101, "6101_[3-4]", "PENDING")]


@pytest.mark.parametrize(("verb", "program", "said"), [
    ("cancel", "scancel", "Job 88017 cancelled by <@W0LEAD>."),
    ("hold", "scontrol", "Job 88017 held by <@W0LEAD>."),
    ("release", "scontrol", "Job 88017 released by <@W0LEAD>."),
])
def test_an_adopted_plain_jobs_control_asks_slurm_only_the_action(store, verb: Verb,
                                                                  program: str,
                                                                  said: str) -> None:
    """`/train cancel|hold|release 88017` of a job adopted with `/train watch` as no array's
    (Slurm said so then): the one Slurm command is the action."""
    chain = store.chains.create(recipe="", cluster="dev", job_name="mix", now=1,
                                kind="adopted", watched_by="W0LEAD")
    store.attempts.record(chain_id=chain.id, job_id="88017", now=2, state="RUNNING")
    slurm, runner = _client_over({88017: [(88017, "88017", "RUNNING")]})
    ctx = make_context(store, {"dev": slurm})
    reply = execute(ctx, JobControl(verb, 88017), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == said
    assert runner.commands() == [program]


@pytest.mark.parametrize(("verb", "program", "said"), [
    ("cancel", "scancel", "Job 88017 cancelled by <@W0LEAD>."),
    ("hold", "scontrol", "Job 88017 held by <@W0LEAD>."),
    ("release", "scontrol", "Job 88017 released by <@W0LEAD>."),
])
def test_a_runs_plain_jobs_control_asks_squeue_then_the_action(store, verb: Verb, program: str,
                                                               said: str) -> None:
    """`/train cancel|hold|release 88017` of a recipe's run whose job squeue lists as no
    array's: squeue, then the action (sacct is not asked). The store cannot settle it: the
    recipe's batch script may ask for an array itself (see the next test)."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1)
    store.attempts.record(chain_id=chain.id, job_id="88017", now=2, state="RUNNING")
    slurm, runner = _client_over({88017: [(88017, "88017", "RUNNING")]})
    ctx = make_context(store, {"dev": slurm})
    reply = execute(ctx, JobControl(verb, 88017), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == said
    assert runner.commands() == ["squeue", program]


def test_a_job_the_store_does_not_record_is_read_once_to_tell_an_array(store) -> None:
    """An approver's `/train cancel 88017` of a job trainbot never saw: only Slurm can tell
    whether it is an array's id, and squeue's listing says it is not (no array fields), so
    sacct is not asked (before: squeue and sacct, then the cancel)."""
    slurm, runner = _client_over({88017: [(88017, "88017", "RUNNING")]})
    ctx = make_context(store, {"dev": slurm})
    reply = execute(ctx, JobControl("cancel", 88017), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == "Job 88017 cancelled by <@W0LEAD>."
    assert runner.commands() == ["squeue", "scancel"]


def _record_a_plain_run_of_6101(store: Store) -> None:
    """Recipe mix has no `array:`, but its batch script carries `#SBATCH --array=0-4`: trainbot
    submitted a plain run and recorded job 6101 as its attempt, while Slurm made it array
    6101. Before, the store's record was taken to settle that the job was no array's: scancel
    alone, and "Job 6101 cancelled by <@W0LEAD>.", the tasks unnamed."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="sweep", now=1)
    store.attempts.record(chain_id=chain.id, job_id="6101", now=2, state="PENDING")


@pytest.mark.parametrize("record", [_array_6101, _record_a_plain_run_of_6101, None],
                         ids=["run_of_the_array", "plain_run_its_script_made_an_array",
                              "not_recorded"])
def test_an_arrays_control_still_reads_its_tasks_and_says_which(
        store, record: Callable[[Store], object] | None) -> None:
    """`/train cancel 6101` of an array's own id, recorded as the array run's, as a plain run's
    (see _record_a_plain_run_of_6101) or not at all: its tasks are read (squeue, then sacct for
    the one that ended) before the one scancel, and the reply says what the scancel did to
    each, as for any array."""
    if record is not None:
        record(store)
    slurm, runner = _client_over({6101: _ARRAY_6101})
    ctx = make_context(store, {"dev": slurm})
    reply = execute(ctx, JobControl("cancel", 6101), actor="W0LEAD", channel=None, now=NOW)
    assert reply.text == ("Array 6101 cancelled by <@W0LEAD>: running 6101_[1-2] stopped; the "
                          "tasks not started yet cancelled; 6101_0 already ended (left as they "
                          "were).")
    assert runner.commands() == ["squeue", "sinfo", "sacct", "scancel"]
    assert runner.argvs()[-1][:4] == ["timeout", "-k", "0.25", "0.75"]
    assert runner.argvs()[-1][-2:] == ["scancel", "6101"]


def test_who_may_not_read_a_jobs_log_may_not_have_it_watched(store) -> None:
    """`/train watch` posts a job's log evidence, stacks and state in a channel: who may not
    read the job's log (`/train logs`) may not adopt it either. A job trainbot did not submit
    (Bob's, a whole array, one task of it): the approvers only; a recipe's run: its team.
    Refused, nothing is watched, no thread opens, and the refusal is audited."""
    slurm = FakeSlurm()
    slurm.add(5150, name="bobs-private-run", state="RUNNING", user="bob",
              stdout_path="/home/bob/run.out")
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    slurm.add(6103, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=2)
    slurm.add(88017, name="mix", state="RUNNING")
    ctx = make_context(store, slurm)
    run = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1)
    store.attempts.record(chain_id=run.id, job_id="88017", now=2, state="RUNNING")

    def said(cmd: Logs | Watch, actor: str = "U0EVE") -> str:
        return execute(ctx, cmd, actor=actor, channel="C0TRAIN", now=NOW).text

    assert said(Logs(5150)) == ("Refused: job 5150 was not submitted by trainbot; only group "
                                "leads can read the log of it.")
    assert said(Watch(5150)) == ("Refused: job 5150 was not submitted by trainbot; only group "
                                 "leads can watch it.")
    assert said(Watch(6100)) == ("Refused: job 6100 was not submitted by trainbot; only group "
                                 "leads can watch it.")
    assert said(Watch(6100, 2)) == ("Refused: job 6100_2 was not submitted by trainbot; only "
                                    "group leads can watch it.")
    assert said(Watch(88017)) == ("Refused: job 88017 belongs to mix; only <@U0OWNER>, group "
                                  "robots or group leads can watch it.")
    assert store.watched_jobs.list() == [] and recorded(ctx).posts == []
    assert [(e.actor, e.job_id, e.result) for e in store.audit.recent(5)
            if e.action == "command.watch"] == [
        ("U0EVE", job, "refused") for job in ("88017", "6100_2", "6100", "5150")]
    assert said(Watch(5150), "W0LEAD") == "Watching job 5150 (bobs-private-run, RUNNING) on dev."
    assert [w.job_id for w in store.watched_jobs.list()] == ["5150"]


def _array_run_with_an_unrecorded_task(store: Store) -> FakeSlurm:
    """mix's array run 6101: task 0 recorded (raw 6102), task 4 (raw 6105) started since the
    watcher's last tick, so no attempt records it yet."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="sweep", now=1,
                                kind="array", array_job_id=6101)
    slurm = FakeSlurm()
    slurm.add(6101, name="sweep", state="PENDING", array_job_id=6101)
    slurm.add(6102, name="sweep", state="RUNNING", array_job_id=6101, array_task_id=0)
    store.attempts.record(chain_id=chain.id, job_id="6102", now=2, state="RUNNING",
                          display_id="6101_0")
    slurm.add(6105, name="sweep", state="RUNNING", array_job_id=6101, array_task_id=4)
    return slurm


@pytest.mark.parametrize(("cmd", "said"), [
    (Watch(6101, 4), "Watching job 6101_4 "),
    (JobControl("cancel", 6101, 4), "Job 6101_4 (job 6105) cancelled by <@U0OWNER>."),
])
def test_the_recipe_owner_may_act_on_a_task_of_the_recipes_own_array_not_yet_recorded(
        store, cmd, said) -> None:
    """The task's raw id 6105 is recorded nowhere yet; as written (`6101_4`) it is mix's
    array run's, so mix's owner is not told the job "was not submitted by trainbot"."""
    ctx = make_context(store, _array_run_with_an_unrecorded_task(store))
    refused = execute(ctx, cmd, actor="U0EVE", channel="C0TRAIN", now=NOW).text
    assert refused.startswith("Refused: job 6101_4 belongs to mix; only <@U0OWNER>")
    assert execute(ctx, cmd, actor="U0OWNER", channel="C0TRAIN", now=NOW).text.startswith(said)


def test_who_adopted_a_job_is_told_it_is_watched_not_refused(store) -> None:
    """Bob adopted 5150 (as an approver since left): it is his on the Home tab, to stop
    watching; `/train watch 5150` again tells him it is already watched. Eve is refused."""
    slurm = FakeSlurm()
    slurm.add(5150, name="bobs-run", state="RUNNING", user="bob")
    ctx = make_context(store, slurm)
    chain = store.chains.create(recipe="", cluster="dev", job_name="bobs-run", now=1,
                                channel="C0TRAIN", kind="adopted", watched_by="U0BOB")
    store.attempts.record(chain_id=chain.id, job_id="5150", now=1, state="RUNNING")
    store.watched_jobs.add("dev", "5150", now=1, chain_id=chain.id, adopted=True)
    assert execute(ctx, Watch(5150), actor="U0BOB", channel="C0TRAIN", now=NOW).text == \
        "Job 5150 is already watched."
    assert execute(ctx, Watch(5150), actor="U0EVE", channel="C0TRAIN", now=NOW).text == (
        "Refused: job 5150 was not submitted by trainbot; only group leads can watch it.")


def test_a_target_past_the_stores_integers_is_refused_before_sbatch(store) -> None:
    """`target_iter=3000000000` used to pass: sbatch queued the job, then recording it failed
    (PostgreSQL's integer column): the user saw "internal error" and the job ran unrecorded
    and unwatched."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    reply = execute(ctx, parse_command("submit mix target_iter=3000000000"), actor="U0ALICE",
                    channel="C0TRAIN", now=NOW)
    assert reply.text == ("target_iter must be a whole number from 1 to 2147483647\n"
                          "Usage: `/train submit RECIPE [key=value ...]`")
    assert slurm.submits() == [] and store.chains.latest_for_recipe("mix") is None


@pytest.mark.parametrize(("lang", "text", "said"), [
    ("en", "cancl 5", ":x: unknown command 'cancl' — did you mean `cancel`? Commands: `help`"),
    ("ko", "cancl 5", ":x: 알 수 없는 명령 'cancl' — `cancel`을(를) 뜻했나요? 명령: `help`"),
    ("en", "submit mix target_iter=0",
     "target_iter must be a whole number from 1 to 2147483647\nUsage: `/train submit"),
    ("ko", "submit mix target_iter=0",
     "target_iter은(는) 1부터 2147483647까지의 정수여야 합니다\n사용법: `/train submit"),
    ("en", "cancel 0", ":x: '0' is not a job id: give 123 (a job or a whole array) or 123_4 "
                       "(task 4 of array 123). Usage: `/train cancel JOBID|JOBID_TASK`"),
    ("ko", "watch 0_3", ":x: '0_3'은(는) 작업 id가 아닙니다: 123 (작업 또는 array 전체) 또는 "
                        "123_4 (array 123의 task 4)로 주세요"),
    ("en", "submit mix target_iter=1_000", "target_iter must be a whole number, e.g. "),
    ("ko", "submit mix lr=\u0665", "lr은(는) 숫자여야 합니다 (예: lr=0.0003)\n사용법:"),
    ("en", 'submit mix "lr= 5"', "lr must be a number, e.g. lr=0.0003\nUsage:"),
    ("en", "submit mix lr=1_0", "lr must be a number, e.g. lr=0.0003\nUsage:"),
])
def test_a_mistyped_command_or_override_is_told_in_the_channels_language(store, lang, text,
                                                                          said) -> None:
    """A question keeps its own `?` (no `?.`); an override out of its range or not in ASCII
    digits (`1_000`, ` 5`, Arabic-Indic digits, which int() and float() take) is told in the
    recipe's language, never pydantic's English ("Input should be greater than or equal to
    1"); nothing is submitted."""
    from bot.core.train_grammar import CommandError
    from bot.services.train import command_error_text

    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang)
    try:
        reply = execute(ctx, parse_command(text), actor="U0ALICE", channel="C0TRAIN",
                        now=NOW).text
    except CommandError as exc:
        reply = command_error_text(ctx, exc, "C0TRAIN")
    assert reply.startswith(said), reply
    assert slurm.submits() == []


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("cmd", [JobControl("cancel", 0), Watch(0), Logs(0, array_task=3)])
def test_a_command_naming_job_0_is_told_it_is_no_job_id_not_an_internal_error(
        store, lang, cmd) -> None:
    """A command built with job id 0 (no Slurm job's: parse_command refuses it, a Home tab
    click or another caller may not) is answered as the parser answers it, in the channel's
    language, never handed to Slurm (whose argv builders raise ValueError on it: the
    listener's traceback and the generic internal-error reply)."""
    slurm, runner = _client_over({})
    ctx = make_context(store, {"dev": slurm}, lang=lang)
    reply = execute(ctx, cmd, actor="W0LEAD", channel="C0TRAIN", now=NOW).text
    said = {"en": "'0' is not a job id: give 123", "ko": "'0'은(는) 작업 id가 아닙니다"}[lang]
    if cmd.array_task is not None:
        said = said.replace("'0'", "'0_3'")
    assert said in reply and "`/train " in reply, reply
    assert runner.calls == []


@pytest.mark.parametrize(("lang", "text", "said"), [
    ("en", "submit mix time=2days",
     "the recipe does not take time=2days: '2days' is not a Slurm time limit; use minutes, "
     "HH:MM:SS or D-HH:MM:SS (e.g. 90, 04:00:00, 2-00:00:00)"),
    ("ko", "submit mix time=2days",
     "레시피가 time=2days을(를) 받지 않습니다: '2days'은(는) Slurm 시간 제한이 아닙니다. 분, "
     "HH:MM:SS 또는 D-HH:MM:SS로 쓰세요 (예: 90, 04:00:00, 2-00:00:00)"),
    ("en", "submit mix time=\u0669\u0660", "the recipe does not take time=\u0669\u0660: "),
    ("en", "submit mix time=1-\u0664:00", "the recipe does not take time=1-\u0664:00: "),
])
def test_a_time_limit_the_recipe_refuses_is_told_in_the_channels_language(
        store, lang, text, said) -> None:
    """`time=` goes to sbatch's --time: its check's sentence is the recipe's language's, as
    the sentence around it is; a limit in digits other than ASCII (Arabic-Indic ٩٠, which
    Python's `\\d` takes) is no Slurm time limit; nothing is submitted."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang, overridable={"lr": "float", "time": "str"})
    reply = execute(ctx, parse_command(text), actor="U0ALICE", channel="C0TRAIN", now=NOW).text
    assert reply.startswith(said), reply
    assert slurm.submits() == []
