"""What the Slack stand-in checks of a message as Slack does: Block Kit's limits and shapes
(`validate_blocks`), and the mrkdwn and plain text trainbot may send (`mrkdwn_errors`,
`plain_text_errors`)."""

from __future__ import annotations

import re
from typing import Any

# Block Kit limits (https://docs.slack.dev/reference/block-kit/blocks) and the ~13k payload cap
# reported for chat.postMessage (`msg_blocks_too_long`).
MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100  # a Home tab or modal view (Block Kit: "up to 100 blocks")
MAX_PRIVATE_METADATA = 3000
MAX_VIEW_JSON_CHARS = 250_000  # views.publish rejects a larger `view` argument
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_URL = 3000
MAX_ID = 255
MAX_ACTIONS_ELEMENTS = 25
MAX_CONTEXT_ELEMENTS = 10
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_MARKDOWN_BLOCK = 12000
MAX_BLOCKS_JSON_CHARS = 13000
MAX_TEXT = 40000
# The confirmation dialog object (composition-objects/confirmation-dialog-object): plain_text
# title, text and buttons, each required, at most this many characters.
MAX_CONFIRM_TITLE = 100
MAX_CONFIRM_TEXT = 300
MAX_CONFIRM_BUTTON = 30

BLOCK_TYPES = {
    "section", "header", "divider", "context", "actions", "image", "rich_text", "markdown",
    "input", "video", "file",
}
_CHANNEL_RE = re.compile(r"^[CGD][A-Z0-9]{2,}$")
# mrkdwn and a message's `text` (https://docs.slack.dev/messaging/formatting): `<` opens a
# control sequence (a mention, a channel, a special mention, a link, each with an optional
# `|label`); any other `<`, `>` and `&` must be sent as &lt; &gt; &amp;. Slack does not refuse
# the rest: it shows it mangled (a stray `<` eats the text after it), so the stand-in does.
_CONTROL_RE = re.compile(
    r"<(?:[@#][A-Z0-9]+|![a-z]+(?:\^[^<>|\s]*)?|(?:https?|mailto|slack):[^<>|\s]+)"
    r"(?:\|[^<>]*)?>")
# trainbot never pings a whole channel: one of these in its text is user text left unescaped
_BROADCAST_RE = re.compile(r"<!(?:channel|here|everyone)(?:\|[^<>]*)?>")
# plain_text is shown as sent: an entity in it (`&amp;`) shows literally, text escaped for
# mrkdwn that reached a header, a button or a dialog (escaped where it must not be)
_ENTITY_RE = re.compile(r"&(?:amp|lt|gt);")


def mrkdwn_errors(text: str) -> list[str]:
    """What Slack would mangle in mrkdwn `text` ([] when none): a `<` or `>` outside a
    control sequence, and a broadcast mention trainbot never means."""
    errors = [f"broadcast mention {m.group()!r} (unescaped text?)"
              for m in _BROADCAST_RE.finditer(text)]
    rest = _CONTROL_RE.sub("", text)
    for ch in "<>":
        at = rest.find(ch)
        if at >= 0:
            errors.append(f"unescaped {ch!r} near {rest[max(0, at - 20):at + 20]!r}")
    return errors


def plain_text_errors(text: str) -> list[str]:
    """What Slack would show wrongly in plain_text `text` ([] when none): an entity
    (`&amp;`, `&lt;`, `&gt;`), which plain_text shows literally: mrkdwn escaping where none
    belongs."""
    return [f"entity {m.group()!r} in plain_text near "
            f"{text[max(0, m.start() - 20):m.end() + 20]!r} (escaped for mrkdwn?)"
            for m in _ENTITY_RE.finditer(text)]


