"""Which Slurm the cluster runs (`sinfo --version`), and which parsers trainbot uses for it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.slurm.errors import SlurmParseError
from bot.core.text import N_

# Slurm releases trainbot is tested with: live on 22.05 and 24.11 (the two dev clusters),
# through fixtures in the shapes of every release from 21.08 to 25.05 (tests/fixtures/slurm).
TESTED_LIVE = ((22, 5), (24, 11))
NEWEST_TESTED = (25, 5)
# The --json data_parser version each release prints (21.08: openapi v0.0.37).
DATA_PARSERS: dict[tuple[int, ...], str] = {
    (21, 8): "v0.0.37", (22, 5): "v0.0.38", (23, 2): "v0.0.39", (23, 11): "v0.0.40",
    (24, 5): "v0.0.41", (24, 11): "v0.0.42", (25, 5): "v0.0.43"}
# From this release on `sacct --json` reports exit codes right (22.05.8 reports `exit 3` as
# return code 0 with state FAILED; verified on the dev cluster).
FIRST_RIGHT_JSON = (23, 2)
# From this release on `sacct --format` has StdOut/StdErr (the patterns as submitted); 22.05
# refuses a call that asks for them (verified on both dev clusters).
FIRST_SACCT_OUTPUT_FIELDS = (23, 2)


@dataclass(frozen=True)
class SlurmInfo:
    """What the cluster's Slurm can do: its version and whether `--json` output works."""

    version: str
    has_json: bool

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.version)


@dataclass(frozen=True)
class ParserChoice:
    """Which output trainbot reads for a Slurm release, and why.

    `json` is True when squeue and sacct are read as JSON. `refusal` says why JSON was asked
    for (`use_json`) and refused; `warning` says the release is newer than any tested one.
    """

    json: bool
    squeue: str
    sacct: str
    sstat: str
    refusal: str | None = None
    warning: str | None = None


def parse_version(text: str) -> tuple[int, ...]:
    """(22, 5, 8) from `slurm 22.05.8` / `slurm-wlm 22.05.8` / `22.05.8-4+deb12u3`."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise SlurmParseError(N_("%(text)s does not contain a Slurm version (e.g. 22.05.8)",
                                 text=repr(text.strip())))
    return tuple(int(g) for g in match.groups() if g is not None)


def json_refusal(version: tuple[int, ...]) -> str | None:
    """Why `--json` must not be read on this release, or None when it may."""
    release = version[:2]
    if release < (21, 8):
        return f"Slurm {_release(release)} has no --json output (it came with 21.08)"
    if release < FIRST_RIGHT_JSON:
        return (f"Slurm {_release(release)}'s sacct --json reports a failed job's exit code as "
                "0 (`exit 3` reads return_code 0); --parsable2 has the right code:signal")
    return None


def choose_parsers(version: tuple[int, ...], *, want_json: bool) -> ParserChoice:
    """The parsers for this release: `--Format`/`--parsable2` unless JSON is wanted and right."""
    release = version[:2]
    refusal = json_refusal(version) if want_json else None
    use_json = want_json and refusal is None
    parser = DATA_PARSERS.get(release) or _nearest_parser(release)
    warning = None
    if release > NEWEST_TESTED:
        warning = (f"Slurm {_release(release)} is newer than the newest release trainbot is "
                   f"tested with ({_release(NEWEST_TESTED)}): its output may have changed; "
                   "check a job's state, exit code and memory limit by hand once")
    return ParserChoice(
        json=use_json,
        squeue=f"squeue --json ({parser})" if use_json else "squeue --Format (columns)",
        sacct=f"sacct --json ({parser})" if use_json else "sacct --parsable2",
        sstat="sstat --parsable2",
        refusal=refusal,
        warning=warning,
    )


def _release(release: tuple[int, ...]) -> str:
    return f"{release[0]}.{release[1]:02d}"


def _nearest_parser(release: tuple[int, ...]) -> str:
    known = [r for r in DATA_PARSERS if r <= release]
    return DATA_PARSERS[max(known)] if known else "none"


def sinfo_version_argv() -> list[str]:
    """argv of `sinfo --version` (prints `slurm 22.05.8`)."""
    return ["sinfo", "--version"]
