"""The logs and sampler files of a tick, read in one remote command: a fixed POSIX sh script
(tail_read.sh) gets every (path, offset, window, budget, last stat) and answers in frames."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Protocol

from bot.cluster.errors import ClusterError, said
from bot.cluster.ssh import Exchange
from bot.core.tail_budget import cut_by_slow_link
from bot.core.tail_frames import (
    FAILED,
    FileRead,
    FramingError,
    ReadBatch,
    ReadRequest,
    encode_requests,
    parse_frames,
)
from bot.core.text import N_, Text

log = logging.getLogger(__name__)

SCRIPT = resources.files("bot.cluster").joinpath("tail_read.sh").read_text(encoding="utf-8")
ARGV = ("/bin/sh", "-c", SCRIPT, "trainbot-tail")
PER_FILE_S = 0.02  # time allowed per file on top of the base timeout
HUNG_RETRY_S = 300.0  # a path that did not answer is asked again after this long
OUTPUT_SHARE = 0.75  # of the output cap, what a batch asks (a bucket sends <= 1.25x its bytes)
FRAME_BYTES = 256  # a file's frame lines and stat lines, at most
MIN_BATCH = 16 << 10  # the fewest bytes a batch asks, however slow the link
LOGIN_NODE = N_("the login node")  # where files are read when no cluster is named


class Exchanger(Protocol):
    """What the reader needs of the cluster's runner (bot.cluster.ssh.SSHRunner.exchange,
    which raises ReadCutOff, a ClusterUnavailable, when the channel closes before the
    command's end: the batch is then read again next time, never half-applied)."""

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange: ...


