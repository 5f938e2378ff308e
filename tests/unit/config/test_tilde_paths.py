"""A recipe's paths that reach sbatch or srun as they are written, quoted, never through a
shell: `~` is not expanded there, so `~/logs/%x.out` is a directory literally named `~` under
the job's working directory (slurmstepd cannot open the log, the watcher never finds it), and
a probe's `~/venv/bin/python` or `~/src` import path are no such files. They are refused at
load, as sbatch_script and workdir are, naming the field and the fix."""

from __future__ import annotations

import pytest
from test_config import MINIMAL, error_of

from bot.core.slurm.sbatch import SubmitSpec


def test_a_log_path_with_a_tilde_is_refused_at_load(tmp_path):
    message = error_of(tmp_path, MINIMAL.replace(
        "    partition: gpu\n", "    partition: gpu\n    log_path: ~/logs/%x-%j.out\n"))
    assert ("recipes.mix.log_path (line 11): log_path '~/logs/%x-%j.out' starts with '~', "
            "which sbatch does not expand (its --output and --error, or SBATCH_OUTPUT and "
            "SBATCH_ERROR): give the absolute path (/home/<user>/...) or a path relative to "
            "the recipe's workdir") in message


@pytest.mark.parametrize(("line", "field", "value"), [
    ("python: ~/venv/bin/python", "python", "~/venv/bin/python"),
    ("path: [/opt/x, ~/src]", "path", "~/src"),
])
def test_a_dataloader_probe_path_with_a_tilde_is_refused_at_load(tmp_path, line, field, value):
    message = error_of(tmp_path, MINIMAL.replace(
        "    partition: gpu\n",
        f"    partition: gpu\n    dataloader_probe:\n      factory: d:build\n      {line}\n"))
    assert f"recipes.mix.dataloader_probe.{field} (line " in message
    assert (f"{value!r} starts with '~', which srun does not expand: give the absolute path "
            "(/home/<user>/...)") in message


def test_a_submit_spec_refuses_a_tilde_log_path():
    with pytest.raises(ValueError, match="starts with '~', which sbatch does not expand"):
        SubmitSpec(job_name="j", script_path="/s.sbatch", output="~/x.out")
    with pytest.raises(ValueError, match="starts with '~', which sbatch does not expand"):
        SubmitSpec(job_name="j", script_path="/s.sbatch", error="~/x.err")


def test_paths_without_a_leading_tilde_still_load(tmp_path):
    from test_config import write

    from bot.config import load_config

    config = load_config(write(tmp_path, MINIMAL.replace(
        "    partition: gpu\n",
        "    partition: gpu\n    log_path: logs/a~b-%j.out\n    dataloader_probe:\n"
        "      factory: d:build\n      python: /home/alice/venv/bin/python\n"
        "      path: [src]\n")), env={})
    recipe = config.recipe("mix")
    assert recipe.log_path == "logs/a~b-%j.out"
    assert recipe.dataloader_probe is not None and recipe.dataloader_probe.path == ["src"]


@pytest.mark.parametrize(("lines", "location", "text"), [
    ("    sampler_path: ~/logs/%x-%j.rss.jsonl\n", "recipes.mix.sampler_path (line 11)",
     "sampler_path '~/logs/%x-%j.rss.jsonl' starts with '~', which SFTP (the watcher's read of "
     "the samples) does not expand: give the absolute path (/home/<user>/...)"),
    ("    nccl_flight_recorder: ~/nccl-trace\n", "recipes.mix.nccl_flight_recorder (line 11)",
     "nccl_flight_recorder '~/nccl-trace' starts with '~', which PyTorch "
     "(TORCH_NCCL_DEBUG_INFO_TEMP_FILE) or SFTP (trainbot's read of the dumps) does not expand: "
     "give the absolute path (/home/<user>/...)"),
])
def test_a_cluster_read_path_with_a_tilde_is_refused_at_load(tmp_path, lines, location, text):
    """sampler_path and nccl_flight_recorder are read over the login node's SFTP (and handed
    to the job in its environment), never through a shell."""
    message = error_of(tmp_path, MINIMAL.replace("    partition: gpu\n",
                                                 "    partition: gpu\n" + lines))
    assert f"{location}: {text}" in message


