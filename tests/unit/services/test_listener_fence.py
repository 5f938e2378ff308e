"""The Slack listeners at a stop (handlers.fence, bot.app.run): work admitted before it is
waited for up to a bound, work arriving during it is refused with a "restarting" answer, and
a handler still under way after the SSH connections were closed cannot open a new one."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace
from typing import Any

from fakes import FakeSlurm, failed_run, make_config, make_context
from support.bolt_driver import click_body, slash_body
from support.slack_answers import Answers, Client

from bot.cluster.sessions import ClusterSessions
from bot.slack.views import ActionId
from handlers.actions import make_run_click
from handlers.fence import ListenerFence
from handlers.home import make_cancel_job
from handlers.slash_commands import make_run_train

LOG = logging.getLogger("test")


class CountedRunner:
    """An SSH runner stand-in: counts how many were opened."""

    def __init__(self, opened: list[Any]) -> None:
        opened.append(self)

    def close(self) -> None:
        pass


def test_a_handler_admitted_before_the_stop_opens_no_session_after_the_close(store) -> None:  # noqa: ANN001
    opened: list[Any] = []
    slurm = FakeSlurm()
    config = make_config()
    runner: Any = CountedRunner  # an SSH runner stand-in
    clusters = ClusterSessions(config, runner_factory=lambda _c: runner(opened),
                               slurm_factory=lambda _runner: slurm)
    in_handler, go_on = threading.Event(), threading.Event()

    def clock() -> float:  # the handler's first step: it waits here, admitted
        in_handler.set()
        go_on.wait(10)
        return 1000.0

    ctx = make_context(store, clusters=clusters, config=config, slack=False, clock=clock)
    store.watched_jobs.add("dev", "42", now=0.0)  # `/train status` asks Slurm about it
    fence = ListenerFence()
    run_train = make_run_train(ctx, fence)
    answers = Answers()
    body = slash_body("status", user="U0ALICE", channel="C0TRAIN", response_url="-")
    handler = threading.Thread(target=run_train, args=(body, answers, LOG))
    handler.start()
    assert in_handler.wait(10)
    fence.refuse()  # the stop: what follows bot.app.run does
    assert fence.wait(0.1) is False  # still under way after its bound
    clusters.close()
    go_on.set()
    handler.join(10)
    assert opened == [] and slurm.calls == []  # no SSH connection, nothing sent to Slurm
    [answer] = answers.sent
    assert "trainbot is stopping" in answer["text"], answer


def test_a_command_arriving_during_the_stop_is_answered_that_trainbot_is_restarting(
        store) -> None:  # noqa: ANN001
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, slack=False)
    fence = ListenerFence()
    fence.refuse()
    answers = Answers()
    make_run_train(ctx, fence)(
        slash_body("submit mix", user="U0ALICE", channel="C0TRAIN", response_url="-"),
        answers, LOG)
    [answer] = answers.sent
    assert answer["text"].startswith(":hourglass_flowing_sand: trainbot is restarting"), answer
    assert "Try again in a moment" in answer["text"] and answer["response_type"] == "ephemeral"
    assert slurm.calls == [] and store.audit.recent(10) == []


def test_a_click_arriving_during_the_stop_is_answered_that_trainbot_is_restarting(
        store) -> None:  # noqa: ANN001
    ctx = make_context(store, slack=False, slack_lang="ko")
    fence = ListenerFence()
    fence.refuse()
    answers, client = Answers(), Client()
    body = click_body(ActionId.RESUBMIT, "some-token", user="U0LEAD",
                      channel="C0TRAIN", message_ts="1.1", response_url="-")
    make_run_click(ctx, fence)(body, body["actions"][0], client, answers,
                               SimpleNamespace(headers={}), LOG)
    [answer] = answers.sent
    assert "trainbot이 다시 시작하는 중이라" in answer["text"], answer
    assert answer["response_type"] == "ephemeral" and client.posted == []
    assert store.audit.recent(10) == []  # not even the unknown token was looked at

    home_click = {"user": {"id": "U0LEAD"}, "view": {"type": "home"}}  # no response_url
    make_cancel_job(ctx, fence)(body=home_click, action={"value": "6101"}, logger=LOG,
                                client=client)
    [dm] = client.posted
    assert dm["channel"] == "U0LEAD" and "trainbot이 다시 시작하는 중이라" in dm["text"]
    assert store.audit.recent(10) == []


def test_the_stop_waits_for_a_handler_under_way_up_to_its_bound() -> None:
    fence = ListenerFence()
    release = threading.Event()

    def handler(for_s: float) -> None:
        with fence.admitted() as admitted:
            assert admitted
            release.wait(for_s)

    quick = threading.Thread(target=handler, args=(0.3,))
    quick.start()
    time.sleep(0.05)
    started = time.monotonic()
    fence.refuse()
    assert fence.wait(5.0) is True  # waited for it to end, not for the whole bound
    assert 0.15 < time.monotonic() - started < 4.0
    quick.join()

    fence = ListenerFence()
    stuck = threading.Thread(target=handler, args=(10.0,))
    stuck.start()
    time.sleep(0.05)
    fence.refuse()
    started = time.monotonic()
    assert fence.wait(0.3) is False  # no longer than its bound
    assert 0.25 < time.monotonic() - started < 2.0
    with fence.admitted() as admitted:
        assert admitted is False  # and nothing new is let in
    assert fence.in_flight == 1
    release.set()
    stuck.join()
    assert fence.in_flight == 0


# --- a handler the store's close stops (StoreClosed: the stop's bound passed under it) -------

class ClosingSlurm(FakeSlurm):
    """A FakeSlurm whose scancel closes the store once Slurm has done it: the handler's next
    store read or write meets a closed store (the stop went on without it)."""

    def __init__(self, store: Any) -> None:  # noqa: ANN401 - a test's Store
        super().__init__()
        self.store = store

    def cancel(self, job_id: int) -> None:
        super().cancel(job_id)
        self.store.close()


def closing_clock(store: Any) -> Any:  # noqa: ANN401
    """A handler clock whose first reading closes the store, before anything is done."""
    def clock() -> float:
        store.close()
        return 1000.0
    return clock


def test_a_command_the_stores_close_stops_before_anything_is_told_nothing_was_done(
        store) -> None:  # noqa: ANN001
    """Before, it got the internal-error reply."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, slack=False, clock=closing_clock(store))
    answers = Answers()
    make_run_train(ctx, ListenerFence())(
        slash_body("submit mix", user="U0ALICE", channel="C0TRAIN", response_url="-"),
        answers, LOG)
    [answer] = answers.sent
    assert answer["text"] == (
        ":hourglass_flowing_sand: trainbot is shutting down or restarting, so it stopped this "
        "command before it did anything: nothing was done. Try again in a minute.")
    assert answer["response_type"] == "ephemeral" and slurm.calls == []


