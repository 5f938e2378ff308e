"""Array tasks stay apart in every Slurm parser: keyed by their raw id, with array fields."""

from __future__ import annotations

import json

from bot.core.slurm.records import JobRecord, merge_records
from bot.core.slurm.sacct import SACCT_FIELDS, parse_sacct_json, parse_sacct_parsable
from bot.core.slurm.squeue import (
    SQUEUE_FIELDS,
    SQUEUE_SEPARATOR,
    parse_squeue_json,
    parse_squeue_parsable,
)

# Array 5120 (`sbatch --array=0-5%2 -o /home/u/logs/%x-%A_%a.out`): tasks 0 and 1 ran and got
# their own ids 5121/5122, task 2 runs as 5123, tasks 3-5 are still the pending remainder,
# which keeps the array's own id 5120. 5130 is an ordinary job beside it.
_SQUEUE_COMMON = {
    "Reason": "None", "UserName": "u", "Account": "team-a", "Partition": "gpu",
    "QOS": "normal", "PriorityLong": "4294901000", "SubmitTime": "1796100000",
    "TimeLimit": "1-00:00:00", "MinMemory": "16G", "NumCPUs": "4", "NumNodes": "1",
    "tres-alloc": "cpu=4,mem=16G,node=1,billing=4", "RestartCnt": "0", "exit_code": "0",
    "WorkDir": "/home/u/run", "STDOUT": "/home/u/logs/%x-%A_%a.out", "Name": "sweep",
}
_SQUEUE_ROWS = [
    {"JobID": "5123", "ArrayJobID": "5120", "ArrayTaskID": "2", "State": "RUNNING",
     "StartTime": "1796100060", "EndTime": "1796186460", "TimeUsed": "1:05", "NodeList": "gn3"},
    {"JobID": "5120", "ArrayJobID": "5120", "ArrayTaskID": "3-5%2", "State": "PENDING",
     "Reason": "JobArrayTaskLimit", "StartTime": "N/A", "EndTime": "N/A", "TimeUsed": "0:00",
     "NodeList": ""},
    {"JobID": "5130", "ArrayJobID": "5130", "ArrayTaskID": "N/A", "State": "RUNNING",
     "StartTime": "1796100070", "EndTime": "1796186470", "TimeUsed": "0:55", "NodeList": "gn4",
     "STDOUT": "/home/u/logs/%x-%j.out", "Name": "single"},
]


def _squeue_text() -> str:
    lines = []
    for row in _SQUEUE_ROWS:
        values = {**_SQUEUE_COMMON, **row}
        lines.append(SQUEUE_SEPARATOR.join(values.get(f, "") for f in SQUEUE_FIELDS)
                     + SQUEUE_SEPARATOR)
    return "\n".join(lines) + "\n"


def test_squeue_parsable_keeps_each_array_task_under_its_own_id():
    records = parse_squeue_parsable(_squeue_text())
    assert sorted(records) == [5120, 5123, 5130]
    task = records[5123]
    assert (task.array_job_id, task.array_task_id, task.display_id) == (5120, 2, "5120_2")
    assert task.stdout_path == "/home/u/logs/sweep-5120_2.out"
    assert task.node == "gn3" and task.is_running
    remainder = records[5120]
    assert (remainder.array_job_id, remainder.array_task_id) == (5120, None)
    assert remainder.display_id == "5120" and remainder.is_pending
    single = records[5130]
    assert (single.array_job_id, single.array_task_id, single.display_id) == (None, None, "5130")
    assert single.stdout_path == "/home/u/logs/single-5130.out"


# sacct prints the task's own id in JobIDRaw and `array_task` in JobID; steps follow the job.
_SACCT_ROWS = [
    ("5121", "5120_0", "COMPLETED", "0:0", ""),
    ("5121.batch", "5120_0.batch", "COMPLETED", "0:0", "812K"),
    ("5122", "5120_1", "OUT_OF_MEMORY", "0:125", ""),
    ("5122.batch", "5120_1.batch", "OUT_OF_MEMORY", "0:125", "16777216K"),
    ("5123", "5120_2", "RUNNING", "0:0", ""),
    ("5120", "5120_[3-5%2]", "PENDING", "0:0", ""),
    ("5130", "5130", "RUNNING", "0:0", ""),
]


