"""Following files by offset, pure: the tail state, what each answer of a batched read
(bot.core.tail_frames) means for it, and a tick's reads of many files (read_tails)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bot.core.tail_budget import (
    ANCHOR_BYTES,
    MIN_LINK_RATE,
    MIN_SHARE,
    cut_by_slow_link,
    idle_paths,
    share_budget,
    unread_for,
)
from bot.core.tail_frames import (
    DEFAULT_MAX_BYTES,
    FAILED,
    MISSING,
    NEW,
    READ,
    RETRY,
    SAME,
    Answers,
    FileRead,
    FramingError,
    ReadBatch,
    ReadRequest,
    askable_path,
    encode_requests,
    frame,
    parse_frames,
)
from bot.core.text import N_, Text


@dataclass(frozen=True)
class TailState:
    """Where the tail of one file stands; plain data, saved by the store between ticks.

    - `offset`: just after the last newline consumed; `line_no`: lines before it.
    - `size`: end of the bytes examined at the last read (offset + a pending partial line).
    - `anchor`: hex of the bytes just before `offset` (replacement check, docs/architecture.md).
    - `inode`: the file's inode at the last read (None when unknown); `mtime` (whole seconds)
      with `size` lets an untouched file be skipped without reading it.
    - `unterminated`: the last line consumed had no newline (a finished job's last line,
      `take_last_line`, or a line longer than a read, cut at the budget) and nothing came
      after it since: a newline arriving next ends that line, it is no line of its own.
    """

    path: str
    offset: int = 0
    inode: int | None = None
    size: int = 0
    line_no: int = 0
    anchor: str = ""
    mtime: int | None = None
    unterminated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TailState:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class TailChunk:
    """The result of one read: complete new lines and the state to persist.

    `first_line_no` is the 1-based line number of `lines[0]` in the file (so evidence can cite
    it); `bytes_read` is the number of new bytes consumed (the offset advance); `restarted` says
    the file was truncated, replaced or removed and reading began again at 0; `more` says bytes
    beyond the budget are waiting; `reason` says why a restart happened. `unfinished` is the
    file's last line as far as it is written (no newline yet: a progress bar redrawn after
    carriage returns), not consumed: it is read again, and is one of `lines` once complete, or
    once its writer has ended (`take_last_line`) (empty when the file ends with a newline or
    bytes beyond the budget are waiting).
    """

    lines: list[str]
    state: TailState
    restarted: bool
    bytes_read: int
    first_line_no: int
    more: bool = False
    reason: str = ""
    unfinished: bytes = b""


class FileReadFailed(OSError):
    """The login node could not read a followed file this time (FAILED); the next tick tries
    again. `path` is the file, `reason` why (the reader's sentence, FileRead.error)."""

    def __init__(self, path: str, reason: Text | str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class FileMissing(FileReadFailed):
    """A followed file that must exist does not (MISSING where `must_exist`: a log of a job
    that ran and ended: deleted, a wrong path, a path only the job's node has); the next tick
    asks again (a file late on NFS appears)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, N_("no such file"))

# ---- pure decisions -------------------------------------------------------------------------


def restart_reason(state: TailState, size: int, inode: int | None) -> str | None:
    """Why the file cannot be continued from `state` judging by its stat, or None."""
    if size < state.offset:
        return f"{state.path} shrank from {state.offset} to {size} bytes (truncated)"
    if state.inode is not None and inode is not None and inode != state.inode:
        return f"{state.path} was replaced (inode {state.inode} -> {inode})"
    return None


def split_complete_lines(data: bytes, *, force: bool = False) -> tuple[list[str], int]:
    """Complete lines in `data` and how many bytes they span; a partial last line is left.

    With `force` (a single line longer than the read limit) the whole of `data` is returned as
    one line, so the tail cannot stall on it. Lines lose their "\\n" and a trailing "\\r".
    """
    end = data.rfind(b"\n") + 1
    if end == 0:
        if force and data:
            return [data.decode("utf-8", errors="replace").rstrip("\r")], len(data)
        return [], 0
    text = data[:end].decode("utf-8", errors="replace")
    return [line.rstrip("\r") for line in text.split("\n")[:-1]], end


def advance(
    state: TailState, consumed: bytes, lines: int, size: int, inode: int | None
) -> TailState:
    """The state after consuming `consumed` (whole lines) at `state.offset`."""
    anchor = (bytes.fromhex(state.anchor) + consumed)[-ANCHOR_BYTES:] if consumed else None
    return replace(
        state,
        offset=state.offset + len(consumed),
        line_no=state.line_no + lines,
        size=size,
        inode=inode,
        anchor=anchor.hex() if anchor is not None else state.anchor,
    )


def fresh(state: TailState) -> TailState:
    """A state that reads `state.path` from the beginning."""
    return TailState(path=state.path)


def plan_read(state: TailState, budget: int, window: int = 0) -> ReadRequest:
    """The request that continues `state`: at most `budget` new bytes, with the anchor (or a
    `window` of bytes before the offset, for a warm-up: then the file is read even if it looks
    unchanged)."""
    if budget <= 0:
        raise ValueError("budget must be positive")
    anchor = len(state.anchor) // 2 if state.offset else 0
    back = min(state.offset, max(window, anchor))
    size = -1 if window else state.size
    return ReadRequest(state.path, state.offset, back, budget, size, state.mtime, state.inode)


@dataclass(frozen=True)
class TailStep:
    """`apply_read`'s answer: the chunk read, or None when the bytes before the offset changed
    (`reason`): the file must be read again from 0. `window` is the part of the answer before
    the offset (a warm-up window; empty when it did not match)."""

    chunk: TailChunk | None
    window: bytes = b""
    reason: str = ""


def apply_read(state: TailState, req: ReadRequest, got: FileRead, *,
               full_read: int, must_exist: bool = False) -> TailStep:
    """What one answer means for the tail at `state` (asked with `req`). Raises
    FileReadFailed for a failed read, or an answer that does not start where it was asked
    (the reader's fault: nothing of it is used), and FileMissing for a missing file that
    `must_exist`.

    `full_read` is the most one read of the file gives (its whole budget): that many bytes
    holding no newline, with bytes waiting after them, are a line longer than any read, cut
    there so the tail goes on (`unterminated`: a newline coming next ends it, no empty line).
    Fewer (a drain's read on the budget left, `req.budget` smaller) ending mid-line, or that
    many ending the file, leave that line whole for the next read (or `take_last_line`)."""
    if got.status == FAILED:
        raise FileReadFailed(state.path, got.error)
    if got.status == MISSING and must_exist:
        raise FileMissing(state.path)
    if got.status == MISSING:
        # Not created yet (job not started): an empty chunk. If it had been read before, the
        # next file is a new one: the state starts over.
        gone = state.offset > 0
        new_state = fresh(state) if gone else state
        why = f"{state.path} was removed" if gone else ""
        return TailStep(TailChunk([], new_state, gone, 0, new_state.line_no + 1, reason=why))
    if got.status == SAME:
        # Nothing written since the last read (a same-size rewrite within the same second of
        # mtime is not detectable here; the next append exposes it through the anchor).
        return TailStep(TailChunk([], state, False, 0, state.line_no + 1))
    if got.status == NEW:
        why = restart_reason(state, got.size, got.inode) or f"{state.path} is a new file"
        return TailStep(_chunk(fresh(state), got.data, got, full_read, True, why))
    if got.start != req.offset - req.back:  # the reader's bug: this file's, this tick's
        raise FileReadFailed(state.path, N_(
            "the login node's answer starts at byte %(start)s where byte %(asked)s was asked "
            "(a fault of trainbot's reader); nothing of it is used, and it is read again next "
            "tick", start=got.start, asked=req.offset - req.back))
    window, data = got.data[:req.back], got.data[req.back:]
    anchor = bytes.fromhex(state.anchor) if state.offset else b""
    if len(window) < req.back or window[len(window) - len(anchor):] != anchor:
        # Rewritten in place or replaced by a file at least as long: start over.
        return TailStep(None, reason=f"{state.path} was rewritten or replaced "
                                     "(bytes before offset changed)")
    return TailStep(_chunk(state, data, got, full_read, False, ""), window=window)


def _chunk(state: TailState, data: bytes, got: FileRead, cut_at: int, restarted: bool,
           reason: str) -> TailChunk:
    # the late newline of a line already taken without it (take_last_line, or cut at the
    # budget) ends it: skipped
    late_newline = 1 if state.unterminated and data[:1] == b"\n" else 0
    more = state.offset + len(data) < got.size
    # a whole read holding no newline is cut only when bytes wait after it: then the line is
    # longer than any read; one that long ending the file is its unfinished last line
    # (the skipped late newline is no byte of the line after it: that line is cut only when a
    # whole read's worth of it holds no newline)
    lines, used = split_complete_lines(data[late_newline:],
                                       force=more and len(data) - late_newline >= cut_at)
    used += late_newline
    cut = bool(lines) and data[used - 1:used] != b"\n"
    # `size` records the end of the bytes examined, so a read cut short by the budget goes on
    # next time while an unchanged file (with or without a pending partial line) is skipped.
    new_state = replace(advance(state, data[:used], len(lines), state.offset + len(data),
                                got.inode), mtime=got.mtime,
                        unterminated=cut or (state.unterminated and not data))
    return TailChunk(lines=lines, state=new_state, restarted=restarted, bytes_read=used,
                     first_line_no=state.line_no + 1, more=more, reason=reason,
                     unfinished=b"" if more else data[used:])


# ---- a tick's reads ------------------------------------------------------------------------


@dataclass
class TailItem:
    """One file to read this tick: from `state`, at most `budget` new bytes; `drain` (a
    finished job) reads on while bytes are waiting and budget is left; `window` asks for that
    many bytes before the offset too (warm-up after a restart); `must_exist`: a missing file is
    its error (FileMissing), not an empty chunk (a job that ran and ended has written its
    log); `last_line`: its writer has ended (a finished job's log or sampler file): an
    unfinished last line is read, even when the file looks unchanged, and is its last line
    (take_last_line)."""

    state: TailState
    budget: int
    drain: bool = False
    window: int = 0
    must_exist: bool = False
    last_line: bool = False


@dataclass
class TailOutcome:
    """What a tick read of one file: its chunks in order, the warm-up window (bytes just
    before the starting offset, when asked for and the file was still the same), the final
    state, whether bytes are still waiting, or the error that stopped it (`skipped`: not
    read this tick, more files than a batch's bytes reach: read_tails; `unreached`: not
    read for want of the batch's bytes or the link's time, skipped or its read FAILED
    `later`: asked first next tick, unread_for)."""

    state: TailState
    chunks: list[TailChunk] = field(default_factory=list)
    window: bytes = b""
    more: bool = False
    error: OSError | None = None
    skipped: bool = False  # not asked this tick: the batch's bytes did not reach it
    unreached: bool = False  # skipped, or a slow link's answer did not reach it
    # idle next tick: answered `same` (size and mtime as before), or a read asked without
    # its stat (a warm-up) answered the size and mtime known, or a file first read (nothing
    # known of it) was read to its end: one that prints is seen so at its next read
    unchanged: bool = False


def take_last_line(outcome: TailOutcome) -> TailOutcome:
    """A file whose writer has ended (a finished job's log or sampler file), read to its end:
    its unfinished last line (no newline: a process killed mid-write, a last
    `print(..., end="")`, a last progress bar, an error or a sample written without one) is
    its last line, consumed as the others.
    Unchanged when bytes are still waiting (`more`: the end is not read yet), when the read
    failed, or when the file ends with a newline. Consumed once: the state moves past it
    (`unterminated`), so a later read gives it again neither whole nor as a newline arriving
    late."""
    if outcome.error is not None or outcome.more or not outcome.chunks:
        return outcome
    last = outcome.chunks[-1]
    if not last.unfinished:
        return outcome
    text = last.unfinished.decode("utf-8", errors="replace").rstrip("\r")
    state = replace(advance(last.state, last.unfinished, 1, last.state.size, last.state.inode),
                    unterminated=True)
    taken = replace(last, lines=[*last.lines, text], state=state,
                    bytes_read=last.bytes_read + len(last.unfinished), unfinished=b"")
    return replace(outcome, chunks=[*outcome.chunks[:-1], taken], state=state)


def read_tails(items: Sequence[TailItem],
               read_batch: Callable[[list[ReadRequest]], Sequence[FileRead]],
               max_rounds: int = 2,
               batch_bytes: Callable[[int], int | None] | None = None,
               behind: Mapping[str, int] | None = None,
               idle: Collection[str] = (),
               groups: Sequence[object] | None = None) -> list[TailOutcome]:
    """Read every item in at most `max_rounds` batches: the first reads them all; the next
    ones only files that must be read again from 0 (bytes before the offset changed) and
    finished jobs' logs with more waiting within their budget. What is still waiting then is
    read next tick (`more`). A `last_line` item's unfinished last line, once its file is read
    to its end, is its last line (take_last_line). `batch_bytes(files)`, when given, is the
    most one batch of that many files may ask for (None: no limit): the files share it
    (share_budget); a file's share ending inside a line leaves that line whole for a later
    tick (only a line longer than its item's `budget`, or than half the batch's, is cut),
    and that tick gives the file at least twice the line's bytes seen so far (at most the
    batch's), so a long line is read whole. `behind` (of
    `unread_for`) says how many ticks in a row each path was not read for want of bytes or
    time: a batch asks those first, longest unread first, so files a slow link cuts off are
    read on the next ticks, not the same ones failing each time; and last the paths whose
    read failed last tick (-1: a hung path, a deleted log), which take no batch's minimums
    ahead of the others. `idle` (of `idle_paths`) names the paths found unchanged last tick:
    a shared batch charges them almost nothing (share_budget), so at a small budget the
    files that write all get their share. `groups` (one key per item: a job's log and
    sampler file) keeps files read together: a group goes by its file unread longest, so a
    slow link does not read one of a job's files one tick and the other the next (a job is
    judged on a tick that read all its files)."""
    outcomes = [TailOutcome(item.state) for item in items]
    budgets = [item.budget for item in items]
    full = list(budgets)
    pending: dict[int, tuple[ReadRequest, str]] = {}
    for i, item in enumerate(items):
        req = plan_read(item.state, item.budget, item.window)
        if item.last_line and item.state.size > item.state.offset:
            req = replace(req, size=-1)  # its pending unfinished line is read again
        pending[i] = (req, "")
    for round_no in range(max_rounds):
        if not pending:
            break
        waited = behind or {}
        keys = list(groups) if groups is not None else list(range(len(items)))
        first: dict[object, int] = {}
        longest: dict[object, int] = {}
        for i in pending:
            first[keys[i]] = min(first.get(keys[i], i), i)
            longest[keys[i]] = max(longest.get(keys[i], -1), waited.get(items[i].state.path, 0))
        order = sorted(pending, key=lambda i: (-longest[keys[i]], first[keys[i]], i))
        total = batch_bytes(len(order)) if batch_bytes is not None else None
        if total is not None:
            seen = {i: items[i].state.size - items[i].state.offset for i in order}
            # (only a first read that stats the file: one read again or always read is not)
            quiet = [round_no == 0 and items[i].state.path in idle
                     and pending[i][0].size >= 0 for i in order]
            shared = share_budget([pending[i][0] for i in order], total,
                                  [min(2 * seen[i], total) for i in order], quiet)
            for i, fitted, still in zip(order, shared, quiet, strict=True):
                if fitted is None:  # the batch's bytes do not reach it: another tick
                    del pending[i]
                    outcomes[i].more = True
                    outcomes[i].skipped = not outcomes[i].chunks
                    outcomes[i].unreached = True
                    continue
                pending[i] = (fitted, pending[i][1])
                if fitted.budget < budgets[i]:  # its share is all this tick reads of it
                    budgets[i] = fitted.budget
                    # a line no batch holds is cut at its share; an idle file's share is
                    # no batch's: its line waits for its share next tick (bytes wait: not idle)
                    if round_no == 0 and 2 * seen[i] >= total and not still:
                        full[i] = fitted.budget
            order = [i for i in order if i in pending]
        answers = read_batch([pending[i][0] for i in order])
        following: dict[int, tuple[ReadRequest, str]] = {}
        for i, got in zip(order, answers, strict=True):
            req, restart_why = pending[i]
            out = outcomes[i]
            if got.status == RETRY:  # changed while read in a bucket: read it again, exactly
                out.more = True
                following[i] = (replace(req, exact=True), restart_why)
                continue
            try:
                step = apply_read(out.state, req, got, full_read=full[i],
                                  must_exist=items[i].must_exist)
            except FileReadFailed as exc:
                out.error, out.unreached = exc, got.later
                continue
            if step.chunk is None:
                out.state, out.more = fresh(out.state), True
                following[i] = (plan_read(out.state, budgets[i]), step.reason)
                continue
            chunk = step.chunk
            if restart_why:
                chunk = replace(chunk, restarted=True, reason=restart_why)
            if not out.chunks and not restart_why:
                out.window = step.window
            out.chunks.append(chunk)
            out.state, out.more = chunk.state, chunk.more
            known = items[i].state.mtime is not None
            out.unchanged = got.status == SAME or not chunk.more and not restart_why and (
                not known and not chunk.restarted and items[i].state.offset == 0
                or known and (got.size, got.mtime) == (items[i].state.size,
                                                       items[i].state.mtime))
            budgets[i] -= chunk.bytes_read
            if items[i].drain and chunk.more and chunk.bytes_read and budgets[i] > 0:
                following[i] = (plan_read(chunk.state, budgets[i]), "")
        pending = following
    return [take_last_line(out) if item.last_line else out
            for item, out in zip(items, outcomes, strict=True)]


__all__ = [
    "ANCHOR_BYTES",
    "Answers",
    "DEFAULT_MAX_BYTES",
    "FAILED",
    "MIN_LINK_RATE",
    "MIN_SHARE",
    "MISSING",
    "NEW",
    "READ",
    "RETRY",
    "SAME",
    "FileMissing",
    "FileRead",
    "FileReadFailed",
    "FramingError",
    "ReadBatch",
    "ReadRequest",
    "TailChunk",
    "TailItem",
    "TailOutcome",
    "TailState",
    "TailStep",
    "advance",
    "apply_read",
    "cut_by_slow_link",
    "askable_path",
    "encode_requests",
    "frame",
    "fresh",
    "idle_paths",
    "parse_frames",
    "plan_read",
    "read_tails",
    "restart_reason",
    "share_budget",
    "split_complete_lines",
    "take_last_line",
    "unread_for",
]
