"""A PostgreSQL store's host name is looked up within the connect timeout (bot.store.pg_names):
psycopg looked it up itself, without a deadline, so a hung resolver held the store's opening
(`trainbot run`'s start) and each pool connection past connect_timeout. The resolver is
injected: socket.getaddrinfo, which psycopg and trainbot both call, hangs on (or answers) the
names below and asks the real one for any other."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from bot.store import Store, StoreError

HUNG = "db-hung.cluster.example"
KNOWN = "db.cluster.example"
STALL_S = 8.0  # how long the hung resolver holds a lookup (the old code waited all of it)


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """socket.getaddrinfo hanging on HUNG (until the test ends, STALL_S at most, then failing
    as a dead DNS server does) and answering KNOWN with loopback; the names asked, in order."""
    real = socket.getaddrinfo
    release = threading.Event()
    asked: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == HUNG:
            asked.append(host)
            release.wait(STALL_S)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        if host == KNOWN:
            asked.append(host)
            return real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield asked
    finally:
        release.set()


def test_a_hung_lookup_of_the_database_host_ends_at_the_connect_timeout(
        resolver: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.store.PG_CONNECT_TIMEOUT_S", 1)
    started = time.monotonic()
    with pytest.raises(StoreError, match=r"cannot open the store at postgresql\+psycopg://"
                       rf"trainbot:\*\*\*@{HUNG}:5432/trainbot: .*'{HUNG}' was not resolved "
                       "within its connect timeout") as info:
        Store.open(f"postgresql+psycopg://trainbot:s3cret@{HUNG}:5432/trainbot")
    assert time.monotonic() - started < 3.0 < STALL_S  # before: the whole stall, then fails
    assert "s3cret" not in str(info.value)
    assert resolver == [HUNG]


def test_the_address_looked_up_is_connected_to_under_the_hosts_name(
        resolver: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg is handed the address as `hostaddr` (it looks nothing up then) and the name as
    `host`, which libpq checks the server's certificate against (sslmode=verify-full)."""
    handed: list[dict[str, Any]] = []

    def connect(conninfo: str = "", **kwargs: Any) -> Any:
        handed.append(kwargs)
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg, "connect", connect)
    with pytest.raises(StoreError, match="connection refused"):
        Store.open(f"postgresql+psycopg://trainbot:s3cret@{KNOWN}:5433/trainbot"
                   "?sslmode=verify-full")
    assert [(k["host"], k["hostaddr"], str(k["port"]), k["sslmode"]) for k in handed] == [
        (KNOWN, "127.0.0.1", "5433", "verify-full")]
    assert resolver == [KNOWN]


def test_a_host_named_only_by_pghost_is_looked_up_within_the_connect_timeout_too(
        resolver: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A store URL without a host leaves libpq its own default, the environment's `PGHOST`,
    which it looked up without a deadline: trainbot looks that name up within the timeout."""
    monkeypatch.setattr("bot.store.PG_CONNECT_TIMEOUT_S", 1)
    monkeypatch.setenv("PGHOST", HUNG)
    monkeypatch.delenv("PGHOSTADDR", raising=False)
    started = time.monotonic()
    with pytest.raises(StoreError, match=f"'{HUNG}' was not resolved within its connect "
                       "timeout"):
        Store.open("postgresql+psycopg://trainbot:s3cret@/trainbot")
    assert time.monotonic() - started < 3.0 < STALL_S
    assert resolver == [HUNG]


def test_pghost_and_pgport_are_connected_to_by_address_and_pghostaddr_is_left_to_libpq(
        resolver: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[dict[str, Any]] = []

    def connect(conninfo: str = "", **kwargs: Any) -> Any:
        handed.append(kwargs)
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg, "connect", connect)
    monkeypatch.setenv("PGHOST", KNOWN)
    monkeypatch.setenv("PGPORT", "5433")
    monkeypatch.delenv("PGHOSTADDR", raising=False)
    with pytest.raises(StoreError, match="connection refused"):
        Store.open("postgresql+psycopg://trainbot:s3cret@/trainbot")
    monkeypatch.setenv("PGHOSTADDR", "127.0.0.2")  # libpq connects to it, looking nothing up
    with pytest.raises(StoreError, match="connection refused"):
        Store.open("postgresql+psycopg://trainbot:s3cret@/trainbot")
    assert [(k.get("host"), k.get("hostaddr"), str(k.get("port"))) for k in handed] == [
        (KNOWN, "127.0.0.1", "5433"), (None, None, "None")]
    assert resolver == [KNOWN]


@pytest.mark.parametrize("where", ["url", "environment"])
def test_pghost_is_left_to_libpq_where_a_service_may_name_the_host(
        resolver: list[str], monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """libpq takes a service's host (pg_service.conf) over `PGHOST`: handing PGHOST to the
    driver as the host would connect somewhere else than libpq does."""
    handed: list[dict[str, Any]] = []

    def connect(conninfo: str = "", **kwargs: Any) -> Any:
        handed.append(kwargs)
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg, "connect", connect)
    monkeypatch.setenv("PGHOST", KNOWN)
    monkeypatch.delenv("PGHOSTADDR", raising=False)
    url = "postgresql+psycopg://trainbot:s3cret@/trainbot"
    if where == "url":
        monkeypatch.delenv("PGSERVICE", raising=False)
        url += "?service=trainbot"
    else:
        monkeypatch.setenv("PGSERVICE", "trainbot")
    with pytest.raises(StoreError, match="connection refused"):
        Store.open(url)
    assert [(k.get("host"), k.get("hostaddr")) for k in handed] == [(None, None)]
    assert resolver == []
