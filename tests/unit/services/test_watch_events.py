"""The watcher's events in the run thread (bot.services.watch_events.ThreadEvents), through the
real approvals service: the 88154 story from stall warning to an approved resubmit; the
charts that come with incidents and leak warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import (
    T0,
    FakeCheckpoints,
    FakeSFTP,
    FakeSlurm,
    RecordingMessageSink,
    make_context,
    present,
    recorded,
)
from support.dying import Died
from support.watcher import stalled_thread

from bot.core.catalogue import Catalogue
from bot.services.approvals import ActionId, handle_click
from bot.services.watch.events import WatchEvent
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

STORY = Path(__file__).resolve().parents[2] / "fixtures" / "stories" / "88154.log"
LOG = "/scratch/mix/logs/mix-88154.out"


def _buttons(blocks):
    return [e for b in blocks if b.get("type") == "actions" for e in b["elements"]]


def test_88154_story_in_the_thread_from_stall_to_approved_resubmit(store):
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, clock=lambda: T0 + 1900)
    chain, sftp, rest = stalled_thread(ctx, slurm)
    posted: list[tuple[str, list]] = []
    real_reply = recorded(ctx).post_reply

    def capture(chain_id, key, blocks, text):
        posted.append((key, blocks))
        return real_reply(chain_id, key, blocks, text)

    recorded(ctx).post_reply = capture  # type: ignore[method-assign]
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx), config=ctx.config, checkpoint=FakeCheckpoints(3000))
    w.tick(T0)
    w.tick(T0 + 360)
    # The stall: one reply, owners paged, Cancel offered.
    [(key, blocks)] = posted
    assert key.endswith(":hang:line2476")
    assert "<@U0OWNER>" in blocks[0]["text"]["text"] and "3470" in blocks[0]["text"]["text"]
    assert ActionId.CANCEL in [b["action_id"] for b in _buttons(blocks)]
    # The watchdog fires; the job ends FAILED: the incident with Resubmit from iteration 3,000.
    sftp.clock = T0 + 1805
    sftp.append(LOG, rest)
    slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
    w.tick(T0 + 1830)
    key, blocks = posted[-1]
    assert key == "dev:88154:final"
    assert any(b.get("type") == "header" for b in blocks)  # the incident template rendered
    text = " ".join(b.get("text", {}).get("text", "") for b in blocks if b.get("type") ==
                    "section")
    assert "nccl_timeout" in text and "from iteration 3,000" in text
    buttons = _buttons(blocks)
    resubmit = next(b for b in buttons if b["action_id"] == ActionId.RESUBMIT)
    assert resubmit["text"]["text"] == "Resubmit from iteration 3,000"
    # An approver clicks: exactly one resubmit into the same chain.
    result = handle_click(ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1900)
    assert result.status == "done", result
    assert len(slurm.submits()) == 1
    attempts = store.attempts.for_chain(chain.id)
    assert [a.job_id for a in attempts] == ["88154", "88887"]
    assert store.watched_jobs.get("dev", "88887") is not None
    # A second click (or a Slack retry) does nothing more.
    again = handle_click(ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1901)
    assert again.status == "duplicate" and len(slurm.submits()) == 1


def test_cluster_notice_goes_once_to_each_active_thread_of_that_cluster(store):
    ctx = make_context(store)
    a = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    b = store.chains.create(recipe="mix", cluster="other", job_name="mix", now=T0)
    for c in (a, b):
        recorded(ctx).post_root(c.id, "C0TRAIN", [], "mix")
    sink = ThreadEvents(ctx)
    ev = WatchEvent("cluster_unreachable", "cluster:dev:down:1", "dev", "cluster dev down")
    sink.publish(ev)
    notes = [p[1:3] for p in recorded(ctx).posts if p[0] == "reply"]
    assert notes == [(a.id, f"cluster:dev:down:1:chain:{a.id}")]


@pytest.mark.parametrize(("lang", "want"), [
    ("ko", "클러스터 dev에 3번 연속 연결하지 못했습니다 (1970-01-12 13:46:40 UTC부터): "
           "`squeue --me`이(가) 20초 안에 끝나지 않았습니다. 다시 응답할 때까지"),
    ("en", "cluster dev unreachable for 3 ticks (since 1970-01-12 13:46:40 UTC): `squeue --me` "
           "did not finish within 20 s. Jobs are not being judged"),
])
def test_cluster_unreachable_note_says_the_error_in_the_threads_language(store, lang, want):
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport
    from bot.services.watch.health import ClusterHealth
    from bot.services.watch.outbox import Outbox

    ctx = make_context(store, lang=lang)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    events: list[WatchEvent] = []
    threads = ThreadEvents(ctx)

    class Sink:
        def publish(self, event: WatchEvent) -> None:
            events.append(event)
            threads.publish(event)

    health = ClusterHealth("dev", outbox=Outbox("dev", store=store, sink=Sink()),
                           unreachable_ticks=3)
    error = CommandTimedOut(["squeue", "--me"], 20)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, error, TickReport(ok=True))
    [event] = events
    [note] = [p[3] for p in recorded(ctx).posts if p[0] == "reply"]
    assert note.startswith(want), note
    assert event.to_json()["facts"]["error"] == "`squeue --me` did not finish within 20 s"


def slack_refusing(ctx, fails: int = 1):
    """The watcher's cluster health publishing through the threads (ThreadEvents, the
    RecordingMessageSink as the Slack poster) of `ctx`, whose next `fails` posts Slack
    refuses."""
    from bot.services.watch.health import ClusterHealth
    from bot.services.watch.outbox import Outbox

    ctx.sink.fail_next = fails
    return ClusterHealth("dev", outbox=Outbox("dev", store=ctx.store, sink=ThreadEvents(ctx)),
                         unreachable_ticks=3)


def replies(ctx) -> list[str]:
    return [p[3] for p in ctx.sink.posts if p[0] == "reply"]


KO_NOTICE = ("클러스터 dev에 3번 연속 연결하지 못했습니다 (1970-01-12 13:46:40 UTC부터): "
             "`squeue --me`이(가) 20초 안에 끝나지 않았습니다. 다시 응답할 때까지")
KO_BACK = "클러스터 dev이(가) 다시 응답합니다 (1970-01-12 13:46:40 UTC부터 연결 불가)"


def test_an_unreachable_notice_whose_post_failed_is_posted_later_as_recorded_in_korean(store):
    from bot.cluster.errors import ClusterUnavailable, CommandTimedOut
    from bot.services.watch.events import TickReport

    ctx = make_context(store, lang="ko")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    health = slack_refusing(ctx)
    for i in range(3):  # the 3rd tick decides the notice; Slack refuses its post
        health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    assert replies(ctx) == []
    # The next failed tick, with another error, posts the notice as it was recorded.
    health.failed(1_000_180.0, ClusterUnavailable("connection refused"), TickReport(ok=True))
    [note] = replies(ctx)
    assert note.startswith(KO_NOTICE), note
    health.failed(1_000_240.0, ClusterUnavailable("connection refused"), TickReport(ok=True))
    health.ok(1_000_300.0, TickReport(ok=True))  # the outage is over: it says so once
    notes = replies(ctx)
    assert len(notes) == 2 and "1970-01-12 13:46:40 UTC" in notes[1], notes


def test_an_unreachable_notice_a_restart_left_unposted_is_posted_from_the_store_in_korean(
        store):
    from bot.cluster.errors import ClusterUnavailable, CommandTimedOut
    from bot.services.watch.events import TickReport

    ctx = make_context(store, lang="ko")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    before = slack_refusing(ctx)
    for i in range(3):
        before.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    # The bot restarts, the cluster still down: the new process counts its own ticks and
    # then posts the notice the store holds, not a new one that knows nothing of before.
    after = slack_refusing(ctx, fails=0)
    for i in range(3):
        after.failed(1_000_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                     TickReport(ok=True))
    [note] = replies(ctx)
    assert note.startswith(KO_NOTICE), note
    assert [i.state for i in store.incidents.of_class("cluster_unreachable", ("posted",))] \
        == ["posted"]
    # Its "answers again" note dates the outage from that notice's first failure, not from
    # the restart's first failed tick.
    after.ok(1_000_900.0, TickReport(ok=True))
    assert replies(ctx)[1].startswith(KO_BACK), replies(ctx)


def test_an_unreachable_notice_left_unposted_is_dropped_once_the_cluster_answers(store):
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    ctx = make_context(store, lang="ko")
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    health = slack_refusing(ctx)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    health.ok(1_000_180.0, TickReport(ok=True))  # it answers before the notice went out
    assert health.outbox.unposted("cluster_unreachable") == []
    for i in range(3):  # a later outage is announced as its own
        health.failed(1_000_600.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    [note] = replies(ctx)
    assert "(1970-01-12 13:56:40 UTC부터)" in note, note


def _announced_outage(ctx):
    """Two threads on cluster dev, and its outage from 1_000_000 told in both."""
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    for name in ("mix", "mix"):
        chain = ctx.store.chains.create(recipe=name, cluster="dev", job_name=name, now=T0)
        ctx.sink.post_root(chain.id, "C0TRAIN", [], name)
    health = slack_refusing(ctx, fails=0)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    assert len(replies(ctx)) == 2
    return health


@pytest.mark.parametrize("next_tick", ["ok", "failed"])
def test_a_back_note_whose_post_failed_is_posted_at_the_next_tick_once_in_korean(
        store, next_tick):
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store, lang="ko")
    health = _announced_outage(ctx)
    recorded(ctx).fail_next = 1  # the first thread's back note: Slack refuses it
    health.ok(1_000_300.0, TickReport(ok=True))
    backs = [n for n in replies(ctx) if n.startswith(KO_BACK)]
    assert len(backs) == 1  # the second thread's
    if next_tick == "ok":
        health.ok(1_000_360.0, TickReport(ok=True))
    else:  # down again: the note of the outage that ended is still true, and comes first
        health.failed(1_000_360.0, ClusterUnavailable("connection refused"),
                      TickReport(ok=True))
    back_posts = [(p[1], p[3]) for p in recorded(ctx).posts if p[0] == "reply" and
                  p[3].startswith(KO_BACK)]
    assert sorted(chain for chain, _ in back_posts) == [1, 2], back_posts  # each thread's once
    assert store.incidents.of_class("cluster_back", ("pending",)) == []
    health.ok(1_000_420.0, TickReport(ok=True))
    assert len([n for n in replies(ctx) if n.startswith(KO_BACK)]) == 2


def test_a_back_note_a_restart_left_unposted_is_posted_from_the_store(store):
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    health = _announced_outage(ctx)
    recorded(ctx).fail_next = 2  # Slack refuses both threads' back notes; then the bot restarts
    health.ok(1_000_300.0, TickReport(ok=True))
    assert [n for n in replies(ctx) if n.startswith("cluster dev answers again")] == []
    after = slack_refusing(ctx, fails=0)
    after.ok(1_003_600.0, TickReport(ok=True))
    backs = [n for n in replies(ctx) if n.startswith("cluster dev answers again")]
    assert backs == ["cluster dev answers again (unreachable since 1970-01-12 13:46:40 UTC); "
                     "watching resumes."] * 2, backs


def _two_threads_one_refusing_the_notice(ctx):
    """Two threads on cluster dev; its outage from 1_000_000 is told, and Slack refuses the
    first thread's notice."""
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    for _ in range(2):
        chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        ctx.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    health = slack_refusing(ctx, fails=1)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    assert [p[1] for p in ctx.sink.posts if p[0] == "reply"] == [2]  # the second thread's
    return health


