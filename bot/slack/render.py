"""Templates → Block Kit: `render_blocks(name, lang, view)` returns (blocks, fallback text).

The ONE renderer of every message trainbot writes (threads, prompts, replies, `report`, the
console). One template set, templates/<name>.json.j2 (shipped inside the wheel through the
bot/templates symlink), words as English message ids translated by gettext catalogues
(bot.slack.translations: templates/locale/<lang>/LC_MESSAGES/messages.po); a site folder
`override_dir/<name>.json.j2` wins per file, and its `locale/` may reword or add a language.
Every interpolated value goes through `tojson`, undefined names fail (`StrictUndefined`), the
output is parsed with `json.loads`, redacted (bot.core.redact: the config's secrets and token
shapes), then trimmed to Slack's limits with a visible note of what was cut: a long evidence
block never gets the message rejected. Redacting first is what keeps it within them: a marker
is longer than a short secret it masks, so a text redacted after its cut could grow past them.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from bot.core.policy import checkpoint_unknown_of, resume_start
from bot.core.redact import MARKER, Redactor
from bot.core.text import (
    Mrkdwn,
    align_table,
    duration_phrase,
    mrkdwn_escape,
    mrkdwn_sentence,
    render_text,
    shorten,
)
from bot.services.ports import RenderError
from bot.slack.translations import PoTranslations, languages_in, translations_for
from bot.slack.views import template_context

# Slack limits (Block Kit reference: https://api.slack.com/reference/block-kit/blocks).
MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
# A button's confirm dialog: its title, text and its two buttons (plain_text each).
MAX_CONFIRM = {"title": 100, "text": 300, "confirm": 30, "deny": 30}
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_FALLBACK_TEXT = 3000  # notifications show far less; Slack's own cap is 40,000
# A blocks payload around 13k characters has been rejected (`msg_blocks_too_long`): keep a
# margin under it.
MAX_BLOCKS_JSON = 12000


def _trim_notes(t: PoTranslations) -> dict[str, str]:
    """What the trim note says, in `t`'s language (`%(n)s`: a count with thousands commas)."""
    _ = t.gettext
    return {
        "prefix": _("✂️ Trimmed to fit Slack:"),
        "lines": _("%(n)s evidence lines cut"),
        "chars": _("%(n)s characters cut"),
        "blocks": _("%(n)s blocks dropped"),
        "fields": _("%(n)s fields dropped"),
        "buttons": _("%(n)s buttons dropped"),
        "suffix": _("Full text: `trainbot report LOG`."),
        "cut_marker": _("… %(n)s lines cut …"),
    }


def templates_root() -> Path:
    """The packaged templates folder (bot/templates → top-level templates/)."""
    return Path(str(files("bot") / "templates"))


def _locale_dirs(override_dir: str | None) -> tuple[Path, ...]:
    shipped = templates_root() / "locale"
    return (shipped, Path(override_dir) / "locale") if override_dir else (shipped,)


def languages(override_dir: str | Path | None = None) -> tuple[str, ...]:
    """The message languages: English and every language with a messages.po (shipped, or in
    the site's `override_dir/locale`)."""
    return languages_in(*_locale_dirs(str(override_dir) if override_dir else None))


def translator(lang: str, override_dir: str | Path | None = None) -> PoTranslations:
    """The gettext translations of `lang` (the site's entries over the shipped ones)."""
    return translations_for(lang, _locale_dirs(str(override_dir) if override_dir else None))


# --- filters -------------------------------------------------------------------------------


def _defined(value: Any) -> None:
    """Filters format numbers: make an undefined input fail as undefined, not as a TypeError."""
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()


def format_duration(seconds: float | None, t: PoTranslations | None = None, *,
                    up: bool = False, down: bool = False) -> str:
    """THE duration wording of every text trainbot writes (the templates' `duration` filter,
    the metric cells, the CLI): bot.core.text.duration_phrase in `t`'s language (English
    without one); `up` rounds up (the templates' `wait` filter: "trainbot looks again in
    about …"), `down` rounds down; "?" for no duration."""
    if up and down:
        raise ValueError("format_duration: up or down, not both")
    _defined(seconds)
    if seconds is None:
        return "?"
    return duration_phrase(seconds, up=up, down=down).format(
        t.gettext if t is not None else None)


