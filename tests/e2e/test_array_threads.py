"""A whole job array watched from Slack (`/train watch 6100`): one thread whose root has a
row per task, rewritten in place (chat.update) as the watcher's ticks see tasks start, progress
and end; a failing task's incident in the same thread, named `6100_2`. The real Bolt app, poster
and templates against the Slack stand-in; Slurm and the cluster's files are fakes."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import FakeClusters, FakeSFTP, FakeSlurm, make_config
from slack_bolt import App
from slack_standin import SlackStandIn
from support.bolt_driver import ResponseUrls, SyncExecutor, ack_text, dispatch, slash_body

from bot.app import build_app
from bot.core.arrays import MAX_TASK_ROWS
from bot.services.ports import BotContext
from bot.services.watch.chains import ProgressRewriteBudget
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents

CH = "C0TRAIN"
NOW = 1_732_871_000.0
LOGS = "/home/slurmci/logs"


@pytest.fixture
def cluster() -> tuple[FakeSlurm, FakeSFTP]:
    return FakeSlurm(), FakeSFTP()


@pytest.fixture
def services(slack_context, store, cluster) -> BotContext:
    return slack_context(store, make_config(), FakeClusters(*cluster), charts=False)


@pytest.fixture
def app(services: BotContext, slack_client) -> App:
    return build_app(services.config, services, client=slack_client,
                     listener_executor=SyncExecutor(), token_verification_enabled=False)


def train(app: App, urls: ResponseUrls, text: str, user: str = "W0LEAD") -> list[dict]:
    url = urls.new()
    ack_text(dispatch(app, slash_body(text, user=user, channel=CH, response_url=url)))
    return urls.of(url)


def watcher(services: BotContext, cluster: tuple[FakeSlurm, FakeSFTP], **kw: Any) -> Watcher:
    slurm, sftp = cluster
    return Watcher("dev", slurm=slurm, reader=lambda: sftp, store=services.store,
                   catalogue=services.catalogue, sink=ThreadEvents(services),
                   config=services.config, **kw)


def task(slurm: FakeSlurm, sftp: FakeSFTP, job_id: int, n: int, state: str, **kw) -> None:
    path = f"{LOGS}/sweep-6100_{n}.out"
    slurm.add(job_id, name="sweep", state=state, array_job_id=6100, array_task_id=n,
              stdout_path=path, start_time=NOW, **kw)
    sftp.append(path, b"".join(f"iter: {i}/100 | loss: 0.5\n".encode() for i in range(1, 30)))


def roots_text(slack: SlackStandIn) -> list[str]:
    """The text of each thread root in the channel, oldest first."""
    return ["\n".join(str(b.get("text", {}).get("text", "")) for b in root["blocks"]
                      if isinstance(b.get("text"), dict))
            for root in slack.root_messages(CH)]


def root_text(slack: SlackStandIn) -> str:
    [text] = roots_text(slack)
    return text


def watched_runs(slack_context, slack_client, store, cluster: tuple[FakeSlurm, FakeSFTP],
                 urls: ResponseUrls, jobs: range) -> tuple[BotContext, list[float]]:
    """Jobs `jobs` of the `solo` job name, RUNNING and at iteration 1, each watched from
    Slack (`/train watch`) as a run of its own: the bot's services, and their clock (a list
    the test sets; the poster's clock too) at NOW."""
    slurm, sftp = cluster
    clock = [NOW]
    ctx = slack_context(store, make_config(), FakeClusters(slurm, sftp), charts=False,
                        clock=lambda: clock[0])
    app = build_app(ctx.config, ctx, client=slack_client, listener_executor=SyncExecutor(),
                    token_verification_enabled=False)
    for job in jobs:
        path = f"{LOGS}/solo-{job}.out"
        slurm.add(job, name="solo", state="RUNNING", stdout_path=path, start_time=NOW)
        sftp.append(path, b"iter: 1/100000 | loss: 0.5\n")
        [reply] = train(app, urls, f"watch {job}")
        assert "Watching" in reply["text"], reply
    return ctx, clock


