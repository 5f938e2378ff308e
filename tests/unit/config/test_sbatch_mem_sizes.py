"""A recipe's `mem`, its `dataloader_probe.mem` and a `mem=` override reach sbatch / srun as
typed, so they take only the sizes Slurm takes: a decimal (1.5T), an IEC or byte suffix
(1.5GiB, 512B) or non-ASCII digits (٤٠٠G) loaded and passed the override check, and sbatch
refused them ("Invalid --mem specification") only at submit time. The refusal names the
field and the whole form (1536G). tests/integration/test_slurm_mem_forms.py checks the same
forms against the dev clusters' sbatch. The site's sizes a --mem is compared with (a
cluster's per_gpu_mem_cap and mem_floor, policy.max_mem) take the same forms, by the same
check."""
from __future__ import annotations

import pytest
from fakes import FakeSlurm, make_config, make_context
from pydantic import ValidationError
from support.recipe_yaml import ONE_RECIPE

from bot.config import ConfigError, load_config, parse_config
from bot.core.text import render_text
from bot.core.train_grammar import parse_command
from bot.core.units import check_slurm_size
from bot.services.overrides import OverrideError, parse_overrides
from bot.services.train import execute
from bot.slack.render import translator
from bot.store import Store

NOW = 1_732_871_000.0
# what sbatch refuses (Slurm 22.05.8 and 24.11.5): the whole form, None when there is none
SLURM_REFUSES = {"1.5T": "1536G", "1.5GiB": "1536M", "512B": None,
                 "\u0664\u0660\u0660G": None}
SLURM_TAKES = ["400G", "950GB", "240g", "0", "563200M", "512"]


@pytest.mark.parametrize("mem", SLURM_REFUSES)
def test_recipe_mem_slurm_refuses_is_refused_at_load_naming_the_field(mem):
    with pytest.raises(ValidationError) as info:
        make_config(mem=mem)
    message = str(info.value)
    assert "recipes.mix.mem" in message
    fix = SLURM_REFUSES[mem]
    assert (f"write it as a whole number with K, M, G or T: {fix}" if fix
            else "e.g. 400G") in message


@pytest.mark.parametrize("mem", SLURM_REFUSES)
def test_probe_mem_slurm_refuses_is_refused_at_load(mem):
    with pytest.raises(ValidationError, match=r"recipes\.mix\.dataloader_probe\.mem"):
        make_config(dataloader_probe={"factory": "data:build", "mem": mem})


@pytest.mark.parametrize("mem", SLURM_TAKES)
def test_recipe_and_probe_mem_slurm_takes_load_as_typed(mem):
    config = parse_config(ONE_RECIPE % f"mem: '{mem}'\n    dataloader_probe: "
                          f"{{factory: 'data:build', mem: '{mem}'}}", source="x", env={})
    recipe = config.recipe("mix")
    assert recipe.mem == mem and recipe.dataloader_probe is not None
    assert recipe.dataloader_probe.mem == mem


@pytest.mark.parametrize("mem", SLURM_REFUSES)
def test_mem_override_slurm_refuses_is_refused(mem):
    recipe = make_config(overridable={"mem": "size"}).recipes["mix"]
    with pytest.raises(OverrideError, match="^mem: .*not a "):
        parse_overrides("mix", recipe, [f"mem={mem}"])


def test_a_size_override_of_a_script_argument_keeps_every_size():
    """A size override other than mem reaches the job's script as `key=value`, not sbatch."""
    recipe = make_config(overridable={"shm": "size"}).recipes["mix"]
    assert parse_overrides("mix", recipe, ["shm=1.5G"]) == {"shm": "1.5G"}


def test_train_submit_with_a_mem_slurm_refuses_submits_nothing(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        slurm = FakeSlurm()
        ctx = make_context(store, slurm, overridable={"mem": "size"})
        reply = execute(ctx, parse_command("submit mix mem=1.5T"), actor="U0ALICE",
                        channel="C0TRAIN", now=NOW)
        assert slurm.submits() == []
        assert "mem: '1.5T' is not a size Slurm takes" in reply.text and "1536G" in reply.text


def test_the_refusal_has_its_korean():
    recipe = make_config(overridable={"mem": "size"}).recipes["mix"]
    with pytest.raises(OverrideError) as info:
        parse_overrides("mix", recipe, ["mem=1.5T"])
    korean = render_text(info.value.args[0], translator("ko").gettext)
    assert korean == ("mem: '1.5T'은(는) Slurm이 받는 크기가 아닙니다. K, M, G 또는 T를 붙인 "
                      "정수로 쓰세요: 1536G")


# The site's memory sizes of the config (a cluster's per_gpu_mem_cap and mem_floor, the
# policy's max_mem, of `policy:` or a recipe's) are compared with --mem sizes and written in
# the --mem a cap bounds: the same forms, checked by the same check (check_slurm_size).
NO_MORE = ONE_RECIPE % ""
SITE_SIZES = {
    "per_gpu_mem_cap": ("clusters.gpu.per_gpu_mem_cap (line 2)",
                        NO_MORE.replace("id_ed25519}", "id_ed25519, per_gpu_mem_cap: '%s'}")),
    "mem_floor": ("clusters.gpu.mem_floor (line 2)",
                  NO_MORE.replace("id_ed25519}", "id_ed25519, mem_floor: '%s'}")),
    "policy.max_mem": ("policy.max_mem (line 1)",
                       "policy: {max_mem: '%s'}\n" + NO_MORE),
    "recipe policy.max_mem": ("recipes.mix.policy.max_mem (line 7)",
                              ONE_RECIPE.replace("%s", "policy: {max_mem: '%s'}")),
}


def load_error(tmp_path, text: str) -> str:
    path = tmp_path / "trainbot.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    return str(info.value)


@pytest.mark.parametrize("field", SITE_SIZES)
@pytest.mark.parametrize("size", SLURM_REFUSES)
def test_a_site_size_slurm_refuses_is_refused_naming_field_line_and_form(tmp_path, field, size):
    where, text = SITE_SIZES[field]
    message = load_error(tmp_path, text % size)
    with pytest.raises(ValueError) as said:
        check_slurm_size(size)  # the refusal of a recipe's mem
    assert f"{where}: {said.value}" in message
    fix = SLURM_REFUSES[size]
    assert (f"write it as a whole number with K, M, G or T: {fix}" if fix
            else "e.g. 400G") in message


@pytest.mark.parametrize("field", SITE_SIZES)
@pytest.mark.parametrize("size", [s for s in SLURM_TAKES if s != "0"])
def test_a_site_size_slurm_takes_loads_as_typed(tmp_path, field, size):
    path = tmp_path / "trainbot.yaml"
    path.write_text(SITE_SIZES[field][1] % size)
    config = load_config(path, env={})
    assert size in (config.clusters["gpu"].per_gpu_mem_cap, config.clusters["gpu"].mem_floor,
                    config.policy.max_mem, config.policy_for("mix").max_mem)
