"""A stall's prompt names the checkpoint its Cancel and resume starts from, worded as a
failure's: the watcher looks it up once, when it posts the stall warning (not on every tick
of the stall), within a deadline; a lookup that fails or is late never holds the prompt back,
which then says the checkpoint is unknown (the 88154 story up to its stall, through the real
Watcher and ThreadEvents)."""

from __future__ import annotations

import threading

import pytest
from fakes import T0, FakeCheckpoints, FakeSlurm, make_context
from support.watcher import stalled_thread

from bot.cluster.errors import ClusterUnavailable
from bot.core.catalogue import Catalogue
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

STALL_TICKS = (T0, T0 + 360, T0 + 420, T0 + 480, T0 + 540)  # the stall starts by T0 + 360


@pytest.fixture
def store(tmp_path):
    s = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    yield s
    s.close()


def stall_prompt(store: Store, checkpoint, *, lang: str = "en",
                 **watcher) -> tuple[str, list[str]]:
    """The stall prompt the watcher posts while job 88154 stays stalled for several ticks:
    its head line and its button labels."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang, clock=lambda: T0 + 600)
    chain, sftp, _ = stalled_thread(ctx, slurm)
    posted: list[list[dict]] = []
    real_reply = ctx.sink.post_reply

    def capture(chain_id, key, blocks, text):
        posted.append(blocks)
        return real_reply(chain_id, key, blocks, text)

    ctx.sink.post_reply = capture
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                catalogue=Catalogue.load(), sink=ThreadEvents(ctx), config=ctx.config,
                checkpoint=checkpoint, **watcher)
    for now in STALL_TICKS:
        w.tick(now)
    [blocks] = posted
    labels = [e["text"]["text"] for b in blocks if b["type"] == "actions"
              for e in b["elements"]]
    return blocks[0]["text"]["text"], labels


@pytest.mark.parametrize(("lang", "found", "end", "button"), [
    ("en", 3000, ". Cancel and resubmit resuming from iteration 3000?",
     "Cancel 88154 and resume from iter 3000"),
    ("en", "final", ". Cancel and resubmit resuming from checkpoint `final`?",
     "Cancel 88154 and resume from checkpoint `final`"),
    ("ko", "final", ". 취소하고 체크포인트 `final`부터 재개해 재제출할까요?",
     "88154 취소 후 체크포인트 `final`부터 재개"),
    ("en", None, ". Cancel and resubmit from scratch (no complete checkpoint)?",
     "Cancel 88154 and resume"),
])
def test_a_stall_prompt_names_the_checkpoint_it_looked_up_once(
        store, lang: str, found, end: str, button: str) -> None:
    lookup = FakeCheckpoints(found)
    head, labels = stall_prompt(store, lookup, lang=lang)
    assert head.endswith(end)
    assert labels[0] == button
    assert lookup.calls == [("mix", None)]  # once for the stall, not once per tick


def test_a_failing_lookup_posts_the_stall_prompt_saying_the_checkpoint_is_unknown(
        store) -> None:
    calls: list[str] = []

    def unreachable(recipe: str, task: int | None = None, abandon=None):
        calls.append(recipe)
        raise ClusterUnavailable("SFTP listdir of /ck/mix on dev got no answer within 15 s")

    head, labels = stall_prompt(store, unreachable)
    assert head.endswith(". Cancel and resubmit resuming from the last complete checkpoint "
                         "(unknown: looking it up failed)?")
    assert "from scratch" not in head
    assert labels[0] == "Cancel 88154 and resume"  # no claim where it resumes
    assert calls == ["mix"]


def test_a_lookup_past_its_deadline_does_not_hold_the_stall_prompt_back(store) -> None:
    """The checkpoint directory hangs (a stuck filesystem): the prompt is posted once the
    deadline has passed, saying the checkpoint is unknown, while the lookup still waits (it
    answers "none" only once the test is over); the lookup is not tried again."""
    release = threading.Event()
    calls: list[str] = []

    def hung(recipe: str, task: int | None = None, abandon=None):
        calls.append(recipe)
        release.wait(120)
        return None

    try:
        head, labels = stall_prompt(store, hung, checkpoint_deadline_s=0.2)
    finally:
        release.set()
    assert head.endswith(". Cancel and resubmit resuming from the last complete checkpoint "
                         "(unknown: looking it up failed)?")
    assert labels[0] == "Cancel 88154 and resume"
    assert calls == ["mix"]


def _watcher(store: Store, sftp_timeout: float = 7.0, **options) -> Watcher:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    ctx.config.clusters["dev"].sftp_timeout = sftp_timeout
    return Watcher("dev", slurm=slurm, reader=lambda: None, store=store,
                   catalogue=Catalogue.load(), sink=ThreadEvents(ctx), config=ctx.config,
                   **options)


def test_the_lookup_deadline_defaults_to_the_clusters_sftp_timeout(store) -> None:
    assert _watcher(store).checkpoint_deadline_s == 7.0  # dev's sftp_timeout
    assert _watcher(store, checkpoint_deadline_s=None).checkpoint_deadline_s == 7.0
    assert _watcher(store, checkpoint_deadline_s=2.5).checkpoint_deadline_s == 2.5


@pytest.mark.parametrize("bad", [0, 0.0, -1.0, float("nan")])
def test_a_lookup_deadline_that_is_not_positive_is_refused_naming_the_setting(
        store, bad: float) -> None:
    """0 is no "default" (None is): a deadline of no time would give every lookup up."""
    with pytest.raises(ValueError, match="checkpoint_deadline_s must be a positive number"):
        _watcher(store, checkpoint_deadline_s=bad)