def test_a_whole_array_is_one_thread_with_a_row_per_task(app, urls, services, cluster,
                                                         slack: SlackStandIn) -> None:
    slurm, sftp = cluster
    task(slurm, sftp, 6101, 0, "RUNNING")
    slurm.add(6100, name="sweep", state="PENDING", reason="JobArrayTaskLimit",
              array_job_id=6100)  # tasks 1-2 wait
    [reply] = train(app, urls, "watch 6100")
    assert reply["text"] == ("Watching array 6100 (sweep: 1 task(s) started, more waiting to "
                             "start) on dev, one thread with a row per task.")
    text = root_text(slack)
    assert "sweep · array 6100 · RUNNING" in text and "6100_0" in text
    assert "more tasks wait to start" in text
    [again] = train(app, urls, "watch 6100")
    assert again["text"] == "Array 6100 is already watched."

    w = watcher(services, cluster)
    w.tick(NOW + 60)
    updates = len(slack.ok_calls("chat.update"))
    # task 1 starts (its own id 6102) and fails; task 2, the last, takes the array's id
    task(slurm, sftp, 6102, 1, "RUNNING")
    slurm.records.pop(6100)
    task(slurm, sftp, 6100, 2, "RUNNING")
    report = w.tick(NOW + 120)
    assert report.slurm_calls == 1 and len(slurm.acted("jobs")) == 2  # no call per task
    text = root_text(slack)
    assert all(f"6100_{n}" in text for n in range(3)) and "wait to start" not in text
    assert len(slack.ok_calls("chat.update")) > updates  # the root rewritten in place
    assert sorted(w.job_id for w in services.store.watched_jobs.list()) == \
        ["6100", "6101", "6102"]

    slurm.set(6102, state="FAILED", exit_code=1, signal=0, end_time=NOW + 150)
    sftp.append(f"{LOGS}/sweep-6100_1.out", b"Traceback (most recent call last):\n"
                b"RuntimeError: boom\n")
    w.tick(NOW + 180)
    [root] = slack.root_messages(CH)
    [incident] = [m for m in slack.replies(CH, root["ts"]) if not m.get("files")]
    assert "6100_1" in incident["text"] and "6102" not in incident["text"]
    assert "6100_1" in root_text(slack) and "FAILED" in root_text(slack)
    assert not any(b.get("type") == "actions" for b in incident["blocks"])  # nothing to resubmit

    for job in (6101, 6100):
        slurm.set(job, state="COMPLETED", exit_code=0, signal=0, end_time=NOW + 200)
    w.tick(NOW + 240)
    assert services.store.watched_jobs.list() == []
    [chain] = services.store.chains.for_recipe("")
    assert (chain.kind, chain.array_job_id, chain.status) == ("array", 6100, "stopped")
    assert "sweep · array 6100 · FAILED" in root_text(slack)  # one task failed
    assert len(slack.root_messages(CH)) == 1


def test_a_large_array_stays_within_slacks_limits(app, urls, services, cluster,
                                                  slack: SlackStandIn) -> None:
    slurm, sftp = cluster
    for n in range(500):
        state = "FAILED" if n in (7, 321) else "COMPLETED" if n < 400 else "RUNNING"
        slurm.add(7000 + n + 1, name="big", state=state, array_job_id=7000, array_task_id=n,
                  exit_code=1 if state == "FAILED" else 0, signal=0)
    slurm.add(7000, name="big", state="PENDING", array_job_id=7000)
    [reply] = train(app, urls, "watch 7000")
    assert "500 task(s) started" in reply["text"]
    text = root_text(slack)  # the stand-in refused nothing: the root was posted
    assert "7000_7" in text and "7000_321" in text  # failures keep their rows
    rows = [line for line in text.splitlines() if line.startswith("7000_")]
    assert len(rows) == MAX_TASK_ROWS
    assert "… and" in text and "COMPLETED" in text


