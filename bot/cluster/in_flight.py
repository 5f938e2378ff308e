"""The commands in flight on each of a runner's SSH connections, and the connections retired.

A connection on which a session channel could not be opened in time is retired
(bot.cluster.ssh.SSHRunner): it takes no new command, and it is not closed at once, which
would cut the commands running on it. It is closed when the last of them has ended, and at
the latest just after the last of their deadlines (END_GRACE_S): paramiko sends one message
at a time per connection, under one lock, so when a send cannot leave (the peer reads
nothing: its TCP window is zero) every command on the connection waits in its next send (its
stdin, its window adjust, its signal, its channel's close) until the connection is closed.

An SFTP request is a command here too (bot.cluster.sftp.DeadlineSFTPClient registers each
send and each reply read with its reply deadline): paramiko sends it on the same connection.

A connection gets stuck with no new command too: then the command still in flight
END_GRACE_S after its deadline (its signal and its channel's close did not leave) is said to
the runner (`overstayed`), which retires its connection the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

END_GRACE_S = 1.0
"""How long after the last deadline of its commands a retired connection is closed: time for
a command at its deadline to end by itself (its signal and its channel's close sent), which
a close at the deadline itself would race, cutting it as a lost connection."""


@dataclass(eq=False)  # each command is itself, whatever its deadline
class _Command:
    deadline: float


@dataclass
class _Retired:
    close: Callable[[], None]
    timer: threading.Timer | None = None


class CommandsInFlight:
    """The deadlines (monotonic times) of the commands in flight on each connection (its
    transport, any hashable object), and the connections retired, each closed once.
    `overstayed(connection)` is called, on a timer's thread, when a command is still in
    flight on `connection` END_GRACE_S after its deadline: it could not end, the sends on its
    connection do not leave, and the caller retires it (`retire`)."""

    def __init__(self, overstayed: Callable[[object], None]) -> None:
        self._lock = threading.Lock()
        self._overstayed = overstayed
        self._commands: dict[object, list[_Command]] = {}
        self._retired: dict[object, _Retired] = {}

    @contextmanager
    def command(self, connection: object, deadline: float) -> Iterator[None]:
        """A command in flight on `connection` for the block, due to end by `deadline`; a
        retired connection is closed as the last command on it leaves. A block still running
        END_GRACE_S after `deadline` is said to `overstayed`."""
        entry = _Command(deadline)
        with self._lock:
            self._commands.setdefault(connection, []).append(entry)
        watch = threading.Timer(max(deadline + END_GRACE_S - time.monotonic(), 0.0),
                                self._watch, (connection, entry))
        watch.daemon = True
        watch.start()
        try:
            yield
        finally:
            watch.cancel()
            with self._lock:
                left = self._commands[connection]
                left.remove(entry)
                if not left:
                    del self._commands[connection]
            if not left:
                self._close(connection)

    def _watch(self, connection: object, entry: _Command) -> None:
        """`entry`'s grace after its deadline is over: said to `overstayed` if it is still in
        flight on `connection`."""
        with self._lock:
            overstayed = entry in self._commands.get(connection, ())
        if overstayed:
            self._overstayed(connection)

    def retire(self, connection: object, close: Callable[[], None]) -> None:
        """`connection` takes no new command (the caller no longer hands it out): `close()`
        it now when no command is in flight on it, else when the last has ended, or
        END_GRACE_S after the last of their deadlines, whichever comes first. A connection
        retired already is left as it is."""
        with self._lock:
            if connection in self._retired:
                return
            retired = self._retired[connection] = _Retired(close)
            deadlines = [c.deadline for c in self._commands.get(connection, ())]
            if deadlines:
                delay = max(deadlines) + END_GRACE_S - time.monotonic()
                retired.timer = threading.Timer(max(delay, 0.0), self._close, (connection,))
                retired.timer.daemon = True
                retired.timer.start()
        if not deadlines:
            self._close(connection)

    def retired(self, connection: object) -> bool:
        """Whether `connection` is retired and not closed yet (it takes no new work)."""
        with self._lock:
            return connection in self._retired

    def close_retired(self) -> None:
        """Close every retired connection now (the runner is closing)."""
        with self._lock:
            connections = list(self._retired)
        for connection in connections:
            self._close(connection)

    def _close(self, connection: object) -> None:
        """Close `connection` if it is retired and not closed yet: once, whoever comes first
        (its last command, its timer, the runner's close)."""
        with self._lock:
            retired = self._retired.pop(connection, None)
        if retired is None:
            return
        if retired.timer is not None:
            retired.timer.cancel()
        retired.close()
