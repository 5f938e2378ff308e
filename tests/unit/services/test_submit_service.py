"""Submit service: override validation and what a submit records (Slurm and SFTP faked)."""

from __future__ import annotations

from typing import cast

import pytest
from fakes import FakeRunner, FakeSlurm

from bot.cluster.errors import ChannelClosed, CommandTimedOut, OutcomeUnknown
from bot.config import SLURM_OVERRIDE_FIELDS, RecipeConfig, parse_config
from bot.core.slurm.sbatch import (
    RECIPE_OVERRIDABLE_OPTIONS,
    SBATCH_INPUT_ENV,
    SubmitSpec,
    sbatch_argv,
)
from bot.services.overrides import OverrideError, apply_overrides, parse_overrides
from bot.services.ports import SFTP, Slurm
from bot.services.resume_point import RESUME_ENV

# submit_recipe's SFTP where the test has none: a recipe without checkpoints opens none
# (NO_SFTP); the faked checkpoint lookup (`lookups`) only passes it on (LOOKUP_SFTP)
NO_SFTP = cast(SFTP, None)
LOOKUP_SFTP = cast(SFTP, "SFTP")

CONFIG = """\
clusters:
  dev: {host: 127.0.0.1, user: u, key_file: /k}
recipes:
  mix:
    cluster: dev
    sbatch_script: /home/u/train.sbatch
    args: [--config, mix.yaml]
    mem: 400G
    time: "04:00:00"
    overridable: {mem: size, time: str, target_iter: int, lr: float, compile: bool, tag: str,
                  seed: int, total_tokens: int}
  fixed:
    cluster: dev
    sbatch_script: /home/u/fixed.sbatch
"""


@pytest.fixture
def config():
    return parse_config(CONFIG, source="test.yaml", env={})


def test_overrides_are_typed(config):
    recipe = config.recipe("mix")
    got = parse_overrides(
        "mix", recipe, ["mem=950G", "target_iter=8000", "lr=3e-4", "compile=no", "tag=a b"]
    )
    assert got == {"mem": "950G", "target_iter": 8000, "lr": 3e-4, "compile": False, "tag": "a b"}


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("memory=950G", "does not allow overriding 'memory' — did you mean 'mem'?"),
        ("partition=gpu", "allowed: compile (bool), lr (float), mem (size)"),
        ("mem=lots", "not a memory size"),
        ("target_iter=8k", "target_iter must be a whole number"),
        ("target_iter=1_000", "target_iter must be a whole number, e.g."),  # int() takes them
        ("target_iter= 5", "target_iter must be a whole number, e.g."),
        ("target_iter=\u0665", "target_iter must be a whole number, e.g."),  # Arabic-Indic 5
        ("target_iter=3000000000",  # past the store's integer: sbatch ran, then the insert failed
         "target_iter must be a whole number from 1 to 2147483647"),
        ("lr=fast", "lr must be a number"),
        ("lr=nan", "finite"),
        ("compile=maybe", "compile must be true or false"),
        ("tag=", "override 'tag' has no value; write tag=VALUE"),
        ("lr=", "override 'lr' has no value; write lr=VALUE"),  # not "must be a number"
        ("tag=a\nb", "control character"),
        ("mem", "is not an override; use key=value"),
        ("=5", "is not an override"),
    ],
)
def test_bad_overrides_say_what_is_wrong(config, override, expected):
    with pytest.raises(OverrideError) as info:
        parse_overrides("mix", config.recipe("mix"), [override])
    assert expected in str(info.value)


@pytest.mark.parametrize("item", ["seed=4294967295", "total_tokens=10000000000"])
def test_a_script_argument_int_override_is_not_bounded_by_the_stores_integer(config, item):
    """Only target_iter is stored; other int overrides reach the script as `key=value`:
    `total_tokens=10000000000` (a 10B-token budget) or a 32-bit unsigned seed are taken."""
    recipe = config.recipe("mix")
    key, _, value = item.partition("=")
    typed = parse_overrides("mix", recipe, [item])
    assert typed == {key: int(value)}
    assert apply_overrides(recipe, typed).args[-1] == item


def test_a_plus_signed_int_override_is_taken(config):
    """int() takes `+5`, and a float override takes it too."""
    assert parse_overrides("mix", config.recipe("mix"), ["seed=+5", "lr=+5"]) == \
        {"seed": 5, "lr": 5.0}


