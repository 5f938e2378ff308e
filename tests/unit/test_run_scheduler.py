"""`trainbot run`'s composition (bot.app): one production watcher job per configured cluster,
on real APScheduler objects (never started: jobs are inspected and their functions called
directly), and the catalogue loaded once."""

from __future__ import annotations

import datetime
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from apscheduler.triggers.interval import IntervalTrigger
from fakes import FakeSlurm, RecordingMessageSink, fake_slurm, make_context
from slack_sdk import WebClient

import bot.app
from bot.app import build_context, build_scheduler, tick_interval
from bot.cli import EXIT_USAGE, build_parser
from bot.cli import run as run_cmd
from bot.cluster.errors import ClusterUnavailable
from bot.config import Config
from bot.core.catalogue import Catalogue, CatalogueError
from bot.services.ports import BotContext
from bot.store import Store

SITE_CATALOGUE = """\
schema: 1
classes:
  site_fs_quota:
    title: Lustre quota exceeded
    explanation: The job's project ran out of its Lustre quota.
    action: stop
    retryable: false
    charges_budget: false
    priority: 95
    hint: Free space or ask for more quota.
    patterns:
      primary:
        - 'Disk quota exceeded'
"""


def config_data(extra: list[str] | None = None) -> dict[str, Any]:
    cluster = {"host": "127.0.0.1", "port": 2222, "user": "slurmci", "key_file": "/nonexistent"}
    recipe = {"sbatch_script": "/home/slurmci/train.sbatch", "owners": ["U0OWNER"]}
    return {
        "clusters": {"alpha": cluster, "beta": cluster},
        "recipes": {
            "slow": {**recipe, "cluster": "alpha"},
            "fast": {**recipe, "cluster": "beta", "policy": {"tick_s": 5}},
        },
        "policy": {"tick_s": 30},
        "catalogue": {"extra": extra or []},
    }


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    yield s
    s.close()


def context(store: Store) -> BotContext:
    return make_context(store, {"alpha": FakeSlurm(), "beta": FakeSlurm()},
                        config=Config.model_validate(config_data()), slack=False)


def test_one_watcher_job_per_cluster_with_the_policy_interval_and_options(store) -> None:
    ctx = context(store)
    scheduler = build_scheduler(ctx)
    jobs = {job.id: job for job in scheduler.jobs()}
    assert sorted(jobs) == ["holds", "probes", "prompts", "submits", "watch:alpha", "watch:beta"]
    assert str(scheduler.timezone) == "UTC"
    for name, seconds in (("watch:alpha", 30), ("watch:beta", 5)):
        job = jobs[name]
        assert isinstance(job.trigger, IntervalTrigger)
        assert job.trigger.interval.total_seconds() == seconds, name
        assert str(job.trigger.timezone) == "UTC"
        assert job.coalesce is True
        assert job.max_instances == 1


def test_the_holds_job_runs_every_policy_tick(store) -> None:
    jobs = {job.id: job for job in build_scheduler(context(store)).jobs()}
    assert jobs["holds"].trigger.interval.total_seconds() == 30
    assert jobs["holds"].coalesce is True and jobs["holds"].max_instances == 1


def test_the_lost_submits_job_runs_every_policy_tick(store) -> None:
    """`submits` (bot.services.runs.recover_submits_in_flight) looks up a person's submit
    the bot died in, under its own lease, as often as the prompts are followed up."""
    jobs = {job.id: job for job in build_scheduler(context(store)).jobs()}
    assert jobs["submits"].trigger.interval.total_seconds() == 30
    assert jobs["submits"].coalesce is True and jobs["submits"].max_instances == 1


def test_the_prompts_follow_up_job_runs_every_policy_tick(store) -> None:
    jobs = {job.id: job for job in build_scheduler(context(store)).jobs()}
    assert jobs["prompts"].trigger.interval.total_seconds() == 30
    assert jobs["prompts"].coalesce is True and jobs["prompts"].max_instances == 1


