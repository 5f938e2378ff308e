"""The state store: each repository verb, exactly-once approval claims, in-place upgrades.

Every test taking `store` or `store_url` runs on SQLite and on PostgreSQL (the dev cluster's,
see tests/conftest.py); the rest are about SQLite files themselves (folder, WAL, `~`).
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
from fakes import present
from sqlalchemy import event, inspect, make_url, text
from sqlalchemy.exc import IntegrityError
from support.race import race, winners_of_race

from bot.core.redact import Redactor
from bot.core.takeover import StepBounds
from bot.store import Store, StoreClosed, StoreError, StoreVersionError, display_url
from bot.store import schema as current_schema


@pytest.fixture
def store(store_url):
    s = Store.open(store_url)
    yield s
    s.close()


def test_open_creates_parent_dir_wal_and_latest_schema(tmp_path):
    path = tmp_path / "deep" / "er" / "trainbot.db"
    with Store.open(f"sqlite:///{path}") as s:
        assert s.schema_version == s.latest_version == current_schema.SCHEMA_VERSION
        s.check_writable()
    assert path.exists()
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_tilde_in_sqlite_url_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with Store.open("sqlite:///~/.local/state/trainbot/trainbot.db"):
        pass
    assert (tmp_path / ".local/state/trainbot/trainbot.db").exists()


def test_an_unreachable_postgresql_is_named_without_its_password():
    with pytest.raises(StoreError, match=r"at postgresql\+psycopg://trainbot:\*\*\*@127.0.0.1:1/"
                       ) as info:
        Store.open("postgresql+psycopg://trainbot:s3cret@127.0.0.1:1/trainbot")
    assert "s3cret" not in str(info.value)


def test_a_postgresql_that_accepts_then_says_nothing_is_given_up_on(monkeypatch):
    """A server that takes the TCP connection and never answers (a stuck database, a proxy
    whose backend is gone): `trainbot run` fails to open the store after the connect
    timeout, naming the URL, instead of waiting at start for as long as the socket stays
    open."""
    monkeypatch.setattr("bot.store.PG_CONNECT_TIMEOUT_S", 1)
    server = socket.create_server(("127.0.0.1", 0))
    held: list[Any] = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
    url = f"postgresql+psycopg://trainbot:s3cret@127.0.0.1:{server.getsockname()[1]}/trainbot"
    started = time.monotonic()
    try:
        with pytest.raises(StoreError, match=r"cannot open the store at postgresql\+psycopg://"
                           r"trainbot:\*\*\*@127.0.0.1:\d+/trainbot: .*timeout"):
            Store.open(url)
        assert time.monotonic() - started < 5
    finally:
        server.close()
        for conn, _ in held:
            conn.close()


@pytest.mark.integration
def test_a_postgresql_store_bounds_its_statements_and_outlives_a_dropped_connection(
        postgres_store_url):
    """On the dev cluster's PostgreSQL: each statement is bounded by the server
    (statement_timeout), a store.url's own `options` win, and a connection the server
    dropped (restarted, or cut by a NAT) is replaced before the next use instead of failing
    it."""
    with Store.open(postgres_store_url) as store:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "1min"
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with Store.open(postgres_store_url) as other, other.engine.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(present(pid))})")
            conn.commit()
        chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
        assert present(store.chains.get(chain.id)).recipe == "mix"
    own = make_url(postgres_store_url).update_query_dict(
        {"options": "-c statement_timeout=5s"}).render_as_string(hide_password=False)
    with Store.open(own) as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "5s"


def test_a_postgresql_store_opens_while_another_replica_upgrades_past_its_statement_bound(
        postgres_store_url):
    """A replica opening the store waits on the upgrade lock another replica holds (its
    upgrade) longer than the store's statement_timeout, and opens once that ends, instead of
    failing; its later statements keep the store's bound."""
    from bot.store.migrations import _UPGRADE_LOCK
    url = make_url(postgres_store_url)
    short = url.update_query_dict({"options": "-c statement_timeout=500ms"}
                                  ).render_as_string(hide_password=False)
    with Store.open(postgres_store_url) as holder, holder.engine.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_UPGRADE_LOCK})")
        release = threading.Timer(2.0, conn.rollback)
        release.start()
        try:
            started = time.monotonic()
            with Store.open(short) as store:
                assert time.monotonic() - started >= 1.5  # it did wait on the lock
                assert store.schema_version == current_schema.SCHEMA_VERSION
                with store.engine.connect() as own:
                    assert own.exec_driver_sql("SHOW statement_timeout").scalar() == "500ms"
        finally:
            release.cancel()
            release.join()


# URLs that SQLAlchemy cannot parse (bad port, no scheme, a space) or parses wrongly (an
# unescaped @ in the password): the password must never be shown.
BAD_URLS = [
    ("postgresql://bob:s3cret@db:abc/trainbot", "postgresql://bob:***@db:abc/trainbot"),
    ("bob:s3cret@db/trainbot", "bob:***@db/trainbot"),
    ("post gres://bob:s3cret@db/trainbot", "post gres://bob:***@db/trainbot"),
    ("postgresql://bob:s3cr@t@db/trainbot", "postgresql://bob:***@db/trainbot"),
    ("postgresql://bob:s3/cr?et@db/trainbot", "postgresql://bob:***@db/trainbot"),
    ("postgresql://db/trainbot?user=bob&password=s3cret",
     "postgresql://db/trainbot?user=bob&password=***"),
]


@pytest.mark.parametrize(("url", "shown"), BAD_URLS)
def test_display_url_masks_the_password_even_when_the_url_does_not_parse(url, shown):
    assert display_url(url) == shown


@pytest.mark.parametrize(("url", "shown"), BAD_URLS[:3])
def test_a_url_that_does_not_parse_is_refused_without_its_password(url, shown):
    with pytest.raises(StoreError) as info:
        Store.open(url)
    assert "s3" not in str(info.value) and "cret" not in str(info.value)
    assert f"store.url {shown} is not a database URL" in str(info.value)


def test_urls_without_a_password_are_shown_as_written():
    for url in ("sqlite:////home/a@b/x.db", "sqlite:///~/.local/state/trainbot/trainbot.db",
                "postgresql+psycopg://bob@db:5432/trainbot"):
        assert display_url(url) == url


def test_a_missing_database_driver_names_the_extra_to_install():
    with pytest.raises(StoreError, match=r"psycopg2.*pip install 'trainbot\[postgres\]'") as info:
        Store.open("postgresql+psycopg2://trainbot:s3cret@127.0.0.1/trainbot")
    assert "s3cret" not in str(info.value)


def test_migrated_schema_matches_the_tables_the_code_queries(store):
    insp = inspect(store.engine)
    for table in current_schema.metadata.sorted_tables:
        columns = {c["name"] for c in insp.get_columns(table.name)}
        assert columns == {c.name for c in table.columns}, table.name


def test_migrated_indexes_match_the_schema(store):
    insp = inspect(store.engine)
    for table in current_schema.metadata.sorted_tables:
        got = {(i["name"], tuple(i["column_names"])) for i in insp.get_indexes(table.name)
               if not i.get("duplicates_constraint")}  # PostgreSQL lists UNIQUE's index too
        want = {(i.name, tuple(c.name for c in i.columns)) for i in table.indexes}
        assert got == want, table.name


