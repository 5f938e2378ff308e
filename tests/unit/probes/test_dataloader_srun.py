"""The DataLoader probe of a recipe on its cluster: the srun argv (quoting, env, deadline), the
node script run for real (a real DataLoader over the fixture Datasets, in a subprocess as srun
would start it), and what the thread is told (per-worker RSS growth, what grows)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import make_config, present

from bot.cluster.command_line import build_command
from bot.cluster.ssh import CommandResult
from bot.config import ConfigError, parse_config
from bot.core.slurm.sbatch import sbatch_argv
from bot.probes import dataloader
from bot.probes.dataloader_srun import (
    NODE_SOURCE,
    build_probe_argv,
    parse_node_output,
    probe_result,
    run_dataloader_probe,
    shown_argv,
    srun_minutes,
)
from bot.services.probes import probe_offer

PROBES = Path(__file__).resolve().parents[2] / "fixtures" / "probes"
HOSTILE = "a'; echo pwned; '$(id)`"


def _recipe(**over: Any):
    probe = {"factory": "decoder_datasets:leaky", "path": [str(PROBES)], "samples": 60,
             "python": sys.executable, "timeout_s": 120}
    config = make_config(dataloader_probe={**probe, **over.pop("probe", {})}, **over)
    recipe = config.recipe("mix")
    assert recipe.dataloader_probe is not None
    return config, recipe, recipe.dataloader_probe


def test_the_argv_is_one_srun_task_in_the_recipes_workdir_off_its_excluded_nodes():
    _, recipe, probe = _recipe(workdir="/scratch/wm/mix", env_setup="source ~/venv/bin/activate",
                               env={"TOKEN": HOSTILE}, qos="high", exclude="gpu-a07,gpu-a08")
    argv = build_probe_argv(recipe, probe, job_name="trainbot-dataloader-probe-x")
    assert argv[:6] == ["srun", "--job-name=trainbot-dataloader-probe-x", "--nodes=1",
                        "--ntasks=1", "--time=2", "--quiet"]
    # where and on what the job runs (sbatch --chdir, --exclude): a node the recipe leaves
    # out is not the one probed
    assert {"--partition=debug", "--account=root", "--qos=high",
            "--chdir=/scratch/wm/mix", "--exclude=gpu-a07,gpu-a08"} <= set(argv)
    at = argv.index("bash")
    assert argv[at:at + 2] == ["bash", "-c"] and argv[at + 2].startswith(
        "source ~/venv/bin/activate\n")
    assert argv[-7:] == [sys.executable, "-c", NODE_SOURCE, "decoder_datasets:leaky", "2",
                         "60", str(PROBES)]
    # the env's values travel as environment, never in the argv (nor in a shell string)
    assert not any(HOSTILE in word for word in argv)
    assert "<dataloader probe>" in shown_argv(argv) and NODE_SOURCE not in shown_argv(argv)
    # the SSH runner's command line quotes every word: the hostile value cannot run
    command = build_command(["echo", HOSTILE])
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == HOSTILE


@pytest.mark.parametrize(("timeout_s", "minutes"), [(1, 1), (60, 1), (61, 2), (900, 15)])
def test_srun_time_limit_covers_the_deadline(timeout_s: float, minutes: int):
    assert srun_minutes(timeout_s) == minutes


def test_a_bad_factory_is_refused_naming_the_field(tmp_path: Path):
    text = (
        "clusters: {dev: {host: h, user: u, key_file: /k}}\n"
        "recipes: {mix: {cluster: dev, sbatch_script: /s.sbatch,\n"
        "                dataloader_probe: {factory: 'not a factory'}}}\n"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(text, source=str(tmp_path / "trainbot.yaml"))
    message = str(err.value)
    assert "dataloader_probe" in message and "factory" in message
    assert "MODULE:FACTORY" in message


class _LocalSrun:
    """A runner that starts what srun would on the node: the argv after srun's options, here
    (with the environment the runner was given), within the deadline."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], float | None]] = []

    def run(self, argv, *, stdin=None, timeout=None, check=True, env=None):  # noqa: ANN001
        self.calls.append((list(argv), timeout))
        words = list(argv)[1:]
        while words and words[0].startswith("--"):
            words.pop(0)
        done = subprocess.run(words, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})}, cwd=PROBES)
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)


