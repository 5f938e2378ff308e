"""What the batched read script (bot/cluster/tail_read.sh) answers for one request, in Python:
the reference the real script is held to (tests/unit/cluster/test_tail_batch.py) and what the
in-memory fakes answer with."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.tail import (
    MISSING,
    NEW,
    READ,
    SAME,
    FileRead,
    ReadBatch,
    ReadRequest,
    frame,
    parse_frames,
)


def answer(req: ReadRequest, content: bytes | None, mtime: int, inode: int) -> FileRead:
    """The script's rules: missing; a new file (another inode, or shorter than the offset)
    from 0; unchanged size and mtime: nothing; else the window before the offset and the new
    bytes, at most `budget` of them."""
    if content is None:
        return FileRead(MISSING)
    size = len(content)
    if (req.inode is not None and inode != req.inode) or size < req.offset:
        return FileRead(NEW, size, mtime, inode, 0, content[:min(size, req.budget)])
    if size == req.size and mtime == req.mtime:
        return FileRead(SAME, size, mtime, inode)
    start = req.offset - req.back
    end = req.offset + min(size - req.offset, req.budget)
    return FileRead(READ, size, mtime, inode, start, content[start:end])


def answer_batch(requests: Sequence[ReadRequest],
                 lookup: dict[str, tuple[bytes, int, int]]) -> ReadBatch:
    """A whole batch through the real framing: frames built, then parsed back."""
    out = b"".join(frame(k, answer(req, *(lookup.get(req.path) or (None, 0, 0))))
                   for k, req in enumerate(requests, 1))
    return ReadBatch(parse_frames(out, [req.path for req in requests]).results,  # type: ignore[arg-type]
                     round_trips=1, bytes_moved=len(out))