def thread_notes(ctx, start: str) -> list[int]:
    return sorted(p[1] for p in ctx.sink.posts if p[0] == "reply" and p[3].startswith(start))


NOTICE = "cluster dev unreachable for 3 ticks (since 1970-01-12 13:46:40 UTC)"
BACK = "cluster dev answers again (unreachable since 1970-01-12 13:46:40 UTC); watching resumes."


def test_a_notice_one_thread_refused_is_posted_there_at_the_next_failed_tick_alone(store):
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    health = _two_threads_one_refusing_the_notice(ctx)
    health.failed(1_000_180.0, ClusterUnavailable("connection refused"), TickReport(ok=True))
    assert thread_notes(ctx, NOTICE) == [1, 2]  # the first thread's now; the second's once
    health.failed(1_000_240.0, ClusterUnavailable("connection refused"), TickReport(ok=True))
    assert thread_notes(ctx, NOTICE) == [1, 2]
    health.ok(1_000_300.0, TickReport(ok=True))
    assert thread_notes(ctx, BACK) == [1, 2]


def test_the_threads_told_of_an_outage_hear_it_ended_and_the_one_that_refused_it_nothing(
        store):
    """Slack refused the first thread's notice and the cluster answers before it was posted
    again: the second thread, told of the outage, hears once that it is over; the first,
    never told, hears nothing of it (before, it got the "answers again" note too)."""
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    health = _two_threads_one_refusing_the_notice(ctx)
    health.ok(1_000_180.0, TickReport(ok=True))  # it answers before the first thread got it
    assert thread_notes(ctx, NOTICE) == [2]  # an outage over is not announced
    assert thread_notes(ctx, BACK) == [2]  # its end is, where it was told only
    assert health.outbox.unposted("cluster_unreachable") == []
    assert store.incidents.of_class("cluster_back", ("pending",)) == []  # said: not again
    health.ok(1_000_240.0, TickReport(ok=True))
    assert thread_notes(ctx, BACK) == [2]


