"""Message catalogues: English source text, one `.po` per other language, read at start."""

from __future__ import annotations

import gettext
from functools import lru_cache
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po

SOURCE_LANG = "en"
DOMAIN = "messages"
# The packages whose Python holds message ids: `_()` in bot/slack and bot/charts, `N_()`
# (bot.core.text) in bot/core, bot/services, bot/probes (the preflight findings) and
# bot/cluster (the errors a person reads).
PYTHON_DIRS = ("slack", "charts", "core", "services", "probes", "cluster", "config")


def _catalogue_path(locale_dir: Path, lang: str) -> Path:
    return locale_dir / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def languages_in(*locale_dirs: Path | None) -> tuple[str, ...]:
    """English plus every language that has a `.po` in one of `locale_dirs`, sorted."""
    found = {SOURCE_LANG}
    for locale_dir in locale_dirs:
        if locale_dir is not None and locale_dir.is_dir():
            found.update(p.name for p in locale_dir.iterdir()
                         if _catalogue_path(locale_dir, p.name).is_file())
    return (SOURCE_LANG, *sorted(found - {SOURCE_LANG}))


class PoTranslations(gettext.NullTranslations):
    """gettext translations from `.po` files (no compiled `.mo`); later files win per id."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.messages: dict[tuple[str | None, str], str] = {}  # (context, id) -> text
        for path in paths:
            with path.open("rb") as f:
                catalog = read_po(f, domain=DOMAIN)
            for message in catalog:
                if message.id and isinstance(message.id, str) and isinstance(
                        message.string, str) and message.string and not message.fuzzy:
                    self.messages[(message.context, message.id)] = message.string

    def gettext(self, message: str) -> str:
        return self.messages.get((None, message), message)

    def pgettext(self, context: str, message: str) -> str:
        return self.messages.get((context, message), message)

    def ngettext(self, msgid1: str, msgid2: str, n: int) -> str:
        return self.gettext(msgid1 if n == 1 else msgid2)

    def npgettext(self, context: str, msgid1: str, msgid2: str, n: int) -> str:
        return self.pgettext(context, msgid1 if n == 1 else msgid2)


@lru_cache(maxsize=16)
def translations_for(lang: str, locale_dirs: tuple[Path, ...]) -> PoTranslations:
    """The translations of `lang` from each of `locale_dirs` that has it (later dirs win);
    none (English shown) for the source language."""
    paths = [] if lang == SOURCE_LANG else [
        _catalogue_path(d, lang) for d in locale_dirs if _catalogue_path(d, lang).is_file()]
    return PoTranslations(paths)


# --- the message ids in use (for the catalogue test and `python -m bot.slack.translations`)


def extract(templates_dir: Path, python_dirs: tuple[Path, ...] = ()) -> Any:
    """A Babel catalogue of every message id trainbot shows: the templates' `_()` /
    `pgettext()` calls, `_()` / `N_()` calls in `python_dirs` and the failure catalogue's titles,
    explanations and hints."""
    from babel.messages.catalog import Catalog
    from babel.messages.extract import extract_from_dir

    from bot.core.catalogue import Catalogue

    catalog = Catalog(domain=DOMAIN, project="trainbot")
    sources = [(templates_dir, [("*.j2", "jinja2.ext:babel_extract")],
                {"*.j2": {"extensions": "jinja2.ext.i18n", "trim_blocks": "true",
                          "lstrip_blocks": "true"}})]
    sources += [(d, [("**.py", "python")], {}) for d in python_dirs]
    for directory, method_map, options in sources:
        for filename, lineno, message, comments, context in extract_from_dir(
                str(directory), method_map, options_map=options):
            catalog.add(message, locations=[(f"{directory.name}/{filename}", lineno)],
                        auto_comments=comments, context=context)
    for cls in Catalogue.load([]).classes.values():
        for text in (cls.title, cls.explanation, cls.hint):
            catalog.add(text, locations=[("bot/core/catalogue.yaml", 0)],
                        auto_comments=[f"failure class {cls.id}"])
    return catalog


def main() -> None:
    """Write templates/locale/messages.pot (run `pybabel update` from it, or edit the .po)."""
    from babel.messages.pofile import write_po

    from bot.slack.render import templates_root

    root = templates_root()
    bot_dir = Path(__file__).resolve().parents[1]
    catalog = extract(root, tuple(bot_dir / d for d in PYTHON_DIRS))
    with (root / "locale" / f"{DOMAIN}.pot").open("wb") as f:
        write_po(f, catalog, width=100, omit_header=True, sort_output=True)


if __name__ == "__main__":
    main()
