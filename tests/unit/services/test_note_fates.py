"""Every kind of thread note trainbot posts, when Slack does not take it, through the real
SlackPoster on the Slack stand-in (tests/slack_standin/): the watcher's notes (its Outbox
and ThreadEvents), a cluster's outage notice, a settled cancel's note (the scheduler's
`prompts` job), the note a Home tab's "Stop watching" leaves and the one saying a submit
the bot died in queued nothing (bot.services.threads.thread_note, tried again by the
`prompts` job); and the watcher's replies that are more than a note: an incident with its
approval prompt, a stall's prompt, a completed run's ✅ line. Each is decided in one place
(bot.services.threads.say_in_thread over bot.core.backoff.after_try): a refusal is tried
again once its backoff allows and posted once; a message Slack rejects itself is given up
once, never sent again; a reply whose run has no thread is not taken as posted, and is
posted once the thread is there."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fakes import (
    T0,
    AnswerLostSlurm,
    FakeResubmit,
    FakeSFTP,
    FakeSlurm,
    homes,
    make_config,
    make_context,
    present,
)
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.dying import Died
from support.e2e import accept, refuse
from support.in_flight import recover
from support.watcher import LOG, add_job, make_watcher, timed_out

from bot.app import build_scheduler, schedule_prompts
from bot.cli.status import format_report
from bot.cluster.errors import OutcomeUnknown
from bot.core import train_grammar as c
from bot.core.backoff import MAX_SKIPPED, THREADLESS_TRIES
from bot.core.catalogue import Catalogue
from bot.core.holders import ProcStat, format_holder
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics
from bot.core.policy import (
    OFFER_CANCEL_RESUME,
    AttemptFacts,
    ChainHistory,
    Decision,
    DecisionKind,
    PolicyParams,
    decide,
)
from bot.core.slack_bounds import POST_DEADLINE_S, bot_post_at_most_s
from bot.core.slurm.records import JobRecord
from bot.core.stacks import MARKER, PERMISSION_DENIED, ProcessFailure, StackReport, build_report
from bot.core.takeover import (
    RemoteDeadlines,
    cancel_takeover_s,
    post_takeover_s,
    submit_in_flight_s,
)
from bot.ops.procfs import ProcFS
from bot.services import threads
from bot.services.approvals import handle_click
from bot.services.competitors import hold_prompt_key, propose_holds_for_submit
from bot.services.home import stop_watching
from bot.services.leases import LeaseKeeper
from bot.services.lost_submit import recorded_result
from bot.services.ports import BotContext, PostError, PostRefused
from bot.services.prompt_follow_up import follow_up_prompts
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import announce_submit, announce_unposted_roots
from bot.services.scheduler import JobScheduler
from bot.services.stacks import Forensics
from bot.services.status import job_status
from bot.services.submit_result import SubmitResult
from bot.services.threads import (
    THREAD_NOTE,
    THREADLESS,
    Rooted,
    open_thread,
    post_safely,
    refresh_root,
    say_pending_notes,
)
from bot.services.train import execute
from bot.services.watch.events import TickReport, WatchEvent
from bot.services.watch.outbox import Outbox
from bot.services.watch_events import ThreadEvents
from bot.slack.poster import SlackPoster
from bot.slack.retry import make_client
from bot.slack.views import ActionId
from bot.store import Store

PRIVATE = "G0RUNS"  # the run's private channel (the bot is removed from it, then back)
SETTLE_AT = T0 + cancel_takeover_s(RemoteDeadlines()) + 60  # a lost scancel is settled
# a note's state once given up: "dropped", or a thread note's THREADLESS (its run had no
# thread: said once the thread opens after all)
GIVEN_UP = ("dropped", THREADLESS)


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


@dataclass
class Run:
    """A run on cluster dev whose thread, if any, is in PRIVATE (its recipe's channel), with
    the real poster."""

    ctx: BotContext
    poster: SlackPoster
    chain_id: int
    clock: list[float]

    def open_thread(self) -> str:
        return self.poster.post_root(self.chain_id, PRIVATE, [], "mix")


@dataclass
class Note:
    """One kind of note set up on `run`: `chance(i)` is its i-th chance (its first try at
    0: a watcher's tick, a run of the `prompts` job …), `key` its post's, `state()` what its
    publisher recorded of it: "posted", "pending" (still to say) or one of GIVEN_UP."""

    key: str
    chance: Callable[[int], object]
    state: Callable[[], str]


def make_run(slack: SlackStandIn, store: Store, *, kind: str = "run", recipe: str = "mix",
             slurm: AnswerLostSlurm | None = None, sftp: FakeSFTP | None = None,
             **recipe_over: Any) -> Run:
    ctx, poster, clock = slack_context(slack, store, slurm, sftp=sftp, **recipe_over)
    chain = store.chains.create(recipe=recipe, cluster="dev", job_name="mix", now=T0 - 1000,
                                kind=kind, watched_by="U0BOB" if kind == "adopted" else None)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0 - 1000)
    store.watched_jobs.add("dev", "88154", now=T0 - 1000, chain_id=chain.id)
    return Run(ctx, poster, chain.id, clock)


def slack_context(slack: SlackStandIn, store: Store, slurm: FakeSlurm | None = None, *,
                  sftp: FakeSFTP | None = None, **recipe_over: Any
                  ) -> tuple[BotContext, SlackPoster, list[float]]:
    """A bot's context over `slurm` (an AnswerLostSlurm by default) and `sftp` posting through
    the real poster on the stand-in (Home tabs recorded: homes()), its clock (T0 until a test
    moves it) and recipe mix's channel PRIVATE (`recipe_over` on top of it)."""
    client: WebClient = make_client(slack.token, base_url=slack.api_url,
                                    sleep=lambda s: None, timeout=10)
    clock = [T0]
    slack.clock = lambda: clock[0]  # Slack's ts follow the bot's clock (a lookup's `oldest`)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=lambda s: None, clock=lambda: clock[0])
    config = make_config(**recipe_over)
    config.slack.channels["training"] = PRIVATE  # recipe mix's channel
    ctx = make_context(store, slurm or AnswerLostSlurm(lost=0, submitted_at=T0), sftp=sftp,
                       sink=poster, config=config, charts=False, clock=lambda: clock[0])
    return ctx, poster, clock


def outbox_state(run: Run, key: str) -> Callable[[], str]:
    return lambda: present(run.ctx.store.incidents.get(key)).state


def tick(outbox: Outbox, event: WatchEvent, class_id: str, *, ok: bool
         ) -> Callable[[int], None]:
    """A watcher's i-th tick (a minute apart) that emits `event` again: the tick begins
    (its roots of thread-less runs tried again), then the event is published."""

    def chance(i: int) -> None:
        outbox.new_tick()
        outbox.emit(event, class_id, T0 + 60 * i, TickReport(ok=ok))

    return chance


def watcher_note(run: Run) -> Note:
    """A held job's note, emitted again at each tick (its job still held)."""
    outbox = Outbox("dev", store=run.ctx.store, sink=ThreadEvents(run.ctx))
    key = "dev:88154:held:1"
    event = WatchEvent("held", key, "dev", "job 88154 has been held (JobHeldAdmin)",
                       run.chain_id, "88154", "mix", text_only=True)
    return Note(key, tick(outbox, event, "held", ok=True), outbox_state(run, key))


def diagnosis(class_id: str, last_iter: int) -> Diagnosis:
    cls = Catalogue.load().classes[class_id]
    return Diagnosis(class_id=class_id, action=cls.action, retryable=cls.retryable,
                     charges_budget=cls.charges_budget, hint=cls.hint, title=cls.title,
                     metrics=DiagnosisMetrics(last_iter=last_iter, target_iter=8000))


def watcher_reply(run: Run, event: WatchEvent, class_id: str, *,
                  forensics: Forensics | None = None) -> Note:
    """The watcher's event `event`, emitted again at each tick (a finished job stays watched
    until its incident is posted; a stall while it is seen)."""
    outbox = Outbox("dev", store=run.ctx.store,
                    sink=ThreadEvents(run.ctx, forensics=forensics))
    return Note(event.key, tick(outbox, event, class_id, ok=True),
                outbox_state(run, event.key))


def incident(run: Run, forensics: Forensics | None = None) -> Note:
    """Job 88154's nccl_timeout: its incident asks for a resubmit (an approval prompt) (and
    its flight recorder read by `forensics`, for a recipe with `nccl_flight_recorder`)."""
    d = diagnosis("nccl_timeout", 3400)
    dec = decide(d, ChainHistory(attempts=(AttemptFacts("88154", 1, last_iter=3400),)),
                 PolicyParams(backoff_s=60), T0, checkpoint_iter=3000,
                 accounting=Accounting(state="FAILED", exit_code=1, signal=0))
    return watcher_reply(run, WatchEvent(
        "incident", "dev:88154:final", "dev", "job 88154 FAILED: nccl_timeout", run.chain_id,
        "88154", "mix", diagnosis=d, decision=dec,
        record=JobRecord(job_id=88154, state="FAILED")), "nccl_timeout", forensics=forensics)


def stall_prompt(run: Run, forensics: Forensics | None = None) -> Note:
    """Job 88154 stalled: a warning with Cancel and resume / Cancel / Dismiss buttons (and
    its stacks collected by `forensics`)."""
    dec = Decision(DecisionKind.WARN, "no progress for 40 min", "hang",
                   offers=(OFFER_CANCEL_RESUME,), key="hang")
    return watcher_reply(run, WatchEvent(
        "warning", "dev:88154:hang:1", "dev", "job 88154 stalled for 40 min", run.chain_id,
        "88154", "mix", diagnosis=diagnosis("hang", 3400), decision=dec), "hang",
        forensics=forensics)


def completed_line(run: Run) -> Note:
    """Job 88154 completed: the ✅ line that ends the thread."""
    return watcher_reply(run, WatchEvent(
        "incident", "dev:88154:final", "dev", "job 88154 COMPLETED", run.chain_id, "88154",
        "mix", diagnosis=diagnosis("completed", 8000),
        decision=Decision(DecisionKind.NONE, "the run completed", "completed")), "completed")


def outage_notice(run: Run) -> Note:
    """A cluster's unreachable notice, published again at each failed tick."""
    outbox = Outbox("dev", store=run.ctx.store, sink=ThreadEvents(run.ctx))
    event = WatchEvent("cluster_unreachable", "cluster:dev:down:1", "dev",
                       "cluster dev unreachable for 3 ticks", text_only=True)
    return Note(f"cluster:dev:down:1:chain:{run.chain_id}",
                tick(outbox, event, "cluster_unreachable", ok=False),
                outbox_state(run, "cluster:dev:down:1"))


def settle_note(run: Run) -> Note:
    """W0LEAD's Cancel whose scancel's end was lost, the job then CANCELLED: the `prompts`
    job settles it and says so in the thread (its runs are the chances)."""
    ctx, slurm = run.ctx, run.ctx.clusters.slurm("dev")
    assert isinstance(slurm, AnswerLostSlurm)
    slurm.add(88154, name="mix", state="RUNNING", partition="debug", account="root")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=run.chain_id, job_id="88154",
                                    now=T0 - 100, summary="88154: stalled",
                                    offer_cancel=True, post_key="prompt:88154")
    slurm.cancel_lost = OutcomeUnknown(["scancel", "88154"], "did not answer within 60 s")
    assert handle_click(ctx, prompt.token, ActionId.CANCEL, "W0LEAD", T0).status == "done"
    slurm.cancel_lost = None
    slurm.set(88154, state="CANCELLED", end_time=T0 + 10)
    scheduler = JobScheduler(LeaseKeeper(ctx.store.leases), clock=lambda: run.clock[0])
    schedule_prompts(scheduler, ctx)
    [job] = scheduler.jobs()
    key = f"cancel-settled:{prompt.token}"

    def chance(i: int) -> None:
        run.clock[0] = SETTLE_AT + 30 * i
        job.func()

    def state() -> str:
        if "cancel_announced" not in ctx.store.approvals.steps(prompt.token):
            return "pending"
        post = ctx.store.slack_posts.get(key)
        return "posted" if post is not None and post.posted else "dropped"

    return Note(key, chance, state)


def unwatched_note(run: Run) -> Note:
    """U0BOB stops watching the job he adopted (a Home tab's "Stop watching"); the
    `prompts` job's runs are the note's later chances."""

    def chance(i: int) -> None:
        if i == 0:
            stop_watching(run.ctx, run.chain_id, "U0BOB", T0)
        else:
            say_pending_notes(run.ctx)

    key = f"chain:{run.chain_id}:unwatched"
    return Note(key, chance, outbox_state(run, key))


def not_queued_note(run: Run) -> Note:
    """A submit into the run that the bot died in before its sbatch: the `submits` job finds
    no job of its name and says so in the thread; the `prompts` job's runs are the note's
    later chances."""
    store = run.ctx.store
    flight = store.submits_in_flight.add(
        cluster="dev", recipe="mix", job_name="mix", chain_id=run.chain_id, array_task=None,
        resumed_at=None, charge_retry=False, actor="U0ALICE", channel=PRIVATE, sent_at=T0)
    key = f"submit-not-queued:{flight.flight.id}:{T0:.0f}"

    def chance(i: int) -> None:
        if i == 0:
            recover(run.ctx, T0 + submit_in_flight_s(RemoteDeadlines()) + 1)
            assert store.submits_in_flight.sent_before("dev", float("inf")) == []
        else:
            say_pending_notes(run.ctx)

    return Note(key, chance, outbox_state(run, key))


KINDS: dict[str, tuple[Callable[[Run], Note], dict[str, Any]]] = {
    "the watcher's note": (watcher_note, {}),
    "an outage notice": (outage_notice, {}),
    "a settled cancel's note": (settle_note, {}),
    "the unwatched note": (unwatched_note, {"kind": "adopted", "recipe": ""}),
    "the not-queued note": (not_queued_note, {}),
    "an incident with its approval prompt": (incident, {}),
    "a stall prompt": (stall_prompt, {}),
    "a completed run's ✅ line": (completed_line, {}),
}
# the watcher's replies, each emitted again at every tick until it is posted or given up
WATCHER_KINDS = {"the watcher's note": (watcher_note, "note", "job 88154 has been held "
                                        "(JobHeldAdmin)"),
                 "an incident with its approval prompt": (incident, "incident",
                                                          "job 88154 FAILED: nccl_timeout"),
                 "a stall prompt": (stall_prompt, "stall prompt",
                                    "job 88154 stalled for 40 min"),
                 "a completed run's ✅ line": (completed_line, "✅ completed line",
                                              "job 88154 COMPLETED")}


def tries(slack: SlackStandIn, key: str) -> list[Any]:
    """The chat.postMessage calls of the post `key` made so far."""
    return [r for r in slack.calls("chat.postMessage") if key in str(r.params.get("metadata"))]


def warnings(caplog: Any, key: str) -> list[str]:
    """The warnings of the post `key`, from the one place notes are decided
    (bot.services.threads)."""
    return [r.getMessage() for r in caplog.records if r.name == "bot.services.threads"
            and r.levelno >= logging.WARNING and key in r.getMessage()]


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_note_is_tried_again_once_its_backoff_allows_and_posted_once(
        slack: SlackStandIn, store: Store, caplog: Any, kind: str) -> None:
    """The bot is removed from the run's private channel: the note is refused at its first
    chance, not taken as posted, tried again after 1 then 2 chances skipped (Slack is not
    called meanwhile). Invited back after chance 3, the next try (5) posts it, once; its
    later chances send nothing. One warning at the series' first try (the run, the channel,
    the thread, Slack's error), one when it is posted."""
    make_note, run_kw = KINDS[kind]
    run = make_run(slack, store, **run_kw)
    root = run.open_thread()
    note = make_note(run)
    refuse(slack, "the bot is out of its channel", channel=PRIVATE)
    caplog.set_level(logging.DEBUG)
    tried_at = []
    for i in range(9):
        if i == 4:
            accept(slack, "the bot is out of its channel", channel=PRIVATE)
        before = len(tries(slack, note.key))
        note.chance(i)
        if len(tries(slack, note.key)) > before:
            tried_at.append(i)
        if i < 5:
            assert note.state() == "pending", i
    assert tried_at == [0, 2, 5]
    assert note.state() == "posted"
    assert [r for r in tries(slack, note.key) if r.response.get("ok")] != []
    posted = [m for m in slack.replies(PRIVATE, root)
              if (m.get("metadata") or {}).get("event_payload", {}).get("key") == note.key]
    assert len(posted) == 1
    first, end = warnings(caplog, note.key)
    assert "Slack refused the" in first and note.key in first
    assert PRIVATE in first and root in first and "not_in_channel" in first
    assert f"{note.key} is posted in {PRIVATE} (thread {root}), after 2 failed tries" in end


@pytest.mark.parametrize("kind", KINDS)
def test_a_note_slack_rejects_itself_is_given_up_once_and_never_sent_again(
        slack: SlackStandIn, store: Store, caplog: Any, kind: str) -> None:
    """Slack rejects the note itself (invalid_blocks: the same message will never be
    taken): it is given up at its first try, one warning naming the run, the channel, the
    thread and Slack's error; its later chances send nothing, and its publisher records it
    given up (a settle goes on saying the rest)."""
    make_note, run_kw = KINDS[kind]
    run = make_run(slack, store, **run_kw)
    root = run.open_thread()
    note = make_note(run)
    slack.fail_next("chat.postMessage", status=200, error="invalid_blocks")
    caplog.set_level(logging.DEBUG)
    for i in range(6):
        note.chance(i)
    assert [r.response.get("error") for r in tries(slack, note.key)] == ["invalid_blocks"]
    assert note.state() == "dropped"
    [said] = warnings(caplog, note.key)
    assert "itself" in said and "given up, not tried again" in said and note.key in said
    assert PRIVATE in said and root in said and "invalid_blocks" in said


@pytest.mark.parametrize("kind", KINDS)
def test_a_note_whose_run_has_no_thread_waits_for_it_and_is_posted_once(
        slack: SlackStandIn, store: Store, caplog: Any, kind: str) -> None:
    """The run's root message is not posted (Slack answers 500 to every attempt when the
    note's first try posts it): the note is not taken as posted (before, it was logged and
    marked posted, and the thread never heard it), and nothing is sent. Its root failed for
    now, a later chance (after its backoff) tries it again and posts the note under it,
    once."""
    make_note, run_kw = KINDS[kind]
    run = make_run(slack, store, **run_kw)
    note = make_note(run)
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    caplog.set_level(logging.DEBUG)
    note.chance(0)
    assert tries(slack, note.key) == [] and note.state() == "pending"
    [waits] = warnings(caplog, note.key)
    assert note.key in waits and "waits for its thread" in waits
    root = run.open_thread()
    for i in range(1, 6):
        note.chance(i)
    assert len(tries(slack, note.key)) == 1 and note.state() == "posted"
    assert [m for m in slack.replies(PRIVATE, root)
            if (m.get("metadata") or {}).get("event_payload", {}).get("key") == note.key]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_whose_runs_root_slack_keeps_failing_is_given_up_after_the_threadless_tries(
        slack: SlackStandIn, store: Store, caplog: Any, kind: str) -> None:
    """Slack answers 500 to every post of the run's root message, for good: the root is
    tried with the reply's tries only, after 1, 2, 4, 8, at most 16 chances skipped, and
    after THREADLESS_TRIES of them (about 35 min at a 30-s tick) the reply is given up as
    one whose root is not there: its publisher records it dropped, one warning says so,
    and its later chances try nothing. Before, the root was tried at every chance for
    ever and the reply never given up."""
    make_note, run_kw = KINDS[kind]
    run = make_run(slack, store, **run_kw)
    note = make_note(run)
    slack.fail_next("chat.postMessage", status=500, count=10 ** 6)
    caplog.set_level(logging.DEBUG)
    root_tried_at = []  # the chances Slack was called at: the root's tries (all fail)
    for i in range(90):
        before = len(slack.requests)
        note.chance(i)
        if len(slack.requests) > before:
            root_tried_at.append(i)
        assert note.state() in (GIVEN_UP if i >= 70 else ("pending",)), i
    assert root_tried_at == [0, 2, 5, 10, 19, 36, 53, 70]
    assert THREADLESS_TRIES == len(root_tried_at) and tries(slack, note.key) == []
    *_, said = warnings(caplog, note.key)
    assert said.startswith(f"chain {run.chain_id} (mix): ") and note.key in said
    assert f"given up after {THREADLESS_TRIES} tries" in said
    assert "could not be posted: Slack failed its try" in said
    assert [w for w in warnings(caplog, note.key) if "is given up" in w] == [said]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_whose_runs_root_slack_refused_is_given_up_at_once_and_says_the_fix(
        slack: SlackStandIn, store: Store, caplog: Any, kind: str) -> None:
    """The run's root message is refused (the bot out of its channel): the reply's first
    try posts the root again (there, its channel), refused again, and the reply is given up
    there and then, not after THREADLESS_TRIES tries (about 35 min, its job's result,
    chain status and automatic resubmit held back meanwhile), with one warning naming the
    run, the channel, Slack's error and its fix. Nothing is posted in a thread, no approval
    is asked where nobody sees it, and its later chances send nothing."""
    make_note, run_kw = KINDS[kind]
    run = make_run(slack, store, **run_kw)
    refuse(slack, "the bot is out of its channel", channel=PRIVATE)
    with pytest.raises(PostRefused):
        run.open_thread()
    note = make_note(run)
    caplog.set_level(logging.DEBUG)
    for i in range(4):
        note.chance(i)
        assert note.state() in GIVEN_UP, i
    assert tries(slack, note.key) == []
    roots = tries(slack, f"chain:{run.chain_id}:root")
    assert [r.response.get("error") for r in roots] == ["not_in_channel"] * 2
    assert store.approvals.for_chain(run.chain_id, "pending") == []
    [said] = warnings(caplog, note.key)
    assert f"chain {run.chain_id} (mix): " in said and "is given up" in said
    assert PRIVATE in said and "not_in_channel" in said and "/invite @trainbot" in said


def test_a_refused_root_opens_with_the_first_reply_once_the_bot_is_back(
        slack: SlackStandIn, store: Store) -> None:
    """The root refused and an incident given up meanwhile; the bot invited back, the run's
    next reply posts the root and itself under it, once."""
    run = make_run(slack, store)
    refuse(slack, "the bot is out of its channel", channel=PRIVATE)
    with pytest.raises(PostRefused):
        run.open_thread()
    incident(run).chance(0)
    accept(slack, "the bot is out of its channel", channel=PRIVATE)
    note = stall_prompt(run)
    for i in range(1, 4):
        note.chance(i)
    assert note.state() == "posted" and len(tries(slack, note.key)) == 1
    [root] = slack.root_messages(PRIVATE)
    assert [m for m in slack.replies(PRIVATE, root["ts"])
            if (m.get("metadata") or {}).get("event_payload", {}).get("key") == note.key]


def test_a_timed_out_job_whose_runs_root_was_refused_is_ended_and_resubmitted_at_once(
        slack: SlackStandIn, store: Store) -> None:
    """Job 88300 of an `auto` recipe hits its time limit while its run's root message is
    refused (the bot out of its channel): its incident is given up at the tick that sees the
    end, so the job's result is stored, it is no longer watched, and its automatic resubmit
    is made once the backoff has passed. Before, the job stayed watched, its result and its
    resubmit held back, for THREADLESS_TRIES tries (about 35 min at a 30-s tick)."""
    ctx, poster, _ = slack_context(slack, store)
    resubmit = FakeResubmit(store)
    watcher, chain = timed_out((store, FakeSlurm(), FakeSFTP(), ThreadEvents(ctx)), resubmit)
    refuse(slack, "the bot is out of its channel", channel=PRIVATE)
    with pytest.raises(PostRefused):
        poster.post_root(chain.id, PRIVATE, [], "auto")
    watcher.tick(T0 + 1310)
    assert present(store.incidents.get("dev:88300:final")).state == "dropped"
    assert present(store.attempts.get_by_job("88300")).result == "TIMEOUT"
    assert store.watched_jobs.get("dev", "88300") is None
    for t in (1380, 1440):
        watcher.tick(T0 + t)
    assert resubmit.calls == [("auto", chain.id, 1200)]


@pytest.mark.parametrize("answer_lost", [False, True])
def test_a_root_slack_failed_to_take_is_posted_by_the_first_reply_that_needs_it(
        slack: SlackStandIn, store: Store, answer_lost: bool) -> None:
    """The run's root message failed for a reason of Slack's own (a 500 on every attempt of
    the poster; or the last one posted it and its answer was lost), not a refusal: its
    intent is kept, with its channel. The incident's first try posts the root (found, not
    sent again, when it was in fact posted) and then itself under it, with its approval
    prompt, once: one root in the channel, one reply. Before, the incident waited for a
    thread nothing would post, and was given up after THREADLESS_TRIES tries."""
    run = make_run(slack, store)
    attempts = run.poster.max_attempts
    if answer_lost:
        slack.fail_next("chat.postMessage", status=500, count=attempts - 1)
        slack.fail_next("chat.postMessage", status=500, after_processing=True)
    else:
        slack.fail_next("chat.postMessage", status=500, count=attempts)
    with pytest.raises(PostError):
        run.open_thread()
    assert len(slack.root_messages(PRIVATE)) == (1 if answer_lost else 0)
    note = incident(run)
    for i in range(4):
        note.chance(i)
    [root] = slack.root_messages(PRIVATE)
    assert note.state() == "posted" and len(tries(slack, note.key)) == 1
    [posted] = [m for m in slack.replies(PRIVATE, root["ts"])
                if (m.get("metadata") or {}).get("event_payload", {}).get("key") == note.key]
    [approval] = store.approvals.for_chain(run.chain_id, "pending")
    buttons = [e for b in posted["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert buttons and {e["value"] for e in buttons} == {approval.token}


@pytest.mark.parametrize("kind", WATCHER_KINDS)
def test_a_reply_after_a_crash_before_the_root_posts_the_root_once_and_itself_under_it(
        slack: SlackStandIn, store: Store, kind: str) -> None:
    """The bot stopped after recording the run's submit (its chain, attempt and watched
    job) and before posting its root message: nothing of the root is in the store. A new
    bot over the same store: the run's first reply posts the root in the recipe's channel,
    once, and itself under it, at its first try. Before, the reply waited THREADLESS_TRIES
    tries (about 35 min, its job held back) for a root nothing would post, then was given
    up."""
    make_note, _, _ = WATCHER_KINDS[kind]
    crashed = make_run(slack, store)
    ctx, poster, clock = slack_context(slack, store)  # the bot started again
    note = make_note(Run(ctx, poster, crashed.chain_id, clock))
    note.chance(0)
    [root] = slack.root_messages(PRIVATE)
    assert len(tries(slack, f"chain:{crashed.chain_id}:root")) == 1
    assert note.state() == "posted" and len(in_thread(slack, root["ts"], note.key)) == 1
    for i in range(1, 4):
        note.chance(i)
    assert len(slack.root_messages(PRIVATE)) == 1 and len(tries(slack, note.key)) == 1


@pytest.mark.parametrize("kind", WATCHER_KINDS)
def test_a_reply_whose_run_has_no_channel_is_given_up_at_once_and_names_the_setting(
        slack: SlackStandIn, store: Store, caplog: Any, kind: str) -> None:
    """The run's recipe has no channel (neither its own nor slack.default_channel), so its
    root message was never posted and never will be: the reply is given up at its first
    try, nothing sent, one warning naming the run and the setting to fix. Before, it waited
    THREADLESS_TRIES tries (about 35 min, its job held back), then was given up."""
    make_note, _, _ = WATCHER_KINDS[kind]
    run = make_run(slack, store)
    run.ctx.config.recipes["mix"].channel = None
    run.ctx.config.slack.default_channel = None
    note = make_note(run)
    caplog.set_level(logging.DEBUG)
    for i in range(3):
        note.chance(i)
        assert note.state() in GIVEN_UP, i
    assert slack.calls("chat.postMessage") == []
    [said] = warnings(caplog, note.key)
    assert said.startswith(f"chain {run.chain_id} (mix): ") and "is given up" in said
    assert "no channel" in said and "set recipes.mix.channel" in said


class Collector:
    """A stall's stack collection (bot.services.stacks.StackCollector) that reads none (py-spy
    may not attach), counting its collections."""

    def __init__(self) -> None:
        self.jobs: list[str] = []

    def prepare(self, cluster: str) -> None:
        pass

    def collect(self, cluster: str, job_id: str, *,
                trainer_pids: dict[str, tuple[int, ...]] | None = None) -> StackReport:
        self.jobs.append(job_id)
        return StackReport(job_id, None,
                           ProcessFailure("", None, None, PERMISSION_DENIED, "EPERM"))


def in_thread(slack: SlackStandIn, root: str, key: str) -> list[dict[str, Any]]:
    """The replies posted under `key` in the thread of `root` (in PRIVATE)."""
    return [m for m in slack.replies(PRIVATE, root)
            if (m.get("metadata") or {}).get("event_payload", {}).get("key") == key]


def test_a_stall_prompt_slack_did_not_take_does_not_hold_back_the_stalls_stacks(
        slack: SlackStandIn, store: Store) -> None:
    """Slack answers the stall prompt with a 500 on every attempt: the prompt stays pending,
    tried again at the next tick, but the stacks of the stall are collected now (while the
    job is stalled, not once Slack takes the prompt) and said in the thread. The prompt's
    next try posts it, once, and collects nothing again."""
    run = make_run(slack, store)
    root = run.open_thread()
    collector = Collector()
    forensics = Forensics(run.ctx, collector)  # type: ignore[arg-type]
    note = stall_prompt(run, forensics)
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    note.chance(0)
    assert forensics.wait(10)
    assert note.state() == "pending" and in_thread(slack, root, note.key) == []
    assert collector.jobs == ["88154"] and len(in_thread(slack, root, f"stacks:{note.key}")) == 1
    for i in range(1, 3):
        note.chance(i)
    assert forensics.wait(10)
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    assert collector.jobs == ["88154"] and len(in_thread(slack, root, f"stacks:{note.key}")) == 1
    forensics.close()


class FailingPostCollector(Collector):
    """A Collector after whose collection Slack answers the stacks' post 500 at every one of
    the poster's attempts (`attempts`)."""

    def __init__(self, slack: SlackStandIn, attempts: int) -> None:
        super().__init__()
        self.slack, self.attempts = slack, attempts

    def collect(self, cluster: str, job_id: str, *,
                trainer_pids: dict[str, tuple[int, ...]] | None = None) -> StackReport:
        self.slack.fail_next("chat.postMessage", status=500, count=self.attempts)
        return super().collect(cluster, job_id, trainer_pids=trainer_pids)


@pytest.mark.parametrize("prompt_taken", [True, False], ids=["prompt posted", "prompt 500"])
def test_stacks_slack_did_not_take_are_kept_posted_later_and_not_collected_again(
        slack: SlackStandIn, store: Store, prompt_taken: bool) -> None:
    """The stall's stacks, collected at the stall prompt's first try, are not posted: Slack
    answers their post 500 (and the prompt's too, or not). The stacks are kept: the
    `prompts` job's next run posts them, once, the prompt is posted once, and the job's
    stacks are collected once (py-spy attached to the job once). Before, they were never
    posted once the prompt was (nothing published it again), and while the prompt waited a
    kept post counted as not reported: its next publish collected the stacks over SSH again."""
    run = make_run(slack, store)
    root = run.open_thread()
    collector = FailingPostCollector(slack, run.poster.max_attempts)
    forensics = Forensics(run.ctx, collector)  # type: ignore[arg-type]
    note = stall_prompt(run, forensics)
    if not prompt_taken:
        slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    note.chance(0)
    assert forensics.wait(10)
    stacks = f"stacks:{note.key}"
    assert note.state() == ("posted" if prompt_taken else "pending")
    assert in_thread(slack, root, stacks) == []
    for i in range(1, 4):
        note.chance(i)
        assert forensics.wait(10)
        say_pending_notes(run.ctx)
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    assert collector.jobs == ["88154"] and len(in_thread(slack, root, stacks)) == 1
    assert "No stacks of job 88154" in str(in_thread(slack, root, stacks)[0]["blocks"])
    forensics.close()


def test_a_bot_restarted_during_a_stall_does_not_collect_its_stacks_again(
        slack: SlackStandIn, store: Store) -> None:
    """The stall's stacks are collected and posted while Slack does not take its prompt;
    then the bot restarts (a new bot over the same store), the job still stalled: the
    prompt's next try posts it, once, and the stacks are not collected again (py-spy is not
    attached to the job twice), their post still one. Before, the record of the collection
    was in memory only, and the new bot collected them once more."""
    run = make_run(slack, store)
    root = run.open_thread()
    forensics = Forensics(run.ctx, Collector())  # type: ignore[arg-type]
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    stall_prompt(run, forensics).chance(0)
    assert forensics.wait(10)
    ctx, poster, clock = slack_context(slack, store)  # the bot started again
    collector = Collector()
    forensics = Forensics(ctx, collector)  # type: ignore[arg-type]
    note = stall_prompt(Run(ctx, poster, run.chain_id, clock), forensics)
    assert note.state() == "pending"
    for i in range(1, 3):
        note.chance(i)
    assert forensics.wait(10)
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    assert collector.jobs == [] and len(in_thread(slack, root, f"stacks:{note.key}")) == 1


def test_a_completed_line_slack_did_not_take_does_not_hold_back_the_root_and_home(
        slack: SlackStandIn, store: Store, caplog: Any) -> None:
    """Job 88154 completes while Slack answers its ✅ line with a 500 on every attempt: the
    line stays pending (the job watched, the line tried again at the next tick), but the
    run's result is stored at once, its root rewritten to say COMPLETED and the Home tab of
    the run's viewer published. The next tick posts the ✅ line, once, and rewrites neither
    again; the line's failure series is one warning, and one when it is posted (the run's
    end does not restart it)."""
    ctx, poster, _ = slack_context(slack, store)
    home = homes(ctx)
    chain = add_job(store, 88154)
    root = poster.post_root(chain.id, PRIVATE, [], "mix")
    store.home_viewers.record("U0ALICE", T0, ttl_s=3600.0)  # her team runs mix
    slurm, sftp = FakeSlurm(), FakeSFTP()
    sftp.append(LOG, b"".join(f"iter: {i}/8000 | loss: 0.4\n".encode()
                              for i in range(100, 8001, 100)))
    slurm.records[88154] = JobRecord(job_id=88154, state="COMPLETED", exit_code=0, signal=0,
                                     elapsed_s=1000, stdout_path=LOG, start_time=T0,
                                     end_time=T0 + 1000)
    watcher = make_watcher(store, slurm, sftp, ThreadEvents(ctx))
    slack.fail_next("chat.postMessage", status=500, count=poster.max_attempts)
    watcher.tick(T0 + 1030)
    line = present(store.incidents.get("dev:88154:final"))
    assert line.class_id == "completed" and line.state == "pending"
    assert in_thread(slack, root, line.key) == []
    assert store.watched_jobs.get("dev", "88154") is not None
    assert present(store.attempts.get_by_job("88154")).result == "COMPLETED"
    assert present(store.chains.get(chain.id)).status == "completed"
    [rewrite] = slack.ok_calls("chat.update")
    assert "COMPLETED" in str(rewrite.params.get("blocks"))
    assert home.users() == ["U0ALICE"]
    watcher.tick(T0 + 1090)
    assert present(store.incidents.get(line.key)).state == "posted"
    assert len(in_thread(slack, root, line.key)) == 1
    assert store.watched_jobs.get("dev", "88154") is None
    assert len(slack.ok_calls("chat.update")) == 1 and home.users() == ["U0ALICE"]
    first, end = warnings(caplog, line.key)
    assert "could not post the ✅ completed line" in first
    assert "is posted in G0RUNS" in end and "after 1 failed try" in end


def threads_warnings(caplog: Any) -> list[str]:
    """Every warning bot.services.threads logged."""
    return [r.getMessage() for r in caplog.records if r.name == "bot.services.threads"
            and r.levelno >= logging.WARNING]


def test_a_root_rewrite_slack_keeps_failing_is_warned_of_once_and_when_it_goes_through(
        slack: SlackStandIn, store: Store, caplog: Any) -> None:
    """Slack answers chat.update with a 500, past the client's own retries, at three
    rewrites of the root in a row (a watcher rewrites it as its run moves, every tick at
    most): one warning at the first, naming the run and Slack's error, the next two at
    debug; the fourth goes through, and one warning says so. Before, each failed rewrite was
    a warning."""
    run = make_run(slack, store)
    run.open_thread()
    slack.fail_next("chat.update", status=500, count=3 * 4)  # 3 rewrites, 4 sends each
    caplog.set_level(logging.DEBUG)
    assert [refresh_root(run.ctx, run.chain_id) for _ in range(4)] == [False] * 3 + [True]
    assert len(slack.calls("chat.update")) == 3 * 4 + 1
    first, end = threads_warnings(caplog)
    assert first.startswith(f"chain {run.chain_id}: could not update the root message: ")
    assert "injected" in first
    assert end == f"chain {run.chain_id}: update the root message went through after 3 " \
        "failed tries"


def test_a_reply_post_slack_keeps_failing_is_warned_of_once_and_when_it_goes_through(
        slack: SlackStandIn, store: Store, caplog: Any) -> None:
    """A reply posted through post_safely (a prompt's follow-up, a stack summary …) under
    one key, Slack answering a 500 to every attempt of three calls in a row: the threads
    warn at the first only; the fourth call posts it, once, and one warning says so."""
    run = make_run(slack, store)
    root = run.open_thread()
    slack.fail_next("chat.postMessage", status=500, count=3 * run.poster.max_attempts)
    caplog.set_level(logging.DEBUG)
    posted = [post_safely(run.ctx, "reply", run.chain_id, "follow-up:1", [], "hello")
              for _ in range(4)]
    assert posted[:3] == [None] * 3 and posted[3] is not None
    assert len(in_thread(slack, root, "follow-up:1")) == 1
    first, end = threads_warnings(caplog)
    assert first.startswith(f"chain {run.chain_id}: could not post reply follow-up:1: ")
    assert end == f"chain {run.chain_id}: post reply follow-up:1 went through after 3 " \
        "failed tries"


def test_thread_notes_are_kept_in_the_store_as_notes(slack: SlackStandIn, store: Store
                                                     ) -> None:
    """The Stop watching note is kept under its own class, not as one of the watcher's
    events (nothing else reads it as an incident)."""
    run = make_run(slack, store, kind="adopted", recipe="")
    note = unwatched_note(run)
    note.chance(0)
    assert present(store.incidents.get(note.key)).class_id == THREAD_NOTE


def test_a_post_slack_did_not_take_is_forgotten_when_its_run_ends(
        slack: SlackStandIn, store: Store, caplog: Any) -> None:
    """A reply posted through post_safely that Slack answered with a 500 on every attempt,
    and never tried again (its action is over), is forgotten when its run ends: the bot keeps
    no failure series of an ended run for its whole life. Before, its entry stayed in
    BotContext.posts until the bot stopped."""
    run = make_run(slack, store)
    run.open_thread()
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    caplog.set_level(logging.DEBUG)
    assert post_safely(run.ctx, "reply", run.chain_id, "follow-up:1", [], "hello") is None
    assert "follow-up:1" in run.ctx.posts[run.chain_id].by_key
    events = ThreadEvents(run.ctx)
    events.chain_changed(run.chain_id)  # still active: kept
    assert "follow-up:1" in run.ctx.posts[run.chain_id].by_key
    store.chains.set_status(run.chain_id, "completed", now=T0)
    events.chain_changed(run.chain_id)
    assert run.chain_id not in run.ctx.posts
    [first] = threads_warnings(caplog)
    assert first.startswith(f"chain {run.chain_id}: could not post reply follow-up:1: ")


def test_a_threadless_runs_replies_in_one_tick_try_its_root_once(
        slack: SlackStandIn, store: Store) -> None:
    """A run whose root message Slack does not take (a 500 on every attempt) has two
    replies pending in the watcher's outbox, a held note and a stall prompt: each tick tries
    the root once for both (the poster's attempts of one try), not once per reply; once
    Slack takes it, a tick posts one root and both replies under it. A root failed for now
    is tried with its replies' tries (after 1, 2, 4 … ticks skipped, as a root not there),
    not at every tick for ever (bot.core.backoff.THREADLESS_TRIES)."""
    run = make_run(slack, store)
    outbox = Outbox("dev", store=store, sink=ThreadEvents(run.ctx))
    dec = Decision(DecisionKind.WARN, "no progress for 40 min", "hang",
                   offers=(OFFER_CANCEL_RESUME,), key="hang")
    events = [
        (WatchEvent("held", "dev:88154:held:1", "dev", "job 88154 has been held",
                    run.chain_id, "88154", "mix", text_only=True), "held"),
        (WatchEvent("warning", "dev:88154:hang:1", "dev", "job 88154 stalled for 40 min",
                    run.chain_id, "88154", "mix", diagnosis=diagnosis("hang", 3400),
                    decision=dec), "hang")]
    root_key = f"chain:{run.chain_id}:root"

    def tick(i: int) -> None:
        outbox.new_tick()
        for event, class_id in events:
            outbox.emit(event, class_id, T0 + 60 * i, TickReport(ok=True))

    attempts = run.poster.max_attempts
    slack.fail_next("chat.postMessage", status=500, count=2 * attempts)
    tick(0)
    assert len(tries(slack, root_key)) == attempts  # one try: the poster's attempts
    tick(1)  # its replies' backoff: this tick skipped
    assert len(tries(slack, root_key)) == attempts
    tick(2)  # tried again, once for both
    assert len(tries(slack, root_key)) == 2 * attempts
    for i in range(3, 8):
        tick(i)
    [root] = slack.root_messages(PRIVATE)
    assert [len(in_thread(slack, root["ts"], e.key)) for e, _ in events] == [1, 1]


class HeldRootPost:
    """Slack's chat.postMessage of a run's root held at the wire until a second root post
    arrives (at most 2 s): the moment two tries of the root are under way at once."""

    def __init__(self, poster: SlackPoster) -> None:
        self.inner = poster.client.chat_postMessage
        self.arrived = threading.Barrier(2, timeout=2)
        poster.client.chat_postMessage = self  # type: ignore[method-assign]

    def __call__(self, **kwargs: Any) -> Any:
        if ":root" in str(kwargs.get("metadata")):
            try:
                self.arrived.wait()
            except threading.BrokenBarrierError:
                pass
        return self.inner(**kwargs)


def test_a_submit_announced_while_a_watcher_reply_needs_the_root_posts_one_root(
        slack: SlackStandIn, store: Store) -> None:
    """A run just submitted: the submit announces itself (its root, then its "submitted"
    note) while the watcher, on another replica over the same store, posts the run's first
    reply, which needs the root too. Their tries of the root meet (each posting it held at
    Slack's door until the other's arrives): the run gets one root message, with the
    reply and the submitted note under it. Before, each posted its own root."""
    run = make_run(slack, store)
    watcher_ctx, watcher_poster, clock = slack_context(slack, store)  # the other replica
    HeldRootPost(run.poster)
    HeldRootPost(watcher_poster)
    note = watcher_note(Run(watcher_ctx, watcher_poster, run.chain_id, clock))
    attempt = present(store.attempts.get_by_job("88154"))
    reply = threading.Thread(target=note.chance, args=(0,))
    reply.start()
    announce_submit(run.ctx, "mix", recorded_result(attempt, "mix"), "U0BOB", None)
    reply.join(10)
    for i in range(1, 4):  # the reply, if its root was another's to post, comes next
        note.chance(i)
    say_pending_notes(run.ctx)  # the submitted note, if its root was another's to post
    [root] = slack.root_messages(PRIVATE)
    assert len(in_thread(slack, root["ts"], note.key)) == 1
    assert len(in_thread(slack, root["ts"], f"chain:{run.chain_id}:attempt:1:submitted")) == 1


def test_a_submits_note_whose_root_slack_failed_is_kept_and_posted_under_it_later(
        slack: SlackStandIn, store: Store) -> None:
    """Slack answers 500 to every attempt of a submitted run's root: the announcement keeps
    its "submitted" note; the `prompts` job's next run posts the root and the note under
    it, once, naming who submitted. Before, the note was dropped: the thread never said who
    submitted the run."""
    run = make_run(slack, store)
    attempt = present(store.attempts.get_by_job("88154"))
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    announce_submit(run.ctx, "mix", recorded_result(attempt, "mix"), "U0BOB", None)
    assert slack.root_messages(PRIVATE) == []
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    for _ in range(2):
        say_pending_notes(run.ctx)
    [root] = slack.root_messages(PRIVATE)
    [said] = in_thread(slack, root["ts"], submitted)
    assert "U0BOB" in str(said["blocks"])


class SlowPost:
    """Slack's chat.postMessage of the posts whose key has `key_part` (a run's root's by
    default) held at the wire until `answer` is set (at most 5 s): `arrived` once one is
    there."""

    def __init__(self, poster: SlackPoster, key_part: str = ":root") -> None:
        self.inner, self.key_part = poster.client.chat_postMessage, key_part
        self.arrived, self.answer = threading.Event(), threading.Event()
        poster.client.chat_postMessage = self  # type: ignore[method-assign]

    def __call__(self, **kwargs: Any) -> Any:
        if self.key_part in str(kwargs.get("metadata")):
            self.arrived.set()
            self.answer.wait(5)
        return self.inner(**kwargs)


def test_a_submit_announced_while_another_try_posts_the_root_does_not_wait_for_it(
        slack: SlackStandIn, store: Store) -> None:
    """The watcher, on another replica, is posting a run's root (Slack slow to answer) when
    a submit into the run announces itself (the watcher's automatic resubmit, in its tick):
    the announcement returns at once, its "submitted" note kept; once the other try's root
    is in, the `prompts` job's next run posts the note under it: one root, the watcher's
    reply and the note under it. Before, the announcement waited for the other try (up to
    its claim, held for a post's worst case), holding the tick."""
    run = make_run(slack, store)
    watcher_ctx, watcher_poster, clock = slack_context(slack, store)  # the other replica
    slow = SlowPost(watcher_poster)
    note = watcher_note(Run(watcher_ctx, watcher_poster, run.chain_id, clock))
    reply = threading.Thread(target=note.chance, args=(0,))
    reply.start()
    assert slow.arrived.wait(5)
    attempt = present(store.attempts.get_by_job("88154"))
    started = time.monotonic()
    announce_submit(run.ctx, "mix", recorded_result(attempt, "mix"), "U0BOB", None)
    took = time.monotonic() - started
    slow.answer.set()
    reply.join(10)
    assert took < 1
    [root] = slack.root_messages(PRIVATE)
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    assert in_thread(slack, root["ts"], submitted) == []
    say_pending_notes(run.ctx)
    assert len(slack.root_messages(PRIVATE)) == 1
    assert len(in_thread(slack, root["ts"], note.key)) == 1
    [said] = in_thread(slack, root["ts"], submitted)
    assert "U0BOB" in str(said["blocks"])


def test_a_root_slack_rate_limits_for_four_minutes_keeps_its_claim_and_gets_one_root(
        slack: SlackStandIn, store: Store) -> None:
    """Slack answers a run's root post 429 (Retry-After: 120) twice: the client waits 4
    minutes, within the post's deadline, before its post goes through. Meanwhile, past 200 s,
    the watcher on another replica needs the root too: it finds the root's try still claimed
    and posts none. One root. Before, a claim shorter than the wait lapsed, the other replica
    took it and the run got two roots."""
    run = make_run(slack, store)
    other, _, other_clock = slack_context(slack, store)  # the other replica
    clock, others = run.clock, list[Rooted]()

    def wait(s: float) -> None:  # the client's and the poster's waits, in the bots' time
        clock[0] += s
        other_clock[0] = clock[0]
        if clock[0] - T0 > 200 and not others:
            others.append(open_thread(other, run.chain_id))

    client = make_client(slack.token, base_url=slack.api_url, sleep=wait, timeout=10)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S,
                         sleep=wait, clock=lambda: clock[0])
    ctx = make_context(store, AnswerLostSlurm(lost=0, submitted_at=T0), sink=poster,
                       config=run.ctx.config, charts=False, clock=lambda: clock[0])
    slack.fail_next("chat.postMessage", status=429, retry_after=120, count=2)
    assert open_thread(ctx, run.chain_id).open
    assert clock[0] - T0 == 240 and [o.claimed for o in others] == [True]
    assert len(slack.root_messages(PRIVATE)) == 1


def test_a_note_slack_rate_limits_is_not_posted_again_by_the_prompts_job_meanwhile(
        slack: SlackStandIn, store: Store) -> None:
    """A handler says a note in the run's thread (a Home tab's "Stop watching"): kept, then
    posted, and Slack answers 429, so the client waits out its Retry-After (a post may wait up
    to its deadline). Meanwhile the `prompts` job finds the note still pending: its try is
    claimed by the handler's, so it posts nothing. The handler's post goes through: one note.
    Before, the job found no copy in the thread and posted it, then the handler did too."""
    run = make_run(slack, store)
    root = run.open_thread()
    waiting, go_on = threading.Event(), threading.Event()

    def rate_limited(s: float) -> None:  # the client's wait of the handler's post
        waiting.set()
        go_on.wait(10)

    client = make_client(slack.token, base_url=slack.api_url, sleep=rate_limited, timeout=10)
    poster = SlackPoster(client, store, deadline_s=POST_DEADLINE_S, sleep=lambda s: None,
                         clock=lambda: run.clock[0])
    handler = make_context(store, AnswerLostSlurm(lost=0, submitted_at=T0), sink=poster,
                           config=run.ctx.config, charts=False, clock=lambda: run.clock[0])
    key, said = f"chain:{run.chain_id}:unwatched", list[bool]()
    slack.fail_next("chat.postMessage", status=429, retry_after=1)
    note = threading.Thread(target=lambda: said.append(threads.thread_note(
        handler, run.chain_id, key, "run mix is no longer watched")))
    note.start()
    try:
        assert waiting.wait(10)
        say_pending_notes(run.ctx)  # the prompts job's run, while the handler's post waits
    finally:
        go_on.set()
        note.join(10)
    assert said == [True]
    assert len(tries(slack, key)) == 2  # the handler's: answered 429, then taken
    assert len(in_thread(slack, root, key)) == 1
    assert present(store.incidents.get(key)).state == "posted"
    say_pending_notes(run.ctx)
    assert len(tries(slack, key)) == 2


def test_a_kept_notes_claim_left_by_a_stopped_try_lapses_by_its_hold(
        slack: SlackStandIn, store: Store) -> None:
    """A replica stopped while posting a kept note leaves its claim of the try (one that
    cannot be judged dead: another host's): the `prompts` job posts nothing while the claim
    holds (one post's worst case, the note's run having its thread), and posts the note once
    when it has lapsed."""
    run = make_run(slack, store)
    root = run.open_thread()
    key = f"chain:{run.chain_id}:unwatched"
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    assert not threads.thread_note(run.ctx, run.chain_id, key, "run mix is no longer watched")
    hold = run.poster.post_at_most_s()
    assert store.command_claims.claim(f"post:{key}", "another", T0, hold)
    run.clock[0] = T0 + hold - 1
    say_pending_notes(run.ctx)
    assert in_thread(slack, root, key) == []
    assert present(store.incidents.get(key)).state == "pending"
    run.clock[0] = T0 + hold + 1
    say_pending_notes(run.ctx)
    assert len(in_thread(slack, root, key)) == 1
    assert present(store.incidents.get(key)).state == "posted"


def root_left_unposted(store: Store, run: Run) -> str:
    """U0BOB submitted `run`, and the bot stopped while posting its root (its intent kept,
    never confirmed): the root's key."""
    store.audit.record(actor="U0BOB", action="submit", now=T0 - 1000, recipe="mix",
                       job_id="88154", detail={"chain_id": run.chain_id, "attempt_no": 1})
    root_key = f"chain:{run.chain_id}:root"
    store.slack_posts.record_intent(root_key, channel=PRIVATE, kind="root",
                                    chain_id=run.chain_id, now=T0 - 999)
    return root_key


@pytest.mark.parametrize("in_slack", [False, True], ids=["not sent", "sent"])
def test_a_root_the_bot_died_posting_is_announced_once_at_startup(
        slack: SlackStandIn, store: Store, in_slack: bool) -> None:
    """The bot stopped while posting a submitted run's root message: its intent is kept
    (Slack got it, or not), its "submitted" note never posted. The bot started again
    announces the run at once: one root (found, not sent again, when Slack has it) and the
    submit's note under it, naming who submitted; a second restart posts nothing. Before,
    the root waited for the run's first reply, and the note was never said."""
    run = make_run(slack, store)
    root_key = root_left_unposted(store, run)
    if in_slack:  # Slack took it, its answer lost with the bot
        run.poster.client.chat_postMessage(channel=PRIVATE, text="mix", metadata={
            "event_type": "trainbot_post", "event_payload": {"key": root_key}})
    for _restart in range(2):
        ctx, _, _ = slack_context(slack, store)
        announce_unposted_roots(ctx)
    [root] = slack.root_messages(PRIVATE)
    assert len(tries(slack, root_key)) == 1
    [note] = in_thread(slack, root["ts"], f"chain:{run.chain_id}:attempt:1:submitted")
    assert "U0BOB" in str(note["blocks"])


@pytest.mark.parametrize("holder_alive", [False, True], ids=["dead", "alive"])
def test_a_root_claimed_by_a_bot_killed_posting_it_is_announced_at_once_at_restart(
        slack: SlackStandIn, store: Store, holder_alive: bool) -> None:
    """The bot was killed while posting a submitted run's root: its intent is kept and its
    claim of the root's try (held for a post's worst case: its deadline and a request) is
    left in the store, named for the killed process of this host. The bot started again proves
    that process dead (no process has its pid) and announces the run at once: one root, the
    submit's note under it. Before, the claim held the root back until it lapsed. A claim
    held by a process that lives (another replica of this host, posting it now) still
    stands: nothing is posted by the restarted bot, its note kept for the thread."""
    run = make_run(slack, store)
    root_key = root_left_unposted(store, run)
    procs = ProcFS()
    with subprocess.Popen(["sleep", "30"]) as other:
        try:
            if holder_alive:  # another replica of this host, posting the root now
                found = procs.pid_now(other.pid)
                assert isinstance(found, ProcStat)
                pid, start = other.pid, found.start
            else:  # the killed bot: above any pid_max, so no process has its pid
                pid, start = 2**22 + 1, 29026
            claimer = format_holder(socket.gethostname(), pid, "96e72bf3", procs.machine(),
                                    start)
            assert store.command_claims.claim(f"post:{root_key}", claimer, T0 - 100,
                                                 bot_post_at_most_s(POST_DEADLINE_S))
            ctx, _, _ = slack_context(slack, store)  # the bot started again
            announce_unposted_roots(ctx)
            say_pending_notes(ctx)
        finally:
            other.kill()
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    if holder_alive:
        assert slack.root_messages(PRIVATE) == [] and tries(slack, root_key) == []
        assert store.command_claims.holder(f"post:{root_key}") == claimer
        kept = present(store.incidents.get(submitted))
        assert (kept.class_id, kept.state) == (THREAD_NOTE, "pending")
        return
    [root] = slack.root_messages(PRIVATE)
    assert len(tries(slack, root_key)) == 1
    [note] = in_thread(slack, root["ts"], submitted)
    assert "U0BOB" in str(note["blocks"])


def stall_stacks_kept(slack: SlackStandIn, store: Store) -> tuple[Run, str, str]:
    """Job 88154 stalls while Slack answers 500 to every attempt of its prompt and of its
    stacks' post: the stacks are kept for the thread (the prompt pending). The run, its
    thread's root and the stacks' key."""
    run = make_run(slack, store)
    root = run.open_thread()
    forensics = Forensics(run.ctx, Collector())  # type: ignore[arg-type]
    slack.fail_next("chat.postMessage", status=500, count=2 * run.poster.max_attempts)
    stall_prompt(run, forensics).chance(0)
    assert forensics.wait(10)
    forensics.close()
    stacks = f"stacks:{stall_prompt(run).key}"
    assert present(store.incidents.get(stacks)).state == "pending"  # kept
    return run, root, stacks


def restarted_during_the_stall(slack: SlackStandIn, store: Store, run: Run
                               ) -> tuple[Note, Collector]:
    """A new bot over the same store, the job still stalled: two ticks publishing the stall
    prompt, each followed by its `prompts` job's run. The prompt, and the new bot's
    collector."""
    ctx, poster, clock = slack_context(slack, store)
    collector = Collector()
    forensics = Forensics(ctx, collector)  # type: ignore[arg-type]
    note = stall_prompt(Run(ctx, poster, run.chain_id, clock), forensics)
    for i in range(1, 3):
        note.chance(i)
        assert forensics.wait(10)
        say_pending_notes(ctx)
    forensics.close()
    return note, collector


def test_stacks_kept_before_a_restart_are_posted_by_the_new_bot_not_collected_again(
        slack: SlackStandIn, store: Store) -> None:
    """Slack answers 500 to every attempt of the stall prompt and of the stall's stacks: the
    stacks are kept for the thread (their post's intent left: Slack may have it). Then the
    bot restarts (a new bot over the same store), the job still stalled: the prompt's next
    try posts it, the new bot's `prompts` job posts the kept stacks, once, and the job's
    stacks are not collected again (py-spy attached to the job once). Before, the kept post
    counted as reported only in the process that kept it: the new bot collected the stacks
    over SSH once more."""
    run, root, stacks = stall_stacks_kept(slack, store)
    assert in_thread(slack, root, stacks) == [] and store.slack_posts.get(stacks) is not None
    note, collector = restarted_during_the_stall(slack, store, run)
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    assert collector.jobs == [] and len(in_thread(slack, root, stacks)) == 1
    assert "No stacks of job 88154" in str(in_thread(slack, root, stacks)[0]["blocks"])
    assert present(store.incidents.get(stacks)).state == "posted"


def test_stacks_given_up_before_a_restart_are_not_collected_again_by_the_new_bot(
        slack: SlackStandIn, store: Store, caplog: Any) -> None:
    """Slack answers 500 to every attempt of the stall prompt and of the stall's stacks: the
    stacks are kept; the `prompts` job's try of them is rejected by Slack itself
    (msg_too_long): given up, not tried again, the log saying so with what they said. Then
    the bot restarts, the job still stalled: the prompt's next try posts it, and the job's
    stacks are not collected again (py-spy attached to the job once, the given-up post not
    sent again). Before, a given-up kept post counted as not reported (Slack does not have
    it): the new bot collected the stacks over SSH once more."""
    run, root, stacks = stall_stacks_kept(slack, store)
    slack.fail_next("chat.postMessage", status=200, error="msg_too_long")
    say_pending_notes(run.ctx)
    assert present(store.incidents.get(stacks)).state == "dropped"  # given up
    [given_up] = [w for w in warnings(caplog, stacks) if "given up" in w]
    assert "msg_too_long" in given_up and "No stacks of job 88154" in given_up
    sent = len(tries(slack, stacks))
    note, collector = restarted_during_the_stall(slack, store, run)
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    assert collector.jobs == [] and in_thread(slack, root, stacks) == []
    assert len(tries(slack, stacks)) == sent


def test_a_submits_note_waits_for_a_root_claimed_elsewhere_past_threadless_tries(
        slack: SlackStandIn, store: Store) -> None:
    """A run's root is claimed by a bot on another host (its life cannot be judged from
    here) for longer than THREADLESS_TRIES of the `prompts` job's runs: the "submitted" note
    waits for it, and once that claim is free the next run posts the root and the note,
    naming who submitted. Before, a claimed root counted as no thread: after THREADLESS_TRIES
    tries (about 35 min) the note was dropped."""
    run = make_run(slack, store)
    root_key = root_left_unposted(store, run)
    claimer = format_holder("gpu-02", 4242, "96e72bf3", ProcFS().machine(), 29026)
    assert store.command_claims.claim(f"post:{root_key}", claimer, T0,  # the bots' clock
                                      bot_post_at_most_s(POST_DEADLINE_S))
    ctx, _, _ = slack_context(slack, store)
    announce_unposted_roots(ctx)
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    for _ in range(THREADLESS_TRIES * (MAX_SKIPPED + 1)):  # more tries than that, backoffs and all
        say_pending_notes(ctx)
    assert slack.root_messages(PRIVATE) == []
    assert present(store.incidents.get(submitted)).state == "pending"
    store.command_claims.release(f"post:{root_key}", claimer)
    say_pending_notes(ctx)
    [root] = slack.root_messages(PRIVATE)
    [note] = in_thread(slack, root["ts"], submitted)
    assert "U0BOB" in str(note["blocks"])


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "Not yet said in the thread of job 88154 (it has not opened; said when it opens): "),
    ("ko", "작업 88154의 스레드가 아직 열리지 않아 전하지 못한 메시지입니다 (스레드가 열리면 "
           "전합니다): ")])
