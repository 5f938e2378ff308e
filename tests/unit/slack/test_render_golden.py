"""Golden files: every template × language × story renders to the Block Kit JSON we reviewed.

Regenerate after an intended change with `UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/
test_render_golden.py` and review the diff. Each golden is also checked against the Slack
stand-in's validator, so a reviewed file is also one Slack accepts.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
from functools import cache
from pathlib import Path

import pytest
from slack_standin import MAX_BLOCKS_JSON_CHARS, validate_blocks

from bot.cli.log_input import read_log_arguments
from bot.cli.report import build_report
from bot.core.incident import (
    AttemptSummary,
    build_completion,
    build_incident,
    build_resolution,
    build_root,
    build_warning,
)
from bot.slack.render import render_blocks

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
STORIES = FIXTURES / "stories"
GOLDEN = FIXTURES / "golden"
STORY_IDS = ("87870", "88016", "88154", "108687", "108903", "108915")
LANGS = ("en", "ko")


def _args(story: str) -> argparse.Namespace:
    facts = json.loads((STORIES / f"{story}.sacct.json").read_text())
    return argparse.Namespace(
        log=str(STORIES / f"{story}.log"), state=facts.get("state"),
        exit_code=facts.get("exit_code"),
        elapsed=str(facts["elapsed_s"]) if facts.get("elapsed_s") is not None else None,
        mem_limit=facts.get("mem_limit"), sacct=None, target_iter=facts.get("target_iter"),
        now=None, catalogue=[], metric_regex=[],
    )


@cache
def story_views(story: str) -> dict[str, object]:
    """The views trainbot builds for a story log: its message plus root/warning/resolution."""
    inp = read_log_arguments(_args(story))
    report = build_report(inp, job_id=story, recipe="mix", charts=False)
    d = report.diagnosis
    m = d.metrics
    state = inp.accounting.state or "RUNNING"
    cause = d.class_id if d.class_id not in ("none", "completed") else None
    views: dict[str, object] = {
        "root": build_root(recipe="mix", attempts=[AttemptSummary(story, state, m.last_iter,
                                                                  None, cause)],
                           target_iter=m.target_iter, retry_budget=3, cluster="dev"),
        report.template: report.view,
    }
    if report.template != "incident" and d.class_id not in ("none", "completed"):
        views["incident"] = build_incident(d, recipe="mix", job_id=story,
                                           last_checkpoint_iter=None, now=0.0)
    if d.upstream is not None and d.upstream.started_at is not None:
        views["warning"] = build_warning(
            kind="stall", recipe="mix", job_id=story, last_iter=d.upstream.last_iter,
            now=d.upstream.started_at + 360, stalled_since=d.upstream.started_at,
            sec_per_iter=m.sec_per_iter, last_checkpoint_iter=3000)
    elif "warning" not in views and m.sec_per_iter and d.class_id == "none":
        views["warning"] = build_warning(kind="slow", recipe="mix", job_id=story,
                                         last_iter=m.last_iter, now=0.0,
                                         sec_per_iter=m.sec_per_iter)
    actions = report.view.proposals if report.template == "incident" else ()
    if actions and actions[0].kind.startswith("resubmit"):
        first = actions[0]
        views["resolution"] = build_resolution(
            recipe="mix", old_job_id=story, new_job_id=str(int(story) + 733),
            from_iter=first.from_iter, lost_iters=report.view.lost_iters,
            lost_seconds=report.view.lost_seconds, actor="U0ONCALL", mem=first.mem)
    if story == "88154":  # the resumed attempt reached the target: the thread's last line
        views["completed"] = build_completion(
            recipe="mix", job_id="88887", last_iter=8000, target_iter=8000, started_at=0.0,
            ended_at=66_600.0, attempts=2, retries_used=1)
    return views


# Which messages each story produces (a change here is a change in behaviour: review it).
STORY_TEMPLATES = {
    "87870": ("root", "incident", "resolution"),  # host OOM in a checkpoint save
    "88016": ("root", "warning", "incident"),  # leak warning while running
    "88154": ("root", "incident", "warning", "resolution", "completed"),  # hang → NCCL watchdog
    "108687": ("root", "incident"),  # silent exit 0
    "108903": ("root", "incident"),  # no C compiler
    "108915": ("root", "warning"),  # healthy but slow
}
CASES = [
    (template, lang, story)
    for story in STORY_IDS
    for template in STORY_TEMPLATES[story]
    for lang in LANGS
]


def _case_id(case: tuple[str, str, str]) -> str:
    return ".".join(case)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_golden(case: tuple[str, str, str]) -> None:
    template, lang, story = case
    views = story_views(story)
    assert template in views, f"story {story} no longer yields a {template} message"
    view = views[template]
    blocks, text = render_blocks(template, lang, view)
    got = json.dumps({"text": text, "blocks": blocks}, indent=2, ensure_ascii=False) + "\n"
    path = GOLDEN / f"{template}.{lang}.{story}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no golden {path.name}: run with UPDATE_GOLDEN=1 and review it"
    want = path.read_text(encoding="utf-8")
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"golden/{path.name}", "rendered now"))
        pytest.fail(f"{path.name} changed (UPDATE_GOLDEN=1 to accept):\n{diff}")
    assert validate_blocks(blocks) == []
    assert len(json.dumps(blocks, ensure_ascii=False)) <= MAX_BLOCKS_JSON_CHARS


@pytest.mark.parametrize("story", STORY_IDS)
def test_story_yields_exactly_the_listed_messages(story: str) -> None:
    assert set(story_views(story)) == set(STORY_TEMPLATES[story])


def test_no_orphan_goldens() -> None:
    expected = {f"{t}.{lang}.{s}.json" for t, lang, s in CASES}
    assert {p.name for p in GOLDEN.glob("*.json")} == expected
