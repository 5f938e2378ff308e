"""What Slurm says a job asked for never makes it a --mem=0 (whole-node) job: its requested
memory is 0 for --mem=0, but also for a --mem-per-gpu job (cons_tres clears the per-node
amount to rely on the per-GRES one; so does the site's DefMemPerGPU for a plain
--gres=gpu:N) and for a job that asked for none on a cluster with no default. Such a job's
host OOM proposes a --mem above what it was allocated, never "already all of its node's
memory". Only what trainbot submitted says --mem=0 (bot.core.policy.whole_node_mem of its
attempt's submit_mem: tests/unit/services/test_watch_submit_mem.py); the allocation Slurm
reports is then the node's memory, which the whole-node decision names."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from test_mem_whole_node import LEAK, NOW, host_oom

from bot.config import PolicyConfig
from bot.core.incident import build_incident
from bot.core.policy import ChainHistory, DecisionKind, decide, whole_node_mem
from bot.core.slurm.records import merge_records
from bot.core.slurm.sacct import SACCT_FIELDS, parse_sacct_json, parse_sacct_parsable
from bot.core.slurm.squeue import SQUEUE_FIELDS, parse_squeue_json, parse_squeue_parsable
from bot.core.units import GIB, MIB

VERSIONS = Path(__file__).parents[2] / "fixtures" / "slurm" / "versions"
ZERO = {"set": True, "infinite": False, "number": 0}
UNSET = {"set": False, "infinite": False, "number": 0}


def _per_gpu_squeue_row() -> str:
    """squeue's row of a --mem-per-gpu=64G --gres=gpu:4 job, host-OOM killed: MinMemory 0,
    256G allocated."""
    row = {f: "" for f in SQUEUE_FIELDS}
    row.update(JobID="900", ArrayJobID="900", ArrayTaskID="N/A", State="OUT_OF_MEMORY",
               Reason="OutOfMemory", UserName="u", NodeList="gpu01", MinMemory="0",
               NumCPUs="32", NumNodes="1", exit_code="0:125", Name="train",
               SubmitTime="1730000000", StartTime="1730000100", EndTime="1730003600",
               WorkDir="/w", STDOUT="/w/o.out",
               **{"tres-alloc": "cpu=32,mem=256G,node=1,billing=32,gres/gpu=4"})
    return "|".join(row[f] for f in SQUEUE_FIELDS) + "|\n"


def _per_gpu_sacct_parsable() -> str:
    job = dict(JobIDRaw="900", JobID="900", State="OUT_OF_MEMORY", ExitCode="0:125", User="u",
               NNodes="1", ReqTRES="billing=32,cpu=32,gres/gpu=4,mem=256G,node=1",
               AllocTRES="billing=32,cpu=32,gres/gpu=4,mem=256G,node=1", AllocCPUS="32",
               Submit="1730000000", Start="1730000100", End="1730003600", ElapsedRaw="3500",
               NodeList="gpu01", JobName="train")
    step = dict(job, JobIDRaw="900.batch", JobID="900.batch", MaxRSS="262000000K",
                JobName="batch")
    return "\n".join(["|".join(SACCT_FIELDS)]
                     + ["|".join(r.get(f, "") for f in SACCT_FIELDS) for r in (job, step)])


def test_slurms_requested_0_marks_no_job_whole_node() -> None:
    """squeue's MinMemory 0, squeue --json's and sacct --json's memory_per_node 0 (24.11),
    22.05's required memory 0: before, each made the job a --mem=0 job."""
    live = parse_squeue_parsable(_per_gpu_squeue_row())[900]
    assert not live.whole_node_mem and live.mem_limit_bytes == 256 * GIB
    data = json.loads((VERSIONS / "24.11" / "squeue.json").read_text())
    job = data["jobs"][0]
    job["memory_per_node"], job["memory_per_cpu"] = ZERO, UNSET
    job["memory_per_tres"] = "gres/gpu:65536"
    assert not parse_squeue_json(json.dumps(data))[job["job_id"]].whole_node_mem
    data = json.loads((VERSIONS / "24.11" / "sacct.json").read_text())
    job = next(j for j in data["jobs"] if j["job_id"] == 6362)
    job["required"]["memory_per_node"], job["required"]["memory_per_cpu"] = ZERO, UNSET
    per_gpu = parse_sacct_json(json.dumps(data))[6362]
    assert not per_gpu.whole_node_mem and per_gpu.mem_limit_bytes == 16384 * MIB
    old = parse_sacct_json((VERSIONS / "22.05" / "sacct.json").read_text())
    assert not old[42].whole_node_mem and old[42].mem_limit_bytes == 1000 * MIB
    assert not old[42].accounting().whole_node_mem


