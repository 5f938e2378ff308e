"""Secrets out of every text a person or a file will see: error messages on their way to
Slack, the logs and the store."""

from __future__ import annotations

import json
import re
import shlex
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
    # a browser session's cookie (`d`): URL-encoded, no number first; 8 or more characters
    # with a digit or a `%` among the first 64
    r"|" + _FREE + r"xoxd-(?=[A-Za-z0-9%+/=_.-]{0,63}[0-9%])[A-Za-z0-9%+/=_.-]{8,}"
    r"|" + _GLUED + r"(?:xox[bpaers]-[0-9]+-[0-9]+-[A-Za-z0-9-]+"
    r"|xapp-[0-9]+-[A-Z0-9]+-[0-9]+-[A-Za-z0-9]+)")
# A secret's name: standing alone or after `_`/`.`/`-` (`password`, `HF_TOKEN`, `api-key`), or,
# in capitals, glued to another word in capitals as a variable's name is (`DBPASSWORD`,
# `HFTOKEN`); not in a word of small letters and capitals (`maxToken`, `hasPassword`,
# `ntoken`: a model's or an API's field, not a secret).
_NAMES = r"(?:password|passwd|secret|(?P<tok>token)|api[_-]?key|access[_-]?key)"
# A token's name is told apart (`tok`), and whether it is a tokenizer's special token's or a
# count's (`tid`: `pad_token`, `eos_token`, `max_token`) and written in capitals (`caps`: an
# environment variable's, `GITHUB_TOKEN`): what its value is not masked as depends on them
# (`_not_a_token`).
_TOKENIZER_NAME = "|".join(f"(?<={word}_)(?<![a-z0-9]{word}_)" for word in (
    "pad", "bos", "eos", "unk", "cls", "sep", "mask", "max", "min", "num"))
# (each told by one way only: a lookahead's refusal must not be met by trying the other way)
_FREE_NAME = r"(?i:(?<![a-z0-9])(?:password|passwd|secret|(?P<tok>(?:(?P<tid>" \
    + _TOKENIZER_NAME + r")|(?!" + _TOKENIZER_NAME + r"))(?:(?P<caps>(?-i:TOKEN))|" \
    r"(?!(?-i:TOKEN))token))|api[_-]?key|access[_-]?key))"
_GLUED_NAME = r"(?<=[A-Z0-9])(?:PASSWORD|PASSWD|SECRET|(?P<tok>TOKEN)|API_?KEY|ACCESS_?KEY)"
_ASSIGNED = r"['\"]?\s*[=:]\s*['\"]?"
_VALUE_END = r"(?![^\s'\"&,;)\]}])"


# What a glued name's value is not masked as: a boolean or a null, a placeholder in angle
# brackets (`<pad>`), and a number given to a name ending in `token` (a count: `MAXTOKEN=4096`;
# a password's, a secret's or a key's is masked, `dbPassword=123456`), each only as the whole
# value (`end`: what follows the value's last character, its closing quote for a quoted one):
# `"no pain no gain"`, `"1 love cats!"`, `<3 my cat` are secrets.
def _not_a_secret(end: str, *, token_name: bool = True) -> str:
    """(`token_name`: the pattern's name may end in `token`, told by its group `tok`.)"""
    count = r"|(?(tok)[0-9.]+" + end + r"|(?!))" if token_name else ""
    return r"(?!(?i:true|false|none|null|yes|no)" + end + r"|<[^\s<>'\"]*>" + end + count + ")"


_VALUE = r"(?P<secret>[^\s'\"&,;)\]}]{4,})"


# What a value given to a name ending in `token` is not masked as (a tokenizer's setting, not a
# secret: `pad_token = <pad>`, `cls_token: [CLS]`, `bos_token = 50256`), again only as the
# whole value: a special token (a short word of letters, `|` and `_` in angle or square
# brackets: `<pad>`, `</s>`, `<|endoftext|>`, `[CLS]`), a token id or a count (a number of up
# to 6 digits) given to a tokenizer's special token's name or a count's (`bos_token`,
# `max_token`; `token: 123456` is a PIN), a boolean or a null given to a name not in capitals
# (`add_eos_token: true`; `GITHUB_TOKEN=true` is the variable's value).
_SPECIAL_TOKEN = r"(?:</?[A-Za-z|_]{1,16}>|\[[A-Za-z|_]{1,16}\])"


def _not_a_token(end: str) -> str:
    return (r"(?(tok)(?!" + _SPECIAL_TOKEN + end + r"|(?(tid)[0-9]{1,6}" + end + r"|(?!))"
            + r"|(?(caps)(?!)|(?i:true|false|none|null|yes|no)" + end + r")))")