def test_an_adopted_single_job_gets_a_thread_too(app, urls, services, cluster,
                                                 slack: SlackStandIn) -> None:
    slurm, sftp = cluster
    slurm.add(5150, name="someone-else", state="RUNNING", stdout_path="/tmp/x.out")
    [reply] = train(app, urls, "watch 5150")
    assert reply["text"] == "Watching job 5150 (someone-else, RUNNING) on dev."
    text = root_text(slack)
    assert "someone-else · job 5150 · RUNNING" in text
    [root] = slack.root_messages(CH)
    assert "submitted outside trainbot" in str(root["blocks"])
    sftp.append("/tmp/x.out", b"done\n")  # the job's own log, which it wrote while it ran
    slurm.set(5150, state="COMPLETED", exit_code=0, signal=0, end_time=NOW + 100)
    watcher(services, cluster).tick(NOW + 120)
    [chain] = services.store.chains.for_recipe("")
    assert (chain.kind, chain.status) == ("adopted", "stopped")  # completed, no target known


@pytest.mark.parametrize(("lang", "reply_text", "context"), [
    ("en", "mix: submitted job array 88887 (tasks 0-3%2), each task finding its own "
           "checkpoint; one thread with a row per task.",
     "job array of recipe `mix`, submitted by trainbot"),
    ("ko", "mix: job array 88887 (task 0-3%2)을(를) 제출했습니다 (각 task가 자신의 "
           "체크포인트를 찾음). 스레드 하나에 task마다 행이 있습니다.",
     "recipe `mix`의 job array, trainbot이 제출"),
])
def test_submitting_an_array_recipe_opens_the_whole_arrays_thread(
        store, slack_client, slack_context, cluster, urls, slack: SlackStandIn, lang, reply_text,
        context) -> None:
    slurm, sftp = cluster
    config = make_config(array="0-3%2", job_name="sweep", lang=lang,
                         log_path=f"{LOGS}/%x-%A_%a.out",
                         checkpoint={"dir": "/home/slurmci/ck/sweep/task_%a"})
    ctx = slack_context(store, config, FakeClusters(slurm, sftp), charts=False)
    bolt = build_app(config, ctx, client=slack_client, listener_executor=SyncExecutor(),
                     token_verification_enabled=False)
    [reply] = train(bolt, urls, "submit mix", user="U0ALICE")
    assert reply["text"] == reply_text
    assert [s.array for s in slurm.submits()] == ["0-3%2"]
    [root] = slack.root_messages(CH)
    shown = str(root["blocks"])
    assert "sweep · array 88887 · PENDING" in shown and context in shown
    [note] = slack.replies(CH, root["ts"])
    assert "88887" in note["text"] and "0-3%2" in note["text"]


