"""Message catalogues: every message id trainbot shows has its Korean translation with the
same placeholders; a language is added by adding one .po; no Hangul in Python code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from babel.messages.catalog import PYTHON_FORMAT
from babel.messages.pofile import read_po

from bot.core.arrays import ArrayTask, build_array_root
from bot.core.incident import AttemptSummary, build_root
from bot.core.text import display_width
from bot.slack.render import languages, render_blocks, templates_root, translator
from bot.slack.translations import PYTHON_DIRS, extract

ROOT = Path(__file__).resolve().parents[3]
PLACEHOLDER = re.compile(r"%\((\w+)\)")
HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def format_spec(text: str) -> tuple[set[tuple[str, str]], list[str]]:
    """A %-format string's named placeholders with their conversions, and its positional
    conversions in order (`%%` is neither)."""
    named: set[tuple[str, str]] = set()
    positional: list[str] = []
    for name, _spec, conversion in PYTHON_FORMAT.findall(text):
        if conversion == "%" and not name:
            continue
        if name:
            named.add((name, conversion))
        else:
            positional.append(conversion)
    return named, positional


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


def test_every_marked_sentence_in_python_is_extracted(used) -> None:
    """Babel's Python extractor skips an `N_()` nested in another call inside an `N_()`'s
    arguments; such a sentence would never reach the catalogue (and stay English): each
    `N_("…")` / `_("…")` with a literal message id in bot's Python is among the ids found."""
    import ast

    ids = {m.id for m in used if m.id}
    lost = []
    for d in PYTHON_DIRS:
        for path in sorted((ROOT / "bot" / d).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id in ("N_", "_") and node.args
                        and isinstance(node.args[0], ast.Constant)
                        and node.args[0].value not in ids):
                    lost.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not lost, f"marked but not extracted (hoist the inner N_ out of the call): {lost}"


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
        assert isinstance(entry.string, str)  # a message without plural forms
        if placeholders(entry.string) != placeholders(m.id):
            wrong.append((m.id, entry.string))
    assert not wrong, f"{lang}: placeholders differ from the message id: {wrong}"
    stale = set(po) - {(m.context, m.id) for m in used if m.id}
    assert not stale, f"{lang}: translations of message ids no longer used: {stale}"


@pytest.mark.parametrize("lang", [lang for lang in languages() if lang != "en"])
def test_every_translation_passes_the_python_format_check(lang) -> None:
    """Over the whole catalogue, used or not, as `msgfmt -c` checks a python-format entry: a
    translation uses exactly its message id's named placeholders, each with the same
    conversions (`%(recipe)r` stays `r`), none added and none dropped (a figure worded
    differently in one language, a number with thousands commas, is passed formatted to every
    language), and as many positional ones of the same kinds in order. (Babel's own checker
    rejects an id that shows one value twice, `%(key)r` and `%(key)s`.)"""
    path = templates_root() / "locale" / lang / "LC_MESSAGES" / "messages.po"
    entries = po_entries(path)
    assert len(entries) > 200
    wrong = [(mid, string) for _ctx, mid, string in entries
             if mid and string and format_spec(string) != format_spec(mid)]
    assert not wrong, f"{lang}: placeholders differ from the message id: {wrong}"


@pytest.mark.parametrize("lang", [lang for lang in languages() if lang != "en"])
def test_msgfmt_checks_the_catalogue_without_fatal_errors(lang, tmp_path: Path) -> None:
    path = templates_root() / "locale" / lang / "LC_MESSAGES" / "messages.po"
    done = subprocess.run(["msgfmt", "-c", "-o", str(tmp_path / "messages.mo"), str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def po_entries(path: Path) -> list[tuple[str | None, str, str]]:
    """(context, message id, translation) of every entry of a .po as written (Babel's reader
    merges a repeated id silently, one translation winning)."""
    entries: list[tuple[str | None, str, str]] = []
    parts: dict[str, str] = {}
    key = None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        m = re.match(r'(msgctxt|msgid|msgstr)\s+"(.*)"$', line)
        if m:
            key = m.group(1)
            parts[key] = m.group(2)
        elif key and line.startswith('"'):
            parts[key] += line[1:-1]
        elif not line.strip() and "msgid" in parts:
            entries.append((parts.get("msgctxt"), parts["msgid"], parts.get("msgstr", "")))
            parts, key = {}, None
    return entries


@pytest.mark.parametrize("lang", [lang for lang in languages() if lang != "en"])
def test_each_message_id_is_defined_once(lang) -> None:
    """One entry per message id and context; an id under two contexts (a table header
    `pgettext("column", …)`, a chart's axis label `_()`) only when the translations differ,
    else it is one message defined twice."""
    entries = po_entries(templates_root() / "locale" / lang / "LC_MESSAGES" / "messages.po")
    assert len(entries) > 200
    keys = [(ctx, mid) for ctx, mid, _ in entries]
    repeated = sorted({k for k in keys if keys.count(k) > 1}, key=str)
    assert not repeated, f"{lang}: message ids defined more than once: {repeated}"
    by_id: dict[str, list[str]] = {}
    for _ctx, mid, string in entries:
        by_id.setdefault(mid, []).append(string)
    same = {mid: strings for mid, strings in by_id.items() if len(set(strings)) < len(strings)}
    assert not same, f"{lang}: one message under two contexts with one translation: {same}"


def _table(blocks: list, block_id: str) -> list[str]:
    text = next(b for b in blocks if b.get("block_id") == block_id)["text"]["text"]
    return text.strip("`\n").splitlines()


def _column(line: str, cell: str) -> int:
    """The display column where `cell` starts on `line` (Hangul two wide)."""
    return display_width(line[:line.index(cell)])


def test_thread_root_tables_have_korean_headers_aligned_by_display_width() -> None:
    """The attempts table of a run's root and the tasks table of an array's root: headers in
    Korean, each value under its header although Hangul takes two columns."""
    root = build_root(recipe="mix", target_iter=8000, attempts=[
        AttemptSummary("88154", "FAILED", 3470, 1000, cause="nccl_timeout"),
        AttemptSummary("88160", "RUNNING", 5200, 3470)])
    header, *rows = _table(render_blocks("root", "ko", root)[0], "attempts")
    assert header.split() == ["작업", "진행", "결과", "원인"]
    for row, state in zip(rows, ("FAILED", "RUNNING"), strict=True):
        assert _column(row, state) == _column(header, "결과"), (header, row)
    assert _column(rows[0], "nccl_timeout") == _column(header, "원인")
    array = build_array_root(array_job_id=100, name="sweep", waiting=False, tasks=[
        ArrayTask("100_0", "100", "FAILED", 120, "host_oom"),
        ArrayTask("140_0", "140", "RUNNING", 300), ArrayTask("100_1", "101", "COMPLETED", 90)])
    header, *rows = _table(render_blocks("array_root", "ko", array)[0], "tasks")
    assert header.split() == ["task", "상태", "iteration", "원인"]
    for row, state in zip(rows, ("RUNNING", "COMPLETED"), strict=True):
        assert _column(row, state) == _column(header, "상태"), (header, row)
    assert _column(rows[0], "300") == _column(header, "iteration"), (header, rows[0])


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
