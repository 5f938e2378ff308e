"""SFTP calls sending the requests trainbot's SFTP client sends, for the tests' SFTP fakes
(support/fake_cluster.py FakeSFTP, LocalTreeSFTP): each request is given to bot.cluster.sftp's
each_request block, as bot.cluster.sftp.DeadlineSFTPClient gives it, so a checkpoint lookup
over a fake counts what it would send to a server."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.cluster.sftp import open_failed, sent_request

# How trainbot's SFTP client (paramiko's SFTPClient, bot.cluster.sftp.DeadlineSFTPClient) sends
# what it is asked, one request at a time, each given to bot.cluster.sftp.each_request (as the
# real client does): a listing is its opendir, a readdir per batch of entries and the one
# answering that the directory ended, its close; a file's open, each read request, its close.
READDIR_BATCH = 16  # entries a readdir answer holds: paramiko's server's (OpenSSH's: 100)
READ_ALL = 8192  # what paramiko's read() of a whole file asks a request
MAX_READ = 32768  # and at most this much (SFTPFile.MAX_REQUEST_SIZE)


class SentRequests(Counter[str]):
    """The requests an SFTP fake sent, by kind (as tests/support/sftp_peer.py's Peer.requests
    counts those its server answered). Each is first given to each_request, which may refuse
    it: then it is neither sent nor counted."""

    def send(self, kind: str) -> None:
        sent_request(kind)
        self[kind] += 1


def counted_listing(sent: SentRequests, entries_of: Callable[[], list[Any]], *,
                    batch: int = READDIR_BATCH) -> list[Any]:
    """`entries_of()` (raising OSError for a directory that cannot be opened), listed with
    the requests paramiko's listdir_attr sends."""
    sent.send("opendir")
    try:
        entries = entries_of()
    except OSError:
        open_failed("opendir")
        raise
    for _ in range(-(-len(entries) // batch) + 1):  # a readdir per batch, then "no more"
        try:
            sent.send("readdir")
        except BaseException:
            sent.send("close")  # a listing refused half-way closes its directory
            raise
    sent.send("close")
    return entries


def counted_open(sent: SentRequests, data_of: Callable[[], bytes], *,
                 answer_at_most: int | None = None,
                 on_read: Callable[[int], None] | None = None) -> CountedFile:
    """A file opened for reading with paramiko's requests: its open (answered with an error,
    OSError, when `data_of()` raises it), then see CountedFile."""
    sent.send("open")
    try:
        data = data_of()
    except OSError:
        open_failed("open")
        raise
    return CountedFile(sent, data, answer_at_most=answer_at_most, on_read=on_read)


class CountedFile:
    """A remote file read as paramiko's SFTPFile reads it (opened with the default bufsize:
    unbuffered): `read(n)` asks for what it still lacks of n (at most 32 KiB a request) until
    it has n bytes or a request is answered with none (the end: that request sent too);
    `read()` asks 8 KiB a request to the end; `seek` from the end asks the open file's size
    first (an fstat); each request goes to each_request, the close too. A server may answer
    a read with fewer bytes than asked: `answer_at_most`. `on_read(n)`: the bytes each
    answer held."""

    def __init__(self, sent: SentRequests, data: bytes, *, answer_at_most: int | None = None,
                 on_read: Callable[[int], None] | None = None) -> None:
        self._sent = sent
        self._data = data
        self._answer_at_most = answer_at_most
        self._on_read = on_read
        self._pos = 0  # the caller's position
        self._realpos = 0  # the next request's offset
        self._rbuffer = b""
        self.closed = False

    def _request(self, size: int) -> bytes:
        self._sent.send("read")
        size = min(size, MAX_READ, self._answer_at_most or size)
        chunk = self._data[self._realpos:self._realpos + size]
        self._realpos += len(chunk)
        if self._on_read is not None:
            self._on_read(len(chunk))
        return chunk

    def read(self, size: int | None = None) -> bytes:
        if self.closed:
            raise OSError("File is closed")
        if size is None or size < 0:
            result, self._rbuffer = self._rbuffer, b""
            while chunk := self._request(READ_ALL):
                result += chunk
            self._pos += len(result)
            return result
        while len(self._rbuffer) < size:
            chunk = self._request(size - len(self._rbuffer))
            if not chunk:
                break
            self._rbuffer += chunk
        result, self._rbuffer = self._rbuffer[:size], self._rbuffer[size:]
        self._pos += len(result)
        return result

    def seek(self, offset: int, whence: int = 0) -> None:
        if whence == io.SEEK_END:
            self._sent.send("fstat")
            offset += len(self._data)
        elif whence == io.SEEK_CUR:
            offset += self._pos
        self._pos = self._realpos = offset
        self._rbuffer = b""

    def tell(self) -> int:
        return self._pos

    def stat(self) -> FileStat:
        self._sent.send("fstat")
        return FileStat(len(self._data), 0)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._sent.send("close")

    def __enter__(self) -> CountedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WrittenFile(io.BytesIO):
    """A file opened for writing: each write sent as paramiko does (32 KiB a request), the
    whole written by `done(data)` at its close."""

    def __init__(self, sent: SentRequests, done: Callable[[bytes], object]) -> None:
        super().__init__()
        self._sent = sent
        self._done = done
        self.pipelined = False

    def set_pipelined(self, pipelined: bool = True) -> None:
        self.pipelined = pipelined

    def write(self, data: Any) -> int:
        for _ in range(max(1, -(-len(data) // MAX_READ))):
            self._sent.send("write")
        return super().write(data)

    def close(self) -> None:
        if not self.closed:
            self._sent.send("close")
            self._done(self.getvalue())
        super().close()


@dataclass
class FileStat:
    st_size: int
    st_mtime: int
