"""Another task holding an SSH runner's lock (bot.cluster.ssh.SSHRunner), as
_ensure_transport does while it connects to a hung node."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from bot.cluster.ssh import SSHRunner


@contextmanager
def another_task_holding_the_lock(runner: SSHRunner) -> Iterator[threading.Thread]:
    """Another thread holds `runner`'s lock for the block (10 s at most): its thread, ended
    after the block."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with runner._lock:  # noqa: SLF001 - what _ensure_transport holds while it connects
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(5)
    try:
        yield holder
    finally:
        release.set()
        holder.join(5)
