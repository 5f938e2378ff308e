"""An array recipe end to end over the fakes: `array:` submits `sbatch --array=…` into one
whole-array thread; a task that fails with a resumable cause is resubmitted alone
(`--array=N`, same job name, its own `%a` checkpoint), its row showing the new attempt; the
retry budget counts each task's own resubmits."""

from __future__ import annotations

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, make_context

import bot.cluster.checkpoints as ck
from bot.core.catalogue import Catalogue
from bot.core.checkpoints import Checkpoint
from bot.core.slurm.sbatch import sbatch_argv
from bot.services.approvals import ActionId, handle_click
from bot.services.probes import create_probe_offer
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import AutoResubmitter, submit_and_announce
from bot.services.threads import array_root_view
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

LOG = "/logs/sweep-{}_{}.out"


@pytest.fixture
def lookups(monkeypatch):
    """Each task's checkpoint dir has iteration 100 * (task + 1); the dirs looked in."""
    seen: list[str] = []

    def fake_find(sftp, root, rule, *, pointer_name=None, globs=("iter_*",), at_most=None):
        seen.append(root)
        task = int(root.rsplit("_", 1)[1])
        return Checkpoint(f"{root}/iter_{100 * (task + 1):06d}", 100 * (task + 1), "pointer")

    monkeypatch.setattr(ck, "find_latest_checkpoint", fake_find)
    return seen


def setup(store: Store, *, auto: bool = True, budget: int = 3, lang: str = "en",
          slack_lang: str = "en", **recipe_over):
    slurm, sftp = FakeSlurm(), FakeSFTP()
    ctx = make_context(store, slurm, sftp=sftp, clock=lambda: T0, slack_lang=slack_lang,
                       array="0-2%2", job_name="sweep", lang=lang,
                       log_path="/logs/%x-%A_%a.out", checkpoint={"dir": "/ck/sweep/task_%a"},
                       policy={"auto_resubmit": auto, "backoff_s": 60, "retry_budget": budget},
                       **recipe_over)
    return ctx, slurm, sftp


def watcher(ctx, slurm, sftp) -> Watcher:
    auto = AutoResubmitter(ctx, "dev")
    return Watcher("dev", slurm=slurm, reader=lambda: sftp, store=ctx.store,
                   catalogue=Catalogue.load(), sink=ThreadEvents(ctx), config=ctx.config,
                   checkpoint=auto.checkpoint, resubmit=auto.resubmit,
                   recover=auto.recover)


def run_task(slurm: FakeSlurm, sftp: FakeSFTP, job_id: int, array: int, task: int) -> None:
    """Task `task` of array `array` running as raw job `job_id`, its log written."""
    path = LOG.format(array, task)
    if job_id in slurm.records:
        slurm.set(job_id, state="RUNNING", array_job_id=array, array_task_id=task,
                  stdout_path=path, start_time=T0)
    else:
        slurm.add(job_id, name="sweep", state="RUNNING", array_job_id=array,
                  array_task_id=task, stdout_path=path, start_time=T0)
    sftp.append(path, b"iter: 10/100 | loss: 0.5\n")


def rows(ctx, chain_id: int) -> list[tuple[str, str, int]]:
    view = array_root_view(ctx, chain_id)
    assert view is not None
    return [(t.display_id, t.state, t.attempt) for t in view.rows]


def started_array(store: Store, lookups, **kw):
    """The sweep submitted (array 88887) and its three tasks running: 0 and 1 as raw jobs
    88900 and 88901, task 2 under the array's own id."""
    ctx, slurm, sftp = setup(store, **kw)
    result = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0)
    array = int(result.job_id)
    w = watcher(ctx, slurm, sftp)
    run_task(slurm, sftp, 88900, array, 0)
    run_task(slurm, sftp, 88901, array, 1)
    run_task(slurm, sftp, array, array, 2)
    w.tick(T0 + 60)
    return ctx, slurm, sftp, w, result


