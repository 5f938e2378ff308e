"""A recipe's secrets never leave the bot: its sbatch fails quoting them (the command line of
`env HF_TOKEN=… sbatch`, a site wrapper echoing its environment), and neither the Slack reply,
the thread, the audit log, the incidents nor the logs show them.

Wired by the composition root (`bot.app.build_context`, `build_app`) against the Slack
stand-in, the log filter installed as `trainbot run` does; only Slurm is a fake.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fakes import FakeClusters, FakeSlurm, make_config, present, writer
from support.bolt_driver import ResponseUrls, SyncExecutor, click_body, dispatch, slash_body

from bot.app import build_app, build_context, build_watcher
from bot.cluster.errors import ClusterUnavailable, CommandFailed
from bot.config import Config, StoreConfig
from bot.core.redact import MARKER
from bot.log_redaction import install_log_redaction
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.services.threads import render, thread_note
from bot.slack.views import ActionId

HF_TOKEN = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"  # a token shape
WANDB_KEY = "7c1f0e9a-plain-looking-9b2d"  # no token shape: redacted because it is configured
SECRETS = (HF_TOKEN, WANDB_KEY)
NOW = 1_732_871_000.0


def failing_sbatch() -> CommandFailed:
    """sbatch refusing a partition, as the command line showed it before env values were
    kept off it, with a site wrapper's dump of its environment in stderr."""
    argv = ["env", f"HF_TOKEN={HF_TOKEN}", f"WANDB_API={WANDB_KEY}", "sbatch", "--parsable",
            "--partition=nope", "/home/slurmci/train.sbatch"]
    stderr = (f"wrapper: environment HF_TOKEN={HF_TOKEN} WANDB_API={WANDB_KEY}\n"
              "sbatch: error: invalid partition specified: nope")
    return CommandFailed(argv, 1, stderr)


@pytest.fixture
def config(store_url: str) -> Config:
    config = make_config(env={"HF_TOKEN": HF_TOKEN, "WANDB_API": WANDB_KEY, "OMP": "8"})
    config.store = StoreConfig(url=store_url)
    return config


