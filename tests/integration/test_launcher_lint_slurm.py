"""The launcher lint's claims about what Slurm shows, checked on the dev clusters (Slurm 22.05
and 24.11): a training command that exits 3 piped to `tee` (as a command or an `if` condition),
or under an EXIT trap that exits 0 (the script's, or a subshell's around it), ends COMPLETED
0:0; `$2` under `set -u` with one argument ends FAILED 1:0; an `#SBATCH` line below the first
command or after spaces or a tab is not applied. Each script's fixed form is submitted beside
it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import SSHRunner
from bot.core.launcher_lint import (
    CHECK_EXIT_TRAP,
    CHECK_POSITIONAL,
    CHECK_SBATCH_AFTER_COMMAND,
    CHECK_SBATCH_INDENTED,
    CHECK_TEE_HIDES_STATUS,
    lint_launcher,
)
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sbatch import SubmitSpec

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CRASH = "python3 -c 'import sys; print(\"step 1\"); sys.exit(3)'"

#: case: (check, script, the recipe's args, the lint's level, Slurm's state and exit code)
CASES: dict[str, tuple[str, str, tuple[str, ...], str, tuple[str, int]]] = {
    "tee": (CHECK_TEE_HIDES_STATUS, f"{CRASH} 2>&1 | tee /dev/null\n", (), "warn",
            ("COMPLETED", 0)),
    "tee-pipefail": (CHECK_TEE_HIDES_STATUS, f"set -o pipefail\n{CRASH} 2>&1 | tee /dev/null\n",
                     (), "pass", ("FAILED", 3)),
    "trap": (CHECK_EXIT_TRAP, f"set -e\ntrap 'echo cleanup; exit 0' EXIT\n{CRASH}\n", (), "fail",
             ("COMPLETED", 0)),
    "trap-keeps": (CHECK_EXIT_TRAP, f"set -e\ntrap 'echo cleanup' EXIT\n{CRASH}\n", (), "pass",
                   ("FAILED", 3)),
    "tee-if": (CHECK_TEE_HIDES_STATUS,
               f"if {CRASH} 2>&1 | tee /dev/null; then echo ok; else exit 4; fi\n", (), "warn",
               ("COMPLETED", 0)),
    "tee-if-pipefail": (CHECK_TEE_HIDES_STATUS,
                        f"set -o pipefail\nif {CRASH} 2>&1 | tee /dev/null; then echo ok; "
                        "else exit 4; fi\n", (), "pass", ("FAILED", 4)),
    "trap-subshell": (CHECK_EXIT_TRAP, f"set -e\n( trap 'exit 0' EXIT; {CRASH} )\necho done\n",
                      (), "fail", ("COMPLETED", 0)),
    "trap-subshell-prep": (CHECK_EXIT_TRAP,
                           f"set -e\n( trap 'exit 0' EXIT; mkdir -p /tmp/it-lint )\n{CRASH}\n",
                           (), "pass", ("FAILED", 3)),
    "positional": (CHECK_POSITIONAL, "set -u\necho config $1 tag $2\n", ("a.yaml",), "warn",
                   ("FAILED", 1)),
    "positional-given": (CHECK_POSITIONAL, "set -u\necho config $1 tag $2\n", ("a.yaml", "t"),
                         "pass", ("COMPLETED", 0)),
}


def _level(check: str, script: str, args: tuple[str, ...]) -> str:
    levels = {f.level for f in lint_launcher(script, None, args) if f.check == check}
    return "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"


@pytest.fixture(scope="module")
def ssh_runner(slurm_cluster) -> Iterator[SSHRunner]:
    with SSHRunner(slurm_cluster.ssh_settings()) as runner:
        yield runner


def _wait(client: SlurmClient, ids: list[int], timeout: float = 150) -> dict[int, JobRecord]:
    """Until every job is over and its outcome came from accounting (sacct)."""
    deadline = time.monotonic() + timeout
    records: dict[int, JobRecord] = {}
    while time.monotonic() < deadline:
        records = client.jobs(ids)
        if all((rec := records.get(i)) and rec.source == "squeue+sacct" and rec.step_states
               and rec.state not in ("PENDING", "RUNNING", "COMPLETING") for i in ids):
            return records
        time.sleep(1)
    pytest.fail(f"jobs not settled within {timeout:g} s: {records}")


def test_what_the_lint_says_is_what_slurm_shows(slurm_cluster, ssh_runner):
    client = SlurmClient(ssh_runner, use_json=False, timeout=60)
    tag = uuid.uuid4().hex[:8]
    ids: dict[str, int] = {}
    try:
        for case, (_check, body, args, _lvl, _outcome) in CASES.items():
            ids[case] = client.submit(
                SubmitSpec(job_name=f"it-lint-{case}-{tag}", args=args, mem="64M", time="5",
                           output="/dev/null"),
                script="#!/bin/bash\n" + body,
            )
        # sbatch reads `#SBATCH --time=3` above the first command, not below it, and only at
        # the start of its line: after spaces or a tab it is a comment (which does not end
        # the directives: the flush `--time=3` below an indented one is read)
        for case, body in (("early", "#SBATCH --time=3\necho start\n"),
                           ("late", "echo start\n#SBATCH --time=3\n"),
                           ("indented", "  #SBATCH --time=3\necho start\n"),
                           ("tab", "\t#SBATCH --time=3\necho start\n"),
                           ("below-indented", "  #SBATCH --job-name=x\n#SBATCH --time=3\n"
                                              "echo start\n")):
            ids[case] = client.submit(
                SubmitSpec(job_name=f"it-lint-{case}-{tag}", mem="64M", output="/dev/null"),
                script="#!/bin/bash\n" + body,
            )
        records = _wait(client, list(ids.values()))
    finally:
        for job_id in ids.values():
            ssh_runner.run(["scancel", str(job_id)], check=False)

    for case, (check, body, args, level, outcome) in CASES.items():
        record = records[ids[case]]
        assert (record.state, record.exit_code) == outcome, (case, record)
        assert _level(check, "#!/bin/bash\n" + body, args) == level, case

    early, late = records[ids["early"]], records[ids["late"]]
    assert early.time_limit_s == 180
    assert late.time_limit_s != 180  # the partition's default: the directive was ignored
    assert records[ids["indented"]].time_limit_s != 180
    assert records[ids["tab"]].time_limit_s != 180
    assert records[ids["below-indented"]].time_limit_s == 180
    for indented in ("  #SBATCH --time=3\necho start\n", "\t#SBATCH --time=3\necho start\n"):
        assert _level(CHECK_SBATCH_INDENTED, "#!/bin/bash\n" + indented, ()) == "warn"
    assert _level(CHECK_SBATCH_INDENTED, "#!/bin/bash\n#SBATCH --time=3\necho start\n",
                  ()) == "pass"
    assert _level(CHECK_SBATCH_AFTER_COMMAND, "#!/bin/bash\necho start\n#SBATCH --time=3\n",
                  ()) == "warn"
    assert _level(CHECK_SBATCH_AFTER_COMMAND, "#!/bin/bash\n#SBATCH --time=3\necho start\n",
                  ()) == "pass"
