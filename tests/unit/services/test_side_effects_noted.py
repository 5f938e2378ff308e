"""What a Slack handler stopped by the store's close says it had started
(handlers.fence.SideEffects): a Slack post only once its request went out (not one the
closed store refused before it), and no command its caller says only reads (a preflight's
probes, a lost submit's lookup, a py-spy dump); a command that may act, by its program."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from fakes import (
    T0,
    FakeClusters,
    FakeRunner,
    FakeSFTP,
    FakeSlurm,
    RecordingMessageSink,
    make_config,
    make_context,
    present,
)
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.bolt_driver import slash_body

from bot.core.slack_bounds import POST_DEADLINE_S
from bot.services.fencing import FencedHomePublisher, FencedThreadWriter, read_only
from bot.services.ports import sending, sent_refused
from bot.slack.poster import SlackPoster
from bot.slack.render import render_blocks
from bot.slack.retry import make_client
from bot.store import Store, StoreClosed
from handlers.fence import ListenerFence, SideEffects
from handlers.slash_commands import make_run_train

LOG = logging.getLogger("test")


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


def thread(slack: SlackStandIn, store: Store) -> tuple[Any, int]:
    """A bot's context posting through the real poster on the stand-in, and a run whose
    thread is open."""
    client: WebClient = make_client(slack.token, base_url=slack.api_url,
                                    sleep=lambda s: None, timeout=10)
    slack.clock = lambda: T0
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None,
                         clock=lambda: T0)
    ctx = make_context(store, sink=poster, charts=False, clock=lambda: T0)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0 - 100)
    poster.post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx, chain.id


def test_a_post_the_closed_store_refuses_before_its_request_is_not_started(
        slack: SlackStandIn, store_url: str) -> None:
    """Before, the post was said started (`Slack post`) though nothing reached Slack."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    before = len(slack.all_messages())
    effects = SideEffects()
    store.close()
    with pytest.raises(StoreClosed):
        present(effects.context(ctx).sink).post_reply(chain_id, "note:1", [], "a note")
    assert effects.started == [] and len(slack.all_messages()) == before


def test_a_post_sent_before_the_store_closed_is_started(slack: SlackStandIn,
                                                       store_url: str) -> None:
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    effects = SideEffects()
    record_posted = store.slack_posts.record_posted

    def closed_first(*a: Any, **kw: Any) -> Any:  # the close lands while Slack answers
        store.close()
        return record_posted(*a, **kw)

    store.slack_posts.record_posted = closed_first  # type: ignore[method-assign]
    with pytest.raises(StoreClosed):
        present(effects.context(ctx).sink).post_reply(chain_id, "note:1", [], "a note")
    assert effects.started == ["Slack post"]
    assert any(m.get("text") == "a note" for m in slack.all_messages())


def _closed_as_slack_answers(store: Store) -> Callable[[Callable[..., Any]], Any]:
    """`call` wrapped so that the store's close lands just after Slack answered it."""
    def wrap(call: Callable[..., Any]) -> Any:
        def closed_after(*a: Any, **kw: Any) -> Any:
            answer = call(*a, **kw)
            store.close()
            return answer
        return closed_after
    return wrap


def test_an_update_sent_before_the_store_closed_is_started(slack: SlackStandIn,
                                                          store_url: str) -> None:
    """chat.update through the poster (its `_call`): the reply rewritten, then the close."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    poster = ctx.sink
    assert isinstance(poster, SlackPoster)
    poster.post_reply(chain_id, "note:1", [], "a note")
    poster.client.chat_update = _closed_as_slack_answers(store)(  # type: ignore[method-assign]
        poster.client.chat_update)
    effects = SideEffects()
    with pytest.raises(StoreClosed):
        present(effects.context(ctx).sink).update_reply(chain_id, "note:1", [], "edited")
    assert effects.started == ["Slack update"]
    assert any(m.get("text") == "edited" for m in slack.all_messages())


def test_a_file_upload_completed_before_the_store_closed_is_started(slack: SlackStandIn,
                                                                   store_url: str) -> None:
    """The completion (files.completeUploadExternal) makes the file appear: started."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    poster = ctx.sink
    assert isinstance(poster, SlackPoster)
    poster.client.files_completeUploadExternal = _closed_as_slack_answers(  # type: ignore[method-assign]
        store)(poster.client.files_completeUploadExternal)
    effects = SideEffects()
    with pytest.raises(StoreClosed):
        present(effects.context(ctx).sink).upload_file(chain_id, "chart:1", b"\x89PNG",
                                                       "loss.png", "loss")
    assert effects.started == ["Slack file upload"]
    assert [f["completed"] for f in slack.files.values()] == [True]


