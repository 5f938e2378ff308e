"""A row kept in flight records the holder of the submit claim it was sent under
(submits_in_flight.holder, schema 23): the recovery that settles the row
(bot.services.runs.recover_submits_in_flight) ends that claim, and only that one; a claim of
the key another submit took since stays."""

from __future__ import annotations

import fakes
import pytest
from fakes import AnswerLostSlurm, make_context
from support.dying import Died, dies_at
from support.in_flight import in_flight, jobs, recover

from bot.core import train_grammar as c
from bot.core.submit_keys import claim_key
from bot.core.takeover import RemoteDeadlines, submit_in_flight_s
from bot.services import submit as submit_mod
from bot.services.train import execute
from bot.store import Store

NOW = 1_000_000.0
LATER = NOW + submit_in_flight_s(RemoteDeadlines()) + 1  # the submit can no longer be in flight
CHANNEL = "C0TRAIN"


def stopped_after_sbatch(store: Store, monkeypatch: pytest.MonkeyPatch
                         ) -> tuple[object, int, str]:
    """Run `mix` (job 88154 failed) resumed by Alice, the bot stopping right after the
    resume's sbatch queued 90500 (its claim kept: its job is not recorded). (context, chain,
    the claim's holder, as its row keeps it)."""
    slurm = AnswerLostSlurm(lost=0, submitted_at=NOW)
    ctx = make_context(store, slurm, clock=lambda: NOW)
    chain = fakes.failed_run(ctx, now=NOW, channel=CHANNEL)
    with monkeypatch.context() as m, pytest.raises(Died):
        m.setattr(submit_mod, "crashpoint", dies_at("sbatch_returned"))
        execute(ctx, c.Resume("mix"), actor="U0ALICE", channel=CHANNEL, now=NOW)
    [flight] = store.submits_in_flight.sent_before("dev", float("inf"))
    assert flight.holder is not None
    return ctx, chain, flight.holder


def test_the_recovery_that_settles_a_row_ends_the_claim_it_was_sent_under(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The claim is still held when the recovery records the job (its holder not judged
    dead, its hold not lapsed): recording the job ends it, so the run's next submit need
    not wait for it to lapse."""
    ctx, chain, holder = stopped_after_sbatch(store, monkeypatch)
    key = claim_key("mix", chain)
    assert store.command_claims.renew(key, holder, LATER, 600.0)
    recover(ctx, LATER)  # type: ignore[arg-type]
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []
    assert store.command_claims.held_around(key, [], LATER) == []


def test_the_recovery_that_settles_a_row_leaves_a_claim_another_submit_took_since(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The row's claim was ended, and another submit (another holder) claimed the key since:
    the recovery that settles the row leaves that claim alone."""
    ctx, chain, holder = stopped_after_sbatch(store, monkeypatch)
    key = claim_key("mix", chain)
    store.command_claims.release(key, holder)
    assert store.command_claims.claim(key, "later-click", LATER, 600.0)
    recover(ctx, LATER)  # type: ignore[arg-type]
    assert jobs(store, chain) == ["88154", "90500"] and in_flight(store) == []
    assert store.command_claims.held_around(key, [], LATER) == [(key, "later-click")]
