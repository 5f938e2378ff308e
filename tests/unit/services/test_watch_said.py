"""The watcher's notes say one sentence each (bot.services.watch.said): the event's English
`text` is what an English thread shows, and a Korean thread gets the same sentence in Korean
(templates/event.json.j2 renders `facts.said`). A note recorded before it carried its
sentence (an outbox row of an older bot) is said from its figures, in the thread's language."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fakes import T0, FakeSFTP, FakeSlurm, make_context, writer

from bot.core.catalogue import Catalogue
from bot.core.policy import PolicyParams, resume_start
from bot.core.text import N_
from bot.services.watch.events import WatchEvent
from bot.services.watch.said import (
    held_said,
    read_failed_said,
    resubmitted_said,
    superseded_said,
    unknown_said,
    unreachable_said,
)
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

HANGUL = re.compile(r"[\uac00-\ud7a3]")
ERROR = N_("reading it failed on the login node (dd exit %(code)s)", code=1)
SAID = {
    "held": held_said("87870", "JobHeldAdmin", 660),
    "unknown": unknown_said("4242", 16, "dev"),
    "read_failed": read_failed_said("88154", 10, 540, ERROR),
    "resubmitted": resubmitted_said("88154", "90001", resume_start(3000)),
    "resubmit_superseded": superseded_said("88154", "mix", "90002"),
    "cluster_unreachable": unreachable_said("dev", 3, "2027-01-15 08:00:00 UTC", ERROR),
}  # cluster_back is said only after a notice: test_the_watchers_english_text_is_…


@contextmanager
def own_store(store: Store) -> Iterator[Store]:
    """A new store beside `store`: one event's key is posted once per store."""
    path = Path(store.url.removeprefix("sqlite:///")).with_name(f"{uuid.uuid4().hex}.db")
    with Store.open(f"sqlite:///{path}") as s:
        yield s


def thread(store: Store, lang: str):
    ctx = make_context(store, clock=lambda: T0, lang=lang)
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    return ctx, chain


def replies(ctx) -> list[str]:
    return [p[3] for p in ctx.sink.posts if p[0] == "reply"]


def said_in(store: Store, lang: str, event: WatchEvent) -> str:
    with own_store(store) as s:
        ctx, chain = thread(s, lang)
        event = WatchEvent(event.kind, event.key, event.cluster, event.text, chain.id,
                           event.job_id, event.recipe, facts=event.facts,
                           text_only=event.text_only)
        ThreadEvents(ctx).publish(event)
        return replies(ctx)[-1]


@pytest.mark.parametrize("kind", list(SAID))
def test_a_note_says_its_sentence_in_the_threads_language(store, kind):
    """The note's sentence alone (no other figure) is what each thread says: its English is
    the event's text, a Korean thread reads it in Korean."""
    said = SAID[kind]
    event = WatchEvent(kind, f"dev:{kind}", "dev", str(said), None, "88154", "mix",
                       facts={"said": said})
    assert said_in(store, "en", event) == str(said)
    korean = said_in(store, "ko", event)
    assert HANGUL.search(korean) and korean != str(said), korean


def watched_events(store: Store, lang: str) -> tuple[list[WatchEvent], list[str]]:
    """A held job, a job Slurm never knows and an outage the cluster recovers from, through
    the watcher: the events it emitted and the thread's replies."""
    with own_store(store) as s:
        ctx, chain = thread(s, lang)
        slurm = FakeSlurm()
        slurm.add(87870, state="PENDING", reason="JobHeldAdmin", restart_count=1)
        s.watched_jobs.add("dev", "87870", now=T0, chain_id=chain.id)
        s.watched_jobs.add("dev", "4242", now=T0, chain_id=chain.id)
        w = Watcher("dev", slurm=slurm, reader=FakeSFTP, store=s, catalogue=Catalogue.load(),
                    sink=ThreadEvents(ctx), config=ctx.config, unreachable_ticks=3,
                    policy=PolicyParams(held_report_s=600))
        events = []
        for t in (T0, T0 + 660, T0 + 960):
            events += w.tick(t).events
        slurm.down = True
        for i in range(3):
            events += w.tick(T0 + 1000 + 60 * i).events
        slurm.down = False
        events += w.tick(T0 + 1600).events
        return events, replies(ctx)


def test_the_watchers_english_text_is_the_english_threads_sentence(store):
    """held, unknown, cluster_unreachable and cluster_back: the text the watcher logs (and
    the webhook gets) is the sentence the English thread shows, not a second wording."""
    events, said = watched_events(store, "en")
    assert [e.kind for e in events] == ["held", "unknown", "cluster_unreachable",
                                        "cluster_back"]
    assert [e.text for e in events] == said
    _, korean = watched_events(store, "ko")
    assert len(korean) == 4 and all(HANGUL.search(k) for k in korean), korean


# ------------------------------------------------------------- notes of an older bot

# facts as recorded before notes carried their sentence (no `said`), its Korean's start
OLD_NOTES: dict[str, tuple[dict[str, Any], str]] = {
    "refused": ({"resubmit": "refused", "tries": 1, "error": "sbatch: error: bad account",
                 "recipe": "mix"},
                "작업 88154은(는) 재제출되지 않았습니다"),
    "failed": ({"resubmit": "failed", "tries": 3, "error": "timed out", "recipe": "mix"},
               "작업 88154은(는) 재제출되지 않았습니다"),
    "ask": ({"resubmit": "ask", "stored_kind": "weird", "recipe": "mix"}, "작업 88154:"),
}


@pytest.mark.parametrize("which", list(OLD_NOTES))
def test_an_older_bots_resubmit_note_is_said_in_the_threads_language(store, which):
    """A give-up (or ask) note whose facts have no `said` (recorded before 29c79486): the
    Korean thread reads it in Korean, made from its figures, not the stored English text."""
    facts, start = OLD_NOTES[which]
    english = "job 88154 was not resubmitted: (an older bot's English)"
    event = WatchEvent("note", f"dev:88154:resubmit:{which}", "dev", english, None, "88154",
                       "mix", facts=dict(facts), text_only=True)
    korean = said_in(store, "ko", event)
    assert korean.startswith(start) and "`/train resume mix`" in korean, korean
    assert said_in(store, "en", event).endswith("`/train resume mix` resumes the run.")


def test_an_older_bots_notes_are_said_from_their_figures(store):
    """The other notes of an older bot (their figures, no `said`) read as they always did:
    in each thread's language, the watcher's sentence."""
    held = WatchEvent("held", "dev:87870:held:1", "dev", "job 87870 has been held", None,
                      "87870", "mix", facts={"reason": "JobHeldAdmin", "held_s": 660})
    assert said_in(store, "en", held) == str(held_said("87870", "JobHeldAdmin", 660))
    assert said_in(store, "ko", held).startswith("작업 87870이(가) 11분째 보류 상태")
    down = WatchEvent("cluster_unreachable", "cluster:dev:down:1", "dev", "cluster dev down",
                      facts={"ticks": 3, "since": "2027-01-15 08:00:00 UTC", "error": ERROR})
    assert said_in(store, "ko", down).startswith("클러스터 dev에 3번 연속 연결하지 못했습니다")


def test_a_note_of_figures_of_another_shape_says_its_stored_english(store):
    event = WatchEvent("held", "dev:87870:held:1", "dev", "job 87870 is held", None, "87870",
                       "mix", facts={"held_s": 660})  # no reason
    assert said_in(store, "ko", event) == "job 87870 is held"
