"""Which parsers trainbot reads each Slurm release with, and when `use_json` is refused."""

from __future__ import annotations

import pytest
from fakes import FakeRunner

from bot.cluster.slurm import SlurmClient
from bot.core.slurm.version import choose_parsers, json_refusal, parse_version


@pytest.mark.parametrize("version", ["slurm-wlm 22.05.8", "slurm 21.08.5", "slurm 17.11.2"])
def test_json_is_refused_before_23_02_with_the_reason(version):
    choice = choose_parsers(parse_version(version), want_json=True)
    assert not choice.json
    assert choice.refusal is not None and version.split()[-1][:5] in choice.refusal
    assert (choice.squeue, choice.sacct) == ("squeue --Format (columns)", "sacct --parsable2")


@pytest.mark.parametrize(("version", "parser"), [("slurm 23.02.6", "v0.0.39"),
                                                  ("slurm 24.11.5", "v0.0.42"),
                                                  ("slurm 25.05.2", "v0.0.43")])
def test_json_is_used_where_it_is_right(version, parser):
    choice = choose_parsers(parse_version(version), want_json=True)
    assert choice.json and choice.refusal is None and choice.warning is None
    assert choice.squeue == f"squeue --json ({parser})"
    assert choice.sacct == f"sacct --json ({parser})"


def test_columns_unless_json_is_wanted():
    choice = choose_parsers((24, 11, 5), want_json=False)
    assert not choice.json and choice.refusal is None
    assert json_refusal((24, 11, 5)) is None


@pytest.mark.parametrize("version", ["slurm 25.11.0", "slurm 26.05.1"])
def test_a_release_newer_than_the_newest_tested_gets_a_warning(version):
    choice = choose_parsers(parse_version(version), want_json=False)
    assert choice.warning is not None and "newer than the newest" in choice.warning
    assert "25.05" in choice.warning
    assert choose_parsers((25, 5, 2), want_json=False).warning is None


def test_client_asked_for_json_on_22_05_reads_the_columns():
    runner = FakeRunner({"sinfo": (0, "slurm-wlm 22.05.8\n", ""),
                         "squeue": (0, "", ""),
                         "sacct": (0, "JobIDRaw|State|ExitCode|JobName\n", "")})
    client = SlurmClient(runner, use_json=True, sacct_json=True, check_json=True)
    client.jobs([5])
    assert runner.commands() == ["sinfo", "squeue", "sacct"]
    squeue, sacct = runner.argvs()[1], runner.argvs()[2]
    assert "--json" not in squeue and "--json" not in sacct
    assert client.parsers is not None and "exit code" in (client.parsers.refusal or "")


def test_client_asked_for_json_on_24_11_reads_json_once_checked():
    runner = FakeRunner({"sinfo": (0, "slurm 24.11.5\n", ""),
                         "squeue": (0, '{"jobs": [], "errors": []}', ""),
                         "sacct": (0, '{"jobs": [], "errors": []}', "")})
    client = SlurmClient(runner, use_json=True, sacct_json=True, check_json=True)
    client.jobs([5])
    client.jobs([6])
    assert runner.commands() == ["sinfo", "squeue", "sacct", "squeue", "sacct"]
    assert all("--json" in argv for argv in runner.argvs()[1:])


SACCT_2411 = (
    "JobIDRaw|JobID|State|ExitCode|User|NodeList|WorkDir|StdOut|StdErr|JobName\n"
    "41|40_1|FAILED|3:0|ana|gpu[03-05]|/home/ana|/home/ana/%x-%A_%a-%u.out|e-%j-%N.txt|sw|eep\n"
    "41.batch|40_1.batch|FAILED|3:0||gpu03||||batch\n"
    "50|50|COMPLETED|0:0|ana|vm|/home/ana|/home/ana/slurm-%j.out|/home/ana/slurm-%j.out|plain\n"
)


@pytest.mark.parametrize("version, asks", [("slurm-wlm 22.05.8", False),
                                           ("slurm 23.02.7", True), ("slurm 24.11.5", True),
                                           ("no version here", False)])
def test_sacct_asks_for_the_output_patterns_only_where_the_release_has_them(version, asks):
    runner = FakeRunner({"sinfo": (0, version + "\n", ""), "squeue": (0, "", ""),
                         "sacct": (0, "JobIDRaw|State|ExitCode|JobName\n", "")})
    SlurmClient(runner).jobs([5])
    sacct = next(a for a in runner.argvs() if "sacct" in a)
    fmt = next(a for a in sacct if a.startswith("--format="))
    assert ("StdOut" in fmt and "StdErr" in fmt) is asks
    assert fmt.endswith(",JobName")  # names may hold '|': still last


def test_sacct_output_patterns_are_expanded_like_the_json_path():
    runner = FakeRunner({"sinfo": (0, "slurm 24.11.5\n", ""),
                         "squeue": (1, "", "slurm_load_jobs error: Invalid job id specified"),
                         "sacct": (0, SACCT_2411, "")})
    records = SlurmClient(runner).jobs([41, 50])  # squeue forgot both: sacct alone
    task, plain = records[41], records[50]
    assert task.stdout_path == "/home/ana/sw|eep-40_1-ana.out"
    assert task.stderr_path == "/home/ana/e-41-gpu03.txt"  # relative: joined to WorkDir
    assert plain.stdout_path == plain.stderr_path == "/home/ana/slurm-50.out"
