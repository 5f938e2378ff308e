"""One watcher per cluster, even when a tick is slow (issue 12, item 7).

Two replicas on one database (SQLite, and the dev cluster's PostgreSQL: `store_url`), each
with the production scheduler and watcher (bot.app.build_scheduler) over the fakes. Job 88300
hit its time limit: the tick posts the incident, resubmits it (sbatch) and says so. Replica A's
tick is held up past its lease's TTL while replica B takes the cluster over and does that
work; when A goes on, the database refuses its side effects (the lease's epoch moved): each
action is made by one replica, never by both. A side effect that is itself slow (Slack 429
waits) keeps its lease, so meanwhile no other replica acts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakes import (
    T0,
    FakeClusters,
    FakeRunner,
    FakeSFTP,
    FakeSlurm,
    RecordingMessageSink,
    homes,
    make_config,
    make_context,
    present,
    writer,
)
from support.watcher import LOG, story_lines

import bot.services.watch.resubmit as resubmit_module
from bot.app import build_scheduler, tick_interval
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sbatch import SubmitSpec
from bot.core.tail import ReadRequest
from bot.services.fencing import FencedThreadWriter, fenced_context
from bot.services.leases import LeaseKeeper, lease_ttl
from bot.services.ports import BotContext, LeaseLost
from bot.store import Store

JOB = 88300
WATCH = "watch:dev"
CONFIG = make_config(policy={"auto_resubmit": True, "backoff_s": 0})
TTL = lease_ttl(tick_interval(CONFIG, "dev"))
WAIT_S = 10.0  # a real-time bound on each wait, so a broken test fails instead of hanging


class Gate:
    """Where a replica's thread is held up: `wait()` blocks the caller until `open()`."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._open = threading.Event()

    def wait(self) -> None:
        self.reached.set()
        assert self._open.wait(WAIT_S), "the gate was never opened"

    def open(self) -> None:
        self._open.set()


class SlowSlurm(FakeSlurm):
    """A Slurm whose `jobs` query (one squeue + sacct) hangs at `gate` when one is set."""

    gate: Gate | None = None

    def jobs(self, ids: Any) -> dict[int, JobRecord]:
        records = super().jobs(ids)
        if self.gate is not None:
            self.gate.wait()
        return records


class SlowSink(RecordingMessageSink):
    """A thread writer whose next reply waits at `gate` (Slack answering 429 for a while)."""

    gate: Gate | None = None

    def post_reply(self, chain_id: int, key: str, blocks: list, text: str) -> str:
        if self.gate is not None:
            gate, self.gate = self.gate, None
            gate.wait()
        return super().post_reply(chain_id, key, blocks, text)

    def replies(self) -> list[str]:
        return [key for kind, _, key, _ in self.posts if kind == "reply"]


class Replica:
    """One `trainbot run` replica: its own store handle, Slurm, SFTP, thread writer, lease
    keeper (holder `name`) and clock, and the production watcher job of cluster `dev`."""

    def __init__(self, url: str, name: str) -> None:
        self.name = name
        self.now = T0 + 1400
        self.store = Store.open(url)
        self.slurm = SlowSlurm({JOB: JobRecord(
            job_id=JOB, state="TIMEOUT", exit_code=0, signal=0, stdout_path=LOG,
            start_time=T0, end_time=T0 + 1300)},
            runner=FakeRunner({"squeue": (0, "", ""), "sacct": (0, "", "")}))
        sftp = FakeSFTP()
        sftp.append(LOG, b"".join(story_lines()[:300]))
        self.sink = SlowSink(self.store)
        ctx = make_context(self.store, self.slurm, sftp=sftp, config=CONFIG, sink=self.sink)
        self.home = homes(ctx)
        keeper = LeaseKeeper(self.store.leases, holder=name, renew_every_s=0.01)
        scheduler = build_scheduler(ctx, leases=keeper, clock=lambda: self.now)
        self.watch = {job.id: job for job in scheduler.jobs()}[WATCH].func
        self.thread: threading.Thread | None = None

    def tick_in_background(self) -> None:
        self.thread = threading.Thread(target=self.watch, name=f"replica {self.name}")
        self.thread.start()

    def join(self) -> None:
        assert self.thread is not None
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), f"replica {self.name}'s tick never ended"


@pytest.fixture
def replicas(store_url: str) -> Iterator[tuple[Replica, Replica]]:
    a, b = Replica(store_url, "A"), Replica(store_url, "B")
    chain = a.store.chains.create(recipe="mix", cluster="dev", job_name="mix",
                                  channel="C0TRAIN", now=T0)
    a.store.attempts.record(chain_id=chain.id, job_id=str(JOB), now=T0)
    a.store.watched_jobs.add("dev", str(JOB), now=T0, chain_id=chain.id)
    a.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    a.sink.posts.clear()
    a.store.home_viewers.record("U0ALICE", T0, ttl_s=3600.0)  # her team runs mix (either replica)
    yield a, b
    a.store.close()
    b.store.close()


def submitted_jobs(store: Store) -> list[str]:
    chain = store.chains.with_status("active")[0]
    return [a.job_id for a in store.attempts.for_chain(chain.id)]


