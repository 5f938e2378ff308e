"""What `trainbot report` shows for a finished run, as Block Kit (the one renderer, checked by
the Slack stand-in): the header's icon follows the outcome, a completed run whose own log
marker says so is decided by that line (no "look closer"), and its evidence line shows as the
log has it, backticks and all."""

from __future__ import annotations

from pathlib import Path

import pytest
from slack_standin import validate_blocks

from bot.cli.log_input import read_log
from bot.cli.report import build_report
from bot.core.catalogue import Catalogue
from bot.core.incident import build_incident
from bot.core.models import Accounting, Action, Diagnosis, DiagnosisMetrics, Evidence
from bot.slack.render import render_blocks

LIGHTNING = ("Epoch 1/2: 100%|##########| 10/10 [00:01<00:00, loss=0.5]\n"
             "Epoch 2/2: 100%|##########| 10/10 [00:01<00:00, loss=0.4]\n"
             "`Trainer.fit` stopped: `max_epochs=2` reached.\n")


def _report(tmp_path: Path, text: str, acct: Accounting, lang: str) -> list[dict]:
    log = tmp_path / "run.log"
    log.write_text(text)
    inp = read_log(str(log), acct, catalogue=Catalogue.load())
    report = build_report(inp, job_id="r9", recipe="mix", charts=False, lang=lang)
    assert report.template == "incident"
    blocks, _ = render_blocks("incident", lang, report.view)
    validate_blocks(blocks)
    return blocks


def _block(blocks: list[dict], block_id: str) -> str | None:
    for b in blocks:
        if b.get("block_id") == block_id:
            return b["text"]["text"] if "text" in b else b["elements"][0]["text"]
    return None


COMPLETED = Accounting(state="COMPLETED", exit_code=0, signal=0)


@pytest.mark.parametrize(("lang", "title"), [("en", "Training completed"), ("ko", None)])
def test_a_completed_runs_header_is_green_not_red(tmp_path: Path, lang: str,
                                                  title: str | None) -> None:
    header = _report(tmp_path, LIGHTNING, COMPLETED, lang)[0]["text"]["text"]
    assert header.startswith("✅ ") and "🔴" not in header
    if title:
        assert header == f"✅ {title} · job r9"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_warning_is_yellow_and_a_failure_red(lang: str) -> None:
    def header(class_id: str, action: Action) -> str:
        d = Diagnosis(class_id=class_id, action=action, retryable=False,
                      charges_budget=False, hint="", title=class_id,
                      evidence=(Evidence(1, "x"),), metrics=DiagnosisMetrics())
        view = build_incident(d, recipe="mix", job_id="7", last_checkpoint_iter=None,
                              now=0.0)
        blocks, _ = render_blocks("incident", lang, view)
        return str(blocks[0]["text"]["text"])

    assert header("memory_leak", Action.NONE).startswith("⚠️ ")
    assert header("nccl_timeout", Action.RESUBMIT).startswith("🔴 ")
    assert header("bad_config", Action.STOP).startswith("🔴 ")


@pytest.mark.parametrize(("lang", "decisive", "look_closer"), [
    ("en", "Decided by a decisive log line.", "look closer"),
    ("ko", "결정적인 로그 줄로 판단했습니다.", "직접 확인해 보세요"),
])
def test_a_completed_run_whose_marker_agrees_is_decided_by_that_line(
        tmp_path: Path, lang: str, decisive: str, look_closer: str) -> None:
    blocks = _report(tmp_path, LIGHTNING, COMPLETED, lang)
    decided = _block(blocks, "decided_by")
    assert decided == f"🔎 {decisive}"
    assert look_closer not in str(blocks)
    # ... while a FAILED run whose log names no cause still says to look closer
    failed = _report(tmp_path, LIGHTNING.replace("`Trainer.fit` stopped: `max_epochs=2` "
                                                 "reached.\n", ""),
                     Accounting(state="FAILED", exit_code=1, signal=0), lang)
    assert look_closer in (_block(failed, "decided_by") or "")
    assert failed[0]["text"]["text"].startswith("🔴 ")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_evidence_line_shows_as_the_log_has_it(tmp_path: Path, lang: str) -> None:
    blocks = _report(tmp_path, LIGHTNING, COMPLETED, lang)
    evidence = _block(blocks, "evidence") or ""
    assert "     3 │ `Trainer.fit` stopped: `max_epochs=2` reached.\n```" in evidence
    assert evidence.count("```") == 2  # one code block, opened and closed once


def test_three_backticks_in_a_log_line_never_close_the_code_block() -> None:
    d = Diagnosis(class_id="completed", action=Action.NONE, retryable=False,
                  charges_budget=False, hint="", title="Training completed",
                  evidence=(Evidence(3, "```Trainer.fit``` stopped"),),
                  metrics=DiagnosisMetrics())
    view = build_incident(d, recipe="mix", job_id="7", last_checkpoint_iter=None, now=0.0)
    blocks, _ = render_blocks("incident", "en", view)
    validate_blocks(blocks)
    evidence = _block(blocks, "evidence") or ""
    assert evidence.count("```") == 2 and evidence.endswith("```")
    assert "     3 │ ˋˋˋTrainer.fitˋˋˋ stopped" in evidence