def test_a_command_the_stores_close_stops_part_way_says_what_it_had_started(
        store) -> None:  # noqa: ANN001
    """The scancel went out, the store closed before the cancel was recorded: the answer
    names the scancel, and that nothing more of the command is done."""
    slurm = ClosingSlurm(store)
    ctx = make_context(store, slurm, clock=lambda: 1000.0)
    failed_run(ctx, now=1000.0, channel="C0TRAIN", job_id="88154")
    slurm.add(88154, state="RUNNING")
    answers = Answers()
    make_run_train(ctx, ListenerFence())(
        slash_body("cancel 88154", user="U0OWNER", channel="C0TRAIN", response_url="-"),
        answers, LOG)
    [answer] = answers.sent
    assert answer["text"] == (
        ":warning: trainbot is shutting down or restarting, so it stopped this command part "
        "way, after it had started `scancel 88154`. Nothing more of it is done: in a minute, "
        "check what it did (`/train status`) before you try it again.")
    assert slurm.acted("cancel") == [88154]


def test_a_click_the_stores_close_stops_is_told_so_in_its_language(
        store) -> None:  # noqa: ANN001
    """A thread's click stopped before anything: ephemeral; a Home tab's Cancel stopped after
    its scancel: in a direct message (the Home tab is not republished: it reads the store)."""
    slurm = ClosingSlurm(store)
    ctx = make_context(store, slurm, slack_lang="ko", clock=lambda: 1000.0)
    failed_run(ctx, now=1000.0, channel="C0TRAIN", job_id="88154")
    slurm.add(88154, state="RUNNING")
    answers, client = Answers(), Client()
    home_click = {"user": {"id": "U0OWNER"}, "view": {"type": "home"}}
    make_cancel_job(ctx, ListenerFence())(body=home_click, action={"value": "88154"},
                                          logger=LOG, client=client)
    [dm] = client.posted
    assert dm["channel"] == "U0OWNER" and dm["text"] == (
        ":warning: trainbot이 종료되거나 다시 시작하는 중이라 이 클릭을 `scancel 88154`을(를) "
        "시작한 뒤 중간에 멈췄습니다. 나머지는 하지 않습니다: 1분 뒤에 무엇이 되었는지 확인한 "
        "다음 (`/train status`, 실행의 스레드) 다시 클릭하세요.")
    assert slurm.acted("cancel") == [88154]

    body = click_body(ActionId.RESUBMIT, "some-token", user="U0LEAD",
                      channel="C0TRAIN", message_ts="1.1", response_url="-")
    make_run_click(ctx, ListenerFence())(body, body["actions"][0], client, answers,
                                         SimpleNamespace(headers={}), LOG)
    [answer] = answers.sent
    assert answer["text"] == (
        ":hourglass_flowing_sand: trainbot이 종료되거나 다시 시작하는 중이라 이 클릭을 아무것도 "
        "하기 전에 멈췄습니다: 아무것도 하지 않았습니다. 1분 뒤에 다시 시도하세요.")
    assert answer["response_type"] == "ephemeral" and len(client.posted) == 1
