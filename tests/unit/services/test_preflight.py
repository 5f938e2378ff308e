"""Preflight without a cluster: a local launcher (and the Python file it runs), the memory
budget from flags, and the small parsers the command relies on."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.cli import main
from bot.core.memory_budget import parse_count
from bot.core.text import render_text
from bot.services.preflight import _one_gpu, gpus_in_gres

LAUNCHERS = Path(__file__).resolve().parents[2] / "fixtures" / "launchers"


@pytest.fixture()
def config(tmp_path) -> str:
    """A recipe on a cluster nobody can reach: these tests must never need it."""
    cfg = tmp_path / "trainbot.yaml"
    cfg.write_text(
        "clusters:\n  far:\n    host: 192.0.2.1\n    port: 1\n    user: nobody\n"
        "    key_file: /nonexistent/key\n    connect_timeout: 1\n"
        "recipes:\n  mix:\n    cluster: far\n    sbatch_script: /x/train.sbatch\n"
        "    gres: gpu:a100:4\n    mem: 300G\n"
    )
    return str(cfg)


def _run(config: str, capsys, *argv: str) -> tuple[int, dict]:
    code = main(["preflight", "mix", "--config", config, "--json", "--no-toolchain", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_local_launcher_and_the_python_it_runs_are_linted(tmp_path, config, capsys):
    script = tmp_path / "launch.sbatch"
    script.write_text("#!/bin/bash\nset -euo pipefail\nsrun python train.py\n")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.compile(model)\n")
    code, out = _run(config, capsys, "--script", str(script), "--params", "1.4B")
    assert code == 1
    checks = {c["check"]: c for c in out["sections"]["launcher"]["checks"]}
    assert checks["jit_without_cc"]["level"] == "fail"
    assert "train.py" in checks["jit_without_cc"]["message"]
    # gres gpu:a100:4 -> 4 ranks by default
    assert "4 rank(s)" in out["memory"]["parts"][0]["why"]


def test_fixed_local_launcher_passes_with_a_fitting_budget(config, capsys):
    code, out = _run(config, capsys, "--script", str(LAUNCHERS / "report_108687_fixed.sbatch"),
                     "--params", "1.4B", "--workers", "10", "--worker-rss", "2.3G")
    assert code == 0
    assert out["sections"]["launcher"]["level"] == "pass"
    assert out["memory"]["level"] == "pass"


def test_workers_without_measured_rss_are_assumed_and_said_so(config, capsys):
    code, out = _run(config, capsys, "--script", str(LAUNCHERS / "report_108687_fixed.sbatch"),
                     "--params", "1.4B", "--workers", "10")
    (mem,) = out["sections"]["memory"]["checks"]
    assert "assumed 2 GiB" in mem["message"] and "probe dataloader" in mem["message"]


def test_bad_flags_are_usage_errors(config, capsys):
    assert main(["preflight", "mix", "--config", config, "--mem", "lots"]) == 2
    assert "--mem" in capsys.readouterr().err
    assert main(["preflight", "mix", "--config", config, "--mem", "9" * 400 + "G"]) == 2
    assert "--mem: '999999999999'… (401 characters) is too large" in capsys.readouterr().err
    assert main(["preflight", "mix", "--config", config, "--params", "9" * 400]) == 2
    assert "--params: '999999999999'… (400 characters) is too large" in capsys.readouterr().err
    assert main(["preflight", "mix", "--config", config, "--no-toolchain", "--script",
                 "/nonexistent/launch.sbatch"]) == 2
    assert "cannot read --script" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "n"), [("1400000000", 1_400_000_000), ("1.4e9", 1_400_000_000),
                                         ("1.4B", 1_400_000_000), ("350M", 350_000_000),
                                         ("7b", 7_000_000_000)])
def test_parse_count(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize("text", ["9" * 400, "1e999", "9" * 5000 + "B", "2000000T"])
def test_parse_count_refuses_absurd_counts(text):
    with pytest.raises(ValueError, match="too large for a parameter count"):
        parse_count(text)


def test_gres_parsing():
    assert gpus_in_gres("gpu:4") == 4
    assert gpus_in_gres("gpu:a100:2") == 2
    assert gpus_in_gres("gpu") == 1
    assert gpus_in_gres("shard:2") is None and gpus_in_gres(None) is None
    assert _one_gpu("gpu:a100:4") == "gpu:a100:1"
    assert _one_gpu("gpu:4") == "gpu:1"


def test_the_recipes_preflight_facts_and_cluster_caps_come_from_the_config(tmp_path, capsys):
    """Job 87870 described in the config alone: 4 ranks each gather 1.4B params' state plus
    40 workers of 9.2 GiB, against --mem 300G under a 244,000 MiB per-GPU cap."""
    cfg = tmp_path / "trainbot.yaml"
    cfg.write_text(
        "clusters:\n  far:\n    host: 192.0.2.1\n    user: nobody\n"
        "    key_file: /nonexistent/key\n    per_gpu_mem_cap: 244000M\n"
        "    mem_floor: 563200M\n"
        "recipes:\n  mix:\n    cluster: far\n    sbatch_script: /x/train.sbatch\n"
        "    gres: gpu:4\n    mem: 300G\n"
        "    preflight: {params: 1.4B, workers_per_rank: 10, worker_rss: 9.2G}\n"
    )
    script = str(LAUNCHERS / "report_108687_fixed.sbatch")
    code, out = _run(str(cfg), capsys, "--script", script)
    assert code == 1
    assert out["memory"]["level"] == "fail"
    assert out["memory"]["cap_bytes"] == 4 * 244000 * 1024**2
    assert out["memory"]["floor_bytes"] == 563200 * 1024**2
    assert out["memory"]["peak_gib"] > 300
    # a flag overrides the config: with the fixed 2.3 GiB workers the save fits in 600G
    code, out = _run(str(cfg), capsys, "--script", script, "--worker-rss", "2.3G",
                     "--mem", "600G")
    assert out["memory"]["level"] == "pass", out["memory"]["message"]


def test_a_bad_preflight_fact_in_the_config_names_its_key(tmp_path, capsys):
    cfg = tmp_path / "trainbot.yaml"
    cfg.write_text(
        "clusters:\n  far:\n    host: 192.0.2.1\n    key_file: /k\n"
        "recipes:\n  mix:\n    cluster: far\n    sbatch_script: /x/train.sbatch\n"
        "    preflight: {params: lots}\n"
    )
    assert main(["preflight", "mix", "--config", str(cfg), "--no-toolchain"]) == 2
    err = capsys.readouterr().err
    assert "recipes.mix.preflight.params" in err and "1.4B" in err


def test_the_launcher_is_linted_with_the_recipes_args(tmp_path, capsys):
    cfg = tmp_path / "trainbot.yaml"
    cfg.write_text(
        "clusters:\n  far:\n    host: 192.0.2.1\n    port: 1\n    user: nobody\n"
        "    key_file: /nonexistent/key\n    connect_timeout: 1\n"
        "recipes:\n  mix:\n    cluster: far\n    sbatch_script: /x/train.sbatch\n"
        "    args: [configs/a.yaml]\n"
    )
    script = tmp_path / "launch.sbatch"
    script.write_text("#!/bin/bash\nset -euo pipefail\nsrun python train.py $1 --tag $2\n")
    code, out = _run(str(cfg), capsys, "--script", str(script), "--params", "1B")
    checks = [c for c in out["sections"]["launcher"]["checks"]
              if c["check"] == "positional_under_nounset"]
    assert [(c["level"], c["line"]) for c in checks] == [("warn", 3)]
    assert "`$2`" in checks[0]["message"] and "configs/a.yaml" in checks[0]["message"]


def _one_arg_recipe_reading_two(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose recipe `mix` passes one argument and allows `steps` (an argument) and
    `mem` (a Slurm field), and a local launcher that reads `$2` under `set -u`."""
    cfg = tmp_path / "trainbot.yaml"
    cfg.write_text(
        "clusters:\n  far:\n    host: 192.0.2.1\n    port: 1\n    user: nobody\n"
        "    key_file: /nonexistent/key\n    connect_timeout: 1\n"
        "recipes:\n  mix:\n    cluster: far\n    sbatch_script: /x/train.sbatch\n"
        "    args: [configs/a.yaml]\n    overridable: {steps: int, mem: size}\n"
    )
    script = tmp_path / "launch.sbatch"
    script.write_text("#!/bin/bash\nset -euo pipefail\nsrun python train.py $1 --set $2\n")
    return cfg, script


