"""What every repository shares: one engine, a redactor, a row read as its row class
(`_Repo`); `_wall` for bookkeeping times."""

from __future__ import annotations

import time
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Insert, Select

from bot.core.redact import Redactor

R = TypeVar("R")  # a row class of bot.store.rows


def _wall(now: float | None) -> float:
    return time.time() if now is None else now


def _row(cls: type, row: Any) -> Any:
    return cls(**dict(row._mapping)) if row is not None else None


def _insert_id(conn: Connection, statement: Insert) -> int:
    """Run one INSERT; the id of the row it made."""
    key = conn.execute(statement).inserted_primary_key
    if key is None:  # only an executemany or a table without a primary key has none
        raise RuntimeError(f"{statement.table} INSERT returned no primary key")
    return int(key[0])

class _Repo:
    def __init__(self, engine: Engine, redactor: Redactor | None = None):
        self._engine = engine
        self._redactor = redactor or Redactor()

    def _one(self, cls: type[R], query: Select[Any]) -> R | None:
        """The first row of `query` as a `cls`, or None (one transaction)."""
        with self._engine.begin() as conn:
            return _row(cls, conn.execute(query).first())

    def _all(self, cls: type[R], query: Select[Any]) -> list[R]:
        """Every row of `query` as a `cls` (one transaction)."""
        with self._engine.begin() as conn:
            return [_row(cls, r) for r in conn.execute(query).all()]
