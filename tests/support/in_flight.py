"""What the tests of the submits in flight read of a run after a crash and a recovery
(tests/unit/services/test_submits_in_flight*.py): the scheduler's `submits` job as bot.app
wires it, and the store's view of the run on cluster `dev`."""

from __future__ import annotations

from sqlalchemy import delete

from bot.services.after_submit import after_person_submit
from bot.services.ports import BotContext
from bot.services.runs import recover_submits_in_flight
from bot.store import Store
from bot.store import schema as t


def recover(ctx: BotContext, now: float) -> None:
    """The scheduler's `submits` job, as bot.app wires it."""
    recover_submits_in_flight(ctx, now, after_submit=after_person_submit)


def jobs(store: Store, chain_id: int) -> list[str]:
    """The job ids of the run's attempts, in order."""
    return [a.job_id for a in store.attempts.for_chain(chain_id)]


def watched(store: Store) -> list[str]:
    """The jobs the watcher follows on cluster dev."""
    return [w.job_id for w in store.watched_jobs.list("dev")]


def in_flight(store: Store) -> list[str]:
    """The job names of the submits in flight on cluster dev."""
    return [f.job_name for f in store.submits_in_flight.sent_before("dev", float("inf"))]


def settled(store: Store) -> None:
    """Every submit whose outcome was not seen, settled by hand: its row in flight forgotten
    and its submit claim (kept until it lapses: its job may have been queued) ended, so a test
    can submit the recipe again at once."""
    for flight in store.submits_in_flight.sent_before("dev", float("inf")):
        store.submits_in_flight.remove(flight.id)
    with store.engine.begin() as conn:
        conn.execute(delete(t.command_claims).where(t.command_claims.c.key.startswith("submit:")))


def without_the_claim(monkeypatch) -> None:
    """Submits made as a trainbot before the submit claim made them (no claim taken or
    refused: bot.services.submit_claim), to set up what such a trainbot left."""
    monkeypatch.setattr("bot.services.submit.claim_submit", lambda *a, **kw: None)