def test_the_node_script_measures_a_leaking_dataset_and_names_the_workers():
    _, recipe, probe = _recipe(env={"TRAINBOT_TEST_VALUE": HOSTILE})
    runner = _LocalSrun()
    view = run_dataloader_probe(runner,  # type: ignore[arg-type]  # srun only
                                "mix", recipe, probe, job_id="9001")
    assert runner.calls[0][1] == 120  # the probe's deadline bounds the remote command
    assert view["error"] is None and view["leaking"] is True and view["grows"] == "workers"
    assert len(view["workers"]) == 2
    for worker in view["workers"]:
        assert worker["rss_end_mb"] > worker["rss_start_mb"] and worker["slope_mb"] > 1.0


def test_the_node_script_on_a_bounded_dataset_says_the_workers_stay_flat():
    _, recipe, probe = _recipe(probe={"factory": "decoder_datasets:bounded"})
    view = run_dataloader_probe(_LocalSrun(),  # type: ignore[arg-type]  # srun only
                                "mix", recipe, probe, job_id="9001")
    assert view["error"] is None and view["leaking"] is False and view["grows"] == "trainer"


def test_a_factory_that_raises_is_the_result_not_a_traceback():
    _, recipe, probe = _recipe(probe={"factory": "decoder_datasets:broken"})
    view = run_dataloader_probe(_LocalSrun(),  # type: ignore[arg-type]  # srun only
                                "mix", recipe, probe, job_id="9001")
    assert view["error"] and "factory raised" in view["error"] and view["workers"] == []


def test_no_marker_line_is_srun_s_exit_and_stderr():
    assert parse_node_output("module load torch\nnothing else\n") is None
    view = probe_result(None, recipe="mix", job_id="1", exit_code=1,
                        stderr="srun: error: invalid partition specified: gpu\n")
    assert view["error"] == "srun exit 1: srun: error: invalid partition specified: gpu"


GOOD_WORKER = {"pid": 101, "samples": 80, "rss_start_mb": 1946.0, "rss_end_mb": 3550.0,
               "slope_mb": 20.0}


@pytest.mark.parametrize(("report", "field", "shown"), [
    ({"per_worker": [{"rss_start_mb": "n/a"}], "verdict": {}}, "per_worker",
     '[{"rss_start_mb": "n/a"}]'),
    ({"per_worker": 3, "verdict": {}}, "per_worker", "3"),
    ({"per_worker": ["w1"], "verdict": {}}, "per_worker", '["w1"]'),
    ({"per_worker": [{**GOOD_WORKER, "slope_mb": "20"}]}, "per_worker", None),
    ({"per_worker": [{**GOOD_WORKER, "rss_end_mb": float("inf")}]}, "per_worker", None),
    ({"per_worker": [{**GOOD_WORKER, "pid": 1.5}]}, "per_worker", None),
    ({"per_worker": [], "verdict": [1]}, "verdict", "[1]"),
    ({"per_worker": [GOOD_WORKER], "verdict": {"conclusive": True, "leaking": True}},
     "verdict", '{"conclusive": true, "leaking": true}'),
    ({"per_worker": [GOOD_WORKER], "verdict": {"conclusive": True,
                                               "slope_mb_per_sample": "big"}}, "verdict", None),
])
def test_a_report_not_of_the_node_scripts_shape_is_an_error_not_a_crash(report, field, shown):
    """A node report whose fields are not what the node script writes (a word where a number
    is, a list where the verdict is, a conclusive verdict without its slope, which the
    template formats as a number) is the view's `error` naming the field, never a
    ValueError / TypeError / AttributeError out of the probes job."""
    import json

    from bot.core.text import render_text

    node = parse_node_output(f"{dataloader.MARKER}{json.dumps(report)}\n")
    view = probe_result(node, recipe="mix", job_id="1", exit_code=0)
    said = render_text(view["error"])
    assert said.startswith(f"the node's report is not what the probe writes: its `{field}` is ")
    assert shown is None or said.endswith(f" is {shown}"), said
    assert view["workers"] == [] and view["grows"] is None


def test_a_report_of_the_node_scripts_shape_is_read_as_it_was():
    node = {"host": "n1", "factory": "f:g", "per_worker": [GOOD_WORKER, {"pid": 102}],
            "verdict": {"leaking": False, "conclusive": True, "slope_mb_per_sample": 0.01}}
    view = probe_result(node, recipe="mix", job_id="1", exit_code=0)
    assert view["error"] is None and view["grows"] == "trainer" and view["slope_mb"] == 0.01
    assert view["workers"] == [
        {"pid": 101, "samples": 80, "rss_start_mb": 1946, "rss_end_mb": 3550, "slope_mb": 20.0},
        {"pid": 102, "samples": None, "rss_start_mb": 0, "rss_end_mb": 0, "slope_mb": None}]


