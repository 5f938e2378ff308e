"""`sacct --parsable2` prints an exit status of 128 or more less 128; the diagnosis reads it so.

Slurm's sacct (src/sacct/print.c, PRINT_EXITCODE) prints WEXITSTATUS, minus 128 when it is
>= 128: a batch shell that exits 137 (128 + SIGKILL, how a host OOM kill usually shows) reads
`9:0`, 134 (abort) `6:0`, 135 (bus error) `7:0`; `sacct --json` says `return_code: 137`. The
parsable path marks its exit codes (`exit_code_mod_128`) and the diagnosis compares both
statuses a printed code may stand for, 9 as 9 or 137, as a hint only (a log line of the same
class must back it), where it used to read 9 as 9 only: the catalogue's `exit_codes: [137]`
for host_oom never fired on the bot's default client path.

The rows are the dev cluster's real FAILED job 1234 (tests/fixtures/slurm: `exit 3`) with the
ExitCode column set to each form, and its real `sacct --json` entry with the 24.11 shape of an
exit status of 137.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting
from bot.core.slurm.records import JobRecord, merge_records
from bot.core.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from bot.slack.render import explain, explain_title

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
JOB = 1234


def _parsable(code: str) -> JobRecord:
    """Job 1234's real header, job and `.batch` rows (FAILED 3:0) with ExitCode `code`."""
    lines = (FIXTURES / "sacct.txt").read_text().splitlines()
    rows = [line.replace("|FAILED|3:0|", f"|FAILED|{code}|") for line in lines
            if line.split("|")[0] in (str(JOB), f"{JOB}.batch")]
    assert len(rows) == 2 and all(f"|{code}|" in row for row in rows)
    return parse_sacct_parsable("\n".join([lines[0], *rows]) + "\n")[JOB]


def _json(status: int) -> JobRecord:
    """Job 1234's real `sacct --json` entry, its job and step exit status set to `status`."""
    exited = {"status": ["ERROR"], "return_code": {"set": True, "infinite": False,
                                                   "number": status},
              "signal": {"id": {"set": False, "infinite": False, "number": 0}, "name": ""}}
    data = json.loads((FIXTURES / "sacct.json").read_text())
    entry = next(j for j in data["jobs"] if j["job_id"] == JOB)
    entry["exit_code"] = exited
    for step in entry["steps"]:
        step["exit_code"] = exited
    data["jobs"] = [entry]
    return parse_sacct_json(json.dumps(data))[JOB]


# A batch script `python train.py; rc=$?; echo "train.py exited with status $rc"; exit $rc`
# whose python the kernel's OOM killer SIGKILLed: bash's notice of the kill (a host_oom hint,
# not a deciding line), then the script's own last line.
BASH_KILLED_LOG = (
    "epoch 1 step 10 loss 2.31\n"
    "epoch 1 step 20 loss 2.27\n"
    "/var/spool/slurmd/job01234/slurm_script: line 5:  6508 Killed"
    "                  python train.py\n"
    "train.py exited with status 137\n"
)
# `srun -n2 python train.py` whose task 1 the OOM killer SIGKILLed (srun's notice, a hint),
# task 0 going on a little before srun ends the step: the log ends in progress, naming nothing.
SRUN_KILLED_LOG = (
    "epoch 1 step 10 loss 2.31\n"
    "srun: error: vm: task 1: Killed\n"
    "epoch 1 step 11 loss 2.30\n"
    "epoch 1 step 12 loss 2.29\n"
)
KILLED_LOGS = {"bash_notice": BASH_KILLED_LOG, "srun_task_killed": SRUN_KILLED_LOG}
# The same script when python failed on its own (exit 1): no sign of a kill.
PLAIN_LOG = "epoch 1 step 10 loss 2.31\nepoch 1 step 20 loss 2.27\n" \
            "train.py exited with status 1\n"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def _diagnose(catalogue: Catalogue, record: JobRecord, log: str):
    """The diagnosis of `log` read with `record`'s accounting, as the watcher reads it."""
    return read_log(catalogue, log, record.accounting())


def test_the_parsable_path_marks_its_exit_code_and_the_json_path_keeps_it_exact():
    printed = _parsable("9:0")
    assert (printed.state, printed.exit_code, printed.signal) == ("FAILED", 9, 0)
    assert printed.accounting().exit_code_candidates == (9, 137)
    exact = _json(137)
    assert (exact.state, exact.exit_code) == ("FAILED", 137)
    assert exact.accounting().exit_code_candidates == (137,)
    # a status sacct -P prints as it is (>= 128 cannot be printed modulo 128)
    assert _parsable("1:0").accounting().exit_code_candidates == (1, 129)
    assert Accounting(exit_code=200, exit_code_mod_128=True).exit_code_candidates == (200,)
    assert Accounting().exit_code_candidates == ()