def test_the_shortest_tick_a_recipe_on_the_cluster_asks_for_wins() -> None:
    config = Config.model_validate(config_data())
    assert tick_interval(config, "alpha") == 30  # `slow` keeps the default
    assert tick_interval(config, "beta") == 5  # `fast` asks for 5 s


def test_each_job_ticks_its_own_clusters_watcher_only(store) -> None:
    ctx = context(store)
    chain = store.chains.create(recipe="fast", cluster="beta", job_name="fast", now=1.0)
    store.attempts.record(chain_id=chain.id, job_id="4242", now=1.0)
    store.watched_jobs.add("beta", "4242", now=1.0, chain_id=chain.id)
    scheduler = build_scheduler(ctx, clock=lambda: 100.0)
    jobs = {job.id: job for job in scheduler.jobs()}
    jobs["watch:beta"].func()
    jobs["watch:alpha"].func()
    assert fake_slurm(ctx, "beta").calls == [("jobs", [4242])]
    assert fake_slurm(ctx, "alpha").calls == []  # nothing watched there: no Slurm call


def test_the_catalogue_is_loaded_once_with_the_sites_files_and_shared_by_the_watchers(
        tmp_path, monkeypatch) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(SITE_CATALOGUE)
    data = config_data(extra=[str(site)])
    data["store"] = {"url": f"sqlite:///{tmp_path / 'state.db'}"}
    loads: list[Any] = []
    real_load = Catalogue.load

    def counting_load(extra_paths: Any = ()) -> Catalogue:
        loads.append(list(extra_paths))
        return real_load(extra_paths)

    monkeypatch.setattr(Catalogue, "load", counting_load)
    watchers: dict[str, Any] = {}
    real_build = bot.app.build_watcher

    def spy(ctx: BotContext, cluster: str, **kw: Any) -> Any:
        watchers[cluster] = real_build(ctx, cluster, **kw)
        return watchers[cluster]

    monkeypatch.setattr(bot.app, "build_watcher", spy)
    ctx = build_context(Config.model_validate(data), client=WebClient(token="xoxb-test"))
    try:
        build_scheduler(ctx)
        assert "site_fs_quota" in ctx.catalogue.classes
        assert set(watchers) == {"alpha", "beta"}
        assert all(w.catalogue is ctx.catalogue for w in watchers.values())
        assert loads == [[str(site)]]
    finally:
        ctx.clusters.close()
        ctx.store.close()


def test_a_thread_writer_built_on_the_store_takes_the_slack_posters_place(tmp_path,
                                                                          monkeypatch) -> None:
    """build_context(threads=), as `trainbot demo` builds its console's context: the writer is
    built on the context's own store and posts the threads, with charts; no Slack client is
    made (no token needed) and no Home tabs are published."""
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    data = config_data()
    data["store"] = {"url": f"sqlite:///{tmp_path / 'state.db'}"}
    built: list[Any] = []

    def console(store: Store) -> RecordingMessageSink:
        built.append(RecordingMessageSink(store))
        return built[-1]

    ctx = build_context(Config.model_validate(data), threads=console)
    try:
        assert [w.store for w in built] == [ctx.store] and ctx.sink is built[0]
        assert ctx.charts is not None and ctx.home is None
    finally:
        ctx.clusters.close()
        ctx.store.close()


def test_a_missing_site_catalogue_fails_at_startup(tmp_path) -> None:
    data = config_data(extra=[str(tmp_path / "nope.yaml")])
    data["store"] = {"url": f"sqlite:///{tmp_path / 'state.db'}"}
    with pytest.raises(CatalogueError, match="nope.yaml"):
        build_context(Config.model_validate(data), client=WebClient(token="xoxb-test"))


def test_trainbot_run_exits_2_naming_a_bad_site_catalogue(tmp_path, monkeypatch, capsys
                                                         ) -> None:
    data = config_data(extra=[str(tmp_path / "missing-site.yaml")])
    data["store"] = {"url": f"sqlite:///{tmp_path / 'state.db'}"}
    path = tmp_path / "trainbot.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test")
    args = build_parser(only="run").parse_args(["run", "--config", str(path)])
    assert run_cmd.run(args) == EXIT_USAGE
    assert "missing-site.yaml" in capsys.readouterr().err


