"""What the Slurm parsers raise when Slurm's output is not what they can read."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from bot.core.text import N_, Text

# What to do about a Slurm answer trainbot cannot read (SlurmParseError.in_answer_to).
LOOK_AT_THE_OUTPUT = N_(
    "Run it on the login node and look at its output: text that is not Slurm's (a site "
    "wrapper of the command, a shell startup file that prints) has to go; if it is all "
    "Slurm's, its format is new to trainbot: report it with that output.")


class SlurmParseError(ValueError):
    """Slurm printed something this parser does not understand. Raised with its sentence (a
    Text, N_(): what was not understood, Slurm's words quoted); the Slurm client adds the
    command, the jobs asked about and what to do (`in_answer_to`)."""

    def in_answer_to(self, argv: Sequence[str], jobs: Iterable[int] = ()) -> SlurmParseError:
        """This error said of Slurm's answer to `argv` (raise it `from` self): the command, the
        jobs it was asked about when there were some (`jobs`), what was not understood, and
        what to do (LOOK_AT_THE_OUTPUT)."""
        error = self.args[0] if len(self.args) == 1 else str(self)
        command = shlex.join(str(a) for a in argv)
        asked = ", ".join(str(j) for j in jobs)
        head = (N_("`%(command)s`, asked about job(s) %(jobs)s, printed what trainbot cannot "
                   "read: %(error)s.", command=command, jobs=asked, error=error) if asked else
                N_("`%(command)s` printed what trainbot cannot read: %(error)s.",
                   command=command, error=error))
        return SlurmParseError(N_("%(first)s %(then)s", first=head, then=LOOK_AT_THE_OUTPUT))


class SlurmReportedError(SlurmParseError):
    """`--json` output that carries Slurm's own errors and no jobs (e.g. slurmctld down:
    squeue exits 0 with `"errors": [{"error": "Unspecified error", "source":
    "slurm_load_jobs"}]`). It is not an empty answer: the caller must not read "no jobs"."""

    def __init__(self, message: Text | str, errors: list[Any]):
        super().__init__(message)
        self.errors = errors
