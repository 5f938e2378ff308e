"""Jobs and arrays adopted with `/train watch` on the App Home tab (bot.services.home, with
the fakes): shown to who adopted them and to who may act on them, a row each (an array's
tasks counted by state), no resubmit, "Cancel" only for who may cancel, refreshed when
they change, and capped with an "and N more" line within a view's 100 blocks."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest
from fakes import FakeSFTP, FakeSlurm, adopt, homes
from slack_standin import MAX_VIEW_BLOCKS, validate_blocks
from support.e2e import NOW
from support.mix_prompt import mix_prompt

from bot.core.train_grammar import Unwatch, parse_command
from bot.services.home import (
    MAX_RUNS,
    home_view,
    publish_home,
    refresh_homes,
    render_home,
    stop_watching,
)
from bot.services.ports import BotContext
from bot.services.runs import submit_and_announce
from bot.services.threads import render, root_view
from bot.services.train import execute
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.slack.views import HOME_CANCEL_JOB, HOME_STOP_WATCHING
from handlers.home import make_cancel_job

BOB = "U0BOB"  # adopted jobs as an approver; neither in a recipe's team nor an approver now
APPROVER = "U0APPR"  # slack.approvers (group leads): may cancel a job trainbot did not submit
ALICE = "U0ALICE"  # a submitter of mix: her team's runs only


@pytest.fixture
def slurm() -> FakeSlurm:
    slurm = FakeSlurm()
    slurm.add(4242, name="eval-run", state="RUNNING", user="bob")
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)  # tasks still to start
    for task, state in ((1, "RUNNING"), (2, "RUNNING"), (3, "FAILED")):
        slurm.add(6100 + task, name="sweep", state=state, array_job_id=6100,
                  array_task_id=task)
    return slurm




def adopt_by_bob(ctx: BotContext, job_id: int) -> int:
    """`/train watch JOB` by Bob while he was among slack.approvers (who may watch a job
    trainbot did not submit, as they may read its log); he has left them since: the job
    stays his to see and to stop watching, not to cancel. Its chain id."""
    leads = ctx.config.slack.groups["leads"]
    slack = ctx.config.slack.model_copy(update={"groups": {
        **ctx.config.slack.groups, "leads": [*leads, BOB]}})
    then = dataclasses.replace(ctx, config=ctx.config.model_copy(update={"slack": slack}))
    return adopt(then, job_id, actor=BOB, now=NOW)


def rows(ctx: BotContext, user: str) -> list[dict[str, Any]]:
    return home_view(ctx, user, NOW)["runs"]


def test_an_adopted_job_shows_to_its_adopter_and_the_approvers_only(ctx):
    chain_id = adopt_by_bob(ctx, 4242)
    assert ctx.store.chains.get(chain_id).watched_by == BOB
    [row] = rows(ctx, BOB)
    assert (row["recipe"], row["job_id"], row["state"], row["adopted"]) == (
        "eval-run", "4242", "RUNNING", True)
    # Bob may stop watching it, not cancel it (/train cancel would refuse him)
    assert [(b["kind"], b["action_id"], b["value"]) for b in row["buttons"]] == [
        ("unwatch", HOME_STOP_WATCHING, str(chain_id))]
    [theirs] = rows(ctx, APPROVER)
    assert [(b["kind"], b["action_id"], b["value"]) for b in theirs["buttons"]] == [
        ("unwatch", HOME_STOP_WATCHING, str(chain_id)), ("cancel", HOME_CANCEL_JOB, "4242")]
    assert rows(ctx, ALICE) == []


def test_an_adopted_array_is_one_row_with_its_tasks_counted_by_state(ctx):
    adopt_by_bob(ctx, 6100)
    [row] = rows(ctx, BOB)
    assert (row["job_id"], row["array"], row["state"]) == ("6100", True, "RUNNING")
    assert row["tasks"] == [{"state": "RUNNING", "n": 2}, {"state": "FAILED", "n": 1}]
    assert [b["kind"] for b in row["buttons"]] == ["unwatch"]  # Bob may not cancel the array
    blocks = render_home(ctx, home_view(ctx, BOB, NOW))
    text = "\n".join(str(b.get("text", {}).get("text", "")) for b in blocks)
    assert "*sweep* · array 6100 · RUNNING" in text
    assert "2 RUNNING · " in text and "1 FAILED" in text
    assert "adopted: not resubmitted by trainbot" in text
    assert "retries" not in text  # an adopted job has no retry ledger


def test_an_adopted_jobs_prompt_never_offers_a_resubmit(ctx):
    chain_id = adopt_by_bob(ctx, 4242)
    ctx.store.approvals.create(chain_id=chain_id, target_job="4242", action="resubmit",
                               allowed=[APPROVER], now=NOW, expires_at=NOW + 3600,
                               payload={"choices": ["resubmit", "cancel_resume", "cancel",
                                                    "dismiss"], "summary": "stalled"})
    [row] = rows(ctx, APPROVER)
    assert [[b["kind"] for b in p["buttons"]] for p in row["prompts"]] == [["cancel", "dismiss"]]
    [row] = rows(ctx, BOB)
    assert [[b["kind"] for b in p["buttons"]] for p in row["prompts"]] == [["dismiss"]]


def test_watching_and_a_change_refresh_the_tabs_of_who_sees_it(ctx):
    for user in (BOB, APPROVER, ALICE):
        publish_home(ctx, user, NOW - 10)
    homes(ctx).published.clear()
    chain_id = adopt_by_bob(ctx, 4242)
    assert sorted(homes(ctx).users()) == [APPROVER, BOB]  # not Alice: not hers to see
    homes(ctx).published.clear()
    refresh_homes(ctx, chain_id, NOW + 5)  # what the watcher calls when its row changes
    assert sorted(homes(ctx).users()) == [APPROVER, BOB]


def test_more_adopted_jobs_than_fit_are_counted_in_an_and_n_more_line(ctx, slurm):
    for n in range(MAX_RUNS + 7):
        slurm.add(5000 + n, name=f"job{n}", state="RUNNING")
        adopt(ctx, 5000 + n, actor=APPROVER, now=NOW)
    view = home_view(ctx, APPROVER, NOW)
    assert (len(view["runs"]), view["more"]) == (MAX_RUNS, 7)
    assert view["runs"][0]["job_id"] == str(5000 + MAX_RUNS + 6)  # newest first
    blocks = render_home(ctx, view)
    assert len(blocks) <= 100
    assert "…and 7 more" in blocks[-1]["elements"][0]["text"]


@pytest.mark.parametrize(("lang", "words"), [
    ("en", ["*sweep* · array 6100 · RUNNING", "Tasks: ", "adopted: not resubmitted by trainbot",
            "…and 1 more"]),
    ("ko", ["*sweep* · array 6100 · RUNNING", "task: ",
            "가져온 작업: trainbot이 다시 제출하지 않음", "…외 1개"]),
])
def test_the_adopted_rows_read_in_the_tabs_language(ctx, slurm, lang, words):
    for n in range(MAX_RUNS):
        slurm.add(5000 + n, name=f"job{n}", state="RUNNING")
        adopt_by_bob(ctx, 5000 + n)
    adopt_by_bob(ctx, 6100)  # the newest: first; the oldest job is the one left out
    view = home_view(ctx, BOB, NOW)
    assert view["more"] == 1 and view["runs"][0]["job_id"] == "6100"
    assert "5000" not in [r["job_id"] for r in view["runs"]]
    blocks = render_home(ctx, view)
    text = "\n".join([str(b.get("text", {}).get("text", "")) for b in blocks] + [
        str(e.get("text", "")) for b in blocks for e in b.get("elements") or []])
    for word in words:
        assert word in text, (word, text)


def test_who_adopted_a_job_or_an_approver_may_stop_watching_it_and_nobody_else(ctx, slurm):
    chain_id = adopt_by_bob(ctx, 6100)
    publish_home(ctx, APPROVER, NOW)
    homes(ctx).published.clear()
    refused = stop_watching(ctx, chain_id, ALICE, NOW + 1)
    assert refused.startswith("Refused: job 6100 is watched for <@U0BOB>")
    assert ctx.store.chains.get(chain_id).status == "active"
    assert {w.chain_id for w in ctx.store.watched_jobs.list("dev")} == {chain_id}
    done = stop_watching(ctx, chain_id, BOB, NOW + 2)
    assert done.startswith("<@U0BOB> stopped watching 6100")
    assert ctx.store.watched_jobs.list("dev") == []  # the array's id and its started tasks
    assert ctx.store.chains.get(chain_id).status == "stopped"
    assert slurm.acted("cancel") == []  # Slurm is not touched
    assert ctx.sink.texts()[-1] == done  # the thread says who stopped it
    assert homes(ctx).users() == [APPROVER]  # his tab no longer offers buttons for it
    [row] = rows(ctx, APPROVER)
    assert row["buttons"] == []
    assert stop_watching(ctx, chain_id, APPROVER, NOW + 3) == "6100 is not watched any more."
    audit = [(e.actor, e.result) for e in ctx.store.audit.recent(10) if e.action == "unwatch"]
    assert audit == [(BOB, "ok"), (ALICE, "refused")]


@pytest.mark.parametrize(("lang", "title", "text", "job"), [
    ("en", "Cancel array 6100?",
     "scancel 6100 stops the whole array: 2 of its tasks still running or pending, and "
     "those not started yet. trainbot resubmits none of them.",
     ("Cancel job 4242?", "Job 4242 is RUNNING. scancel stops it.", "Cancel the job")),
    ("ko", "array 6100을(를) 취소할까요?",
     "scancel 6100은(는) array 전체를 멈춥니다: 실행 중이거나 대기 중인 task 2개와 아직 "
     "시작하지 않은 task. trainbot은 어느 것도 다시 제출하지 않습니다.",
     ("작업 4242을(를) 취소할까요?", "작업 4242은(는) 지금 RUNNING 상태입니다. scancel로 "
      "멈춥니다.", "작업 취소")),
])
def test_every_cancel_on_home_asks_first(ctx, slurm, lang, title, text, job):
    """An adopted array's Cancel carries Slack's confirm dialog naming the array and its
    tasks still running or pending (6101 and 6102; 6103 failed; more wait to start); a
    single job's Cancel asks too, naming the job and its state, from the same builder."""
    adopt_by_bob(ctx, 4242)
    adopt_by_bob(ctx, 6100)
    blocks = render_home(ctx, home_view(ctx, APPROVER, NOW))
    assert validate_blocks(blocks, max_blocks=MAX_VIEW_BLOCKS) == []
    cancels = {e["value"]: e for b in blocks if b["type"] == "actions"
               for e in b["elements"] if e["action_id"] == HOME_CANCEL_JOB}
    assert set(cancels) == {"4242", "6100"}
    dialog = cancels["6100"]["confirm"]
    assert (dialog["title"]["text"], dialog["text"]["text"], dialog["style"]) == (
        title, text, "danger")
    single = cancels["4242"]["confirm"]
    assert (single["title"]["text"], single["text"]["text"], single["confirm"]["text"],
            single["style"]) == (*job, "danger")
    assert single["deny"]["text"] == dialog["deny"]["text"]  # one builder, one wording
    # every task started and one more ends: the count follows, the not-started clause goes
    slurm.records.pop(6100)
    slurm.add(6100, name="sweep", state="COMPLETED", array_job_id=6100, array_task_id=0)
    slurm.set(6102, state="COMPLETED", exit_code=0, signal=0, end_time=NOW + 50)
    sftp = FakeSFTP()
    Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
            catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=ctx.config).tick(NOW + 60)
    [row] = [r for r in rows(ctx, APPROVER) if r["job_id"] == "6100"]
    [cancel] = [b for b in row["buttons"] if b["action_id"] == HOME_CANCEL_JOB]
    assert {k: cancel["confirm"][k] for k in ("job_id", "array", "unfinished", "waiting")} == {
        "job_id": "6100", "array": True, "unfinished": 1, "waiting": False}


