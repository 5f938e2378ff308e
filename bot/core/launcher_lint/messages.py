"""Wording shared by the launcher lint's checks."""

from __future__ import annotations

from bot.core.findings import Finding


def short(cmd: str, limit: int = 70) -> str:
    """A command on one line, cut to `limit` characters."""
    flat = " ".join(cmd.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def slurm_shows(status: int) -> str:
    return (f"Slurm shows FAILED {status}:0 (COMPLETED 0:0 only when a wrapper ignores the "
            "script's status, as for job 108687)")


def crashed(check: str, exc: Exception) -> Finding:
    """The finding of a check that raised."""
    return Finding(
        check, "warn", None,
        f"this check could not read the script ({type(exc).__name__}: {short(str(exc), 80)}); "
        "it was skipped, the other checks ran",
        "report it with the script attached",
    )