def take_over(stale: Replica, other: Replica, hold_up: Callable[[Gate], None]) -> None:
    """`stale` ticks and is held up where `hold_up` puts a gate; meanwhile `other`, whose
    clock is past `stale`'s lease, ticks; then `stale` goes on, as late as `other`."""
    gate = Gate()
    hold_up(gate)
    stale.tick_in_background()
    assert gate.reached.wait(WAIT_S)
    other.now = stale.now + TTL + 1
    other.watch()
    stale.now = other.now + 1  # the held-up call took that long
    gate.open()
    stale.join()


def test_a_tick_held_up_in_a_slurm_query_past_the_ttl_acts_no_more_after_the_takeover(
        replicas, caplog) -> None:
    a, b = replicas
    caplog.set_level(logging.INFO)
    take_over(a, b, hold_up=lambda gate: setattr(a.slurm, "gate", gate))
    assert a.slurm.submits() == [] and a.sink.posts == [] and a.home.published == []
    assert len(b.slurm.submits()) == 1
    assert set(b.home.users()) == {"U0ALICE"}  # the viewer's tab refreshed by B alone
    assert b.sink.replies() == [f"dev:{JOB}:final", "resolution:88887",
                                f"dev:{JOB}:resubmitted"]
    assert submitted_jobs(a.store) == [str(JOB), "88887"]
    assert a.store.incidents.get(f"dev:{JOB}:resubmit").state == "done"
    assert a.store.leases.holder(WATCH) == "B"
    assert any(r.getMessage().startswith(f"scheduled job {WATCH} stopped: {WATCH}: the next "
                                         "step refused") for r in caplog.records)


def test_a_tick_frozen_just_before_its_sbatch_has_the_sbatch_refused_by_the_database(
        replicas, monkeypatch, caplog) -> None:
    """A claimed the resubmit and froze before its sbatch; B took the cluster over, found
    nothing submitted (squeue) and submitted once. A's late sbatch is refused."""
    a, b = replicas
    caplog.set_level(logging.INFO)

    def freeze_a(gate: Gate) -> None:
        def crashpoint(name: str, detail: str = "") -> None:
            if name == "resubmit_intent" and threading.current_thread() is a.thread:
                gate.wait()

        monkeypatch.setattr(resubmit_module, "crashpoint", crashpoint)

    take_over(a, b, hold_up=freeze_a)
    assert a.slurm.submits() == [] and len(b.slurm.submits()) == 1
    assert a.sink.replies() == [f"dev:{JOB}:final"]  # posted while A held the lease
    assert b.sink.replies() == ["resolution:88887", f"dev:{JOB}:resubmitted"]
    assert submitted_jobs(a.store) == [str(JOB), "88887"]
    assert a.store.incidents.get(f"dev:{JOB}:resubmit").state == "done"
    assert any("sbatch refused: this replica no longer holds the lease" in r.getMessage()
               for r in caplog.records)


def test_a_slow_post_keeps_its_lease_so_no_other_replica_acts_meanwhile(replicas) -> None:
    """A's first post waits out Slack's 429s for longer than the TTL: A keeps renewing the
    lease while it waits, so B stands by, and A alone carries the tick out."""
    a, b = replicas
    gate = Gate()
    a.sink.gate = gate
    a.tick_in_background()
    assert gate.reached.wait(WAIT_S)
    a.now += TTL + 60  # the wait outlasts the lease as taken at the start of the tick
    renewed = threading.Event()

    def renewed_since() -> bool:
        with a.store.engine.begin() as conn:
            expires = conn.exec_driver_sql("SELECT expires_at FROM leases").scalar_one()
        return expires >= a.now + TTL

    for _ in range(int(WAIT_S / 0.01)):
        if renewed_since():
            renewed.set()
            break
        threading.Event().wait(0.01)
    assert renewed.is_set(), "the lease was not renewed while the post waited"
    b.now = a.now + 1
    b.watch()
    gate.open()
    a.join()
    assert b.slurm.calls == [] and b.sink.posts == []
    assert len(a.slurm.submits()) == 1
    assert a.sink.replies() == [f"dev:{JOB}:final", "resolution:88887", f"dev:{JOB}:resubmitted"]


class AllWriter(RecordingMessageSink):
    """A thread writer with every ThreadWriter method."""

    def update_root(self, chain_id: int, blocks: list, text: str) -> None:
        self.posts.append(("update", chain_id, "root", text))

    def upload_file(self, chain_id: int, key: str, png: bytes, filename: str, title: str
                     ) -> str:
        self.posts.append(("chart", chain_id, key, title))
        return "F1"


