"""A batch job whose own script slurmstepd could not start because the node lost Slurm's copy
of it (slurmd writes it to `<SlurmdSpoolDir>/job%05u/slurm_script`): the node's fault, not the
script's, so the explanation sends the job to another node instead of asking to fix the
script's path or permissions."""

from __future__ import annotations

import pytest
from support.diagnosis import read_log

from bot.core.catalogue import Catalogue
from bot.core.models import Accounting
from bot.slack.render import explain


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


SPOOLS = {
    "tmp": "/tmp/slurmd/job2997813/slurm_script",
    "var-spool": "/var/spool/slurmd/job00089/slurm_script",
}


@pytest.mark.parametrize("acct", [None, Accounting(state="FAILED", exit_code=2, signal=0)],
                         ids=["log-only", "2:0"])
@pytest.mark.parametrize("spool", sorted(SPOOLS))
def test_a_batch_script_the_node_lost_from_its_spool_is_the_nodes(catalogue, spool, acct):
    program = SPOOLS[spool]
    d = read_log(catalogue, f"slurmstepd: error: execve(): {program}: No such file or "
                            "directory\n", acct)
    assert d.class_id == "unknown_failure"
    assert d.detail == {"kind": "launch_failed", "program": program,
                        "reason": "No such file or directory", "interpreter": False,
                        "spool": True}
    said = explain(d)
    assert "spool" in said and "--exclude=<node>" in said and "chmod +x" not in said
    assert "spool" in explain(d, "ko") and program in explain(d, "ko")


@pytest.mark.parametrize("program", ["train.sh", "/home/u/slurm_script", "./job1/run.sh",
                                     "/tmp/slurmd/job12/slurm_script.sh"])
def test_a_script_of_the_users_own_is_still_theirs_to_fix(catalogue, program):
    d = read_log(catalogue, f"slurmstepd: error: execve(): {program}: No such file or "
                            "directory\n", None)
    assert d.detail is not None and d.detail["spool"] is False
    assert "chmod +x" in explain(d)