def test_train_unwatch_is_the_home_tabs_stop_watching(ctx, slurm):
    """`/train unwatch JOBID` finds the adopted job's or array's chain and stops watching it
    exactly as the Home tab's button does: the same authorization and audit entries, the
    thread note, the watch list, the Home tabs refreshed (the caller's too)."""
    job_chain = adopt_by_bob(ctx, 4242)
    array_chain = adopt_by_bob(ctx, 6100)
    publish_home(ctx, BOB, NOW)
    publish_home(ctx, APPROVER, NOW)
    homes(ctx).published.clear()

    def unwatch(text: str, user: str) -> str:
        return execute(ctx, parse_command(text), actor=user, channel="C0TRAIN",
                       now=NOW + 1).text

    refused = unwatch("unwatch 4242", ALICE)
    assert refused.startswith("Refused: job 4242 is watched for <@U0BOB>")
    assert ctx.store.chains.get(job_chain).status == "active"
    assert unwatch("unwatch 6102", BOB) == (  # one task's raw id: the array is watched whole
        "6102 is a task of array 6100, which is watched as a whole: `/train unwatch 6100` "
        "stops watching the array\nUsage: `/train unwatch JOBID|JOBID_TASK`")
    assert unwatch("unwatch 6100_9", BOB).startswith("6100_9 is a task of array 6100")
    assert unwatch("unwatch 777", BOB).startswith("trainbot does not watch 777\nUsage:")
    assert ctx.store.chains.get(array_chain).status == "active"

    done = unwatch("unwatch 6100", BOB)
    assert done.startswith("<@U0BOB> stopped watching 6100")
    assert ctx.store.chains.get(array_chain).status == "stopped"
    assert {w.chain_id for w in ctx.store.watched_jobs.list("dev")} == {job_chain}
    assert ctx.sink.texts()[-1] == done  # the thread says who stopped it
    assert sorted(homes(ctx).users()) == [APPROVER, BOB]  # both tabs, his own too
    assert unwatch("unwatch 4242", APPROVER).startswith("<@U0APPR> stopped watching 4242")
    assert ctx.store.watched_jobs.list("dev") == [] and slurm.acted("cancel") == []
    assert unwatch("unwatch 4242", APPROVER) == (
        "trainbot does not watch 4242\nUsage: `/train unwatch JOBID|JOBID_TASK`")
    audit = [(e.actor, e.job_id, e.result) for e in ctx.store.audit.recent(20)
             if e.action == "unwatch"]  # the button's entries
    assert audit == [(APPROVER, "4242", "ok"), (BOB, "6100", "ok"), (ALICE, "4242", "refused")]


