"""A note in a run's thread (bot.services.threads.thread_note): posted once through the note
template; a refusal is logged and answered False, and the note is posted by its key later."""

from __future__ import annotations

import logging
from typing import Any

from fakes import T0, make_context, recorded

from bot.services.threads import thread_note
from bot.store import Store


def test_a_refused_note_is_logged_and_posted_once_the_chat_takes_it(
        store: Store, caplog: Any) -> None:
    ctx = make_context(store)
    sink = recorded(ctx)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    assert not thread_note(ctx, chain.id, "note:x", "resubmitted")  # no thread yet
    sink.post_root(chain.id, "C0TRAIN", [], "mix")
    sink.fail_next = 1
    caplog.set_level(logging.WARNING, logger="bot.services.threads")
    assert not thread_note(ctx, chain.id, "note:x", "resubmitted")
    assert [r.getMessage() for r in caplog.records] == [
        f"chain {chain.id}: could not post reply note:x: Slack chat.postMessage failed for "
        "'note:x': service_unavailable"]
    assert thread_note(ctx, chain.id, "note:x", "resubmitted")
    assert thread_note(ctx, chain.id, "note:x", "resubmitted")  # once: by its key
    assert [(p[0], p[2], p[3]) for p in sink.posts if p[0] == "reply"] == [
        ("reply", "note:x", "resubmitted")]