def _sacct_text() -> str:
    lines = ["|".join(SACCT_FIELDS)]
    for raw_id, job_id, state, exit_code, rss in _SACCT_ROWS:
        values = {"JobIDRaw": raw_id, "JobID": job_id, "State": state, "ExitCode": exit_code,
                  "MaxRSS": rss, "User": "u", "Account": "team-a", "Partition": "gpu",
                  "QOS": "normal", "ElapsedRaw": "65", "NodeList": "gn3", "NNodes": "1",
                  "ReqTRES": "billing=4,cpu=4,mem=16G,node=1", "AllocCPUS": "4",
                  "Submit": "1796100000", "Start": "1796100060", "End": "Unknown",
                  "TimelimitRaw": "1440", "WorkDir": "/home/u/run",
                  "JobName": "batch" if "." in raw_id else "sweep"}
        lines.append("|".join(values.get(f, "") for f in SACCT_FIELDS))
    return "\n".join(lines) + "\n"


def test_sacct_parsable_keeps_each_array_task_under_its_own_id():
    records = parse_sacct_parsable(_sacct_text())
    assert sorted(records) == [5120, 5121, 5122, 5123, 5130]
    done, oom = records[5121], records[5122]
    assert (done.display_id, done.state) == ("5120_0", "COMPLETED")
    assert (oom.display_id, oom.state, oom.max_rss_bytes) == (
        "5120_1", "OUT_OF_MEMORY", 16 * 1024**3)
    assert done.step_states == (("batch", "COMPLETED"),)
    assert (records[5120].array_job_id, records[5120].array_task_id) == (5120, None)
    assert records[5130].array_job_id is None and records[5130].display_id == "5130"


def test_merged_records_keep_the_array_fields():
    merged = merge_records(parse_squeue_parsable(_squeue_text()),
                           parse_sacct_parsable(_sacct_text()))
    assert {r.display_id for r in merged.values()} == {
        "5120", "5120_0", "5120_1", "5120_2", "5130"}
    assert merged[5123].source == "squeue+sacct" and merged[5123].array_task_id == 2
    assert merged[5121].source == "sacct" and merged[5121].array_task_id == 0


def _num(value: int, *, is_set: bool = True) -> dict:
    return {"set": is_set, "infinite": False, "number": value}


def test_squeue_json_array_task_and_pending_remainder():
    jobs = [
        {"job_id": 5123, "array_job_id": _num(5120), "array_task_id": _num(2),
         "array_task_string": "", "name": "sweep", "job_state": ["RUNNING"],
         "standard_output": "/home/u/logs/%x-%A_%a.out", "nodes": "gn3"},
        {"job_id": 5120, "array_job_id": _num(5120), "array_task_id": _num(0, is_set=False),
         "array_task_string": "3-5%2", "name": "sweep", "job_state": ["PENDING"],
         "standard_output": "/home/u/logs/%x-%A_%a.out"},
        {"job_id": 5130, "array_job_id": _num(0), "array_task_id": _num(0, is_set=False),
         "array_task_string": "", "name": "single", "job_state": ["RUNNING"]},
    ]
    doc = {"meta": {"slurm": {"version": {"major": "23", "minor": "11", "micro": "4"}}},
           "errors": [], "jobs": jobs}
    records = parse_squeue_json(json.dumps(doc), "23.11.4")
    assert records[5123].display_id == "5120_2"
    assert records[5123].stdout_path == "/home/u/logs/sweep-5120_2.out"
    assert (records[5120].array_job_id, records[5120].array_task_id) == (5120, None)
    assert records[5130].array_job_id is None


def test_sacct_json_array_task_and_plain_job():
    def job(job_id: int, array: dict) -> dict:
        return {"job_id": job_id, "name": "sweep", "array": array,
                "state": {"current": ["COMPLETED"], "reason": "None"},
                "exit_code": {"status": ["SUCCESS"], "return_code": _num(0)},
                "time": {"submission": 1796100000, "start": 1796100060, "end": 1796100125,
                         "elapsed": 65, "limit": _num(1440)},
                "steps": []}
    doc = {"meta": {}, "errors": [], "jobs": [
        job(5121, {"job_id": 5120, "task_id": _num(0), "task": None}),
        job(5120, {"job_id": 5120, "task_id": _num(0, is_set=False), "task": "3-5%2"}),
        job(5130, {"job_id": 0, "task_id": _num(0, is_set=False), "task": None}),
    ]}
    records = parse_sacct_json(json.dumps(doc))
    assert records[5121].display_id == "5120_0"
    assert (records[5120].array_job_id, records[5120].array_task_id) == (5120, None)
    assert records[5130].array_job_id is None


def test_display_id_needs_both_array_fields():
    assert JobRecord(job_id=7).display_id == "7"
    assert JobRecord(job_id=9, array_job_id=7, array_task_id=3).display_id == "7_3"
    assert JobRecord(job_id=7, array_job_id=7).display_id == "7"