def test_a_home_tab_published_before_the_store_closed_is_started(slack: SlackStandIn,
                                                                store_url: str) -> None:
    store = Store.open(store_url)
    ctx, _ = thread(slack, store)
    poster = ctx.sink
    assert isinstance(poster, SlackPoster)
    poster.client.views_publish = _closed_as_slack_answers(store)(  # type: ignore[method-assign]
        poster.client.views_publish)
    effects = SideEffects()
    present(effects.context(replace(ctx, home=poster)).home).publish_home("U0ALICE", [])
    assert effects.started == ["Slack Home tab publish"]
    assert "U0ALICE" in slack.home_views


def test_the_recording_sink_notes_an_update_as_the_poster_does(store) -> None:  # noqa: ANN001
    """Before, the fake's update_reply never said its request went out: a unit test could
    expect "nothing was done" where the poster says it started a `Slack update`."""
    sink = RecordingMessageSink(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0 - 100)
    sink.post_root(chain.id, "C0TRAIN", [], "mix")
    sink.post_reply(chain.id, "note:1", [], "a note")
    effects = SideEffects()
    fenced = present(effects.context(make_context(store, sink=sink)).sink)
    fenced.update_reply(chain.id, "note:never-posted", [], "edited")
    assert effects.started == []  # nothing to rewrite: nothing sent, as the poster
    fenced.update_reply(chain.id, "note:1", [], "edited")
    assert effects.started == ["Slack update"]


def test_commands_said_to_read_are_not_started_others_are_by_their_program(store) -> None:  # noqa: ANN001
    runner = FakeRunner(default=(0, "", ""))
    ctx = make_context(store, clusters=FakeClusters(FakeSlurm(), runner=runner))
    effects = SideEffects()
    fenced = effects.context(ctx).clusters.runner("dev")
    read_only(fenced).run(["squeue", "-h", "-n", "mix"])
    read_only(fenced).run(["srun", "py-spy", "dump"])
    assert effects.started == []
    fenced.run(["/opt/site/submit", "--recipe", "mix"])
    assert effects.started == ["/opt/site/submit"] and len(runner.calls) == 3


def test_a_preflight_the_stores_close_stops_after_its_probes_did_nothing(store) -> None:  # noqa: ANN001
    """Before, the reply said it had started the probe's program (`srun` …); then that
    nothing was done, though placing py-spy (no site `py_spy`) had written trainbot's own
    cache dir on the cluster (mkdir, the copy, chmod): nothing that changes the jobs."""
    def probe(argv: list[str]) -> tuple[int, str, str]:
        store.close()  # the stop's close lands while the probe runs
        return 1, "", "srun: error: no partition"

    class ProbeRunner(FakeRunner):
        def sftp(self) -> FakeSFTP:  # the script's lint finds no script: one finding
            return FakeSFTP()

    runner = ProbeRunner(default=probe)
    ctx = make_context(store, clusters=FakeClusters(FakeSlurm(), runner=runner),
                       config=make_config(), clock=lambda: T0)
    answers: list[dict[str, Any]] = []
    make_run_train(ctx, ListenerFence())(
        slash_body("preflight mix", user="U0ALICE", channel="C0TRAIN", response_url="-"),
        lambda **kw: answers.append(kw), LOG)
    [answer] = answers
    assert runner.calls, "the probe ran"
    assert "mkdir" in runner.commands(), "py-spy placed"
    # its probes only read, but placing py-spy writes trainbot's own cache dir: not "nothing"
    assert answer["text"] == (
        ":hourglass_flowing_sand: trainbot is shutting down or restarting, so it stopped this "
        "command before it did anything that changes your jobs: it had only read from the "
        "cluster, or placed trainbot's own files in its cache directory there (its py-spy "
        "copy). Try again in a minute.")
    _, ko = render_blocks("train_reply", "ko", {"kind": "stopping", "started": [], "steps": [],
                                                "reads": True})
    assert "작업에 영향을 주는 일을 하기 전에 멈췄습니다" in ko and "py-spy" in ko
    assert "아무것도 하지 않았습니다" not in ko


