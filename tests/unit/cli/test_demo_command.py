"""`trainbot demo`'s pure parts: the checkout it needs, a config whose numbers tell the story
(leak warned before the stall, resumed attempt fits in memory), the attempts table."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes import present

from bot.cli import demo
from bot.config import Config
from bot.core.units import parse_size

CONNECTION = {"host": "127.0.0.1", "port": 2222, "user": "slurmci",
              "key_file": "/tmp/dev-cluster/ssh/id_ed25519",
              "known_hosts": "/tmp/dev-cluster/ssh/known_hosts", "partition": "debug",
              "home": "/home/slurmci"}
MIB = 1024**2


def test_the_checkout_is_found_from_the_source_tree_only(tmp_path: Path):
    assert demo.find_checkout() == Path(__file__).resolve().parents[3]
    wheel = tmp_path / "site-packages" / "bot" / "cli" / "demo.py"
    wheel.parent.mkdir(parents=True)
    wheel.write_text("")
    assert demo.find_checkout(wheel) is None


def test_without_a_checkout_the_demo_says_it_needs_one(monkeypatch, capsys, tmp_path: Path):
    monkeypatch.setattr(demo, "find_checkout", lambda start=None: None)
    args = argparse.Namespace(yes=True, out=str(tmp_path), keep_cluster=False, time_limit=300)
    assert demo.run(args) == 2
    assert "needs the source checkout" in capsys.readouterr().err


def flag(args: list[str], name: str) -> float:
    return float(args[args.index(name) + 1])


def test_demo_config_sets_its_own_thresholds_and_tells_a_consistent_story():
    data = demo.demo_config_data(CONNECTION, store_url="sqlite:////tmp/x.db", tag="t1")
    config = Config.model_validate(data)
    recipe = config.recipe("mix")
    policy = config.policy_for("mix")
    assert (policy.tick_s, policy.stall_min_s, policy.save_time_s) == (2, 8, 5)
    assert config.policy.stall_min_s > 60  # the defaults are untouched: only the recipe's
    assert recipe.checkpoint is not None
    assert recipe.checkpoint.dir.startswith("/home/slurmci/trainbot-demo/runs/t1/")
    assert ACTOR_CAN_APPROVE(config)

    a = recipe.args
    leak = flag(a, "--leak-mib-per-iter") * MIB
    limit = parse_size(present(recipe.mem))
    stall_at, save_every = flag(a, "--stall-at"), flag(a, "--save-every")
    target = flag(a, "--target-iter")
    assert target == recipe.target_iter
    # the detector needs 2 GiB of growth: reached well before the stall ...
    assert 2 * 1024 * MIB / leak < stall_at - 20
    # ... and the stall comes before the projected OOM (the job dies of the watchdog)
    assert stall_at * leak < limit * 0.9
    # the stall lasts until the demo has seen the bot raise it (StallRelease), not a fixed time
    assert a[a.index("--stall-until") + 1] == "/home/slurmci/trainbot-demo/runs/t1/release-stall"
    assert flag(a, "--save-seconds") < policy.save_time_s  # a save is never a stall
    # the resumed attempt (a fresh process) reaches the target inside the limit
    last_complete = stall_at // save_every * save_every
    assert (target - last_complete) * leak < limit * 0.9


def test_the_time_limit_fits_the_story_from_its_submit():
    config = Config.model_validate(
        demo.demo_config_data(CONNECTION, store_url="sqlite:////tmp/x.db", tag="t1"))
    # job to its stall 130 x 0.45 s + 2 saves of 3 s; warning 8 + 2 s; stacks at most
    # 25 + 30 s; abort 8 + 2 s; resumed 140 x 0.45 s + 2 saves of 3 s; its end seen 2 s
    assert demo.story_s(config) == pytest.approx(64.5 + 10 + 55 + 10 + 69 + 2)
    # a loaded node and Slurm's queue may take the story two or three times as long
    assert demo.DEFAULT_TIME_LIMIT_S >= 2.5 * demo.story_s(config)
    parser = argparse.ArgumentParser()
    demo.configure(parser)
    assert parser.parse_args([]).time_limit == demo.DEFAULT_TIME_LIMIT_S


def ACTOR_CAN_APPROVE(config: Config) -> bool:  # noqa: N802 - reads as a sentence
    return demo.ACTOR in config.approvers_for("mix") and demo.ACTOR in config.recipe("mix").owners


@dataclass
class Incident:
    key: str
    class_id: str
    state: str


def test_the_stall_ends_once_the_warning_and_then_the_stacks_were_shown():
    """The job's stall lasts until the bot's stall warning is posted and then its stacks
    are; a slow machine only makes it last longer."""
    stall = demo.StallRelease(stacks_wait_s=55)
    stall.saw([Incident("dev:245:leak", "memory_leak", "posted"),
               Incident("dev:245:hang", "hang", "pending")], now=100)
    assert stall.due(stacks_shown=True, now=10_000) is None  # the warning is not posted yet
    stall.saw([Incident("dev:245:hang", "hang", "posted")], now=400)
    assert stall.stacks_key == "stacks:dev:245:hang"
    assert stall.due(stacks_shown=False, now=454) is None
    assert stall.due(stacks_shown=True, now=401) == \
        "the bot raised the stall and showed the ranks' stacks"
    stall.released = True
    assert stall.due(stacks_shown=True, now=402) is None


def test_stacks_that_never_come_end_the_stall_after_their_wait():
    stall = demo.StallRelease(stacks_wait_s=55)
    stall.saw([Incident("dev:245:hang", "hang", "posted")], now=400)
    stall.saw([Incident("dev:246:hang", "hang", "posted")], now=420)  # the first one counts
    assert stall.due(stacks_shown=False, now=455) == \
        "the bot raised the stall; its stacks did not come within 55 s"


@dataclass
class Row:
    job_id: str
    start_iter: int | None
    last_iter: int | None
    result: str | None
    state: str
    cause: str | None


def test_attempts_table():
    table = demo.attempts_table([Row("245", None, 130, "FAILED", "FAILED", "nccl_timeout"),
                                 Row("246", 100, None, None, "PENDING", None)])
    assert table.splitlines() == [
        "job | progress | result  | cause",
        "245 | 0 → 130  | FAILED  | nccl_timeout",
        "246 | 100 → ?  | PENDING | -",
    ]


@pytest.mark.parametrize(("start_iter", "path", "line"), [
    (1200, "/ck/mix/iter_000001200", "resubmitted as 246 from iteration 1,200 "
                                     "(/ck/mix/iter_000001200)"),
    (None, "/ck/mix/final/", "resubmitted as 246 from checkpoint `final` (/ck/mix/final/)"),
    (None, None, "resubmitted as 246 from scratch (no complete checkpoint)"),
])
def test_the_recap_says_where_the_resubmit_started_as_the_thread_does(
        start_iter: int | None, path: str | None, line: str):
    """The demo's recap names the resumed attempt's start in the start phrase every message
    uses (bot.core.policy.resume_start), never "from iter 1200"."""
    from types import SimpleNamespace

    attempts = [SimpleNamespace(attempt_no=1, job_id="245", start_iter=None, checkpoint_path=None,
                                result="FAILED", state="FAILED", cause="nccl_timeout"),
                SimpleNamespace(attempt_no=2, job_id="246", start_iter=start_iter,
                                checkpoint_path=path, result="COMPLETED", state="COMPLETED",
                                cause="completed")]
    store = SimpleNamespace(incidents=SimpleNamespace(for_chain=lambda chain_id: []),
                            attempts=SimpleNamespace(for_chain=lambda chain_id: attempts))
    recap = [text for _, text in demo.story_recap(store, 1)]
    assert line in recap


def test_the_demo_thread_is_the_bots_own_root_templates_and_charts_in_a_folder(tmp_path: Path):
    """The demo's thread is ThreadEvents on the console: the root rewritten through
    bot.services.runs.refresh_root (the recipe's language and the site's `templates.dir`,
    exactly as the Slack bot does), an incident's charts written to the charts folder."""
    import io
    import time

    from fakes import make_config, make_context

    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis
    from bot.core.policy import Decision, DecisionKind
    from bot.services.watch.events import WatchEvent
    from bot.services.watch_events import ThreadEvents
    from bot.slack.console import ConsoleSink
    from bot.store import Store

    site = tmp_path / "site"
    site.mkdir(parents=True)
    (site / "root.json.j2").write_text(
        '{"text": {{ ("site root " ~ job_id) | tojson }}, "blocks": [{"type": "header", '
        '"text": {"type": "plain_text", "text": {{ ("SITE ROOT " ~ job_id ~ " " ~ state) '
        '| tojson }}}}]}')
    config = make_config()
    config.templates.dir = str(tmp_path / "site")
    analysis = LogAnalysis(Catalogue.load())
    analysis.feed("".join(
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(1_800_000_000 + 4.5 * k))}.000 | "
        f"INFO | iter: {k}/240 | loss: {1 - k / 100:.2f} | rss: {1 + k / 50:.2f} GiB\n"
        for k in range(1, 40)).encode())
    analysis.finish()
    diag = analysis.diagnose()
    out = io.StringIO()
    with Store.open(f"sqlite:///{tmp_path / 'demo.db'}") as store:
        sink = ConsoleSink(tmp_path / "charts", out=out, store=store)
        ctx = make_context(store, config=config, sink=sink)
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=0.0)
        store.attempts.record(chain_id=chain.id, job_id="88154", now=0.0)
        sink.post_root(chain.id, "C0TRAIN", [], "mix")
        thread = ThreadEvents(ctx)
        thread.publish(WatchEvent("note", "k1", "dev", "hello", chain_id=chain.id,
                                  job_id="88154", recipe="mix"))
        assert "SITE ROOT 88154 PENDING" in out.getvalue()
        thread.publish(WatchEvent(
            "incident", "dev:88154:final", "dev", "job 88154 FAILED", chain.id, "88154",
            "mix", diagnosis=diag, decision=Decision(DecisionKind.STOP, "stop", "none"),
            series=analysis.series))
    charts = sorted(p.name for p in (tmp_path / "charts").glob("*.png"))
    assert charts == ["chart-88154-final-loss.png", "chart-88154-final-progress.png",
                      "chart-88154-final-rss.png"]
    for name in charts:
        assert f"{tmp_path / 'charts' / name}" in out.getvalue()  # the console says where


def test_a_failed_watcher_tick_is_said_as_a_sentence_not_a_repr():
    """The console line names the error by what it says: a cluster error's sentence, a
    refused SSH channel by its reason, an error without text by its type."""
    import paramiko

    from bot.cluster.errors import ClusterUnavailable
    from bot.core.text import N_

    down = ClusterUnavailable(N_("cannot connect to %(host)s: %(error)s", host="gpu-a:22",
                                 error="Connection refused"))
    assert demo.tick_failed(down) == (
        "▶ watcher tick failed (retrying next tick): cannot connect to gpu-a:22: "
        "Connection refused")
    assert demo.tick_failed(paramiko.ChannelException(1, "Administratively prohibited")) == (
        "▶ watcher tick failed (retrying next tick): the server refused the channel: "
        "administratively prohibited (open-failure code 1)")
    assert demo.tick_failed(EOFError()).endswith(": EOFError")