def unreachable_notes(ctx) -> list[int]:
    """The threads given an unreachable notice, one entry per notice posted."""
    return sorted(p[1] for p in ctx.sink.posts if p[0] == "reply" and
                  p[3].startswith("cluster dev unreachable"))


def test_a_restarted_bot_tells_each_thread_told_of_the_outage_once_that_it_is_over(store):
    """The notice is posted in both threads, then the process is replaced (new health,
    outbox and thread writer over the same store): the cluster answers, and each thread
    hears it once, from the outage's start the notice said."""
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    _announced_outage(ctx)
    assert thread_notes(ctx, NOTICE) == [1, 2]
    restarted = slack_refusing(ctx, fails=0)
    restarted.ok(1_003_600.0, TickReport(ok=True))
    assert thread_notes(ctx, BACK) == [1, 2]
    restarted.ok(1_003_660.0, TickReport(ok=True))
    slack_refusing(ctx, fails=0).ok(1_003_720.0, TickReport(ok=True))  # and another restart
    assert thread_notes(ctx, BACK) == [1, 2]
    assert unreachable_notes(ctx) == [1, 2]


def test_a_bot_restarted_while_the_cluster_is_still_down_does_not_announce_it_again(store):
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    _announced_outage(ctx)
    restarted = slack_refusing(ctx, fails=0)
    for i in range(5):
        restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                         TickReport(ok=True))
    assert unreachable_notes(ctx) == [1, 2]  # the first bot's notice, once per thread
    restarted.ok(1_004_000.0, TickReport(ok=True))
    assert thread_notes(ctx, BACK) == [1, 2]


@pytest.mark.parametrize("next_tick", ["ok", "failed"])
def test_a_restarted_bot_ends_an_outage_one_thread_refused_the_notice_of(store, next_tick):
    """The notice reached the second thread only; the bot restarts. Still down: the first
    thread gets the notice; answering: no notice there (an outage over is not told). Each
    thread told of the outage hears once that it is over; the first, never told (the cluster
    answered before its notice was posted again), hears nothing of it."""
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    _two_threads_one_refusing_the_notice(ctx)
    restarted = slack_refusing(ctx, fails=0)
    if next_tick == "failed":
        restarted.failed(1_003_600.0, ClusterUnavailable("connection refused"),
                         TickReport(ok=True))
    restarted.ok(1_003_660.0, TickReport(ok=True))
    restarted.ok(1_003_720.0, TickReport(ok=True))
    told = [1, 2] if next_tick == "failed" else [2]
    assert thread_notes(ctx, NOTICE) == told
    assert thread_notes(ctx, BACK) == told
    assert restarted.outbox.unposted("cluster_unreachable") == []


def test_a_restarted_bot_says_nothing_of_an_outage_over_before_it_was_told(store):
    """The notice was recorded and Slack refused it in every thread, then the bot restarts
    and the cluster answers: no thread was told, so none hears it is over."""
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    for _ in range(2):
        chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    health = slack_refusing(ctx, fails=2)
    for i in range(3):
        health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                      TickReport(ok=True))
    slack_refusing(ctx, fails=0).ok(1_003_600.0, TickReport(ok=True))
    assert replies(ctx) == []


def _notice_posted_then_died(ctx, monkeypatch, refused: int) -> None:
    """Two threads on cluster dev; its outage from 1_000_000 is told, Slack refusing the
    first `refused` threads' notices, and the bot dies right after the publish, before the
    notice's row is marked (it stays `pending`)."""
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    for _ in range(2):
        chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        ctx.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    health = slack_refusing(ctx, fails=refused)
    mark = ctx.store.incidents.set_state

    def dies_marking_the_notice(key: str, state: str) -> None:
        if key.startswith("cluster:dev:down:"):
            raise Died(f"{key} -> {state}")
        mark(key, state)

    with monkeypatch.context() as m:
        m.setattr(ctx.store.incidents, "set_state", dies_marking_the_notice)
        for i in range(2):
            health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                          TickReport(ok=True))
        with pytest.raises(Died):
            health.failed(1_000_120.0, CommandTimedOut(["squeue", "--me"], 20),
                          TickReport(ok=True))
    assert [i.key for i in ctx.store.incidents.of_class("cluster_unreachable", ("pending",))] \
        == ["cluster:dev:down:1000000"]


