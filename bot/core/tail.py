"""Following files by offset, pure: the tail state, the batched read protocol (requests out,
framed chunks back, bot.cluster.tail) and the decisions over what comes back."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bot.core.tail_budget import (
    ANCHOR_BYTES,
    MIN_LINK_RATE,
    MIN_SHARE,
    cut_by_slow_link,
    marked_files,
    share_budget,
    unread_for,
)
from bot.core.text import N_, Text

DEFAULT_MAX_BYTES = 1 << 20
QUOTED_CHARS = 40  # how much of an answer a FramingError quotes

# What the login node says of one file (the frame's status word).
READ = "read"  # bytes from `start`: the window asked for before the offset, then new bytes
NEW = "new"  # shrank below the offset or another inode: bytes from 0 (a new file)
SAME = "same"  # size and mtime as last time: nothing read
MISSING = "missing"  # no such file (or not reachable through the path)
FAILED = "failed"  # the read itself failed (permission, I/O error, no answer in time)
RETRY = "retry"  # changed while it was read in a bucket: read it again, exactly


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


# ---- the protocol ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadRequest:
    """One file of a batch: new bytes from `offset` (at most `budget`), with the `back` bytes
    before it (the anchor, or a warm-up window). `size`, `mtime` and `inode` are what the last
    read saw: a file with the same size and mtime is not read (`inode`: another one is a new
    file); `size=-1` always reads."""

    path: str
    offset: int = 0
    back: int = 0
    budget: int = DEFAULT_MAX_BYTES
    size: int = -1
    mtime: int | None = None
    inode: int | None = None
    exact: bool = False  # read with its own process, never in a bucket (a retry)


@dataclass(frozen=True)
class FileRead:
    """What the login node answered for one request: the file's stat and the bytes read from
    `start` (see the statuses above); `error` says why a read FAILED (a sentence for people,
    N_(): an incident whose log could not be read says it); `later`: it failed for want of
    the link's time (a slow link's answer did not reach it), not for the file."""

    status: str
    size: int = 0
    mtime: int | None = None
    inode: int | None = None
    start: int = 0
    data: bytes = b""
    error: Text | str = ""
    # FAILED for want of time, not for the file: the link was too slow to reach it (asked
    # first next tick: unread_for)
    later: bool = False


@dataclass(frozen=True)
class ReadBatch:
    """A batch's answers (one per request, in order) and what it cost."""

    results: list[FileRead]
    round_trips: int = 1
    bytes_moved: int = 0


class FramingError(ValueError):
    """The login node's answer is not a sequence of well-formed frames. Raised with its
    sentence (a Text, N_(): what is wrong and where in the answer, its stray text quoted),
    which the reader's error carries into what a person reads."""


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


def _num(value: int | None) -> bytes:
    return b"x" if value is None else b"%d" % value


def _sh_word(raw: bytes) -> bytes:
    return b"'" + raw.replace(b"'", b"'\\''") + b"'"


