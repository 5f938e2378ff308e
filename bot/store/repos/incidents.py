"""Incidents: what the watcher found and decided about a chain's job, keyed for dedup."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.store import schema as t
from bot.store.repos.base import _Repo
from bot.store.rows import (
    Incident,
)


class IncidentsRepo(_Repo):
    """Diagnosed incidents, recorded once per key."""

    def record(
        self,
        key: str,
        *,
        class_id: str,
        diagnosis: Mapping[str, Any],
        now: float,
        chain_id: int | None = None,
        job_id: str | None = None,
        state: str = "open",
    ) -> tuple[Incident, bool]:
        """Record an incident unless one with `key` exists; returns (incident, created). The
        diagnosis's texts are stored redacted (bot.core.redact: no secret reaches the store)."""
        values = self.values(key, class_id=class_id, diagnosis=diagnosis, now=now,
                             chain_id=chain_id, job_id=job_id, state=state)
        existing = self.get(key)
        if existing is not None:
            return existing, False
        try:
            with self._engine.begin() as conn:
                conn.execute(insert(t.incidents).values(**values))
        except IntegrityError:  # a concurrent writer recorded the same key first
            existing = self.get(key)
            if existing is None:
                raise
            return existing, False
        incident = self.get(key)
        assert incident is not None
        return incident, True

    def values(self, key: str, *, class_id: str, diagnosis: Mapping[str, Any], now: float,
               chain_id: int | None = None, job_id: str | None = None,
               state: str = "open") -> dict[str, Any]:
        """The row `record` would insert (its diagnosis redacted), for a write that records
        it in its own transaction with what it tells (ApprovalsRepo.mark_done's `keep`)."""
        return dict(
            key=key,
            chain_id=chain_id,
            job_id=None if job_id is None else str(job_id),
            class_id=class_id,
            diagnosis_json=json.dumps(self._redactor.redact_data(diagnosis), sort_keys=True),
            created_at=now,
            state=state,
        )

    def get(self, key: str) -> Incident | None:
        return self._one(Incident, select(t.incidents).where(t.incidents.c.key == key))

    def for_chain(self, chain_id: int) -> list[Incident]:
        return self._all(
            Incident,
            select(t.incidents)
            .where(t.incidents.c.chain_id == chain_id)
            .order_by(t.incidents.c.id),
        )

    def of_class(self, class_id: str, states: Iterable[str]) -> list[Incident]:
        """The incidents of `class_id` in one of `states`, oldest first (any chain)."""
        return self._all(
            Incident,
            select(t.incidents)
            .where(t.incidents.c.class_id == class_id, t.incidents.c.state.in_(list(states)))
            .order_by(t.incidents.c.id),
        )

    def set_state(self, key: str, state: str) -> None:
        with self._engine.begin() as conn:
            result = conn.execute(
                update(t.incidents).where(t.incidents.c.key == key).values(state=state)
            )
        if result.rowcount != 1:
            raise KeyError(f"no incident {key!r}")

    def set_state_from(self, key: str, expected: str, state: str) -> bool:
        """Set `state` only while the incident is still `expected` (one conditional UPDATE):
        of replicas acting on one row, one wins; False when another moved it meanwhile."""
        incidents = t.incidents
        with self._engine.begin() as conn:
            result = conn.execute(
                update(incidents).where(incidents.c.key == key, incidents.c.state == expected)
                .values(state=state)
            )
        return result.rowcount == 1

    def note_failure(self, key: str, *, error: str, state: str,
                     facts: Mapping[str, Any]) -> dict[str, Any]:
        """One more failed try of incident `key` (an automatic resubmit's): its `failures`
        counted in its diagnosis, `error` (stored redacted) and `facts` (e.g. when it is
        tried again) kept there beside it, and its state set to `state`, in one transaction.
        Its diagnosis as stored: the failures counted so far, this one included, the error
        redacted."""
        incidents = t.incidents
        with self._engine.begin() as conn:
            stored = conn.execute(select(incidents.c.diagnosis_json)
                                  .where(incidents.c.key == key)).scalar_one_or_none()
            if stored is None:
                raise KeyError(f"no incident {key!r}")
            diagnosis = json.loads(stored)
            failures = int(diagnosis.get("failures") or 0) + 1
            diagnosis.update(self._redactor.redact_data({**facts, "error": error}),
                             failures=failures)
            conn.execute(update(incidents).where(incidents.c.key == key).values(
                diagnosis_json=json.dumps(diagnosis, sort_keys=True), state=state))
        return diagnosis

    def note_facts(self, key: str, facts: Mapping[str, Any]) -> None:
        """Keep `facts` (e.g. when an automatic resubmit is looked at again) in incident
        `key`'s diagnosis beside what is there, its state and failures unchanged, in one
        transaction."""
        incidents = t.incidents
        with self._engine.begin() as conn:
            stored = conn.execute(select(incidents.c.diagnosis_json)
                                  .where(incidents.c.key == key)).scalar_one_or_none()
            if stored is None:
                raise KeyError(f"no incident {key!r}")
            diagnosis = {**json.loads(stored), **self._redactor.redact_data(dict(facts))}
            conn.execute(update(incidents).where(incidents.c.key == key).values(
                diagnosis_json=json.dumps(diagnosis, sort_keys=True)))
