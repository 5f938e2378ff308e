"""The toolchain probe's srun argv carries the recipe's env names, never its values."""

from __future__ import annotations

import subprocess

import pytest
from fakes import FakeRunner, present

from bot.probes.toolchain import MARKER, build_probe_argv, probe_env, run_toolchain_probe

SECRET = "xoxb-probe-secret $(id) 'q'\n"


def test_values_travel_as_environment_and_the_failure_message_shows_none() -> None:
    runner = FakeRunner({"srun": (1, "", "srun: error: invalid partition")})
    report = run_toolchain_probe(runner, "gpu", env={"HF_TOKEN": SECRET, "CC": "/x/cc"})
    ((argv, _stdin, env),) = runner.calls
    assert not any(SECRET in word or "/x/cc" in word for word in argv)
    assert env == {"TRAINBOT_PROBE_ENV_HF_TOKEN": SECRET, "TRAINBOT_PROBE_ENV_CC": "/x/cc"}
    (finding,) = report.findings
    assert SECRET not in f"{finding.message} {finding.fix}" and "/x/cc" not in finding.fix


def test_the_node_sets_each_variable_from_its_carrier_after_the_env_setup() -> None:
    argv = build_probe_argv("gpu", env_setup="export CC=/from/setup", python="true",
                            env_names=["CC", "HF_TOKEN"])
    node_cmd = argv[argv.index("trainbot-probe") + 1:]  # what srun runs after bash's setup
    carriers = present(probe_env({"HF_TOKEN": SECRET, "CC": "/recipe/cc"}))
    env = {"PATH": "/usr/bin:/bin", "CC": "/from/setup", **carriers}
    script = node_cmd[:node_cmd.index("true")] + [
        "sh", "-c", 'printf "%s|%s|%s" "$CC" "$HF_TOKEN" "${TRAINBOT_PROBE_ENV_CC-unset}"']
    out = subprocess.run(script, env=env, capture_output=True, text=True, check=True).stdout
    assert out == f"/recipe/cc|{SECRET}|unset"


@pytest.mark.parametrize("junk", ["[1, 2]", '"ok"', '{"cc": "gcc", "host": "n1"}',
                                  '{"cc": {"works": true}, "cxx": ["g++"], "torch": "2.3"}',
                                  '{"cc": {}, "torch": "2.3", "compile": "ran"}'])
def test_a_report_not_of_the_node_scripts_shape_is_a_did_not_report_finding(junk: str) -> None:
    """JSON after the marker that the node script does not write (a list, a string, a word
    where an object of facts is) is the probe's "did not report" fail finding, showing what
    the node printed, never an AttributeError out of preflight."""
    runner = FakeRunner({"srun": (0, f"{MARKER}{junk}\n", "")})
    report = run_toolchain_probe(runner, "debug")
    (finding,) = report.findings
    assert (finding.check, finding.level) == ("toolchain:srun", "fail")
    assert finding.message.startswith("the toolchain probe did not report (exit 0): ")
    assert junk in finding.message and report.node == {}
