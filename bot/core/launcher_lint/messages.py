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


def under_errexit(mode: str, partial: bool, line: int | None = None) -> Text:
    """The clause that says under which options a stop happens (`mode`: "`set -e`", "`set -e`
    + `pipefail`"; `line`: where `set -e` came on, when the message names it): "under `set -e`"
    where `set -e` is on on every path to the line; where it is on on some only (`partial`: a
    branch of an `if` / `case`, or a loop's pass, before the line turns it on or off), what is
    known: "when `set -e` is on (only some branches or loop passes … turn it on),"."""
    if partial:
        if line is None:
            return N_("when %(mode)s is on (only some branches or loop passes before this line "
                      "turn it on),", mode=mode)
        return N_("when %(mode)s is on (line %(line)s; only some branches or loop passes before "
                  "this line turn it on),", mode=mode, line=line)
    if line is None:
        return N_("under %(mode)s", mode=mode)
    return N_("under %(mode)s (line %(line)s)", mode=mode, line=line)


def under_pipefail_partly(errexit_partial: bool) -> Text:
    """The clause for a stop that comes through `pipefail` (a pipeline's element before the
    last), where `pipefail` is on on some paths to the line only: "under `set -e`, when
    `pipefail` is on (only some branches or loop passes … turn it on),"; `errexit_partial`:
    `set -e` too is on on some paths only."""
    if errexit_partial:
        return N_("when `set -e` and `pipefail` are on (only some branches or loop passes "
                  "before this line turn them on),")
    return N_("under `set -e`, when `pipefail` is on (only some branches or loop passes before "
              "this line turn `pipefail` on),")
