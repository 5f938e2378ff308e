"""In-memory stand-ins for the bot's adapters, shared by every test: Slurm, the cluster
sessions, the SSH runner, SFTP, the thread writer (message sink), the watcher's event sink and
its resubmit step. Each records what it was asked, so tests assert on calls, not on mocks.
The fake cluster (Slurm, the SSH runner, SFTP, the cluster sessions) is support/fake_cluster.py,
re-exported here: tests import every fake from this module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypeVar

from support.fake_cluster import (
    CONTROLLER_DOWN,
    INSTANT,
    T0,
    Answer,
    AnswerLostSlurm,
    FakeClusters,
    FakeRunner,
    FakeSFTP,
    FakeSlurm,
    LocalTreeSFTP,
    RunCall,
    SstatSlurm,
    program_of,
)

from bot.charts.series import SeriesCharts
from bot.cluster.pyspy import remote_path
from bot.config import Config
from bot.core.catalogue import Catalogue
from bot.core.checkpoints import Checkpoint, iteration_of
from bot.services.ports import (
    BotContext,
    ClusterSessions,
    HomePublisher,
    PostError,
    ThreadWriter,
    sending,
)
from bot.services.pyspy_placements import PySpyPlacements
from bot.slack.render import TemplateRenderer
from bot.store import Store

T = TypeVar("T")

# every fake of tests, the fake cluster's (support/fake_cluster.py) re-exported
__all__ = [
    "CONTROLLER_DOWN", "INSTANT", "T0", "Answer", "AnswerLostSlurm", "FakeClusters", "FakeRunner",
    "FakeSFTP", "FakeSlurm", "LocalTreeSFTP", "RunCall", "SstatSlurm", "program_of",
    "RecordingMessageSink", "RecordingHomePublisher", "RecordingEventSink", "FakeCheckpoints",
    "FakeResubmit", "present", "make_config", "failed_run", "make_context", "fake_slurm", "homes",
    "writer", "recorded", "adopt",
]


# --------------------------------------------------------------------------- sinks


class RecordingMessageSink:
    """A thread writer (bot.services.ports.ThreadWriter) remembering posts; post_root marks
    the root posted in the store, as the Slack poster does. The next `fail_next` replies
    fail as a post Slack refused does (PostError, nothing posted)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.posts: list[tuple[str, int, str, str]] = []  # (kind, chain, key, text)
        self.blocks: dict[str, list] = {}  # key -> the blocks last posted or updated
        self.fail_next = 0

    if TYPE_CHECKING:  # a ThreadWriter to the type checker, but without these two when run:
        # the services look them up with getattr (a writer may lack them), so nothing here
        # updates a root or uploads a chart
        def update_root(self, chain_id: int, blocks: list, text: str) -> None: ...

        def upload_file(self, chain_id: int, key: str, data: bytes, filename: str,
                        title: str) -> str: ...

    def post_root(self, chain_id: int, channel: str, blocks: list, text: str) -> str:
        key = f"chain:{chain_id}:root"
        self.store.slack_posts.record_intent(key, channel=channel, kind="root",
                                             chain_id=chain_id, now=0)
        sending()  # as the Slack poster says before its request
        self.store.slack_posts.record_posted(key, ts=f"{chain_id}.0001", now=0)
        self.posts.append(("root", chain_id, key, text))
        return f"{chain_id}.0001"

    def post_reply(self, chain_id: int, key: str, blocks: list, text: str) -> str:
        """Post `key` once, as the Slack poster does (bot.slack.poster: a key the store has
        posted is never sent again, its ts returned; the intent is stored before sending)."""
        posted = self.store.slack_posts.get(key)
        if posted is not None and posted.posted and posted.ts is not None:
            return posted.ts
        if posted is not None and self.look_up(key):  # an intent Slack has: not sent again
            found = self.store.slack_posts.get(key)
            assert found is not None and found.ts is not None
            return found.ts
        root = self.store.slack_posts.get(f"chain:{chain_id}:root")
        self.store.slack_posts.record_intent(key, channel=root.channel if root else "",
                                             kind="reply", chain_id=chain_id, now=0)
        sending()  # as the Slack poster says before its request
        if self.fail_next:
            self.fail_next -= 1
            raise PostError(f"Slack chat.postMessage failed for {key!r}: service_unavailable")
        self.posts.append(("reply", chain_id, key, text))
        self.blocks[key] = blocks
        ts = f"{chain_id}.{len(self.posts):04d}"
        self.store.slack_posts.record_posted(key, ts=ts, now=0)
        return ts

    def look_up(self, key: str) -> bool:
        """Whether "Slack" (the posts made) has `key`, as the Slack poster looks an intent up
        (bot.slack.poster.SlackPoster.look_up: found, it is recorded posted)."""
        post = self.store.slack_posts.get(key)
        if post is None or post.posted:
            return post is not None
        made = [i for i, p in enumerate(self.posts) if p[0] == "reply" and p[2] == key]
        if not made:
            return False
        self.store.slack_posts.record_posted(key, ts=f"{post.chain_id}.{made[0] + 1:04d}",
                                             now=0)
        return True

    def post_at_most_s(self) -> float:
        return 0.0  # a post is a list's append

    def update_reply(self, chain_id: int, key: str, blocks: list, text: str) -> None:
        """Rewrite a reply posted under `key`; nothing when it was never posted (as the Slack
        poster, which says its chat.update goes out before its request)."""
        if any(p[0] == "reply" and p[2] == key for p in self.posts):
            sending()  # as the Slack poster says before its request
            self.posts.append(("update", chain_id, key, text))
            self.blocks[key] = blocks

    def texts(self) -> list[str]:
        return [p[3] for p in self.posts]