def test_train_unwatch_leaves_a_run_trainbot_submitted_alone(ctx, slurm):
    result = submit_and_announce(ctx, "mix", actor=ALICE, now=NOW)
    reply = execute(ctx, Unwatch(int(result.job_id)), actor=APPROVER, channel="C0TRAIN",
                    now=NOW + 1)
    assert reply.text.startswith(f"{result.job_id} is a run of recipe mix that trainbot "
                                 "submitted: it is watched until it ends")
    assert ctx.store.chains.get(result.chain_id).status == "active"
    assert [w.job_id for w in ctx.store.watched_jobs.list("dev")] == [result.job_id]


@pytest.mark.parametrize(("lang", "line"), [
    ("en", "Last incident: {cls} (job 6100_3), resume from the last complete checkpoint "
     "(unknown: no recipe names its checkpoint dir)"),
    ("ko", "마지막 인시던트: {cls} (작업 6100_3), 마지막 완전한 체크포인트부터 (체크포인트 "
     "디렉터리를 알려 주는 레시피가 없어 어느 체크포인트인지 모릅니다) 재개"),
])
def test_an_arrays_last_incident_names_its_task_as_the_thread_does(ctx, slurm, lang, line):
    """Task 3 of array 6100 (Slurm job 6103) fails: the array's row names its incident's
    job `6100_3`, as the array's thread does, not by the raw id 6103, and says, as the
    incident does, that the checkpoint a resume starts from is unknown: trainbot did not
    submit the array, so no recipe names where it saves them."""
    chain_id = adopt_by_bob(ctx, 6100)
    slurm.set(6103, exit_code=1, signal=0, end_time=NOW + 50)
    sftp = FakeSFTP()
    Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
            catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=ctx.config).tick(NOW + 60)
    [incident] = [i for i in ctx.store.incidents.for_chain(chain_id)
                  if i.key.endswith(":final")]
    assert incident.job_id == "6103"
    [row] = [r for r in rows(ctx, BOB) if r["job_id"] == "6100"]
    assert row["last_incident"] == {"class_id": incident.class_id, "job_id": "6100_3",
                                    "checkpoint_unknown": "no_recipe", "never_started": False}
    blocks = render_home(ctx, home_view(ctx, BOB, NOW))
    text = "\n".join(str(b.get("text", {}).get("text", "")) for b in blocks)
    assert line.format(cls=incident.class_id) in text and "6103" not in text, text


