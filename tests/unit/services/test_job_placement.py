"""The recipe as a job's sbatch got it (bot.services.job_placement.job_recipe): what a step
run beside the job (the DataLoader probe) is placed by."""

from __future__ import annotations

from fakes import FakeSlurm, make_context

from bot.services.job_placement import job_recipe
from bot.services.runs import submit_and_announce
from bot.store import Store

T0 = 1_732_871_000.0


def test_a_jobs_placement_is_its_submits_overrides_and_left_out_nodes(
        store: Store) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, exclude="gpu01", qos="high",
                       overridable={"partition": "str", "lr": "float"})
    result = submit_and_announce(ctx, "mix", actor="U0ALICE", now=T0,
                                 overrides={"partition": "gpu-big", "lr": "0.1"})
    [spec] = slurm.submits()
    placed = job_recipe(ctx.config, ctx.store, "mix", str(result.job_id))
    assert (spec.partition, spec.exclude) == ("gpu-big", "gpu01")
    assert placed.placement_flags() == ["--partition=gpu-big", "--account=root", "--qos=high",
                                        "--exclude=gpu01"]
    # a node-fault resubmit's attempt row: its left-out nodes, whatever the recipe says
    chain_id = result.chain_id
    ctx.store.attempts.record(chain_id=chain_id, job_id="77001", now=T0 + 5,
                              excluded_nodes="gpu01,gpu07")
    assert job_recipe(ctx.config, ctx.store, "mix", "77001").exclude == "gpu01,gpu07"
    # an attempt row records only the nodes its run left out: the recipe's own come first
    first = ctx.store.attempts.get_by_job(str(result.job_id))
    assert first is not None and first.excluded_nodes is None
    ctx.store.attempts.record(chain_id=chain_id, job_id="77002", now=T0 + 6,
                              excluded_nodes="gpu07")
    assert job_recipe(ctx.config, ctx.store, "mix", "77002").exclude == "gpu01,gpu07"
    # a job trainbot has no submit of: the recipe as it is
    assert job_recipe(ctx.config, ctx.store, "mix", "99999") == ctx.config.recipe("mix")
    assert job_recipe(ctx.config, ctx.store, "mix", None) == ctx.config.recipe("mix")
