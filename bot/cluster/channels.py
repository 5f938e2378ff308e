"""The one way trainbot waits on a paramiko channel (a command's output, an SFTP reply)."""

from __future__ import annotations

import threading
import time

import paramiko


def wait_channel(chan: paramiko.Channel, event: threading.Event, timeout: float) -> bool:
    """True once `chan` has stdout or stderr bytes, EOF, or is closed (by either side, from
    any thread: the wait ends then, not at its timeout); False after `timeout` seconds (a
    timeout of 0 only looks). `event` is the caller's own, reused from wait to wait.
    """
    deadline = time.monotonic() + timeout
    while True:
        # The channel's buffers set the event when data comes and when they are closed: on
        # EOF, on the server's close, on a dead transport, and on `chan.close()` from any
        # thread (BufferedPipe.set_event). Set here at each wait, before looking: whatever
        # comes after the look sets it, and a `fileno()` since (its OS pipe replaces the
        # event) cannot leave a wait deaf. No select() on `chan.fileno()`: Channel.close()
        # closes that fd while another thread may be about to wait on its number.
        chan.in_buffer.set_event(event)
        chan.in_stderr_buffer.set_event(event)
        if (chan.recv_ready() or chan.recv_stderr_ready() or chan.eof_received
                or chan.closed):
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        event.wait(remaining)


__all__ = ["wait_channel"]