class RecordingHomePublisher:
    """A Home tab publisher (bot.services.ports.HomePublisher) remembering each publish."""

    def __init__(self) -> None:
        self.published: list[tuple[str, list]] = []  # (user, blocks)

    def publish_home(self, user_id: str, blocks: list) -> None:
        sending()
        self.published.append((user_id, blocks))

    def users(self) -> list[str]:
        return [user for user, _ in self.published]


class RecordingEventSink:
    """The watcher's EventSink remembering events; `fail_next` publishes fail (Slack down)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.changed: list[int] = []  # chain_changed calls (root rewrites), in order
        self.progressed: list[int] = []  # progress_changed calls (root rewrites), in order
        self.fail_next = 0

    def publish(self, event: Any) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("slack is down")
        self.events.append(event)

    def chain_changed(self, chain_id: int) -> None:
        self.changed.append(chain_id)

    def progress_changed(self, chain_id: int) -> None:
        self.progressed.append(chain_id)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


# --------------------------------------------------------------------------- checkpoint lookup


@dataclass
class FakeCheckpoints:
    """The watcher's checkpoint lookup (`Watcher(checkpoint=…)`): every recipe's latest
    complete checkpoint is `found` (an iteration N: the dir `iter_000000N`; a name: a pointer
    naming that dir, its iteration whatever its name says; None: none). A lookup raises
    `fails` when set (an SFTP error), and waits for `hangs` to be set (a stuck filesystem; at
    most 120 s) before it answers. Records each lookup as (recipe, task)."""

    found: int | str | None = None
    fails: Exception | None = None
    hangs: threading.Event | None = None
    calls: list[tuple[str, int | None]] = field(default_factory=list)

    def __call__(self, recipe: str, task: int | None = None,
                 abandon: Any = None) -> Checkpoint | None:
        self.calls.append((recipe, task))
        if self.fails is not None:
            raise self.fails
        if self.hangs is not None:
            self.hangs.wait(120)
        if self.found is None:
            return None
        if isinstance(self.found, int):
            return Checkpoint(f"/ck/{recipe}/iter_{self.found:07d}", self.found, "scan")
        return Checkpoint(f"/ck/{recipe}/{self.found}", iteration_of(self.found), "pointer")


# --------------------------------------------------------------------------- resubmit step


@dataclass
class FakeResubmit:
    """The watcher's resubmit step: records (recipe, chain, resume_from); the first
    `fail_first` calls fail as sbatch would, the others add the new job (90001, …) as
    submit_recipe does: an attempt of the chain (resumed from the decision's checkpoint, at
    FakeCheckpoints' path) and a watched job of `cluster`."""

    store: Store
    fail_first: int = 0
    cluster: str = "dev"
    calls: list[tuple[str, int, int | None]] = field(default_factory=list)

    def __call__(self, recipe: str, chain_id: int, decision: Any, *, intent: str) -> int:
        self.calls.append((recipe, chain_id, decision.resume_from))
        if self.fail_first:
            self.fail_first -= 1
            raise RuntimeError("sbatch: error: Slurm temporarily unable to accept job")
        new_id = 90000 + len(self.calls)
        path = f"/ck/{recipe}/{decision.resume_checkpoint}" if decision.resume_checkpoint \
            else None  # where FakeCheckpoints puts it
        self.store.attempts.record(chain_id=chain_id, job_id=str(new_id), now=T0,
                                   start_iter=decision.resume_from, checkpoint_path=path,
                                   charge_retry=decision.charged)
        self.store.watched_jobs.add(self.cluster, str(new_id), now=T0 + 1300,  # after the failure
                                    chain_id=chain_id)
        return new_id


# --------------------------------------------------------------------------- a context of fakes


def present(value: T | None) -> T:
    """`value`, which the test expects there (a store row it made, a match): not None."""
    assert value is not None
    return value


def make_config(*, slack_lang: str = "en", **recipe_over: Any) -> Config:
    """One cluster `dev`, one recipe `mix` (with `recipe_over` on top), a Slack channel and the
    groups `robots` (submitters) and `leads` (approvers); the bot speaks `slack_lang` (a
    recipe's own `lang=` goes in `recipe_over`)."""
    recipe = {
        "cluster": "dev",
        "sbatch_script": "/home/slurmci/train.sbatch",
        "partition": "debug",
        "account": "root",
        "owners": ["U0OWNER"],
        "submitters": ["robots"],
        "approvers": ["leads"],
        "channel": "training",
        "overridable": {"lr": "float", "target_iter": "int"},
        **recipe_over,
    }
    return Config.model_validate({
        "clusters": {"dev": {"host": "127.0.0.1", "port": 2222, "user": "slurmci",
                             "key_file": "/nonexistent"}},
        "recipes": {"mix": recipe},
        "slack": {"channels": {"training": "C0TRAIN"}, "default_channel": "training",
                  "approvers": ["leads"], "lang": slack_lang,
                  "groups": {"robots": ["U0ALICE"], "leads": ["W0LEAD", "U0APPR"]}},
    })


def failed_run(ctx: BotContext, *, now: float, channel: str, job_id: str = "88154") -> int:
    """Run `mix` whose job `job_id` failed before `now`: a chain (the id returned) with its
    attempt and its thread's root in `channel`."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=now - 100)
    attempt = ctx.store.attempts.record(chain_id=chain.id, job_id=job_id, now=now - 100)
    ctx.store.attempts.update(attempt.attempt.id, state="FAILED", result="FAILED")
    assert ctx.sink is not None
    ctx.sink.post_root(chain.id, channel, [], "mix")
    return chain.id


def make_context(store: Store, slurm: FakeSlurm | Mapping[str, FakeSlurm] | None = None, *,
                 sftp: FakeSFTP | None = None, clusters: ClusterSessions | None = None,
                 config: Config | None = None, slack: bool = True,
                 sink: ThreadWriter | None = None, charts: bool = True,
                 home: HomePublisher | None = None, clock: Callable[[], float] = time.time,
                 slack_lang: str = "en", **recipe_over: Any) -> BotContext:
    """The one BotContext of tests, as bot.app.build_context has it but with fakes: `config`
    (default: make_config() in `slack_lang` with `recipe_over` on its recipe) and its catalogue
    (the packaged one and `catalogue.extra`), the store, FakeClusters of `slurm` (a new
    FakeSlurm by default; one per cluster name from a mapping) and `sftp`, or `clusters` a
    test built itself.
    The thread writer is `sink` (default: a RecordingMessageSink, read back with recorded()),
    with charts unless `charts` is False, and `home` publishes Home tabs (default: a
    RecordingHomePublisher, read back with homes()); without `slack`, none of them (what would
    be posted is logged), as bot.app.build_context without Slack. `clock` is the handlers'
    clock.
    Without an SSH runner (FakeClusters' has_ssh), trainbot's py-spy counts as placed on
    every cluster already (`ctx.pyspy`, as a bot that ran before leaves it), so a watcher
    built on the context (bot.app.build_watcher: its forensics begin the placement at the
    first poll) does not try commands the test has none of; over a runner the test gave, the
    placement runs and a failure of it is logged, as in production."""
    if config is not None and (recipe_over or slack_lang != "en"):
        raise TypeError("make_context: recipe fields and slack_lang go to make_config, "
                        "not beside a config")
    if clusters is not None and (slurm is not None or sftp is not None):
        raise TypeError("make_context: give `clusters`, or `slurm` and `sftp`, not both")
    if not slack and sink is not None:
        raise TypeError("make_context: a thread writer without Slack")
    config = config or make_config(slack_lang=slack_lang, **recipe_over)
    if not slack and home is not None:
        raise TypeError("make_context: a Home tab publisher without Slack")
    if slack and sink is None:
        sink = RecordingMessageSink(store)
    if slack and home is None:
        home = RecordingHomePublisher()
    if clusters is None:
        clusters = FakeClusters(slurm or FakeSlurm(), sftp)
    catalogue = Catalogue.load(config.catalogue.extra)
    placed = {} if getattr(clusters, "has_ssh", True) else {
        name: remote_path("/home/slurmci", metadata.version("py-spy")) for name in config.clusters}
    return BotContext(config=config, store=store, clusters=clusters, sink=sink, home=home,
                      renderer=TemplateRenderer(config.redactor()), catalogue=catalogue,
                      charts=SeriesCharts(catalogue) if sink is not None and charts else None,
                      clock=clock, pyspy=PySpyPlacements(
                          placed, monotonic=time.monotonic if clock is time.time else clock))


def fake_slurm(ctx: BotContext, cluster: str = "dev") -> FakeSlurm:
    """`ctx`'s Slurm of `cluster`: a FakeSlurm (make_context's)."""
    slurm = ctx.clusters.slurm(cluster)
    assert isinstance(slurm, FakeSlurm), slurm
    return slurm


def homes(ctx: BotContext) -> RecordingHomePublisher:
    """`ctx`'s Home tab publisher: the RecordingHomePublisher make_context gives by default."""
    assert isinstance(ctx.home, RecordingHomePublisher), ctx.home
    return ctx.home


def writer(ctx: BotContext) -> ThreadWriter:
    """`ctx`'s thread writer (a context made with Slack has one)."""
    assert ctx.sink is not None
    return ctx.sink


def recorded(ctx: BotContext) -> RecordingMessageSink:
    """`ctx`'s thread writer: the RecordingMessageSink make_context gives by default."""
    assert isinstance(ctx.sink, RecordingMessageSink), ctx.sink
    return ctx.sink


def adopt(ctx: BotContext, job_id: int, *, actor: str, now: float,
          channel: str = "C0TRAIN") -> int:
    """`/train watch JOB` by `actor`: trainbot adopts a job it did not submit; its chain id."""
    from bot.core.train_grammar import Watch
    from bot.services.train import execute

    reply = execute(ctx, Watch(job_id), actor=actor, channel=channel, now=now)
    assert reply.chain_id is not None, reply.text
    return reply.chain_id
