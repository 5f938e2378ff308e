"""The failure signature catalogue: which log lines and Slurm states mean which failure class.

The data lives in `catalogue.yaml` next to this module (its header documents the shape and the
regex dialect); a site may extend it with its own files. This module validates it and scans
logs with it. Pure: the only I/O is reading the YAML text in `Catalogue.load`.

Two scanners that must agree (a property test holds them to it):
- `scan(lines)`: the reference, line by line, every pattern on every line: easy to read;
- `scan_block(block)`: the fast path for big logs. It never runs the patterns over the block.
  Every pattern variant has literal text that each of its matches contains; from it the
  catalogue picks "triggers": pieces starting at a character that is rare in progress output
  (`CCL's watc`, `ProcessGro`). The block is translated so those lead characters become one
  sentinel byte, and ONE regex with a literal prefix finds every trigger at C speed. The few
  patterns without such a character get one `bytes.find` pass per shared piece (`not found`),
  and patterns whose literals all occur in progress output (`loss: nan`) are searched with
  their own tail (`oss... *(nan|inf)`). Only lines holding a hit are decoded, normalized and
  matched, so the result equals `scan` while Python touches almost no progress line.

Hard-wrapped signatures (a long NCCL line folded at 80/120 columns, or a word-wrapped one) are
found by joining a line with the next one ("" for a fold, " " for a word wrap): a pattern that
matches the joined text but neither line alone is reported on the first line, with the joined
text, provided one of its triggers is intact on one of the two lines (two disjoint triggers per
variant where possible, so a single break leaves one). Lines shorter than MIN_WRAP_WIDTH are
never joined.

Texts: `title`, `explanation` and `hint` are English message ids, required; messages show
them translated through the templates' message catalogues (templates/locale). A site file may
give its own translations as `<field>_<lang>` (`hint_ko`); a site file that replaces an English
text without its translation drops the translations before it.

Public API: `Catalogue.load(extra_paths)`, `.classes`, `.get(id)`, `.scan(lines, first_line_no)`,
`.scan_block(block, first_line_no)`, `.match_line(line)`, `.classify_state(state, exit_code,
signal)`, `.accounting_matches(...)`, `.rank(ids)`, `.grep_patterns()`, `.triggers()`;
`normalize_line(line)`; `check_dialect(pattern)`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from bot.core.models import Action

#: Classes whose default action is STOP; they are never retryable, whatever a site file says.
STOP_CLASSES = frozenset({"cuda_oom", "compiler_missing", "nan_loss", "silent_exit"})

#: A line shorter than this (normalized) is never joined with the next one as a hard wrap.
MIN_WRAP_WIDTH = 40

_SENTINEL_CHUNK = 1 << 20

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


class CatalogueError(ValueError):
    """A catalogue file is invalid; the message names the file and the key at fault."""


@dataclass(frozen=True)
class FailureClass:
    """One failure class of FAILURES.md with its signatures and default handling."""

    id: str
    title: str
    explanation: str
    action: Action
    retryable: bool
    charges_budget: bool
    priority: int
    hint: str
    primary: tuple[re.Pattern[str], ...]
    hints: tuple[re.Pattern[str], ...]
    states: tuple[str, ...]
    exit_codes: tuple[int, ...] = ()
    signals: tuple[int, ...] = ()
    # lang -> {"title"/"explanation"/"hint": text}: the site files' own translations
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Match:
    """A log line that carries a signature; `line_no` is 1-based. For a hard-wrapped
    signature, `line_no` is its first line and `text` the two lines joined."""

    class_id: str
    line_no: int
    text: str
    primary: bool


@dataclass(frozen=True)
class AccountingMatch:
    """A class implied by Slurm accounting: `primary` for a deciding State, else a hint."""

    class_id: str
    primary: bool
    reason: str


# --------------------------------------------------------------------------- normalization

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ANSI_RE_B = re.compile(_ANSI_RE.pattern.encode("ascii"))
_PREFIX_RE = re.compile(
    r"^(?:"
    r"[ \t]*\[(?:rank|default|RANK)[0-9]+\]:[ \t]?"  # torchrun --tee / log prefixes
    r"|rank[0-9]+: "  # accelerate / deepspeed style
    r"|\[[0-9]+,[0-9]+\]<std(?:out|err)>:[ \t]?"  # mpirun --tag-output
    r"|\[[0-9]{4}-[0-9]{2}-[0-9]{2}[^\]\n]*\]\[rank[0-9]+\]:?[ \t]?"  # [2024-..][rank1]:
    r"|[ \t]*[0-9]+: "  # srun --label
    r")+"
)


def normalize_line(line: str) -> str:
    """The message a human sees: no line end, no ANSI colour codes, only the last tqdm
    carriage-return segment, and no per-rank launcher prefixes (`[rank3]:`, `[default0]:`,
    `rank3: `, srun's `0: `, `[2024-...][rank1]:`)."""
    line = line.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI_RE.sub("", line)
    if "\r" in line:
        line = line.rsplit("\r", 1)[1]
    if line[:1] in ("[", "r", " ", "\t") or line[:1].isdigit():
        line = _PREFIX_RE.sub("", line, count=1)
    return line


# --------------------------------------------------------------------------- regex dialect

_ESCAPABLE = set(".[](){}*+?|^$\\")
_QUANT_START = set("*+?{")
_INTERVAL_RE = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")


def check_dialect(pattern: str) -> str | None:
    """Why `pattern` is not in the shared Python-re / POSIX-ERE subset, or None if it is."""
    i, n = 0, len(pattern)
    prev_quantifiable = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                return "ends with a lone backslash"
            nxt = pattern[i + 1]
            if nxt not in _ESCAPABLE:
                return (f"'\\{nxt}' is not portable to grep -E: escape only . [ ] ( ) {{ }} * + ? "
                        "| ^ $ \\ (write [0-9] for \\d, ' ' or [ \t] for \\s)")
            i += 2
            prev_quantifiable = True
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                return "a bracket expression may not start with ']' (not portable)"
            while j < n and pattern[j] != "]":
                if pattern[j] in "\\[":
                    return "no backslash or '[' inside [...] (they differ between re and grep -E)"
                j += 1
            if j >= n:
                return "unterminated [...]"
            i = j + 1
            prev_quantifiable = True
            continue
        if c == "(":
            if pattern[i + 1: i + 2] == "?":
                return "'(?...)' groups and lookarounds are not POSIX ERE: use plain (...)"
            i += 1
            prev_quantifiable = False
            continue
        if c in _QUANT_START:
            if not prev_quantifiable:
                return f"quantifier {c!r} at position {i} has nothing to repeat"
            if c == "{":
                m = _INTERVAL_RE.match(pattern, i)
                if not m:
                    return "a literal '{' must be escaped as \\{"
                i = m.end()
            else:
                i += 1
            if i < n and pattern[i] in "?+":
                return "lazy or possessive quantifiers (*? +? ?? ++) are not POSIX ERE"
            prev_quantifiable = False
            continue
        if c == "}":
            return "a literal '}' must be escaped as \\}"
        prev_quantifiable = c not in "|^$"
        i += 1
    return None


# --------------------------------------------------------------------------- required literals
#
# A small parser for the dialect above that lists, for each way a pattern can match (its
# "variants": alternatives and small character classes expanded), the literal runs every
# match of that variant contains. None in a token list marks a break in the literal text.

_Tok = list[str | None]
_MAX_VARIANTS = 256
_MAX_CLASS_EXPAND = 4


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def parse_alt(self) -> list[_Tok]:
        variants = self.parse_seq()
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            variants = variants + self.parse_seq()
        return variants if len(variants) <= _MAX_VARIANTS else [[None]]

    def parse_seq(self) -> list[_Tok]:
        variants: list[_Tok] = [[]]
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self.parse_atom()
            lo, hi = self.parse_quant()
            options = _repeat(atom, lo, hi)
            if len(variants) * len(options) > _MAX_VARIANTS:
                options = [[None]]
            variants = _dedupe([v + o for v in variants for o in options])
        return variants

    def parse_atom(self) -> list[_Tok]:
        c = self.p[self.i]
        if c == "\\":
            self.i += 2
            return [[self.p[self.i - 1]]]
        if c == "[":
            j = self.p.index("]", self.i + 1)
            body = self.p[self.i + 1: j]
            self.i = j + 1
            chars = _class_chars(body)
            if chars is None or len(chars) > _MAX_CLASS_EXPAND:
                return [[None]]
            return [[ch] for ch in sorted(chars)]
        if c == "(":
            self.i += 1
            inner = self.parse_alt()
            self.i += 1  # ')'
            return inner
        self.i += 1
        if c == ".":
            return [[None]]
        if c in "^$":
            return [[]]
        return [[c]]

    def parse_quant(self) -> tuple[int, int | None]:
        if self.i >= len(self.p):
            return 1, 1
        c = self.p[self.i]
        if c == "?":
            self.i += 1
            return 0, 1
        if c == "*":
            self.i += 1
            return 0, None
        if c == "+":
            self.i += 1
            return 1, None
        if c == "{":
            m = _INTERVAL_RE.match(self.p, self.i)
            assert m is not None  # checked by check_dialect
            self.i = m.end()
            lo = int(m.group(1))
            if m.group(2) is None:
                return lo, lo
            return lo, (int(m.group(3)) if m.group(3) else None)
        return 1, 1


def _dedupe(variants: list[_Tok]) -> list[_Tok]:
    """Drop variants that differ only in text that cannot become a run of 3+ characters,
    which keeps the expansion of `[Ll]oss'?"? *[=:]...` small."""
    seen: dict[tuple[tuple[str, ...], str], _Tok] = {}
    for v in variants:
        runs: list[str] = []
        run: list[str] = []
        for t in v:
            if t is None:
                if len(run) >= 3:
                    runs.append("".join(run))
                run = []
            else:
                run.append(t)
        seen.setdefault((tuple(runs), "".join(run)), v)
    return list(seen.values())


def _class_chars(body: str) -> set[str] | None:
    if body.startswith("^"):
        return None
    chars: set[str] = set()
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            lo, hi = ord(body[i]), ord(body[i + 2])
            if hi - lo > _MAX_CLASS_EXPAND:
                return None
            chars.update(chr(k) for k in range(lo, hi + 1))
            i += 3
        else:
            chars.add(body[i])
            i += 1
    return chars


def _repeat(atom: list[_Tok], lo: int, hi: int | None) -> list[_Tok]:
    if (lo, hi) == (1, 1):
        return atom
    if (lo, hi) == (0, 1):
        return [*atom, []]
    if lo == 0:
        return [[None]]
    if len(atom) == 1 and hi == lo and lo <= 8:
        return [atom[0] * lo]
    # at least `lo` copies, then an unknown amount: keep the first copy, then break
    return [[*a, None] for a in atom]


def required_runs(pattern: str) -> list[list[str]]:
    """For each variant of `pattern` (alternatives and small classes expanded), the literal
    runs of 3+ characters that every match of that variant contains, in order."""
    out: list[list[str]] = []
    for tokens in _Parser(pattern).parse_alt():
        runs: list[str] = []
        run: list[str] = []
        for t in [*tokens, None]:
            if t is None:
                if len(run) >= 3:
                    runs.append("".join(run))
                run = []
            else:
                run.append(t)
        if runs not in out:
            out.append(runs)
    return out


# Typical progress output: triggers found here would make most lines candidates.
_PROGRESS_SAMPLE = """\
 iteration      100/    8000 | consumed samples:         6400 | elapsed time per iteration (ms):
 4512.3 | learning rate: 1.000000E-04 | global batch size:    64 | lm loss: 7.081234E-01 |
 loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of nan
 iterations:   0 | throughput per GPU (TFLOP/s/GPU): 181.2 |
{'loss': 0.5213, 'grad_norm': 1.2345, 'learning_rate': 4.9e-05, 'epoch': 0.12}
{'train_runtime': 1234.5, 'train_samples_per_second': 12.3, 'train_steps_per_second': 0.81}
2024-05-01 19:08:57,123 INFO step=3470 iter=3470 loss=0.5123 lr=1.0e-04 s/iter=4.51
host_rss=72.4GiB rss: 45.1 GB mem=48123MiB gpu_mem=61.2GiB max_allocated=70.1GB time=4.48s
[2024-05-01 19:08:57] Epoch 3:  45%|####5     | 3600/8000 [4:30:00<5:30:00,  4.51s/it,
loss=0.512, v_num=12, train_loss_step=0.498, val_loss=0.601, lr-AdamW=0.0001]
Saving checkpoint to /scratch/run/checkpoints/iter_0003000 ... saved checkpoint in 47.2 s
Loading checkpoint from latest_checkpoint.txt: iter_000001000, resuming training
| epoch 001 | loss 2.183 | ppl 4.54 | wps 12345 | ups 1.23 | wpb 8192 | bsz 64 | num_updates
 1200 | lr 0.0003 | gnorm 0.456 | train_wall 123 | gb_free 10.2 | wall 456
Train Epoch: 3 [12800/60000 (21%)]	Loss: 0.123456 Step time 0.451 samples/sec 1419.2
2025-05-20 00:00:04,001 INFO [train.py:412] [rank0] iter=1/9000 loss=0.6123 gpu_util=89%
2025-05-20 00:00:08,501 WARNING [trainer.py:88] step 2 | loss 0.6021 | lr=1.0e-04
"""
_LEAD_MAX_FREQ = 3  # occurrences in the sample above (about 0.25 %)
# Frequent in real progress output all the same: brackets of tqdm and logger prefixes, and
# the letters of `INFO`, `1.0E-04`, `GiB` and `train.py:412`, which many frameworks print
# on every line.
_NEVER_LEAD = frozenset("()[]<>{}%#\tEFGINOy")
_SAMPLE_FREQ: dict[str, int] = {}
for _ch in _PROGRESS_SAMPLE:
    _SAMPLE_FREQ[_ch] = _SAMPLE_FREQ.get(_ch, 0) + 1

def _in_sample(text: str) -> bool:
    return text in _PROGRESS_SAMPLE


def _is_lead(ch: str) -> bool:
    """Characters rare in progress output: the block scanner's sentinel pass looks for them."""
    return (
        ch.isascii()
        and ch.isprintable()
        and ch not in _NEVER_LEAD
        and _SAMPLE_FREQ.get(ch, 0) <= _LEAD_MAX_FREQ
    )


def _variant_triggers(runs: list[str]) -> list[str]:
    """Up to two disjoint literal pieces of one variant for the block scanner to look for.

    Preferred: pieces starting at a rare ("lead") character, rarest first, up to 10 chars,
    found together by the sentinel pass; two of them let a hard wrap break one and leave the
    other. Else the longest run not seen in progress output (one `find` pass). [] when every
    run appears in progress output: the pattern is then searched with its own regex."""
    cands: list[tuple[int, int, int, int, str]] = []
    for r, run in enumerate(runs):
        for i, ch in enumerate(run):
            if _is_lead(ch) and len(run) - i >= 3:
                trig = run[i: i + 10]
                if not _in_sample(trig):
                    cands.append((_SAMPLE_FREQ.get(ch, 0), -len(trig), r, i, trig))
    if cands:
        cands.sort()
        best = cands[0]
        chosen = [best[4]]
        for c in cands[1:]:
            if c[2] != best[2] or c[3] >= best[3] + len(best[4]) or c[3] + len(c[4]) <= best[3]:
                chosen.append(c[4])
                break
        return chosen
    return []


def _cover(variants: Sequence[list[str]]) -> list[str]:
    """Greedy set cover for variants without a lead character: few substrings (4+ chars, not
    in progress output) such that every variant has one of them in one of its runs. Each is
    one `find` pass over the block. [] for a variant whose runs all appear in progress
    output: the caller falls back to the pattern's own regex."""
    subs_of: list[set[str]] = []
    for runs in variants:
        subs = {run[a:b] for run in runs for a in range(len(run))
                for b in range(a + 4, len(run) + 1)}
        subs_of.append({x for x in subs if not _in_sample(x) and x.strip() == x})
    chosen: list[str] = []
    todo = [k for k, subs in enumerate(subs_of) if subs]
    while todo:
        counts: dict[str, int] = {}
        for k in todo:
            for x in subs_of[k]:
                counts[x] = counts.get(x, 0) + 1
        best = max(counts, key=lambda x: (counts[x], len(x), x))
        chosen.append(best)
        todo = [k for k in todo if best not in subs_of[k]]
    return chosen


def _trie_regex(words: Iterable[bytes]) -> bytes:
    """A regex source matching any of `words`, as a trie so `re` tests one byte per level."""
    trie: dict[int, Any] = {}
    for w in words:
        node = trie
        for byte in w:
            node = node.setdefault(byte, {})
        node[-1] = {}

    def emit(node: dict[int, Any]) -> bytes:
        if -1 in node:
            return b""  # a shorter word ends here: it is enough for a candidate
        alts = [re.escape(bytes([k])) + emit(child) for k, child in sorted(node.items())]
        return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"

    return emit(trie)


def _top_alternatives(pattern: str) -> list[list[tuple[str, str | None]]]:
    """The pattern's top-level alternatives as atoms: (source incl. quantifier, literal char
    when the atom is one unquantified literal character else None)."""
    alts: list[list[tuple[str, str | None]]] = [[]]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "|":
            alts.append([])
            i += 1
            continue
        start = i
        lit: str | None = None
        if c == "\\":
            lit = pattern[i + 1]
            i += 2
        elif c == "[":
            i = pattern.index("]", i + 1) + 1
        elif c == "(":
            depth = 0
            while True:
                ch = pattern[i]
                if ch == "\\":
                    i += 2
                    continue
                if ch == "[":
                    i = pattern.index("]", i + 1) + 1
                    continue
                depth += {"(": 1, ")": -1}.get(ch, 0)
                i += 1
                if depth == 0:
                    break
        else:
            lit = c if c not in ".^$" else None
            i += 1
        if i < n and pattern[i] in _QUANT_START:
            lit = None
            if pattern[i] == "{":
                m = _INTERVAL_RE.match(pattern, i)
                assert m is not None
                i = m.end()
            else:
                i += 1
        alts[-1].append((pattern[start:i], lit))
    return alts


def _block_regex_source(pattern: str) -> str:
    """A regex that matches somewhere in every line the pattern matches, starting with the
    pattern's rarest literal run so that `re` can search for it at C speed: the pattern's
    tail from that run on, per top-level alternative; negated classes never cross lines."""
    parts = []
    for atoms in _top_alternatives(pattern):
        best: tuple[bool, int, int] | None = None
        k = 0
        while k < len(atoms):
            if atoms[k][1] is None:
                k += 1
                continue
            j = k
            while j < len(atoms) and atoms[j][1] is not None:
                j += 1
            run = "".join(a[1] or "" for a in atoms[k:j])
            if len(run) >= 3:
                key = (not _in_sample(run), len(run), -k)
                if best is None or key > best:
                    best = key
            k = j
        start = -best[2] if best else 0
        parts.append(_line_bound("".join(a[0] for a in atoms[start:])))
    return "|".join(parts) if len(parts) == 1 else "|".join(f"(?:{p})" for p in parts)


def _line_bound(src: str) -> str:
    """`src` made safe to search a block of lines with re.MULTILINE: negated classes never
    match a newline, and `$` also matches before a CRLF's `\\r` (normalized lines have none)."""
    out: list[str] = []
    i = 0
    while i < len(src):
        c = src[i]
        if c == "\\":
            out.append(src[i: i + 2])
            i += 2
        elif c == "[":
            j = src.index("]", i + 1)
            body = src[i + 1: j]
            out.append("[^\\n" + body[1:] + "]" if body.startswith("^") else src[i: j + 1])
            i = j + 1
        elif c == "$":
            out.append("\\r?$")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --------------------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class _Sig:
    """One compiled pattern with what the scanners need to know about it."""

    class_id: str
    primary: bool
    regex: re.Pattern[str]
    triggers: tuple[str, ...]  # literal pieces of every match; the block scanner finds these
    needs_block_regex: bool  # some variant has only common literals: search its regex instead


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


class Catalogue:
    """The merged, compiled catalogue. Build it with `Catalogue.load()` or `from_texts()`."""

    def __init__(self, classes: Mapping[str, FailureClass], sigs: Sequence[_Sig]) -> None:
        self.classes: dict[str, FailureClass] = dict(classes)
        self._sigs = tuple(sigs)
        self._order = {cid: (-fc.priority, cid) for cid, fc in self.classes.items()}
        triggers: dict[str, list[int]] = {}
        for k, sig in enumerate(self._sigs):
            for t in sig.triggers:
                triggers.setdefault(t, []).append(k)
        self._triggers = tuple(sorted(triggers, key=len, reverse=True))
        self._trigger_sigs = {t: tuple(ks) for t, ks in triggers.items()}
        # Per line, only the triggers whose first character occurs in it are looked for.
        self._by_first: dict[str, list[str]] = {}
        for t in self._triggers:
            self._by_first.setdefault(t[0], []).append(t)
        self._always = tuple(k for k, sig in enumerate(self._sigs) if sig.needs_block_regex)
        self._all = tuple(range(len(self._sigs)))
        # Block scanning: every trigger's first character (its rarest) becomes byte 0x01 in a
        # translated copy of the block, so ONE regex with the literal prefix 0x01 finds all
        # triggers at C speed; collisions only add candidates, which are then verified.
        sentinel = [t for t in self._triggers if _is_lead(t[0])]
        self._find_triggers = tuple(t.encode() for t in self._triggers if not _is_lead(t[0]))
        table = bytearray(range(256))
        for ch in {t[0] for t in sentinel}:
            table[ord(ch)] = 1
        table[1] = 2  # a real 0x01 in a log must not look like a lead
        self._sentinel_table = bytes(table)
        encoded = [t.encode("utf-8").translate(self._sentinel_table) for t in sentinel]
        self._sentinel_re = re.compile(_trie_regex(encoded)) if encoded else None
        self._max_trigger_bytes = max((len(t) for t in encoded), default=0)
        # Patterns without a rare literal: their tail from their best literal run, grouped by
        # the run's first three characters so that each group is one literal-prefix search.
        groups: dict[bytes, list[bytes]] = {}
        for k in self._always:
            src = _block_regex_source(self._sigs[k].regex.pattern).encode("utf-8")
            groups.setdefault(src[:3], []).append(src)
        self._block_res = tuple(
            re.compile(b"|".join(srcs), re.MULTILINE) for srcs in groups.values()
        )

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, extra_paths: Sequence[str | Path] = ()) -> Catalogue:
        """The packaged catalogue, extended by a site's own files in order."""
        text = resources.files("bot.core").joinpath("catalogue.yaml").read_text(encoding="utf-8")
        texts = [("bot/core/catalogue.yaml", text)]
        for path in extra_paths:
            try:
                texts.append((str(path), Path(path).read_text(encoding="utf-8")))
            except OSError as exc:
                raise CatalogueError(f"{path}: cannot read site catalogue: {exc}") from exc
        return cls.from_texts(texts)

    @classmethod
    def from_texts(cls, texts: Sequence[tuple[str, str]]) -> Catalogue:
        """Merge YAML documents given as (name, text); the first is the base catalogue."""
        raws: dict[str, _Raw] = {}
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
            )
            for kind, pats in (("primary", raw.primary), ("hints", raw.hints)):
                for p in dict.fromkeys(pats):
                    pending.append((cid, kind == "primary", p))
        assigned = _assign_triggers([p for _, _, p in pending])
        sigs = [
            _Sig(cid, prim, re.compile(p), tuple(trigs), uncovered)
            for (cid, prim, p), (trigs, uncovered) in zip(pending, assigned, strict=True)
        ]
        return cls(classes, sigs)

    # ------------------------------------------------------------------ queries

    def get(self, class_id: str) -> FailureClass:
        """The class with this id; KeyError names the known ids."""
        try:
            return self.classes[class_id]
        except KeyError:
            raise KeyError(
                f"unknown failure class {class_id!r}; known: {', '.join(sorted(self.classes))}"
            ) from None

    def grep_patterns(self) -> list[str]:
        """Every primary and hint pattern, as `grep -E -e P ...` takes them (the YAML patterns
        are written in the dialect both understand)."""
        return list(dict.fromkeys(sig.regex.pattern for sig in self._sigs))

    def triggers(self) -> tuple[str, ...]:
        """The literal strings the block scanner searches for (for benchmarks and debugging):
        those starting with a rare character in one sentinel pass, the others one by one."""
        return self._triggers

    def classify_state(
        self, state: str | None, exit_code: int | None = None, signal: int | None = None
    ) -> list[str]:
        """Class ids implied by sacct: deciding states first (e.g. OUT_OF_MEMORY -> host_oom),
        then exit-code / signal hints (137 or signal 9 -> host_oom)."""
        return list(dict.fromkeys(m.class_id
                                  for m in self.accounting_matches(state, exit_code, signal)))

    def accounting_matches(
        self, state: str | None, exit_code: int | None = None, signal: int | None = None
    ) -> list[AccountingMatch]:
        """Like `classify_state`, saying which of them decide (State) and which only hint."""
        first = (state or "").split()[0].upper() if (state or "").strip() else ""
        out: list[AccountingMatch] = []
        for fc in sorted(self.classes.values(), key=lambda c: self._order[c.id]):
            if first and first in fc.states:
                out.append(AccountingMatch(fc.id, True, f"sacct State {first}"))
        for fc in sorted(self.classes.values(), key=lambda c: self._order[c.id]):
            if exit_code is not None and exit_code in fc.exit_codes:
                out.append(AccountingMatch(fc.id, False, f"exit code {exit_code}"))
            elif signal is not None and signal in fc.signals:
                out.append(AccountingMatch(fc.id, False, f"signal {signal}"))
        return out

    def rank(self, class_ids: Iterable[str]) -> list[str]:
        """Class ids, most decisive first (priority, then id)."""
        return sorted(dict.fromkeys(class_ids), key=lambda c: self._order[c])

    # ------------------------------------------------------------------ scanning

    def match_line(self, line: str, line_no: int = 1) -> list[Match]:
        """Signatures on one line on its own (no wrap joining)."""
        text = normalize_line(line)
        return self._emit({(line_no, cid): (text, prim) for cid, prim in self._hits(text).items()})

    def scan(
        self, lines: Iterable[str], first_line_no: int = 1, *, exhaustive: bool = False
    ) -> list[Match]:
        """Line-by-line scanner: every line normalized and matched, every pair of consecutive
        lines tried as a hard wrap. Only the patterns whose triggers occur on a line are run
        there; `exhaustive=True` runs every pattern on every line (the reference the tests hold
        both scanners to). Use `scan_block` for big logs; all give the same result."""
        fast = not exhaustive
        found: dict[tuple[int, str], tuple[str, bool]] = {}
        prev: str | None = None
        line_no = first_line_no - 1
        for line_no, raw in enumerate(lines, start=first_line_no):
            text = normalize_line(raw)
            for cid, prim in self._hits(text, fast=fast).items():
                _put(found, (line_no, cid), text, prim, wrapped=False)
            if prev is not None:
                for cid, (joined, prim) in self._wrap_hits(prev, text, fast=fast).items():
                    _put(found, (line_no - 1, cid), joined, prim, wrapped=True)
            prev = text
        return self._emit(found)

    def scan_block(self, block: str | bytes, first_line_no: int = 1) -> list[Match]:
        """Fast scanner for a block of complete lines ('\\n'-separated; the last may lack its
        '\\n'), same result as `scan(block.split("\\n"))`. Bytes are read as UTF-8 (bad bytes
        replaced); pass bytes straight from the file to skip a decode. Only lines holding a
        trigger are decoded and matched. A wrap across two blocks is not seen."""
        if isinstance(block, str):
            # surrogatepass round-trips any str, including lone surrogates from a decode
            # with errors="surrogateescape"
            data, errors = block.encode("utf-8", "surrogatepass"), "surrogatepass"
        else:
            data, errors = bytes(block), "replace"
        if not data:
            return []
        if b"\x1b" in data:
            data = _ANSI_RE_B.sub(b"", data)  # codes never span lines: line numbers are kept
        starts: set[int] = set()
        find, rfind = data.find, data.rfind
        if self._sentinel_re is not None:
            # In chunks of 1 MiB, overlapping by a trigger's length, so that the translated
            # copy stays in the CPU cache while the regex reads it.
            search, table = self._sentinel_re.search, self._sentinel_table
            size, overlap = _SENTINEL_CHUNK, self._max_trigger_bytes
            for base in range(0, len(data), size):
                chunk = data[base: base + size + overlap].translate(table)
                m = search(chunk)
                while m:
                    pos = base + m.start()
                    starts.add(rfind(b"\n", 0, pos) + 1)
                    end = find(b"\n", pos, base + len(chunk))
                    if end == -1:
                        break
                    m = search(chunk, end - base)
        for trig in self._find_triggers:
            pos = find(trig)
            while pos != -1:
                starts.add(rfind(b"\n", 0, pos) + 1)
                end = find(b"\n", pos)
                if end == -1:
                    break
                pos = find(trig, end)
        for regex in self._block_res:
            m = regex.search(data)
            while m:
                pos = m.start()
                starts.add(rfind(b"\n", 0, pos) + 1)
                end = find(b"\n", pos)
                if end == -1:
                    break
                m = regex.search(data, end)
        if not starts:
            return []
        found: dict[tuple[int, str], tuple[str, bool]] = {}
        norm_cache: dict[int, str] = {}

        def line_at(start: int) -> str:
            if start not in norm_cache:
                end = find(b"\n", start)
                raw = data[start:] if end == -1 else data[start:end]
                norm_cache[start] = normalize_line(raw.decode("utf-8", errors))
            return norm_cache[start]

        pairs: set[tuple[int, int, int]] = set()  # (line_no of first, start of first, start 2nd)
        line_no, last = first_line_no, 0
        for start in sorted(starts):
            line_no += data.count(b"\n", last, start)
            last = start
            cur = line_at(start)
            for cid, prim in self._hits(cur).items():
                _put(found, (line_no, cid), cur, prim, wrapped=False)
            if start > 0:
                pairs.add((line_no - 1, rfind(b"\n", 0, start - 1) + 1, start))
            end = find(b"\n", start)
            if end != -1 and end + 1 < len(data):
                pairs.add((line_no, start, end + 1))
        for first_no, a_start, b_start in sorted(pairs):
            for cid, (joined, prim) in self._wrap_hits(line_at(a_start), line_at(b_start)).items():
                _put(found, (first_no, cid), joined, prim, wrapped=True)
        return self._emit(found)

    # ------------------------------------------------------------------ internals

    def _hits(self, text: str, fast: bool = True) -> dict[str, bool]:
        """class id -> primary? for the signatures on one normalized line."""
        hits: dict[str, bool] = {}
        if not text:
            return hits
        for k in self._candidate_sigs(text) if fast else self._all:
            sig = self._sigs[k]
            if not hits.get(sig.class_id) and sig.regex.search(text):
                hits[sig.class_id] = sig.primary
        return hits

    def _candidate_sigs(self, *texts: str) -> list[int]:
        """Signatures that can match in `texts`: those whose trigger occurs there, and those
        without a rare literal (always tried)."""
        ks: set[int] = set(self._always)
        chars = set(texts[0]).union(*texts[1:]) if texts else set()
        for first in chars.intersection(self._by_first):
            for trig in self._by_first[first]:
                if any(trig in t for t in texts):
                    ks.update(self._trigger_sigs[trig])
        return sorted(ks)

    def _wrap_hits(self, a: str, b: str, fast: bool = True) -> dict[str, tuple[str, bool]]:
        """Signatures that appear only when `a` and the next line `b` are joined ("" for a
        fold inside a word, " " for a word wrap), with one of their triggers intact on a or b."""
        hits: dict[str, tuple[str, bool]] = {}
        if len(a) < MIN_WRAP_WIDTH or not b.strip():
            return hits
        for k in self._candidate_sigs(a, b) if fast else self._all:
            sig = self._sigs[k]
            if hits.get(sig.class_id, ("", False))[1]:
                continue
            if not any(t in a or t in b for t in sig.triggers):
                continue
            if sig.regex.search(a) or sig.regex.search(b):
                continue
            for sep in ("", " "):
                joined = a + sep + b
                if sig.regex.search(joined):
                    if sig.class_id not in hits or sig.primary:
                        hits[sig.class_id] = (joined, sig.primary)
                    break
        return hits

    def _emit(self, found: Mapping[tuple[int, str], tuple[str, bool]]) -> list[Match]:
        keys = sorted(found, key=lambda k: (k[0], self._order[k[1]]))
        return [Match(cid, no, found[(no, cid)][0], found[(no, cid)][1]) for no, cid in keys]


