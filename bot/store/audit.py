"""The audit log: who did what to which job, kept for people, redacted of secrets."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert, select

from bot.store import schema as t
from bot.store.repos.base import _insert_id, _Repo, _row
from bot.store.rows import AuditEntry


class AuditRepo(_Repo):
    """The audit log: every action, who asked, which job, when, and the result; the detail
    (an error text, a mapping of facts) is stored redacted."""

    def record(
        self,
        *,
        actor: str,
        action: str,
        now: float,
        result: str = "ok",
        job_id: str | None = None,
        recipe: str | None = None,
        detail: str | Mapping[str, Any] | None = None,
    ) -> int:
        if isinstance(detail, str):
            detail = self._redactor.redact(detail)
        elif detail is not None:
            detail = json.dumps(self._redactor.redact_data(detail), sort_keys=True)
        with self._engine.begin() as conn:
            return _insert_id(conn, insert(t.audit_log).values(
                at=now,
                actor=actor,
                action=action,
                job_id=None if job_id is None else str(job_id),
                recipe=recipe,
                result=result,
                detail=detail,
            ))

    def recent(
        self, limit: int = 50, *, recipe: str | None = None, job_id: str | None = None
    ) -> list[AuditEntry]:
        """Newest first."""
        query = select(t.audit_log)
        if recipe is not None:
            query = query.where(t.audit_log.c.recipe == recipe)
        if job_id is not None:
            query = query.where(t.audit_log.c.job_id == str(job_id))
        with self._engine.begin() as conn:
            rows = conn.execute(query.order_by(t.audit_log.c.id.desc()).limit(limit)).all()
        return [_row(AuditEntry, r) for r in rows]