def test_the_runs_overrides_are_arguments_the_launcher_gets(tmp_path, capsys):
    """`preflight RECIPE steps=500`: an override that is not a Slurm field reaches the script
    as an argument after the recipe's `args` (as `submit` passes it), so `$2` is given."""
    cfg, script = _one_arg_recipe_reading_two(tmp_path)

    def preflight(*overrides: str) -> int:
        return main(["preflight", "mix", *overrides, "--config", str(cfg), "--json",
                     "--no-toolchain", "--script", str(script), "--params", "1B"])

    def positional(*overrides: str) -> list[tuple[str, int | None]]:
        preflight(*overrides)
        out = json.loads(capsys.readouterr().out)
        return [(c["level"], c["line"]) for c in out["sections"]["launcher"]["checks"]
                if c["check"] == "positional_under_nounset"]

    assert positional() == [("warn", 3)]
    preflight()
    (finding,) = [c for c in json.loads(capsys.readouterr().out)["sections"]["launcher"]["checks"]
                  if c["check"] == "positional_under_nounset"]
    assert "a run given the override `steps` (e.g. `submit mix steps=VALUE`)" in finding["fix"]
    assert positional("steps=500") == [("pass", None)]
    assert positional("mem=600G") == [("warn", 3)]  # a Slurm field: not an argument
    assert preflight("lr=0.1") == 2
    assert "does not allow overriding 'lr'" in capsys.readouterr().err


