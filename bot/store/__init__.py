"""trainbot's persistent state (chains, attempts, offsets, incidents, approvals, Slack posts,
audit, watched jobs, leases, command claims, Home tab viewers, the budget of progress
rewrites) behind one repository per kind."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url, text
from sqlalchemy.pool import NullPool, StaticPool

from bot.core.redact import Redactor, url_secret_spans, url_secrets
from bot.store.audit import AuditRepo
from bot.store.migrations import MIGRATIONS, StoreVersionError, current_version, upgrade
from bot.store.pg_names import resolve_names_within
from bot.store.repos.approvals import ApprovalsRepo
from bot.store.repos.incidents import IncidentsRepo
from bot.store.repos.replicas import (
    CommandClaimsRepo,
    HomeViewersRepo,
    LeasesRepo,
    ProgressRewritesRepo,
)
from bot.store.repos.runs import AttemptsRepo, ChainsRepo, TailOffsetsRepo
from bot.store.repos.watched import SubmitsInFlightRepo, WatchedJobsRepo
from bot.store.rows import (
    Approval,
    Attempt,
    AuditEntry,
    Chain,
    ClaimResult,
    HoldPass,
    Incident,
    SlackPost,
    SubmitInFlight,
    TailOffset,
    WatchedJob,
)
from bot.store.slack_posts import SlackPostsRepo

__all__ = [
    "Approval",
    "Attempt",
    "AuditEntry",
    "Chain",
    "ClaimResult",
    "HoldPass",
    "Incident",
    "SlackPost",
    "Store",
    "StoreClosed",
    "StoreError",
    "StoreVersionError",
    "SubmitInFlight",
    "TailOffset",
    "WatchedJob",
    "display_url",
]


def display_url(url: str) -> str:
    """`url` as it may be shown (logs, errors, `trainbot doctor`): its passwords masked.

    Read from the text, not from SQLAlchemy's parse, so a URL that does not parse (a port
    `abc`, no scheme) or that parses wrongly (an unescaped `@` in the password) is masked too:
    everything between `user:` and the netloc's last `@`, and a `password=` parameter
    (bot.core.redact.url_secret_spans).
    """
    shown, last = [], 0
    for start, end in url_secret_spans(url):
        shown += [url[last:start], "***"]
        last = end
    return "".join([*shown, url[last:]])


def _scrub(text: str, url: str) -> str:
    """`text` (an error message about `url`) with the url's passwords replaced by ***."""
    text = text.replace(url, display_url(url))
    for secret in url_secrets(url):
        text = text.replace(secret, "***")
    return text


# PostgreSQL's deadlines (libpq connection parameters; a store.url's own parameters win). A
# server that accepts and then says nothing fails the connection after CONNECT_TIMEOUT_S
# (the whole connection: TCP, TLS, authentication; its host name's lookup, before it, within
# as long: bot.store.pg_names); a statement the server has not finished
# in STATEMENT_TIMEOUT_S (a lock waited for included) is cancelled by the server; a
# connection whose peer went away unseen (a half-open one behind a NAT or load balancer) is
# found dead by TCP keepalives after about KEEPALIVES_IDLE_S + KEEPALIVES_COUNT ×
# KEEPALIVES_INTERVAL_S idle, or after TCP_USER_TIMEOUT_S of data sent and not acknowledged;
# and the pool tests each connection before lending it (pool_pre_ping), so a tick or a Slack
# handler is given a live one.
PG_CONNECT_TIMEOUT_S = 10
PG_STATEMENT_TIMEOUT_S = 60
PG_KEEPALIVES_IDLE_S = 30
PG_KEEPALIVES_INTERVAL_S = 10
PG_KEEPALIVES_COUNT = 3
PG_TCP_USER_TIMEOUT_S = 60
_LIBPQ_DRIVERS = ("psycopg", "psycopg2")


def postgres_deadlines(query: Mapping[str, Any]) -> dict[str, Any]:
    """The connection parameters that bound a PostgreSQL connection (see above), those a
    store URL's `query` sets itself left out (its `options` kept, the statement timeout
    added to them unless they set one)."""
    wanted: dict[str, Any] = {
        "connect_timeout": PG_CONNECT_TIMEOUT_S,
        "keepalives": 1,
        "keepalives_idle": PG_KEEPALIVES_IDLE_S,
        "keepalives_interval": PG_KEEPALIVES_INTERVAL_S,
        "keepalives_count": PG_KEEPALIVES_COUNT,
        "tcp_user_timeout": PG_TCP_USER_TIMEOUT_S * 1000,
    }
    params = {k: v for k, v in wanted.items() if k not in query}
    options = query.get("options")
    options = " ".join(options) if isinstance(options, tuple) else options or ""
    if "statement_timeout" not in options:
        statement = f"-c statement_timeout={PG_STATEMENT_TIMEOUT_S * 1000}"
        params["options"] = f"{options} {statement}".strip()
    return params


class StoreError(Exception):
    """The store cannot be opened or written; the message names the URL/path and the fix."""


class StoreClosed(StoreError):
    """The store was closed (`Store.close`: the bot stopping): nothing is read from it or
    written to it any more."""


def _refuse() -> Any:
    raise AssertionError("a closed store's pool opens no connection")  # _do_get refuses first