def test_after_close_nothing_is_written_or_read(store_url):
    """The bot stopping closed the store: a Slack handler still under way once the stop has
    waited its bound gets StoreClosed for each write and read (as it gets no SSH session
    after ClusterSessions.close), never a new connection over which it could still record a
    claim or an audit line; a transaction begun before the close ends as it would. Before,
    close() only emptied the pool, and the next write opened a new connection."""
    s = Store.open(store_url)
    chain = s.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
    with s.engine.begin() as conn:  # under way when the stop closes the store
        s.close()
        conn.execute(text("UPDATE chains SET job_name = 'mix2' WHERE id = :id"),
                     {"id": chain.id})
    with pytest.raises(StoreClosed, match=r"is closed \(trainbot is stopping\)"):
        s.audit.record(actor="U0ALICE", action="approval.click", now=2.0, result="ok")
    with pytest.raises(StoreClosed):
        s.chains.create(recipe="mix", cluster="dev", job_name="mix", now=3.0)
    with pytest.raises(StoreError):  # a StoreError, as every store failure
        s.chains.get(chain.id)
    s.close()  # idempotent
    with Store.open(store_url) as again:  # the database itself is as it was left
        assert present(again.chains.get(chain.id)).job_name == "mix2"
        assert again.audit.recent(10) == []
        assert [c.id for c in again.chains.for_recipe("mix")] == [chain.id]


def test_foreign_keys_are_enforced(store):
    with pytest.raises(Exception, match="(?i)foreign key"):
        store.attempts.record(chain_id=999, job_id="1", now=1.0)


