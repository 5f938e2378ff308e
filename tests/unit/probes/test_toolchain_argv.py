"""The toolchain probe's srun argv carries the recipe's env names, never its values."""

from __future__ import annotations

import subprocess

from fakes import FakeRunner, present

from bot.probes.toolchain import build_probe_argv, probe_env, run_toolchain_probe

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
