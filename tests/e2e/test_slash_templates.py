"""The Slack side's thread messages come from templates (en/ko): the first job's note, approval
prompts, competitor holds, decided prompts, plain notes and the watcher's own sentences
(`event`). Golden files per template × language (tests/fixtures/golden/slash/,
`UPDATE_GOLDEN=1` to regenerate, review the diff), each also checked by the Slack stand-in's
validator; then the services post them, in the recipe's language, through the poster.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from pathlib import Path

import pytest
from fakes import FakeClusters, FakeSFTP, FakeSlurm, make_config, make_context
from slack_standin import SlackStandIn, validate_blocks

from bot.core.home import prompt_confirm
from bot.core.policy import resume_start
from bot.core.text import N_
from bot.services.approvals import ActionId, handle_click
from bot.services.prompts import create_resubmit_prompt
from bot.services.runs import submit_and_announce
from bot.services.threads import render
from bot.services.watch.tick import Watcher
from bot.services.watch_events import ThreadEvents
from bot.slack.render import render_blocks

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "slash"
NOW = 1_732_871_000.0
TOKEN = "tok_3q1Zr8XoXb0a9PzJ0yQbVw"
CH = "C0TRAIN"

VIEWS: dict[str, dict] = {
    "submitted": {
        "recipe": "mix", "job_id": "88887", "attempt_no": 1, "job_name": "wm-mix",
        "actor": "U0ALICE", "automatic": False,
        "checkpoint_path": "/ckpt/mix/iter_000003000", "checkpoint_iter": 3000,
        "start": N_("resuming %(start)s (`%(path)s`)", start=resume_start(3000),
                    path="/ckpt/mix/iter_000003000"),
        "overrides": [["lr", "0.0003"], ["tag", "  a <b> & c "]], "not_applied": [],
    },
    "approval": {
        "summary": "<@U0OWNER> job 88154: NCCL watchdog timeout after a hang",
        "block_id": f"approve:{TOKEN}",
        "buttons": [
            {"kind": kind, "action_id": action, "value": TOKEN, "style": style,
             "from_iter": 3000, "mem": "1900G", "job_id": "88154",
             **prompt_confirm(kind, "88154", "RUNNING", 3000)}
            for kind, action, style in (
                ("resubmit", "trainbot_resubmit", "primary"),
                ("resubmit_mem", "trainbot_resubmit_mem", None),
                ("cancel", "trainbot_cancel", "danger"),
                ("dismiss", "trainbot_dismiss", None),
            )
        ],
    },
    "hold_prompt": {
        "competitor": "88017", "competitor_name": "succ <!channel>", "for_job": "88887",
        "token": TOKEN, "block_id": f"hold:{TOKEN}", "yes_action": "trainbot_hold_competitor",
        "no_action": "trainbot_keep_competitor",
    },
    "decided": {"summary": "job 88154 died: NCCL watchdog timeout",
                "outcome": {"kind": "approved", "actor": "W0LEAD", "did": "resubmitted",
                            "recipe": "mix", "job_id": "88154", "new_job_id": "88887",
                            "for_job": None, "current_job": None, "from_iter": 3000,
                            "mem": "1900G", "state": None, "error": None,
                            "not_applied": None}},
    "click_reply": {"kind": "unauthorized", "approvers": ["U0APPR", "W0LEAD", "W0OPS"],
                    "decided_by": None},
    "note": {"text": "Released 88017: 88887 is running."},
    "event": {"kind": "incident", "prompt": False, "text_only": False, "job_id": "88154",
              "cluster": "dev", "state": "FAILED", "class_id": "nccl_timeout", "hint": None,
              "facts": {},
              "text": "job 88154 FAILED: nccl_timeout — retry budget exhausted: 3 of 3 "
                      "resubmits used in this chain; a person must decide (nccl_timeout)",
              "reason": {"why": "budget_exhausted", "used": 3, "budget": 3,
                         "kind": "stop", "class_id": "nccl_timeout", "charged": True,
                         "resume_from": 3000, "work_lost_iters": 470, "mem": None,
                         "projected_oom_iter": None}},
}
CASES = [(name, lang) for name in VIEWS for lang in ("en", "ko")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ".".join(c))
def test_golden(case: tuple[str, str]) -> None:
    name, lang = case
    blocks, text = render_blocks(name, lang, VIEWS[name])
    got = json.dumps({"text": text, "blocks": blocks}, indent=2, ensure_ascii=False) + "\n"
    path = GOLDEN / f"{name}.{lang}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no golden {path.name}: run with UPDATE_GOLDEN=1 and review it"
    want = path.read_text(encoding="utf-8")
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"golden/slash/{path.name}", "rendered now"))
        pytest.fail(f"{path.name} changed (UPDATE_GOLDEN=1 to accept):\n{diff}")
    assert validate_blocks(blocks) == []


def test_no_orphan_goldens() -> None:
    assert {p.name for p in GOLDEN.glob("*.json")} == {f"{n}.{lang}.json" for n, lang in CASES}


def test_user_typed_values_are_escaped_and_kept_as_typed() -> None:
    blocks, _ = render_blocks("submitted", "en", VIEWS["submitted"])
    line = blocks[0]["text"]["text"]
    assert "tag=  a &lt;b&gt; &amp; c " in line  # spaces kept, Slack's controls escaped
    blocks, text = render_blocks("hold_prompt", "en", VIEWS["hold_prompt"])
    assert "<!channel>" not in json.dumps(blocks) + text  # a job name cannot ping a channel
    auto = {**VIEWS["submitted"], "actor": "trainbot", "automatic": True,
            "checkpoint_path": None, "checkpoint_iter": None, "overrides": [],
            "start": N_("starting %(start)s", start=resume_start(None))}
    _, text = render_blocks("submitted", "en", auto)
    assert text == ("*mix*: job 88887 submitted by trainbot (automatic retry) (attempt 1, name "
                    "`wm-mix`), starting from scratch (no complete checkpoint)")


# ---------------------------------------------------------------------------- through services


@pytest.mark.parametrize(("checkpoint", "found", "start"), [
    (None, None, "starting from scratch (the recipe has no checkpoint dir)"),
    ({"dir": "/ck/mix"}, None, "starting from scratch (no complete checkpoint)"),
    ({"dir": "/ck/mix"}, ("/ck/mix/iter_000000000", 0),
     "resuming from iteration 0 (`/ck/mix/iter_000000000`)"),
    ({"dir": "/ck/mix"}, ("/ck/mix/iter_000003000", 3000),
     "resuming from iteration 3,000 (`/ck/mix/iter_000003000`)"),
    ({"dir": "/ck/a<b>"}, ("/ck/a<b>/final", None),
     "resuming from checkpoint `/ck/a&lt;b&gt;/final`"),
])
def test_the_submitted_note_says_where_the_job_starts(
    store, slack_context, slack: SlackStandIn, monkeypatch, checkpoint, found, start
) -> None:
    """bot.services.submit.describe_start's wording (as `trainbot submit` prints it, the path
    escaped for mrkdwn), in resume_start's words (`from iteration 3,000`): iteration 0 is an
    iteration; a recipe that keeps no checkpoints is told apart from one with no complete
    checkpoint yet."""
    from bot.core.checkpoints import Checkpoint

    ckpt = Checkpoint(path=found[0], iteration=found[1], source="pointer") if found else None
    monkeypatch.setattr("bot.cluster.checkpoints.find_latest_checkpoint", lambda *a, **k: ckpt)
    ctx = slack_context(store, make_config(checkpoint=checkpoint), FakeClusters(FakeSlurm()))
    submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW)
    [root] = slack.root_messages(CH)
    [note] = slack.replies(CH, root["ts"])
    assert note["text"] == ("*mix*: job 88887 submitted by <@U0ALICE> (attempt 1, name `mix`), "
                            + start)


def test_korean_recipe_gets_a_korean_thread_prompt_and_resolution(
    store, slack_context, slack: SlackStandIn
) -> None:
    slurm = FakeSlurm()
    ctx = slack_context(store, make_config(lang="ko"), FakeClusters(slurm))
    first = submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW)
    [root] = slack.root_messages(CH)
    assert root["text"] == "mix: 작업 88887 PENDING · —"
    [note] = slack.replies(CH, root["ts"])
    assert note["text"] == ("*mix*: 작업 88887 제출 — <@U0ALICE> (시도 1, 이름 `mix`), "
                            "레시피에 체크포인트 디렉터리가 없어 처음부터 시작")

    slurm.set(88887, state="FAILED")
    ctx.store.attempts.update(ctx.store.attempts.get_by_job("88887").id, state="FAILED",
                              result="FAILED", cause="nccl_timeout", last_iter=3400)
    prompt = create_resubmit_prompt(ctx, recipe="mix", chain_id=first.chain_id, job_id="88887",
                                    now=NOW, summary="88887: NCCL", resume_iter=3000,
                                    mem="1900G")
    labels = [b["text"]["text"] for b in prompt.blocks[1]["elements"]]
    assert labels == ["iteration 3,000부터 재제출", "--mem=1900G으로 재제출", "무시"]
    stall = create_resubmit_prompt(ctx, recipe="mix", chain_id=first.chain_id, job_id="88887",
                                   now=NOW, summary="88887: stalled", offer_cancel=True)
    assert [b["text"]["text"] for b in stall.blocks[1]["elements"]] == [
        "88887 취소 후 처음부터 재개", "88887 취소", "무시"]
    assert {b["value"] for b in prompt.blocks[1]["elements"]} == {prompt.token}
    ctx.sink.post_reply(first.chain_id, f"prompt:{prompt.token}", prompt.blocks, prompt.text)

    result = handle_click(ctx, prompt.token, ActionId.RESUBMIT, "W0LEAD", NOW + 5)
    assert result.status == "done" and len(slurm.submits()) == 2
    # the prompt said iteration 3000, and no complete checkpoint is found at the click: it says so
    assert result.update_text == (
        "<@W0LEAD>님이 승인했습니다: 작업 88888(으)로 재제출했습니다 (완전한 체크포인트가 "
        "없어 처음부터 재개). 프롬프트는 iteration 3,000부터 "
        "재개한다고 했습니다: 프롬프트를 게시한 뒤 가장 최근의 완전한 체크포인트가 바뀌었습니다.")
    thread = slack.replies(CH, root["ts"])
    assert thread[-1]["text"] == "mix: 88888(으)로 완전한 체크포인트가 없어 처음부터 재개"
    assert "승인: <@W0LEAD>." in json.dumps(thread[-1]["blocks"], ensure_ascii=False)
    # the root now shows both attempts (rewritten in place, not posted again)
    assert len(slack.root_messages(CH)) == 1
    update = [c for c in slack.ok_calls("chat.update") if c.params["ts"] == root["ts"]][-1]
    table = update.params["blocks"][2]["text"]["text"]
    assert "88887" in table and "nccl_timeout" in table and "88888" in table


@pytest.mark.parametrize(("lang", "labels", "title", "resume", "cancel"), [
    ("en", ["Cancel 88887_0 and resume from iteration 100", "Cancel 88887_0", "Dismiss"],
     ("Cancel job 88887_0?", "Cancel the job", "Keep it"),
     "Job 88887_0 is RUNNING. scancel stops it, then trainbot resubmits it from iteration "
     "100.", "Job 88887_0 is RUNNING. scancel stops it."),
    ("ko", ["88887_0 취소 후 iteration 100부터 재개", "88887_0 취소", "무시"],
     ("작업 88887_0을(를) 취소할까요?", "작업 취소", "그대로 두기"),
     "작업 88887_0은(는) 지금 RUNNING 상태입니다. scancel로 멈춘 뒤 trainbot이 iteration 100부터 "
     "다시 제출합니다.",
     "작업 88887_0은(는) 지금 RUNNING 상태입니다. scancel로 멈춥니다."),
])
def test_a_stall_prompt_in_an_array_thread_asks_before_cancelling_the_task(
    store, slack_context, slack: SlackStandIn, lang, labels, title, resume, cancel
) -> None:
    """An array recipe's thread: task 0 runs as raw job 88900 (the watcher records it as
    88887_0) and stalls; its prompt, posted through the stand-in (which checks confirm
    dialogs as Slack does), names the task as the thread does on its buttons, and Cancel and
    Cancel and resume ask first naming it and its state, in the recipe's language; the click
    Slack sends once the dialog is confirmed cancels the raw job."""
    slurm, sftp = FakeSlurm(), FakeSFTP()
    config = make_config(lang=lang, array="0-2", job_name="sweep",
                         log_path="/logs/%x-%A_%a.out")
    ctx = slack_context(store, config, FakeClusters(slurm, sftp))
    run = submit_and_announce(ctx, "mix", actor="U0ALICE", now=NOW)
    assert run.job_id == "88887"
    slurm.add(88900, name="sweep", state="RUNNING", array_job_id=88887, array_task_id=0,
              stdout_path="/logs/sweep-88887_0.out", start_time=NOW)
    sftp.append("/logs/sweep-88887_0.out", b"iter: 100/1000 | loss: 0.5\n")
    Watcher("dev", slurm=slurm, reader=lambda: sftp, store=store, catalogue=ctx.catalogue,
            sink=ThreadEvents(ctx), config=config).tick(NOW + 60)
    assert store.attempts.get_by_job("88900").shown_id == "88887_0"

    stall = create_resubmit_prompt(ctx, recipe="mix", chain_id=run.chain_id, job_id="88900",
                                   now=NOW + 60, summary="88887_0: stalled", resume_iter=100,
                                   offer_cancel=True)
    ctx.sink.post_reply(run.chain_id, f"prompt:{stall.token}", stall.blocks, stall.text)
    [root] = slack.root_messages(CH)
    posted = slack.replies(CH, root["ts"])[-1]  # the stand-in accepted it
    buttons = posted["blocks"][1]["elements"]
    assert [b["text"]["text"] for b in buttons] == labels
    assert [b.get("confirm") and (b["confirm"]["title"]["text"], b["confirm"]["confirm"]["text"],
                                  b["confirm"]["deny"]["text"], b["confirm"]["text"]["text"],
                                  b["confirm"]["style"]) for b in buttons] == [
        (*title, resume, "danger"), (*title, cancel, "danger"), None]
    result = handle_click(ctx, stall.token, ActionId.CANCEL, "W0LEAD", NOW + 65)
    assert result.status == "done", result
    assert slurm.acted("cancel") == [88900]


def test_a_broken_site_template_falls_back_to_the_shipped_one(
    store, slack_client, fake_sleep, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "approval.json.j2").write_text('{"text": {{ nope }}, "blocks": []}')
    (site / "note.json.j2").write_text(
        '{"text": {{ text | tojson }}, "blocks": [{"type": "section", "text": '
        '{"type": "mrkdwn", "text": {{ ("📣 " ~ text) | tojson }}}}]}')
    ctx = make_context(store, slack=False)
    ctx.config.templates.dir = str(site)
    blocks, _ = render(ctx, "note", "mix", {"text": "hello"})
    assert blocks[0]["text"]["text"] == "📣 hello"  # the site's template wins
    with caplog.at_level(logging.WARNING):
        prompt = create_resubmit_prompt(ctx, recipe="mix",
                                        chain_id=None,  # type: ignore[arg-type]  # no thread
                                        job_id="88154",
                                        now=NOW, summary="s", resume_iter=None)
    assert [b["text"]["text"] for b in prompt.blocks[1]["elements"]] == [
        "Resubmit from scratch", "Dismiss"]
    assert "site template en/approval failed" in caplog.text
