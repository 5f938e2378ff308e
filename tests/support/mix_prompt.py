"""Run `mix`'s job 88154 with an approval prompt about it, as the unit tests of the prompts'
clicks set it up: by default the prompt of a stall (the job still runs: Cancel and resume,
Cancel, Dismiss; bot.services.prompts.create_resubmit_prompt's `offer_cancel`).

The run is a chain of recipe `mix` on cluster dev whose attempt is job 88154, its thread's
root posted in channel C0TRAIN through the context's thread writer."""

from __future__ import annotations

from fakes import FakeSlurm, writer

from bot.core.policy import CheckpointUnknown
from bot.services.ports import BotContext
from bot.services.prompts import Prompt, create_resubmit_prompt

CHANNEL = "C0TRAIN"


def mix_prompt(ctx: BotContext, *, now: float, run_at: float | None = None,
               summary: str = "88154: stalled", offer_cancel: bool = True,
               running: FakeSlurm | None = None, watched: bool = False,
               resume_iter: int | None = None, resume_checkpoint: str | None = None,
               checkpoint_unknown: CheckpointUnknown | None = None,
               mem: str | None = None) -> tuple[int, Prompt]:
    """Run `mix` recorded at `run_at` (default `now`): a chain, its attempt job 88154 and its
    thread's root; the prompt about 88154 made at `now` with `summary`, a stall's unless not
    `offer_cancel`, and `resume_iter`, `resume_checkpoint`, `checkpoint_unknown`, `mem` as
    create_resubmit_prompt takes them. `running`: the Slurm that shows 88154 RUNNING (named
    mix, partition debug, account root); `watched`: the watcher follows 88154 since `run_at`.
    (the chain's id, the prompt)."""
    at = now if run_at is None else run_at
    store = ctx.store
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=at)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=at)
    if watched:
        store.watched_jobs.add("dev", "88154", now=at, chain_id=chain.id)
    if running is not None:
        running.add(88154, name="mix", state="RUNNING", partition="debug", account="root")
    writer(ctx).post_root(chain.id, CHANNEL, [], "mix")
    return chain.id, create_resubmit_prompt(
        ctx, recipe="mix", chain_id=chain.id, job_id="88154", now=now, summary=summary,
        resume_iter=resume_iter, resume_checkpoint=resume_checkpoint,
        checkpoint_unknown=checkpoint_unknown, mem=mem, offer_cancel=offer_cancel)
