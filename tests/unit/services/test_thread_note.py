"""A note in a run's thread (bot.services.threads.thread_note): kept in the store until its
thread has it, posted once through the note template; one not posted is tried again by the
`prompts` job (say_pending_notes) once its backoff allows."""

from __future__ import annotations

import logging
from typing import Any

from fakes import T0, make_context, present, recorded

from bot.services.threads import say_pending_notes, thread_note
from bot.store import Store


def test_a_note_waits_for_its_thread_survives_a_failure_and_is_posted_once(
        store: Store, caplog: Any) -> None:
    """The run has no thread yet: the note is kept `pending`, not taken as posted. Its root
    posted, the next try (its backoff: one chance skipped) fails transiently; the one after
    posts it, once. The failure series is one warning, and one when it ends."""
    ctx = make_context(store)
    sink = recorded(ctx)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    caplog.set_level(logging.WARNING, logger="bot.services.threads")
    assert not thread_note(ctx, chain.id, "note:x", "resubmitted")  # no thread yet
    assert present(store.incidents.get("note:x")).state == "pending"
    root = sink.post_root(chain.id, "C0TRAIN", [], "mix")
    sink.fail_next = 1
    say_pending_notes(ctx)  # skipped: the try without a thread backs off
    say_pending_notes(ctx)  # tried: service_unavailable
    assert [p for p in sink.posts if p[0] == "reply"] == []
    assert present(store.incidents.get("note:x")).state == "pending"
    say_pending_notes(ctx)  # a transient failure: tried at the next chance
    say_pending_notes(ctx)
    assert thread_note(ctx, chain.id, "note:x", "resubmitted")  # once: by its key
    assert [(p[0], p[2], p[3]) for p in sink.posts if p[0] == "reply"] == [
        ("reply", "note:x", "resubmitted")]
    assert present(store.incidents.get("note:x")).state == "posted"
    assert [r.getMessage() for r in caplog.records] == [
        f"chain {chain.id} (mix): the note note:x waits for its thread (its run's root message "
        "is not posted): tried again after 1 chance(s), given up after 8 tries",
        f"chain {chain.id} (mix): the note note:x is posted in C0TRAIN (thread {root}), after "
        "2 failed tries"]
