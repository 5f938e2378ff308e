"""Memory sizes as Slurm and training logs print them, converted to and from bytes."""

from __future__ import annotations

import re
from decimal import Decimal

from bot.core.text import N_, Text

MIB = 1024**2
GIB = 1024**3

_MULTIPLIERS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "M": 1024**2,
    "G": 1024**3,
    "T": 1024**4,
    "P": 1024**5,
}

MAX_SIZE = 1024**6  # 1 EiB: far above any node's memory, far below what overflows a float

# ASCII only: `\d` would take any Unicode digit (Arabic-Indic ٤٠٠) and IGNORECASE alone
# the Kelvin sign (U+212A) for K
_SIZE_RE = re.compile(
    r"^\s*(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[KMGTP]?)(?:I?B)?\s*$",
    re.IGNORECASE | re.ASCII,
)
# The sizes sbatch and srun take as --mem (checked on Slurm 22.05 and 24.11): a whole number,
# in MiB or with K, M, G or T, optionally followed by B. No decimals (1.5T), no IEC `iB`, no
# bytes (512B), no P, no spaces.
_SLURM_SIZE_RE = re.compile(r"[0-9]+(?:[KMGTkmgt][Bb]?)?")


def parse_size(text: str, default_unit: str = "M") -> int:
    """Bytes in a Slurm-style size: `400G`, `950GB`, `563200M`, `1T`, `1.5GiB`, `512` (MiB).

    Raises ValueError with a sentence (a Text) naming the accepted forms when `text` is not
    a size, and the limit when it is larger than MAX_SIZE (a size with hundreds of digits is
    a mistake).
    """
    match = _SIZE_RE.match(text)
    if match is None:
        raise ValueError(N_(
            "%(value)s is not a memory size; use a number with K, M, G or T "
            "(e.g. 400G, 950GB, 563200M, 1T)", value=quote_value(text)))
    unit = match["unit"].upper()
    if not unit and not re.search(r"[bB]\s*$", text):
        unit = default_unit.upper()
    n_bytes = Decimal(match["num"]) * _MULTIPLIERS[unit]  # exact: no float overflow
    if n_bytes > MAX_SIZE:
        raise ValueError(N_("%(value)s is too large for a memory size; at most 1024P (1 EiB)",
                            value=quote_value(text)))
    return int(n_bytes)


def check_slurm_size(text: str) -> str:
    """`text` when sbatch and srun take it as a --mem size (`400G`, `950GB`, `240g`, `512`
    MiB, `0`); else ValueError with a sentence (a Text) saying the forms and, when the size is
    one they can take, how to write it (`1.5T` -> `1536G`)."""
    n_bytes = parse_size(text)
    if _SLURM_SIZE_RE.fullmatch(text):
        return text
    exact = _slurm_form(n_bytes)
    if exact is not None:
        raise ValueError(N_(
            "%(value)s is not a size Slurm takes; write it as a whole number with K, M, G "
            "or T: %(exact)s", value=quote_value(text), exact=exact))
    raise ValueError(N_(
        "%(value)s is not a size Slurm takes; write a whole number with K, M, G or T "
        "(e.g. 400G, 950GB, 563200M, 1T)", value=quote_value(text)))


def _slurm_form(n_bytes: int) -> str | None:
    """`n_bytes` in the largest unit of K, M, G, T that writes it whole; None when it is not
    whole KiB (or zero)."""
    for unit, power in (("T", 4), ("G", 3), ("M", 2), ("K", 1)):
        if n_bytes and n_bytes % 1024**power == 0:
            return f"{n_bytes // 1024**power}{unit}"
    return None


def quote_value(text: str) -> str | Text:
    """A value as typed (a size, a count, a port), quoted for an error message; cut short
    when it is long, its length then said in a sentence (a Text, for the reader's language;
    `str()` of it is the English)."""
    if len(text) <= 24:
        return repr(text)
    return N_("%(start)s… (%(count)d characters)", start=repr(text[:12]), count=len(text))


def gib(n_bytes: float) -> float:
    """Bytes as GiB (the unit every trainbot message and chart uses for host memory)."""
    return n_bytes / GIB


def format_size(n_bytes: float) -> str:
    """Human size with a binary unit: 1536 MiB -> '1.5 GiB'."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