@pytest.mark.parametrize("next_tick", ["answers", "still down"])
@pytest.mark.parametrize("refused", [0, 1])
def test_a_bot_that_died_between_posting_the_notice_and_marking_it_ends_the_outage_once(
        store, monkeypatch, refused, next_tick):
    """The notice reached both threads (or the second only, Slack refusing the first) and
    the bot died before marking it posted; a new bot (new health, outbox and thread writer
    over the same store) starts. Answering: the threads told hear once that it is over (the
    one Slack refused it in, never told, nothing), and no thread gets the notice; still down
    first: the thread that lacked it gets it, once, and both hear the end. Before, the new
    bot took the notice for one never said: dropped, no "answers again"."""
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    _notice_posted_then_died(ctx, monkeypatch, refused)
    told = [1, 2][refused:]
    assert unreachable_notes(ctx) == told
    restarted = slack_refusing(ctx, fails=0)
    if next_tick == "still down":
        for i in range(4):
            restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                             TickReport(ok=True))
        told = [1, 2]
    restarted.ok(1_004_000.0, TickReport(ok=True))
    restarted.ok(1_004_060.0, TickReport(ok=True))
    slack_refusing(ctx, fails=0).ok(1_004_120.0, TickReport(ok=True))  # and another restart
    assert unreachable_notes(ctx) == told
    assert thread_notes(ctx, BACK) == told
    assert restarted.outbox.unposted("cluster_unreachable") == []


class Killed(BaseException):
    """The bot's process killed (SIGKILL) inside a call: no `except Exception` on the way out
    runs (the outbox's own catches a failed publish)."""


def _died_between_slack_and_its_record(ctx, monkeypatch) -> None:
    """Two threads on cluster dev; its outage from 1_000_000 is told: Slack takes the first
    thread's notice and the bot dies before recording it posted (the post's row stays an
    intent, the notice's row `pending`); the second thread's is never sent."""
    from bot.cluster.errors import CommandTimedOut
    from bot.services.watch.events import TickReport

    for _ in range(2):
        chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
        ctx.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    health = slack_refusing(ctx, fails=0)
    record_posted = ctx.store.slack_posts.record_posted

    def dies_recording_the_notice(key: str, **kw) -> object:
        if key.startswith("cluster:dev:down:"):
            raise Killed(key)
        return record_posted(key, **kw)

    with monkeypatch.context() as m:
        m.setattr(ctx.store.slack_posts, "record_posted", dies_recording_the_notice)
        for i in range(2):
            health.failed(1_000_000.0 + 60 * i, CommandTimedOut(["squeue", "--me"], 20),
                          TickReport(ok=True))
        with pytest.raises(Killed):
            health.failed(1_000_120.0, CommandTimedOut(["squeue", "--me"], 20),
                          TickReport(ok=True))
    assert unreachable_notes(ctx) == [1]
    assert ctx.store.slack_posts.get("cluster:dev:down:1000000:chain:1").state == "intent"


@pytest.mark.parametrize("next_tick", ["answers", "still down"])
def test_a_thread_whose_notice_slack_took_as_the_bot_died_hears_once_that_it_is_over(
        store, monkeypatch, next_tick):
    """The bot died between Slack taking the first thread's notice and recording it: a new
    bot (new health, outbox and thread writer over the same store) looks the intent up in
    the thread, finds it there, and takes the outage as told. Answering: the first thread
    hears once that it is over (the second, never told, nothing), and no thread gets the
    notice; still down first: the second thread gets it, the first nothing twice, and both
    hear the end once. Before, the intent did not count: the notice was dropped and no
    thread heard that the outage ended."""
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    _died_between_slack_and_its_record(ctx, monkeypatch)
    restarted = slack_refusing(ctx, fails=0)
    told = [1]
    if next_tick == "still down":
        for i in range(4):
            restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                             TickReport(ok=True))
        told = [1, 2]
    restarted.ok(1_004_000.0, TickReport(ok=True))
    restarted.ok(1_004_060.0, TickReport(ok=True))
    slack_refusing(ctx, fails=0).ok(1_004_120.0, TickReport(ok=True))  # and another restart
    assert unreachable_notes(ctx) == told
    assert thread_notes(ctx, BACK) == told
    assert store.slack_posts.get("cluster:dev:down:1000000:chain:1").state == "posted"


