"""Parsers of squeue/sacct output: real dev-cluster output (Slurm 22.05.8) plus hand-written
rows for shapes this cluster cannot produce (newer JSON, OOM with cgroups, preemption, cuts).

Fixtures: tests/fixtures/slurm/{squeue,sacct}.{json,txt}, one snapshot of 11 jobs; which job
is which case is in cases.json (recapture with tests/support/capture_slurm.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import present
from support.sacct_rows import CANCELLED_PENDING_AND_RUNNING

from bot.core.models import Accounting, NeverStarted
from bot.core.slurm.competitors import filter_competitors
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.records import JobRecord, merge_records
from bot.core.slurm.sacct import parse_sacct_json, parse_sacct_parsable
from bot.core.slurm.squeue import parse_squeue_json, parse_squeue_parsable
from bot.core.slurm.sstat import parse_sstat, sstat_argv, sstat_missing
from bot.core.slurm.states import normalize_reason, normalize_state
from bot.core.slurm.values import (
    decode_wait_status,
    expand_output_pattern,
    parse_duration,
    parse_exit_code,
    parse_req_mem,
    parse_rss,
    parse_time,
)
from bot.core.slurm.version import parse_version

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
CASES: dict[str, int] = json.loads((FIXTURES / "cases.json").read_text())["cases"]
MiB = 1024**2


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


PARSED = {
    "squeue_json": lambda: parse_squeue_json(_read("squeue.json"), "22.05.8"),
    "squeue_txt": lambda: parse_squeue_parsable(_read("squeue.txt")),
    "sacct_json": lambda: parse_sacct_json(_read("sacct.json")),
    "sacct_txt": lambda: parse_sacct_parsable(_read("sacct.txt")),
    "merged_json": lambda: merge_records(parse_squeue_json(_read("squeue.json")),
                                         parse_sacct_parsable(_read("sacct.txt"))),
    "merged_txt": lambda: merge_records(parse_squeue_parsable(_read("squeue.txt")),
                                        parse_sacct_parsable(_read("sacct.txt"))),
}
SQUEUE = {"squeue_json", "squeue_txt"}
SACCT = {"sacct_json", "sacct_txt"}
MERGED = {"merged_json", "merged_txt"}

# case -> (state, exit_code, signal): what a user reads in `sacct -o State,ExitCode`, with
# the cause the job row hides taken from the batch step (TIMEOUT/CANCELLED -> SIGTERM 15).
OUTCOME = {
    "pending_begintime": ("PENDING", None, None),
    "held_user": ("PENDING", None, None),
    "held_admin": ("PENDING", None, None),
    "running": ("RUNNING", None, None),
    "completed": ("COMPLETED", 0, 0),
    "exit3": ("FAILED", 3, 0),
    "kill9": ("FAILED", 0, 9),
    "timeout": ("TIMEOUT", 0, 15),
    "mem_exceeded": ("FAILED", 0, 9),
    "cancelled": ("CANCELLED", 0, 15),
    "requeued": ("COMPLETED", 0, 0),
}


@pytest.mark.parametrize("source", sorted(PARSED))
@pytest.mark.parametrize("case", sorted(OUTCOME))
def test_real_output_gives_state_exit_and_signal(source, case):
    record = PARSED[source]()[CASES[case]]
    state, code, signal = OUTCOME[case]
    if source == "sacct_json" and case == "exit3":
        # 22.05.8's sacct --json says return_code 0 for `exit 3`: reported as unknown, not 0.
        code, signal = None, None
    assert (record.state, record.exit_code, record.signal) == (state, code, signal)
    assert record.name == f"fx-{case}-" + present(record.name).rsplit("-", 1)[1]
    assert (record.user, record.account, record.partition) == ("slurmci", "root", "debug")


@pytest.mark.parametrize("source", sorted(SQUEUE | MERGED))
@pytest.mark.parametrize(
    ("case", "reason", "held"),
    [
        ("pending_begintime", "BeginTime", False),
        ("held_user", "JobHeldUser", True),
        ("held_admin", "JobHeldAdmin", True),  # sacct still says BeginTime: squeue wins
        ("running", "None", False),
        ("exit3", "NonZeroExitCode", False),
        ("timeout", "TimeLimit", False),
    ],
)
def test_live_reason_and_hold_come_from_squeue(source, case, reason, held):
    record = PARSED[source]()[CASES[case]]
    assert record.reason == reason
    assert record.is_held is held


def test_sacct_alone_lags_on_the_admin_hold_reason():
    # Why merge_records prefers squeue's reason: this is what sacct said at the same moment.
    assert PARSED["sacct_txt"]()[CASES["held_admin"]].reason == "BeginTime"
    assert PARSED["sacct_txt"]()[CASES["held_user"]].reason == "JobHeldUser"


@pytest.mark.parametrize("source", sorted(PARSED))
def test_state_properties_on_real_output(source):
    records = PARSED[source]()
    assert records[CASES["pending_begintime"]].is_pending
    assert records[CASES["running"]].is_running
    assert not records[CASES["running"]].is_finished
    for case in ("completed", "exit3", "kill9", "timeout", "mem_exceeded", "cancelled"):
        assert records[CASES[case]].is_finished, case
    assert records[CASES["running"]].node == "vm"
    assert records[CASES["pending_begintime"]].node is None


@pytest.mark.parametrize("source", sorted(SACCT | MERGED))
def test_memory_kill_shows_maxrss_above_the_limit(source):
    record = PARSED[source]()[CASES["mem_exceeded"]]
    assert record.mem_limit_bytes == 100 * MiB
    assert record.max_rss_bytes is not None and record.max_rss_bytes > 250 * MiB
    acct = record.accounting()
    # sacct -P prints exit codes modulo 128; the merges take squeue's exact 0 (its raw wait
    # status 9: signal 9), which is one of sacct's readings of its 0:9
    assert acct == Accounting(state="FAILED", exit_code=0, signal=9,
                              elapsed_s=record.elapsed_s, mem_limit_bytes=100 * MiB,
                              max_rss_bytes=record.max_rss_bytes,
                              exit_code_mod_128=source == "sacct_txt")


@pytest.mark.parametrize("source", sorted(SACCT | MERGED))
def test_requeue_history_counts_restarts_and_keeps_the_last_attempt(source):
    record = PARSED[source]()[CASES["requeued"]]
    assert record.restart_count == 1
    assert record.state == "COMPLETED" and record.elapsed_s == 15


@pytest.mark.parametrize("source", ["squeue_json", "squeue_txt"])
def test_squeue_restart_count_for_the_requeued_job(source):
    assert PARSED[source]()[CASES["requeued"]].restart_count == 1


@pytest.mark.parametrize("source", sorted(SQUEUE | MERGED))
def test_stdout_pattern_is_expanded(source):
    record = PARSED[source]()[CASES["running"]]
    assert record.stdout_path == f"/home/slurmci/fx-{record.name}-{record.job_id}.out"


@pytest.mark.parametrize("source", sorted(PARSED))
def test_time_limit_and_times(source):
    records = PARSED[source]()
    timeout = records[CASES["timeout"]]
    assert timeout.time_limit_s == 60
    assert timeout.start_time is not None and timeout.end_time is not None
    assert 60 <= timeout.end_time - timeout.start_time <= 120
    pending = records[CASES["pending_begintime"]]
    assert pending.submit_time is not None
    assert pending.start_time is None and pending.end_time is None


def test_timeout_elapsed_is_known_from_every_source():
    for source in ("squeue_json", "squeue_txt", "sacct_txt", "merged_txt"):
        assert (PARSED[source]()[CASES["timeout"]].elapsed_s or 0) >= 60, source


# ---- merge -----------------------------------------------------------------------------------


def test_merge_reports_a_job_only_one_side_knows():
    live = {1: JobRecord(1, state="PENDING", reason="Priority", source="squeue")}
    acct = {2: JobRecord(2, state="COMPLETED", exit_code=0, signal=0, source="sacct")}
    merged = merge_records(live, acct)
    assert merged[1].reason == "Priority" and merged[2].state == "COMPLETED"


def test_merge_trusts_squeue_while_sacct_lags():
    live = {5: JobRecord(5, name="mix", qos="normal", state="COMPLETED", exit_code=0, signal=0)}
    acct = {5: JobRecord(5, name="allocation", qos="Unknown", state="RUNNING")}
    merged = merge_records(live, acct)[5]
    assert (merged.state, merged.name, merged.qos, merged.exit_code) == (
        "COMPLETED", "mix", "normal", 0)


def test_merge_takes_the_outcome_from_sacct_once_both_agree_it_is_over():
    live = {5: JobRecord(5, state="TIMEOUT", exit_code=0, signal=15, reason="TimeLimit")}
    acct = {5: JobRecord(5, state="TIMEOUT", exit_code=0, signal=15, max_rss_bytes=123,
                         step_states=(("batch", "CANCELLED"),))}
    merged = merge_records(live, acct)[5]
    assert (merged.max_rss_bytes, merged.reason, merged.source) == (123, "TimeLimit",
                                                                    "squeue+sacct")
    assert merged.step_states == (("batch", "CANCELLED"),)


def test_merge_voids_an_earlier_attempts_outcome_when_the_job_is_pending_again():
    live = {5: JobRecord(5, state="PENDING", reason="BeginTime", restart_count=1)}
    acct = {5: JobRecord(5, state="NODE_FAIL", exit_code=1, signal=0, end_time=10.0)}
    merged = merge_records(live, acct)[5]
    assert (merged.state, merged.exit_code, merged.end_time) == ("PENDING", None, None)
    assert merged.is_pending and merged.restart_count == 1


# ---- hand-written shapes: newer Slurm, cgroup OOM, preemption, cut columns --------------------

SACCT_HEADER = ("JobIDRaw|JobID|State|ExitCode|Reason|User|Account|Partition|QOS|ElapsedRaw|"
                "NodeList|MaxRSS|ReqTRES|AllocTRES|AllocCPUS|Submit|Start|End|TimelimitRaw|"
                "WorkDir|JobName")


def _sacct(*rows: str) -> dict[int, JobRecord]:
    return parse_sacct_parsable("\n".join([SACCT_HEADER, *rows]) + "\n")


def _job_row(job_id, state, exit_code, name="mix", elapsed=3600, mem="mem=300G"):
    return (f"{job_id}|{job_id}|{state}|{exit_code}|None|alice|team-a|gpu|normal|{elapsed}|"
            f"n17||billing=4,cpu=32,{mem},node=1|billing=4,cpu=32,{mem},node=1|32|1700000000|"
            f"1700000010|1700003610|1440|/work/mix|{name}")


def _step_row(job_id, step, state, exit_code, rss=""):
    return (f"{job_id}.{step}|{job_id}.{step}|{state}|{exit_code}|||team-a|||3600|n17|{rss}||"
            f"cpu=32,mem=300G,node=1|32|1700000010|1700000010|1700003610|||{step}")


def test_cgroup_oom_takes_the_real_signal_from_a_step_and_the_peak_rss():
    record = _sacct(
        _job_row(87870, "OUT_OF_MEMORY", "0:125"),
        _step_row(87870, "batch", "OUT_OF_MEMORY", "0:125", rss="314572800K"),
        _step_row(87870, "extern", "COMPLETED", "0:0", rss="1024K"),
        _step_row(87870, "0", "OUT_OF_MEMORY", "0:9", rss="576716800K"),
    )[87870]
    assert (record.state, record.exit_code, record.signal) == ("OUT_OF_MEMORY", 0, 9)
    assert record.max_rss_bytes == 576716800 * 1024
    assert record.mem_limit_bytes == 300 * 1024**3
    assert record.step_states[0] == ("batch", "OUT_OF_MEMORY")


def test_cgroup_oom_without_a_step_signal_keeps_slurms_pseudo_signal():
    record = _sacct(_job_row(1, "OUT_OF_MEMORY", "0:125"),
                    _step_row(1, "batch", "OUT_OF_MEMORY", "0:125"))[1]
    assert (record.state, record.exit_code, record.signal) == ("OUT_OF_MEMORY", 0, 125)


def test_cancelled_by_uid():
    record = _sacct(_job_row(9, "CANCELLED by 1234", "0:0"),
                    _step_row(9, "batch", "CANCELLED", "0:15"))[9]
    assert (record.state, record.cancelled_by, record.signal) == ("CANCELLED", 1234, 15)


def test_preempted_and_node_fail():
    records = _sacct(
        _job_row(10, "PREEMPTED", "0:0"), _step_row(10, "batch", "CANCELLED", "0:15"),
        _job_row(11, "NODE_FAIL", "1:0"), _step_row(11, "batch", "FAILED", "0:0"),
    )
    assert (records[10].state, records[10].signal) == ("PREEMPTED", 15)
    assert (records[11].state, records[11].exit_code, records[11].signal) == ("NODE_FAIL", 1, 0)
    assert records[10].is_finished and records[11].is_finished


def test_completed_zero_is_trusted_even_when_a_step_failed():
    # The launcher swallowed a failed step: that is the silent_exit story, told by the log,
    # not something to paper over here.
    record = _sacct(_job_row(12, "COMPLETED", "0:0"), _step_row(12, "0", "FAILED", "1:0"))[12]
    assert (record.state, record.exit_code, record.signal) == ("COMPLETED", 0, 0)


def test_requeue_rows_out_of_order_still_pick_the_latest_attempt():
    first = _job_row(13, "NODE_FAIL", "0:0").replace("1700000000", "1699990000", 1)
    second = _job_row(13, "RUNNING", "0:0")
    record = _sacct(second, first)[13]
    assert (record.state, record.restart_count) == ("RUNNING", 1)


def test_truncated_columns_and_old_field_names():
    text = (
        "JobID|State|ExitCode|Elapsed|MaxRSS|ReqMem|AllocCPUS|JobName\n"
        "88017|OUT_OF_ME+|0:125|1-02:03:04||950Gn|8|succ\n"
        "88017.batch|OUT_OF_ME+|0:125|1-02:03:04|580123456K||8|batch\n"
        "88018|CANCELLED+|0:0|00:00:10||4Gc|8|cut\n"
    )
    records = parse_sacct_parsable(text)
    assert records[88017].state == "OUT_OF_MEMORY"
    assert records[88017].elapsed_s == 93784
    assert records[88017].mem_limit_bytes == 950 * 1024**3
    assert records[88017].max_rss_bytes == 580123456 * 1024
    assert records[88018].state == "CANCELLED"
    assert records[88018].mem_limit_bytes == 32 * 1024**3  # 4G per CPU x 8 CPUs


def test_sacct_names_with_pipes_and_newlines_stay_whole():
    record = _sacct(_job_row(14, "COMPLETED", "0:0", name="a|b\nc; $(id)"))[14]
    assert record.name == "a|b\nc; $(id)"


def test_sacct_output_without_name_last_is_refused():
    with pytest.raises(SlurmParseError, match="JobName last"):
        parse_sacct_parsable("JobName|JobID|State\nx|1|RUNNING\n")


def test_empty_sacct_output_means_no_jobs():
    assert parse_sacct_parsable("") == {}
    assert parse_sacct_parsable(SACCT_HEADER + "\n") == {}


SQUEUE_V40 = {
    "meta": {"slurm": {"version": {"major": "23", "minor": "11", "micro": "4"}}},
    "errors": [],
    "jobs": [
        {
            "job_id": 88017, "name": "succ", "user_name": "alice", "account": "team-a",
            "partition": "gpu", "qos": "normal", "job_state": ["PENDING"],
            "state_reason": "JobHeldAdmin",
            "exit_code": {"status": ["PENDING"], "return_code": {"set": True, "infinite": False,
                                                                 "number": 0}},
            "standard_output": "/work/logs/%x-%A_%a.out",
            "current_working_directory": "/work",
            "submit_time": {"set": True, "infinite": False, "number": 1700000000},
            "start_time": {"set": True, "infinite": False, "number": 0},
            "end_time": {"set": True, "infinite": False, "number": 0},
            "time_limit": {"set": True, "infinite": False, "number": 1440},
            "priority": {"set": True, "infinite": False, "number": 0},
            "restart_cnt": 1, "nodes": "", "batch_host": "",
            "memory_per_node": {"set": True, "infinite": False, "number": 972800},
            "memory_per_cpu": {"set": False, "infinite": False, "number": 0},
            "array_job_id": {"set": True, "infinite": False, "number": 0},
            "array_task_id": {"set": False, "infinite": False, "number": 0},
        },
        {
            "job_id": 88016, "name": "mix", "user_name": "alice", "account": "team-a",
            "partition": "gpu", "qos": "normal", "job_state": ["OUT_OF_MEMORY"],
            "state_reason": "OutOfMemory",
            "exit_code": {"status": ["SIGNALED"],
                          "return_code": {"set": True, "infinite": False, "number": 0},
                          "signal": {"id": {"set": True, "infinite": False, "number": 9},
                                     "name": "KILL"}},
            "standard_output": "/work/logs/%x-%j.out",
            "submit_time": {"set": True, "infinite": False, "number": 1700000000},
            "start_time": {"set": True, "infinite": False, "number": 1700000100},
            "end_time": {"set": True, "infinite": False, "number": 1700003700},
            "time_limit": {"set": False, "infinite": True, "number": 0},
            "nodes": "n[17-18]", "restart_cnt": 0,
        },
    ],
}


def test_squeue_json_v0040_lists_and_number_objects():
    records = parse_squeue_json(json.dumps(SQUEUE_V40), "23.11.4")
    held = records[88017]
    assert (held.state, held.reason, held.is_held, held.restart_count) == (
        "PENDING", "JobHeldAdmin", True, 1)
    assert held.stdout_path == "/work/logs/succ-88017_4294967294.out"
    assert held.time_limit_s == 1440 * 60 and held.mem_limit_bytes == 972800 * MiB
    assert held.exit_code is None and held.start_time is None
    oom = records[88016]
    assert (oom.state, oom.exit_code, oom.signal, oom.elapsed_s) == ("OUT_OF_MEMORY", 0, 9, 3600)
    assert oom.time_limit_s is None and oom.node == "n[17-18]"
    assert oom.stdout_path == "/work/logs/mix-88016.out"


def test_sacct_json_v0040_shapes():
    doc = {"jobs": [{
        "job_id": 88016, "name": "mix", "user": "alice", "account": "team-a",
        "partition": "gpu", "qos": "normal",
        "state": {"current": ["OUT_OF_MEMORY"], "reason": "None"},
        "exit_code": {"status": ["SIGNALED"],
                      "return_code": {"set": True, "infinite": False, "number": 0},
                      "signal": {"id": {"set": True, "infinite": False, "number": 125},
                                 "name": ""}},
        "time": {"elapsed": 3600, "submission": 1700000000, "start": 1700000100,
                 "end": 1700003700, "limit": {"set": True, "infinite": False, "number": 1440}},
        "required": {"memory_per_node": {"set": True, "infinite": False, "number": 972800}},
        "nodes": "n17",
        "steps": [{
            "step": {"id": "88016.batch", "name": "batch"}, "state": ["OUT_OF_MEMORY"],
            "exit_code": {"status": ["SIGNALED"], "return_code": {"set": True, "number": 0},
                          "signal": {"id": {"set": True, "number": 9}, "name": "KILL"}},
            "tres": {"requested": {"max": [{"type": "mem", "count": 1000 * 1024**3}]}},
        }],
    }]}
    record = parse_sacct_json(json.dumps(doc))[88016]
    assert (record.state, record.exit_code, record.signal) == ("OUT_OF_MEMORY", 0, 9)
    assert record.max_rss_bytes == 1000 * 1024**3
    assert record.mem_limit_bytes == 972800 * MiB and record.time_limit_s == 86400


def test_squeue_parsable_name_with_separator_and_newline():
    row = ("5|5|N/A|PENDING|JobHeldUser|bob|root|debug|normal|0|1700000000|N/A|N/A|UNLIMITED|"
           "0:00||256M|1|1|cpu=1,mem=256M,node=1|0|0|/home/bob|/home/bob/%x.out|"
           "a|b'; touch /tmp/pwned #\n$(id)|\n"
           "6|6|N/A|RUNNING|None|bob|root|debug|normal|7|1700000000|1700000001|1700003601|1:00:00|"
           "0:05|vm|256M|1|1|cpu=1,mem=256M,node=1|0|0|/home/bob|/home/bob/o-%j.out|plain|\n")
    records = parse_squeue_parsable(row)
    assert records[5].name == "a|b'; touch /tmp/pwned #\n$(id)"
    assert records[5].is_held and records[5].time_limit_s is None
    assert records[6].stdout_path == "/home/bob/o-6.out" and records[6].time_limit_s == 3600


def test_squeue_parsable_with_too_few_fields_names_the_row():
    with pytest.raises(SlurmParseError, match="expected"):
        parse_squeue_parsable("5|PENDING|\n")


def test_squeue_json_that_is_not_json_says_so():
    with pytest.raises(SlurmParseError, match="not JSON"):
        parse_squeue_json("squeue: error: Unable to contact slurm controller", "22.05.8")


# ---- scalars ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-02:03:04", 93784), ("02:03:04", 7384), ("03:04", 184), ("00:01.234", 1.234),
        ("5-00", 5 * 86400), ("2-12:30", 2 * 86400 + 12 * 3600 + 30 * 60), ("1:00", 60),
        ("0:00", 0), ("UNLIMITED", None), ("Partition_Limit", None), ("", None),
        ("INVALID", None),
    ],
)
def test_parse_duration(text, seconds):
    if seconds is None:
        assert parse_duration(text) is None
    else:
        assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["abc", "1-xx", "1:2:3:4", "x-01:00:00"])
def test_parse_duration_rejects_garbage(text):
    with pytest.raises(SlurmParseError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "n_bytes"),
    [("123456K", 123456 * 1024), ("4M", 4 * MiB), ("1.50G", int(1.5 * 1024**3)), ("0", 0),
     ("", None), ("2048", 2048)],
)
def test_parse_rss(text, n_bytes):
    assert parse_rss(text) == n_bytes


@pytest.mark.parametrize(
    ("text", "cpus", "n_bytes"),
    [("100M", None, 100 * MiB), ("950Gn", None, 950 * 1024**3), ("256Mc", 4, 1024 * MiB),
     ("256Mc", None, None), ("0", None, None)],
)
def test_parse_req_mem(text, cpus, n_bytes):
    assert parse_req_mem(text, cpus=cpus) == n_bytes


def test_exit_codes_and_wait_status():
    assert parse_exit_code("3:0") == (3, 0)
    assert parse_exit_code("0:125") == (0, 125)
    assert parse_exit_code("") == (None, None)
    with pytest.raises(SlurmParseError, match="code:signal"):
        parse_exit_code("3")
    assert decode_wait_status(768) == (3, 0)
    assert decode_wait_status(9) == (0, 9)
    assert decode_wait_status(0) == (0, 0)


def test_parse_time_epoch_iso_and_unknown():
    assert parse_time("1795941147") == 1795941147.0
    assert parse_time("2023-11-14T22:13:20") == 1700000000.0  # read as UTC by default
    for text in ("Unknown", "None", "N/A", "0", ""):
        assert parse_time(text) is None


def test_states_and_reasons():
    assert normalize_state("CANCELLED by 1234") == "CANCELLED"
    assert normalize_state("OUT_OF_ME+") == "OUT_OF_MEMORY"
    assert normalize_state("CANCELLED+") == "CANCELLED"
    assert normalize_state("NODE_FAIL") == "NODE_FAIL"
    assert normalize_state("") is None
    assert normalize_reason("JobHeldA+") == "JobHeldAdmin"
    # a cut value that several known ones start with is left as what the column kept
    assert normalize_state("REQUEUE+") == "REQUEUE"
    assert normalize_reason("Depend+") == "Depend"
    assert normalize_reason("(Resources)") == "Resources"
    assert normalize_reason("") is None


def test_parse_version():
    assert parse_version("slurm-wlm 22.05.8") == (22, 5, 8)
    assert parse_version("slurm 23.11.4") == (23, 11, 4)
    with pytest.raises(SlurmParseError, match="version"):
        parse_version("command not found")


# ---- output patterns ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("%x-%j.out", "/home/u/mix-42.out"),
        ("/logs/%u/%x/%A_%a.log", "/logs/alice/mix/42_4294967294.log"),
        ("/logs/%N-%5j.out", "/logs/n17-00042.out"),
        ("/logs/100%%-%j", "/logs/100%-42"),
        ("/logs/a\\%j", "/logs/a%j"),  # a backslash turns expansion off (Slurm's rule)
        ("/logs/%J.%s.%t", "/logs/42.batch.0"),
    ],
)
def test_expand_output_pattern(pattern, expected):
    assert expand_output_pattern(pattern, job_id=42, name="mix", user="alice",
                                 node="n17,n18", workdir="/home/u") == expected


def test_expand_output_pattern_keeps_unknown_fields_and_array_ids():
    assert expand_output_pattern("/l/%N.out", job_id=1) == "/l/%N.out"  # pending: no node yet
    assert expand_output_pattern("/l/%A_%a.out", job_id=57, array_job_id=50,
                                 array_task_id=7) == "/l/50_7.out"


def test_a_width_zero_pads_numbers_only_as_slurm_does():
    """`%3x` of a job named `7` is `7`: Slurm ignores a width on a name, user or node."""
    assert expand_output_pattern("/l/%3x-%4a-%2u-%3N-%3n.out", job_id=1, name="7", user="9",
                                 node="5", array_job_id=1, array_task_id=5) \
        == "/l/7-0005-9-5-000.out"


# ---- competitors -------------------------------------------------------------------------------


def test_filter_competitors_orders_by_priority_then_age_and_filters():
    jobs = [
        JobRecord(1, user="bob", account="a", partition="gpu", state="PENDING", priority=10,
                  submit_time=200.0),
        JobRecord(2, user="bob", account="a", partition="gpu", state="PENDING", priority=10,
                  submit_time=100.0),
        JobRecord(3, user="bob", account="a", partition="gpu,cpu", state="PENDING",
                  priority=99, submit_time=300.0),
        JobRecord(4, user="bob", account="b", partition="gpu", state="PENDING", priority=50),
        JobRecord(5, user="bob", account="a", partition="gpu", state="RUNNING", priority=50),
        JobRecord(6, user="eve", account="a", partition="gpu", state="PENDING", priority=50),
        JobRecord(7, user="bob", account="a", partition="cpu", state="PENDING", priority=50),
    ]
    found = filter_competitors(jobs, user="bob", account="a", partition="gpu", exclude=[1])
    assert [j.job_id for j in found] == [3, 2]
    assert [j.job_id for j in filter_competitors(jobs, account="a", partition="gpu")] == [
        3, 6, 2, 1]


def test_accounting_carries_the_diagnosis_fields():
    record = JobRecord(7, state="TIMEOUT", exit_code=0, signal=15, elapsed_s=60.0,
                       mem_limit_bytes=1, max_rss_bytes=2)
    assert record.accounting() == Accounting("TIMEOUT", 0, 15, 60.0, 1, 2)
    assert JobRecord(8, state="REQUEUE_HOLD").is_held


def test_format_duration_round_trips_through_parse_duration():
    from bot.core.slurm.values import format_duration

    assert format_duration(93784) == "1-02:03:04"
    assert format_duration(59) == "00:00:59"
    assert parse_duration(format_duration(200000)) == 200000


# --------------------------------------------------------------------------------------------
# sstat: memory of running steps (fixtures sstat.*.txt / *.stderr, see README.txt)
# --------------------------------------------------------------------------------------------

KiB = 1024


def test_sstat_argv_is_one_call_for_all_jobs_with_every_step() -> None:
    argv = sstat_argv([361, 360, 361])
    assert argv == ["sstat", "--noheader", "--parsable2", "--allsteps", "--jobs=360,361",
                    "--format=JobID,MaxRSS,AveRSS,MaxRSSNode,MaxRSSTask,NTasks"]
    with pytest.raises(ValueError, match="no job ids"):
        sstat_argv([])
    with pytest.raises(ValueError, match="positive integer"):
        sstat_argv(["360;rm -rf /"])  # type: ignore[list-item]


def test_parse_sstat_real_output_batch_and_srun_step() -> None:
    """Job 360: batch script holding 300 MiB + an srun step holding 200 MiB; 361: 150 MiB."""
    memory = parse_sstat((FIXTURES / "sstat.running.txt").read_text())
    assert set(memory) == {360, 361}
    a = memory[360]
    assert a.step == "batch" and a.steps == 2
    assert a.max_rss_bytes == 326992 * KiB
    assert 300 * MiB < a.max_rss_bytes < 340 * MiB
    assert a.ave_rss_bytes == 326992 * KiB
    assert (a.max_rss_node, a.max_rss_task, a.ntasks) == ("vm", 0, 1)
    assert a.total_max_rss_bytes == (326992 + 212944) * KiB
    b = memory[361]
    assert (b.step, b.steps) == ("batch", 1)
    assert b.max_rss_bytes is not None and 150 * MiB < b.max_rss_bytes < 170 * MiB


def test_parse_sstat_real_output_with_finished_and_unknown_ids() -> None:
    """sstat 22.05 exits 0; jobs without running steps have no row, only a stderr line."""
    memory = parse_sstat((FIXTURES / "sstat.mixed.txt").read_text())
    assert set(memory) == {360, 361}
    assert parse_sstat((FIXTURES / "sstat.none.txt").read_text()) == {}
    no_steps, unknown = sstat_missing((FIXTURES / "sstat.mixed.stderr").read_text())
    assert (no_steps, unknown) == ({358}, {99999})


def test_parse_sstat_units_and_largest_step_wins() -> None:
    text = (
        "7.batch|512K|100K|n1|0|1\n"
        "7.0|1.50G|1.20G|n3|5|8\n"
        "7.1|900M|800M|n2|2|4\n"
        "7.extern|0|0|n1|0|1\n"
    )
    got = parse_sstat(text)[7]
    assert got.step == "0"
    assert got.max_rss_bytes == int(1.5 * 1024**3)
    assert got.ave_rss_bytes == int(1.2 * 1024**3)
    assert (got.max_rss_node, got.max_rss_task, got.ntasks, got.steps) == ("n3", 5, 8, 4)
    assert got.total_max_rss_bytes == 512 * KiB + int(1.5 * 1024**3) + 900 * MiB


def test_parse_sstat_empty_fields_and_trailing_separator() -> None:
    """A step not measured yet has empty fields; it never beats a measured one."""
    text = "9.batch||||| \n9.0|2048K|1024K|vm|0|1|\n10.batch||||\n"
    with pytest.raises(SlurmParseError, match="expected 6"):
        parse_sstat(text)  # 10.batch has 5 fields
    got = parse_sstat("9.batch|||||\n9.0|2048K|1024K|vm|0|1|\n11.batch|||||\n")
    assert got[9].step == "0" and got[9].max_rss_bytes == 2 * MiB and got[9].steps == 2
    assert got[11].max_rss_bytes is None and got[11].max_rss_node is None
    assert got[11].total_max_rss_bytes is None
    assert 12 not in got  # a job sstat printed nothing about is absent


def test_parse_sstat_rejects_what_it_cannot_read() -> None:
    with pytest.raises(SlurmParseError, match="unreadable JobID 'abc'"):
        parse_sstat("abc|1K|1K|vm|0|1\n")
    with pytest.raises(SlurmParseError, match="JobID"):
        parse_sstat("123|1K|1K|vm|0|1\n")  # a job row without a step: not sstat output
    with pytest.raises(SlurmParseError, match="sacct size"):
        parse_sstat("5.batch|lots|1K|vm|0|1\n")


def test_a_job_cancelled_while_it_waited_never_started_though_sacct_gives_it_a_start():
    """Slurm gives a job cancelled while pending its end as its start time: it never started
    all the same (no node, nothing elapsed); the job cancelled while it ran did."""
    records = parse_sacct_parsable(CANCELLED_PENDING_AND_RUNNING)
    pending, ran = records[1839], records[1840]
    assert pending.start_time is not None and pending.start_time == pending.end_time
    assert pending.never_started
    assert not ran.never_started
    # what diagnosis is given: who cancelled it (uid 0) and why it waited; nothing of the run
    assert pending.accounting().never_started == NeverStarted(cancelled_by=0,
                                                              pending_reason="BeginTime")
    assert ran.accounting().never_started is None


def test_a_never_started_jobs_accounting_gives_no_pending_reason_for_slurms_none():
    record = JobRecord(1, state="DEADLINE", exit_code=0, signal=0, reason="None")
    assert record.accounting().never_started == NeverStarted(None, None)


@pytest.mark.parametrize(("record", "never_started"), [
    (JobRecord(1, state="CANCELLED", exit_code=0, signal=0), True),
    (JobRecord(1, state="DEADLINE", start_time=10.0, end_time=10.0, elapsed_s=0), True),
    # a start before its end, a node, a step, an exit code or signal, an earlier run: it ran
    (JobRecord(1, state="CANCELLED", start_time=10.0, end_time=20.0), False),
    (JobRecord(1, state="FAILED", exit_code=0, signal=0, node="vm"), False),
    (JobRecord(1, state="FAILED", step_states=(("batch", "FAILED"),)), False),
    (JobRecord(1, state="FAILED", exit_code=1, signal=0), False),
    (JobRecord(1, state="CANCELLED", exit_code=0, signal=15), False),
    (JobRecord(1, state="CANCELLED", start_time=10.0, end_time=10.0, restart_count=1), False),
    # only a job that ran ends so; one still queued or running has not ended
    (JobRecord(1, state="COMPLETED", exit_code=0, signal=0), False),
    (JobRecord(1, state="TIMEOUT"), False),
    (JobRecord(1, state="PENDING"), False),
])
def test_never_started_needs_an_end_a_queued_job_reaches_and_no_sign_of_a_run(
        record, never_started):
    assert record.never_started is never_started