def test_a_submits_note_given_up_with_its_failing_root_is_shown_by_status(
        slack: SlackStandIn, store: Store, lang: str, said: str) -> None:
    """Slack fails a run's root (a 500 at every attempt) for THREADLESS_TRIES tries of the
    `prompts` job: the "submitted" note kept for its thread is given up with it, and
    `/train status mix` says, naming the job, what the thread never got (its text, who
    submitted), in the channel's language, as waiting for the thread to open (it is said
    then); so does `trainbot status`. Before, the note was dropped with only a log line
    (7e8af869 counted a failing root toward THREADLESS_TRIES, undoing "a kept submitted note
    is no longer dropped after about 35 min"), then listed as one Slack did not take."""
    run = make_run(slack, store)
    root_left_unposted(store, run)
    ctx, _, _ = slack_context(slack, store)
    ctx.config.slack.lang = lang
    slack.fail_next("chat.postMessage", status=500, count=10_000)
    announce_unposted_roots(ctx)
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    for _ in range(THREADLESS_TRIES * (MAX_SKIPPED + 1)):  # every try, backoffs and all
        say_pending_notes(ctx)
    note = present(store.incidents.get(submitted))
    assert note.state == THREADLESS and slack.root_messages(PRIVATE) == []
    text = note.diagnosis["text"]
    assert "U0BOB" in text
    reply = execute(ctx, c.Status("mix"), actor="U0ALICE", channel=PRIVATE, now=T0)
    assert said + text in reply.text and "Slack did not take it" not in reply.text
    report = job_status(ctx.config, "mix", store=store, slurm_for=ctx.clusters.slurm)
    shown = format_report(report)
    assert ("not yet said in the thread of job 88154 (it has not opened; said when it opens): "
            f"{text}") in shown and "Slack did not take it" not in shown