def test_override_given_twice(config):
    with pytest.raises(OverrideError, match="given twice"):
        parse_overrides("mix", config.recipe("mix"), ["lr=1", "lr=2"])


def test_recipe_without_overridable_refuses_any_override(config):
    with pytest.raises(OverrideError, match="allows no overrides"):
        parse_overrides("fixed", config.recipe("fixed"), ["mem=1G"])


def test_hostile_values_stay_literal_strings(config):
    hostile = "a'; touch /tmp/pwned #"
    got = parse_overrides("mix", config.recipe("mix"), [f"tag={hostile}", "lr=1"])
    recipe = apply_overrides(config.recipe("mix"), got)
    assert recipe.args == ["--config", "mix.yaml", f"tag={hostile}", "lr=1.0"]


def test_string_values_arrive_exactly_as_typed(config):
    """Spaces around a string value are the user's: kept, not trimmed (validate, don't alter)."""
    recipe = config.recipe("mix")
    got = parse_overrides("mix", recipe, ["tag=  padded value ", "time= 04:00:00"])
    assert got == {"tag": "  padded value ", "time": " 04:00:00"}
    assert apply_overrides(recipe, {"tag": got["tag"]}).args[-1] == "tag=  padded value "
    with pytest.raises(OverrideError, match="not a Slurm time limit"):  # refused, not fixed
        apply_overrides(recipe, {"time": got["time"]})
    got = parse_overrides("mix", recipe, {"tag": " x"})  # the approvals path (a mapping)
    assert got == {"tag": " x"}
    with pytest.raises(OverrideError, match="tag needs a value"):
        parse_overrides("mix", recipe, ["tag=   "])
    with pytest.raises(OverrideError, match="mem: write the size without spaces, e.g. mem=400G"):
        parse_overrides("mix", recipe, ["mem= 950G"])
    with pytest.raises(OverrideError, match="without spaces"):
        parse_overrides("mix", recipe, ["mem=950 G"])


def test_apply_overrides_replaces_slurm_fields_and_revalidates(config):
    recipe = config.recipe("mix")
    new = apply_overrides(recipe, {"mem": "950G", "target_iter": 10, "compile": True})
    assert (new.mem, new.target_iter, new.args[-1]) == ("950G", 10, "compile=true")
    assert recipe.mem == "400G"  # the configured recipe is untouched
    with pytest.raises(OverrideError, match="time.*not a Slurm time limit"):
        apply_overrides(recipe, {"time": "2 days"})


def test_recipe_and_its_overrides_produce_the_submit_spec(config):
    # the sbatch options a recipe sets by name are recipe fields, replaced by an override
    for name, kind in RECIPE_OVERRIDABLE_OPTIONS.items():
        assert name in RecipeConfig.model_fields and SLURM_OVERRIDE_FIELDS[name] == kind
    recipe = apply_overrides(config.recipe("mix"), {"mem": "950G", "lr": 0.5})
    assert recipe.submit_spec(job_name="wm-mix", env={"A": "1"}) == SubmitSpec(
        job_name="wm-mix", script_path="/home/u/train.sbatch",
        args=("--config", "mix.yaml", "lr=0.5"), mem="950G", time="04:00:00", env={"A": "1"})


def test_the_jobs_stderr_goes_to_the_log_trainbot_watches_whatever_the_script_names(config):
    # `#SBATCH --error=…` in the script yields to the command line's --error: same file as
    # --output, so a traceback or slurmstepd's CANCELLED line is in the watched log
    recipe = config.recipe("mix").model_copy(update={"log_path": "/logs/run's %x-%j.log"})
    argv = sbatch_argv(recipe.submit_spec(job_name="wm-mix", env={}))
    assert argv.count("--output=/logs/run's %x-%j.log") == 1
    assert argv.count("--error=/logs/run's %x-%j.log") == 1
    assert argv.index("--error=/logs/run's %x-%j.log") < argv.index("/home/u/train.sbatch")
    unlogged = sbatch_argv(config.recipe("mix").submit_spec(job_name="wm-mix", env={}))
    assert not [a for a in unlogged if a.startswith(("--output", "--error"))]


def test_resume_env_name_is_stable():
    assert RESUME_ENV == "TRAINBOT_RESUME_FROM"


# --------------------------------------------------------------------------------------------
# submit_recipe with Slurm and the checkpoint lookup faked


