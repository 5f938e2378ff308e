"""A job Slurm ended at its time limit, in each way accounting records the SIGTERM it sent.

The batch script's wait status is the job's exit code (slurmstepd `batch_finish` sends it in
REQUEST_COMPLETE_BATCH_SCRIPT; slurmctld's `_job_complete` keeps it once the job is already
TIMEOUT). A shell that died of the SIGTERM gives `0:15`; a shell that outlived its child and
exited 128+15 = 143 (or a script whose trap exits 15) gives exit status 143 (15), which
`sacct -P` prints as `15:0`: sacct's print.c takes 128 off an exit code >= 128 (since 2014), and
`sacct --json` says `return_code: 143`. Until the batch step's status arrives the job row reads
`0:0`. On the 24.11.5 dev cluster a `--time=1` script that traps TERM with `exit 143` (or
`exit 15`) reads job `TIMEOUT 0:0`, `.batch FAILED 15:0` in `sacct -P`, return_code 143 in
`sacct --json`. The watcher must read all of them as the time limit, with the same remedy.

The rows are the dev cluster's real job 1236 (tests/fixtures/slurm) with the ExitCode column
set to each form.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import Action
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from bot.slack.render import explain, explain_title

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
JOB = 1236

HEADER = ("JobIDRaw|JobID|State|ExitCode|Reason|User|Account|Partition|QOS|ElapsedRaw|NodeList|"
          "NNodes|MaxRSS|ReqTRES|AllocTRES|AllocCPUS|Submit|Start|End|TimelimitRaw|WorkDir|"
          "JobName\n")
JOB_ROW = ("1236|1236|TIMEOUT|{job}|None|slurmci|root|debug|normal|72|vm|1||billing=1,cpu=1,"
           "mem=256M,node=1|billing=1,cpu=1,mem=256M,node=1|1|1796098485|1796098489|1796098561|"
           "1|/home/slurmci|fx-timeout-3d9ac3\n")
BATCH_ROW = ("1236.batch|1236.batch|{state}|{batch}|||root|||72|vm|1|3976K||cpu=1,mem=256M,"
             "node=1|1|1796098489|1796098489|1796098561|||batch\n")

# the log a `sleep 300` batch script with --time=1 leaves (slurmstepd's line), and none at all
LIMIT_LOG = "slurmstepd: error: *** JOB 1236 ON vm CANCELLED AT 2026-12-04T22:29:21 DUE TO " \
            "TIME LIMIT ***\n"
LOGS = {"slurmstepd_line": LIMIT_LOG, "empty_log": ""}


def _parsable(job: str, batch: str | None, state: str = "CANCELLED") -> JobRecord:
    text = HEADER + JOB_ROW.format(job=job)
    if batch is not None:
        text += BATCH_ROW.format(batch=batch, state=state)
    return parse_sacct_parsable(text)[JOB]


def _json(job: dict, batch: dict) -> JobRecord:
    data = json.loads((FIXTURES / "sacct.json").read_text())
    entry = next(j for j in data["jobs"] if j["job_id"] == JOB)
    entry["exit_code"] = job
    for step in entry["steps"]:
        step["exit_code"] = batch
    data["jobs"] = [entry]
    return parse_sacct_json(json.dumps(data))[JOB]


SIGNALED = {"status": "SIGNALED", "return_code": None,
            "signal": {"signal_id": 15, "name": "Terminated"}}
# Slurm 24.11's shape (data_parser v0.0.40+) of an exit status of 143
EXITED_143 = {"status": ["ERROR"], "return_code": {"set": True, "infinite": False, "number": 143},
              "signal": {"id": {"set": False, "infinite": False, "number": 0}, "name": ""}}
EXITED_0 = {"status": "SUCCESS", "return_code": 0}

# form -> (record, the (exit code, signal) a user reads)
FORMS = {
    "parsable job 0:0, batch 0:15": (lambda: _parsable("0:0", "0:15"), (0, 15)),
    "parsable job 0:15, batch 0:15": (lambda: _parsable("0:15", "0:15"), (0, 15)),
    "parsable job 15:0, batch 15:0": (lambda: _parsable("15:0", "15:0"), (15, 0)),
    "parsable job 0:0, batch 15:0": (lambda: _parsable("0:0", "15:0"), (15, 0)),
    # what Slurm 24.11.5 recorded for a script trapping TERM with `exit 143` (and `exit 15`)
    "parsable job 0:0, batch FAILED 15:0": (lambda: _parsable("0:0", "15:0", "FAILED"), (15, 0)),
    "parsable job 0:0, no batch step yet": (lambda: _parsable("0:0", None), (0, 0)),
    "json job signaled 15": (lambda: _json(SIGNALED, SIGNALED), (0, 15)),
    "json job exited 143": (lambda: _json(EXITED_143, EXITED_143), (143, 0)),
    "json job 0, batch exited 143": (lambda: _json(EXITED_0, EXITED_143), (143, 0)),
}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def _diagnose(catalogue: Catalogue, record: JobRecord, log: str):
    """The diagnosis of `log` read with `record`'s accounting, as the watcher reads it."""
    return read_log(catalogue, log, record.accounting())


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_accounting_of_the_time_limit_signal_parses_as_sacct_prints_it(form):
    make, (code, signal) = FORMS[form]
    record = make()
    assert (record.state, record.exit_code, record.signal) == ("TIMEOUT", code, signal)
    assert record.accounting().state == "TIMEOUT"


@pytest.mark.parametrize("log", sorted(LOGS))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_accounting_of_the_time_limit_signal_is_diagnosed_as_the_time_limit(
        catalogue, form, log):
    reference = _diagnose(catalogue, _parsable("0:0", "0:15"), LOGS[log])
    d = _diagnose(catalogue, FORMS[form][0](), LOGS[log])
    assert (d.class_id, d.action, d.retryable, d.charges_budget) == (
        "time_limit", Action.RESUBMIT, True, True)
    # the same remedy in the thread, in both languages
    for lang in ("en", "ko"):
        assert explain(d, lang) == explain(reference, lang)
        assert explain_title(d, lang) == explain_title(reference, lang)