def _num(value: float | int | None, digits: int = 0) -> str:
    _defined(value)
    if value is None:
        return "?"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:,.{digits}f}"


def code_block(lines: Any) -> Mrkdwn:
    """Evidence lines `(line_no, text)` as a mrkdwn code block, numbered and escaped (once:
    give it the raw text, e.g. a table of `msg(raw=True)` cells)."""
    rows = []
    for item in lines:
        line_no, text = item if isinstance(item, list | tuple) else (None, item)
        text = mrkdwn_escape(text).replace("```", "ˋˋˋ")
        rows.append(f"{line_no:>6} │ {text}" if line_no is not None else text)
    return Mrkdwn("```\n" + ("\n".join(rows) if rows else " ") + "\n```")


def _utc_hm(epoch: float | None) -> str:
    _defined(epoch)
    if epoch is None:
        return "?"
    if epoch < 1e9:  # seconds since the log's first midnight: a clock time without a date
        h, rem = divmod(int(epoch) % 86400, 3600)
        return f"{h:02d}:{rem // 60:02d}"
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%H:%M UTC")


@lru_cache(maxsize=32)
def _environment(lang: str, override_dir: str | None) -> jinja2.Environment:
    search = [override_dir] if override_dir else []
    search.append(str(templates_root()))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # JSON, not HTML: values are escaped by `tojson`
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        extensions=["jinja2.ext.i18n"],
    )
    t = translator(lang, override_dir)
    env.install_gettext_translations(t, newstyle=True)  # type: ignore[attr-defined]
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": False}
    env.globals["lang"] = lang

    env.globals["tr"] = lambda text, translations=None, field=None: catalogue_text(
        text, lang, translations, field, override_dir)
    env.globals["resume_start"] = resume_start  # where a resume starts: one phrase (_common.j2)
    # why a decision's checkpoint is unknown, from its fact `checkpoint_lookup` (event.json.j2)
    env.globals["checkpoint_unknown"] = checkpoint_unknown_of
    env.filters["duration"] = lambda s: format_duration(s, t)
    env.filters["wait"] = lambda s: format_duration(s, t, up=True)  # never before the real one
    env.filters["num"] = _num
    env.filters["esc"] = mrkdwn_escape
    env.filters["short"] = shorten  # a value in plain_text (a header, a button, a dialog)
    env.filters["code_block"] = code_block
    env.filters["utc_hm"] = _utc_hm
    # a sentence made in pure code (bot.core.text.Text), in this language, escaped for
    # mrkdwn (its values through `esc`); raw=True: unescaped, for a table in a code_block
    env.filters["msg"] = lambda value, raw=False: render_text(value, t.gettext) if raw else \
        Mrkdwn(render_text(value, lambda m: mrkdwn_sentence(t.gettext(m)), mrkdwn_escape))
    env.filters["table"] = lambda rows, align="", sep="  ", min_widths=(): align_table(
        rows, align, sep, min_widths)
    return env


def catalogue_text(text: str, lang: str,
                   translations: Mapping[str, Mapping[str, str]] | None = None,
                   field: str | None = None, override_dir: str | Path | None = None) -> str:
    """A failure-catalogue text (a class's title, explanation or hint) in `lang`: the site
    catalogue's own `<field>_<lang>` translation (`translations`), else the message
    catalogue's; the English text when neither has it. Never %-formatted (it is data)."""
    own = (translations or {}).get(lang, {}).get(field) if field else None
    return own or translator(lang, override_dir).gettext(text)


def render_template(name: str, lang: str, view: Any, *, override_dir: str | Path | None = None
                    ) -> dict[str, Any]:
    """The template's raw output, parsed: {"text": …, "blocks": […]} (untrimmed)."""
    known = languages(override_dir)
    if lang not in known:
        raise RenderError(f"language {lang!r} is not supported: use one of {', '.join(known)}")
    context = template_context(view)
    env = _environment(lang, str(override_dir) if override_dir else None)
    filename = f"{name}.json.j2"
    try:
        template = env.get_template(filename)
        raw = template.render(**context)
    except jinja2.TemplateNotFound:
        raise RenderError(f"no template {filename} in {templates_root()}"
                          + (f" or {override_dir}" if override_dir else "")) from None
    except jinja2.UndefinedError as exc:
        raise RenderError(f"template {filename} ({lang}): {exc.message}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise RenderError(f"template {exc.filename or filename} line {exc.lineno}: "
                          f"{exc.message}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise RenderError(f"template {filename} ({lang}) did not produce JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("blocks"), list) \
            or not isinstance(data.get("text"), str):
        raise RenderError(f"template {filename} ({lang}) must produce "
                          '{"text": "...", "blocks": [...]}')
    return data


