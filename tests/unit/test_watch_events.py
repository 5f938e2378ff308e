"""The watcher's events in the run thread (bot.services.watch_events.ThreadEvents), through the
real approvals service: the 88154 story from stall warning to an approved resubmit."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.train_commands.fakes import FakeSlurm, make_context
from fixtures.watcher.fakes import T0, FakeSFTP

from bot.core.catalogue import Catalogue
from bot.services.approvals import ActionId, handle_click
from bot.services.watch_events import ThreadEvents
from bot.services.watcher import Watcher, WatchEvent
from bot.store import Store

STORY = Path(__file__).resolve().parents[1] / "fixtures" / "stories" / "88154.log"
LOG = "/scratch/mix/logs/mix-88154.out"


@pytest.fixture
def store(tmp_path):
    s = Store.open(f"sqlite:///{tmp_path / 'state.db'}")
    yield s
    s.close()


def _buttons(blocks):
    return [e for b in blocks if b.get("type") == "actions" for e in b["elements"]]


def test_88154_story_in_the_thread_from_stall_to_approved_resubmit(store):
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    ctx.clock = lambda: T0 + 1900
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.add(chain_id=chain.id, job_id="88154", now=T0)
    store.watched_jobs.add("dev", "88154", now=T0, chain_id=chain.id)
    ctx.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    slurm.add(88154, state="RUNNING", stdout_path=LOG, start_time=T0, name="mix")
    lines = STORY.read_bytes().splitlines(keepends=True)
    stall = next(i for i, x in enumerate(lines) if b"iter: 3470/" in x)
    sftp = FakeSFTP()
    sftp.append(LOG, b"".join(lines[: stall + 1]))
    posted: list[tuple[str, list]] = []
    real_reply = ctx.sink.post_reply

    def capture(chain_id, key, blocks, text):
        posted.append((key, blocks))
        return real_reply(chain_id, key, blocks, text)

    ctx.sink.post_reply = capture
    w = Watcher("dev", slurm=slurm, sftp=lambda: sftp, store=store, catalogue=Catalogue.load(),
                sink=ThreadEvents(ctx), config=ctx.config, checkpoint_iter=lambda r: 3000)
    w.tick(T0)
    w.tick(T0 + 360)
    # The stall: one reply, owners paged, Cancel offered.
    [(key, blocks)] = posted
    assert key.endswith(":hang:line2476")
    assert "<@U0OWNER>" in blocks[0]["text"]["text"] and "3470" in blocks[0]["text"]["text"]
    assert ActionId.CANCEL in [b["action_id"] for b in _buttons(blocks)]
    # The watchdog fires; the job ends FAILED: the incident with Resubmit from iter 3000.
    sftp.clock = T0 + 1805
    sftp.append(LOG, b"".join(lines[stall + 1:]))
    slurm.set(88154, state="FAILED", exit_code=1, signal=0, end_time=T0 + 1805)
    w.tick(T0 + 1830)
    key, blocks = posted[-1]
    assert key == "dev:88154:final"
    assert any(b.get("type") == "header" for b in blocks)  # the incident template rendered
    text = " ".join(b.get("text", {}).get("text", "") for b in blocks if b.get("type") ==
                    "section")
    assert "nccl_timeout" in text and "3000" in text
    buttons = _buttons(blocks)
    resubmit = next(b for b in buttons if b["action_id"] == ActionId.RESUBMIT)
    assert resubmit["text"]["text"] == "Resubmit (resume from iter 3000)"
    # An approver clicks: exactly one resubmit into the same chain.
    result = handle_click(ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1900)
    assert result.status == "done", result
    assert len(slurm.submits()) == 1
    attempts = store.attempts.for_chain(chain.id)
    assert [a.job_id for a in attempts] == ["88154", "88887"]
    assert store.watched_jobs.get("dev", "88887") is not None
    # A second click (or a Slack retry) does nothing more.
    again = handle_click(ctx, resubmit["value"], ActionId.RESUBMIT, "W0LEAD", T0 + 1901)
    assert again.status == "duplicate" and len(slurm.submits()) == 1


def test_cluster_notice_goes_once_to_each_active_thread_of_that_cluster(store):
    ctx = make_context(store)
    a = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    b = store.chains.create(recipe="mix", cluster="other", job_name="mix", now=T0)
    for c in (a, b):
        ctx.sink.post_root(c.id, "C0TRAIN", [], "mix")
    sink = ThreadEvents(ctx)
    ev = WatchEvent("cluster_unreachable", "cluster:dev:down:1", "dev", "cluster dev down")
    sink.publish(ev)
    notes = [p[1:3] for p in ctx.sink.posts if p[0] == "reply"]
    assert notes == [(a.id, f"cluster:dev:down:1:chain:{a.id}")]


def test_time_limit_on_an_auto_resubmit_recipe_is_resumed_by_the_submit_service(store):
    from fixtures.train_commands.fakes import FakeClusters

    from bot.services.watch_events import build_watcher

    slurm = FakeSlurm()
    ctx = make_context(store, slurm, policy={"auto_resubmit": True, "backoff_s": 30})
    sftp = FakeSFTP()

    class Clusters(FakeClusters):
        def sftp(self, name):
            return sftp

    ctx.clusters = Clusters(slurm)
    ctx.clock = lambda: T0 + 2000
    chain = store.chains.create(recipe="mix", cluster="dev", job_name="mix", now=T0)
    store.attempts.add(chain_id=chain.id, job_id="88300", now=T0)
    store.watched_jobs.add("dev", "88300", now=T0, chain_id=chain.id)
    ctx.sink.post_root(chain.id, "C0TRAIN", [], "mix")
    sftp.append(LOG, b"".join(STORY.read_bytes().splitlines(keepends=True)[:300]))
    slurm.add(88300, state="TIMEOUT", exit_code=0, signal=0, stdout_path=LOG, name="mix",
              start_time=T0, end_time=T0 + 1300)
    w = build_watcher(ctx, "dev", Catalogue.load())
    w.tick(T0 + 1310)
    assert slurm.submits() == []  # backoff: not before T0 + 1340
    w.tick(T0 + 1350)
    [submitted] = slurm.submits()
    assert submitted["job_name"] == "mix"  # same name, same chain
    assert [a.job_id for a in store.attempts.for_chain(chain.id)] == ["88300", "88887"]
    assert store.chains.get(chain.id).retries_used == 1
    assert store.watched_jobs.get("dev", "88887") is not None
    w.tick(T0 + 1410)
    assert len(slurm.submits()) == 1
    keys = [p[2] for p in ctx.sink.posts if p[0] == "reply"]
    assert "dev:88300:final" in keys and "dev:88300:resubmitted" in keys
