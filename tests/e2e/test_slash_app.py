"""Wiring: the app registers /train and every action id, the scheduler's jobs, the manifest."""

from __future__ import annotations

import threading
from pathlib import Path

import yaml
from fakes import FakeSlurm, make_config, make_context
from support.bolt_driver import (
    ResponseUrls,
    SyncExecutor,
    ack_text,
    click_body,
    dispatch,
    slash_body,
)

from bot.app import build_app, build_scheduler
from bot.services.approvals import ActionId

REPO = Path(__file__).resolve().parents[2]


def test_scheduler_is_utc_coalescing_and_runs_a_job_with_the_clock(store) -> None:
    ctx = make_context(store, slack=False)
    scheduler = build_scheduler(ctx, clock=lambda: 42.0)
    assert sorted(j.id for j in scheduler.jobs()) == ["holds", "probes", "prompts", "submits",
                                                      "watch:dev"]
    assert str(scheduler.timezone) == "UTC"
    assert all(j.coalesce is True and j.max_instances == 1 for j in scheduler.jobs())

    ticks: list[float] = []
    watch = scheduler.run_repeating("watch", ticks.append, every_s=30)
    assert str(watch.trigger.timezone) == "UTC"
    watch.func()
    assert ticks == [42.0]


def test_a_failing_scheduled_job_is_logged_not_fatal(store, caplog) -> None:  # noqa: ANN001
    def broken(now):  # noqa: ANN001, ANN202
        raise RuntimeError("sacct exploded")

    sched = build_scheduler(make_context(store, slack=False))
    sched.run_repeating("watch", broken, every_s=30).func()
    assert "scheduled job watch failed" in caplog.text


def test_app_handles_every_action_id_and_nothing_else(store, slack_client) -> None:  # noqa: ANN001
    app = build_app(make_config(), make_context(store, slack=False), client=slack_client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    urls = ResponseUrls()
    try:
        for action_id in ActionId:
            url = urls.new()
            body = click_body(action_id, "forged", user="W0LEAD", channel="C0TRAIN",
                              message_ts="1.1", response_url=url)
            assert dispatch(app, body).status == 200
            assert urls.of(url)[0]["text"].startswith("This button is not (or no longer) known")
        stray = click_body("someone_elses_button", "x", user="W0LEAD", channel="C0TRAIN",
                           message_ts="1.1", response_url=urls.new())
        assert dispatch(app, stray).status == 404
        slash = slash_body("help", user="U0ALICE", channel="C0TRAIN", response_url=urls.new())
        assert "/train submit RECIPE" in ack_text(dispatch(app, slash))
    finally:
        urls.close()
    forged = [e for e in store.audit.recent(50) if e.action == "approval.click"]
    assert len(forged) == len(ActionId) and {e.result for e in forged} == {"unknown"}


def test_manifest_declares_command_scopes_interactivity_and_socket_mode() -> None:
    manifest = yaml.safe_load((REPO / "bot" / "starter" / "slack-manifest.yaml").read_text())
    commands = manifest["features"]["slash_commands"]
    assert [c["command"] for c in commands] == ["/train"]
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"commands", "chat:write", "files:write", "channels:history"} <= scopes
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["socket_mode_enabled"] is True


def test_with_the_default_thread_pool_the_work_runs_after_the_ack(store, slack_client) -> None:  # noqa: ANN001
    """Production wiring (no SyncExecutor): dispatch returns the ack; the answer follows."""
    import time

    gate = threading.Event()
    slurm = FakeSlurm()
    original = slurm.jobs

    def slow_jobs(ids):  # noqa: ANN001, ANN202 - the cluster answers only once we allow it
        gate.wait(10)
        return original(ids)

    slurm.jobs = slow_jobs  # type: ignore[method-assign]
    ctx = make_context(store, slurm, slack=False)
    app = build_app(ctx.config, ctx, client=slack_client, token_verification_enabled=False)
    urls = ResponseUrls()
    try:
        url = urls.new()
        store.watched_jobs.add("dev", "42", now=0.0)
        ack = ack_text(dispatch(app, slash_body("status", user="U0ALICE", channel="C0TRAIN",
                                                response_url=url)))
        assert ack == ":hourglass_flowing_sand: `/train status` …"
        assert urls.of(url) == []  # acked while the cluster call is still blocked
        gate.set()
        deadline = time.monotonic() + 10
        while not urls.of(url) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "*watched jobs*" in urls.of(url)[0]["text"]
    finally:
        gate.set()
        urls.close()
