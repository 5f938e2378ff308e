"""`--log-level` / `--log-format text|json` (bot.log_format): each line carries the cluster,
chain, job and event key it is about, redacted like every other line; the watcher and the
scheduler set those fields."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, RecordingEventSink, make_context
from support.watcher import LOG, add_job, make_watcher, running

from bot.app import _logged_as, build_scheduler
from bot.core.redact import Redactor
from bot.log_format import configure_logging, log_fields
from bot.log_redaction import install_log_redaction
from bot.store import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def logs():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield lambda fmt="json", level="info": (configure_logging(level, fmt, stream), stream)[1]
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])


def json_lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]


def test_json_lines_carry_the_fields_of_the_enclosing_blocks_and_of_extra(logs) -> None:
    stream = logs("json")
    log = logging.getLogger("bot.test")
    with log_fields(cluster="alpha"):
        with log_fields(job="4242", chain=7):
            log.warning("stalled %d s", 600)
        log.info("tick", extra={"event_key": "warn:4242:stall"})
    log.info("outside")
    first, second, third = json_lines(stream)
    assert first["message"] == "stalled 600 s" and first["level"] == "WARNING"
    assert (first["cluster"], first["job"], first["chain"]) == ("alpha", "4242", "7")
    assert first["logger"] == "bot.test" and first["ts"].endswith("Z")
    assert second["event_key"] == "warn:4242:stall" and second["cluster"] == "alpha"
    assert "job" not in second
    assert set(third) == {"ts", "level", "logger", "message"}


def test_text_lines_show_the_fields_and_the_level_filters(logs) -> None:
    stream = logs("text", "warning")
    log = logging.getLogger("bot.test")
    with log_fields(cluster="alpha", job="42"):
        log.info("not written at level warning")
        log.error("sacct failed")
    (line,) = stream.getvalue().splitlines()
    assert line.endswith("ERROR bot.test: sacct failed [cluster=alpha job=42]")


def test_json_lines_are_redacted_tracebacks_included(logs) -> None:
    stream = logs("json")
    install_log_redaction(Redactor(secrets=("hunter2-secret-value",)))
    try:
        try:
            raise RuntimeError("token hunter2-secret-value leaked")
        except RuntimeError:
            logging.getLogger("bot.test").exception("failed with hunter2-secret-value")
    finally:
        install_log_redaction(Redactor())
    (doc,) = json_lines(stream)
    assert "hunter2" not in stream.getvalue()
    assert "RuntimeError" in doc["exception"]


def test_unknown_fields_levels_and_formats_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown log field"), log_fields(user="U1"):
        pass
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml")
    with pytest.raises(ValueError, match="log level"):
        configure_logging("verbose", "text")


def test_a_watcher_tick_logs_its_cluster_and_each_job_and_chain(logs, tmp_path) -> None:
    stream = logs("json")
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    slurm, sftp, sink = FakeSlurm(), FakeSFTP(), RecordingEventSink()
    chain = add_job(store, 1)
    slurm.records[1] = running(1)
    sftp.append(LOG, b"x\n")
    w = make_watcher(store, slurm, sftp, sink)

    def broken(*a, **k):
        raise ZeroDivisionError("a bug while judging job 1")

    w._running = broken  # type: ignore[method-assign]
    _logged_as(w.tick, cluster="dev")(T0 + 30)
    store.close()
    (doc,) = [d for d in json_lines(stream) if "watching it failed" in d["message"]]
    assert (doc["cluster"], doc["job"], doc["chain"]) == ("dev", "1", str(chain.id))
    assert "ZeroDivisionError" in doc["exception"]


def test_trainbot_run_log_options_are_offered_and_checked() -> None:
    out = subprocess.run([sys.executable, "-m", "bot", "run", "--log-format", "xml"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 2 and "--log-format" in out.stderr and "json" in out.stderr


def test_a_webhook_urls_secret_path_is_redacted_and_a_short_path_is_not(tmp_path) -> None:
    from bot.config import parse_config

    text = ("clusters:\n  dev: {host: h, key_file: k}\nservice:\n  webhook_url: "
            "https://hooks.example.com/services/T0AAA/B0BBB/xyzSECRETxyzSECRET\n")
    config = parse_config(text, source="t.yaml", env={})
    redacted = config.redactor().redact(
        "POST https://hooks.example.com/services/T0AAA/B0BBB/xyzSECRETxyzSECRET failed")
    assert "SECRET" not in redacted and "hooks.example.com" in redacted
    short = parse_config(text.replace("services/T0AAA/B0BBB/xyzSECRETxyzSECRET", "events"),
                         source="t.yaml", env={})
    assert short.redactor().redact("events go to the log") == "events go to the log"


def test_a_scheduled_tick_logs_the_watchers_line_and_not_apschedulers(logs, tmp_path) -> None:
    """APScheduler logs every run of every job at INFO ("Running job …", "… executed
    successfully"); configure_logging keeps its warnings only, and our per-tick line."""
    quiet = logging.getLogger("apscheduler")
    quiet.setLevel(logging.NOTSET)  # as a fresh process has it
    stream = logs("json", "info")
    ticked = threading.Event()
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")

    class TickedSlurm(FakeSlurm):
        def jobs(self, ids):  # noqa: ANN001, ANN202
            ticked.set()
            return super().jobs(ids)

    add_job(store, 1)
    ctx = make_context(store, TickedSlurm(), slack=False)
    scheduler = build_scheduler(ctx)
    for job in scheduler.jobs():
        if job.id != "watch:dev":
            job.pause()
    scheduler.start()  # the watcher's first tick is at the start
    try:
        assert ticked.wait(10), "the watcher's tick never ran"
        deadline = time.monotonic() + 10
        while not any(": tick " in d["message"] for d in json_lines(stream)) and \
                time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        scheduler.stop()
        store.close()
    lines = json_lines(stream)
    assert [d["cluster"] for d in lines if d["message"].startswith("dev: tick ")] == ["dev"]
    assert [d for d in lines if d["logger"].startswith("apscheduler")] == []
    assert quiet.getEffectiveLevel() == logging.WARNING