def validate_blocks(blocks: Any, *, max_blocks: int = MAX_BLOCKS) -> list[str]:
    """Slack-style error messages for a blocks array ([] when valid); `max_blocks`: 50 in a
    message, 100 in a view."""
    errors: list[str] = []
    if not isinstance(blocks, list):
        return ["[ERROR] must be an array [json-pointer:/blocks]"]
    if len(blocks) > max_blocks:
        errors.append(f"[ERROR] no more than {max_blocks} items allowed [json-pointer:/blocks]")
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        p = f"/blocks/{i}"
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            errors.append(f"[ERROR] invalid block type [json-pointer:{p}/type]")
            continue
        bid = block.get("block_id")
        if bid is not None:
            if not isinstance(bid, str) or not bid or len(bid) > MAX_ID:
                errors.append(f"[ERROR] must be 1..{MAX_ID} characters [json-pointer:{p}/block_id]")
            elif bid in block_ids:
                errors.append(f"[ERROR] duplicate block_id [json-pointer:{p}/block_id]")
            else:
                block_ids.add(bid)
        errors.extend(_validate_block(block, p))
    return errors


def _text_obj(obj: Any, p: str, *, limit: int, plain_only: bool = False) -> list[str]:
    if not isinstance(obj, dict) or obj.get("type") not in ("plain_text", "mrkdwn"):
        return [f"[ERROR] must be a text object [json-pointer:{p}]"]
    if plain_only and obj["type"] != "plain_text":
        return [f"[ERROR] must be plain_text [json-pointer:{p}/type]"]
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        return [f"[ERROR] must be a non-empty string [json-pointer:{p}/text]"]
    if len(text) > limit:
        return [f"[ERROR] must be less than {limit + 1} characters [json-pointer:{p}/text]"]
    extra = set(obj) - {"type", "text", "emoji", "verbatim"}
    if extra:
        return [f"[ERROR] unknown field {sorted(extra)[0]} [json-pointer:{p}]"]
    errors = mrkdwn_errors(text) if obj["type"] == "mrkdwn" else plain_text_errors(text)
    return [f"[ERROR] {e} [json-pointer:{p}/text]" for e in errors]


def _validate_element(el: Any, p: str) -> list[str]:
    if not isinstance(el, dict) or "type" not in el:
        return [f"[ERROR] must be an element [json-pointer:{p}]"]
    errs: list[str] = []
    aid = el.get("action_id")
    if aid is not None and (not isinstance(aid, str) or not aid or len(aid) > MAX_ID):
        errs.append(f"[ERROR] must be 1..{MAX_ID} characters [json-pointer:{p}/action_id]")
    if el["type"] == "button":
        errs += _text_obj(el.get("text"), f"{p}/text", limit=MAX_BUTTON_TEXT, plain_only=True)
        value = el.get("value")
        if value is not None and (not isinstance(value, str) or len(value) > MAX_BUTTON_VALUE):
            errs.append(f"[ERROR] must be less than {MAX_BUTTON_VALUE + 1} characters "
                        f"[json-pointer:{p}/value]")
        url = el.get("url")
        if url is not None and (not isinstance(url, str) or len(url) > MAX_URL):
            errs.append(f"[ERROR] must be less than {MAX_URL + 1} characters "
                        f"[json-pointer:{p}/url]")
        if el.get("style") not in (None, "primary", "danger"):
            errs.append(f"[ERROR] must be primary or danger [json-pointer:{p}/style]")
        if el.get("style") == "danger" and "confirm" not in el:
            # the stand-in's own, as for broadcasts: trainbot's red buttons cancel a job, and
            # every one asks first
            errs.append(f"[ERROR] a danger button without a confirm dialog [json-pointer:{p}]")
    if "confirm" in el:
        errs += _validate_confirm(el["confirm"], f"{p}/confirm")
    return errs