def test_an_array_recipe_submits_the_whole_array_into_one_array_thread(store, lookups):
    ctx, slurm, _ = setup(store)
    result = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0)
    [spec] = slurm.submits()
    assert spec.array == "0-2%2" and "--array=0-2%2" in sbatch_argv(spec)
    assert spec.job_name == "sweep" and spec.output == "/logs/%x-%A_%a.out"
    # stderr joins each task's log, expanded alike (not the script's own #SBATCH --error)
    assert {"--output=/logs/%x-%A_%a.out", "--error=/logs/%x-%A_%a.out"} <= set(sbatch_argv(spec))
    assert "TRAINBOT_RESUME_FROM" not in spec.env and lookups == []  # each task its own
    chain = store.chains.get(result.chain_id)
    assert (chain.kind, chain.array_job_id, chain.recipe) == ("array", int(result.job_id), "mix")
    assert not chain.adopted and store.attempts.for_chain(chain.id) == []
    assert [w.job_id for w in store.watched_jobs.list("dev")] == [result.job_id]
    [root, note] = ctx.sink.posts
    assert root[0] == "root" and root[3].startswith(f"array {result.job_id} (sweep): PENDING")
    assert note[3] == (f"*mix*: job array {result.job_id} (tasks 0-2%2) submitted by "
                       "<@U0ALICE> (name `sweep`), each task finding its own checkpoint; each "
                       "task's row is in this thread's first message")


def test_a_failed_task_is_resubmitted_alone_from_its_own_checkpoint(store, lookups):
    ctx, slurm, sftp, w, result = started_array(store, lookups)
    array = int(result.job_id)
    slurm.set(88901, node="vm7")
    assert rows(ctx, result.chain_id) == [(f"{array}_0", "RUNNING", 1),
                                          (f"{array}_1", "RUNNING", 1),
                                          (f"{array}_2", "RUNNING", 1)]
    slurm.set(88901, state="NODE_FAIL", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)  # the incident; the resubmit waits out its backoff
    assert len(slurm.submits()) == 1
    w.tick(T0 + 200)
    resubmit = slurm.submits()[1]
    assert resubmit.array == "1" and "--array=1" in sbatch_argv(resubmit)
    assert resubmit.job_name == "sweep"
    assert resubmit.env["TRAINBOT_RESUME_FROM"] == "/ck/sweep/task_1/iter_000200"
    assert resubmit.env["TRAINBOT_RESUME_ITER"] == "200"
    new = 88888  # FakeSlurm's next id
    attempt = store.attempts.get_by_job(str(new))
    assert (attempt.shown_id, attempt.array_task, attempt.start_iter) == (f"{new}_1", 1, 200)
    assert store.chains.get(result.chain_id).retries_used == 0  # a node failure is free
    assert resubmit.exclude == "vm7"  # the faulty node left out, as for any job
    assert rows(ctx, result.chain_id)[1] == (f"{new}_1", "PENDING", 2)
    said = [t for t in ctx.sink.texts() if f"{new}_1" in t]
    assert said and f"{array}_1" in said[-1], ctx.sink.texts()
    # the one-task array runs and completes: the same row, its second attempt
    run_task(slurm, sftp, new, new, 1)
    w.tick(T0 + 260)
    assert rows(ctx, result.chain_id)[1] == (f"{new}_1", "RUNNING", 2)
    for job, path in ((88900, LOG.format(array, 0)), (new, LOG.format(new, 1)),
                      (array, LOG.format(array, 2))):
        sftp.append(path, b"iter: 100/100 | loss: 0.1\n")
        slurm.set(job, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 300)
    w.tick(T0 + 320)
    assert [r[1] for r in rows(ctx, result.chain_id)] == ["COMPLETED"] * 3
    assert store.watched_jobs.list("dev") == []
    causes = {a.shown_id: a.cause for a in store.attempts.for_chain(result.chain_id)}
    assert store.chains.get(result.chain_id).status == (
        "completed" if set(causes.values()) == {"node_failure", "completed"} else "stopped")
    assert causes[f"{array}_1"] == "node_failure"
    assert len(slurm.submits()) == 2  # nothing else was resubmitted
    done = sorted(t for t in ctx.sink.texts() if "Completed · job" in t)
    assert [t.split(":")[0] for t in done] == [
        f"✅ Completed · job {array}_0", f"✅ Completed · job {array}_2",
        f"✅ Completed · job {new}_1 (was {array}_1)"], done  # the task it replaced
    assert "in 2 attempts (retries used: 0)" in done[2]  # a node failure is free
    assert "first attempt" in done[0]


