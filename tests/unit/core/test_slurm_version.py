"""Which parsers trainbot reads each Slurm release with, and when `use_json` is refused."""

from __future__ import annotations

import pytest

from bot.cluster.slurm import SlurmClient
from bot.core.slurm.version import choose_parsers, json_refusal, parse_version
from tests.fakes import FakeRunner


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
    assert client.parsers is not None and "exit code" in client.parsers.refusal


def test_client_asked_for_json_on_24_11_reads_json_once_checked():
    runner = FakeRunner({"sinfo": (0, "slurm 24.11.5\n", ""),
                         "squeue": (0, '{"jobs": [], "errors": []}', ""),
                         "sacct": (0, '{"jobs": [], "errors": []}', "")})
    client = SlurmClient(runner, use_json=True, sacct_json=True, check_json=True)
    client.jobs([5])
    client.jobs([6])
    assert runner.commands() == ["sinfo", "squeue", "sacct", "squeue", "sacct"]
    assert all("--json" in argv for argv in runner.argvs()[1:])