def test_a_notice_left_in_a_thread_that_refuses_lookups_has_its_end_tried_there_once(
        store, monkeypatch, caplog):
    """As above, then the first thread's channel refuses everything (the bot was removed
    from it): the lookup of its notice's intent (LookupRefused) and any post. The thread may
    have the notice: when the cluster answers, the "answers again" note is tried there once,
    the intent is dropped with a warning, and the second thread (told while the cluster
    stayed down) hears the end once; the end is then recorded posted. Before, the note was
    tried in the refusing thread at every tick and the end never fully posted."""
    import logging

    from bot.cluster.errors import ClusterUnavailable
    from bot.services.ports import LookupRefused, PostError
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    _died_between_slack_and_its_record(ctx, monkeypatch)
    sink = recorded(ctx)
    look_up, post_reply = sink.look_up, sink.post_reply
    tried: list[str] = []

    def refusing_look_up(key: str) -> bool:
        if key.endswith(":chain:1"):
            raise LookupRefused(f"Slack conversations.replies for {key!r}: not_in_channel")
        return look_up(key)

    def refusing_post(chain_id: int, key: str, blocks: list, text: str) -> str:
        if chain_id == 1:
            tried.append(text)
            if store.slack_posts.get(key) is not None:  # an intent: looked up first
                refusing_look_up(key)
            raise PostError(f"Slack chat.postMessage failed for {key!r}: not_in_channel")
        return post_reply(chain_id, key, blocks, text)

    monkeypatch.setattr(sink, "look_up", refusing_look_up)
    monkeypatch.setattr(sink, "post_reply", refusing_post)
    restarted = slack_refusing(ctx, fails=0)
    for i in range(2):
        restarted.failed(1_003_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                         TickReport(ok=True))
    assert unreachable_notes(ctx) == [1, 2]
    caplog.set_level(logging.WARNING, logger="bot.services.watch_events")
    for i in range(4):
        restarted.ok(1_004_000.0 + 60 * i, TickReport(ok=True))
    slack_refusing(ctx, fails=0).ok(1_004_300.0, TickReport(ok=True))  # and a restart
    assert [t for t in tried if t.startswith(BACK)] == [BACK]
    assert thread_notes(ctx, BACK) == [2]
    assert store.incidents.get("cluster:dev:back:1000000").state == "posted"
    assert store.slack_posts.get("cluster:dev:down:1000000:chain:1") is None
    assert ("cluster:dev:down:1000000:chain:1 may be in its thread and its lookup was refused "
            "(Slack conversations.replies for 'cluster:dev:down:1000000:chain:1': "
            "not_in_channel): taken as said this once, its intent dropped (not looked up "
            "again)") in caplog.text


def test_a_notice_intent_slack_does_not_have_is_not_taken_as_said(store):
    """The notice's post was recorded as an intent and never reached Slack (the bot stopped
    before sending it); the new bot looks it up, does not find it, and the cluster answers:
    no thread was told, so none hears that the outage is over."""
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    store.incidents.record("cluster:dev:down:1000000", class_id="cluster_unreachable",
                           now=1_000_120.0, diagnosis={
                               "kind": "cluster_unreachable", "text": NOTICE, "job_id": None,
                               "cluster": "dev", "down_since": 1_000_000.0},
                           state="pending")
    store.slack_posts.record_intent("cluster:dev:down:1000000:chain:1", channel="C0TRAIN",
                                    kind="reply", chain_id=chain.id, thread_ts="1.0001", now=0)
    slack_refusing(ctx, fails=0).ok(1_003_600.0, TickReport(ok=True))
    assert replies(ctx) == []
    assert store.incidents.get("cluster:dev:down:1000000").state == "dropped"


def test_a_notice_stored_before_the_outages_start_was_is_posted_and_dates_the_outage(store):
    """A notice recorded by a bot older than the stored outage start (no `down_since`, no
    facts, only its English text) and left unposted: the outage dates from its key, not from
    this bot's first failed tick."""
    from bot.cluster.errors import ClusterUnavailable
    from bot.services.watch.events import TickReport

    ctx = make_context(store)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    text = (f"{NOTICE}: `squeue --me` did not finish within 20 s. Jobs are not being judged; "
            "nothing is concluded about them until it answers again.")
    store.incidents.record("cluster:dev:down:1000000", class_id="cluster_unreachable", now=
                           1_000_120.0, diagnosis={"kind": "cluster_unreachable", "text": text,
                                                   "job_id": None, "cluster": "dev"},
                           chain_id=None, job_id=None, state="pending")
    health = slack_refusing(ctx, fails=0)  # the new bot, the cluster still down
    for i in range(3):
        health.failed(1_000_600.0 + 60 * i, ClusterUnavailable("connection refused"),
                      TickReport(ok=True))
    assert replies(ctx) == [text]
    health.ok(1_000_900.0, TickReport(ok=True))
    assert replies(ctx) == [text, BACK]


def test_time_limit_on_an_auto_resubmit_recipe_is_resumed_by_the_submit_service(store):
    from bot.app import build_watcher

    slurm = FakeSlurm()
    sftp = FakeSFTP()
    ctx = make_context(store, slurm, sftp=sftp, clock=lambda: T0 + 2000,
                       policy={"auto_resubmit": True, "backoff_s": 30})
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88300", now=T0)
    store.watched_jobs.add("dev", "88300", now=T0, chain_id=chain.id)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    sftp.append(LOG, b"".join(STORY.read_bytes().splitlines(keepends=True)[:300]))
    slurm.add(88300, state="TIMEOUT", exit_code=0, signal=0, stdout_path=LOG, name="mix",
              start_time=T0, end_time=T0 + 1300)
    w = build_watcher(ctx, "dev")
    w.tick(T0 + 1310)
    assert slurm.submits() == []  # backoff: not before T0 + 1340
    w.tick(T0 + 1350)
    [submitted] = slurm.submits()
    assert submitted.job_name == "mix"  # same name, same chain
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88300", "88887"]
    assert store.chains.get(chain.id).retries_used == 1
    assert store.watched_jobs.get("dev", "88887") is not None
    w.tick(T0 + 1410)
    assert len(slurm.submits()) == 1
    keys = [p[2] for p in recorded(ctx).posts if p[0] == "reply"]
    assert "dev:88300:final" in keys and "dev:88300:resubmitted" in keys


# ------------------------------------------------------------------ charts in the thread

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FINAL_CHARTS = ["chart:88154:final:rss.png", "chart:88154:final:progress.png",
                "chart:88154:final:loss.png"]


