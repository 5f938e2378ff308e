"""A watcher incident goes through the one renderer, like `report` and `/train`: the site's
template folder, the recipe's language and the catalogue's title (the 88154 story run through
the real Watcher and ThreadEvents)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes import T0, FakeCheckpoints, FakeSFTP, FakeSlurm, make_context, present, writer

from bot.cli.log_input import read_log
from bot.cli.report import build_report
from bot.core.catalogue import Catalogue
from bot.core.checkpoints import Checkpoint
from bot.core.models import Accounting
from bot.core.policy import Decision, DecisionKind
from bot.services.ports import BotContext
from bot.services.watch.events import TickReport, WatchEvent
from bot.services.watch.outbox import Outbox
from bot.services.watch.said import resubmit_note_said
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.slack.render import render_blocks
from bot.store import Store

STORIES = Path(__file__).resolve().parents[2] / "fixtures" / "stories"
LOG = "/scratch/mix/logs/mix-88154.out"
HANGUL = re.compile("[\uac00-\ud7a3]")


def watched_incident(store: Store, templates_dir: Path | None = None, *,
                     checkpoints: Callable[..., Any] | None = None,
                     checkpoint_deadline_s: float | None = None, failed_posts: int = 0,
                     **recipe) -> list[dict]:
    """The blocks of the incident the watcher posts when job 88154 dies of the NCCL watchdog
    after its stall (its owners' head line, the incident template, the approval buttons);
    its newest complete checkpoint is `checkpoints`' (default: iteration 3000), looked up
    within `checkpoint_deadline_s` (default: the watcher's); Slack fails the incident's first
    `failed_posts` posts (one tick each)."""
    return watched_thread(store, templates_dir, checkpoints=checkpoints,
                          checkpoint_deadline_s=checkpoint_deadline_s,
                          failed_posts=failed_posts, **recipe)[1]["dev:88154:final"]


def watched_thread(store: Store, templates_dir: Path | None = None, *,
                   checkpoints: Callable[..., Any] | None = None,
                   checkpoint_deadline_s: float | None = None, failed_posts: int = 0,
                   **recipe) -> tuple[BotContext, dict[str, list[dict]]]:
    """`watched_incident`'s story: its context and every post of the thread, by key."""
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, clock=lambda: T0 + 1900, **recipe)
    ctx.config.templates.dir = str(templates_dir) if templates_dir else None
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.record(chain_id=chain.id, job_id="88154", now=T0)
    store.watched_jobs.add("dev", "88154", now=T0, chain_id=chain.id)
    writer(ctx).post_root(chain.id, "C0TRAIN", [], "mix")
    posted: dict[str, list[dict]] = {}
    real_reply = writer(ctx).post_reply

    failures = [failed_posts]

    def capture(chain_id, key, blocks, text):
        if key == "dev:88154:final" and failures[0]:
            failures[0] -= 1
            raise RuntimeError("slack is down")
        posted[key] = blocks
        return real_reply(chain_id, key, blocks, text)

    writer(ctx).post_reply = capture  # type: ignore[method-assign]
    slurm.add(88154, state="RUNNING", stdout_path=LOG, start_time=T0, name="mix")
    sftp = FakeSFTP()
    sftp.append(LOG, (STORIES / "88154.log").read_bytes())
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx), config=ctx.config,
                checkpoint=checkpoints or FakeCheckpoints(3000),
                checkpoint_deadline_s=checkpoint_deadline_s)
    w.tick(T0)
    slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
    for n in range(failed_posts + 1):
        w.tick(T0 + 1830 + 60 * n)
    return ctx, posted


def _texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_a_watcher_incident_uses_the_sites_template(store, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "incident.json.j2").write_text(
        '{"text": {{ ("site: " ~ class_id) | tojson }}, "blocks": [{"type": "section", '
        '"block_id": "site", "text": {"type": "mrkdwn", "text": {{ ("SITE " ~ title) '
        '| tojson }}}}]}')
    blocks = watched_incident(store, site)
    assert [b["text"]["text"] for b in blocks if b.get("block_id") == "site"] == [
        "SITE NCCL collective timed out (watchdog)"]


def test_a_korean_recipe_gets_a_korean_incident_without_an_english_decision_line(
        store) -> None:
    blocks = watched_incident(store, lang="ko")
    header = next(b for b in blocks if b["type"] == "header")["text"]["text"]
    assert header == "🔴 NCCL 집합 통신 시간 초과 (watchdog) · 작업 88154"
    assert "decision:" not in _texts(blocks)
    for b in blocks:  # every sentence the thread shows is Korean (buttons included)
        for text in re.findall(r'"text": "([^"]*)"', json.dumps(b, ensure_ascii=False)):
            if re.search("[A-Za-z]{4,} [a-z]{3,} [a-z]{3,}", text) and "```" not in text:
                assert HANGUL.search(text), text