def test_proc_fallback_reads_the_same_memory_as_psutil():
    import psutil

    uss, rss = present(dataloader.proc_memory(os.getpid()))
    full = psutil.Process().memory_full_info()
    assert abs(rss - full.rss) < 64 * 1024**2 and abs(uss - full.uss) < 64 * 1024**2
    assert dataloader.proc_memory(2**22 + 12345) is None  # no such process


def test_the_offer_without_a_factory_is_the_command_with_the_recipes_values():
    config = make_config(workdir="/scratch/wm/mix", env_setup="source ~/venv/bin/activate")
    offer = probe_offer(config, "mix")
    assert offer["button"] is False and offer["field"] == "dataloader_probe.factory"
    assert offer["command"] == (
        "cd /scratch/wm/mix && source ~/venv/bin/activate && srun --nodes=1 --ntasks=1 "
        "--partition=debug --account=root trainbot probe dataloader MODULE:FACTORY "
        "--workers 2 --samples 160")
    with_factory, *_ = _recipe()
    offer = probe_offer(with_factory, "mix")
    assert offer["button"] is True and "decoder_datasets:leaky" in offer["command"]
    assert probe_offer(None, "offline")["command"] == (
        "trainbot probe dataloader MODULE:FACTORY --workers 2 --samples 160")


def test_the_offered_command_runs_where_the_recipes_job_runs():
    """The command run by hand gets the placement the recipe's sbatch gets (partition,
    account, qos, left-out nodes), each word quoted: pasted, it probes where the job ran."""
    config = make_config(workdir="/scratch/wm/mix", partition="gpu a100", account="ml-team",
                         qos="high", exclude="gpu[01-03],gpu07")
    recipe = config.recipe("mix")
    placement = recipe.placement_flags()
    submitted = set(sbatch_argv(recipe.submit_spec(job_name="mix", env={})))
    assert placement == ["--partition=gpu a100", "--account=ml-team", "--qos=high",
                         "--exclude=gpu[01-03],gpu07"] and set(placement) <= submitted
    command = probe_offer(config, "mix")["command"]
    assert ("srun --nodes=1 --ntasks=1 '--partition=gpu a100' --account=ml-team --qos=high "
            "'--exclude=gpu[01-03],gpu07' trainbot probe dataloader") in command
    assert _ran_by_bash(command)[-1].startswith(
        "srun --nodes=1 --ntasks=1 --partition=gpu a100 --account=ml-team --qos=high "
        "--exclude=gpu[01-03],gpu07 trainbot ")
    # the probe's own srun lands there too
    _, with_probe, probe = _recipe(partition="gpu a100", account="ml-team", qos="high",
                                   exclude="gpu[01-03],gpu07")
    assert set(placement) <= set(build_probe_argv(with_probe, probe))


def _ran_by_bash(command: str) -> list[str]:
    """The commands a person's shell runs when `command` is pasted (each stubbed to print it)."""
    stubs = "".join(f'{name}() {{ echo "{name} $*"; }}; '
                    for name in ("cd", "module", "source", "srun", "conda"))
    done = subprocess.run(["bash", "-c", stubs + command], capture_output=True, text=True,
                          check=True)
    return done.stdout.splitlines()


def test_the_offered_command_runs_each_line_of_a_multi_line_env_setup():
    config = make_config(workdir="/home/u/wm", env_setup=(
        "module load cuda\n"
        "# the venv\n"
        "if [ -d /venv ] || true; then\n"
        "  source /venv/bin/activate\n"
        "fi\n"
        "conda activate \\\n"
        "  wm\n"))
    command = probe_offer(config, "mix")["command"]
    assert command.startswith(
        "cd /home/u/wm && module load cuda && if [ -d /venv ] || true; then "
        "source /venv/bin/activate; fi && conda activate wm && srun ")
    assert _ran_by_bash(command) == [
        "cd /home/u/wm", "module load cuda", "source /venv/bin/activate", "conda activate wm",
        "srun --nodes=1 --ntasks=1 --partition=debug --account=root trainbot probe dataloader "
        "MODULE:FACTORY --workers 2 --samples 160"]
