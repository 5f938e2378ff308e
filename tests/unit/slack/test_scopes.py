"""The Slack app manifest asks for exactly the scopes the code needs (bot.slack.scopes), every
Web API method the code calls has its scopes listed, and the usage hint lists every verb."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.core.train_grammar import USAGE
from bot.slack.scopes import METHOD_SCOPES, manifest_scopes, missing_scopes, required_scopes

REPO = Path(__file__).resolve().parents[3]
MANIFEST = REPO / "bot" / "starter" / "slack-manifest.yaml"
# client.chat_postMessage(...) / client.files_completeUploadExternal(...) in the code
CALL_RE = re.compile(r"client\.((?:chat|conversations|files|users|reactions|auth)_[A-Za-z]+)\(")


def test_every_web_api_method_the_code_calls_has_its_scopes() -> None:
    called = set()
    for path in [*(REPO / "bot").rglob("*.py"), *(REPO / "handlers").rglob("*.py")]:
        called |= {m.replace("_", ".", 1) for m in CALL_RE.findall(path.read_text())}
    assert {"chat.postMessage", "chat.update", "files.completeUploadExternal"} <= called
    assert called - {"auth.test"} <= set(METHOD_SCOPES), called - set(METHOD_SCOPES)


def test_the_manifest_asks_for_exactly_the_scopes_the_code_needs() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == manifest_scopes()
    assert "users:read" not in manifest_scopes()
    assert {"commands", "chat:write", "files:write", "channels:history"} <= required_scopes()


def test_the_usage_hint_lists_every_verb() -> None:
    (command,) = yaml.safe_load(MANIFEST.read_text())["features"]["slash_commands"]
    parts = command["usage_hint"].split(" | ")
    verbs = [part.split()[0] for part in parts]
    assert verbs == list(USAGE)
    for part in parts:  # every verb that takes a job takes an array task too
        if "JOBID" in part:
            assert "JOBID|JOBID_TASK" in part, part


def test_missing_scopes_splits_required_from_optional() -> None:
    required, optional = missing_scopes({"commands", "chat:write", "channels:history"})
    assert required == {"files:write"}
    assert optional == {"chat:write.public", "groups:history"}
