"""A stall's prompt names the checkpoint its Cancel and resume starts from, worded as a
failure's: the watcher looks it up once, when it posts the stall warning (not on every tick
of the stall), within a deadline; a lookup that fails or is late never holds the prompt back,
which then says the checkpoint is unknown (the 88154 story up to its stall, through the real
Watcher and ThreadEvents)."""

from __future__ import annotations

import threading

import pytest
from fakes import T0, FakeCheckpoints, FakeSlurm, make_context, writer
from support.watcher import stalled_thread

from bot.cluster.errors import ClusterUnavailable
from bot.core.catalogue import Catalogue
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

STALL_TICKS = (T0, T0 + 360, T0 + 420, T0 + 480, T0 + 540)  # the stall starts by T0 + 360


def stall_prompt(store: Store, checkpoint, *, lang: str = "en",
                 **watcher) -> tuple[str, list[str]]:
    """The stall prompt the watcher posts while job 88154 stays stalled for several ticks:
    its head line and its button labels."""
    head, labels, _ = stall_prompt_blocks(store, checkpoint, lang=lang, **watcher)
    return head, labels


def stall_prompt_blocks(store: Store, checkpoint, *, lang: str = "en",
                        **watcher) -> tuple[str, list[str], list[dict]]:
    """`stall_prompt`, with the Home tab's blocks (which show the open prompt) after it."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, lang=lang, clock=lambda: T0 + 600)
    chain, sftp, _ = stalled_thread(ctx, slurm)
    posted: list[list[dict]] = []
    real_reply = writer(ctx).post_reply

    def capture(chain_id, key, blocks, text):
        posted.append(blocks)
        return real_reply(chain_id, key, blocks, text)

    writer(ctx).post_reply = capture  # type: ignore[method-assign]
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                catalogue=Catalogue.load(), sink=ThreadEvents(ctx), config=ctx.config,
                checkpoint=checkpoint, **watcher)
    for now in STALL_TICKS:
        w.tick(now)
    [blocks] = posted
    labels = [e["text"]["text"] for b in blocks if b["type"] == "actions"
              for e in b["elements"]]
    return blocks[0]["text"]["text"], labels, blocks


@pytest.mark.parametrize(("lang", "found", "end", "button"), [
    ("en", 3000, ". Cancel and resubmit from iteration 3,000?",
     "Cancel 88154 and resume from iteration 3,000"),
    ("en", "final", ". Cancel and resubmit from checkpoint `final`?",
     "Cancel 88154 and resume from checkpoint `final`"),
    ("ko", "final", ". 취소하고 체크포인트 `final`부터 재제출할까요?",
     "88154 취소 후 체크포인트 `final`부터 재개"),
    ("en", None, ". Cancel and resubmit from scratch (no complete checkpoint)?",
     "Cancel 88154 and resume from scratch"),
    ("ko", None, ". 취소하고 완전한 체크포인트가 없어 처음부터 재제출할까요?",
     "88154 취소 후 처음부터 재개"),
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
    assert head.endswith(". Cancel and resubmit from the last complete checkpoint "
                         "(unknown: looking it up failed)?")
    assert "from scratch" not in head
    assert labels[0] == "Cancel 88154 and resume (checkpoint unknown)"  # as its dialog says
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
    assert head.endswith(". Cancel and resubmit from the last complete checkpoint "
                         "(unknown: looking it up failed)?")
    assert labels[0] == "Cancel 88154 and resume (checkpoint unknown)"
    assert calls == ["mix"]


def _watcher(store: Store, sftp_timeout: float = 7.0, **options) -> Watcher:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    ctx.config.clusters["dev"].sftp_timeout = sftp_timeout
    return Watcher("dev", slurm=slurm,
                   reader=lambda: None,  # type: ignore[arg-type, return-value]  # never read
                   store=store,
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


def _resume_dialog(blocks: list[dict]) -> str:
    """The text of the confirm dialog before the blocks' Cancel and resume."""
    [text] = [e["confirm"]["text"]["text"] for b in blocks if b["type"] == "actions"
              for e in b["elements"] if e["action_id"] == "trainbot_cancel_resume"]
    return text


@pytest.mark.parametrize(("lang", "found", "where"), [
    ("en", 3000, "from iteration 3,000"),
    ("en", "final", "from checkpoint `final`"),
    ("en", "ckpt-best", "from checkpoint `ckpt-best`"),
    ("en", OSError("SFTP listdir /ck/mix: Connection lost"),
     "from the last complete checkpoint (unknown: looking it up failed)"),
    ("en", None, "from scratch (no complete checkpoint)"),
    ("ko", 3000, "iteration 3,000부터"),
    ("ko", "final", "체크포인트 `final`부터"),
    ("ko", OSError("SFTP listdir /ck/mix: Connection lost"),
     "마지막 완전한 체크포인트부터 (조회에 실패해 어느 체크포인트인지 모릅니다)"),
    ("ko", None, "완전한 체크포인트가 없어 처음부터"),
])
def test_cancel_and_resumes_dialog_says_where_it_resumes_as_the_prompt_does(
        store, lang: str, found, where: str) -> None:
    """The confirm dialog before a stall prompt's Cancel and resume, in the thread and on the
    Home tab, names where the resubmit resumes in the prompt's own words: the iteration, a
    checkpoint known only by its name, unknown when its lookup failed, from scratch when there
    is none; never "its latest checkpoint" when the prompt said otherwise."""
    from slack_standin import MAX_VIEW_BLOCKS, validate_blocks

    from bot.services.home import home_view, render_home

    lookup = (FakeCheckpoints(fails=found) if isinstance(found, Exception)
              else FakeCheckpoints(found))
    head, _, blocks = stall_prompt_blocks(store, lookup, lang=lang)
    assert where in head
    state = "RUNNING"
    dialog = {"en": f"Job 88154 is {state}. scancel stops it, then trainbot resubmits it "
                    f"{where}.",
              "ko": f"작업 88154은(는) 지금 {state} 상태입니다. scancel로 멈춘 뒤 trainbot이 "
                    f"{where} 다시 제출합니다."}[lang]
    assert _resume_dialog(blocks) == dialog
    assert "latest checkpoint" not in dialog and "마지막 체크포인트부터" not in dialog
    # the Home tab speaks the bot's language
    ctx = make_context(store, FakeSlurm(), lang=lang, slack_lang=lang, clock=lambda: T0 + 600)
    home = render_home(ctx, home_view(ctx, "U0ALICE", T0 + 600))
    assert validate_blocks(home, max_blocks=MAX_VIEW_BLOCKS) == []
    assert _resume_dialog(home) == dialog
