"""A run asking trainbot to hold a competing job, for the tests of trainbot's holds
(test_hold_settling.py, test_hold_handoff.py): the run's resumed job waiting in the fake Slurm,
its chain, attempt and thread, and its hold prompt (bot.services.competitors.HOLD_ACTION),
all at `NOW`."""

from __future__ import annotations

from fakes import FakeSlurm, recorded

from bot.services import competitors
from bot.services.ports import BotContext

NOW = 1_000_000.0


def hold_for(ctx: BotContext, slurm: FakeSlurm, competitor: int, for_job: int = 88887) -> str:
    """A run whose resumed job `for_job` waits, and its hold prompt for `competitor`: the
    prompt's token."""
    slurm.add(for_job, name="mix", account="root", partition="debug", priority=50)
    chain = ctx.store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=NOW)
    ctx.store.attempts.record(chain_id=chain.id, job_id=str(for_job), now=NOW)
    recorded(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx.store.approvals.create(
        chain_id=chain.id, action=competitors.HOLD_ACTION, target_job=str(competitor),
        payload={"cluster": "dev", "for_job": str(for_job), "recipe": "mix",
                 "choices": ["hold", "keep"]},
        allowed=["U0APPR"], now=NOW, expires_at=NOW + 3600)
