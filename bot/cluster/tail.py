"""Incremental tail of a remote log over SFTP: only new bytes, complete lines, restart-aware."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

ANCHOR_BYTES = 64
DEFAULT_MAX_BYTES = 1 << 20


class SFTPLike(Protocol):
    """What the tail needs of an SFTP client (bot.cluster.sftp.SFTPPool): stat, open to read."""

    def stat(self, path: str) -> Any: ...

    def open(self, filename: str, mode: str = "r", bufsize: int = -1) -> Any: ...


@dataclass(frozen=True)
class TailState:
    """Where the tail of one file stands; plain data, saved by the store between ticks.

    - `offset`: just after the last newline consumed; `line_no`: lines before it.
    - `size`: end of the bytes examined at the last read (offset + a pending partial line).
    - `anchor`: hex of the bytes just before `offset` (replacement check, docs/architecture.md).
    - `inode`: None over SFTP; `mtime` (whole seconds) with `size` lets an untouched file be
      skipped without opening it.
    """

    path: str
    offset: int = 0
    inode: int | None = None
    size: int = 0
    line_no: int = 0
    anchor: str = ""
    mtime: int | None = None

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
    beyond `max_bytes` are waiting; `reason` says why a restart happened.
    """

    lines: list[str]
    state: TailState
    restarted: bool
    bytes_read: int
    first_line_no: int
    more: bool = False
    reason: str = ""


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


# ---- SFTP adapter ---------------------------------------------------------------------------


def read_new_lines(
    sftp: SFTPLike, state: TailState, max_bytes: int = DEFAULT_MAX_BYTES
) -> TailChunk:
    """Read the complete lines appended to `state.path` since `state`; at most `max_bytes` new.

    A missing file (job not started yet) gives an empty chunk; if the file had been read before,
    that chunk says `restarted` and the state starts over, since the next file is a new one.
    """
    if max_bytes <= 0:
        raise ValueError("max_bytes must be positive")
    try:
        st = sftp.stat(state.path)
    except FileNotFoundError:  # paramiko maps SFTP "no such file" to ENOENT
        gone = state.offset > 0
        new_state = fresh(state) if gone else state
        why = f"{state.path} was removed" if gone else ""
        return TailChunk([], new_state, gone, 0, new_state.line_no + 1, reason=why)
    size = int(st.st_size or 0)
    inode = getattr(st, "st_ino", None)
    mtime = getattr(st, "st_mtime", None)
    mtime = int(mtime) if mtime is not None else None
    reason = restart_reason(state, size, inode) or ""
    restarted = bool(reason)
    if restarted:
        state = fresh(state)
    elif size == state.size and mtime == state.mtime:
        # Nothing written since the last read (a same-size rewrite within the same second of
        # mtime is not detectable here; the next append exposes it through the anchor).
        return TailChunk([], state, False, 0, state.line_no + 1)

    anchor = bytes.fromhex(state.anchor) if state.offset else b""
    new_len = min(size - state.offset, max_bytes)
    data = b""
    if new_len > 0 or anchor:
        with sftp.open(state.path, "rb") as f:
            f.seek(state.offset - len(anchor))
            data = _read_exact(f, len(anchor) + max(new_len, 0))
        if data[: len(anchor)] != anchor:
            # Rewritten in place or replaced by a file at least as long: start over.
            restarted = True
            reason = f"{state.path} was rewritten or replaced (bytes before offset changed)"
            state = fresh(state)
            new_len = min(size, max_bytes)
            with sftp.open(state.path, "rb") as f:
                data = _read_exact(f, new_len)
        else:
            data = data[len(anchor) :]

    lines, used = split_complete_lines(data, force=len(data) >= max_bytes)
    # `size` records the end of the bytes examined, so a read cut short by `max_bytes` goes on
    # next time while an unchanged file (with or without a pending partial line) is skipped.
    new_state = replace(
        advance(state, data[:used], len(lines), state.offset + len(data), inode), mtime=mtime
    )
    return TailChunk(
        lines=lines,
        state=new_state,
        restarted=restarted,
        bytes_read=used,
        first_line_no=state.line_no + 1,
        more=state.offset + len(data) < size,
        reason=reason,
    )


def _read_exact(f: Any, n: int) -> bytes:
    """Up to `n` bytes; fewer only at end of file (paramiko may return short reads)."""
    parts: list[bytes] = []
    while n > 0:
        b = f.read(n)
        if not b:
            break
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


__all__ = [
    "TailChunk",
    "TailState",
    "advance",
    "read_new_lines",
    "restart_reason",
    "split_complete_lines",
]
