"""`trainbot submit RECIPE key=value …`: the overrides may come anywhere among the flags, as
`preflight` takes them, and each one reaches the job sbatch submits."""

from __future__ import annotations

from typing import Any

import pytest

from bot.cli import main

CONFIG = """\
clusters:
  dev: {host: 127.0.0.1, port: 1, user: u, key_file: /k, known_hosts: /kh}
recipes:
  mix:
    cluster: dev
    sbatch_script: /s.sbatch
    args: [configs/a.yaml]
    overridable: {steps: int, mem: size}
  tune:
    cluster: dev
    sbatch_script: /s.sbatch
    overridable: {lr: float}
  fixed:
    cluster: dev
    sbatch_script: /s.sbatch
  kept:
    cluster: dev
    sbatch_script: /s.sbatch
    checkpoint: {dir: /ck/kept}
  sweep:
    cluster: dev
    sbatch_script: /s.sbatch
    array: "0-2%2"
    checkpoint: {dir: /ck/sweep/task_%a}
store: {url: "sqlite:///STORE"}
"""


class _Slurm:
    """sbatch as the submit service calls it: records each job it is given."""

    def __init__(self) -> None:
        self.specs: list[Any] = []

    def submit(self, spec: Any) -> int:
        self.specs.append(spec)
        return 4242


@pytest.fixture
def submit(tmp_path, monkeypatch):
    """Runs `trainbot submit ARGV` (`--config` is `{cfg}` in ARGV) against a recorded sbatch:
    (exit code, the jobs submitted)."""
    config = tmp_path / "trainbot.yaml"
    config.write_text(CONFIG.replace("STORE", str(tmp_path / "s.db")))
    slurm = _Slurm()
    monkeypatch.setattr("bot.cluster.sessions.ClusterSessions.slurm",
                        lambda self, cluster: slurm)

    def run(*argv: str) -> tuple[int, list[Any]]:
        slurm.specs.clear()
        code = main(["submit", *(str(config) if a == "{cfg}" else a for a in argv)])
        return code, list(slurm.specs)

    return run


@pytest.mark.parametrize("argv", [
    ("--config", "{cfg}", "mix", "steps=500", "--config", "{cfg}", "mem=600G"),
    ("mix", "steps=500", "--config", "{cfg}", "mem=600G"),
    ("steps=500", "--config", "{cfg}", "mix", "mem=600G"),
    ("mix", "steps=500", "mem=600G", "--config", "{cfg}"),
])
def test_overrides_after_a_flag_reach_the_job_as_those_right_after_recipe(submit, capsys, argv):
    code, (spec,) = submit(*argv)
    assert code == 0
    assert spec.mem == "600G"  # a Slurm field: sbatch's --mem
    assert spec.args == ("configs/a.yaml", "steps=500")  # not one: an argument of the script
    assert "submitted mix as job 4242" in capsys.readouterr().out


def test_a_word_that_is_not_an_override_is_a_usage_error_naming_it(submit, capsys):
    code, specs = submit("--config", "{cfg}", "mix", "steps=500", "--config", "{cfg}", "fast")
    assert code == 2 and specs == []
    err = capsys.readouterr().err
    assert "trainbot submit: 'fast' is not an override (write KEY=VALUE, e.g. steps=8000)" in err
    assert "the recipe is 'mix'" in err
    code, specs = submit("--config", "{cfg}", "steps=500", "mem=600G")
    assert code == 2 and specs == []
    assert "no RECIPE given" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a flag it does not know is still argparse's error
        submit("mix", "--config", "{cfg}", "--bogus", "steps=5")
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_the_example_of_an_override_is_one_the_recipe_takes(submit, capsys):
    """A recipe without a `steps` key is not told to write steps=500: the example is a key of
    its own `overridable:`, and a recipe that takes no overrides gets no example."""
    code, specs = submit("tune", "--config", "{cfg}", "lr", "0.1")
    assert code == 2 and specs == []
    err = capsys.readouterr().err
    assert "'lr' is not an override (write KEY=VALUE, e.g. lr=0.5); the recipe is 'tune'" in err
    assert "steps" not in err
    code, specs = submit("fixed", "--config", "{cfg}", "fast")
    assert code == 2 and specs == []
    err = capsys.readouterr().err
    assert "'fast' is not an override (write KEY=VALUE); the recipe is 'fixed'" in err
    assert "e.g." not in err


@pytest.mark.parametrize(("recipe", "found", "start"), [
    ("kept", ("/ck/kept/iter_000000000", 0),
     "resuming from iteration 0 (`/ck/kept/iter_000000000`)"),
    ("kept", ("/ck/kept/iter_000003000", 3000),
     "resuming from iteration 3,000 (`/ck/kept/iter_000003000`)"),
    ("kept", ("/ck/kept/final", None), "resuming from checkpoint `/ck/kept/final`"),
    ("kept", None, "starting from scratch (no complete checkpoint)"),
    ("fixed", None, "starting from scratch (the recipe has no checkpoint dir)"),
])
def test_it_says_where_the_job_starts_as_the_slack_reply_does(submit, capsys, monkeypatch,
                                                              recipe, found, start):
    """The wording of bot.services.submit.describe_start, in English and in
    bot.core.policy.resume_start's words (`from iteration 3,000`): iteration 0 is an
    iteration, and a recipe without a checkpoint dir is told apart from one with none yet."""
    from bot.core.checkpoints import Checkpoint

    ckpt = Checkpoint(path=found[0], iteration=found[1], source="pointer") if found else None
    monkeypatch.setattr("bot.cluster.checkpoints.find_latest_checkpoint",
                        lambda *a, **k: ckpt)
    code, _ = submit(recipe, "--config", "{cfg}")
    assert code == 0
    assert capsys.readouterr().out == (f"submitted {recipe} as job 4242 (name {recipe}, chain 1, "
                                       f"attempt 1); {start}\n")


def test_an_array_says_its_tasks_and_where_they_start_as_the_slack_reply_does(submit, capsys):
    """A whole array: its tasks, and describe_start's phrase, the one the Slack reply and
    thread note say (each task finds its own checkpoint)."""
    code, specs = submit("sweep", "--config", "{cfg}")
    assert code == 0 and specs[0].array == "0-2%2"
    assert capsys.readouterr().out == (
        "submitted sweep as job array 4242 (tasks 0-2%2, name sweep, chain 1); each task "
        "finding its own checkpoint; `trainbot status 4242` lists the tasks\n")
