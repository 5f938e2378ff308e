"""Recipe overrides (`key=value`, `/train submit mix lr=0.5 mem=400G`): validated against the
recipe's `overridable` types and applied to a copy of the recipe, re-validated. Pure; used by
the submit (bot.services.submit), the preflight and the CLI's help."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bot.cluster.errors import said
from bot.config import INT_MOST, SLURM_OVERRIDE_FIELDS, RecipeConfig
from bot.core.text import N_
from bot.core.units import check_slurm_size, parse_size
from bot.services import UsageProblem

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A whole number in ASCII digits, with an optional sign (`+5`, `-5`): not `1_000`, ` 5` or
# Arabic-Indic digits, which int() takes
_WHOLE = re.compile(r"[+-]?[0-9]+")
# A decimal number in ASCII digits (float() also takes `1_0`, ` 5`, Arabic-Indic digits)
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
# The bounds of an int override the store keeps (its column is PostgreSQL's 32-bit integer), by
# key; other int overrides reach the script as `key=value` and are any whole number
_INT_RANGE = {"target_iter": (1, INT_MOST)}


class OverrideError(UsageProblem):
    """A `key=value` override is not allowed for the recipe or its value has the wrong type."""



def parse_overrides(
    recipe_name: str, recipe: RecipeConfig, overrides: Sequence[str] | Mapping[str, str]
) -> dict[str, Any]:
    """Validate `key=value` overrides against the recipe's `overridable` types.

    Returns key → typed value (sizes stay Slurm strings). Raises OverrideError with the
    key, what is wrong and the right form.
    """
    pairs: list[tuple[str, str]] = []
    if isinstance(overrides, Mapping):
        pairs = [(str(k), str(v)) for k, v in overrides.items()]
    else:
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise OverrideError(N_("%(item)r is not an override; use key=value (e.g. "
                                       "%(example)s)", item=item,
                                       example=_example(recipe_name, recipe)))
            pairs.append((key.strip(), value))
    allowed = recipe.overridable
    out: dict[str, Any] = {}
    for key, raw in pairs:
        if key not in allowed:
            if allowed:
                close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
                listing = ", ".join(f"{k} ({t})" for k, t in sorted(allowed.items()))
                if close:
                    raise OverrideError(N_(
                        "recipe %(recipe)r does not allow overriding %(key)r — did you mean "
                        "%(close)r?; allowed: %(allowed)s", recipe=recipe_name, key=key,
                        close=close[0], allowed=listing))
                raise OverrideError(N_("recipe %(recipe)r does not allow overriding %(key)r; "
                                       "allowed: %(allowed)s", recipe=recipe_name, key=key,
                                       allowed=listing))
            raise OverrideError(N_("recipe %(recipe)r allows no overrides; ask its owners to "
                                   "list keys under `overridable:` in the config",
                                   recipe=recipe_name))
        if key in out:
            raise OverrideError(N_("%(key)r is given twice; give each override once", key=key))
        if raw == "":
            raise OverrideError(N_("override %(key)r has no value; write %(key)s=VALUE",
                                   key=key))
        out[key] = _convert(key, raw, allowed[key])
    return out


def _convert(key: str, raw: str, kind: str) -> Any:
    """The typed value of one override. Strings (and sizes) are passed on exactly as typed:
    validated, never trimmed or otherwise altered."""
    if _CONTROL.search(raw):
        raise OverrideError(N_("%(key)s: the value contains a control character (newline, tab, "
                               "…)", key=key))
    if kind == "int":
        if not _WHOLE.fullmatch(raw):
            raise OverrideError(N_("%(key)s must be a whole number, e.g. %(key)s=8000",
                                   key=key))
        whole = int(raw)
        bounds = _INT_RANGE.get(key)
        if bounds is not None and not bounds[0] <= whole <= bounds[1]:
            raise OverrideError(N_("%(key)s must be a whole number from %(least)s to "
                                   "%(most)s", key=key, least=bounds[0], most=bounds[1]))
        return whole
    if kind == "float":
        try:
            number = float(raw)
        except ValueError:
            raise OverrideError(N_("%(key)s must be a number, e.g. %(key)s=0.0003",
                                   key=key)) from None
        if not math.isfinite(number):
            raise OverrideError(N_("%(key)s must be a finite number", key=key))
        if not _DECIMAL.fullmatch(raw):
            raise OverrideError(N_("%(key)s must be a number, e.g. %(key)s=0.0003", key=key))
        return number
    if kind == "bool":
        if raw.strip().lower() in _TRUE:
            return True
        if raw.strip().lower() in _FALSE:
            return False
        raise OverrideError(N_("%(key)s must be true or false", key=key))
    if kind == "size":
        if raw != raw.strip() or " " in raw:
            raise OverrideError(N_("%(key)s: write the size without spaces, e.g. %(key)s=400G",
                                   key=key))
        try:
            # a Slurm option (mem) reaches sbatch as typed: only the forms sbatch takes
            check_slurm_size(raw) if key in SLURM_OVERRIDE_FIELDS else parse_size(raw)
        except ValueError as exc:
            raise OverrideError(N_("%(key)s: %(error)s", key=key, error=said(exc))) from None
        return raw
    if not raw.strip():
        raise OverrideError(N_("%(key)s needs a value, e.g. %(key)s=something", key=key))
    return raw


_SAMPLES = {"int": "8000", "float": "0.5", "str": "x", "size": "400G", "bool": "true"}


def override_example(recipe: RecipeConfig) -> str | None:
    """An override the recipe takes, as `key=value` (its first `overridable` key with a value
    of that key's type); None when it takes none."""
    if not recipe.overridable:
        return None
    key, kind = next(iter(recipe.overridable.items()))
    return f"{key}={_SAMPLES[kind]}"


def _example(recipe_name: str, recipe: RecipeConfig) -> str:
    return override_example(recipe) or f"trainbot submit {recipe_name}"


def apply_overrides(recipe: RecipeConfig, overrides: Mapping[str, Any]) -> RecipeConfig:
    """The recipe with overrides applied: Slurm fields replaced, other keys appended to args.

    Re-validated, so e.g. `time=2 days` fails like it would in the config file.
    """
    updates: dict[str, Any] = {}
    extra_args: list[str] = []
    for key, value in overrides.items():
        if key in SLURM_OVERRIDE_FIELDS:
            updates[key] = value
        else:
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            extra_args.append(f"{key}={text}")
    data = recipe.model_dump()
    data.update(updates)
    data["args"] = [*recipe.args, *extra_args]
    try:
        return RecipeConfig.model_validate(data)
    except Exception as exc:  # pydantic ValidationError: show only the messages
        errors = getattr(exc, "errors", None)
        if not errors:
            raise OverrideError(N_("override rejected: %(detail)s", detail=str(exc))) from None
        first = errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        # a check that raised a sentence (Text) is said in the reply's language, as the
        # sentence around it is (`time=`); pydantic's own words stay English
        error = (first.get("ctx") or {}).get("error")
        detail = said(error) if isinstance(error, BaseException) else \
            first["msg"].removeprefix("Value error, ")
        raise OverrideError(N_(
            "the recipe does not take %(key)s=%(value)s: %(detail)s", key=key,
            value=str(overrides.get(key, "")), detail=detail)) from None
