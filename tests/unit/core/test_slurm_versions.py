"""The values Slurm 22.05 to 25.05 print that used to be read wrong, one fixture per version.

Fixtures: tests/fixtures/slurm/versions/<version>/, hand-written in the shapes of public
outputs of that version (README.txt there says which shape each one follows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.slurm.records import merge_records
from bot.core.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from bot.core.slurm.squeue import parse_squeue_json, parse_squeue_parsable
from bot.core.slurm.sstat import parse_sstat
from bot.core.slurm.values import parse_squeue_exit_code, parse_tres_mem

VERSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "slurm" / "versions"
MiB = 1024**2
GiB = 1024**3


def _read(version: str, name: str) -> str:
    return (VERSIONS / version / name).read_text()


# ---- 1. per-CPU memory: squeue's MinMemory drops the per-CPU marker --------------------------


def test_squeue_parsable_per_cpu_job_reads_its_total_not_one_cpus_share():
    # 23.11: `--mem-per-cpu=512M` on 64 CPUs prints MinMemory 512M; tres-alloc has mem=32G.
    record = parse_squeue_parsable(_read("23.11", "squeue.txt"))[2710593]
    assert record.mem_limit_bytes == 32 * GiB


def test_squeue_per_cpu_limit_agrees_with_sacct_in_the_merge():
    live = parse_squeue_parsable(_read("23.11", "squeue.txt"))
    acct = parse_sacct_parsable(
        "JobIDRaw|JobID|State|ExitCode|NNodes|AllocTRES|AllocCPUS|JobName\n"
        "2710593|2710593|RUNNING|0:0|1|billing=64,cpu=64,mem=32G,node=1|64|percpu\n")
    assert merge_records(live, acct)[2710593].mem_limit_bytes == 32 * GiB


def test_squeue_json_per_cpu_memory_ignores_hyperthreads():
    # 23.02 (v0.0.39): 15000M per CPU, 8 tasks, `cpus` 16 counting hyperthreads; Slurm's own
    # total is tres mem=120000M, not 16 x 15000M.
    record = parse_squeue_json(_read("23.02", "squeue.json"), "23.02.6")[1618871]
    assert record.mem_limit_bytes == 120000 * MiB


# ---- 2. squeue -O exit_code prints code:signal from 23.02 on ---------------------------------


@pytest.mark.parametrize(
    ("job_id", "outcome"),
    [(2710594, ("FAILED", 1, 0)), (2710595, ("TIMEOUT", 0, 15))],
)
def test_squeue_parsable_exit_code_as_code_colon_signal(job_id, outcome):
    record = parse_squeue_parsable(_read("23.11", "squeue.txt"))[job_id]
    assert (record.state, record.exit_code, record.signal) == outcome


@pytest.mark.parametrize(
    ("text", "decoded"),
    [("768", (3, 0)), ("9", (0, 9)), ("0", (0, 0)), ("1:0", (1, 0)), ("0:15", (0, 15)),
     ("", (None, None))],
)
def test_squeue_exit_code_in_both_spellings(text, decoded):
    # 22.05 prints the raw wait status, 23.02+ code:signal.
    assert parse_squeue_exit_code(text) == decoded


# ---- 3. multi-node jobs: one meaning, memory per node ----------------------------------------


def test_sacct_multi_node_limit_is_per_node():
    # 23.11: AllocTRES mem=32G,node=2 is the job's total; the batch step (one node) has 16G.
    record = parse_sacct_parsable(_read("23.11", "sacct.txt"))[7818766]
    assert record.mem_limit_bytes == 16 * GiB


def test_squeue_multi_node_limit_is_per_node_running_and_pending():
    records = parse_squeue_parsable(_read("23.11", "squeue.txt"))
    assert records[2710597].mem_limit_bytes == 16 * GiB  # tres-alloc mem=32G,node=2
    # pending: the requested TRES says node=1 whatever the job asked; NumNodes says 2
    assert records[2710596].mem_limit_bytes == 32 * GiB


def test_limit_does_not_jump_when_the_job_leaves_squeue():
    live = parse_squeue_parsable(_read("23.11", "squeue.txt"))[2710597]
    acct = parse_sacct_parsable(
        "JobIDRaw|JobID|State|ExitCode|NNodes|AllocTRES|AllocCPUS|JobName\n"
        "2710597|2710597|COMPLETED|0:0|2|billing=128,cpu=128,mem=32G,node=2|128|twonodes-run\n"
    )[2710597]
    assert live.mem_limit_bytes == acct.mem_limit_bytes == 16 * GiB


def test_sacct_json_multi_node_limit_is_per_node():
    # 22.05 (dbv0.0.38): --mem=64G on 4 nodes, allocated TRES mem=262144 (MiB) over node=4.
    record = parse_sacct_json(_read("22.05", "sacct.json"))[44]
    assert record.mem_limit_bytes == 64 * GiB


def test_tres_mem_is_divided_by_the_node_count():
    assert parse_tres_mem("cpu=128,mem=32G,node=2") == 16 * GiB
    assert parse_tres_mem("cpu=128,mem=64G,node=1", nodes=2) == 32 * GiB
    assert parse_tres_mem("cpu=1,mem=100M") == 100 * MiB
    assert parse_tres_mem("cpu=1,node=1") is None


# ---- 4. heterogeneous steps `124.0+1` --------------------------------------------------------


def test_sacct_het_steps_are_rows_of_their_own():
    records = parse_sacct_parsable(_read("23.11", "sacct.txt"))
    het = records[124]
    assert het.name == "hetstep"
    assert dict(het.step_states) == {"batch": "FAILED", "0+0": "COMPLETED", "0+1": "FAILED"}
    assert (het.state, het.exit_code, het.signal) == ("FAILED", 1, 0)
    assert het.max_rss_bytes == 4096 * 1024
    assert records[125].name == "after-het"


def test_sstat_het_steps_do_not_fail_the_whole_call():
    found = parse_sstat(_read("24.05", "sstat.txt"))
    assert set(found) == {124, 126}
    assert (found[124].step, found[124].max_rss_bytes) == ("0+1", 409600 * 1024)
    assert found[124].steps == 3


# ---- 5. JSON -------------------------------------------------------------------------------


def test_sacct_json_allocated_tres_mem_is_mib():
    # 22.05 (dbv0.0.38): `--mem=0`: required memory 0, allocated TRES mem count 1000 (MiB).
    assert parse_sacct_json(_read("22.05", "sacct.json"))[42].mem_limit_bytes == 1000 * MiB
    # 24.11 (v0.0.42): memory_per_node unset, allocated mem 16384 MiB.
    assert parse_sacct_json(_read("24.11", "sacct.json"))[6362].mem_limit_bytes == 16 * GiB


def test_sacct_json_per_cpu_requirement_when_nothing_is_allocated_yet():
    # 22.05: required.memory carries Slurm's per-CPU flag bit (2G per CPU, 8 CPUs).
    assert parse_sacct_json(_read("22.05", "sacct.json"))[43].mem_limit_bytes == 16 * GiB
    # 24.11: memory_per_cpu 512 x 4 CPUs.
    assert parse_sacct_json(_read("24.11", "sacct.json"))[6370].mem_limit_bytes == 2 * GiB
    assert parse_sacct_json(_read("24.11", "sacct.json"))[6380].mem_limit_bytes == 32 * GiB


@pytest.mark.parametrize(
    ("job_id", "outcome"),
    [(1618880, ("FAILED", 3, 0)), (1618881, ("FAILED", 1, 0)), (1618882, ("FAILED", 0, 9))],
)
def test_squeue_json_v0039_exit_code_is_a_wrapped_wait_status(job_id, outcome):
    record = parse_squeue_json(_read("23.02", "squeue.json"), "23.02.6")[job_id]
    assert (record.state, record.exit_code, record.signal) == outcome


def test_squeue_json_requeue_hold_is_held_not_pending():
    records = parse_squeue_json(_read("24.11", "squeue.json"), "24.11.5")
    assert records[6371].state == "REQUEUE_HOLD"
    assert records[6371].is_held and records[6371].is_pending
    assert (records[6372].state, records[6372].is_held) == ("PENDING", False)
    assert (records[6373].state, records[6373].is_held) == ("PENDING", False)


@pytest.mark.parametrize(("flags", "state"), [
    (["RUNNING", "STOPPED"], "STOPPED"),  # what 24.11.5 lists after `scancel --signal=STOP`
    (["RUNNING", "STOPPED", "COMPLETING"], "RUNNING"),  # squeue lists it COMPLETING: as before
    (["RUNNING"], "RUNNING"),
])
def test_squeue_json_stopped_is_stopped_not_running(flags, state):
    """v0.0.40+ lists a job whose processes were sent SIGSTOP as ["RUNNING", "STOPPED"]
    (seen on the 24.11 dev cluster; squeue's own listing and v0.0.38 say STOPPED): it reads
    STOPPED, still alive, as squeue prints it. Before, it read RUNNING."""
    import json

    data = json.loads(_read("24.11", "squeue.json"))
    job = next(j for j in data["jobs"] if j["job_id"] == 6373)
    job["job_state"] = flags
    data["jobs"] = [job]
    record = parse_squeue_json(json.dumps(data), "24.11.5")[6373]
    assert (record.state, record.is_running) == (state, True)


def test_squeue_json_25_05_default_output_of_array_tasks():
    records = parse_squeue_json(_read("25.05", "squeue.json"), "25.05.2")
    assert records[4801].stdout_path == "/home/progers/sweep/slurm-4800_1.out"
    assert records[4802].stdout_path == "/home/progers/sweep/slurm-4800_2.out"
    assert records[4810].stdout_path == "/home/progers/sweep/slurm-4810.out"
    assert records[4811].stdout_path == "/home/progers/sweep/logs/sweep-4811.out"
    assert [records[i].display_id for i in (4801, 4802, 4810, 4811)] == [
        "4800_1", "4800_2", "4810", "4811"]


def test_squeue_parsable_default_output_of_an_array_task():
    row = ("4801|4800|1|RUNNING|None|bob|root|debug|normal|1|1750000000|1750000001|1750003601|"
           "1:00:00|0:05|c12|512M|1|1|cpu=1,mem=512M,node=1,billing=1|0|0:0|/home/bob||sweep|\n")
    assert parse_squeue_parsable(row)[4801].stdout_path == "/home/bob/slurm-4800_1.out"
    assert parse_squeue_parsable(row)[4801].display_id == "4800_1"