def _confirms(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """The prompts' buttons on the tab by label, with their confirm dialogs (None: none)."""
    return {e["text"]["text"]: e.get("confirm") for b in blocks
            if b.get("block_id", "").startswith("home:") for e in b["elements"]}


@pytest.mark.parametrize(("lang", "task", "run", "resume"), [
    ("en", "Job 6100_1 is RUNNING. scancel stops it.",
     "Job {job} is PENDING. scancel stops it.",
     "Job {job} is PENDING. scancel stops it, then trainbot resubmits it from iteration "
     "300."),
    ("ko", "작업 6100_1은(는) 지금 RUNNING 상태입니다. scancel로 멈춥니다.",
     "작업 {job}은(는) 지금 PENDING 상태입니다. scancel로 멈춥니다.",
     "작업 {job}은(는) 지금 PENDING 상태입니다. scancel로 멈춘 뒤 trainbot이 iteration 300부터 "
     "다시 제출합니다."),
])
def test_a_prompts_cancels_on_home_ask_naming_the_job_and_its_state(ctx, lang, task, run,
                                                                    resume):
    """A stall prompt's Cancel and Cancel and resume on the Home tab ask in the same confirm
    dialog, naming the job as its thread does (an adopted array's task 6101 as 6100_1, on
    the button too) in that job's state; Dismiss does not ask."""
    stall = {"choices": ["cancel_resume", "cancel", "dismiss"], "summary": "stalled",
             "resume_iter": 300}
    array_chain = adopt_by_bob(ctx, 6100)
    ctx.store.approvals.create(chain_id=array_chain, target_job="6101", action="resubmit",
                               allowed=[APPROVER], now=NOW, expires_at=NOW + 3600,
                               payload=stall)
    confirms = _confirms(render_home(ctx, home_view(ctx, APPROVER, NOW)))
    assert [c and c["text"]["text"] for c in confirms.values()] == [task, None]  # no resubmit
    assert list(confirms)[0] == {"en": "Cancel 6100_1", "ko": "6100_1 취소"}[lang]  # not 6101
    result = submit_and_announce(ctx, "mix", actor=ALICE, now=NOW)
    ctx.store.approvals.create(chain_id=result.chain_id, target_job=str(result.job_id),
                               action="resubmit", allowed=[ALICE], now=NOW,
                               expires_at=NOW + 3600, payload={**stall, "recipe": "mix"})
    blocks = render_home(ctx, home_view(ctx, ALICE, NOW))
    assert validate_blocks(blocks, max_blocks=MAX_VIEW_BLOCKS) == []
    confirms = _confirms(blocks)
    assert [c and (c["text"]["text"], c["style"]) for c in confirms.values()] == [
        (resume.format(job=result.job_id), "danger"), (run.format(job=result.job_id), "danger"),
        None]


def test_a_home_prompt_names_a_checkpoint_without_an_iteration_it_resumes_from(ctx):
    """The prompt's resume starts from a checkpoint whose name has no iteration (a pointer
    naming `final`): the Home tab's Resubmit names it, as the thread's does."""
    mix_prompt(ctx, now=NOW, summary="s", resume_checkpoint="final", offer_cancel=False)
    blocks = render_home(ctx, home_view(ctx, APPROVER, NOW))
    labels = [e["text"]["text"] for b in blocks if b["type"] == "actions"
              for e in b["elements"]]
    assert "Resubmit from checkpoint `final`" in labels, labels


def test_a_home_prompt_after_a_failed_lookup_says_its_checkpoint_is_unknown(ctx):
    """The checkpoint lookup failed: the Home tab's Cancel and resume says the start is
    unknown, as its confirm dialog and the thread's prompt do, never a bare "and resume"."""
    mix_prompt(ctx, now=NOW, summary="s", checkpoint_unknown="lookup_failed")
    confirms = _confirms(render_home(ctx, home_view(ctx, APPROVER, NOW)))
    dialog = confirms["Cancel 88154 and resume (checkpoint unknown)"]
    assert dialog is not None and dialog["text"]["text"].endswith(
        "from the last complete checkpoint (unknown: looking it up failed).")


def test_an_adopted_jobs_target_is_the_one_its_log_printed_in_home_and_its_thread(ctx, slurm):
    """A job trainbot did not submit has no recipe and no override: the target its log
    printed (`iteration 1200/40000`) is its run's target, shown as for a run trainbot
    submitted."""
    chain_id = adopt_by_bob(ctx, 4242)
    sftp = FakeSFTP()
    slurm.set(4242, stdout_path="/logs/eval-4242.out", start_time=NOW)
    sftp.append("/logs/eval-4242.out", "".join(
        f" iteration {it:>8}/   40000 | consumed samples: {it:>10} | elapsed time per "
        "iteration (ms): 2349.4 | learning rate: 9.7E-05 | lm loss: 2.72E+00 |\n"
        for it in range(100, 1300, 100)).encode())
    Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
            catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=ctx.config).tick(NOW + 60)
    [row] = [r for r in rows(ctx, BOB) if r["job_id"] == "4242"]
    assert row["progress_bar"].endswith("1,200 / 40,000"), row["progress_bar"]
    _, root = render(ctx, "root", None, root_view(ctx, chain_id))  # the thread's first message
    assert root.startswith("eval-run: job 4242 RUNNING · ") and root.endswith("1,200 / 40,000")


