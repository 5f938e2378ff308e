"""Rows of Slurm's `|`-separated output (squeue -O, sacct/sstat --parsable2)."""

from __future__ import annotations

import re

from bot.core.slurm.errors import SlurmParseError
from bot.core.text import N_


def split_rows(text: str, n_fields: int, sep: str) -> list[list[str]]:
    """Rows of `sep`-separated output whose last field (a job name) may hold `sep` or newlines.

    A physical line that does not start like a row (`<digits>` then a separator) continues the
    previous row's last field, so a name with a newline stays one row.
    """
    rows: list[list[str]] = []
    # `123`, `123_4`, `123_[1-4]`, `123+1` (het component), `123.batch`, `123.0+1` (het step)
    row_start = re.compile(
        r"^\d+(?:_\d+|_\[[^\]]*\])?(?:\+\d+)?(?:\.[\w-]+(?:\+\d+)?)?" + re.escape(sep))
    for line in text.splitlines():
        if not line.strip() and not rows:
            continue
        if rows and not row_start.match(line):
            rows[-1][-1] += "\n" + line
            continue
        parts = line.split(sep)
        if len(parts) > n_fields:  # separator inside the last (name) field
            parts = [*parts[: n_fields - 1], sep.join(parts[n_fields - 1 :])]
        rows.append(parts)
    for row in rows:
        if len(row) < n_fields:
            raise SlurmParseError(N_(
                "expected %(n)s '%(sep)s'-separated fields, got %(got)s: %(row)s", n=n_fields,
                sep=sep, got=len(row), row=repr(sep.join(row))))
    return rows
