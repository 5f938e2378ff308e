"""The real Bolt app, driven with Slack-shaped payloads, against the Slack Web API stand-in.

Cluster adapters are in-memory fakes here (tests/integration/test_train_commands.py uses the
real dev cluster); everything Slack-side is real: Bolt's dispatch, ack, lazy listeners,
response_url posts, the poster's thread, chat.update of the prompt.
"""

from __future__ import annotations

import threading

import pytest
from fakes import FakeClusters, FakeRunner, FakeSlurm, make_config, writer
from slack_bolt import App
from slack_standin import SlackStandIn
from support.bolt_driver import (
    ResponseUrls,
    SyncExecutor,
    ack_text,
    click_body,
    dispatch,
    slash_body,
)

from bot.app import build_app
from bot.services.approvals import ActionId
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt
from bot.store import Store

CH = "C0TRAIN"
NOW = 1_732_871_000.0


@pytest.fixture
def fake_slurm() -> FakeSlurm:
    return FakeSlurm()


@pytest.fixture
def services(slack_context, store, fake_slurm: FakeSlurm) -> BotContext:
    return slack_context(store, make_config(), FakeClusters(fake_slurm))


@pytest.fixture
def app(services: BotContext, slack_client) -> App:
    return build_app(services.config, services, client=slack_client,
                     listener_executor=SyncExecutor(), token_verification_enabled=False)


def train(app: App, urls: ResponseUrls, text: str, user: str = "U0ALICE",
          channel: str = CH) -> tuple[str, list[dict]]:
    url = urls.new()
    ack = ack_text(dispatch(app, slash_body(text, user=user, channel=channel, response_url=url)))
    return ack, urls.of(url)


def audit(services: BotContext) -> list[tuple[str, str, str | None, str]]:
    return [(e.actor, e.action, e.job_id, e.result)
            for e in reversed(services.store.audit.recent(200))]


def test_resume_submits_and_opens_the_runs_thread(app, urls, services, slack: SlackStandIn,
                                                  fake_slurm: FakeSlurm) -> None:
    ack, replies = train(app, urls, "resume mix")
    assert ack == ":hourglass_flowing_sand: `/train resume` …"
    assert len(replies) == 1
    assert replies[0]["response_type"] == "ephemeral"
    assert replies[0]["text"] == ("mix: submitted job 88887 (attempt 1), starting from scratch "
                                  "(the recipe has no checkpoint dir).")
    assert len(fake_slurm.submits()) == 1
    roots = slack.root_messages(CH)
    # the root is the root template (state, progress, attempts); who submitted is its reply
    assert len(roots) == 1 and roots[0]["text"] == "mix: job 88887 PENDING · —"
    assert roots[0]["blocks"][0]["text"]["text"] == "⏳ mix · job 88887 · PENDING"
    thread = slack.replies(CH, roots[0]["ts"])
    assert len(thread) == 1 and "job 88887 submitted by <@U0ALICE>" in str(thread[0]["blocks"])
    assert ("U0ALICE", "command.resume", "88887", "ok") in audit(services)


def test_parse_errors_are_answered_in_the_ack_and_do_nothing(app, urls, fake_slurm) -> None:
    ack, replies = train(app, urls, "resume mix; touch /tmp/pwned")
    assert ack.startswith(":x: `resume` got unexpected extra argument(s): 'touch'")
    assert "Usage: `/train resume RECIPE`" in ack
    assert replies == [] and fake_slurm.calls == []
    ack, _ = train(app, urls, "submit mix 'lr=0.1")
    assert "no closing quotation" in ack


def test_help_is_answered_in_the_ack(app, urls) -> None:
    ack, replies = train(app, urls, "")
    assert "`/train resume RECIPE`" in ack and "`/train logs JOBID|JOBID_TASK [N]" in ack
    assert replies == []


