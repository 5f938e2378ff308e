"""A person's `/train resume` keeps the nodes the run left out after node faults, as the
watcher's and a button's resubmits do (bot.services.runs.exclusion): its --exclude has the
recipe's own list and each attempt's excluded_nodes, and its reply and the run's thread say
which nodes stay left out (only those, never the recipe's own)."""

from __future__ import annotations

import pytest
from fakes import FakeSlurm, make_context, recorded

from bot.core import train_grammar as c
from bot.services.ports import BotContext
from bot.services.train import execute
from bot.store import Store

NOW = 1_732_871_000.0
SAID = {"en": "Nodes left out: gpu-a07,gpu-b12 (--exclude).",
        "ko": "제외된 노드: gpu-a07,gpu-b12 (--exclude)."}


def _run_with_faults(store: Store, slurm: FakeSlurm, lang: str) -> tuple[BotContext, int]:
    ctx = make_context(store, slurm, exclude="bad-n1", slack_lang=lang)
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 300,
                                    channel="C0TRAIN")
    ctx.store.attempts.record(chain_id=chain.id, job_id="88100", now=NOW - 300,
                              excluded_nodes="gpu-a07")  # after a fault on gpu-a07
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100,
                              excluded_nodes="gpu-a07,gpu-b12")  # and one on gpu-b12
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx, chain.id


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_persons_resume_keeps_the_runs_left_out_nodes(store: Store, lang: str) -> None:
    slurm = FakeSlurm()
    ctx, chain_id = _run_with_faults(store, slurm, lang)
    reply = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel="C0TRAIN", now=NOW)
    [spec] = slurm.submits()
    assert spec.exclude == "bad-n1,gpu-a07,gpu-b12"  # the recipe's own first
    new = ctx.store.attempts.for_chain(chain_id)[-1]
    assert new.excluded_nodes == "gpu-a07,gpu-b12"
    assert SAID[lang] in reply.text, reply.text
    assert "bad-n1" not in reply.text
    [resolution] = [t for k, _, key, t in recorded(ctx).posts
                    if k == "reply" and key.startswith("resolution:")]
    blocks = recorded(ctx).blocks[f"resolution:{new.job_id}"]
    said = blocks[0]["text"]["text"]
    assert SAID[lang] in said and "bad-n1" not in said, said
    assert resolution


def test_a_resume_of_a_run_that_left_nothing_out_says_nothing_of_it(store: Store) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, exclude="bad-n1")
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 300,
                                    channel="C0TRAIN")
    ctx.store.attempts.record(chain_id=chain.id, job_id="88100", now=NOW - 300)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    reply = execute(ctx, c.Resume("mix"), actor="U0OWNER", channel="C0TRAIN", now=NOW)
    assert slurm.submits()[0].exclude == "bad-n1"
    assert "left out" not in reply.text and "--exclude" not in reply.text