def test_a_charged_attempt_and_its_charge_are_one_transaction(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
    with pytest.raises(Exception, match="(?i)not[ -]null"):  # the attempt cannot be written
        store.attempts.record(chain_id=chain.id, job_id="1", now=2.0, state=None,
                              charge_retry=True)
    assert store.chains.get(chain.id).retries_used == 0  # the charge was rolled back with it
    with pytest.raises(KeyError, match="no chain 999"):
        store.attempts.record(chain_id=999, job_id="2", now=2.0, charge_retry=True)


def test_one_job_recorded_twice_in_a_run_is_one_attempt_charged_once(store):
    """A lost submit's recovery and a settle's takeover both find job 90500 by its name and
    record it: the second gets the first's attempt back, uncharged, and says it did not
    record it; the run still counts one attempt and one retry."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=1.0)
    first = store.attempts.record(chain_id=chain.id, job_id="90500", now=2.0, start_iter=1000,
                                  checkpoint_path="/ck/1000", charge_retry=True,
                                  submitted_at=1.5)
    again = store.attempts.record(chain_id=chain.id, job_id="90500", now=3.0,
                                  charge_retry=True)
    assert (first.new, again.new) == (True, False)
    assert again.attempt == first.attempt  # as it was recorded: number, start, checkpoint
    assert (again.attempt.attempt_no, again.attempt.start_iter, again.attempt.submitted_at) == \
        (2, 1000, 1.5)
    assert store.attempts.record(chain_id=chain.id, job_id="90500", now=4.0) == \
        (first.attempt, False)
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88154", "90500"]
    assert store.chains.get(chain.id).retries_used == 1
    other = store.chains.create(recipe="", cluster="dev", job_name="mix", now=5.0,
                                kind="adopted")  # another run may record the same job id
    assert store.attempts.record(chain_id=other.id, job_id="90500", now=5.0).new


def test_one_job_recorded_at_once_by_several_replicas_is_one_attempt(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
    got = race([lambda: store.attempts.record(chain_id=chain.id, job_id="90500", now=2.0,
                                              charge_retry=True)] * 4)
    assert sorted(r.new for r in got) == [False, False, False, True]
    assert {r.attempt.id for r in got} == {store.attempts.get_by_job("90500").id}
    assert [a.attempt_no for a in store.attempts.for_chain(chain.id)] == [1]
    assert store.chains.get(chain.id).retries_used == 1


def test_chains_create_get_thread_status_and_retry_ledger(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=100.0)
    assert store.chains.get(chain.id) == chain
    store.chains.set_thread(chain.id, channel="C1", thread_ts="111.222", now=101.0)
    store.attempts.record(chain_id=chain.id, job_id="1", now=102.0)
    store.attempts.record(chain_id=chain.id, job_id="2", now=102.5, charge_retry=True)
    store.attempts.record(chain_id=chain.id, job_id="3", now=103.0, charge_retry=True)
    store.chains.set_status(chain.id, "stopped", now=104.0)
    got = store.chains.get(chain.id)
    assert (got.thread_ts, got.channel, got.retries_used, got.status, got.updated_at) == (
        "111.222",
        "C1",
        2,
        "stopped",
        104.0,
    )
    other = store.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=200.0)
    assert store.chains.latest_for_recipe("mix").id == other.id
    assert [c.id for c in store.chains.for_recipe("mix")] == [other.id, chain.id]
    assert [c.id for c in store.chains.with_status("active")] == [other.id]
    with pytest.raises(KeyError):
        store.chains.set_status(999, "x", now=1.0)


def test_attempts_are_numbered_per_chain_and_updated(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="m", now=1.0)
    a1 = store.attempts.record(chain_id=chain.id, job_id="88016", now=2.0).attempt
    a2 = store.attempts.record(
        chain_id=chain.id, job_id="88154", now=3.0, start_iter=1000, checkpoint_path="/ck/1000"
    ).attempt
    assert (a1.attempt_no, a2.attempt_no) == (1, 2)
    store.attempts.update(
        a1.id, state="FAILED", result="FAILED", cause="host_oom", last_iter=1049,
        work_lost_iters=49, work_lost_s=220.5, ended_at=9.0,
    )  # fmt: skip
    got = store.attempts.get_by_job("88016")
    assert (got.cause, got.last_iter, got.work_lost_iters, got.work_lost_s) == (
        "host_oom",
        1049,
        49,
        220.5,
    )
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88016", "88154"]
    assert store.attempts.latest(chain.id).start_iter == 1000
    assert store.attempts.get_by_job("88154", cluster="other") is None
    with pytest.raises(ValueError, match="job_id"):
        store.attempts.update(a1.id, job_id="x")


def test_attempts_added_at_once_to_one_chain_are_numbered_one_after_another(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="m", now=1.0)
    race([partial(lambda i: store.attempts.record(chain_id=chain.id, job_id=str(88000 + i),
                                                  now=2.0, charge_retry=i % 2 == 0).attempt, i)
          for i in range(6)])
    assert [a.attempt_no for a in store.attempts.for_chain(chain.id)] == [1, 2, 3, 4, 5, 6]
    assert store.chains.get(chain.id).retries_used == 3


def test_tail_offsets_put_get_replace(store):
    assert store.tail_offsets.get("12", "/log") is None
    store.tail_offsets.put("12", "/log", offset=100, size=100, line_no=3, signature="ino:5")
    store.tail_offsets.put("12", "/log", offset=250, size=260, line_no=7, signature="ino:5")
    got = store.tail_offsets.get("12", "/log")
    assert (got.offset, got.size, got.line_no, got.inode_or_signature) == (250, 260, 7, "ino:5")
    assert store.tail_offsets.get("12", "/other") is None


def test_incident_recorded_once_per_key(store):
    inc, created = store.incidents.record(
        "88154:nccl_timeout", class_id="nccl_timeout", diagnosis={"class": "nccl_timeout"},
        now=5.0, job_id="88154",
    )  # fmt: skip
    again, created_again = store.incidents.record(
        "88154:nccl_timeout", class_id="other", diagnosis={}, now=6.0
    )
    assert created and not created_again
    assert again.id == inc.id and again.class_id == "nccl_timeout"
    assert again.diagnosis == {"class": "nccl_timeout"}
    store.incidents.set_state("88154:nccl_timeout", "resolved")
    assert store.incidents.get("88154:nccl_timeout").state == "resolved"


def test_an_incident_state_moved_meanwhile_is_not_overwritten(store):
    store.incidents.record("88300:resubmit", class_id="resubmit", diagnosis={}, now=5.0,
                           state="due")
    assert store.incidents.set_state_from("88300:resubmit", "due", "submitting")
    assert not store.incidents.set_state_from("88300:resubmit", "due", "submitting")
    store.incidents.set_state("88300:resubmit", "done")
    assert not store.incidents.set_state_from("88300:resubmit", "due", "submitting")
    assert store.incidents.get("88300:resubmit").state == "done"


def test_approval_claimed_once_and_not_after_expiry(store):
    token = store.approvals.create(
        action="resubmit", payload={"from_iter": 1000}, allowed=["U1", "U2"],
        expires_at=100.0, now=0.0, target_job="88016",
    )  # fmt: skip
    assert len(token) >= 16 and store.approvals.get(token).allowed == ["U1", "U2"]
    first = store.approvals.claim(token, "U1", now=10.0)
    second = store.approvals.claim(token, "U2", now=11.0)
    assert first.claimed and first.approval.decided_by == "U1"
    assert not second.claimed and second.reason == "decided"
    assert second.approval.decided_by == "U1"
    assert store.approvals.mark_done(token, now=12.0)
    assert not store.approvals.mark_done(token, now=13.0)

    late = store.approvals.create(action="hold", payload={}, allowed=["U1"], expires_at=50, now=0)
    result = store.approvals.claim(late, "U1", now=50.0)
    assert (result.claimed, result.reason, result.approval.state) == (False, "expired", "expired")
    assert store.approvals.claim("no-such-token", "U1", now=1.0).reason == "unknown"


def test_refuse_and_expire_due(store):
    a = store.approvals.create(action="hold", payload={}, allowed=["U1"], expires_at=50, now=0)
    b = store.approvals.create(action="hold", payload={}, allowed=["U1"], expires_at=60, now=0)
    assert store.approvals.refuse(a, "U1", now=1.0).claimed
    assert not store.approvals.claim(a, "U1", now=2.0).claimed
    assert store.approvals.expire_due(now=70.0) == [b]
    assert store.approvals.get(b).state == "expired"


def test_with_state_finds_exactly_the_approvals_of_an_action_in_a_state(store):
    chains = [store.chains.create(recipe="mix", cluster="dev", job_name="m", now=float(i))
              for i in range(3)]

    def hold(job: str, chain_id: int, now: float) -> str:
        return store.approvals.create(action="hold_competitor", payload={"for_job": "1"},
                                      allowed=["U1"], expires_at=1e12, now=now,
                                      target_job=job, chain_id=chain_id)

    held_late = hold("88019", chains[2].id, 3.0)
    held_early = hold("88017", chains[0].id, 1.0)
    asked_only = hold("88018", chains[1].id, 2.0)
    released = hold("88020", chains[1].id, 4.0)
    resubmit = store.approvals.create(action="resubmit", payload={}, allowed=["U1"],
                                      expires_at=1e12, now=0.0, chain_id=chains[0].id)
    for token in (held_late, held_early, released, resubmit):
        assert store.approvals.claim(token, "U1", now=5.0).claimed
    assert store.approvals.mark_done(released, now=6.0)

    held = store.approvals.with_state("hold_competitor", "approved")
    assert [a.target_job for a in held] == ["88017", "88019"]  # oldest first, all chains
    assert [a.token for a in store.approvals.with_state("hold_competitor", "pending")] == [
        asked_only]
    assert [a.token for a in store.approvals.with_state("hold_competitor", "done")] == [released]
    assert [a.token for a in store.approvals.with_state("resubmit", "approved")] == [resubmit]
    assert store.approvals.with_state("hold_competitor", "expired") == []


def test_a_claim_marks_its_step_only_when_it_claims(store):
    """A hold's yes marks "hold_approved" with its claim: the row is never approved without
    it; a claim that finds the prompt decided or expired marks nothing."""
    token = store.approvals.create(action="hold_competitor", payload={"for_job": "1"},
                                   allowed=["U1"], expires_at=100.0, now=0.0)
    late = store.approvals.create(action="hold_competitor", payload={"for_job": "1"},
                                  allowed=["U1"], expires_at=100.0, now=0.0)
    assert store.approvals.claim(token, "U1", now=5.0, step="hold_approved").claimed
    assert store.approvals.steps(token) == {"hold_approved": 5.0}
    assert not store.approvals.claim(token, "U2", now=6.0, step="hold_approved").claimed
    assert store.approvals.steps(token) == {"hold_approved": 5.0}
    assert not store.approvals.claim(late, "U1", now=200.0, step="hold_approved").claimed
    assert store.approvals.steps(late) == {}
    with pytest.raises(ValueError, match="step must be one of"):
        store.approvals.claim(late, "U1", now=5.0, step="held")
    assert store.approvals.get(late).state == "expired"


def test_approval_claimed_exactly_once_under_concurrent_clicks(store):
    token = store.approvals.create(
        action="resubmit", payload={}, allowed=["U1"], expires_at=1e12, now=0.0
    )
    n = 16
    results = race([partial(lambda i: store.approvals.claim(token, f"U{i}", now=1.0), i)
                    for i in range(n)])
    winners = [r for r in results if r.claimed]
    assert len(results) == n and len(winners) == 1
    assert store.approvals.get(token).decided_by == winners[0].approval.decided_by


def _prompt_about(store, chain_id: int, job: str) -> str:
    return store.approvals.create(action="resubmit", payload={}, allowed=["U1"],
                                  expires_at=1e12, now=0.0, target_job=job, chain_id=chain_id)


def test_a_claim_about_a_job_that_is_no_longer_the_chains_latest_is_stale(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="m", now=1.0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=1.0)
    old, dismissed = _prompt_about(store, chain.id, "88154"), _prompt_about(store, chain.id,
                                                                             "88154")
    store.attempts.record(chain_id=chain.id, job_id="88887", now=2.0, state="RUNNING")
    for decide, token in ((store.approvals.claim, old), (store.approvals.refuse, dismissed)):
        result = decide(token, "U1", now=3.0, latest_job="88154")
        assert (result.claimed, result.reason) == (False, "stale")
        assert (result.latest.job_id, result.latest.state) == ("88887", "RUNNING")
        assert (result.approval.state, result.approval.decided_by) == ("stale", "U1")
    # stale for good: a later click is told the chain's latest job again
    store.attempts.record(chain_id=chain.id, job_id="88888", now=4.0)
    again = store.approvals.claim(old, "U2", now=5.0, latest_job="88154")
    assert (again.reason, again.latest.job_id) == ("stale", "88888")
    # without the chain check (a caller that does not ask for it) nothing changes
    fresh = _prompt_about(store, chain.id, "88154")
    assert store.approvals.claim(fresh, "U1", now=6.0).claimed


def test_a_claim_while_another_approval_acts_on_the_same_job_is_busy(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="m", now=1.0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=1.0)
    first, second = _prompt_about(store, chain.id, "88154"), _prompt_about(store, chain.id,
                                                                           "88154")
    assert store.approvals.claim(first, "U1", now=2.0, latest_job="88154").claimed
    busy = store.approvals.claim(second, "U2", now=3.0, latest_job="88154")
    assert (busy.claimed, busy.reason, busy.other.token) == (False, "busy", first)
    assert store.approvals.get(second).state == "pending"  # still a live question
    assert store.approvals.mark_done(first, now=4.0)  # the first one's action ended
    assert store.approvals.claim(second, "U2", now=5.0, latest_job="88154").claimed


def test_two_prompts_about_one_job_clicked_at_once_are_claimed_once(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="m", now=1.0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=1.0)
    n = 8
    tokens = [_prompt_about(store, chain.id, "88154") for _ in range(n)]
    results = race([partial(lambda i: store.approvals.claim(tokens[i], f"U{i}", now=2.0,
                                                            latest_job="88154"), i)
                    for i in range(n)])
    assert sorted(r.reason for r in results) == ["busy"] * (n - 1) + ["claimed"]


def test_a_command_is_claimed_once_and_its_claim_lapses_after_the_ttl(store):
    claims = store.command_claims
    assert claims.claim("trig-1", "host:1:aa", now=100.0, ttl_s=60.0)
    assert not claims.claim("trig-1", "host:2:bb", now=101.0, ttl_s=60.0)  # the redelivery
    assert claims.holder("trig-1") == "host:1:aa"
    assert claims.claim("trig-2", "host:2:bb", now=150.0, ttl_s=60.0)
    # A later claim deletes the lapsed ones: the table keeps only the last TTL's commands.
    assert claims.claim("trig-3", "host:1:aa", now=200.0, ttl_s=60.0)
    assert claims.holder("trig-1") is None
    assert claims.holder("trig-2") == "host:2:bb"


def test_a_command_delivered_to_many_replicas_at_once_is_claimed_by_exactly_one(store_url):
    n = 8
    stores = [Store.open(store_url) for _ in range(n)]
    stores[0].command_claims.claim("old", "gone", now=0.0, ttl_s=1.0)  # lapsed: purged in race
    try:
        [winner] = winners_of_race([  # exactly one
            partial(lambda i: stores[i].command_claims.claim("trig-1", f"R{i}", now=100.0,
                                                             ttl_s=3600.0), i)
            for i in range(n)])
        assert stores[0].command_claims.holder("trig-1") == f"R{winner}"
        assert stores[0].command_claims.holder("old") is None
    finally:
        for s in stores:
            s.close()


def test_a_progress_rewrite_slot_is_taken_by_exactly_one_of_the_replicas_taking_it(store_url):
    """Eight replicas take slot 0 of the workspace's budget at once, never used (an INSERT
    each), then slot 0 as they all read it a minute later (a conditional UPDATE each):
    exactly one succeeds each time; a slot read before another took it is refused."""
    n = 8
    stores = [Store.open(store_url) for _ in range(n)]
    try:
        [first] = winners_of_race([
            partial(lambda i: stores[i].progress_rewrites.take(0, seen=None, chain_id=i,
                                                               now=100.0), i)
            for i in range(n)])
        assert stores[0].progress_rewrites.slots() == {0: 100.0}
        [second] = winners_of_race([
            partial(lambda i: stores[i].progress_rewrites.take(0, seen=100.0, chain_id=10 + i,
                                                               now=160.0), i)
            for i in range(n)])
        assert stores[0].progress_rewrites.slots() == {0: 160.0}
        assert not stores[0].progress_rewrites.take(0, seen=100.0, chain_id=1, now=170.0)
        assert stores[0].progress_rewrites.take(1, seen=None, chain_id=1, now=170.0)
        assert stores[1].progress_rewrites.slots() == {0: 160.0, 1: 170.0}
    finally:
        for s in stores:
            s.close()


def test_the_roots_a_clusters_tick_left_waiting_replace_its_last_ticks(store):
    waiting = store.progress_rewrites
    waiting.note_waiting("gpu", [(float("-inf"), 3), (50.0, 4)], now=100.0, noted_since=0.0)
    waiting.note_waiting("dev", [(20.0, 7)], now=110.0, noted_since=0.0)
    assert sorted(waiting.waiting(other_than="dev", noted_since=0.0)) == [
        (float("-inf"), 3), (50.0, 4)]
    assert waiting.waiting(other_than="gpu", noted_since=0.0) == [(20.0, 7)]
    waiting.note_waiting("gpu", [(50.0, 4)], now=160.0, noted_since=0.0)  # 3 was rewritten
    assert waiting.waiting(other_than="dev", noted_since=0.0) == [(50.0, 4)]
    assert waiting.waiting(other_than="gpu", noted_since=111.0) == []  # dev's ticks stopped
    waiting.note_waiting("gpu", [], now=200.0, noted_since=150.0)  # drops dev's, noted at 110
    assert waiting.waiting(other_than="gpu", noted_since=0.0) == []
    assert waiting.waiting(other_than="dev", noted_since=0.0) == []


def test_slack_posts_intent_then_posted(store):
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="m", now=1.0)
    post = store.slack_posts.record_intent("chain1:root", channel="C1", kind="root",
                                           chain_id=chain.id)  # fmt: skip
    assert post.state == "intent" and post.ts is None
    assert [p.key for p in store.slack_posts.unposted()] == ["chain1:root"]
    # A second intent (e.g. after a restart) returns the first one, unchanged.
    assert store.slack_posts.record_intent("chain1:root", channel="C2", kind="x").channel == "C1"
    store.slack_posts.record_posted("chain1:root", ts="111.1", thread_ts="111.1")
    got = store.slack_posts.get("chain1:root")
    assert (got.state, got.ts, got.thread_ts, got.posted) == ("posted", "111.1", "111.1", True)
    assert store.slack_posts.unposted() == []
    store.slack_posts.record_updated("chain1:root", payload_hash="abc")
    assert store.slack_posts.get("chain1:root").payload_hash == "abc"
    assert [p.key for p in store.slack_posts.for_chain(chain.id)] == ["chain1:root"]
    with pytest.raises(KeyError, match="record_intent"):
        store.slack_posts.record_posted("never-intended", ts="1.0")


def test_audit_record_and_recent(store):
    store.audit.record(actor="U1", action="submit", now=1.0, job_id="12", recipe="mix")
    store.audit.record(actor="U2", action="cancel", now=2.0, job_id="13", recipe="other",
                       result="refused", detail={"why": "not owner"})  # fmt: skip
    recent = store.audit.recent()
    assert [e.action for e in recent] == ["cancel", "submit"]
    assert recent[0].detail == '{"why": "not owner"}' and recent[0].result == "refused"
    assert [e.job_id for e in store.audit.recent(recipe="mix")] == ["12"]


def test_watched_jobs(store):
    assert store.watched_jobs.add("dev", "12", now=1.0)
    assert not store.watched_jobs.add("dev", "12", now=2.0)
    assert store.watched_jobs.add("dev", "13", now=3.0, adopted=True)
    assert store.watched_jobs.add("prod", "12", now=4.0)
    assert [w.job_id for w in store.watched_jobs.list("dev")] == ["12", "13"]
    assert store.watched_jobs.get("dev", "13").adopted is True
    assert store.watched_jobs.remove("dev", "12")
    assert not store.watched_jobs.remove("dev", "12")
    assert [(w.cluster, w.job_id) for w in store.watched_jobs.list()] == [
        ("dev", "13"),
        ("prod", "12"),
    ]


def test_a_watched_jobs_times_are_set_for_that_job_only_and_apart(store):
    store.watched_jobs.add("dev", "12", now=1.0)
    store.watched_jobs.add("prod", "12", now=1.0)
    store.watched_jobs.set_held_since("dev", "12", 5.0)
    store.watched_jobs.set_unreadable_since("dev", "12", 6.0)
    times = {(w.cluster, w.job_id): (w.held_since, w.unreadable_since)
             for w in store.watched_jobs.list()}
    assert times == {("dev", "12"): (5.0, 6.0), ("prod", "12"): (None, None)}
    store.watched_jobs.set_held_since("dev", "12", None)
    assert (present(store.watched_jobs.get("dev", "12")).held_since,
            present(store.watched_jobs.get("dev", "12")).unreadable_since) == (None, 6.0)


def test_v1_store_is_upgraded_in_place_keeping_data(store_url):
    with Store.open(store_url, target_version=1) as old:
        assert old.schema_version == 1
        assert not inspect(old.engine).has_table("slack_posts")
        with old.engine.begin() as conn:  # what a v1 trainbot wrote
            conn.exec_driver_sql(
                "INSERT INTO chains (recipe, cluster, job_name, status, created_at, updated_at)"
                " VALUES ('mix', 'dev', 'wm-mix', 'active', 1.0, 1.0)"
            )
            conn.exec_driver_sql(
                "INSERT INTO attempts (chain_id, job_id, attempt_no, state, submitted_at)"
                " VALUES (1, '88016', 1, 'FAILED', 2.0)"
            )
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        chain = present(new.chains.get(1))
        assert (chain.recipe, chain.job_name, chain.retries_used) == ("mix", "wm-mix", 0)
        attempt = present(new.attempts.get_by_job("88016"))
        assert (attempt.state, attempt.work_lost_s) == ("FAILED", None)
        new.slack_posts.record_intent("k", channel="C1", kind="root", chain_id=1)
        new.attempts.record(chain_id=1, job_id="88017", now=3.0, charge_retry=True)
        assert present(new.chains.get(1)).retries_used == 1


def test_replicas_starting_at_once_on_an_empty_database_all_open_it(store_url):
    stores = race([lambda: Store.open(store_url)] * 4)
    try:
        assert [s.schema_version for s in stores] == [current_schema.SCHEMA_VERSION] * 4
        with stores[0].engine.begin() as conn:  # migrated once: one version row
            assert conn.exec_driver_sql("SELECT count(*) FROM meta").scalar() == 1
    finally:
        for s in stores:
            s.close()


def test_newer_store_is_refused(store_url):
    with Store.open(store_url) as s, s.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE meta SET schema_version = 99")
    with pytest.raises(StoreVersionError, match="upgrade trainbot"):
        Store.open(store_url)


def test_v2_store_gets_the_approvals_index_keeping_its_holds(store_url):
    with Store.open(store_url, target_version=2) as old:
        assert old.schema_version == 2
        names = {i["name"] for i in inspect(old.engine).get_indexes("approvals")}
        assert "ix_approvals_action_state" not in names
        token = old.approvals.create(action="hold_competitor", payload={"for_job": "88887"},
                                     allowed=["U1"], expires_at=1e12, now=1.0,
                                     target_job="88017")
        assert old.approvals.claim(token, "U1", now=2.0).claimed
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version
        names = {i["name"] for i in inspect(new.engine).get_indexes("approvals")}
        assert "ix_approvals_action_state" in names
        held = new.approvals.with_state("hold_competitor", "approved")
        assert [(a.token, a.target_job) for a in held] == [(token, "88017")]


def test_v3_store_gets_the_leases_table_keeping_its_data(store_url):
    with Store.open(store_url, target_version=3) as old:
        assert old.schema_version == 3
        assert not inspect(old.engine).has_table("leases")
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        old.watched_jobs.add("dev", "88016", now=1.0, chain_id=chain.id)
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version
        assert [w.job_id for w in new.watched_jobs.list("dev")] == ["88016"]
        assert new.leases.holder("watch:dev") is None
        assert new.leases.acquire("watch:dev", "host:1:aa", now=2.0, ttl_s=30.0)
        assert new.leases.holder("watch:dev") == "host:1:aa"


def test_v4_store_gets_held_since_keeping_its_watched_jobs(store_url):
    with Store.open(store_url, target_version=4) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        old.watched_jobs.add("dev", "88016", now=1.0, chain_id=chain.id)
        assert "held_since" not in {c["name"] for c in
                                    inspect(old.engine).get_columns("watched_jobs")}
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        [job] = new.watched_jobs.list("dev")
        assert (job.job_id, job.chain_id, job.held_since) == ("88016", chain.id, None)
        new.watched_jobs.set_held_since("dev", "88016", 7.5)
        assert present(new.watched_jobs.get("dev", "88016")).held_since == 7.5


def test_v15_store_gets_unreadable_since_keeping_its_watched_jobs(store_url):
    with Store.open(store_url, target_version=15) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        old.watched_jobs.add("dev", "88016", now=1.0, chain_id=chain.id)
        old.watched_jobs.set_held_since("dev", "88016", 3.0)
        assert "unreadable_since" not in {c["name"] for c in
                                          inspect(old.engine).get_columns("watched_jobs")}
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        [job] = new.watched_jobs.list("dev")
        assert (job.job_id, job.held_since, job.unreadable_since) == ("88016", 3.0, None)
        new.watched_jobs.set_unreadable_since("dev", "88016", 7.5)
        assert present(new.watched_jobs.get("dev", "88016")).unreadable_since == 7.5
        new.watched_jobs.set_unreadable_since("dev", "88016", None)
        assert present(new.watched_jobs.get("dev", "88016")).unreadable_since is None


def test_v16_store_keeps_the_first_of_a_jobs_duplicate_attempts_with_its_progress(store_url):
    """A run that recorded one job twice before version 17 (attempts 2 and 3 both job 90500,
    the watcher's progress on the later one) keeps attempt 2 with that progress; attempt 4
    keeps its number; the job cannot be recorded twice again."""
    with Store.open(store_url, target_version=16) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
        with old.engine.begin() as conn:  # what a v16 trainbot could write
            for no, job in enumerate(("88154", "90500", "90500", "90611"), start=1):
                conn.exec_driver_sql(
                    "INSERT INTO attempts (chain_id, job_id, attempt_no, state, submitted_at)"
                    f" VALUES ({chain.id}, '{job}', {no}, 'PENDING', 2.0)")
            conn.exec_driver_sql(f"UPDATE chains SET retries_used = 4 WHERE id = {chain.id}")
            # the watcher's progress, in a v16 trainbot's columns (the repository reads today's)
            first_id, dup_id = (row[0] for row in conn.exec_driver_sql(
                "SELECT id FROM attempts WHERE job_id = '90500' ORDER BY id"))
            conn.exec_driver_sql("UPDATE attempts SET started_at = 3.0, last_iter = 1200"
                                 f" WHERE id = {first_id}")
            conn.exec_driver_sql("UPDATE attempts SET state = 'COMPLETED', result = 'COMPLETED',"
                                 f" ended_at = 9.0, last_iter = 4000 WHERE id = {dup_id}")
            conn.exec_driver_sql("UPDATE attempts SET state = 'RUNNING' WHERE job_id = '90611'")
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        got = [(a.id, a.job_id, a.attempt_no, a.state, a.started_at, a.ended_at, a.last_iter)
               for a in new.attempts.for_chain(chain.id)]
        assert got == [(got[0][0], "88154", 1, "PENDING", None, None, None),
                       (first_id, "90500", 2, "COMPLETED", 3.0, 9.0, 4000),
                       (got[2][0], "90611", 4, "RUNNING", None, None, None)]
        # whose charge it was is not known
        assert present(new.chains.get(chain.id)).retries_used == 4
        again = new.attempts.record(chain_id=chain.id, job_id="90500", now=10.0)
        assert (again.new, again.attempt.id) == (False, first_id)
        with pytest.raises(IntegrityError), new.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO attempts (chain_id, job_id, attempt_no, state, submitted_at)"
                f" VALUES ({chain.id}, '90500', 5, 'PENDING', 11.0)")


#: Alice's submit of mix on dev in flight, as the store's `submits_in_flight.add` takes it
#: (with `cluster` and `sent_at`).
ALICES_FLIGHT: dict[str, Any] = dict(
    recipe="mix", job_name="mix", chain_id=None, array_task=None, resumed_at=None,
    charge_retry=False, actor="U0ALICE", channel="C1")


def write_old_flight(old: Store, **columns: Any) -> None:
    """Alice's submit of mix on dev in flight, sent at 5.0, as a trainbot of `old`'s schema
    wrote it: the columns every version has, and that version's own `columns`."""
    row = {"cluster": "dev", "recipe": "mix", "job_name": "mix", "charge_retry": False,
           "actor": "U0ALICE", "channel": "C1", "sent_at": 5.0, **columns}
    with old.engine.begin() as conn:
        conn.execute(text(f"INSERT INTO submits_in_flight ({', '.join(row)})"
                          f" VALUES ({', '.join(':' + name for name in row)})"), row)


def test_v17_store_gets_submit_intents_keeping_its_submits_in_flight(store_url):
    with Store.open(store_url, target_version=17) as old:
        assert "intent" not in {c["name"] for c in
                                inspect(old.engine).get_columns("submits_in_flight")}
        write_old_flight(old)
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        new.submits_in_flight.add(cluster="dev", **ALICES_FLIGHT, sent_at=6.0,
                                  intent="dev:88154:resubmit")
        got = [(f.actor, f.sent_at, f.intent)
               for f in new.submits_in_flight.sent_before("dev", 10.0)]
        assert got == [("U0ALICE", 5.0, None), ("U0ALICE", 6.0, "dev:88154:resubmit")]


def test_v18_store_gets_senders_command_bounds_keeping_its_submits_in_flight(store_url):
    """Version 19 keeps the bound a submit's sender counted per remote command with the row
    in flight; a row written before has none (its lookup counts the current config's)."""
    with Store.open(store_url, target_version=18) as old:
        assert "command_at_most_s" not in {c["name"] for c in
                                           inspect(old.engine).get_columns("submits_in_flight")}
        write_old_flight(old, intent="dev:88154:resubmit")
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        new.submits_in_flight.add(cluster="dev", **ALICES_FLIGHT, sent_at=6.0,
                                  command_at_most_s=200.0)
        got = [(f.sent_at, f.intent, f.command_at_most_s)
               for f in new.submits_in_flight.sent_before("dev", 10.0)]
        assert got == [(5.0, "dev:88154:resubmit", None), (6.0, None, 200.0)]


def test_v19_store_gets_the_intent_index_keeping_its_submits_in_flight(store_url):
    """Version 20 indexes submits_in_flight by intent; the rows written before keep theirs."""
    with Store.open(store_url, target_version=19) as old:
        assert "ix_submits_in_flight_intent" not in {
            i["name"] for i in inspect(old.engine).get_indexes("submits_in_flight")}
        write_old_flight(old, intent="approval:tok", command_at_most_s=200.0)
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert "ix_submits_in_flight_intent" in {
            i["name"] for i in inspect(new.engine).get_indexes("submits_in_flight")}
        got = [(f.sent_at, f.intent, f.command_at_most_s)
               for f in new.submits_in_flight.with_intent("dev", "approval:tok", 10.0)]
        assert got == [(5.0, "approval:tok", 200.0)]


def test_v20_store_gets_step_bounds_keeping_its_prompt_steps(store_url):
    """Version 21 keeps with each prompt step the bounds its marker counted its remote calls
    at (bot.core.takeover.StepBounds), for its takeover; a step marked before has none (its
    takeover counts the current config's), and a takeover replaces them with the taker's."""
    with Store.open(store_url, target_version=20) as old:
        assert "command_at_most_s" not in {c["name"] for c in
                                           inspect(old.engine).get_columns("prompt_steps")}
        with old.engine.begin() as conn:  # what a v20 trainbot wrote
            conn.exec_driver_sql("INSERT INTO prompt_steps (token, step, at)"
                                 " VALUES ('tok', 'cancelling_to_resume', 5.0)")
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert new.approvals.steps("tok") == {"cancelling_to_resume": 5.0}
        assert new.approvals.bounds_of("tok", "cancelling_to_resume") is None
        assert new.approvals.bounds_of("tok", "cancel_settled") is None  # not marked
        marked = StepBounds(command_at_most_s=200.0, lookup_at_most_s=4980.0,
                            post_at_most_s=None)
        assert new.approvals.mark_step("tok", "cancel_settled", now=6.0, bounds=marked)
        assert new.approvals.bounds_of("tok", "cancel_settled") == marked
        taker = StepBounds(command_at_most_s=120.0, lookup_at_most_s=1290.0,
                           post_at_most_s=None)
        assert not new.approvals.take_over_step("tok", "cancel_settled", older_than=5.0,
                                                now=7.0, bounds=taker)
        assert new.approvals.bounds_of("tok", "cancel_settled") == marked
        assert new.approvals.take_over_step("tok", "cancel_settled", older_than=6.0, now=7.0,
                                            bounds=taker)
        assert new.approvals.bounds_of("tok", "cancel_settled") == taker
        assert new.approvals.steps("tok") == {"cancelling_to_resume": 5.0,
                                              "cancel_settled": 7.0}



def test_v21_store_gets_the_steps_post_bound_keeping_their_other_bounds(store_url):
    """A v21 store's step keeps its remote bounds and has no post bound (the current
    config's counts: bot.core.takeover.settle_takeover_s); a step marked or taken over
    after the upgrade keeps its marker's post bound."""
    with Store.open(store_url, target_version=21) as old:
        assert "post_at_most_s" not in {c["name"] for c in
                                        inspect(old.engine).get_columns("prompt_steps")}
        with old.engine.begin() as conn:  # what a v21 trainbot wrote
            conn.exec_driver_sql("INSERT INTO prompt_steps (token, step, at, command_at_most_s,"
                                 " lookup_at_most_s) VALUES ('tok', 'cancel_settled', 5.0,"
                                 " 200.0, 4980.0)")
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert new.approvals.bounds_of("tok", "cancel_settled") == StepBounds(
            command_at_most_s=200.0, lookup_at_most_s=4980.0, post_at_most_s=None)
        taker = StepBounds(command_at_most_s=131.0, lookup_at_most_s=1311.0,
                           post_at_most_s=630.0)
        assert new.approvals.take_over_step("tok", "cancel_settled", older_than=5.0, now=7.0,
                                            bounds=taker)
        assert new.approvals.bounds_of("tok", "cancel_settled") == taker
        marker = replace(taker, post_at_most_s=75.0)
        assert new.approvals.mark_step("tok", "cancel_resuming", now=8.0, bounds=marker)
        assert new.approvals.bounds_of("tok", "cancel_resuming") == marker

def one_select(store: Store, read: Callable[[], list[Any]]
               ) -> tuple[list[Any], tuple[str, Any]]:
    """What `read` returns, and the one SELECT it sent `store`'s database: (statement,
    parameters), as the database got them."""
    sent: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        got = read()
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    [select] = [(q, p) for q, p in sent if q.lstrip().startswith("SELECT")]
    return got, select


def query_plan(store: Store, statement: str, parameters: Any) -> str:
    """The database's plan of `statement` with `parameters`, its rows in one string:
    PostgreSQL's EXPLAIN with sequential scans off (its tables here are tiny: the planner
    would read them whole rather than show the index it can use), SQLite's EXPLAIN QUERY
    PLAN."""
    with store.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            plan = conn.exec_driver_sql(f"EXPLAIN {statement}", parameters).all()
        else:
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
    return " ".join(str(row) for row in plan)


def test_submits_in_flight_are_read_by_their_intent_in_one_indexed_read(store):
    """`with_intent` returns the rows `sent_before` has with that intent (of that cluster,
    sent before the time, oldest first) in one SELECT, which the database answers from the
    intent's index (the plan of the very statement sent, with its parameters)."""
    flight = ALICES_FLIGHT
    for i in range(30):  # the cluster's other submits in flight: people's, other approvals'
        store.submits_in_flight.add(cluster="dev", **flight, sent_at=float(i),
                                    intent=None if i % 3 else f"approval:other{i}")
    mine = "approval:tok"
    store.submits_in_flight.add(cluster="dev", **flight, sent_at=7.0, intent=mine,
                                command_at_most_s=200.0)
    store.submits_in_flight.add(cluster="dev", **flight, sent_at=5.0, intent=mine)
    store.submits_in_flight.add(cluster="dev", **flight, sent_at=12.0, intent=mine)  # later
    store.submits_in_flight.add(cluster="other", **flight, sent_at=6.0, intent=mine)
    got, (statement, parameters) = one_select(
        store, lambda: store.submits_in_flight.with_intent("dev", mine, 10.0))
    assert [(f.sent_at, f.cluster, f.command_at_most_s) for f in got] == [
        (5.0, "dev", None), (7.0, "dev", 200.0)]
    assert got == [f for f in store.submits_in_flight.sent_before("dev", 10.0)
                   if f.intent == mine]
    assert "submits_in_flight.intent = " in statement
    assert "ix_submits_in_flight_intent" in query_plan(store, statement, parameters)


def test_a_resubmits_rows_in_flight_are_its_intents_and_its_runs_legacy_ones_read_by_index(
        store):
    """What a resubmit's recovery (bot.services.runs.lost_resubmit) reads: the rows of its
    intent (`with_intent`) and the rows without one (written before schema 18) of its run
    (chain, array task) by its actor (`legacy_of_run`); not another intent's, nor another
    run's, task's, actor's or cluster's row without one, nor one sent later. The legacy read
    is one SELECT the database answers from the intent's index (its NULLs), as `with_intent`
    is: the plan of the very statement sent, with its parameters."""
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=0.0)
    other = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=0.0)
    auto, mine = "watcher", "dev:88154:resubmit"

    def flight(chain_id: int | None, sent_at: float, *, intent: str | None = None,
               actor: str = auto, cluster: str = "dev", task: int | None = None) -> int:
        added = store.submits_in_flight.add(
            cluster=cluster, recipe="mix", job_name="mix", chain_id=None, array_task=task,
            resumed_at=None, charge_retry=False, actor=actor, channel=None, sent_at=sent_at,
            intent=intent)
        rows = current_schema.submits_in_flight
        with store.engine.begin() as conn:  # into its run (add keeps one per run in flight)
            conn.execute(rows.update().where(rows.c.id == added.flight.id)
                         .values(chain_id=chain_id))
        return added.flight.id

    for i in range(30):  # the cluster's other submits in flight: people's, other intents'
        flight(None, float(i), actor=f"U{i}", intent=None if i % 3 else f"approval:o{i}")
    ours = flight(chain.id, 4.0, intent=mine)
    legacy = flight(chain.id, 3.0)
    flight(chain.id, 5.0, intent="approval:tok")  # another intent of the run
    flight(other.id, 2.0)  # another run's legacy row by the same actor
    flight(chain.id, 2.5, actor="U0ALICE")  # a person's submit of the run: not the resubmit
    flight(chain.id, 2.6, task=1)  # an array task's
    flight(chain.id, 2.7, cluster="other")  # another cluster's
    flight(chain.id, 12.0)  # sent later
    in_flight = store.submits_in_flight
    legacy_rows, (statement, parameters) = one_select(
        store, lambda: in_flight.legacy_of_run("dev", chain.id, None, auto, 10.0))
    assert [f.id for f in in_flight.with_intent("dev", mine, 10.0)] == [ours]
    assert [f.id for f in legacy_rows] == [legacy]
    assert sorted(f.id for f in [*in_flight.with_intent("dev", mine, 10.0), *legacy_rows]) == \
        sorted(f.id for f in in_flight.sent_before("dev", 10.0)
               if f.intent == mine or f.intent is None and f.actor == auto
               and f.chain_id == chain.id and f.array_task is None)  # the rule as it was
    assert "submits_in_flight.intent IS NULL" in statement
    assert "ix_submits_in_flight_intent" in query_plan(store, statement, parameters)


