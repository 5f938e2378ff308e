"""Job ids as people and Slurm's listings write them: `123` (a job, or a whole array) and
`123_4` (task 4 of array 123, whose own raw id Slurm gives it when it starts); which array
task an id names (`array_task_in`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.slurm.errors import SlurmParseError
from bot.core.text import N_

#: A job's id as people give it: Slurm numbers jobs from 1 (0 and 000 name no job; Slurm's
#: argv builders refuse them), at most 12 digits. The one rule for `/train`'s words, a Home
#: tab button's value and the CLI.
JOB_ID = r"[1-9][0-9]{0,11}"
_JOB_ID_RE = re.compile(JOB_ID)
_JOB_RE = re.compile(rf"^({JOB_ID})(?:_([0-9]{{1,7}}))?$")
# a word `/train status` takes for a job id, right or wrong (`0`, `0_3`), not a recipe's name
_JOB_SHAPED_RE = re.compile(r"^[0-9]{1,12}(?:_[0-9]{1,7})?$")
# an array's id in Slurm's listings: `123_4`, a step of it (sacct's `123_4.batch`, `123_4.0`),
# or the pending remainder `123_[5-9%2]`
_ARRAY_ID_RE = re.compile(r"^([0-9]+)_(?:([0-9]+)(?:\.[A-Za-z0-9_]+)?|\[[^\]]+\])$")

#: How an error names the forms a job id may take.
ACCEPTED_FORMS = "123 (a job or a whole array) or 123_4 (task 4 of array 123)"


class JobIdError(ValueError):
    """A word that is not a job id; `str()` (and `text`, for the renderer) names it and the
    accepted forms."""

    def __init__(self, word: str):
        self.word = word
        shown = word if len(word) <= 40 else word[:39] + "…"
        self.text = N_("%(word)r is not a job id: give 123 (a job or a whole array) or 123_4 "
                       "(task 4 of array 123)", word=shown)
        super().__init__(str(self.text))


@dataclass(frozen=True)
class JobRef:
    """A job as given: `job_id` alone, or task `array_task` of array `job_id`."""

    job_id: int
    array_task: int | None = None

    @property
    def display(self) -> str:
        """`123` or `123_4`, as it was written."""
        return str(self.job_id) if self.array_task is None else f"{self.job_id}_{self.array_task}"


def is_job_id(word: str) -> bool:
    """`word` is a job's id (`123`; not `0`, `007`, `123_4`, ` 123` or non-ASCII digits)."""
    return _JOB_ID_RE.fullmatch(word) is not None


def looks_like_job_ref(word: str) -> bool:
    """`word` has a job id's shape (up to 12 digits, perhaps `_` and a task's digits): meant
    as a job id, right (`123`, `123_4`) or not (`0`, `000`, `0_3`), not as a recipe's name."""
    return _JOB_SHAPED_RE.match(word) is not None


def parse_job_ref(word: str) -> JobRef:
    """`123` -> JobRef(123), `123_4` -> JobRef(123, 4); anything else raises JobIdError."""
    match = _JOB_RE.match(word.strip())
    if match is None:
        raise JobIdError(word)
    return JobRef(int(match[1]), int(match[2]) if match[2] is not None else None)


def split_array_id(job_id: str | None) -> tuple[int, int | None] | None:
    """The array and the task a job id names, as squeue and sacct print it: (123, 4) for
    `123_4` and its steps (`123_4.batch`, `123_4.extern`, `123_4.0`); (123, None) for an array's
    pending remainder, which is no one task (`123_[5-9]`, `123_[5-9%2]`, `123_[1,3]`); None for
    an id of no array: a job `123` (or its step `123.batch`), a heterogeneous job's component
    `123+0` (Slurm runs no heterogeneous job as an array), or no id at all."""
    match = _ARRAY_ID_RE.match((job_id or "").strip())
    if match is None:
        return None
    return int(match[1]), int(match[2]) if match[2] is not None else None


def array_task_in(job_id: str | None) -> int | None:
    """The array task a job id names (4 of `123_4`, see `split_array_id`); None: no one task."""
    found = split_array_id(job_id)
    return found[1] if found else None


def parse_raw_job_ids(text: str) -> set[int]:
    """The raw job ids of a one-id-per-line listing (squeue `-o %A`, sacct `-o JobIDRaw`):
    each array task has its own. A line that is not a raw id (`123_4`, `123_[5-9]`: the
    listing printed the wrong field) raises SlurmParseError naming it, never counts as 123."""
    ids: set[int] = set()
    for line in text.splitlines():
        word = line.strip()
        if not word:
            continue
        if not word.isdigit() or len(word) > 12:
            raise SlurmParseError(N_("expected one raw job id per line, got %(word)s",
                                     word=repr(word[:40])))
        ids.add(int(word))
    return ids