def test_bad_override_value_is_a_clean_ephemeral_error(app, urls, services, fake_slurm) -> None:
    _, replies = train(app, urls, "submit mix lr=$(id)")
    assert replies[0]["text"].startswith("lr must be a number, e.g. lr=0.0003")
    assert "Usage: `/train submit RECIPE [key=value ...]`" in replies[0]["text"]
    _, replies = train(app, urls, "submit mix mem=999T")
    assert "does not allow overriding 'mem'" in replies[0]["text"]
    assert fake_slurm.submits() == []
    assert ("U0ALICE", "command.submit", None, "refused") in audit(services)


def test_a_size_with_hundreds_of_digits_is_a_clear_refusal_and_audited(
        services, slack_client, urls, fake_slurm) -> None:
    services.config = make_config(overridable={"mem": "size"})
    app = build_app(services.config, services, client=slack_client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    _, replies = train(app, urls, "submit mix mem=" + "9" * 400 + "G")
    assert replies[0]["text"].startswith(
        "mem: '999999999999'… (401 characters) is too large for a memory size; at most 1024P")
    assert "internal error" not in replies[0]["text"]
    assert fake_slurm.submits() == []
    assert ("U0ALICE", "command.submit", None, "refused") in audit(services)


def test_submit_passes_typed_override_literally(app, urls, fake_slurm) -> None:
    _, replies = train(app, urls, "submit mix lr=3e-4 target_iter=9000")
    assert "submitted job 88887" in replies[0]["text"]
    submitted = fake_slurm.submits()[0]
    assert submitted.args == ("lr=0.0003",)


def test_outsider_and_wrong_channel_are_refused_saying_who_can(app, urls, services,
                                                               fake_slurm) -> None:
    _, replies = train(app, urls, "resume mix", user="U0EVE")
    assert replies[0]["text"] == (
        "Refused: you may not resume mix; ask group robots, <@U0OWNER> or group leads.")
    _, replies = train(app, urls, "resume mix", channel="C0OTHER")
    assert replies[0]["text"] == "Refused: `resume mix` is only accepted in <#C0TRAIN>."
    assert fake_slurm.submits() == []
    assert ("U0EVE", "command.resume", None, "refused") in audit(services)


def test_cancel_by_team_in_channel_refused_for_others(app, urls, services, fake_slurm) -> None:
    train(app, urls, "resume mix")
    _, replies = train(app, urls, "cancel 88887", user="U0EVE")
    assert replies[0]["text"].startswith("Refused: job 88887 belongs to mix; only ")
    assert fake_slurm.acted("cancel") == []
    _, replies = train(app, urls, "cancel 88887", user="U0OWNER")
    assert replies[0] == {"text": "Job 88887 cancelled by <@U0OWNER>.",
                          "response_type": "in_channel", "replace_original": False}
    assert fake_slurm.acted("cancel") == [88887]
    assert ("U0OWNER", "command.cancel", "88887", "ok") in audit(services)
    assert ("U0EVE", "command.cancel", "88887", "refused") in audit(services)


def test_resume_refused_while_the_last_job_still_runs(app, urls, fake_slurm) -> None:
    train(app, urls, "resume mix")
    fake_slurm.set(88887, state="RUNNING")
    _, replies = train(app, urls, "resume mix")
    assert replies[0]["text"].startswith("mix is still RUNNING as job 88887; cancel it first")
    assert len(fake_slurm.submits()) == 1


def test_status_and_history(app, urls) -> None:
    train(app, urls, "resume mix")
    _, replies = train(app, urls, "status mix")
    assert "88887" in replies[0]["text"] and "PENDING" in replies[0]["text"]
    _, replies = train(app, urls, "history mix")
    assert "chain 1 (active" in replies[0]["text"]


# ---------------------------------------------------------------------------- approval clicks


def prompt_in_thread(services: BotContext, slack: SlackStandIn) -> tuple[str, str]:
    """A failed run's incident prompt posted in its thread; returns (token, message ts)."""
    chain = services.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    services.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW)
    writer(services).post_root(chain.id, CH, [{"type": "section", "text": {
        "type": "mrkdwn", "text": "mix"}}], "mix")
    prompt = create_resubmit_prompt(services, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died: NCCL timeout",
                                    resume_iter=3000, mem="1900G")
    ts = writer(services).post_reply(chain.id, f"prompt:{prompt.token}", prompt.blocks, prompt.text)
    return prompt.token, ts


