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

Each CommandsInFlight keeps what is due when in a heap (under one condition) and has the
process's one deadlines thread (bot.net.deadlines) look at it when the earliest is due: one
deadline per CommandsInFlight at a time, not one per operation (a large log read tracks two
operations per 32 KiB request, hundreds per tick), and no thread of its own. What is due is
done on that thread, so it is quick and waits for nothing (the runner's `overstayed` does not
wait for its lock). The runner's close stops it (`stop_clock`): what is due is dropped, and
what is being done is waited for.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bot.core.takeover import END_GRACE_S  # the takeovers count it in each remote call
from bot.net import deadlines

STOP_WAIT_S = 5.0
"""How long stopping the clock waits for what it is doing when due to end
(`CommandsInFlight.stop_clock`): a connection's close, the runner retiring one, quick."""


@dataclass(eq=False)  # each command is itself, whatever its deadline
class _Command:
    deadline: float


@dataclass(eq=False)  # each retirement is itself: its clock entry closes only it
class _Retired:
    close: Callable[[], None]


class CommandsInFlight:
    """The deadlines (monotonic times) of the commands in flight on each connection (its
    transport, any hashable object), and the connections retired, each closed once.
    `overstayed(connection)` is called, on the clock's thread, when a command is still in
    flight on `connection` END_GRACE_S after its deadline: it could not end, the sends on its
    connection do not leave, and the caller retires it (`retire`). `clock` gives the time the
    deadlines are in (tests pass their own and call `fire_due`)."""

    def __init__(self, overstayed: Callable[[object], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._due = threading.Condition(threading.Lock())  # guards everything below
        self._overstayed = overstayed
        self._clock = clock
        self._commands: dict[object, set[_Command]] = {}
        self._retired: dict[object, _Retired] = {}
        # (due time, order, connection, what is due): a command still in flight is reported,
        # a retirement not yet closed is closed; one ended or closed before is dropped
        self._heap: list[tuple[float, int, object, _Command | _Retired]] = []
        self._order = itertools.count()
        # the deadlines thread's look at the heap, due at its earliest (in the clock's time)
        self._wake: deadlines.Deadline | None = None
        self._wake_at = math.inf
        self._firing = 0  # looks at the heap under way on the deadlines thread

    @contextmanager
    def command(self, connection: object, deadline: float) -> Iterator[None]:
        """A command in flight on `connection` for the block, due to end by `deadline`; a
        retired connection is closed as the last command on it leaves. A block still running
        END_GRACE_S after `deadline` is said to `overstayed`."""
        entry = _Command(deadline)
        with self._due:
            self._commands.setdefault(connection, set()).add(entry)
            self._at(deadline + END_GRACE_S, connection, entry)
        try:
            yield
        finally:
            with self._due:
                left = self._commands[connection]
                left.discard(entry)
                if not left:
                    del self._commands[connection]
            if not left:
                self._close(connection)

    def retire(self, connection: object, close: Callable[[], None]) -> None:
        """`connection` takes no new command (the caller no longer hands it out): `close()`
        it now when no command is in flight on it, else when the last has ended, or
        END_GRACE_S after the last of their deadlines, whichever comes first. A connection
        retired already is left as it is."""
        with self._due:
            if connection in self._retired:
                return
            retired = self._retired[connection] = _Retired(close)
            deadlines = [c.deadline for c in self._commands.get(connection, ())]
            if deadlines:
                self._at(max(deadlines) + END_GRACE_S, connection, retired)
        if not deadlines:
            self._close(connection)

    def retired(self, connection: object) -> bool:
        """Whether `connection` is retired and not closed yet (it takes no new work)."""
        with self._due:
            return connection in self._retired

    def close_instead(self, connection: object, close: Callable[[], None]) -> bool:
        """Whether `connection` is retired and not closed yet; if so it is closed, when due,
        with `close()` instead of the close it was retired with (the runner, letting go of a
        connection retired without its lock, knows all that closes with it: its jump host's
        connection). Not retired, or closed already: False, nothing changed."""
        with self._due:
            retired = self._retired.get(connection)
            if retired is None:
                return False
            retired.close = close  # the clock's heap entry is this same retirement
            return True

    def close_retired(self) -> None:
        """Close every retired connection now (the runner is closing)."""
        with self._due:
            connections = list(self._retired)
        for connection in connections:
            self._close(connection)

    def stop_clock(self, wait: float = STOP_WAIT_S) -> None:
        """Stop the clock (the runner has closed: what is due is dropped) and wait, at most
        `wait` seconds, for what it is doing when due to end: that may take the runner's lock
        (`overstayed`), so the runner calls this after releasing it. A command tracked after
        starts the clock again."""
        with self._due:
            self._heap.clear()
            self._disarm()
            if not deadlines.on_deadlines_thread():  # not from what is due: it would wait on itself
                self._due.wait_for(lambda: self._firing == 0, wait)

    def fire_due(self) -> None:
        """Do what is due by now (the clock's time): say each command still in flight past
        its deadline and END_GRACE_S to `overstayed`, close each retired connection past its
        last deadline and END_GRACE_S. Each once: what is done leaves the heap."""
        for fire in self._take_due():
            fire()

    def _at(self, due: float, connection: object, what: _Command | _Retired) -> None:
        """Have the clock look at `what` on `connection` at `due` (the lock held)."""
        heapq.heappush(self._heap, (due, next(self._order), connection, what))
        if due < self._wake_at:  # sooner than the clock looks next
            self._arm(due)

    def _arm(self, due: float) -> None:
        """Have the deadlines thread look at the heap at `due` (the clock's time), instead of
        when it would have (the lock held)."""
        self._disarm()
        self._wake_at = due
        self._wake = deadlines.at(time.monotonic() + max(due - self._clock(), 0.0),
                                  self._look)

    def _disarm(self) -> None:
        """The deadlines thread need not look at the heap (the lock held)."""
        if self._wake is not None:
            self._wake.cancel()
        self._wake, self._wake_at = None, math.inf

    def _take_due(self) -> list[Callable[[], None]]:
        """What is due by now, taken off the heap: the calls to make, outside the lock."""
        fires: list[Callable[[], None]] = []
        with self._due:
            now = self._clock()
            while self._heap and self._heap[0][0] <= now:
                _, _, connection, what = heapq.heappop(self._heap)
                if isinstance(what, _Command):
                    if what in self._commands.get(connection, ()):
                        fires.append(functools.partial(self._overstayed, connection))
                elif self._retired.get(connection) is what:
                    del self._retired[connection]
                    fires.append(what.close)
        return fires

    def _look(self) -> None:
        """On the deadlines thread, at the earliest due time: do what is due, then have it
        look again at the next one (a sooner one tracked meanwhile has done so already)."""
        with self._due:
            self._wake, self._wake_at = None, math.inf
            self._firing += 1
        try:
            self.fire_due()
        finally:
            with self._due:
                self._firing -= 1
                if self._heap and self._heap[0][0] < self._wake_at:
                    self._arm(self._heap[0][0])
                self._due.notify_all()

    def _close(self, connection: object) -> None:
        """Close `connection` if it is retired and not closed yet: once, whoever comes first
        (its last command, the clock, the runner's close)."""
        with self._due:
            retired = self._retired.pop(connection, None)
        if retired is not None:
            retired.close()