def explain(diagnosis: Any, lang: str = "en", *, override_dir: str | Path | None = None
            ) -> str:
    """A diagnosis' explanation as one sentence in `lang` (its figures, then the hint)."""
    return str(_render_explanation(diagnosis, lang, override_dir)["text"])


def explain_title(diagnosis: Any, lang: str = "en", *,
                  override_dir: str | Path | None = None) -> str:
    """A diagnosis' title in `lang`, as an incident shows it: its cause's own where the detail
    names one the catalogue's title does not fit (an open-file limit, a CUDA tool), else the
    catalogue's. The diagnosis has a class of the catalogue (a non-empty `title`)."""
    return str(_render_explanation(diagnosis, lang, override_dir)["title"])


def explain_decided(diagnosis: Any, lang: str = "en", *,
                    override_dir: str | Path | None = None) -> str:
    """What decided a diagnosis, in `lang`, as an incident's confidence line says it (a
    decisive line, how the log ends, Slurm accounting, a measured trend, the progress at the
    run's target); empty when the log's progress short of a target did (a running job)."""
    return str(_render_explanation(diagnosis, lang, override_dir)["decided"])


def _render_explanation(diagnosis: Any, lang: str, override_dir: str | Path | None
                        ) -> dict[str, Any]:
    view = {"title": diagnosis.title, "detail": diagnosis.detail, "hint": diagnosis.hint,
            "translations": diagnosis.translations, "site_title": diagnosis.site_title,
            "site_hint": diagnosis.site_hint, "decided_by": diagnosis.decided_by,
            "last_iter": diagnosis.metrics.last_iter, "target_iter": diagnosis.metrics.target_iter}
    return render_template("explanation", lang, view, override_dir=override_dir)