_NOT_A_SECRET = _not_a_secret(_VALUE_END)
_NOT_A_TOKEN = _not_a_token(_VALUE_END)
# A camelCase name glued to the small letters or digits before it (`clientSecret`,
# `dbPassword`, `openaiApiKey`, `myToken`): a secret's, password's or key's value is masked
# unless it is a boolean or a placeholder; a token's only when it is shaped like one
# (8 or more token characters, with letters and digits or small and capital letters), since
# most such names are a model's or an API's settings (`maxToken=4096`, `padToken: <pad>`), and
# a page's cursor (`nextPageToken`, `continuationToken`, `syncToken`) is no secret.
_CAMEL_NAME = r"(?<=[a-z0-9])(?:Secret|Password|Passwd|ApiKey|AccessKey)"
_CAMEL_TOKEN = r"(?<=[a-z0-9])(?<![Pp]age)(?<![Nn]ext)(?<!ontinuation)(?<![Ss]ync)Token"
_TOKEN_CHAR = r"[A-Za-z0-9_./+~-]"
_TOKEN_SHAPED = (r"(?P<secret>(?=" + _TOKEN_CHAR + r"{8})(?:(?=" + _TOKEN_CHAR + r"*?[0-9])(?="
                 + _TOKEN_CHAR + r"*?[A-Za-z])|(?=" + _TOKEN_CHAR + r"*?[a-z])(?="
                 + _TOKEN_CHAR + r"*?[A-Z]))" + _TOKEN_CHAR + r"+={0,2})")


def _quoted_value(quote: str) -> str:
    """A value in `quote`s up to its closing one, spaces too, a `\\`-escaped quote in it (a
    repr's, a JSON text's: `"ab\\"cd ef"`) read as its part, not its end."""
    return r"(?P<secret>(?:[^" + quote + r"\\\n]|\\.)+)" + quote


_FLAG = r"(?<![A-Za-z0-9-])--"
_KEY_END = r"(?![A-Za-z0-9])"  # no ASCII letter or digit next (Korean, Chinese may follow)
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
    # AWS access key id: its 16 characters end where the word does, with no ASCII letter or
    # digit of any case after them (`ASIAPACIFICNORTHEASTern` is a word, not a key); a `_`
    # ends it (a word after it, `_backup`, is no part of it), and so does a letter of another
    # script (a Korean particle glued straight onto it)
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
    _CAMEL_NAME + _ASSIGNED + _not_a_secret(_VALUE_END, token_name=False) + _VALUE,
    _CAMEL_TOKEN + _ASSIGNED + _TOKEN_SHAPED,
    # a quoted value whole, spaces too, up to its quote (`password: 'p@ss w0rd'`)
    _FREE_NAME + r"['\"]?\s*[=:]\s*'" + _not_a_token("'") + _quoted_value("'"),
    _FREE_NAME + r"['\"]?\s*[=:]\s*\"" + _not_a_token('"') + _quoted_value('"'),
    _CAMEL_NAME + r"['\"]?\s*[=:]\s*'" + _not_a_secret("'", token_name=False) + _quoted_value("'"),
    _CAMEL_NAME + r"['\"]?\s*[=:]\s*\"" + _not_a_secret('"', token_name=False)
    + _quoted_value('"'),
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
        # every place each form is found, overlapping ones too (`abcd` and `cdefghij` in
        # `abcdefghij`: masking one and reading on after it would show the other's rest):
        # each position's longest form (longest first), the union of them masked
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        either = "|".join(map(re.escape, ordered))
        self._values = re.compile("(?=(" + either + "))") if ordered else None
        # Where a form may be spelled by a marker and the text beside it (`ed]Q` by
        # `[redacted]` and `Q`): looked for only around the markers (`_MarkerForms.close`).
        # Only those forms: no other can hold a marker's characters, and a long secret that
        # cannot must not widen what is read around each marker (`_MarkerForms.reach`).
        meets = [form for form in ordered if _meets_marker(form)]
        self._at_marker = _MarkerForms(meets) if meets else None
        self.secret_count = len(values)

    def redact(self, text: str) -> str:
        """`text` with every secret and token-shaped string replaced by MARKER.

        No configured value can be read anywhere in the result, except as a part of MARKER
        itself: a marker next to the rest of a text cannot spell one (those characters are
        masked too, `_close`), and no token shape is found again in the result (a marker
        before a token glued to a masked word leaves it standing alone). Markers already in
        `text` count as masked, so redacting twice changes nothing. The work is linear in
        the text's length: each round reads the text once and masks more of it, and after
        MAX_ROUNDS (a token shape freed by a secret's mask freeing another, over and over:
        no ordinary text does that) the whole text is masked.
        """
        if not text:
            return text
        markers = [m.span() for m in _MARKER_RE.finditer(text)]
        runs = _merged([*markers, *self._spans(text)])
        if runs == _merged(markers) and (self._at_marker is None or not markers):
            # nothing found outside the markers, and no marker that the text beside it may
            # spell a secret with (`_MarkerForms.close` reads those)
            return text
        for _ in range(MAX_ROUNDS):
            if self._at_marker is not None:
                runs = self._at_marker.close(text, runs)
            out, pieces = _render(text, runs)
            more = _covered(pieces, (span for pattern in TOKEN_PATTERNS
                                     for span in _pattern_spans(pattern, out)))
            if not more:
                return out
            runs = _merged([*runs, *more])
        return MARKER

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
            spans.extend(m.span(1) for m in self._values.finditer(text))
        for pattern in TOKEN_PATTERNS:
            spans.extend(_pattern_spans(pattern, text))
        return spans


