"""Fixtures shared by the service tests: the store they run on, the bot's context over it and
its language, and what a watcher tick works on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes import FakeSFTP, FakeSlurm, RecordingEventSink, make_context
from support.e2e import NOW

from bot.services.ports import BotContext
from bot.store import Store


@pytest.fixture
def store(tmp_path) -> Iterator[Store]:
    """A real store: SQLite in `tmp_path`, at the latest schema."""
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as s:
        yield s


@pytest.fixture
def lang() -> str:
    """The bot's language (slack.lang); a test parametrized on `lang` overrides it."""
    return "en"


@pytest.fixture
def ctx(store: Store, slurm: FakeSlurm, lang: str) -> BotContext:
    """The bot's context over `store` and the module's `slurm` fixture (a module using this
    one has its own: the jobs its story starts with), speaking `lang`, its clock at NOW
    (support.e2e's)."""
    return make_context(store, slurm, clock=lambda: NOW, slack_lang=lang)


@pytest.fixture
def env(store: Store):
    """What a watcher tick works on: the store (SQLite in `tmp_path`) and fake Slurm, SFTP
    and event sink, as `(store, slurm, sftp, sink)`."""
    return store, FakeSlurm(), FakeSFTP(), RecordingEventSink()
