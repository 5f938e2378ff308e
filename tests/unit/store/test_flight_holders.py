"""submits_in_flight.holder (schema 23): the holder of the submit claim a row was sent
under, whose claim `SubmitsInFlightRepo.remove` ends with the row, and only that one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import inspect, text

from bot.core.submit_keys import claim_key
from bot.store import Store
from bot.store import schema as current_schema

FLIGHT: dict[str, Any] = {"recipe": "mix", "job_name": "mix", "chain_id": None, "array_task": None,
          "resumed_at": None, "charge_retry": False, "actor": "U0ALICE", "channel": "C1"}
KEY = claim_key("mix")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.open(store_url)
    yield s
    s.close()


def test_removing_a_row_ends_its_holders_claim_and_no_other(store: Store) -> None:
    ours = store.submits_in_flight.add(cluster="dev", **FLIGHT, sent_at=5.0, holder="h1").flight
    assert ours.holder == "h1"
    assert store.command_claims.claim(KEY, "h1", 10.0, 600.0)
    assert store.submits_in_flight.remove(ours.id)
    assert store.command_claims.held_around(KEY, [], 11.0) == []
    again = store.submits_in_flight.add(cluster="dev", **FLIGHT, sent_at=6.0, holder="h1").flight
    assert store.command_claims.claim(KEY, "h2", 12.0, 600.0)  # another submit's, since
    assert store.submits_in_flight.remove(again.id)
    assert not store.submits_in_flight.remove(again.id)
    assert store.command_claims.held_around(KEY, [], 13.0) == [(KEY, "h2")]
    none = store.submits_in_flight.add(cluster="dev", **FLIGHT, sent_at=7.0).flight
    assert none.holder is None and store.submits_in_flight.remove(none.id)
    assert store.command_claims.held_around(KEY, [], 14.0) == [(KEY, "h2")]


def test_v22_store_gets_submit_holders_keeping_its_submits_in_flight(store_url: str) -> None:
    """A row written before version 23 has no holder: removing it ends no claim."""
    with Store.open(store_url, target_version=22) as old:
        assert "holder" not in {c["name"] for c in
                                inspect(old.engine).get_columns("submits_in_flight")}
        with old.engine.begin() as conn:
            conn.execute(text("INSERT INTO submits_in_flight (cluster, recipe, job_name,"
                              " charge_retry, actor, channel, sent_at) VALUES ('dev', 'mix',"
                              " 'mix', :f, 'U0ALICE', 'C1', 5.0)"), {"f": False})
        assert old.command_claims.claim(KEY, "h1", 10.0, 600.0)
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION > 22
        [flight] = new.submits_in_flight.sent_before("dev", 10.0)
        assert (flight.actor, flight.sent_at, flight.holder) == ("U0ALICE", 5.0, None)
        assert new.submits_in_flight.remove(flight.id)
        assert new.command_claims.held_around(KEY, [], 11.0) == [(KEY, "h1")]
