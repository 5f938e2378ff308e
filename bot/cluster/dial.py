"""Connecting within a deadline: the one TCP-and-SSH connection a runner makes, its host
name's DNS lookup included, ended at connect_timeout whatever it waits for.

paramiko bounds each phase of SSHClient.connect on its own and leaves the DNS lookup
unbounded; bot.cluster.ssh.SSHRunner connects through `connect_within` here, which counts
them all, the lookup (bot.net.dns.resolve_within, on a thread of its own) and the TCP
connect (`_tcp_connect`, made as paramiko makes it) included. The deadline is kept by the
process's one deadlines thread (bot.net.deadlines), not a timer thread per connect.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from bot.cluster.errors import HostKeyRejected
from bot.net import deadlines
from bot.net.dns import connection_failed, resolve_within

log = logging.getLogger(__name__)


def connect_within(client: paramiko.SSHClient, budget: float, **kwargs: Any) -> None:
    """`client.connect(**kwargs)`, the whole of it ended after `budget` seconds: TimeoutError
    then, whatever paramiko was waiting for. paramiko bounds each phase on its own (the TCP
    connect by `timeout`, the banner and key exchange by start_client's `timeout`, each key's
    authentication by `auth_timeout`: a key file, then every key of an agent), never their
    sum, and leaves the host name's DNS lookup unbounded (the resolver's own timeouts and
    retries); without a `sock`, the name is looked up here within the budget
    (`resolve_within`) and the TCP connection made to its addresses as paramiko makes it,
    then handed to paramiko with the name, against which known_hosts is checked. At the
    deadline (on bot.net.deadlines' thread) this closes the connection's socket and transport,
    which ends paramiko's wait, whichever it is, within its 0.1-s poll; through a jump host
    (`sock` a channel of its connection), that connection first, so the channel's close sends
    nothing there: a send on a jump host's connection that cannot send would wait, and every
    other deadline with it. A connection that fails is said (`connection_failed`), so the next
    one to the name looks it up afresh."""
    lock = threading.Lock()
    state: dict[str, Any] = {"fired": False, "transport": None, "sock": None}
    ends = time.monotonic() + budget

    def transport(sock: Any, **kw: Any) -> paramiko.Transport:
        with lock:
            if state["fired"]:  # the deadline passed in the TCP connect
                sock.close()
                raise TimeoutError(f"not connected within {budget:g} s")
            state["sock"], state["transport"] = sock, paramiko.Transport(sock, **kw)
            return state["transport"]

    def new_socket(family: int) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_STREAM)
        with lock:
            if state["fired"]:
                sock.close()
                raise TimeoutError(f"not connected within {budget:g} s")
            state["sock"] = sock  # closed by expire: ends a TCP connect in progress
        return sock

    def expire() -> None:
        with lock:
            state["fired"] = True
            t, sock = state["transport"], state["sock"]
        jump = sock.get_transport() if isinstance(sock, paramiko.Channel) else None
        for obj in (jump, t, sock):
            if obj is not None:
                try:
                    obj.close()
                except Exception:  # noqa: BLE001 - the connection is abandoned either way
                    log.debug("closing a connection past its deadline failed", exc_info=True)

    due = deadlines.at(ends, expire)
    try:
        if kwargs.get("sock") is None:
            kwargs["sock"] = _tcp_connect(kwargs["hostname"], kwargs.get("port", 22), ends,
                                          new_socket)
        client.connect(transport_factory=transport, **kwargs)
    except Exception as exc:
        # a later connection to the name does not take the answer of a lookup begun before
        connection_failed(kwargs["hostname"], kwargs.get("port", 22))
        with lock:
            fired = state["fired"]
        if fired and not isinstance(exc, (TimeoutError, HostKeyRejected,
                                          paramiko.BadHostKeyException)):
            raise TimeoutError(f"not connected within {budget:g} s") from exc
        raise
    finally:
        due.cancel()
    with lock:
        fired = state["fired"]
    if fired:  # connected as the deadline passed: closed by then, or about to be
        connection_failed(kwargs["hostname"], kwargs.get("port", 22))
        raise TimeoutError(f"not connected within {budget:g} s")


def _tcp_connect(host: str, port: int, ends: float,
                 new_socket: Callable[[int], socket.socket]) -> socket.socket:
    """A TCP connection to `host`'s addresses, made as paramiko's SSHClient.connect makes it
    (each address in the resolver's order; a refused or unreachable one gives way to the
    next, any other error is raised; all refused: NoValidConnectionsError), its name looked
    up and each connect waited for until the monotonic time `ends` at most."""
    infos = resolve_within(host, port, ends)
    stream = [(i[0], i[4]) for i in infos if i[1] == socket.SOCK_STREAM]
    to_try = stream or [(i[0], i[4]) for i in infos]  # paramiko's guess when none says TCP
    errors: dict[tuple[Any, ...], OSError] = {}
    for family, addr in to_try:
        sock = new_socket(family)
        try:
            sock.settimeout(max(ends - time.monotonic(), 0.001))
            sock.connect(addr)
            return sock
        except OSError as exc:
            sock.close()
            if exc.errno not in (errno.ECONNREFUSED, errno.EHOSTUNREACH):
                raise
            errors[addr] = exc
    raise NoValidConnectionsError(errors)
