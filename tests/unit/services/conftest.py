"""Fixtures shared by the watcher's service tests."""

from __future__ import annotations

import pytest
from fakes import FakeSFTP, FakeSlurm, RecordingEventSink

from bot.store import Store


@pytest.fixture
def env(tmp_path):
    """What a watcher tick works on: a real store (SQLite in `tmp_path`) and fake Slurm, SFTP
    and event sink, as `(store, slurm, sftp, sink)`."""
    store = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    yield store, FakeSlurm(), FakeSFTP(), RecordingEventSink()
    store.close()
