"""`trainbot run --webhook URL`: each watcher event POSTed as JSON (bot.ops.webhook,
bot.services.watch_events.WebhookEvents); a receiver that fails gets the event again at the
next tick, and the threads post nothing twice."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, RecordingEventSink, writer
from support.watcher import LOG, add_job, make_watcher, running, story_lines
from support.webhook_receiver import Receiver

from bot.core.slurm.records import JobRecord
from bot.ops.webhook import JsonWebhook
from bot.services.ports import PostError
from bot.services.watch_events import WebhookEvents
from bot.store import Store


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_an_incident_reaches_the_webhook_as_json_once_even_after_a_failed_post(
        receiver, tmp_path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, threads = FakeSlurm(), FakeSFTP(), RecordingEventSink()
    # the threads read the store as ThreadEvents
    threads.ctx = SimpleNamespace(store=store)  # type: ignore[attr-defined]
    chain = add_job(store, 108687, recipe="launcher")
    sftp.append(LOG, b"[launcher] starting\n")
    slurm.records[108687] = JobRecord(job_id=108687, state="COMPLETED", exit_code=0, signal=0,
                                      elapsed_s=10, stdout_path=LOG, start_time=T0,
                                      end_time=T0 + 10)
    w = make_watcher(store, slurm, sftp, WebhookEvents(
        threads, JsonWebhook(receiver.url)))  # type: ignore[arg-type]  # ThreadEvents' stand-in
    receiver.fail_next = 1
    w.tick(T0 + 30)
    assert receiver.bodies == [] and store.watched_jobs.get("dev", "108687") is not None
    w.tick(T0 + 90)
    w.tick(T0 + 150)
    store.close()
    (body, progress) = receiver.bodies  # then the run's progress as its root shows it
    assert progress["kind"] == "progress" and progress["attempts"][0]["state"] == "COMPLETED"
    assert body["kind"] == "incident" and body["job_id"] == "108687"
    assert body["chain_id"] == chain.id and body["cluster"] == "dev"
    assert body["diagnosis"]["class"] == "silent_exit" and body["decision"]["kind"]
    assert body["key"] and body["text"]
    assert threads.kinds() == ["incident", "incident"]  # the threads' poster dedupes by key


def test_a_runs_progress_reaches_the_webhook_as_often_as_its_root_is_rewritten(
        receiver, tmp_path) -> None:
    """With a webhook the thread's root still follows the run (it stopped at the first
    event: progress never reached the threads), and the receiver gets a `progress` object
    each time, at most once every persist_every_s: not on every tick the log moved."""
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, threads = FakeSlurm(), FakeSFTP(), RecordingEventSink()
    # the threads read the store as ThreadEvents
    threads.ctx = SimpleNamespace(store=store)  # type: ignore[attr-defined]
    chain = add_job(store, 88154)
    slurm.records[88154] = running(88154)
    lines = story_lines()
    sftp.append(LOG, b"".join(lines[:500]))
    w = make_watcher(store, slurm, sftp, WebhookEvents(
        threads, JsonWebhook(receiver.url)))  # type: ignore[arg-type]  # ThreadEvents' stand-in
    w.tick(T0)  # PENDING -> RUNNING: at once
    sftp.append(LOG, b"".join(lines[500:520]))
    w.tick(T0 + 60)  # within persist_every_s: nothing shown
    sftp.append(LOG, b"".join(lines[520:540]))
    w.tick(T0 + 300)
    store.close()
    assert threads.progressed == [chain.id, chain.id]
    bodies = [b for b in receiver.bodies if b["kind"] == "progress"]
    assert [(b["chain_id"], b["cluster"], [(a["job_id"], a["state"]) for a in b["attempts"]])
            for b in bodies] == [(chain.id, "dev", [("88154", "RUNNING")])] * 2
    assert [b["attempts"][0]["last_iter"] for b in bodies] == [1498, 1538]
    assert bodies[0]["key"] != bodies[1]["key"]


def test_a_runs_end_reaches_the_webhook_as_its_last_progress_once(receiver, tmp_path) -> None:
    """The run's job dies: besides its incident, the receiver gets the run's `progress` as
    its root now shows it, once (its root is rewritten once): the attempt FAILED with its
    result, the run still active (a person may resubmit it)."""
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, threads = FakeSlurm(), FakeSFTP(), RecordingEventSink()
    # the threads read the store as ThreadEvents
    threads.ctx = SimpleNamespace(store=store)  # type: ignore[attr-defined]
    chain = add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:500]))
    w = make_watcher(store, slurm, sftp, WebhookEvents(
        threads, JsonWebhook(receiver.url)))  # type: ignore[arg-type]  # ThreadEvents' stand-in
    w.tick(T0)
    slurm.records[88154] = JobRecord(job_id=88154, state="FAILED", exit_code=1, signal=0,
                                     stdout_path=LOG, start_time=T0, end_time=T0 + 100)
    sftp.append(LOG, b"Traceback (most recent call last):\nRuntimeError: boom\n")
    w.tick(T0 + 120)
    store.close()
    assert threads.changed == [chain.id] and threads.kinds() == ["incident"]
    bodies = [b for b in receiver.bodies if b["kind"] == "progress"]
    assert [(b["status"], [(a["job_id"], a["state"], a["result"]) for a in b["attempts"]])
            for b in bodies] == [("active", [("88154", "RUNNING", None)]),
                                 ("active", [("88154", "FAILED", "FAILED")])]
    assert bodies[1]["attempts"][0]["last_iter"] == 1498 and bodies[1]["chain_id"] == chain.id


def test_an_arrays_tasks_reach_the_webhook_as_they_start_and_end(receiver, tmp_path) -> None:
    """A watched array's root is rewritten when its tasks start or end (chain_changed, never
    for progress alone): each time the receiver gets the array's `progress`, a row a task;
    when its last task ends, the array's run has ended. Before, a receiver never heard of an
    array's tasks but through their incidents."""
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, threads = FakeSlurm(), FakeSFTP(), RecordingEventSink()
    threads.ctx = SimpleNamespace(store=store)  # type: ignore[attr-defined]
    chain = store.chains.create(recipe="", cluster="dev", job_name="sweep", now=T0,
                                kind="array", array_job_id=6100)
    store.watched_jobs.add("dev", "6100", now=T0, chain_id=chain.id, adopted=True)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    w = make_watcher(store, slurm, sftp, WebhookEvents(
        threads, JsonWebhook(receiver.url)))  # type: ignore[arg-type]  # ThreadEvents' stand-in
    w.tick(T0 + 60)
    log = "/home/u/logs/sweep-6100_0.out"
    slurm.set(6100, state="RUNNING", array_task_id=0, stdout_path=log, start_time=T0 + 90)
    sftp.append(log, b"iter: 10/100 | loss: 0.5\n")
    w.tick(T0 + 120)  # task 0 started
    slurm.set(6100, state="COMPLETED", exit_code=0, signal=0, end_time=T0 + 150)
    sftp.append(log, b"iter: 100/100 | loss: 0.1\n")
    w.tick(T0 + 180)  # it ended: the array's last task
    store.close()
    bodies = [b for b in receiver.bodies if b["kind"] == "progress"]
    assert [(b["status"], [(a["job_id"], a["state"], a["result"]) for a in b["attempts"]])
            for b in bodies] == [("active", [("6100_0", "RUNNING", None)]),
                                 ("completed", [("6100_0", "COMPLETED", "COMPLETED")])], bodies
    assert {b["chain_id"] for b in bodies} == {chain.id}


