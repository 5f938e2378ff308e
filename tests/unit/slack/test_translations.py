"""Message catalogues: every message id trainbot shows has its Korean translation with the
same placeholders; a language is added by adding one .po; no Hangul in Python code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from bot.core.incident import AttemptSummary, build_root
from bot.slack.render import languages, render_blocks, templates_root, translator
from bot.slack.translations import PYTHON_DIRS, extract

ROOT = Path(__file__).resolve().parents[3]
PLACEHOLDER = re.compile(r"%\((\w+)\)")
HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


@pytest.fixture(scope="module")
def used():
    """Every message id in use: the templates, `_()` / `N_()` in bot, the failure catalogue."""
    return extract(templates_root(), tuple(ROOT / "bot" / d for d in PYTHON_DIRS))


def test_message_ids_are_found_in_templates_python_and_the_failure_catalogue(used) -> None:
    ids = {m.id for m in used if m.id}
    assert "*Evidence* (log lines)" in ids  # a template
    assert "%(n)s evidence lines cut" in ids  # bot/slack/render.py
    assert "NCCL collective timed out (watchdog)" in ids  # bot/core/catalogue.yaml
    assert len(ids) > 200


@pytest.mark.parametrize("lang", [lang for lang in languages() if lang != "en"])
def test_every_message_id_has_a_translation_with_the_same_placeholders(used, lang) -> None:
    path = templates_root() / "locale" / lang / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as f:
        po = {(m.context, m.id): m for m in read_po(f) if m.id}
    missing = [(m.context, m.id) for m in used if m.id and not (
        (m.context, m.id) in po and po[(m.context, m.id)].string
        and not po[(m.context, m.id)].fuzzy)]
    assert not missing, f"{lang}: untranslated message ids: {missing}"
    wrong = []
    for m in used:
        if not m.id:
            continue
        entry = po[(m.context, m.id)]
        # A translation may word a figure differently (a number with thousands commas where
        # English shows it bare): its translator comment `placeholders: a, b` then names what
        # it uses instead, so every difference is deliberate and written down.
        declared = next((c.split(":", 1)[1] for c in entry.user_comments
                         if c.startswith("placeholders:")), None)
        want = ({p.strip() for p in declared.split(",")} if declared is not None
                else placeholders(m.id))
        if placeholders(entry.string) != want:
            wrong.append((m.id, entry.string))
    assert not wrong, f"{lang}: placeholders differ from the message id: {wrong}"
    stale = set(po) - {(m.context, m.id) for m in used if m.id}
    assert not stale, f"{lang}: translations of message ids no longer used: {stale}"


def test_a_language_is_one_po_file_in_the_locale_folder(tmp_path: Path) -> None:
    """A site folder that brings locale/xx/LC_MESSAGES/messages.po adds language xx (and its
    entries reword ours); nothing else changes."""
    po = tmp_path / "locale" / "xx" / "LC_MESSAGES" / "messages.po"
    po.parent.mkdir(parents=True)
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
                  'msgid "%(recipe)s · job %(job)s · %(state)s"\n'
                  'msgstr "%(recipe)s · JOB %(job)s · %(state)s"\n\n'
                  'msgid "%(minutes)d min"\nmsgstr "%(minutes)d MIN"\n', encoding="utf-8")
    assert languages() == ("en", "ko")
    assert languages(tmp_path) == ("en", "ko", "xx")
    root = build_root(recipe="mix", target_iter=8000,
                      attempts=[AttemptSummary("88154", "RUNNING", 3470, 1000)])
    blocks, _ = render_blocks("root", "xx", root, override_dir=tmp_path)
    assert blocks[0]["text"]["text"] == "🟢 mix · JOB 88154 · RUNNING"
    # untranslated ids show the English text
    assert "one thread per run" in blocks[-1]["elements"][0]["text"]
    assert translator("xx", tmp_path).gettext("%(minutes)d min") == "%(minutes)d MIN"


def test_no_python_file_holds_hangul() -> None:
    """Every sentence a person reads is a message id: Korean lives in the .po only."""
    found = [f"{p.relative_to(ROOT)}:{n}" for d in ("bot", "handlers")
             for p in sorted((ROOT / d).rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if HANGUL.search(line)]
    assert not found, found
