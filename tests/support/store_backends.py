"""The setup of the service tests that run on the real store on both backends: `store` on
`store_url` (tests/conftest.py: SQLite and the dev cluster's PostgreSQL), an empty `slurm`
(fakes.FakeSlurm) and the bot's `ctx` over the two (fakes.make_context's defaults). These
override tests/unit/services/conftest.py's SQLite-only `store` and its `ctx` in a module that
binds them to their names (pytest finds a fixture by the module's names; an import of them
would read as unused to ruff):

    store, slurm, ctx = store_backends.store, store_backends.slurm, store_backends.ctx

Shared by test_approvals.py, test_hold_releases.py, test_hold_yeses.py, test_hold_settling.py
and test_hold_handoff.py (which gives its own `slurm`, a FakeSlurm whose holds a test can stop
on their way)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes import FakeSlurm, make_context

from bot.services.ports import BotContext
from bot.store import Store


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.open(store_url)
    yield s
    s.close()


@pytest.fixture
def slurm() -> FakeSlurm:
    return FakeSlurm()


@pytest.fixture
def ctx(store: Store, slurm: FakeSlurm) -> BotContext:
    return make_context(store, slurm)
