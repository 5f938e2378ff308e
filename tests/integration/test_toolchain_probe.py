"""The worker toolchain probe through trainbot's SSH runner and a real `srun` on the dev cluster.

The dev cluster's node has gcc and the test user's system python3 has no torch: one run must
report a working compiler (and skip the compile check with a warning), one run with PATH
stripped to a directory holding only python3 and CC pointing nowhere must report it missing.
"""

from __future__ import annotations

import uuid

import pytest

from bot.cluster.ssh import SSHRunner
from bot.core.findings import worst_level
from bot.probes.toolchain import run_toolchain_probe

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _by_check(report):
    return {f.check: f for f in report.findings}


def test_worker_with_gcc_reports_a_working_compiler(dev_cluster):
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        report = run_toolchain_probe(runner, dev_cluster.partition, timeout=240)
    checks = _by_check(report)
    assert checks["toolchain:cc"].level == "pass", checks["toolchain:cc"].message
    assert "compiled and ran" in checks["toolchain:cc"].message
    assert report.node["python"].startswith("3.")
    # torch is not installed for the cluster user: a warning, not a crash
    assert checks["toolchain:torch"].level == "warn"
    assert "torch not importable: skipped the compile check" in checks["toolchain:torch"].message
    assert "toolchain:torch_compile" not in checks
    assert worst_level(report.findings) == "warn"


def test_worker_without_a_compiler_on_path_reports_it_missing(dev_cluster):
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        # a directory holding only python3, created as the cluster user (the job's user)
        bindir = f"{dev_cluster.home}/trainbot-nocc-{uuid.uuid4().hex[:8]}"
        runner.run(["mkdir", "-p", bindir])
        try:
            runner.run(["ln", "-s", "/usr/bin/python3", f"{bindir}/python3"])
            report = run_toolchain_probe(
                runner, dev_cluster.partition, timeout=240,
                env={"PATH": bindir, "CC": "/nonexistent-bin/cc"},
            )
        finally:
            runner.run(["rm", "-rf", bindir], check=False)
    checks = _by_check(report)
    cc = checks["toolchain:cc"]
    assert cc.level == "fail"
    assert cc.message.startswith("compiler_missing")
    assert "/nonexistent-bin/cc" in cc.message
    assert "gcc_linux-64" in cc.fix and "CC=" in cc.fix
    assert report.node["PATH"] == bindir


def test_env_setup_snippet_runs_before_the_probe_and_a_hostile_value_stays_literal(
    dev_cluster, tmp_path
):
    canary = f"/tmp/trainbot-pwned-{uuid.uuid4().hex[:8]}"
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        report = run_toolchain_probe(
            runner, dev_cluster.partition, timeout=240,
            env_setup="export CC=/usr/bin/gcc",
            env={"CXX": f"g++; touch {canary} #"},
        )
        leaked = runner.run(["test", "-e", canary], check=False)
    checks = _by_check(report)
    assert report.node["CC"] == "/usr/bin/gcc"
    assert "CC=/usr/bin/gcc" in checks["toolchain:cc"].message
    assert report.node["CXX"] == f"g++; touch {canary} #"
    assert checks["toolchain:cxx"].level == "warn"  # not an executable: reported, not run
    assert leaked.exit_code != 0, "the hostile CXX value was executed by a shell"


def test_bad_partition_is_a_failed_check_not_a_crash(dev_cluster):
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        report = run_toolchain_probe(runner, "no-such-partition-x", timeout=120)
    (finding,) = report.findings
    assert finding.check == "toolchain:srun" and finding.level == "fail"
    assert "partition" in finding.message.lower()
