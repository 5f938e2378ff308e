"""A --mem=0 job as Slurm reports it: sacct gives the node's whole memory as its allocation
(the 22.05 fixture's job 42: required 0, allocated 1000 MiB), so its limit was never 0 and
the whole-node decision never ran: a host OOM proposed --mem=2G, twice the node. What the job
asked for (sacct's and squeue's requested memory 0, or its recipe's `mem: 0`) marks it
(JobRecord/Accounting.whole_node_mem), and the decision and the card take the whole-node path
with the allocated amount as the node's memory."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_mem_whole_node import LEAK, NOW, host_oom

from bot.config import PolicyConfig
from bot.core.incident import build_incident
from bot.core.policy import ChainHistory, DecisionKind, decide
from bot.core.slurm.records import JobRecord, merge_records
from bot.core.slurm.sacct import parse_sacct_json
from bot.core.slurm.squeue import parse_squeue_json, parse_squeue_parsable
from bot.core.units import MIB
from bot.services.watch.tick import Watcher

VERSIONS = Path(__file__).parents[2] / "fixtures" / "slurm" / "versions"


def _sacct_24_11_mem0() -> str:
    """24.11's sacct --json job 6362 as `--mem=0` makes it: per node set to 0, no per-CPU
    amount, the node's 16 GiB allocated."""
    data = json.loads((VERSIONS / "24.11" / "sacct.json").read_text())
    job = next(j for j in data["jobs"] if j["job_id"] == 6362)
    job["required"]["memory_per_node"] = {"set": True, "infinite": False, "number": 0}
    job["required"]["memory_per_cpu"] = {"set": False, "infinite": False, "number": 0}
    return json.dumps(data)


def test_sacct_json_says_which_jobs_asked_for_mem_0() -> None:
    old = parse_sacct_json((VERSIONS / "22.05" / "sacct.json").read_text())
    assert old[42].whole_node_mem and old[42].mem_limit_bytes == 1000 * MIB
    assert not old[44].whole_node_mem and not old[43].whole_node_mem
    new = parse_sacct_json((VERSIONS / "24.11" / "sacct.json").read_text())
    assert not any(r.whole_node_mem for r in new.values())  # --mem-per-cpu=512
    mem0 = parse_sacct_json(_sacct_24_11_mem0())[6362]
    assert mem0.whole_node_mem and mem0.mem_limit_bytes == 16384 * MIB
    assert mem0.accounting().whole_node_mem


def test_squeue_says_so_too_and_a_merge_keeps_it() -> None:
    data = json.loads((VERSIONS / "24.11" / "squeue.json").read_text())
    job = data["jobs"][0]
    assert not parse_squeue_json(json.dumps(data))[job["job_id"]].whole_node_mem
    job["memory_per_node"] = {"set": True, "infinite": False, "number": 0}
    job["memory_per_cpu"] = {"set": False, "infinite": False, "number": 0}
    live = parse_squeue_json(json.dumps(data))[job["job_id"]]
    assert live.whole_node_mem
    acct = JobRecord(job_id=job["job_id"], state="OUT_OF_MEMORY")
    assert merge_records({live.job_id: live}, {live.job_id: acct})[live.job_id].whole_node_mem
    assert merge_records({live.job_id: replace(live, whole_node_mem=False)},
                         {live.job_id: replace(acct, whole_node_mem=True)}
                         )[live.job_id].whole_node_mem


@pytest.mark.parametrize("min_memory, whole", [("0", True), ("0M", True), ("4000M", False),
                                               ("", None)])
def test_squeue_parsable_min_memory_0(min_memory: str, whole: bool | None) -> None:
    from bot.core.slurm.squeue import SQUEUE_FIELDS
    row = {f: "" for f in SQUEUE_FIELDS}
    row.update(JobID="77", Name="t", UserName="u", State="RUNNING", MinMemory=min_memory)
    text = "|".join(row[f] for f in SQUEUE_FIELDS) + "|\n"
    assert parse_squeue_parsable(text)[77].whole_node_mem is whole


@pytest.mark.parametrize("version", ["22.05", "24.11"])
@pytest.mark.parametrize("leak", [None, LEAK])
def test_a_host_oom_of_a_mem_0_job_from_sacct_takes_the_whole_node_path(version, leak) -> None:
    text = ((VERSIONS / "22.05" / "sacct.json").read_text() if version == "22.05"
            else _sacct_24_11_mem0())
    rec = parse_sacct_json(text)[42 if version == "22.05" else 6362]
    node = rec.mem_limit_bytes
    assert node
    acct = replace(rec.accounting(), state="OUT_OF_MEMORY", max_rss_bytes=node - 10 * MIB)
    dec = decide(host_oom(leak_fit=leak), ChainHistory(attempts=()),
                 PolicyConfig(max_mem="512G"), NOW, checkpoint_iter=500, accounting=acct)
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None, dec.reason
    assert dec.facts["why"] == "mem_whole_node" and "resubmit_mem" not in dec.offers
    assert "already all of its node's memory (" in dec.reason
    view = build_incident(host_oom(leak_fit=leak), recipe="r", job_id=str(rec.job_id),
                          last_checkpoint_iter=500, now=NOW, state="OUT_OF_MEMORY",
                          mem_limit_bytes=node, whole_node_mem=bool(rec.whole_node_mem),
                          max_rss_bytes=node - 10 * MIB, mem_policy=PolicyConfig(max_mem="512G"))
    assert view.mem_whole_node if leak is None else view.leak["whole_node"]  # type: ignore[index]
    assert not any(p.mem or p.kind == "resubmit_mem" for p in view.proposals)


@pytest.mark.parametrize("mem, whole", [("0", True), ("0G", True), ("400G", False),
                                        (None, False)])
def test_a_recipe_with_mem_0_marks_its_job_when_slurm_did_not(mem, whole) -> None:
    """sacct --parsable2's ReqMem is the allocation (21.08 on), and squeue forgets the job."""
    watcher = SimpleNamespace(recipes=SimpleNamespace(cfg=lambda r: SimpleNamespace(mem=mem)))
    rec = JobRecord(job_id=5, mem_limit_bytes=1000 * MIB)
    jw = SimpleNamespace(recipe="r")
    assert bool(Watcher._asked_mem(watcher, jw, rec).whole_node_mem) is whole  # type: ignore[arg-type]


def test_a_recipe_with_mem_0_does_not_overrule_what_slurm_said_the_job_asked() -> None:
    """A `/train submit … mem=64G` of a recipe with `mem: 0`: sacct --json (or squeue) says
    the job asked for 64G, so its host OOM proposes a --mem, not 'already all of its node's
    memory'. Only where Slurm cannot say (sacct --parsable2) does the recipe decide."""
    watcher = SimpleNamespace(recipes=SimpleNamespace(cfg=lambda r: SimpleNamespace(mem="0")))
    jw = SimpleNamespace(recipe="r")
    asked_64g = parse_sacct_json((VERSIONS / "22.05" / "sacct.json").read_text())[44]
    assert asked_64g.whole_node_mem is False
    assert Watcher._asked_mem(watcher, jw, asked_64g).whole_node_mem is False  # type: ignore[arg-type]
    live = JobRecord(job_id=5, whole_node_mem=False)
    unknown = JobRecord(job_id=5, mem_limit_bytes=1000 * MIB)
    assert unknown.whole_node_mem is None
    assert merge_records({5: live}, {5: unknown})[5].whole_node_mem is False
    assert merge_records({5: JobRecord(job_id=5)}, {5: unknown})[5].whole_node_mem is None
    assert not unknown.accounting().whole_node_mem