class ShellTailReader:
    """bot.services.ports.TailReader: one remote command answers a whole batch.

    Every wait is bounded: a batch must answer within `timeout` plus PER_FILE_S per file. The
    script streams its answers in order, so when it does not end in time the answers already
    received are kept and the output tells the file it was at, the path that hangs (a dead
    NFS or Lustre server): it gets FAILED, the files not answered yet are asked again at once
    in a second command, and that path is left out (FAILED at once) for HUNG_RETRY_S, so a
    hung path costs one timeout, not one per tick.

    What a batch asks is bounded (`batch_bytes`, which the files share: read_tails): below
    the runner's output cap (`max_output`), so a backlog never makes the whole answer too
    large, and to what the link carried in time: an answer cut by the timeout while bytes
    were still coming is a slow link, not a hung path: the bytes of the files answered are
    kept (and of the file being sent, from its start), the rest are read next tick, and the
    next batches ask half of what came per `timeout` (doubled again after each batch
    answered within half its time).
    """

    def __init__(self, runner: Exchanger, *, where: str | Text = LOGIN_NODE,
                 timeout: float = 15.0, clock: Callable[[], float] = time.monotonic,
                 max_output: int = 64 << 20) -> None:
        self.runner, self.where, self.timeout, self.clock = runner, where, timeout, clock
        self.max_output = max_output
        self._hung: dict[str, float] = {}  # path -> when it last did not answer
        self._slow: int | None = None  # bytes a batch asks since a slow answer (None: no limit)

    def batch_bytes(self, files: int) -> int:
        """The most a batch of `files` files may ask for (TailReader.batch_bytes)."""
        cap = max(MIN_BATCH, int(self.max_output * OUTPUT_SHARE) - FRAME_BYTES * files)
        return cap if self._slow is None else min(cap, self._slow)

    def _paced(self, elapsed: float, limit: float) -> None:
        """After a whole answer: a budget cut by a slow link doubles when the batch was
        answered within half its time, however few bytes it carried (quiet logs answer
        `same`: a budget left where it was would stay at its floor for good), up to no
        limit; a link still slow cuts the next answer and halves it again."""
        if self._slow is not None and 2 * elapsed < limit:
            self._slow = None if 2 * self._slow >= self.max_output else 2 * self._slow

    def read(self, requests: Sequence[ReadRequest]) -> ReadBatch:
        now = self.clock()
        results: list[FileRead | None] = [None] * len(requests)
        todo = []
        for i, req in enumerate(requests):
            since = self._hung.get(req.path)
            if since is not None and now - since < HUNG_RETRY_S:
                results[i] = FileRead(FAILED, error=N_(
                    "it did not answer within the read timeout %(ago)s s ago; asked again "
                    "after %(retry)s s", ago=f"{now - since:.0f}", retry=f"{HUNG_RETRY_S:.0f}"))
            else:
                todo.append(i)
        round_trips = moved = 0
        for _attempt in (1, 2):
            if not todo:
                break
            stdin = encode_requests([requests[i] for i in todo])
            limit = self.timeout + PER_FILE_S * len(todo)
            began = self.clock()
            answer = self.runner.exchange(ARGV, stdin=stdin, timeout=limit)
            elapsed = self.clock() - began
            round_trips += 1
            moved += len(stdin) + len(answer.stdout)
            try:
                got = parse_frames(answer.stdout, [requests[i].path for i in todo])
            except FramingError as exc:
                raise ClusterError(N_(
                    "reading files on %(where)s: the answer is not the read script's (%(error)s; "
                    "its error output: %(stderr)s). Something printed into the command's "
                    "output, most often a shell startup file (~/.bashrc, /etc/bashrc) on the "
                    "login node: make it print nothing when the shell is not interactive.",
                    where=self.where, error=said(exc), stderr=_tail(answer.stderr))) from exc
            for i, result in zip(todo, got.results, strict=True):
                if result is not None:
                    results[i] = result
                    self._hung.pop(requests[i].path, None)
            if got.stopped_at is None:
                self._paced(elapsed, limit)
                if answer.exit_code != 0:
                    log.warning("reading files on %s: exit %s after every answer: %s",
                                self.where, answer.exit_code, _tail(answer.stderr))
                break
            if answer.exit_code is not None:
                raise ClusterError(_stopped(self.where, answer.exit_code,
                                            requests[todo[got.stopped_at]].path,
                                            _tail(answer.stderr)))
            if cut_by_slow_link(got, len(answer.stdout), limit):  # not a hung path
                self._slowed(requests, todo, got.stopped_at, got.cut, answer, limit, results)
                break
            hung = todo[got.stopped_at]
            path = requests[hung].path
            self._hung[path] = now
            log.warning("reading files on %s: %s did not answer within %.0f s; left out for "
                        "%.0f s", self.where, path, limit, HUNG_RETRY_S)
            results[hung] = FileRead(FAILED, error=N_("no answer within %(limit)s s (a hung "
                                                      "filesystem?)", limit=f"{limit:.0f}"))
            todo = [i for i in todo if results[i] is None]
        final = [r if r is not None else
                 FileRead(FAILED, error=N_("not read: other paths of the batch hung"),
                          later=True)
                 for r in results]
        return ReadBatch(final, round_trips=round_trips, bytes_moved=moved)

    def _slowed(self, requests: Sequence[ReadRequest], todo: list[int], stopped: int,
                cut: FileRead | None, answer: Exchange, limit: float,
                results: list[FileRead | None]) -> None:
        """An answer cut by the timeout while the file at `stopped` (of `todo`) was being sent:
        its bytes that came are its answer (when they reach past its offset), the files after
        it are not read this time, and the next batches ask half of what this one carried
        per `timeout`."""
        came = len(answer.stdout)
        self._slow = max(MIN_BATCH, int(came * self.timeout / limit / 2))
        req = requests[todo[stopped]]
        if cut is not None and len(cut.data) > req.back:
            results[todo[stopped]] = cut
        log.warning("reading files on %s: %s bytes came in %.0f s; %s files deferred by the "
                    "slow link to the next tick; the next batches ask %s bytes", self.where,
                    came, limit, sum(results[i] is None for i in todo), self._slow)
        slow = N_("not read: the login node's answer came too slowly (%(bytes)s bytes in "
                  "%(limit)s s); read next tick, fewer bytes at a time",
                  bytes=came, limit=f"{limit:.0f}")
        for i in todo:
            if results[i] is None:
                results[i] = FileRead(FAILED, error=slow, later=True)


def _stopped(where: str | Text, code: int, path: str, stderr: str | Text) -> Text:
    """The sentence for the read script ending (exit `code`) before it answered for `path`:
    exit 90 (tail_read.sh could not make its temporary file) names the fix for it."""
    if code == 90:
        return N_("reading files on %(where)s: the read script stopped (exit %(code)s) before "
                  "answering for %(path)s: it could not create a temporary file (%(stderr)s). "
                  "Check that the temporary directory on the login node ($TMPDIR, else /tmp) "
                  "is writable and not full; the files are read again next tick.",
                  where=where, code=code, path=path, stderr=stderr)
    return N_("reading files on %(where)s: the read script stopped (exit %(code)s) before "
              "answering for %(path)s: %(stderr)s. Its error output says why; the files are "
              "read again next tick.", where=where, code=code, path=path, stderr=stderr)


def _tail(stderr: bytes, limit: int = 400) -> str | Text:
    """The end of the read script's error output, or a sentence saying it had none."""
    text = stderr.decode("utf-8", "replace").strip()
    return text[-limit:] if text else N_("no message")


__all__ = ["ARGV", "SCRIPT", "ShellTailReader"]