class ChartSink(RecordingMessageSink):
    """The recording sink with chart uploads; `refuse` names files whose upload fails."""

    def __init__(self, store: Store, refuse: tuple[str, ...] = ()) -> None:
        super().__init__(store)
        self.charts: list[tuple[str, str, bytes]] = []  # (key, title, png)
        self.refuse = refuse

    def upload_file(self, chain_id, key, data, filename, title):
        if filename in self.refuse:
            raise RuntimeError(f"files_upload_v2 failed for {filename}: 500")
        self.charts.append((key, title, data))
        return f"F{len(self.charts)}"

    def replies(self) -> list[str]:
        return [p[2] for p in self.posts if p[0] == "reply"]


def _chart_thread(store: Store, sink: ChartSink, **recipe):
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, sink=sink, clock=lambda: T0 + 1900, **recipe)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    sink.post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx, slurm, chain


def _failed_88154(store: Store, sink: ChartSink, **recipe) -> Watcher:
    """The 88154 story's whole log, the job FAILED: one tick gives its incident."""
    ctx, slurm, chain = _chart_thread(store, sink, **recipe)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    store.watched_jobs.add("dev", "88154", now=T0, chain_id=chain.id)
    sftp = FakeSFTP()
    sftp.append(LOG, STORY.read_bytes())
    slurm.add(88154, state="FAILED", exit_code=1, signal=0, stdout_path=LOG, start_time=T0,
              end_time=T0 + 1805, name="mix", mem_limit_bytes=950 << 30)
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx), config=ctx.config, checkpoint=FakeCheckpoints(3000))
    w.tick(T0 + 1830)
    return w


def test_an_incident_brings_its_rss_progress_and_loss_charts_into_the_thread(store):
    sink = ChartSink(store)
    _failed_88154(store, sink)
    assert sink.replies() == ["dev:88154:final"]
    assert [key for key, _, _ in sink.charts] == FINAL_CHARTS
    assert [title for _, title, _ in sink.charts] == [
        "Host RSS · job 88154 (final)", "Progress · job 88154 (final)",
        "Loss · job 88154 (final)"]
    assert all(png[:8] == PNG_MAGIC for _, _, png in sink.charts)


def test_a_korean_threads_chart_files_have_korean_titles(store):
    sink = ChartSink(store)
    _failed_88154(store, sink, lang="ko")
    assert [key for key, _, _ in sink.charts] == FINAL_CHARTS
    assert [title for _, title, _ in sink.charts] == [
        "호스트 RSS · 작업 88154 (최종)", "진행 · 작업 88154 (최종)", "Loss · 작업 88154 (최종)"]


@pytest.mark.parametrize("failure", ["draw", "upload"])
def test_a_chart_that_fails_leaves_the_incident_posted_exactly_once(store, monkeypatch,
                                                                    failure):
    """Drawing fails (no chart at all) or one upload fails (the others still arrive): the
    incident is posted once, recorded as posted, and later ticks post nothing again."""
    if failure == "draw":
        import bot.charts.series

        def broken(*args, **kwargs):
            raise ValueError("cannot draw")

        monkeypatch.setattr(bot.charts.series, "charts_for", broken)
    sink = ChartSink(store, refuse=("rss.png",) if failure == "upload" else ())
    w = _failed_88154(store, sink)
    w.tick(T0 + 1890)
    w.tick(T0 + 1950)
    assert sink.replies() == ["dev:88154:final"]
    assert store.incidents.get("dev:88154:final").state == "posted"
    assert store.watched_jobs.get("dev", "88154") is None
    expected = [] if failure == "draw" else FINAL_CHARTS[1:]
    assert [key for key, _, _ in sink.charts] == expected


def test_a_leak_seen_by_the_sampler_posts_its_rss_chart_with_the_workers_line(store,
                                                                             monkeypatch):
    """The reports' decoder-cache leak: the log prints no RSS, the sampler does; DataLoader
    workers grow 1.9 -> 9.2 GiB. The warning's RSS chart takes the host RSS from the sampler
    and draws the workers' line, both at the log's iterations."""
    import json
    import time

    import bot.charts.figures

    drawn = []
    real_rss_chart = bot.charts.figures.rss_chart

    def spy(points, **kwargs):
        drawn.append((points, kwargs))
        return real_rss_chart(points, **kwargs)

    monkeypatch.setattr(bot.charts.figures, "rss_chart", spy)
    sink = ChartSink(store)
    ctx, slurm, chain = _chart_thread(store, sink, sampler_path="/scratch/mix/logs/rss-%j.jsonl",
                                      target_iter=8000)
    store.attempts.record(chain_id=chain.id, job_id="88016", now=T0)
    store.watched_jobs.add("dev", "88016", now=T0, chain_id=chain.id)
    slurm.add(88016, state="RUNNING", stdout_path=LOG, start_time=T0, name="mix",
              mem_limit_bytes=100 << 30, workdir="/scratch/mix")
    sftp = FakeSFTP()
    log_lines = []
    for k in range(161):  # iterations 64..224, no RSS on these lines
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0 - 720 + 4.5 * k))
        log_lines.append(f"{stamp}.000 | INFO | iter: {64 + k}/8000 | loss: 0.9 | 4.50 s/iter\n")
    sftp.append(LOG, "".join(log_lines).encode())
    gib = 1 << 30
    samples = "".join(json.dumps({"v": 1, "t": T0 - 720 + 4.5 * k,
                                  "rss": {"trainer": 60 * gib,
                                          "worker": int((1.9 + 7.3 * k / 160) * gib),
                                          "other": 0},
                                  "cpu": {"trainer": 90, "worker": 40, "other": 0},
                                  "n": {"trainer": 4, "worker": 40, "other": 2}}) + "\n"
                      for k in range(0, 161, 8))
    sftp.append("/scratch/mix/logs/rss-88016.jsonl", samples.encode())
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx), config=ctx.config)
    w.tick(T0 + 5)
    [reply] = sink.replies()
    assert ":memory_leak:" in reply
    [(key, title, png)] = sink.charts
    assert (key, title) == ("chart:88016:leak:rss.png", "Host RSS · job 88016 (leak)")
    assert png[:8] == PNG_MAGIC
    [(host, kwargs)] = drawn
    workers = sorted(kwargs["worker_series"])
    assert (workers[0][0], workers[-1][0]) == (64, 224)  # sampler times -> log iterations
    assert (round(workers[0][1] / gib, 1), round(workers[-1][1] / gib, 1)) == (1.9, 9.2)
    assert len(host) == 21 and min(b for _, b in host) == 60 * gib + workers[0][1]
    assert kwargs["title"] == "Host RSS (sampler) · job 88016"
    assert kwargs["projected_oom_iter"] is not None  # the fitted trend, as in the warning


