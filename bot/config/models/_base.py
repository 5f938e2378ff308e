"""What every section of the config schema shares: the override types, the id patterns, the
base model (unknown keys are errors)."""

from __future__ import annotations

import re
import types
import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from bot.core.slurm.sbatch import RECIPE_OVERRIDABLE_OPTIONS

OverrideType = Literal["int", "float", "str", "size", "bool"]

# The largest whole number a recipe or an `int` override may hold: the store's integer columns
# (target_iter, iterations) are PostgreSQL's `integer`, 32-bit signed.
INT_MOST = 2**31 - 1

# Recipe fields a `key=value` override may replace (with the type the override must declare):
# the sbatch options of `SubmitSpec` a recipe sets by name, and target_iter. Any other
# overridable key is passed to the job as a literal `key=value` argument.
SLURM_OVERRIDE_FIELDS: dict[str, OverrideType] = {
    **RECIPE_OVERRIDABLE_OPTIONS,
    "target_iter": "int",
}

_SLACK_USER_RE = re.compile(r"^[UW][A-Z0-9]{2,}$")
_SLACK_USERGROUP_RE = re.compile(r"^S[A-Z0-9]{2,}$")
_SLACK_CHANNEL_ID_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")
_OVERRIDE_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Slurm --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (or UNLIMITED/INFINITE), in ASCII
# digits: Slurm reads no others, and Python's `\d` takes any Unicode digit (Arabic-Indic ٩٠)
_SLURM_TIME_RE = re.compile(
    r"^([0-9]+(:[0-9]{1,2}){0,2}|[0-9]+-[0-9]{1,2}(:[0-9]{1,2}){0,2}|UNLIMITED|INFINITE)$")


def _takes_bool(annotation: Any) -> bool:
    """Whether a field of this type means a boolean (or takes anything): not a plain number."""
    if annotation is bool or annotation is Any:
        return True
    if annotation in (int, float):
        return False
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _takes_bool(args[0])
    if origin in (typing.Union, types.UnionType):
        return any(_takes_bool(a) for a in args if a is not type(None))
    return True  # a container, a model, a Literal: its own checks see the value


class _Model(BaseModel):
    # .inf and .nan are never meant: an infinite timeout or threshold is a typo, not a setting
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """YAML 1.1 reads an unquoted yes/no/on/off/true/false as a boolean, and pydantic takes
        a boolean for an int or float (1 or 0): `target_iter: yes` would finish the run at
        iteration 1. A number field refuses it."""
        if isinstance(value, bool) and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            if field is not None and not _takes_bool(field.annotation):
                raise ValueError(
                    f"YAML reads an unquoted yes/no, on/off or true/false as a boolean (here "
                    f"{str(value).lower()}), but {info.field_name} is a number; give a number")
        return value