def click(app: App, urls: ResponseUrls, action: ActionId, token: str, ts: str, user: str,
          retry: int | None = None) -> list[dict]:
    url = urls.new()
    body = click_body(action, token, user=user, channel=CH, message_ts=ts, response_url=url)
    assert ack_text(dispatch(app, body, retry_num=retry)) == ""
    return urls.of(url)


def test_click_approves_once_and_updates_the_prompt(app, urls, services, slack,
                                                    fake_slurm) -> None:
    token, ts = prompt_in_thread(services, slack)
    assert click(app, urls, ActionId.RESUBMIT, token, ts, "W0LEAD") == []
    assert len(fake_slurm.submits()) == 1
    root = slack.root_messages(CH)[0]
    updates = [u for u in slack.ok_calls("chat.update") if u.params["ts"] == ts]
    assert len(updates) == 1
    # the prompt said iteration 3000, and no complete checkpoint is found at the click: it says so
    assert updates[0].params["text"] == (
        "Approved by <@W0LEAD>: resubmitted as 88887 from scratch (no complete checkpoint). The "
        "prompt said iteration 3,000: the newest complete checkpoint changed since it was "
        "posted.")
    # the thread's root is rewritten for the resumed job, and the resolution is a reply
    [root_update] = [u for u in slack.ok_calls("chat.update") if u.params["ts"] == root["ts"]]
    assert root_update.params["text"] == "mix: job 88887 PENDING · —"
    assert [r["text"] for r in slack.replies(CH, root["ts"])][-1] == (
        "mix: resumed as 88887 from scratch (no complete checkpoint)")

    # a double click and Slack's redelivery of the same click: nothing twice
    again = click(app, urls, ActionId.RESUBMIT, token, ts, "W0LEAD")
    retried = click(app, urls, ActionId.RESUBMIT, token, ts, "W0LEAD", retry=1)
    for answer in (again, retried):
        assert answer == [{"text": "Already decided by <@W0LEAD>; nothing was done again.",
                           "response_type": "ephemeral", "replace_original": False}]
    assert len(fake_slurm.submits()) == 1
    assert len(slack.ok_calls("chat.update")) == 2  # the prompt once, the root once
    results = [r for (_, a, _, r) in audit(services) if a == "approval.click"]
    assert results == ["ok", "duplicate", "duplicate"]


def test_unauthorized_click_is_refused_and_shown_refused(app, urls, services, slack,
                                                         fake_slurm) -> None:
    token, ts = prompt_in_thread(services, slack)
    answer = click(app, urls, ActionId.RESUBMIT, token, ts, "U0ALICE")
    assert answer[0]["text"].startswith("Refused: only <@U0APPR> or <@W0LEAD> can approve")
    assert fake_slurm.submits() == [] and slack.ok_calls("chat.update") == []
    assert ("U0ALICE", "approval.click", "88154", "unauthorized") in audit(services)


def test_an_approver_removed_after_the_prompt_was_posted_is_refused(app, urls, services, slack,
                                                                   fake_slurm) -> None:
    token, ts = prompt_in_thread(services, slack)
    services.config = make_config(approvers=["W0LEAD"])  # restarted without U0APPR
    answer = click(app, urls, ActionId.RESUBMIT, token, ts, "U0APPR")
    assert answer[0]["text"] == "Refused: only <@W0LEAD> can approve this. Nothing was done."
    assert fake_slurm.submits() == [] and slack.ok_calls("chat.update") == []
    assert ("U0APPR", "approval.click", "88154", "unauthorized") in audit(services)


