"""Secrets out of every text a person or a file will see: error messages on their way to
Slack, the logs and the store."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MIN_SECRET_LENGTH = 4
MARKER = "[redacted]"

# Token shapes. A pattern with a `secret` group masks only that group (the URL's scheme, user
# and host, the variable's name stay readable); without one, the whole match.
#
# A token standing alone (no letter, digit or `_` before it) is masked in its service's loose
# shape: its prefix, then a number, `-` and more token characters, 8 or more in all (Slack:
# `xoxo-gossip-girl` is no token), a run of at least 20 token characters (GitHub, Hugging
# Face) or 16 capitals and digits (AWS). A token glued to the word before it (`abcxoxb-…`,
# `tokenghp_…`, `key_AKIA…`) is masked only in the exact shape its service issues (Slack:
# `xoxb-` then digits, `-`, digits, `-`…; GitHub: 36 letters and digits; Hugging Face: 34 or
# more; AWS: 16 capitals and digits, a digit among them), since ordinary words end in a
# prefix's letters too (`nginxapp-7d9f8b6c5-x2x4z`, `highs_0123…`, `AP_ASIAPACIFIC…`).
#
# Every pattern reads a line in linear time: each starts at a literal or where no character
# of its first run precedes it, so no run is tried again from each of its characters
# (tests/unit/core/test_redact_long_lines.py, bench/redact_long_line.py).
_FREE = r"(?<![A-Za-z0-9_])"    # a token's start with no word before it
_GLUED = r"(?<=[A-Za-z0-9_])"   # a token's start glued to a word
SLACK_TOKEN = re.compile(
    # bot, user, legacy, refresh, session, app-level: a number after the prefix, then the rest
    _FREE + r"(?:xox[abceoprs]|xapp)-(?=[A-Za-z0-9-]{8})[0-9]+-[A-Za-z0-9-]{4,}"
    r"|" + _GLUED + r"(?:xox[bpaers]-[0-9]+-[0-9]+-[A-Za-z0-9-]+"
    r"|xapp-[0-9]+-[A-Z0-9]+-[0-9]+-[A-Za-z0-9]+)")
# A secret's name: standing alone or after `_`/`.`/`-` (`password`, `HF_TOKEN`, `api-key`), or,
# in capitals, glued to another word in capitals as a variable's name is (`DBPASSWORD`,
# `HFTOKEN`); not in a word of small letters and capitals (`maxToken`, `hasPassword`,
# `ntoken`: a model's or an API's field, not a secret).
_NAMES = r"(?:password|passwd|secret|token|api[_-]?key|access[_-]?key)"
_FREE_NAME = r"(?i:(?<![a-z0-9])(?:password|passwd|secret|(?P<tok>token)|api[_-]?key|" \
    r"access[_-]?key))"
_GLUED_NAME = r"(?<=[A-Z0-9])(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY)"
_ASSIGNED = r"['\"]?\s*[=:]\s*['\"]?"
_VALUE_END = r"(?![^\s'\"&,;)\]}])"
# What a glued name's value is not masked as: a number, a boolean or a null, a placeholder in
# angle brackets (`<pad>`).
_NOT_A_SECRET = r"(?!(?i:true|false|none|null|yes|no)" + _VALUE_END + r"|[0-9.]+" + \
    _VALUE_END + r"|<)"
_VALUE = r"(?P<secret>[^\s'\"&,;)\]}]{4,})"
# What a value given to a name ending in `token` is not masked as (a tokenizer's setting, not a
# secret: `pad_token = <pad>`, `cls_token: [CLS]`, `bos_token = 50256`): a special token in
# angle or square brackets, a token id (a number of up to 6 digits), a boolean or a null.
_NOT_A_TOKEN = r"(?(tok)(?![<\[]|[0-9]{1,6}" + _VALUE_END + \
    r"|(?i:true|false|none|null|yes|no)" + _VALUE_END + r"))"
# A camelCase name glued to the small letters or digits before it (`clientSecret`,
# `dbPassword`, `openaiApiKey`, `myToken`): a secret's, password's or key's value is masked
# unless it is a number, a boolean or a placeholder; a token's only when it is shaped like one
# (8 or more token characters, with letters and digits or small and capital letters), since
# most such names are a model's or an API's settings (`maxToken=4096`, `padToken: <pad>`), and
# a page's cursor (`nextPageToken`, `continuationToken`, `syncToken`) is no secret.
_CAMEL_NAME = r"(?<=[a-z0-9])(?:Secret|Password|Passwd|ApiKey|AccessKey)"
_CAMEL_TOKEN = r"(?<=[a-z0-9])(?<![Pp]age)(?<![Nn]ext)(?<!ontinuation)(?<![Ss]ync)Token"
_TOKEN_CHAR = r"[A-Za-z0-9_./+~-]"
_TOKEN_SHAPED = (r"(?P<secret>(?=" + _TOKEN_CHAR + r"{8})(?:(?=" + _TOKEN_CHAR + r"*?[0-9])(?="
                 + _TOKEN_CHAR + r"*?[A-Za-z])|(?=" + _TOKEN_CHAR + r"*?[a-z])(?="
                 + _TOKEN_CHAR + r"*?[A-Z]))" + _TOKEN_CHAR + r"+={0,2})")
_FLAG = r"(?<![A-Za-z0-9-])--"
_KEY_END = r"(?![^\W_])"  # no letter or digit (of any script) next
_FLAG_VALUE = r"(?P<secret>(?!-)[^\s'\"]{4,}|'[^'\n]+'|\"[^\"\n]+\")"
TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (SLACK_TOKEN, *(re.compile(p) for p in (
    # GitHub tokens
    _FREE + r"gh[pousr]_[A-Za-z0-9]{20,}|" + _GLUED + r"gh[pousr]_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
    r"github_pat_[A-Za-z0-9_]{20,}",                   # GitHub fine-grained token
    r"glpat-[A-Za-z0-9_-]{20,}",                       # GitLab personal access token
    # Hugging Face token, and its OAuth access token
    r"hf_oauth_[A-Za-z0-9]{20,}|" + _FREE + r"hf_[A-Za-z0-9]{20,}|"
    + _GLUED + r"hf_[A-Za-z0-9]{34,}",
    # OpenAI's project, service-account and admin keys; Anthropic's keys
    r"(?<![A-Za-z0-9_-])sk-(?:proj|svcacct|admin|ant)-[A-Za-z0-9_-]{20,}",
    # AWS access key id: its 16 characters end where the word does, with no letter or digit
    # of any case after them (`ASIAPACIFICNORTHEASTern` is a word, not a key); a `_` ends it
    # (a word after it, `_backup`, is no part of it)
    r"(?<![0-9A-Za-z_])(?:AKIA|ASIA)[0-9A-Z]{16}" + _KEY_END + "|"
    r"(?<=[a-z_])(?:AKIA|ASIA)(?=[A-Z]{0,15}[0-9])[0-9A-Z]{16}" + _KEY_END,
    r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    r"(?i)\bauthorization:\s*basic\s+(?P<secret>[A-Za-z0-9+/=]{8,})",
    # wandb login [--relogin] KEY: 40 hex digits (a local server's after `local-`)
    r"(?i)\bwandb\s+login\s+(?:--?[a-z-]{1,20}\s+){0,3}(?P<secret>(?:local-)?[0-9a-f]{40})\b",
    # scheme://user:PASSWORD@host — the password up to the last @ before the host. Linear
    # on any text: a scheme starts only where no scheme character precedes it (so a long run
    # like `a.a.a.…` is tried once, not once from each of its letters), and a password never
    # runs over another `://` (so a run of URLs is read once, not once from each of them).
    r"(?i)(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]*:"
    r"(?P<secret>(?:(?!://)\S)+?)@(?=[^\s@/]*(?:[/\s?#'\"]|$))",
    # password=…, api_key: …, HF_TOKEN=…, DBPASSWORD=… (in URLs' queries, env listings,
    # reprs of dicts)
    _FREE_NAME + _ASSIGNED + _NOT_A_TOKEN + _VALUE,
    _GLUED_NAME + _ASSIGNED + _NOT_A_SECRET + _VALUE,
    _CAMEL_NAME + _ASSIGNED + _NOT_A_SECRET + _VALUE,
    _CAMEL_TOKEN + _ASSIGNED + _TOKEN_SHAPED,
    # a quoted value whole, spaces too, up to its quote (`password: 'p@ss w0rd'`)
    _FREE_NAME + r"['\"]?\s*[=:]\s*'" + _NOT_A_TOKEN + r"(?P<secret>[^'\n]+)'",
    _FREE_NAME + r"['\"]?\s*[=:]\s*\"" + _NOT_A_TOKEN + r"(?P<secret>[^\"\n]+)\"",
    _CAMEL_NAME + r"['\"]?\s*[=:]\s*'" + _NOT_A_SECRET + r"(?P<secret>[^'\n]+)'",
    _CAMEL_NAME + r"['\"]?\s*[=:]\s*\"" + _NOT_A_SECRET + r"(?P<secret>[^\"\n]+)\"",
    # a command line's flag and the value after it: --password hunter22, --api-key …; a
    # longer flag's (--hf-token …) not a number, a boolean or a placeholder (--pad-token <pad>)
    _FLAG + r"(?i:password|passwd|secret|token|api[_-]?key|access[_-]?key)\s+" + _FLAG_VALUE,
    _FLAG + r"(?i:[a-z0-9-]{0,40}[-_]" + _NAMES + r")\s+" + _NOT_A_SECRET + _FLAG_VALUE,
)))

# Keys whose values are identifiers the bot reads back, never prose: left as they are (a
# Slack payload's ids and button values, a stored incident's recipe, job and kind).
IDENTIFIER_KEYS = frozenset({"action_id", "block_id", "value", "type", "ts", "thread_ts",
                             "channel", "event_type", "recipe", "cluster", "job_id", "kind",
                             "class_id"})


def secret_forms(value: str) -> set[str]:
    """The ways an error text may show `value`: as is, shell-quoted, repr- and JSON-escaped
    (the forms shorter than MIN_SECRET_LENGTH dropped)."""
    forms = {value, shlex.quote(value), repr(value)[1:-1], json.dumps(value)[1:-1]}
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


class Redactor:
    """Masks `secrets` (their values; shorter than MIN_SECRET_LENGTH ignored) and token
    shapes in text. Pure and thread-safe: build one per configuration, use it anywhere."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
        forms = set().union(*(secret_forms(v) for v in values)) if values else set()
        # longest first: a value that contains another is masked whole
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        self._values = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.secret_count = len(values)

    def redact(self, text: str) -> str:
        """`text` with every secret and token-shaped string replaced by MARKER.

        Masking works on character positions, and is repeated until no secret can be read in
        the result (a marker next to the rest of a text can spell a secret again): no
        configured value survives anywhere in `text`, except as a part of MARKER itself.
        Markers already in `text` count as masked, so redacting twice changes nothing.
        """
        if not text:
            return text
        masked = bytearray(len(text))
        for m in _MARKER_RE.finditer(text):
            masked[m.start():m.end()] = b"\x01" * (m.end() - m.start())
        if not _mask(masked, self._spans(text), range(len(text))):
            return text
        while True:
            out, origin = _render(text, masked)
            if not _mask(masked, self._spans(out), origin):
                return out

    def redact_data(self, data: Any) -> Any:
        """A copy of JSON-like `data` (a Slack payload, an audit detail, facts) with every
        string redacted, except under IDENTIFIER_KEYS (button values, ids)."""
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, Mapping):
            return {key: value if key in IDENTIFIER_KEYS else self.redact_data(value)
                    for key, value in data.items()}
        if isinstance(data, list | tuple):
            return type(data)(self.redact_data(item) for item in data)
        return data

    def _spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        if self._values is not None:
            spans.extend(m.span() for m in self._values.finditer(text))
        for pattern in TOKEN_PATTERNS:
            for m in pattern.finditer(text):
                spans.append(m.span("secret") if "secret" in pattern.groupindex else m.span())
        return spans