@pytest.mark.parametrize(("lang", "done", "retries", "home"), [
    ("en", "✅ Completed · job 88888_1 (was 88887_1): ", "in 2 attempts (retries used: 0)",
     "no task used a retry (3 per task)"),
    ("ko", "✅ 완료 · 작업 88888_1 (이전 88887_1): ", "시도 2회 (사용한 재시도 0회)",
     "no task used a retry (3 per task)"),  # the Home tab speaks slack.lang
])
def test_a_resubmitted_tasks_completion_names_the_task_it_replaced(
        store, slack_context, cluster, slack: SlackStandIn, lang, done, retries,
        home) -> None:
    """Array 88887's task 1 dies on a failed node, comes back alone as 88888_1 and
    completes: its ✅ line in the array's thread says which task it replaced; the tasks that
    ran once say nothing of the kind. The free resubmit is no retry, in the thread as on
    the Home tab (views.publish through the stand-in)."""
    from bot.services.home import publish_home
    from bot.services.runs import AutoResubmitter, submit_and_announce

    slurm, sftp = cluster
    config = make_config(array="0-1", job_name="sweep", lang=lang,
                         log_path=f"{LOGS}/%x-%A_%a.out",
                         checkpoint={"dir": "/home/slurmci/ck/sweep/task_%a"},
                         policy={"auto_resubmit": True, "backoff_s": 0})
    ctx = slack_context(store, config, FakeClusters(slurm, sftp), charts=False, home=True)
    array = int(submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW).job_id)
    auto = AutoResubmitter(ctx, "dev")
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=config,
                checkpoint=auto.checkpoint, resubmit=auto.resubmit,
                recover=auto.recover)

    def runs(job: int, of: int, n: int) -> str:
        path = f"{LOGS}/sweep-{of}_{n}.out"
        if job in slurm.records:
            slurm.set(job, state="RUNNING", array_job_id=of, array_task_id=n,
                      stdout_path=path, start_time=NOW)
        else:
            slurm.add(job, name="sweep", state="RUNNING", array_job_id=of, array_task_id=n,
                      stdout_path=path, start_time=NOW)
        sftp.append(path, b"iter: 10/100 | loss: 0.5\n")
        return path

    first = runs(88900, array, 0)
    runs(array, array, 1)
    w.tick(NOW + 60)
    slurm.set(array, state="NODE_FAIL", exit_code=0, signal=0, end_time=NOW + 100)
    w.tick(NOW + 120)
    w.tick(NOW + 180)
    [_, resubmit] = slurm.submits()
    assert resubmit.array == "1"
    again = runs(88888, 88888, 1)
    w.tick(NOW + 240)
    for job, path in ((88900, first), (88888, again)):
        sftp.append(path, b"iter: 100/100 | loss: 0.1\n")
        slurm.set(job, state="COMPLETED", exit_code=0, signal=0, end_time=NOW + 300)
    w.tick(NOW + 320)
    [root] = slack.root_messages(CH)
    lines = [m["text"] for m in slack.replies(CH, root["ts"]) if m["text"].startswith("✅")]
    assert len(lines) == 2, lines
    [mine] = [t for t in lines if "88888_1" in t]
    assert mine.startswith(done) and retries in mine, mine
    [other] = [t for t in lines if t is not mine]
    assert "88887_0" in other and "88887_1" not in other and "(" not in other.split(":")[0]
    assert publish_home(ctx, "U0ALICE", NOW + 330)  # the stand-in took the view
    tab = str(slack.home_views["U0ALICE"]["blocks"])
    assert "array 88887" in tab and home in tab, tab
    # the task's last incident is named as the thread names it, not by its raw Slurm id
    assert "Last incident: completed (job 88887_0)" in tab and "88900" not in tab, tab


def test_a_large_arrays_progress_costs_at_most_one_root_rewrite_per_persist_interval(
        app, urls, services, cluster, slack: SlackStandIn) -> None:
    """Twenty tasks whose progress reaches their rows on different ticks (each at most every
    persist_every_s, 300 s by default): over an hour of one-minute ticks, the root is
    rewritten for their progress at most once every 300 s, not at every tick (chat.update is
    rate-limited per workspace); a task failing still rewrites it at that very tick."""
    slurm, sftp = cluster
    paths = [f"{LOGS}/big-7100_{n}.out" for n in range(20)]
    for n, path in enumerate(paths):
        slurm.add(7101 + n, name="big", state="RUNNING", array_job_id=7100, array_task_id=n,
                  stdout_path=path, start_time=NOW)
        sftp.append(path, b"iter: 1/100000 | loss: 0.5\n")
    slurm.add(7100, name="big", state="PENDING", array_job_id=7100)  # the last task waits
    [reply] = train(app, urls, "watch 7100")
    assert "20 task(s) started" in reply["text"], reply
    w = watcher(services, cluster)
    w.tick(NOW)  # every task's row written: the last rewrite for their states
    before = len(slack.ok_calls("chat.update"))
    for tick in range(1, 61):
        for n, path in enumerate(paths):
            if tick >= 5 + n % 5:  # task n's rows written from tick 5 + n % 5: staggered
                sftp.append(path, f"iter: {100 * tick + n}/100000 | loss: 0.4\n".encode())
        w.tick(NOW + 60 * tick)
    progress = len(slack.ok_calls("chat.update")) - before
    assert 10 <= progress <= 12, progress  # one per 300 s of the hour, not one per tick
    assert "6,015" in root_text(slack)  # the latest iterations (task 15's, written at 60)
    before = len(slack.ok_calls("chat.update"))
    slurm.set(7101 + 3, state="FAILED", exit_code=1, signal=0, end_time=NOW + 3630)
    w.tick(NOW + 3660)  # 60 s after the last progress rewrite
    assert len(slack.ok_calls("chat.update")) > before  # no waiting out the interval
    assert "7100_3" in root_text(slack) and "FAILED" in root_text(slack)