def test_expired_click_is_refused(app, urls, services, slack, fake_slurm) -> None:
    token, ts = prompt_in_thread(services, slack)
    services.clock = lambda: NOW + 48 * 3600
    answer = click(app, urls, ActionId.RESUBMIT, token, ts, "W0LEAD")
    assert answer[0]["text"] == (
        "⌛ This prompt expired unanswered; nothing was resubmitted: job 88154 stays as it ended. "
        "`/train resume mix` resumes the run from its last complete checkpoint.")
    assert slack.ok_calls("chat.update")[0].params["text"] == answer[0]["text"]
    assert fake_slurm.submits() == []


def test_hold_competitor_yes_then_released(app, urls, services, slack, fake_slurm) -> None:
    from bot.services.competitors import release_started

    fake_slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
                   submit_time=1000.0)
    token, ts = prompt_in_thread(services, slack)
    click(app, urls, ActionId.RESUBMIT, token, ts, "W0LEAD")
    root = slack.root_messages(CH)[0]
    hold_msgs = [r for r in slack.replies(CH, root["ts"]) if "Hold 88017" in r["text"]]
    assert len(hold_msgs) == 1
    hold = hold_msgs[0]
    buttons = hold["blocks"][1]["elements"]
    assert [b["action_id"] for b in buttons] == [ActionId.HOLD_COMPETITOR,
                                                 ActionId.KEEP_COMPETITOR]
    click(app, urls, ActionId.HOLD_COMPETITOR, buttons[0]["value"], hold["ts"], "U0APPR")
    assert fake_slurm.acted("hold") == [88017]
    fake_slurm.set(88887, state="RUNNING")
    assert release_started(services, NOW + 60) == [88017]
    assert any(r["text"] == "Released 88017: 88887 is running."
               for r in slack.replies(CH, root["ts"]))


def test_error_in_a_lazy_listener_is_reported_not_silent(app, urls, services,
                                                         fake_slurm) -> None:
    def boom(**_: object) -> int:
        raise RuntimeError("disk full")

    fake_slurm.submit = boom
    _, replies = train(app, urls, "resume mix")
    assert replies[0]["text"].startswith(":warning: trainbot hit an internal error")


def test_redelivered_command_is_acked_but_carried_out_once(app, urls, fake_slurm) -> None:
    url = urls.new()
    body = slash_body("resume mix", user="U0ALICE", channel=CH, response_url=url)
    assert ack_text(dispatch(app, body)).startswith(":hourglass")
    assert ack_text(dispatch(app, body, retry_num=1)).startswith(":hourglass")
    assert len(fake_slurm.submits()) == 1
    assert len(urls.of(url)) == 1


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def shared_store_url(request: pytest.FixtureRequest, store_url: str) -> str:
    """One database for several replicas: the SQLite file, or a PostgreSQL database."""
    return store_url if request.param == "sqlite" else request.getfixturevalue(
        "postgres_store_url")


def test_a_command_redelivered_to_another_replica_runs_once(shared_store_url, slack_client,
                                                            slack_context, fake_slurm,
                                                            urls) -> None:
    """Slack redelivers a late-acked /train; the copies reach two replicas sharing one store
    at once: one sbatch, one answer; the other replica acks and says nothing more."""
    stores = [Store.open(shared_store_url) for _ in range(2)]
    apps = []
    for store in stores:
        ctx = slack_context(store, make_config(), FakeClusters(fake_slurm))
        apps.append(build_app(ctx.config, ctx, client=slack_client,
                              listener_executor=SyncExecutor(), token_verification_enabled=False))
    url = urls.new()
    body = slash_body("resume mix", user="U0ALICE", channel=CH, response_url=url)
    barrier = threading.Barrier(2)
    acks: list[str] = []
    errors: list[BaseException] = []

    def deliver(app: App, retry_num: int) -> None:
        try:
            barrier.wait()
            acks.append(ack_text(dispatch(app, body, retry_num=retry_num)))
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=deliver, args=(app, n)) for n, app in enumerate(apps)]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        assert [a.startswith(":hourglass") for a in acks] == [True, True]
        assert len(fake_slurm.submits()) == 1
        [reply] = urls.of(url)
        assert reply["text"].startswith("mix: submitted job 88887")
        assert sorted(e.action for e in stores[0].audit.recent(10)) == ["command.resume", "submit"]
    finally:
        for store in stores:
            store.close()


