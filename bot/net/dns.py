"""Looking a host name up within a deadline, for the adapters that connect out (the SSH
runner's connections, bot.cluster.dial; Slack's requests, bot.net.whole_request): the
resolver has no deadline its caller sets, so each lookup runs on a thread of its own, shared
by the connections to the same name and port, and each wait for it ends at the caller's own
deadline (`resolve_within`). A connection that fails is said (`connection_failed`), so the
next one to the name looks it up afresh.
"""

from __future__ import annotations

import copy
import socket
import threading
import time
from typing import Any


class NameNotResolved(TimeoutError):
    """A connection given up while the host's name was still being looked up: the name
    (`host`) had no answer by the connection's deadline. Its text (the host, and the hung
    lookups when there were no slot) is for the log; ssh.py says it to a person."""

    def __init__(self, host: str, text: str) -> None:
        super().__init__(text)
        self.host = host


class _Lookup:
    """One `socket.getaddrinfo` under way on its own thread, begun at the monotonic time
    `started`; its answer (or error) once `ended`. `stale`: a connection to its name failed
    while it was under way (`connection_failed`), so its answer may predate the failure: no
    connection joins it, and those that had joined it look again."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ended = False
        self.stale = False
        self.infos: list[tuple[Any, ...]] = []
        self.error: BaseException | None = None


LOOKUPS_PER_NAME = 2
"""How many lookups of one host name and port may be under way at once: the one a hung
resolver holds and one begun after a connection to the name failed (`resolve_within`); a
resolver that hangs on every lookup thus holds at most this many threads per name."""

_lookups: dict[tuple[str, int], list[_Lookup]] = {}
"""The lookups under way, by host name and port, oldest first: a connection to a name being
looked up waits for the newest one, when it is not stale, instead of starting another."""
_lookups_lock = threading.Lock()
_lookups_changed = threading.Condition(_lookups_lock)
"""Notified when a lookup ends and when lookups go stale: a connection waiting, for its
lookup or for a slot to start one, looks again."""


def connection_failed(host: str, port: int) -> None:
    """Say that a connection to `host`:`port` failed (it could not be made, or it was lost):
    the lookups of the name under way go stale (their answers predate the failure: the
    address they give may be the one that failed, or they are the lookups a hung resolver
    holds). No connection joins them any more, and each connection waiting for one of them
    looks again (`resolve_within`)."""
    with _lookups_changed:
        _went_stale((host, port))


def _went_stale(key: tuple[str, int]) -> None:
    """`connection_failed`, `_lookups_lock` held."""
    for lookup in _lookups.get(key, []):
        lookup.stale = True
    _lookups_changed.notify_all()


def resolve_within(host: str, port: int, ends: float) -> list[tuple[Any, ...]]:
    """`socket.getaddrinfo(host, port)` for a TCP connection, as paramiko asks it, given up at
    the monotonic time `ends`: TimeoutError then. The resolver has no deadline of its own
    that the caller sets (a hung DNS server holds it for its timeouts times its attempts), so
    it runs on a daemon thread of its own, left to end by itself when it is given up. While
    it runs, a connection to the same name and port waits for it rather than starting
    another, so a hung resolver holds few threads per name, however often the name is
    connected to (every command's reconnect, every replica's tick); its answer is not kept
    once it has come: the next connection looks the name up afresh.

    No connection takes the answer of a lookup that went stale, a connection to the name
    having failed while it was under way (`connection_failed`; a connection given up here
    counts as one): a reconnect after a failure never takes the answer of a lookup older
    than it (an address that has since changed, or a resolver that has since recovered while
    its old lookup still hangs), nor does a connection that had joined that lookup before
    the failure: it looks again then, as one that comes after. A connection joins the
    newest lookup under way when it is not stale, or starts its own; when LOOKUPS_PER_NAME
    lookups are under way already, all stale (a resolver that hung on them), it waits for
    the first of them to end, then starts its own (or joins the one another waiting
    connection began then). Every wait, for a slot and for the lookup, ends at the
    connection's own `ends`, whichever lookup it is on by then: a connection whose answer
    has not come by then fails as one whose lookup hung does (ssh says "timed out after
    connect_timeout"), its TimeoutError naming the host (and, waiting for a slot, how long
    its hung lookups have been under way). It does not fail at once: the resolver may have
    recovered, and a hung lookup that ends within the connection's own timeout lets it
    connect."""
    key = (host, port)
    lookup: _Lookup | None = None
    with _lookups_changed:
        while True:
            if lookup is None or lookup.stale:
                lookup = _joined_or_begun(key)
            if lookup is not None and lookup.ended:
                break
            left = ends - time.monotonic()
            if left <= 0:
                if lookup is None:
                    raise _no_slot(key)
                _went_stale(key)  # given up: the next connection looks the name up again
                raise NameNotResolved(host, f"{host} was not resolved in time")
            _lookups_changed.wait(left)
    if lookup.error is not None:
        raise _own_copy(lookup.error)
    return list(lookup.infos)


def _joined_or_begun(key: tuple[str, int]) -> _Lookup | None:
    """The lookup of `key` a connection waits for, `_lookups_lock` held: the newest under way
    when it is not stale, else one begun now when fewer than LOOKUPS_PER_NAME are under way;
    None when they are all stale."""
    under_way = _lookups.setdefault(key, [])
    if under_way and not under_way[-1].stale:
        return under_way[-1]
    if len(under_way) >= LOOKUPS_PER_NAME:
        return None
    lookup = _Lookup()
    under_way.append(lookup)
    threading.Thread(target=_look_up, args=(key, lookup), name=f"resolve {key[0]}",
                     daemon=True).start()
    return lookup


def _no_slot(key: tuple[str, int]) -> NameNotResolved:
    """A connection to `key` given up, `_lookups_lock` held, while its LOOKUPS_PER_NAME
    lookups under way, all stale, still hang: said as a failure (as a connection given up
    on its lookup is), and its error, naming the host and how long those lookups have been
    under way."""
    now = time.monotonic()
    _went_stale(key)
    ages = " and ".join(f"{now - x.started:.1f} s" for x in _lookups[key])
    return NameNotResolved(key[0], f"{key[0]} was not resolved in time: its "
                           f"{len(_lookups[key])} lookups under way, begun {ages} ago before "
                           "its last failed connection, still hang")


def _look_up(key: tuple[str, int], lookup: _Lookup) -> None:
    """The resolver's thread: its answer (or error) kept on `lookup`, which is then no longer
    a lookup of the name under way (the connections waiting look again)."""
    try:
        lookup.infos = socket.getaddrinfo(key[0], key[1], socket.AF_UNSPEC,
                                          socket.SOCK_STREAM)
    except Exception as exc:  # noqa: BLE001 - raised in the callers' threads
        lookup.error = exc
    finally:
        with _lookups_changed:
            lookup.ended = True
            under_way = _lookups.get(key, [])
            if lookup in under_way:
                under_way.remove(lookup)
            if not under_way:
                _lookups.pop(key, None)
            _lookups_changed.notify_all()


def _own_copy(error: BaseException) -> BaseException:
    """`error` as a new exception of its own for one caller to raise (a lookup's error may be
    raised in several callers' threads at once, each adding its frames to the traceback of
    the one it raises); `error` itself when it cannot be copied."""
    try:
        return copy.copy(error)
    except Exception:  # noqa: BLE001 - its own type decides how it is made
        return error