def test_an_unreachable_or_refusing_receiver_is_a_post_error(receiver) -> None:
    receiver.fail_next = 1
    with pytest.raises(PostError, match="500"):
        JsonWebhook(receiver.url).post_json({"key": "k"})
    receiver.close()
    with pytest.raises(PostError, match="unreachable"):
        JsonWebhook(receiver.url, timeout_s=2).post_json({"key": "k"})


def test_a_receiver_trickling_its_answer_is_given_up_on_at_the_timeout() -> None:
    """The receiver sends its headers, then its body a byte every 0.3 s (each read well
    within the timeout): the POST fails after its timeout in all, and the event waits for
    the next tick. Before, it took as long as the receiver trickled (30 s here)."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
            while not stop.wait(0.3):
                try:
                    conn.sendall(b"x")
                except OSError:
                    return

    threading.Thread(target=trickle, daemon=True).start()
    hook = JsonWebhook(f"http://127.0.0.1:{srv.getsockname()[1]}/", timeout_s=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(PostError, match="unreachable: the request took longer than 1 s"):
            hook.post_json({"kind": "incident", "key": "k"})
        assert time.monotonic() - started < 2.5
    finally:
        stop.set()
        srv.close()


def test_only_http_urls_are_webhooks() -> None:
    with pytest.raises(ValueError, match="http"):
        JsonWebhook("file:///etc/passwd")


# ------------------------------------------------------------------ a cluster's outage

DOWN, BACK = "cluster:dev:down:1000000", "cluster:dev:back:1000000"
NOTICE_TEXT = "cluster dev unreachable for 3 ticks"
BACK_TEXT = "cluster dev answers again"


class Killed(BaseException):
    """The bot's process killed (SIGKILL) where it stands: nothing after it runs."""


