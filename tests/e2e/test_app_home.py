"""The App Home tab through the real Bolt app and the Slack stand-in (views.publish with
Slack's limits): opened, it shows the user's and their team's runs with the open prompts'
buttons; a click there is authorized and decided like one in the thread, rewrites the
thread's prompt and says what happened on the tab; a run that changes refreshes it."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import FakeClusters, FakeSlurm, make_config, present, writer
from slack_bolt import App
from slack_standin import SlackStandIn
from support.bolt_driver import TEAM, SyncExecutor, ack_text, dispatch

from bot.app import build_app
from bot.services.approvals import ActionId
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.slack.views import HOME_CANCEL_JOB, HOME_STOP_WATCHING

CH = "C0TRAIN"
NOW = 1_732_871_000.0


@pytest.fixture
def fake_slurm() -> FakeSlurm:
    return FakeSlurm()


def replica(slack_context, slack_client, store, fake_slurm, lang: str = "en"
            ) -> tuple[BotContext, App]:
    """One replica's services and Bolt app on `store` and the Slack stand-in (the Home tab
    in slack.lang `lang`)."""
    config = make_config(target_iter=8000, slack_lang=lang)
    services = slack_context(store, config, FakeClusters(fake_slurm), home=True)
    return services, build_app(services.config, services, client=slack_client,
                               listener_executor=SyncExecutor(),
                               token_verification_enabled=False)


@pytest.fixture
def first_replica(slack_context, slack_client, store, fake_slurm) -> tuple[BotContext, App]:
    return replica(slack_context, slack_client, store, fake_slurm)


@pytest.fixture
def services(first_replica) -> BotContext:
    return first_replica[0]


@pytest.fixture
def app(first_replica) -> App:
    return first_replica[1]


def failed_run(services: BotContext) -> tuple[int, str]:
    """A run whose job 88154 failed, its resubmit prompt open in its thread: (chain, token)."""
    chain = services.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    services.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW)
    services.store.attempts.update(present(services.store.attempts.get_by_job("88154")).id,
                                   state="FAILED", result="FAILED", cause="nccl_timeout",
                                   last_iter=3470)
    services.store.incidents.record("dev:88154:final", class_id="nccl_timeout", diagnosis={},
                                    now=NOW, chain_id=chain.id, job_id="88154")
    writer(services).post_root(chain.id, CH, [{"type": "section", "text": {
        "type": "mrkdwn", "text": "mix"}}], "mix")
    prompt = create_resubmit_prompt(services, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="job 88154 FAILED: nccl_timeout",
                                    resume_iter=3000, post_key="dev:88154:final")
    writer(services).post_reply(chain.id, "dev:88154:final", prompt.blocks, prompt.text)
    return chain.id, prompt.token


def open_home(app: App, user: str) -> None:
    body = {"type": "event_callback", "team_id": TEAM, "api_app_id": "A0TRAINBOT",
            "event": {"type": "app_home_opened", "user": user, "channel": "D0HOME",
                      "tab": "home", "event_ts": "1732871000.000100"},
            "event_id": f"Ev{user}", "event_time": 1732871000}
    assert dispatch(app, body).status == 200


def home_click(app: App, action: ActionId, token: str, user: str) -> None:
    body = {"type": "block_actions", "team": {"id": TEAM, "domain": "standin"},
            "user": {"id": user, "username": user.lower(), "team_id": TEAM},
            "api_app_id": "A0TRAINBOT", "token": "legacy-verification-token",
            "container": {"type": "view", "view_id": "V00000001"},
            "trigger_id": "13345224609.738474920.8088930838d88f008e0",
            "view": {"id": "V00000001", "type": "home", "blocks": []},
            "actions": [{"action_id": action, "block_id": f"home:{token}", "value": token,
                         "type": "button", "action_ts": "1732871300.000100"}]}
    assert ack_text(dispatch(app, body)) == ""


def texts(view: dict[str, Any]) -> str:
    out = []
    for b in view["blocks"]:
        for t in [b.get("text"), *(b.get("elements") or [])]:
            if isinstance(t, dict):
                out.append(str(t.get("text", "")))
                if isinstance(t.get("text"), dict):
                    out.append(t["text"]["text"])
    return "\n".join(out)


def buttons(view: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["action_id"], e["value"]) for b in view["blocks"] if b["type"] == "actions"
            for e in b["elements"]]


def test_the_home_tab_shows_the_teams_runs_with_the_prompts_buttons(app, services, slack):
    _, token = failed_run(services)
    open_home(app, "U0ALICE")  # a submitter of mix: her team's run
    view = slack.home_views["U0ALICE"]
    shown = texts(view)
    assert "*mix* · job 88154 · FAILED" in shown
    assert "▓" in shown and "Last incident: nccl_timeout (job 88154)" in shown
    assert "retries 0 of 3" in shown
    assert buttons(view) == [(ActionId.RESUBMIT, token), (ActionId.DISMISS, token)]
    open_home(app, "U0NOBODY")  # not in the team: no run of theirs
    assert "No run of your team is watched right now" in texts(slack.home_views["U0NOBODY"])


def test_a_home_click_is_authorized_like_a_thread_click(app, services, slack, fake_slurm):
    _, token = failed_run(services)
    open_home(app, "U0ALICE")
    home_click(app, ActionId.RESUBMIT, token, "U0ALICE")  # a submitter, not an approver
    assert fake_slurm.submits() == []
    assert "Refused: only <@U0APPR> or <@W0LEAD> can approve" in texts(
        slack.home_views["U0ALICE"])
    open_home(app, "W0LEAD")
    home_click(app, ActionId.RESUBMIT, token, "W0LEAD")
    assert len(fake_slurm.submits()) == 1
    lead = texts(slack.home_views["W0LEAD"])
    assert "👉 Approved by <@W0LEAD>: resubmitted as 88887" in lead
    # The thread's prompt says so too, without buttons; Alice's tab was refreshed: no buttons.
    [root] = slack.root_messages(CH)
    prompt = slack.replies(CH, root["ts"])[0]
    assert prompt["text"].startswith("Approved by <@W0LEAD>: resubmitted as 88887")
    assert not [b for b in prompt["blocks"] if b["type"] == "actions"]
    assert buttons(slack.home_views["U0ALICE"]) == []
    home_click(app, ActionId.RESUBMIT, token, "W0LEAD")  # a second click does nothing
    assert len(fake_slurm.submits()) == 1


def test_views_publish_is_held_to_slacks_limits(slack_client, slack: SlackStandIn):
    from slack_sdk.errors import SlackApiError

    too_many = [{"type": "divider"}] * 101
    with pytest.raises(SlackApiError, match="invalid_blocks"):
        slack_client.views_publish(user_id="U0ALICE", view={"type": "home", "blocks": too_many})
    with pytest.raises(SlackApiError, match="invalid_arguments"):
        slack_client.views_publish(user_id="U0ALICE", view={"type": "modal", "blocks": []})
    ok = slack_client.views_publish(user_id="U0ALICE",
                                    view={"type": "home", "blocks": too_many[:100]})
    assert ok["view"]["type"] == "home"


def test_a_new_run_appears_on_the_open_home_tabs_of_its_team(app, services, slack):
    from support.bolt_driver import ResponseUrls, slash_body

    open_home(app, "U0APPR")
    assert "No run of your team" in texts(slack.home_views["U0APPR"])
    urls = ResponseUrls()
    try:
        dispatch(app, slash_body("resume mix", user="U0ALICE", channel=CH,
                                 response_url=urls.new()))
    finally:
        urls.close()
    assert "*mix* · job 88887 · PENDING" in texts(slack.home_views["U0APPR"])


def test_a_tab_opened_through_one_replica_is_refreshed_by_another(app, services, slack,
                                                                   slack_client, fake_slurm,
                                                                   slack_context):
    """The viewers are kept in the store: a replica that never published U0APPR's tab (or
    one restarted since) refreshes it when a run changes there."""
    from support.bolt_driver import ResponseUrls, slash_body

    open_home(app, "U0APPR")
    assert "No run of your team" in texts(slack.home_views["U0APPR"])
    _, other_app = replica(slack_context, slack_client, services.store, fake_slurm)
    urls = ResponseUrls()
    try:
        dispatch(other_app, slash_body("resume mix", user="U0ALICE", channel=CH,
                                       response_url=urls.new()))
    finally:
        urls.close()
    assert "*mix* · job 88887 · PENDING" in texts(slack.home_views["U0APPR"])


def train(app: App, text: str, user: str) -> list[dict[str, Any]]:
    """`/train TEXT` by `user` in the channel: the replies posted to its response_url."""
    from support.bolt_driver import ResponseUrls, slash_body

    urls = ResponseUrls()
    try:
        url = urls.new()
        dispatch(app, slash_body(text, user=user, channel=CH, response_url=url))
        return urls.of(url)
    finally:
        urls.close()


def watch(app: App, job: str, user: str) -> None:
    train(app, f"watch {job}", user)


def cancel_click(app: App, job: str, user: str, action: str = HOME_CANCEL_JOB) -> None:
    body = {"type": "block_actions", "team": {"id": TEAM, "domain": "standin"},
            "user": {"id": user, "username": user.lower(), "team_id": TEAM},
            "api_app_id": "A0TRAINBOT", "token": "legacy-verification-token",
            "container": {"type": "view", "view_id": "V00000001"},
            "trigger_id": "13345224609.738474920.8088930838d88f008e1",
            "view": {"id": "V00000001", "type": "home", "blocks": []},
            "actions": [{"action_id": action, "block_id": "job:1", "value": job,
                         "type": "button", "action_ts": "1732871300.000200"}]}
    assert ack_text(dispatch(app, body)) == ""


def test_adopted_jobs_show_on_the_home_tab_with_cancel_for_who_may(app, services, slack,
                                                                  fake_slurm):
    """`/train watch` by a lead (an approver: who may read a job trainbot did not submit may
    adopt it) adopts a job and an array: both show on the adopter's tab and on another
    approver's, with Stop watching and Cancel (which runs /train cancel); a forged Cancel by
    someone else is refused like the command; the adopter's Stop watching ends the array's
    watch and leaves the job to Slurm. (An adopter who has left the approvers since keeps
    Stop watching only: tests/unit/services/test_home_adopted.py.)"""
    fake_slurm.add(4242, name="eval-run", state="RUNNING")
    fake_slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    fake_slurm.add(6101, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=1)
    fake_slurm.add(6102, name="sweep", state="FAILED", array_job_id=6100, array_task_id=2)
    open_home(app, "W0LEAD")
    open_home(app, "U0APPR")
    watch(app, "4242", "W0LEAD")
    watch(app, "6100", "W0LEAD")
    lead = slack.home_views["W0LEAD"]  # refreshed by the watch: he keeps his tab open
    shown = texts(lead)
    assert "*eval-run* · job 4242 · RUNNING" in shown
    assert "*sweep* · array 6100 · RUNNING" in shown and "1 FAILED" in shown
    assert shown.count("adopted: not resubmitted by trainbot") == 2
    job_chain, array_chain = (str(services.store.attempts.get_by_job(j).chain_id)
                              for j in ("4242", "6101"))
    for user in ("W0LEAD", "U0APPR"):
        assert buttons(slack.home_views[user]) == [
            (HOME_STOP_WATCHING, array_chain), (HOME_CANCEL_JOB, "6100"),
            (HOME_STOP_WATCHING, job_chain), (HOME_CANCEL_JOB, "4242")]
    [cancel_array] = [e for b in slack.home_views["U0APPR"]["blocks"] if b["type"] == "actions"
                      for e in b["elements"] if e["value"] == "6100"]
    assert cancel_array["confirm"]["text"]["text"] == (  # published: the stand-in checked it
        "scancel 6100 stops the whole array: 1 of its tasks still running or pending, and "
        "those not started yet. trainbot resubmits none of them.")
    [cancel_job] = [e for b in slack.home_views["U0APPR"]["blocks"] if b["type"] == "actions"
                    for e in b["elements"] if e["value"] == "4242"]
    assert (cancel_job["confirm"]["title"]["text"], cancel_job["confirm"]["text"]["text"]) == (
        "Cancel job 4242?", "Job 4242 is RUNNING. scancel stops it.")  # it asks too
    open_home(app, "U0ALICE")  # a submitter of mix: not hers to see
    assert "eval-run" not in texts(slack.home_views["U0ALICE"])

    cancel_click(app, "4242", "U0BOB")  # forged: Bob has no such button
    assert fake_slurm.acted("cancel") == []
    assert "job 4242 was not submitted by trainbot" in texts(slack.home_views["U0BOB"])
    cancel_click(app, "4242", "U0APPR")
    assert fake_slurm.acted("cancel") == [4242]
    assert "cancelled by <@U0APPR>" in texts(slack.home_views["U0APPR"])

    cancel_click(app, array_chain, "W0LEAD", action=HOME_STOP_WATCHING)
    assert "<@W0LEAD> stopped watching 6100" in texts(slack.home_views["W0LEAD"])
    assert services.store.chains.get(int(array_chain)).status == "stopped"
    assert [w.job_id for w in services.store.watched_jobs.list("dev")] == ["4242"]
    assert fake_slurm.acted("cancel") == [4242]  # the array itself is left alone
    assert (HOME_STOP_WATCHING, array_chain) not in buttons(slack.home_views["U0APPR"])


def test_every_cancel_on_a_korean_home_tab_asks_in_korean(store, slack_client, fake_slurm,
                                                         slack_context, slack: SlackStandIn):
    """slack.lang ko: an adopted job's and an adopted array's Cancel on an approver's tab
    ask in Korean, naming the job and its state (views.publish through the stand-in, which
    checks the confirm dialogs as Slack does); the click after it cancels the job."""
    _, app = replica(slack_context, slack_client, store, fake_slurm, lang="ko")
    fake_slurm.add(4242, name="eval-run", state="RUNNING")
    fake_slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    fake_slurm.add(6101, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=1)
    watch(app, "4242", "U0APPR")
    watch(app, "6100", "U0APPR")
    open_home(app, "U0APPR")
    dialogs = {e["value"]: e["confirm"] for b in slack.home_views["U0APPR"]["blocks"]
               if b["type"] == "actions" for e in b["elements"]
               if e["action_id"] == HOME_CANCEL_JOB}
    assert {job: (d["title"]["text"], d["text"]["text"], d["confirm"]["text"],
                  d["deny"]["text"]) for job, d in dialogs.items()} == {
        "4242": ("작업 4242을(를) 취소할까요?",
                 "작업 4242은(는) 지금 RUNNING 상태입니다. scancel로 멈춥니다.",
                 "작업 취소", "그대로 두기"),
        "6100": ("array 6100을(를) 취소할까요?",
                 "scancel 6100은(는) array 전체를 멈춥니다: 실행 중이거나 대기 중인 task 1개와 "
                 "아직 시작하지 않은 task. trainbot은 어느 것도 다시 제출하지 않습니다.",
                 "array 취소", "그대로 두기")}
    cancel_click(app, "4242", "U0APPR")  # Slack sends the click once the dialog is confirmed
    assert fake_slurm.acted("cancel") == [4242]


def test_train_unwatch_stops_watching_like_the_home_button(app, services, slack, fake_slurm):
    """`/train unwatch 6100` by who adopted the array: the thread says who stopped watching
    it, his open Home tab loses the row's buttons, Slurm is not touched; another user is
    refused in the reply and nothing changes."""
    fake_slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    fake_slurm.add(6101, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=1)
    open_home(app, "W0LEAD")
    watch(app, "6100", "W0LEAD")
    chain = str(services.store.attempts.get_by_job("6101").chain_id)
    assert buttons(slack.home_views["W0LEAD"]) == [(HOME_STOP_WATCHING, chain),
                                                   (HOME_CANCEL_JOB, "6100")]
    [refused] = train(app, "unwatch 6100", "U0ALICE")
    assert refused["text"].startswith("Refused: job 6100 is watched for <@W0LEAD>")
    [done] = train(app, "unwatch 6100", "W0LEAD")
    assert done["text"] == ("<@W0LEAD> stopped watching 6100: trainbot no longer follows it "
                            "(the job itself is left alone).")
    assert buttons(slack.home_views["W0LEAD"]) == []  # his tab, refreshed
    [root] = slack.root_messages(CH)
    assert done["text"] in [m["text"] for m in slack.replies(CH, root["ts"])]
    assert services.store.watched_jobs.list("dev") == [] and fake_slurm.acted("cancel") == []


def test_a_home_tab_with_more_adopted_jobs_than_fit_says_how_many_more(app, services, slack,
                                                                        fake_slurm):
    for n in range(40):
        fake_slurm.add(5000 + n, name=f"job{n}", state="RUNNING")
        watch(app, str(5000 + n), "U0APPR")
    open_home(app, "U0APPR")
    view = slack.home_views["U0APPR"]  # published: the stand-in checks Slack's limits
    assert len(view["blocks"]) <= 100
    assert len(buttons(view)) == 30 and "…and 25 more" in texts(view)
    assert "*job39* · job 5039" in texts(view)  # newest first
