"""The batched read's protocol with the login node, pure: a batch's requests encoded as the
read script's stdin (bot/cluster/tail_read.sh) and its framed answer parsed back into each
file's bytes and stat, or, when the answer was cut short, the file it stopped at (what those
answers mean for each file's offset: bot.core.tail)."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.core.tail_budget import marked_files
from bot.core.text import N_, Text

DEFAULT_MAX_BYTES = 1 << 20
QUOTED_CHARS = 40  # how much of an answer a FramingError quotes
# what the read script's dd (bs=65536) writes of a file's own frame at once: an answer cut
# inside one of these writes was cut by the link, not by a read of the file that stopped
DD_BLOCK = 65536

# What the login node says of one file (the frame's status word).
READ = "read"  # bytes from `start`: the window asked for before the offset, then new bytes
NEW = "new"  # shrank below the offset or another inode: bytes from 0 (a new file)
SAME = "same"  # size and mtime as last time: nothing read
MISSING = "missing"  # no such file (or not reachable through the path)
FAILED = "failed"  # the read itself failed (permission, I/O error, no answer in time)
RETRY = "retry"  # changed while it was read in a bucket: read it again, exactly



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
    # the bytes of the file being sent when cut (its own process), without spaces ending them
    # (maybe the padding of a file that gave fewer bytes than announced)
    cut: FileRead | None = None
    cut_bytes: int = 0  # how many of its bytes certainly came before the cut
    # the bytes the script writes of the cut file at once (DD_BLOCK in a file's own frame; 0:
    # not known, a bucket's tail): a cut not on such a boundary is the link's
    cut_block: int = 0
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
    cut_bytes = cut_block = 0
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
                    cut_bytes, cut_block = max(0, min(len(out) - body, length)), DD_BLOCK
                    arriving = len(out) > body + length  # its end line, in part
                    # dd writes its bytes in order; the script pads a file that gave fewer
                    # than announced (shrank after stat, a failed read) with spaces, and only
                    # its end line says how many were data: spaces ending a cut answer may be
                    # that padding, so they are not its bytes (read again next tick)
                    data = out[body:body + cut_bytes].rstrip(b" ")
                    if status != MISSING and data:
                        cut = FileRead(status, size, mtime, inode, start, data)
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
        return Answers(results, at - 1, cut, cut_bytes, cut_block, arriving)
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



__all__ = [
    "DD_BLOCK",
    "DEFAULT_MAX_BYTES",
    "FAILED",
    "MISSING",
    "NEW",
    "READ",
    "RETRY",
    "SAME",
    "Answers",
    "FileRead",
    "FramingError",
    "ReadBatch",
    "ReadRequest",
    "askable_path",
    "encode_requests",
    "frame",
    "parse_frames",
]