def test_the_last_sibling_ending_while_a_tasks_resubmit_waits_does_not_end_the_array(
        store, lookups):
    """Task 1 failed and its resubmit waits out its backoff when tasks 0 and 2 complete: no
    job of the array is watched then, but the run is not over (it was ended as `stopped`,
    and the due resubmit was then never made; the same after a crash between sbatch and
    recording the one-task array, whose job was then never adopted)."""
    ctx, slurm, sftp, w, result = started_array(store, lookups)
    array = int(result.job_id)
    slurm.set(88901, state="NODE_FAIL", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)  # the incident; the resubmit waits out its backoff
    for job, task in ((88900, 0), (array, 2)):
        sftp.append(LOG.format(array, task), b"iter: 100/100 | loss: 0.1\n")
        slurm.set(job, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 125)
    w.tick(T0 + 130)
    assert store.watched_jobs.list("dev") == []
    assert store.chains.get(result.chain_id).status == "active"
    w.tick(T0 + 200)
    assert [s.array for s in slurm.submits()] == ["0-2%2", "1"]
    new = 88888  # FakeSlurm's next id
    run_task(slurm, sftp, new, new, 1)
    w.tick(T0 + 260)
    sftp.append(LOG.format(new, 1), b"iter: 100/100 | loss: 0.1\n")
    slurm.set(new, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 300)
    w.tick(T0 + 320)
    assert store.chains.get(result.chain_id).status == "completed"
    assert [r[1] for r in rows(ctx, result.chain_id)] == ["COMPLETED"] * 3