@pytest.mark.parametrize("min_memory", ["0", "0M", "0n"])
def test_a_requested_0_is_no_limit_of_0(min_memory: str) -> None:
    """A limit of 0 is what a --mem=0 given as such is (`trainbot report --mem-limit 0`): a
    pending job's requested 0 in squeue is none (it may be a per-GPU amount)."""
    row = {f: "" for f in SQUEUE_FIELDS}
    row.update(JobID="77", Name="t", UserName="u", State="PENDING", MinMemory=min_memory)
    text = "|".join(row[f] for f in SQUEUE_FIELDS) + "|\n"
    assert parse_squeue_parsable(text)[77].mem_limit_bytes is None


@pytest.mark.parametrize("leak", [None, LEAK])
def test_a_per_gpu_memory_job_is_offered_more_mem(leak) -> None:
    """The review's case: --mem-per-gpu=64G on 4 GPUs, killed at 250G of its 256G, as squeue
    and sacct --parsable2 give it: a --mem above 256G is proposed, no whole-node sentence."""
    rec = merge_records(parse_squeue_parsable(_per_gpu_squeue_row()),
                        parse_sacct_parsable(_per_gpu_sacct_parsable()))[900]
    dec = decide(host_oom(leak_fit=leak), ChainHistory(attempts=()),
                 PolicyConfig(max_mem="1T"), NOW, checkpoint_iter=500,
                 accounting=rec.accounting())
    assert dec.kind is DecisionKind.PROPOSE_MEM_RESUBMIT and dec.mem, dec.reason
    assert "resubmit_mem" in dec.offers and "node's memory" not in dec.reason
    view = build_incident(host_oom(leak_fit=leak), recipe="r", job_id="900",
                          last_checkpoint_iter=500, now=NOW, state="OUT_OF_MEMORY",
                          mem_limit_bytes=rec.mem_limit_bytes,
                          whole_node_mem=rec.whole_node_mem, max_rss_bytes=rec.max_rss_bytes,
                          mem_policy=PolicyConfig(max_mem="1T"))
    assert not view.mem_whole_node and not view.whole_node
    assert any(p.mem for p in view.proposals)


@pytest.mark.parametrize("version", ["22.05", "24.11"])
@pytest.mark.parametrize("leak", [None, LEAK])
def test_a_job_sent_with_mem_0_takes_the_whole_node_path_with_its_allocation(version,
                                                                              leak) -> None:
    """Marked by what trainbot submitted (the watcher: JobRecord.whole_node_mem), a --mem=0
    job's allocation as sacct reports it (the node's memory) is the figure it names, and no
    --mem (not twice the node) is proposed."""
    data = json.loads((VERSIONS / version / "sacct.json").read_text())
    rec = parse_sacct_json(json.dumps(data))[42 if version == "22.05" else 6362]
    node = rec.mem_limit_bytes
    assert node
    rec = replace(rec, whole_node_mem=whole_node_mem("0"), state="OUT_OF_MEMORY",
                  max_rss_bytes=node - 10 * MIB)
    dec = decide(host_oom(leak_fit=leak), ChainHistory(attempts=()),
                 PolicyConfig(max_mem="512G"), NOW, checkpoint_iter=500,
                 accounting=rec.accounting())
    assert dec.kind is DecisionKind.ASK_HUMAN and dec.mem is None, dec.reason
    assert dec.facts["why"] == "mem_whole_node" and "resubmit_mem" not in dec.offers
    assert "already all of its node's memory (" in dec.reason
    view = build_incident(host_oom(leak_fit=leak), recipe="r", job_id=str(rec.job_id),
                          last_checkpoint_iter=500, now=NOW, state="OUT_OF_MEMORY",
                          mem_limit_bytes=node, whole_node_mem=rec.whole_node_mem,
                          max_rss_bytes=node - 10 * MIB, mem_policy=PolicyConfig(max_mem="512G"))
    assert view.mem_whole_node if leak is None else view.leak["whole_node"]  # type: ignore[index]
    assert not any(p.mem or p.kind == "resubmit_mem" for p in view.proposals)


@pytest.mark.parametrize(("mem", "whole"), [
    ("0", True), ("0G", True), ("0M", True), ("0mb", True), ("00", True), (" 0 ", True),
    ("64G", False), ("400G", False), ("", False), (None, False), ("lots", False)])
def test_whole_node_mem_is_the_submitted_mem_0(mem: str | None, whole: bool) -> None:
    assert whole_node_mem(mem) is whole
