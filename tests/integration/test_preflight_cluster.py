"""`trainbot preflight RECIPE` end to end: the launcher read over SFTP from the dev cluster, the
toolchain probe through srun, the memory budget; exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from bot.cli import main
from bot.cluster.ssh import SSHRunner
from bot.core.checkpoints import CHECKPOINT_REQUESTS

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LAUNCHERS = Path(__file__).resolve().parents[1] / "fixtures" / "launchers"
BUDGET_87870 = ["--params", "1.4B", "--ranks", "4", "--workers", "10",
                "--per-gpu-cap", "244000M", "--site-floor", "563200M"]


def _config(tmp_path: Path, dev_cluster, script: str, *, port: int | None = None) -> str:
    cfg = tmp_path / "trainbot.yaml"
    cfg.write_text(
        "clusters:\n"
        "  dev:\n"
        f"    host: {dev_cluster.host}\n"
        f"    port: {port or dev_cluster.port}\n"
        f"    user: {dev_cluster.user}\n"
        f"    key_file: {dev_cluster.key_file}\n"
        f"    known_hosts: {dev_cluster.known_hosts}\n"
        "    connect_timeout: 5\n"
        "recipes:\n"
        "  mix:\n"
        "    cluster: dev\n"
        f"    sbatch_script: {script}\n"
        f"    partition: {dev_cluster.partition}\n"
        "    mem: 300GB\n"
    )
    return str(cfg)


@pytest.fixture()
def remote_launchers(dev_cluster):
    """The reports' launchers (108687 and its fixed form, 108903's FlexAttention one), uploaded
    to the cluster user's home."""
    tag = uuid.uuid4().hex[:8]
    paths = {}
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        sftp = runner.sftp()
        for name in ("report_108687", "report_108687_fixed", "flex_no_cc"):
            remote = f"{dev_cluster.home}/preflight-{tag}-{name}.sbatch"
            with sftp.open(remote, "w") as fh:
                fh.write((LAUNCHERS / f"{name}.sbatch").read_bytes())
            paths[name] = remote
        yield paths
        for remote in paths.values():
            sftp.remove(remote)


