"""The OAuth scopes trainbot's bot token needs: one per Web API method the code calls (the
manifest declares exactly these; `trainbot doctor` compares them with what Slack granted)."""

from __future__ import annotations

# Web API method -> the bot scopes of which it needs one (Slack's method reference).
METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "conversations.history": ("channels:history", "groups:history"),
    "conversations.replies": ("channels:history", "groups:history"),
    "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
}

# Scopes needed by what is not a Web API call: the slash command.
FEATURE_SCOPES: dict[str, str] = {"commands": "the /train slash command"}

# Scopes the manifest asks for that trainbot can do without (what is lost without them).
OPTIONAL_SCOPES: dict[str, str] = {
    "chat:write.public": "posting in a public channel the bot was not invited to",
    "groups:history": "finding an earlier post in a private channel after a crash",
}


def required_scopes() -> set[str]:
    """Every scope a method needs (all of a method's scopes: public and private channels),
    and the feature scopes, less the optional ones."""
    scopes = {s for options in METHOD_SCOPES.values() for s in options} | set(FEATURE_SCOPES)
    return scopes - set(OPTIONAL_SCOPES)


def manifest_scopes() -> set[str]:
    """What the Slack app manifest (bot/starter/slack-manifest.yaml) asks for."""
    return required_scopes() | set(OPTIONAL_SCOPES)


def missing_scopes(granted: set[str]) -> tuple[set[str], set[str]]:
    """(required scopes missing, optional scopes missing) from `granted`."""
    return required_scopes() - granted, set(OPTIONAL_SCOPES) - granted