def render_blocks(
    template_name: str,
    lang: str,
    view: Any,
    *,
    override_dir: str | Path | None = None,
    max_blocks_json: int = MAX_BLOCKS_JSON,
    redactor: Redactor | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """Render, parse, redact and trim a message: returns (blocks, fallback_text). Every text
    is redacted by `redactor` (default: token shapes) before it is trimmed, so the blocks
    returned are within Slack's limits as they are sent (redacting them again changes
    nothing: bot.slack.poster does, as its last guard)."""
    redactor = redactor or Redactor()
    data = render_template(template_name, lang, view, override_dir=override_dir)
    blocks = trim_blocks(redactor.redact_data(data["blocks"]), lang=lang,
                         max_json=max_blocks_json, override_dir=override_dir)
    text = redactor.redact(data["text"])
    if len(text) > MAX_FALLBACK_TEXT:
        text = text[: MAX_FALLBACK_TEXT - 1] + "…"
    return blocks, text


class TemplateRenderer:
    """The renderer port (bot.services.ports.Renderer): the packaged templates, a site's
    folder first; every message redacted by `redactor` (the bot's: `Config.redactor()`;
    default: token shapes) before it is trimmed."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor()

    def render_blocks(self, name: str, lang: str, view: Any, *, override_dir: str | None = None,
                      max_json: int | None = None) -> tuple[list[dict[str, Any]], str]:
        return render_blocks(name, lang, view, override_dir=override_dir,
                             max_blocks_json=max_json or MAX_BLOCKS_JSON,
                             redactor=self.redactor)


# --- trimming ------------------------------------------------------------------------------


class _Cuts:
    def __init__(self) -> None:
        self.lines = self.chars = self.blocks = self.fields = self.buttons = 0

    def any(self) -> bool:
        return bool(self.lines or self.chars or self.blocks or self.fields or self.buttons)


def _cut_text(text: str, limit: int, cuts: _Cuts, marker: str) -> str:
    if len(text) <= limit:
        return text
    fence = text.find("```")
    if fence >= 0 and text.endswith("```") and len(text) - fence > 6 and fence < limit // 2:
        # "*Evidence*\n```…```": keep the heading, cut lines inside the code block.
        return text[:fence] + _cut_code(text[fence:], limit - fence, cuts, marker)
    end = _outside_marker(text, limit - 1)
    cuts.chars += len(text) - end
    return text[:end] + "…"


def _outside_marker(text: str, end: int) -> int:
    """`end`, or the start of a redaction MARKER it would cut through: a part of a marker
    could read as a secret again (`password=[reda…`), and redacting it would grow the text."""
    start = text.rfind(MARKER[0], max(0, end - len(MARKER) + 1), end)
    return start if start >= 0 and text.startswith(MARKER, start) else end


def _cut_code(text: str, limit: int, cuts: _Cuts, marker: str) -> str:
    """Keep the first and (more of) the last lines of a code block: the failure is at the end."""
    body = text[3:-3].strip("\n").split("\n")
    n = len(body)
    head: list[str] = []
    tail: list[str] = []
    budget = limit - 3 - 3 - 2 - len(marker % {"n": f"{n:,}"}) - 2
    i, j = 0, n - 1
    used = 0
    turn = 0
    while i <= j:
        take_tail = turn % 3 != 0  # two tail lines for every head line
        line = body[j] if take_tail else body[i]
        line = line if len(line) <= 300 else line[:_outside_marker(line, 299)] + "…"
        if used + len(line) + 1 > budget:
            break
        used += len(line) + 1
        if take_tail:
            tail.insert(0, line)
            j -= 1
        else:
            head.append(line)
            i += 1
        turn += 1
    dropped = n - len(head) - len(tail)
    if dropped <= 0 and used <= budget:
        return text
    cuts.lines += dropped
    middle = [marker % {"n": f"{dropped:,}"}] if dropped > 0 else []
    return "```\n" + "\n".join(head + middle + tail) + "\n```"


def _trim_block(block: dict[str, Any], cuts: _Cuts, marker: str, section_limit: int) -> None:
    kind = block.get("type")
    if kind == "header":
        t = block.get("text", {})
        if isinstance(t.get("text"), str):
            t["text"] = _cut_text(t["text"], MAX_HEADER_TEXT, cuts, marker)
    elif kind == "section":
        t = block.get("text")
        if isinstance(t, dict) and isinstance(t.get("text"), str):
            t["text"] = _cut_text(t["text"], section_limit, cuts, marker)
        fields = block.get("fields")
        if isinstance(fields, list):
            if len(fields) > MAX_FIELDS:
                cuts.fields += len(fields) - MAX_FIELDS
                del fields[MAX_FIELDS:]
            for f in fields:
                if isinstance(f.get("text"), str):
                    f["text"] = _cut_text(f["text"], min(MAX_FIELD_TEXT, section_limit), cuts,
                                          marker)
    elif kind == "context":
        els = block.get("elements", [])
        if len(els) > MAX_CONTEXT_ELEMENTS:
            cuts.fields += len(els) - MAX_CONTEXT_ELEMENTS
            del els[MAX_CONTEXT_ELEMENTS:]
        for el in els:
            if isinstance(el.get("text"), str):
                el["text"] = _cut_text(el["text"], section_limit, cuts, marker)
    elif kind == "actions":
        els = block.get("elements", [])
        keep = [el for el in els if len(str(el.get("value", ""))) <= MAX_BUTTON_VALUE]
        cuts.buttons += len(els) - len(keep)
        if len(keep) > MAX_ACTIONS_ELEMENTS:
            cuts.buttons += len(keep) - MAX_ACTIONS_ELEMENTS
            keep = keep[:MAX_ACTIONS_ELEMENTS]
        for el in keep:
            t = el.get("text")
            if isinstance(t, dict) and isinstance(t.get("text"), str):
                t["text"] = _cut_text(t["text"], MAX_BUTTON_TEXT, cuts, marker)
            dialog = el.get("confirm")
            for key, limit in MAX_CONFIRM.items() if isinstance(dialog, dict) else ():
                t = dialog.get(key)
                if isinstance(t, dict) and isinstance(t.get("text"), str):
                    t["text"] = _cut_text(t["text"], limit, cuts, marker)
        block["elements"] = keep


def _size(blocks: list[dict[str, Any]]) -> int:
    return len(json.dumps(blocks, ensure_ascii=False))


def _note_block(cuts: _Cuts, notes: Mapping[str, str]) -> dict[str, Any]:
    parts = [notes[k] % {"n": f"{getattr(cuts, k):,}"}
             for k in ("lines", "chars", "blocks", "fields", "buttons") if getattr(cuts, k)]
    text = f"{notes['prefix']} {', '.join(parts)}. {notes['suffix']}"
    return {"type": "context", "block_id": "trainbot_trimmed",
            "elements": [{"type": "mrkdwn", "text": text}]}


def _fit(original: list[dict[str, Any]], marker: str, section_limit: int, max_json: int
         ) -> tuple[list[dict[str, Any]], _Cuts]:
    blocks = [b for b in copy.deepcopy(original) if isinstance(b, dict)]
    cuts = _Cuts()
    for b in blocks:
        _trim_block(b, cuts, marker, section_limit)
    blocks = [b for b in blocks if not (b.get("type") == "actions" and not b.get("elements"))]

    def droppable() -> list[int]:
        body = [i for i, b in enumerate(blocks)
                if i > 0 and b.get("type") not in ("actions", "header")]
        # Only when nothing else is left: extra headers/actions blocks, never the first block.
        return body or list(range(1, len(blocks)))

    while len(blocks) > MAX_BLOCKS - 1:  # one slot for the note
        candidates = droppable()
        if not candidates:
            break
        # Drop from the end of the body, keeping its last block (often the summary line).
        del blocks[candidates[-2] if len(candidates) > 1 else candidates[-1]]
        cuts.blocks += 1
    if section_limit <= _SECTION_STEPS[-1]:
        while _size(blocks) + _NOTE_ROOM > max_json:
            candidates = droppable()
            if not candidates:
                break
            del blocks[candidates[-1]]
            cuts.blocks += 1
    return blocks, cuts


_SECTION_STEPS = (MAX_SECTION_TEXT, 2400, 1800, 1200, 800, 500, 300)
_NOTE_ROOM = 400


def trim_blocks(blocks: list[dict[str, Any]], *, lang: str = "en",
                max_json: int = MAX_BLOCKS_JSON, override_dir: str | Path | None = None
                ) -> list[dict[str, Any]]:
    """Fit `blocks` into Slack's limits; adds a context note saying what was cut.

    Long section texts (evidence code blocks keep their first and last lines) are cut to
    3000 characters, then shorter until the payload fits `max_json`; as a last resort body
    blocks are dropped. Buttons (actions blocks), the header and the first block stay.
    """
    notes = _trim_notes(translator(lang, override_dir))
    for limit in _SECTION_STEPS:
        fitted, cuts = _fit(blocks, notes["cut_marker"], limit, max_json)
        if _size(fitted) + _NOTE_ROOM <= max_json:
            break
    if cuts.any():
        note = _note_block(cuts, notes)
        actions_at = next((i for i, b in enumerate(fitted) if b.get("type") == "actions"), None)
        if actions_at is None:
            fitted.append(note)
        else:
            fitted.insert(actions_at, note)
    return fitted


# --- text rendering (message.txt, console sink) ---------------------------------------------


_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")


def _plain(text: str) -> str:
    """mrkdwn → plain text: bold markers dropped outside code blocks, entities decoded."""
    parts = text.split("```")
    for i in range(0, len(parts), 2):  # even parts are outside code fences
        parts[i] = _BOLD.sub(r"\1", parts[i])
    text = "```".join(parts)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def blocks_to_text(blocks: list[dict[str, Any]], fallback: str = "") -> str:
    """A readable plain-text rendering of Block Kit blocks (for terminals and message.txt)."""
    out: list[str] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "header":
            title = b["text"]["text"]
            out += [title, "=" * min(len(title) + 2, 80)]
        elif kind == "section":
            if isinstance(b.get("text"), dict):
                out.append(_plain(b["text"]["text"]))
            if b.get("fields"):
                for f in b["fields"]:
                    label, _, value = _plain(f["text"]).partition("\n")
                    out.append(f"  {label.strip('*')}: {value}")
            out.append("")
        elif kind == "context":
            out.append("  " + " ".join(_plain(e.get("text", "")) for e in b.get("elements", [])))
            out.append("")
        elif kind == "actions":
            out.append("  ".join(f"[ {e['text']['text']} ]" for e in b.get("elements", [])
                                 if isinstance(e.get("text"), dict)))
            out.append("")
        elif kind == "divider":
            out.append("-" * 60)
    text = "\n".join(out).rstrip() + "\n"
    return text if blocks else fallback + "\n"
