"""Looking a PostgreSQL server's name up within the connect timeout.

libpq's connect_timeout bounds a connection once its address is known: psycopg looks the
`host` name up first (socket.getaddrinfo; libpq itself, for psycopg2), without a deadline, so
a hung resolver (a dead DNS server: its timeouts times its attempts) held `trainbot run`'s
start, and each pool connection after, past it. Here each name is looked up before the driver
connects, within connect_timeout (bot.net.dns.resolve_within, as the SSH runner and Slack
requests look theirs up), and its addresses are handed to the driver as `hostaddr`, which it
then connects to without looking anything up; `host` stays the name, which libpq checks a
server's certificate against (sslmode=verify-full) and looks .pgpass up by.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import time
from typing import Any

from sqlalchemy import Engine, event

from bot.net.dns import connection_failed, resolve_within

log = logging.getLogger(__name__)

_PG_PORT = 5432


def resolve_names_within(engine: Engine, default_timeout_s: float) -> None:
    """Have each connection `engine` makes (a libpq driver's) look its host names up within
    its connect_timeout (`default_timeout_s` when its parameters set none) before connecting
    to their addresses; a name not resolved in time fails the connection as the driver's
    OperationalError naming it, as an unresolvable name does. A connection that fails is said
    (bot.net.dns.connection_failed), so the next one looks its names up afresh."""

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> Any:
        names = _resolve_into(cparams, default_timeout_s, dialect.loaded_dbapi)
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception:
            for name in names:
                connection_failed(*name)
            raise


def _resolve_into(cparams: dict[str, Any], default_timeout_s: float,
                  dbapi: Any) -> list[tuple[str, int]]:
    """Put the addresses of `cparams`' host names in its `hostaddr` (a host and port per
    address, the names kept); the names looked up, with their ports. A URL without a host
    takes libpq's from the environment (`PGHOST`, `PGPORT`), which libpq would otherwise look
    up itself without a deadline, unless a service (`service=`, `PGSERVICE`) may name the host
    instead. Nothing is changed when a hostaddr is given already (in the parameters, or
    `PGHOSTADDR` for a URL without a host), or there is no name (no host at all: the driver's
    socket default; a socket folder or an address looks nothing up)."""
    if cparams.get("hostaddr") or (os.environ.get("PGHOSTADDR") and not cparams.get("host")):
        return []
    service = cparams.get("service") or os.environ.get("PGSERVICE")
    if not cparams.get("host") and os.environ.get("PGHOST") and not service:
        # libpq's default host, looked up too; a service file's host wins over it in libpq
        cparams["host"] = os.environ["PGHOST"]
        if not cparams.get("port") and os.environ.get("PGPORT"):
            cparams["port"] = os.environ["PGPORT"]
    if not cparams.get("host"):
        return []
    hosts = str(cparams["host"]).split(",")
    ports = str(cparams.get("port") or "").split(",")
    if len(ports) == 1:
        ports = ports * len(hosts)
    if len(ports) != len(hosts):
        return []  # the driver says what is wrong with them
    if not any(_is_name(h) for h in hosts):
        return []
    ends = time.monotonic() + _timeout_s(cparams.get("connect_timeout"), default_timeout_s)
    host_out: list[str] = []
    addr_out: list[str] = []
    port_out: list[str] = []
    names: list[tuple[str, int]] = []
    failures: list[str] = []
    for host, port in zip(hosts, ports, strict=True):
        if not _is_name(host):
            host_out.append(host)
            addr_out.append("")
            port_out.append(port)
            continue
        number = int(port) if port.strip() else _PG_PORT
        names.append((host, number))
        try:
            infos = resolve_within(host, number, ends)
        except TimeoutError:
            failures.append(f"{host!r} was not resolved within its connect timeout")
            continue
        except OSError as exc:
            failures.append(f"failed to resolve host {host!r}: {exc}")
            continue
        for address in dict.fromkeys(str(info[4][0]) for info in infos):
            host_out.append(host)
            addr_out.append(address)
            port_out.append(port)
    if not host_out:
        for name in names:
            connection_failed(*name)
        raise dbapi.OperationalError("; ".join(failures))
    for failure in failures:
        log.warning("PostgreSQL: %s; connecting to the other hosts", failure)
    cparams["host"] = ",".join(host_out)
    cparams["hostaddr"] = ",".join(addr_out)
    if any(port_out):
        cparams["port"] = ",".join(p or str(_PG_PORT) for p in port_out)
    return names


def _is_name(host: str) -> bool:
    """Whether `host` is a name to look up: not empty, not a socket folder, not an address."""
    host = host.strip()
    if not host or host.startswith("/") or host[1:2] == ":":  # a folder (a Windows one too)
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True
    return False


def _timeout_s(value: Any, default_s: float) -> float:
    """libpq's connect_timeout: seconds; 0, negative or unreadable: no bound of libpq's own,
    the default here (a lookup is never waited for without end)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return default_s
    return seconds if seconds > 0 else default_s
