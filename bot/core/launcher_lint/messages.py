"""Wording shared by the launcher lint's checks."""

from __future__ import annotations

from bot.core.findings import Finding
from bot.core.text import N_, Text


def short(cmd: str, limit: int = 70) -> str:
    """A command on one line, cut to `limit` characters."""
    flat = " ".join(cmd.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def slurm_shows(status: int) -> Text:
    return N_("Slurm shows FAILED %(status)s:0 (COMPLETED 0:0 only when a wrapper ignores the "
              "script's status, as for job 108687)", status=status)


def crashed(check: str, exc: Exception) -> Finding:
    """The finding of a check that raised."""
    return Finding(
        check, "warn", None,
        N_("this check could not read the script (%(error)s); it was skipped, the other checks "
           "ran", error=f"{type(exc).__name__}: {short(str(exc), 80)}"),
        N_("report it with the script attached"),
    )