def fake_slurm(submit_error: Exception | None = None) -> FakeSlurm:
    """Job ids from 4001; a site wrapper's output names job 777."""
    wrapper = FakeRunner(default=(0, "site says: Submitted batch job 777\n", ""))
    return FakeSlurm(first_id=4001, submit_error=submit_error, runner=wrapper)


CKPT_CONFIG = CONFIG.replace(
    "    overridable:",
    "    job_name: wm-mix\n    log_path: /logs/%x-%j.out\n"
    "    env: {OMP_NUM_THREADS: '8'}\n"
    "    checkpoint: {dir: /ck/mix, glob: [iter_*, step_*], complete_rule: 'marker:DONE'}\n"
    "    overridable:",
) + (
    "  wrapped:\n    cluster: dev\n    submit_command: [/opt/site/submit, --team, a]\n"
    "    args: [x]\n"
)


@pytest.fixture
def ck_config():
    return parse_config(CKPT_CONFIG, source="test.yaml", env={})


@pytest.fixture
def lookups(monkeypatch):
    import bot.cluster.checkpoints as ck
    from bot.core.checkpoints import Checkpoint

    calls = []

    def fake_find(sftp, root, rule="dcp", *, pointer_name=None, globs=(), at_most=None):
        calls.append((sftp, root, rule, pointer_name, tuple(globs)))
        return Checkpoint(path=f"{root}/iter_000001000", iteration=1000, source="pointer")

    monkeypatch.setattr(ck, "find_latest_checkpoint", fake_find)
    return calls


def test_submit_passes_resume_point_and_records_chain_attempt_audit(ck_config, store, lookups):
    from bot.services.submit import submit_recipe

    slurm = fake_slurm()
    result = submit_recipe(
        ck_config, "mix", overrides=["mem=950G", "lr=0.5"], slurm=slurm, sftp=LOOKUP_SFTP,
        store=store, now=100.0, actor="U1",
    )  # fmt: skip
    assert lookups == [("SFTP", "/ck/mix", "marker:DONE", "latest_checkpoint.txt",
                        ("iter_*", "step_*"))]  # fmt: skip
    call = slurm.submits()[0]
    assert call.script_path == "/home/u/train.sbatch"
    assert call.args == ("--config", "mix.yaml", "lr=0.5")
    assert (call.mem, call.time, call.job_name) == ("950G", "04:00:00", "wm-mix")
    assert call.output == "/logs/%x-%j.out"
    assert call.env == {
        "OMP_NUM_THREADS": "8",
        "TRAINBOT_RECIPE": "mix",
        "TRAINBOT_RESUME_FROM": "/ck/mix/iter_000001000",
        "TRAINBOT_RESUME_ITER": "1000",
    }
    assert result.checkpoint is not None
    assert (result.job_id, result.attempt_no, result.checkpoint.iteration) == ("4001", 1, 1000)
    chain = store.chains.get(result.chain_id)
    assert (chain.recipe, chain.cluster, chain.job_name) == ("mix", "dev", "wm-mix")
    attempt = store.attempts.get_by_job("4001")
    assert (attempt.start_iter, attempt.checkpoint_path) == (1000, "/ck/mix/iter_000001000")
    assert attempt.submit_mem == "950G"  # the recipe's 400G as the override replaced it
    assert [w.job_id for w in store.watched_jobs.list("dev")] == ["4001"]
    entry = store.audit.recent()[0]
    assert (entry.actor, entry.action, entry.job_id, entry.result) == ("U1", "submit", "4001", "ok")

    again = submit_recipe(ck_config, "mix", slurm=slurm, sftp=LOOKUP_SFTP, store=store, now=200.0,
                          actor="U1", chain_id=result.chain_id)  # fmt: skip
    assert (again.chain_id, again.attempt_no) == (result.chain_id, 2)
    assert store.attempts.get_by_job(again.job_id).submit_mem == "400G"  # the recipe's
    plain = submit_recipe(ck_config, "wrapped", slurm=slurm, sftp=NO_SFTP, store=store,
                          now=300.0, actor="U1")
    assert store.attempts.get_by_job(plain.job_id).submit_mem == ""  # sent no --mem


def test_refused_override_is_audited_and_nothing_submitted(ck_config, store, lookups):
    from bot.services.submit import submit_recipe

    slurm = fake_slurm()
    with pytest.raises(OverrideError):
        submit_recipe(ck_config, "mix", overrides=["partition=big"], slurm=slurm, sftp=NO_SFTP,
                      store=store, now=1.0, actor="U2")  # fmt: skip
    assert slurm.calls == [] and lookups == []
    assert store.chains.latest_for_recipe("mix") is None
    assert store.audit.recent()[0].result == "refused"