def _validate_confirm(obj: Any, p: str) -> list[str]:
    """A confirmation dialog object: title, text, confirm and deny (plain_text, required,
    within their lengths) and an optional style."""
    if not isinstance(obj, dict):
        return [f"[ERROR] must be a confirmation dialog object [json-pointer:{p}]"]
    errs: list[str] = []
    for key, limit in (("title", MAX_CONFIRM_TITLE), ("text", MAX_CONFIRM_TEXT),
                       ("confirm", MAX_CONFIRM_BUTTON), ("deny", MAX_CONFIRM_BUTTON)):
        if key not in obj:
            errs.append(f"[ERROR] missing required field: {key} [json-pointer:{p}]")
        else:
            errs += _text_obj(obj[key], f"{p}/{key}", limit=limit, plain_only=True)
    if obj.get("style") not in (None, "primary", "danger"):
        errs.append(f"[ERROR] must be primary or danger [json-pointer:{p}/style]")
    extra = set(obj) - {"title", "text", "confirm", "deny", "style"}
    if extra:
        errs.append(f"[ERROR] unknown field {sorted(extra)[0]} [json-pointer:{p}]")
    return errs


def _validate_block(block: dict[str, Any], p: str) -> list[str]:
    kind = block["type"]
    errs: list[str] = []
    if kind == "section":
        if "text" not in block and "fields" not in block:
            errs.append(f"[ERROR] must provide text or fields [json-pointer:{p}]")
        if "text" in block:
            errs += _text_obj(block["text"], f"{p}/text", limit=MAX_SECTION_TEXT)
        if "fields" in block:
            fields = block["fields"]
            if not isinstance(fields, list) or not fields or len(fields) > MAX_FIELDS:
                errs.append(f"[ERROR] must be 1..{MAX_FIELDS} items [json-pointer:{p}/fields]")
            else:
                for j, f in enumerate(fields):
                    errs += _text_obj(f, f"{p}/fields/{j}", limit=MAX_FIELD_TEXT)
        if "accessory" in block:
            errs += _validate_element(block["accessory"], f"{p}/accessory")
    elif kind == "header":
        errs += _text_obj(block.get("text"), f"{p}/text", limit=MAX_HEADER_TEXT, plain_only=True)
    elif kind == "context":
        els = block.get("elements")
        if not isinstance(els, list) or not els or len(els) > MAX_CONTEXT_ELEMENTS:
            errs.append(f"[ERROR] must be 1..{MAX_CONTEXT_ELEMENTS} items "
                        f"[json-pointer:{p}/elements]")
        else:
            for j, el in enumerate(els):
                if isinstance(el, dict) and el.get("type") == "image":
                    continue
                errs += _text_obj(el, f"{p}/elements/{j}", limit=MAX_SECTION_TEXT)
    elif kind == "actions":
        els = block.get("elements")
        if not isinstance(els, list) or not els or len(els) > MAX_ACTIONS_ELEMENTS:
            errs.append(f"[ERROR] must be 1..{MAX_ACTIONS_ELEMENTS} items "
                        f"[json-pointer:{p}/elements]")
        else:
            seen: set[str] = set()
            for j, el in enumerate(els):
                errs += _validate_element(el, f"{p}/elements/{j}")
                aid = el.get("action_id") if isinstance(el, dict) else None
                if aid is not None and aid in seen:
                    errs.append(f"[ERROR] duplicate action_id [json-pointer:{p}/elements/{j}]")
                if aid is not None:
                    seen.add(aid)
    elif kind == "markdown":
        text = block.get("text")
        if not isinstance(text, str) or not text or len(text) > MAX_MARKDOWN_BLOCK:
            errs.append(f"[ERROR] must be 1..{MAX_MARKDOWN_BLOCK} characters "
                        f"[json-pointer:{p}/text]")
    elif kind == "image":
        if not (block.get("image_url") or block.get("slack_file")) or not block.get("alt_text"):
            errs.append(f"[ERROR] image needs image_url/slack_file and alt_text [json-pointer:{p}]")
    elif kind == "rich_text":
        if not isinstance(block.get("elements"), list):
            errs.append(f"[ERROR] must be an array [json-pointer:{p}/elements]")
    elif kind == "divider":
        if set(block) - {"type", "block_id"}:
            errs.append(f"[ERROR] divider takes no fields [json-pointer:{p}]")
    return errs
