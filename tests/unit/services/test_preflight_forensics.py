"""Preflight's forensics section: py-spy tried on a node (uid, ptrace_scope) with the fix when
it cannot attach, and a multi-GPU recipe that could leave NCCL flight-recorder dumps and does
not."""

from __future__ import annotations

from fakes import make_config

from bot.probes.toolchain import ptrace_checks, run_toolchain_probe
from bot.services.preflight import flight_recorder_check
from bot.services.resume_point import submit_env


def node(**ptrace: object) -> dict:
    return {"host": "gpu-a07", "ptrace": {"uid": 1001, "ptrace_scope": 1, "pyspy": "/p/py-spy",
                                          "attach": False, "error": None, **ptrace}}


def test_py_spy_that_attached_passes() -> None:
    [f] = ptrace_checks(node(attach=True, ptrace_scope=0))
    assert f.level == "pass" and "kernel.yama.ptrace_scope=0" in f.message


def test_ptrace_scope_1_refusing_py_spy_says_how_to_fix_it() -> None:
    [f] = ptrace_checks(node(error="Permission Denied: Try running again with elevated "
                                   "permissions"))
    assert f.level == "warn"
    assert "cannot read a Python process on gpu-a07 as uid 1001 (kernel.yama.ptrace_scope=1)" \
        in f.message
    assert "kernel.yama.ptrace_scope = 0" in f.fix and "cap_sys_ptrace" in f.fix
    [f3] = ptrace_checks(node(ptrace_scope=3, error="EPERM"))
    assert "until the node reboots" in f3.fix


def test_no_ptrace_facts_no_finding() -> None:
    assert ptrace_checks({"host": "x"}) == []


def test_the_probe_carries_py_spys_path_to_the_node_in_its_environment() -> None:
    class Runner:
        def run(self, argv, **kw):  # noqa: ANN001, ANN003, ANN201
            self.argv, self.env = argv, kw.get("env")
            raise RuntimeError("stop here")

    runner = Runner()
    try:
        run_toolchain_probe(runner, "debug", pyspy="/home/u/.cache/trainbot/py-spy")  # type: ignore[arg-type]
    except RuntimeError:
        pass
    assert runner.env == {"TRAINBOT_PROBE_ENV_TRAINBOT_PROBE_PYSPY":
                          "/home/u/.cache/trainbot/py-spy"}
    assert "/home/u/.cache/trainbot/py-spy" not in " ".join(runner.argv)
    assert runner.argv[0] == "srun"


def test_a_multi_gpu_recipe_without_the_flight_recorder_is_warned() -> None:
    recipe = make_config(gres="gpu:4").recipes["mix"]
    f = flight_recorder_check(recipe)
    assert f.level == "warn" and "could record its NCCL collectives (4 GPUs) and does not" \
        in f.message
    assert "nccl_flight_recorder" in f.fix


def test_a_recipe_that_opted_in_passes_and_its_jobs_get_the_variables() -> None:
    recipe = make_config(gres="gpu:4", nccl_flight_recorder="/shared/fr").recipes["mix"]
    assert flight_recorder_check(recipe).level == "pass"
    env = submit_env("mix", recipe, None)
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert env["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] == "/shared/fr/nccl_trace_rank_"
    assert env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000"
    own = make_config(gres="gpu:4", nccl_flight_recorder="/shared/fr",
                      env={"TORCH_NCCL_TRACE_BUFFER_SIZE": "20000"}).recipes["mix"]
    assert submit_env("mix", own, None)["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "20000"


def test_one_gpu_needs_no_flight_recorder() -> None:
    assert flight_recorder_check(make_config(gres="gpu:1").recipes["mix"]).level == "pass"


def test_the_toolchain_probe_runs_in_the_recipes_workdir_off_its_excluded_nodes(
        monkeypatch) -> None:
    """As the job does (sbatch --chdir, --exclude): a relative env_setup is the workdir's,
    and a node the recipe leaves out is not the one probed."""
    import pytest

    from bot.probes import toolchain
    from bot.services import preflight

    seen: dict = {}

    def probe(runner, partition, **kw):  # noqa: ANN001, ANN003, ANN202
        seen.update(kw)
        raise RuntimeError("stop here")

    monkeypatch.setattr(toolchain, "run_toolchain_probe", probe)
    monkeypatch.setattr(preflight, "lint_section", lambda *a, **k: ([], None))
    monkeypatch.setattr(preflight, "_pyspy_on_cluster", lambda *a: (None, []))
    config = make_config(workdir="/scratch/p", exclude="gpu-a07,gpu-a08",
                         env_setup="source .venv/bin/activate")
    with pytest.raises(RuntimeError, match="stop here"):
        preflight.run_preflight(config, "mix", object())  # type: ignore[arg-type]
    assert "--chdir=/scratch/p" in seen["srun_args"]
    assert "--exclude=gpu-a07,gpu-a08" in seen["srun_args"]
    assert seen["env_setup"] == "source .venv/bin/activate"


def test_the_toolchain_probe_is_placed_by_the_recipes_placement_flags(monkeypatch) -> None:
    """The preflight's srun gets the placement the job's sbatch gets, as one function
    (RecipeConfig.placement_flags) builds it for the DataLoader probe: partition, account,
    qos and left-out nodes, in that order, the partition once."""
    from fakes import FakeRunner

    from bot.services import preflight

    runner = FakeRunner({"srun": (1, "", "srun: error: stop here")})
    monkeypatch.setattr(preflight, "lint_section", lambda *a, **k: ([], None))
    monkeypatch.setattr(preflight, "_pyspy_on_cluster", lambda *a: (None, []))
    config = make_config(workdir="/scratch/p", partition="gpu a100", account="ml-team",
                         qos="high", exclude="gpu-a07,gpu-a08")
    preflight.run_preflight(config, "mix", runner)
    [call] = [c for c in runner.calls if c.argv[0] == "srun"]
    placement = config.recipe("mix").placement_flags()
    assert len(placement) == 4
    assert any(call.argv[i:i + 4] == placement for i in range(len(call.argv)))
    assert sum(a.startswith("--partition") for a in call.argv) == 1
