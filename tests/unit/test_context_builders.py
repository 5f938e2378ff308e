"""A BotContext is built in two places: bot.app.build_context (the running bot, the demo) and
tests/fakes.make_context (every test). A context built by hand elsewhere drifts from them (a
field its services rely on left out, a catalogue loaded without the site's files)."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("bot", "handlers", "tests", "bench", "deploy", "docs")
BUILDERS = {"bot/app.py", "tests/fakes.py"}
SKIPPED_DIRS = {"fixtures", "__pycache__"}  # test data, never code that builds contexts
CONSTRUCTOR = re.compile(r"\bBotContext\(")


def python_files() -> list[str]:
    found = []
    for tree in TREES:
        for folder, dirs, files in os.walk(ROOT / tree):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            found += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files
                      if f.endswith(".py")]
    return found


def test_only_build_context_and_make_context_construct_a_bot_context() -> None:
    files = python_files()
    assert "bot/app.py" in files and "tests/fakes.py" in files
    elsewhere = [f"{path}:{n}" for path in files if path not in BUILDERS
                 for n, line in enumerate((ROOT / path).read_text(encoding="utf-8")
                                          .splitlines(), 1)
                 if CONSTRUCTOR.search(line)]
    assert elsewhere == [], ("build the context with bot.app.build_context (production) or "
                             "tests/fakes.make_context (tests)")


#: A port of a built context set afterwards: make_context (and build_context's result through
#: dataclasses.replace) takes them. `ctx.config` is not one: a test may restart the bot with
#: another config mid-story.
PORT_SET_AFTER = re.compile(
    r"\bctx\.(store|clusters|renderer|catalogue|sink|charts|home|clock)\s*=(?!=)")


def test_tests_pass_a_contexts_ports_to_its_builder_instead_of_setting_them_after() -> None:
    set_after = [f"{path}:{n}" for path in python_files() if path.startswith("tests/")
                 for n, line in enumerate((ROOT / path).read_text(encoding="utf-8")
                                          .splitlines(), 1)
                 if PORT_SET_AFTER.search(line)]
    assert set_after == [], ("pass the port to make_context(sink=, clock=, clusters=, home=) "
                             "or dataclasses.replace a built context")


#: The bot's language patched into a built config: make_config / make_context take it.
LANG_PATCHED = re.compile(r"""model_copy\(\s*update=\{\s*["']lang["']""")


def test_tests_give_the_bots_language_to_the_config_builder() -> None:
    patched = [f"{path}:{n}" for path in python_files() if path.startswith("tests/")
               for n, line in enumerate((ROOT / path).read_text(encoding="utf-8")
                                        .splitlines(), 1)
               if LANG_PATCHED.search(line)]
    assert patched == [], "pass slack_lang= to make_config or make_context"
