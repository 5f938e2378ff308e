"""A stall prompt ("stalled: Cancel and resume / Cancel / Dismiss") goes out of date once its
job trains on past the iteration it stalled at (a slow filesystem, a straggler): the watcher
rewrites the prompt to say so as soon as it sees the progress, and a click on it (from an old
copy, the Home tab, or before the rewrite) cancels nothing and says why."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from fakes import T0, FakeCheckpoints, FakeSlurm, make_context, recorded
from support.mix_prompt import mix_prompt
from support.watcher import LOG, stalled_thread

from bot.core.catalogue import Catalogue
from bot.services.approvals import ActionId, handle_click
from bot.services.ports import BotContext
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.store import Store

NOW = 1_000_000.0


@pytest.fixture
def store(tmp_path):
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as s:
        yield s


def _training_lines(first_iter: int, n: int, start: datetime) -> bytes:
    return b"".join(
        (f"{start + timedelta(seconds=4.5 * i):%Y-%m-%d %H:%M:%S}.104 | INFO | iter: "
         f"{first_iter + i}/8000 | loss: 0.6 | 4.50 s/iter | rss: 46.4 GiB | cpu: 92%\n"
         ).encode() for i in range(n))


def _buttons(blocks: list) -> list[dict]:
    return [e for b in blocks if b.get("type") == "actions" for e in b["elements"]]


def test_the_watcher_marks_the_stall_prompt_out_of_date_once_the_job_trains_again(store):
    slurm = FakeSlurm()
    ctx = make_context(store, slurm, clock=lambda: T0 + 5000)
    _, sftp, _ = stalled_thread(ctx, slurm)
    w = Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store,
                catalogue=Catalogue.load(), sink=ThreadEvents(ctx), config=ctx.config,
                checkpoint=FakeCheckpoints(3000))
    w.tick(T0)
    w.tick(T0 + 360)
    sink = recorded(ctx)
    [(key, text)] = [(p[2], p[3]) for p in sink.posts if p[0] == "reply"]
    [cancel] = [b for b in _buttons(sink.blocks[key]) if b["action_id"] == ActionId.CANCEL]
    # one minute of training past iteration 3470 (the stall), then one more tick
    sftp.clock = T0 + 400
    sftp.append(LOG, _training_lines(3471, 14, datetime(2025, 5, 14, 19, 15, 0)))
    w.tick(T0 + 420)
    [(_, _, updated_key, updated)] = [p for p in sink.posts if p[0] == "update"]
    assert updated_key == key
    assert updated == ("Out of date: job 88154 trains again (iteration 3,484, past the stall "
                       "at 3,470); nothing was cancelled.")
    assert _buttons(sink.blocks[key]) == []  # its buttons are gone
    w.tick(T0 + 480)  # told once
    assert len([p for p in sink.posts if p[0] == "update"]) == 1
    # the click of a copy of the prompt the rewrite did not reach: nothing cancelled
    result = handle_click(ctx, cancel["value"], ActionId.CANCEL, "U0APPR", T0 + 500)
    assert result.status == "stale" and result.ephemeral == updated
    assert slurm.acted("cancel") == []


def _stall_recorded(ctx: BotContext, chain_id: int, *, stalled_at: int, reached: int) -> None:
    """The watcher's stall warning of 88154 at iteration `stalled_at`, and the iteration its
    attempt row has reached since."""
    ctx.store.incidents.record("dev:88154:hang:line3470", class_id="hang", now=NOW,
                               chain_id=chain_id, job_id="88154", state="posted",
                               diagnosis={"diagnosis": {"metrics": {"last_iter": stalled_at}}})
    attempt = ctx.store.attempts.get_by_job("88154", "dev")
    assert attempt is not None
    ctx.store.attempts.update(attempt.id, last_iter=reached)


@pytest.mark.parametrize("action", [ActionId.CANCEL, ActionId.CANCEL_RESUME])
def test_a_cancel_of_a_job_past_its_stall_is_refused_as_out_of_date(store, action) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    chain_id, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    _stall_recorded(ctx, chain_id, stalled_at=3470, reached=4040)
    result = handle_click(ctx, prompt.token, action, "U0APPR", NOW + 60)
    assert result.status == "stale"
    assert result.update_text == ("Out of date: job 88154 trains again (iteration 4,040, past "
                                  "the stall at 3,470); nothing was cancelled.")
    assert slurm.acted("cancel") == [] and slurm.submits() == []
    again = handle_click(ctx, prompt.token, ActionId.CANCEL, "U0APPR", NOW + 70)
    assert again.status == "stale" and slurm.acted("cancel") == []


def test_a_job_still_at_its_stall_is_cancelled(store) -> None:
    slurm = FakeSlurm()
    ctx = make_context(store, slurm)
    chain_id, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
    _stall_recorded(ctx, chain_id, stalled_at=3470, reached=3470)
    result = handle_click(ctx, prompt.token, ActionId.CANCEL, "U0APPR", NOW + 60)
    assert result.status == "done"
    assert slurm.acted("cancel") == [88154]


def test_the_out_of_date_stall_prompt_says_so_in_korean(tmp_path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'ko.db'}") as store:
        slurm = FakeSlurm()
        ctx = make_context(store, slurm, slack_lang="ko")
        chain_id, prompt = mix_prompt(ctx, now=NOW, running=slurm, watched=True)
        _stall_recorded(ctx, chain_id, stalled_at=3470, reached=4040)
        result = handle_click(ctx, prompt.token, ActionId.CANCEL, "U0APPR", NOW + 60)
        assert result.update_text is not None
        assert "다시 학습하고 있습니다" in result.update_text and "4,040" in result.update_text
        assert slurm.acted("cancel") == []
