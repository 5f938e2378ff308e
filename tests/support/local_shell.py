"""The batched read script run on this machine: the real sh and coreutils over local files
(bot.cluster.tail.ShellTailReader's runner), and one file's read as the watcher does it."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

from bot.cluster.ssh import Exchange
from bot.cluster.tail import ShellTailReader
from bot.core.tail import DEFAULT_MAX_BYTES, TailChunk, TailItem, TailState, read_tails


class LocalShell:
    """`exchange` by a local process instead of SSH (argv[0], /bin/sh, replaced by `shell`);
    counts its commands."""

    def __init__(self, shell: str = "/bin/sh") -> None:
        self.shell = shell
        self.commands = 0

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        self.commands += 1
        with subprocess.Popen([self.shell, *argv[1:]], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True) as proc:
            try:
                out, err = proc.communicate(stdin, timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate(timeout=10)
                return Exchange(out, err, None)
            return Exchange(out, err, proc.returncode)


def local_reader(shell: str = "/bin/sh", timeout: float = 30.0) -> ShellTailReader:
    return ShellTailReader(LocalShell(shell), where="local", timeout=timeout)


def read_new_lines(reader: ShellTailReader, state: TailState,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> TailChunk:
    """One file's read as a tick reads it (bot.core.tail.read_tails, one or two batches):
    its last chunk."""
    out = read_tails([TailItem(state, max_bytes)], lambda reqs: reader.read(reqs).results)[0]
    if out.error is not None:
        raise out.error
    return out.chunks[-1]