@pytest.mark.parametrize("restarted", [False, True], ids=["same bot", "restarted bot"])
def test_a_note_given_up_with_its_runs_root_is_said_once_when_the_thread_opens_later(
        slack: SlackStandIn, store: Store, restarted: bool) -> None:
    """Slack fails a run's root (a 500 at every attempt) until the "submitted" note kept
    for its thread is given up with it (`/train status` lists it as never said). Slack
    recovers and the run's next reply opens the thread: the `prompts` job's next runs say
    the note there, once, naming who submitted, and status no longer lists it; a bot
    restarted in between does so too (the note is in the store). Before, the note stayed
    given up: never in the thread that opened, listed by status for good."""
    run = make_run(slack, store)
    attempt = present(store.attempts.get_by_job("88154"))
    slack.fail_next("chat.postMessage", status=500, count=10_000)
    announce_submit(run.ctx, "mix", recorded_result(attempt, "mix"), "U0BOB", None)
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    for _ in range(THREADLESS_TRIES * (MAX_SKIPPED + 1)):  # every try, backoffs and all
        say_pending_notes(run.ctx)
    text = present(store.incidents.get(submitted)).diagnosis["text"]
    never_said = "Not yet said in the thread of job 88154"
    assert never_said in execute(run.ctx, c.Status("mix"), actor="U0ALICE", channel=PRIVATE,
                                 now=T0).text
    slack.heal()
    ctx = slack_context(slack, store)[0] if restarted else run.ctx
    assert open_thread(ctx, run.chain_id).open  # the run's next reply opens its thread
    for _ in range(3):
        say_pending_notes(ctx)
    [root] = slack.root_messages(PRIVATE)
    [said] = in_thread(slack, root["ts"], submitted)
    assert "U0BOB" in str(said["blocks"])
    reply = execute(ctx, c.Status("mix"), actor="U0ALICE", channel=PRIVATE, now=T0).text
    assert never_said not in reply and text not in reply


