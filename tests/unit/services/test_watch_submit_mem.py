"""A host OOM is told "already all of its node's memory: no --mem gives it more" only when
trainbot submitted the job with --mem=0: the --mem its attempt records the submit passed
(attempts.submit_mem: the recipe's `mem` after the submit's overrides), else, for an attempt
that records none, its recipe's `mem`. Slurm's requested memory never decides: it is 0 for a
--mem-per-gpu job (and one the site's DefMemPerGPU gives its memory) and for one that asked
for none on a cluster with no default, whose memory more --mem still raises; and sacct
--parsable2, all the watcher has once squeue forgot the job, says only the allocation."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from fakes import T0
from support.watcher import CLUSTER, LOG, head_line, make_watcher

from bot.config import PolicyConfig
from bot.core.slurm.records import JobRecord
from bot.core.units import GIB
from bot.store import Store

JOB = 9100
NODE = 256 * GIB


class _Config:
    """The recipe (its `mem`) and policy the watcher asks bot.config.Config for."""

    def __init__(self, mem: str | None) -> None:
        self._recipe = SimpleNamespace(log_path=None, sampler_path=None, job_name=None,
                                       workdir=None, target_iter=1200, metric_regexes=[],
                                       mem=mem)
        self.policy = PolicyConfig(max_mem="1T")

    def recipe(self, name: str) -> Any:
        return self._recipe

    def policy_for(self, name: str) -> PolicyConfig:
        return self.policy


def _log() -> bytes:
    lines = [f"2025-05-14 10:{i // 10:02d}:00 | INFO | iter: {i}/1200 | loss: 0.9 | 4.50 s/iter"
             for i in range(0, 671, 10)]
    lines.append("slurmstepd: error: Detected 1 oom_kill event in StepId=9100.0. Some of the "
                 "step tasks have been OOM Killed.")
    return ("\n".join(lines) + "\n").encode()


def _incident(env: Any, *, recipe_mem: str | None, submit_mem: str | None) -> Any:
    """The incident of job 9100, host-OOM killed at 250 GiB of the 256 GiB Slurm allocated,
    its attempt recording `submit_mem` (None: none recorded), its recipe's `mem` `recipe_mem`;
    Slurm's record is what sacct --parsable2 gives (the allocation, nothing it asked for)."""
    store: Store
    store, slurm, sftp, sink = env
    chain = store.chains.create(recipe="mix", cluster=CLUSTER, job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id=str(JOB), now=T0, submit_mem=submit_mem)
    store.watched_jobs.add(CLUSTER, str(JOB), now=T0, chain_id=chain.id)
    sftp.append(LOG, _log())
    slurm.records[JOB] = JobRecord(job_id=JOB, name="mix", state="OUT_OF_MEMORY", exit_code=0,
                                   signal=9, stdout_path=LOG, start_time=T0,
                                   end_time=T0 + 3000, elapsed_s=3000, mem_limit_bytes=NODE,
                                   max_rss_bytes=250 * GIB)
    w = make_watcher(store, slurm, sftp, sink, config=_Config(recipe_mem), policy=None)
    w.tick(T0 + 3100)
    [incident] = [e for e in sink.events if e.kind == "incident"]
    return incident


WHOLE = {"en": "already all of its node's memory", "ko": "이미 노드의 메모리 전부"}


@pytest.mark.parametrize("recipe_mem", ["0", None])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_submit_that_overrode_mem_0_is_offered_more_mem(env, recipe_mem, lang) -> None:
    """`/train submit mix mem=64G` of a recipe with `mem: 0` (or a recipe with none, whose
    job Slurm says asked for 0, as a --mem-per-gpu job's): before, the recipe's 0 (or
    Slurm's) made it a whole-node job, told no --mem gives it more, offered none."""
    incident = _incident(env, recipe_mem=recipe_mem, submit_mem="64G")
    dec = incident.decision
    assert dec.facts["why"] == "mem_propose" and dec.mem and "resubmit_mem" in dec.offers
    assert not incident.record.whole_node_mem
    said = head_line(incident, lang)
    assert "--mem=" in said and WHOLE[lang] not in said, said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_job_submitted_with_mem_0_is_told_no_mem_gives_it_more(env, lang) -> None:
    """Whatever the recipe says now: the attempt records the --mem=0 its submit passed."""
    incident = _incident(env, recipe_mem="400G", submit_mem="0")
    dec = incident.decision
    assert dec.facts["why"] == "mem_whole_node" and dec.mem is None
    assert "resubmit_mem" not in dec.offers and dec.facts["node_mem"] == "256.0 GiB"
    assert WHOLE[lang] in head_line(incident, lang)


@pytest.mark.parametrize(("recipe_mem", "whole"), [("0", True), ("0G", True), ("400G", False),
                                                   (None, False)])
def test_an_attempt_that_records_no_mem_goes_by_its_recipe(env, recipe_mem, whole) -> None:
    """An attempt recorded before schema 24 (or a whole array's task as it started)."""
    incident = _incident(env, recipe_mem=recipe_mem, submit_mem=None)
    assert (incident.decision.facts["why"] == "mem_whole_node") is whole
    assert incident.record.whole_node_mem is whole


def test_a_submit_that_passed_no_mem_is_never_a_whole_node_job(env) -> None:
    """A job sent without --mem (its recipe had none then: Slurm's default, the script's
    own) is not made a whole-node job by a recipe that says `mem: 0` by now."""
    incident = _incident(env, recipe_mem="0", submit_mem="")
    assert incident.decision.facts["why"] == "mem_propose"
