"""sbatch's `--array` index spec (`0-15%4`, `0-15:2`, `1,3,5-7`), checked with Slurm's own
grammar before it reaches sbatch, and the spec that resubmits one task of an array (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Slurm's largest MaxArraySize is 4000001, so no task index can pass 4000000.
MAX_TASK_INDEX = 4_000_000

_ITEM_RE = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


@dataclass(frozen=True)
class ArraySpec:
    """A parsed `--array` value: its (first, last, step) ranges and the `%N` throttle."""

    ranges: tuple[tuple[int, int, int], ...]
    throttle: int | None = None

    def tasks(self) -> list[int]:
        """The task indexes, ascending, each once."""
        return sorted({i for first, last, step in self.ranges
                       for i in range(first, last + 1, step)})

    def __str__(self) -> str:
        parts = [str(a) if a == b else (f"{a}-{b}" if s == 1 else f"{a}-{b}:{s}")
                 for a, b, s in self.ranges]
        return ",".join(parts) + (f"%{self.throttle}" if self.throttle is not None else "")


def parse_array_spec(text: str) -> ArraySpec:
    """`text` as sbatch's `--array` reads it: comma-separated indexes `N`, ranges `N-M` and
    stepped ranges `N-M:S`, then an optional `%N` (at most N tasks run at once). Raises
    ValueError saying what is wrong and the right form."""
    if not isinstance(text, str) or not text or text != text.strip():
        raise ValueError(f"{text!r} is not an array spec; write e.g. 0-15, 0-15:2, 1,3,5 "
                         "or 0-15%4 (no spaces)")
    body, sep, throttle_text = text.partition("%")
    throttle = None
    if sep:
        if not throttle_text.isdigit() or int(throttle_text) < 1:
            raise ValueError(f"{text!r}: the throttle after % must be a whole number of "
                             "tasks ≥ 1 (e.g. 0-15%4)")
        throttle = int(throttle_text)
    ranges = []
    for item in body.split(","):
        match = _ITEM_RE.fullmatch(item)
        if match is None:
            raise ValueError(f"{text!r}: {item!r} is not a task index, range N-M or stepped "
                             "range N-M:S (indexes are whole numbers ≥ 0)")
        first = int(match[1])
        last = int(match[2]) if match[2] is not None else first
        step = int(match[3]) if match[3] is not None else 1
        if last < first:
            raise ValueError(f"{text!r}: the range {item!r} ends before it starts")
        if step < 1:
            raise ValueError(f"{text!r}: the step of {item!r} must be ≥ 1")
        if last > MAX_TASK_INDEX:
            raise ValueError(f"{text!r}: task index {last} is above Slurm's limit "
                             f"({MAX_TASK_INDEX})")
        ranges.append((first, last, step))
    return ArraySpec(tuple(ranges), throttle)


def task_resubmit_spec(task: int) -> str:
    """The `--array` value that resubmits only task `task` (a one-task array)."""
    if task < 0 or task > MAX_TASK_INDEX:
        raise ValueError(f"task {task} is not an array task index")
    return str(task)


def expand_task_path(path: str, task: int) -> str:
    """A recipe path with `%a` (the array task, as in sbatch's --output) replaced by `task`."""
    return path.replace("%a", str(task))
