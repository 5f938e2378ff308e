"""What one batched read of followed files asks, and what its cut answer means: the byte
budget a batch's files share (below the read's output cap, and what a slow link carries in a
read's timeout), which files go first, and a cut answer told from a hung path (pure; the
reads themselves: bot.core.tail)."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.core.tail import TailOutcome
    from bot.core.tail_frames import Answers, ReadRequest

ANCHOR_BYTES = 64  # the bytes before a tail's offset it checks (bot.core.tail.TailState)


MIN_LINK_RATE = 256  # bytes per second: a link carrying less in a read's timeout has stalled


def cut_by_slow_link(got: Answers, came: int, limit: float) -> bool:
    """Whether an answer cut by the read's timeout (`got`, `came` bytes in `limit` s) was
    still coming, a slow link, rather than stalled on a hung path: a part the script writes
    at once came in part (`arriving`: a header or end line, the stat part), or the cut fell
    inside one of the script's writes of the file being sent (`cut_block`: dd writes a
    file's own frame 64 KiB at a time, each written once read, so a read that stops ends
    the answer only where a file's bytes start or on a block's end). A cut on such a
    boundary is a hung path, whatever the answer's rate: with many quiet logs' answers
    before it (the link carried them, MIN_LINK_RATE at least) the read stopped, not the
    link; and a link that carried less in the timeout stalled, where a path that hangs at
    a batch's first file looks the same (it is found, not deferred every tick). In a
    bucket (tail's writes are not known) the whole answer's rate decides: bytes of the
    file being sent certainly came (`cut_bytes`) and the answer is what a link carries in
    that time, not a handful of bytes."""
    if got.arriving:
        return True
    if got.cut_block:
        return got.cut_bytes % got.cut_block != 0
    return got.cut_bytes > 0 and came >= MIN_LINK_RATE * limit


def marked_files(out: bytes, start: int, end: int, mark: bytes,
                 files: int) -> tuple[int, int]:
    """Of a bucket's bytes `out[start:end]` (cut short), how many of its `files` files were
    sent whole (each followed by `mark`) and where the bytes of the next one begin."""
    done = 0
    while done < files:
        found = out.find(mark, start, end)
        if found < 0:
            break
        done, start = done + 1, found + len(mark)
    return done, start


MIN_SHARE = 4096  # the fewest new bytes a shared batch budget gives one file
IDLE_COST = 64  # what an idle file is charged of a shared batch budget: its frame, a line
IDLE_BUDGET = 256  # the fewest new bytes an idle file is asked for in a shared batch


def share_budget(requests: Sequence[ReadRequest], total: int,
                 least: Sequence[int] | None = None,
                 idle: Sequence[bool] | None = None) -> list[ReadRequest | None]:
    """`requests` fitted to `total` bytes for the whole batch (the read script's output is
    capped, and a slow link carries only so much within a read's timeout): each file asks its
    bytes before the offset (`back`) and new bytes (`budget`); while they add up to more
    than `total`, each gets its minimum (its anchor, at least ANCHOR_BYTES of `back`, and at
    least MIN_SHARE new bytes, or its `least`: every file read moves on, one whose last
    read ended inside a line past that line) and the rest is shared equally
    above it, a file asking less than its share giving the rest to the others (max-min
    fair). A file cut to its share keeps a warm-up window at most half of its share.

    An `idle` file (unchanged at its last read: it most likely answers `same`, no bytes) is
    charged IDLE_COST only and takes no share: it is asked its anchor and a quarter of the
    batch's bytes shared among the idle files (at least IDLE_BUDGET, at most MIN_SHARE new
    bytes), so the files that write get the batch; one that wrote since sends at most that
    (bytes wait: not idle next tick, it gets its share), and if many write at once, the
    answer is at most a quarter over `total` (more only past 4 idle files per KiB).

    When even the minimums do not fit, only the first files whose minimums do are read
    (None for the others: read another tick; the caller puts first the files waiting
    longest), the first one always: the batch stays within `total` but for one file's
    minimum."""
    demands = [req.back + req.budget for req in requests]
    if sum(demands) <= total:
        return list(requests)
    quiet = list(idle) if idle is not None else [False] * len(requests)
    idle_budget = min(MIN_SHARE, max(IDLE_BUDGET, total // (4 * max(1, sum(quiet)))))
    wants = least or [MIN_SHARE] * len(requests)
    floors = [IDLE_COST if still else
              min(req.back, ANCHOR_BYTES) + min(req.budget, max(MIN_SHARE, want))
              for req, want, still in zip(requests, wants, quiet, strict=True)]
    taken = len(requests)
    for k, used in enumerate(itertools.accumulate(floors)):
        if used > total:
            taken = max(1, k)
            break
    extra = [0 if still else demand - floor
             for demand, floor, still in zip(demands[:taken], floors, quiet, strict=False)]
    level, left = 0, max(0, total - sum(floors[:taken]))
    for k, want in enumerate(sorted(extra)):
        fair = left // (taken - k)
        if want > fair:
            level = fair
            break
        left -= want
    else:
        level = max(extra, default=0)
    shared: list[ReadRequest | None] = []
    for req, floor, want, still in zip(requests, floors, extra, quiet, strict=False):
        if still:
            shared.append(replace(req, back=min(req.back, ANCHOR_BYTES),
                                  budget=min(req.budget, idle_budget)))
            continue
        if want <= level:
            shared.append(req)
            continue
        share = floor + level
        back = min(req.back, max(ANCHOR_BYTES, share // 2), share - floor + min(req.back,
                                                                            ANCHOR_BYTES))
        shared.append(replace(req, back=back, budget=min(req.budget, share - back)))
    return shared + [None] * (len(requests) - taken)


def idle_paths(outcomes: Sequence[TailOutcome],
               idle: Collection[str] = ()) -> frozenset[str]:
    """The paths found unchanged by this tick's read (`TailOutcome.unchanged`: same size and
    mtime as the read before): read_tails' `idle` next tick, charged almost nothing of a
    shared batch budget (share_budget). A path of `idle` (this tick's) that was not read for
    want of the batch's bytes or the link's time (`unreached`) stays idle: nothing says it
    wrote, and a quiet file a slow link skips once would otherwise take a full share
    again, so on a link slow from the first tick the quiet files never settled as idle."""
    return frozenset(out.state.path for out in outcomes
                     if out.unchanged and out.error is None
                     or out.unreached and out.state.path in idle)


def unread_for(behind: Mapping[str, int] | None,
               outcomes: Sequence[TailOutcome]) -> dict[str, int]:
    """How many ticks in a row each path was not read for want of the batch's bytes or the
    link's time (read_tails' `behind` next tick: asked first): a file the batch did not reach
    (`skipped`) or a slow link's answer did not (`unreached`) one tick more than `behind`
    said; a file whose read failed for itself (a hung path, a deleted log, permission
    denied) -1, asked after the others next tick, so a file failing every tick does not take
    the batch's minimums ahead of them (one the batch then does not reach waits its turn
    with the others unread); one read is not behind."""
    before = behind or {}
    return {out.state.path: (max(0, before.get(out.state.path, 0)) + 1 if out.unreached
                             else -1)
            for out in outcomes if out.error is not None or out.unreached}


__all__ = [
    "ANCHOR_BYTES",
    "MIN_LINK_RATE",
    "IDLE_BUDGET",
    "IDLE_COST",
    "MIN_SHARE",
    "cut_by_slow_link",
    "idle_paths",
    "marked_files",
    "share_budget",
    "unread_for",
]