def _put(
    found: dict[tuple[int, str], tuple[str, bool]],
    key: tuple[int, str],
    text: str,
    primary: bool,
    wrapped: bool,
) -> None:
    """Record a hit; a primary one beats a hint, and a line on its own beats a wrap."""
    old = found.get(key)
    if old is None or (primary and not old[1]):
        found[key] = (text, primary)
    elif not wrapped and old[1] == primary:
        found[key] = (text, primary)


def _assign_triggers(patterns: Sequence[str]) -> list[tuple[list[str], bool]]:
    """For each pattern: its triggers, and whether some variant has none (only literals seen
    in progress output), in which case the block scanner runs the pattern's own regex and
    does not look for it across a hard wrap. `find` triggers are chosen for all patterns at
    once so that they are few."""
    variants = [required_runs(p) for p in patterns]
    lead = [[_variant_triggers(runs) for runs in vs] for vs in variants]
    rest = [runs for vs, ls in zip(variants, lead, strict=True)
            for runs, chosen in zip(vs, ls, strict=True) if not chosen]
    cover = _cover(rest)
    out: list[tuple[list[str], bool]] = []
    for vs, ls in zip(variants, lead, strict=True):
        trigs: list[str] = []
        ok = True
        for runs, chosen in zip(vs, ls, strict=True):
            if not chosen:
                chosen = [t for t in cover if any(t in run for run in runs)][:1]
            ok = ok and bool(chosen)
            trigs.extend(chosen)
        out.append((list(dict.fromkeys(trigs)), False) if ok else ([], True))
    return out


# --------------------------------------------------------------------------- file merging


def _merge_file(raws: dict[str, _Raw], name: str, text: str) -> None:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{name}: not valid YAML: {exc}") from exc
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
                    Action(value)
                except ValueError:
                    raise CatalogueError(f"{kwhere}: unknown action {value!r}; use one of "
                                         f"{', '.join(a.value for a in Action)}") from None
            if key == "patterns":
                _merge_patterns(raw, kwhere, value)
            elif key == "accounting":
                _merge_accounting(raw, kwhere, value)
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


__all__ = [
    "STOP_CLASSES",
    "AccountingMatch",
    "Catalogue",
    "CatalogueError",
    "FailureClass",
    "Match",
    "check_dialect",
    "normalize_line",
    "required_runs",
]