def test_a_replica_that_takes_the_submits_job_back_announces_a_dead_replicas_root(
        slack: SlackStandIn, store: Store) -> None:
    """Two replicas (of two hosts): B runs `submits` first, then A takes it over (B's lease
    lapsed) and dies posting a run's root (its intent kept, never confirmed); B takes the
    job back once A's lease lapses and announces the run: one root and the submit's note,
    naming who submitted. Before, B had announced once, at its own first run, and never
    again: the root waited for the run's first reply and the note was never said."""
    run = make_run(slack, store)
    clock = [T0]
    replicas = {}
    for name in ("a", "b"):
        ctx, _, ctx_clock = slack_context(slack, store)
        holder = format_holder(f"host-{name}", 4242, "96e72bf3", ProcFS().machine(), 29026)
        scheduler = build_scheduler(ctx, leases=LeaseKeeper(store.leases, holder),
                                    clock=lambda: clock[0])
        [job] = [j for j in scheduler.jobs() if j.id == "submits"]
        replicas[name] = (job, ctx_clock)

    def run_submits(name: str, at: float) -> None:
        clock[0] = at
        job, ctx_clock = replicas[name]
        ctx_clock[0] = at
        job.func()

    run_submits("b", T0)  # B holds `submits`, nothing to announce
    run_submits("a", T0 + 1000)  # B's lease lapsed: A takes it
    run_submits("b", T0 + 1001)  # A holds it
    root_key = root_left_unposted(store, run)  # A dies posting the run's root
    run_submits("b", T0 + 2000)  # A's lease lapsed: B takes it back
    [root] = slack.root_messages(PRIVATE)
    assert len(tries(slack, root_key)) == 1
    [note] = in_thread(slack, root["ts"], f"chain:{run.chain_id}:attempt:1:submitted")
    assert "U0BOB" in str(note["blocks"])