def test_audit_and_incident_texts_are_stored_redacted(tmp_path):
    url = f"sqlite:///{tmp_path / 'state.db'}"
    error = "`env K=plain-secret sbatch` exited 1: postgresql://bot:pw1234@db/x, xoxb-1-2-abcdefgh"
    with Store.open(url, redactor=Redactor(["plain-secret"])) as s:
        s.audit.record(actor="U1", action="submit", now=1.0, result="failed", detail=error)
        s.audit.record(actor="U1", action="approval.click", now=2.0, result="failed",
                       detail={"token": "tok", "error": error, "retry_num": 0})
        incident, _ = s.incidents.record("k", class_id="cluster_unreachable", now=3.0,
                                         diagnosis={"text": error, "recipe": "mix", "ticks": 3})
        details = [e.detail for e in s.audit.recent()]
    assert details[1] == ("`env K=[redacted] sbatch` exited 1: postgresql://bot:[redacted]@db/x,"
                          " [redacted]")
    assert json.loads(present(details[0])) == {"token": "tok", "error": details[1], "retry_num": 0}
    assert incident.diagnosis == {"text": details[1], "recipe": "mix", "ticks": 3}


def test_a_noted_failure_returns_the_diagnosis_as_stored(tmp_path):
    """note_failure says what it stored (the failures counted, its error redacted, its
    facts): the resubmit that gives up at once reads its row from it, not again."""
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}",
                    redactor=Redactor(["plain-secret"])) as s:
        s.incidents.record("c:1:resubmit", class_id="resubmit", now=1.0, state="submitting",
                           diagnosis={"recipe": "mix", "failures": 1})
        noted = s.incidents.note_failure("c:1:resubmit", error="sbatch: plain-secret refused",
                                         state="due", facts={"refused": True, "retry_at": 2.5})
        row = present(s.incidents.get("c:1:resubmit"))
    assert noted == row.diagnosis == {"recipe": "mix", "failures": 2, "refused": True,
                                      "retry_at": 2.5, "error": "sbatch: [redacted] refused"}
    assert row.state == "due"