def test_a_post_slack_refused_is_not_started_though_the_close_lands_as_it_is_forgotten(
        slack: SlackStandIn, store_url: str) -> None:
    """Before, its request had gone out (`sending`), so the reply said `Slack post` was
    started, though Slack refused it (`is_archived`) and showed nothing; the store's close
    landed as the poster forgot its intent."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    before = len(slack.all_messages())
    forget_intent = store.slack_posts.forget_intent

    def closed_first(key: str) -> None:
        store.close()
        forget_intent(key)

    store.slack_posts.forget_intent = closed_first  # type: ignore[method-assign]
    slack.fail_next("chat.postMessage", status=200, error="is_archived")
    effects = SideEffects()
    with pytest.raises(StoreClosed):
        present(effects.context(ctx).sink).post_reply(chain_id, "note:1", [], "a note")
    assert len(slack.calls("chat.postMessage")) == 2  # the root, then the refused reply
    assert effects.started == [] and len(slack.all_messages()) == before


def test_a_refused_post_leaves_a_post_before_it_started(slack: SlackStandIn,
                                                       store_url: str) -> None:
    """Only the refused write's own note is taken back: a post Slack took before it stays."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    effects = SideEffects()
    fenced = present(effects.context(ctx).sink)
    fenced.post_reply(chain_id, "note:1", [], "a note")
    slack.fail_next("chat.postMessage", status=200, error="is_archived")
    with pytest.raises(Exception, match="is_archived"):
        fenced.post_reply(chain_id, "note:2", [], "another note")
    assert effects.started == ["Slack post"]


def test_an_update_slack_refused_is_not_started(slack: SlackStandIn, store_url: str) -> None:
    """chat.update refused (`msg_too_long`): the reply was not rewritten; the close that
    lands after it finds nothing started."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    poster = ctx.sink
    assert isinstance(poster, SlackPoster)
    poster.post_reply(chain_id, "note:1", [], "a note")
    slack.fail_next("chat.update", status=200, error="msg_too_long")
    effects = SideEffects()
    with pytest.raises(Exception, match="msg_too_long"):
        present(effects.context(ctx).sink).update_reply(chain_id, "note:1", [], "edited")
    assert effects.started == []


def test_an_update_refused_on_the_clients_resend_after_a_drop_stays_started(
        slack: SlackStandIn, store_url: str) -> None:
    """chat.update's connection dropped after Slack performed it; the client sent it again
    and Slack refused that (`message_not_found`). Before, the refusal took the note back,
    though Slack shows the edit: the reply said nothing was started."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    poster = ctx.sink
    assert isinstance(poster, SlackPoster)
    poster.post_reply(chain_id, "note:1", [], "a note")
    slack.drop_next("chat.update", processed=True)
    slack.fail_next("chat.update", status=200, error="message_not_found")
    effects = SideEffects()
    with pytest.raises(Exception, match="message_not_found"):
        present(effects.context(ctx).sink).update_reply(chain_id, "note:1", [], "edited")
    assert "edited" in [m.get("text") for m in slack.all_messages()]
    assert effects.started == ["Slack update"]


@pytest.mark.parametrize("first", ["dropped", "5xx"])
def test_a_home_publish_refused_on_the_clients_resend_stays_started(
        slack: SlackStandIn, store_url: str, first: str) -> None:
    """views.publish sent again by the client after a dropped connection or a 5xx, then
    refused: the first sending may have published the tab, so its note stays."""
    store = Store.open(store_url)
    ctx, _chain_id = thread(slack, store)
    if first == "dropped":
        slack.drop_next("views.publish", processed=True)
    else:
        slack.fail_next("views.publish", status=503)
    slack.fail_next("views.publish", status=200, error="not_enabled")
    effects = SideEffects()
    with pytest.raises(Exception, match="not_enabled"):
        FencedHomePublisher(ctx.sink, effects).publish_home("U1", [])
    assert len(slack.calls("views.publish")) == 2
    assert effects.started == ["Slack Home tab publish"]


def test_an_update_refused_after_a_429_is_not_started(slack: SlackStandIn,
                                                    store_url: str) -> None:
    """A 429 was not performed: the refusal of the request sent again after it still says
    nothing changed."""
    store = Store.open(store_url)
    ctx, chain_id = thread(slack, store)
    poster = ctx.sink
    assert isinstance(poster, SlackPoster)
    poster.post_reply(chain_id, "note:1", [], "a note")
    slack.fail_next("chat.update", status=429, retry_after=0)
    slack.fail_next("chat.update", status=200, error="msg_too_long")
    effects = SideEffects()
    with pytest.raises(Exception, match="msg_too_long"):
        present(effects.context(ctx).sink).update_reply(chain_id, "note:1", [], "edited")
    assert effects.started == []