def test_a_single_runs_root_follows_its_progress(store, slack_context, cluster,
                                                 slack: SlackStandIn) -> None:
    """A run trainbot submitted: its root's progress bar moves with the iterations written
    to its attempt row (at most every persist_every_s), not only when its state changes; its
    start (PENDING → RUNNING) is shown at the tick that sees it."""
    from bot.services.runs import submit_and_announce

    slurm, sftp = cluster
    config = make_config(log_path=f"{LOGS}/%x-%j.out", target_iter=10000)
    ctx = slack_context(store, config, FakeClusters(slurm, sftp), charts=False)
    job = int(submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW).job_id)
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                catalogue=ctx.catalogue, sink=ThreadEvents(ctx), config=config)
    assert "PENDING" in root_text(slack)
    path = f"{LOGS}/mix-{job}.out"
    slurm.set(job, state="RUNNING", stdout_path=path, start_time=NOW + 30)
    sftp.append(path, b"iter: 100/10000 | loss: 0.5\n")
    w.tick(NOW + 60)
    assert "RUNNING" in root_text(slack) and "100 / 10,000" in root_text(slack)
    sftp.append(path, b"iter: 2500/10000 | loss: 0.4\n")
    w.tick(NOW + 120)  # within persist_every_s of the row's last write: nothing written
    assert "2,500" not in root_text(slack)
    w.tick(NOW + 400)  # still RUNNING: progress alone
    assert "RUNNING" in root_text(slack) and "2,500 / 10,000" in root_text(slack)


def test_a_restart_rewrites_no_root_rewritten_just_before(slack_context, slack_client, store,
                                                         cluster, urls,
                                                         slack: SlackStandIn) -> None:
    """The watcher restarts (or another replica takes the cluster over) with six progressing
    runs whose roots were rewritten a minute before: its first tick rewrites none of them
    (the last rewrite is read from the store, not only kept in memory), where it rewrote all
    six at once and again all together at every interval (chat.update is rate-limited per
    workspace); once the interval is over, every root shows its run's progress."""
    _, sftp = cluster
    jobs = range(8201, 8207)
    ctx, clock = watched_runs(slack_context, slack_client, store, cluster, urls, jobs)

    def progress(at: float, iteration: int) -> None:
        for job in jobs:
            sftp.append(f"{LOGS}/solo-{job}.out",
                        f"iter: {iteration}/100000 | loss: 0.4\n".encode())
        clock[0] = at

    w = watcher(ctx, cluster)
    progress(NOW + 60, 500)
    w.tick(NOW + 60)
    progress(NOW + 400, 4000)
    w.tick(NOW + 400)  # every root rewritten for its progress
    assert all("4,000" in text for text in roots_text(slack)), roots_text(slack)

    progress(NOW + 460, 4600)
    before = len(slack.ok_calls("chat.update"))
    restarted = watcher(ctx, cluster)  # a new watcher: a restart, or a takeover
    restarted.tick(NOW + 460)
    assert len(slack.ok_calls("chat.update")) == before  # no burst of six rewrites
    assert not any("4,600" in text for text in roots_text(slack))
    progress(NOW + 780, 7800)
    restarted.tick(NOW + 780)  # the interval over: each root rewritten once, up to date
    assert len(slack.ok_calls("chat.update")) == before + len(jobs)
    assert all("7,800" in text for text in roots_text(slack)), roots_text(slack)


