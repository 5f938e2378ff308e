"""Once a newer job carries a recipe on (a new run: `/train submit mix`; a resume of the
run; the watcher's automatic resubmit), the open Resubmit prompts of the recipe's older job
are refused on click (bot.services.submit.run_moved_on). They are also rewritten as the new
job is submitted: the question and card kept, the buttons replaced by which job took over
(bot.services.after_submit.supersede_prompts). Once per prompt whichever replica or
restart; an update Slack refused is made again by the `prompts` job."""

from __future__ import annotations

import pytest
from fakes import FakeSlurm, RecordingMessageSink, make_context, present, recorded

from bot.core.train_grammar import parse_command
from bot.services.after_submit import supersede_prompts
from bot.services.ports import BotContext, PostError
from bot.services.prompt_follow_up import follow_up_prompts
from bot.services.prompts import create_resubmit_prompt
from bot.services.train import execute
from bot.store import Store

NOW = 1_000_000.0
KEY = "dev:88154:incident"


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


def _old_incident(ctx: BotContext) -> str:
    """Run mix's job 88154 failed: its incident in the thread with a Resubmit prompt."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW,
                                    channel="C0TRAIN")
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW, state="FAILED")
    sink = recorded(ctx)
    sink.post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=chain.id, job_id="88154",
                                    now=NOW, summary="88154 died", post_key=KEY)
    sink.post_reply(chain.id, KEY, prompt.blocks, prompt.text)
    return prompt.token


def _updates(ctx: BotContext) -> list[str]:
    return [p[3] for p in recorded(ctx).posts if p[0] == "update" and p[2] == KEY]


def _has_buttons(ctx: BotContext) -> bool:
    return any(b.get("type") == "actions" for b in recorded(ctx).blocks[KEY])


@pytest.mark.parametrize(("lang", "said"), [
    ("en", "Out of date: a newer run of mix took over as job 90500 (its own thread, in "
           "<#C0TRAIN>); these buttons no longer apply: nothing was resubmitted."),
    ("ko", "지난 요청입니다: mix의 더 새로운 실행이 작업 90500(으)로 이어받았습니다 "
           "(<#C0TRAIN>에 있는 그 실행의 스레드). 이 버튼들은 더 이상 쓰이지 않습니다: 아무것도 "
           "재제출하지 않았습니다."),
])
def test_a_new_run_rewrites_the_old_runs_resubmit_prompt_at_once(store, lang, said) -> None:
    ctx = make_context(store, FakeSlurm(first_id=90500), clock=lambda: NOW, slack_lang=lang)
    token = _old_incident(ctx)
    assert _has_buttons(ctx)
    execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW + 10)
    assert _updates(ctx) == [said]
    assert not _has_buttons(ctx)
    assert "88154 died" in str(recorded(ctx).blocks[KEY])  # the question is kept
    assert present(store.approvals.get(token)).state == "stale"


def test_a_resume_of_the_run_rewrites_its_open_prompt(store) -> None:
    slurm = FakeSlurm(first_id=90500)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    _old_incident(ctx)
    slurm.add(88154, state="FAILED", name="mix")
    execute(ctx, parse_command("resume mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW + 10)
    assert _updates(ctx) == ["Out of date: the run was resumed as job 90500, which carries it "
                             "on; these buttons no longer apply: nothing was resubmitted."]
    assert not _has_buttons(ctx)


def test_the_rewrite_is_made_once_whichever_replica_or_restart(store, tmp_path) -> None:
    ctx = make_context(store, FakeSlurm(first_id=90500), clock=lambda: NOW)
    _old_incident(ctx)
    execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN", now=NOW + 10)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as other:  # another replica's
        again = make_context(other, FakeSlurm(), clock=lambda: NOW + 20,
                             sink=recorded(ctx))
        supersede_prompts(again, "mix", NOW + 20)
        follow_up_prompts(again, NOW + 30)
    supersede_prompts(ctx, None, NOW + 40)
    assert len(_updates(ctx)) == 1


class RefusingUpdates(RecordingMessageSink):
    """A thread writer whose next `refuse` updates Slack refuses (PostError)."""

    refuse = 0

    def update_reply(self, chain_id: int, key: str, blocks: list, text: str) -> None:
        if self.refuse:
            self.refuse -= 1
            raise PostError(f"Slack chat.update failed for {key!r}: service_unavailable")
        super().update_reply(chain_id, key, blocks, text)


def test_a_rewrite_slack_refused_is_made_by_the_prompts_job(store) -> None:
    sink = RefusingUpdates(store)
    ctx = make_context(store, FakeSlurm(first_id=90500), clock=lambda: NOW, sink=sink)
    token = _old_incident(ctx)
    sink.refuse = 1
    reply = execute(ctx, parse_command("submit mix"), actor="U0ALICE", channel="C0TRAIN",
                    now=NOW + 10)
    assert reply.job_id == "90500"  # the submit is not undone
    assert _updates(ctx) == [] and _has_buttons(ctx)
    assert present(store.approvals.get(token)).state == "stale"  # its click is refused
    follow_up_prompts(ctx, NOW + 60)
    follow_up_prompts(ctx, NOW + 120)
    assert len(_updates(ctx)) == 1 and not _has_buttons(ctx)


def test_a_prompt_no_newer_job_carries_on_keeps_its_buttons(store) -> None:
    ctx = make_context(store, FakeSlurm(first_id=90500), clock=lambda: NOW)
    _old_incident(ctx)
    follow_up_prompts(ctx, NOW + 60)
    supersede_prompts(ctx, "mix", NOW + 60)
    assert _updates(ctx) == [] and _has_buttons(ctx)


def test_an_automatic_resubmit_rewrites_the_prompts_it_carries_on(store) -> None:
    """An older run of recipe `auto` left a Resubmit prompt; its newer run's job 88300 timed
    out and the watcher resubmits it automatically as 90001: as that is told in its thread,
    the old prompt is rewritten to name the job that carries the recipe on."""
    from fakes import T0, FakeResubmit, FakeSFTP
    from support.watcher import timed_out

    from bot.services.watch_events import ThreadEvents

    ctx = make_context(store, FakeSlurm())
    sink = recorded(ctx)
    old = store.chains.create(recipe="auto", cluster="dev", job_name="auto", now=T0 - 5000,
                              channel="C0TRAIN")
    store.attempts.record(chain_id=old.id, job_id="88200", now=T0 - 5000, state="FAILED")
    sink.post_root(old.id, "C0TRAIN", [], "auto")
    token = store.approvals.create(
        action="resubmit", payload={"choices": ["resubmit", "dismiss"], "recipe": "auto",
                                    "summary": "88200 died", "post_key": KEY},
        allowed=["U0APPR"], expires_at=T0 + 10**6, now=T0 - 5000, target_job="88200",
        chain_id=old.id)
    sink.post_reply(old.id, KEY, [{"type": "actions", "elements": []}], "88200 died")
    watcher, chain = timed_out((store, FakeSlurm(), FakeSFTP(), ThreadEvents(ctx)),
                               FakeResubmit(store))
    sink.post_root(chain.id, "C0TRAIN", [], "auto")
    for t in (1310, 1380, 1440):
        watcher.tick(T0 + t)
    assert _updates(ctx) == ["Out of date: a newer run of auto took over as job 90001 (its own "
                             "thread, in <#C0TRAIN>); these buttons no longer apply: nothing "
                             "was resubmitted."]
    assert present(store.approvals.get(token)).state == "stale"