def test_the_progress_chart_overlays_the_chains_last_attempts_until_the_chain_ends(
        store, monkeypatch):
    import time

    import bot.charts.figures
    from bot.core.diagnose import LogAnalysis
    from bot.core.policy import Decision, DecisionKind

    lines_drawn = []
    real_progress_chart = bot.charts.figures.progress_chart

    def spy(attempts, **kwargs):
        lines_drawn.append([job for job, _ in attempts])
        return real_progress_chart(attempts, **kwargs)

    monkeypatch.setattr(bot.charts.figures, "progress_chart", spy)
    sink = ChartSink(store)
    ctx, _, chain = _chart_thread(store, sink)
    events = ThreadEvents(ctx)

    def incident(n: int, chain_id: int = chain.id) -> WatchEvent:
        analysis = LogAnalysis(Catalogue.load())
        start = T0 + 600 * n
        analysis.feed("".join(
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(start + 4.5 * k))}.000 | INFO | "
            f"iter: {100 * n + k}/8000 | loss: 0.9 | 4.50 s/iter\n" for k in range(20)).encode())
        analysis.finish()
        diag = analysis.diagnose()
        job = str(9000 + n)
        return WatchEvent("incident", f"dev:{job}:final", "dev", f"job {job} FAILED", chain_id,
                          job, "mix", diagnosis=diag,
                          decision=Decision(DecisionKind.STOP, "stopped", diag.class_id),
                          series=analysis.series)

    for n in range(1, 8):
        events.publish(incident(n))
    assert lines_drawn[0] == ["9001"]
    assert lines_drawn[-1] == ["9003", "9004", "9005", "9006", "9007"]  # the last five
    store.chains.set_status(chain.id, "completed", now=T0)
    events.chain_changed(chain.id)  # the chain ended: its attempts are forgotten
    events.publish(incident(8))
    assert lines_drawn[-1] == ["9008"]
    # Chains waiting for a person stay active: at most KEEP_CHAINS are remembered.
    monkeypatch.setattr("bot.services.watch_events.KEEP_CHAINS", 1)
    other = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    sink.post_root(other.id, "C0TRAIN", [], "mix")
    events.publish(incident(20, other.id))  # the other chain is charted: ours is dropped
    events.publish(incident(9))
    assert lines_drawn[-1] == ["9009"]


def test_the_chains_progress_chart_keeps_every_attempts_saves_and_failure_in_its_language(
        store, monkeypatch):
    import time

    import bot.charts.figures
    from bot.core.diagnose import LogAnalysis
    from bot.core.models import Accounting
    from bot.core.policy import Decision, DecisionKind

    drawn = []
    real_progress_chart = bot.charts.figures.progress_chart

    def spy(attempts, **kwargs):
        drawn.append(kwargs)
        return real_progress_chart(attempts, **kwargs)

    monkeypatch.setattr(bot.charts.figures, "progress_chart", spy)
    from matplotlib.axes import Axes

    axis_labels: list[str] = []
    real_set_xlabel = Axes.set_xlabel

    def set_xlabel(ax, label, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        axis_labels.append(label)
        return real_set_xlabel(ax, label, *a, **k)

    monkeypatch.setattr(Axes, "set_xlabel", set_xlabel)
    from matplotlib.figure import Figure

    legend_labels: list[str] = []  # what the drawn legend says
    real_legend = Figure.legend

    def legend(fig, handles, labels, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        legend_labels.extend(labels)
        return real_legend(fig, handles, labels, *a, **k)

    monkeypatch.setattr(Figure, "legend", legend)
    sink = ChartSink(store)
    ctx, _, chain = _chart_thread(store, sink, lang="ko")
    events = ThreadEvents(ctx)

    def incident(n: int) -> WatchEvent:
        analysis = LogAnalysis(Catalogue.load())
        start = T0 + 600 * n
        lines = []
        for k in range(20):
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start + 4.5 * k))
            lines.append(f"{stamp}.000 | INFO | iter: {100 * n + k}/8000 | loss: 0.9\n")
            if k == 10:
                lines.append(f"{stamp}.500 | INFO | Saving checkpoint at iteration {k}\n"
                             f"{stamp}.900 | INFO | Saved checkpoint iter_{k}\n")
        analysis.feed("".join(lines).encode())
        analysis.finish()
        diag = analysis.diagnose(Accounting(state="FAILED", exit_code=1, signal=0))
        job = str(9000 + n)
        return WatchEvent("incident", f"dev:{job}:final", "dev", f"job {job} FAILED", chain.id,
                          job, "mix", diagnosis=diag,
                          decision=Decision(DecisionKind.STOP, "stopped", diag.class_id),
                          series=analysis.series)

    first, second = incident(1), incident(2)
    assert present(first.diagnosis).class_id == "unknown_failure"
    events.publish(first)
    events.publish(second)
    last = drawn[-1]
    assert len(last["saves"]) == 2  # the first attempt's save is still marked
    causes = [label for _, label in last["failures"]]
    # both failures, named by the catalogue's Korean title of unknown_failure, not its id
    assert causes == ["알 수 없는 실패 (작업 9001)", "알 수 없는 실패 (작업 9002)"]
    assert "실패: 알 수 없는 실패 (작업 9001)" in legend_labels
    assert last["title"] == "진행 · 작업 9002"
    assert "시각 (UTC)" in axis_labels and "time (UTC)" not in axis_labels  # its time axis