def test_overrides_are_taken_anywhere_among_the_flags(tmp_path, capsys):
    """`preflight RECIPE --json steps=500 --no-toolchain`: an override after a flag (or before
    the recipe) counts as one right after RECIPE; a bad one is a usage error naming it."""
    cfg, script = _one_arg_recipe_reading_two(tmp_path)
    config, local = ["--config", str(cfg)], ["--script", str(script), "--params", "1B"]

    def levels(*argv: str) -> list[str]:
        assert main(["preflight", *argv]) == 0
        out = json.loads(capsys.readouterr().out)
        return [c["level"] for c in out["sections"]["launcher"]["checks"]
                if c["check"] == "positional_under_nounset"]

    assert levels("mix", *config, "--json", "steps=500", "--no-toolchain", *local) == ["pass"]
    assert levels("--json", "steps=500", "mix", *config, "--no-toolchain", *local) == ["pass"]
    assert levels("mix", "--json", *config, "--no-toolchain", *local) == ["warn"]

    def usage_error(*argv: str) -> str:
        assert main(["preflight", "mix", *config, "--json", "--no-toolchain", *local,
                     *argv]) == 2
        return capsys.readouterr().err

    assert "override 'steps' has no value; write steps=VALUE" in usage_error("steps=")
    assert ("does not allow overriding 'lr'; allowed: mem (size), steps (int)"
            in usage_error("mem=600G", "lr=0.1"))
    assert ("'steps' is not an override (write KEY=VALUE, e.g. steps=8000)"
            in usage_error("steps"))
    with pytest.raises(SystemExit):  # a flag it does not know is still argparse's error
        main(["preflight", "mix", *config, "--bogus", "steps=5"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def _checkpoints(base: Path, incomplete: int) -> None:
    """/ckpt/mix: a complete iter 1000, then `incomplete` newer ones with no .metadata."""
    for it in (1000, *range(2000, 2000 + incomplete)):
        (base / "ckpt/mix" / f"iter_{it:09d}" / "model").mkdir(parents=True)
        (base / "ckpt/mix" / f"iter_{it:09d}" / "model" / "__0_0.distcp").write_bytes(b"x")
    (base / "ckpt/mix/iter_000001000/model/.metadata").write_bytes(b"m")


def test_a_checkpoint_lookup_stopped_at_its_bound_is_said_in_english_and_korean(tmp_path):
    """85 newer incomplete checkpoints, over SFTP from a server in this process: the lookup
    stops at its 80 SFTP requests (the root's listing, 9 with 86 entries, then each
    candidate's and its model/ dir's, 8) with 8 checked; the memory budget says so and what
    to do, where it said there was no complete checkpoint (there is one)."""
    from fakes import make_config
    from support.sftp_peer import serve_peer

    from bot.services.preflight import PreflightOptions, memory_section
    from bot.slack.render import translator

    recipe = make_config(checkpoint={"dir": "/ckpt/mix"}).recipes["mix"]
    with serve_peer(tmp_path, sftp_timeout=5.0) as peer, peer.runner() as runner:
        _checkpoints(peer.root, 85)
        (finding,), budget = memory_section(recipe, PreflightOptions(ranks_per_node=4), runner)
    assert budget is None and finding.level == "warn"
    checked = "; ".join(f"iter_{i:09d}: no .metadata" for i in range(2084, 2076, -1))
    assert finding.message == (
        "no parameter count (the checkpoint lookup in /ckpt/mix stopped at its bound of 80 "
        f"SFTP requests; the 8 newest checkpoints it checked are incomplete ({checked}) and "
        "the 78 older ones were not checked): skipped the checkpoint memory budget")
    assert finding.fix == (
        "remove the incomplete checkpoints or write a complete one's name in "
        "latest_checkpoint.txt (a resume of this recipe is refused until then), or pass "
        "--params (e.g. --params 1.4B)")
    ko = translator("ko").gettext
    checked_ko = "; ".join(f"iter_{i:09d}: `.metadata` 없음" for i in range(2084, 2076, -1))
    assert render_text(finding.text, ko) == (
        "파라미터 수 없음(`/ckpt/mix`의 체크포인트 조회가 한도인 SFTP 요청 80개에서 멈췄습니다. "
        f"확인한 최신 체크포인트 8개는 불완전하고({checked_ko}) 그보다 오래된 78개는 확인하지 "
        "않았습니다): 체크포인트 메모리 예산을 건너뛰었습니다")
    assert render_text(finding.fix_text, ko) == (
        "불완전한 체크포인트를 지우거나 완전한 체크포인트의 이름을 latest_checkpoint.txt에 "
        "쓰세요(그때까지 이 레시피의 재개는 거부됩니다). 아니면 `--params`를 주세요 "
        "(예: `--params 1.4B`)")


def test_incomplete_checkpoints_all_checked_within_the_bound_are_no_complete_one(tmp_path):
    from fakes import LocalTreeSFTP, make_config

    from bot.services.preflight import PreflightOptions, memory_section

    _checkpoints(tmp_path, 5)
    (tmp_path / "ckpt/mix/iter_000001000/model/.metadata").unlink()
    recipe = make_config(checkpoint={"dir": "/ckpt/mix"}).recipes["mix"]
    runner = SimpleNamespace(sftp=lambda: LocalTreeSFTP(tmp_path))
    (finding,), _ = memory_section(recipe, PreflightOptions(ranks_per_node=4), runner)
    assert finding.message == ("no parameter count (no complete checkpoint in /ckpt/mix yet): "
                               "skipped the checkpoint memory budget")
    assert finding.fix == "pass --params (e.g. --params 1.4B)"


@pytest.mark.parametrize("mem", ["0", "0G"])
def test_a_recipe_with_mem_0_is_budgeted_against_the_nodes_memory_not_0_bytes(mem):
    """A recipe's `mem: "0"` (Slurm's --mem=0: all of each node's memory) is no 0-byte limit:
    the checkpoint budget says the peak and what the nodes need, as a warning, in English and
    Korean; never "above --mem=0 B: the first save will be OOM-killed"."""
    from fakes import make_config

    from bot.services.preflight import PreflightOptions, memory_section
    from bot.slack.render import translator

    recipe = make_config(mem=mem, gres="gpu:4").recipes["mix"]
    (finding,), budget = memory_section(recipe, PreflightOptions(params=1_000_000_000), None)
    assert finding.level == "warn" and budget is not None, finding.message
    assert ("--mem=0 gives the job all of each node's memory, which preflight does not know: "
            "the nodes need at least 90G [parameter count 1.00B (given)]") in finding.message
    assert finding.fix == ("run on nodes with at least 90G of memory, or set --mem=90G so "
                           "Slurm checks it")
    ko = translator("ko").gettext
    assert ("`--mem=0`은 작업에 각 노드의 메모리 전체를 주는데, `preflight`는 그 크기를 알지 "
            "못합니다: 노드에 최소 90G이(가) 있어야 합니다") in render_text(finding.text, ko)
    assert render_text(finding.fix_text, ko) == (
        "메모리가 최소 90G인 노드에서 실행하거나, Slurm이 확인하도록 `--mem=90G`을(를) "
        "설정하세요")


def test_a_probe_waiting_in_the_queue_past_timeout_is_said_not_unreachable(
        config, capsys, monkeypatch):
    """The cluster answered; the toolchain probe's srun waited past --timeout."""
    from bot.cluster.errors import CommandTimedOut
    from bot.services import preflight

    def timed_out(*a, **k):
        raise CommandTimedOut(["srun", "--job-name=trainbot-preflight-1", "python3"], 60.0)

    monkeypatch.setattr(preflight, "run_preflight", timed_out)
    assert main(["preflight", "mix", "--config", config, "--timeout", "60"]) == 2
    err = capsys.readouterr().err
    assert "unreachable" not in err
    assert ("trainbot preflight: on cluster 'far', `srun --job-name=trainbot-preflight-1 "
            "python3` did not finish within 60 s") in err
    assert "waits in the queue within --timeout (60 s)" in err and "--no-toolchain" in err