def askable_path(path: str) -> bool:
    """Whether `path` can be asked of the read script: not empty, no NUL byte (no file name
    holds one, and sh's arguments cannot), and bytes (UTF-8, undecodable bytes kept by
    surrogateescape; a lone surrogate of another kind is no file name's). A caller asks only
    for such paths (the watcher's follower makes any other its job's FileReadFailed)."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return bool(raw) and b"\0" not in raw


def encode_requests(requests: Sequence[ReadRequest]) -> bytes:
    """The batch as the read script's stdin: two lines of sh, `set -- 'PATH' "$t" ...` (every
    path single-quoted byte for byte, a newline in it included, each followed by the
    script's separator) and `nums='OFFSET BACK BUDGET SIZE MTIME INODE EXACT ...'` (x:
    unknown). Every path must be `askable_path` (ValueError otherwise: the caller's bug)."""
    paths, nums = [], []
    for req in requests:
        if not askable_path(req.path):
            raise ValueError(f"cannot read path {req.path!r}: empty, holding a NUL byte or "
                             "not a file name's bytes")
        raw = req.path.encode("utf-8", "surrogateescape")
        if not 0 <= req.back <= req.offset or req.budget <= 0:
            raise ValueError(f"bad read request for {req.path!r}: {req}")
        paths.append(_sh_word(raw) + b' "$t"')
        nums.append(b"%d %d %d %d %s %s %d" % (
            req.offset, req.back, req.budget, req.size, _num(req.mtime), _num(req.inode),
            req.exact))
    return b"set -- " + b" ".join(paths) + b"\nnums='" + b" ".join(nums) + b"'\n"


_HEADER = re.compile(rb"F(\d+) (read|new|same|missing) (\d+) (-?\d+) (\d+) (\d+) (\d+)\n")
_TRAILER = re.compile(rb"E(\d+) (\d+) (\d+)\n")


def frame(index: int, result: FileRead, *, padded_to: int | None = None, rc: int = 0) -> bytes:
    """One frame as the read script writes it (for tests and stand-ins): a header line, the
    data padded with spaces to the length announced, a trailer with the real length."""
    if result.status == MISSING:
        return b"F%d missing 0 0 0 0 0\nE%d 0 0\n" % (index, index)
    length = len(result.data) if padded_to is None else padded_to
    head = b"F%d %s %d %d %d %d %d\n" % (index, result.status.encode(), result.size,
                                         result.mtime or 0, result.inode or 0, result.start,
                                         length)
    pad = b" " * (length - len(result.data))
    return head + result.data + pad + b"E%d %d %d\n" % (index, len(result.data), rc)


@dataclass(frozen=True)
class Answers:
    """The read script's output, parsed: one answer per request (None: not answered, the
    output ended first) and, when it was cut short, the request it was working on then."""

    results: list[FileRead | None]
    stopped_at: int | None = None
    cut: FileRead | None = None  # the bytes of the file being sent when cut (its own process)
    cut_bytes: int = 0  # how many of its bytes certainly came before the cut
    # a part the script writes at once (a header or end line, the stat part, a bucket's
    # bytes whole) came in part: the link cut it, the script was not waiting on a file
    arriving: bool = False


_DEFERRED = re.compile(rb"G(\d+) (read|new) (\d+) (-?\d+) (\d+) (\d+) (\d+) (\d+)\n")
_BUCKET = re.compile(rb"B(\d+) (\d+) (\d+)(?: (\S+))?\n")
_BUCKET_END = re.compile(rb"D(\d+) (\d+) (\d+)\n")
_POST = re.compile(rb"S(\S+) (\d+)\n")


def parse_frames(out: bytes, paths: Sequence[str]) -> Answers:
    """The answers in the read script's output (bot/cluster/tail_read.sh describes it) to a
    batch asking for `paths`, in order (what an error names).

    Every part is length-framed (a header announces the bytes that follow, a trailer says
    how many of them are data), so any byte in a file, a frame marker included, is data. A
    bucketed file's bytes are the last `len` of its share of its bucket (its last `bucket`
    bytes, or the whole file when shorter), followed by the bucket's mark (when its header
    names one), kept only if stat saw it and every file before it in the bucket unchanged
    after the read (else RETRY: read it again exactly). Output cut short (no answer in time)
    gives the answers before the cut and `stopped_at` (in a bucket, the marks that came say
    which file it was sending and how many of its bytes came: `cut_bytes`). Raises
    FramingError for anything else: a malformed part, an index out of order, stray bytes.
    """
    count = len(paths)
    results: list[FileRead | None] = [None] * count
    deferred: dict[int, tuple[str, int, int, int, int, int, int]] = {}
    members: dict[int, list[int]] = {}
    shares: dict[int, bytes | None] = {}  # bucket -> its bytes (None: misaligned)
    marks: dict[int, bytes] = {}  # bucket -> the mark after each file's bytes (b"": none)
    post: bytes | None = None
    post_sep = b""
    headed = 0  # requests with a header so far
    pos = 0
    at: int | None = None  # where output cut short stopped (1-based request)
    cut: FileRead | None = None
    cut_bytes = 0
    arriving = False
    while pos < len(out):
        kind = out[pos:pos + 1]
        if out.find(b"\n", pos) < 0:
            if len(out) - pos < 256 and kind in (b"F", b"G", b"B", b"S"):
                at = headed + 1 if kind in (b"F", b"G") else _first_unread(deferred, shares,
                                                                           members)
                arriving = True  # a line the script writes at once
                break
            raise FramingError(N_("stray output at byte %(pos)s, with no newline after it: "
                                  "%(quoted)s", pos=pos, quoted=_quoted(out, pos)))
        if kind == b"F":
            head = _HEADER.match(out, pos)
            if head is None:
                raise _malformed(out, pos)
            index = _next_index(head, headed, count)
            headed = index
            status = head.group(2).decode()
            size, mtime, inode, start, length = (int(head.group(i)) for i in range(3, 8))
            body = head.end()
            tail = _TRAILER.match(out, body + length)
            if tail is None:
                if _cut_short(out, body + length, b"E"):
                    at = index
                    cut_bytes = max(0, min(len(out) - body, length))
                    arriving = len(out) > body + length  # its end line, in part
                    if status != MISSING and cut_bytes:  # dd writes its bytes in order
                        cut = FileRead(status, size, mtime, inode, start,
                                       out[body:body + cut_bytes])
                    break
                raise FramingError(N_("the answer for %(path)s has no end line after its "
                                      "%(length)s bytes", path=paths[index - 1], length=length))
            got, rc = int(tail.group(2)), int(tail.group(3))
            if int(tail.group(1)) != index or got > length:
                raise FramingError(N_("the answer for %(path)s ends with %(quoted)s, which does "
                                      "not match its header", path=paths[index - 1],
                                      quoted=_quoted(tail.group(0), 0)))
            pos = tail.end()
            if status == MISSING:
                results[index - 1] = FileRead(MISSING)
            elif rc != 0:
                results[index - 1] = FileRead(
                    FAILED, size, mtime, inode, start,
                    error=N_("reading it failed on the login node (dd exit %(code)s)",
                             code=rc))
            else:
                results[index - 1] = FileRead(status, size, mtime, inode, start,
                                              out[body:body + got])
        elif kind == b"G":
            head = _DEFERRED.match(out, pos)
            if head is None:
                raise _malformed(out, pos)
            index = _next_index(head, headed, count)
            headed = index
            size, mtime, inode, start, length, bucket = (int(head.group(i)) for i in range(3, 9))
            if not 0 < length <= min(bucket, size):
                raise FramingError(N_("the answer for %(path)s announces %(length)s bytes in a "
                                      "bucket of %(bucket)s bytes, more than the bucket or the "
                                      "file holds", path=paths[index - 1], length=length,
                                      bucket=bucket))
            deferred[index] = (head.group(2).decode(), size, mtime, inode, start, length, bucket)
            members.setdefault(bucket, []).append(index)
            pos = head.end()
        elif kind == b"B":
            head = _BUCKET.match(out, pos)
            if head is None:
                raise _malformed(out, pos)
            bucket, n, total = (int(head.group(i)) for i in range(1, 4))
            mark = marks[bucket] = head.group(4) or b""
            lengths = [min(bucket, deferred[i][1]) for i in members.get(bucket, ())]
            if bucket in shares or len(lengths) != n or \
                    total != sum(lengths) + n * len(mark):
                raise FramingError(N_("the bucket of %(bucket)s bytes announces %(n)s files and "
                                      "%(total)s bytes, which its files' headers do not add up "
                                      "to", bucket=bucket, n=n, total=total))
            body = head.end()
            tail = _BUCKET_END.match(out, body + total)
            if tail is None:
                if _cut_short(out, body + total, b"D"):
                    got_bytes = max(0, min(len(out) - body, total - 1))
                    if mark:  # each file's bytes end at its mark: the one being sent is exact
                        came = min(len(out) - body, total)
                        being, since = marked_files(out, body, body + came, mark, n)
                        # every byte came but a file's mark did not: files that grew filled
                        # the bucket and tail waits on a later file (its end line is written
                        # once tail ends): hung, whatever came after the last mark
                        cut_bytes = body + came - since if came < total else 0
                        arriving = being >= n  # every file's: the padding and end line
                        at = members[bucket][min(being, n - 1)]
                        break
                    ends = list(itertools.accumulate(lengths))
                    being = bisect.bisect_right(ends, got_bytes)
                    # of its share, only the bytes past what the files before could have
                    # sent: one shorter than the bucket that grew after stat sends up to the
                    # bucket's size, so fewer may be an earlier file's (this one hung)
                    cut_bytes = max(0, got_bytes - being * bucket)
                    at = members[bucket][being]  # being read
                    arriving = len(out) - body >= total  # every byte, its end line not
                    break
                raise FramingError(N_("the bucket of %(bucket)s bytes has no end line after its "
                                      "%(total)s bytes", bucket=bucket, total=total))
            got, rc = int(tail.group(2)), int(tail.group(3))
            if int(tail.group(1)) != bucket or got > total:
                raise FramingError(N_("the bucket of %(bucket)s bytes ends with %(quoted)s, which "
                                      "does not match its header", bucket=bucket,
                                      quoted=_quoted(tail.group(0), 0)))
            shares[bucket] = out[body:body + total] if got == total and rc == 0 else None
            pos = tail.end()
        elif kind == b"S":
            head = _POST.match(out, pos)
            if head is None or post is not None:
                raise _malformed(out, pos)  # (or a second stat part)
            length = int(head.group(2))
            if len(out) < head.end() + length + 1:
                at = min(deferred) if deferred else None
                arriving = True  # written at once, after the stat that may hang
                break
            if out[head.end() + length:head.end() + length + 1] != b"\n":
                raise FramingError(N_("the stat part has no newline after its %(length)s bytes",
                                      length=length))
            post, post_sep = out[head.end():head.end() + length], head.group(1)
            pos = head.end() + length + 1
        else:
            raise FramingError(N_("stray output at byte %(pos)s: %(quoted)s", pos=pos,
                                  quoted=_quoted(out, pos)))
    if at is None and headed < count:  # ended between two answers
        at = headed + 1
    if at is None and deferred and (post is None or set(shares) != set(members)):
        at = _first_unread(deferred, shares, members)
    if at is not None:
        return Answers(results, at - 1, cut, cut_bytes, arriving)
    if deferred:
        _resolve(results, deferred, members, shares, marks, post or b"", post_sep)
    return Answers(results)


def _malformed(out: bytes, pos: int) -> FramingError:
    """The error for a header (of a file's answer, a bucket or the stat part) at byte `pos`
    that does not read as one."""
    return FramingError(N_("malformed header at byte %(pos)s: %(quoted)s", pos=pos,
                           quoted=_quoted(out, pos)))


def _quoted(out: bytes, start: int) -> str:
    """`out` from byte `start` on as a FramingError quotes it for a person (the text of a
    shell greeting that came before the frames): decoded (bytes that are not UTF-8
    replaced), in quotes with its control characters escaped (`\\n`), cut after
    QUOTED_CHARS characters with a `…` after the quotes; never a bytes repr (`b'…'`)."""
    raw = out[start:start + 4 * QUOTED_CHARS]  # a UTF-8 character is 4 bytes at most
    text = raw.decode("utf-8", "replace")
    cut = len(text) > QUOTED_CHARS or start + len(raw) < len(out)
    return repr(text[:QUOTED_CHARS]) + ("…" if cut else "")


def _next_index(head: re.Match[bytes], headed: int, count: int) -> int:
    index = int(head.group(1))
    if index != headed + 1 or index > count:
        raise FramingError(N_("answer %(index)s came where answer %(due)s of %(count)s was "
                              "due", index=index, due=headed + 1, count=count))
    return index


def _first_unread(deferred: dict[int, Any], shares: dict[int, bytes | None],
                  members: dict[int, list[int]]) -> int | None:
    """The first bucketed file whose bucket has not come (1-based), else the first one."""
    waiting = [i for bucket, ids in members.items() if bucket not in shares for i in ids]
    return min(waiting) if waiting else (min(deferred) if deferred else None)


def _resolve(results: list[FileRead | None],
             deferred: dict[int, tuple[str, int, int, int, int, int, int]],
             members: dict[int, list[int]], shares: dict[int, bytes | None],
             marks: dict[int, bytes], post: bytes, sep: bytes) -> None:
    """Each bucketed file's answer: the last `len` bytes of its share of its bucket, if stat
    saw it unchanged after the read (the share then ends at the size it had before, and its
    bucket's mark follows it)."""
    lines = post.split(b"\n") if post else []
    after: dict[int, bytes | None] = {}
    li = 0
    for index in sorted(deferred):
        line = lines[li] if li < len(lines) else b""
        if line.split(b" ", 1)[0] == sep:  # gone since: no line of its own
            after[index] = None
            li += 1
            continue
        after[index] = line
        li += 2  # its line, then the separator's
    for bucket, indexes in members.items():
        share, mark = shares[bucket], marks.get(bucket, b"")
        at = 0
        for index in indexes:
            status, size, mtime, inode, start, length, _ = deferred[index]
            part = min(bucket, size)
            piece = share[at:at + part] if share is not None else b""
            marked = share is not None and share[at + part:at + part + len(mark)] == mark
            at += part + len(mark)
            seen = b"%d %d" % (size, mtime)
            stat_line = after.get(index)
            if not marked or stat_line is None or stat_line.split(b" ", 1)[1:] != [seen] or \
                    stat_line.split(b" ", 1)[0].split(b":")[-1] != b"%d" % inode:
                # Changed while read: its share may be longer or shorter, so the shares after
                # it in the bucket may be shifted too.
                results[index - 1] = FileRead(RETRY, size, mtime, inode)
                share = None
                continue
            results[index - 1] = FileRead(status, size, mtime, inode, start,
                                          piece[part - length:])


def _cut_short(out: bytes, at: int, marker: bytes) -> bool:
    """The output ends inside the data before `at`, or inside the trailer starting there."""
    rest = out[at:]
    return len(rest) < 128 and b"\n" not in rest and rest[:1] in (marker, b"")


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
               behind: Mapping[str, int] | None = None) -> list[TailOutcome]:
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
    ahead of the others."""
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
        order = sorted(pending, key=lambda i: (-waited.get(items[i].state.path, 0), i))
        total = batch_bytes(len(order)) if batch_bytes is not None else None
        if total is not None:
            seen = {i: items[i].state.size - items[i].state.offset for i in order}
            shared = share_budget([pending[i][0] for i in order], total,
                                  [min(2 * seen[i], total) for i in order])
            for i, fitted in zip(order, shared, strict=True):
                if fitted is None:  # the batch's bytes do not reach it: another tick
                    del pending[i]
                    outcomes[i].more = True
                    outcomes[i].skipped = not outcomes[i].chunks
                    outcomes[i].unreached = True
                    continue
                pending[i] = (fitted, pending[i][1])
                if fitted.budget < budgets[i]:  # its share is all this tick reads of it
                    budgets[i] = fitted.budget
                    if round_no == 0 and 2 * seen[i] >= total:  # a line no batch holds
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
            budgets[i] -= chunk.bytes_read
            if items[i].drain and chunk.more and chunk.bytes_read and budgets[i] > 0:
                following[i] = (plan_read(chunk.state, budgets[i]), "")
        pending = following
    return [take_last_line(out) if item.last_line else out
            for item, out in zip(items, outcomes, strict=True)]


__all__ = [
    "ANCHOR_BYTES",
    "Answers",
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
    "parse_frames",
    "plan_read",
    "read_tails",
    "restart_reason",
    "share_budget",
    "split_complete_lines",
    "take_last_line",
    "unread_for",
]