def test_a_store_redacts_token_shapes_and_its_own_password_without_being_told(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as opened:
        # the handle of a database whose URL has a password (the engine is the file's)
        s = Store(opened.engine, "postgresql://bot:hunter2-pw@db/trainbot")
        s.audit.record(actor="U1", action="x", now=1.0,
                       detail="auth hunter2-pw refused; token xoxb-1-2-abcdefgh")
        assert s.audit.recent()[0].detail == "auth [redacted] refused; token [redacted]"


def test_v5_store_gets_the_command_claims_table_keeping_its_data(store_url):
    with Store.open(store_url, target_version=5) as old:
        assert not inspect(old.engine).has_table("command_claims")
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert present(new.chains.get(chain.id)).recipe == "mix"
        assert new.command_claims.claim("trig-1", "host:1:aa", now=2.0, ttl_s=60.0)


def test_v6_store_gets_lease_epochs_keeping_its_leases(store_url):
    with Store.open(store_url, target_version=6) as old:
        with old.engine.begin() as conn:  # as trainbot with schema 6 took it
            conn.exec_driver_sql("INSERT INTO leases (name, holder, acquired_at, expires_at) "
                                 "VALUES ('watch:dev', 'host:1:aa', 1.0, 31.0)")
        assert "epoch" not in {c["name"] for c in inspect(old.engine).get_columns("leases")}
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert (new.leases.holder("watch:dev"), new.leases.epoch("watch:dev")) == (
            "host:1:aa", 0)
        assert new.leases.acquire("watch:dev", "host:1:aa", now=2.0, ttl_s=30.0) == 0
        assert new.leases.acquire("watch:dev", "host:2:bb", now=40.0, ttl_s=30.0) == 1


def test_v7_store_gets_prompt_steps_keeping_its_approvals(store_url):
    with Store.open(store_url, target_version=7) as old:
        token = old.approvals.create(action="resubmit", payload={"recipe": "mix"},
                                     allowed=["U1"], expires_at=1e12, now=1.0,
                                     target_job="88154")
        assert "prompt_steps" not in inspect(old.engine).get_table_names()
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert [a.token for a in new.approvals.pending()] == [token]
        assert new.approvals.steps(token) == {}
        assert new.approvals.mark_step(token, "reminded", now=5.0)
        assert not new.approvals.mark_step(token, "reminded", now=6.0)  # once, whoever asks
        assert new.approvals.mark_step(token, "escalated", now=7.0)
        assert new.approvals.steps(token) == {"reminded": 5.0, "escalated": 7.0}


def test_home_viewers_are_kept_per_user_and_dropped_after_their_ttl(store):
    viewers = store.home_viewers
    viewers.record("U0BOB", now=100.0, ttl_s=50.0)
    viewers.record("U0ALICE", now=110.0, ttl_s=50.0)
    viewers.record("U0BOB", now=120.0, ttl_s=50.0)  # opened again: one row, the last time
    assert viewers.since(0.0) == ["U0ALICE", "U0BOB"]
    assert viewers.since(115.0) == ["U0BOB"]
    viewers.record("U0CAROL", now=165.0, ttl_s=50.0)  # Alice opened it 55 s ago: dropped
    assert viewers.since(0.0) == ["U0BOB", "U0CAROL"]


def test_v8_store_gets_home_viewers_keeping_its_data(store_url):
    with Store.open(store_url, target_version=8) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        assert "home_viewers" not in inspect(old.engine).get_table_names()
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert present(new.chains.get(chain.id)).recipe == "mix"
        new.home_viewers.record("U0ALICE", now=2.0, ttl_s=60.0)
        assert new.home_viewers.since(0.0) == ["U0ALICE"]


def test_v9_store_gets_excluded_nodes_keeping_its_attempts(store_url):
    with Store.open(store_url, target_version=9) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        with old.engine.begin() as conn:  # what trainbot with schema 9 wrote
            conn.exec_driver_sql(
                "INSERT INTO attempts (chain_id, job_id, attempt_no, state, submitted_at)"
                f" VALUES ({chain.id}, '88016', 1, 'FAILED', 2.0)")
        assert "excluded_nodes" not in {c["name"] for c in
                                        inspect(old.engine).get_columns("attempts")}
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert present(new.attempts.get_by_job("88016")).excluded_nodes is None
        new.attempts.record(chain_id=chain.id, job_id="88017", now=3.0, excluded_nodes="gpu-b12")
        assert present(new.attempts.get_by_job("88017")).excluded_nodes == "gpu-b12"


@pytest.mark.parametrize("version", range(1, current_schema.SCHEMA_VERSION))
def test_every_earlier_schema_upgrades_to_the_latest(store_url, version: int):
    with Store.open(store_url, target_version=version) as old:
        assert old.schema_version == version
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        chain = new.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        new.attempts.record(chain_id=chain.id, job_id="88016", now=2.0, excluded_nodes="n1")
        assert present(new.attempts.get_by_job("88016")).excluded_nodes == "n1"


def test_v10_store_gets_adopted_chains_keeping_its_runs(store_url):
    with Store.open(store_url, target_version=10) as old:
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="wm-mix", now=1.0)
        assert "kind" not in {c["name"] for c in inspect(old.engine).get_columns("chains")}
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        run = present(new.chains.get(chain.id))
        assert (run.kind, run.array_job_id, run.adopted) == ("run", None, False)
        new.attempts.record(chain_id=chain.id, job_id="88016", now=1.0)
        [attempt] = new.attempts.for_chain(chain.id)
        assert (attempt.display_id, attempt.shown_id) == (None, "88016")
        array = new.chains.create(recipe="", cluster="dev", job_name="sweep", now=2.0,
                                  kind="array", array_job_id=6100)
        new.attempts.record(chain_id=array.id, job_id="6103", now=2.0, display_id="6100_2")
        again = present(new.chains.get(array.id))
        assert (again.kind, again.array_job_id, again.adopted) == ("array", 6100, True)
        assert [a.shown_id for a in new.attempts.for_chain(array.id)] == ["6100_2"]