SIDE_EFFECTS: dict[str, Callable[[BotContext], object]] = {
    "sbatch": lambda ctx: ctx.clusters.slurm("dev").submit(SubmitSpec(job_name="mix")),
    "scontrol hold": lambda ctx: ctx.clusters.slurm("dev").hold(4242),
    "scontrol release": lambda ctx: ctx.clusters.slurm("dev").release(4242),
    "scancel": lambda ctx: ctx.clusters.slurm("dev").cancel(4242),
    "a site's submit wrapper": lambda ctx: ctx.clusters.slurm("dev").runner.run(["submit.sh"]),
    "a remote command": lambda ctx: ctx.clusters.runner("dev").run(["scontrol", "hold", "1"]),
    "Slack post (root)": lambda ctx: writer(ctx).post_root(1, "C0TRAIN", [], "mix"),
    "Slack post (reply)": lambda ctx: writer(ctx).post_reply(1, "k", [], "text"),
    "Slack update": lambda ctx: writer(ctx).update_root(1, [], "text"),
    "Slack upload": lambda ctx: writer(ctx).upload_file(1, "k", b"png", "rss.png", "RSS"),
    "Slack Home tab publish": lambda ctx: present(ctx.home).publish_home("U0ALICE", []),
}


@pytest.mark.parametrize("what", list(SIDE_EFFECTS))
def test_every_side_effect_of_a_scheduled_job_is_refused_once_its_lease_moved(
        tmp_path, what) -> None:
    """The fenced ports (bot.services.fencing) in front of each side effect: made while the
    replica holds the lease; refused, and never reaching the cluster or Slack, after another
    replica took it over."""
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as store:
        slurm = FakeSlurm({4242: JobRecord(job_id=4242, state="PENDING")},
                          runner=FakeRunner(default=(0, "", "")))
        sink = AllWriter(store)
        store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)  # chain 1
        ctx = make_context(store, config=CONFIG, sink=sink,
                           clusters=FakeClusters(slurm, runner=slurm.runner))
        home = homes(ctx)
        now = [1000.0]
        keeper = LeaseKeeper(store.leases, holder="A")
        fenced = fenced_context(ctx, keeper.fence(WATCH, lambda: now[0]))
        assert keeper.holds(WATCH, now[0], every_s=60)
        SIDE_EFFECTS[what](fenced)  # held: made
        made = (len(slurm.calls), len(slurm.runner.calls), len(sink.posts), len(home.published))
        assert made != (0, 0, 0, 0)
        now[0] += TTL + 1
        assert LeaseKeeper(store.leases, holder="B").holds(WATCH, now[0], every_s=60)
        with pytest.raises(LeaseLost, match="refused"):
            SIDE_EFFECTS[what](fenced)
        assert (len(slurm.calls), len(slurm.runner.calls), len(sink.posts),
                len(home.published)) == made


def test_a_fenced_thread_writer_lacks_what_the_writer_lacks(tmp_path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as store:
        keeper = LeaseKeeper(store.leases, holder="A")
        writer = FencedThreadWriter(RecordingMessageSink(store), keeper.fence(WATCH, time.time))
        assert getattr(writer, "update_root", None) is None
        assert getattr(writer, "upload_file", None) is None
        assert callable(writer.post_reply)
        assert callable(writer.look_up)

        class Terminal:  # a writer with no look_up of its own
            def post_reply(self, chain_id: int, key: str, blocks: list, text: str) -> str:
                return "1.0"

        terminal = FencedThreadWriter(Terminal(), keeper.fence(WATCH, time.time))  # type: ignore[arg-type]
        assert getattr(terminal, "look_up", None) is None


def test_a_fenced_look_up_of_a_post_is_refused_once_the_lease_moved(tmp_path) -> None:
    """Whether a thread has a post the bot may have made (an intent) is a read: answered while
    the replica holds the lease, refused (LeaseLost, nothing recorded) once it moved."""
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as store:
        sink = RecordingMessageSink(store)
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
        sink.post_root(chain.id, "C0TRAIN", [], "mix")
        store.slack_posts.record_intent("note:1", channel="C0TRAIN", kind="reply",
                                        chain_id=chain.id, now=0)
        now = [1000.0]
        keeper = LeaseKeeper(store.leases, holder="A")
        writer = FencedThreadWriter(sink, keeper.fence(WATCH, lambda: now[0]))
        assert keeper.holds(WATCH, now[0], every_s=60)
        assert writer.look_up("note:1") is False  # Slack does not have it
        now[0] += TTL + 1
        assert LeaseKeeper(store.leases, holder="B").holds(WATCH, now[0], every_s=60)
        with pytest.raises(LeaseLost):
            writer.look_up("note:1")


def test_a_batched_file_read_renews_the_lease_and_is_refused_once_it_moved(tmp_path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as store:
        files = FakeSFTP()
        files.append(LOG, b"iter 1\n")
        ctx = make_context(store, sftp=files, config=CONFIG, slack=False)
        now = [1000.0]
        keeper = LeaseKeeper(store.leases, holder="A")
        fenced = fenced_context(ctx, keeper.fence(WATCH, lambda: now[0]))
        assert keeper.holds(WATCH, now[0], every_s=60)
        reader = fenced.clusters.tail_reader("dev")
        assert reader.read([ReadRequest(LOG)]).results[0].data == b"iter 1\n"
        now[0] += TTL + 1
        assert LeaseKeeper(store.leases, holder="B").holds(WATCH, now[0], every_s=60)
        with pytest.raises(LeaseLost):
            reader.read([ReadRequest(LOG)])
        assert files.batches == 1
