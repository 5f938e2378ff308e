"""Which Slurm the cluster runs (`sinfo --version`) and whether its `--json` output is used."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.slurm.errors import SlurmParseError


@dataclass(frozen=True)
class SlurmInfo:
    """What the cluster's Slurm can do: its version and whether `--json` output works."""

    version: str
    has_json: bool

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.version)


def parse_version(text: str) -> tuple[int, ...]:
    """(22, 5, 8) from `slurm 22.05.8` / `slurm-wlm 22.05.8` / `22.05.8-4+deb12u3`."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise SlurmParseError(f"{text.strip()!r} does not contain a Slurm version (e.g. 22.05.8)")
    return tuple(int(g) for g in match.groups() if g is not None)


def sinfo_version_argv() -> list[str]:
    """argv of `sinfo --version` (prints `slurm 22.05.8`)."""
    return ["sinfo", "--version"]