@pytest.mark.parametrize(("lookup", "line"), [
    ({"checkpoint_lookup": "failed"}, "Last incident: nccl_timeout (job 88154), resume from "
     "the last complete checkpoint (unknown: looking it up failed)"),
    ({}, "Last incident: nccl_timeout (job 88154) ·"),
])
def test_a_runs_last_incident_says_when_its_resume_checkpoint_is_unknown(ctx, lookup, line):
    """The run's last incident proposed a resume whose checkpoint could not be looked up: its
    row on the Home tab says so, in the incident's words (bot.core.policy.resume_start)."""
    from bot.core.policy import Decision, DecisionKind
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW)
    decision = Decision(DecisionKind.PROPOSE_RESUBMIT, "r", "nccl_timeout",
                        offers=("resubmit", "dismiss"), facts={"why": "retryable", **lookup})
    ctx.store.incidents.record("dev:88154:final", class_id="nccl_timeout", now=NOW,
                               chain_id=chain.id, job_id="88154", state="posted",
                               diagnosis={"kind": "incident", "decision": decision.to_json()})
    blocks = render_home(ctx, home_view(ctx, ALICE, NOW))
    assert validate_blocks(blocks) == []
    text = "\n".join(str(b.get("text", {}).get("text", "")) for b in blocks)
    assert line in text, text