def test_watch_an_array_task_watches_its_own_job_id(app, urls, services, fake_slurm) -> None:
    # array 6100: task 0 finished as 6101, task 2 runs as 6103, tasks 3-5 still pending as 6100
    fake_slurm.add(6101, name="sweep", state="COMPLETED", array_job_id=6100, array_task_id=0)
    fake_slurm.add(6103, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=2)
    fake_slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    _, replies = train(app, urls, "watch 6100_2", user="W0LEAD")
    assert replies[0]["text"] == "Watching job 6100_2 (sweep, RUNNING, its own id 6103) on dev."
    assert [w.job_id for w in services.store.watched_jobs.list()] == ["6103"]
    _, replies = train(app, urls, "watch 6100_2", user="W0LEAD")
    assert replies[0]["text"] == "Job 6100_2 is already watched."
    _, replies = train(app, urls, "watch 6100_4", user="W0LEAD")
    assert replies[0]["text"].startswith("task 4 of array 6100 has not started yet")
    _, replies = train(app, urls, "watch 7000_1", user="W0LEAD")
    assert replies[0]["text"].startswith("Slurm on dev does not know job array 7000")
    fake_slurm.set(6100, state="CANCELLED")
    _, replies = train(app, urls, "watch 6100_9", user="W0LEAD")
    assert replies[0]["text"].startswith("array 6100 on dev has no task 9")
    assert ("command.watch", "6100_2", "ok") in {(a, j, r) for (_, a, j, r) in audit(services)}


def test_job_commands_take_an_array_task_and_act_on_its_own_id(app, urls, services,
                                                               fake_slurm) -> None:
    fake_slurm.add(6103, name="sweep", state="RUNNING", array_job_id=6100, array_task_id=2)
    fake_slurm.add(6100, name="sweep", state="PENDING", array_job_id=6100)
    _, replies = train(app, urls, "cancel 6100_2", user="W0LEAD")
    assert replies[0]["text"] == "Job 6100_2 (job 6103) cancelled by <@W0LEAD>."
    assert fake_slurm.acted("cancel") == [6103]  # the task, not the whole array 6100
    _, replies = train(app, urls, "hold 6100_4", user="W0LEAD")
    assert replies[0]["text"].startswith("task 4 of array 6100 has not started yet")
    _, replies = train(app, urls, "status 6100_2", user="W0LEAD")
    assert "6100_2 (6103)" in replies[0]["text"] and "*job 6100_2*" in replies[0]["text"]
    ack, _ = train(app, urls, "logs 6100_x", user="W0LEAD")
    assert "'6100_x' is not a job id: give 123 (a job or a whole array) or 123_4 (task 4 of " \
        "array 123)" in ack
    acts = {(a, j, r) for (_, a, j, r) in audit(services)}
    assert {("command.cancel", "6100_2", "ok"), ("command.hold", "6100_4", "refused")} <= acts