def test_the_watchers_incident_title_is_the_one_report_shows(store) -> None:
    blocks = watched_incident(store)
    header = next(b for b in blocks if b["type"] == "header")["text"]["text"]
    log = read_log(str(STORIES / "88154.log"), Accounting(state="FAILED", exit_code=1, signal=0),
                   catalogue=Catalogue.load())
    report = build_report(log, job_id="88154", recipe="mix", charts=False)
    report_blocks, _ = render_blocks("incident", "en", report.view)
    assert header == report_blocks[0]["text"]["text"]
    assert header == "🔴 NCCL collective timed out (watchdog) · job 88154"


@pytest.mark.parametrize(("lang", "head", "proposed", "button"), [
    ("en", "from checkpoint `final`", "*Proposed:* resume from checkpoint `final`",
     "Resubmit from checkpoint `final`"),
    ("ko", "체크포인트 `final`부터", "*제안:* 체크포인트 `final`부터 재개",
     "체크포인트 `final`부터 재제출"),
])
def test_a_checkpoint_without_an_iteration_is_named_where_the_incident_offers_a_resume(
        store, monkeypatch: pytest.MonkeyPatch, lang: str, head: str, proposed: str,
        button: str) -> None:
    """The newest complete checkpoint is `final` (a pointer naming it, no iteration in its
    name): the incident's head line, Proposed line and Resubmit button name it, never "from
    the start". The watcher looked it up once for the finished job; posting the incident looks
    nothing up again (no second walk of the checkpoint dir over SFTP)."""
    import bot.cluster.checkpoints as checkpoints

    walks: list[tuple] = []
    monkeypatch.setattr(checkpoints, "find_latest_checkpoint",
                        lambda *a, **k: walks.append(a))
    lookup = FakeCheckpoints("final")
    said = _texts(watched_incident(store, checkpoints=lookup, lang=lang,
                                   checkpoint={"dir": "/ck/mix"}))
    assert head in said and proposed in said and button in said
    assert "from the start" not in said and "from scratch" not in said
    assert "처음부터" not in said
    assert lookup.calls == [("mix", None)] and walks == []


AUTO: dict[str, Any] = {"policy": {"auto_resubmit": True}}
UNKNOWN = {
    "en": ("from the last complete checkpoint (unknown: looking it up failed)",
           "; not resubmitted automatically: the checkpoint it would resume from is unknown",
           "*Proposed:* resume from the last complete checkpoint (unknown: looking it up "
           "failed)", '"Resubmit (checkpoint unknown)"'),
    "ko": ("마지막 완전한 체크포인트부터 (조회에 실패해 어느 체크포인트인지 모릅니다)",
           "; 재개할 체크포인트를 알 수 없어 자동으로 재제출하지 않았습니다",
           "*제안:* 마지막 완전한 체크포인트부터 (조회에 실패해 어느 체크포인트인지 모릅니다)",
           '"(체크포인트 미확인) 재제출"'),
}


def test_a_found_checkpoint_lets_an_auto_resubmit_recipe_resubmit_by_itself(store) -> None:
    """The contrast of the two tests below: the lookup answers, so nobody is asked."""
    said = _texts(watched_incident(store, checkpoints=FakeCheckpoints(3000), **AUTO))
    assert "is retryable: resubmitting from iteration 3,000" in said
    assert "proposing" not in said and '"Resubmit' not in said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_failed_checkpoint_lookup_says_it_is_unknown_and_asks_before_resubmitting(
        store, lang: str) -> None:
    """The finished job's one lookup fails (SFTP): the incident says the checkpoint is unknown
    where it would say "from scratch", claims no work lost since "none saved", and the resubmit
    the recipe would make by itself is a button a person approves instead, saying why."""
    lookup = FakeCheckpoints(fails=OSError("SFTP listdir /ck/mix: Connection lost"))
    said = _texts(watched_incident(store, checkpoints=lookup, lang=lang, **AUTO))
    where, why, proposed, button = UNKNOWN[lang]
    assert f"proposing to resubmit {where}" in said or f"{where} 재제출을 제안" in said
    assert why in said and proposed in said and button in said
    assert "from scratch" not in said and "none saved" not in said and "Work lost" not in said
    assert "처음부터" not in said and "저장된 것 없음" not in said
    assert lookup.calls == [("mix", None)]


def test_a_hung_checkpoint_lookup_is_given_up_at_its_deadline_and_the_incident_posted(
        store) -> None:
    """The checkpoint dir hangs (a stuck filesystem): the incident is posted once the deadline
    has passed, saying the checkpoint is unknown, while the lookup still waits."""
    release = threading.Event()
    lookup = FakeCheckpoints(3000, hangs=release)
    started = time.monotonic()
    try:
        said = _texts(watched_incident(store, checkpoints=lookup, checkpoint_deadline_s=0.2,
                                       **AUTO))
    finally:
        release.set()
    assert time.monotonic() - started < 30
    where, why, proposed, button = UNKNOWN["en"]
    assert f"proposing to resubmit {where}" in said
    assert why in said and proposed in said and button in said
    assert "iteration 3000" not in said
    assert lookup.calls == [("mix", None)]