@pytest.mark.parametrize(("lang", "line"), [
    ("en", "Last incident: job 88154 never started · retries 0"),
    ("ko", "마지막 인시던트: 작업 88154은(는) 시작되지 않음 · "),
])
def test_a_runs_last_incident_of_a_job_that_never_started_says_so(ctx, lang, line):
    """The run's last job was cancelled while it waited in the queue: its row on the Home tab
    says the job never started, as the incident's head line does, not its State's class
    (unknown_failure)."""
    import io

    from bot.core.diagnose import analyze_file
    from bot.core.models import Accounting, NeverStarted
    from bot.core.policy import ChainHistory, PolicyParams, decide
    acct = Accounting(state="CANCELLED", never_started=NeverStarted(cancelled_by=1000))
    d = analyze_file(io.BytesIO(b""), ctx.catalogue).diagnose(acct)
    decision = decide(d, ChainHistory(), PolicyParams(), NOW, accounting=acct)
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW)
    ctx.store.incidents.record("dev:88154:final", class_id=d.class_id, now=NOW,
                               chain_id=chain.id, job_id="88154", state="posted",
                               diagnosis={"kind": "incident", "decision": decision.to_json()})
    blocks = render_home(ctx, home_view(ctx, ALICE, NOW))
    assert validate_blocks(blocks) == []
    text = "\n".join(str(b.get("text", {}).get("text", "")) for b in blocks)
    assert line in text, text
    assert "unknown_failure" not in text