@pytest.fixture
def logs(config: Config, caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The captured logs, through the filter `trainbot run` installs on the root handlers."""
    caplog.set_level(logging.INFO)
    install_log_redaction(config.redactor())
    return caplog  # the filter is removed after the test (tests/conftest.py)


@pytest.fixture
def services(config: Config, slack_client) -> Iterator[BotContext]:  # noqa: ANN001
    built = build_context(config, client=slack_client)
    built.clusters.close()
    ctx = replace(built, clusters=FakeClusters(FakeSlurm(submit_error=failing_sbatch())),
                  clock=lambda: NOW + 60)
    yield ctx
    ctx.store.close()


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def test_a_failed_submit_quoting_the_recipes_secrets_shows_them_nowhere(
        services: BotContext, slack, slack_client, logs) -> None:  # noqa: ANN001
    app = build_app(services.config, services, client=slack_client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    store = services.store
    # a run with a thread and an incident prompt in it, whose Resubmit will fail the same way
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW)
    writer(services).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(services, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died: NCCL timeout",
                                    resume_iter=3000)
    prompt_ts = writer(services).post_reply(chain.id, "prompt:88154", prompt.blocks, "prompt")
    urls = ResponseUrls()
    try:
        # 1. /train submit: the reply to the user
        submit_url = urls.new()
        dispatch(app, slash_body("submit mix", user="U0ALICE", channel="C0TRAIN",
                                 response_url=submit_url))
        reply = urls.of(submit_url)[0]["text"]
        assert "invalid partition specified: nope" in reply and MARKER in reply
        # 2. the approver's Resubmit: the prompt in the thread is rewritten with the error
        click_url = urls.new()
        dispatch(app, click_body(ActionId.RESUBMIT, prompt.token, user="W0LEAD",
                                 channel="C0TRAIN", message_ts=prompt_ts,
                                 response_url=click_url))
        clicked = json.dumps(urls.of(click_url))
        # 3. a note in the thread quoting the error
        thread_note(services, chain.id, "note:failed", f"resubmit failed: {failing_sbatch()}")
        # 4. an unexpected error with the secrets in it: logged with its traceback
        fake = services.clusters.slurm("dev")
        assert isinstance(fake, FakeSlurm)
        fake.submit_error = RuntimeError(str(failing_sbatch()))
        crash_url = urls.new()
        dispatch(app, slash_body("submit mix", user="U0ALICE", channel="C0TRAIN",
                                 response_url=crash_url))
        assert "internal error" in urls.of(crash_url)[0]["text"]
    finally:
        urls.close()
    # 5. the watcher: the cluster fails the same way tick after tick (logged, then an incident)
    watcher = build_watcher(services, "dev")
    slurm = services.clusters.slurm("dev")

    def unreachable(ids):  # noqa: ANN001, ANN202
        raise ClusterUnavailable(str(failing_sbatch()))

    slurm.jobs = unreachable  # type: ignore[method-assign]
    store.watched_jobs.add("dev", "88154", now=NOW, chain_id=chain.id)
    for tick in range(services.config.policy.unreachable_ticks):
        assert not watcher.tick(NOW + 120 + tick).ok

    updates = slack.calls("chat.update")
    assert updates and "invalid partition specified: nope" in json.dumps(updates[-1].params)
    sent_to_slack = json.dumps([[r.params, r.json] for r in slack.requests]) + clicked + reply
    assert MARKER in sent_to_slack and leaked(sent_to_slack) == []
    thread = slack.replies("C0TRAIN", present(store.chains.get(chain.id)).thread_ts)
    notes = [m for m in thread if "resubmit failed" in json.dumps(m.get("blocks"))]
    assert len(notes) == 1 and MARKER in json.dumps(notes[0]["blocks"])

    audit = store.audit.recent(50)
    assert {(e.action, e.result) for e in audit} >= {("submit", "failed"),
                                                     ("command.submit", "failed"),
                                                     ("approval.click", "failed")}
    details = json.dumps([e.detail for e in audit])
    assert "invalid partition" in details and leaked(details) == []

    down = store.incidents.get(f"cluster:dev:down:{int(NOW + 120)}")
    assert down is not None and "invalid partition" in down.diagnosis["text"]
    assert leaked(json.dumps(down.diagnosis)) == []

    assert "RuntimeError" in logs.text and "Traceback" in logs.text
    assert "tick failed (3 in a row)" in logs.text
    assert MARKER in logs.text and leaked(logs.text) == []


def test_the_store_keeps_incident_texts_without_the_secrets(services: BotContext) -> None:
    error = str(failing_sbatch())
    incident, _ = services.store.incidents.record(
        "cluster:dev:down:1", class_id="cluster_unreachable", now=NOW, job_id="88154",
        diagnosis={"kind": "cluster_unreachable", "recipe": "mix", "text": f"down: {error}",
                   "facts": {"error": error, "ticks": 3}})
    stored = json.dumps(present(services.store.incidents.get(incident.key)).diagnosis)
    assert leaked(stored) == [] and "invalid partition" in stored
    assert incident.diagnosis["recipe"] == "mix" and incident.diagnosis["facts"]["ticks"] == 3


SHORT_SECRET = "hunter2"  # shorter than the marker: masking it lengthens the text


def test_a_message_cut_to_slacks_limits_stays_within_them_once_redacted(
        store_url: str, slack, slack_client) -> None:  # noqa: ANN001
    # A job's log lines quoting a short secret (configured, or a `password=` shape), cut to a
    # section's 3000 characters and then redacted, grew past them (each marker is longer than
    # the secret it masks): Slack refused the message (invalid_blocks: a note or incident
    # given up for good). The renderer redacts before it cuts: what it returns is sent as is.
    config = make_config(env={"WANDB_PASS": SHORT_SECRET})
    config.store = StoreConfig(url=store_url)
    services = build_context(config, client=slack_client)
    services.clusters.close()
    try:
        chain = services.store.chains.create(recipe="mix", cluster="dev", job_name="mix",
                                             now=NOW)
        root_ts = writer(services).post_root(chain.id, "C0TRAIN", [], "mix")
        lines = "".join(f"step {i} loss 2.31 wandb_pass {SHORT_SECRET} password=abc{i} lr 3e-4\n"
                        for i in range(100, 180))
        blocks, text = render(services, "note", "mix", {"text": f"```{lines[:2990]}```"})
        assert all(len(t) <= 3000 for t in sections(blocks))
        ts = writer(services).post_reply(chain.id, "note:log", blocks, text)
    finally:
        services.store.close()
    [note] = [m for m in slack.replies("C0TRAIN", root_ts) if m["ts"] == ts]
    assert note["blocks"] == blocks  # sent as rendered: redacting it again changed nothing
    assert MARKER in json.dumps(blocks) and "loss 2.31" in json.dumps(blocks)
    sent = json.dumps([r.params for r in slack.requests])
    assert SHORT_SECRET not in sent and "password=abc1" not in sent


def sections(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["text"]["text"] for b in blocks
            if b.get("type") == "section" and isinstance(b.get("text"), dict)]
