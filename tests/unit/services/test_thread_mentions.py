"""Whom a run thread @-mentions (recipes.<name>.mentions): the owners on the thread's first
incident only, the prompt's people on every prompt that waits for a decision."""

from __future__ import annotations

import pytest
from fakes import T0, make_config, make_context, writer

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting, Diagnosis, DiagnosisMetrics
from bot.core.policy import AttemptFacts, ChainHistory, PolicyParams, decide, early_warnings
from bot.core.slurm.records import JobRecord
from bot.core.units import GIB
from bot.services.ports import PostError
from bot.services.watch.events import WatchEvent
from bot.services.watch_events import ThreadEvents
from bot.store import Store

FAILED = Accounting(state="FAILED", exit_code=1, signal=0, mem_limit_bytes=950 * GIB,
                    max_rss_bytes=940 * GIB)
MANUAL = PolicyParams(backoff_s=60)


def diag(class_id: str, **kw) -> Diagnosis:
    cls = Catalogue.load().classes[class_id]
    metrics = kw.pop("metrics", None) or DiagnosisMetrics(last_iter=3400, target_iter=8000)
    return Diagnosis(class_id=class_id, action=cls.action, retryable=cls.retryable,
                     charges_budget=cls.charges_budget, hint=cls.hint, title=cls.title,
                     metrics=metrics, **kw)


def thread(store: Store, **recipe):
    ctx = make_context(store, clock=lambda: T0, **recipe)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx, chain


def publish_incident(ctx, chain, job: str, class_id: str, *, checkpoint: int | None = None):
    """Record the incident as the watcher's outbox does, then publish it; its head line."""
    d = diag(class_id)
    history = ChainHistory(attempts=(AttemptFacts(job, 1, last_iter=3400),))
    dec = decide(d, history, MANUAL, T0, checkpoint_iter=checkpoint, accounting=FAILED)
    key = f"dev:{job}:final"
    ctx.store.incidents.record(key, class_id=class_id, diagnosis={}, now=T0,
                               chain_id=chain.id, job_id=job)
    before = len(ctx.sink.posts)
    ThreadEvents(ctx).publish(WatchEvent(
        "incident", key, "dev", f"job {job} FAILED", chain.id, job, "mix", diagnosis=d,
        decision=dec, record=JobRecord(job_id=int(job), state="FAILED")))
    return ctx.sink.posts[before][3]


def stall_prompt(ctx, chain) -> str:
    d = diag("hang", metrics=DiagnosisMetrics(last_iter=3470, stall_seconds=720))
    [dec] = early_warnings(d, ChainHistory(), MANUAL, T0, job_id="88154")
    before = len(ctx.sink.posts)
    ThreadEvents(ctx).publish(WatchEvent("warning", "dev:88154:hang:line1", "dev", dec.reason,
                                         chain.id, "88154", "mix", diagnosis=d, decision=dec))
    return ctx.sink.posts[before][3]


def test_owners_are_mentioned_on_the_first_incident_only(store):
    ctx, chain = thread(store)
    assert publish_incident(ctx, chain, "88154", "cuda_oom").startswith("<@U0OWNER> job 88154")
    second = publish_incident(ctx, chain, "88155", "cuda_oom")
    assert second.startswith("job 88155") and "<@" not in second


def test_a_republished_first_incident_still_mentions_the_owners(store):
    ctx, chain = thread(store)
    ctx.sink.fail_next = 1  # Slack refuses the first incident's post: the outbox retries it
    with pytest.raises(PostError):
        publish_incident(ctx, chain, "88154", "cuda_oom")
    publish_incident(ctx, chain, "88155", "cuda_oom")
    d = diag("cuda_oom")
    dec = decide(d, ChainHistory(), MANUAL, T0, accounting=FAILED)
    ThreadEvents(ctx).publish(WatchEvent(
        "incident", "dev:88154:final", "dev", "x", chain.id, "88154", "mix", diagnosis=d,
        decision=dec, record=JobRecord(job_id=88154, state="FAILED")))
    assert ctx.sink.posts[-1][3].startswith("<@U0OWNER> job 88154")


def test_a_later_incident_that_asks_for_a_decision_mentions_the_prompts_people(store):
    ctx, chain = thread(store)
    publish_incident(ctx, chain, "88154", "cuda_oom")
    asks = publish_incident(ctx, chain, "88155", "nccl_timeout", checkpoint=3000)
    assert asks.startswith("<@U0OWNER> job 88155") and asks.count("<@U0OWNER>") == 1


def test_every_incident_when_the_recipe_says_so(store):
    ctx, chain = thread(store, mentions={"incidents": "every"})
    publish_incident(ctx, chain, "88154", "cuda_oom")
    assert publish_incident(ctx, chain, "88155", "cuda_oom").startswith("<@U0OWNER> ")


def test_prompts_mention_the_approvers_when_the_recipe_says_so(store):
    ctx, chain = thread(store, mentions={"prompts": "approvers"})
    assert stall_prompt(ctx, chain).startswith("<@W0LEAD> <@U0APPR> job 88154:")


def test_no_mention_at_all(store):
    ctx, chain = thread(store, mentions={"incidents": "never", "prompts": "none"})
    assert "<@" not in publish_incident(ctx, chain, "88154", "nccl_timeout", checkpoint=3000)
    assert "<@" not in stall_prompt(ctx, chain)


def test_a_bad_escalation_target_fails_the_config():
    with pytest.raises(ValueError, match="escalate_to"):
        make_config(mentions={"escalate_to": ["nobody-like-this"]})
    with pytest.raises(ValueError, match="not a mention"):
        make_config(mentions={"escalate_to": ["<@U123>"]})
    assert make_config(mentions={"escalate_to": ["leads", "S0TEAM", "U0BOSS"]})


def test_a_prompt_reminds_then_escalates_then_expires():
    with pytest.raises(ValueError, match="escalate_after_s"):
        make_config(policy={"remind_after_s": 7200, "escalate_after_s": 3600})
    with pytest.raises(ValueError, match="approval_expiry_s"):
        make_config(policy={"escalate_after_s": 90000})
    assert make_config(policy={"remind_after_s": 0, "escalate_after_s": 0})