@pytest.mark.parametrize(("lang", "head", "proposed"), [
    ("en", "job 4242 NODE_FAIL: node_failure — node_failure is retryable; trainbot did not "
     "submit this job, so it resubmits nothing: resubmit it yourself from the last complete "
     "checkpoint (unknown: no recipe names its checkpoint dir)",
     "*Proposed:* resume from the last complete checkpoint (unknown: no recipe names its "
     "checkpoint dir), by hand: trainbot did not submit this job, so it resubmits nothing"),
    ("ko", "작업 4242 NODE_FAIL: node_failure — node_failure은(는) 재시도할 수 있는 실패입니다. "
     "이 작업은 trainbot이 제출하지 않아 아무것도 재제출하지 않습니다: 마지막 완전한 "
     "체크포인트부터 (체크포인트 디렉터리를 알려 주는 레시피가 없어 어느 체크포인트인지 "
     "모릅니다) 직접 재제출하세요",
     "*제안:* 마지막 완전한 체크포인트부터 (체크포인트 디렉터리를 알려 주는 레시피가 없어 어느 "
     "체크포인트인지 모릅니다) 직접 재개하세요: 이 작업은 trainbot이 제출하지 않아 아무것도 "
     "재제출하지 않습니다"),
])
def test_an_adopted_jobs_incident_says_its_checkpoint_is_unknown_not_from_scratch(
        ctx, slurm, lang, head, proposed):
    """A job trainbot did not submit fails after 1,200 iterations: no recipe names its
    checkpoint dir, so where a resume starts is unknown, as after a failed lookup: the
    incident says so (never "from scratch"), claims no work lost (not all 1,200), and
    offers no button to resume from a checkpoint nobody knows."""
    chain_id = adopt_by_bob(ctx, 4242)
    sftp = FakeSFTP()
    slurm.set(4242, stdout_path="/logs/eval-4242.out", start_time=NOW)
    sftp.append("/logs/eval-4242.out", "".join(
        f" iteration {it:>8}/   40000 | elapsed time per iteration (ms): 2349.4 | "
        "lm loss: 2.72E+00 |\n" for it in range(100, 1300, 100)).encode())
    watcher = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
                      catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=ctx.config)
    watcher.tick(NOW + 60)
    slurm.set(4242, state="NODE_FAIL", exit_code=0, signal=0, end_time=NOW + 100)
    watcher.tick(NOW + 160)
    blocks = ctx.sink.blocks["dev:4242:final"]
    texts = [str(b.get("text", {}).get("text", "")) for b in blocks]
    assert texts[0] == head and proposed in texts, texts
    assert not any("scratch" in t for t in texts) and "work_lost" not in [
        b.get("block_id") for b in blocks]
    assert [b for b in blocks if b["type"] == "actions"] == []  # nothing to resume from
    [attempt] = ctx.store.attempts.for_chain(chain_id)
    assert (attempt.last_iter, attempt.work_lost_iters) == (1200, None)


