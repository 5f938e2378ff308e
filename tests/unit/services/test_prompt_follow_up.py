"""Unanswered prompts (bot.services.prompt_follow_up.follow_up_prompts): one reminder, then
one escalation to the next group, then the prompt rewritten to say it expired and what happens
now; each step recorded in the store, so no replica repeats one."""

from __future__ import annotations

from fakes import T0, FakeSlurm, make_context, writer

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics
from bot.core.policy import AttemptFacts, ChainHistory, PolicyParams, decide
from bot.core.slurm.records import JobRecord
from bot.core.units import GIB
from bot.services import competitors
from bot.services.prompt_follow_up import follow_up_prompts
from bot.services.watch.events import WatchEvent
from bot.services.watch_events import ThreadEvents
from bot.store import Store

HOUR = 3600.0
FAILED = Accounting(state="FAILED", exit_code=1, signal=0, mem_limit_bytes=950 * GIB,
                    max_rss_bytes=940 * GIB)


def prompted(store: Store, **recipe):
    """A thread whose nccl_timeout incident asks for a resubmit at T0; (ctx, chain, token)."""
    ctx = make_context(store, clock=lambda: T0, **recipe)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    cls = Catalogue.load().classes["nccl_timeout"]
    d = Diagnosis(class_id="nccl_timeout", action=cls.action, retryable=cls.retryable,
                  charges_budget=cls.charges_budget, hint=cls.hint, title=cls.title,
                  metrics=DiagnosisMetrics(last_iter=3400, target_iter=8000))
    dec = decide(d, ChainHistory(attempts=(AttemptFacts("88154", 1, last_iter=3400),)),
                 PolicyParams(backoff_s=60), T0, checkpoint_iter=3000, accounting=FAILED)
    ThreadEvents(ctx).publish(WatchEvent(
        "incident", "dev:88154:final", "dev", "job 88154 FAILED", chain.id, "88154", "mix",
        diagnosis=d, decision=dec, record=JobRecord(job_id=88154, state="FAILED")))
    [approval] = store.approvals.for_chain(chain.id, "pending")
    return ctx, chain, approval.token


def follow_ups(ctx) -> list[tuple[str, str, str]]:
    return [(kind, key, text) for kind, _, key, text in ctx.sink.posts
            if key.startswith("prompt-") or kind == "update"]


def test_a_prompt_reminds_then_escalates_then_says_it_expired(store):
    ctx, chain, token = prompted(store)
    follow_up_prompts(ctx, T0 + 1 * HOUR)
    assert follow_ups(ctx) == []  # remind_after_s is 2 h by default
    follow_up_prompts(ctx, T0 + 2 * HOUR)
    follow_up_prompts(ctx, T0 + 3 * HOUR)  # reminded once only
    [(kind, key, reminder)] = follow_ups(ctx)
    assert key == f"prompt-reminded:{token}"
    assert reminder.startswith("⏰ <@U0OWNER> reminder: the prompt above still waits for a "
                               "decision (asked 2 h 00 min ago). Its buttons work until ")
    assert "The question: job 88154 FAILED: nccl_timeout" in reminder
    assert reminder.count("<@") == 1  # the question's own mention is not repeated
    follow_up_prompts(ctx, T0 + 6 * HOUR)
    follow_up_prompts(ctx, T0 + 7 * HOUR)
    escalation = follow_ups(ctx)[1:]
    assert [(k, key) for k, key, _ in escalation] == [("reply", f"prompt-escalated:{token}")]
    assert escalation[0][2].startswith("📣 <@W0LEAD> <@U0APPR> nobody has answered the "
                                       "prompt above for 6 h 00 min.")
    follow_up_prompts(ctx, T0 + 24 * HOUR)
    kind, key, text = follow_ups(ctx)[-1]
    assert (kind, key) == ("update", "dev:88154:final")  # the prompt itself, rewritten
    assert "nothing was resubmitted: job 88154 stays as it ended. `/train resume mix`" in text
    blocks = ctx.sink.blocks["dev:88154:final"]
    assert not [b for b in blocks if b["type"] == "actions"]  # no buttons left
    assert store.approvals.get(token).state == "expired"
    follow_up_prompts(ctx, T0 + 25 * HOUR)
    assert len(follow_ups(ctx)) == 3


def test_a_second_replica_repeats_no_step(store):
    ctx, chain, token = prompted(store)
    other = make_context(store)
    follow_up_prompts(ctx, T0 + 2 * HOUR)
    follow_up_prompts(other, T0 + 2 * HOUR + 60)
    assert len(follow_ups(ctx)) == 1 and follow_ups(other) == []
    assert store.approvals.steps(token) == {"reminded": T0 + 2 * HOUR}
    follow_up_prompts(other, T0 + 6 * HOUR)
    follow_up_prompts(ctx, T0 + 6 * HOUR + 60)
    assert len(follow_ups(other)) == 1 and len(follow_ups(ctx)) == 1


def test_an_answered_prompt_is_left_alone(store):
    ctx, chain, token = prompted(store)
    store.approvals.refuse(token, "W0LEAD", T0 + 60, latest_job="88154")
    follow_up_prompts(ctx, T0 + 30 * HOUR)
    assert follow_ups(ctx) == []


def test_escalation_goes_to_the_recipes_escalation_group_and_reminders_can_be_off(store):
    ctx, chain, token = prompted(store, mentions={"escalate_to": ["S0ONCALL", "U0BOSS"]},
                                 policy={"remind_after_s": 0, "escalate_after_s": 600})
    follow_up_prompts(ctx, T0 + 599)
    assert follow_ups(ctx) == []
    follow_up_prompts(ctx, T0 + 600)
    [(_, key, text)] = follow_ups(ctx)
    assert key == f"prompt-escalated:{token}"
    assert text.startswith("📣 <!subteam^S0ONCALL> <@U0BOSS> nobody has answered the prompt "
                           "above for 10 min.")


def test_the_follow_ups_read_in_the_recipes_language(store):
    ctx, chain, token = prompted(store, lang="ko")
    follow_up_prompts(ctx, T0 + 2 * HOUR)
    follow_up_prompts(ctx, T0 + 24 * HOUR)
    reminder, expired = [text for _, _, text in follow_ups(ctx)]
    assert reminder.startswith("⏰ <@U0OWNER> 알림: 위 요청이 아직 결정을 기다리고 있습니다 "
                               "(2시간 0분 전 요청).")
    assert "응답 없이 이 요청이 만료되었습니다. 아무것도 재제출하지 않았고" in expired


def test_an_expired_hold_prompt_says_nothing_was_held(store):
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="90001", now=T0)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    slurm.add(90001, name="mix", partition="debug", account="root", priority=50)
    slurm.add(88017, name="succ", partition="debug", account="root", priority=100)
    [proposal] = competitors.propose_holds(
        ctx, recipe="mix", chain_id=chain.id, job_id=90001, allowed=["W0LEAD"], now=T0,
        action_ids=("hold_competitor", "keep_competitor"))
    follow_up_prompts(ctx, T0 + 25 * HOUR)
    kinds = [(kind, key) for kind, key, _ in follow_ups(ctx)]
    assert kinds[-1] == ("update", f"hold-prompt:{proposal.token}")
    assert "88017 was not held: job 90001 waits in the queue as usual" in follow_ups(ctx)[-1][2]