def test_v11_store_gets_watched_by_keeping_its_adopted_chains(store_url):
    with Store.open(store_url, target_version=11) as old:
        array = old.chains.create(recipe="", cluster="dev", job_name="sweep", now=1.0,
                                  kind="array", array_job_id=6100)
        assert "watched_by" not in {c["name"] for c in inspect(old.engine).get_columns("chains")}
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert present(new.chains.get(array.id)).watched_by is None  # adopted before: nobody known
        job = new.chains.create(recipe="", cluster="dev", job_name="eval", now=2.0,
                                kind="adopted", watched_by="U0BOB")
        new.chains.create(recipe="mix", cluster="dev", job_name="mix", now=3.0)  # a run
        assert present(new.chains.get(job.id)).watched_by == "U0BOB"
        assert [c.id for c in new.chains.adopted()] == [job.id, array.id]


def test_a_recipes_latest_run_is_the_one_whose_latest_job_was_submitted_last(store):
    """A lost submit's run recovered after a person started another: its chain is the newer,
    its job the older; /train resume and status mean the person's run, and list it first."""
    started = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=100.0)
    store.attempts.record(chain_id=started.id, job_id="90501", now=100.0)
    recovered = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=300.0)
    store.attempts.record(chain_id=recovered.id, job_id="90500", now=300.0, submitted_at=50.0)
    assert store.chains.latest_for_recipe("mix").id == started.id
    # /train history lists them in the same order
    assert [c.id for c in store.chains.for_recipe("mix")] == [started.id, recovered.id]
    # its next job, submitted after the other's, makes it the latest
    store.attempts.record(chain_id=recovered.id, job_id="90502", now=400.0)
    assert store.chains.latest_for_recipe("mix").id == recovered.id
    # a run with no job yet counts from its creation
    fresh = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=500.0)
    assert store.chains.latest_for_recipe("mix").id == fresh.id
    assert [c.id for c in store.chains.for_recipe("mix")] == [fresh.id, recovered.id, started.id]
    assert [c.id for c in store.chains.for_recipe("mix", limit=1)] == [fresh.id]
    assert store.chains.latest_for_recipe("other") is None