@pytest.mark.parametrize(("lang", "refused", "done"), [
    ("en", "👉 Refused: job 6100_1 was not submitted by trainbot; only group leads can cancel it.",
     "👉 Job 6100_1 (job 6101) cancelled by <@U0APPR>."),
    ("ko", "👉 거부됨: 작업 6100_1은(는) trainbot이 제출한 작업이 아닙니다. "
     "취소 권한은 leads 그룹에게만 있습니다.",
     "👉 <@U0APPR>님이 작업 6100_1 (작업 6101)을(를) 취소했습니다."),
])
def test_home_cancel_of_an_adopted_array_task_names_it_as_the_tab_does(ctx, slurm, lang,
                                                                     refused, done):
    """Task 6100_1 adopted with `/train watch 6100_1`: its row and its Cancel name it 6100_1
    (the button's value is its raw id 6101). A click by who may not cancel it (a forged one:
    Bob's tab has no Cancel) is refused naming 6100_1, and an approver's cancels raw 6101 and
    says so naming 6100_1 (its raw id after it), in the tab each gets back; never 6101 alone."""
    adopt_task(ctx)
    [row] = rows(ctx, APPROVER)
    [cancel] = [b for b in row["buttons"] if b["action_id"] == HOME_CANCEL_JOB]
    assert (row["job_id"], cancel["job_id"], cancel["value"]) == ("6100_1", "6100_1", "6101")
    click = make_cancel_job(ctx)
    click(body={"user": {"id": BOB}}, action={"value": "6101"}, logger=logging.getLogger("t"))
    user, blocks = homes(ctx).published[-1]
    assert user == BOB and _notice(blocks) == refused and slurm.acted("cancel") == []
    click(body={"user": {"id": APPROVER}}, action={"value": "6101"},
          logger=logging.getLogger("t"))
    user, blocks = homes(ctx).published[-1]
    assert user == APPROVER and _notice(blocks) == done
    assert slurm.acted("cancel") == [6101]


def adopt_task(ctx: BotContext) -> None:
    """`/train watch 6100_1` by an approver: trainbot adopts the array's task (raw id 6101)."""
    reply = execute(ctx, parse_command("watch 6100_1"), actor=APPROVER, channel="C0TRAIN",
                    now=NOW)
    assert reply.chain_id is not None, reply.text


def _notice(blocks: list[dict[str, Any]]) -> str:
    [notice] = [b["text"]["text"] for b in blocks if b.get("block_id") == "notice"]
    return notice


@pytest.mark.parametrize("value", ["0", "000", "\u00b2", "\u0661\u0662", "-1", "6101 "])
@pytest.mark.parametrize("button", ["cancel", "stop"])
def test_a_home_click_whose_value_is_no_id_is_ignored_as_forged(ctx, slurm, caplog, value,
                                                                  button):
    """A Home tab click whose value is no job's or chain's id, by the rule `/train` takes
    job ids by (0, which no Slurm job has; `²` and Arabic-Indic digits, which str.isdigit()
    takes and int() chokes on or reads), is logged as forged and ignored: no traceback, no
    Slurm call, no tab published."""
    from handlers.home import make_stop_watching

    click = (make_cancel_job if button == "cancel" else make_stop_watching)(ctx)
    with caplog.at_level(logging.INFO):
        click(body={"user": {"id": APPROVER}}, action={"value": value},
              logger=logging.getLogger("t"))
    assert [r.levelname for r in caplog.records] == ["WARNING"], caplog.text
    assert "forged value" in caplog.text
    assert slurm.calls == [] and homes(ctx).published == []