def test_failed_sbatch_is_audited_and_records_no_chain(ck_config, store, lookups):
    from bot.cluster.errors import CommandFailed
    from bot.services.submit import submit_recipe

    slurm = fake_slurm(CommandFailed(["sbatch"], 1, "sbatch: error: invalid partition"))
    with pytest.raises(CommandFailed):
        submit_recipe(ck_config, "mix", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0, actor="U")
    assert store.chains.latest_for_recipe("mix") is None
    entry = store.audit.recent()[0]
    assert entry.result == "failed" and "invalid partition" in entry.detail


def test_unknown_recipe_is_a_usage_problem(ck_config, store):
    from bot.services import UsageProblem
    from bot.services.submit import submit_recipe

    with pytest.raises(UsageProblem, match="did you mean 'mix'"):
        submit_recipe(ck_config, "mixx", slurm=cast(Slurm, None), sftp=NO_SFTP, store=store,
                      now=1, actor="U")


def test_site_wrapper_gets_argv_and_env_and_its_job_id_is_read(ck_config, store):
    from bot.services.submit import submit_recipe

    slurm = fake_slurm()
    result = submit_recipe(ck_config, "wrapped", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0,
                           actor="U")  # fmt: skip
    argv, env = slurm.runner.calls[0].argv, slurm.runner.calls[0].env
    assert argv == ["/opt/site/submit", "--team", "a", "x"]
    assert env["TRAINBOT_JOB_NAME"] == "wrapped" and "TRAINBOT_RESUME_FROM" not in env
    assert result.job_id == "777" and slurm.calls == []


@pytest.mark.parametrize("lost", [
    CommandTimedOut(["/opt/site/submit", "--team", "a", "x"], 30.0),
    ChannelClosed(["/opt/site/submit", "--team", "a", "x"], "login1", connection_lost=True)])
def test_a_site_wrapper_whose_end_was_not_seen_is_an_outcome_unknown_naming_the_job(
        ck_config, store, lost):
    """A site wrapper that outlived its timeout, or whose channel closed first, may have
    queued the job, as sbatch may: an OutcomeUnknown saying to look for the job's name in
    squeue before submitting again (a timeout was a bare CommandTimedOut); no attempt is
    recorded."""
    from bot.services.submit import submit_recipe

    slurm = FakeSlurm(runner=FakeRunner(default=lost))
    with pytest.raises(OutcomeUnknown) as caught:
        submit_recipe(ck_config, "wrapped", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0,
                      actor="U")
    assert type(caught.value) is type(lost) or isinstance(lost, CommandTimedOut)
    assert caught.value.argv == ["/opt/site/submit", "--team", "a", "x"]
    assert str(caught.value).endswith(
        "The job 'wrapped' may or may not have been submitted: look for that name in squeue "
        "before submitting again.")
    assert store.attempts.for_chain(1) == []


# --------------------------------------------------------------------------------------------
# a site submit wrapper's Slurm options: passed as sbatch's input variables, then checked

WRAPPER_CONFIG = """\
clusters:
  dev: {host: 127.0.0.1, user: u, key_file: /k}
recipes:
  wrap:
    cluster: dev
    submit_command: [/opt/site/submit, --team, a]
    partition: gpu
    account: robots
    mem: 950G
    overridable: {partition: str, account: str, qos: str, gres: str, mem: size, time: str,
                  lr: float}
"""


@pytest.fixture
def wrap_config():
    return parse_config(WRAPPER_CONFIG, source="test.yaml", env={})


def wrapped_job(slurm: FakeSlurm, **fields) -> None:
    """What Slurm shows of the wrapper's job 777."""
    slurm.add(777, **{"name": "wrap", "partition": "gpu", "account": "robots",
                      "mem_limit_bytes": 950 * 1024**3, "time_limit_s": 86400.0, **fields})


def test_every_overridable_sbatch_option_reaches_a_wrapper_as_an_input_variable():
    assert set(SBATCH_INPUT_ENV) == {*RECIPE_OVERRIDABLE_OPTIONS, "array", "output", "error"}
    assert all(v.startswith("SBATCH_") for v in SBATCH_INPUT_ENV.values())