def wait_until(condition: Any, what: str, timeout_s: float = 30.0) -> None:
    """Poll `condition` until true; a hang guard (the ticks under test are an hour apart)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_started_bot_watches_at_once_then_every_tick(store) -> None:
    """A bot (started again) asks Slurm about its watched jobs right at its start, not one
    tick later: with hourly ticks the first squeue still comes at once, each cluster's, and
    the next is one tick after the first."""
    data = config_data()
    data["policy"] = {"tick_s": 3600}
    del data["recipes"]["fast"]["policy"]
    ctx = make_context(store, {"alpha": FakeSlurm(), "beta": FakeSlurm()},
                       config=Config.model_validate(data), slack=False)
    for cluster, recipe, job in (("alpha", "slow", "1"), ("beta", "fast", "4242")):
        chain = store.chains.create(recipe=recipe, cluster=cluster, job_name=recipe, now=1.0)
        store.attempts.record(chain_id=chain.id, job_id=job, now=1.0)
        store.watched_jobs.add(cluster, job, now=1.0, chain_id=chain.id)
    scheduler = build_scheduler(ctx)
    hour = datetime.timedelta(hours=1)
    started = datetime.datetime.now(datetime.UTC)
    scheduler.start()
    try:
        alpha, beta = fake_slurm(ctx, "alpha"), fake_slurm(ctx, "beta")
        wait_until(lambda: alpha.calls and beta.calls, "a watcher's first tick waited")
        jobs = {job.id: job for job in scheduler.jobs()}
        wait_until(lambda: all(jobs[f"watch:{c}"].next_run_time > started + hour / 2
                               for c in ("alpha", "beta")), "no next tick scheduled")
        ticked = datetime.datetime.now(datetime.UTC)
        for cluster in ("alpha", "beta"):  # the first tick was between started and ticked
            assert started + hour <= jobs[f"watch:{cluster}"].next_run_time <= ticked + hour
    finally:
        scheduler.stop()
    assert alpha.calls == [("jobs", [1])] and beta.calls == [("jobs", [4242])]


class _UnansweringSlurm(FakeSlurm):
    """A cluster whose login node does not answer: `jobs` hangs until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.let_go = threading.Event(), threading.Event()

    def jobs(self, ids: Any) -> dict[int, Any]:
        self.entered.set()
        self.let_go.wait(30)
        raise ClusterUnavailable("ssh to alpha timed out")


def test_a_cluster_that_does_not_answer_never_delays_another_clusters_tick(store) -> None:
    """Each cluster's tick runs on its own thread: while alpha's hangs in its Slurm call,
    beta's tick starts and ends (no lock, lease or store transaction is shared)."""
    alpha, beta = _UnansweringSlurm(), FakeSlurm()
    ctx = make_context(store, {"alpha": alpha, "beta": beta},
                       config=Config.model_validate(config_data()), slack=False)
    for cluster, recipe, job in (("alpha", "slow", "1"), ("beta", "fast", "4242")):
        chain = store.chains.create(recipe=recipe, cluster=cluster, job_name=recipe, now=1.0)
        store.attempts.record(chain_id=chain.id, job_id=job, now=1.0)
        store.watched_jobs.add(cluster, job, now=1.0, chain_id=chain.id)
    scheduler = build_scheduler(ctx)
    scheduler.start()  # every job runs at once (the first tick is at the start)
    try:
        assert alpha.entered.wait(10), "alpha's tick never started"
        deadline = time.monotonic() + 10
        while not beta.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        assert beta.calls == [("jobs", [4242])], "beta's tick waited for alpha's"
        assert not alpha.let_go.is_set()  # alpha still hangs
    finally:
        alpha.let_go.set()
        scheduler.stop()
