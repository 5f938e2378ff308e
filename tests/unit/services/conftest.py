"""Fixtures shared by the service tests: the store they run on, and what a watcher tick works
on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakes import FakeSFTP, FakeSlurm, RecordingEventSink

from bot.store import Store


@pytest.fixture
def store(tmp_path) -> Iterator[Store]:
    """A real store: SQLite in `tmp_path`, at the latest schema."""
    with Store.open(f"sqlite:///{tmp_path / 'state.db'}") as s:
        yield s


@pytest.fixture
def env(store: Store):
    """What a watcher tick works on: the store (SQLite in `tmp_path`) and fake Slurm, SFTP
    and event sink, as `(store, slurm, sftp, sink)`."""
    return store, FakeSlurm(), FakeSFTP(), RecordingEventSink()
