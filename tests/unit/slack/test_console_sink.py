"""The console as Slack: threads printed once per key, buttons numbered, charts written to a
folder, and resubmit prompts answered through the real approval service (real SQLite store,
fake Slurm)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from fakes import FakeSlurm, make_context, present, writer
from support.mix_prompt import mix_prompt

from bot.core.incident import AttemptSummary, build_root
from bot.services.ports import BotContext
from bot.slack.console import ConsoleSink
from bot.slack.render import render_blocks
from bot.store import Store
from handlers.console import ConsoleApprovals, ask_yes_no

NOW = 1_000_000.0


class Clock:
    def __init__(self, t: float = NOW) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def store(tmp_path: Path):
    s = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    yield s
    s.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sink(tmp_path: Path, store: Store, clock: Clock) -> ConsoleSink:
    return ConsoleSink(tmp_path / "charts", out=io.StringIO(), store=store,
                       names={"W0LEAD": "lead", "C0TRAIN": "training"}, clock=clock)


def printed(sink: ConsoleSink) -> str:
    assert isinstance(sink.out, io.StringIO)  # the fixture's
    return sink.out.getvalue()


def chain(store: Store) -> int:
    return store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW).id


def root_blocks(state: str, last_iter: int) -> tuple[list[dict], str]:
    view = build_root(recipe="mix", attempts=[AttemptSummary("88154", state, last_iter, 1000)],
                      target_iter=8000)
    return render_blocks("root", "en", view)


def test_thread_is_printed_with_indented_replies_once_per_key(sink: ConsoleSink, store: Store):
    cid = chain(store)
    sink.post_root(cid, "C0TRAIN", [{"type": "section", "text": {
        "type": "mrkdwn", "text": "*mix*: job 88154 submitted by <@W0LEAD>"}}], "mix")
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "RSS grows\nby 17 GB"}}]
    ts = sink.post_reply(cid, "warning:88154:leak", blocks, "leak")
    assert sink.post_reply(cid, "warning:88154:leak", blocks, "leak") == ts
    out = printed(sink)
    assert "#training · thread of run chain 1" in out
    assert "mix: job 88154 submitted by @lead" in out  # bold dropped, mention named
    assert "  │ RSS grows\n  │ by 17 GB" in out
    assert out.count("RSS grows") == 1
    # recorded like the Slack poster: the services find the thread
    assert present(store.slack_posts.get("chain:1:root")).posted
    assert present(store.slack_posts.get("warning:88154:leak")).thread_ts == \
        present(store.slack_posts.get("chain:1:root")).ts
    root = present(store.slack_posts.get("chain:1:root"))
    assert present(store.chains.get(cid)).thread_ts == root.ts


def test_a_post_is_looked_up_as_shown_once_recorded_even_as_an_intent(
        sink: ConsoleSink, store: Store):
    """`trainbot demo`'s terminal answers whether it showed a post (a cluster's outage notice
    asks before telling "answers again"): a post printed is; one recorded only as an intent
    (the demo stopped between its print and its record) was printed too; a key never posted
    is not."""
    cid = chain(store)
    sink.post_root(cid, "C0TRAIN", [], "mix")
    sink.post_reply(cid, "cluster:dev:down:1", [], "dev does not answer")
    store.slack_posts.record_intent("cluster:dev:down:2", channel="C0TRAIN", kind="reply",
                                    chain_id=cid, now=NOW)
    assert sink.look_up("cluster:dev:down:1")
    assert sink.look_up("cluster:dev:down:2")
    assert not sink.look_up("cluster:dev:down:3")


def test_reply_before_root_is_refused(sink: ConsoleSink, store: Store):
    with pytest.raises(LookupError, match="post_root first"):
        sink.post_reply(chain(store), "k", [], "text")


def test_buttons_are_numbered_and_remembered_as_a_prompt(sink: ConsoleSink, store: Store):
    cid = chain(store)
    sink.post_root(cid, "C0TRAIN", [], "mix")
    actions = {"type": "actions", "block_id": "a", "elements": [
        {"type": "button", "action_id": "trainbot_resubmit", "value": "tok123",
         "text": {"type": "plain_text", "text": "Resubmit from iteration 3,000"}},
        {"type": "button", "action_id": "trainbot_dismiss", "value": "tok123",
         "text": {"type": "plain_text", "text": "Dismiss"}}]}
    sink.post_reply(cid, "incident:88154", [actions], "incident")
    assert "[1] Resubmit from iteration 3,000   [2] Dismiss" in printed(sink)
    [prompt] = sink.take_prompts()
    assert prompt.key == "incident:88154"
    assert [(b.number, b.action_id, b.value) for b in prompt.buttons] == [
        (1, "trainbot_resubmit", "tok123"), (2, "trainbot_dismiss", "tok123")]
    assert sink.take_prompts() == []


def test_charts_are_written_to_the_folder_once(sink: ConsoleSink, store: Store, tmp_path: Path):
    cid = chain(store)
    sink.post_root(cid, "C0TRAIN", [], "mix")
    sink.upload_file(cid, "chart:88154:rss.png", b"\x89PNG-1", "rss.png", "Host RSS")
    sink.upload_file(cid, "chart:88154:rss.png", b"\x89PNG-2", "rss.png", "Host RSS")
    files = list((tmp_path / "charts").iterdir())
    assert [f.name for f in files] == ["chart-88154-rss.png"]
    assert files[0].read_bytes() == b"\x89PNG-1"
    assert f"Host RSS: {files[0]}" in printed(sink)
    assert sink.charts == files


def test_root_updates_are_compact(sink: ConsoleSink, store: Store, clock: Clock):
    cid = chain(store)
    sink.post_root(cid, "C0TRAIN", [], "mix")
    sink.update_root(cid, *root_blocks("RUNNING", 1100))
    first = printed(sink)
    assert "thread root updated" in first and "88154" in first and "\n\n" not in \
        first.split("thread root updated")[1]
    sink.update_root(cid, *root_blocks("RUNNING", 1100))  # unchanged: nothing
    sink.update_root(cid, *root_blocks("RUNNING", 1200))  # progress only, too soon: nothing
    assert printed(sink) == first
    clock.t += sink.root_every_s
    sink.update_root(cid, *root_blocks("RUNNING", 1300))
    line = printed(sink)[len(first):]
    assert line.count("\n") == 1 and "1,300 / 8,000" in line
    sink.update_root(cid, *root_blocks("FAILED", 1300))  # new state: printed in full
    assert printed(sink).count("thread root updated") == 2


def test_ask_yes_no():
    out = io.StringIO()
    assert ask_yes_no("Resubmit?", assume_yes=True, out=out, read=lambda: pytest.fail("read"))
    assert "y (--yes)" in out.getvalue()
    assert ask_yes_no("Resubmit?", assume_yes=False, out=out, read=lambda: "Y\n")
    assert not ask_yes_no("Resubmit?", assume_yes=False, out=out, read=lambda: "n\n")
    assert not ask_yes_no("Resubmit?", assume_yes=False, out=out, read=lambda: "")  # EOF


def console_context(store: Store, sink: ConsoleSink) -> tuple[BotContext, FakeSlurm]:
    slurm = FakeSlurm()
    return make_context(store, slurm, sink=sink), slurm


def failed_chain(ctx: BotContext, *, offer_cancel: bool = False) -> tuple[int, str]:
    cid, prompt = mix_prompt(ctx, now=NOW, summary="88154 died: NCCL watchdog", resume_iter=3000,
                             offer_cancel=offer_cancel)
    writer(ctx).post_reply(cid, "incident:88154", prompt.blocks, prompt.text)
    return cid, prompt.token


def test_yes_at_the_prompt_resubmits_through_the_approval_service(
    sink: ConsoleSink, store: Store
):
    ctx, slurm = console_context(store, sink)
    cid, token = failed_chain(ctx)
    done = []
    approvals = ConsoleApprovals(ctx, sink, "W0LEAD", read=lambda: "y\n",
                                 on_done=lambda prompt, result: done.append(result.job_id))
    [result] = approvals.answer_pending(NOW + 5)
    assert result.status == "done" and done == ["88887"]
    assert len(slurm.submits()) == 1
    assert [a.job_id for a in store.attempts.for_chain(cid)] == ["88154", "88887"]
    assert present(store.approvals.get(token)).decided_by == "W0LEAD"
    out = printed(sink)
    assert "Resubmit from iteration 3,000? [y/N]" in out
    assert "↳ Approved by @lead: resubmitted as 88887" in out
    assert approvals.answer_pending(NOW + 6) == []  # asked once


def test_no_at_the_prompt_dismisses(sink: ConsoleSink, store: Store):
    ctx, slurm = console_context(store, sink)
    _, token = failed_chain(ctx)
    [result] = ConsoleApprovals(ctx, sink, "W0LEAD", read=lambda: "\n").answer_pending(NOW)
    assert result.status == "declined"
    assert slurm.submits() == []
    assert present(store.approvals.get(token)).state != "pending"


def test_a_running_jobs_cancel_offer_is_never_answered(sink: ConsoleSink, store: Store):
    ctx, slurm = console_context(store, sink)
    _, token = failed_chain(ctx, offer_cancel=True)
    results = ConsoleApprovals(ctx, sink, "W0LEAD", assume_yes=True).answer_pending(NOW)
    assert results == []
    assert slurm.submits() == [] and slurm.acted("cancel") == []
    assert present(store.approvals.get(token)).state == "pending"
    assert "left unanswered" in printed(sink)


def test_an_unauthorized_console_user_is_told_so(sink: ConsoleSink, store: Store):
    ctx, slurm = console_context(store, sink)
    failed_chain(ctx)
    [result] = ConsoleApprovals(ctx, sink, "U0NOBODY", assume_yes=True).answer_pending(NOW)
    assert result.status == "unauthorized"
    assert slurm.submits() == []
    assert "Refused: only" in printed(sink)