class _GatedWriter:
    """A thread writer whose posts and updates say `sending()`, then wait for their answer:
    `refuse[key]` set, Slack refused it (`sent_refused()`), else it went through."""

    def __init__(self) -> None:
        self.out: dict[str, threading.Event] = {}
        self.answer: dict[str, threading.Event] = {}
        self.refuse: set[str] = set()

    def gate(self, key: str) -> None:
        self.out[key], self.answer[key] = threading.Event(), threading.Event()

    def _write(self, key: str) -> str:
        sending()
        self.out[key].set()
        assert self.answer[key].wait(10)
        if key in self.refuse:
            sent_refused()
            raise RuntimeError(f"{key}: is_archived")
        return "1.0"

    def post_reply(self, chain_id: int, key: str, blocks: Any, text: str) -> str:
        return self._write(key)

    def update_reply(self, chain_id: int, key: str, blocks: Any, text: str) -> None:
        self._write(key)


@pytest.mark.parametrize(("method", "what"), [("post_reply", "Slack post"),
                                              ("update_reply", "Slack update")])
@pytest.mark.parametrize("refused_first", [True, False])
def test_a_refused_write_leaves_a_write_of_its_kind_in_flight_beside_it_started(
        method: str, what: str, refused_first: bool) -> None:
    """Two writes of one kind in flight at once (two threads of one command's work), one of
    them refused: before, both shared one note, and the refusal of the write that made it
    took it back though the other's request had gone out (or the other's refusal kept it)."""
    writer = _GatedWriter()
    effects = SideEffects()
    fenced = FencedThreadWriter(writer, effects)  # type: ignore[arg-type]
    first, second = ("a", "b") if refused_first else ("b", "a")
    writer.refuse.add("a")
    for key in "ab":
        writer.gate(key)
    errors: list[BaseException] = []

    def write(key: str) -> None:
        try:
            getattr(fenced, method)(1, key, [], key)
        except RuntimeError as exc:
            errors.append(exc)

    threads = {key: threading.Thread(target=write, args=(key,)) for key in "ab"}
    threads[first].start()
    assert writer.out[first].wait(10)
    threads[second].start()
    assert writer.out[second].wait(10)
    assert effects.started == [what]
    writer.answer["a"].set()  # "a" refused while "b" is in flight
    threads["a"].join(10)
    assert not threads["a"].is_alive()
    assert effects.started == [what] and len(errors) == 1
    writer.answer["b"].set()
    threads["b"].join(10)
    assert not threads["b"].is_alive()
    assert effects.started == [what] and len(errors) == 1


def test_writes_of_one_kind_all_refused_are_not_started() -> None:
    """Each write's refusal takes back its own note: once every one of them is refused,
    nothing of that kind is started. The write that made the note is refused first: before,
    its refusal took the note back though the other write's request had gone out."""
    writer = _GatedWriter()
    effects = SideEffects()
    fenced = FencedThreadWriter(writer, effects)  # type: ignore[arg-type]
    writer.refuse.update("ab")
    for key in "ab":
        writer.gate(key)
    errors: list[BaseException] = []

    def write(key: str) -> None:
        try:
            fenced.post_reply(1, key, [], key)
        except RuntimeError as exc:
            errors.append(exc)

    threads = {key: threading.Thread(target=write, args=(key,)) for key in "ab"}
    threads["a"].start()
    assert writer.out["a"].wait(10)
    threads["b"].start()
    assert writer.out["b"].wait(10)
    writer.answer["a"].set()
    threads["a"].join(10)
    assert not threads["a"].is_alive() and len(errors) == 1
    assert effects.started == ["Slack post"]  # "b" is still in flight
    writer.answer["b"].set()
    threads["b"].join(10)
    assert not threads["b"].is_alive() and len(errors) == 2
    assert effects.started == []


def test_a_stop_reply_is_given_a_copy_of_what_was_started() -> None:
    """The stop's reply is made while the work's other threads may still note a side effect:
    before, it was given the list they change."""
    effects = SideEffects()
    with effects.acting("sbatch"):
        pass
    shown = effects.started_now()
    with effects.acting("scancel"):
        pass
    assert shown == ["sbatch"] and effects.started == ["sbatch", "scancel"]