def _preflight(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["preflight", "mix", "--json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_reports_launcher_fails_lint_and_memory_with_the_fixes(
    dev_cluster, remote_launchers, tmp_path, capsys
):
    cfg = _config(tmp_path, dev_cluster, remote_launchers["report_108687"])
    code, out = _preflight(capsys, "--config", cfg, *BUDGET_87870, "--worker-rss", "9.2G")
    assert code == 1
    launcher = {c["check"]: c for c in out["sections"]["launcher"]["checks"]}
    assert launcher["empty_match_under_errexit"]["level"] == "fail"
    assert launcher["empty_match_under_errexit"]["line"] == 10
    assert out["script"].startswith("cluster:")
    tool = {c["check"]: c for c in out["sections"]["toolchain"]["checks"]}
    assert tool["toolchain:cc"]["level"] == "pass"
    assert tool["toolchain:torch"]["level"] == "warn"
    assert out["memory"]["level"] == "fail"
    assert out["memory"]["suggested_mem"] == "580G"


def test_fixed_launcher_and_fixed_workers_pass(dev_cluster, remote_launchers, tmp_path, capsys):
    cfg = _config(tmp_path, dev_cluster, remote_launchers["report_108687_fixed"])
    code, out = _preflight(capsys, "--config", cfg, *BUDGET_87870, "--worker-rss", "2.3G")
    assert code == 0, json.dumps(out, indent=1)
    assert out["sections"]["launcher"]["level"] == "pass"
    assert out["sections"]["memory"]["level"] == "pass"
    assert out["level"] == "warn"  # torch is not installed for the cluster user


def test_readable_report(dev_cluster, remote_launchers, tmp_path, capsys):
    cfg = _config(tmp_path, dev_cluster, remote_launchers["report_108687"])
    code = main(["preflight", "mix", "--config", cfg, "--no-toolchain", "--params", "1.4B",
                 "--ranks", "4"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("preflight mix: FAIL")
    assert "[FAIL] empty_match_under_errexit" in out and "fix: guard it" in out


def test_unreachable_cluster_and_bad_usage_exit_2(dev_cluster, tmp_path, capsys):
    cfg = _config(tmp_path, dev_cluster, "/nonexistent.sbatch", port=1)
    assert main(["preflight", "mix", "--config", cfg]) == 2
    assert "unreachable" in capsys.readouterr().err
    assert main(["preflight", "nosuchrecipe", "--config", cfg]) == 2
    assert "no recipe 'nosuchrecipe'" in capsys.readouterr().err
    assert main(["preflight", "mix", "--config", cfg, "--params", "lots"]) == 2
    assert "--params" in capsys.readouterr().err


def test_a_tilde_script_path_sbatch_cannot_open_is_refused_not_passed(
    dev_cluster, remote_launchers, tmp_path, capsys
):
    """sbatch opens `~/x.sbatch` by that literal name (no shell expands it), so a recipe
    naming its script so could never be submitted: preflight must not pass it by reading the
    file over SFTP from the home, but refuse the config naming the field and the fix."""
    name = Path(remote_launchers["report_108687_fixed"]).name
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        sbatch = runner.run(["sbatch", f"--partition={dev_cluster.partition}", f"~/{name}"],
                            check=False)
    assert not sbatch.ok and "Unable to open file" in sbatch.stderr
    cfg = _config(tmp_path, dev_cluster, f"~/{name}")
    code = main(["preflight", "mix", "--config", cfg, "--no-toolchain"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "recipes.mix.sbatch_script" in err and "which sbatch does not expand" in err


def test_param_count_read_from_the_recipes_latest_dcp_checkpoint(
    dev_cluster, remote_launchers, tmp_path, capsys
):
    import warnings

    import torch
    import torch.distributed.checkpoint as dcp

    local = tmp_path / "iter_000001000"
    model = torch.nn.Linear(100, 10)  # 1010 parameters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save({"model": model.state_dict()}, storage_writer=dcp.FileSystemWriter(str(local)),
                 no_dist=True)
    root = f"{dev_cluster.home}/preflight-ckpt-{uuid.uuid4().hex[:8]}"
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        sftp = runner.sftp()
        sftp.mkdir(root)
        sftp.mkdir(f"{root}/iter_000001000")
        for f in local.iterdir():
            sftp.put(str(f), f"{root}/iter_000001000/{f.name}")
        with sftp.open(f"{root}/latest_checkpoint.txt", "w") as fh:
            fh.write("iter_000001000\n")
        try:
            cfg = Path(_config(tmp_path, dev_cluster, remote_launchers["report_108687_fixed"]))
            cfg.write_text(cfg.read_text() + f"    checkpoint:\n      dir: {root}\n")
            code, out = _preflight(capsys, "--config", cfg.as_posix(), "--no-toolchain",
                                   "--ranks", "4")
        finally:
            runner.run(["rm", "-rf", root], check=False)
    assert code == 0, out
    (mem,) = out["sections"]["memory"]["checks"]
    assert "parameter count 1,010" in mem["message"] and "read from" in mem["message"]
    state = [p for p in out["memory"]["parts"] if p["name"] == "model+optimizer state"][0]
    assert state["bytes"] == 4 * 18 * 1010


def test_a_checkpoint_lookup_stopped_at_its_bound_is_said_not_taken_for_none(
    dev_cluster, remote_launchers, tmp_path, capsys
):
    """More newer incomplete checkpoints than the lookup's SFTP request bound lets it list
    (a complete one older than all of them): the memory budget is skipped saying the lookup
    stopped, how many it checked and did not, and what to do, never that there is no
    complete checkpoint (there is one; a resume would be refused, not start from scratch)."""
    root = f"{dev_cluster.home}/preflight-ckpt-{uuid.uuid4().hex[:8]}"
    files = {"iter_000001000/model/.metadata": 4096, "iter_000001000/model/__0_0.distcp": 1024,
             **{f"iter_{i:09d}/model/__0_0.distcp": 1024
                for i in range(2000, 2000 + CHECKPOINT_REQUESTS + 5)}}
    script = ('root=$1; shift; while [ $# -gt 0 ]; do mkdir -p "$root/$(dirname "$1")"; '
              'truncate -s "$2" "$root/$1"; shift 2; done')
    with SSHRunner(dev_cluster.ssh_settings()) as runner:
        runner.run(["sh", "-c", script, "sh", root,
                    *[x for rel, size in files.items() for x in (rel, str(size))]])
        try:
            cfg = Path(_config(tmp_path, dev_cluster, remote_launchers["report_108687_fixed"]))
            cfg.write_text(cfg.read_text() + f"    checkpoint:\n      dir: {root}\n")
            code, out = _preflight(capsys, "--config", cfg.as_posix(), "--no-toolchain",
                                   "--ranks", "4")
        finally:
            runner.run(["rm", "-rf", root], check=False)
    assert code == 0, out
    (mem,) = out["sections"]["memory"]["checks"]
    # the root's listing (86 entries, one readdir of OpenSSH's 100), then each candidate's
    # listing and its model/ dir's, 4 requests each: 9 checked in 76 of the 80
    checked = "; ".join(f"iter_{i:09d}: no .metadata" for i in range(2084, 2075, -1))
    assert (mem["level"], mem["message"], mem["fix"]) == ("warn", (
        f"no parameter count (the checkpoint lookup in {root} stopped at its bound of 80 SFTP "
        f"requests; the 9 newest checkpoints it checked are incomplete ({checked}) and the 77 "
        "older ones were not checked): skipped the checkpoint memory budget"),
        "remove the incomplete checkpoints or write a complete one's name in "
        "latest_checkpoint.txt (a resume of this recipe is refused until then), or pass "
        "--params (e.g. --params 1.4B)")


def test_the_toolchain_probe_gives_the_jit_verdict(dev_cluster, remote_launchers, tmp_path,
                                                   capsys):
    # the lint alone cannot know whether the worker has gcc: the probe runs the real thing
    cfg = _config(tmp_path, dev_cluster, remote_launchers["flex_no_cc"])
    _code, out = _preflight(capsys, "--config", cfg, *BUDGET_87870, "--worker-rss", "2.3G")
    tool = {c["check"]: c for c in out["sections"]["toolchain"]["checks"]}
    assert tool["toolchain:cc"]["level"] == "pass"
    launcher = {c["check"]: c for c in out["sections"]["launcher"]["checks"]}
    assert launcher["jit_without_cc"]["level"] == "pass"
    assert "compiled and ran a C program" in launcher["jit_without_cc"]["message"]
    _code, out = _preflight(capsys, "--config", cfg, "--no-toolchain", *BUDGET_87870,
                            "--worker-rss", "2.3G")
    launcher = {c["check"]: c for c in out["sections"]["launcher"]["checks"]}
    assert launcher["jit_without_cc"]["level"] == "fail"
    assert "probe was skipped" in launcher["jit_without_cc"]["message"]
