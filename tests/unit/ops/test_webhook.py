"""`trainbot run --webhook URL`: each watcher event POSTed as JSON (bot.ops.webhook,
bot.services.watch_events.WebhookEvents); a receiver that fails gets the event again at the
next tick, and the threads post nothing twice."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, RecordingEventSink
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
    threads.ctx = SimpleNamespace(store=store)  # the threads read the store as ThreadEvents
    chain = add_job(store, 108687, recipe="launcher")
    sftp.append(LOG, b"[launcher] starting\n")
    slurm.records[108687] = JobRecord(job_id=108687, state="COMPLETED", exit_code=0, signal=0,
                                      elapsed_s=10, stdout_path=LOG, start_time=T0,
                                      end_time=T0 + 10)
    w = make_watcher(store, slurm, sftp, WebhookEvents(threads, JsonWebhook(receiver.url)))
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
    threads.ctx = SimpleNamespace(store=store)  # the threads read the store as ThreadEvents
    chain = add_job(store, 88154)
    slurm.records[88154] = running(88154)
    lines = story_lines()
    sftp.append(LOG, b"".join(lines[:500]))
    w = make_watcher(store, slurm, sftp, WebhookEvents(threads, JsonWebhook(receiver.url)))
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
    threads.ctx = SimpleNamespace(store=store)  # the threads read the store as ThreadEvents
    chain = add_job(store, 88154)
    slurm.records[88154] = running(88154)
    sftp.append(LOG, b"".join(story_lines()[:500]))
    w = make_watcher(store, slurm, sftp, WebhookEvents(threads, JsonWebhook(receiver.url)))
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
    threads.ctx = SimpleNamespace(store=store)
    chain = store.chains.create(recipe="", cluster="dev", job_name="sweep", now=T0,
                                kind="array", array_job_id=6100)
    store.watched_jobs.add("dev", "6100", now=T0, chain_id=chain.id, adopted=True)
    slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    w = make_watcher(store, slurm, sftp, WebhookEvents(threads, JsonWebhook(receiver.url)))
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


def test_only_http_urls_are_webhooks() -> None:
    with pytest.raises(ValueError, match="http"):
        JsonWebhook("file:///etc/passwd")