def test_hold_release_watch_and_logs_authorization(app, urls, services, fake_slurm) -> None:
    train(app, urls, "resume mix")
    _, replies = train(app, urls, "hold 88887", user="U0ALICE")
    assert replies[0]["text"] == "Job 88887 held by <@U0ALICE>."
    _, replies = train(app, urls, "release 88887", user="W0LEAD")
    assert replies[0]["text"] == "Job 88887 released by <@W0LEAD>."
    assert fake_slurm.acted("hold") == [88887] and fake_slurm.acted("release") == [88887]
    # a job trainbot did not submit: only the default approvers may touch it
    fake_slurm.add(5150, name="someone-else", state="RUNNING")
    _, replies = train(app, urls, "cancel 5150", user="U0ALICE")
    assert replies[0]["text"] == ("Refused: job 5150 was not submitted by trainbot; only "
                                  "group leads can cancel it.")
    _, replies = train(app, urls, "logs 88887", user="U0EVE")
    assert replies[0]["text"].startswith("Refused: job 88887 belongs to mix; only ")
    # watching posts the job's log evidence in a channel: who may not read its log may not
    _, replies = train(app, urls, "watch 5150", user="U0EVE")
    assert replies[0]["text"] == ("Refused: job 5150 was not submitted by trainbot; only "
                                  "group leads can watch it.")
    assert "5150" not in [w.job_id for w in services.store.watched_jobs.list()]
    _, replies = train(app, urls, "watch 5150", user="W0LEAD")
    assert replies[0]["text"] == "Watching job 5150 (someone-else, RUNNING) on dev."
    _, replies = train(app, urls, "watch 5150", user="W0LEAD")
    assert replies[0]["text"] == "Job 5150 is already watched."
    _, replies = train(app, urls, "watch 404", user="W0LEAD")
    assert replies[0]["text"].startswith("Slurm on dev does not know job 404")
    assert fake_slurm.acted("cancel") == []
    acts = {(a, j, r) for (_, a, j, r) in audit(services)}
    assert {("command.hold", "88887", "ok"), ("command.release", "88887", "ok"),
            ("command.cancel", "5150", "refused"), ("command.watch", "5150", "refused"),
            ("command.watch", "5150", "ok"),
            ("command.watch", "5150", "unchanged")} <= acts


def test_slack_refusing_the_thread_post_does_not_undo_or_hide_the_submit(
    app, urls, services, slack: SlackStandIn, fake_slurm
) -> None:
    slack.fail_next("chat.postMessage", status=400)
    _, replies = train(app, urls, "resume mix")
    assert replies[0]["text"].startswith("mix: submitted job 88887")
    assert len(fake_slurm.submits()) == 1
    assert slack.root_messages(CH) == []
    # the next action on the run opens the thread it could not open before
    _, replies = train(app, urls, "cancel 88887", user="U0OWNER")
    fake_slurm.set(88887, state="CANCELLED")
    _, replies = train(app, urls, "resume mix")
    assert replies[0]["text"].startswith("mix: submitted job 88888 (attempt 2)")
    assert len(slack.root_messages(CH)) == 1


def test_overrides_a_site_wrapper_did_not_apply_are_said_in_the_reply_and_thread(
    store, slack_client, slack_context, urls, slack: SlackStandIn
) -> None:
    """`/train submit` of a recipe with a site submit wrapper: the overrides reach it as
    sbatch's input variables; the one its job did not get is named, never shown applied."""
    wrapper = FakeRunner(default=(0, "Submitted batch job 777\n", ""))
    slurm = FakeSlurm(runner=wrapper)
    slurm.add(777, name="mix", partition="debug", account="root",
              mem_limit_bytes=950 * 1024**3)  # the wrapper forces --mem=950G
    services = slack_context(
        store, make_config(sbatch_script=None, submit_command=["/opt/site/submit"],
                           overridable={"mem": "size", "partition": "str", "lr": "float"}),
        FakeClusters(slurm))
    app = build_app(services.config, services, client=slack_client,
                    listener_executor=SyncExecutor(), token_verification_enabled=False)
    _, replies = train(app, urls, "submit mix partition=debug mem=400G lr=0.5")
    assert replies[0]["text"].endswith(
        ":warning: The site's submit command did not apply mem=400G (the job has 950G).")
    env = wrapper.calls[0].env
    assert (env["SBATCH_PARTITION"], env["SBATCH_MEM_PER_NODE"]) == ("debug", "400G")
    [root] = slack.root_messages(CH)
    [note] = slack.replies(CH, root["ts"])
    assert note["text"].endswith(
        "; overrides: partition=debug, lr=0.5 :warning: the site's submit command did not "
        "apply mem=400G (the job has 950G)")