def test_a_failed_incident_post_is_retried_from_the_same_checkpoint_lookup(store) -> None:
    """Slack fails the incident's first post; the next tick posts it, decided from the one
    lookup made when the job ended (its answer kept until posted), not a second one that
    might now say otherwise: one lookup per finished job."""
    calls: list[str] = []

    def fails_then_finds(recipe: str, task: int | None = None, abandon: Any = None):
        calls.append(recipe)
        if len(calls) == 1:
            raise OSError("SFTP listdir /ck/mix: Connection lost")
        return Checkpoint("/ck/mix/iter_0003000", 3000, "scan")

    said = _texts(watched_incident(store, checkpoints=fails_then_finds, failed_posts=1,
                                   **AUTO))
    where, why, proposed, button = UNKNOWN["en"]
    assert f"proposing to resubmit {where}" in said and why in said and button in said
    assert "iteration 3000" not in said
    assert calls == ["mix"]


def test_the_stored_incident_keeps_that_its_checkpoint_was_unknown(store) -> None:
    """The incident's row in the store keeps the failed lookup and the automatic resubmit it
    withheld: what is told again from the row (here as a note in the thread) says the
    checkpoint is unknown and why nothing was resubmitted, never "from scratch"."""
    lookup = FakeCheckpoints(fails=OSError("SFTP listdir /ck/mix: Connection lost"))
    ctx, posted = watched_thread(store, checkpoints=lookup, **AUTO)
    row = store.incidents.get("dev:88154:final")
    stored = Decision.from_json(row.diagnosis["decision"])
    assert stored.facts["checkpoint_lookup"] == "failed"
    assert stored.facts["auto_withheld"] == "checkpoint_unknown"
    ThreadEvents(ctx).publish(WatchEvent(
        "note", "dev:88154:final:again", "dev", row.diagnosis["text"], row.chain_id,
        row.job_id, "mix", decision=stored))
    said = _texts(posted["dev:88154:final:again"])
    where, why, _proposed, _button = UNKNOWN["en"]
    assert f"proposing to resubmit {where}" in said and why in said
    assert "from scratch" not in said


# --- an event the outbox rebuilds from its row (bot.services.watch.outbox.event_from_store) --

class SlackDown:
    """An EventSink that publishes nothing: the event's row stays `pending`."""

    def publish(self, event: WatchEvent) -> None:
        raise RuntimeError("slack is down")


def _given_up_note(chain: int) -> tuple[WatchEvent, str]:
    """An automatic resubmit given up (bot.services.watch.resubmit): a note whose text is the
    whole message (`text_only`), about its incident's decision."""
    facts: dict[str, Any] = {"resubmit": "failed", "tries": 3, "error": "sbatch: timed out",
                             "recipe": "mix"}
    said = facts["said"] = resubmit_note_said("88154", facts)
    decision = Decision(DecisionKind.RESUBMIT_NOW, "resubmitting from iteration 3000",
                        "nccl_timeout", charged=True, resume_from=3000,
                        resume_checkpoint="iter_3000.pt", facts={"why": "retry"})
    return WatchEvent("note", "dev:88154:resubmit:failed", "dev", str(said), chain, "88154",
                      "mix",
                      decision=decision, facts=facts, text_only=True), "resubmit_failed"


def _leak_warning(chain: int) -> tuple[WatchEvent, str]:
    """A memory leak's early warning (bot.core.policy.early): its sentence is its decision's."""
    decision = Decision(DecisionKind.WARN, "host RSS grows 2.1 GiB per 1000 iterations",
                        "memory_leak", projected_oom_iter=5200, key="memory_leak:5200",
                        facts={"why": "leak", "slope": 2.1, "projected_oom_iter": 5200,
                               "target": 8000, "workers_gib": None, "earlier": False})
    return WatchEvent("warning", "dev:88154:memory_leak:5200", "dev", decision.reason, chain,
                      "88154", "mix", decision=decision), "memory_leak"


@pytest.mark.parametrize("made", [_given_up_note, _leak_warning])
def test_an_event_rebuilt_from_its_outbox_row_is_said_as_it_was(store: Store, made) -> None:
    """Its recipe (the thread's language: Korean here), its decision and `text_only` come
    back from the row; before, the rebuilt event lost them and said something else, in the
    bot's language."""
    ctx = make_context(store, FakeSlurm(), lang="ko")
    event, class_id = made(store.chains.create(recipe="mix", cluster="dev", job_name="mix",
                                               now=T0).id)
    outbox = Outbox("dev", store=store, sink=SlackDown())
    assert outbox.emit(event, class_id, T0, TickReport(ok=True)) is False
    rebuilt = outbox.stored_event(present(store.incidents.get(event.key)))

    assert (rebuilt.recipe, rebuilt.decision, rebuilt.text_only) == \
        (event.recipe, event.decision, event.text_only)
    assert rebuilt.decision is not None and event.decision is not None
    assert rebuilt.decision.facts == event.decision.facts
    words = ThreadEvents(ctx)
    assert words._say(rebuilt) == words._say(event)
    assert HANGUL.search(words._say(rebuilt))