def test_cluster_read_paths_without_a_leading_tilde_still_load(tmp_path):
    from test_config import write

    from bot.config import load_config

    config = load_config(write(tmp_path, MINIMAL.replace(
        "    partition: gpu\n",
        "    partition: gpu\n    sampler_path: logs/%x-%j.rss\n"
        "    nccl_flight_recorder: /home/alice/nccl~trace\n"
        "    checkpoint:\n      dir: /ckpt/mix\n")), env={})
    recipe = config.recipe("mix")
    assert recipe.sampler_path == "logs/%x-%j.rss"
    assert recipe.nccl_flight_recorder == "/home/alice/nccl~trace"
    assert recipe.checkpoint is not None and recipe.checkpoint.dir == "/ckpt/mix"



@pytest.mark.parametrize("spelled", ["~/ckpt/mix", "ckpt/mix"])
def test_a_home_relative_checkpoint_dir_loads_and_the_job_resumes_from_its_absolute_path(
        tmp_path, spelled):
    """checkpoint.dir is never used as written: the lookup resolves `~/...` (and a relative
    dir) under the SFTP home, and the job's TRAINBOT_RESUME_FROM is the found checkpoint's
    absolute path, so `~/ckpt` is the home's ckpt and loads."""
    from fakes import LocalTreeSFTP
    from test_config import write

    from bot.config import load_config
    from bot.services.resume_point import RESUME_ENV, find_resume_checkpoint, submit_env

    home = tmp_path / "home"  # the SFTP home is this tree's /
    (home / "ckpt" / "mix" / "iter_0000010").mkdir(parents=True)
    (home / "ckpt" / "mix" / "iter_0000010" / "model.pt").write_bytes(b"w")
    config = load_config(write(tmp_path, MINIMAL.replace(
        "    partition: gpu\n",
        f"    partition: gpu\n    checkpoint:\n      dir: {spelled}\n"
        "      complete_rule: any\n")), env={})
    recipe = config.recipe("mix")
    assert recipe.checkpoint is not None and recipe.checkpoint.dir == spelled
    found = find_resume_checkpoint(recipe, LocalTreeSFTP(home))
    assert found is not None
    assert submit_env("mix", recipe, found)[RESUME_ENV] == "/ckpt/mix/iter_0000010"


def test_a_cluster_py_spy_with_a_tilde_is_refused_at_load(tmp_path):
    """The stacks script on each node runs the cluster's py_spy as written (srun, no shell):
    `~/bin/py-spy` is no such file there, and every collection would say py-spy is absent."""
    message = error_of(tmp_path, MINIMAL.replace(
        "    key_file: ~/.ssh/id_ed25519\n",
        "    key_file: ~/.ssh/id_ed25519\n    py_spy: ~/bin/py-spy\n"))
    assert ("clusters.gpu.py_spy (line 6): py_spy '~/bin/py-spy' starts with '~', which the "
            "nodes' stacks script (run by srun, without a shell) does not expand: give the "
            "absolute path (/home/<user>/...)") in message


def test_a_cluster_py_spy_without_a_leading_tilde_still_loads(tmp_path):
    from test_config import write

    from bot.config import load_config

    config = load_config(write(tmp_path, MINIMAL.replace(
        "    key_file: ~/.ssh/id_ed25519\n",
        "    key_file: ~/.ssh/id_ed25519\n    py_spy: /opt/py~spy/bin/py-spy\n")), env={})
    assert config.clusters["gpu"].py_spy == "/opt/py~spy/bin/py-spy"