def outage_bot(ctx, receiver):
    """A bot's cluster health for `dev` (a new process: its own thread writer, webhook sink,
    outbox and counters) over `ctx`'s store, its threads in `ctx`'s recording Slack and its
    events POSTed to `receiver`."""
    from bot.services.watch.health import ClusterHealth
    from bot.services.watch.outbox import Outbox
    from bot.services.watch_events import ThreadEvents

    events = WebhookEvents(ThreadEvents(ctx), JsonWebhook(receiver.url))
    return ClusterHealth("dev", outbox=Outbox("dev", store=ctx.store, sink=events),
                         unreachable_ticks=3)


def outage_threads(tmp_path, n: int):
    """A store with `n` active runs on cluster dev and their threads; its bot context."""
    from fakes import make_context

    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    ctx = make_context(store)
    for _ in range(n):
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx


def told(ctx, start: str) -> list[int]:
    """The threads given a note starting with `start`, one entry per post."""
    return sorted(p[1] for p in ctx.sink.posts if p[0] == "reply" and p[3].startswith(start))


def keys(receiver) -> list[str]:
    return [b["key"] for b in receiver.bodies]


def failed(health, t: float) -> None:
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    health.failed(t, CommandTimedOut(["squeue", "--me"], 20), TickReport(ok=True))


def answered(health, t: float) -> None:
    from bot.services.watch.events import TickReport

    health.ok(t, TickReport(ok=True))


@pytest.mark.parametrize("next_tick", ["answers", "still down"])
def test_a_bot_killed_between_the_threads_and_the_webhook_pairs_the_outage_there_once(
        receiver, tmp_path, monkeypatch, next_tick) -> None:
    """The notice reaches the thread and the bot is killed as it POSTs it to the webhook. The
    next bot (the thread telling it the notice was said) gives the receiver the notice, then
    its end, once each, whether the cluster answers at once or after more failed ticks; the
    thread gets each once. Before, the receiver got the end of an outage it was never told."""
    ctx = outage_threads(tmp_path, 1)
    post_json = JsonWebhook.post_json

    def killed_posting_the_notice(self, payload) -> None:
        if payload["key"] == DOWN:
            raise Killed(payload["key"])
        post_json(self, payload)

    with monkeypatch.context() as m:
        m.setattr(JsonWebhook, "post_json", killed_posting_the_notice)
        dying = outage_bot(ctx, receiver)
        failed(dying, 1_000_000.0)
        failed(dying, 1_000_060.0)
        with pytest.raises(Killed):
            failed(dying, 1_000_120.0)
    assert (told(ctx, NOTICE_TEXT), keys(receiver)) == ([1], [])
    restarted = outage_bot(ctx, receiver)
    if next_tick == "still down":
        for i in range(3):
            failed(restarted, 1_003_600.0 + 60 * i)
        assert keys(receiver) == [DOWN]
    answered(restarted, 1_004_000.0)
    answered(restarted, 1_004_060.0)
    answered(outage_bot(ctx, receiver), 1_004_120.0)  # and another restart
    assert keys(receiver) == [DOWN, BACK]
    assert [b["kind"] for b in receiver.bodies] == ["cluster_unreachable", "cluster_back"]
    assert receiver.bodies[0]["text"].startswith(NOTICE_TEXT)
    assert (told(ctx, NOTICE_TEXT), told(ctx, BACK_TEXT)) == ([1], [1])
    ctx.store.close()


def test_a_notice_one_thread_refused_reaches_the_webhook_with_the_threads_that_have_it(
        receiver, tmp_path) -> None:
    """Slack refuses the first of two threads' notice: the receiver gets the notice with the
    second thread, once (not again when the first thread gets it at the next failed tick),
    then its end once. Before, the receiver got only the end."""
    ctx = outage_threads(tmp_path, 2)
    health = outage_bot(ctx, receiver)
    ctx.sink.fail_next = 1
    for i in range(3):
        failed(health, 1_000_000.0 + 60 * i)
    assert (told(ctx, NOTICE_TEXT), keys(receiver)) == ([2], [DOWN])
    failed(health, 1_000_180.0)
    answered(health, 1_000_240.0)
    answered(health, 1_000_300.0)
    assert (told(ctx, NOTICE_TEXT), told(ctx, BACK_TEXT)) == ([1, 2], [1, 2])
    assert keys(receiver) == [DOWN, BACK]
    ctx.store.close()


