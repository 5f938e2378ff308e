"""Runs the approval and hold tests start from: a failed run with its resubmit prompt
(`failed_run`), its resubmit approved with a competing job to hold (`competitor_setup`),
and that job held for the resubmitted job, now running (`held_then_running`)."""

from __future__ import annotations

from fakes import (
    FakeSlurm,
    recorded,
)

from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.prompts import create_resubmit_prompt

NOW = 1_000_000.0


def failed_run(ctx: BotContext) -> tuple[int, str]:
    """A chain whose job 88154 died (NCCL timeout), with its thread open."""
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW - 100)
    ctx.store.attempts.record(chain_id=chain.id, job_id="88154", now=NOW - 100)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    prompt = create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain.id, job_id="88154", now=NOW,
        summary="88154 died: NCCL watchdog timeout", resume_iter=3000, mem="1900G",
    )  # fmt: skip
    return chain.id, prompt.token


def competitor_setup(ctx: BotContext, slurm: FakeSlurm) -> tuple[int, str]:
    """88017 (same account, same partition, older) would start before the resubmit."""
    slurm.add(88017, name="succ", account="root", partition="debug", priority=100,
              submit_time=1000.0)
    slurm.add(77777, name="other-team", account="team-b", partition="debug", priority=900)
    chain_id, token = failed_run(ctx)
    result = handle_click(ctx, token, ActionId.RESUBMIT, "W0LEAD", NOW + 1)
    assert result.holds == [88017]  # the other team's job is not ours to hold
    hold_posts = [p for p in recorded(ctx).posts if p[2].startswith("hold-prompt:")]
    assert len(hold_posts) == 1
    assert hold_posts[0][3].endswith("Hold 88017 until the resumed job starts?")
    hold_token = hold_posts[0][2].removeprefix("hold-prompt:")
    return chain_id, hold_token


def held_then_running(ctx: BotContext, slurm: FakeSlurm) -> None:
    """88017 held (a yes at NOW + 2) for the resubmitted 88887, which runs now."""
    _, hold_token = competitor_setup(ctx, slurm)
    handle_click(ctx, hold_token, ActionId.HOLD_COMPETITOR, "U0APPR", NOW + 2)
    slurm.set(88887, state="RUNNING")