_MARKER_RE = re.compile(re.escape(MARKER))
# How many times the token shapes are looked for again in a result whose masks freed one
# (`Redactor.redact`); past it, the whole text is masked.
MAX_ROUNDS = 8

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


def _pattern_spans(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, int]]:
    """Where `pattern` masks in `text`: its `secret` group, or its whole match."""
    whole = "secret" not in pattern.groupindex
    for m in pattern.finditer(text):
        yield m.span() if whole else m.span("secret")


def _meets_marker(form: str) -> bool:
    """Whether an occurrence of `form` may hold both a marker's characters and others: it
    begins with the marker's end, ends with its beginning, or holds it whole and more."""
    n = min(len(form) - 1, len(MARKER))
    return (any(form[:k] == MARKER[-k:] or form[-k:] == MARKER[:k] for k in range(1, n + 1))
            or (MARKER in form and len(form) > len(MARKER)))


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` (start, end) sorted, the empty ones left out, those overlapping or touching
    joined: one run of masked characters each, shown as one MARKER."""
    runs: list[tuple[int, int]] = []
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if runs and start <= runs[-1][1]:
            if end > runs[-1][1]:
                runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    return runs


def _render(text: str, runs: Sequence[tuple[int, int]]) -> tuple[str, list[tuple[int, int, int]]]:
    """`text` with each run replaced by MARKER, and each piece of `text` kept, as (its start
    in the result, its start in `text`, its length)."""
    parts: list[str] = []
    pieces: list[tuple[int, int, int]] = []
    at = shown = 0
    for start, end in runs:
        if start > at:
            parts.append(text[at:start])
            pieces.append((shown, at, start - at))
            shown += start - at
        parts.append(MARKER)
        shown += len(MARKER)
        at = end
    if at < len(text):
        parts.append(text[at:])
        pieces.append((shown, at, len(text) - at))
    return "".join(parts), pieces


def _covered(pieces: Sequence[tuple[int, int, int]],
             spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The characters of the text that `spans` of its rendering (`_render`'s `pieces`) cover
    outside the markers, as spans of the text."""
    starts = [piece[0] for piece in pieces]
    found: list[tuple[int, int]] = []
    for start, end in spans:
        i = max(bisect_right(starts, start) - 1, 0)
        while i < len(pieces) and pieces[i][0] < end:
            shown, at, length = pieces[i]
            lo, hi = max(start, shown), min(end, shown + length)
            if lo < hi:
                found.append((at + lo - shown, at + hi - shown))
            i += 1
    return found


class _MarkerForms:
    """The forms of a redactor's secrets that may meet a marker (`_meets_marker`), for the
    places where a marker and the characters beside it may spell one (`close`): what is read
    around a marker reaches as far as the longest of them, not of all the secrets."""

    def __init__(self, ordered: Sequence[str]) -> None:
        size = len(MARKER)
        # each position's longest form, overlapping ones too
        self.anywhere = re.compile("(?=(" + "|".join(map(re.escape, ordered)) + "))")
        self.reach = max(len(form) for form in ordered) - 1
        # what a form spelled from a marker's end on has after it, and what one ending in a
        # marker's start has before it (reversed): longest first, read as often as they
        # follow each other (each reading masks them, and the marker is the same after it)
        after = {form[k:] for form in ordered for k in range(1, min(len(form) - 1, size) + 1)
                 if form[:k] == MARKER[-k:]}
        before = {form[:-k][::-1] for form in ordered
                  for k in range(1, min(len(form) - 1, size) + 1) if form[-k:] == MARKER[:k]}
        self.after = _repeated(after)
        self.before = _repeated(before)

    def close(self, text: str, runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """`runs` grown until no form, spelled across a marker of the rendering and the
        characters beside it, holds a character that is not a marker's.

        A run's marker grows over what follows it and what precedes it as long as a form
        goes on from its end or into its start (one match each, `after`, `before`); then it
        is read with up to `reach` characters of the rendering on each side (a form that
        touches the marker lies within them), and a form found there masks its characters
        too; the runs within reach of a grown run are read again. Each reading that masks
        more masks at least one character, so the work is linear in the text's length."""
        size, reach = len(MARKER), self.reach
        backwards = text[::-1] if self.before is not None else ""
        n = len(text)
        start = [run[0] for run in runs]
        end = [run[1] for run in runs]
        count = len(runs)
        before = list(range(-1, count - 1))
        after = [*range(1, count), -1]
        alive = [True] * count
        queued = [True] * count
        todo = deque(range(count))

        def window(i: int) -> tuple[str, list[int], int]:
            """The rendering around run `i`'s marker: its text, each character's place in
            `text` (-1 in a marker), and where the marker starts in it."""
            left: list[tuple[int, int] | None] = []
            need, at, j = reach, start[i], before[i]
            while need > 0:
                take = min(need, at - (end[j] if j >= 0 else 0))
                left.append((at - take, at))
                need -= take
                if need <= 0 or j < 0:
                    break
                left.append(None)
                need, at, j = need - size, start[j], before[j]
            right: list[tuple[int, int] | None] = []
            need, at, j = reach, end[i], after[i]
            while need > 0:
                take = min(need, (start[j] if j >= 0 else n) - at)
                right.append((at, at + take))
                need -= take
                if need <= 0 or j < 0:
                    break
                right.append(None)
                need, at, j = need - size, end[j], after[j]
            parts: list[str] = []
            origin: list[int] = []
            for piece in reversed(left):
                _add(parts, origin, text, piece)
            marker_at = len(origin)
            _add(parts, origin, text, None)
            for piece in right:
                _add(parts, origin, text, piece)
            return "".join(parts), origin, marker_at

        def grown(i: int) -> tuple[int, int]:
            lo, hi = start[i], end[i]
            if self.after is not None:
                stop = start[after[i]] if after[i] >= 0 else n
                m = self.after.match(text, hi, stop)
                hi = m.end() if m else hi
            if self.before is not None:
                stop = end[before[i]] if before[i] >= 0 else 0
                m = self.before.match(backwards, n - lo, n - stop)
                lo = n - m.end() if m else lo
            if (lo, hi) != (start[i], end[i]):
                return lo, hi
            shown, origin, marker_at = window(i)
            for m in self.anywhere.finditer(shown):
                first, last = m.start(), m.start() + len(m.group(1))
                if last <= marker_at or first >= marker_at + size:
                    continue
                places = [origin[k] for k in range(first, last) if origin[k] >= 0]
                if places:
                    lo, hi = min(lo, places[0]), max(hi, places[-1] + 1)
            return lo, hi

        def queue(i: int) -> None:
            if not queued[i]:
                queued[i] = True
                todo.append(i)

        while todo:
            i = todo.popleft()
            queued[i] = False
            if not alive[i]:
                continue
            lo, hi = grown(i)
            if (lo, hi) == (start[i], end[i]):
                continue
            j = before[i]
            while j >= 0 and end[j] >= lo:
                lo, alive[j], j = min(lo, start[j]), False, before[j]
            before[i] = j
            if j >= 0:
                after[j] = i
            j = after[i]
            while j >= 0 and start[j] <= hi:
                hi, alive[j], j = max(hi, end[j]), False, after[j]
            after[i] = j
            if j >= 0:
                before[j] = i
            start[i], end[i] = lo, hi
            queue(i)
            # the runs whose windows reach this one read it again
            gap, at, j = 0, lo, before[i]
            while j >= 0:
                gap += at - end[j]
                if gap > reach:
                    break
                queue(j)
                gap, at, j = gap + size, start[j], before[j]
            gap, at, j = 0, hi, after[i]
            while j >= 0:
                gap += start[j] - at
                if gap > reach:
                    break
                queue(j)
                gap, at, j = gap + size, end[j], after[j]
        return [(start[i], end[i]) for i in range(count) if alive[i]]


def _repeated(pieces: set[str]) -> re.Pattern[str] | None:
    """A pattern reading `pieces` one after the other as long as one follows (the longest
    first), or None without any."""
    if not pieces:
        return None
    ordered = sorted(pieces, key=lambda p: (-len(p), p))
    return re.compile("(?:" + "|".join(map(re.escape, ordered)) + ")+")


def _add(parts: list[str], origin: list[int], text: str, piece: tuple[int, int] | None) -> None:
    """Add a piece of `text` (start, end), or a marker (None), to a window being built."""
    if piece is None:
        parts.append(MARKER)
        origin.extend([-1] * len(MARKER))
    else:
        parts.append(text[piece[0]:piece[1]])
        origin.extend(range(piece[0], piece[1]))


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