@pytest.mark.parametrize("next_tick", ["answers", "still down"])
def test_a_notice_the_webhook_refused_is_posted_there_before_its_end(
        receiver, tmp_path, next_tick) -> None:
    """The thread takes the notice and the receiver answers 500: the notice is said (the
    thread hears the end), and the receiver gets it at the next failed tick or, when the
    cluster answers first, right before its end; each once. Before, the failed POST made the
    notice unsaid: answering at once, the thread never heard the end."""
    ctx = outage_threads(tmp_path, 1)
    health = outage_bot(ctx, receiver)
    receiver.fail_next = 1
    for i in range(3):
        failed(health, 1_000_000.0 + 60 * i)
    assert (told(ctx, NOTICE_TEXT), keys(receiver)) == ([1], [])
    if next_tick == "still down":
        failed(health, 1_000_180.0)
        failed(health, 1_000_240.0)
        assert keys(receiver) == [DOWN]
    answered(health, 1_000_300.0)
    answered(health, 1_000_360.0)
    assert keys(receiver) == [DOWN, BACK]
    assert (told(ctx, NOTICE_TEXT), told(ctx, BACK_TEXT)) == ([1], [1])
    ctx.store.close()


def test_an_outage_no_thread_was_told_of_reaches_the_webhook_not_at_all(
        receiver, tmp_path) -> None:
    """Slack refuses the only thread's notice and the cluster answers before it is posted:
    no thread was told, so the receiver is told nothing either (neither half)."""
    ctx = outage_threads(tmp_path, 1)
    health = outage_bot(ctx, receiver)
    ctx.sink.fail_next = 1
    for i in range(3):
        failed(health, 1_000_000.0 + 60 * i)
    answered(health, 1_000_180.0)
    answered(health, 1_000_240.0)
    assert (told(ctx, NOTICE_TEXT), told(ctx, BACK_TEXT), keys(receiver)) == ([], [], [])
    ctx.store.close()


def test_without_slack_a_bot_killed_after_posting_the_notice_sends_its_end(
        receiver, tmp_path, monkeypatch) -> None:
    """`run --no-slack --webhook`: the receiver is the only place the notice is said. The bot
    POSTs it and is killed before recording the POST; the next bot takes the notice as said
    and, when the cluster answers, sends it again (the receiver drops the repeat by key)
    before its end. Before, the notice was dropped and the receiver never heard the end."""
    from fakes import make_context

    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    ctx = make_context(store, slack=False)
    record_posted = store.slack_posts.record_posted

    def killed_recording_the_post(key: str, **kw):
        if key == f"webhook:{DOWN}":
            raise Killed(key)
        return record_posted(key, **kw)

    with monkeypatch.context() as m:
        m.setattr(store.slack_posts, "record_posted", killed_recording_the_post)
        dying = outage_bot(ctx, receiver)
        failed(dying, 1_000_000.0)
        failed(dying, 1_000_060.0)
        with pytest.raises(Killed):
            failed(dying, 1_000_120.0)
    assert keys(receiver) == [DOWN]
    restarted = outage_bot(ctx, receiver)
    answered(restarted, 1_004_000.0)
    answered(restarted, 1_004_060.0)
    assert list(dict.fromkeys(keys(receiver))) == [DOWN, BACK]
    assert keys(receiver)[-1] == BACK
    store.close()


def test_without_slack_an_outage_the_receiver_refused_throughout_is_paired_at_its_end(
        receiver, tmp_path) -> None:
    """`run --no-slack --webhook`, the receiver answering 500 to the notice (it may have
    taken it) and the cluster answering at the next tick: the receiver gets the notice, then
    its end, once each."""
    from fakes import make_context

    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    health = outage_bot(make_context(store, slack=False), receiver)
    receiver.fail_next = 1
    for i in range(3):
        failed(health, 1_000_000.0 + 60 * i)
    assert keys(receiver) == []
    answered(health, 1_000_180.0)
    answered(health, 1_000_240.0)
    assert keys(receiver) == [DOWN, BACK]
    store.close()
