"""The watcher tick driven by hand: a Watcher over the fakes, a real store and catalogue, and
story 88154's log (tests/fixtures/stories) as what the job prints."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from fakes import T0, FakeCheckpoints, FakeResubmit, FakeSFTP, FakeSlurm, RecordingEventSink

from bot.core.catalogue import Catalogue
from bot.core.policy import PolicyParams
from bot.core.slurm.records import JobRecord
from bot.services.ports import BotContext
from bot.services.watch.events import EventSink, WatchEvent
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Chain, Store

STORY = Path(__file__).resolve().parents[1] / "fixtures" / "stories" / "88154.log"
CLUSTER = "dev"
LOG = "/scratch/mix/logs/mix-88154.out"

WatchEnv = tuple[Store, FakeSlurm, FakeSFTP, RecordingEventSink]


@cache
def catalogue() -> Catalogue:
    return Catalogue.load()


def count_reads(monkeypatch: Any, table: Any, method: str) -> list[int]:
    """The chain ids `table.method(chain_id)` is called with from now on (the store still
    answers)."""
    reads: list[int] = []
    read = getattr(table, method)

    def counted(chain_id: int) -> Any:
        reads.append(chain_id)
        return read(chain_id)

    monkeypatch.setattr(table, method, counted)
    return reads


def head_line(event: WatchEvent, lang: str = "en") -> str:
    """The line a run thread in `lang` shows first for the watcher's `event` (an incident's
    head line, a note), as ThreadEvents words it through the one renderer, in a thread of its
    own; the owners it mentions left out."""
    from fakes import make_context, recorded  # a whole bot's context: only where a thread is shown

    with Store.open("sqlite://") as store:
        ctx = make_context(store, clock=lambda: T0, lang=lang)
        chain = store.chains.create(recipe="mix", cluster=CLUSTER, job_name="mix", now=T0)
        recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
        ThreadEvents(ctx).publish(replace(event, chain_id=chain.id, recipe="mix"))
        [said, *_] = [p[3] for p in recorded(ctx).posts if p[0] == "reply"]
        return said.removeprefix("<@U0OWNER> ")


def make_watcher(store: Store, slurm: FakeSlurm, sftp: FakeSFTP, sink: EventSink,
                 **kw: Any) -> Watcher:
    """A Watcher of cluster `dev` (3 unreachable ticks; backoff 60 s unless `policy` says)."""
    kw.setdefault("policy", PolicyParams(backoff_s=60))
    return Watcher(CLUSTER, slurm=slurm, reader=lambda: sftp, store=store, catalogue=catalogue(),
                   sink=sink, unreachable_ticks=3, **kw)


def add_job(store: Store, job_id: int, *, recipe: str = "mix",
            attempts_before: tuple[tuple[int, int], ...] = ()) -> Chain:
    """A chain whose last attempt is `job_id`, watched since T0; `attempts_before` are
    (job id, last iteration) of earlier FAILED attempts."""
    chain = store.chains.create(recipe=recipe, cluster=CLUSTER, job_name=recipe, now=T0)
    for jid, last in attempts_before:
        a = store.attempts.record(chain_id=chain.id, job_id=str(jid), now=T0).attempt
        store.attempts.update(a.id, last_iter=last, state="FAILED")
    store.attempts.record(chain_id=chain.id, job_id=str(job_id), now=T0)
    store.watched_jobs.add(CLUSTER, str(job_id), now=T0, chain_id=chain.id)
    return chain


def running(job_id: int, **kw: Any) -> JobRecord:
    """A RUNNING job started at T0 writing LOG, with a 950 GiB memory limit."""
    return JobRecord(job_id=job_id, state="RUNNING", stdout_path=LOG, start_time=T0,
                     mem_limit_bytes=950 << 30, **kw)


def story_lines() -> list[bytes]:
    return STORY.read_bytes().splitlines(keepends=True)


def stalled_thread(ctx: BotContext, slurm: FakeSlurm, sftp: FakeSFTP | None = None
                   ) -> tuple[Chain, FakeSFTP, bytes]:
    """Story 88154 up to its stall, in a run thread of `ctx`: its chain (job 88154 RUNNING on
    `slurm`, watched, the thread's root posted), an SFTP (`sftp`, else a new one) holding its
    log up to iter 3470, and the rest of the log (to end the job with)."""
    chain = add_job(ctx.store, 88154)
    assert ctx.sink is not None
    ctx.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    slurm.add(88154, state="RUNNING", stdout_path=LOG, start_time=T0, name="mix")
    lines = story_lines()
    stall = next(i for i, x in enumerate(lines) if b"iter: 3470/" in x)
    sftp = sftp or FakeSFTP()
    sftp.append(LOG, b"".join(lines[: stall + 1]))
    return chain, sftp, b"".join(lines[stall + 1:])


def timed_out(env: tuple[Store, FakeSlurm, FakeSFTP, EventSink], resubmit: FakeResubmit,
              **policy: Any) -> tuple[Watcher, Chain]:
    """Job 88300 of an `auto` recipe, resumed from iteration 1200, hit its time limit at
    T0 + 1300 after 300 log lines without saving a newer checkpoint (a retry, charged); a
    watcher that may resubmit it (from iteration 1200) through `resubmit`."""
    store, slurm, sftp, sink = env
    chain = add_job(store, 88300, recipe="auto")
    attempt = store.attempts.get_by_job("88300")
    assert attempt is not None
    store.attempts.update(attempt.id, start_iter=1200)
    sftp.append(LOG, b"".join(story_lines()[:300]))
    slurm.records[88300] = JobRecord(job_id=88300, state="TIMEOUT", exit_code=0, signal=0,
                                     stdout_path=LOG, start_time=T0, end_time=T0 + 1300)
    w = make_watcher(store, slurm, sftp, sink, resubmit=resubmit,
                     checkpoint=FakeCheckpoints(1200),
                     policy=PolicyParams(auto_resubmit=True, backoff_s=60, **policy))
    return w, chain