@pytest.mark.parametrize("log", sorted(KILLED_LOGS))
def test_a_job_sacct_prints_9_0_with_a_kill_in_its_log_reads_as_its_137(catalogue, log):
    """The OOM-killed script: sacct -P says FAILED 9:0 (its shell's 137). It read as an
    unknown failure when the log's ending named nothing (task 1 killed, task 0 going on), the
    kill line unbacked by an exit code the catalogue knows, and by the ending alone otherwise;
    it now reads as `sacct --json`'s 137 always did: the host OOM, decided by accounting with
    the log's kill line, with the same thread text."""
    printed = _diagnose(catalogue, _parsable("9:0"), KILLED_LOGS[log])
    exact = _diagnose(catalogue, _json(137), KILLED_LOGS[log])
    assert (exact.class_id, exact.decided_by) == ("host_oom", "accounting")
    assert (printed.class_id, printed.action, printed.decided_by) == (
        exact.class_id, exact.action, exact.decided_by)
    assert any("Killed" in e.text for e in printed.evidence)
    for lang in ("en", "ko"):
        assert explain_title(printed, lang) == explain_title(exact, lang)
        assert explain(printed, lang) == explain(exact, lang)


def test_a_printed_9_0_is_only_a_hint(catalogue):
    """With no kill in the log, sacct's 9 (maybe 137) decides nothing: as a genuine 1:0 reads,
    and as the exact 137 reads with no log line backing it."""
    printed = _diagnose(catalogue, _parsable("9:0"), PLAIN_LOG)
    assert printed.class_id == _diagnose(catalogue, _parsable("1:0"), PLAIN_LOG).class_id
    assert printed.class_id == _diagnose(catalogue, _json(137), PLAIN_LOG).class_id
    assert printed.class_id != "host_oom"


@pytest.mark.parametrize("log", [SRUN_KILLED_LOG, PLAIN_LOG])
def test_a_genuine_1_0_and_the_json_137_read_as_before(catalogue, log):
    """Not 137 in any reading: 1:0 names no kill whichever path gave it."""
    genuine = _diagnose(catalogue, _parsable("1:0"), log)
    assert genuine.class_id == _diagnose(catalogue, _json(1), log).class_id
    assert _diagnose(catalogue, _json(137), log).class_id == (
        "host_oom" if log == SRUN_KILLED_LOG else genuine.class_id)


def test_the_catalogue_says_which_status_a_printed_code_hints_at(catalogue):
    (hint,) = catalogue.accounting_matches(None, 9, None, exit_code_mod_128=True)
    assert (hint.class_id, hint.primary, hint.reason) == (
        "host_oom", False, "exit code 9 (sacct prints 137 as 9)")
    assert catalogue.accounting_matches(None, 9, None) == []
    (exact,) = catalogue.accounting_matches(None, 137, None, exit_code_mod_128=True)
    assert exact.reason == "exit code 137"
    # 134 (abort) and 135 (bus error) likewise
    assert [m.class_id for m in catalogue.accounting_matches(None, 6, None,
                                                             exit_code_mod_128=True)] == \
        [m.class_id for m in catalogue.accounting_matches(None, 134, None)]
    assert [m.class_id for m in catalogue.accounting_matches(None, 7, None,
                                                             exit_code_mod_128=True)] == \
        [m.class_id for m in catalogue.accounting_matches(None, 135, None)]


def test_the_mark_goes_with_the_exit_code_when_squeue_and_sacct_merge():
    """A finished job: sacct's exit code, with its mark, wins over squeue's, unless squeue's
    exact code is one of its readings (test_squeue_exit_code_exact)."""
    acct = _parsable("9:0")
    live = JobRecord(job_id=JOB, state="FAILED", exit_code=3, signal=0, source="squeue")
    merged = merge_records({JOB: live}, {JOB: acct})[JOB]
    assert (merged.exit_code, merged.accounting().exit_code_candidates) == (9, (9, 137))
    exact = replace(live, exit_code=137)
    merged = merge_records({JOB: exact}, {JOB: acct})[JOB]
    assert (merged.exit_code, merged.accounting().exit_code_candidates) == (137, (137,))
    running = JobRecord(job_id=JOB, state="RUNNING", source="squeue")
    alive = merge_records({JOB: running}, {JOB: acct})[JOB]
    assert (alive.exit_code, alive.exit_code_mod_128) == (None, False)