def test_each_task_has_its_own_retry_budget(store, lookups):
    ctx, slurm, sftp, w, result = started_array(store, lookups, budget=1)
    slurm.set(88901, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    w.tick(T0 + 200)
    assert [s.array for s in slurm.submits()] == ["0-2%2", "1"]
    run_task(slurm, sftp, 88888, 88888, 1)
    w.tick(T0 + 260)
    slurm.set(88888, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 300)
    w.tick(T0 + 320)
    w.tick(T0 + 400)
    assert [s.array for s in slurm.submits()] == ["0-2%2", "1"]  # task 1's budget is spent
    # another task still has its own retry
    slurm.set(88900, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 410)
    w.tick(T0 + 420)
    w.tick(T0 + 500)
    assert [s.array for s in slurm.submits()] == ["0-2%2", "1", "0"]
    assert slurm.submits()[2].env["TRAINBOT_RESUME_FROM"] == "/ck/sweep/task_0/iter_000100"


def test_an_approved_resubmit_of_a_task_reruns_only_that_task(store, lookups):
    ctx, slurm, sftp, w, result = started_array(store, lookups, auto=False)
    slurm.set(88901, state="NODE_FAIL", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    [approval] = store.approvals.for_chain(result.chain_id, "pending")
    handle_click(ctx, approval.token, ActionId.RESUBMIT, "U0APPR", now=T0 + 130)
    resubmit = slurm.submits()[-1]
    assert resubmit.array == "1" and resubmit.job_name == "sweep"
    assert resubmit.env["TRAINBOT_RESUME_FROM"] == "/ck/sweep/task_1/iter_000200"
    assert rows(ctx, result.chain_id)[1] == ("88888_1", "PENDING", 2)


def test_a_stale_click_on_a_tasks_prompt_names_the_task_that_replaced_it(store, lookups):
    """Two prompts and a probe offer about task 1 (88901); the first prompt is approved (task
    1 runs again as 88888, known as 88888_1): clicks on the others name the task's latest job
    by the id people know, not Slurm's raw 88888."""
    ctx, slurm, sftp, w, result = started_array(
        store, lookups, auto=False, dataloader_probe={"factory": "mydata.datasets:build_train"})
    slurm.set(88901, state="NODE_FAIL", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    [approval] = store.approvals.for_chain(result.chain_id, "pending")
    probe = create_probe_offer(ctx, recipe="mix", chain_id=result.chain_id, job_id="88901",
                               now=T0 + 121)
    assert probe is not None
    other = create_resubmit_prompt(ctx, recipe="mix", chain_id=result.chain_id,
                                   job_id="88901", now=T0 + 121, summary="88901: node failure",
                                   mem="1900G")
    handle_click(ctx, approval.token, ActionId.RESUBMIT, "U0APPR", now=T0 + 130)
    late = handle_click(ctx, other.token, ActionId.RESUBMIT_MEM, "U0APPR", now=T0 + 140)
    assert late.status == "stale"
    assert late.ephemeral == ("Out of date: job 88888_1 is now the latest (PENDING); nothing "
                              "was done.")
    assert late.update_text == late.ephemeral  # the prompt itself says so too
    late = handle_click(ctx, probe["value"], ActionId.RUN_PROBE, "U0APPR", now=T0 + 150)
    assert (late.status, late.ephemeral) == ("stale", "Out of date: job 88888_1 is now the "
                                             "latest (PENDING); nothing was done.")
    assert len(slurm.submits()) == 2  # the array, and task 1 once


def test_a_whole_array_is_never_resubmitted_into_its_chain_nor_a_task_of_a_plain_recipe(
        store, lookups):
    from bot.services import UsageProblem
    from bot.services.submit import submit_recipe

    ctx, slurm, sftp = setup(store)
    first = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0)
    with pytest.raises(UsageProblem, match="submits the whole array again"):
        submit_recipe(ctx.config, "mix", slurm=slurm, sftp=sftp, store=store, now=T0,
                      actor="U0ALICE", chain_id=first.chain_id)
    plain = make_context(store, slurm)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    with pytest.raises(UsageProblem, match="submits no job array"):
        submit_recipe(plain.config, "mix", slurm=slurm, sftp=sftp, store=store, now=T0,
                      actor="U0ALICE", chain_id=chain.id, array_task=1)
    assert len(slurm.submits()) == 1


def test_an_array_recipes_run_is_one_home_row_of_its_team_with_its_tasks(store, lookups):
    from bot.services.home import home_view
    from bot.services.threads import render

    ctx, slurm, sftp, w, result = started_array(store, lookups, auto=False)
    slurm.set(88901, state="NODE_FAIL", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    assert store.chains.adopted() == []  # trainbot submitted it
    [row] = home_view(ctx, "U0ALICE", T0 + 130)["runs"]
    assert (row["job_id"], row["array"], row["adopted"], row["state"]) == (
        result.job_id, True, False, "RUNNING")
    assert sorted((t["state"], t["n"]) for t in row["tasks"]) == [("NODE_FAIL", 1),
                                                                  ("RUNNING", 2)]
    [prompt] = row["prompts"]  # the failed task's Resubmit, as for any run
    assert "resubmit" in [b["kind"] for b in prompt["buttons"]]
    _, text = render(ctx, "home", None, home_view(ctx, "U0ALICE", T0 + 130))
    assert text


@pytest.mark.parametrize(("lang", "ledger", "more", "none"), [
    ("en", "task 1: 2/2 retries, task 0: 1/2 retries", "task 1: 2/2 retries, 1 more task(s) "
     "retried", "no task used a retry (2 per task)"),
    ("ko", "task 1: 재시도 2/2, task 0: 재시도 1/2", "task 1: 재시도 2/2, 재시도한 task 1개 더",
     "재시도한 task 없음 (task마다 2회)"),
])
def test_an_array_recipes_home_row_counts_retries_per_task_like_its_budget(
        store, lookups, monkeypatch, lang, ledger, more, none):
    """The Home row of an array recipe's run names the tasks that used retries, each against
    the per-task budget (as the watcher spends it), the most spent first; none used: it says
    so with the budget."""
    from slack_standin import MAX_VIEW_BLOCKS, validate_blocks

    from bot.services import home
    from bot.services.home import home_view, render_home

    ctx, slurm, sftp, w, result = started_array(store, lookups, budget=2, slack_lang=lang)

    def shown() -> str:
        [row] = home_view(ctx, "U0ALICE", T0)["runs"]
        blocks = render_home(ctx, home_view(ctx, "U0ALICE", T0))
        assert validate_blocks(blocks, max_blocks=MAX_VIEW_BLOCKS) == []
        [section] = [b for b in blocks if b.get("block_id") == f"run:{row['chain_id']}"]
        return section["text"]["text"].splitlines()[-1]

    assert shown().endswith(none)
    # each task resumed by itself from its checkpoint, and saves no newer one: its time limits
    # are retries, not chunks of progress (bot.core.policy.chunks)
    for a in store.attempts.for_chain(result.chain_id):
        store.attempts.update(a.id, start_iter=100 * (a.array_task + 1))
    # task 1 times out twice (2 charged resubmits), task 0 once; task 2 a free node failure
    slurm.set(88901, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    w.tick(T0 + 200)  # 88888_1
    run_task(slurm, sftp, 88888, 88888, 1)
    slurm.set(88900, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 210)
    slurm.set(array := int(result.job_id), state="NODE_FAIL", exit_code=0, signal=0,
              end_time=T0 + 210)
    w.tick(T0 + 220)
    w.tick(T0 + 300)  # 88889_0, 88890_2
    sftp.append(LOG.format(88888, 1), b"iter: 60/100 | loss: 0.3\n")  # progress made
    slurm.set(88888, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 310)
    w.tick(T0 + 320)
    w.tick(T0 + 600)  # 88891_1
    assert [s.array for s in slurm.submits()][4:] == ["1"]
    assert sorted(s.array for s in slurm.submits()[2:4]) == ["0", "2"], array
    assert shown().endswith(ledger)
    monkeypatch.setattr(home, "TASK_RETRIES_SHOWN", 1)  # the others counted, not named
    assert shown().endswith(more)


def test_a_tasks_time_limit_chunk_spends_none_of_its_budget_once_its_start_is_known(
        store, lookups, monkeypatch):
    from bot.services.home import home_view, render_home

    saved = {1: 200}  # task 1's newest complete checkpoint
    monkeypatch.setattr(ck, "find_latest_checkpoint", lambda sftp, root, rule, **kw: Checkpoint(
        f"{root}/iter_{saved[1]:06d}", saved[1], "pointer"))
    ctx, slurm, sftp, w, result = started_array(store, lookups, budget=2)

    def final(job: int) -> dict:
        [incident] = [i for i in store.incidents.for_chain(result.chain_id)
                      if i.key == f"dev:{job}:final"]
        return incident.diagnosis

    # task 1 saved iteration 200 before its time limit; the whole array's submit named no
    # checkpoint, so what it resumed from is unknown: its time limit is charged
    slurm.set(88901, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    w.tick(T0 + 200)  # resubmitted alone, from its checkpoint at 200
    assert [s.array for s in slurm.submits()][1:] == ["1"]
    assert final(88901)["decision"]["charged"] is True
    assert "time_limit is retryable: resubmitting from iteration 200" in \
        final(88901)["text"] and "charged: 1 of 2 retries" in final(88901)["text"]
    # its resubmit resumed from 200 and saved 400 before its time limit: the run going on
    run_task(slurm, sftp, 88888, 88888, 1)
    sftp.append(LOG.format(88888, 1), b"iter: 400/1000 | loss: 0.3\n")
    saved[1] = 400
    slurm.set(88888, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 300)
    w.tick(T0 + 320)
    w.tick(T0 + 600)  # past its backoff
    assert [s.array for s in slurm.submits()][1:] == ["1", "1"]
    assert final(88888)["decision"]["charged"] is False
    assert "chunk from iteration 200 ended at the time limit after saving iter 400" in \
        final(88888)["text"]
    [row] = home_view(ctx, "U0ALICE", T0)["runs"]
    blocks = render_home(ctx, home_view(ctx, "U0ALICE", T0))
    [section] = [b for b in blocks if b.get("block_id") == f"run:{row['chain_id']}"]
    assert section["text"]["text"].splitlines()[-1].endswith("task 1: 1/2 retries")


def test_a_tasks_budget_on_home_counts_within_the_target_its_log_printed_as_the_watcher(
        store, lookups, monkeypatch):
    """The recipe sets no target_iter; task 1's log prints 300. A checkpoint at 400 is past
    it, no progress of this run: the watcher charges the time limit, and Home counts the same
    (bot.core.models.run_target), not a free chunk by the recipe's missing target."""
    from bot.services.home import home_view

    saved = {1: 200}
    monkeypatch.setattr(ck, "find_latest_checkpoint", lambda sftp, root, rule, **kw: Checkpoint(
        f"{root}/iter_{saved[1]:06d}", saved[1], "pointer"))
    ctx, slurm, sftp, w, result = started_array(store, lookups, budget=2)
    assert ctx.config.recipe("mix").target_iter is None
    slurm.set(88901, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    w.tick(T0 + 200)  # resubmitted alone (charged: its start was unknown), from 200
    run_task(slurm, sftp, 88888, 88888, 1)
    sftp.append(LOG.format(88888, 1), b"iter: 250/300 | loss: 0.3\n")
    saved[1] = 400
    slurm.set(88888, state="TIMEOUT", exit_code=0, signal=0, end_time=T0 + 300)
    w.tick(T0 + 320)
    [incident] = [i for i in store.incidents.for_chain(result.chain_id)
                  if i.key == "dev:88888:final"]
    assert incident.diagnosis["decision"]["charged"] is True
    assert incident.diagnosis["diagnosis"]["metrics"]["target_iter"] == 300
    w.tick(T0 + 600)  # past its backoff: resubmitted, its second retry
    assert [s.array for s in slurm.submits()][1:] == ["1", "1"]
    [row] = home_view(ctx, "U0ALICE", T0)["runs"]
    assert row["task_retries"] == [{"task": 1, "used": 2}]


@pytest.mark.parametrize(("lang", "labels", "title", "resume", "cancel"), [
    ("en", ["Cancel 88887_0 and resume from iteration 100", "Cancel 88887_0", "Dismiss"],
     "Cancel job 88887_0?",
     "Job 88887_0 is RUNNING. scancel stops it, then trainbot resubmits it from iteration "
     "100.", "Job 88887_0 is RUNNING. scancel stops it."),
    ("ko", ["88887_0 취소 후 iteration 100부터 재개", "88887_0 취소", "무시"],
     "작업 88887_0을(를) 취소할까요?",
     "작업 88887_0은(는) 지금 RUNNING 상태입니다. scancel로 멈춘 뒤 trainbot이 iteration 100부터 "
     "다시 제출합니다.",
     "작업 88887_0은(는) 지금 RUNNING 상태입니다. scancel로 멈춥니다."),
])
def test_a_stalled_tasks_prompt_names_the_task_and_asks_before_cancelling(
        store, lookups, lang, labels, title, resume, cancel):
    """A stall prompt for task 0 (raw job 88900) in the array's thread: its buttons name the
    task as the thread does (88887_0), and Cancel and Cancel and resume ask first in Slack's
    confirm dialog naming it and its state, in the recipe's language; the Home tab shows the
    same prompt with the same words."""
    from slack_standin import MAX_VIEW_BLOCKS, validate_blocks

    from bot.services.home import home_view, render_home

    ctx, slurm, sftp, w, result = started_array(store, lookups, lang=lang, slack_lang=lang)
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=result.chain_id,
                                    job_id="88900", now=T0 + 60, summary="88887_0 stalled",
                                    resume_iter=100, offer_cancel=True)
    assert validate_blocks(prompt.blocks) == []
    assert ctx.store.approvals.get(prompt.token).target_job == "88900"  # scancel's id
    thread = prompt.blocks[1]["elements"]
    assert [b["text"]["text"] for b in thread] == labels
    assert [b.get("confirm") and (b["confirm"]["title"]["text"], b["confirm"]["text"]["text"],
                                  b["confirm"]["style"]) for b in thread] == [
        (title, resume, "danger"), (title, cancel, "danger"), None]
    blocks = render_home(ctx, home_view(ctx, "U0ALICE", T0 + 60))
    assert validate_blocks(blocks, max_blocks=MAX_VIEW_BLOCKS) == []
    home = [e for b in blocks if b.get("block_id", "").startswith("home:")
            for e in b["elements"]]
    assert [(b["text"]["text"], b.get("confirm")) for b in home] == [
        (b["text"]["text"], b.get("confirm")) for b in thread]


def test_two_tasks_resubmits_at_the_same_instant_both_go(store, lookups):
    """Tasks 0 and 1 failed, each with its prompt: Resubmit on task 0's is pressed while task
    1's resubmit is at its sbatch: each task writes its own checkpoints, and both go (the
    recipe-wide claim refused the second, saying another submit of the recipe was under way)."""
    ctx, slurm, sftp, w, result = started_array(store, lookups, auto=False)
    for job in (88900, 88901):
        slurm.set(job, state="NODE_FAIL", exit_code=0, signal=0, end_time=T0 + 100)
    w.tick(T0 + 120)
    by_task = {a.target_job: a for a in store.approvals.for_chain(result.chain_id, "pending")}
    sbatch, clicks, pressed = slurm.submit, [], [False]

    def submit(spec, *, script=None):
        if not pressed[0]:  # the first sbatch, task 1's
            pressed[0] = True
            clicks.append(handle_click(ctx, by_task["88900"].token, ActionId.RESUBMIT, "U0APPR",
                                       T0 + 131))
        return sbatch(spec, script=script)

    slurm.submit = submit
    first = handle_click(ctx, by_task["88901"].token, ActionId.RESUBMIT, "U0APPR", T0 + 130)
    assert (first.status, clicks[0].status) == ("done", "done"), clicks[0].ephemeral
    assert [s.array for s in slurm.submits()] == ["0-2%2", "0", "1"]