def test_a_wrapper_gets_the_recipes_slurm_options_with_the_overrides(wrap_config, store):
    from bot.services.submit import submit_recipe

    slurm = fake_slurm()
    wrapped_job(slurm, partition="debug", mem_limit_bytes=400 * 1024**3, time_limit_s=5400.0,
                qos="high")
    result = submit_recipe(
        wrap_config, "wrap", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0, actor="U",
        overrides=["partition=debug", "mem=400G", "time=90", "qos=high", "gres=gpu:2",
                   "lr=0.5"],
    )  # fmt: skip
    call = slurm.runner.calls[0]
    assert call.argv == ["/opt/site/submit", "--team", "a", "lr=0.5"]
    assert {k: v for k, v in call.env.items() if k.startswith("SBATCH_")} == {
        "SBATCH_PARTITION": "debug", "SBATCH_ACCOUNT": "robots", "SBATCH_QOS": "high",
        "SBATCH_GRES": "gpu:2", "SBATCH_MEM_PER_NODE": "400G", "SBATCH_TIMELIMIT": "90"}
    assert result.not_applied == ()
    assert result.overrides == {"partition": "debug", "mem": "400G", "time": "90",
                                "qos": "high", "gres": "gpu:2", "lr": 0.5}
    assert slurm.acted("job") == [777]  # the job was asked what it got


def test_a_wrapper_gets_the_log_path_for_stdout_and_stderr(wrap_config, store):
    """A wrapper recipe's log_path reaches the sbatch it runs as SBATCH_OUTPUT and
    SBATCH_ERROR (sbatch's input variables outrank the script's `#SBATCH --error=…`), as an
    sbatch_script recipe's reaches sbatch as --output and --error: its stderr (a traceback,
    slurmstepd's CANCELLED line) lands in the log trainbot watches. Before, a wrapper got
    neither, and a script's own --error kept the traceback out of the watched log."""
    from bot.services.submit import submit_recipe

    log_path = "/logs/run's %x-%j.log"
    config = wrap_config.model_copy(update={"recipes": {"wrap": wrap_config.recipe("wrap")
                                    .model_copy(update={"log_path": log_path})}})
    slurm = fake_slurm()
    submit_recipe(config, "wrap", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0, actor="U")
    env = slurm.runner.calls[0].env
    assert (env["SBATCH_OUTPUT"], env["SBATCH_ERROR"]) == (log_path, log_path)


def test_overrides_a_wrapper_did_not_apply_are_never_reported_as_applied(wrap_config, store):
    from bot.services.send_job import NotApplied, describe_not_applied
    from bot.services.submit import submit_recipe

    slurm = fake_slurm()
    wrapped_job(slurm)  # the wrapper forces its own partition and mem on sbatch's command line
    result = submit_recipe(wrap_config, "wrap", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0,
                           actor="U", overrides=["partition=debug", "mem=400G", "lr=0.5"])
    assert result.not_applied == (NotApplied("partition", "debug", "gpu"),
                                  NotApplied("mem", "400G", "950G"))
    assert result.overrides == {"lr": 0.5}
    # the job's own memory, not the override it did not get, tells a host OOM what it had
    assert store.attempts.get_by_job("777").submit_mem == "950G"
    [entry] = [e for e in store.audit.recent(10) if e.action == "submit"]
    assert '"overrides": {"lr": 0.5}' in entry.detail
    assert '"not_applied": {"mem": {"job_has": "950G", "requested": "400G"}' in entry.detail
    assert str(describe_not_applied(result.not_applied)) == (
        "The site's submit command did not apply partition=debug (the job has gpu), "
        "mem=400G (the job has 950G).")


def test_a_wrapper_job_slurm_cannot_show_leaves_the_overrides_unchecked(wrap_config, store):
    from bot.services.submit import submit_recipe

    slurm = fake_slurm()  # job 777 unknown to Slurm (yet)
    result = submit_recipe(wrap_config, "wrap", slurm=slurm, sftp=NO_SFTP, store=store, now=1.0,
                           actor="U", overrides=["mem=400G"])
    assert (result.job_id, result.not_applied, result.overrides) == ("777", (), {"mem": "400G"})
    slurm.down = True  # nor when Slurm does not answer: the submit stands
    again = submit_recipe(wrap_config, "wrap", slurm=slurm, sftp=NO_SFTP, store=store, now=2.0,
                          actor="U", overrides=["mem=400G"])
    assert again.job_id == "777" and again.not_applied == ()
