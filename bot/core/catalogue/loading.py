"""Reading catalogue YAML files: validation naming the file and key at fault, and the merge of
a site's files over the packaged one, compiled into classes and signatures."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, cast

import yaml

from bot.core.catalogue.dialect import check_dialect, required_runs
from bot.core.catalogue.model import CatalogueError, FailureClass
from bot.core.catalogue.scanner import Signature
from bot.core.catalogue.triggers import assign_triggers
from bot.core.models import ASK_CLASSES, STOP_CLASSES, Action
from bot.core.yaml_input import MAX_FILE_BYTES, decode_text, describe_yaml_error, load_yaml

#: The texts a site file may translate itself, as `<field>_<lang>` (`hint_ko`, `title_fr`).
_TRANSLATED_FIELDS = ("title", "explanation", "hint")
_TRANSLATION_KEY = re.compile(r"^(title|explanation|hint)_([a-z]{2,3}(?:_[A-Z]{2})?)$")
_CLASS_FIELDS = {
    "title": str,
    "explanation": str,
    "action": str,
    "retryable": bool,
    "charges_budget": bool,
    "priority": int,
    "hint": str,
    "patterns": dict,
    "accounting": dict,
}
_REQUIRED_FIELDS = ("title", "explanation", "action", "retryable", "charges_budget", "priority",
                    "hint")
_PATTERN_KINDS = ("primary", "hints")
_ACCOUNTING_KEYS = {"states": str, "exit_codes": int, "signals": int}
_ID_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass
class _Raw:
    """A class as merged from YAML files, before compilation."""

    fields: dict[str, Any] = field(default_factory=dict)
    field_source: dict[str, str] = field(default_factory=dict)  # file that set each field
    primary: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    signals: list[int] = field(default_factory=list)
    source: str = ""


# --------------------------------------------------------------------------- the whole catalogue

#: The name of the packaged catalogue in error messages.
PACKAGED_NAME = "bot/core/catalogue/catalogue.yaml"


def read_catalogue_texts(extra_paths: Sequence[str | Path] = ()) -> list[tuple[str, str]]:
    """(name, YAML text) of the packaged catalogue, then of each site file in order."""
    text = resources.files("bot.core.catalogue").joinpath("catalogue.yaml").read_text(
        encoding="utf-8"
    )
    texts = [(PACKAGED_NAME, text)]
    for path in extra_paths:
        try:
            with Path(path).open("rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise CatalogueError(f"{path}: cannot read site catalogue: {exc}") from exc
        try:
            texts.append((str(path), decode_text(data)))
        except ValueError as exc:
            raise CatalogueError(f"{path}: not a site catalogue: {exc}") from None
    return texts


def compile_catalogue(
    texts: Sequence[tuple[str, str]],
) -> tuple[dict[str, FailureClass], list[Signature]]:
    """Merge YAML documents given as (name, text), the first being the base catalogue: the
    failure classes and the compiled signatures of their patterns."""
    raws: dict[str, _Raw] = {}
    base = texts[0][0] if texts else ""
    for name, text in texts:
        _merge_file(raws, name, text)
    classes: dict[str, FailureClass] = {}
    pending: list[tuple[str, bool, str]] = []
    for cid, raw in raws.items():
        missing = [f for f in _REQUIRED_FIELDS if f not in raw.fields]
        if missing:
            raise CatalogueError(
                f"{raw.source}: classes.{cid}: new class needs {', '.join(missing)}"
            )
        f = raw.fields
        action = Action(f["action"])
        if cid in STOP_CLASSES and (f["retryable"] or action is not Action.STOP):
            key = "retryable" if f["retryable"] else "action"
            raise CatalogueError(
                f"{raw.field_source[key]}: classes.{cid}.{key}: {cid} is a STOP class; it "
                "must keep action: stop and retryable: false"
            )
        if cid in ASK_CLASSES and (f["retryable"] or action is Action.RESUBMIT):
            key = "retryable" if f["retryable"] else "action"
            raise CatalogueError(
                f"{raw.field_source[key]}: classes.{cid}.{key}: {cid} needs a person to act "
                "before a resubmit can succeed; it must keep retryable: false and action: ask "
                "(or stop)"
            )
        if action is Action.STOP and f["retryable"]:
            raise CatalogueError(
                f"{raw.field_source['retryable']}: classes.{cid}.retryable: an action: stop "
                "class cannot be retryable"
            )
        classes[cid] = FailureClass(
            id=cid,
            title=f["title"].strip(),
            explanation=" ".join(f["explanation"].split()),
            action=action,
            retryable=f["retryable"],
            charges_budget=f["charges_budget"],
            priority=f["priority"],
            hint=" ".join(f["hint"].split()),
            primary=tuple(re.compile(p) for p in dict.fromkeys(raw.primary)),
            hints=tuple(re.compile(p) for p in dict.fromkeys(raw.hints)),
            states=tuple(dict.fromkeys(raw.states)),
            exit_codes=tuple(dict.fromkeys(raw.exit_codes)),
            signals=tuple(dict.fromkeys(raw.signals)),
            translations=_translations(f),
            site_title=raw.field_source.get("title", base) != base,
            site_hint=raw.field_source.get("hint", base) != base,
        )
        for kind, pats in (("primary", raw.primary), ("hints", raw.hints)):
            for p in dict.fromkeys(pats):
                pending.append((cid, kind == "primary", p))
    assigned = assign_triggers([p for _, _, p in pending])
    sigs = [
        Signature(cid, prim, re.compile(p), tuple(trigs), uncovered)
        for (cid, prim, p), (trigs, uncovered) in zip(pending, assigned, strict=True)
    ]
    return classes, sigs


# --------------------------------------------------------------------------- file merging


def _merge_file(raws: dict[str, _Raw], name: str, text: str) -> None:
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{name}: not valid YAML {describe_yaml_error(exc)}") from None
    if not isinstance(doc, dict):
        raise CatalogueError(f"{name}: expected a mapping with 'classes:' at the top")
    unknown = set(doc) - {"schema", "classes"}
    if unknown:
        raise CatalogueError(f"{name}: unknown top-level key(s) {sorted(unknown)}; "
                             "expected schema, classes")
    if doc.get("schema", 1) != 1:
        raise CatalogueError(f"{name}: schema: {doc.get('schema')!r} is not supported (use 1)")
    classes = doc.get("classes") or {}
    if not isinstance(classes, dict):
        raise CatalogueError(f"{name}: classes: expected a mapping of class id -> fields")
    for cid, body in classes.items():
        where = f"{name}: classes.{cid}"
        if not isinstance(cid, str) or not _ID_RE.match(cid):
            raise CatalogueError(f"{where}: class ids are lowercase words with underscores")
        if not isinstance(body, dict):
            raise CatalogueError(f"{where}: expected a mapping of fields")
        raw = raws.get(cid)
        if raw is None:
            raw = raws[cid] = _Raw(source=name)
        for key, value in body.items():
            kwhere = f"{where}.{key}"
            if key not in _CLASS_FIELDS and not _TRANSLATION_KEY.match(key):
                raise CatalogueError(f"{kwhere}: unknown field; known: "
                                     f"{', '.join(_CLASS_FIELDS)}, and <title|explanation|"
                                     "hint>_<lang> (a translation, e.g. hint_ko)")
            want = _CLASS_FIELDS.get(key, str)
            if value is None and want is dict:
                continue
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise CatalogueError(f"{kwhere}: expected {want.__name__}, got {value!r}")
            if key == "action":
                try:
                    Action(str(value))
                except ValueError:
                    raise CatalogueError(f"{kwhere}: unknown action {value!r}; use one of "
                                         f"{', '.join(a.value for a in Action)}") from None
            if key == "patterns":
                _merge_patterns(raw, kwhere, cast(dict[str, Any], value))  # checked: a dict
            elif key == "accounting":
                _merge_accounting(raw, kwhere, cast(dict[str, Any], value))
            else:
                raw.fields[key] = value
                raw.field_source[key] = name
        for key in _TRANSLATED_FIELDS:  # a new English text outdates the translations before it
            if key in body:
                for old in [k for k in raw.fields if k.startswith(f"{key}_") and k not in body]:
                    raw.fields.pop(old)


def _translations(fields: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """lang -> {"title"/"explanation"/"hint": text} from the merged `<field>_<lang>` fields."""
    out: dict[str, dict[str, str]] = {}
    for key, text in fields.items():
        m = _TRANSLATION_KEY.match(key)
        if m:
            out.setdefault(m.group(2), {})[m.group(1)] = " ".join(text.split())
    return out


def _merge_patterns(raw: _Raw, where: str, value: dict[str, Any]) -> None:
    for kind, pats in value.items():
        if kind not in _PATTERN_KINDS:
            raise CatalogueError(f"{where}.{kind}: unknown pattern kind; use primary or hints")
        if pats is None:
            continue
        if not isinstance(pats, list):
            raise CatalogueError(f"{where}.{kind}: expected a list of regexes")
        for idx, p in enumerate(pats):
            pwhere = f"{where}.{kind}[{idx}]"
            if not isinstance(p, str) or not p:
                raise CatalogueError(f"{pwhere}: expected a non-empty regex string, got {p!r}")
            try:
                re.compile(p)
            except re.error as exc:
                raise CatalogueError(f"{pwhere}: invalid regex {p!r}: {exc}") from None
            why = check_dialect(p)
            if why:
                raise CatalogueError(f"{pwhere}: regex {p!r}: {why}")
            if any(not runs for runs in required_runs(p)):
                raise CatalogueError(
                    f"{pwhere}: regex {p!r} needs literal text of 3+ characters in a row in "
                    "every alternative (the fast scanner searches for it)"
                )
            (raw.primary if kind == "primary" else raw.hints).append(p)


def _merge_accounting(raw: _Raw, where: str, value: dict[str, Any]) -> None:
    for key, items in value.items():
        if key not in _ACCOUNTING_KEYS:
            raise CatalogueError(f"{where}.{key}: unknown key; use states, exit_codes, signals")
        want = _ACCOUNTING_KEYS[key]
        if not isinstance(items, list) or not all(
            isinstance(x, want) and not isinstance(x, bool) for x in items
        ):
            raise CatalogueError(f"{where}.{key}: expected a list of {want.__name__}")
        if key == "states":
            raw.states.extend(s.upper() for s in items)
        elif key == "exit_codes":
            raw.exit_codes.extend(items)
        else:
            raw.signals.extend(items)