_MARKER_RE = re.compile(re.escape(MARKER))

# The process's redactor: token shapes, plus a configuration's secrets once one is loaded
# (`install_log_redaction` sets it). For what must be redacted where it is made, not where it
# is shown: a text cut short (an error's brief command) is redacted whole before its cut,
# since a secret's start is no longer a secret any redactor can find.
_process_redactor = Redactor()


def process_redactor() -> Redactor:
    """The process's redactor (token shapes, and the loaded configuration's secrets)."""
    return _process_redactor


def set_process_redactor(redactor: Redactor) -> Redactor:
    """Make `redactor` the process's; returns the one it replaces."""
    global _process_redactor
    previous, _process_redactor = _process_redactor, redactor
    return previous


def _mask(masked: bytearray, spans: Iterable[tuple[int, int]],
          origin: Sequence[int]) -> bool:
    """Mark the characters of `text` that `spans` (in a text whose characters came from
    `origin`, -1 for a marker's) cover; True if one was not masked before."""
    grew = False
    for start, end in spans:
        for i in range(start, end):
            j = origin[i]
            if j >= 0 and not masked[j]:
                masked[j] = 1
                grew = True
    return grew


def _render(text: str, masked: bytearray) -> tuple[str, list[int]]:
    """`text` with each run of masked characters replaced by MARKER, and for each character of
    the result the index in `text` it came from (-1 for a marker's)."""
    parts: list[str] = []
    origin: list[int] = []
    i, n = 0, len(text)
    while i < n:
        if masked[i]:
            while i < n and masked[i]:
                i += 1
            parts.append(MARKER)
            origin.extend([-1] * len(MARKER))
        else:
            start = i
            while i < n and not masked[i]:
                i += 1
            parts.append(text[start:i])
            origin.extend(range(start, i))
    return "".join(parts), origin


def url_secret_spans(url: str) -> list[tuple[int, int]]:
    """Where a database URL holds passwords, as (start, end) offsets: its userinfo's
    (`scheme://user:PASSWORD@host…`: everything between `user:` and the last `@`, so an
    unescaped `@` or `/` in it is covered) and each `password=` parameter's. Read from the
    text, so a URL that does not parse (a port `abc`, no scheme) is covered too."""
    spans = [m.span(1) for m in _QUERY_PASSWORD.finditer(url) if m.group(1)]
    _scheme, sep, rest = url.partition("://")
    start = len(url) - len(rest) if sep else 0
    rest = url[start:]
    if rest.startswith("/") or "@" not in rest:  # sqlite:////path has no userinfo
        return spans
    userinfo = rest.rpartition("@")[0]
    user, colon, password = userinfo.partition(":")
    if colon and password:
        spans.insert(0, (start + len(user) + 1, start + len(userinfo)))
    return spans


def url_secrets(url: str) -> list[str]:
    """The passwords of a database URL (`url_secret_spans`), e.g. to give to a Redactor."""
    return [url[start:end] for start, end in url_secret_spans(url)]


_QUERY_PASSWORD = re.compile(r"[?&]password=([^&]*)", re.IGNORECASE)
