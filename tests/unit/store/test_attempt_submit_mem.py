"""attempts.submit_mem (schema 24): the --mem trainbot submitted an attempt's job with, which
tells a host OOM whether the job had all of its node's memory (--mem=0); an attempt recorded
before has none, and its recipe's `mem` tells (bot.services.watch.tick)."""

from __future__ import annotations

from sqlalchemy import inspect

from bot.store import Store
from bot.store import schema as current_schema

BEFORE = 23  # the version before attempts.submit_mem


def test_an_old_stores_attempts_get_no_submit_mem_and_new_ones_keep_theirs(store_url):
    with Store.open(store_url, target_version=BEFORE) as old:
        assert "submit_mem" not in {c["name"] for c in inspect(old.engine).get_columns("attempts")}
        chain = old.chains.create(recipe="mix", cluster="dev", job_name="mix", now=1.0)
        with old.engine.begin() as conn:  # what a v23 trainbot wrote
            conn.exec_driver_sql(
                "INSERT INTO attempts (chain_id, job_id, attempt_no, state, submitted_at)"
                f" VALUES ({chain.id}, '88016', 1, 'PENDING', 1.0)")
    with Store.open(store_url) as new:
        assert new.schema_version == new.latest_version == current_schema.SCHEMA_VERSION
        assert current_schema.SCHEMA_VERSION > BEFORE
        legacy = new.attempts.get_by_job("88016")
        assert legacy is not None and legacy.submit_mem is None
        for job, mem in (("88017", "0"), ("88018", "64G"), ("88019", "")):
            new.attempts.record(chain_id=chain.id, job_id=job, now=2.0, submit_mem=mem)
            got = new.attempts.get_by_job(job)
            assert got is not None and got.submit_mem == mem
        # a second record of the job (a lost submit's recovery) leaves the first's as it was
        again = new.attempts.record(chain_id=chain.id, job_id="88017", now=3.0, submit_mem=None)
        assert not again.new and again.attempt.submit_mem == "0"