def test_a_restart_after_hours_spreads_progress_rewrites_over_ticks(
        slack_context, slack_client, store, cluster, urls, slack: SlackStandIn) -> None:
    """The watcher comes back after four hours down, seven runs progressing and one failing
    meanwhile: its first tick rewrites at most the workspace's budget of roots for progress a
    minute (three here) plus the failed run's root, whose incident is posted at once,
    instead of all eight roots in one burst of chat.update (rate-limited per workspace); the
    next ticks rewrite the other roots, the longest waiting first, each once."""
    slurm, sftp = cluster
    jobs = range(8301, 8309)
    ctx, clock = watched_runs(slack_context, slack_client, store, cluster, urls, jobs)

    def progress(at: float, iteration: int) -> None:
        for job in jobs[:-1]:
            sftp.append(f"{LOGS}/solo-{job}.out",
                        f"iter: {iteration}/100000 | loss: 0.4\n".encode())
        clock[0] = at

    def showing(text: str) -> int:
        return sum(text in root for root in roots_text(slack))

    w = watcher(ctx, cluster)
    progress(NOW + 60, 500)
    w.tick(NOW + 60)
    later = NOW + 4 * 3600  # the bot was down four hours
    progress(later, 90000)
    slurm.set(jobs[-1], state="FAILED", exit_code=1, signal=0, end_time=later - 600)
    sftp.append(f"{LOGS}/solo-{jobs[-1]}.out",
                b"Traceback (most recent call last):\nRuntimeError: boom\n")
    before = len(slack.ok_calls("chat.update"))
    r = watcher(ctx, cluster, progress_rewrites=ProgressRewriteBudget(store, 3))  # restart
    r.tick(later)
    failed_root = slack.root_messages(CH)[-1]
    assert any("8308" in m["text"] for m in slack.replies(CH, failed_root["ts"]))  # incident
    assert showing("FAILED") == 1  # the failed run's root at once, whatever the budget
    assert len(slack.ok_calls("chat.update")) == before + 3 + 1  # not eight at once
    assert showing("90,000") == 3
    r.tick(later + 60)
    assert len(slack.ok_calls("chat.update")) == before + 3 + 1 + 3
    assert showing("90,000") == 6
    r.tick(later + 120)  # the last one; nothing is rewritten twice
    assert len(slack.ok_calls("chat.update")) == before + 3 + 1 + 3 + 1
    assert showing("90,000") == 7


def test_an_array_tasks_failure_rewrites_the_root_once(app, urls, services, cluster,
                                                       slack: SlackStandIn) -> None:
    """A task of a watched array fails: its tick rewrites the array's root once, showing the
    task FAILED with its cause (chat.update is rate-limited per workspace); it rewrote it
    twice, once when the incident was posted (the task's row still as it was) and once when
    the row held the result."""
    slurm, sftp = cluster
    for job, n in ((6101, 0), (6102, 1), (6100, 2)):  # the last task takes the array's id
        task(slurm, sftp, job, n, "RUNNING")
    [reply] = train(app, urls, "watch 6100")
    assert "Watching array 6100" in reply["text"], reply
    w = watcher(services, cluster)
    w.tick(NOW + 60)
    w.tick(NOW + 120)
    before = len(slack.ok_calls("chat.update"))
    slurm.set(6102, state="FAILED", exit_code=1, signal=0, end_time=NOW + 150)
    sftp.append(f"{LOGS}/sweep-6100_1.out", b"Traceback (most recent call last):\n"
                b"RuntimeError: boom\n")
    w.tick(NOW + 180)
    [root] = slack.root_messages(CH)
    assert any("6100_1" in m["text"] for m in slack.replies(CH, root["ts"]))  # the incident
    assert len(slack.ok_calls("chat.update")) == before + 1
    text = root_text(slack)
    assert "6100_1" in text and "FAILED" in text, text