class _ClosedPool(NullPool):
    """The pool of a closed store: it lends no connection, so every transaction begun from
    then on (each repository's read or write) raises StoreClosed before it touches the
    database."""

    def __init__(self, shown: str) -> None:
        super().__init__(_refuse)
        self._shown = shown

    def _do_get(self) -> Any:
        raise StoreClosed(f"the store at {self._shown} is closed (trainbot is stopping): "
                          "nothing is read from it or written to it any more")

    def recreate(self) -> _ClosedPool:
        return self  # a dispose after the close leaves it closed


def _use_wal(cursor: Any, *, attempts: int = 100) -> None:
    """Put the SQLite file in WAL mode (persistent: once set, every later connection finds it
    set). Switching needs the file to itself, and SQLite answers "database is locked" at once,
    without its busy timeout, while another connection switches too (replicas or threads
    opening a new store together): so wait and ask again, up to `attempts` × 50 ms."""
    for attempt in range(attempts):
        try:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _sqlite_engine(url: str) -> Engine:
    parsed = make_url(url)
    database = parsed.database or ""
    memory = database in ("", ":memory:")
    if not memory:
        path = Path(os.path.expanduser(database))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the store's folder {path.parent}: {exc.strerror or exc}; "
                "set store.url to a writable location"
            ) from None
        parsed = parsed.set(database=str(path))
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": 30}}
    if memory:
        kwargs["poolclass"] = StaticPool
    engine = create_engine(parsed, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin, so DDL in
        # a migration is transactional and writers take the lock up front (no deadlocks).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        if not memory:
            _use_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class Store:
    """The state store: one engine and a repository per table."""

    def __init__(self, engine: Engine, url: str, redactor: Redactor | None = None):
        self.engine = engine
        self.url = url
        redactor = redactor or Redactor(url_secrets(url))
        self.chains = ChainsRepo(engine)
        self.attempts = AttemptsRepo(engine)
        self.tail_offsets = TailOffsetsRepo(engine)
        self.incidents = IncidentsRepo(engine, redactor)
        self.approvals = ApprovalsRepo(engine)
        self.slack_posts = SlackPostsRepo(engine)
        self.audit = AuditRepo(engine, redactor)
        self.watched_jobs = WatchedJobsRepo(engine)
        self.submits_in_flight = SubmitsInFlightRepo(engine)
        self.leases = LeasesRepo(engine)
        self.command_claims = CommandClaimsRepo(engine)
        self.home_viewers = HomeViewersRepo(engine)
        self.progress_rewrites = ProgressRewritesRepo(engine)

    @classmethod
    def open(cls, url: str, *, target_version: int | None = None,
             redactor: Redactor | None = None) -> Store:
        """Open the store at `url`, creating it or upgrading an older schema in place.

        `target_version` stops the upgrade early (tests build older files with it). Errors
        show the URL with its password masked. Error texts written to the audit log and the
        incidents are redacted by `redactor` (default: token shapes and the URL's password;
        the bot passes its config's, `Config.redactor()`).
        """
        try:
            parsed = make_url(url)
        except Exception as exc:  # noqa: BLE001 - sqlalchemy raises ArgumentError or ValueError
            why = ("its port is not a number" if isinstance(exc, ValueError)
                   else "it does not parse")
            raise StoreError(
                f"store.url {display_url(url)} is not a database URL ({why}); "
                "write it as dialect+driver://user:password@host:port/database (e.g. "
                "postgresql+psycopg://trainbot:…@db.example.org:5432/trainbot, or "
                "sqlite:///path/to/trainbot.db)"
            ) from None
        shown = display_url(url)
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(url)
        else:
            kwargs: dict[str, Any] = {"pool_pre_ping": True}
            libpq = parsed.get_backend_name() == "postgresql" and \
                parsed.get_driver_name() in _LIBPQ_DRIVERS
            if libpq:
                kwargs["connect_args"] = postgres_deadlines(parsed.query)
            try:
                engine = create_engine(url, **kwargs)
            except ImportError as exc:
                raise StoreError(
                    f"store.url {shown}: its database driver is not installed ({exc}); for "
                    "PostgreSQL use postgresql+psycopg://… and install trainbot's `postgres` "
                    "extra (pip install 'trainbot[postgres]')"
                ) from None
            if libpq:
                resolve_names_within(engine, PG_CONNECT_TIMEOUT_S)
        try:
            upgrade(engine, target_version)
        except StoreVersionError:
            engine.dispose()
            raise
        except Exception as exc:
            engine.dispose()
            raise StoreError(f"cannot open the store at {shown}: {_scrub(str(exc), url)}"
                             ) from exc
        return cls(engine, url, redactor)

    @property
    def schema_version(self) -> int:
        with self.engine.begin() as conn:
            return current_version(conn)

    @property
    def latest_version(self) -> int:
        return len(MIGRATIONS)

    def check_writable(self) -> None:
        """Write and roll back a row: raises if the database refuses writes (for doctor)."""
        with self.engine.connect() as conn:
            trans = conn.begin()
            try:
                conn.execute(text("UPDATE meta SET schema_version = schema_version"))
            finally:
                trans.rollback()

    def close(self) -> None:
        """Close the store's connections; none is lent again: every read or write after it
        raises StoreClosed (a Slack handler still under way once the bot's stop has waited its
        bound writes nothing, as it opens no SSH session after ClusterSessions.close). A
        transaction already begun ends as it would. Idempotent."""
        pool, self.engine.pool = self.engine.pool, _ClosedPool(display_url(self.url))
        pool.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
