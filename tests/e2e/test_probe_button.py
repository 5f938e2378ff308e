"""The "Run DataLoader probe" button of a leak-driven host OOM, through the real Bolt app and the
Slack stand-in: the incident offers it (no hopeless --mem button), an approver's click is
accepted once (a second click, someone not allowed, a run that moved on: nothing is run), the
scheduler's `probes` job runs it on the cluster (srun through the runner) and its result —
each worker's RSS growth, what grows — follows in the run's thread; the incident itself stays.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import FakeClusters, FakeRunner, FakeSlurm, make_config, writer
from slack_bolt import App
from support.bolt_driver import ResponseUrls, SyncExecutor, ack_text, click_body, dispatch

from bot.app import build_app
from bot.core.catalogue import Catalogue
from bot.core.models import Accounting, Action, Diagnosis, DiagnosisMetrics
from bot.core.policy import AttemptFacts, ChainHistory, decide, params_from
from bot.core.slurm.records import JobRecord
from bot.core.units import GIB
from bot.probes.dataloader import MARKER
from bot.services.ports import BotContext
from bot.services.probes import run_requested_probes
from bot.services.watch.events import WatchEvent
from bot.services.watch_events import ThreadEvents
from bot.slack.views import ActionId

CH = "C0TRAIN"
NOW = 1_732_871_000.0
APPROVER, OTHER_APPROVER, SUBMITTER = "W0LEAD", "U0APPR", "U0ALICE"
LEAK = {"slope_gib_per_100_iter": 12.0, "start_iter": 0, "start_gib": 40.0}
NODE_SAYS = {
    "host": "gpu-a11", "factory": "mydata.datasets:build_train", "workers": 2, "samples": 160,
    "error": None,
    "verdict": {"leaking": True, "conclusive": True, "slope_mb_per_sample": 20.1,
                "worker_slopes_mb": {"101": 20.0, "102": 20.2}},
    "per_worker": [
        {"pid": 101, "samples": 80, "rss_start_mb": 1946.0, "rss_end_mb": 3550.0,
         "slope_mb": 20.0},
        {"pid": 102, "samples": 80, "rss_start_mb": 1950.0, "rss_end_mb": 3570.0,
         "slope_mb": 20.2}],
}


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner({"srun": (0, "loading env\n" + MARKER + json.dumps(NODE_SAYS) + "\n", "")})


def _services(slack_context, store, runner: FakeRunner, **recipe: Any) -> BotContext:
    config = make_config(workdir="/scratch/wm/mix",
                         dataloader_probe={"factory": "mydata.datasets:build_train"}, **recipe)
    return slack_context(store, config, FakeClusters(FakeSlurm(), runner=runner), charts=False)


@pytest.fixture
def services(slack_context, store, runner: FakeRunner) -> BotContext:
    return _services(slack_context, store, runner)


@pytest.fixture
def app(services: BotContext, slack_client) -> App:
    return build_app(services.config, services, client=slack_client,
                     listener_executor=SyncExecutor(), token_verification_enabled=False)


def _leak_incident(services: BotContext, slack: Any, *, target_iter: int = 6000,
                   why: str = "leak_hopeless", excluded_nodes: str | None = None,
                   ) -> tuple[int, dict[str, Any]]:
    """Job 9001 of `mix` OOM-killed after a steady leak no memory can finish, published as the
    watcher does, decided by the recipe's policy (its `max_mem`); (chain id, the incident
    message)."""
    store = services.store
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    store.attempts.record(chain_id=chain.id, job_id="9001", now=NOW, state="OUT_OF_MEMORY",
                          excluded_nodes=excluded_nodes)
    writer(services).post_root(chain.id, CH, [{"type": "section", "text": {
        "type": "mrkdwn", "text": "mix"}}], "mix")
    catalogue = Catalogue.load().classes["host_oom"]
    diagnosis = Diagnosis(class_id="host_oom", action=Action.ASK, retryable=False,
                          charges_budget=catalogue.charges_budget, hint=catalogue.hint,
                          leak_fit=LEAK, metrics=DiagnosisMetrics(last_iter=670,
                                                                  target_iter=target_iter))
    acct = Accounting(state="OUT_OF_MEMORY", mem_limit_bytes=120 * GIB)
    decision = decide(diagnosis, ChainHistory(attempts=(AttemptFacts("9001", 1, 670),)),
                      params_from(services.config.policy_for("mix")), NOW,
                      checkpoint_iter=500, accounting=acct)
    assert decision.facts["why"] == why
    record = JobRecord(job_id=9001, state="OUT_OF_MEMORY", mem_limit_bytes=120 * GIB)
    ThreadEvents(services).publish(WatchEvent(
        kind="incident", key="dev:9001:host_oom", cluster="dev", text=decision.reason,
        chain_id=chain.id, job_id="9001", recipe="mix", diagnosis=diagnosis,
        decision=decision, record=record))
    [message] = [m for m in slack.all_messages() if "host_oom" in m["text"]]
    return chain.id, message


def _buttons(message: dict[str, Any]) -> dict[str, str]:
    return {e["action_id"]: e["value"] for b in message["blocks"] if b["type"] == "actions"
            for e in b["elements"]}


def _click(app: App, urls: ResponseUrls, action: str, token: str, ts: str,
           user: str) -> str:
    url = urls.new()
    body = click_body(action, token, user=user, channel=CH, message_ts=ts, response_url=url)
    assert ack_text(dispatch(app, body)) == ""
    return " ".join(str(r.get("text")) for r in urls.of(url))


def test_the_probe_button_runs_once_for_an_approver_and_its_result_reaches_the_thread(
        app: App, urls: ResponseUrls, services: BotContext, runner: FakeRunner, slack) -> None:
    chain_id, incident = _leak_incident(services, slack)
    buttons = _buttons(incident)
    assert ActionId.RUN_PROBE in buttons and ActionId.RESUBMIT_MEM not in buttons
    assert "Run DataLoader probe" in json.dumps(incident["blocks"])
    token, ts = buttons[ActionId.RUN_PROBE], incident["ts"]

    refused = _click(app, urls, ActionId.RUN_PROBE, token, ts, SUBMITTER)
    assert "Refused" in refused
    assert run_requested_probes(services, NOW + 1) == 0 and runner.calls == []

    accepted = _click(app, urls, ActionId.RUN_PROBE, token, ts, APPROVER)
    assert "will run on the cluster" in accepted
    again = _click(app, urls, ActionId.RUN_PROBE, token, ts, OTHER_APPROVER)
    assert f"Already decided by <@{APPROVER}>" in again
    # the incident stays as it was posted (only the thread's root is refreshed)
    assert not [c for c in slack.calls("chat.update") if c.params.get("ts") == ts]

    assert run_requested_probes(services, NOW + 10) == 1
    [call] = runner.calls
    assert call.argv[0] == "srun" and "--chdir=/scratch/wm/mix" in call.argv
    assert "mydata.datasets:build_train" in call.argv
    replies = [m["text"] for m in slack.all_messages() if "DataLoader probe of mix" in m["text"]]
    assert len(replies) == 1
    assert "1,946 → 3,550 MB" in replies[0] and "20.00 MB per sample" in replies[0]
    assert "What grows: the DataLoader workers" in replies[0] and f"<@{APPROVER}>" in replies[0]
    assert run_requested_probes(services, NOW + 20) == 0  # done: never run twice
    results = [(a.action, a.result) for a in services.store.audit.recent(limit=20)]
    assert ("approval.click", "unauthorized") in results and ("approval.click", "ok") in results
    assert ("approval.click", "duplicate") in results and ("probe.dataloader", "ok") in results


def test_an_approved_probe_does_not_make_the_incidents_resubmit_busy(
        app: App, urls: ResponseUrls, services: BotContext, slack) -> None:
    _chain_id, incident = _leak_incident(services, slack)
    buttons = _buttons(incident)
    _click(app, urls, ActionId.RUN_PROBE, buttons[ActionId.RUN_PROBE], incident["ts"], APPROVER)
    said = _click(app, urls, ActionId.DISMISS, buttons[ActionId.DISMISS], incident["ts"],
                  OTHER_APPROVER)
    assert "already acting" not in said


def test_a_probe_click_after_the_run_moved_on_runs_nothing(
        app: App, urls: ResponseUrls, services: BotContext, runner: FakeRunner, slack) -> None:
    chain_id, incident = _leak_incident(services, slack)
    services.store.attempts.record(chain_id=chain_id, job_id="9002", now=NOW + 5)
    said = _click(app, urls, ActionId.RUN_PROBE, _buttons(incident)[ActionId.RUN_PROBE],
                  incident["ts"], APPROVER)
    assert "Out of date" in said and "9002" in said
    assert run_requested_probes(services, NOW + 10) == 0 and runner.calls == []


def test_without_a_factory_the_incident_shows_the_command_and_the_field(
        services: BotContext, slack) -> None:
    services.config = make_config(workdir="/scratch/wm/mix")
    _chain_id, incident = _leak_incident(services, slack)
    assert ActionId.RUN_PROBE not in _buttons(incident)
    text = json.dumps(incident["blocks"], ensure_ascii=False)
    assert ("cd /scratch/wm/mix && srun --nodes=1 --ntasks=1 --partition=debug --account=root "
            "trainbot probe dataloader MODULE:FACTORY --workers 2 --samples 160") in text
    assert "dataloader_probe.factory" in text


def test_a_site_cap_below_what_finishes_the_run_posts_no_mem_button_and_names_the_cap(
        slack_context, store, runner: FakeRunner, slack) -> None:
    # a target of 1,200 needs 40 + 0.12 x (1200 - 500) = 124 -> 130G: under twice the 120G
    # limit (without a cap: a --mem=130G button), above the recipe's site cap of 122G
    capped = _services(slack_context, store, runner, policy={"max_mem": "122G"})
    _, message = _leak_incident(capped, slack, target_iter=1200)
    buttons = _buttons(message)
    assert ActionId.RESUBMIT_MEM not in buttons and ActionId.RUN_PROBE in buttons
    text = json.dumps(message["blocks"], ensure_ascii=False)
    assert "That is above the site's cap of 122G (policy.max_mem)" in text
    assert "with 122G: ≈ iter 1,183 of 1,200" in text


@pytest.mark.parametrize(("lang", "answer", "said"), [
    ("en", (0, MARKER + '{"per_worker": 3, "verdict": {}}\n', ""),
     "The probe did not finish: the node's report is not what the probe writes: its "
     "`per_worker` is 3"),
    ("ko", (0, MARKER + '{"per_worker": [], "verdict": [1]}\n', ""),
     "프로브가 끝나지 않았습니다: 노드의 보고가 프로브가 쓰는 형태가 아닙니다: `verdict`이(가) "
     "[1]입니다"),
    ("en", RuntimeError("the runner broke"),
     "The probe did not finish: trainbot failed on it (`RuntimeError`); the bot's log has "
     "the details"),
    ("ko", RuntimeError("the runner broke"),
     "프로브가 끝나지 않았습니다: trainbot이 이를 처리하다가 실패했습니다 (`RuntimeError`). "
     "자세한 내용은 trainbot 로그에 있습니다"),
])
def test_a_probe_that_fails_in_trainbot_still_answers_who_clicked_it(
        urls: ResponseUrls, slack_context, slack_client, store, slack, lang, answer,
        said) -> None:
    """A node report not of the probe's shape, or an error of trainbot's own while running
    the probe, still gets the clicker an answer in the run's thread, in the recipe's
    language, and the approval done and audited as failed: it used to be logged only, the
    approval marked done and the click left unanswered."""
    runner = FakeRunner({"srun": answer})
    services = _services(slack_context, store, runner, lang=lang)
    app = build_app(services.config, services, client=slack_client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    _chain_id, incident = _leak_incident(services, slack)
    _click(app, urls, ActionId.RUN_PROBE, _buttons(incident)[ActionId.RUN_PROBE],
           incident["ts"], APPROVER)
    run_requested_probes(services, NOW + 10)
    replies = [m["text"] for m in slack.all_messages() if m["text"].startswith("🔬")]
    assert len(replies) == 1 and said in replies[0], replies
    assert f"<@{APPROVER}>" in replies[0]
    assert run_requested_probes(services, NOW + 20) == 0  # done: never run twice
    results = [(a.action, a.result) for a in services.store.audit.recent(limit=20)]
    assert ("probe.dataloader", "failed") in results


def _resubmitted_off_faulty_nodes(services: BotContext) -> None:
    """Job 9001 as a node-fault resubmit with a partition override submitted it: its audit
    row's overrides, its attempt's left-out nodes (the recipe's gpu01, then gpu07)."""
    services.store.audit.record(actor="trainbot", action="submit", now=NOW, recipe="mix",
                                job_id="9001", detail={"chain_id": 1, "overrides": {
                                    "partition": "gpu-big", "exclude": "gpu01,gpu07"}})


def test_the_probe_runs_where_the_probed_jobs_sbatch_ran_it(
        app: App, urls: ResponseUrls, slack_context, store, runner: FakeRunner, slack) -> None:
    """After a node-fault resubmit (and a partition override) the probe's srun leaves out the
    nodes that job's sbatch left out and runs in its partition, not the base recipe's."""
    services = _services(slack_context, store, runner, exclude="gpu01")
    _resubmitted_off_faulty_nodes(services)
    _chain_id, incident = _leak_incident(services, slack, excluded_nodes="gpu01,gpu07")
    app = build_app(services.config, services, client=app.client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    _click(app, urls, ActionId.RUN_PROBE, _buttons(incident)[ActionId.RUN_PROBE],
           incident["ts"], APPROVER)
    assert run_requested_probes(services, NOW + 10) == 1
    [call] = runner.calls
    assert "--exclude=gpu01,gpu07" in call.argv and "--partition=gpu-big" in call.argv


def test_the_offered_command_runs_where_the_probed_jobs_sbatch_ran_it(
        slack_context, store, runner: FakeRunner, slack) -> None:
    services = _services(slack_context, store, runner, exclude="gpu01")
    services.config = make_config(workdir="/scratch/wm/mix", exclude="gpu01")
    _resubmitted_off_faulty_nodes(services)
    _chain_id, incident = _leak_incident(services, slack, excluded_nodes="gpu01,gpu07")
    text = json.dumps(incident["blocks"], ensure_ascii=False)
    assert ("srun --nodes=1 --ntasks=1 --partition=gpu-big --account=root "
            "--exclude=gpu01,gpu07 trainbot probe dataloader") in text