def test_a_completed_run_ends_its_thread_with_the_check_line_after_its_charts(store):
    import time

    from bot.core.diagnose import LogAnalysis
    from bot.core.models import Accounting
    from bot.core.policy import Decision, DecisionKind

    order: list[str] = []

    class OrderSink(ChartSink):
        def upload_file(self, chain_id, key, data, filename, title):
            order.append(filename)
            return super().upload_file(chain_id, key, data, filename, title)

        def post_reply(self, chain_id, key, blocks, text):
            order.append(text)
            return super().post_reply(chain_id, key, blocks, text)

    sink = OrderSink(store)
    ctx, _, chain = _chart_thread(store, sink, target_iter=40)
    store.attempts.record(chain_id=chain.id, job_id="9001", now=T0)
    analysis = LogAnalysis(Catalogue.load())
    analysis.feed("".join(
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(T0 + 4.5 * k))}.000 | INFO | "
        f"iter: {k}/40 | loss: 0.9 | rss: {10 + k * 0.01:.2f} GiB\n" for k in range(41)).encode())
    analysis.finish()
    diag = analysis.diagnose(Accounting(state="COMPLETED", exit_code=0, signal=0,
                                        elapsed_s=200), target_iter=40)
    assert diag.class_id == "completed"
    ThreadEvents(ctx).publish(WatchEvent(
        "incident", "dev:9001:final", "dev", "job 9001 COMPLETED", chain.id, "9001", "mix",
        diagnosis=diag, decision=Decision(DecisionKind.NONE, "the run completed", "completed"),
        series=analysis.series))
    assert order[:-1] and all(name.endswith(".png") for name in order[:-1])
    assert order[-1].startswith("✅ Completed · job 9001: reached iteration 40 / 40")


# ------------------------------------------------------------------ a GPU fault: another node

GPU_LOG = b"".join([
    *(f"iter: {i}/100 | loss: 2.{i:02d} | 0.5 s/iter\n".encode() for i in range(1, 13)),
    b"Traceback (most recent call last):\n",
    b"RuntimeError: CUDA error: uncorrectable ECC error encountered\n",
])


def gpu_fault_watch(store, lang: str = "en", **policy):
    """Job 88400 dies of an uncorrectable ECC error on node gpu-b12 (its NodeList)."""
    from bot.app import build_watcher

    slurm = FakeSlurm()
    sftp = FakeSFTP()
    ctx = make_context(store, slurm, sftp=sftp, clock=lambda: T0 + 2000, lang=lang,
                       policy={"backoff_s": 0, **policy})
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88400", now=T0)
    store.watched_jobs.add("dev", "88400", now=T0, chain_id=chain.id)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    sftp.append(LOG, GPU_LOG)
    slurm.add(88400, state="FAILED", exit_code=1, signal=0, stdout_path=LOG, name="mix",
              node="gpu-b12", start_time=T0, end_time=T0 + 1300)
    posted: list[tuple[str, list, str]] = []
    real_reply = recorded(ctx).post_reply

    def capture(chain_id, key, blocks, text):
        posted.append((key, blocks, text))
        return real_reply(chain_id, key, blocks, text)

    recorded(ctx).post_reply = capture  # type: ignore[method-assign]
    w = build_watcher(ctx, "dev")
    w.tick(T0 + 1310)
    return ctx, slurm, chain.id, w, posted


def test_a_gpu_fault_is_resubmitted_automatically_without_its_node(store):
    ctx, slurm, chain_id, w, posted = gpu_fault_watch(store, auto_resubmit=True)
    w.tick(T0 + 1320)
    [spec] = slurm.submits()
    assert spec.exclude == "gpu-b12"
    first, second = store.attempts.for_chain(chain_id)
    assert (first.cause, first.excluded_nodes) == ("gpu_failure", None)
    assert (second.job_id, second.excluded_nodes) == ("88887", "gpu-b12")
    final = next(text for key, _, text in posted if key == "dev:88400:final")
    assert "gpu_failure is retryable: resubmitting" in final
    assert "on another node (--exclude=gpu-b12)" in final
    shown = str(next(blocks for key, blocks, _ in posted if key == "dev:88400:final"))
    assert "On node *gpu-b12*" in shown  # the incident's own line


def test_an_approved_gpu_fault_resubmit_leaves_the_node_out(store):
    ctx, slurm, chain_id, w, posted = gpu_fault_watch(store)
    assert slurm.submits() == []  # not automatic: a prompt
    key, blocks, text = posted[-1]
    assert key == "dev:88400:final" and "on another node (--exclude=gpu-b12)" in text
    resubmit = next(b for b in _buttons(blocks) if b["action_id"] == ActionId.RESUBMIT)
    assert resubmit["text"]["text"] == "Resubmit without gpu-b12 from scratch"  # none saved
    result = handle_click(ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1400)
    assert result.status == "done", result
    assert [s.exclude for s in slurm.submits()] == ["gpu-b12"]
    assert store.attempts.for_chain(chain_id)[-1].excluded_nodes == "gpu-b12"
    assert "without node gpu-b12 (--exclude)" in present(result.update_text)


def test_a_korean_gpu_fault_prompt_says_the_node_in_korean(store):
    ctx, slurm, chain_id, w, posted = gpu_fault_watch(store, lang="ko")
    key, blocks, text = posted[-1]
    assert "다른 노드에서 (--exclude=gpu-b12) 재제출을 제안합니다" in text
    resubmit = next(b for b in _buttons(blocks) if b["action_id"] == ActionId.RESUBMIT)
    assert resubmit["text"]["text"] == "gpu-b12 빼고 처음부터 재제출"  # no checkpoint saved