def test_a_submits_note_slack_fails_in_an_open_thread_is_posted_later(
        slack: SlackStandIn, store: Store) -> None:
    """A submit into a run whose thread is there: Slack answers 500 to every attempt of its
    "submitted" note. The note is kept, and the `prompts` job's next run posts it under the
    root, once, naming who submitted. Before, the failure was only logged and the thread
    never said who submitted the job."""
    run = make_run(slack, store)
    root = run.open_thread()
    attempt = present(store.attempts.get_by_job("88154"))
    submitted = f"chain:{run.chain_id}:attempt:1:submitted"
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    announce_submit(run.ctx, "mix", recorded_result(attempt, "mix"), "U0BOB", None)
    assert in_thread(slack, root, submitted) == []
    say_pending_notes(run.ctx)
    [said] = in_thread(slack, root, submitted)
    assert "U0BOB" in str(said["blocks"])



def test_a_root_posted_while_the_store_cannot_release_its_claim_is_still_open(
        slack: SlackStandIn, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store fails (a blip) when the root's try releases its claim: the root is posted,
    the thread open, and the run's reply goes under it; the claim lapses by its hold.
    Before, the store's error escaped the try and the caller saw no thread."""
    run = make_run(slack, store)

    def blip(key: str, holder: str) -> None:
        raise OSError("database is locked")

    monkeypatch.setattr(store.command_claims, "release", blip)
    assert open_thread(run.ctx, run.chain_id).open
    assert len(slack.root_messages(PRIVATE)) == 1


def test_a_root_posted_by_a_sink_without_a_worst_case_keeps_its_claim_while_it_posts(
        slack: SlackStandIn, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sink whose post has no worst case (the console's: `post_at_most_s` 0) posts a run's
    root; 10 s into that post another try needs the root: it finds it claimed and posts
    none. One root. Before, the claim was held for 0 s and the other try posted a second."""
    run = make_run(slack, store)
    other, _, other_clock = slack_context(slack, store)
    monkeypatch.setattr(run.poster, "post_at_most_s", lambda: 0.0)
    inner, others = run.poster.client.chat_postMessage, list[Rooted]()

    def slow(**kwargs: Any) -> Any:
        if ":root" in str(kwargs.get("metadata")) and not others:
            other_clock[0] = run.clock[0] + 10
            others.append(open_thread(other, run.chain_id))
        return inner(**kwargs)

    monkeypatch.setattr(run.poster.client, "chat_postMessage", slow)
    assert open_thread(run.ctx, run.chain_id).open
    assert [o.claimed for o in others] == [True]
    assert len(slack.root_messages(PRIVATE)) == 1


def test_a_root_claim_released_between_two_looks_is_claimed_again(
        slack: SlackStandIn, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's root claim is taken by another try when this one claims it, and released
    before this one asks who holds it: this try claims it again and posts the root, not
    calling it claimed by nobody. Before, it answered `claimed` and posted nothing."""
    run = make_run(slack, store)
    claims, real = [0], store.command_claims.claim

    def taken_once(key: str, holder: str, now: float, hold_s: float) -> bool:
        claims[0] += 1
        return claims[0] > 1 and real(key, holder, now, hold_s)

    monkeypatch.setattr(store.command_claims, "claim", taken_once)
    rooted = open_thread(run.ctx, run.chain_id)
    assert rooted.open and not rooted.claimed
    assert len(slack.root_messages(PRIVATE)) == 1


class FailingPostSFTP(FakeSFTP):
    """A cluster's files, after whose directory listing (the flight recorder's read) Slack
    answers the next post 500 at every one of the poster's attempts (`attempts`); its
    listings counted."""

    def __init__(self, slack: SlackStandIn) -> None:
        super().__init__()
        self.slack, self.attempts, self.listings = slack, 1, 0

    def listdir_attr(self, path: str = ".") -> list[Any]:
        self.listings += 1
        self.slack.fail_next("chat.postMessage", status=500, count=self.attempts)
        return super().listdir_attr(path)


def flight_recorder_run(slack: SlackStandIn, store: Store
                        ) -> tuple[Run, FailingPostSFTP, str]:
    """A run of a recipe with `nccl_flight_recorder` (/shared/fr, where no rank left a dump)
    whose flight recorder's read makes Slack answer its post 500 at every attempt; the run,
    its cluster's files and its thread's root."""
    sftp = FailingPostSFTP(slack)
    run = make_run(slack, store, sftp=sftp, nccl_flight_recorder="/shared/fr")
    sftp.attempts = run.poster.max_attempts
    sftp.append("/shared/fr/README", b"rank dumps land here\n")  # no rank left a dump
    return run, sftp, run.open_thread()


def test_a_flight_recorder_slack_did_not_take_is_kept_and_posted_later_once(
        slack: SlackStandIn, store: Store) -> None:
    """Job 88154 of a recipe with `nccl_flight_recorder` died of an NCCL timeout: its incident
    is posted, its flight recorder read, and Slack answers 500 to every attempt of the
    flight recorder's post. The summary is kept for the thread: the `prompts` job's next run
    posts it, once (its later runs post nothing more), the incident's next publish reads
    the dumps no more, and the incident is in the thread once."""
    run, sftp, root = flight_recorder_run(slack, store)
    forensics = Forensics(run.ctx, Collector())  # type: ignore[arg-type]
    note = incident(run, forensics)
    note.chance(0)
    assert forensics.wait(10)
    recorder = f"flight_recorder:{note.key}"
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    assert in_thread(slack, root, recorder) == []
    assert present(store.incidents.get(recorder)).state == "pending"  # kept
    for i in range(1, 4):
        note.chance(i)
        assert forensics.wait(10)
        say_pending_notes(run.ctx)
    [said] = in_thread(slack, root, recorder)
    assert "NCCL flight recorder · job 88154" in str(said["blocks"])
    assert "No rank left a dump in /shared/fr" in str(said["blocks"])
    assert present(store.incidents.get(recorder)).state == "posted"
    assert sftp.listings == 1 and len(in_thread(slack, root, note.key)) == 1
    forensics.close()


def test_a_flight_recorder_kept_before_a_restart_is_posted_by_the_new_bot_not_read_again(
        slack: SlackStandIn, store: Store) -> None:
    """Job 88154 of a recipe with `nccl_flight_recorder` died of an NCCL timeout; Slack
    answers 500 to every attempt of its incident and of its flight recorder's summary: the
    summary is kept for the thread (the incident stays pending). Then the bot restarts (a new
    bot over the same store), the incident still to publish: its next try posts it, the new
    bot's `prompts` job posts the kept summary, once, and the dumps are not read again (listed
    once over SFTP). The flight-recorder twin of
    test_stacks_kept_before_a_restart_are_posted_by_the_new_bot_not_collected_again."""
    run, sftp, root = flight_recorder_run(slack, store)
    forensics = Forensics(run.ctx, Collector())  # type: ignore[arg-type]
    slack.fail_next("chat.postMessage", status=500, count=run.poster.max_attempts)
    incident(run, forensics).chance(0)
    assert forensics.wait(10)
    forensics.close()
    recorder = f"flight_recorder:{incident(run).key}"
    assert in_thread(slack, root, recorder) == [] and sftp.listings == 1
    assert present(store.incidents.get(recorder)).state == "pending"  # kept
    ctx, poster, clock = slack_context(slack, store, sftp=sftp,
                                       nccl_flight_recorder="/shared/fr")  # started again
    forensics = Forensics(ctx, Collector())  # type: ignore[arg-type]
    note = incident(Run(ctx, poster, run.chain_id, clock), forensics)
    assert note.state() == "pending"
    for i in range(1, 3):
        note.chance(i)
        assert forensics.wait(10)
        say_pending_notes(ctx)
    assert note.state() == "posted" and len(in_thread(slack, root, note.key)) == 1
    [said] = in_thread(slack, root, recorder)
    assert "No rank left a dump in /shared/fr" in str(said["blocks"])
    assert present(store.incidents.get(recorder)).state == "posted"
    assert sftp.listings == 1
    forensics.close()


def two_ranks(job_id: str) -> StackReport:
    """The stacks of two ranks of `job_id` (a full dump to attach)."""
    frames = [{"name": "all_gather", "short_filename": "train.py", "line": 7}]
    procs = [{"pid": 10 + r, "rank": r, "step": "0", "ok": True, "cmd": "python train.py",
              "threads": [{"os_thread_id": 1, "thread_name": "MainThread",
                           "frames": frames}]} for r in range(2)]
    out = MARKER + json.dumps({"host": "gpu-a01", "procs": procs}) + "\n"
    return build_report(job_id, 0, out, "", collected_at="2026-12-06 18:00:00 UTC")


class DumpCollector(FailingPostCollector):
    """A FailingPostCollector whose collection reads the stacks of two ranks (a full dump to
    attach)."""

    def collect(self, cluster: str, job_id: str, *,
                trainer_pids: dict[str, tuple[int, ...]] | None = None) -> StackReport:
        super().collect(cluster, job_id, trainer_pids=trainer_pids)
        return two_ranks(job_id)


class UploadRefusedCollector(Collector):
    """A collection reading the stacks of two ranks, after which Slack refuses the dump's
    upload (files.getUploadURLExternal answered 400)."""

    def __init__(self, slack: SlackStandIn) -> None:
        super().__init__()
        self.slack = slack

    def collect(self, cluster: str, job_id: str, *,
                trainer_pids: dict[str, tuple[int, ...]] | None = None) -> StackReport:
        super().collect(cluster, job_id, trainer_pids=trainer_pids)
        self.slack.fail_next("files.getUploadURLExternal", status=400)
        return two_ranks(job_id)


@pytest.mark.parametrize(("lang", "follows", "unshared"), [
    ("en", "Every rank's full stack follows in a file.",
     "The file of every rank's full stack could not be shared in this thread: `/train stacks "
     "88154` collects them again."),
    ("ko", "모든 rank의 전체 스택은 이어서 파일로 올라옵니다.",
     "모든 rank의 전체 스택 파일을 이 스레드에 공유하지 못했습니다: `/train stacks 88154`로 "
     "다시 수집하세요."),
])
def test_a_stacks_file_slack_refused_is_said_in_the_thread_once(
        slack: SlackStandIn, store: Store, lang: str, follows: str, unshared: str) -> None:
    """The stall's stacks are posted, saying their full dump follows in a file; Slack refuses
    the file's upload: one reply in the thread, in the run's language, says the file could not
    be shared and how to collect the stacks again; later runs of the `prompts` job say it no
    more. Before, the post said the file was attached and the thread never had it."""
    run = make_run(slack, store, lang=lang)
    root = run.open_thread()
    forensics = Forensics(run.ctx, UploadRefusedCollector(slack))  # type: ignore[arg-type]
    stall_prompt(run, forensics).chance(0)
    assert forensics.wait(10)
    stacks = f"stacks:{stall_prompt(run).key}"
    [said] = in_thread(slack, root, stacks)
    assert follows in str(said["blocks"])
    assert not [f for f in slack.files.values() if f["completed"]]
    for _ in range(2):
        say_pending_notes(run.ctx)
    [told] = in_thread(slack, root, f"{stacks}:dump:unshared")
    assert unshared in str(told["blocks"])
    forensics.close()


def kept_stacks(slack: SlackStandIn, store: Store) -> tuple[Run, str, Forensics, Note]:
    """Job 88154 stalled; its stall prompt's first try collects its stacks (a full dump to
    attach), whose post Slack answers 500 at every attempt: the stacks are kept. The run, its
    thread's root, the forensics (closed by the caller) and the stall prompt."""
    run = make_run(slack, store)
    root = run.open_thread()
    forensics = Forensics(run.ctx, DumpCollector(slack, run.poster.max_attempts))  # type: ignore[arg-type]
    note = stall_prompt(run, forensics)
    note.chance(0)
    assert forensics.wait(10)
    return run, root, forensics, note


@pytest.mark.parametrize("restart", [False, True], ids=["same bot", "restarted"])
def test_kept_stacks_are_posted_later_with_their_dump_file_once(
        slack: SlackStandIn, store: Store, restart: bool) -> None:
    """Slack answers 500 to every attempt of a stall's stacks post: the stacks are kept. The
    `prompts` job's next run (of the same bot, or of a bot restarted since) posts them and
    shares the full dump they announce ("Every rank's full stack follows in a file")
    in the thread, once: later runs share nothing more. Before, the kept post went out
    without the file."""
    run, root, forensics, note = kept_stacks(slack, store)
    stacks = f"stacks:{note.key}"
    assert in_thread(slack, root, stacks) == [] and slack.files == {}
    ctx = slack_context(slack, store)[0] if restart else run.ctx
    for _ in range(3):
        say_pending_notes(ctx)
    [said] = in_thread(slack, root, stacks)
    assert "Every rank's full stack follows in a file." in str(said["blocks"])
    [dump] = [f for f in slack.files.values() if f["completed"]]
    assert (dump["name"], dump["title"]) == ("stacks-88154.txt", "Python stacks · job 88154")
    assert dump["thread_ts"] == root and dump["channel"] == PRIVATE
    assert b"=== rank 1 (pid 11) on gpu-a01" in dump["data"]
    shared = [m for m in slack.replies(PRIVATE, root) if m.get("subtype") == "file_share"]
    assert len(shared) == 1
    forensics.close()


@pytest.mark.parametrize("dies", ["as the upload starts", "once the upload is done"])
def test_kept_stacks_dump_is_shared_once_by_a_bot_restarted_after_dying_at_its_upload(
        slack: SlackStandIn, store: Store, monkeypatch: pytest.MonkeyPatch, dies: str) -> None:
    """The `prompts` job posts the kept stacks of a stall, then the bot dies (a SIGTERM, a
    crash) while their dump uploads (which may take a post's deadline), or just after. The
    bot restarted shares the dump in the thread, once, and posts the stacks no second time.
    Before, the kept stacks were recorded posted before their upload: a bot stopped during
    it never shared the file the stacks announce."""
    run, root, forensics, note = kept_stacks(slack, store)
    upload = run.poster.upload_file

    def dying_upload(*args: Any) -> str:
        if dies == "once the upload is done":
            upload(*args)
        raise Died("SIGTERM during the dump's upload")

    monkeypatch.setattr(run.poster, "upload_file", dying_upload)
    with pytest.raises(Died):
        for _ in range(3):
            say_pending_notes(run.ctx)
    restarted = slack_context(slack, store)[0]
    for _ in range(3):
        say_pending_notes(restarted)
    assert len(in_thread(slack, root, f"stacks:{note.key}")) == 1
    [dump] = [f for f in slack.files.values() if f["completed"]]
    assert dump["name"] == "stacks-88154.txt" and dump["thread_ts"] == root
    shared = [m for m in slack.replies(PRIVATE, root) if m.get("subtype") == "file_share"]
    assert len(shared) == 1
    forensics.close()


def test_a_kept_stacks_file_said_unshared_is_not_shared_by_a_bot_restarted_before_recording(
        slack: SlackStandIn, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `prompts` job posts kept stacks; Slack refuses their dump's upload, so the thread
    is told the file could not be shared; the bot dies before recording the stacks posted. The
    bot restarted shares no file after all: the thread has the stacks and the one line saying
    the file could not be shared, never that line and then the file. Before, the restarted bot
    shared the file under the line saying it could not be."""
    run, root, forensics, note = kept_stacks(slack, store)
    stacks = f"stacks:{note.key}"
    note_once = threads.thread_note

    def dying_note(*args: Any) -> bool:
        note_once(*args)
        raise Died("SIGTERM once the thread was told the file could not be shared")

    monkeypatch.setattr(threads, "thread_note", dying_note)
    slack.fail_next("files.getUploadURLExternal", status=400)
    with pytest.raises(Died):
        for _ in range(3):
            say_pending_notes(run.ctx)
    monkeypatch.undo()
    restarted = slack_context(slack, store)[0]
    for _ in range(3):
        say_pending_notes(restarted)
    assert len(in_thread(slack, root, stacks)) == 1
    assert len(in_thread(slack, root, f"{stacks}:dump:unshared")) == 1
    assert not [f for f in slack.files.values() if f["completed"]]
    forensics.close()


@pytest.mark.parametrize(("lang", "dropped"), [
    ("en", "Every rank's full stack was too large to keep for this later post: `/train stacks "
           "88154` collects them again."),
    ("ko", "모든 rank의 전체 스택은 나중에 올리는 이 게시물에 함께 보관하기에는 너무 큽니다: "
           "`/train stacks 88154`로 다시 수집하세요."),
])
def test_a_dump_too_long_to_keep_leaves_the_kept_stacks_without_their_file(
        slack: SlackStandIn, store: Store, monkeypatch: pytest.MonkeyPatch, caplog: Any,
        lang: str, dropped: str) -> None:
    """A kept stacks post keeps its dump in the store only up to MAX_KEPT_FILE_BYTES: a longer
    one is not kept (said in the log), and the `prompts` job posts the stacks alone, saying
    the file was too large to keep and how to collect them again, in the run's language.
    Before, the post said the file was attached."""
    monkeypatch.setattr(threads, "MAX_KEPT_FILE_BYTES", 100)
    run = make_run(slack, store, lang=lang)
    root = run.open_thread()
    forensics = Forensics(run.ctx, DumpCollector(slack, run.poster.max_attempts))  # type: ignore[arg-type]
    stall_prompt(run, forensics).chance(0)
    assert forensics.wait(10)
    say_pending_notes(run.ctx)
    stacks = f"stacks:{stall_prompt(run).key}"
    [posted] = in_thread(slack, root, stacks)
    assert dropped in str(posted["blocks"]) and slack.files == {}
    assert "follows in a file" not in str(posted["blocks"])
    [said] = [w for w in warnings(caplog, stacks) if "too long to keep" in w]
    assert "stacks-88154.txt (" in said and "the reply goes without it" in said
    forensics.close()


def test_a_hold_question_still_being_posted_is_not_posted_again_by_a_recovery(
        slack: SlackStandIn, store: Store) -> None:
    """A person's resume (job 90500) records its hold prompt for the team's job 88017 and
    posts its question, Slack slow to answer, when a recovery on another replica runs the
    post-submit step for the same job: it posts no question of its own, nor does the
    prompts' follow-up once the first is in. The thread shows one "Hold 88017?" with its
    buttons. Before, the recovery looked the question up, did not find it yet, and posted
    it: two questions, each with Yes / No."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=T0)
    run = make_run(slack, store, slurm=slurm)
    root = run.open_thread()
    slurm.add(90500, name="mix", partition="debug", account="root", priority=100)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=200)
    store.attempts.record(chain_id=run.chain_id, job_id="90500", now=T0)
    result = SubmitResult(job_id="90500", chain_id=run.chain_id, attempt_no=2,
                          job_name="mix", checkpoint=None)
    slow = SlowPost(run.poster, "hold-prompt:")
    first = threading.Thread(target=propose_holds_for_submit, args=(run.ctx, "mix", result, T0))
    first.start()
    assert slow.arrived.wait(5)
    other, _, other_clock = slack_context(slack, store, slurm)  # the other replica
    other_clock[0] = T0 + 60
    [again] = propose_holds_for_submit(other, "mix", result, T0 + 60)
    slow.answer.set()
    first.join(10)
    [hold] = [a for a in store.approvals.for_chain(run.chain_id)
              if a.action == "hold_competitor"]
    assert again.token == hold.token
    follow_up_prompts(other, T0 + post_takeover_s(POST_DEADLINE_S, kept=None) + 60)
    [question] = in_thread(slack, root, hold_prompt_key(hold.token))
    assert "88017" in question["text"]
    assert [e["action_id"] for b in question["blocks"] if b["type"] == "actions"
            for e in b["elements"]] == [ActionId.HOLD_COMPETITOR, ActionId.KEEP_COMPETITOR]
